"""Leaves, spines, cores and links of one rail-optimized fat tree (the backend and the
frontend are both built by ``build_clos``); names and ids are stable under growth."""

from __future__ import annotations

import math
from dataclasses import dataclass

from clusterwright.design.fabric_model import (
    STORAGE_SU,
    Device,
    Fabric,
    Link,
    Network,
    NetworkParts,
    Role,
    host_port,
    port_name,
)
from clusterwright.design.fabric_shape import FabricError, FabricShape


@dataclass(frozen=True)
class Clos:
    """How one leaf/spine(/core) network is named and attached."""

    network: Network
    prefix: str  # "" for the backend, "fe-" for the frontend
    tiers: tuple[str, str, str]  # link tier names: host-leaf, leaf-spine, spine-core
    rail_label: str  # "r1".. for rails, "a"/"b" for a dual-homed pair


def _rail(clos: Clos, rail: int) -> str:
    return f"r{rail + 1}" if clos.rail_label == "r" else "ab"[rail] if rail < 2 else f"x{rail}"


def su_label(su: int) -> str:
    # Storage scalable units are numbered from STORAGE_SU so their ids never move when
    # compute SUs are added.
    return f"st{su - STORAGE_SU + 1:02d}" if su >= STORAGE_SU else f"su{su:03d}"




def check_units(sus: int, su_hosts: int, network: str, field: str) -> None:
    """Scalable units are numbered below ``STORAGE_SU`` (storage units above it share the
    numbering and the names): refuse a design with more, blaming ``field``."""
    if sus >= STORAGE_SU:
        raise FabricError(
            f"{field}: {sus:,} {network} scalable units of {su_hosts} hosts; the designer numbers "
            f"at most {STORAGE_SU - 1} (fewer nodes, or larger units with `su_hosts`)",
            field=field)


