"""The fabric designer: devices, ports and links of every network of a GPU cluster.

One canonical model (``Fabric``: devices with stable ids, port-level links) from which every
artifact is emitted: the ``Topology`` graph, the physical plan, addressing, the bill of materials
and the exports. Networks:

- backend (compute): rail-optimized leaf/spine(/core) fat tree, counts from ``fabric_shape``;
  none at all when the request says ``backend="none"`` (every job fits one NVLink domain: it
  is sized for the growth plan, not built);
- frontend (storage, in-band management, north-south): leaf pairs per scalable unit with each
  host dual-homed, uplinks sized from the storage read bandwidth the GPUs need, storage leaves
  for the storage system's ports, EVPN-VXLAN for tenants; below one backend scalable unit, one
  leaf pair for every host and storage target and no spines when they fit, on the cheapest
  switch and link rate that carries the storage reads (``fabric_frontend``);
- out-of-band management: one 1 GbE port per BMC and per switch, management switches per row
  with uplinks to an aggregation pair; one switch and no aggregation below one SU when its
  ports hold everything (``fabric_oob``).

Errors blame ``FabricRequest`` fields (``FabricError(..., field="switch")``); each face words
them (the CLI as flags, ``plan`` as ``fabric.*`` scenario fields). Decisions with their why
and alternatives are in ``Fabric.decisions`` (``fabric_decisions``).

Names and ids are stable under growth: device ids are functions of (plane, SU, rail, ...), never
of the total count, so a design with one more node keeps every existing name, address and ASN
(only the spine count of a two-tier fabric can change, which re-cables some leaf uplinks).
"""

from __future__ import annotations

import math

import networkx as nx

from clusterwright.catalog.registry import Catalog
from clusterwright.catalog.schema import Server, StorageSystem, Switch
from clusterwright.design.fabric_clos import build_backend, check_units
from clusterwright.design.fabric_decisions import fabric_decisions
from clusterwright.design.fabric_frontend import (
    build_frontend,
    frontend_cage,
    nic_cage,
    right_size_frontend,
)
from clusterwright.design.fabric_model import (
    STORAGE_SU,
    SWITCH_ROLES,
    Device,
    Fabric,
    Link,
    Network,
    NetworkParts,
    Rack,
    Role,
    host_name,
    host_port,
    port_name,
)
from clusterwright.design.fabric_oob import OobGroup, build_oob
from clusterwright.design.fabric_shape import FabricError, FabricShape, fabric_shape, split_ports
from clusterwright.design.media import End, MediaPicker, joins
from clusterwright.errors import UnknownIdError
from clusterwright.model.host_link import pcie_bytes_per_s
from clusterwright.spec.fabric import FabricRequest

# Re-exported: the model, the OOB builder and the error are imported from here by the stages.
__all__ = [
    "STORAGE_SU", "SWITCH_ROLES", "Device", "Fabric", "FabricError", "Link", "Network",
    "NetworkParts", "OobGroup", "Rack", "Role", "build_oob", "design_fabric", "frontend_cage",
    "host_name", "host_port", "port_name", "topology",
]


