"""What the parsers read from a running cluster: plain records with the raw names the tools
print and the file and line each came from. Resolving names against a blueprint is the
twin's job (``twin/diff.py``), so a parser never needs one."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class Adjacency:
    """One end's view of a cable: ``local``:``local_port`` sees ``remote``:``remote_port``.

    ``remote_port_alt`` is a second name for the remote port when the tool gives two (LLDP:
    the port description when the port id is a MAC address). ``speed_gbps`` is the link rate
    the tool reports (None: not reported). ``local_port_alt`` likewise for the local port
    (ibnetdiscover: the HCA name of a host port)."""

    local: str
    local_port: str
    remote: str
    remote_port: str
    source: str
    line: int
    via: str  # lldp, ibnet
    remote_port_alt: str = ""
    local_port_alt: str = ""
    speed_gbps: float | None = None


@dataclass(frozen=True, slots=True)
class Membership:
    """A scheduler's or labeller's claim: ``node`` is in group ``group`` at ``level``
    (``su``: the fabric domain a job should stay in, ``block``, ``nvlink``: the NVLink
    domain, ``pod``, ``rack``, ``label:<key>`` for any other label)."""

    node: str
    level: str
    group: str
    source: str
    line: int


@dataclass(frozen=True, slots=True)
class NodeState:
    """A node as the scheduler or orchestrator reports it: ``available`` False when it is
    down, drained or not ready; ``gpus`` the GPUs it offers (None: not said)."""

    node: str
    available: bool
    state: str
    reason: str
    gpus: int | None
    source: str
    line: int


@dataclass(frozen=True, slots=True)
class GpuLinks:
    """``nvidia-smi topo -m`` of one host: the NVLinks between each GPU pair (0: none)."""

    host: str
    gpus: int
    nvlinks: dict[tuple[int, int], int]
    source: str
    line: int


@dataclass(frozen=True, slots=True)
class GpuFabric:
    """One GPU's NVLink fabric registration (``nvidia-smi -q``, Fabric section): the
    cluster UUID and clique id that name its multi-node NVLink domain."""

    host: str
    gpu: int
    cluster_uuid: str
    clique_id: str
    state: str
    source: str
    line: int


@dataclass(frozen=True, slots=True)
class Sample:
    """One Prometheus sample under the twin's name for what it measures (``metric``), on a
    device (``device``: the host or switch) and a port or GPU (``item``)."""

    metric: str  # canonical, see ingest/prom.py METRICS
    device: str
    item: str
    value: float
    source: str
    line: int
    raw_name: str = ""


@dataclass(frozen=True, slots=True)
class BgpPeer:
    address: str
    remote_as: int | None
    state: str
    description: str


@dataclass(frozen=True, slots=True)
class BgpState:
    """``show bgp summary json`` of one routed switch (FRR)."""

    device: str
    asn: int | None
    router_id: str
    peers: tuple[BgpPeer, ...]
    source: str
    line: int


@dataclass(frozen=True, slots=True)
class StepTime:
    """One rank's own time for one training iteration (seconds), or, from a relative
    performance report, its time relative to the best rank (``relative`` True)."""

    node: str
    rank: int
    iteration: int
    seconds: float
    source: str
    line: int
    relative: bool = False


@dataclass
class Observations:
    """Everything read from the as-built cluster, by kind, plus what each input covered."""

    adjacencies: list[Adjacency] = field(default_factory=list)
    memberships: list[Membership] = field(default_factory=list)
    node_states: list[NodeState] = field(default_factory=list)
    gpu_links: list[GpuLinks] = field(default_factory=list)
    gpu_fabric: list[GpuFabric] = field(default_factory=list)
    samples: list[Sample] = field(default_factory=list)
    bgp: list[BgpState] = field(default_factory=list)
    steps: list[StepTime] = field(default_factory=list)
    job_steps: list[tuple[int, float, str, int]] = field(default_factory=list)
    # Devices each input reported, as raw names: (input kind, file) -> names (with a line)
    reported: dict[tuple[str, str], dict[str, int]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    # Devices a dump saw but could not name (an HCA with its firmware's default description)
    unidentified: set[str] = field(default_factory=set)

    def report(self, kind: str, source: str, device: str, line: int) -> None:
        self.reported.setdefault((kind, source), {}).setdefault(device, line)

    def extend(self, other: Observations) -> None:
        self.adjacencies += other.adjacencies
        self.memberships += other.memberships
        self.node_states += other.node_states
        self.gpu_links += other.gpu_links
        self.gpu_fabric += other.gpu_fabric
        self.samples += other.samples
        self.bgp += other.bgp
        self.steps += other.steps
        self.job_steps += other.job_steps
        for k, v in other.reported.items():
            self.reported.setdefault(k, {}).update(v)
        self.unidentified |= other.unidentified
        self.notes += other.notes
