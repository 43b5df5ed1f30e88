"""Lossless QoS export (``export/qos.py``): one NVUE command file per RoCE backend switch, with
every backend port's PFC headroom recomputed here from ``cabling.csv`` and ``model/pfc.py``.

The files are parsed with a grammar of the NVUE commands the exporter may emit, each written
as the NVUE command reference spells it (``<...>`` are the reference's placeholders); a line
no pattern matches fails the test. The golden file for one leaf is compared in
``test_fabric_export.py`` (``GOLDEN``).
"""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from clusterwright.catalog.registry import Catalog
from clusterwright.design.bom import plan_fabric
from clusterwright.design.fabric import Fabric
from clusterwright.export.fabric import write_fabric
from clusterwright.export.qos import QosView, lossless_priorities
from clusterwright.model.pfc import lanes_of, sonic_mellanox_headroom
from clusterwright.spec.fabric import FabricRequest
from tests.export.test_fabric_export import CASES

# NVUE reference (Set-and-Unset-Commands/QoS and /Interface) forms, as regexes.
_ID = r"[A-Za-z0-9_.-]+"
_LIST = r"\d+(?:,\d+)*"
GRAMMAR: dict[str, str] = {
    "roce": r"nv set qos roce mode lossless",
    "pool": rf"nv set qos traffic-pool (default-lossy|roce-lossless) switch-priority ({_LIST})",
    "queue": r"nv set qos egress-queue-mapping default-global switch-priority ([0-7]) "
             r"traffic-class ([0-7])",
    "sched_mode": rf"nv set qos egress-scheduler default-global traffic-class ({_LIST}) mode dwrr",
    "sched_bw": rf"nv set qos egress-scheduler default-global traffic-class ({_LIST}) "
                r"bw-percent (\d+)",
    "ecn": rf"nv set qos congestion-control default-global traffic-class ({_LIST}) "
           r"(min-threshold|max-threshold|probability) (\d+)",
    "pfc_sp": rf"nv set qos pfc ({_ID}) switch-priority ({_LIST})",
    "pfc_txrx": rf"nv set qos pfc ({_ID}) (tx|rx) (enable|disable)",
    "pfc_value": rf"nv set qos pfc ({_ID}) (cable-length|port-buffer|xoff-threshold|"
                 r"xon-threshold) (\d+)",
    "mtu": r"nv set interface (swp\d+(?:s\d+)?) link mtu (\d+)",
    "if_pfc": rf"nv set interface (swp\d+(?:s\d+)?) qos pfc profile ({_ID})",
    "apply": r"nv config apply",
}


@dataclass
class Nvue:
    """What the checks need from one file."""

    lines: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)
    profiles: dict[str, dict[str, object]] = field(default_factory=dict)
    port_profile: dict[str, str] = field(default_factory=dict)
    port_mtu: dict[str, int] = field(default_factory=dict)

    def of(self, kind: str) -> list[tuple[str, ...]]:
        return [g for k, g in self.lines if k == kind]


def parse_nvue(text: str) -> Nvue:
    out = Nvue()
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        hits = [(k, m) for k, pat in GRAMMAR.items() if (m := re.fullmatch(pat, line))]
        assert len(hits) == 1, f"line {n} is not a known NVUE command: {line!r}"
        kind, m = hits[0]
        g = m.groups()
        out.lines.append((kind, g))
        if kind == "pfc_sp":
            out.profiles.setdefault(g[0], {})["switch-priority"] = g[1]
        elif kind == "pfc_txrx":
            out.profiles.setdefault(g[0], {})[g[1]] = g[2]
        elif kind == "pfc_value":
            out.profiles.setdefault(g[0], {})[g[1]] = int(g[2])
        elif kind == "if_pfc":
            assert g[0] not in out.port_profile, f"{g[0]} gets two profiles"
            out.port_profile[g[0]] = g[1]
        elif kind == "mtu":
            out.port_mtu[g[0]] = int(g[1])
    return out


@dataclass
class Out:
    fab: Fabric
    out: Path

    def files(self) -> dict[str, Nvue]:
        d = self.out / "qos"
        return {p.stem: parse_nvue(p.read_text(encoding="utf-8"))
                for p in sorted(d.glob("*.nvue"))} if d.exists() else {}

    def cabling(self) -> list[dict[str, str]]:
        with (self.out / "cabling.csv").open(newline="", encoding="utf-8") as f:
            return list(csv.DictReader(f))


QOS_CASES: dict[str, FabricRequest] = {
    "eth-h100x4": CASES["eth-h100x4"],
    "eth-3tier-h100x8": CASES["eth-3tier-h100x8"],  # cores too
    "eth-gb200x4": CASES["eth-gb200x4"],
    "ib-h100x4": CASES["ib-h100x4"],
    "eth-h100x4-lossless0": CASES["eth-h100x4"].model_copy(update={"lossless_priorities": 0}),
    "eth-h100x4-lossless1-mtu4200": CASES["eth-h100x4"].model_copy(
        update={"lossless_priorities": 1, "mtu": 4200}),
}
ROCE = ("eth-h100x4", "eth-3tier-h100x8", "eth-gb200x4", "eth-h100x4-lossless1-mtu4200")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, catalog: Catalog) -> Callable[[str], Out]:
    cache: dict[str, Out] = {}

    def get(case: str) -> Out:
        if case not in cache:
            fab = plan_fabric(QOS_CASES[case], catalog)
            out = tmp_path_factory.mktemp(case) / "out"
            write_fabric(fab, out)
            cache[case] = Out(fab, out)
        return cache[case]

    return get


