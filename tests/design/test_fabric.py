"""The fabric designer: devices, port-level links and the topology graph (``design.fabric``)."""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path

import networkx as nx
import pytest

from clusterwright.catalog.registry import Catalog, load_catalog
from clusterwright.design.fabric import (
    SWITCH_ROLES,
    Device,
    Fabric,
    FabricError,
    Link,
    design_fabric,
    port_name,
    topology,
)
from clusterwright.design.fabric_shape import fabric_shape
from clusterwright.spec.fabric import FabricRequest

SWITCH_TIERS = ("leaf-spine", "spine-core", "fe-leaf-spine", "fe-spine-core")

# A 200G OSFP active optical cable so dual-plane DGX designs (2 x 200G per 400G NIC) can be
# cabled; the packaged catalog has no 200G OSFP part.
AOC_200G = """\
cables:
  - id: "test-aoc-200g-osfp"
    name: "test 200G OSFP AOC"
    vendor: "test"
    kind: "aoc"
    form_factor: "OSFP"
    speed_gbps: 200
    reach_m: 100
    lengths_m: [3, 5, 10, 15, 20, 30, 50, 100]
    power_w: 8
    price_usd: 400
    source: "test fixture"
"""


def _design(cat: Catalog, **kw: object) -> Fabric:
    return design_fabric(FabricRequest(**kw), cat)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def h100_64(catalog: Catalog) -> Fabric:
    return _design(catalog, server="dgx-h100", nodes=64, switch="qm9700")


@pytest.fixture(scope="module")
def h100_512(catalog: Catalog) -> Fabric:
    return _design(catalog, server="dgx-h100", nodes=512, switch="qm9700")


@pytest.fixture(scope="module")
def h100_40(catalog: Catalog) -> Fabric:
    return _design(catalog, server="dgx-h100", nodes=40, switch="qm9700")


@pytest.fixture(scope="module")
def gb200(catalog: Catalog) -> Fabric:
    return _design(catalog, server="gb200-nvl72", nodes=4, cooling="liquid", rack_kw=130)


@pytest.fixture(scope="module")
def dual_cat(tmp_path_factory: pytest.TempPathFactory) -> Catalog:
    path: Path = tmp_path_factory.mktemp("cat") / "aoc200.yaml"
    path.write_text(AOC_200G)
    return load_catalog([path], env={})


@pytest.fixture(scope="module")
def dual(dual_cat: Catalog) -> Fabric:
    return _design(dual_cat, server="dgx-h100", nodes=64, switch="qm9700", dual_plane=True)


@pytest.fixture(params=["h100_64", "h100_512", "h100_40", "gb200", "dual"])
def any_fab(request: pytest.FixtureRequest) -> Fabric:
    fab: Fabric = request.getfixturevalue(request.param)
    return fab


# ------------------------------------------------------------------ counts


def test_materialized_counts_equal_the_shape(any_fab: Fabric) -> None:
    s = any_fab.shape
    assert any_fab.count("host") == s.hosts
    assert any_fab.count("leaf") == s.leaf_switches
    assert any_fab.count("spine") == s.spine_switches
    assert any_fab.count("core") == s.core_switches
    assert len(any_fab.links_in("node-leaf")) == s.node_leaf_links
    assert len(any_fab.links_in("leaf-spine")) == s.leaf_spine_links
    assert len(any_fab.links_in("spine-core")) == s.spine_core_links


@pytest.mark.parametrize(("fixture", "leaf", "spine", "core", "tiers"), [
    ("h100_64", 16, 8, 0, 2),  # SuperPOD 2 SU
    ("h100_512", 128, 128, 64, 3),  # SuperPOD 16 SU
    ("h100_40", 16, 8, 0, 2),  # 1.25 SU: the partial SU is built in full
])
def test_dgx_h100_on_qm9700_matches_superpod_counts(
    request: pytest.FixtureRequest, fixture: str, leaf: int, spine: int, core: int, tiers: int
) -> None:
    fab: Fabric = request.getfixturevalue(fixture)
    assert (fab.count("leaf"), fab.count("spine"), fab.count("core")) == (leaf, spine, core)
    assert fab.shape.tiers == tiers
    assert fab.shape.radix == 64 and fab.backend.speed_gbps == 400
    assert fab.backend.protocol == "infiniband"


