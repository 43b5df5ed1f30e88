"""IPv4 and BGP plan: loopbacks, /31 per routed link, one ASN per leaf, one per spine tier.

Every address is a function of a device's stable ``uid`` and a port index, never of a running
counter, so a design with one more node keeps every existing address (the pitfall AVD documents:
renumbering an id renumbers its /31s, loopbacks and ASN). The parent end of a /31 (spine, or the
leaf towards a host) takes the even address, the child the odd one, as AVD does.

ASNs are 4-byte private (RFC 6996): leaves 4200000000 + uid + 1; the spines of one plane and pod
share an ASN, and the cores of one plane share an ASN (RFC 7938 section 5.2.1: a shared ASN per
upper tier stops BGP path hunting through a tier). The frontend uses its own range and runs
EVPN-VXLAN for tenants.
"""

from __future__ import annotations

import ipaddress
import math
from dataclasses import dataclass

from clusterwright.design.fabric import STORAGE_SU, Device, Fabric, FabricError

LEAF_ASN = 4_200_000_000
SPINE_ASN = 4_200_100_000
CORE_ASN = 4_200_200_000
FE_LEAF_ASN = 4_201_000_000
FE_SPINE_ASN = 4_201_100_000
FE_CORE_ASN = 4_201_200_000
L3VNI_BASE = 50_000  # per-tenant VRF
L2VNI_BASE = 10_000  # per-tenant VLAN segment
VLAN_BASE = 100


@dataclass(frozen=True)
class Tenant:
    """An EVPN tenant on the frontend: VRF, L3 VNI, one VLAN/L2 VNI and its subnet."""

    name: str
    vrf: str
    l3vni: int
    vlan: int
    l2vni: int
    subnet: str
    gateway: str  # anycast gateway on every frontend leaf


class _Pool:
    """An IPv4 pool addressed by index; raises naming the pool when it is too small."""

    def __init__(self, name: str, cidr: str, whole: str | None = None) -> None:
        self.name = name
        self.net = ipaddress.IPv4Network(cidr)
        self.whole = whole or cidr  # the pool as the user gave it
        self.base = int(self.net.network_address)
        self.size = self.net.num_addresses

    def at(self, offset: int) -> int:
        if offset >= self.size:
            part = "" if str(self.net) == self.whole else f" (its slice {self.net})"
            raise FabricError(
                f"address pool pools.{self.name} = {self.whole}{part} is too small for this "
                f"design: it needs at least {offset + 1} addresses there; give a larger pool",
                field=f"pools.{self.name}",
            )
        return self.base + offset

    def sub(self, part: int, parts: int) -> _Pool:
        """The ``part``-th of ``parts`` equal slices (parts a power of two)."""
        bits = int(math.log2(parts))
        sliced = list(self.net.subnets(prefixlen_diff=bits))[part]
        return _Pool(self.name, str(sliced), self.whole)


def ip(n: int) -> str:
    """Dotted quad of an int address."""
    return str(ipaddress.IPv4Address(n))


