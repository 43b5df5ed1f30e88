"""Fabric exports (``export.fabric.write_fabric``): golden files, structure, and safe writing.

Golden files live in ``tests/export/golden/<case>/``. They hold a representative subset of the
rendered artifacts of two small designs (``GOLDEN``); ``cabling.head.csv`` holds the first 20
lines of ``cabling.csv``. The package version in the generated headers is replaced by
``{VERSION}`` on both sides before comparing, so a release does not break the goldens.

After an intended change to a template or to the designer, regenerate them and review the diff:

    CW_UPDATE_GOLDEN=1 .venv/bin/pytest tests/export

The structural tests read every artifact back the way its consumer would (YAML, Slurm
hostlists, CSV, FRR configs, and FRR's own parser ``vtysh --dryrun`` when it is installed) and
check it against the design and against the other artifacts.
"""

from __future__ import annotations

import csv
import difflib
import ipaddress
import itertools
import json
import os
import re
import shutil
import subprocess
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import jinja2
import pytest
import yaml

from clusterwright.catalog.registry import Catalog
from clusterwright.design.bom import plan_fabric
from clusterwright.design.fabric import Fabric
from clusterwright.errors import InputError
from clusterwright.export.fabric import csv_lines, table_chunks, write_fabric
from clusterwright.spec.fabric import FabricRequest
from tests.export.test_hostlist import expand

GOLDEN_DIR = Path(__file__).parent / "golden"
UPDATE = os.environ.get("CW_UPDATE_GOLDEN") == "1"

CASES: dict[str, FabricRequest] = {
    # RoCE backend, two SUs of two hosts: FRR on leaves and spines, containerlab.
    "eth-h100x4": FabricRequest(server="dgx-h100", nodes=4, switch="sn5600", su_hosts=2, tenants=2),
    # A last SU of one host (a spare server beside two full SUs): Slurm's block topology
    # takes the full SUs; the partial one stays in the tree.
    "eth-h100x5": FabricRequest(server="dgx-h100", nodes=5, switch="sn5600", su_hosts=2,
                                tenants=1),
    # InfiniBand backend (no FRR there); the Ethernet frontend still runs EVPN.
    # tiers=2: the full-SU two-tier build (4 hosts alone would be one switch, no spines).
    "ib-h100x4": FabricRequest(server="dgx-h100", nodes=4, switch="qm9700", tiers=2),
    # Three Ethernet tiers, small: pods in Slurm and Kueue, spine-core BGP sessions.
    "eth-3tier-h100x8": FabricRequest(
        server="dgx-h100",
        nodes=8,
        switch="sn5600",
        su_hosts=2,
        tiers=3,
        leaf_uplinks=4,
        tenants=1,
    ),
    # Rack-scale NVL72 on InfiniBand, one rack per SU: NVLink-domain blocks and Kueue level.
    "ib-gb200x2": FabricRequest(
        server="gb200-nvl72",
        nodes=2,
        switch="qm9700",
        su_hosts=18,
        cooling="liquid",
        rack_kw=132,
        tenants=1,
    ),
    # NVL72 on Ethernet with the default SU size (64 hosts, not a whole number of racks).
    "eth-gb200x4": FabricRequest(
        server="gb200-nvl72",
        nodes=4,
        switch="sn5600",
        cooling="liquid",
        rack_kw=132,
        tenants=1,
    ),
}

_COMMON = (
    "frr/fe-leaf-su001-a.conf",
    "frr/fe-spine-001.conf",
    "slurm/topology.conf",
    "slurm/topology.yaml",
    "kubernetes/kueue-topology.yaml",
    "bom.csv",
    "netbox/devices.csv",
)
GOLDEN: dict[str, tuple[str, ...]] = {
    "eth-h100x4": (
        "frr/leaf-su001-r1.conf",
        "frr/spine-001.conf",
        *_COMMON,
        "containerlab/fabric.clab.yml",
        "qos/leaf-su001-r1.nvue",
    ),
    "ib-h100x4": _COMMON,  # an InfiniBand backend has no FRR leaves/spines and no lab
}
HEAD_LINES = 20  # of cabling.csv, stored as cabling.head.csv

ROUTED_TIERS = ("leaf-spine", "spine-core", "fe-leaf-spine", "fe-spine-core")
NETWORKS_WITH_FRR = {"leaf", "spine", "core", "fe-leaf", "fe-spine", "fe-core"}