def test_partial_su_is_noted(h100_40: Fabric, h100_64: Fabric) -> None:
    assert any("24 of 64 host positions" in n for n in h100_40.notes)
    assert not any("host positions" in n for n in h100_64.notes)


# ------------------------------------------------------------------ ports


def _switch_ends(fab: Fabric) -> list[tuple[str, str, int]]:
    """(device, port name, 1-based index) of every switch end of a backend/frontend link."""
    ends = []
    for lk in fab.links:
        if lk.network == "oob":
            continue
        ends.append((lk.b, lk.b_port, lk.b_idx))
        if fab.by_name[lk.a].role in SWITCH_ROLES:
            ends.append((lk.a, lk.a_port, lk.a_idx))
    return ends


def test_no_switch_port_is_used_twice(any_fab: Fabric) -> None:
    ends = _switch_ends(any_fab)
    by_idx = Counter((d, i) for d, _, i in ends)
    by_name = Counter((d, p) for d, p, _ in ends)
    assert [k for k, n in by_idx.items() if n > 1] == []
    assert [k for k, n in by_name.items() if n > 1] == []


def test_every_port_index_is_within_the_switch_radix(any_fab: Fabric) -> None:
    for dev, port, idx in _switch_ends(any_fab):
        d = any_fab.by_name[dev]
        assert 1 <= idx <= d.ports, (dev, port, idx)
        parts = any_fab.backend if d.role in ("leaf", "spine", "core") else any_fab.frontend
        assert port == port_name(parts.protocol, idx, parts.ports_per_cage)[0]


def test_host_ports_are_used_once(any_fab: Fabric) -> None:
    used = Counter((lk.a, lk.a_port) for lk in any_fab.links if lk.network != "oob")
    assert [k for k, n in used.items() if n > 1] == []


@pytest.mark.parametrize(("protocol", "idx", "per_cage", "name", "cage"), [
    ("infiniband", 1, 2, "1/1", "1"),
    ("infiniband", 34, 2, "17/2", "17"),
    ("ethernet", 3, 1, "swp3", "3"),
    ("ethernet", 4, 2, "swp2s1", "2"),
    ("ethernet", 5, 4, "swp2s0", "2"),
])
def test_port_name(protocol: str, idx: int, per_cage: int, name: str, cage: str) -> None:
    assert port_name(protocol, idx, per_cage) == (name, cage)


# ------------------------------------------------------------------ rails


def test_every_host_has_one_link_per_rail_per_plane(any_fab: Fabric) -> None:
    s = any_fab.shape
    per_host: dict[str, Counter[tuple[int, int]]] = defaultdict(Counter)
    for lk in any_fab.links_in("node-leaf"):
        per_host[lk.a][(lk.rail, lk.plane)] += 1
    want = Counter({(r, p): 1 for r in range(s.rails) for p in range(1, s.planes + 1)})
    assert len(per_host) == s.hosts
    assert all(c == want for c in per_host.values())


def test_rail_of_one_su_lands_on_one_leaf(any_fab: Fabric) -> None:
    """Rail-optimized: rail i of every host of an SU is one hop from rail i of the others."""
    leaves: dict[tuple[int, int, int], set[str]] = defaultdict(set)
    for lk in any_fab.links_in("node-leaf"):
        host, leaf = any_fab.by_name[lk.a], any_fab.by_name[lk.b]
        assert (leaf.role, leaf.su, leaf.rail, leaf.plane) == ("leaf", host.su, lk.rail + 1,
                                                               lk.plane)
        leaves[(host.su, lk.rail, lk.plane)].add(leaf.name)
    assert all(len(v) == 1 for v in leaves.values())


def test_dgx_h100_rails_follow_the_port_map(h100_64: Fabric, catalog: Catalog) -> None:
    names = catalog.server("dgx-h100").backend_port_names
    assert names is not None and names[0] == "osfp4p2"  # User Guide Table 6: OSFP4P2 -> GPU0
    for lk in h100_64.links_in("node-leaf"):
        assert lk.a_port == names[lk.rail]


def test_gb200_nvl72_has_18_hosts_of_4_rails_per_rack(gb200: Fabric) -> None:
    assert gb200.server.hosts == 18
    assert gb200.count("host") == 4 * 18
    assert gb200.shape.rails == 4
    rails = Counter(lk.a for lk in gb200.links_in("node-leaf"))
    assert set(rails.values()) == {4}


