"""Failures of the recommendation's largest training job: interruptions, checkpoint plan, a Monte
Carlo of time to train and one seeded sample timeline."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from clusterwright.design.blueprint import (
    Candidate,
)
from clusterwright.design.train_goodput import checkpoint_cost
from clusterwright.errors import InputError
from clusterwright.model import reliability as rel
from clusterwright.plan.context import (
    MAX_CHECKPOINT_EVENTS,
    MAX_TIMELINE_EVENTS,
    TIMELINE_DAYS,
    PlanRun,
)
from clusterwright.plan.design import DesignedCluster
from clusterwright.sim.reliability import RunSpec, simulate_run


def reliability_view(run: PlanRun, cand: Candidate, d: DesignedCluster) -> dict[str, Any] | None:
    """Interruptions of the largest training job, its checkpoint plan, a Monte Carlo of time
    to train with failures and one seeded sample timeline of the first days."""
    rows = [r for r in cand.detail["workloads"] if r["kind"] == "training"]
    if not rows:
        return None
    row = max(rows, key=lambda r: r["gpus"])
    cat, server = run.cat, d.fab.server
    fsum = d.power.summary
    share = row["gpus"] / max(cand.gpus or 1, 1)
    links = fsum.backend_links
    switches = fsum.backend_switches
    per_host = server.gpus // server.hosts
    units = rel.FleetUnits(gpus=float(row["gpus"]), hosts=float(math.ceil(row["gpus"] / per_host)),
                           switches=float(switches) * share, links=float(links) * share)
    modes = rel.modes_for_gpu(cat.all("failure_modes"), cand.gpu)
    per_day = rel.expected_interruptions(modes, units, 24.0)
    mtbf_h = rel.job_mtbf_hours(modes, units)
    arch = run.models[row["name"]]
    n = row["gpus"]
    ck = checkpoint_cost(cat, arch, n)
    size, write_s, read_s, restart = ck.bytes, ck.write_s, ck.read_s, ck.restart_s
    out: dict[str, Any] = {
        "workload": row["name"], "gpus": n,
        "expected_interruptions_per_day": sum(per_day.values()),
        "job_mtbf_hours": mtbf_h if math.isfinite(mtbf_h) else None,
        "by_cause": per_day, "by_category": rel.by_category(modes, per_day),
        "rate_basis": ("failure modes for " + cand.gpu) if any(
            cand.gpu in m.gpus for m in cat.all("failure_modes"))
        else "generic failure modes (rates measured on H100, Llama 3 Table 5)",
        "fabric_units": {"switches": units.switches, "links": units.links},
        "ettr": None, "timeline": [], "monte_carlo": None,
    }
    ckpt: dict[str, Any] = {"bytes": size, "write_s": write_s, "restart_s": restart,
                            "restore_s": read_s, "interval_s": None, "ettr": None}
    row["checkpoint"] = ckpt
    if not math.isfinite(mtbf_h) or row["time_to_train_days"] is None:
        return out
    mtbf_s = mtbf_h * rel.HOUR
    cp = rel.checkpoint_plan(write_s, mtbf_s, restart)
    ckpt.update(interval_s=cp.daly_interval_s, ettr=cp.ettr, young_interval_s=cp.young_interval_s)
    out["ettr"] = cp.ettr
    # The failure-free work: the steps and the evaluation passes (time_to_train_days is the
    # production time, failures already in).
    work = row["compute_days"] * rel.DAY * (1.0 + row["production"]["eval_fraction"])
    repair_f = rel.repair_fraction(modes, units)
    spec = RunSpec(work_s=work, interval_s=cp.daly_interval_s, checkpoint_s=write_s,
                   restart_s=restart, mtbf_s=mtbf_s, repair_fraction=repair_f,
                   repair_s=cat.assumption("reliability_node_repair_hours") * rel.HOUR)
    try:
        res = simulate_run(spec, trials=200 if run.quick else 1000, seed=run.scenario.seed)
    except InputError as exc:
        run.notes.append(f"reliability Monte Carlo skipped: {exc}")
        return out
    q = rel.percentiles(res.wall_s / rel.DAY)
    row.update(time_to_train_days_p10=q["p10"], time_to_train_days_p50=q["p50"],
               time_to_train_days_p90=q["p90"])
    mc = res.summary()
    mc["analytical_time_to_train_days"] = rel.expected_wall_time_s(
        work, cp.daly_interval_s, write_s, mtbf_s, restart) / rel.DAY
    out["monte_carlo"] = mc
    out["timeline"] = sample_timeline(spec, modes, units, run.scenario.seed)
    return out


def sample_timeline(spec: RunSpec, modes: list[Any], units: rel.FleetUnits,
                    seed: int) -> list[dict[str, Any]]:
    """One seeded sample run's events in its first ``TIMELINE_DAYS`` days (or to the end):
    checkpoints after every ``interval_s`` of compute, failures (cause drawn in proportion to
    its rate), restarts. Times in hours from the start. With more than ``MAX_CHECKPOINT_EVENTS``
    checkpoints in the window, one event stands for several (``checkpoints``: how many were
    written since the previous checkpoint event), so the whole window stays readable."""
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed, 7])))
    rates = rel.rates_per_hour(modes, units)
    causes = list(rates)
    p = np.array([rates[k] for k in causes])
    p = p / p.sum()
    horizon = min(TIMELINE_DAYS * rel.DAY, 3 * spec.work_s)
    events: list[dict[str, Any]] = []
    t, done = 0.0, 0.0  # wall time; compute saved in checkpoints
    stride = max(1, math.ceil(horizon / (spec.interval_s + spec.checkpoint_s)
                              / MAX_CHECKPOINT_EVENTS))
    unlogged = 0
    next_fail = rng.exponential(spec.mtbf_s)
    while t < horizon and done < spec.work_s and len(events) < MAX_TIMELINE_EVENTS:
        seg = min(spec.interval_s, spec.work_s - done) + spec.checkpoint_s
        if next_fail >= t + seg:
            t += seg
            done += seg - spec.checkpoint_s
            unlogged += 1
            if unlogged == stride:
                events.append({"t_h": t / 3600, "event": "checkpoint", "cause": None,
                               "checkpoints": unlogged})
                unlogged = 0
            continue
        t = next_fail
        cause = causes[int(rng.choice(len(causes), p=p))]
        events.append({"t_h": t / 3600, "event": "failure", "cause": cause})
        # The restart; a failure during it starts it over.
        while True:
            gap = rng.exponential(spec.mtbf_s)
            if gap >= spec.restart_s:
                t += spec.restart_s
                next_fail = t + gap - spec.restart_s
                break
            t += gap
            events.append({"t_h": t / 3600, "event": "failure",
                           "cause": causes[int(rng.choice(len(causes), p=p))]})
        events.append({"t_h": t / 3600, "event": "restart", "cause": None})
    return [e for e in events if e["t_h"] * 3600 <= horizon]
