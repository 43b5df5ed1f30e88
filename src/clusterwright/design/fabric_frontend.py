"""The frontend (storage, in-band management, north-south): hosts dual-homed to leaf pairs,
uplinks sized from storage reads, storage targets on their own leaves; one leaf pair and no
spines below one backend scalable unit."""

from __future__ import annotations

import math
from dataclasses import dataclass

from clusterwright.catalog.registry import Catalog
from clusterwright.catalog.schema import Server
from clusterwright.design.fabric_clos import Clos, build_clos, check_units
from clusterwright.design.fabric_model import STORAGE_SU, Device, Fabric, NetworkParts
from clusterwright.design.fabric_shape import FabricError, FabricShape, TierPorts, fabric_shape
from clusterwright.design.media import End, MediaPicker, joins


def nic_cage(cat: Catalog, nic_id: str | None, default: str) -> str:
    """Cage type of a catalog NIC (``default`` when the server names none)."""
    return default if nic_id is None else str(cat.get("nics", nic_id).cage)


def frontend_cage(cat: Catalog, server: Server) -> str:
    """Cage type of the server's frontend ports."""
    cage = nic_cage(cat, server.frontend_nics.nic, "QSFP112")
    if server.frontend_nics.nic is not None:
        nic = cat.get("nics", server.frontend_nics.nic)
        if nic.cage == "OSFP" and nic.ports == 1:
            # Dual-port QSFP112 frontend cards listed under the single-port family id.
            return "QSFP112"
    return cage