def test_dual_plane_hosts_reach_disjoint_leaves(dual: Fabric) -> None:
    assert dual.shape.planes == 2 and dual.backend.speed_gbps == 200
    leaves_of = defaultdict(set)
    for lk in dual.links_in("node-leaf"):
        leaves_of[lk.plane].add(lk.b)
        assert lk.a_port.endswith(f"p{lk.plane}")
    assert leaves_of[1] and not leaves_of[1] & leaves_of[2]
    for lk in dual.links_in("leaf-spine"):  # planes never mix
        assert dual.by_name[lk.a].plane == dual.by_name[lk.b].plane == lk.plane


# ------------------------------------------------------------------ upper tiers


def _bundles(links: list[Link]) -> Counter[tuple[str, str]]:
    return Counter((lk.a, lk.b) for lk in links)


@pytest.mark.parametrize("fixture", ["h100_64", "h100_512", "h100_40", "gb200", "dual"])
def test_every_leaf_reaches_every_spine_of_its_pod_equally(
    request: pytest.FixtureRequest, fixture: str
) -> None:
    fab: Fabric = request.getfixturevalue(fixture)
    s = fab.shape
    bundles = _bundles(fab.links_in("leaf-spine"))
    for leaf in fab.switches("leaf"):
        spines = [sp for sp in fab.switches("spine")
                  if sp.pod == leaf.pod and sp.plane == leaf.plane]
        assert len(spines) == s.spines_per_pod
        for sp in spines:
            assert bundles[(leaf.name, sp.name)] == s.leaf_spine_parallel
    assert sum(bundles.values()) == s.leaf_spine_links  # and nowhere else


def test_three_tier_spines_reach_their_core_group_equally(h100_512: Fabric) -> None:
    s = h100_512.shape
    assert (s.pods, s.core_group_size, s.spine_core_parallel) == (4, 2, 16)
    bundles = _bundles(h100_512.links_in("spine-core"))
    cores_of: dict[str, set[str]] = defaultdict(set)
    for (sp, core), n in bundles.items():
        assert n == s.spine_core_parallel
        cores_of[sp].add(core)
    spines = h100_512.switches("spine")
    assert len(cores_of) == len(spines)
    # Spine j of every pod uses the same core group; groups of different j are disjoint.
    by_j: dict[str, set[frozenset[str]]] = defaultdict(set)
    for sp in spines:
        by_j[sp.name.rsplit("-", 1)[1]].add(frozenset(cores_of[sp.name]))
    groups = [next(iter(g)) for g in by_j.values()]
    assert all(len(g) == 1 for g in by_j.values())
    assert all(len(g) == s.core_group_size for g in groups)
    assert len(set().union(*groups)) == s.core_switches
    # Every core port carries one bundle per pod.
    per_core = Counter(lk.b for lk in h100_512.links_in("spine-core"))
    assert set(per_core.values()) == {s.pods * s.spine_core_parallel}


def test_three_tier_leaves_stay_in_their_pod(h100_512: Fabric) -> None:
    for lk in h100_512.links_in("leaf-spine"):
        assert h100_512.by_name[lk.a].pod == h100_512.by_name[lk.b].pod
    pods = Counter(leaf.pod for leaf in h100_512.switches("leaf"))
    assert pods == {p: 4 * 8 for p in range(1, 5)}  # 4 SUs of 8 rails per pod


# ------------------------------------------------------------------ names and growth


def test_device_names_are_unique(any_fab: Fabric) -> None:
    names = [d.name for d in any_fab.devices]
    assert len(names) == len(set(names))
    assert set(any_fab.by_name) == set(names)
    uids = Counter((d.role, d.uid) for d in any_fab.devices)
    assert [k for k, n in uids.items() if n > 1] == []


def _changed_identity(a: Fabric, b: Fabric, skip: tuple[str, ...] = ()) -> list[str]:
    """Devices of ``a`` whose namesake in ``b`` has another uid, role, part or position.
    The pod is compared only when both have the same tiers (two tiers have one pod)."""
    other = {d.name: d for d in b.devices}
    same_tiers = a.shape.tiers == b.shape.tiers

    def key(d: Device) -> tuple[object, ...]:
        return (d.uid, d.role, d.part, d.plane, d.su, d.rail, d.k, d.pod if same_tiers else 0)

    return [
        d.name for d in a.devices
        if d.name in other and d.role not in skip and key(d) != key(other[d.name])
    ]


