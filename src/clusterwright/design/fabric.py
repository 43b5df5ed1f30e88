"""The fabric designer: devices, ports and links of every network of a GPU cluster.

One canonical model (``Fabric``: devices with stable ids, port-level links) from which every
artifact is emitted: the ``Topology`` graph, the physical plan, addressing, the bill of materials
and the exports. Networks:

- backend (compute): rail-optimized leaf/spine(/core) fat tree, counts from ``fabric_shape``;
- frontend (storage, in-band management, north-south): leaf pairs per scalable unit with each
  host dual-homed, uplinks sized from the storage read bandwidth the GPUs need, storage leaves
  for the storage system's ports, EVPN-VXLAN for tenants; below one backend scalable unit, one
  leaf pair for every host and storage target and no spines when they fit;
- out-of-band management: one 1 GbE port per BMC and per switch, management switches per row
  with uplinks to an aggregation pair.

Names and ids are stable under growth: device ids are functions of (plane, SU, rail, ...), never
of the total count, so a design with one more node keeps every existing name, address and ASN
(only the spine count of a two-tier fabric can change, which re-cables some leaf uplinks).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

import networkx as nx

from clusterwright.catalog.registry import Catalog
from clusterwright.catalog.schema import Server, Switch
from clusterwright.design.fabric_shape import (
    FabricError,
    FabricShape,
    TierPorts,
    fabric_shape,
    split_ports,
)
from clusterwright.design.media import End, MediaPicker, joins

__all__ = ["FabricError"]  # re-exported: design modules raise it
from clusterwright.errors import UnknownIdError
from clusterwright.spec.fabric import FabricRequest

Network = Literal["backend", "frontend", "oob"]
Role = Literal[
    "host", "leaf", "spine", "core", "fe-leaf", "fe-spine", "fe-core", "storage", "oob-leaf",
    "oob-spine",
]
SWITCH_ROLES: tuple[Role, ...] = (
    "leaf", "spine", "core", "fe-leaf", "fe-spine", "fe-core", "oob-leaf", "oob-spine"
)


@dataclass(slots=True)
class Device:
    """A server host or switch. ``uid`` is stable within its role (addresses derive from it)."""

    name: str
    role: Role
    part: str  # catalog id (server or switch); "" for external storage targets
    uid: int
    plane: int = 1
    pod: int = 0
    su: int = 0
    rail: int = 0
    k: int = 0  # leaf index within its rail and SU (when an SU needs several leaves per rail)
    asn: int | None = None
    loopback: int | None = None  # IPv4 as int
    mgmt_ip: int | None = None
    rack: str = ""
    rack_u: int = 0  # lowest rack unit it occupies (1 = bottom)
    units: int = 0  # rack units it occupies
    ports: int = 0  # logical ports (switches)


@dataclass(slots=True)
class Link:
    """One logical link, ``a`` the lower end (host or lower tier), ``b`` the upper."""

    network: Network
    tier: str  # node-leaf, leaf-spine, spine-core, fe-node-leaf, fe-leaf-spine, ...
    a: str
    a_port: str
    b: str
    b_port: str
    speed_gbps: float
    plane: int = 1
    rail: int = 0  # backend host links: 0-based rail (GPU) index
    subnet: int | None = None  # /31 network as int: b (parent) takes .0, a (child) takes .1
    length_m: float = 0.0
    media: str = ""  # dac, acc, aec, aoc, optics, utp
    cable: str = ""
    a_xcvr: str = ""
    b_xcvr: str = ""
    a_cage: str = ""
    b_cage: str = ""
    a_idx: int = 0  # 1-based logical port number at a switch end (0 at hosts)
    b_idx: int = 0


@dataclass
class Rack:
    """One rack: name, row and position (0-based), what it holds and its power."""

    name: str
    row: int
    position: int
    kind: str  # compute, network
    cooling: str
    units: int
    devices: list[str] = field(default_factory=list)
    used_units: int = 0
    power_w: float = 0.0  # nameplate (servers' max, switches' max) - what the PDU must carry


@dataclass
class NetworkParts:
    """The switch chosen for each role, its radix at the link speed, and why."""

    switch: Switch
    speed_gbps: float
    radix: int
    ports_per_cage: int
    protocol: str
    why: str


@dataclass
class Fabric:
    """Everything the designer decided. Exports and the report read this; they never recompute."""

    request: FabricRequest
    server: Server
    shape: FabricShape
    backend: NetworkParts
    frontend: NetworkParts
    oob: NetworkParts
    oob_uplink: NetworkParts
    storage_read_gbps_per_gpu: float  # per node link sizing, GB/s per GPU
    storage_aggregate_read_gbps_per_gpu: float  # whole-cluster storage ports, GB/s per GPU
    frontend_shape: FabricShape | None = None
    devices: list[Device] = field(default_factory=list)
    links: list[Link] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    by_name: dict[str, Device] = field(default_factory=dict)
    # Filled by the physical plan, addressing and BOM stages.
    racks: list[Rack] = field(default_factory=list)
    host_block: int = 0  # addresses per leaf's block of host /31s (backend, Ethernet)
    vendors: dict[str, str] = field(default_factory=dict)  # part id -> vendor, for exports
    bom: list[object] = field(default_factory=list)
    tenants: list[Any] = field(default_factory=list)  # addressing.Tenant

    @property
    def hosts(self) -> list[Device]:
        return [d for d in self.devices if d.role == "host"]

    def switches(self, *roles: Role) -> list[Device]:
        want = roles or SWITCH_ROLES
        return [d for d in self.devices if d.role in want]

    def count(self, role: Role) -> int:
        return sum(1 for d in self.devices if d.role == role)

    def links_in(self, tier: str) -> list[Link]:
        return [lk for lk in self.links if lk.tier == tier]

    def add(self, dev: Device) -> Device:
        if dev.name in self.by_name:
            raise AssertionError(f"device name {dev.name} built twice")
        self.devices.append(dev)
        self.by_name[dev.name] = dev
        return dev


def port_name(protocol: str, index: int, ports_per_cage: int) -> tuple[str, str]:
    """(logical port name, cage) of 1-based port ``index``.

    InfiniBand names ports cage/sub as Quantum-2 does ("17/2"); Ethernet uses Linux-style
    names that FRR and containerlab accept: swpN, or swpNsM for a split cage.
    """
    cage = (index - 1) // ports_per_cage + 1
    sub = (index - 1) % ports_per_cage
    if protocol == "infiniband":
        return f"{cage}/{sub + 1}", str(cage)
    if ports_per_cage == 1:
        return f"swp{cage}", str(cage)
    return f"swp{cage}s{sub}", str(cage)


def _parts(
    cat: Catalog,
    flag: str,
    switch_id: str | None,
    speed_gbps: float,
    roles: tuple[str, ...],
    protocol: str | None,
    prefer: str,
    host: End | None = None,
) -> NetworkParts:
    """The switch for a network: ``switch_id`` if given, else the catalog switch of the role
    with the most ports at ``speed_gbps`` (fewest tiers and boxes), cheaper first on a tie."""
    if switch_id is not None:
        try:
            sw = cat.switch(switch_id)
        except UnknownIdError as e:
            raise FabricError(f"{flag}: {e}") from e
        if protocol is not None and sw.protocol != protocol:
            raise FabricError(f"{flag} {sw.id} speaks {sw.protocol}, not {protocol} (--protocol)")
        candidates = [sw]
    else:
        candidates = [
            s for s in cat.all("switches")
            if any(r in s.roles for r in roles) and (protocol is None or s.protocol == protocol)
        ]
    fitting: list[tuple[Switch, int]] = []
    unjoinable: list[str] = []
    for sw in candidates:
        ports = [pc.ports for pc in sw.port_configs if pc.speed_gbps == speed_gbps]
        if not ports:
            continue
        per_cage = max(1, max(pc.ports for pc in sw.port_configs) // sw.cages)
        if host is not None and not joins(
            MediaPicker(cat), speed_gbps, host, End(sw.cage, "switch", per_cage)
        ):
            unjoinable.append(sw.id)
            continue
        fitting.append((sw, max(ports)))
    if not fitting and unjoinable:
        raise FabricError(
            f"no catalog cable or optic joins a {host.cage if host else ''} host port to "
            f"{', '.join(unjoinable)} at {speed_gbps:g} Gb/s"
            + (f" ({flag} {switch_id})" if switch_id else f"; pick another switch with {flag}")
            + " or add the part with --catalog"
        )
    if not fitting:
        if switch_id is not None:
            speeds = sorted({pc.speed_gbps for pc in candidates[0].port_configs})
            raise FabricError(
                f"{flag} {switch_id} has no ports at {speed_gbps:g} Gb/s (it offers "
                f"{', '.join(f'{s:g}' for s in speeds)} Gb/s)"
            )
        raise FabricError(
            f"no catalog switch for the {prefer} network serves {speed_gbps:g} Gb/s ports"
            + (f" over {protocol}" if protocol else "")
            + f"; add one with --catalog or pick one with {flag}"
        )
    fitting.sort(key=lambda t: (-t[1], t[0].price_usd or math.inf, t[0].id))
    sw, radix = fitting[0]
    why = (
        f"{sw.id} as asked ({flag})" if switch_id is not None else
        f"{sw.id}: most {speed_gbps:g}G ports ({radix}) of "
        f"{len(fitting)} catalog switch(es) for the {prefer} network"
        + (f"; others: {', '.join(f'{s.id} ({r})' for s, r in fitting[1:4])}" if len(fitting) > 1
           else "")
    )
    return NetworkParts(
        switch=sw, speed_gbps=speed_gbps, radix=radix,
        ports_per_cage=max(1, radix // sw.cages), protocol=sw.protocol, why=why,
    )


def _nic_cage(cat: Catalog, nic_id: str | None, default: str) -> str:
    return default if nic_id is None else str(cat.get("nics", nic_id).cage)


def frontend_cage(cat: Catalog, server: Server) -> str:
    """Cage type of the server's frontend ports."""
    cage = _nic_cage(cat, server.frontend_nics.nic, "QSFP112")
    if server.frontend_nics.nic is not None:
        nic = cat.get("nics", server.frontend_nics.nic)
        if nic.cage == "OSFP" and nic.ports == 1:
            # Dual-port QSFP112 frontend cards listed under the single-port family id.
            return "QSFP112"
    return cage


