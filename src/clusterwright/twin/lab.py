"""``twin lab``: the live twin proven on real daemons.

The lab fabric of ``fabric verify`` (a generated design, its FRR configs unmodified) is
built in network namespaces with some cables deliberately wrong: ``miswires`` pairs of
leaf-spine cables with their spine ends swapped, and ``down`` cables built with one end
down. Every switch runs zebra and bgpd, every namespace (switches and hosts) runs lldpd.
Once LLDP has seen every cable that is up and every BGP session that can come up is
established, the twin collects what an operator would (``lldpctl -f json`` of every device,
``show bgp summary json`` of every switch, one file per device), tears the lab down, and
compares the dumps with the design's exported blueprint. It must report exactly the
injected faults: each swapped cable as miswired (two per swap), each down cable as missing,
nothing else.

Host stubs carry their interface under the planned port name (``osfp4p2``) so their LLDP
tables name their ports as the cabling plan does; switches send the interface name as port
id and hosts lldpd's default (the MAC address, the name as description), so both forms are
read.
"""

from __future__ import annotations

import json
import random
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clusterwright.catalog.registry import Catalog
from clusterwright.design.fabric import Fabric
from clusterwright.errors import InputError
from clusterwright.export.fabric import write_fabric
from clusterwright.lab import frr, lldpd
from clusterwright.lab.fabric_lab import build_lab
from clusterwright.lab.runner import lab_session
from clusterwright.lab.runner import preflight as frr_preflight
from clusterwright.lab.spec import LabHost, LabLink, LabSpec
from clusterwright.twin.run import TwinRequest, twin_diff

_POLL_S = 0.5


@dataclass(frozen=True)
class TwinLabRequest:
    leaves: int = 4
    spines: int = 2
    miswires: int = 1  # leaf-spine cable pairs with their spine ends swapped
    down: int = 1  # leaf-spine cables built with one end down
    seed: int = 0
    server: str = "dgx-h100"
    switch: str | None = None
    timeout_s: float = 60.0
    out: Path | None = None  # keep the blueprint and the collected dumps here


def preflight() -> None:
    frr_preflight()
    lldpd.preflight()


def _cable_id(index: int) -> str:
    return f"C{index + 1:07d}"  # the cabling plan numbers cables in design order


def as_built(fab: Fabric, spec: LabSpec, req: TwinLabRequest
             ) -> tuple[LabSpec, list[dict[str, Any]]]:
    """The lab spec with the faults built in, and the faults (with the keys the twin must
    report)."""
    rng = random.Random(req.seed)
    routed = {(lk.a, lk.a_port, lk.b, lk.b_port): i for i, lk in enumerate(fab.links)
              if lk.tier == "leaf-spine"}
    pool = list(routed)
    rng.shuffle(pool)
    if 2 * req.miswires + req.down > len(pool):
        raise InputError(f"miswires: {req.miswires} swaps and {req.down} down cables need "
                         f"{2 * req.miswires + req.down} leaf-spine cables; the lab has "
                         f"{len(pool)}", field="miswires")
    faults: list[dict[str, Any]] = []
    swapped: dict[tuple[str, str, str, str], tuple[str, str]] = {}
    used: set[tuple[str, str, str, str]] = set()
    for _ in range(req.miswires):
        pair = next(((a, b) for a in pool for b in pool
                     if a not in used and b not in used and a[0] != b[0] and a[2] != b[2]),
                    None)
        if pair is None:
            raise InputError(f"miswires: cannot find {req.miswires} pairs of leaf-spine cables "
                             "on different leaves and spines (more spines or leaves)",
                             field="miswires")
        a, b = pair
        used |= {a, b}
        swapped[a] = (b[2], b[3])
        swapped[b] = (a[2], a[3])
        for x, (to_dev, to_port) in ((a, swapped[a]), (b, swapped[b])):
            faults.append({
                "kind": "miswired_link",
                "key": ["miswired_link", *sorted((f"{x[0]}:{x[1]}", f"{to_dev}:{to_port}"))],
                "cable": _cable_id(routed[x]),
                "detail": f"{x[0]} {x[1]} cabled to {to_dev} {to_port} (planned {x[2]} "
                          f"{x[3]})"})
    down: set[tuple[str, str, str, str]] = set()
    for c in pool:
        if len(down) >= req.down:
            break
        if c not in used:
            down.add(c)
            used.add(c)
            faults.append({"kind": "missing_link",
                           "key": ["missing_link", _cable_id(routed[c])],
                           "cable": _cable_id(routed[c]),
                           "detail": f"{c[0]} {c[1]} - {c[2]} {c[3]} built with "
                                     f"{c[0]} {c[1]} down"})
    host_port = {(lk.a, lk.b, lk.b_port): lk.a_port for lk in fab.links
                 if lk.tier == "node-leaf"}
    hosts: list[LabHost] = []
    rename: dict[str, str] = {}
    for h in spec.hosts:
        link = next(lk for lk in spec.links if lk.a_node == h.name)
        port = host_port[(h.name, link.b_node, link.b_if)]
        rename[h.name] = port
        hosts.append(LabHost(name=h.name, interface=port, address=h.address,
                             gateway=h.gateway))
    links: list[LabLink] = []
    for lk in spec.links:
        key = (lk.a_node, lk.a_if, lk.b_node, lk.b_if)
        if lk.a_node in rename:
            links.append(LabLink(lk.a_node, rename[lk.a_node], lk.b_node, lk.b_if))
        elif key in swapped:
            to_dev, to_port = swapped[key]
            links.append(LabLink(lk.a_node, lk.a_if, to_dev, to_port))
        else:
            links.append(LabLink(lk.a_node, lk.a_if, lk.b_node, lk.b_if, up=key not in down))
    sessions = spec.sessions_expected - 2 * req.miswires - req.down
    return LabSpec(switches=spec.switches, hosts=hosts, links=links,
                   sessions_expected=sessions, route_checks=[], pings=[]), faults


