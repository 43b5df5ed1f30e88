"""Production time to train: what a real run takes beyond steady-state steps.

A benchmark's step time is the steady state of a healthy cluster. A production run also
evaluates on held-out data, writes checkpoints, and stops for failures, losing the work
since its last checkpoint and the restart. This module stretches the failure-free compute
time by both:

- evaluation: Megatron-LM's defaults (``--eval-interval 1000``, ``--eval-iters 100``) run 100
  forward-only iterations, about a third of a training step each, every 1,000 steps
  (assumption ``training_eval_fraction``);
- goodput: the effective training time ratio (ETTR, Kokolis et al., HPCA 2025) of the
  operations twin (``model/reliability.py``): interruptions from the catalog's failure modes
  on this job's GPUs, hosts and fabric links, checkpoints at Daly's optimum interval, each
  failure costing the restart and the lost work.

Stragglers and synchronisation jitter are already in the step (``model/training.py``).
Times in seconds unless a name says days or hours.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any, Literal

from clusterwright.catalog.registry import Catalog
from clusterwright.catalog.schema import ModelArch, Server
from clusterwright.model import reliability as rel
from clusterwright.model.params import total_params

DAY = 86400.0
FABRIC_RADIX = 64  # NDR/XDR InfiniBand and Spectrum-X leaves: 64 ports at the GPU's link rate


@dataclass(frozen=True)
class CheckpointCost:
    """A full checkpoint of ``arch`` written and read by ``gpus`` GPUs (bytes, seconds)."""

    bytes: float
    write_s: float
    read_s: float
    restart_s: float  # scheduler, process start and reading the checkpoint back


def checkpoint_cost(cat: Catalog, arch: ModelArch, gpus: int, precision: str = "bf16",
                    optimizer: Literal["adam", "sgd"] = "adam", writers: int | None = None,
                    storage_gbps: float | None = None) -> CheckpointCost:
    """A sharded checkpoint of ``precision`` weights and ``optimizer`` state written by
    ``writers`` GPUs (default: every GPU), each at the per-GPU storage rate, all together
    capped by ``storage_gbps`` GB/s or the storage system's aggregate rate per GPU (catalog
    assumptions, SuperPOD storage guidance). The restart adds the scheduler and process start
    (assumption) to reading it back."""
    size = rel.checkpoint_bytes(float(total_params(arch)), precision, optimizer)
    streams = writers or gpus
    write_cap = storage_gbps or gpus * cat.assumption("storage_aggregate_write_gbps_per_gpu")
    read_cap = storage_gbps or gpus * cat.assumption("storage_aggregate_read_gbps_per_gpu")
    write = rel.transfer_s(size, streams, cat.assumption("storage_write_gbps_per_gpu"), write_cap)
    read = rel.transfer_s(size, streams, cat.assumption("storage_read_gbps_per_gpu"), read_cap)
    return CheckpointCost(size, write, read, restart_s(cat, gpus, read))


def restart_s(cat: Catalog, gpus: int, restore_s: float) -> float:
    """One restart of a job on ``gpus`` GPUs (catalog overhead with its NCCL-init part scaled
    by log2 of the ranks, ``model.reliability.restart_s``) plus reading the checkpoint back."""
    return rel.restart_s(gpus, cat.assumption("reliability_restart_overhead_s"),
                         cat.assumption("reliability_nccl_init_s_at_4k_gpus"), restore_s)


@dataclass(frozen=True)
class ProductionTime:
    """Steady-state compute time and what evaluation and failures add (days, hours)."""

    compute_days: float  # failure-free steps only
    eval_fraction: float  # evaluation time over training time
    ettr: float  # productive time over wall time under failures
    job_mtbf_hours: float
    interruptions_per_day: float
    checkpoint_bytes: float
    checkpoint_write_s: float
    checkpoint_interval_s: float
    restart_s: float
    days: float  # production wall time
    gpu_hours: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def production_time(cat: Catalog, arch: ModelArch, gpu_id: str, server: Server | None,
                    gpus: int, compute_s: float) -> ProductionTime:
    """Wall time of ``compute_s`` seconds of failure-free training on ``gpus`` GPUs of
    ``gpu_id`` (in ``server``, for GPUs per host; 8 without one)."""
    per_host = server.gpus // max(server.hosts, 1) if server is not None else 8
    units = rel.fleet_units(gpus, per_host, FABRIC_RADIX)
    modes = rel.modes_for_gpu(cat.all("failure_modes"), gpu_id)
    mtbf_h = rel.job_mtbf_hours(modes, units)
    per_day = sum(rel.expected_interruptions(modes, units, 24.0).values())
    ck = checkpoint_cost(cat, arch, gpus)
    eval_fraction = cat.assumption("training_eval_fraction")
    work = compute_s * (1.0 + eval_fraction)
    if math.isfinite(mtbf_h):
        plan = rel.checkpoint_plan(ck.write_s, mtbf_h * 3600.0, ck.restart_s)
        interval, ettr = plan.daly_interval_s, plan.ettr
        wall = rel.expected_wall_time_s(work, interval, ck.write_s, mtbf_h * 3600.0,
                                        ck.restart_s) if work > 0 else 0.0
    else:
        interval, ettr, wall = math.inf, 1.0, work
    return ProductionTime(
        compute_days=compute_s / DAY, eval_fraction=eval_fraction, ettr=ettr,
        job_mtbf_hours=mtbf_h, interruptions_per_day=per_day, checkpoint_bytes=ck.bytes,
        checkpoint_write_s=ck.write_s, checkpoint_interval_s=interval, restart_s=ck.restart_s,
        days=wall / DAY, gpu_hours=wall * gpus / 3600.0,
    )


def production_wall(cat: Catalog, arch: ModelArch, gpu_id: str,
                    server: Server | None) -> Callable[[int, float], float]:
    """Wall seconds of ``compute_s`` failure-free seconds on ``n`` GPUs in production
    (``production_time``): the ``WallTime`` the layout search sizes clusters with."""

    def wall(n: int, compute_s: float) -> float:
        return production_time(cat, arch, gpu_id, server, n, compute_s).days * 86400.0

    return wall
