"""Fabric artifacts: cabling plan, BOM, FRR configs, lossless QoS (NVUE) per RoCE backend
switch (``export/qos.py``), Slurm and Kueue topology, containerlab, NetBox import set.
Rendered with Jinja2 from the designed ``Fabric``; nothing is recomputed.

``write_fabric`` renders everything into a temporary directory next to the target and moves it
into place only when every file is written, so a failure leaves nothing half-written and an
existing directory is replaced only with ``force``.
"""

from __future__ import annotations

import ipaddress
import json
import math
import os
import shutil
import tempfile
from collections import defaultdict
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import jinja2

from clusterwright.design.addressing import ip
from clusterwright.design.bom import BomLine, summary
from clusterwright.design.fabric import Fabric, Link
from clusterwright.errors import InputError
from clusterwright.export.hostlist import compress
from clusterwright.export.qos import qos_views, render_qos
from clusterwright.ownership import remove_stale_temp_dirs, temp_prefix

LABEL_PREFIX = "clusterwright.io"
BGP_TIMERS = "3 9"  # keepalive/hold s: FRR's datacenter profile, fast failure detection
# FRR's default build limit (MULTIPATH_NUM); a larger maximum-paths is refused.
MAX_PATHS = 64


def _version() -> str:
    try:
        return version("clusterwright")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "dev"


_NEEDS_QUOTES = frozenset(',"\n\r')


def _csv(value: object) -> str:
    s = "" if value is None else str(value)
    if _NEEDS_QUOTES.isdisjoint(s):
        return s
    return '"' + s.replace('"', '""') + '"'


def csv_lines(rows: Iterable[Iterable[object]]) -> Iterator[str]:
    """RFC 4180 lines of ``rows``, formatted here rather than cell by cell in the template
    (a Jinja filter per cell made the 350,000-link cabling plan four times slower). A line is
    checked once: only when a cell holds a comma, quote or line break are its cells quoted
    one by one."""
    for row in rows:
        cells = ["" if v is None else str(v) for v in row]
        line = ",".join(cells)
        if ('"' in line or "\n" in line or "\r" in line
                or line.count(",") != len(cells) - 1):
            line = ",".join(map(_csv, cells))
        yield line


def table_chunks(header: Iterable[str], lines: Iterable[str], batch: int = 4096
                 ) -> Iterator[str]:
    """A CSV file's text in large pieces: the header line, then ``batch`` lines at a time (one
    write per piece rather than a template loop and a write per line)."""
    yield ",".join(header) + "\n"
    buf: list[str] = []
    for line in lines:
        buf.append(line)
        if len(buf) >= batch:
            buf.append("")
            yield "\n".join(buf)
            buf = []
    if buf:
        buf.append("")
        yield "\n".join(buf)


def environment() -> jinja2.Environment:
    """The Jinja2 environment of the export templates (strict: a missing key is an error)."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("clusterwright.export", "templates"),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,  # configs and CSV, not HTML
    )
    env.filters["csv"] = _csv
    return env


# ------------------------------------------------------------------ views of the model


@dataclass
class SwitchView:
    """What one switch's FRR configuration needs, formatted."""

    name: str
    role: str
    part: str
    rack: str
    rack_u: int
    asn: int
    loopback: str
    interfaces: list[dict[str, str]] = field(default_factory=list)
    neighbors: list[dict[str, str]] = field(default_factory=list)
    groups: list[str] = field(default_factory=list)
    host_block: str = ""
    evpn: bool = False
    vrfs: list[Any] = field(default_factory=list)


_GROUP = {
    ("leaf", "up"): "SPINE", ("spine", "down"): "LEAF", ("spine", "up"): "CORE",
    ("core", "down"): "SPINE", ("fe-leaf", "up"): "SPINE", ("fe-spine", "down"): "LEAF",
    ("fe-spine", "up"): "CORE", ("fe-core", "down"): "SPINE",
}
_ROUTED = ("leaf-spine", "spine-core", "fe-leaf-spine", "fe-spine-core")


