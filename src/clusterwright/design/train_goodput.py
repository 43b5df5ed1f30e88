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
from clusterwright.design.storage_plan import (
    StoragePlan,
    StorageRequest,
    client_gbps_per_gpu,
    plan_storage,
)
from clusterwright.model import reliability as rel
from clusterwright.model.params import total_params
from clusterwright.model.storage import checkpoint_io

DAY = 86400.0
FABRIC_RADIX = 64  # NDR/XDR InfiniBand and Spectrum-X leaves: 64 ports at the GPU's link rate


@dataclass(frozen=True)
class CheckpointCost:
    """A full checkpoint of ``arch`` written and read by ``gpus`` GPUs (bytes, seconds)."""

    bytes: float
    write_s: float  # training stalls this long per checkpoint (the delta of Daly's model)
    read_s: float
    restart_s: float  # scheduler, process start, reading the checkpoint back, async rework
    persist_s: float = 0.0  # until the checkpoint is durable (async: in the background)
    min_interval_s: float = 0.0  # checkpoints cannot come faster (async: the persist)
    mode: str = "sync"
    storage: StoragePlan | None = None  # the tier it was sized on (None: a given rate)

    def interval_s(self, mtbf_s: float) -> float:
        """Daly's interval of the stall, never shorter than the tier allows."""
        return max(rel.daly_interval_s(max(self.write_s, 1e-6), mtbf_s), self.min_interval_s)


def checkpoint_cost(cat: Catalog, arch: ModelArch, gpus: int, precision: str = "bf16",
                    optimizer: Literal["adam", "sgd"] = "adam", writers: int | None = None,
                    storage_gbps: float | None = None, mtbf_s: float | None = None,
                    server: Server | None = None, storage: StoragePlan | None = None,
                    mode: Literal["async", "sync"] = "async") -> CheckpointCost:
    """A sharded checkpoint of ``precision`` weights and ``optimizer`` state written by
    ``writers`` GPUs (default: every GPU).

    On a storage tier: ``storage`` as designed, else the storage planner's tier for this job
    (``design/storage_plan``: the cheapest catalog system that keeps checkpointing within its
    budget at ``mtbf_s``), asynchronous by default (the stall is a shard's device-to-host copy,
    the persist runs in the background and bounds the interval). With ``storage_gbps`` (GB/s,
    a given system rate) the write is synchronous, each writer at the per-GPU storage rate,
    all capped by it. The restart adds the scheduler, process and NCCL start at this scale to
    reading it back, and for an async checkpoint the work a failure during a persist loses."""
    size = rel.checkpoint_bytes(float(total_params(arch)), precision, optimizer)
    streams = writers or gpus
    if storage_gbps is not None:
        write = rel.transfer_s(size, streams, cat.assumption("storage_write_gbps_per_gpu"),
                               storage_gbps)
        read = rel.transfer_s(size, streams, cat.assumption("storage_read_gbps_per_gpu"),
                              storage_gbps)
        return CheckpointCost(size, write, read, restart_s(cat, gpus, read), write, 0.0)
    if storage is None:
        client = client_gbps_per_gpu(cat, server.id) if server is not None else None
        storage = plan_storage(StorageRequest(
            gpus=gpus, client_gbps_per_gpu=client, checkpoint_bytes=size,
            checkpoint_gpus=streams, mtbf_s=mtbf_s, checkpoint_mode=mode), cat)
    ck = storage.checkpoint
    if ck is None or abs(ck.bytes - size) > 1e-6 * size:
        server_id = server.id if server is not None else None
        client = client_gbps_per_gpu(cat, server_id) if server_id else None
        ck = checkpoint_io(size, streams, storage.write_gbps, storage.read_gbps, mode,
                           cat.assumption("checkpoint_host_copy_gbps_per_gpu"), client, client)
    return CheckpointCost(size, ck.stall_s, ck.restore_s,
                          restart_s(cat, gpus, ck.restore_s) + ck.extra_lost_work_s,
                          ck.persist_s, ck.persist_s if ck.mode == "async" else 0.0, ck.mode,
                          storage)


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
    ck = checkpoint_cost(cat, arch, gpus, mtbf_s=mtbf_h * 3600.0 if math.isfinite(mtbf_h)
                         else None, server=server)
    eval_fraction = cat.assumption("training_eval_fraction")
    work = compute_s * (1.0 + eval_fraction)
    if math.isfinite(mtbf_h):
        interval = ck.interval_s(mtbf_h * 3600.0)
        ettr = rel.ettr(interval, ck.write_s, mtbf_h * 3600.0, ck.restart_s)
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
