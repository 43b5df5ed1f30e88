"""What the as-built differences cost, in GPU-hours lost per day, and how bad each is.

Three models, each the one the rest of Clusterwright uses:

- **Capacity** (nodes that cannot run: out of service, a GPU or NVLinks missing, wrong
  NVLink domain, a backend cable missing; on a routed Ethernet backend also a host cable on
  the wrong leaf, whose /31 no longer matches). Such a node is drained: its GPUs are lost
  (GPUs x 24 h). When the blueprint's training job needs more GPUs than are left, the job
  shrinks to whole model-parallel replicas (tp x pp x cp GPUs each) and the GPUs that no
  longer make a replica are lost too. The scheduling twin (``sim/cluster``) then runs the
  blueprint's cluster with and without the drained nodes on the same seeded job mix and
  reports the utilization, queueing and fragmentation difference.
- **Network** (fabric cables missing or miswired, links at the wrong rate): the network
  simulator is run through its public entry point (``sim.netsim.run_netsim``) on the
  blueprint's fabric with the as-built faults as ``failures`` (a missing cable; a miswired
  cable's planned cables, which carry nothing they should: on a routed fabric the /31s no
  longer match, on InfiniBand the subnet manager routes over the cable to the wrong switch,
  so the figure is an upper bound there) and ``degraded`` links (rate / planned rate). The
  collective is the blueprint job's data-parallel all-reduce: one job per pipeline stage
  over that stage's GPUs, contiguous, as Megatron places them (1 GB per rank, ECMP). Its
  slowdown scales the job's data-parallel communication in the training step model
  (``design.train.estimate_layout`` with ``dp_comm_factor``), giving the as-built step
  time. Faults of one class (tier, and failed or the same rate) are simulated once on a
  representative and the result applied to each; all faults together are simulated once
  for the total.
- **Placement** (a node grouped in the wrong scalable unit by the scheduler, or cabled into
  another one; on InfiniBand a rail swap): a job the scheduler keeps inside one SU then
  crosses the spines. The scheduling twin's closed-form fragmentation ratio
  (``sim/cluster_shape``) gives the slowdown of such a job, 1 + c (r - 1), c the job's
  exposed data-parallel share of a step.
- **Slow nodes**: from ``twin/slow.py`` (measured step times, or the SM clock ratio scaled
  by the job's compute share).

Without a training workload in the blueprint (a ``fabric design`` directory), the job is
one job on every GPU with the scheduling twin's default exposed communication share for
training (0.15, ``sim/cluster_jobs.DEFAULT_COMM_FRACTION``) and a compute share of 0.85.

Severity: critical when a node cannot run or the loss is at least 1 % of the cluster's
GPU-hours a day; major for faults that change what runs where or how fast (or lose at
least 0.1 %); minor otherwise (an extra cable, an address that routes anyway).
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections import defaultdict
from typing import Any

from clusterwright.catalog.registry import Catalog
from clusterwright.errors import ClusterwrightError
from clusterwright.twin.blueprint import Plan
from clusterwright.twin.model import KINDS, SEVERITIES, Finding

HOURS = 24.0
DEFAULT_COMM_SHARE = 0.15  # sim/cluster_jobs DEFAULT_COMM_FRACTION["train"] [estimate]
REFERENCE_BYTES = 1e9  # the scheduling twin's reference all-reduce (cluster_shape)
DRAIN_KINDS = ("node_unavailable", "gpu_missing", "nvlink_degraded", "nvlink_domain")
MAJOR_KINDS = ("missing_link", "miswired_link", "rail_swap", "wrong_su", "wrong_speed",
               "wrong_label", "unexpected_asn", "bgp_down", "slow_gpu", "slow_link")
SCHEDULE_DAYS = 7.0
SCHEDULE_JOBS = 300


@dataclasses.dataclass
class Job:
    """The workload the impact is measured on."""

    gpus: int
    step_s: float | None
    model_parallel: int  # GPUs per data-parallel replica
    pp: int
    comm_share: float  # exposed data-parallel communication / step
    compute_share: float
    dp_comm_s: float
    source: str
    workload: dict[str, Any] | None = None


def job_of(plan: Plan) -> Job:
    gpus_cluster = len(plan.hosts) * plan.gpus_per_host
    w = plan.workload
    if w is not None:
        lay = w.get("layout", {})
        tp, pp, cp = (int(lay.get(k, 1) or 1) for k in ("tp", "pp", "cp"))
        step = float(w.get("step_time_s") or 0.0)
        bd = w.get("breakdown", {}) or {}
        comm = w.get("comm_s", {}) or {}
        exposed = float(bd.get("dp_comm_exposed_s", 0.0) or 0.0)
        compute = float(bd.get("compute_s", 0.0) or 0.0)
        if step > 0:
            return Job(gpus=min(int(w.get("gpus", gpus_cluster)), gpus_cluster), step_s=step,
                       model_parallel=max(1, tp * pp * cp), pp=max(1, pp),
                       comm_share=exposed / step, compute_share=compute / step,
                       dp_comm_s=float(comm.get("dp", exposed) or exposed),
                       source=f"blueprint workload {w.get('name', '')} ({w.get('model', '')}, "
                              f"tp {tp} pp {pp} cp {cp}, step {step:.3f} s)", workload=w)
    return Job(gpus=gpus_cluster, step_s=None, model_parallel=plan.gpus_per_host, pp=1,
               comm_share=DEFAULT_COMM_SHARE, compute_share=1 - DEFAULT_COMM_SHARE,
               dp_comm_s=0.0, source="no training workload in the blueprint: one job on every "
               f"GPU, exposed communication share {DEFAULT_COMM_SHARE} (the scheduling twin's "
               "default for training)")


def _pairs(cables: set[tuple[str, str, str, str]]) -> list[tuple[str, str]]:
    """The device pairs of a set of (a, a port, b, b port) cables, ports ignored."""
    return sorted((a, b) for a, _, b, _ in cables)


def _loss(job: Job, step_ratio: float) -> float:
    """GPU-hours a day a job of ``job.gpus`` loses running ``step_ratio`` times slower."""
    return job.gpus * HOURS * (1 - 1 / step_ratio) if step_ratio > 1 else 0.0


class Impact:
    def __init__(self, plan: Plan, cat: Catalog, routing: str = "ecmp", seed: int = 0,
                 simulate: bool = True) -> None:
        self.plan = plan
        self.cat = cat
        self.routing = routing
        self.seed = seed
        self.simulate = simulate
        self.job = job_of(plan)
        self.cluster_gpus = len(plan.hosts) * plan.gpus_per_host
        self.notes: list[str] = []
        self.detail: dict[str, Any] = {"job": self.job.source, "routing": routing}
        self._fabric_req: Any = None
        self._netsim_ok: bool | None = None
        self._baseline: float | None = None
        self._wall = 0.0
        self._placement: tuple[float, str] | None = None
        self._model: Any = None  # (job, layout, step s, estimate_layout) once rebuilt
        self._model_tried = False
        self._last_util: tuple[float, list[str]] = (0.0, [])
        self._rail: dict[tuple[str, str], int] = {}

    # ------------------------------------------------------------------ capacity
    def drained_hosts(self, findings: list[Finding]) -> dict[str, list[Finding]]:
        """Hosts that cannot run in a job, with the findings that take them out."""
        plan = self.plan
        ethernet = plan.protocol == "ethernet"
        out: dict[str, list[Finding]] = defaultdict(list)
        hosts = set(plan.hosts)
        for f in findings:
            if f.kind in DRAIN_KINDS:
                out[f.devices[0]].append(f)
            elif f.kind == "missing_link":
                lk = plan.links[f.links[0]]
                if lk.tier == "node-leaf" and lk.network == "backend":
                    out[lk.a].append(f)
            elif ethernet and f.kind in ("rail_swap", "wrong_su"):
                out[f.devices[0]].append(f)
            elif ethernet and f.kind == "miswired_link":
                for d in f.devices:
                    if d in hosts and any(plan.links[i].tier == "node-leaf" for i in f.links):
                        out[d].append(f)
                        break
        return out

    def shrink_loss(self, drained_gpus: int) -> tuple[float, str]:
        """GPU-hours a day lost when ``drained_gpus`` cannot run: the GPUs themselves, and
        the job's GPUs that no longer make a whole model-parallel replica."""
        job = self.job
        left = self.cluster_gpus - drained_gpus
        if left >= job.gpus:
            return drained_gpus * HOURS, (f"{drained_gpus} GPUs out; the job's {job.gpus} "
                                          f"GPUs still fit in the {left} left")
        m = job.model_parallel
        replicas = left // m
        runs = replicas * m
        lost = self.cluster_gpus - runs
        return lost * HOURS, (f"{drained_gpus} GPUs out; the job ({job.gpus} GPUs, replicas "
                              f"of {m}) shrinks to {replicas} replicas = {runs} GPUs, so "
                              f"{lost} GPUs idle")

    # ------------------------------------------------------------------ network
    def fabric_request(self) -> Any:
        """The blueprint's FabricRequest rebuilt from its summary, checked by re-designing
        it and comparing the backend cables; None (with a note) if it does not match."""
        if self._netsim_ok is not None:
            return self._fabric_req if self._netsim_ok else None
        self._netsim_ok = False
        from clusterwright.design.fabric import design_fabric
        from clusterwright.spec.fabric import FabricRequest

        s = self.plan.summary
        if not s.get("server") or not s.get("nodes") or s.get("backend") == "none":
            self.notes.append("network impact not simulated: the blueprint summary names no "
                              "server, node count or backend fabric")
            return None
        over = s.get("oversubscription", 1.0)
        by_tier = s.get("oversubscription_by_tier") or (over if isinstance(over, dict) else {})
        leaf_os = by_tier.get("leaf", over) if isinstance(by_tier, dict) else over
        spine_os = (by_tier.get("spine") if isinstance(by_tier, dict) else None) or 1.0
        backend = [lk for lk in self.plan.links if lk.network == "backend"]
        rails = len([lk for lk in backend if lk.tier == "node-leaf"]) // max(
            1, len(self.plan.hosts))
        try:
            req = FabricRequest(
                server=str(s["server"]), nodes=int(s["nodes"]), switch=s.get("switch"),
                protocol=s.get("protocol"), oversubscription=float(leaf_os or 1.0),
                spine_oversubscription=float(spine_os), tiers=int(s.get("tiers", 2)) or None,
                su_hosts=s.get("su_hosts"), dual_plane=int(s.get("planes", 1)) > 1,
                rails=rails if self.plan.server is not None and 0 < rails < (
                    self.plan.server.rails) else None,
            )
            fab = design_fabric(req, self.cat)
        except (ClusterwrightError, ValueError, TypeError) as exc:
            self.notes.append(f"network impact not simulated: the blueprint's fabric could "
                              f"not be re-designed from its summary ({exc})")
            return None
        mine = {(lk.a, lk.a_port, lk.b, lk.b_port) for lk in backend}
        theirs = {(lk.a, lk.a_port, lk.b, lk.b_port) for lk in fab.links
                  if lk.network == "backend"}
        if mine != theirs:
            if len(theirs) == len(mine):
                # A design with leaf_uplinks set (the lab's) differs only in which uplink
                # ports are used; the topology the simulator sees is the same.
                if _pairs(mine) != _pairs(theirs):
                    self.notes.append("network impact not simulated: re-designing the "
                                      "blueprint's fabric from its summary gives other "
                                      "cables (a different version or catalog)")
                    return None
            else:
                self.notes.append("network impact not simulated: re-designing the blueprint's "
                                  f"fabric gives {len(theirs)} backend cables, the cabling "
                                  f"plan has {len(mine)}")
                return None
        self._fabric_req = req
        self._rail = {(lk.a, lk.a_port): lk.rail for lk in fab.links if lk.tier == "node-leaf"}
        self._netsim_ok = True
        return req

    def _run(self, failures: list[str], degraded: list[tuple[str, float]]) -> float | None:
        from clusterwright.sim.netsim import NetsimRequest, run_netsim

        req = self.fabric_request()
        if req is None:
            return None
        job = self.job
        gpus = min(job.gpus, self.cluster_gpus)
        jobs = min(job.pp, 32) if gpus // max(1, job.pp) >= 2 else 1
        ranks = gpus // jobs
        t0 = time.perf_counter()
        try:
            data = run_netsim(NetsimRequest(
                fabric=req, collective="allreduce", size_bytes=REFERENCE_BYTES,
                routing=self.routing, seed=self.seed, ranks=ranks, jobs=jobs,
                placement="contiguous", failures=failures, degraded=degraded), self.cat)
        except ClusterwrightError as exc:
            what = ", ".join([*failures[:2], *(n for n, _ in degraded[:2])])
            self.notes.append(f"network simulation failed for {what}: {exc}")
            return None
        finally:
            self._wall += time.perf_counter() - t0
        # ECMP imbalance: how loaded the busiest network link is (1.0 = at its rate for the
        # whole collective), and which links those are.
        self._last_util = (float(data["max_link_utilization"]),
                           [str(x["link"]) for x in data.get("top_links", [])[:3]])
        return float(data["completion_time_s"])

    def _cable_name(self, i: int) -> str | None:
        lk = self.plan.links[i]
        if lk.network != "backend":
            return None
        if lk.tier == "node-leaf":
            rail = self._rail.get((lk.a, lk.a_port))
            return None if rail is None else f"{lk.a}/nic{rail}->{lk.b}"
        return f"{lk.a}->{lk.b}"

    def network_faults(self, f: Finding, drained: set[str]) -> tuple[list[str],
                                                                     list[tuple[str, float]]]:
        """(failed cables, degraded cables) of one finding, as the simulator names them."""
        plan = self.plan
        fails: list[str] = []
        deg: list[tuple[str, float]] = []
        if f.kind in ("missing_link", "miswired_link", "bgp_down"):
            for i in f.links:
                lk = plan.links[i]
                if lk.tier == "node-leaf" or lk.network != "backend":
                    continue
                name = self._cable_name(i)
                if name:
                    fails.append(name)
        elif f.kind == "wrong_speed":
            i = f.links[0]
            lk = plan.links[i]
            name = self._cable_name(i)
            rate = float(f.impact.get("rate_gbps", lk.speed_gbps))
            if name and lk.a not in drained and 0 < rate < lk.speed_gbps:
                deg.append((name, rate / lk.speed_gbps))
        return fails, deg

    def step_ratio(self, coll_ratio: float) -> tuple[float, str]:
        """As-built step / planned step for a data-parallel collective ``coll_ratio`` times
        slower, from the training step model when the blueprint's job rebuilds, else from
        its own breakdown (the hidden part cannot grow, so the extra is exposed)."""
        job = self.job
        if coll_ratio <= 1.0:
            return 1.0, "no slowdown"
        if job.step_s is None:
            r = 1 + job.comm_share * (coll_ratio - 1)
            return r, f"1 + {job.comm_share:g} x ({coll_ratio:.3f} - 1)"
        model = self._model_step(coll_ratio)
        if model is not None:
            base, slow = model
            return slow / base, f"training step model: {base:.3f} s -> {slow:.3f} s"
        extra = job.dp_comm_s * (coll_ratio - 1)
        return (job.step_s + extra) / job.step_s, (f"step {job.step_s:.3f} s + DP "
                                                   f"communication {job.dp_comm_s:.3f} s x "
                                                   f"({coll_ratio:.3f} - 1)")

    def _model_step(self, ratio: float) -> tuple[float, float] | None:
        w = self.job.workload
        if w is None:
            return None
        if not self._model_tried:
            self._model_tried = True
            try:
                from clusterwright.design.train import estimate_layout, job_for
                from clusterwright.model.recompute import parse_recompute

                lay = w["layout"]
                tjob = job_for(self.cat, self.cat.model(w["model"]), w["gpu"],
                               int(w["seq_len"]), int(lay["global_batch"]),
                               w.get("precision", "bf16"), server_id=self.plan.summary.get(
                                   "server"), stack_id=w.get("stack"))
                fixed = {k: lay[k] for k in ("tp", "pp", "dp", "cp", "ep", "micro_batch",
                                             "interleave", "zero")}
                fixed.update(recompute=parse_recompute(str(lay.get("recompute", "none"))),
                             sp=int(bool(lay.get("sequence_parallel"))),
                             shard=lay.get("shard", 0),
                             rc_frac=float(lay.get("recompute_share", 0.0) or 1.0))
                base = estimate_layout(tjob, fixed).step_time_s
                if abs(base / float(w["step_time_s"]) - 1) > 0.05:
                    self.notes.append(f"the training step model gives {base:.3f} s for the "
                                      f"blueprint's job, which recorded {w['step_time_s']:.3f}"
                                      " s; the breakdown is used instead")
                else:
                    self._model = (tjob, fixed, base, estimate_layout)
            except (ClusterwrightError, KeyError, ValueError, TypeError) as exc:
                self.notes.append(f"training step model not rebuilt ({exc}); the blueprint's "
                                  "breakdown is used")
        if self._model is None:
            return None
        tjob, fixed, base, est = self._model
        slow = est(dataclasses.replace(tjob, dp_comm_factor=ratio), fixed).step_time_s
        return base, slow

    # ------------------------------------------------------------------ placement
    def placement_ratio(self) -> tuple[float, str]:
        """The slowdown of a job kept in one SU that in fact crosses the spines."""
        if self._placement is not None:
            return self._placement
        try:
            from clusterwright.sim.cluster_shape import cluster_shape

            s = self.plan.summary
            over = s.get("oversubscription", 1.0)
            over = over.get("leaf", 1.0) if isinstance(over, dict) else over
            shape = cluster_shape(self.cat, str(s["server"]), int(s["nodes"]),
                                  float(over or 1.0))
            r = shape.ratio[2]
            slow = shape.slowdown(2, self.job.comm_share)
            self._placement = (slow, f"fragmentation ratio r = {r:.3f} for a job crossing "
                               f"scalable units (closed form), slowdown 1 + "
                               f"{self.job.comm_share:.3f} x (r - 1) = {slow:.4f}")
        except (ClusterwrightError, KeyError, ValueError, TypeError) as exc:
            self._placement = (1.0, f"not estimated ({exc})")
        return self._placement

    # ------------------------------------------------------------------ all
    def apply(self, findings: list[Finding], slow_job: dict[str, Any]) -> dict[str, Any]:
        plan = self.plan
        su_gpus = self._su_gpus()
        drained = self.drained_hosts(findings)
        drained_set = set(drained)
        # Capacity: each drained host alone, then all together.
        for fs in drained.values():
            loss, why = self.shrink_loss(plan.gpus_per_host)
            for f in fs:
                f.gpu_hours_lost_per_day = max(f.gpu_hours_lost_per_day, loss)
                f.impact = {"method": "capacity: the node cannot run and is drained",
                            "detail": why, **{k: v for k, v in f.impact.items()
                                              if k == "rate_gbps"}}
        total_capacity, why_total = self.shrink_loss(len(drained) * plan.gpus_per_host)
        # Network.
        classes: dict[tuple[str, str], list[tuple[Finding, list[str], list[tuple[str, float]]]]]
        classes = defaultdict(list)
        all_fail: list[str] = []
        all_deg: list[tuple[str, float]] = []
        if self.simulate:
            for f in findings:
                if f.kind not in ("missing_link", "miswired_link", "bgp_down", "wrong_speed"):
                    continue
                if any(d in drained_set for d in f.devices) and f.kind != "wrong_speed":
                    continue
                if self.fabric_request() is None:
                    break
                fails, deg = self.network_faults(f, drained_set)
                if not fails and not deg:
                    continue
                tier = plan.links[f.links[0]].tier
                key = (tier, "fail" if fails else f"rate:{deg[0][1]:.3f}")
                classes[key].append((f, fails, deg))
                all_fail += fails
                all_deg += deg
        if classes:
            base = self._run([], [])
            self.detail["baseline_collective_s"] = base
            base_util = self._last_util
            for _, members in sorted(classes.items()):
                f0, fails, deg = members[0]
                t = self._run(fails, deg) if base else None
                if t is None or not base:
                    continue
                coll = t / base
                ratio, how = self.step_ratio(coll)
                loss = _loss(self.job, ratio)
                for f, fl, dg in members:
                    f.gpu_hours_lost_per_day = max(f.gpu_hours_lost_per_day, loss)
                    f.impact = {
                        "method": "network simulator (as-built faults on the blueprint's "
                                  "fabric) and training step model",
                        "collective_slowdown": coll, "step_slowdown": ratio,
                        "simulated_on": (fl + [n for n, _ in dg])[:4],
                        "representative": f is not f0, "detail": how,
                        **{k: v for k, v in f.impact.items() if k == "rate_gbps"}}
            combined = self._run(sorted(set(all_fail)), all_deg) if base else None
            if combined is not None and base:
                coll = combined / base
                ratio, how = self.step_ratio(coll)
                self.detail["network"] = {
                    "faults_simulated": len(set(all_fail)) + len(all_deg),
                    "collective_slowdown": coll, "step_slowdown": ratio,
                    "gpu_hours_lost_per_day": _loss(self.job, ratio), "detail": how,
                    "max_link_utilization_as_designed": base_util[0],
                    "max_link_utilization_as_built": self._last_util[0],
                    "busiest_links_as_built": self._last_util[1]}
        # Placement.
        place_ratio, place_how = self.placement_ratio()
        for f in findings:
            ib_cross = f.kind in ("rail_swap", "wrong_su") and f.devices[0] not in drained_set
            if (f.kind == "wrong_label" and f.key[-1].endswith(":su")) or ib_cross:
                loss = min(su_gpus, self.job.gpus) * HOURS * (1 - 1 / place_ratio) \
                    if place_ratio > 1 else 0.0
                f.gpu_hours_lost_per_day = max(f.gpu_hours_lost_per_day, loss)
                f.impact = {"method": "placement: a job the scheduler keeps in one scalable "
                                      "unit crosses the spines (scheduling twin, closed form)",
                            "step_slowdown": place_ratio, "detail": place_how,
                            "job_gpus": min(su_gpus, self.job.gpus)}
        # Slow nodes measured from DCGM only: scale the compute share.
        for f in findings:
            if f.kind == "slow_gpu" and "compute_slowdown" in f.impact and \
                    f.gpu_hours_lost_per_day == 0:
                s = float(f.impact["compute_slowdown"])
                ratio = 1 + self.job.compute_share * (s - 1)
                f.gpu_hours_lost_per_day = _loss(self.job, ratio)
                f.impact.update(step_slowdown=ratio, job_gpus=self.job.gpus,
                                detail=f"1 + compute share {self.job.compute_share:.3f} x "
                                       f"({s:.3f} - 1)")
        self._severity(findings, drained_set)
        sched = self.schedule(drained_set) if drained_set else None
        slow_loss = 0.0
        if slow_job.get("slowdown", 1.0) > 1:
            slow_loss = slow_job["gpus"] * HOURS * (1 - 1 / slow_job["slowdown"])
        net_loss = float(self.detail.get("network", {}).get("gpu_hours_lost_per_day", 0.0))
        place_loss = sum(f.gpu_hours_lost_per_day for f in findings
                         if f.impact.get("method", "").startswith("placement"))
        dcgm_loss = sum(f.gpu_hours_lost_per_day for f in findings
                        if f.kind == "slow_gpu" and "compute_slowdown" in f.impact)
        total = total_capacity + net_loss + slow_loss + place_loss + dcgm_loss
        self.detail.update({
            "cluster_gpus": self.cluster_gpus,
            "cluster_gpu_hours_per_day": self.cluster_gpus * HOURS,
            "drained_nodes": sorted(drained_set),
            "capacity": {"gpu_hours_lost_per_day": total_capacity, "detail": why_total},
            "placement": {"gpu_hours_lost_per_day": place_loss, "detail": place_how},
            "slow_nodes": {**slow_job, "gpu_hours_lost_per_day": slow_loss},
            "gpu_hours_lost_per_day": total,
            "gpu_hours_lost_per_day_basis": "capacity (all drained nodes together) + network "
            "(all faults simulated together) + slow nodes (the job's measured slowdown) + "
            "placement and clock-only slow GPUs (summed)",
            "scheduling": sched,
            "notes": self.notes,
            "simulation_wall_s": self._wall,
        })
        return self.detail

    def _su_gpus(self) -> int:
        su = self.plan.groups.get("su", {})
        if not su:
            return self.job.gpus
        sizes: dict[str, int] = defaultdict(int)
        for g in su.values():
            sizes[g] += 1
        return max(sizes.values()) * self.plan.gpus_per_host

    def _severity(self, findings: list[Finding], drained: set[str]) -> None:
        day = self.cluster_gpus * HOURS
        for f in findings:
            lost = f.gpu_hours_lost_per_day
            cannot_run = f.impact.get("method", "").startswith("capacity")
            if cannot_run or lost >= 0.01 * day:
                f.severity = "critical"
            elif f.kind in MAJOR_KINDS or lost >= 0.001 * day:
                f.severity = "major"
            else:
                f.severity = "minor"

    def schedule(self, drained: set[str]) -> dict[str, Any] | None:
        """The scheduling twin with and without the drained nodes: the same seeded job mix
        for a week, no random failures, the drained nodes down for the whole horizon."""
        from clusterwright.sim.cluster_config import ClusterConfig
        from clusterwright.sim.cluster_jobs import HOUR, JobMix, generate
        from clusterwright.sim.cluster_report import run_schedule
        from clusterwright.sim.cluster_shape import cluster_shape

        s = self.plan.summary
        hosts = sorted(self.plan.hosts)
        index = {h: i for i, h in enumerate(hosts)}
        try:
            over = s.get("oversubscription", 1.0)
            over = over.get("leaf", 1.0) if isinstance(over, dict) else over
            shape = cluster_shape(self.cat, str(s["server"]), int(s["nodes"]),
                                  float(over or 1.0))
            if shape.nodes != len(hosts):
                return None
            profiles = self.cat.gpu(shape.gpu).mig_profiles
            names = tuple(p.name for p in profiles)
            base_mix = JobMix()
            pick = tuple(n for n in base_mix.mig_profiles if n in names) or names[:1]
            share = base_mix.share if pick else (*base_mix.share[:3], 0.0)
            mix = dataclasses.replace(base_mix, jobs=SCHEDULE_JOBS, days=SCHEDULE_DAYS,
                                      mig_profiles=pick, share=share)
            jobs = generate(mix, shape.nodes, shape.gpus_per_node, self.seed)
            horizon = SCHEDULE_DAYS * 24 * HOUR
            cfg = ClusterConfig(horizon_s=horizon, policy="backfill", topology_aware=True,
                                seed=self.seed, failure_rate_per_node_hour=0.0)
            built = dataclasses.replace(cfg, repair_s=horizon * 2, failures_at=tuple(
                (0.0, index[h]) for h in sorted(drained) if h in index))
            t0 = time.perf_counter()
            a = run_schedule(shape, jobs, cfg, profiles)
            b = run_schedule(shape, jobs, built, profiles)
            self._wall += time.perf_counter() - t0
        except (ClusterwrightError, KeyError, ValueError, TypeError) as exc:
            self.notes.append(f"scheduling twin not run ({exc})")
            return None

        def pick_(d: dict[str, Any]) -> dict[str, Any]:
            tr = d["by_kind"]["train"]["queueing_delay_h"]["mean"]
            return {"gpu_utilization_mean": d["gpu_utilization_mean"],
                    "allocated_gpu_hours": d["gpu_hours"]["allocated"],
                    "train_queueing_delay_mean_h": tr,
                    "stranded_gpu_fraction_mean":
                        d["fragmentation"]["stranded_gpu_fraction_mean"],
                    "gang_jobs_across_sus_fraction":
                        d["fragmentation"]["gang_jobs_across_sus_fraction"]}

        pa, pb = pick_(a), pick_(b)
        return {"method": f"scheduling twin: {SCHEDULE_JOBS} seeded jobs over "
                          f"{SCHEDULE_DAYS:g} days, EASY backfill, topology-aware, as "
                          "designed vs with the drained nodes down",
                "as_designed": pa, "as_built": pb,
                "allocated_gpu_hours_lost_per_day":
                    (pa["allocated_gpu_hours"] - pb["allocated_gpu_hours"]) / SCHEDULE_DAYS}


def rank(findings: list[Finding]) -> list[Finding]:
    """Most GPU-hours lost first, then severity, kind and subject; ids F001... in order."""
    order = {k: i for i, k in enumerate(KINDS)}
    sev = {s: i for i, s in enumerate(SEVERITIES)}
    out = sorted(findings, key=lambda f: (-round(f.gpu_hours_lost_per_day, 6),
                                          sev.get(f.severity, 9), order.get(f.kind, 99),
                                          f.subject))
    width = max(3, len(str(len(out))))
    for i, f in enumerate(out, 1):
        f.id = f"F{i:0{width}d}"
        if not math.isfinite(f.gpu_hours_lost_per_day):
            f.gpu_hours_lost_per_day = 0.0
    return out