def _package_version() -> str:
    try:
        return version("clusterwright")
    except PackageNotFoundError:  # pragma: no cover - same fallback as the exporter
        return "dev"


def normalize(text: str) -> str:
    """Replace the package version in generated headers by a placeholder."""
    return text.replace(f"clusterwright {_package_version()}", "clusterwright {VERSION}")


# ---------------------------------------------------------------------------- parsed artifacts


@dataclass
class FrrConfig:
    """What the structural checks need from one frr.conf."""

    name: str
    asn: int
    interfaces: dict[str, ipaddress.IPv4Interface] = field(default_factory=dict)
    descriptions: dict[str, str] = field(default_factory=dict)
    neighbors: list[ipaddress.IPv4Address] = field(default_factory=list)
    host_block: ipaddress.IPv4Network | None = None
    aggregate: ipaddress.IPv4Network | None = None


def parse_frr(name: str, text: str) -> FrrConfig:
    asn: int | None = None
    cfg = FrrConfig(name=name, asn=0)
    iface: str | None = None
    for line in text.splitlines():
        if line.startswith("interface "):
            iface = line.split()[1]
            continue
        if not line.startswith(" "):
            iface = None
        words = line.split()
        if iface and words[:2] == ["ip", "address"]:
            cfg.interfaces[iface] = ipaddress.IPv4Interface(words[2])
        elif iface and words[:1] == ["description"]:
            cfg.descriptions[iface] = " ".join(words[1:])
        elif words[:2] == ["router", "bgp"] and len(words) == 3:
            asn = int(words[2])
        elif words[:1] == ["neighbor"] and words[2:3] == ["peer-group"] and len(words) == 4:
            cfg.neighbors.append(ipaddress.IPv4Address(words[1]))
        elif words[:2] == ["ip", "prefix-list"] and "HOST_LINKS" in words:
            cfg.host_block = ipaddress.IPv4Network(words[words.index("permit") + 1])
        elif words[:1] == ["aggregate-address"]:
            cfg.aggregate = ipaddress.IPv4Network(words[1])
    assert asn is not None, f"{name}: no `router bgp <asn>`"
    cfg.asn = asn
    return cfg


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


@dataclass
class Built:
    case: str
    fab: Fabric
    out: Path

    def text(self, rel: str) -> str:
        return (self.out / rel).read_text(encoding="utf-8")

    def csv(self, rel: str) -> list[dict[str, str]]:
        return read_csv(self.out / rel)

    @cached_property
    def summary(self) -> dict[str, Any]:
        data = json.loads(self.text("fabric.json"))
        assert isinstance(data, dict)
        return data

    @cached_property
    def hosts(self) -> list[str]:
        return [h.name for h in self.fab.hosts]

    @cached_property
    def frr(self) -> dict[str, FrrConfig]:
        return {
            p.stem: parse_frr(p.stem, p.read_text(encoding="utf-8"))
            for p in sorted((self.out / "frr").glob("*.conf"))
        }

    @cached_property
    def cabling(self) -> list[dict[str, str]]:
        return self.csv("cabling.csv")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, catalog: Catalog) -> Callable[[str], Built]:
    """Design and render each case once per module."""
    cache: dict[str, Built] = {}

    def get(case: str) -> Built:
        if case not in cache:
            fab = plan_fabric(CASES[case], catalog)
            out = tmp_path_factory.mktemp(case) / "out"
            write_fabric(fab, out)
            cache[case] = Built(case, fab, out)
        return cache[case]

    return get


@pytest.fixture(params=list(CASES))
def b(request: pytest.FixtureRequest, built: Callable[[str], Built]) -> Built:
    return built(request.param)


def _bug(case: str, reason: str) -> Any:
    """A case that once showed the bug ``reason`` describes (fixed; kept as a regression)."""
    del reason
    return pytest.param(case)


# ---------------------------------------------------------------------------- golden files


def _golden_items() -> list[tuple[str, str]]:
    items = [(case, rel) for case, rels in GOLDEN.items() for rel in rels]
    return items + [(case, "cabling.head.csv") for case in GOLDEN]


