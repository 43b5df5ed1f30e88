"""The one reliability pipeline: interruptions at a scale, the checkpoint plan, hot spares and a
Monte Carlo of time to train (``sim/reliability``), for ``ops reliability`` and for the
scenario planner's largest training job (with one seeded sample timeline).

``interruptions`` counts expected failures by cause over a window from the catalog's failure
modes and the fleet's units (GPUs, hosts, switches, links); ``failure_model`` adds what a real
fleet does beyond i.i.d. failures, on the job's layout (racks, rows, rail leaves): node losses
by domain, lemon nodes, fail-slow stragglers, each with its catalog source; ``forecast_run``
plans the checkpoints of a run (Young and Daly intervals, ETTR, the wait for a spare) and
simulates it, with the analytical wall time beside the simulated distribution. All return
frozen results.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from clusterwright.catalog.registry import Catalog
from clusterwright.catalog.schema import FailureMode, Server
from clusterwright.design.blueprint import (
    Candidate,
)
from clusterwright.design.fabric import Fabric
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


# --------------------------------------------------------------------------- fleet model

# Spares are recommended to cover the nodes in repair this often (plan/cluster.py's level).
SPARE_COVERAGE = 0.99
# The catalog constants of the fleet model, in the order a report lists them.
FLEET_ASSUMPTIONS = (
    "reliability_restart_overhead_s", "reliability_nccl_init_s_at_4k_gpus",
    "reliability_node_repair_hours", "reliability_node_reset_share",
    "reliability_node_reset_hours", "lemon_node_fraction", "lemon_rate_multiplier",
    "rack_failure_share", "rack_failure_repair_hours", "pdu_failure_share",
    "pdu_failure_repair_hours", "leaf_switch_failures_per_year", "leaf_switch_repair_hours",
    "fail_slow_per_node_hour", "fail_slow_mean_hours", "fail_slow_slowdown",
)


@dataclass(frozen=True)
class Layout:
    """Where the job's nodes sit: the failure domains a correlated failure takes out."""

    nodes_per_rack: int
    nodes_per_row: int  # a power domain (PDU or busway): one row of racks
    nodes_per_leaf: int  # hosts behind one rail leaf (a leaf group of a scalable unit)
    leaves: float  # leaf switches serving the job (every rail)
    basis: str  # "designed fabric" or how it was estimated


