"""The cluster's nodes as the scheduling twin (``sim/cluster.py``) holds them: a node's state,
what holds a busy one (a gang run, an inference replica, a node in MIG mode), the free nodes
indexed by fabric domain with the placement policy, the queue of MIG jobs, and the choice of
gangs a higher-priority job preempts.

Units: seconds, nodes.
"""

from __future__ import annotations

import math
from collections import Counter, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from clusterwright.catalog.schema import MigProfile
from clusterwright.model import mig
from clusterwright.sim.cluster_jobs import HOUR, Job
from clusterwright.sim.cluster_shape import ClusterShape
from clusterwright.sim.engine import Event

# A node's state (one byte per node in the simulator's status array).
FREE, BUSY, DOWN, UPGRADING, MIGMODE = 0, 1, 2, 3, 4


@dataclass(slots=True)
class Run:
    """Nodes held by one gang job or one inference replica."""

    job: Job
    nodes: list[int]
    start_s: float
    overhead_s: float  # restart time before progress begins
    slowdown: float
    end_ev: Event | None = None
    replica: bool = False


@dataclass(slots=True)
class MigNode:
    """A node in MIG mode: one instance layout per GPU and the MIG jobs running on it."""

    node: int
    layouts: list[mig.Layout]
    jobs: dict[int, tuple[int, int, Event]] = field(default_factory=dict)  # job idx: gpu, start


@dataclass(slots=True)
class Service:
    """An inference service: its running replicas, the replicas demanded now, and how well
    it was served (seconds, replica-seconds)."""

    job: Job
    replicas: list[Run] = field(default_factory=list)
    demand: int = 0
    active: bool = False
    last_s: float = 0.0
    total_s: float = 0.0
    ok_s: float = 0.0
    demanded_replica_s: float = 0.0
    served_replica_s: float = 0.0
    peak_unmet: int = 0

    def account(self, now: float) -> None:
        """Add the time since the last call to the service's totals (seconds, replica-s)."""
        dt = now - self.last_s
        if dt > 0 and self.active:
            running = len(self.replicas)
            self.total_s += dt
            if running >= self.demand:
                self.ok_s += dt
            self.demanded_replica_s += self.demand * dt
            self.served_replica_s += min(running, self.demand) * dt
        self.last_s = now

    def demand_at(self, now: float, peak_hour: float) -> int:
        """Replicas demanded at ``now`` (s): a cosine day curve between ``night_fraction``
        of the peak and the peak at ``peak_hour``."""
        j = self.job
        hour = (now / HOUR) % 24.0
        f = j.night_fraction + (1 - j.night_fraction) * 0.5 * (
            1 + math.cos(2 * math.pi * (hour - peak_hour) / 24.0))
        return math.ceil(j.replicas * f - 1e-9)



def mig_slot(nodes: Iterable[MigNode], prof: MigProfile, draining: bytearray
             ) -> tuple[MigNode, int, int] | None:
    """The first (node, GPU, start slice) among nodes in MIG mode where an instance of
    ``prof`` fits; a draining node takes no new work."""
    for mn in nodes:
        if draining[mn.node]:
            continue
        for g, lay in enumerate(mn.layouts):
            if lay.compute_used + prof.compute_slices > mig.COMPUTE_SLICES:
                continue
            start = mig.best_start(lay, prof)
            if start is not None:
                return mn, g, start
    return None

