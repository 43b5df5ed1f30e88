"""The one reliability pipeline: interruptions at a scale, the checkpoint plan, hot spares and a
Monte Carlo of time to train (``sim/reliability``), for ``ops reliability`` and for the
scenario planner's largest training job (with one seeded sample timeline).

``interruptions`` counts expected failures by cause over a window from the catalog's failure
modes and the fleet's units (GPUs, hosts, switches, links); ``forecast_run`` plans the
checkpoints of a run (Young and Daly intervals, ETTR, the wait for a spare) and simulates it,
with the analytical wall time beside the simulated distribution. Both return frozen results.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from clusterwright.catalog.schema import FailureMode
from clusterwright.design.blueprint import (
    Candidate,
)
from clusterwright.design.train_goodput import checkpoint_cost
from clusterwright.errors import InfeasibleError, InputError
from clusterwright.model import reliability as rel
from clusterwright.plan.context import (
    MAX_CHECKPOINT_EVENTS,
    MAX_TIMELINE_EVENTS,
    TIMELINE_DAYS,
    PlanRun,
)
from clusterwright.plan.design import DesignedCluster
from clusterwright.sim.reliability import RunSpec, simulate_run


@dataclass(frozen=True)
class Interruptions:
    """Expected interruptions of a fleet over ``hours`` hours, by failure mode."""

    hours: float
    by_cause: dict[str, float]  # unexpected interruptions
    planned: dict[str, float]  # planned maintenance
    job_mtbf_hours: float  # inf when nothing in the catalog can fail at this scale
    job_mtbf_hours_with_planned: float
    by_category: dict[str, float]
    categories: dict[str, str]  # failure mode -> category
    repair_fraction: float  # share of failures that take a node out for repair

    @property
    def total(self) -> float:
        return sum(self.by_cause.values())


def interruptions(modes: list[FailureMode], units: rel.FleetUnits, hours: float) -> Interruptions:
    """Interruptions of a job on ``units`` over ``hours`` hours (Llama 3 Table 5 rates per
    unit, scaled; ``model/reliability``)."""
    exp = rel.expected_interruptions(modes, units, hours)
    planned = rel.expected_interruptions([m for m in modes if m.planned], units, hours,
                                         include_planned=True)
    return Interruptions(
        hours, exp, planned, rel.job_mtbf_hours(modes, units),
        rel.job_mtbf_hours(modes, units, True), rel.by_category(modes, exp),
        {m.id: m.category for m in modes}, rel.repair_fraction(modes, units))


def spare_coverage(mtbf_h: float, repair_fraction: float, repair_h: float,
                   spares: int) -> dict[str, float]:
    """How ``spares`` hot spare nodes cover failures that take a node out for ``repair_h``
    hours (an M/M/c-style loss model, ``model/reliability``); the wait is per failure, s."""
    lam = repair_fraction / mtbf_h  # node failures needing repair, per hour
    return {
        "hot_spares": float(spares),
        "repair_hours": repair_h,
        "repair_fraction": repair_fraction,
        "node_failures_per_hour": lam,
        "spare_coverage_probability": rel.spare_coverage_probability(lam, repair_h, spares),
        "spare_shortfall_probability": rel.spare_shortfall_probability(lam, repair_h, spares),
        "expected_spare_wait_s": repair_fraction * rel.expected_spare_wait_s(lam, repair_h,
                                                                             spares),
    }


@dataclass(frozen=True)
class RunInputs:
    """A checkpointed training run to forecast (seconds, hours where named)."""

    work_s: float  # failure-free compute
    checkpoint_write_s: float
    restart_s: float  # per interruption, lost work excluded
    repair_hours: float  # a failed node is out this long
    interval_s: float | None = None  # compute between checkpoints; None: Daly's optimum
    hot_spares: int | None = None  # None: a replacement is always at hand
    trials: int = 1000
    seed: int = 0


@dataclass(frozen=True)
class RunForecast:
    """The checkpoint plan and the Monte Carlo of one run, with the analytical wall time."""

    checkpoint: rel.CheckpointPlan  # Young, Daly, ETTR at Daly (with the spare wait)
    interval_s: float  # the interval the run used
    spare_wait_s: float  # mean wait for a spare per failure
    spare: dict[str, float] | None  # spare_coverage, with hot spares
    spec: RunSpec
    summary: dict[str, Any]  # RunResult.summary(): percentiles of days, interruptions, ETTR
    analytical_wall_s: float

    @property
    def analytical_ettr(self) -> float:
        return self.spec.work_s / self.analytical_wall_s


def forecast_run(inter: Interruptions, run: RunInputs) -> RunForecast:
    """Plan the checkpoints of ``run`` under ``inter``'s failure rate and simulate it
    (``sim/reliability.simulate_run``, ``run.trials`` trials from ``run.seed``). Raises
    InfeasibleError when nothing can fail (no MTBF to plan against) and InputError (field
    ``trials``, ``spares``, ...) on bad run inputs."""
    mtbf_s = inter.job_mtbf_hours * rel.HOUR
    if not math.isfinite(mtbf_s):
        raise InfeasibleError("gpus: nothing in the catalog can fail at this scale; no Monte "
                              "Carlo to run", "no_failures", field="gpus")
    spare = None
    wait = 0.0
    if run.hot_spares is not None:
        spare = spare_coverage(inter.job_mtbf_hours, inter.repair_fraction, run.repair_hours,
                               run.hot_spares)
        wait = spare["expected_spare_wait_s"]
    cp = rel.checkpoint_plan(run.checkpoint_write_s, mtbf_s, run.restart_s, wait)
    tau = run.interval_s or cp.daly_interval_s
    spec = RunSpec(work_s=run.work_s, interval_s=tau, checkpoint_s=run.checkpoint_write_s,
                   restart_s=run.restart_s, mtbf_s=mtbf_s, repair_fraction=inter.repair_fraction,
                   repair_s=run.repair_hours * rel.HOUR, spares=run.hot_spares)
    res = simulate_run(spec, trials=run.trials, seed=run.seed)
    analytic = rel.expected_wall_time_s(run.work_s, tau, run.checkpoint_write_s, mtbf_s,
                                        run.restart_s, wait)
    return RunForecast(cp, tau, wait, spare, spec, res.summary(), analytic)


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
    day = interruptions(modes, units, 24.0)
    mtbf_h = day.job_mtbf_hours
    arch = run.models[row["name"]]
    n = row["gpus"]
    ck = checkpoint_cost(cat, arch, n)
    out: dict[str, Any] = {
        "workload": row["name"], "gpus": n,
        "expected_interruptions_per_day": day.total,
        "job_mtbf_hours": mtbf_h if math.isfinite(mtbf_h) else None,
        "by_cause": day.by_cause, "by_category": day.by_category,
        "rate_basis": ("failure modes for " + cand.gpu) if any(
            cand.gpu in m.gpus for m in cat.all("failure_modes"))
        else "generic failure modes (rates measured on H100, Llama 3 Table 5)",
        "fabric_units": {"switches": units.switches, "links": units.links},
        "ettr": None, "timeline": [], "monte_carlo": None,
    }
    ckpt: dict[str, Any] = {"bytes": ck.bytes, "write_s": ck.write_s, "restart_s": ck.restart_s,
                            "restore_s": ck.read_s, "interval_s": None, "ettr": None}
    row["checkpoint"] = ckpt
    if not math.isfinite(mtbf_h) or row["time_to_train_days"] is None:
        return out
    # The failure-free work: the steps and the evaluation passes (time_to_train_days is the
    # production time, failures already in).
    work = row["compute_days"] * rel.DAY * (1.0 + row["production"]["eval_fraction"])
    inputs = RunInputs(work_s=work, checkpoint_write_s=ck.write_s, restart_s=ck.restart_s,
                       repair_hours=cat.assumption("reliability_node_repair_hours"),
                       trials=200 if run.quick else 1000, seed=run.scenario.seed)
    cp = rel.checkpoint_plan(ck.write_s, mtbf_h * rel.HOUR, ck.restart_s)
    ckpt.update(interval_s=cp.daly_interval_s, ettr=cp.ettr, young_interval_s=cp.young_interval_s)
    out["ettr"] = cp.ettr
    try:
        fc = forecast_run(day, inputs)
    except InputError as exc:
        run.notes.append(f"reliability Monte Carlo skipped: {exc}")
        return out
    q = fc.summary["time_to_train_days"]
    row.update(time_to_train_days_p10=q["p10"], time_to_train_days_p50=q["p50"],
               time_to_train_days_p90=q["p90"])
    mc = dict(fc.summary)
    mc["analytical_time_to_train_days"] = fc.analytical_wall_s / rel.DAY
    out["monte_carlo"] = mc
    out["timeline"] = sample_timeline(fc.spec, modes, units, run.scenario.seed)
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
