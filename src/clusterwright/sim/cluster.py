"""Discrete-event simulation of a job mix on a designed cluster (the scheduling twin).

What happens, on the shared engine (``sim.engine``: a heap of (time, seq) callbacks; the cluster
needs only a few events per job, so the general engine is fast enough and no specialised loop
is used):

- gang jobs (``train``, ``finetune``) take whole nodes, all at once, and wait in one queue
  ordered by the policy: ``fifo`` (submit order, the head blocks), ``backfill`` (EASY: the head
  gets a reservation at the earliest time enough nodes free up; later jobs start now if they
  end before it or use only nodes the head will not need; runtimes are known exactly) and
  ``priority`` (larger priority first; a blocked job preempts strictly lower-priority gangs,
  which lose the work since their last checkpoint and are requeued; behind a head that still
  cannot start, EASY backfill as above);
- placement: first free nodes by index (Slurm's node order) or, ``topology_aware``, the
  smallest fabric domain with room (leaf group, then SU, then pod; best fit among domains).
  A job spanning a larger domain runs ``ClusterShape.slowdown`` times longer;
- inference services hold replicas of whole nodes; the demanded count follows a day curve
  (cosine between ``night_fraction`` and the peak at ``peak_hour``), re-evaluated hourly.
  Services are served before queued jobs; under ``priority`` they preempt lower-priority gangs
  (a shared pool: replicas shrink at night, fine-tuning fills the nodes, and is checkpointed
  and preempted in the morning);
- ``mig`` jobs take one MIG GPU instance; a free node switches to MIG mode when no MIG node has
  room and back when its last instance ends (``model.mig`` placement rules);
- node failures (Poisson, a rate per node-hour) kill what runs on the node (gangs restart from
  their last checkpoint after ``restart_s``), the node is repaired after ``repair_s``;
- a rolling firmware upgrade drains ``batch_nodes`` nodes at a time: running work may finish
  until ``drain_timeout_s``, then it is checkpointed and requeued; each node is out for
  ``batch_s``; the next batch starts when the last node of this one is back.

What it takes and returns is in ``sim/cluster_config.py``; the node pool, placement and
preemption choices in ``sim/cluster_nodes.py``.
"""

from __future__ import annotations

import bisect
import dataclasses
import math
from collections.abc import Sequence

import numpy as np

from clusterwright.catalog.schema import MigProfile
from clusterwright.model import mig
from clusterwright.sim.cluster_config import (
    LLAMA3_FAILURES_PER_GPU_HOUR,
    POLICIES,
    ClusterConfig,
    ClusterResult,
    Upgrade,
    check_run,
)
from clusterwright.sim.cluster_jobs import HOUR, Job
from clusterwright.sim.cluster_nodes import (
    BUSY,
    DOWN,
    FREE,
    MIGMODE,
    UPGRADING,
    FreeNodes,
    MigNode,
    MigQueue,
    Run,
    Service,
    mig_slot,
    preemption_victims,
    reservation,
)
from clusterwright.sim.cluster_shape import ClusterShape
from clusterwright.sim.engine import Engine