def layout_of(fab: Fabric, share: float = 1.0) -> Layout:
    """The failure domains of a designed fabric: hosts per compute rack (the fullest), per row,
    per rail leaf; the job's ``share`` of the leaves."""
    hosts_of = {d.name for d in fab.devices if d.role == "host"}
    per_rack = max((sum(1 for n in r.devices if n in hosts_of) for r in fab.racks
                    if r.kind == "compute"), default=1) or 1
    rows: dict[int, int] = {}
    for r in fab.racks:
        rows[r.row] = rows.get(r.row, 0) + sum(1 for n in r.devices if n in hosts_of)
    per_row = max(rows.values(), default=per_rack) or per_rack
    sh = fab.shape
    per_leaf = max(1, sh.su_hosts // max(1, sh.leaves_per_rail_su)) if fab.has_backend else 0
    leaves = sh.leaf_switches * share if fab.has_backend else 0.0
    return Layout(per_rack, per_row, per_leaf, leaves, "designed fabric")


def layout_estimate(cat: Catalog, server: Server | None, gpus: int, radix: int = 64) -> Layout:
    """The failure domains without a design: racks at the server's cooling limit (one rack-scale
    system per rack), a SuperPOD-style scalable unit of radix/2 hosts per rail leaf and per row."""
    per_host = server.gpus // server.hosts if server else 8
    hosts = math.ceil(gpus / per_host)
    if server is None:
        per_rack = 4
    elif server.kind == "rack":
        per_rack = server.hosts
    else:
        cap = cat.assumption(f"{server.cooling}_cooled_rack_max_kw")
        by_units = round(cat.assumption("rack_usable_units")) // server.rack_units
        per_rack = max(1, min(math.floor(cap / server.max_power_kw + 1e-9), by_units))
        per_rack *= server.hosts
    su = max(1, radix // 2)
    rails = server.rails if server else 8
    leaves = 0.0 if hosts <= 1 else math.ceil(hosts / su) * rails
    return Layout(per_rack, max(per_rack, su), su if hosts > 1 else 0, leaves,
                  f"estimated: racks at the {server.cooling if server else 'air'}-cooling "
                  f"limit, scalable units of {su} hosts (radix {radix})")


@dataclass(frozen=True)
class FailureModel:
    """Everything the Monte Carlo draws from for one job, with where each number comes from."""

    mtbf_s: float
    repair_fraction: float
    losses: tuple[rel.NodeLoss, ...]
    nodes: int
    lemon_fraction: float
    lemon_multiplier: float
    lemon_share: float
    fail_slow_per_hour: float  # whole job, per hour of compute
    fail_slow_mean_s: float
    fail_slow_slowdown: float
    fail_slow_stretch: float  # expected stretch of the compute
    fleets: tuple[str, ...]
    layout: Layout

    def spec(self, work_s: float, interval_s: float, checkpoint_s: float, restart_s: float,
             spares: int | None) -> RunSpec:
        return RunSpec(
            work_s=work_s, interval_s=interval_s, checkpoint_s=checkpoint_s,
            restart_s=restart_s, mtbf_s=self.mtbf_s, repair_fraction=self.repair_fraction,
            repair_s=self.losses[0].repair_s if self.losses else 0.0, spares=spares,
            losses=self.losses, nodes=self.nodes, lemon_fraction=self.lemon_fraction,
            lemon_multiplier=self.lemon_multiplier, lemon_share=self.lemon_share,
            fail_slow_per_hour=self.fail_slow_per_hour, fail_slow_mean_s=self.fail_slow_mean_s,
            fail_slow_slowdown=self.fail_slow_slowdown)

    def mean_wait_s(self, spares: int | None) -> float:
        """Mean wait for nodes per failure (analytical, one node per loss; M/G/inf)."""
        if spares is None:
            return 0.0
        mtbf_h = self.mtbf_s / rel.HOUR
        out = 0.0
        for x in self.losses:
            lam = x.probability * x.nodes / mtbf_h
            rep_h = x.mean_repair_s / rel.HOUR
            out += x.probability * rel.expected_spare_wait_s(lam, rep_h, max(0, spares - x.nodes
                                                                               + 1))
        return out

    def nodes_in_repair(self) -> float:
        """Mean nodes out for repair at once (M/G/inf: arrival rate x mean repair time)."""
        per_h = rel.HOUR / self.mtbf_s
        return sum(x.probability * x.nodes * per_h * x.mean_repair_s / rel.HOUR
                   for x in self.losses)

    def spares_for(self, coverage: float = 0.99) -> int:
        """The fewest hot spares that cover the nodes out for repair with ``coverage``
        (P(Poisson(nodes in repair) <= S)). A rack, power-domain or leaf loss may still wait
        for its short repair (hours): covering those would take a scalable unit of spares."""
        mean = self.nodes_in_repair()
        k = 0
        while rel.spare_coverage_probability(1.0, mean, k) < coverage:
            k += 1
        return k

    def as_dict(self) -> dict[str, Any]:
        return {
            "fleets": list(self.fleets),
            "layout": {"nodes_per_rack": self.layout.nodes_per_rack,
                       "nodes_per_row": self.layout.nodes_per_row,
                       "nodes_per_leaf": self.layout.nodes_per_leaf,
                       "leaves": self.layout.leaves, "basis": self.layout.basis},
            "node_losses": [{"kind": x.kind, "probability_per_failure": x.probability,
                             "nodes": x.nodes, "repair_hours": x.repair_s / rel.HOUR,
                             "reset_share": x.reset_share, "reset_hours": x.reset_s / rel.HOUR}
                            for x in self.losses],
            "lemons": {"nodes": self.nodes, "fraction": self.lemon_fraction,
                       "rate_multiplier": self.lemon_multiplier,
                       "node_attached_share": self.lemon_share,
                       "expected_in_job": self.nodes * self.lemon_fraction},
            "fail_slow": {"episodes_per_hour": self.fail_slow_per_hour,
                          "mean_hours": self.fail_slow_mean_s / rel.HOUR,
                          "slowdown": self.fail_slow_slowdown,
                          "expected_stretch": self.fail_slow_stretch},
        }


def failure_model(cat: Catalog, modes: list[FailureMode], units: rel.FleetUnits,
                  layout: Layout) -> FailureModel:
    """The fleet model of a job on ``units`` laid out as ``layout`` (catalog constants in
    ``FLEET_ASSUMPTIONS``). InfeasibleError naming ``gpus`` when nothing can fail."""
    a = cat.assumption
    mtbf_h = rel.job_mtbf_hours(modes, units)
    if not math.isfinite(mtbf_h):
        raise InfeasibleError("gpus: nothing in the catalog can fail at this scale",
                              "no_failures", field="gpus")
    nodes = int(units.hosts)
    losses = rel.node_losses(
        rel.repair_fraction(modes, units), rel.category_share(modes, units, "network"),
        job_nodes=nodes, rack_nodes=layout.nodes_per_rack, row_nodes=layout.nodes_per_row,
        leaf_nodes=layout.nodes_per_leaf, rack_share=a("rack_failure_share"),
        pdu_share=a("pdu_failure_share"),
        leaf_rate_per_hour=a("leaf_switch_failures_per_year") / 8760.0 * layout.leaves,
        failures_per_hour=1.0 / mtbf_h, repair_s=a("reliability_node_repair_hours") * rel.HOUR,
        reset_share=a("reliability_node_reset_share"),
        reset_s=a("reliability_node_reset_hours") * rel.HOUR,
        rack_repair_s=a("rack_failure_repair_hours") * rel.HOUR,
        pdu_repair_s=a("pdu_failure_repair_hours") * rel.HOUR,
        leaf_repair_s=a("leaf_switch_repair_hours") * rel.HOUR)
    per_node = a("fail_slow_per_node_hour")
    mean_h = a("fail_slow_mean_hours")
    slowdown = a("fail_slow_slowdown")
    return FailureModel(
        mtbf_s=mtbf_h * rel.HOUR, repair_fraction=rel.repair_fraction(modes, units),
        losses=losses, nodes=nodes, lemon_fraction=a("lemon_node_fraction"),
        lemon_multiplier=a("lemon_rate_multiplier"),
        lemon_share=rel.node_attached_share(modes, units),
        fail_slow_per_hour=per_node * units.hosts if nodes > 1 else 0.0,
        fail_slow_mean_s=mean_h * rel.HOUR, fail_slow_slowdown=slowdown,
        fail_slow_stretch=rel.fail_slow_stretch(per_node, units.hosts if nodes > 1 else 0.0,
                                                mean_h, slowdown),
        fleets=tuple(rel.fleets(modes)), layout=layout)


def fleet_assumptions(cat: Catalog) -> list[dict[str, Any]]:
    """The fleet model's catalog constants with their units and sources (for the report)."""
    out = []
    for name in FLEET_ASSUMPTIONS:
        a = cat.assumptions[name]
        out.append({"name": name, "value": a.value, "unit": a.unit, "source": a.source})
    return out


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
    model: FailureModel | None = None  # the fleet model; None: i.i.d. failures, one node each


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
    analytical_work_s: float | None = None  # the compute stretched by fail-slows

    @property
    def analytical_ettr(self) -> float:
        """Productive time (fail-slow steps included) over the analytical wall time."""
        return (self.analytical_work_s or self.spec.work_s) / self.analytical_wall_s


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
        if run.model is not None:
            wait = run.model.mean_wait_s(run.hot_spares)
            spare["expected_spare_wait_s"] = wait
    cp = rel.checkpoint_plan(run.checkpoint_write_s, mtbf_s, run.restart_s, wait)
    tau = run.interval_s or cp.daly_interval_s
    work = run.work_s
    if run.model is not None:
        spec = run.model.spec(run.work_s, tau, run.checkpoint_write_s, run.restart_s,
                              run.hot_spares)
        work = run.work_s * run.model.fail_slow_stretch
    else:
        spec = RunSpec(work_s=run.work_s, interval_s=tau, checkpoint_s=run.checkpoint_write_s,
                       restart_s=run.restart_s, mtbf_s=mtbf_s,
                       repair_fraction=inter.repair_fraction,
                       repair_s=run.repair_hours * rel.HOUR, spares=run.hot_spares)
    res = simulate_run(spec, trials=run.trials, seed=run.seed)
    analytic = rel.expected_wall_time_s(work, tau, run.checkpoint_write_s, mtbf_s,
                                        run.restart_s, wait)
    return RunForecast(cp, tau, wait, spare, spec, res.summary(), analytic, work)


def reliability_view(run: PlanRun, cand: Candidate, d: DesignedCluster) -> dict[str, Any] | None:
    """Interruptions of the largest training job, its checkpoint plan, a Monte Carlo of time
    to train with failures on the designed layout (node losses by rack, power domain and leaf;
    lemons; fail-slows; the scenario's spare servers and idle nodes as hot spares, waiting for
    repairs when they run out) and one seeded sample timeline of the first days."""
    job = _largest_job(run, cand, d)
    if job is None:
        return None
    row, units, share = job
    cat, server = run.cat, d.fab.server
    all_modes = cat.all("failure_modes")
    modes = rel.modes_for_gpu(all_modes, cand.gpu)
    day = interruptions(modes, units, 24.0)
    mtbf_h = day.job_mtbf_hours
    arch = run.models[row["name"]]
    n = row["gpus"]
    # The checkpoint on the designed storage tier (its stall, persist and restore).
    ck = checkpoint_cost(cat, arch, n, mtbf_s=mtbf_h * rel.HOUR if math.isfinite(mtbf_h)
                         else None, server=server, storage=d.storage,
                         mode=run.scenario.storage.checkpoint)
    # Hot spares: the scenario's spare servers and the servers no workload uses, as hosts.
    info = cand.detail.get("cluster") or {}
    spares = int((info.get("spare_nodes", 0) + info.get("idle_nodes", 0)) * server.hosts)
    names = "; ".join(rel.fleets(modes)) or "catalog failure modes"
    out: dict[str, Any] = {
        "workload": row["name"], "gpus": n,
        "expected_interruptions_per_day": day.total,
        "job_mtbf_hours": mtbf_h if math.isfinite(mtbf_h) else None,
        "by_cause": day.by_cause, "by_category": day.by_category,
        "rate_basis": (f"failure modes for {cand.gpu}: {names}") if any(
            cand.gpu in m.gpus for m in all_modes)
        else f"generic failure modes ({names}; rates measured on H100)",
        "fabric_units": {"switches": units.switches, "links": units.links},
        "hot_spares": spares,
        "ettr": None, "timeline": [], "monte_carlo": None,
    }
    ckpt: dict[str, Any] = {"bytes": ck.bytes, "write_s": ck.write_s, "restart_s": ck.restart_s,
                            "restore_s": ck.read_s, "interval_s": None, "ettr": None,
                            "mode": ck.mode, "persist_s": ck.persist_s,
                            "storage_system": ck.storage.system.id if ck.storage else None}
    row["checkpoint"] = ckpt
    if not math.isfinite(mtbf_h) or row["time_to_train_days"] is None:
        return out
    fm = failure_model(cat, modes, units, layout_of(d.fab, share))
    out["failure_model"] = fm.as_dict()
    out["failure_assumptions"] = fleet_assumptions(cat)
    # The failure-free work: the steps and the evaluation passes (time_to_train_days is the
    # production time, failures already in).
    work = row["compute_days"] * rel.DAY * (1.0 + row["production"]["eval_fraction"])
    interval = ck.interval_s(mtbf_h * rel.HOUR)
    inputs = RunInputs(work_s=work, checkpoint_write_s=ck.write_s, restart_s=ck.restart_s,
                       repair_hours=cat.assumption("reliability_node_repair_hours"),
                       interval_s=interval, hot_spares=spares,
                       trials=200 if run.quick else 1000, seed=run.scenario.seed, model=fm)
    wait = fm.mean_wait_s(spares)
    cp = rel.checkpoint_plan(ck.write_s, mtbf_h * rel.HOUR, ck.restart_s, wait)
    at = rel.ettr(interval, ck.write_s, mtbf_h * rel.HOUR, ck.restart_s, wait)
    ckpt.update(interval_s=interval, ettr=at, young_interval_s=cp.young_interval_s,
                daly_interval_s=cp.daly_interval_s)
    out["ettr"] = at
    out["ettr_analytical"] = at
    out["expected_spare_wait_s_per_failure"] = wait
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
    mc["gpu_hours_lost"] = {k: v * n for k, v in fc.summary["hours_lost"].items()}
    out["monte_carlo"] = mc
    # ETTR from the same Monte Carlo as the time to train: productive time over the mean
    # wall time. Restarts, lost work, checkpoints and waits for nodes count against it;
    # fail-slow steps are slow but productive (Kokolis et al.'s definition, which Meta's
    # "more than 90 %" uses), so they stretch the time to train, not the ETTR.
    out["ettr"] = _ettr(fc)
    out["timeline"] = sample_timeline(fc.spec, modes, units, run.scenario.seed)
    need = fm.spares_for(SPARE_COVERAGE)
    out["nodes_in_repair_mean"] = fm.nodes_in_repair()
    out["recommended_spares"] = need
    if spares < need:
        # What the recommended spares would buy, from the same Monte Carlo (fewer trials).
        alt = forecast_run(day, replace(inputs, hot_spares=need, trials=200))
        alt_days = alt.summary["time_to_train_days"]
        out["with_recommended_spares"] = {
            "hot_spares": need, "time_to_train_days": alt_days,
            "ettr": _ettr(alt),
            "spare_wait_hours": alt.summary["spare_wait_hours"]}
    return out


def largest_training(cand: Candidate) -> dict[str, Any] | None:
    """The row of the candidate's training job on the most GPUs (the one the reliability view
    and the planner's spares are about); None without a training job."""
    rows = [r for r in cand.detail.get("workloads", []) if r["kind"] == "training"]
    return max(rows, key=lambda r: int(r["gpus"])) if rows else None


def _largest_job(run: PlanRun, cand: Candidate, d: DesignedCluster
                 ) -> tuple[dict[str, Any], rel.FleetUnits, float] | None:
    """The largest training job's row, its fleet units on the designed fabric (its share of
    the backend's switches and links) and that share; None without a training job."""
    row = largest_training(cand)
    if row is None:
        return None
    fsum, server = d.power.summary, d.fab.server
    share = row["gpus"] / max(cand.gpus or 1, 1)
    per_host = server.gpus // server.hosts
    units = rel.FleetUnits(gpus=float(row["gpus"]), hosts=float(math.ceil(row["gpus"] / per_host)),
                           switches=float(fsum.backend_switches) * share,
                           links=float(fsum.backend_links) * share)
    return row, units, share


def designed_repair_mean(run: PlanRun, cand: Candidate, d: DesignedCluster) -> float | None:
    """Mean hosts of the largest training job out for repair at once on the designed layout
    (the failure model the reliability Monte Carlo and its recommended spares use); None
    without a training job or anything in the catalog that fails at this scale."""
    job = _largest_job(run, cand, d)
    if job is None:
        return None
    _, units, share = job
    modes = rel.modes_for_gpu(run.cat.all("failure_modes"), cand.gpu)
    try:
        fm = failure_model(run.cat, modes, units, layout_of(d.fab, share))
    except InfeasibleError:
        return None
    return fm.nodes_in_repair()


def _ettr(fc: RunForecast) -> float:
    """Productive (failure-free plus fail-slow) time over the mean wall time of ``fc``."""
    slow_s = float(fc.summary["hours_lost"]["fail_slow"]) * rel.HOUR
    return (fc.spec.work_s + slow_s) / (float(fc.summary["time_to_train_days"]["mean"]) * rel.DAY)


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