def assign(fab: Fabric) -> None:
    """Fill loopbacks, ASNs, management addresses and /31s for every routed link."""
    pools = fab.request.pools
    loop = _Pool("loopbacks", pools.loopbacks)
    # Loopback slices by role: leaves get half, spines a quarter, cores a quarter.
    loop_leaf, loop_spine, loop_core = loop.sub(0, 2), loop.sub(2, 4), loop.sub(3, 4)
    links = _Pool("fabric_links", pools.fabric_links)
    ls_pool, sc_pool = links.sub(0, 2), links.sub(1, 2)
    host_pool = _Pool("hosts", pools.hosts)
    fe_loop = _Pool("frontend_loopbacks", pools.frontend_loopbacks)
    fe_loop_leaf, fe_loop_spine, fe_loop_core = fe_loop.sub(0, 2), fe_loop.sub(2, 4), fe_loop.sub(
        3, 4
    )
    fe_links = _Pool("frontend_links", pools.frontend_links)
    fe_ls, fe_sc = fe_links.sub(0, 2), fe_links.sub(1, 2)
    oob = _Pool("oob", pools.oob)
    oob_hosts, oob_switches = oob.sub(0, 2), oob.sub(1, 2)

    sh = fab.shape
    host_block = 1 << max(1, math.ceil(math.log2(2 * sh.leaf.down)))
    fab.host_block = host_block
    fsh = fab.frontend_shape
    ethernet = fab.backend.protocol == "ethernet"
    role_rank = {
        "leaf": 0, "spine": 1, "core": 2, "fe-leaf": 3, "fe-spine": 4, "fe-core": 5,
        "oob-leaf": 6, "oob-spine": 7,
    }
    oob_role_block = oob_switches.size // 8
    for d in fab.devices:
        if d.role == "host":
            d.mgmt_ip = oob_hosts.at(d.uid + 1)
        elif d.role in role_rank:
            d.mgmt_ip = oob_switches.at(role_rank[d.role] * oob_role_block + d.uid + 1)
        if d.role == "leaf" and ethernet:
            d.loopback = loop_leaf.at(d.uid + 1)
            d.asn = LEAF_ASN + d.uid + 1
        elif d.role == "spine" and ethernet:
            d.loopback = loop_spine.at(d.uid + 1)
            d.asn = SPINE_ASN + (d.pod - 1) * sh.planes + d.plane
        elif d.role == "core" and ethernet:
            d.loopback = loop_core.at(d.uid + 1)
            d.asn = CORE_ASN + d.plane
        elif d.role == "fe-leaf":
            d.loopback = fe_loop_leaf.at(_fe_leaf_index(d) + 1)
            d.asn = FE_LEAF_ASN + _fe_leaf_index(d) + 1
        elif d.role == "fe-spine":
            d.loopback = fe_loop_spine.at(d.uid + 1)
            d.asn = FE_SPINE_ASN + d.pod
        elif d.role == "fe-core":
            d.loopback = fe_loop_core.at(d.uid + 1)
            d.asn = FE_CORE_ASN + 1
    by = fab.by_name
    for lk in fab.links:
        a, b = by[lk.a], by[lk.b]
        if lk.network == "backend" and ethernet:
            if lk.tier == "node-leaf":
                lk.subnet = host_pool.at(b.uid * host_block + 2 * (lk.b_idx - 1))
            elif lk.tier == "leaf-spine":
                up = lk.a_idx - sh.leaf.down - 1
                lk.subnet = ls_pool.at(2 * (a.uid * sh.leaf.up + up))
            elif lk.tier == "spine-core":
                up = lk.a_idx - sh.spine.down - 1
                lk.subnet = sc_pool.at(2 * (a.uid * sh.spine.up + up))
        elif lk.network == "frontend" and fsh is not None:
            if lk.tier == "fe-leaf-spine":
                up = lk.a_idx - fsh.leaf.down - 1
                lk.subnet = fe_ls.at(2 * (_fe_uplink_slot(a, fe_ls, fsh.leaf.up, fab)
                                          * fsh.leaf.up + up))
            elif lk.tier == "fe-spine-core":
                up = lk.a_idx - fsh.spine.down - 1
                lk.subnet = fe_sc.at(2 * (a.uid * fsh.spine.up + up))
    fab.tenants = tenants(fab)


def _fe_uplink_slot(d: Device, pool: _Pool, up: int, fab: Fabric) -> int:
    """Slot of a frontend leaf's uplink /31s in the leaf-spine pool: compute leaves count up
    from the bottom, storage leaves down from the top of what the pool holds at ``up`` uplinks
    per leaf. Both stay put as the cluster grows; a pool too small for both is an error.
    (Counting storage from a fixed index 2,048 overflowed the pool for 16-uplink leaves.)"""
    slots = pool.size // (2 * up)
    if d.su < STORAGE_SU:
        return d.uid
    k = (d.su - STORAGE_SU) * 2 + d.rail - 1
    compute = sum(1 for x in fab.devices if x.role == "fe-leaf" and x.su < STORAGE_SU)
    slot = slots - 1 - k
    if slot < compute:
        raise FabricError(
            f"address pool pools.frontend_links = {pool.whole} (its slice {pool.net}) is too "
            f"small for this design: {compute} compute and {k + 1}+ storage frontend leaves "
            f"with {up} uplinks each need more than {slots} leaf slots; give a larger pool")
    return slot


def _fe_leaf_index(d: Device) -> int:
    # Storage SUs (numbered from STORAGE_SU) take ids from the top of a 2,048-leaf range so
    # compute SUs can grow without moving them.
    if d.su >= STORAGE_SU:
        return 2048 + (d.su - STORAGE_SU) * 2 + d.rail - 1
    return d.uid


def tenants(fab: Fabric) -> list[Tenant]:
    """EVPN tenants: VRF tenantN with L3 VNI, a VLAN/L2 VNI and a slice of the tenant pool."""
    n = fab.request.tenants
    pool = ipaddress.IPv4Network(fab.request.pools.tenants)
    bits = max(0, math.ceil(math.log2(n)))
    if pool.prefixlen + bits > 29:
        raise FabricError(
            f"pools.tenants {pool} cannot be split into {n} tenant subnets; give a larger pool"
        )
    subnets = list(pool.subnets(prefixlen_diff=bits))
    out = []
    for t in range(1, n + 1):
        net = subnets[t - 1]
        out.append(Tenant(
            name=f"tenant{t}", vrf=f"tenant{t}", l3vni=L3VNI_BASE + t, vlan=VLAN_BASE + t,
            l2vni=L2VNI_BASE + VLAN_BASE + t, subnet=str(net),
            gateway=str(net.network_address + 1),
        ))
    return out
