"""The fabric's canonical model: devices with stable ids, port-level links, racks and the
switch chosen per network (``Fabric``). The designer (``design.fabric``) fills it; the physical
plan, addressing, BOM and exports read it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from clusterwright.catalog.schema import Server, StorageSystem, Switch
from clusterwright.design.decision import Decision
from clusterwright.design.fabric_shape import FabricShape
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
    # The other catalog switches that fit (switch, radix at this speed), for the decision.
    others: tuple[tuple[Switch, int], ...] = ()
    alternatives: tuple[tuple[str, str], ...] = ()  # (option, what it loses) when right-sized


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
    # The storage tier's units (request.storage_system), wired as the catalog gives them; None:
    # storage targets sized from the bandwidth at the frontend's rate.
    storage: StorageSystem | None = None
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
    decisions: list[Decision] = field(default_factory=list)  # protocol, switch, tiers, su, ...
    pfc: Any = None  # design.pfc.PfcPlan, once the cable lengths are planned

    @property
    def has_backend(self) -> bool:
        """False when the request asked for no backend fabric (``backend="none"``)."""
        return self.request.backend != "none"

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


def host_port(server: Server, rail: int, plane: int, planes: int) -> str:
    """Backend port name on the host for 0-based ``rail`` (vendor map where documented)."""
    base = server.backend_port_names[rail] if server.backend_port_names else f"nic{rail}"
    return f"{base}p{plane}" if planes > 1 else base


def host_name(i: int) -> str:
    """Name of 0-based host ``i``; fixed width so names sort and compress as Slurm hostlists."""
    return f"gpu{i + 1:05d}"


STORAGE_SU = 1000
