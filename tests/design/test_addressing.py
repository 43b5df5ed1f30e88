"""IPv4 and BGP plan: loopbacks, /31s, ASNs, management addresses, tenants
(``design.addressing``)."""

from __future__ import annotations

import ipaddress
from collections import Counter, defaultdict
from pathlib import Path

import pytest
from pydantic import ValidationError

from clusterwright.catalog.registry import Catalog, load_catalog
from clusterwright.design.addressing import (
    CORE_ASN,
    FE_LEAF_ASN,
    LEAF_ASN,
    SPINE_ASN,
    assign,
)
from clusterwright.design.bom import plan_fabric
from clusterwright.design.fabric import Fabric, FabricError, design_fabric
from clusterwright.spec.fabric import AddressPools, FabricRequest
from tests.design.test_fabric import AOC_200G

PRIVATE_ASN = range(4_200_000_000, 4_294_967_295)  # RFC 6996 4-byte private range
BACKEND_ROUTED = ("node-leaf", "leaf-spine", "spine-core")
FRONTEND_ROUTED = ("fe-leaf-spine", "fe-spine-core")


def _assigned(cat: Catalog, **kw: object) -> Fabric:
    fab = design_fabric(FabricRequest(**kw), cat)  # type: ignore[arg-type]
    assign(fab)
    return fab


@pytest.fixture(scope="module")
def eth2(catalog: Catalog) -> Fabric:
    """Two-tier RoCE: 64 DGX H100 on SN5600 (radix 128 at 400G)."""
    return plan_fabric(FabricRequest(server="dgx-h100", nodes=64, switch="sn5600"), catalog)


@pytest.fixture(scope="module")
def eth3(catalog: Catalog) -> Fabric:
    """Three-tier RoCE, small: SUs of 8 nodes, 8 SUs per pod, 2 pods."""
    return _assigned(catalog, server="dgx-h100", nodes=128, switch="sn5600", tiers=3,
                     su_hosts=8)


@pytest.fixture(scope="module")
def ib(catalog: Catalog) -> Fabric:
    return plan_fabric(FabricRequest(server="dgx-h100", nodes=64, switch="qm9700"), catalog)


@pytest.fixture(params=["eth2", "eth3", "ib"])
def fab(request: pytest.FixtureRequest) -> Fabric:
    f: Fabric = request.getfixturevalue(request.param)
    return f


def _net(pool: str) -> ipaddress.IPv4Network:
    return ipaddress.IPv4Network(pool)


def _in(addr: int, pool: str) -> bool:
    return ipaddress.IPv4Address(addr) in _net(pool)


# ------------------------------------------------------------------ uniqueness


def test_no_address_is_used_twice(fab: Fabric) -> None:
    addrs: list[int] = []
    for d in fab.devices:
        addrs += [a for a in (d.loopback, d.mgmt_ip) if a is not None]
    for lk in fab.links:
        if lk.subnet is not None:
            addrs += [lk.subnet, lk.subnet + 1]
    assert addrs
    dup = [ipaddress.IPv4Address(a) for a, n in Counter(addrs).items() if n > 1]
    assert dup == []


def test_each_link_subnet_is_an_aligned_31_in_its_pool(fab: Fabric) -> None:
    pools = fab.request.pools
    pool_of = {
        "node-leaf": pools.hosts, "leaf-spine": pools.fabric_links,
        "spine-core": pools.fabric_links, "fe-leaf-spine": pools.frontend_links,
        "fe-spine-core": pools.frontend_links,
    }
    for lk in fab.links:
        if lk.subnet is None:
            continue
        assert lk.subnet % 2 == 0, (lk.a, lk.b)
        ipaddress.IPv4Network((lk.subnet, 31))  # raises if host bits were set
        assert _in(lk.subnet, pool_of[lk.tier]) and _in(lk.subnet + 1, pool_of[lk.tier])


def test_loopbacks_and_management_addresses_come_from_their_pools(fab: Fabric) -> None:
    pools = fab.request.pools
    for d in fab.devices:
        if d.loopback is not None:
            pool = pools.frontend_loopbacks if d.role.startswith("fe-") else pools.loopbacks
            assert _in(d.loopback, pool), d.name
        if d.role != "storage":
            assert d.mgmt_ip is not None, d.name
            assert _in(d.mgmt_ip, pools.oob), d.name


def test_leaf_spine_halves_do_not_overlap(eth3: Fabric) -> None:
    ls = {lk.subnet for lk in eth3.links_in("leaf-spine")}
    sc = {lk.subnet for lk in eth3.links_in("spine-core")}
    assert ls and sc and not ls & sc
    half = _net(eth3.request.pools.fabric_links).num_addresses // 2
    base = int(_net(eth3.request.pools.fabric_links).network_address)
    assert all(s is not None and s - base < half for s in ls)
    assert all(s is not None and s - base >= half for s in sc)