def _rendered_for_golden(b: Built, rel: str) -> str:
    if rel == "cabling.head.csv":
        lines = b.text("cabling.csv").splitlines(keepends=True)
        return "".join(lines[:HEAD_LINES])
    return b.text(rel)


@pytest.mark.parametrize(("case", "rel"), _golden_items())
def test_export_matches_golden_file(built: Callable[[str], Built], case: str, rel: str) -> None:
    b = built(case)
    got = normalize(_rendered_for_golden(b, rel))
    path = GOLDEN_DIR / case / rel
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(got, encoding="utf-8", newline="\n")
    assert path.exists(), f"no golden {path}; create it with CW_UPDATE_GOLDEN=1 pytest tests/export"
    want = path.read_text(encoding="utf-8")
    if got != want:
        diff = "".join(
            list(
                difflib.unified_diff(
                    want.splitlines(keepends=True),
                    got.splitlines(keepends=True),
                    f"golden/{case}/{rel}",
                    f"rendered/{rel}",
                )
            )[:60]
        )
        pytest.fail(
            f"{rel} differs from its golden file (if intended: CW_UPDATE_GOLDEN=1 pytest "
            f"tests/export, then review the diff):\n{diff}"
        )


def test_golden_directory_has_no_stale_files() -> None:
    expected = {GOLDEN_DIR / case / rel for case, rel in _golden_items()}
    present = {p for p in GOLDEN_DIR.rglob("*") if p.is_file()}
    assert present - expected == set(), "golden files no test compares; delete them"


def test_headers_carry_the_package_version(built: Callable[[str], Built]) -> None:
    b = built("eth-h100x4")
    ver = _package_version()
    for rel in (
        "frr/leaf-su001-r1.conf",
        "slurm/topology.conf",
        "slurm/topology.yaml",
        "kubernetes/kueue-topology.yaml",
        "containerlab/fabric.clab.yml",
    ):
        assert f"generated by clusterwright {ver}" in b.text(rel).splitlines()[0], rel


def test_rendering_is_deterministic(
    built: Callable[[str], Built], catalog: Catalog, tmp_path: Path
) -> None:
    b = built("eth-h100x4")
    again = tmp_path / "again"
    write_fabric(plan_fabric(CASES["eth-h100x4"], catalog), again)
    first = sorted(p.relative_to(b.out) for p in b.out.rglob("*") if p.is_file())
    second = sorted(p.relative_to(again) for p in again.rglob("*") if p.is_file())
    assert first == second
    for rel in first:
        assert (b.out / rel).read_bytes() == (again / rel).read_bytes(), rel


def test_infiniband_backend_has_no_routed_configs_or_lab(built: Callable[[str], Built]) -> None:
    b = built("ib-h100x4")
    assert b.frr, "the Ethernet frontend still has FRR configs"
    assert all(name.startswith("fe-") for name in b.frr)
    assert not (b.out / "containerlab").exists()


# ---------------------------------------------------------------------------- YAML


def test_every_yaml_output_parses(b: Built) -> None:
    files = sorted(b.out.rglob("*.yaml")) + sorted(b.out.rglob("*.yml"))
    rels = {str(p.relative_to(b.out)) for p in files}
    assert {
        "slurm/topology.yaml",
        "kubernetes/kueue-topology.yaml",
        "kubernetes/node-labels.yaml",
    } <= rels
    for p in files:
        text = p.read_text(encoding="utf-8")
        if p.name == "kueue-topology.yaml":
            docs = list(yaml.safe_load_all(text))
            assert [d["kind"] for d in docs] == ["Topology", "ResourceFlavor"]
        else:
            assert yaml.safe_load(text) is not None, p


def test_slurm_topology_conf_values_are_what_slurm_parses(b: Built) -> None:
    """topology/tree reads LinkSpeed as an unsigned integer (s_p_handle_uint32: digits, at
    most a k suffix); "400G" stopped slurmctld at start."""
    for line in b.text("slurm/topology.conf").splitlines():
        if line.startswith("SwitchName="):
            fields = dict(kv.split("=", 1) for kv in line.split())
            assert re.fullmatch(r"\d+[kK]?", fields.get("LinkSpeed", "1")), line