def _lldp_seen(text: str) -> set[str]:
    """Local interfaces with a neighbour in one ``lldpctl -f json`` output."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError:
        return set()
    itf = (doc.get("lldp") or {}).get("interface") if isinstance(doc, dict) else None
    if isinstance(itf, dict):
        return set(itf)
    if isinstance(itf, list):
        return {k for item in itf if isinstance(item, dict) for k in item}
    return set()


def run_twin_lab(req: TwinLabRequest, cat: Catalog) -> dict[str, Any]:
    """Build, inject, collect, tear down, compare (module docstring)."""
    preflight()
    fab, spec = build_lab(cat, req.leaves, req.spines, req.server, req.switch)
    built, faults = as_built(fab, spec, req)
    root = Path(tempfile.mkdtemp(prefix="clusterwright-twin-lab-")) if req.out is None \
        else req.out
    try:
        return _run(req, cat, fab, built, faults, root)
    finally:
        if req.out is None:
            shutil.rmtree(root, ignore_errors=True)


def _run(req: TwinLabRequest, cat: Catalog, fab: Fabric, built: LabSpec,
         faults: list[dict[str, Any]], root: Path) -> dict[str, Any]:
    bp = root / "blueprint"
    write_fabric(fab, bp)
    dumps = {"lldp": root / "dumps" / "lldp", "bgp": root / "dumps" / "bgp"}
    for d in dumps.values():
        d.mkdir(parents=True, exist_ok=True)
    switches = {s.name for s in built.switches}
    ifaces: dict[str, list[str]] = {}
    for lk in built.links:
        ifaces.setdefault(lk.a_node, []).append(lk.a_if)
        ifaces.setdefault(lk.b_node, []).append(lk.b_if)
    up_ends = {(lk.a_node, lk.a_if) for lk in built.links if lk.up} | {
        (lk.b_node, lk.b_if) for lk in built.links if lk.up}
    t0 = time.monotonic()
    lab_facts: dict[str, Any] = {}
    with lab_session(built) as lab:
        assert lab.workdir is not None
        for dev, its in sorted(ifaces.items()):
            lab.daemons.append(lldpd.start(lab.ns[dev], dev, sorted(its), lab.workdir,
                                           switch=dev in switches))
        deadline = time.monotonic() + req.timeout_s
        seen: set[tuple[str, str]] = set()
        sessions = 0
        while True:
            outputs = {dev: lldpd.neighbors_json(lab.workdir, lab.ns[dev]) for dev in ifaces}
            seen = {(dev, i) for dev, text in outputs.items() for i in _lldp_seen(text)}
            sessions = lab.poll().sessions
            dead = lab.dead_daemons()
            if (up_ends <= seen and sessions >= built.sessions_expected) or dead or \
                    time.monotonic() >= deadline:
                break
            time.sleep(_POLL_S)
        lab_facts = {
            "run_id": lab.run_id, "converge_s": round(time.monotonic() - t0, 2),
            "lldp_ends_seen": len(seen & up_ends), "lldp_ends_expected": len(up_ends),
            "bgp_sessions_established": sessions,
            "bgp_sessions_expected": built.sessions_expected,
            "daemons": {"zebra": len(switches), "bgpd": len(switches), "lldpd": len(ifaces)},
            "dead_daemons": dead,
        }
        for dev, text in outputs.items():
            (dumps["lldp"] / f"{dev}.json").write_text(text or '{"lldp": {}}\n')
        for dev in sorted(switches):
            (dumps["bgp"] / f"{dev}.json").write_text(
                frr.vtysh(lab.ns[dev], ["show bgp summary json"]) or "{}\n")
    lab_facts["torn_down"] = True
    # The lab builds the backend alone: its frontend and management cables are not there.
    report = twin_diff(TwinRequest(blueprint=bp, inputs={k: (v,) for k, v in dumps.items()},
                                   impact=False, networks=("backend",)), cat)
    want = {tuple(f["key"]) for f in faults}
    got = {f.key for f in report.findings}
    found = [f for f in faults if tuple(f["key"]) in got]
    false = [f.as_dict() for f in report.findings if f.key not in want]
    missed = [f for f in faults if tuple(f["key"]) not in got]
    converged = lab_facts["lldp_ends_seen"] == lab_facts["lldp_ends_expected"] and \
        sessions >= built.sessions_expected
    return {
        "injected": faults,
        "found": found,
        "false_findings": false,
        "findings": [f.as_dict() for f in report.findings],
        "missed": missed,
        "ok": not false and not missed and converged,
        "converged": converged,
        "leaves": req.leaves, "spines": req.spines, "seed": req.seed,
        "lab": lab_facts,
        "blueprint": str(bp) if req.out else None,
        "dumps": {k: str(v) for k, v in dumps.items()} if req.out else None,
        "could_not_see": report.unseen,
    }