@pytest.mark.parametrize(("n", "m"), [(64, 65), (64, 96), (40, 41), (256, 257), (512, 513)])
def test_names_and_ids_are_stable_under_growth(catalog: Catalog, n: int, m: int) -> None:
    small = _design(catalog, server="dgx-h100", nodes=n, switch="qm9700")
    big = _design(catalog, server="dgx-h100", nodes=m, switch="qm9700")
    names = {d.name for d in big.devices}
    # Hosts and leaves never disappear; only a spine layer that changes shape may.
    for d in small.devices:
        if d.role in ("host", "leaf", "fe-leaf", "storage"):
            assert d.name in names, d.name
    if small.shape.tiers == big.shape.tiers:
        assert {d.name for d in small.switches("spine")} <= names
    # The design of n nodes is a prefix of the design of m nodes at the host ports.
    big_links = {(lk.a, lk.a_port): (lk.b, lk.b_port) for lk in big.links_in("node-leaf")}
    for lk in small.links_in("node-leaf"):
        assert big_links[(lk.a, lk.a_port)] == (lk.b, lk.b_port)
    # Cores: see test_core_ids_are_stable_when_a_pod_is_added.
    assert _changed_identity(small, big, skip=("core",)) == []


def test_core_ids_are_stable_when_a_pod_is_added(catalog: Catalog) -> None:
    small = _design(catalog, server="dgx-h100", nodes=256, switch="qm9700", tiers=3)
    big = _design(catalog, server="dgx-h100", nodes=257, switch="qm9700", tiers=3)
    assert (small.shape.pods, big.shape.pods) == (2, 3)
    assert _changed_identity(small, big) == []


# ------------------------------------------------------------------ topology graph


def test_topology_has_every_gpu_behind_a_nic_and_a_leaf(h100_64: Fabric,
                                                         catalog: Catalog) -> None:
    g = topology(h100_64, catalog)
    kinds = Counter(k for _, k in g.nodes(data="kind"))
    assert kinds["gpu"] == 64 * 8
    assert kinds["nic"] == 64 * 8
    assert kinds["nvswitch"] == 64
    assert kinds["leaf"] == 16 and kinds["spine"] == 8
    for lk in h100_64.links_in("node-leaf"):
        nic = f"{lk.a}/{lk.a_port}"
        gpu = f"{lk.a}/gpu{lk.rail}"
        assert g.has_edge(gpu, nic) and g.has_edge(nic, lk.b)
        assert g.nodes[nic]["kind"] == "nic"
        path = nx.shortest_path(g, gpu, lk.b)
        assert path == [gpu, nic, lk.b]
    # Parallel leaf-spine links stay parallel (ECMP).
    assert g.number_of_edges("leaf-su001-r1", "spine-001") == h100_64.shape.leaf_spine_parallel
    e = next(iter(g.get_edge_data("leaf-su001-r1", "spine-001").values()))
    assert e["bandwidth_bps"] == 400e9 and e["tier"] == "leaf-spine"


def test_topology_nvlink_domain_of_nvl72_is_the_rack(gb200: Fabric, catalog: Catalog) -> None:
    g = topology(gb200, catalog)
    gpus = [n for n, k in g.nodes(data="kind") if k == "gpu"]
    assert len(gpus) == 4 * 72
    domains = [n for n, k in g.nodes(data="kind") if k == "nvswitch"]
    assert len(domains) == 4
    assert all(g.degree(d) == 72 for d in domains)


def test_topology_of_a_two_tier_fabric_is_connected(h100_40: Fabric, catalog: Catalog) -> None:
    g = topology(h100_40, catalog)
    backend = g.edge_subgraph(
        (u, v, k) for u, v, k, t in g.edges(keys=True, data="tier")
        if t in ("node-leaf", "leaf-spine", "pcie")
    )
    gpus = [n for n, k in g.nodes(data="kind") if k == "gpu"]
    comp = nx.node_connected_component(backend, gpus[0])
    assert set(gpus) <= comp


def test_partial_rails_attach_each_nic_to_its_own_gpu(catalog: Catalog) -> None:
    fab = _design(catalog, server="dgx-h100", nodes=32, switch="qm9700", rails=2)
    g = topology(fab, catalog)
    for lk in fab.links_in("node-leaf"):
        assert g.has_edge(f"{lk.a}/gpu{lk.rail}", f"{lk.a}/{lk.a_port}")