def _backend_speed(server: Server, dual_plane: bool) -> float:
    speed = server.backend_nics.speed_gbps
    return speed / 2 if dual_plane else speed


def host_port(server: Server, rail: int, plane: int, planes: int) -> str:
    """Backend port name on the host for 0-based ``rail`` (vendor map where documented)."""
    base = server.backend_port_names[rail] if server.backend_port_names else f"nic{rail}"
    return f"{base}p{plane}" if planes > 1 else base


def host_name(i: int) -> str:
    """Name of 0-based host ``i``; fixed width so names sort and compress as Slurm hostlists."""
    return f"gpu{i + 1:05d}"


def design_fabric(req: FabricRequest, cat: Catalog) -> Fabric:
    """Design every network for ``req``; the physical plan, addresses and BOM are added by
    ``design.physical``, ``design.addressing`` and ``design.bom`` (``plan_fabric`` runs all)."""
    try:
        server = cat.server(req.server)
    except UnknownIdError as e:
        raise FabricError(f"--server: {e}") from e
    if server.backend_nics.count == 0:
        raise FabricError(f"--server {server.id} has no backend NICs to build a fabric for")
    planes = 2 if req.dual_plane else 1
    speed = _backend_speed(server, req.dual_plane)
    backend = _parts(
        cat, "--switch", req.switch, speed, ("backend",), req.protocol, "backend",
        # Dual-plane splits each NIC port in two: its cage then carries twice the links.
        host=End(_nic_cage(cat, server.backend_nics.nic, "OSFP"), "host",
                 server.backend_links_per_cage * planes),
    )
    hosts = req.nodes * server.hosts
    rails = server.rails
    if req.rails is not None:
        if req.rails > server.rails:
            raise FabricError(f"--rails {req.rails}: {server.id} has {server.rails} rails per host")
        rails = req.rails
    su_hosts = req.su_hosts
    domain_hosts = server.nvlink_domain_gpus // (server.gpus // server.hosts)
    if su_hosts is None and domain_hosts > 1:
        # Whole NVLink domains per SU, so a rack's trays share their rail leaves and the
        # scheduler's levels (SU above NVLink domain) nest.
        down = (backend.radix - req.leaf_uplinks if req.leaf_uplinks
                else split_ports(backend.radix, req.oversubscription).down)
        su_hosts = max(1, down // domain_hosts) * domain_hosts
    tiers = req.tiers
    down = split_ports(backend.radix, req.oversubscription).down
    if tiers is None and req.leaf_uplinks is None and hosts < (su_hosts or down) \
            and hosts <= down:
        # Below one scalable unit the SU's spines carry nothing a single tier could not: one
        # tier now, two at a full SU (the growth plan is in the notes). A full SU keeps the
        # SuperPOD RA build, so 32 x DGX on QM9700 is still 8 leaves and 4 spines.
        tiers = 1
    shape = fabric_shape(
        hosts=hosts, rails=rails, radix=backend.radix, planes=planes,
        oversubscription=req.oversubscription,
        spine_oversubscription=req.spine_oversubscription if tiers not in (1, 2) else 1.0,
        su_hosts=su_hosts, tiers=tiers, leaf_uplinks=req.leaf_uplinks,
        min_spines=req.leaf_uplinks or 2,  # one spine is a single point of failure
        spine_uplinks=req.spine_uplinks, pod_sus=req.pod_sus,
    )
    _check_units(shape.sus, shape.su_hosts, "backend", "su_hosts" if req.su_hosts else "nodes")
    fe_speed = server.frontend_nics.speed_gbps
    frontend = _parts(
        cat, "--frontend-switch", req.frontend_switch, fe_speed, ("frontend", "inband"),
        "ethernet", "frontend", host=End(frontend_cage(cat, server), "host", 1),
    )
    oob = _parts(cat, "--oob-switch", req.oob_switch, 1.0, ("oob",), "ethernet", "oob")
    up_speeds = sorted(
        (pc.speed_gbps for pc in oob.switch.port_configs if pc.speed_gbps > 1.0), reverse=True
    )
    if not up_speeds:
        raise FabricError(f"--oob-switch {oob.switch.id} has no uplink ports above 1 Gb/s")
    oob_uplink = _parts(cat, "--oob-switch", None, up_speeds[0], ("inband",), "ethernet", "oob")
    read = (
        req.storage_read_gbps_per_gpu if req.storage_read_gbps_per_gpu is not None
        else cat.assumption("storage_read_gbps_per_gpu")
    )
    fab = Fabric(
        request=req, server=server, shape=shape, backend=backend, frontend=frontend, oob=oob,
        oob_uplink=oob_uplink, storage_read_gbps_per_gpu=read,
        storage_aggregate_read_gbps_per_gpu=min(
            read, cat.assumption("storage_aggregate_read_gbps_per_gpu")
        ),
    )
    spare = shape.sus * shape.su_hosts - hosts
    if shape.tiers == 1:
        fab.notes.append(_growth_plan(shape, req))
    elif spare:
        fab.notes.append(
            f"the last scalable unit is built in full (leaves and leaf-spine cables, as the "
            f"SuperPOD RA advises): {spare} of {shape.sus * shape.su_hosts} host positions "
            f"are empty for growth; --su-hosts sets a smaller unit"
        )
    if req.protocol == "ethernet" or backend.protocol == "ethernet":
        fab.notes.append("backend is RoCE Ethernet: eBGP underlay, one ASN per leaf")
    _build_hosts(fab)
    _build_backend(fab)
    _build_frontend(fab)
    fab.vendors = {server.id: _vendor(cat, "gpus", server.gpu)} | {
        p.switch.id: p.switch.vendor.split(" ")[0] for p in (backend, frontend, oob, oob_uplink)
    }
    return fab


def _growth_plan(shape: FabricShape, req: FabricRequest) -> str:
    """The SU policy and growth plan of a one-tier backend, for the notes and the blueprint."""
    s = shape
    full = fabric_shape(hosts=s.su_hosts, rails=s.rails, radix=s.radix, planes=s.planes,
                        oversubscription=req.oversubscription, su_hosts=s.su_hosts, tiers=2,
                        min_spines=2)
    what = (f"one switch for all {s.rails} rails ({s.hosts} hosts x {s.rails} rails of its "
            f"{s.leaf.down} down ports)" if s.rails_per_leaf > 1 and s.rails > 1 else
            f"{s.leaves_per_plane} leaf switch(es), one per rail")
    split = (f"; the shared switch becomes one leaf per rail (hosts re-cabled to their rail "
             f"leaves) past {s.leaf.down // s.rails} hosts" if s.rails_per_leaf > 1 and s.rails > 1
             else "")
    return (
        f"backend right-sized: {s.hosts} hosts are below one scalable unit of {s.su_hosts}, so "
        f"the backend is a single tier: {what}, no spines and no leaf-spine optics. SU policy: "
        f"below {s.su_hosts} hosts one tier; at {s.su_hosts} hosts (one full SU, as the SuperPOD "
        f"RA builds it) it grows to two tiers, adding {full.spines_per_plane * s.planes} spines "
        f"and cabling each leaf's {full.leaf.up} free uplink ports{split}"
    )


def _vendor(cat: Catalog, kind: str, entry: str) -> str:
    vendor = str(cat.get(kind, entry).vendor)
    return {"nvidia": "NVIDIA", "amd": "AMD", "intel": "Intel"}.get(vendor, vendor)


def _build_hosts(fab: Fabric) -> None:
    for i in range(fab.shape.hosts):
        su = i // fab.shape.su_hosts + 1
        fab.add(Device(name=host_name(i), role="host", part=fab.server.id, uid=i, su=su))


@dataclass(frozen=True)
class _Clos:
    """How one leaf/spine(/core) network is named and attached."""

    network: Network
    prefix: str  # "" for the backend, "fe-" for the frontend
    tiers: tuple[str, str, str]  # link tier names: host-leaf, leaf-spine, spine-core
    rail_label: str  # "r1".. for rails, "a"/"b" for a dual-homed pair


def _rail(clos: _Clos, rail: int) -> str:
    return f"r{rail + 1}" if clos.rail_label == "r" else "ab"[rail] if rail < 2 else f"x{rail}"


def _su_label(su: int) -> str:
    # Storage scalable units are numbered from STORAGE_SU so their ids never move when
    # compute SUs are added.
    return f"st{su - STORAGE_SU + 1:02d}" if su >= STORAGE_SU else f"su{su:03d}"


STORAGE_SU = 1000


def _check_units(sus: int, su_hosts: int, network: str, field: str) -> None:
    """Scalable units are numbered below ``STORAGE_SU`` (storage units above it share the
    numbering and the names): refuse a design with more, blaming ``field``."""
    if sus >= STORAGE_SU:
        raise FabricError(
            f"{field}: {sus:,} {network} scalable units of {su_hosts} hosts; the designer numbers "
            f"at most {STORAGE_SU - 1} (fewer nodes, or larger units with --su-hosts)",
            field=field)


def _build_clos(
    fab: Fabric,
    clos: _Clos,
    parts: NetworkParts,
    s: FabricShape,
    endpoints: list[tuple[int, int, list[tuple[str, str]]]],
) -> None:
    """Leaves, spines, cores and links of one rail-optimized fat tree of shape ``s``.

    ``endpoints``: (SU number, slot in the SU, [(device, port) per rail]) in SU order. SU numbers
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
                        name=f"{pre}leaf-{pl}{_su_label(su)}{label}{extra}",
                        role="leaf" if not pre else "fe-leaf", part=sw,
                        uid=seq * planes + plane - 1, plane=plane, pod=pod, su=su,
                        rail=rail + 1 if shared == 1 else 0, k=k, ports=parts.radix,
                    ))
                    leaves[(su, rail, k)] = dev
                    ordered.append(dev)
        for su, slot, ports in endpoints:
            k, port = divmod(slot, per_leaf)
            for rail, (dname, dport) in enumerate(ports):
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


def _build_backend(fab: Fabric) -> None:
    s = fab.shape
    endpoints = [
        (h.su, h.uid % s.su_hosts,
         [(h.name, host_port(fab.server, r, 1, 1)) for r in range(s.rails)])
        for h in fab.hosts
    ]
    clos = _Clos("backend", "", ("node-leaf", "leaf-spine", "spine-core"), "r")
    _build_clos(fab, clos, fab.backend, s, endpoints)


def frontend_shape(fab: Fabric, storage_targets: int) -> FabricShape:
    """Shape of the frontend: hosts dual-homed to a leaf pair per scalable unit, leaf uplinks
    from the storage read bandwidth (each leaf of a pair carries half its hosts' reads),
    rounded up to a power of two so spines divide them evenly; at least two spines.

    One tier (``frontend_one_tier``) when the backend is one tier and every endpoint fits on
    one leaf pair."""
    fp = fab.frontend
    ports_per_host = max(1, fab.server.frontend_nics.count // fab.server.hosts)
    su, up = _frontend_su(fab, ports_per_host)
    if frontend_one_tier(fab, storage_targets, su):
        return _one_tier_pair(fab, storage_targets, su, ports_per_host)
    endpoints = fab.shape.hosts + storage_targets
    _check_units(math.ceil(fab.shape.hosts / su), su, "frontend", "nodes")
    sus = math.ceil(fab.shape.hosts / su) + math.ceil(storage_targets / su)
    return fabric_shape(
        hosts=sus * su if endpoints else 1, rails=ports_per_host, radix=fp.radix,
        leaf_uplinks=up, su_hosts=su, min_spines=2,
    )


def _frontend_su(fab: Fabric, ports_per_host: int) -> tuple[int, int]:
    """Hosts per frontend leaf pair and the uplinks per leaf that carry their storage reads."""
    fp = fab.frontend
    gpus_per_host = fab.server.gpus // fab.server.hosts
    per_host_gbps = gpus_per_host * fab.storage_read_gbps_per_gpu * 8  # Gb/s
    su = min(fab.shape.su_hosts, fp.radix // 2)
    need = math.ceil(su * per_host_gbps / ports_per_host / fp.speed_gbps)
    up = 1 << max(1, math.ceil(math.log2(max(2, need))))
    if su + up > fp.radix:
        su = fp.radix - up
        if su < 1:
            raise FabricError(
                f"--frontend-switch {fp.switch.id} ({fp.radix} x {fp.speed_gbps:g}G) cannot carry "
                f"one host's storage reads ({per_host_gbps:g} Gb/s); pick a larger one"
            )
    return su, up


def frontend_one_tier(fab: Fabric, storage_targets: int, su: int) -> bool:
    """Whether the frontend is one leaf pair with no spines.

    Only below one backend scalable unit (the backend is one tier): a full SU keeps the
    SuperPOD RA build, so larger clusters are unchanged. Every host and storage target must
    fit in the pair's ``su`` host positions; the storage reads then stay inside each leaf
    (host and target ports on the same switch), so no uplink bandwidth is needed, and the
    leaves' uplink ports stay free for the spines of the two-tier growth. Hosts with a single
    frontend port are not dual-homed, so they keep the two-tier build (no pair to keep)."""
    ports_per_host = max(1, fab.server.frontend_nics.count // fab.server.hosts)
    return (fab.shape.tiers == 1 and ports_per_host >= 2
            and fab.shape.hosts + storage_targets <= su)


def _one_tier_pair(fab: Fabric, storage_targets: int, su: int,
                   ports_per_host: int) -> FabricShape:
    # One leaf per frontend port (a and b of the pair), never one shared switch as the
    # backend's one tier does: dual-homing is for availability, so the pair stays two boxes.
    return FabricShape(
        hosts=fab.shape.hosts + storage_targets, rails=ports_per_host, planes=1,
        radix=fab.frontend.radix, tiers=1, su_hosts=su, sus=1, leaves_per_rail_su=1,
        leaf=TierPorts(down=su, up=0), spine=TierPorts(down=0, up=0),
        leaves_per_plane=ports_per_host, spines_per_plane=0, cores_per_plane=0, pods=1,
        sus_per_pod=1, leaf_spine_parallel=1, core_group_size=0, spine_core_parallel=0,
        rails_per_leaf=1,
    )


def _frontend_growth_plan(fab: Fabric, storage_targets: int) -> str:
    """The one-tier frontend's note: what it is and when it grows to spines."""
    s = fab.frontend_shape
    assert s is not None and s.tiers == 1
    ports_per_host = s.rails
    su, up = _frontend_su(fab, ports_per_host)
    hosts = fab.shape.hosts
    grown = fabric_shape(
        hosts=su + (math.ceil(storage_targets / su) * su if storage_targets else 0),
        rails=ports_per_host, radix=fab.frontend.radix, leaf_uplinks=up, su_hosts=su,
        min_spines=2)
    return (
        f"frontend right-sized: {hosts} hosts and {storage_targets} storage target(s) fit one "
        f"leaf pair ({hosts + storage_targets} of its {su} host positions), so the frontend is "
        f"a single tier: {s.leaf_switches} leaves, every host and storage target dual-homed "
        f"to both, storage reads switched inside each leaf, no spines and no leaf-spine "
        f"optics. It grows to two tiers with the backend (at one full scalable unit of "
        f"{fab.shape.su_hosts} hosts) or when the endpoints outgrow the pair's {su} positions: "
        f"the storage targets move to their own leaf pair and {grown.spine_switches} spines "
        f"are added, cabled to each leaf's {up} free uplink ports (host cables stay)"
    )


def _build_frontend(fab: Fabric) -> None:
    fp = fab.frontend
    gpus = fab.shape.hosts * fab.server.gpus // fab.server.hosts
    # Storage: enough dual-homed targets for the aggregate read bandwidth.
    ports_per_host = max(1, fab.server.frontend_nics.count // fab.server.hosts)
    storage_ports = math.ceil(gpus * fab.storage_aggregate_read_gbps_per_gpu * 8 / fp.speed_gbps)
    targets = math.ceil(storage_ports / ports_per_host)
    shape = frontend_shape(fab, targets)
    fab.frontend_shape = shape
    su = shape.su_hosts
    endpoints: list[tuple[int, int, list[tuple[str, str]]]] = []
    for i, h in enumerate(fab.hosts):
        endpoints.append((i // su + 1, i % su, [(h.name, f"fe{n}") for n in range(ports_per_host)]))
    for i in range(targets):
        dev = fab.add(Device(name=f"storage-{i + 1:03d}", role="storage", part="", uid=i,
                             su=STORAGE_SU + i // su))
        if shape.tiers == 1:
            # On the hosts' pair, from its last position down, so an added host never moves
            # a storage cable.
            endpoints.append((1, su - targets + i,
                              [(dev.name, f"p{n}") for n in range(ports_per_host)]))
            continue
        endpoints.append((STORAGE_SU + i // su, i % su,
                          [(dev.name, f"p{n}") for n in range(ports_per_host)]))
    if shape.tiers == 1:
        fab.notes.append(_frontend_growth_plan(fab, targets))
    clos = _Clos("frontend", "fe-", ("fe-node-leaf", "fe-leaf-spine", "fe-spine-core"), "ab")
    _build_clos(fab, clos, fp, shape, endpoints)
    for lk in fab.links:
        if lk.tier == "fe-node-leaf" and lk.a.startswith("storage-"):
            lk.tier = "fe-storage-leaf"


@dataclass
class OobGroup:
    """Devices of one row for the management network. ``label`` names its switches
    (oob-<label>-<k>); ``uid_base`` keeps their ids stable; ``su_slots`` reserves one block of
    ports per host position of a whole scalable unit (0 for network rows)."""

    label: str
    uid_base: int
    devices: list[Device]
    su_slots: int = 0


_OOB_RANK = {r: i for i, r in enumerate(("leaf", "fe-leaf", "spine", "core", "fe-spine",
                                           "fe-core", "oob-spine"))}


def build_oob(fab: Fabric, groups: list[OobGroup], mgmt: int) -> list[list[Device]]:
    """Out-of-band management: one 1 GbE port per BMC and ``mgmt`` per switch, on management
    switches per row (the physical plan passes one group per row, so copper stays in it),
    each uplinked twice to an aggregation pair. Returns the management switches per group.

    Ports are stable under growth: a host's BMC port follows its slot in its scalable unit
    (the unit's positions are reserved, as its leaves are built in full), and switches follow
    in (role, id) order after them."""
    op = fab.oob
    up_speed = fab.oob_uplink.speed_gbps
    per_switch = op.radix
    pname = {i: port_name("ethernet", i, 1) for i in range(1, per_switch + 1)}
    per_host = max(1, fab.server.oob_ports // fab.server.hosts)
    out: list[list[Device]] = []
    leaves: list[Device] = []
    for g in groups:
        slots: list[tuple[int, str, str]] = []
        hosts = [d for d in g.devices if d.role == "host"]
        if g.su_slots:
            for d in hosts:
                base = (d.uid % fab.shape.su_hosts) * per_host
                slots += [(base + i, d.name, f"bmc{i}" if i else "bmc") for i in range(per_host)]
            nxt = g.su_slots * per_host
        else:
            nxt = 0
            for d in hosts:
                slots += [(nxt + i, d.name, f"bmc{i}" if i else "bmc") for i in range(per_host)]
                nxt += per_host
        switches = sorted(
            (d for d in g.devices if d.role in SWITCH_ROLES and d.role != "oob-leaf"),
            key=lambda d: (_OOB_RANK.get(d.role, 99), d.uid, d.name),
        )
        for d in switches:
            slots += [(nxt + i, d.name, f"mgmt{i}") for i in range(mgmt)]
            nxt += mgmt
        if not slots:
            out.append([])
            continue
        n = math.ceil((max(s for s, _, _ in slots) + 1) / per_switch)
        mine = [
            fab.add(Device(name=f"oob-{g.label}-{k + 1}", role="oob-leaf", part=op.switch.id,
                           uid=g.uid_base + k, ports=per_switch))
            for k in range(n)
        ]
        leaves += mine
        out.append(mine)
        for slot, dev, port in slots:
            leaf = mine[slot // per_switch]
            fab.links.append(Link(
                network="oob", tier="oob-node-leaf", a=dev, a_port=port, b=leaf.name,
                b_port=pname[slot % per_switch + 1][0], speed_gbps=op.speed_gbps,
            ))
    leaves.sort(key=lambda d: d.uid)
    agg = fab.oob_uplink
    n_spines = max(2, math.ceil(2 * len(leaves) / agg.radix))
    spines = [
        fab.add(Device(name=f"oob-spine-{j + 1:02d}", role="oob-spine", part=agg.switch.id,
                       uid=j, ports=agg.radix))
        for j in range(n_spines)
    ]
    used = dict.fromkeys((s.name for s in spines), 0)
    for i, leaf in enumerate(leaves):
        for j in range(2):
            spine = spines[(2 * i + j) % n_spines]
            used[spine.name] += 1
            fab.links.append(Link(
                network="oob", tier="oob-leaf-spine", a=leaf.name,
                a_port=f"swp{per_switch + j + 1}",
                b=spine.name, b_port=port_name("ethernet", used[spine.name], 1)[0],
                speed_gbps=up_speed,
            ))
    return out


def topology(fab: Fabric, cat: Catalog) -> nx.MultiGraph[str]:
    """The ``Topology`` graph: GPUs, NICs, NVLink domains, switches and links.

    Nodes carry ``kind`` (gpu, nic, nvswitch, host-less switch roles) and edges carry
    ``bandwidth_bps`` (one direction), ``latency_s`` and ``tier``. Parallel links stay parallel
    (a MultiGraph), which the network simulator needs for ECMP.
    """
    g: nx.MultiGraph[str] = nx.MultiGraph(name=f"{fab.server.id} x {fab.request.nodes}")
    gpu = cat.gpu(fab.server.gpu)
    gpus_per_host = fab.server.gpus // fab.server.hosts
    domain_hosts = max(1, fab.server.nvlink_domain_gpus // gpus_per_host)
    nvlink_bps = gpu.scale_up.bandwidth_gbps_per_direction * 8e9
    # x16, one direction, GB/s -> bits/s (PCIe 3.0-6.0 raw rates, PCI-SIG).
    pcie_bps = {3: 16, 4: 32, 5: 64, 6: 128}.get(gpu.pcie_gen, 64) * 8e9
    sw_latency = {
        d.part: (cat.switch(d.part).latency_ns or 0.0) * 1e-9
        for d in fab.devices if d.role in SWITCH_ROLES
    }
    for d in fab.devices:
        g.add_node(d.name, kind=d.role, part=d.part, plane=d.plane, pod=d.pod, su=d.su,
                   rail=d.rail, latency_s=sw_latency.get(d.part, 0.0))
    for d in fab.hosts:
        dom = f"nvl-{d.uid // domain_hosts + 1:05d}"
        if dom not in g:
            g.add_node(dom, kind="nvswitch", gpus=fab.server.nvlink_domain_gpus)
        for r in range(gpus_per_host):
            gname = f"{d.name}/gpu{r}"
            g.add_node(gname, kind="gpu", host=d.name, index=r)
            g.add_edge(gname, dom, bandwidth_bps=nvlink_bps, latency_s=0.0, tier="nvlink")
            g.add_edge(gname, d.name, bandwidth_bps=pcie_bps, latency_s=0.0, tier="pcie")
    for lk in fab.links:
        a = lk.a
        if lk.tier == "node-leaf":
            nic = f"{lk.a}/{lk.a_port}"
            g.add_node(nic, kind="nic", host=lk.a, rail=lk.rail, plane=lk.plane)
            # Rails are in GPU order over the server's full NIC set (a partial --rails build
            # uses the first ones), so rail r belongs to GPU r * GPUs / rails of the server.
            g.add_edge(f"{lk.a}/gpu{lk.rail * gpus_per_host // fab.server.rails}", nic,
                       bandwidth_bps=pcie_bps, latency_s=0.0, tier="pcie")
            a = nic
        g.add_edge(a, lk.b, bandwidth_bps=lk.speed_gbps * 1e9, latency_s=lk.length_m * 5e-9,
                   tier=lk.tier, network=lk.network)
    return g