def ports_per_host(fab: Fabric) -> int:
    """Frontend ports per host (2 on a dual-homed host)."""
    return max(1, fab.server.frontend_nics.count // fab.server.hosts)


def host_read_gbps(fab: Fabric) -> float:
    """One host's storage reads, Gb/s."""
    return fab.server.gpus // fab.server.hosts * fab.storage_read_gbps_per_gpu * 8


@dataclass(frozen=True)
class StorageAttach:
    """How the storage tier sits on the frontend: ``units`` devices of ``ports`` ports each at
    ``speed_gbps`` (Gb/s), each unit taking ``slots`` positions of a leaf pair (one port per
    leaf of the pair at a position, so a unit's ports alternate between the pair's leaves).
    ``part`` is the catalog storage system ("" for targets sized from bandwidth alone)."""

    units: int
    ports: int
    speed_gbps: float
    slots: int
    part: str = ""

    @property
    def positions(self) -> int:
        """Leaf-pair positions the storage takes."""
        return self.units * self.slots


def storage_attach(fab: Fabric) -> StorageAttach:
    """The designed storage tier's units with their catalog ports, at their port rate capped
    by the frontend's (a faster port runs at the leaf's rate); without one, dual-homed targets
    sized from the cluster's aggregate read bandwidth at the frontend's link rate."""
    pph = ports_per_host(fab)
    system = fab.storage
    if system is not None and fab.request.storage_units is not None:
        return StorageAttach(
            units=fab.request.storage_units, ports=system.ports,
            speed_gbps=min(system.port_gbps, fab.frontend.speed_gbps),
            slots=math.ceil(system.ports / pph), part=system.id)
    ports = math.ceil(storage_gbps(fab) / fab.frontend.speed_gbps)
    return StorageAttach(units=math.ceil(ports / pph), ports=pph,
                         speed_gbps=fab.frontend.speed_gbps, slots=1)


def storage_gbps(fab: Fabric) -> float:
    """The storage tier's bandwidth the frontend carries to the GPUs, Gb/s."""
    gpus = fab.shape.hosts * fab.server.gpus // fab.server.hosts
    return gpus * fab.storage_aggregate_read_gbps_per_gpu * 8


def storage_targets(fab: Fabric) -> int:
    """Leaf-pair positions the storage tier takes on the frontend (``storage_attach``)."""
    return storage_attach(fab).positions


def right_size_frontend(fab: Fabric, cat: Catalog) -> None:
    """Below one backend scalable unit: the cheapest catalog switch (at any link rate up to the
    NIC's) whose leaf pair holds every host and storage target dual-homed on one tier, with one
    port carrying a host's whole storage reads so either leaf can fail. Replaces
    ``fab.frontend`` when it is cheaper than the pair the NIC rate would pick; the choice and
    what it beat go into ``why`` and ``alternatives``."""
    pph = ports_per_host(fab)
    if pph < 2:
        return  # single-homed hosts keep the two-tier build (no pair to right-size)
    default = fab.frontend
    need = host_read_gbps(fab)
    host = End(frontend_cage(cat, fab.server), "host", 1)
    picker = MediaPicker(cat)
    options: list[tuple[float, float, str, NetworkParts, int]] = []
    for sw in cat.all("switches"):
        if sw.protocol != "ethernet" or not {"frontend", "inband"} & set(sw.roles):
            continue
        per_cage = max(1, max(pc.ports for pc in sw.port_configs) // sw.cages)
        for speed in sorted({pc.speed_gbps for pc in sw.port_configs}):
            if speed > fab.server.frontend_nics.speed_gbps or speed < need:
                continue
            if not joins(picker, speed, host, End(sw.cage, "switch", per_cage)):
                continue
            radix = max(pc.ports for pc in sw.port_configs if pc.speed_gbps == speed)
            fab.frontend = NetworkParts(
                switch=sw, speed_gbps=speed, radix=radix, ports_per_cage=max(1, radix // sw.cages),
                protocol=sw.protocol, why="")
            try:
                attach = storage_attach(fab)
                su, _ = _frontend_su(fab, pph)
            except FabricError:
                continue
            targets = attach.positions
            if attach.part and attach.units * attach.ports * attach.speed_gbps < storage_gbps(fab):
                continue  # the bought units' ports, capped at this rate, carry less than needed
            if frontend_one_tier(fab, targets, su):
                options.append((pph * (sw.price_usd or math.inf), -speed, sw.id, fab.frontend,
                                targets))
    fab.frontend = default
    if not options:
        return
    options.sort(key=lambda o: o[:3])
    cost, _, _, best, targets = options[0]
    base = next((o for o in options if o[3].switch.id == default.switch.id
                 and o[3].speed_gbps == default.speed_gbps), None)
    if base is None or base[0] <= cost:
        return
    def loses(c: float, p: NetworkParts) -> str:
        # Equal prices are broken by the faster link rate (more headroom for the same money).
        what = (f"${c - cost:,.0f} more for the pair" if c > cost else
                f"same price, slower links ({p.speed_gbps:g}G against {best.speed_gbps:g}G)")
        return what + (" (the NIC's rate)" if p is base[3] else "")

    alts = tuple((f"{p.switch.id} at {p.speed_gbps:g}G", loses(c, p))
                 for c, _, _, p, _ in options[1:4])
    if base not in options[1:4]:
        alts += ((f"{default.switch.id} at {default.speed_gbps:g}G",
                  f"${base[0] - cost:,.0f} more for the pair (the NIC's rate)"),)
    fab.frontend = NetworkParts(
        switch=best.switch, speed_gbps=best.speed_gbps, radix=best.radix,
        ports_per_cage=best.ports_per_cage, protocol=best.protocol,
        why=(f"{best.switch.id} at {best.speed_gbps:g}G: the cheapest catalog switch whose "
             f"leaf pair holds all {fab.shape.hosts} hosts dual-homed and the storage's "
             f"{targets} position(s) on one tier, one port carrying a host's {need:g} Gb/s "
             f"of storage reads (either leaf can fail); {default.switch.id} at the NIC's "
             f"{default.speed_gbps:g}G costs ${base[0] - cost:,.0f} more for the pair"),
        alternatives=alts,
    )


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
    check_units(math.ceil(fab.shape.hosts / su), su, "frontend", "nodes")
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
    # A frontend unit follows the backend's SUs; with no backend it is the pair's own size.
    su = min(fab.shape.su_hosts, fp.radix // 2) if fab.has_backend else fp.radix // 2
    need = math.ceil(su * per_host_gbps / ports_per_host / fp.speed_gbps)
    up = 1 << max(1, math.ceil(math.log2(max(2, need))))
    if su + up > fp.radix:
        su = fp.radix - up
        if su < 1:
            raise FabricError(
                f"frontend_switch: {fp.switch.id} ({fp.radix} x {fp.speed_gbps:g}G) cannot carry "
                f"one host's storage reads ({per_host_gbps:g} Gb/s); pick a larger one",
                field="frontend_switch")
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
    return ((fab.shape.tiers == 1 or not fab.has_backend) and ports_per_host >= 2
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
        f"frontend right-sized: {hosts} hosts and {storage_targets} storage position(s) fit "
        f"one leaf pair ({hosts + storage_targets} of its {su} host positions), so the frontend "
        f"is a single tier: {s.leaf_switches} leaves, every host dual-homed to both, storage "
        f"reads switched inside each leaf, no spines and no leaf-spine "
        f"optics. It grows to two tiers with the backend (at one full scalable unit of "
        f"{fab.shape.su_hosts} hosts) or when the endpoints outgrow the pair's {su} positions: "
        f"the storage moves to its own leaf pair and {grown.spine_switches} spines "
        f"are added, cabled to each leaf's {up} free uplink ports (host cables stay)"
    )


def build_frontend(fab: Fabric) -> None:
    fp = fab.frontend
    ports_per_host = max(1, fab.server.frontend_nics.count // fab.server.hosts)
    attach = storage_attach(fab)
    targets = attach.positions
    try:
        shape = frontend_shape(fab, targets)
    except FabricError:
        if not attach.part:
            raise
        frontend_shape(fab, 0)  # the hosts alone: their own error if they do not fit either
        raise FabricError(
            f"storage_units: {attach.units:,} x {attach.part} take {targets:,} frontend leaf "
            f"positions ({attach.ports} ports each), more than a {fp.switch.id} frontend "
            f"holds beside the {fab.shape.hosts:,} hosts", field="storage_units") from None
    fab.frontend_shape = shape
    su = shape.su_hosts
    endpoints: list[tuple[int, int, list[tuple[str, str] | None]]] = []
    for i, h in enumerate(fab.hosts):
        endpoints.append((i // su + 1, i % su, [(h.name, f"fe{n}") for n in range(ports_per_host)]))
    for u in range(attach.units):
        dev = fab.add(Device(name=f"storage-{u + 1:03d}", role="storage", part=attach.part,
                             uid=u, su=STORAGE_SU + u * attach.slots // su))
        for j in range(attach.slots):
            i = u * attach.slots + j
            # A unit's ports alternate between the pair's leaves, position by position; units
            # with fewer ports than the pair has leaves alternate by unit, so a leaf loss
            # takes only its share of them.
            first = j * ports_per_host
            ports: list[tuple[str, str] | None] = [
                (dev.name, f"p{n}")
                for n in range(first, min(attach.ports, first + ports_per_host))]
            if attach.ports < ports_per_host:
                shift = u % ports_per_host
                ports = ([None] * shift + ports)[:ports_per_host]
            if shape.tiers == 1:
                # On the hosts' pair, from its last position down, so an added host never
                # moves a storage cable.
                endpoints.append((1, su - targets + i, ports))
                continue
            endpoints.append((STORAGE_SU + i // su, i % su, ports))
    if shape.tiers == 1:
        fab.notes.append(_frontend_growth_plan(fab, targets))
    clos = Clos("frontend", "fe-", ("fe-node-leaf", "fe-leaf-spine", "fe-spine-core"), "ab")
    build_clos(fab, clos, fp, shape, endpoints)
    for lk in fab.links:
        if lk.tier == "fe-node-leaf" and lk.a.startswith("storage-"):
            lk.tier = "fe-storage-leaf"
            lk.speed_gbps = attach.speed_gbps
    if attach.part:
        fab.notes.append(_storage_note(fab, attach))


def _storage_note(fab: Fabric, attach: StorageAttach) -> str:
    """What the frontend wires of the storage tier, and a port rate the leaf caps."""
    system = fab.storage
    assert system is not None
    capped = (f"; the units' {system.port_gbps:g} Gb/s ports run at the frontend leaves' "
              f"{attach.speed_gbps:g} Gb/s" if system.port_gbps > attach.speed_gbps else "")
    homed = ("single-homed: the units alternate between the pair's leaves, so a leaf loss "
             "takes its share of them off the network; units with a port per leaf would ride "
             "it out" if attach.ports < ports_per_host(fab)
             else "its ports alternate between the pair's leaves")
    carried = attach.units * attach.ports * attach.speed_gbps
    short = (f"; their ports carry {carried:,.0f} Gb/s, under the {storage_gbps(fab):,.0f} Gb/s "
             f"the storage tier serves" if carried < storage_gbps(fab) else "")
    return (f"storage: {attach.units} x {system.id} on the frontend, {attach.ports} x "
            f"{attach.speed_gbps:g} Gb/s each ({homed}){capped}{short}; racked at "
            f"{system.rack_units} U and {system.power_w:g} W a unit")