def switch_views(fab: Fabric, networks: tuple[str, ...] = ("backend", "frontend")) -> list[
    SwitchView
]:
    """FRR views of every routed switch (Ethernet backend and the frontend), name order."""
    views: dict[str, SwitchView] = {}
    ethernet = fab.backend.protocol == "ethernet"
    for d in fab.devices:
        routed_backend = d.role in ("leaf", "spine", "core") and ethernet and "backend" in networks
        routed_frontend = d.role in ("fe-leaf", "fe-spine", "fe-core") and "frontend" in networks
        if not (routed_backend or routed_frontend) or d.asn is None or d.loopback is None:
            continue
        views[d.name] = SwitchView(
            name=d.name, role=d.role, part=d.part, rack=d.rack, rack_u=d.rack_u, asn=d.asn,
            loopback=ip(d.loopback), evpn=routed_frontend,
            vrfs=list(fab.tenants) if d.role == "fe-leaf" else [],
        )
    block = fab.host_block
    for lk in fab.links:
        if lk.subnet is None:
            continue
        if lk.tier == "node-leaf":
            v = views.get(lk.b)
            if v is None:
                continue
            v.interfaces.append({
                "name": lk.b_port, "description": f"host {lk.a} {lk.a_port}",
                "address": ip(lk.subnet),
            })
            if not v.host_block and block:
                net = ipaddress.IPv4Network((lk.subnet & ~(block - 1), 32 - int(math.log2(block))))
                v.host_block = str(net)
            continue
        if lk.tier not in _ROUTED:
            continue
        lower, upper = views.get(lk.a), views.get(lk.b)
        if lower is None or upper is None:
            continue
        lower.interfaces.append({
            "name": lk.a_port, "description": f"{lk.b} {lk.b_port}", "address": ip(lk.subnet + 1),
        })
        upper.interfaces.append({
            "name": lk.b_port, "description": f"{lk.a} {lk.a_port}", "address": ip(lk.subnet),
        })
        gl, gu = _GROUP[(lower.role, "up")], _GROUP[(upper.role, "down")]
        lower.neighbors.append({
            "address": ip(lk.subnet), "group": gl, "description": f"{lk.b} {lk.b_port}",
        })
        upper.neighbors.append({
            "address": ip(lk.subnet + 1), "group": gu, "description": f"{lk.a} {lk.a_port}",
        })
        for v, g in ((lower, gl), (upper, gu)):
            if g not in v.groups:
                v.groups.append(g)
    out = sorted(views.values(), key=lambda v: v.name)
    for v in out:
        v.groups.sort()
        v.interfaces.sort(key=lambda i: _port_key(i["name"]))
    return out


def _port_key(name: str) -> tuple[int, int]:
    digits = name[3:] if name.startswith("swp") else name
    if "s" in digits:
        a, b = digits.split("s", 1)
        return int(a), int(b)
    return (int(digits), -1) if digits.isdigit() else (1 << 30, 0)


def render_frr(fab: Fabric, view: SwitchView, env: jinja2.Environment | None = None) -> str:
    """One switch's frr.conf text."""
    env = env or environment()
    max_paths = max(2, min(MAX_PATHS, len(view.neighbors)))
    return env.get_template("frr.conf.j2").render(
        sw=view, version=_version(), timers=BGP_TIMERS, max_paths=max_paths,
    )


CABLING_COLUMNS = (
    "cable_id", "network", "tier", "plane", "a_device", "a_rack", "a_port", "a_cage",
    "a_transceiver", "b_device", "b_rack", "b_port", "b_cage", "b_transceiver", "speed_gbps",
    "media", "cable", "length_m",
)


def cabling_rows(fab: Fabric) -> Iterator[list[object]]:
    """One row per link, in design order; cable ids are stable per (network, position)."""
    by = fab.by_name
    for i, lk in enumerate(fab.links, 1):
        yield [
            f"C{i:07d}", lk.network, lk.tier, lk.plane, lk.a, by[lk.a].rack, lk.a_port, lk.a_cage,
            lk.a_xcvr, lk.b, by[lk.b].rack, lk.b_port, lk.b_cage, lk.b_xcvr, f"{lk.speed_gbps:g}",
            lk.media, lk.cable, f"{lk.length_m:g}",
        ]