@pytest.mark.parametrize("case", ROCE)
def test_every_backend_switch_gets_a_file(built: Callable[[str], Out], case: str) -> None:
    o = built(case)
    switches = {d.name for d in o.fab.devices if d.role in ("leaf", "spine", "core")}
    assert switches and set(o.files()) == switches
    if case == "eth-3tier-h100x8":
        assert any(d.role == "core" for d in o.fab.devices)


@pytest.mark.parametrize("case", ROCE)
def test_every_backend_port_has_the_headroom_of_its_cable(
    built: Callable[[str], Out], case: str
) -> None:
    """Recompute each port's headroom from the written cabling plan, not from the design."""
    o = built(case)
    mtu = QOS_CASES[case].mtu
    files = o.files()
    ports: dict[str, dict[str, tuple[float, float]]] = {name: {} for name in files}
    for row in o.cabling():
        if row["network"] != "backend":
            continue
        for end in ("a", "b"):
            dev = row[f"{end}_device"]
            if dev in ports:
                ports[dev][row[f"{end}_port"]] = (float(row["speed_gbps"]),
                                                  float(row["length_m"]))
    checked = 0
    for name, nv in files.items():
        assert set(nv.port_profile) == set(ports[name]), name
        assert nv.port_mtu == dict.fromkeys(ports[name], mtu), name
        for port, (speed, length) in ports[name].items():
            h = sonic_mellanox_headroom(speed, length, mtu, lanes=lanes_of(speed))
            prof = nv.profiles[nv.port_profile[port]]
            assert prof["port-buffer"] == h.size, (name, port)
            assert prof["xoff-threshold"] == h.size - h.xoff, (name, port)
            assert prof["xon-threshold"] == mtu, (name, port)
            assert prof["cable-length"] == math.ceil(length), (name, port)
            assert prof["cable-length"] >= length
            assert 0 < prof["xon-threshold"] < prof["xoff-threshold"] < prof["port-buffer"]
            checked += 1
    assert checked == sum(len(v) for v in ports.values()) > 0


def test_headroom_equals_what_fabric_design_reports(built: Callable[[str], Out]) -> None:
    o = built("eth-h100x4")
    reported = {(p["port"], p["speed_gbps"]): p["headroom_bytes"]
                for p in o.fab.pfc.as_dict()["port_types"]}
    leaf = o.files()["leaf-su001-r1"]
    sizes = {leaf.profiles[leaf.port_profile[p]]["port-buffer"] for p in leaf.port_profile}
    assert sizes == {reported[("leaf down (node-leaf)", 400.0)],
                     reported[("leaf up (leaf-spine)", 400.0)]}


@pytest.mark.parametrize("case", ROCE)
def test_lossless_priorities_start_at_three_and_get_pfc_ecn_and_a_class(
    built: Callable[[str], Out], case: str
) -> None:
    o = built(case)
    prios = lossless_priorities(QOS_CASES[case].lossless_priorities)
    want = ",".join(map(str, prios))
    assert prios[0] == 3
    for name, nv in o.files().items():
        kinds = [k for k, _ in nv.lines]
        assert kinds[0] == "roce" and kinds[-1] == "apply" and kinds.count("apply") == 1
        assert all(p["switch-priority"] == want and p["tx"] == p["rx"] == "enable"
                   for p in nv.profiles.values()), name
        assert {g[0] for g in nv.of("ecn")} == {want}
        queues = {int(sp): int(tc) for sp, tc in nv.of("queue")}
        assert queues == {p: p for p in prios[1:]}
        pools: dict[str, str] = {g[0]: g[1] for g in nv.of("pool")}
        if len(prios) > 1:
            assert pools["roce-lossless"] == want
            assert not set(pools["default-lossy"].split(",")) & set(want.split(","))
            assert sum(int(bw) * len(tcs.split(",")) for tcs, bw in nv.of("sched_bw")) <= 100
        else:
            assert not pools and not nv.of("sched_bw")  # RoCE mode's defaults cover 3


@pytest.mark.parametrize("case", ["ib-h100x4", "eth-h100x4-lossless0"])
def test_no_qos_files_without_lossless_ethernet(built: Callable[[str], Out], case: str) -> None:
    o = built(case)
    assert not (o.out / "qos").exists()
    assert (o.out / "cabling.csv").exists()


@pytest.mark.parametrize("count", range(1, 9))
def test_priority_order_and_scheduler_shares(count: int) -> None:
    prios = lossless_priorities(count)
    assert len(set(prios)) == count and prios[:2] == [3, 4][:count]
    assert 6 not in prios or count == 8  # RoCE's CNP priority only when all eight are asked
    v = QosView("x", "leaf", "sn5600", 9216, prios)
    assert v.share_percent * count <= 100
    assert sorted(v.lossy_priorities + prios) == list(range(8))