class FreeNodes:
    """Free nodes by leaf group, SU and pod; ``pick`` places a gang (first free nodes in
    Slurm's order, or ``topology_aware``: the smallest fabric domain with room)."""

    def __init__(self, shape: ClusterShape, topology_aware: bool) -> None:
        self.s = shape
        self.topology_aware = topology_aware
        n = shape.nodes
        self.leaves = (n + shape.nodes_per_leaf - 1) // shape.nodes_per_leaf
        self.free_leaf: list[set[int]] = [set() for _ in range(self.leaves)]
        for i in range(n):
            self.free_leaf[shape.leaf_of(i)].add(i)
        self.free_su = [0] * ((n + shape.nodes_per_su - 1) // shape.nodes_per_su)
        self.free_pod = [0] * ((n + shape.nodes_per_pod - 1) // shape.nodes_per_pod)
        for i in range(n):
            self.free_su[shape.su_of(i)] += 1
            self.free_pod[shape.pod_of(i)] += 1
        self.free = n
        # Domain of every node, precomputed: the pool updates run on every start and end.
        self.leaf_of = [shape.leaf_of(i) for i in range(n)]
        self.su_of = [shape.su_of(i) for i in range(n)]
        self.pod_of = [shape.pod_of(i) for i in range(n)]

    def take(self, node: int) -> None:
        self.free_leaf[self.leaf_of[node]].discard(node)
        self.free_su[self.su_of[node]] -= 1
        self.free_pod[self.pod_of[node]] -= 1
        self.free -= 1

    def give(self, node: int) -> None:
        self.free_leaf[self.leaf_of[node]].add(node)
        self.free_su[self.su_of[node]] += 1
        self.free_pod[self.pod_of[node]] += 1
        self.free += 1

    def pick(self, n: int) -> list[int] | None:
        """Free nodes for a gang of ``n``, or None if fewer are free."""
        if n > self.free:
            return None
        s = self.s
        if not self.topology_aware:
            out: list[int] = []
            for group in self.free_leaf:
                if group:
                    out.extend(sorted(group)[: n - len(out)])
                    if len(out) == n:
                        return out
            return None
        # Smallest domain with room; among those the fullest (best fit keeps big holes whole).
        leaf_counts = [len(g) for g in self.free_leaf]
        for counts, size in ((leaf_counts, s.nodes_per_leaf), (self.free_su, s.nodes_per_su),
                             (self.free_pod, s.nodes_per_pod)):
            best = -1
            for d, c in enumerate(counts):
                if c >= n and (best < 0 or c < counts[best]):
                    best = d
            if best >= 0:
                lo = best * size // s.nodes_per_leaf
                hi = min(self.leaves, (best + 1) * size // s.nodes_per_leaf)
                return self._fill(range(lo, hi), n)
        return self._fill(range(self.leaves), n)

    def _fill(self, leaf_ids: range, n: int) -> list[int]:
        """Take ``n`` nodes from these leaf groups, emptiest pods/SUs/leaves first so the job
        spans as few domains as possible."""
        per = self.s.nodes_per_leaf
        pods, sus, leaves = self.pod_of, self.su_of, self.free_leaf

        def key(g: int) -> tuple[int, int, int, int]:
            first = g * per
            return (-self.free_pod[pods[first]], -self.free_su[sus[first]], -len(leaves[g]), g)

        out: list[int] = []
        for g in (leaf_ids if len(leaf_ids) == 1 else sorted(leaf_ids, key=key)):
            if self.free_leaf[g]:
                out.extend(sorted(self.free_leaf[g])[: n - len(out)])
                if len(out) == n:
                    break
        return out


class MigQueue:
    """MIG jobs waiting for an instance, in order, with how many wait per profile."""

    def __init__(self) -> None:
        self.jobs: deque[int] = deque()
        self.queued: Counter[str] = Counter()

    def push(self, i: int, profile: str, front: bool = False) -> None:
        if front:
            self.jobs.appendleft(i)
        else:
            self.jobs.append(i)
        self.queued[profile] += 1

    def place(self, profile_of: Callable[[int], str], place: Callable[[int], bool],
              fifo: bool) -> None:
        """Try the queued jobs in order with ``place``; under ``fifo`` the first miss stops.

        A profile that found no slice stays unplaceable for the rest of the pass (the pass
        only takes capacity): its later jobs are not tried again, and once every queued
        profile is full the pass stops. Without this a backlog costs queue x MIG nodes x GPUs
        per pass."""
        waiting: deque[int] = deque()
        full: set[str] = set()
        while self.jobs:
            if len(full) == len(self.queued):
                break
            i = self.jobs.popleft()
            profile = profile_of(i)
            if profile in full:
                waiting.append(i)
                continue
            if place(i):
                self.queued[profile] -= 1
                if not self.queued[profile]:
                    del self.queued[profile]
                continue
            full.add(profile)
            waiting.append(i)
            if fifo:
                break
        waiting.extend(self.jobs)
        self.jobs = waiting


def preemption_victims(runs: list[Run], need: int, priority: int) -> list[Run] | None:
    """Gangs of strictly lower priority to stop so that ``need`` more nodes are free, or None
    when all of them together would not free enough."""
    victims = sorted((r for r in runs if r.job.priority < priority),
                     key=lambda r: (r.job.priority, -r.start_s))
    if need > sum(len(r.nodes) for r in victims):
        return None
    chosen: list[Run] = []
    while need > 0:
        # Lowest priority first; within it, the smallest job that covers what is still
        # missing (one whole 256-node gang is not stopped for one replica), else the
        # latest started (least work since its start).
        low = victims[0].job.priority
        level = [r for r in victims if r.job.priority == low]
        covering = [r for r in level if len(r.nodes) >= need]
        r = min(covering, key=lambda r: (len(r.nodes), -r.start_s)) if covering else level[0]
        victims.remove(r)
        chosen.append(r)
        need -= len(r.nodes)
    return chosen


def reservation(nodes: int, free: int, runs: Iterable[Run]) -> tuple[float, int]:
    """EASY backfill's reservation for a head job of ``nodes``: the earliest time (s) enough
    nodes are free as running gangs end at their known end times, and the nodes free then
    beyond the head's (``extra``); (inf, 0) when the running gangs never free enough."""
    avail = free
    for r in sorted(runs, key=lambda r: r.end_ev.time if r.end_ev else 0.0):
        avail += len(r.nodes)
        if avail >= nodes:
            return (r.end_ev.time if r.end_ev else math.inf), avail - nodes
    return math.inf, 0
