"""Metrics of a cluster simulation: utilization, delays, fragmentation, SLOs, lost GPU-hours.

All times in the summary are hours and all GPU quantities GPU-hours (names say so), because an
operator reads them; the raw ``ClusterResult`` stays in seconds.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from clusterwright.catalog.schema import MigProfile
from clusterwright.sim.cluster import ClusterConfig, ClusterResult, simulate
from clusterwright.sim.cluster_jobs import HOUR, KINDS, Job
from clusterwright.sim.cluster_shape import SPANS, ClusterShape


def _pcts(values: list[float]) -> dict[str, float | int | None]:
    if not values:
        return {"n": 0, "mean": None, "p50": None, "p90": None, "p99": None}
    a = np.asarray(values, dtype=float)
    p50, p90, p99 = np.percentile(a, [50, 90, 99])
    return {"n": len(values), "mean": float(a.mean()), "p50": float(p50), "p90": float(p90),
            "p99": float(p99)}


def summarize(r: ClusterResult) -> dict[str, Any]:
    """The ``ops schedule`` JSON payload (hours and GPU-hours)."""
    s, cfg = r.shape, r.config
    horizon = cfg.horizon_s
    capacity = s.gpus * horizon
    by_kind: dict[str, Any] = {}
    for kind in KINDS:
        js = [j for j in r.jobs if j.kind == kind and j.submit_s < horizon]
        started = [j for j in js if j.first_start_s >= 0]
        done = [j for j in js if j.end_s >= 0 and (kind != "inference")]
        by_kind[kind] = {
            "submitted": len(js),
            "started": len(started),
            "finished": len(done),
            "queueing_delay_h": _pcts([(j.first_start_s - j.submit_s) / HOUR for j in started]),
            "completion_time_h": _pcts([(j.end_s - j.submit_s) / HOUR for j in done]),
            "preemptions": sum(j.preemptions for j in js),
            "failures": sum(j.failures for j in js),
        }
    services = []
    total = ok = dem = served = 0.0
    for sv in r.services:
        if sv.total_s <= 0:
            continue
        total += sv.total_s
        ok += sv.ok_s
        dem += sv.demanded_replica_s
        served += sv.served_replica_s
        services.append({
            "id": sv.job.id, "peak_replicas": sv.job.replicas, "nodes_per_replica": sv.job.nodes,
            "slo_attainment": sv.ok_s / sv.total_s,
            "replica_hours_served_fraction": (sv.served_replica_s / sv.demanded_replica_s
                                              if sv.demanded_replica_s > 0 else 1.0),
            "max_replicas_short": sv.peak_unmet,
        })
    day = [float(np.mean(r.util_samples[i:i + 24])) for i in range(0, len(r.util_samples), 24)]
    spans = dict(zip(SPANS, r.span_counts, strict=True))
    gang = max(1, r.gang_starts)
    up = cfg.upgrade
    upgrade: dict[str, Any] | None = None
    if up is not None:
        upgrade = {
            "batch_nodes": up.batch_nodes,
            "batch_h": up.batch_s / HOUR,
            "started_h": None if r.upgrade_started_s is None else r.upgrade_started_s / HOUR,
            "finished_h": None if r.upgrade_done_s is None else r.upgrade_done_s / HOUR,
            "duration_h": (None if r.upgrade_done_s is None or r.upgrade_started_s is None
                           else (r.upgrade_done_s - r.upgrade_started_s) / HOUR),
            "max_nodes_out": r.upgrade_max_out,
            "gpu_hours_out_of_service": r.upgrade_gpu_s / HOUR,
            "jobs_stopped_at_drain_timeout": r.upgrade_stops,
            "gpu_hours_lost_restarting": r.lost_upgrade_gpu_s / HOUR,
        }
    return {
        "policy": cfg.policy,
        "topology_aware": cfg.topology_aware,
        "server": s.server,
        "nodes": s.nodes,
        "gpus": s.gpus,
        "days": horizon / (24 * HOUR),
        "seed": cfg.seed,
        "jobs": sum(1 for j in r.jobs if j.submit_s < horizon),
        "events": r.events,
        "gpu_utilization_mean": r.busy_gpu_s / capacity,
        "gpu_utilization_of_available": (
            r.busy_gpu_s / max(1e-9, capacity - r.down_gpu_s - r.upgrade_gpu_s)
        ),
        "gpu_utilization_by_day": day,
        "gpu_hours": {
            "capacity": capacity / HOUR,
            "allocated": r.busy_gpu_s / HOUR,
            "down_for_repair": r.down_gpu_s / HOUR,
            "out_for_upgrade": r.upgrade_gpu_s / HOUR,
            "lost_to_failures": r.lost_failure_gpu_s / HOUR,
            "lost_to_preemption": r.lost_preemption_gpu_s / HOUR,
            "lost_to_upgrade": r.lost_upgrade_gpu_s / HOUR,
        },
        "by_kind": by_kind,
        "fragmentation": {
            "stranded_gpu_fraction_mean": float(np.mean(r.stranded_samples))
            if r.stranded_samples else 0.0,
            "placements_by_span": spans,
            "gang_jobs_across_sus_fraction": (spans["pod"] + spans["cluster"]) / gang,
            "gang_jobs_across_pods_fraction": spans["cluster"] / gang,
            "allreduce_ratio_by_span": dict(zip(SPANS, s.ratio, strict=True)),
        },
        "inference": {
            "services": len(services),
            "slo_attainment": ok / total if total > 0 else None,
            "replica_hours_served_fraction": served / dem if dem > 0 else None,
            "by_service": services,
        },
        "preemptions": r.preemptions,
        "node_failures": r.failures,
        "mig_instances_started": r.mig_starts,
        "upgrade": upgrade,
    }


def _gang_times(r: ClusterResult) -> dict[str, tuple[float, float]]:
    """Queueing delay and completion time (s) of each gang job finished in ``r``, by id."""
    return {j.id: (j.first_start_s - j.submit_s, j.end_s - j.submit_s) for j in r.jobs
            if j.kind in ("train", "finetune") and j.end_s >= 0}


def upgrade_delay(with_upgrade: ClusterResult, without: ClusterResult) -> dict[str, float]:
    """What a rollout cost the jobs: the same jobs and seed run without it, compared (hours).

    Means over the gang jobs finished in both runs, so a job the rollout leaves unfinished
    does not lower the mean (it shows up in ``gang_jobs_finished_change``).
    """
    t1, t0 = _gang_times(with_upgrade), _gang_times(without)
    both = sorted(t1.keys() & t0.keys())

    def mean_gap(k: int) -> float:
        return float(np.mean([t1[i][k] - t0[i][k] for i in both])) / HOUR if both else 0.0

    return {
        "mean_queueing_delay_increase_h": mean_gap(0),
        "mean_completion_time_increase_h": mean_gap(1),
        "gang_jobs_finished_change": float(len(t1) - len(t0)),
        "allocated_gpu_hours_change": (with_upgrade.busy_gpu_s - without.busy_gpu_s) / HOUR,
    }


def run_schedule(shape: ClusterShape, jobs: Sequence[Job], cfg: ClusterConfig,
                 mig_profiles: Sequence[MigProfile] = ()) -> dict[str, Any]:
    """Simulate and summarize; with a rollout, also run without it and report its cost."""
    t0 = time.perf_counter()
    result = simulate(shape, jobs, cfg, mig_profiles)
    wall = time.perf_counter() - t0
    data = summarize(result)
    if cfg.upgrade is not None and data["upgrade"] is not None:
        base = simulate(shape, jobs, dataclasses.replace(cfg, upgrade=None), mig_profiles)
        data["upgrade"].update(upgrade_delay(result, base))
    # Wall-clock measurements only, under one key: the rest is a function of the inputs and
    # the seed, so two runs compare equal without it.
    data["timings"] = {"sim_wall_s": wall,
                       "events_per_s": result.events / wall if wall > 0 else None}
    return data