def _parts(
    cat: Catalog,
    field: str,
    switch_id: str | None,
    speed_gbps: float,
    roles: tuple[str, ...],
    protocol: str | None,
    prefer: str,
    host: End | None = None,
) -> NetworkParts:
    """The switch for a network: ``switch_id`` if given, else the catalog switch of the role
    with the most ports at ``speed_gbps`` (fewest tiers and boxes), cheaper first on a tie.
    Errors blame ``field``, the ``FabricRequest`` field that chose the switch."""
    if switch_id is not None:
        try:
            sw = cat.switch(switch_id)
        except UnknownIdError as e:
            raise FabricError(f"{field}: {e}", field=field) from e
        if protocol is not None and sw.protocol != protocol:
            raise FabricError(
                f"{field}: {sw.id} speaks {sw.protocol}, but `protocol` is {protocol}",
                field=field)
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
            f"{field}: no catalog cable or optic joins a {host.cage if host else ''} host port to "
            f"{', '.join(unjoinable)} at {speed_gbps:g} Gb/s; pick another {prefer} switch or "
            "add the part to the catalog", field=field)
    if not fitting:
        if switch_id is not None:
            speeds = sorted({pc.speed_gbps for pc in candidates[0].port_configs})
            raise FabricError(
                f"{field}: {switch_id} has no ports at {speed_gbps:g} Gb/s (it offers "
                f"{', '.join(f'{s:g}' for s in speeds)} Gb/s)", field=field)
        raise FabricError(
            f"{field}: no catalog switch for the {prefer} network serves {speed_gbps:g} Gb/s "
            "ports" + (f" over {protocol}" if protocol else "")
            + "; add one to the catalog or name one", field=field)
    fitting.sort(key=lambda t: (-t[1], t[0].price_usd or math.inf, t[0].id))
    sw, radix = fitting[0]
    why = (
        f"{sw.id} as asked ({field})" if switch_id is not None else
        f"{sw.id}: most {speed_gbps:g}G ports ({radix}) of "
        f"{len(fitting)} catalog switch(es) for the {prefer} network"
        + (f"; others: {', '.join(f'{s.id} ({r})' for s, r in fitting[1:4])}" if len(fitting) > 1
           else "")
    )
    return NetworkParts(
        switch=sw, speed_gbps=speed_gbps, radix=radix,
        ports_per_cage=max(1, radix // sw.cages), protocol=sw.protocol, why=why,
        others=tuple((s, r) for s, r in fitting[1:]),
    )


def _backend_speed(server: Server, dual_plane: bool) -> float:
    speed = server.backend_nics.speed_gbps
    return speed / 2 if dual_plane else speed


def shape_without(fab: Fabric, hosts: int) -> FabricShape:
    """The backend shape ``fab``'s design would have for ``hosts`` hosts (its switch, SU,
    tiers and oversubscription kept): what fewer servers, such as the working ones without
    their spares, would need. Counts only; nothing is built."""
    req, sh = fab.request, fab.shape
    return fabric_shape(
        hosts=hosts, rails=sh.rails, radix=sh.radix, planes=sh.planes,
        oversubscription=req.oversubscription,
        spine_oversubscription=req.spine_oversubscription if sh.tiers not in (1, 2) else 1.0,
        su_hosts=sh.su_hosts, tiers=sh.tiers, leaf_uplinks=req.leaf_uplinks,
        min_spines=req.leaf_uplinks or 2, spine_uplinks=req.spine_uplinks,
        pod_sus=req.pod_sus)


def design_fabric(req: FabricRequest, cat: Catalog) -> Fabric:
    """Design every network for ``req``; the physical plan, addresses and BOM are added by
    ``design.physical``, ``design.addressing`` and ``design.bom`` (``plan_fabric`` runs all).
    Errors blame ``FabricRequest`` field names; each face words them (CLI flags, scenario
    fields)."""
    try:
        server = cat.server(req.server)
    except UnknownIdError as e:
        raise FabricError(f"server: {e}", field="server") from e
    if server.backend_nics.count == 0:
        raise FabricError(f"server: {server.id} has no backend NICs to build a fabric for",
                          field="server")
    planes = 2 if req.dual_plane else 1
    speed = _backend_speed(server, req.dual_plane)
    backend = _parts(
        cat, "switch", req.switch, speed, ("backend",), req.protocol, "backend",
        # Dual-plane splits each NIC port in two: its cage then carries twice the links.
        host=End(nic_cage(cat, server.backend_nics.nic, server.backend_nics.cage or "OSFP"),
                 "host",
                 server.backend_links_per_cage * planes),
    )
    hosts = req.nodes * server.hosts
    rails = server.rails
    if req.rails is not None:
        if req.rails > server.rails:
            raise FabricError(f"rails: {req.rails}, but {server.id} has {server.rails} rails "
                              "per host", field="rails")
        rails = req.rails
    su_hosts = req.su_hosts
    domain_hosts = server.nvlink_domain_gpus // (server.gpus // server.hosts)
    if server.torus is not None:
        # An ICI slice spans many racks (a TPU v5p slice is up to 96 cubes): the DCN's
        # scalable units align to the rack-scale unit, not to the torus domain.
        domain_hosts = server.hosts
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
    check_units(shape.sus, shape.su_hosts, "backend", "su_hosts" if req.su_hosts else "nodes")
    fe_speed = server.frontend_nics.speed_gbps
    frontend = _parts(
        cat, "frontend_switch", req.frontend_switch, fe_speed, ("frontend", "inband"),
        "ethernet", "frontend", host=End(frontend_cage(cat, server), "host", 1),
    )
    oob = _parts(cat, "oob_switch", req.oob_switch, 1.0, ("oob",), "ethernet", "oob")
    up_speeds = sorted(
        (pc.speed_gbps for pc in oob.switch.port_configs if pc.speed_gbps > 1.0), reverse=True
    )
    if not up_speeds:
        raise FabricError(f"oob_switch: {oob.switch.id} has no uplink ports above 1 Gb/s",
                          field="oob_switch")
    oob_uplink = _parts(cat, "oob_switch", None, up_speeds[0], ("inband",), "ethernet", "oob")
    read = (
        req.storage_read_gbps_per_gpu if req.storage_read_gbps_per_gpu is not None
        else cat.assumption("storage_read_gbps_per_gpu")
    )
    aggregate = min(read, cat.assumption("storage_aggregate_read_gbps_per_gpu"))
    if req.storage_tier_gbps is not None:
        # The designed storage tier: its bandwidth, spread over the GPUs, is what the storage
        # targets and the frontend's uplinks carry.
        aggregate = req.storage_tier_gbps / max(1, hosts * (server.gpus // server.hosts))
        if req.storage_read_gbps_per_gpu is None:
            # A host reads its share of the tier, at most what its frontend NICs carry (GB/s
            # per GPU): a tier larger than the hosts can read does not make their links faster.
            nic = (server.frontend_nics.count * server.frontend_nics.speed_gbps / 8
                   / max(1, server.gpus))
            read = min(aggregate, nic) if nic > 0 else aggregate
    fab = Fabric(
        request=req, server=server, shape=shape, backend=backend, frontend=frontend, oob=oob,
        oob_uplink=oob_uplink, storage_read_gbps_per_gpu=read,
        storage_aggregate_read_gbps_per_gpu=aggregate, storage=_storage_system(req, cat),
    )
    spare = shape.sus * shape.su_hosts - hosts
    if not fab.has_backend:
        fab.notes.append(_no_backend_note(fab))
    elif shape.tiers == 1:
        fab.notes.append(_growth_plan(shape, req))
    elif spare:
        fab.notes.append(
            f"the last scalable unit is built in full (leaves and leaf-spine cables, as the "
            f"SuperPOD RA advises): {spare} of {shape.sus * shape.su_hosts} host positions "
            f"are empty for growth; a smaller scalable unit (su_hosts) leaves fewer"
        )
    if fab.has_backend and (req.protocol == "ethernet" or backend.protocol == "ethernet"):
        fab.notes.append("backend is RoCE Ethernet: eBGP underlay, one ASN per leaf")
    if req.frontend_switch is None and (shape.tiers == 1 or not fab.has_backend):
        right_size_frontend(fab, cat)
    _build_hosts(fab)
    if fab.has_backend:
        build_backend(fab)
    build_frontend(fab)
    fab.vendors = {server.id: _vendor(cat, "gpus", server.gpu)} | {
        p.switch.id: p.switch.vendor.split(" ")[0]
        for p in (backend, fab.frontend, oob, oob_uplink)
    }
    if fab.storage is not None:
        fab.vendors[fab.storage.id] = fab.storage.vendor
    fab.decisions = fabric_decisions(fab)
    return fab


def _no_backend_note(fab: Fabric) -> str:
    s = fab.shape
    return (
        f"no backend fabric: every job fits one NVLink domain ({fab.server.nvlink_domain_gpus} "
        f"GPUs), so no GPU traffic leaves a server and {s.hosts} x {s.rails} backend NIC ports "
        f"stay unconnected. Growth: a job spanning servers needs the rail-optimized backend, "
        f"{s.leaf_switches} x {fab.backend.switch.id} at this size (one tier below one scalable "
        f"unit of {s.su_hosts} hosts, two tiers from it), cabled to the NICs already in place"
    )


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


def _storage_system(req: FabricRequest, cat: Catalog) -> StorageSystem | None:
    """The catalog storage system whose units the frontend wires; it must be one with ports
    of its own (an appliance or a storage server, not a cloud service or a server's drives)."""
    if req.storage_system is None:
        return None
    try:
        system = cat.get("storage_systems", req.storage_system)
    except UnknownIdError as e:
        raise FabricError(f"storage_system: {e}", field="storage_system") from e
    assert isinstance(system, StorageSystem)
    if system.ports == 0:
        raise FabricError(
            f"storage_system: {system.id} is a {system.kind} system with no network ports of "
            f"its own, so no frontend wires it; give an on-premises appliance or storage server",
            field="storage_system")
    return system


def _vendor(cat: Catalog, kind: str, entry: str) -> str:
    vendor = str(cat.get(kind, entry).vendor)
    return {"nvidia": "NVIDIA", "amd": "AMD", "intel": "Intel", "google": "Google",
            "aws": "AWS"}.get(vendor, vendor)


def _build_hosts(fab: Fabric) -> None:
    for i in range(fab.shape.hosts):
        su = i // fab.shape.su_hosts + 1
        fab.add(Device(name=host_name(i), role="host", part=fab.server.id, uid=i, su=su))


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
    # x16, one direction, bytes/s -> bits/s (PCIe raw rates, PCI-SIG).
    pcie_bps = pcie_bytes_per_s(gpu.pcie_gen) * 8.0
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
