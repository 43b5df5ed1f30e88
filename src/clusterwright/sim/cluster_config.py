"""What the scheduling twin (``sim/cluster.py``) takes and returns: the run configuration
(policy, failures, a rolling upgrade) with its checks, and the raw result that
``sim/cluster_report.py`` turns into metrics.

Units: seconds, nodes, GPU-seconds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from clusterwright.catalog.schema import MigProfile
from clusterwright.errors import InputError
from clusterwright.sim.cluster_jobs import HOUR, MAX_JOBS, Job
from clusterwright.sim.cluster_nodes import Service
from clusterwright.sim.cluster_shape import ClusterShape
from clusterwright.sim.engine import check_seed

# Simulated horizon: hourly samples and inference demand steps grow with it (a year of a
# 4,096-node cluster with 20,000 jobs takes about 5 s on two cores).
MAX_HORIZON_DAYS = 365.0
# Node failures the run may expect (rate x nodes x hours): each is a few events; 100,000
# take about 10 s.
MAX_EXPECTED_FAILURES = 100_000

POLICIES = ("fifo", "backfill", "priority")
DAY = 24 * HOUR
# Llama 3 405B: 419 unexpected interruptions in 54 days on 16,384 H100 (Meta, arXiv 2407.21783,
# Table 5, via operations.md 1.1): 419 / (16,384 x 54 x 24) = 1.97e-5 per GPU-hour, i.e.
# 1.58e-4 per 8-GPU node-hour (3.79 per 1,000 node-days).
LLAMA3_FAILURES_PER_GPU_HOUR = 419 / (16_384 * 54 * 24)


@dataclass(frozen=True)
class Upgrade:
    """A rolling firmware upgrade: ``batch_nodes`` at a time, each out ``batch_s`` seconds."""

    start_s: float
    batch_nodes: int
    batch_s: float
    drain_timeout_s: float = 4 * HOUR
    nodes: int | None = None  # nodes to upgrade, from node 0 (None = all)


@dataclass(frozen=True)
class ClusterConfig:
    """How to run. Times in seconds; ``failure_rate_per_node_hour`` None = the Llama 3 rate
    per GPU times the GPUs per node; 0 = no failures."""

    horizon_s: float
    policy: str = "fifo"
    topology_aware: bool = False
    seed: int = 0
    failure_rate_per_node_hour: float | None = None
    repair_s: float = 4 * HOUR  # [estimate] between Crusoe's <5 min swap and OPT's "hours"
    restart_s: float = 600.0  # reload + re-init (operations.md 1.4 test vectors: R = 10 min)
    upgrade: Upgrade | None = None
    backfill_depth: int = 500  # jobs examined per pass (Slurm bf_max_job_test default 500)
    peak_hour: float = 14.0  # hour of day of the inference peak
    sample_s: float = HOUR
    failures_at: tuple[tuple[float, int], ...] = ()  # (time s, node) failures to inject

    def validate(self) -> None:
        """Raise ``InputError`` naming the first bad field."""
        if self.policy not in POLICIES:
            raise InputError(f"policy: unknown {self.policy!r} (one of {', '.join(POLICIES)})")
        positive = {"horizon_s": self.horizon_s, "sample_s": self.sample_s}
        non_negative = {"repair_s": self.repair_s, "restart_s": self.restart_s,
                        "failure_rate_per_node_hour": self.failure_rate_per_node_hour or 0.0}
        for name, v in positive.items():
            if not (math.isfinite(v) and v > 0):
                raise InputError(f"{name}: must be a positive number, got {v:g}")
        if self.horizon_s > MAX_HORIZON_DAYS * 24 * HOUR:
            raise InputError(f"horizon_s: {self.horizon_s:g} s is {self.horizon_s / 86400:g} "
                             f"days; at most {MAX_HORIZON_DAYS:g}", field="horizon_s")
        check_seed(self.seed)
        for name, v in non_negative.items():
            if not (math.isfinite(v) and v >= 0):
                raise InputError(f"{name}: must be a non-negative number, got {v:g}")
        for t, nd in self.failures_at:
            if not (math.isfinite(t) and t >= 0 and nd >= 0):
                raise InputError(f"failures_at: ({t}, {nd}) needs a time >= 0 and a node >= 0")
        if self.backfill_depth < 1:
            raise InputError(f"backfill_depth: must be at least 1, got {self.backfill_depth}")
        u = self.upgrade
        if u is not None:
            if u.batch_nodes < 1:
                raise InputError(f"upgrade batch_nodes must be at least 1, got {u.batch_nodes}")
            if not (u.batch_s > 0 and u.start_s >= 0 and u.drain_timeout_s >= 0):
                raise InputError("upgrade: start_s and drain_timeout_s must be >= 0, batch_s > 0")


@dataclass
class ClusterResult:
    """Raw outcome; ``cluster_report.summarize`` turns it into the reported metrics."""

    shape: ClusterShape
    config: ClusterConfig
    jobs: list[Job]
    services: list[Service]
    events: int
    busy_gpu_s: float
    down_gpu_s: float
    upgrade_gpu_s: float
    lost_failure_gpu_s: float
    lost_preemption_gpu_s: float
    lost_upgrade_gpu_s: float
    preemptions: int
    failures: int
    samples_h: list[float]
    util_samples: list[float]
    stranded_samples: list[float]
    span_counts: list[int]
    gang_starts: int
    mig_starts: int
    upgrade_started_s: float | None
    upgrade_done_s: float | None
    upgrade_max_out: int
    upgrade_stops: int
    log: list[tuple[float, str, str]]  # (time s, what, job id): gang starts, ends, stops


def check_run(shape: ClusterShape, jobs: Sequence[Job], cfg: ClusterConfig,
              mig_profiles: Sequence[MigProfile]) -> None:
    """Raise ``InputError`` naming the first job or field the cluster cannot run: too many
    jobs or expected failures, a failure on a node outside the cluster, a MIG profile the GPU
    does not offer, a job larger than the cluster."""
    cfg.validate()
    if len(jobs) > MAX_JOBS:
        raise InputError(f"jobs: {len(jobs):,} jobs; at most {MAX_JOBS:,} in one simulation",
                         field="jobs")
    rate = cfg.failure_rate_per_node_hour or 0.0
    expected = rate * shape.nodes * cfg.horizon_s / HOUR
    if expected > MAX_EXPECTED_FAILURES:
        raise InputError(
            f"failure_rate_per_node_hour: {rate:g} x {shape.nodes:,} nodes x "
            f"{cfg.horizon_s / HOUR:,.0f} h = {expected:,.0f} expected node failures; at most "
            f"{MAX_EXPECTED_FAILURES:,} in one simulation (a lower rate, fewer nodes or a "
            "shorter horizon)", field="failure_rate_per_node_hour")
    for _, nd in cfg.failures_at:
        if nd >= shape.nodes:
            raise InputError(f"failures_at: node {nd} is not in the cluster (0..{shape.nodes - 1})")
    names = {p.name for p in mig_profiles}
    for j in jobs:
        if j.kind == "mig" and j.mig_profile not in names:
            offered = ", ".join(sorted(names)) or "none: this GPU has no MIG"
            raise InputError(f"job {j.id!r}: MIG profile {j.mig_profile!r} not offered "
                             f"({offered})")
        if j.kind != "mig" and j.nodes * max(1, j.replicas) > shape.nodes:
            raise InputError(f"job {j.id!r} needs {j.nodes * max(1, j.replicas)} nodes; "
                             f"the cluster has {shape.nodes}")
        if j.kind != "mig" and j.nodes < 1:
            raise InputError(f"job {j.id!r}: a {j.kind} job needs at least one node")
