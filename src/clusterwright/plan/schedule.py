"""The scheduling twin of ``clusterwright ops schedule``: a job mix (a trace, or a seeded synthetic
mix) on a designed cluster, under a policy, with node failures at the catalog's rates and an
optional rolling upgrade. The CLI parses flags; everything decided here."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clusterwright.catalog.registry import Catalog
from clusterwright.errors import InputError
from clusterwright.model import reliability as rel
from clusterwright.sim.cluster import ClusterConfig, Upgrade
from clusterwright.sim.cluster_jobs import HOUR, JobMix, generate, read_trace
from clusterwright.sim.cluster_report import run_schedule
from clusterwright.sim.cluster_shape import cluster_shape


@dataclass(frozen=True)
class ScheduleRequest:
    """What to simulate. ``trace`` None means the synthetic ``mix`` of ``jobs`` (shares of
    train, finetune, inference, MIG); ``failure_rate_per_node_hour`` None means the catalog's
    rate for this GPU and cluster; ``upgrade`` is (nodes per batch, hours per batch, start
    hour, drain timeout hours) or None."""

    server: str
    nodes: int
    oversubscription: float
    policy: str
    topology_aware: bool
    days: float
    seed: int
    trace: Path | None
    jobs: int
    mix: tuple[float, float, float, float]
    failure_rate_per_node_hour: float | None
    repair_h: float
    restart_min: float
    upgrade: tuple[int, float, float, float] | None = None


def catalog_node_failure_rate(cat: Catalog, gpu: str, nodes: int, gpus_per_node: int) -> float:
    """Unplanned interruptions per node-hour from the catalog's failure modes (reliability.yaml,
    derived from Llama 3 Table 5) for this cluster: the fleet's total rate over its nodes.
    Every interruption is charged as a node failure (its jobs restart, the node is repaired)."""
    modes = rel.modes_for_gpu(cat.all("failure_modes"), gpu)
    units = rel.fleet_units(nodes * gpus_per_node, gpus_per_node)
    return sum(rel.rates_per_hour(modes, units).values()) / nodes


def schedule_cluster(cat: Catalog, req: ScheduleRequest) -> dict[str, Any]:
    """Run the schedule and return its report (``sim/cluster_report.run_schedule``) with the
    job source and the failure rate used (per node-hour). Raises InputError naming the
    request field (server, nodes, trace ...) for input the simulator refuses."""
    shape = cluster_shape(cat, req.server, req.nodes, req.oversubscription)
    profiles = cat.gpu(shape.gpu).mig_profiles
    notes: list[str] = []
    if req.trace is not None:
        job_list = read_trace(req.trace, shape.nodes, shape.gpus_per_node,
                              [p.name for p in profiles])
    else:
        names = tuple(p.name for p in profiles)
        base = JobMix()
        pick = tuple(n for n in base.mig_profiles if n in names) or names[:1]
        m = dataclasses.replace(base, jobs=req.jobs, days=req.days, share=req.mix,
                                mig_profiles=pick)
        if not pick:  # no MIG on this GPU: small jobs become none
            m = dataclasses.replace(m, share=(*req.mix[:3], 0.0))
            if req.mix[3] > 0:
                notes.append(f"{shape.gpu} has no MIG profiles: the mix's MIG share "
                             f"({req.mix[3]:.0%}) goes to the other kinds in proportion")
        job_list = generate(m, shape.nodes, shape.gpus_per_node, req.seed)
    upgrade = None
    if req.upgrade is not None:
        batch, batch_h, start_h, drain_h = req.upgrade
        if batch > shape.nodes:
            raise InputError(f"upgrade: {batch:,} hosts drained at a time, but the cluster has "
                             f"{shape.nodes:,}", field="upgrade")
        upgrade = Upgrade(start_s=start_h * HOUR, batch_nodes=batch, batch_s=batch_h * HOUR,
                          drain_timeout_s=drain_h * HOUR)
    rate = req.failure_rate_per_node_hour
    if rate is None:
        rate = catalog_node_failure_rate(cat, shape.gpu, shape.nodes, shape.gpus_per_node)
    cfg = ClusterConfig(
        horizon_s=req.days * 24 * HOUR, policy=req.policy, topology_aware=req.topology_aware,
        seed=req.seed, failure_rate_per_node_hour=rate, repair_s=req.repair_h * HOUR,
        restart_s=req.restart_min * 60.0, upgrade=upgrade,
    )
    data = run_schedule(shape, job_list, cfg, profiles)
    # The simulator schedules hosts; --nodes counts servers (racks for rack-scale systems).
    data["hosts"] = shape.nodes
    data["nodes"] = req.nodes
    late = sum(1 for j in job_list if j.submit_s >= cfg.horizon_s)
    if late:
        notes.append(f"{late} job(s) submitted after the {req.days:g}-day horizon: not run")
    data["notes"] = notes
    data["source"] = str(req.trace) if req.trace is not None else "synthetic"
    data["failure_rate_per_node_hour"] = rate
    return data