def slurm_tree(fab: Fabric) -> list[dict[str, str]]:
    """Logical switches for topology/tree: per SU rail group, per pod, and the fabric top."""
    sh = fab.shape
    by_su: dict[int, list[str]] = defaultdict(list)
    for h in fab.hosts:
        by_su[h.su].append(h.name)
    # With no backend, nodes meet on the frontend: its link rate is what the tree describes.
    # Slurm reads LinkSpeed as an unsigned integer (an optional k suffix at most): Gb/s, bare.
    speed = f"{round((fab.backend if fab.has_backend else fab.frontend).speed_gbps)}"
    rows: list[dict[str, str]] = [
        {"name": f"su{su:03d}", "kind": "Nodes", "members": compress(names), "speed": speed}
        for su, names in sorted(by_su.items())
    ]
    if sh.tiers == 3:
        pods: dict[int, list[str]] = defaultdict(list)
        for su in sorted(by_su):
            pods[(su - 1) // sh.sus_per_pod + 1].append(f"su{su:03d}")
        rows += [
            {"name": f"pod{p:02d}", "kind": "Switches", "members": compress(m), "speed": speed}
            for p, m in sorted(pods.items())
        ]
        rows.append({"name": "core", "kind": "Switches",
                     "members": compress([f"pod{p:02d}" for p in sorted(pods)]), "speed": speed})
    elif len(by_su) > 1:
        rows.append({"name": "spine", "kind": "Switches",
                     "members": compress([f"su{su:03d}" for su in sorted(by_su)]),
                     "speed": speed})
    return rows


def slurm_blocks(fab: Fabric) -> tuple[str, list[int], list[dict[str, str]],
                                       list[dict[str, str]]]:
    """(what a block is, block sizes, blocks, blocks left out): NVLink domains wider than a
    host (NVL72 racks), else scalable units (hosts one leaf hop apart on every rail).

    The planning base block size is a whole block (one scalable unit or NVLink domain, the
    fabric's unit of locality). Slurm requires every block to hold at least the base
    (topology.conf(5), BlockSizes), so a partial block, such as a last scalable unit of spare
    servers, is left out of the block topology; its nodes stay schedulable through the tree
    topology, the cluster's default. (Taking the smallest block as the base, as before, made
    3 spare servers the base: 32-node units then hold ten 3-node base blocks and strand two
    nodes each.)"""
    srv = fab.server
    gpus_per_host = srv.gpus // srv.hosts
    domain_hosts = srv.nvlink_domain_gpus // gpus_per_host
    groups: dict[int, list[str]] = defaultdict(list)
    if domain_hosts > 1:
        kind = f"NVLink domain ({srv.nvlink_domain_gpus} GPUs)"
        for h in fab.hosts:
            groups[h.uid // domain_hosts + 1].append(h.name)
        prefix = "nvl"
    else:
        kind = "scalable unit"
        for h in fab.hosts:
            groups[h.su].append(h.name)
        prefix = "su"
    base = max(len(v) for v in groups.values())
    blocks: list[dict[str, str]] = []
    left: list[dict[str, str]] = []
    for k, v in sorted(groups.items()):
        b = {"name": f"{prefix}{k:03d}", "nodes": compress(v), "size": str(len(v))}
        (blocks if len(v) == base else left).append(b)
    return kind, [base], blocks, left


def kueue_levels(fab: Fabric) -> list[str]:
    levels = []
    if fab.shape.tiers == 3:
        levels.append(f"{LABEL_PREFIX}/pod")
    levels.append(f"{LABEL_PREFIX}/su")
    srv = fab.server
    if srv.nvlink_domain_gpus > srv.gpus // srv.hosts:
        levels.append(f"{LABEL_PREFIX}/nvlink-domain")
    levels.append("kubernetes.io/hostname")
    return levels


def node_labels(fab: Fabric) -> list[dict[str, Any]]:
    srv = fab.server
    domain_hosts = max(1, srv.nvlink_domain_gpus // (srv.gpus // srv.hosts))
    out = []
    for h in fab.hosts:
        labels = []
        if fab.shape.tiers == 3:
            pod = (h.su - 1) // fab.shape.sus_per_pod + 1
            labels.append((f"{LABEL_PREFIX}/pod", f"pod{pod:02d}"))
        labels.append((f"{LABEL_PREFIX}/su", f"su{h.su:03d}"))
        if domain_hosts > 1:
            labels.append((f"{LABEL_PREFIX}/nvlink-domain", f"nvl{h.uid // domain_hosts + 1:03d}"))
        labels.append((f"{LABEL_PREFIX}/rack", h.rack))
        labels.append((f"{LABEL_PREFIX}/server", srv.id))
        out.append({"name": h.name, "labels": labels})
    return out


def lab_links(fab: Fabric, views: list[SwitchView]) -> tuple[list[tuple[str, str, str, str]],
                                                              list[dict[str, str]]]:
    """Switch-to-switch links of the routed backend and one stub host per leaf (its first
    host link): the scaled-down host layer of a containerlab or FRR lab."""
    names = {v.name for v in views}
    links = [
        (lk.a, lk.a_port, lk.b, lk.b_port) for lk in fab.links
        if lk.tier in _ROUTED and lk.a in names and lk.b in names
    ]
    hosts: list[dict[str, str]] = []
    seen: set[str] = set()
    for lk in fab.links:
        if lk.tier == "node-leaf" and lk.b in names and lk.b not in seen and lk.subnet is not None:
            seen.add(lk.b)
            hname = f"h-{lk.b}"[:40]
            hosts.append({"name": hname, "interface": "eth1", "address": ip(lk.subnet + 1),
                          "gateway": ip(lk.subnet), "leaf": lk.b, "leaf_port": lk.b_port,
                          "host": lk.a})
            links.append((hname, "eth1", lk.b, lk.b_port))
    return links, hosts


# ------------------------------------------------------------------ NetBox import set

_NB_IF_TYPE = {400.0: "400gbase-x-osfp", 800.0: "800gbase-x-osfp", 200.0: "200gbase-x-qsfp56",
               100.0: "100gbase-x-qsfp28", 1.0: "1000base-t"}
_NB_CABLE = {"dac": "dac-passive", "acc": "dac-active", "aec": "dac-active", "aoc": "aoc",
             "utp": "cat6a"}


def netbox_tables(fab: Fabric) -> dict[str, tuple[list[str], Iterable[list[object]]]]:
    """NetBox bulk-import CSVs (NetBox 4 column names), in import order."""
    site = fab.request.server + "-cluster"
    roles = sorted({d.role for d in fab.devices if d.part})
    parts = sorted({d.part for d in fab.devices if d.part})
    racks = sorted({d.rack for d in fab.devices if d.rack})
    units = max((r.units for r in fab.racks), default=48)

    units_of = {d.part: d.units for d in fab.devices if d.part}

    def mfr(part: str) -> str:
        return fab.vendors.get(part, "Generic")

    def cable_type(lk: Link) -> str:
        if lk.media == "optics":
            return "smf-os2" if "os2" in lk.cable or "e30" in lk.cable else "mmf-om4"
        return _NB_CABLE.get(lk.media, "")

    def ifaces() -> Iterator[list[object]]:
        for d in fab.devices:
            if d.loopback is not None:
                yield [d.name, "lo", "virtual", "false", ""]
        for lk in fab.links:
            kind = _NB_IF_TYPE.get(lk.speed_gbps, "other")
            mgmt = "true" if lk.network == "oob" else "false"
            if fab.by_name[lk.a].part:
                yield [lk.a, lk.a_port, "1000base-t" if lk.network == "oob" and lk.tier
                       == "oob-node-leaf" else kind, mgmt, lk.tier]
            yield [lk.b, lk.b_port, kind if lk.tier != "oob-node-leaf" else "1000base-t",
                   "false", lk.tier]

    def cables() -> Iterator[list[object]]:
        for i, lk in enumerate(fab.links, 1):
            if not fab.by_name[lk.a].part:
                continue  # external storage targets are not NetBox devices here
            yield [f"C{i:07d}", lk.a, "dcim.interface", lk.a_port, lk.b, "dcim.interface",
                   lk.b_port, cable_type(lk), "planned", f"{lk.length_m:g}", "m"]

    def addresses() -> Iterator[list[object]]:
        for d in fab.devices:
            if d.loopback is not None:
                yield [f"{ip(d.loopback)}/32", "active", d.name, "lo", "loopback"]
        for lk in fab.links:
            if lk.subnet is None:
                continue
            if fab.by_name[lk.a].part:
                yield [f"{ip(lk.subnet + 1)}/31", "active", lk.a, lk.a_port, ""]
            yield [f"{ip(lk.subnet)}/31", "active", lk.b, lk.b_port, ""]

    asns = sorted({d.asn for d in fab.devices if d.asn is not None})
    return {
        "sites": (["name", "slug", "status"], [[site, site, "planned"]]),
        "manufacturers": (["name", "slug"], [
            [m, m.lower().replace(" ", "-")] for m in sorted(set(fab.vendors.values()))
        ]),
        "device-roles": (["name", "slug", "color"], [[r, r, "9e9e9e"] for r in roles]),
        "device-types": (
            ["manufacturer", "model", "slug", "u_height"],
            [[mfr(p), p, p, units_of[p]] for p in parts],
        ),
        "racks": (["site", "name", "status", "u_height"],
                  [[site, r, "planned", units] for r in racks]),
        "devices": (
            ["name", "role", "manufacturer", "device_type", "site", "rack", "position", "face",
             "status"],
            [[d.name, d.role, mfr(d.part), d.part, site, d.rack, d.rack_u,
              "front", "planned"] for d in fab.devices if d.part],
        ),
        "interfaces": (["device", "name", "type", "mgmt_only", "description"], ifaces()),
        "cables": (["label", "side_a_device", "side_a_type", "side_a_name", "side_b_device",
                    "side_b_type", "side_b_name", "type", "status", "length", "length_unit"],
                   cables()),
        "rirs": (["name", "slug", "is_private"], [["private-asn", "private-asn", "true"]]),
        "asns": (["asn", "rir"], [[a, "private-asn"] for a in asns]),
        "ip-addresses": (["address", "status", "device", "interface", "role"], addresses()),
    }


# ------------------------------------------------------------------ writing


def check_out_dir(out: Path, force: bool) -> None:
    """Refuse an existing non-empty directory (or a file) unless ``force``."""
    if out.exists() and not out.is_dir():
        raise InputError(f"out: {out} exists and is not a directory", field="out")
    if out.is_dir() and any(out.iterdir()) and not force:
        raise InputError(
            f"out: {out} exists and is not empty; set `force` to replace it (nothing was "
            "written)", field="out")
    # The nearest existing ancestor must be a directory we can create entries in; finding out
    # only after a plan of minutes is too late.
    anc = out.absolute().parent
    while not anc.exists() and anc != anc.parent:
        anc = anc.parent
    if not anc.is_dir() or not os.access(anc, os.W_OK | os.X_OK):
        raise InputError(f"out: {out}: cannot create a directory under {anc} "
                         "(not a writable directory)", field="out")


@contextmanager
def atomic_dir(out: Path) -> Iterator[Path]:
    """A temporary sibling of ``out`` to fill; on success it replaces ``out`` in one rename
    (an existing ``out`` is moved aside first, then removed), on any failure it is removed and
    ``out`` is left as it was. Call ``check_out_dir`` first.

    The sibling's name carries this process's pid (``ownership.temp_prefix``), so the leftovers
    of a writer that was killed (kill -9 leaves no chance to clean up) are removed by the next
    write to ``out``, while those of a writer still running are left alone."""
    parent = out.resolve().parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
        remove_stale_temp_dirs(parent, out.name)
        tmp = Path(tempfile.mkdtemp(prefix=temp_prefix(out.name), dir=parent))
    except OSError as exc:
        raise InputError(f"out: {out}: cannot write here: {exc.strerror or exc}",
                         field="out") from None
    try:
        # mkdtemp makes 0700; the result should get the permissions any new directory would.
        umask = os.umask(0)
        os.umask(umask)
        tmp.chmod(0o777 & ~umask)
        yield tmp
        if out.exists():
            old = Path(tempfile.mkdtemp(prefix=temp_prefix(out.name, "old"), dir=parent))
            os.replace(out, old / "x")
            os.replace(tmp, out)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, out)
    except OSError as exc:
        # A full disk or a directory removed under us: say so, leave ``out`` as it was.
        shutil.rmtree(tmp, ignore_errors=True)
        raise InputError(f"--out {out}: writing failed, nothing was replaced: "
                         f"{exc.strerror or exc}", field="out") from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def write_fabric(fab: Fabric, out: Path, force: bool = False) -> list[str]:
    """Write every artifact under ``out``; returns the relative paths written."""
    out = Path(out)
    check_out_dir(out, force)
    with atomic_dir(out) as tmp:
        written = _render_all(fab, tmp)
    return written


def _render_all(fab: Fabric, root: Path) -> list[str]:
    env = environment()
    written: list[str] = []
    title = f"{fab.request.nodes} x {fab.server.id}"
    ver = _version()

    def emit(rel: str, chunks: Iterable[str]) -> None:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w", encoding="utf-8", newline="\n") as f:
            for c in chunks:
                f.write(c)
        written.append(rel)

    emit("cabling.csv", table_chunks(CABLING_COLUMNS, csv_lines(cabling_rows(fab))))
    bom = [b for b in fab.bom if isinstance(b, BomLine)]
    emit("bom.csv", env.get_template("bom.csv.j2").generate(lines=bom))
    emit("fabric.json", [json.dumps(summary(fab), indent=2) + "\n"])
    emit("ip-plan.csv", table_chunks(
        ["device", "role", "asn", "loopback", "mgmt_ip", "rack", "rack_u"],
        csv_lines(
            [d.name, d.role, d.asn or "", ip(d.loopback) if d.loopback is not None else "",
             ip(d.mgmt_ip) if d.mgmt_ip is not None else "", d.rack, d.rack_u]
            for d in fab.devices
        ),
    ))
    emit("racks.csv", table_chunks(
        ["rack", "row", "position", "kind", "cooling", "units", "used_units", "power_kw",
         "devices"],
        csv_lines(
            [r.name, r.row + 1, r.position + 1, r.kind, r.cooling, r.units, r.used_units,
             f"{r.power_w / 1e3:.2f}", " ".join(r.devices)]
            for r in fab.racks
        ),
    ))
    views = switch_views(fab)
    for v in views:
        emit(f"frr/{v.name}.conf", [render_frr(fab, v, env)])
    for q in qos_views(fab):
        emit(f"qos/{q.name}.nvue", [render_qos(q, env, ver)])
    if views:
        emit("frr/daemons", [env.get_template("daemons.j2").render()])
        backend_views = [v for v in views if v.role in ("leaf", "spine", "core")]
        links, hosts = lab_links(fab, backend_views)
        if backend_views:
            emit("containerlab/fabric.clab.yml", env.get_template("clab.yml.j2").generate(
                title=title, version=ver, name=f"cw-{fab.server.id}-{fab.request.nodes}",
                switches=backend_views, hosts=hosts, links=links,
            ))
    tree = slurm_tree(fab)
    emit("slurm/topology.conf", env.get_template("topology.conf.j2").generate(
        title=title, version=ver, switches=tree, rails=fab.shape.rails, backend=fab.has_backend,
    ))
    kind, sizes, blocks, left = slurm_blocks(fab)
    emit("slurm/topology.yaml", env.get_template("topology.yaml.j2").generate(
        title=title, version=ver, switches=tree, block_kind=kind, block_sizes=sizes,
        blocks=blocks, left_out=left, nvl="NVLink" in kind,
    ))
    emit("kubernetes/kueue-topology.yaml", env.get_template("kueue-topology.yaml.j2").generate(
        title=title, version=ver, name=f"cw-{fab.server.id}", levels=kueue_levels(fab),
        gpu=fab.server.gpu, label_prefix=LABEL_PREFIX, server=fab.server.id,
    ))
    emit("kubernetes/node-labels.yaml", env.get_template("node-labels.yaml.j2").generate(
        title=title, nodes=node_labels(fab),
    ))
    for name, (header, rows) in netbox_tables(fab).items():
        emit(f"netbox/{name}.csv", table_chunks(header, csv_lines(rows)))
    return written