def test_slurm_topology_yaml_has_default_tree_and_blocks_covering_every_node(b: Built) -> None:
    topo = yaml.safe_load(b.text("slurm/topology.yaml"))
    assert isinstance(topo, list)
    names = [t["topology"] for t in topo]
    assert len(names) == len(set(names)), "topology names must be unique"
    assert all(next(iter(t)) == "topology" for t in topo), "`topology` must come first"
    defaults = [t for t in topo if t.get("cluster_default") is True]
    assert len(defaults) == 1 and "tree" in defaults[0]

    switches = defaults[0]["tree"]["switches"]
    assert len({s["switch"] for s in switches}) == len(switches)
    under_tree = [n for s in switches if "nodes" in s for n in expand(s["nodes"])]
    assert Counter(under_tree) == Counter(b.hosts)

    blocks = [t for t in topo if "block" in t]
    assert len(blocks) == 1
    block = blocks[0]["block"]
    sizes = block["block_sizes"]
    assert sizes and all(isinstance(s, int) and s > 0 for s in sizes)
    for lo, hi in itertools.pairwise(sizes):
        assert hi > lo and (hi // lo) & (hi // lo - 1) == 0 and hi % lo == 0
    assert len({x["block"] for x in block["blocks"]}) == len(block["blocks"])
    in_blocks: list[str] = []
    for x in block["blocks"]:
        nodes = expand(x["nodes"])
        # Slurm: "Each block must have at least the planning base block size count of nodes"
        # (topology.conf(5)); every block here is one whole SU or NVLink domain, the base.
        assert len(nodes) == sizes[0], f"block {x['block']} is not the base size {sizes[0]}"
        in_blocks += nodes
    # The nodes of a partial SU (or domain) are left out, each such unit named in a comment;
    # every other node is in exactly one block.
    left = set(b.hosts) - set(in_blocks)
    assert Counter(in_blocks) == Counter(h for h in b.hosts if h not in left)
    comments = [ln for ln in b.text("slurm/topology.yaml").splitlines() if ln.startswith("#")]
    partial = [h for h in b.hosts if h in left]
    for h in partial:
        assert any(h in expand(c.split("(")[1].split(",")[0]) for c in comments
                   if "is not a block" in c), h
    if b.case == "eth-h100x5":
        assert sizes == [2] and len(block["blocks"]) == 2 and len(partial) == 1


_CHILDREN_BUG = (
    "BUG: topology.yaml lists a tree switch's child switches under `switches:`; Slurm's "
    "topology.yaml(5) names that field `children`, so the SU switches get no parent and jobs "
    "cannot span SUs"
)


@pytest.mark.parametrize(
    "case",
    [
        _bug("eth-h100x4", _CHILDREN_BUG),
        "ib-h100x4",
        _bug("eth-3tier-h100x8", _CHILDREN_BUG),
        _bug("ib-gb200x2", _CHILDREN_BUG),
        _bug("eth-gb200x4", _CHILDREN_BUG),
    ],
)
def test_slurm_topology_yaml_tree_uses_slurm_field_names(
    built: Callable[[str], Built], case: str
) -> None:
    topo = yaml.safe_load(built(case).text("slurm/topology.yaml"))
    tree = next(t for t in topo if "tree" in t)
    for s in tree["tree"]["switches"]:
        assert set(s) <= {"switch", "children", "nodes"}, s


def _conf_switches(text: str) -> list[dict[str, str]]:
    out = []
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        out.append(dict(kv.split("=", 1) for kv in line.split()))
    return out


def test_slurm_topology_conf_lists_every_host_once_in_one_connected_tree(b: Built) -> None:
    switches = _conf_switches(b.text("slurm/topology.conf"))
    names = [s["SwitchName"] for s in switches]
    assert len(names) == len(set(names))
    assert all(len(n) <= 64 for n in names)
    nodes = [n for s in switches if "Nodes" in s for n in expand(s["Nodes"])]
    assert Counter(nodes) == Counter(b.hosts)
    parents: Counter[str] = Counter()
    for s in switches:
        for child in expand(s.get("Switches", "")):
            assert child in names, f"{s['SwitchName']} names undefined switch {child}"
            parents[child] += 1
    roots = [n for n in names if parents[n] == 0]
    assert len(roots) == 1, f"the tree must have one top switch, got {roots}"
    assert all(parents[n] <= 1 for n in names)


def test_kueue_levels_end_with_hostname_and_every_node_has_every_level(b: Built) -> None:
    topology = next(yaml.safe_load_all(b.text("kubernetes/kueue-topology.yaml")))
    levels = [lv["nodeLabel"] for lv in topology["spec"]["levels"]]
    assert 1 <= len(levels) <= 16
    assert len(levels) == len(set(levels))
    assert levels[-1] == "kubernetes.io/hostname"
    assert "kubernetes.io/hostname" not in levels[:-1]
    labels = yaml.safe_load(b.text("kubernetes/node-labels.yaml"))
    assert sorted(labels) == sorted(b.hosts)
    for host, values in labels.items():
        for level in levels[:-1]:
            assert isinstance(values.get(level), str) and values[level], (host, level)


@pytest.mark.parametrize(
    "case",
    [
        "eth-h100x4",
        "ib-h100x4",
        "eth-3tier-h100x8",
        "ib-gb200x2",
        _bug(
            "eth-gb200x4",
            "BUG: the default SU size (leaf down ports: 64 on sn5600, 32 on qm9700) is not a "
            "multiple of an NVL72 rack's 18 hosts, so an NVLink domain (and its Slurm block) "
            "straddles two SUs and the Kueue levels su > nvlink-domain do not nest",
        ),
    ],
)
def test_kueue_levels_nest(built: Callable[[str], Built], case: str) -> None:
    """Hosts that share a finer level value share every coarser one."""
    b = built(case)
    topology = next(yaml.safe_load_all(b.text("kubernetes/kueue-topology.yaml")))
    levels = [lv["nodeLabel"] for lv in topology["spec"]["levels"]][:-1]
    labels = yaml.safe_load(b.text("kubernetes/node-labels.yaml"))
    for i, fine in enumerate(levels):
        parents: dict[str, set[tuple[str, ...]]] = defaultdict(set)
        for values in labels.values():
            parents[values[fine]].add(tuple(values[c] for c in levels[:i]))
        split = {k: v for k, v in parents.items() if len(v) > 1}
        assert not split, f"{fine} values under several {levels[:i]}: {split}"


def test_nvlink_blocks_are_racks(built: Callable[[str], Built]) -> None:
    b = built("ib-gb200x2")
    topo = yaml.safe_load(b.text("slurm/topology.yaml"))
    block = next(t for t in topo if "block" in t)["block"]
    assert block["block_sizes"] == [18]
    labels = yaml.safe_load(b.text("kubernetes/node-labels.yaml"))
    for x in block["blocks"]:
        racks = {labels[n]["clusterwright.io/rack"] for n in expand(x["nodes"])}
        assert len(racks) == 1, (x["block"], racks)


# ---------------------------------------------------------------------------- cabling and BOM


def test_cabling_has_one_row_per_link_and_no_port_used_twice(b: Built) -> None:
    rows = b.cabling
    assert len(rows) == len(b.fab.links) == b.summary["links_total"]
    ids = [r["cable_id"] for r in rows]
    assert len(ids) == len(set(ids))
    ends = Counter((r[f"{side}_device"], r[f"{side}_port"]) for r in rows for side in ("a", "b"))
    assert [e for e, n in ends.items() if n > 1] == []
    known = set(b.fab.by_name)
    assert {r["a_device"] for r in rows} | {r["b_device"] for r in rows} <= known


@pytest.mark.parametrize(
    "case",
    [
        _bug(
            "eth-h100x4",
            "BUG: host cages follow rail order, not the DGX H100 port names: cabling.csv "
            "puts osfp4p2 and osfp3p2 in one cage (one twin-port module), but they are in "
            "OSFP cages 4 and 3",
        ),
    ],
)
def test_host_ports_sharing_a_cage_share_the_physical_osfp_cage(
    built: Callable[[str], Built], case: str
) -> None:
    cages: dict[tuple[str, str], set[str]] = defaultdict(set)
    for r in built(case).cabling:
        m = re.fullmatch(r"osfp(\d+)p\d+", r["a_port"])
        if m and r["a_cage"]:
            cages[(r["a_device"], r["a_cage"])].add(m.group(1))
    assert cages
    mixed = {k: v for k, v in cages.items() if len(v) > 1}
    assert not mixed, f"cage holds ports of several OSFP cages: {dict(list(mixed.items())[:3])}"


def test_bom_quantities_match_fabric_json_and_the_cabling_plan(b: Built) -> None:
    bom = b.csv("bom.csv")
    qty: Counter[str] = Counter()
    for line in bom:
        qty[line["category"]] += int(line["quantity"])
    s = b.summary
    assert qty["transceiver"] == s["transceivers"]
    assert qty["cable"] == s["cables"]
    assert qty["switch"] == s["switches_total"]
    assert qty["server"] == s["nodes"]
    # Independently of the BOM code: one module per (device, cage) in the cabling plan.
    modules: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for r in b.cabling:
        for side in ("a", "b"):
            part = r[f"{side}_transceiver"]
            if part:
                modules[part].add((r[f"{side}_device"], r[f"{side}_cage"] or r[f"{side}_port"]))
    per_part: Counter[str] = Counter()
    for line in bom:
        if line["category"] == "transceiver":
            per_part[line["part"]] += int(line["quantity"])
    assert per_part == Counter({k: len(v) for k, v in modules.items()})
    # Switches per (role, part) agree with the NetBox devices.
    devices = Counter((d["role"], d["device_type"]) for d in b.csv("netbox/devices.csv"))
    for line in bom:
        if line["category"] == "switch":
            assert devices[(line["role"], line["part"])] == int(line["quantity"]), line["role"]


# ---------------------------------------------------------------------------- NetBox


def test_netbox_references_resolve(b: Built) -> None:
    nb = b.out / "netbox"
    devices = read_csv(nb / "devices.csv")
    names = [d["name"] for d in devices]
    assert len(names) == len(set(names))
    assert {d["role"] for d in devices} <= {r["name"] for r in read_csv(nb / "device-roles.csv")}
    assert {d["device_type"] for d in devices} <= {
        t["model"] for t in read_csv(nb / "device-types.csv")
    }
    assert {d["rack"] for d in devices} <= {r["name"] for r in read_csv(nb / "racks.csv")}

    interfaces = Counter((i["device"], i["name"]) for i in read_csv(nb / "interfaces.csv"))
    assert [k for k, n in interfaces.items() if n > 1] == [], "duplicate interfaces"
    assert {dev for dev, _ in interfaces} <= set(names)

    used: Counter[tuple[str, str]] = Counter()
    for c in read_csv(nb / "cables.csv"):
        for side in ("a", "b"):
            end = (c[f"side_{side}_device"], c[f"side_{side}_name"])
            assert end in interfaces, f"cable {c['label']}: {end} is not an interface"
            assert end[0] in names
            used[end] += 1
    assert [k for k, n in used.items() if n > 1] == [], "interface with two cables"

    addresses = read_csv(nb / "ip-addresses.csv")
    ips = [a["address"] for a in addresses]
    assert len(ips) == len(set(ips)), "duplicate IP addresses"
    assert len({a["address"].split("/")[0] for a in addresses}) == len(ips)
    for a in addresses:
        assert (a["device"], a["interface"]) in interfaces, a

    asns = {int(a["asn"]) for a in read_csv(nb / "asns.csv")}
    assert {cfg.asn for cfg in b.frr.values()} <= asns


# ---------------------------------------------------------------------------- FRR


def test_frr_neighbors_are_the_far_end_of_own_p2p_links_and_reciprocal(b: Built) -> None:
    configs = b.frr
    assert configs
    owner: dict[ipaddress.IPv4Address, tuple[str, ipaddress.IPv4Interface]] = {}
    for cfg in configs.values():
        for iface in cfg.interfaces.values():
            assert iface.ip not in owner, f"{iface.ip} on {cfg.name} and {owner[iface.ip][0]}"
            owner[iface.ip] = (cfg.name, iface)
    routed: Counter[str] = Counter()
    for r in b.cabling:
        if r["tier"] in ROUTED_TIERS:
            routed[r["a_device"]] += 1
            routed[r["b_device"]] += 1

    for cfg in configs.values():
        assert len(cfg.neighbors) == len(set(cfg.neighbors)), cfg.name
        assert len(cfg.neighbors) == routed[cfg.name], cfg.name
        for n in cfg.neighbors:
            mine = [
                i
                for i in cfg.interfaces.values()
                if i.network.prefixlen == 31 and n in i.network and n != i.ip
            ]
            assert len(mine) == 1, f"{cfg.name}: neighbor {n} is not across one own /31"
            assert n in owner, f"{cfg.name}: no switch owns neighbor {n}"
            peer = configs[owner[n][0]]
            assert mine[0].ip in peer.neighbors, f"{peer.name} lacks neighbor {mine[0].ip}"
            assert peer.asn != cfg.asn, f"{cfg.name} and {peer.name} share ASN (eBGP)"


def test_frr_host_links_sit_in_the_aggregated_host_block(b: Built) -> None:
    blocks: list[tuple[str, ipaddress.IPv4Network]] = []
    for cfg in b.frr.values():
        hosts = [n for n, d in cfg.descriptions.items() if d.startswith("host ")]
        if not hosts:
            assert cfg.host_block is None
            continue
        assert cfg.host_block is not None and cfg.aggregate == cfg.host_block, cfg.name
        for n in hosts:
            assert cfg.interfaces[n].network.subnet_of(cfg.host_block), (cfg.name, n)
        blocks.append((cfg.name, cfg.host_block))
    for i, (na, a) in enumerate(blocks):
        for nb_, bb in blocks[i + 1 :]:
            assert not a.overlaps(bb), f"host blocks of {na} and {nb_} overlap"


def _vtysh() -> str | None:
    return shutil.which("vtysh")


@pytest.mark.skipif(_vtysh() is None, reason="FRR's vtysh is not installed")
def test_vtysh_dry_run_rejects_a_broken_config(tmp_path: Path) -> None:
    """Control: the dry run really parses (so the next test can fail)."""
    bad = tmp_path / "bad.conf"
    bad.write_text("hostname x\nrouter bgp 65000\n neighbor 10.0.0.1 no-such-keyword\n!\n")
    r = subprocess.run(
        [str(_vtysh()), "--dryrun", "--inputfile", str(bad)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert r.returncode != 0
    assert "Unknown command" in r.stdout + r.stderr


@pytest.mark.skipif(_vtysh() is None, reason="FRR's vtysh is not installed")
@pytest.mark.parametrize("case", ["eth-h100x4", "eth-3tier-h100x8", "ib-h100x4"])
def test_frr_configs_pass_vtysh_dry_run(built: Callable[[str], Built], case: str) -> None:
    """``vtysh --dryrun --inputfile F`` parses F with FRR's own grammar; no daemons or root."""
    b = built(case)
    files = sorted((b.out / "frr").glob("*.conf"))
    assert files
    failures = []
    for f in files:
        r = subprocess.run(
            [str(_vtysh()), "--dryrun", "--inputfile", str(f)],
            capture_output=True,
            text=True,
            timeout=30,
        )
        errors = [
            ln for ln in (r.stdout + r.stderr).splitlines() if "% " in ln and "vtysh.conf" not in ln
        ]
        if r.returncode != 0 or errors:
            failures.append(f"{f.name}: rc={r.returncode} {errors[:3]}")
    assert failures == []


# ---------------------------------------------------------------------------- containerlab


def test_containerlab_links_reference_defined_nodes_with_short_interfaces(
    built: Callable[[str], Built],
) -> None:
    for case in ("eth-h100x4", "eth-3tier-h100x8", "eth-gb200x4"):
        b = built(case)
        lab = yaml.safe_load(b.text("containerlab/fabric.clab.yml"))
        nodes = lab["topology"]["nodes"]
        assert set(b.frr) >= {n for n in nodes if not n.startswith("h-")}
        seen: Counter[tuple[str, str]] = Counter()
        for link in lab["topology"]["links"]:
            ends = link["endpoints"]
            assert len(ends) == 2
            for end in ends:
                node, _, iface = end.partition(":")
                assert node in nodes, f"{case}: link to undefined node {node}"
                assert 0 < len(iface) <= 15, f"{case}: interface name {iface!r} too long"
                seen[(node, iface)] += 1
        assert [e for e, n in seen.items() if n > 1] == [], f"{case}: interface used twice"
        backend = sum(1 for r in b.cabling if r["tier"] in ("leaf-spine", "spine-core"))
        assert len(lab["topology"]["links"]) == backend + sum(
            1 for n in nodes if n.startswith("h-")
        )


def test_containerlab_bind_paths_resolve_from_the_topology_file(
    built: Callable[[str], Built],
) -> None:
    b = built("eth-h100x4")
    lab_file = b.out / "containerlab" / "fabric.clab.yml"
    lab = yaml.safe_load(lab_file.read_text(encoding="utf-8"))
    for name, node in lab["topology"]["nodes"].items():
        for bind in node.get("binds", []):
            host = Path(bind.split(":")[0])
            path = host if host.is_absolute() else lab_file.parent / host
            assert path.is_file(), f"{name}: bind {bind} -> {path} missing"


# ---------------------------------------------------------------------------- safe writing


@pytest.fixture(scope="module")
def small_fab(catalog: Catalog) -> Fabric:
    return plan_fabric(CASES["ib-h100x4"], catalog)


def _snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def test_write_refuses_a_non_empty_dir_without_force(small_fab: Fabric, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    before = _snapshot(tmp_path)
    with pytest.raises(InputError, match="set `force`"):
        write_fabric(small_fab, out)
    assert _snapshot(tmp_path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_write_refuses_a_file_even_with_force(small_fab: Fabric, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.write_text("a file")
    with pytest.raises(InputError, match="not a directory"):
        write_fabric(small_fab, out, force=True)
    assert out.read_text() == "a file"


def test_write_into_an_empty_dir_needs_no_force(small_fab: Fabric, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    written = write_fabric(small_fab, out)
    assert (out / "cabling.csv").is_file() and "cabling.csv" in written


def test_force_replaces_the_directory(small_fab: Fabric, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "stale.txt").write_text("old")
    (out / "sub").mkdir()
    (out / "sub" / "deep.txt").write_text("old")
    written = write_fabric(small_fab, out, force=True)
    files = {str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()}
    assert files == set(written)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"], "temp dirs left behind"


def test_write_returns_every_file_it_wrote(small_fab: Fabric, tmp_path: Path) -> None:
    out = tmp_path / "a" / "b" / "out"  # parents are created
    written = write_fabric(small_fab, out)
    assert len(written) == len(set(written))
    assert {str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()} == set(written)


def _boom(*args: object, **kwargs: object) -> str:
    raise RuntimeError("template failed")


def test_a_failure_midway_leaves_nothing_behind(
    small_fab: Fabric, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # cabling.csv, bom.csv, ... are written before the first `Template.render` (FRR configs).
    monkeypatch.setattr(jinja2.Template, "render", _boom)
    parent = tmp_path / "parent"
    parent.mkdir()
    with pytest.raises(RuntimeError, match="template failed"):
        write_fabric(small_fab, parent / "out")
    assert list(parent.iterdir()) == []


def test_a_failure_midway_with_force_keeps_the_old_directory(
    small_fab: Fabric, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "old.txt").write_text("old")
    monkeypatch.setattr(jinja2.Template, "render", _boom)
    with pytest.raises(RuntimeError):
        write_fabric(small_fab, out, force=True)
    assert _snapshot(tmp_path) == {"out/old.txt": b"old"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_output_directory_gets_the_umask_permissions(small_fab: Fabric, tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        out = tmp_path / "out"
        write_fabric(small_fab, out)
    finally:
        os.umask(old)
    assert out.stat().st_mode & 0o777 == 0o755
    assert (out / "frr").stat().st_mode & 0o777 == 0o755


def test_csv_lines_quote_only_the_cells_that_need_it_as_rfc_4180_reads_them() -> None:
    rows = [["a", 1, None, 2.5], ["x,y", 'say "hi"', "two\nlines", "ok"], ["", "", "", ""]]
    lines = list(csv_lines(rows))
    assert lines[0] == "a,1,,2.5"
    assert lines[1] == '"x,y","say ""hi""","two\nlines",ok'
    assert lines[2] == ",,,"
    text = "".join(table_chunks(["c1", "c2", "c3", "c4"], lines))
    back = list(csv.reader(text.splitlines(keepends=True)))
    assert back == [["c1", "c2", "c3", "c4"], ["a", "1", "", "2.5"],
                    ["x,y", 'say "hi"', "two\nlines", "ok"], ["", "", "", ""]]


@pytest.mark.parametrize("n", [0, 1, 3, 4, 9])
def test_table_chunks_write_every_line_once_across_batches(n: int) -> None:
    lines = [f"r{i},{i}" for i in range(n)]
    text = "".join(table_chunks(["name", "i"], lines, batch=4))
    assert text == "name,i\n" + "".join(line + "\n" for line in lines)