def test_every_routed_ethernet_link_has_a_subnet(fab: Fabric) -> None:
    ethernet = fab.backend.protocol == "ethernet"
    for lk in fab.links:
        if lk.tier in BACKEND_ROUTED:
            assert (lk.subnet is not None) == ethernet, (lk.tier, lk.a, lk.b)
        elif lk.tier in FRONTEND_ROUTED:
            assert lk.subnet is not None, (lk.tier, lk.a)
        else:  # host frontend ports are on tenant VLANs; OOB is a flat management LAN
            assert lk.subnet is None, (lk.tier, lk.a)


def test_the_parent_takes_the_even_address_of_each_31(eth2: Fabric) -> None:
    """Within one leaf's block of host /31s, host port p gets the p-th pair (AVD order)."""
    by_leaf: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for lk in eth2.links_in("node-leaf"):
        assert lk.subnet is not None
        by_leaf[lk.b].append((lk.b_idx, lk.subnet))
    for pairs in by_leaf.values():
        pairs.sort()
        base = pairs[0][1] - 2 * (pairs[0][0] - 1)
        assert [s for _, s in pairs] == [base + 2 * (i - 1) for i, _ in pairs]
        assert base % eth2.host_block == 0


# ------------------------------------------------------------------ ASNs


def test_asns_follow_rfc7938(fab: Fabric) -> None:
    ethernet = fab.backend.protocol == "ethernet"
    leaves = fab.switches("leaf")
    if not ethernet:
        assert all(d.asn is None and d.loopback is None
                   for d in fab.switches("leaf", "spine", "core"))
        return
    asns = [d.asn for d in leaves]
    assert len(set(asns)) == len(asns)  # one per leaf
    assert all(a is not None and a - LEAF_ASN == d.uid + 1 for a, d in zip(asns, leaves,
                                                                           strict=True))
    groups: dict[tuple[int, int], set[int | None]] = defaultdict(set)
    for sp in fab.switches("spine"):
        groups[(sp.pod, sp.plane)].add(sp.asn)
    assert all(len(g) == 1 for g in groups.values())  # shared per pod and plane
    assert len({next(iter(g)) for g in groups.values()}) == len(groups)  # distinct across
    cores = {d.asn for d in fab.switches("core")}
    assert len(cores) <= 1
    every = [d.asn for d in fab.switches() if d.asn is not None]
    assert every and all(a in PRIVATE_ASN for a in every)
    # Tiers never share an ASN: that would drop routes as AS-path loops.
    assert not set(asns) & {a for g in groups.values() for a in g}


def test_three_tier_pods_and_cores(eth3: Fabric) -> None:
    assert (eth3.shape.tiers, eth3.shape.pods) == (3, 2)
    spine_asns = {d.pod: d.asn for d in eth3.switches("spine")}
    assert spine_asns == {1: SPINE_ASN + 1, 2: SPINE_ASN + 2}
    assert {d.asn for d in eth3.switches("core")} == {CORE_ASN + 1}


def test_frontend_is_routed_even_over_an_infiniband_backend(ib: Fabric) -> None:
    fe_leaves = ib.switches("fe-leaf")
    asns = [d.asn for d in fe_leaves]
    assert all(a is not None and a > FE_LEAF_ASN for a in asns)
    assert len(set(asns)) == len(asns)
    assert all(d.loopback is not None for d in ib.switches("fe-leaf", "fe-spine"))
    assert {d.asn for d in ib.switches("fe-spine")} != {None}


def test_dual_plane_spines_get_an_asn_per_plane(tmp_path: Path) -> None:
    f = tmp_path / "aoc200.yaml"
    f.write_text(AOC_200G)
    cat = load_catalog([f], env={})
    # tiers=2: 16 hosts are below one SU, which would be one tier without spines.
    fab = _assigned(cat, server="dgx-h100", nodes=16, switch="sn5600", dual_plane=True,
                    tiers=2)
    assert fab.shape.planes == 2
    spines: dict[int, set[int | None]] = defaultdict(set)
    for sp in fab.switches("spine"):
        spines[sp.plane].add(sp.asn)
    assert len(spines[1]) == len(spines[2]) == 1
    assert spines[1] != spines[2]
    leaves = [d.asn for d in fab.switches("leaf")]
    assert len(set(leaves)) == len(leaves) == fab.shape.leaf_switches
    loops = [d.loopback for d in fab.switches("leaf", "spine")]
    assert None not in loops and len(set(loops)) == len(loops)


# ------------------------------------------------------------------ stability


def _addresses(fab: Fabric) -> tuple[dict[str, tuple[object, ...]], dict[tuple[str, ...], int]]:
    devs = {d.name: (d.loopback, d.asn, d.mgmt_ip) for d in fab.devices}
    links = {
        (lk.network, lk.a, lk.a_port, lk.b, lk.b_port): lk.subnet
        for lk in fab.links if lk.subnet is not None
    }
    return devs, links