class _Cluster:
    """The simulation state; ``simulate`` is the public entry."""

    def __init__(self, shape: ClusterShape, jobs: list[Job], cfg: ClusterConfig,
                 mig_profiles: Sequence[MigProfile]) -> None:
        self.s = shape
        self.cfg = cfg
        self.jobs = jobs
        self.eng = Engine(cfg.seed)
        fail_ss, _ = np.random.SeedSequence(cfg.seed).spawn(2)
        self.rng = np.random.default_rng(fail_ss)
        self.profiles = mig.profiles_by_name(mig_profiles)
        n = shape.nodes
        self.status = bytearray(n)
        self.drain = bytearray(n)
        self.owner: list[Run | MigNode | None] = [None] * n
        self.pool = FreeNodes(shape, cfg.topology_aware)
        self.queue: list[tuple[tuple[float, float, int], int]] = []
        self.mig_queue = MigQueue()
        self.mig_nodes: dict[int, MigNode] = {}
        self.runs: dict[int, Run] = {}  # gang job index -> run
        self.services = [Service(j) for j in jobs if j.kind == "inference"]
        self._svc_of = {id(sv.job): sv for sv in self.services}
        self._index = {id(j): i for i, j in enumerate(jobs)}
        self._pass_pending = False
        self._short: set[int] = set()  # services that may run fewer replicas than demanded
        self._svc_index = {id(sv): k for k, sv in enumerate(self.services)}
        # Accounting: GPU counts that change stepwise, integrated over time.
        self.last_t = 0.0
        self.busy = 0.0
        self.down = 0
        self.upgrading = 0
        self.busy_gpu_s = self.down_gpu_s = self.upgrade_gpu_s = 0.0
        self.lost_failure = self.lost_preempt = self.lost_upgrade = 0.0
        self.preemptions = self.failures = 0
        self.samples_h: list[float] = []
        self.util_samples: list[float] = []
        self.stranded: list[float] = []
        self.span_counts = [0, 0, 0, 0]
        self.gang_starts = self.mig_starts = 0
        self.up_started: float | None = None
        self.up_done: float | None = None
        self.up_max_out = 0
        self.up_stops = 0
        self.up_pending: set[int] = set()
        self.n_drain = 0  # nodes drained or upgrading now (at most one batch)
        self.log: list[tuple[float, str, str]] = []

    # ------------------------------------------------------------------ accounting
    def _integrate(self) -> None:
        now = self.eng.now
        dt = now - self.last_t
        if dt > 0:
            self.busy_gpu_s += self.busy * dt
            self.down_gpu_s += self.down * self.s.gpus_per_node * dt
            self.upgrade_gpu_s += self.upgrading * self.s.gpus_per_node * dt
            self.last_t = now

    # ------------------------------------------------------------------ node pool
    def _release(self, node: int) -> None:
        """A node whose work ended: back to the pool, or into its pending upgrade."""
        self.owner[node] = None
        if self.drain[node]:
            self._begin_upgrade(node)
        else:
            self.status[node] = FREE
            self.pool.give(node)

    # ------------------------------------------------------------------ gang jobs
    def _key(self, i: int) -> tuple[float, float, int]:
        j = self.jobs[i]
        if self.cfg.policy == "priority":
            return (-float(j.priority), j.submit_s, i)
        return (0.0, j.submit_s, i)

    def _enqueue(self, i: int) -> None:
        bisect.insort(self.queue, (self._key(i), i))
        self._kick()

    def _start_gang(self, i: int, nodes: list[int], replica: bool = False) -> Run:
        j = self.jobs[i]
        self._integrate()
        span = self.s.span(nodes)
        slow = self.s.slowdown(span, j.comm_fraction)
        overhead = self.cfg.restart_s if (j.done_s > 0 or j.preemptions or j.failures) else 0.0
        run = Run(j, nodes, self.eng.now, overhead, slow, replica=replica)
        for nd in nodes:
            self.pool.take(nd)
            self.status[nd] = BUSY
            self.owner[nd] = run
        self.busy += len(nodes) * self.s.gpus_per_node
        if j.first_start_s < 0:
            j.first_start_s = self.eng.now
        if replica:
            return run
        self.span_counts[span] += 1
        self.gang_starts += 1
        self.log.append((self.eng.now, "start", j.id))
        wall = overhead + (j.duration_s - j.done_s) * slow
        run.end_ev = self.eng.after(wall, self._finish_gang, i)
        self.runs[i] = run
        return run

    def _free_run(self, run: Run) -> None:
        self._integrate()
        self.busy -= len(run.nodes) * self.s.gpus_per_node
        for nd in run.nodes:
            if self.status[nd] == BUSY:
                self._release(nd)

    def _finish_gang(self, i: int) -> None:
        run = self.runs.pop(i)
        j = self.jobs[i]
        j.done_s = j.duration_s
        j.end_s = self.eng.now
        self.log.append((self.eng.now, "end", j.id))
        self._free_run(run)
        self._kick()

    def _stop_gang(self, i: int, why: str, down_node: int = -1) -> None:
        """Stop a running gang: ``failure`` and ``preempt`` keep the last checkpoint,
        ``drain`` checkpoints on stop (the operator saves before an upgrade)."""
        run = self.runs.pop(i)
        assert run.end_ev is not None
        run.end_ev.cancel()
        j = self.jobs[i]
        elapsed = self.eng.now - run.start_s
        useful_wall = max(0.0, elapsed - run.overhead_s)
        kept_wall = useful_wall if why == "drain" else \
            math.floor(useful_wall / j.checkpoint_s) * j.checkpoint_s
        j.done_s = min(j.duration_s, j.done_s + kept_wall / run.slowdown)
        lost = (elapsed - kept_wall) * len(run.nodes) * self.s.gpus_per_node
        self.log.append((self.eng.now, why, j.id))
        if why == "failure":
            self.lost_failure += lost
            j.failures += 1
        elif why == "preempt":
            self.lost_preempt += lost
            self.preemptions += 1
            j.preemptions += 1
        else:
            self.lost_upgrade += lost
            self.up_stops += 1
            j.preemptions += 1
        if down_node >= 0:
            self._integrate()
            run.nodes = [nd for nd in run.nodes if nd != down_node]
            self.busy -= self.s.gpus_per_node
        self._free_run(run)
        self._enqueue(i)

    def _stop_replica(self, run: Run, down_node: int = -1) -> None:
        """Stop one inference replica (its service is short until it is placed again)."""
        sv = self._svc_of[id(run.job)]
        sv.account(self.eng.now)
        sv.replicas.remove(run)
        self._short_of(sv)
        if down_node >= 0:
            self._integrate()
            self.busy -= self.s.gpus_per_node
            run.nodes = [x for x in run.nodes if x != down_node]
        self._free_run(run)

    def _submit(self, i: int) -> None:
        j = self.jobs[i]
        if j.kind == "inference":
            sv = self._svc_of[id(j)]
            sv.active = True
            sv.last_s = self.eng.now
            sv.demand = sv.demand_at(self.eng.now, self.cfg.peak_hour)
            self._short_of(sv)
            self.eng.after(j.duration_s, self._retire, sv)
            self._kick()
        elif j.kind == "mig":
            self._mig_enqueue(i)
            self._kick()
        else:
            self._enqueue(i)

    # ------------------------------------------------------------------ services
    def _hourly(self) -> None:
        for sv in self.services:
            if sv.active:
                sv.account(self.eng.now)
                sv.demand = sv.demand_at(self.eng.now, self.cfg.peak_hour)
                while len(sv.replicas) > sv.demand:
                    self._free_run(sv.replicas.pop())
                if len(sv.replicas) < sv.demand:
                    self._short_of(sv)
        self._sample()
        self._kick()
        if self.eng.now + self.cfg.sample_s <= self.cfg.horizon_s:
            self.eng.after(self.cfg.sample_s, self._hourly)

    def _retire(self, sv: Service) -> None:
        sv.account(self.eng.now)
        sv.active = False
        sv.job.end_s = self.eng.now
        while sv.replicas:
            self._free_run(sv.replicas.pop())
        self._kick()

    def _preempt_for(self, n: int, priority: int) -> bool:
        """Preempt strictly lower-priority gangs (lowest priority, latest start first) until
        ``n`` nodes are free; False (and nothing preempted) if they cannot free enough."""
        if self.cfg.policy != "priority":
            return False
        chosen = preemption_victims(list(self.runs.values()), n - self.pool.free, priority)
        if chosen is None:
            return False
        for r in chosen:
            self._stop_gang(self._index[id(r.job)], "preempt")
        return True

    def _short_of(self, sv: Service) -> None:
        self._short.add(self._svc_index[id(sv)])

    def _serve(self) -> None:
        if not self._short or (self.pool.free == 0 and self.cfg.policy != "priority"):
            return  # nothing to place, or nowhere to place it without preemption
        for k in sorted(self._short):
            sv = self.services[k]
            if not sv.active or len(sv.replicas) >= sv.demand:
                self._short.discard(k)
                continue
            while len(sv.replicas) < sv.demand:
                need = sv.job.nodes
                nodes = self.pool.pick(need)
                if nodes is None and self._preempt_for(need, sv.job.priority):
                    nodes = self.pool.pick(need)
                if nodes is None:
                    sv.peak_unmet = max(sv.peak_unmet, sv.demand - len(sv.replicas))
                    break
                sv.account(self.eng.now)
                sv.replicas.append(self._start_gang(self._index[id(sv.job)], nodes, True))

    # ------------------------------------------------------------------ MIG
    def _mig_enqueue(self, i: int, front: bool = False) -> None:
        self.mig_queue.push(i, self.jobs[i].mig_profile, front)

    def _mig_place(self, i: int) -> bool:
        j = self.jobs[i]
        prof = self.profiles[j.mig_profile]
        slot = mig_slot(self.mig_nodes.values(), prof, self.drain)
        if slot is not None:
            self._mig_start(i, *slot)
            return True
        picked = self.pool.pick(1)
        if picked is None:
            return False
        nd = picked[0]
        self.pool.take(nd)
        self.status[nd] = MIGMODE
        mn = MigNode(nd, [mig.Layout() for _ in range(self.s.gpus_per_node)])
        self.owner[nd] = mn
        self.mig_nodes[nd] = mn
        start = mig.best_start(mn.layouts[0], prof)
        assert start is not None  # every profile fits an empty GPU
        self._mig_start(i, mn, 0, start)
        return True

    def _mig_start(self, i: int, mn: MigNode, g: int, start: int) -> None:
        j = self.jobs[i]
        prof = self.profiles[j.mig_profile]
        self._integrate()
        mn.layouts[g] = mig.create(mn.layouts[g], prof, start)
        self.busy += prof.compute_slices / mig.COMPUTE_SLICES
        if j.first_start_s < 0:
            j.first_start_s = self.eng.now
        ev = self.eng.after(j.duration_s, self._mig_end, i, mn)
        mn.jobs[i] = (g, start, ev)
        self.mig_starts += 1

    def _mig_remove(self, i: int, mn: MigNode) -> None:
        g, start, ev = mn.jobs.pop(i)
        ev.cancel()
        prof = self.profiles[self.jobs[i].mig_profile]
        self._integrate()
        mn.layouts[g] = mig.destroy(mn.layouts[g], prof, start)
        self.busy -= prof.compute_slices / mig.COMPUTE_SLICES

    def _mig_end(self, i: int, mn: MigNode) -> None:
        self._mig_remove(i, mn)
        j = self.jobs[i]
        j.end_s = self.eng.now
        j.done_s = j.duration_s
        if not mn.jobs:
            del self.mig_nodes[mn.node]
            self._release(mn.node)
        self._kick()

    def _mig_evict(self, mn: MigNode) -> list[int]:
        """Kill every instance on a MIG node (the jobs restart from scratch)."""
        killed = sorted(mn.jobs)
        for i in killed:
            self._mig_remove(i, mn)
        del self.mig_nodes[mn.node]
        return killed

    # ------------------------------------------------------------------ scheduling pass
    def _kick(self) -> None:
        if not self._pass_pending:
            self._pass_pending = True
            self.eng.after(0.0, self._pass)

    def _pass(self) -> None:
        self._pass_pending = False
        self._serve()
        if self.mig_queue.jobs:
            self.mig_queue.place(lambda i: self.jobs[i].mig_profile, self._mig_place,
                                 self.cfg.policy == "fifo")
        self._schedule_gangs()

    def _schedule_gangs(self) -> None:
        q = self.queue
        while q:
            i = q[0][1]
            j = self.jobs[i]
            nodes = self.pool.pick(j.nodes)
            if nodes is None and self._preempt_for(j.nodes, j.priority):
                nodes = self.pool.pick(j.nodes)
            if nodes is None:
                break
            q.pop(0)
            self._start_gang(i, nodes)
        if q and self.cfg.policy != "fifo":
            self._backfill()

    def _backfill(self) -> None:
        """EASY backfill: the head's reservation is the earliest time enough nodes free up
        (running gangs end at their known end times); a later job starts now if it ends
        before then or fits in the nodes the head will not need (``extra``)."""
        head = self.jobs[self.queue[0][1]]
        shadow, extra = reservation(head.nodes, self.pool.free, self.runs.values())
        k = 1
        depth = min(len(self.queue), self.cfg.backfill_depth + 1)
        while k < depth and self.pool.free > 0:
            i = self.queue[k][1]
            j = self.jobs[i]
            restart = self.cfg.restart_s if j.done_s > 0 or j.preemptions or j.failures else 0.0
            fastest = self.eng.now + restart + (j.duration_s - j.done_s)  # slowdown >= 1
            if j.nodes > self.pool.free or (fastest > shadow and j.nodes > extra):
                k += 1
                continue
            nodes = self.pool.pick(j.nodes)
            assert nodes is not None
            slow = self.s.slowdown(self.s.span(nodes), j.comm_fraction)
            ends = self.eng.now + restart + (j.duration_s - j.done_s) * slow
            if ends <= shadow or j.nodes <= extra:
                if ends > shadow:
                    extra -= j.nodes
                self.queue.pop(k)
                depth -= 1
                self._start_gang(i, nodes)
            else:
                k += 1

    # ------------------------------------------------------------------ failures
    def _fail_rate(self) -> float:
        r = self.cfg.failure_rate_per_node_hour
        if r is None:
            r = LLAMA3_FAILURES_PER_GPU_HOUR * self.s.gpus_per_node
        return r * self.s.nodes / HOUR  # per second, whole cluster

    def _next_failure(self) -> None:
        rate = self._fail_rate()
        if rate > 0:
            self.eng.after(float(self.rng.exponential(1.0 / rate)), self._failure)

    def _failure(self) -> None:
        self._next_failure()
        self._fail_node(int(self.rng.integers(self.s.nodes)))

    def _fail_node(self, nd: int) -> None:
        st = self.status[nd]
        if st in (DOWN, UPGRADING):
            return  # thinning: the rate is per node in service
        self.failures += 1
        owner = self.owner[nd]
        if st == BUSY and isinstance(owner, Run):
            if owner.replica:
                self._stop_replica(owner, down_node=nd)
            else:
                self._stop_gang(self._index[id(owner.job)], "failure", down_node=nd)
        elif st == MIGMODE and isinstance(owner, MigNode):
            for i in self._mig_evict(owner):
                self._mig_enqueue(i, front=True)
                self.jobs[i].failures += 1
        else:
            self.pool.take(nd)
        self._integrate()
        self.status[nd] = DOWN
        self.owner[nd] = None
        self.down += 1
        self.eng.after(self.cfg.repair_s, self._repaired, nd)
        self._kick()

    def _repaired(self, nd: int) -> None:
        self._integrate()
        self.down -= 1
        self._release(nd)
        self._kick()

    # ------------------------------------------------------------------ rolling upgrade
    def _begin_upgrade(self, nd: int) -> None:
        self._integrate()
        self.status[nd] = UPGRADING
        self.upgrading += 1
        self.eng.after(self.cfg.upgrade.batch_s if self.cfg.upgrade else 0.0, self._upgraded, nd)

    def _upgraded(self, nd: int) -> None:
        self._integrate()
        self.upgrading -= 1
        self.drain[nd] = 0
        self.up_pending.discard(nd)
        self.n_drain -= 1
        self.status[nd] = FREE
        self.pool.give(nd)
        if not self.up_pending:
            self._next_batch()
        self._kick()

    def _start_rollout(self) -> None:
        self.up_started = self.eng.now
        u = self.cfg.upgrade
        assert u is not None
        self._up_order = list(range(min(self.s.nodes, u.nodes or self.s.nodes)))
        self._up_pos = 0
        self._next_batch()

    def _next_batch(self) -> None:
        u = self.cfg.upgrade
        assert u is not None
        batch = self._up_order[self._up_pos:self._up_pos + u.batch_nodes]
        self._up_pos += len(batch)
        if not batch:
            self.up_done = self.eng.now
            return
        self.up_pending = set(batch)
        for nd in batch:
            self.drain[nd] = 1
            self.n_drain += 1
            self.up_max_out = max(self.up_max_out, self.n_drain)
            st = self.status[nd]
            if st == FREE:
                self.pool.take(nd)
                self._begin_upgrade(nd)
            elif st == MIGMODE:
                mn = self.mig_nodes[nd]
                if not mn.jobs:
                    del self.mig_nodes[nd]
                    self._release(nd)
        self.eng.after(u.drain_timeout_s, self._drain_timeout, tuple(batch))

    def _drain_timeout(self, batch: tuple[int, ...]) -> None:
        for nd in batch:
            if nd not in self.up_pending:
                continue
            owner = self.owner[nd]
            if self.status[nd] == BUSY and isinstance(owner, Run):
                if owner.replica:
                    self._stop_replica(owner)
                else:
                    self._stop_gang(self._index[id(owner.job)], "drain")
            elif self.status[nd] == MIGMODE and isinstance(owner, MigNode):
                for i in self._mig_evict(owner):
                    self._mig_enqueue(i, front=True)
                self._release(nd)
        self._kick()

    # ------------------------------------------------------------------ samples, run
    def _sample(self) -> None:
        self._integrate()
        self.samples_h.append(self.eng.now / HOUR)
        self.util_samples.append(self.busy / self.s.gpus)
        stranded = 0.0
        if self.queue:
            head = self.jobs[self.queue[0][1]]
            if head.nodes > self.pool.free:
                stranded = self.pool.free * self.s.gpus_per_node / self.s.gpus
        self.stranded.append(stranded)

    def run(self) -> ClusterResult:
        for i, j in enumerate(self.jobs):
            if j.submit_s < self.cfg.horizon_s:
                self.eng.at(j.submit_s, self._submit, i)
        self.eng.at(0.0, self._hourly)
        self._next_failure()
        for t, nd in self.cfg.failures_at:
            if t < self.cfg.horizon_s:
                self.eng.at(t, self._fail_node, nd)
        if self.cfg.upgrade is not None and self.cfg.upgrade.start_s < self.cfg.horizon_s:
            self.eng.at(self.cfg.upgrade.start_s, self._start_rollout)
        self.eng.run(until=self.cfg.horizon_s)
        self.eng.now = self.cfg.horizon_s
        self._integrate()
        for sv in self.services:
            sv.account(self.eng.now)
        return ClusterResult(
            shape=self.s, config=self.cfg, jobs=self.jobs, services=self.services,
            events=self.eng.events, busy_gpu_s=self.busy_gpu_s, down_gpu_s=self.down_gpu_s,
            upgrade_gpu_s=self.upgrade_gpu_s, lost_failure_gpu_s=self.lost_failure,
            lost_preemption_gpu_s=self.lost_preempt, lost_upgrade_gpu_s=self.lost_upgrade,
            preemptions=self.preemptions, failures=self.failures, samples_h=self.samples_h,
            util_samples=self.util_samples, stranded_samples=self.stranded,
            span_counts=self.span_counts, gang_starts=self.gang_starts,
            mig_starts=self.mig_starts, upgrade_started_s=self.up_started,
            upgrade_done_s=self.up_done, upgrade_max_out=self.up_max_out,
            upgrade_stops=self.up_stops, log=self.log,
        )


def simulate(shape: ClusterShape, jobs: Sequence[Job], cfg: ClusterConfig,
             mig_profiles: Sequence[MigProfile] = ()) -> ClusterResult:
    """Run the job mix on the cluster for ``cfg.horizon_s`` seconds. ``jobs`` are copied (the
    caller's list is not changed); seeded and reproducible."""
    check_run(shape, jobs, cfg, mig_profiles)
    fresh = [dataclasses.replace(j, extra=dict(j.extra)) for j in jobs]
    return _Cluster(shape, fresh, cfg, mig_profiles).run()


# The twin's API: ``simulate``, what it takes and returns, and the policies it runs.
__all__ = ["POLICIES", "ClusterConfig", "ClusterResult", "Upgrade", "simulate"]
