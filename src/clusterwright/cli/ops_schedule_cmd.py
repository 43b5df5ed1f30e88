"""``clusterwright ops schedule``: a job mix on a designed cluster (the scheduling twin)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from clusterwright.cli import limits as lim
from clusterwright.cli.common import console, emit_json, fail, state, user_errors
from clusterwright.sim.cluster_jobs import KINDS


def _mix(text: str) -> tuple[float, float, float, float]:
    try:
        parts = tuple(float(x) for x in text.split(","))
    except ValueError:
        parts = ()
    if len(parts) != 4 or any(not (math.isfinite(p) and p >= 0) for p in parts) or \
            sum(parts) <= 0:
        fail(f"--mix: {text!r} is not four non-negative shares TRAIN,FINETUNE,INFERENCE,MIG "
             f"(e.g. 0.05,0.35,0.02,0.58)")
    return parts[0], parts[1], parts[2], parts[3]


# Fields the library blames, and the flags users typed for them.
FLAGS = {"server": "--server", "nodes": "--nodes", "jobs": "--jobs", "seed": "--seed",
         "failure_rate_per_node_hour": "--failure-rate", "horizon_s": "--days",
         "trace": "TRACE.csv", "upgrade": "--upgrade-batch"}


def _bound(flag: str, v: float, low: float, strict: bool = False) -> None:
    """Exit 2 naming ``flag`` unless ``v`` is finite and above (or at least) ``low``."""
    if not math.isfinite(v) or (v <= low if strict else v < low):
        fail(f"{flag}: must be {'>' if strict else '>='} {low:g}, got {v:g}")


def schedule(
    ctx: typer.Context,
    trace: Path | None = typer.Argument(
        None, help="Job trace CSV (columns: docs/operations.md#scheduling)."
    ),
    synthetic: bool = typer.Option(False, "--synthetic", help="Generate a seeded job mix."),
    jobs: int = typer.Option(500, "--jobs", help="Synthetic: number of jobs."),
    mix: str = typer.Option(
        "0.05,0.35,0.02,0.58", "--mix", help="Synthetic: shares of train,finetune,inference,mig."
    ),
    policy: str = typer.Option("fifo", "--policy", help="fifo, backfill or priority."),
    topology_aware: bool = typer.Option(
        False, "--topology-aware", help="Place gangs in one leaf group, SU or pod when possible."
    ),
    server: str = typer.Option("dgx-h100", "--server", help="Server catalog id."),
    nodes: int = typer.Option(64, "--nodes", help="Servers in the cluster."),
    oversubscription: float = typer.Option(
        1.0, "--oversubscription", help="Leaf down:up ratio of the designed fabric."
    ),
    days: float = typer.Option(7.0, "--days", help="Simulated days."),
    seed: int = typer.Option(0, "--seed", help="Seed of failures and the synthetic mix."),
    failure_rate: float | None = typer.Option(
        None, "--failure-rate",
        help="Node failures per node-hour (default: the catalog's failure modes, derived from "
        "Llama 3 Table 5, for this GPU and cluster size); 0 = none.",
    ),
    repair_h: float = typer.Option(4.0, "--repair-h", help="Hours to repair a failed node."),
    restart_min: float = typer.Option(10.0, "--restart-min", help="Restart cost of a gang, min."),
    upgrade_batch: int | None = typer.Option(
        None, "--upgrade-batch",
        help="Rolling firmware upgrade: hosts drained at a time (a rack-scale system's "
             "compute trays are hosts)."
    ),
    upgrade_batch_h: float = typer.Option(2.0, "--upgrade-batch-h", help="Hours per batch."),
    upgrade_start_h: float = typer.Option(24.0, "--upgrade-start-h", help="Rollout start, h."),
    drain_timeout_h: float = typer.Option(
        4.0, "--drain-timeout-h", help="Hours running work may finish before it is stopped."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Simulate a job mix (gang training and fine-tuning, diurnal inference services, MIG
    jobs) under a scheduling policy, with node failures and an optional rolling upgrade."""
    from clusterwright.plan.schedule import ScheduleRequest, schedule_cluster
    from clusterwright.sim.cluster import POLICIES

    if (trace is None) == (not synthetic):
        fail("give a TRACE.csv or --synthetic (exactly one)")
    if policy not in POLICIES:
        fail(f"--policy: unknown {policy!r} (one of {', '.join(POLICIES)})")
    if nodes < 1:
        fail(f"--nodes must be at least 1, got {nodes}")
    if jobs < 0:
        fail(f"--jobs must not be negative, got {jobs}")
    _bound("--days", days, 0.0, strict=True)
    _bound("--upgrade-batch-h", upgrade_batch_h, 0.0, strict=True)
    _bound("--oversubscription", oversubscription, 1.0)
    for flag, v in (("--repair-h", repair_h), ("--restart-min", restart_min),
                    ("--upgrade-start-h", upgrade_start_h),
                    ("--drain-timeout-h", drain_timeout_h)):
        _bound(flag, v, 0.0)
    if failure_rate is not None:
        _bound("--failure-rate", failure_rate, 0.0)
    if upgrade_batch is not None and upgrade_batch < 1:
        fail(f"--upgrade-batch must be at least 1, got {upgrade_batch}")
    lim.within(("--nodes", nodes, lim.NODES), ("--jobs", jobs, lim.SCHEDULE_JOBS),
               ("--days", days, lim.SCHEDULE_DAYS), ("--seed", seed, lim.SEED),
               ("--failure-rate", failure_rate, lim.FAILURE_RATE),
               ("--repair-h", repair_h, lim.HOURS), ("--restart-min", restart_min, lim.RESTART_MIN),
               ("--upgrade-batch-h", upgrade_batch_h, lim.HOURS),
               ("--upgrade-start-h", upgrade_start_h, lim.HOURS),
               ("--drain-timeout-h", drain_timeout_h, lim.HOURS))
    req = ScheduleRequest(
        server=server, nodes=nodes, oversubscription=oversubscription, policy=policy,
        topology_aware=topology_aware, days=days, seed=seed, trace=trace,
        jobs=jobs, mix=_mix(mix), failure_rate_per_node_hour=failure_rate,
        repair_h=repair_h, restart_min=restart_min,
        upgrade=None if upgrade_batch is None else (upgrade_batch, upgrade_batch_h,
                                                   upgrade_start_h, drain_timeout_h))
    with user_errors():
        cat = state(ctx).catalog()
    with user_errors(FLAGS, name_flags=True):
        data = schedule_cluster(cat, req)
    if as_json:
        emit_json(data)
    else:
        _render(data)