@pytest.mark.parametrize(("n", "m"), [(64, 65), (64, 96), (40, 41)])
def test_addresses_are_stable_under_growth(catalog: Catalog, n: int, m: int) -> None:
    small = _assigned(catalog, server="dgx-h100", nodes=n, switch="sn5600")
    big = _assigned(catalog, server="dgx-h100", nodes=m, switch="sn5600")
    (d1, l1), (d2, l2) = _addresses(small), _addresses(big)
    assert [k for k in d1 if k in d2 and d1[k] != d2[k]] == []
    common = [k for k in l1 if k in l2]
    assert len(common) >= len(small.links_in("node-leaf"))  # every host link is kept
    assert [k for k in common if l1[k] != l2[k]] == []


def test_three_tier_leaf_and_spine_addresses_survive_a_new_pod(catalog: Catalog) -> None:
    small = _assigned(catalog, server="dgx-h100", nodes=128, switch="sn5600", tiers=3,
                      su_hosts=8)
    big = _assigned(catalog, server="dgx-h100", nodes=129, switch="sn5600", tiers=3,
                    su_hosts=8)
    assert big.shape.pods == small.shape.pods + 1
    (d1, l1), (d2, l2) = _addresses(small), _addresses(big)
    roles = {d.name: d.role for d in small.devices}
    # Cores: see test_core_ids_are_stable_when_a_pod_is_added (test_fabric.py).
    changed = [k for k in d1 if k in d2 and d1[k] != d2[k] and roles[k] != "core"]
    assert changed == []
    kept = [k for k in l1 if k in l2 and k[0] == "backend"]
    assert [k for k in kept if l1[k] != l2[k]] == []


# ------------------------------------------------------------------ pools


@pytest.mark.parametrize(("pool", "cidr"), [
    ("hosts", "10.128.0.0/24"),
    ("loopbacks", "10.0.0.0/30"),
    ("fabric_links", "10.64.0.0/24"),
    ("frontend_links", "172.18.0.0/29"),
    ("oob", "172.24.0.0/28"),
])
def test_a_small_pool_is_an_error_naming_it(catalog: Catalog, pool: str, cidr: str) -> None:
    req = FabricRequest(server="dgx-h100", nodes=64, switch="sn5600",
                        pools=AddressPools(**{pool: cidr}))
    fab = design_fabric(req, catalog)
    # The message names the pool as the user gave it, not an internal slice of it.
    with pytest.raises(FabricError, match=rf"pools\.{pool} = {cidr}\b.*too small"):
        assign(fab)


def test_pools_reject_host_bits() -> None:
    with pytest.raises(ValueError, match="host bits"):
        AddressPools(hosts="10.128.0.1/9")


# ------------------------------------------------------------------ tenants


@pytest.mark.parametrize("n", [1, 3, 4, 100])
def test_tenants_get_distinct_vnis_vlans_and_subnets(catalog: Catalog, n: int) -> None:
    fab = _assigned(catalog, server="dgx-h100", nodes=8, switch="qm9700", tenants=n)
    ts = fab.tenants
    assert len(ts) == n
    for attr in ("name", "vrf", "l3vni", "vlan", "l2vni", "subnet"):
        values = [getattr(t, attr) for t in ts]
        assert len(set(values)) == n, attr
    pool = _net(fab.request.pools.tenants)
    nets = [ipaddress.IPv4Network(t.subnet) for t in ts]
    assert all(net.subnet_of(pool) for net in nets)
    assert not any(a.overlaps(b) for i, a in enumerate(nets) for b in nets[i + 1:])
    assert all(ipaddress.IPv4Address(t.gateway) in net for t, net in zip(ts, nets, strict=True))
    vnis = {t.l3vni for t in ts} | {t.l2vni for t in ts}
    assert len(vnis) == 2 * n  # L2 and L3 VNIs never collide
    assert all(1 <= t.vlan <= 4094 for t in ts)


def test_too_many_tenants_for_the_pool_is_an_error(catalog: Catalog) -> None:
    fab = design_fabric(
        FabricRequest(server="dgx-h100", nodes=8, switch="qm9700",
                      pools=AddressPools(tenants="172.20.0.0/28")),
        catalog,
    )
    with pytest.raises(FabricError, match=r"pools\.tenants .* 4 tenant subnets"):
        assign(fab)


def test_the_largest_tenant_count_allowed_gets_valid_vlans(catalog: Catalog) -> None:
    # The request caps tenants so that VLAN 100 + n stays within 802.1Q's 1..4094.
    with pytest.raises(ValidationError, match="tenants"):
        FabricRequest(server="dgx-h100", nodes=8, tenants=3995)
    fab = _assigned(catalog, server="dgx-h100", nodes=8, switch="qm9700", tenants=3994)
    assert len(fab.tenants) == 3994
    assert all(1 <= t.vlan <= 4094 for t in fab.tenants)