def build_clos(
    fab: Fabric,
    clos: Clos,
    parts: NetworkParts,
    s: FabricShape,
    endpoints: list[tuple[int, int, list[tuple[str, str] | None]]],
) -> None:
    """Leaves, spines, cores and links of one rail-optimized fat tree of shape ``s``.

    ``endpoints``: (SU number, slot in the SU, [(device, port) per rail, None for a rail the
    endpoint has no port on]) in SU order. SU numbers
    need not be contiguous (storage SUs start at ``STORAGE_SU``); leaves are built for every SU
    that has an endpoint, in full.
    """
    planes = s.planes
    lpr = s.leaves_per_rail_su
    per_leaf = math.ceil(s.su_hosts / lpr)
    pname = {
        i: port_name(parts.protocol, i, parts.ports_per_cage) for i in range(1, parts.radix + 1)
    }
    sw = parts.switch.id
    sus = sorted({su for su, _, _ in endpoints})
    pre = clos.prefix
    for plane in range(1, planes + 1):
        pl = f"p{plane}-" if planes > 1 else ""
        leaves: dict[tuple[int, int, int], Device] = {}
        ordered: list[Device] = []
        shared = s.rails_per_leaf  # one tier: rails sharing one switch
        groups = s.rails // shared
        for n, su in enumerate(sus):
            pod = n // s.sus_per_pod + 1 if s.tiers == 3 else 1
            for rail in range(groups):
                for k in range(lpr):
                    seq = ((su - 1) * groups + rail) * lpr + k
                    extra = f"-{k + 1}" if lpr > 1 else ""
                    label = f"-{_rail(clos, rail)}" if shared == 1 else ""
                    dev = fab.add(Device(
                        name=f"{pre}leaf-{pl}{su_label(su)}{label}{extra}",
                        role="leaf" if not pre else "fe-leaf", part=sw,
                        uid=seq * planes + plane - 1, plane=plane, pod=pod, su=su,
                        rail=rail + 1 if shared == 1 else 0, k=k, ports=parts.radix,
                    ))
                    leaves[(su, rail, k)] = dev
                    ordered.append(dev)
        for su, slot, ports in endpoints:
            k, port = divmod(slot, per_leaf)
            for rail, end in enumerate(ports):
                if end is None:
                    continue
                dname, dport = end
                leaf = leaves[(su, rail // shared, k)]
                if shared > 1:
                    # Host-major on the shared switch: host i's rails are adjacent ports.
                    port = slot * shared + rail
                bname, bcage = pname[port + 1]
                fab.links.append(Link(
                    network=clos.network, tier=clos.tiers[0], a=dname,
                    a_port=f"{dport}p{plane}" if planes > 1 else dport, b=leaf.name,
                    b_port=bname, b_cage=bcage, b_idx=port + 1, speed_gbps=parts.speed_gbps,
                    plane=plane, rail=rail,
                ))
        up0 = s.leaf.down  # leaf uplinks follow its downlink ports
        role_s: Role = "spine" if not pre else "fe-spine"
        if s.tiers <= 2:  # one tier: no spines (spines_per_plane and leaf.up are 0)
            spines = [
                fab.add(Device(
                    name=f"{pre}spine-{pl}{j + 1:03d}", role=role_s, part=sw,
                    uid=j * planes + plane - 1, plane=plane, pod=1, ports=parts.radix,
                ))
                for j in range(s.spines_per_plane)
            ]
            for li, leaf in enumerate(ordered):
                for j in range(s.leaf.up):
                    spine_i, par = j % s.spines_per_plane, j // s.spines_per_plane
                    aname, acage = pname[up0 + j + 1]
                    bname, bcage = pname[li * s.leaf_spine_parallel + par + 1]
                    fab.links.append(Link(
                        network=clos.network, tier=clos.tiers[1], a=leaf.name, a_port=aname,
                        a_cage=acage, b=spines[spine_i].name, b_port=bname, b_cage=bcage,
                        speed_gbps=parts.speed_gbps, plane=plane, a_idx=up0 + j + 1,
                        b_idx=li * s.leaf_spine_parallel + par + 1,
                    ))
            continue
        # Three tiers: pods of whole SUs; leaf uplink j goes to pod spine j.
        per_pod = s.spines_per_pod
        spines = [
            fab.add(Device(
                name=f"{pre}spine-{pl}pod{pod:02d}-{j + 1:02d}", role=role_s, part=sw,
                uid=((pod - 1) * per_pod + j) * planes + plane - 1, plane=plane, pod=pod,
                ports=parts.radix,
            ))
            for pod in range(1, s.pods + 1) for j in range(per_pod)
        ]
        su_pos = {su: n for n, su in enumerate(sus)}
        for leaf in ordered:
            q = (su_pos[leaf.su] % s.sus_per_pod * s.rails + leaf.rail - 1) * lpr + leaf.k
            for j in range(per_pod):
                spine = spines[(leaf.pod - 1) * per_pod + j]
                aname, acage = pname[up0 + j + 1]
                bname, bcage = pname[q + 1]
                fab.links.append(Link(
                    network=clos.network, tier=clos.tiers[1], a=leaf.name, a_port=aname,
                    a_cage=acage, b=spine.name, b_port=bname, b_cage=bcage,
                    speed_gbps=parts.speed_gbps, plane=plane, a_idx=up0 + j + 1, b_idx=q + 1,
                ))
        g = s.core_group_size
        role_c: Role = "core" if not pre else "fe-core"
        # Core ids stride by the spine's uplink count (the largest a core group can get), so
        # they do not move when a pod is added and the groups grow.
        cores = [
            fab.add(Device(
                name=f"{pre}core-{pl}{j + 1:02d}-{c + 1:02d}", role=role_c, part=sw,
                uid=(j * s.spine.up + c) * planes + plane - 1, plane=plane, ports=parts.radix,
            ))
            for j in range(per_pod) for c in range(g)
        ]
        sup0 = s.spine.down
        for si, spine in enumerate(spines):
            pod0, j = divmod(si, per_pod)
            for t in range(s.spine.up):
                c, par = t % g, t // g
                core = cores[j * g + c]
                aname, acage = pname[sup0 + t + 1]
                bname, bcage = pname[pod0 * s.spine_core_parallel + par + 1]
                fab.links.append(Link(
                    network=clos.network, tier=clos.tiers[2], a=spine.name, a_port=aname,
                    a_cage=acage, b=core.name, b_port=bname, b_cage=bcage,
                    speed_gbps=parts.speed_gbps, plane=plane, a_idx=sup0 + t + 1,
                    b_idx=pod0 * s.spine_core_parallel + par + 1,
                ))


def build_backend(fab: Fabric) -> None:
    s = fab.shape
    endpoints: list[tuple[int, int, list[tuple[str, str] | None]]] = [
        (h.su, h.uid % s.su_hosts,
         [(h.name, host_port(fab.server, r, 1, 1)) for r in range(s.rails)])
        for h in fab.hosts
    ]
    clos = Clos("backend", "", ("node-leaf", "leaf-spine", "spine-core"), "r")
    build_clos(fab, clos, fab.backend, s, endpoints)