def _f(v: float | None, fmt: str = ".1f") -> str:
    return "-" if v is None else format(v, fmt)


def _render(d: dict[str, Any]) -> None:
    console.print(
        f"[bold]{d['policy']}[/]{' + topology-aware' if d['topology_aware'] else ''} on "
        f"{d['nodes']} x {d['server']} ("
        + (f"{d['hosts']:,} hosts, " if d["hosts"] != d["nodes"] else "")
        + f"{d['gpus']:,} GPUs), {d['days']:g} days, "
        f"{d['jobs']:,} jobs: GPU utilization [bold]{d['gpu_utilization_mean']:.1%}[/] "
        f"({d['gpu_utilization_of_available']:.1%} of GPUs in service)"
    )
    t = Table(title="Jobs by kind (hours)", show_edge=False)
    for col in ("kind", "submitted", "finished", "wait p50", "wait p90", "wait p99",
                "JCT p50", "JCT p90", "preempted", "failed"):
        t.add_column(col, justify="left" if col == "kind" else "right")
    for kind in KINDS:
        k = d["by_kind"][kind]
        if not k["submitted"]:
            continue
        q, c = k["queueing_delay_h"], k["completion_time_h"]
        t.add_row(kind, str(k["submitted"]), str(k["finished"]), _f(q["p50"]), _f(q["p90"]),
                  _f(q["p99"]), _f(c["p50"]), _f(c["p90"]), str(k["preemptions"]),
                  str(k["failures"]))
    console.print(t)
    g = d["gpu_hours"]
    console.print(
        f"GPU-hours: {g['allocated']:,.0f} allocated of {g['capacity']:,.0f}; lost to failures "
        f"{g['lost_to_failures']:,.0f}, to preemption {g['lost_to_preemption']:,.0f}; down for "
        f"repair {g['down_for_repair']:,.0f} ({d['node_failures']} node failures)"
    )
    fr = d["fragmentation"]
    console.print(
        f"fragmentation: {fr['stranded_gpu_fraction_mean']:.1%} of GPUs free but unusable by the "
        f"blocked head job (mean); {fr['gang_jobs_across_sus_fraction']:.0%} of gang starts "
        f"across SUs, {fr['gang_jobs_across_pods_fraction']:.0%} across pods"
    )
    inf = d["inference"]
    if inf["services"]:
        console.print(
            f"inference: {inf['services']} services, SLO attainment "
            f"{_f(inf['slo_attainment'], '.1%')} of the time, "
            f"{_f(inf['replica_hours_served_fraction'], '.1%')} of demanded replica-hours"
        )
    up = d.get("upgrade")
    if up:
        console.print(
            f"rolling upgrade: {up['batch_nodes']} hosts at a time, {_f(up['duration_h'])} h, "
            f"{up['gpu_hours_out_of_service']:,.0f} GPU-hours out of service, "
            f"{up['jobs_stopped_at_drain_timeout']} jobs stopped at the drain timeout; jobs "
            f"waited {up['mean_queueing_delay_increase_h']:+.2f} h longer on average"
        )
    for n in d.get("notes", []):
        console.print(f"  note: {n}")
    console.print(f"[dim]{d['events']:,} events, simulated in "
                  f"{d['timings']['sim_wall_s']:.2f} s[/]")
