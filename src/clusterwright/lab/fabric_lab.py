"""A lab from a generated fabric: the scaled-down design, its configs unmodified, the checks.

The lab is a real design made by the same designer and templates as any other, with lab-sized
parameters: one rail per host and one host per scalable unit (so ``leaves`` leaves), and
``spines`` uplinks per leaf (so ``spines`` spines, one link to each). Every switch config in
the lab is exactly what ``fabric design --out`` writes for that design.
"""

from __future__ import annotations

import ipaddress
from collections import defaultdict

from clusterwright.catalog.registry import Catalog
from clusterwright.design.bom import plan_fabric
from clusterwright.design.fabric import Fabric
from clusterwright.export.fabric import lab_links, render_frr, switch_views
from clusterwright.lab.spec import LabError, LabHost, LabLink, LabSpec, LabSwitch, RouteCheck
from clusterwright.spec.fabric import FabricRequest

ROUTED = ("leaf-spine", "spine-core")


def lab_request(leaves: int, spines: int, server: str = "dgx-h100",
                switch: str | None = None, pods: int = 1) -> FabricRequest:
    """The lab-sized design: ``leaves`` leaves with one host each and ``spines`` spines (per
    pod). With ``pods`` > 1 a three-tier fabric: the leaves split evenly into pods, each pod
    spine has one uplink, so there are ``spines`` cores (one per spine position)."""
    if leaves < 2:
        raise LabError(f"--leaves must be at least 2 to check leaf-to-leaf routes, got {leaves}")
    if spines < 1:
        raise LabError(f"--spines must be at least 1, got {spines}")
    if pods < 1 or leaves % pods:
        raise LabError(f"--pods {pods} must divide --leaves {leaves}")
    three = pods > 1
    return FabricRequest(
        server=server, nodes=leaves, switch=switch, protocol="ethernet", rails=1, su_hosts=1,
        leaf_uplinks=spines, tiers=3 if three else 2, tenants=1,
        spine_uplinks=1 if three else None, pod_sus=leaves // pods if three else None,
    )


def lab_spec(fab: Fabric) -> LabSpec:
    """Switches with their generated configs, the routed links, one host per leaf, and the
    checks: every session up, every leaf holds every other leaf's host block over all its
    uplinks, every host reaches every other host."""
    if fab.backend.protocol != "ethernet":
        raise LabError("the lab runs an Ethernet (eBGP) backend; the design is InfiniBand")
    views = [v for v in switch_views(fab, networks=("backend",))]
    if not views:
        raise LabError("the design has no routed backend switches to run")
    switches = [LabSwitch(name=v.name, frr_config=render_frr(fab, v)) for v in views]
    pairs, hosts = lab_links(fab, views)
    names = {v.name for v in views}
    links: list[LabLink] = []
    host_if = "eth0"
    for a, a_if, b, b_if in pairs:
        if a in names:
            links.append(LabLink(a_node=a, a_if=a_if, b_node=b, b_if=b_if))
    lab_hosts = []
    for h in hosts:
        lab_hosts.append(LabHost(name=h["host"], interface=host_if,
                                 address=f"{h['address']}/31", gateway=h["gateway"]))
        links.append(LabLink(a_node=h["host"], a_if=host_if, b_node=h["leaf"],
                             b_if=h["leaf_port"]))
    sessions = sum(1 for a, _, b, _ in pairs if a in names and b in names)
    uplinks: dict[str, int] = defaultdict(int)
    for lk in fab.links:
        if lk.tier == "leaf-spine" and lk.a in names:
            uplinks[lk.a] += 1
    blocks = {v.name: v.host_block for v in views if v.role == "leaf" and v.host_block}
    checks = [
        RouteCheck(node=leaf, prefix=block, min_nexthops=uplinks[leaf])
        for leaf in sorted(blocks) for other, block in sorted(blocks.items()) if other != leaf
    ]
    addrs = {h["host"]: h["address"] for h in hosts}
    pings = [(src, dst) for src in sorted(addrs) for other, dst in sorted(addrs.items())
             if other != src]
    for b in blocks.values():
        ipaddress.IPv4Network(b)  # a malformed block is a designer bug: fail loudly here
    return LabSpec(switches=switches, hosts=lab_hosts, links=links, sessions_expected=sessions,
                   route_checks=checks, pings=pings)


def build_lab(cat: Catalog, leaves: int, spines: int, server: str = "dgx-h100",
              switch: str | None = None, pods: int = 1) -> tuple[Fabric, LabSpec]:
    """Design the lab-sized fabric and its lab spec."""
    fab = plan_fabric(lab_request(leaves, spines, server, switch, pods), cat)
    return fab, lab_spec(fab)
