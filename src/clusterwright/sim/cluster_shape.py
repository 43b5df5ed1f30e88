"""The cluster as the scheduler sees it: nodes grouped by leaf group, scalable unit and pod,
and the slowdown of a job whose nodes span more of the fabric.

Derived from the fabric designer (``design_fabric``: one rail leaf per rail per scalable unit,
``leaves_per_rail_su`` leaf groups per SU, ``sus_per_pod`` SUs per pod). Hosts are numbered in
SU order, so host h is in leaf group h // nodes_per_leaf, SU h // nodes_per_su, pod
h // (nodes_per_su * sus_per_pod).

Fragmentation penalty (derivation). A job's data-parallel all-reduce between nodes runs at the
per-GPU network bus bandwidth (``model.collectives``: busbw = min(NVLink, k x NIC) for k GPUs
per node). Inside one leaf group every rail's traffic turns at its rail leaf. Crossing SUs it
goes through the spines and shares the leaf uplinks, so in a leaf oversubscribed d:u the
bandwidth per GPU is divided by d/u; crossing pods it also shares the pod-spine uplinks
(factor of the spine tier). Each extra switch hop adds the switch's port-to-port latency to
every inter-node step (2 hops via a spine, 4 via a core), when the catalog states it. The ratio

    r(level) = allreduce_s(S, n, net at level) / allreduce_s(S, n, net in one leaf group)

is taken for the same all-reduce (S bytes, n ranks spanning two domains of that level), and a
job that spends ``c`` of its step in exposed data-parallel communication runs
1 + c (r - 1) times slower. On a non-blocking (1:1) fabric with no stated latency r = 1: the
closed form has no penalty, and ECMP collisions (which ``netsim`` shows) are not in it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from clusterwright.catalog.registry import Catalog
from clusterwright.design.fabric import Fabric, design_fabric
from clusterwright.design.train import net_for
from clusterwright.errors import InputError
from clusterwright.model.collectives import Interconnect, allreduce_s
from clusterwright.spec.fabric import FabricRequest

SPANS = ("leaf", "su", "pod", "cluster")  # smallest fabric domain holding all of a job's nodes
DEFAULT_ALLREDUCE_BYTES = 1e9  # a 1 GB gradient bucket set, bf16 gradients of a 0.5B slice


@dataclass(frozen=True)
class ClusterShape:
    """Scheduling view of a cluster. ``ratio`` is r(level) for SPANS (1.0 for "leaf")."""

    nodes: int
    gpus_per_node: int
    nodes_per_leaf: int
    nodes_per_su: int
    sus_per_pod: int
    server: str = ""
    gpu: str = ""
    ratio: tuple[float, float, float, float] = (1.0, 1.0, 1.0, 1.0)

    def __post_init__(self) -> None:
        if min(self.nodes, self.gpus_per_node, self.nodes_per_leaf, self.sus_per_pod) < 1:
            raise InputError("cluster shape: nodes, GPUs per node, nodes per leaf group and SUs "
                             "per pod must be at least 1")
        if self.nodes_per_su % self.nodes_per_leaf:
            raise InputError(f"cluster shape: {self.nodes_per_leaf} nodes per leaf group do not "
                             f"divide the {self.nodes_per_su} nodes of an SU")
        if any(r < 1 or not r < float("inf") for r in self.ratio):
            raise InputError(f"cluster shape: ratios must be finite and >= 1, got {self.ratio}")

    @property
    def gpus(self) -> int:
        return self.nodes * self.gpus_per_node

    @property
    def nodes_per_pod(self) -> int:
        return self.nodes_per_su * self.sus_per_pod

    def leaf_of(self, node: int) -> int:
        return node // self.nodes_per_leaf

    def su_of(self, node: int) -> int:
        return node // self.nodes_per_su

    def pod_of(self, node: int) -> int:
        return node // self.nodes_per_pod

    def span(self, nodes: list[int]) -> int:
        """Index into SPANS of the smallest domain holding ``nodes``."""
        lo, hi = min(nodes), max(nodes)
        if self.leaf_of(lo) == self.leaf_of(hi):
            return 0
        if self.su_of(lo) == self.su_of(hi):
            return 1
        if self.pod_of(lo) == self.pod_of(hi):
            return 2
        return 3

    def slowdown(self, span: int, comm_fraction: float) -> float:
        """Wall time per unit of work for a job spanning SPANS[span] (1 = no penalty)."""
        return 1.0 + comm_fraction * (self.ratio[span] - 1.0)


def _tier_net(base: Interconnect, oversub: float, extra_hops: int, hop_s: float
              ) -> Interconnect:
    return replace(base, net_busbw=base.net_busbw / oversub,
                   latency_inter_s=base.latency_inter_s + extra_hops * hop_s)


def shape_from_fabric(fab: Fabric, cat: Catalog,
                      allreduce_bytes: float = DEFAULT_ALLREDUCE_BYTES) -> ClusterShape:
    """The scheduling view of a designed fabric, with its fragmentation ratios."""
    sh = fab.shape
    srv = fab.server
    gpn = srv.gpus // srv.hosts
    # Leaf groups must tile the SU; an uneven split is treated as one group per SU.
    lpr = sh.leaves_per_rail_su
    per_leaf = sh.su_hosts // lpr if sh.su_hosts % lpr == 0 else sh.su_hosts
    # One tier has no uplinks to contend for: every host is one hop from every other.
    leaf_os = max(1.0, min(per_leaf, sh.leaf.down) / sh.leaf.up) if sh.leaf.up else 1.0
    spine_os = max(1.0, sh.spine.oversubscription) if sh.tiers == 3 else 1.0
    hop_s = (fab.backend.switch.latency_ns or 0.0) * 1e-9
    gpu = cat.gpu(srv.gpu)
    base = net_for(cat, gpu, cat.stack_for_gpu(gpu.id), srv)
    nets = (
        base,
        _tier_net(base, 1.0, 0, hop_s),  # more leaf groups in one SU: same rail leaves' tier
        _tier_net(base, leaf_os, 2, hop_s),
        _tier_net(base, leaf_os * spine_os, 4, hop_s),
    )
    if sh.leaves_per_rail_su > 1:
        # Leaf groups of one SU meet at the spines too.
        nets = (nets[0], _tier_net(base, leaf_os, 2, hop_s), nets[2], nets[3])
    domains = (per_leaf, sh.su_hosts, sh.su_hosts * sh.sus_per_pod, sh.hosts)
    ratios: list[float] = []
    for level, net in enumerate(nets):
        n = min(sh.hosts, 2 * domains[max(0, level - 1)]) * gpn
        t_local = float(allreduce_s(allreduce_bytes, n, 1, base))
        t = float(allreduce_s(allreduce_bytes, n, 1, net))
        # A wider span never helps: keep the ratios non-decreasing (the closed form's ring/tree
        # choice can make a larger group's ratio a little smaller at the same oversubscription).
        ratios.append(max(t / t_local if t_local > 0 else 1.0, ratios[-1] if ratios else 1.0))
    return ClusterShape(
        nodes=sh.hosts, gpus_per_node=gpn, nodes_per_leaf=per_leaf, nodes_per_su=sh.su_hosts,
        sus_per_pod=sh.sus_per_pod, server=srv.id, gpu=gpu.id,
        ratio=(1.0, ratios[1], ratios[2], ratios[3]),
    )


def cluster_shape(cat: Catalog, server: str, nodes: int, oversubscription: float = 1.0,
                  allreduce_bytes: float = DEFAULT_ALLREDUCE_BYTES) -> ClusterShape:
    """Design the fabric for ``nodes`` servers and return its scheduling view."""
    fab = design_fabric(
        FabricRequest(server=server, nodes=nodes, oversubscription=oversubscription), cat
    )
    return shape_from_fabric(fab, cat, allreduce_bytes)


def simple_shape(nodes: int, gpus_per_node: int = 8, nodes_per_su: int = 32,
                 sus_per_pod: int = 4, nodes_per_leaf: int | None = None,
                 ratio: tuple[float, float, float, float] = (1.0, 1.0, 1.0, 1.0)
                 ) -> ClusterShape:
    """A hand-made shape (tests, what-ifs) without designing a fabric."""
    return ClusterShape(
        nodes=nodes, gpus_per_node=gpus_per_node,
        nodes_per_leaf=nodes_per_leaf or nodes_per_su, nodes_per_su=nodes_per_su,
        sus_per_pod=sus_per_pod, ratio=ratio,
    )