# ------------------------------------------------------------------ errors


@pytest.mark.parametrize(("kw", "field", "match"), [
    (dict(server="no-such-server", nodes=8), "server", "^server: unknown server"),
    (dict(server="dgx-h100", nodes=8, switch="no-such-switch"), "switch", "^switch: unknown"),
    (dict(server="dgx-h100", nodes=8, switch="qm9700", protocol="ethernet"), "switch",
     "speaks infiniband, but `protocol` is ethernet"),
    (dict(server="dgx-h100", nodes=8, rails=9), "rails", "^rails: 9"),
    (dict(server="dgx-h100", nodes=8, switch="q3400"), "switch", "no ports at 400"),
    (dict(server="dgx-h100", nodes=300, switch="qm9700", tiers=2), "tiers", "`tiers` 3"),
    (dict(server="dgx-h100", nodes=8, frontend_switch="qm9700"), "frontend_switch",
     "^frontend_switch: "),
])
def test_bad_requests_raise_naming_the_field(catalog: Catalog, kw: dict[str, object],
                                             field: str, match: str) -> None:
    """Designer errors blame a FabricRequest field, never a CLI flag (each face words it)."""
    with pytest.raises(FabricError, match=match) as info:
        _design(catalog, **kw)
    assert info.value.field == field
    assert "--" not in str(info.value)


def test_rails_option_uses_the_first_rails(catalog: Catalog) -> None:
    # tiers=2 keeps a leaf per rail (below one SU, 2 rails x 16 hosts share one switch).
    fab = _design(catalog, server="dgx-h100", nodes=16, switch="qm9700", rails=2, tiers=2)
    assert fab.shape.rails == 2
    ports = {lk.a_port for lk in fab.links_in("node-leaf")}
    assert ports == {"osfp4p2", "osfp3p2"}
    assert fab.count("leaf") == 2


def test_shape_of_the_design_is_fabric_shape(h100_512: Fabric) -> None:
    assert h100_512.shape == fabric_shape(hosts=512, rails=8, radix=64)


# ------------------------------------------------------------------ frontend


def test_frontend_dual_homes_every_host_to_a_leaf_pair(any_fab: Fabric) -> None:
    ports = max(1, any_fab.server.frontend_nics.count // any_fab.server.hosts)
    per_host: dict[str, list[str]] = defaultdict(list)
    for lk in any_fab.links_in("fe-node-leaf"):
        per_host[lk.a].append(lk.b)
    assert set(per_host) == {h.name for h in any_fab.hosts}
    for leaves in per_host.values():
        assert len(leaves) == ports == len(set(leaves))
        assert len({any_fab.by_name[x].su for x in leaves}) == 1


def test_storage_ports_carry_the_aggregate_read_bandwidth(h100_64: Fabric) -> None:
    # 512 GPUs x 0.16 GB/s x 8 = 655 Gb/s -> 2 x 400G ports -> one dual-homed target.
    storage = h100_64.links_in("fe-storage-leaf")
    assert len(storage) == 2
    assert len(storage) * h100_64.frontend.speed_gbps >= 512 * 0.16 * 8


def test_frontend_leaf_uplinks_carry_the_per_node_reads(h100_64: Fabric) -> None:
    """Each leaf of a pair carries half of its SU's reads: 32 nodes x 8 GB/s x 8 / 2."""
    fsh = h100_64.frontend_shape
    assert fsh is not None
    need_gbps = 32 * 8 * 1.0 * 8 / 2
    assert fsh.leaf.up * h100_64.frontend.speed_gbps >= need_gbps
    up = Counter(lk.a for lk in h100_64.links_in("fe-leaf-spine"))
    assert set(up.values()) == {fsh.leaf.up}
    assert h100_64.count("fe-spine") >= 2


def test_more_scalable_units_than_the_numbering_holds_are_refused(catalog: Catalog) -> None:
    # 65,536 DGX H100 in units of 64 are 1,024 units; unit 1,000 took a storage unit's name
    # and the physical plan failed with a KeyError.
    with pytest.raises(FabricError, match="at most 999") as info:
        design_fabric(FabricRequest(server="dgx-h100", nodes=65_536), catalog)
    assert info.value.field == "nodes"
