"""From a scenario to a Blueprint: size every workload on every candidate GPU, design the
cluster each needs, price it, recommend the cheapest that meets every constraint, and
estimate how the recommended design behaves (failures, checkpoints, latency under load).

Stages (each timed in ``timings_s``):

1. sizing, per candidate GPU: training with the training planner (``design/train.py``: the
   fewest GPUs on the ladder meeting ``deadline_days``, else the best layout at ``gpus``);
   inference with the serving planner (``sim/serving_plan.py``) at the peak rate with the
   mean lengths; fine-tuning from its FLOPs (6ND full, 4ND LoRA: ``model.flops``) at the
   training planner's achieved MFU on that GPU, on the inference GPUs its window frees;
2. design: GPUs summed and rounded to whole servers, fabric (``design/bom.py``), racks,
   power (``design/power_plan.py``), TCO (``design/tco_plan.py``);
3. choice (``design/blueprint.choose``): cheapest feasible candidate in the deployment's cost
   basis, the others with why they lost; no feasible one gives ``feasible: false`` with
   the binding constraints;
4. detail on the recommendation: reliability (job MTBF, checkpoint, Daly interval, ETTR, a
   Monte Carlo of time to train and one seeded sample timeline), latency-vs-load curves,
   cost over time, risks.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from clusterwright import __version__
from clusterwright.catalog.references import resolve
from clusterwright.catalog.registry import Catalog
from clusterwright.catalog.schema import Gpu, ModelArch, Server
from clusterwright.design.blueprint import (
    Blueprint,
    Candidate,
    ConstraintName,
    DesignFacts,
    InferenceFacts,
    Violation,
    assess_risks,
    budget_violation,
    choose,
    money,
    violation,
)
from clusterwright.design.bom import plan_fabric, summary
from clusterwright.design.fabric import Fabric
from clusterwright.design.power_plan import PowerPlan, PowerRequest, power_plan
from clusterwright.design.tco_plan import TcoPlan, TcoRequest, tco_plan
from clusterwright.design.train import (
    confidence,
    default_global_batch,
    enumerate_layouts,
    estimate_layout,
    gpu_counts,
    job_for,
    mfu_record,
    pareto_front,
    plan,
    server_for,
    sized,
    smallest_for_deadline,
)
from clusterwright.design.train_goodput import checkpoint_cost, production_time
from clusterwright.errors import InputError
from clusterwright.model import reliability as rel
from clusterwright.model.flops import finetune_flops_per_token
from clusterwright.model.params import total_params
from clusterwright.model.precision import bytes_per, default_kv_precision, training_dtype
from clusterwright.model.training import BREAKDOWN_FIELDS, Job, estimate
from clusterwright.sim import serving_plan
from clusterwright.sim.reliability import RunSpec, simulate_run
from clusterwright.spec.fabric import MAX_NODES as FABRIC_MAX_NODES
from clusterwright.spec.fabric import FabricRequest
from clusterwright.spec.scenario import (
    Diurnal,
    FinetuneWorkload,
    InferenceWorkload,
    Scenario,
    TrainingWorkload,
    Window,
)

Progress = Callable[[str, int, int], None]
TIMELINE_DAYS = 7.0
MAX_TIMELINE_EVENTS = 1000
MAX_CHECKPOINT_EVENTS = 300
CURVE_LOADS = (0.25, 0.5, 0.75, 0.9, 1.0, 1.15)  # fractions of one replica's SLO capacity


def _no_progress(stage: str, done: int, total: int) -> None:
    return None


@dataclass
class _Run:
    scenario: Scenario
    cat: Catalog
    models: dict[str, ModelArch]
    quick: bool
    progress: Progress
    timings: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @contextmanager
    def timed(self, stage: str) -> Iterator[None]:
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.timings[stage] = self.timings.get(stage, 0.0) + time.perf_counter() - t0


# --------------------------------------------------------------------------- candidates


def candidate_gpus(scenario: Scenario, cat: Catalog) -> list[Gpu]:
    """The GPUs to evaluate: ``constraints.gpus``, or with "choose" every catalog GPU that a
    catalog server carries (limited to ``constraints.servers`` when given) and, when the
    scenario serves a model, that a serving calibration covers."""
    c = scenario.constraints
    if isinstance(c.gpus, list):
        return [cat.gpu(g) for g in c.gpus]
    allowed = {cat.server(s).gpu for s in c.servers} if c.servers else None
    serves = any(isinstance(w, InferenceWorkload) for w in scenario.workloads)
    out = []
    for g in cat.all("gpus"):
        if allowed is not None and g.id not in allowed:
            continue
        if server_for(cat, g) is None:
            continue
        if serves and serving_plan.serving_stack(cat, g.id) is None:
            continue
        out.append(g)
    if not out:
        raise InputError("constraints.gpus: 'choose' found no catalog GPU with a server "
                         "(and a serving calibration) among the allowed servers")
    return out


def _server(cat: Catalog, gpu: Gpu, allowed: list[str] | None) -> Server | None:
    if allowed:
        return next((cat.server(s) for s in allowed if cat.server(s).gpu == gpu.id), None)
    return server_for(cat, gpu)


# --------------------------------------------------------------------------- training


def _global_batch(w: TrainingWorkload | FinetuneWorkload) -> int:
    if isinstance(w, TrainingWorkload):
        if w.global_batch is not None:
            return w.global_batch
        if w.global_batch_tokens is not None:
            return max(1, round(w.global_batch_tokens / w.seq_len))
    return default_global_batch(w.seq_len)


def _min_memory_gb(job: Job, gpus: int) -> float | None:
    lay, _ = enumerate_layouts(job, gpus)
    if len(lay) == 0:
        return None
    return float(np.min(estimate(job, lay).memory_bytes)) / 1e9


OPTION_FIELDS = ("schedule", "cp_comm", "ep_overlap", "ep_dispatcher", "fp8_recipe",
                 "tp_overlap")


def _job(run: _Run, i: int, w: TrainingWorkload, gpu: Gpu, server: Server) -> Job | Violation:
    """The workload's job on ``gpu``; a violation if the GPU cannot train it; InputError with
    the field path if the scenario asks what its stack cannot do."""
    arch = run.models[w.name]
    opts = w.options.model_dump(exclude_none=True) if w.options is not None else {}
    try:
        return job_for(run.cat, arch, gpu.id, w.seq_len, _global_batch(w), w.precision,
                       server_id=server.id, stack_id=w.stack, options=opts)
    except InputError as exc:
        if exc.field == "stack" or exc.field in OPTION_FIELDS:
            path = f"workloads[{i}].{'stack' if exc.field == 'stack' else 'options.' + exc.field}"
            raise InputError(f"{path}: {exc}", field=path) from None
        return violation("gpus", None, None, "", f"{gpu.id} cannot train it ({exc})", w.name)


def _fixed_layout(i: int, w: TrainingWorkload, job: Job) -> tuple[dict[str, Any], tuple[str, ...]]:
    """The scenario's fixed layout as ``estimate_layout`` takes it (the rest searched)."""
    lay = w.layout
    assert lay is not None and w.gpus is not None
    n = w.gpus
    path = f"workloads[{i}].layout"
    if n % (lay.tp * lay.pp * lay.cp):
        raise InputError(f"{path}: gpus {n} is not a multiple of tp*pp*cp = "
                         f"{lay.tp * lay.pp * lay.cp}", field=f"{path}.tp")
    dp = n // (lay.tp * lay.pp * lay.cp)
    if (lay.tp * dp * lay.cp) % lay.ep:
        raise InputError(f"{path}.ep: {lay.ep} does not divide tp*dp*cp = "
                         f"{lay.tp * dp * lay.cp}", field=f"{path}.ep")
    if job.global_batch % dp:
        raise InputError(f"{path}: the global batch ({job.global_batch} sequences) is not a "
                         f"multiple of dp = {dp}", field=f"{path}.tp")
    fixed: dict[str, Any] = {"tp": lay.tp, "pp": lay.pp, "dp": dp, "cp": lay.cp, "ep": lay.ep}
    search: list[str] = []
    for name, value in (("interleave", lay.interleave), ("zero", lay.zero),
                        ("micro_batch", lay.micro_batch)):
        if value is None:
            search.append(name)
        else:
            fixed[name] = value
    if lay.recompute is None:
        search.append("recompute")
    else:
        fixed["recompute"] = ("none", "selective", "full").index(lay.recompute)
    if lay.sequence_parallel is None:
        search.append("sp")
    else:
        fixed["sp"] = int(lay.sequence_parallel)
    return fixed, tuple(search)


def _size_training(run: _Run, w: TrainingWorkload, gpu: Gpu,
                   server: Server) -> tuple[dict[str, Any] | None, list[Violation]]:
    """The training row of the blueprint on ``gpu``, or the constraint that stops it.
    Time to train is production time: the steps, evaluation, and the checkpoints, restarts
    and lost work of the failures the reliability model expects (design/train_goodput)."""
    arch = run.models[w.name]
    i = run.scenario.workloads.index(w)
    job = _job(run, i, w, gpu, server)
    if not isinstance(job, Job):
        return None, [job]
    cat = run.cat

    def wall(n: int, compute_s: float) -> float:
        return production_time(cat, arch, gpu.id, server, n, compute_s).days * 86400.0

    bad: list[Violation] = []
    best = None
    n = w.gpus
    if w.layout is not None:
        assert n is not None
        fixed, search = _fixed_layout(i, w, job)
        best = estimate_layout(job, fixed, search)
        if not best.fits:
            return None, [violation("memory", job.gpu.memory_gb, best.memory["total"] / 1e9,
                                    "GB", f"the fixed layout on {n:,} {gpu.id}", w.name)]
    elif n is None:
        assert w.deadline_days is not None  # the scenario requires one of the two
        s = smallest_for_deadline(job, w.tokens, w.deadline_days, wall=wall)
        if s is None:
            unit = job.net.domain_gpus if job.net.domain_gpus > 1 else 8
            front = pareto_front(job, gpu_counts(131072, unit), w.tokens, wall)
            if not front:
                return None, [_memory_violation(job, w.name, unit)]
            s = front[-1]
            bad.append(violation(
                "deadline_days", w.deadline_days, s.time_to_train_days, "days",
                f"fastest on {gpu.id} ({s.gpus:,} GPUs)", w.name))
        n, best = s.gpus, s.best
    else:
        res = plan(job, n, top_n=1)
        if res.best is None:
            return None, [_memory_violation(job, w.name, n)]
        best = res.best
    sp = sized(best, n, w.tokens, wall)
    days = sp.time_to_train_days
    if w.gpus is not None and w.deadline_days is not None and days is not None \
            and days > w.deadline_days:
        bad.append(violation("deadline_days", w.deadline_days, days, "days",
                             f"time to train on {n:,} {gpu.id}", w.name))
    m = best.metrics(gpu, gpu.peak_tflops[training_dtype(job.precision)])
    rec = mfu_record(cat, gpu.id, job.precision)
    assert sp.compute_days is not None
    row: dict[str, Any] = {
        "name": w.name, "kind": "training", "model": arch.id, "gpu": gpu.id, "gpus": n,
        "tokens": w.tokens, "seq_len": w.seq_len, "precision": w.precision,
        "stack": job.stack.id,
        "layout": dict(best.layout),
        "layout_source": "fixed" if w.layout is not None else "planned",
        "step_time_s": best.step_time_s,
        "breakdown": {k: best.breakdown[k] for k in BREAKDOWN_FIELDS},
        "comm_s": dict(best.comm), "overlap": best.overlap,
        "mfu": m["mfu"], "tflops_per_gpu": m["tflops_per_gpu"],
        "tokens_per_s": m["tokens_per_s"],
        "memory_per_gpu_gb": best.memory["total"] / 1e9,
        "confidence": confidence(cat, job, best.layout, n, best.step_time_s),
        "mfu_highest_published": rec.mfu if rec is not None else None,
        "mfu_above_published": (m["mfu"] > rec.mfu) if rec is not None else None,
        "compute_days": sp.compute_days,
        "production": production_time(cat, arch, gpu.id, server, n,
                                      sp.compute_days * 86400.0).as_dict(),
        "time_to_train_days": days, "gpu_hours": sp.gpu_hours,
        "deadline_days": w.deadline_days,
        "checkpoint": None,
        "time_to_train_days_p10": None, "time_to_train_days_p50": None,
        "time_to_train_days_p90": None,
    }
    return row, bad


def _memory_violation(job: Job, name: str, gpus: int) -> Violation:
    need = _min_memory_gb(job, gpus)
    return violation("memory", job.gpu.memory_gb, need, "GB",
                     f"least memory per GPU of any layout on {gpus:,} {job.gpu.id}", name)


# --------------------------------------------------------------------------- inference


def diurnal_multipliers(d: Diurnal) -> list[float]:
    """24 hourly multipliers of the peak rate: the given list, or a cosine from
    ``trough_fraction`` (12 h from the peak) to 1 at ``peak_hour``."""
    if d.hourly is not None:
        return list(d.hourly)
    lo = d.trough_fraction
    return [lo + (1 - lo) * 0.5 * (1 + math.cos(2 * math.pi * (h - d.peak_hour) / 24))
            for h in range(24)]


def _size_inference(run: _Run, w: InferenceWorkload,
                    gpu: Gpu) -> tuple[dict[str, Any] | None, list[Violation]]:
    if serving_plan.serving_stack(run.cat, gpu.id) is None:
        return None, [violation("gpus", None, None, "",
                                f"{gpu.id} has no serving calibration in the catalog", w.name)]
    arch = run.models[w.name]
    kv = w.kv_precision or default_kv_precision(w.precision).value
    inp, out = max(1, round(w.input_len.mean)), max(1, round(w.output_len.mean))
    try:
        sp = serving_plan.plan(
            run.cat, arch, w.qps, inp, out, w.slo.ttft_p99_s, w.slo.tpot_p99_s, gpu=gpu.id,
            precision=w.precision, kv_precision=kv,
            num_requests=400 if run.quick else 1500, seed=run.scenario.seed,
            workers=1 if run.quick else None, rel_tol=0.1 if run.quick else 0.05,
            e2e_p99_s=w.slo.e2e_p99_s)
    except InputError as exc:
        what: ConstraintName = "memory" if "fit" in str(exc) else "gpus"
        need = arch_weights_gb(arch, w.precision) if what == "memory" else None
        return None, [violation(what, gpu.memory_gb if what == "memory" else None, need, "GB",
                                f"weights ({exc})" if what == "memory" else str(exc), w.name)]
    if sp.best is None:
        ach = (sp.best_achievable or {}).get("closest") or {}
        # The SLO missed by the widest margin is the binding one.
        slos = [("ttft_p99_s", "TTFT", w.slo.ttft_p99_s), ("tpot_p99_s", "TPOT", w.slo.tpot_p99_s)]
        if w.slo.e2e_p99_s is not None:
            slos.append(("e2e_p99_s", "end-to-end latency", w.slo.e2e_p99_s))
        key, label, target = max(slos, key=lambda t: ach.get(t[0], math.inf) / t[2])
        v = violation("slo", target, ach.get(key), "s",
                      f"best p99 {label} on {gpu.id} (tp {ach.get('tp')}, light load)", w.name)
        return None, [v]
    b = sp.best
    mult = diurnal_multipliers(w.diurnal) if w.diurnal else None
    hourly = ([math.ceil(w.qps * m / b["qps_per_replica"] - 1e-9) * b["tp"] for m in mult]
              if mult else None)
    row: dict[str, Any] = {
        "name": w.name, "kind": "inference", "model": arch.id, "gpu": gpu.id,
        "tp": b["tp"], "ep": b["ep"], "replicas": b["replicas"], "gpus": b["gpus"],
        "peak_qps": w.qps, "qps_per_replica": b["qps_per_replica"],
        "input_len": inp, "output_len": out, "precision": w.precision, "kv_precision": kv,
        "slo": {"ttft_p99_s": w.slo.ttft_p99_s, "tpot_p99_s": w.slo.tpot_p99_s,
                "e2e_p99_s": w.slo.e2e_p99_s},
        "ttft_p99_s": b["ttft_p99_s"], "tpot_p99_s": b["tpot_p99_s"],
        "e2e_p99_s": b["e2e_p99_s"],
        "tokens_per_s_per_gpu": b["tokens_per_s_per_gpu"],
        "cost_per_million_tokens_usd": None,
        "cloud_cost_per_million_tokens_usd": b["cost_per_million_tokens_usd"],
        "curve": [], "pareto": sp.pareto, "diurnal_gpus": hourly,
        "simulations": sp.simulations,
    }
    return row, []


def arch_weights_gb(arch: ModelArch, precision: str) -> float:
    """Weights of ``arch`` stored in ``precision``, GB."""
    return float(total_params(arch)) * bytes_per(precision) / 1e9


# --------------------------------------------------------------------------- fine-tuning


def _window_hours(win: Window) -> list[int]:
    end = win.end_hour if win.end_hour > win.start_hour else win.end_hour + 24
    return [h % 24 for h in range(win.start_hour, end)]


def _size_finetune(run: _Run, w: FinetuneWorkload, gpu: Gpu, server: Server,
                   inference_rows: list[dict[str, Any]]
                   ) -> tuple[dict[str, Any] | None, list[Violation]]:
    """GPU-hours at the training planner's achieved FLOP/s; on the inference pool's free
    GPUs inside the window when there is a pool, else on dedicated GPUs."""
    arch = run.models[w.name]
    try:
        job = job_for(run.cat, arch, gpu.id, w.seq_len, _global_batch(w), w.precision,
                      server_id=server.id)
    except InputError as exc:
        return None, [violation("gpus", None, None, "", f"{gpu.id} cannot fine-tune ({exc})",
                                w.name)]
    best, n_min = None, 0
    for n in (server.gpus * k for k in (1, 2, 4, 8, 16)):
        res = plan(job, n, top_n=1)
        if res.best is not None:
            best, n_min = res.best, n
            break
    if best is None:
        return None, [_memory_violation(job, w.name, server.gpus * 16)]
    peak = gpu.peak_tflops[training_dtype(job.precision)] * 1e12
    mfu = best.metrics(gpu, peak / 1e12)["mfu"]
    flops = float(finetune_flops_per_token(arch, w.seq_len, w.method)) * w.tokens * w.epochs
    gpu_hours = flops / (mfu * peak) / 3600.0
    row: dict[str, Any] = {
        "name": w.name, "kind": "finetune", "model": arch.id, "gpu": gpu.id,
        "method": w.method, "flops": flops, "mfu": mfu, "gpu_hours": gpu_hours,
        "window": ({"start_hour": w.window.start_hour, "end_hour": w.window.end_hour}
                   if w.window else None),
        "extra_gpus": 0,
    }
    pool = [r for r in inference_rows if r["gpu"] == gpu.id]
    if w.window is not None and pool:
        hours = _window_hours(w.window)
        total = sum(r["gpus"] for r in pool)
        free = [total - sum((r["diurnal_gpus"] or [r["gpus"]] * 24)[h] for r in pool)
                for h in hours]
        if w.gpus is not None:
            free = [min(f, w.gpus) for f in free]
        available = float(sum(free))
        extra = 0
        if available < gpu_hours:
            # Dedicated GPUs that close the gap within one window (the cluster total is
            # rounded to whole servers afterwards).
            extra = math.ceil((gpu_hours - available) / len(hours) - 1e-9)
        used = [f + extra for f in free]
        row.update(
            gpus=max(used), runs_on="inference pool at night" + (
                f" plus {extra} dedicated GPUs" if extra else ""),
            pool_gpus=total, free_gpu_hours_in_window=available,
            hours=_hours_to_finish(gpu_hours, used), fits_window=extra == 0, extra_gpus=extra,
        )
        if extra:
            run.notes.append(
                f"{w.name}: needs {gpu_hours:,.0f} GPU-hours on {gpu.id} but the inference pool "
                f"frees {available:,.0f} GPU-hours in its window; {extra} dedicated GPUs added")
    else:
        n = w.gpus or n_min
        row.update(gpus=n, runs_on="dedicated", hours=gpu_hours / n,
                   fits_window=None if w.window is None else gpu_hours / n <= len(
                       _window_hours(w.window)),
                   extra_gpus=n)
    return row, []


def _hours_to_finish(gpu_hours: float, per_hour: list[int]) -> float:
    done = 0.0
    for i, g in enumerate(per_hour):
        if g > 0 and done + g >= gpu_hours:
            return i + (gpu_hours - done) / g
        done += g
    return float(len(per_hour))


# --------------------------------------------------------------------------- one candidate


@dataclass
class _Design:
    fab: Fabric
    power: PowerPlan
    tco: TcoPlan | None  # None: cloud deployment of a server without a catalog price
    cooling: str


def _size_candidate(run: _Run, gpu: Gpu, tick: Callable[[], None]) -> Candidate:
    sc = run.scenario
    server = _server(run.cat, gpu, sc.constraints.servers)
    rows: list[dict[str, Any]] = []
    bad: list[Violation] = []
    if server is None:
        for _ in sc.workloads:
            tick()
        return Candidate(gpu.id, None, None, None, None, [violation(
            "gpus", None, None, "", f"no catalog server carries {gpu.id}"
            + (" among constraints.servers" if sc.constraints.servers else ""))])
    for w in sc.workloads:
        if isinstance(w, TrainingWorkload):
            with run.timed("training"):
                row, v = _size_training(run, w, gpu, server)
        elif isinstance(w, InferenceWorkload):
            with run.timed("serving"):
                row, v = _size_inference(run, w, gpu)
        else:
            continue
        tick()
        bad += v
        if row is not None:
            rows.append(row)
    for w in sc.workloads:
        if isinstance(w, FinetuneWorkload):
            with run.timed("finetune"):
                row, v = _size_finetune(run, w, gpu, server,
                                        [r for r in rows if r["kind"] == "inference"])
            tick()
            bad += v
            if row is not None:
                rows.append(row)
    order = {w.name: i for i, w in enumerate(sc.workloads)}
    rows.sort(key=lambda r: order[r["name"]])
    gpus = sum(r["gpus"] for r in rows if r["kind"] != "finetune") + sum(
        r["extra_gpus"] for r in rows if r["kind"] == "finetune")
    cand = Candidate(gpu.id, server.id, None, None, None, bad)
    cand.detail["workloads"] = rows
    cand.detail["server"] = server
    if not rows or gpus == 0 or len(rows) < len(sc.workloads):
        return cand  # some workload could not be sized: no cluster to price
    cand.nodes = math.ceil(gpus / server.gpus)
    cand.gpus = cand.nodes * server.gpus
    return cand


def _rack_violations(run: _Run, server: Server) -> tuple[list[Violation], float, str]:
    """What the rack limit and cooling say about one server, and the rack kW and cooling to
    plan with anyway (so an infeasible design still gets racks, power and a price)."""
    c = run.scenario.constraints
    cap = run.cat.assumption(f"{c.cooling}_cooled_rack_max_kw")
    kw = server.max_power_kw
    if server.cooling == "liquid" and c.cooling == "air":
        return [violation("cooling", cap, kw, "kW",
                          f"{server.id} is liquid-cooled; one draws")], max(
            c.power_per_rack_kw, kw), "liquid"
    limit = min(c.power_per_rack_kw, cap)
    if kw <= limit + 1e-9:
        return [], c.power_per_rack_kw, c.cooling
    if c.power_per_rack_kw <= cap:
        v = violation("power_per_rack_kw", c.power_per_rack_kw, kw, "kW",
                      f"one {server.id} draws (nameplate)")
    else:
        v = violation("cooling", cap, kw, "kW",
                      f"{c.cooling} cooling carries per rack; one {server.id} draws")
    other = "liquid" if kw > cap else c.cooling
    return [v], max(c.power_per_rack_kw, kw), other


def _design(run: _Run, cand: Candidate) -> _Design | None:
    sc, cat = run.scenario, run.cat
    c = sc.constraints
    server: Server = cand.detail["server"]
    assert cand.nodes is not None
    on_prem = c.deployment != "cloud"
    racks_bad, rack_kw, cooling = _rack_violations(run, server)
    if on_prem:
        cand.violations += racks_bad
    if cand.nodes > FABRIC_MAX_NODES:
        # The fabric request refuses it; the planner sized it, so it is a finding, not a typo.
        cand.violations.append(violation(
            "gpus", None, None, "", f"{cand.gpu}: {cand.nodes:,} x {server.id} is more than "
            f"the {FABRIC_MAX_NODES:,} servers the fabric designer builds"))
        return None
    try:
        with run.timed("fabric"):
            fab = plan_fabric(FabricRequest(server=server.id, nodes=cand.nodes,
                                            rack_kw=rack_kw, cooling=cooling), cat)
        with run.timed("power"):
            pp = power_plan(PowerRequest(server=server.id, nodes=cand.nodes, cooling=cooling,
                                         rack_kw=rack_kw, pue=c.pue), cat, fab=fab)
    except InputError as exc:
        # A design the fabric designer refuses is a candidate that cannot be built, not a
        # crash of the whole plan.
        cand.violations.append(violation(
            "gpus", None, None, "", f"{cand.gpu}: the fabric of {cand.nodes} x {server.id} "
            f"cannot be designed ({exc})"))
        return None
    train_hours = sum(r["gpu_hours"] or 0.0 for r in cand.detail["workloads"]
                      if r["kind"] == "training") or None
    try:
        with run.timed("tco"):
            tp = tco_plan(TcoRequest(
                server=server.id, nodes=cand.nodes, years=c.years,
                electricity_usd_per_kwh=c.electricity_usd_per_kwh, pue=c.pue,
                cooling=cooling, rack_kw=rack_kw,
                training_gpu_hours=train_hours), cat)
    except InputError as exc:
        if c.deployment == "cloud" and _price_cloud_only(run, cand):
            run.notes.append(f"{server.id} has no catalog price: {cand.gpu} is priced as "
                             "cloud rental only")
            return _Design(fab, pp, None, cooling)
        cand.violations.append(violation("gpus", None, None, "",
                                         f"{cand.gpu}: cannot be priced ({exc})"))
        return None
    _price(run, cand, tp)
    return _Design(fab, pp, tp, cooling)


def _price_cloud_only(run: _Run, cand: Candidate) -> bool:
    """Cloud cost from the first catalog offer renting the GPU (as ``tco_plan`` picks it),
    for a server the catalog has no purchase price for. False when no offer rents it."""
    from clusterwright.model import tco

    c = run.scenario.constraints
    offer = next((o for o in run.cat.all("clouds") if o.gpu == cand.gpu), None)
    if offer is None:
        cand.violations.append(violation("gpus", None, None, "",
                                         f"no catalog cloud offer rents {cand.gpu}"))
        return True
    util = run.cat.assumption("cluster_utilization")
    annual = tco.cloud_on_demand_annual_usd(tco.instances_for(cand.gpus or 0, offer.gpus),
                                            offer.on_demand_usd_per_hour, util)
    cand.cost_basis = _cloud_cost(run, cand, offer.id, offer.on_demand_usd_per_hour / offer.gpus,
                                  annual, util)
    cand.total_cost_usd = cand.cloud_total_cost_usd
    if (v := budget_violation(cand.total_cost_usd or 0.0, c.budget_usd,
                              f"cloud cost on {cand.gpu}")) is not None:
        cand.violations.append(v)
    return True


def _training_only(sc: Scenario) -> bool:
    return all(isinstance(w, TrainingWorkload) for w in sc.workloads)


def _cloud_cost(run: _Run, cand: Candidate, offer: str, usd_per_gpu_hour: float,
                annual_usd: float, utilization: float) -> str:
    """Set the candidate's cloud costs; return their basis. The total covers the same years
    as on-prem, so the two compare; a scenario of training workloads only, deployed in the
    cloud, rents the GPUs for the (failure-free) run only."""
    c = run.scenario.constraints
    cand.cloud_annual_cost_usd = annual_usd
    cand.cloud_total_cost_usd = annual_usd * c.years
    basis = f"{c.years:g} years on demand ({offer}, {100 * utilization:.0f} % utilization)"
    if _training_only(run.scenario):
        hours = max(r["time_to_train_days"] or 0.0 for r in cand.detail["workloads"]) * 24
        cand.detail["cloud_run_cost_usd"] = (cand.gpus or 0) * usd_per_gpu_hour * hours
        if c.deployment == "cloud":
            cand.cloud_total_cost_usd = cand.detail["cloud_run_cost_usd"]
            basis = (f"renting {cand.gpus:,} GPUs on demand ({offer}, ${usd_per_gpu_hour:.2f}"
                     f"/GPU-h) for the {hours / 24:.1f}-day failure-free training run")
    return basis


def _price(run: _Run, cand: Candidate, tp: TcoPlan) -> None:
    """Fill the candidate's costs in the deployment's basis and check the budget."""
    c = run.scenario.constraints
    years = c.years
    capex, opex = tp.capex.total_usd, tp.opex.total_usd
    cand.capex_usd, cand.annual_opex_usd = capex, opex
    cand.on_prem_total_cost_usd = capex + opex * years
    cand.cost_per_gpu_hour_usd = tp.cost_per_gpu_hour()
    cloud = tp.cloud
    if cloud is not None:
        cand.breakeven_months = cloud.breakeven_months
        cloud_basis = _cloud_cost(run, cand, cloud.offer.id, cloud.on_demand_usd_per_gpu_hour,
                                  cloud.on_demand_annual_usd, tp.utilization)
    else:
        cloud_basis = "no catalog cloud offer"
    on_prem_basis = (f"capex + {years:g} years of opex (energy at "
                     f"${c.electricity_usd_per_kwh:g}/kWh, PUE {c.pue:g}, colocation, support, "
                     "staff)")
    if c.deployment == "cloud":
        cand.cost_basis = cloud_basis
        cand.total_cost_usd = cand.cloud_total_cost_usd
        if cloud is None:
            cand.violations.append(violation("gpus", None, None, "",
                                             f"no catalog cloud offer rents {cand.gpu}"))
        elif (v := budget_violation(cand.total_cost_usd or 0.0, c.budget_usd,
                                    f"cloud cost on {cand.gpu}")) is not None:
            cand.violations.append(v)
    else:
        cand.cost_basis = on_prem_basis
        cand.total_cost_usd = cand.on_prem_total_cost_usd
        if (v := budget_violation(capex, c.budget_usd, f"capex on {cand.gpu}")) is not None:
            cand.violations.append(v)
    if tp.power.racks.compute_racks + tp.power.racks.network_racks != 0:
        cand.detail["tco_racks"] = tp.power.racks.compute_racks + tp.power.racks.network_racks


# --------------------------------------------------------------------------- recommendation


def _reliability(run: _Run, cand: Candidate, d: _Design) -> dict[str, Any] | None:
    """Interruptions of the largest training job, its checkpoint plan, a Monte Carlo of time
    to train with failures and one seeded sample timeline of the first days."""
    rows = [r for r in cand.detail["workloads"] if r["kind"] == "training"]
    if not rows:
        return None
    row = max(rows, key=lambda r: r["gpus"])
    cat, server = run.cat, d.fab.server
    fsum = summary(d.fab)
    share = row["gpus"] / max(cand.gpus or 1, 1)
    links = sum(fsum["links_by_tier"].values())  # type: ignore[attr-defined]
    switches = fsum["leaf_switches"] + fsum["spine_switches"] + fsum["core_switches"]  # type: ignore[operator]
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


def _curves(run: _Run, cand: Candidate) -> None:
    """Latency and throughput of one replica of each served model across load, for the
    report's latency-vs-QPS plot (fleet QPS = per-replica QPS x replicas)."""
    for r in cand.detail["workloads"]:
        if r["kind"] != "inference":
            continue
        pts = []
        for f in CURVE_LOADS[1::2] if run.quick else CURVE_LOADS:
            q = r["qps_per_replica"] * f
            try:
                e = serving_plan.estimate(
                    run.cat, run.models[r["name"]], r["gpu"], tp=r["tp"], ep=r["ep"],
                    precision=r["precision"], kv_precision=r["kv_precision"], qps=q,
                    input_len=r["input_len"], output_len=r["output_len"],
                    num_requests=300 if run.quick else 1000, seed=run.scenario.seed,
                    slo_ttft_s=r["slo"]["ttft_p99_s"], slo_tpot_s=r["slo"]["tpot_p99_s"],
                ).as_dict()
            except InputError as exc:
                run.notes.append(f"{r['name']}: latency curve stopped at {f:g}x load ({exc})")
                break
            tpot_mean = e["tpot_mean_s"]
            pts.append({
                "load_fraction": f, "qps": q * r["replicas"], "qps_per_replica": q,
                "ttft_p99_s": e["ttft_p99_s"], "tpot_p99_s": e["tpot_p99_s"],
                "tokens_per_s_per_gpu": e["tokens_per_s_per_gpu"],
                "tokens_per_s_per_user": 1.0 / tpot_mean if tpot_mean and tpot_mean > 0 else None,
                "e2e_p99_s": e["e2e_p99_s"],
                "meets_slo": bool(e["ttft_p99_s"] <= r["slo"]["ttft_p99_s"]
                                  and not e["tpot_p99_s"] > r["slo"]["tpot_p99_s"]
                                  and (r["slo"].get("e2e_p99_s") is None
                                       or e["e2e_p99_s"] <= r["slo"]["e2e_p99_s"])),
            })
        r["curve"] = pts


def cost_over_time(capex: float, annual_opex: float, cloud_on_demand_annual: float | None,
                   cloud_committed_annual: float | None, years: float) -> list[dict[str, Any]]:
    """Cumulative cost by month: on-prem (capex at month 0, then opex) against renting the
    same GPUs on demand and committed (USD)."""
    months = max(1, math.ceil(years * 12))
    return [{
        "month": m,
        "on_prem_cumulative_usd": capex + annual_opex * m / 12,
        "cloud_on_demand_cumulative_usd": (cloud_on_demand_annual * m / 12
                                           if cloud_on_demand_annual is not None else None),
        "cloud_committed_cumulative_usd": (cloud_committed_annual * m / 12
                                           if cloud_committed_annual is not None else None),
    } for m in range(months + 1)]


def _row_letter(i: int) -> str:
    s = ""
    i += 1
    while i:
        i, r = divmod(i - 1, 26)
        s = chr(65 + r) + s
    return s


def racks_view(d: _Design, cat: Catalog) -> list[dict[str, Any]]:
    """Racks with their devices in rack-unit order (the report's elevations)."""
    fab = d.fab
    by_name = {dev.name: dev for dev in fab.devices}
    fsum = summary(fab)
    net_ratio = (float(fsum["power_w"]) / float(fsum["power_max_w"])  # type: ignore[arg-type]
                 if fsum["power_max_w"] else 1.0)
    typ = cat.assumption("server_typical_power_fraction")
    out = []
    for r in fab.racks:
        devs = sorted((by_name[n] for n in r.devices if n in by_name), key=lambda x: x.rack_u)
        role = r.kind if r.kind in ("compute", "network") else "network"
        if any(x.role == "storage" for x in devs):
            role = "storage"
        kw = r.power_w / 1e3
        out.append({
            "name": r.name, "row": _row_letter(r.row), "position": r.position + 1,
            "role": role, "cooling": r.cooling, "units": r.units, "used_units": r.used_units,
            "kw_nameplate": kw, "kw_typical": kw * (typ if r.kind == "compute" else net_ratio),
            "devices": [{"name": x.name, "role": x.role, "part": x.part, "u": x.rack_u,
                         "height_u": x.units} for x in devs],
        })
    return out


def _power_dict(d: _Design) -> dict[str, Any]:
    out = d.power.as_dict()
    p = d.power
    out.update({
        "it_power_kw_typical": p.power.typical_kw,
        "it_power_kw_nameplate": p.power.nameplate_kw,
        "facility_power_kw_typical": p.power.typical_kw * p.pue,
        "swing_mw": p.swing.swing_mw,
        "rack_limit_kw": p.racks.limit_kw,
        "densest_rack_kw": max(p.racks.compute_max_kw, p.racks.network_max_kw),
    })
    return out


def _fabric_dict(d: _Design) -> dict[str, Any]:
    s = summary(d.fab)
    osub = s["oversubscription"]
    s["oversubscription_by_tier"] = osub
    s["oversubscription"] = osub["leaf"]  # type: ignore[index]
    s["nodes_per_su"] = math.ceil(int(s["su_hosts"]) / d.fab.server.hosts)  # type: ignore[call-overload]
    return s


def _summary_text(sc: Scenario, cand: Candidate, feasible: bool, binding: list[Violation],
                  alternatives: list[dict[str, Any]]) -> str:
    c = sc.constraints
    rows = cand.detail.get("workloads", [])
    parts = []
    for r in rows:
        if r["kind"] == "training":
            days = r["time_to_train_days"]
            parts.append(f"{r['name']} trains {r['model']} on {r['gpus']:,} GPUs in "
                         f"{days:.1f} days" if days is not None else f"{r['name']} on "
                         f"{r['gpus']:,} GPUs")
        elif r["kind"] == "inference":
            parts.append(f"{r['name']} serves {r['peak_qps']:g} req/s with {r['replicas']} x "
                         f"TP{r['tp']} replicas ({r['gpus']} GPUs)")
        else:
            parts.append(f"{r['name']} runs {r['gpu_hours']:,.0f} GPU-hours on the "
                         f"{r['runs_on']}")
    where = (f"{cand.nodes:,} x {cand.server} ({cand.gpus:,} {cand.gpu} GPUs)"
             if cand.nodes else f"{cand.gpu}")
    head = (f"Recommended: {where}" if feasible else
            f"No design meets every constraint; the nearest is {where}")
    cost = ""
    if cand.total_cost_usd is not None:
        cost = f", {money(cand.total_cost_usd)} ({cand.cost_basis})"
    text = head + cost + ". " + ("; ".join(parts) + ". " if parts else "")
    if c.deployment == "compare" and cand.cloud_total_cost_usd is not None \
            and cand.on_prem_total_cost_usd is not None:
        cheaper = "on-prem" if cand.on_prem_total_cost_usd <= cand.cloud_total_cost_usd \
            else "cloud"
        be = (f"; on-prem breaks even after {cand.breakeven_months:.0f} months"
              if cand.breakeven_months is not None else "")
        text += (f"Cloud alternative: {money(cand.cloud_total_cost_usd)}; {cheaper} is cheaper "
                 f"over this horizon{be}. ")
    ok_alts = [a for a in alternatives if a["feasible"]]
    if feasible and ok_alts:
        a = min(ok_alts, key=lambda a: a["total_cost_usd"])
        text += f"Runner-up {a['gpu']}: {a['why_not']}. "
    elif feasible and alternatives:
        text += "Every other GPU breaks a constraint (see alternatives). "
    if not feasible:
        text += "Binding: " + "; ".join(v.message for v in binding) + "."
    return text.strip()


# --------------------------------------------------------------------------- entry point


def plan_scenario(scenario: Scenario, cat: Catalog, *, progress: Progress | None = None,
                  quick: bool = False, source: str | None = None) -> Blueprint:
    """Plan ``scenario`` end to end and return its Blueprint (never raises for a scenario
    that cannot be met: that is ``feasible: false`` with the binding constraints).
    ``progress(stage, done, total)`` is called as stages advance; ``quick`` trims simulation
    sizes (fewer requests per serving simulation, fewer Monte Carlo trials) for sweeps.
    Raises InputError/ScenarioError for unknown catalog ids."""
    models = resolve(scenario, cat)
    run = _Run(scenario, cat, models, quick, progress or _no_progress)
    gpus = candidate_gpus(scenario, cat)
    total = len(gpus) * len(scenario.workloads)
    done = 0

    def tick() -> None:
        nonlocal done
        done += 1
        run.progress("sizing", done, total)

    run.progress("sizing", 0, total)
    cands = [_size_candidate(run, g, tick) for g in gpus]
    designs: dict[str, _Design] = {}
    sized_c = [c for c in cands if c.nodes]
    for i, cand in enumerate(sized_c):
        run.progress("design", i, len(sized_c))
        d = _design(run, cand)
        if d is not None:
            designs[cand.gpu] = d
    run.progress("design", len(sized_c), len(sized_c))
    choice = choose(cands)
    chosen = choice.chosen
    d = designs.get(chosen.gpu)
    c = scenario.constraints
    rel_out = None
    if d is not None:
        run.progress("reliability", 0, 1)
        with run.timed("reliability"):
            rel_out = _reliability(run, chosen, d)
        run.progress("reliability", 1, 1)
        run.progress("curves", 0, 1)
        with run.timed("curves"):
            _curves(run, chosen)
        run.progress("curves", 1, 1)
        per_h = chosen.cost_per_gpu_hour_usd
        for r in chosen.detail["workloads"]:
            if r["kind"] == "inference":
                usd_h = (per_h * r["gpus"] if c.deployment != "cloud" and per_h is not None
                         else None)
                r["cost_per_million_tokens_usd"] = (
                    usd_h / (r["peak_qps"] * r["output_len"] * 3600) * 1e6
                    if usd_h is not None else r["cloud_cost_per_million_tokens_usd"])
        tco_racks = chosen.detail.get("tco_racks")
        if tco_racks is not None and tco_racks != len(d.fab.racks):
            run.notes.append(
                f"the TCO prices racks from its own plan at the {d.cooling}-cooling rack "
                f"limit ({tco_racks} racks); this design has {len(d.fab.racks)} racks at "
                f"{d.power.racks.limit_kw:g} kW")
    facts = _facts(scenario, chosen, d, rel_out)
    risks = [r.as_dict() for r in assess_risks(facts)]
    rec = _recommendation(scenario, chosen, choice.feasible, choice.binding, choice.alternatives)
    return Blueprint(
        scenario={
            "name": scenario.name, "description": scenario.description, "seed": scenario.seed,
            "source": source,
            "workloads": [w.model_dump(mode="json") for w in scenario.workloads],
            "constraints": c.model_dump(mode="json"),
        },
        feasible=choice.feasible,
        binding_constraints=[v.as_dict() for v in choice.binding],
        recommendation=rec,
        alternatives=choice.alternatives,
        workloads=chosen.detail.get("workloads", []),
        cluster=({"gpu": chosen.gpu, "server": chosen.server, "nodes": chosen.nodes,
                  "gpus": chosen.gpus,
                  "nvlink_domain_gpus": d.fab.server.nvlink_domain_gpus}
                 if d is not None else None),
        fabric=_fabric_dict(d) if d is not None else None,
        racks=racks_view(d, cat) if d is not None else [],
        power=_power_dict(d) if d is not None else None,
        reliability=rel_out,
        tco=_tco_dict(d, c.years) if d is not None else None,
        risks=risks,
        timings_s=dict(run.timings),
        notes=run.notes,
        clusterwright_version=__version__,
        fabric_design=d.fab if d is not None else None,
    )


def _tco_dict(d: _Design, years: float) -> dict[str, Any] | None:
    if d.tco is None:
        return None
    out = d.tco.as_dict()
    cl = d.tco.cloud
    out["cost_over_time"] = cost_over_time(
        d.tco.capex.total_usd, d.tco.opex.total_usd,
        cl.on_demand_annual_usd if cl else None, cl.committed_annual_usd if cl else None, years)
    return out


def _recommendation(sc: Scenario, cand: Candidate, feasible: bool, binding: list[Violation],
                    alternatives: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "summary": _summary_text(sc, cand, feasible, binding, alternatives),
        "gpu": cand.gpu, "server": cand.server, "nodes": cand.nodes, "gpus": cand.gpus,
        "deployment": "cloud" if sc.constraints.deployment == "cloud" else "on-prem",
        "capex_usd": cand.capex_usd if sc.constraints.deployment != "cloud" else None,
        "annual_opex_usd": cand.annual_opex_usd,
        "cloud_annual_cost_usd": cand.cloud_annual_cost_usd,
        "cloud_total_cost_usd": cand.cloud_total_cost_usd,
        "on_prem_total_cost_usd": cand.on_prem_total_cost_usd,
        "breakeven_months": cand.breakeven_months,
        "total_cost_usd": cand.total_cost_usd,
        "cost_basis": cand.cost_basis,
        "cost_per_gpu_hour_usd": cand.cost_per_gpu_hour_usd,
        "cloud_training_run_cost_usd": cand.detail.get("cloud_run_cost_usd"),
    }


def _facts(sc: Scenario, cand: Candidate, d: _Design | None,
           rel_out: dict[str, Any] | None) -> DesignFacts:
    c = sc.constraints
    rows = cand.detail.get("workloads", [])
    inf = tuple(InferenceFacts(r["name"], r["replicas"], r["peak_qps"],
                               r["replicas"] * r["qps_per_replica"])
                for r in rows if r["kind"] == "inference")
    train = [r for r in rows if r["kind"] == "training" and r.get("deadline_days")]
    p90 = train[0]["time_to_train_days_p90"] if train else None
    misses = tuple(r["name"] for r in rows if r["kind"] == "finetune"
                   and r.get("fits_window") is False)
    if d is None:
        return DesignFacts(gpus=cand.gpus or 0, inference=inf, budget_usd=c.budget_usd,
                           total_cost_usd=cand.total_cost_usd, finetune_misses_window=misses)
    s = summary(d.fab)
    osub: dict[str, Any] = s["oversubscription"]  # type: ignore[assignment]
    fe: dict[str, Any] = s["frontend"]  # type: ignore[assignment]
    p = d.power
    on_prem = c.deployment != "cloud"
    return DesignFacts(
        gpus=cand.gpus or 0,
        densest_rack_kw=max(p.racks.compute_max_kw, p.racks.network_max_kw) if on_prem else None,
        rack_limit_kw=c.power_per_rack_kw if on_prem else None,
        cooling=d.cooling,
        cooling_cap_kw=d.power.checks[d.cooling].limit_kw if d.cooling in d.power.checks else None,
        interruptions_per_day=rel_out["expected_interruptions_per_day"] if rel_out else None,
        job_mtbf_hours=rel_out["job_mtbf_hours"] if rel_out else None,
        leaf_oversubscription=osub.get("leaf"), spine_oversubscription=osub.get("spine"),
        tiers=int(s["tiers"]),  # type: ignore[call-overload]
        spine_switches=int(s["spine_switches"]),  # type: ignore[call-overload]
        core_switches=int(s["core_switches"]),  # type: ignore[call-overload]
        storage_ports=fe.get("storage_ports") if on_prem else None,
        frontend_spines=fe.get("spine_switches") if on_prem else None,
        inference=inf,
        total_cost_usd=(cand.capex_usd if on_prem else cand.total_cost_usd),
        budget_usd=c.budget_usd,
        on_prem_total_cost_usd=cand.on_prem_total_cost_usd if on_prem else None,
        cloud_total_cost_usd=cand.cloud_total_cost_usd if on_prem else None,
        deadline_days=train[0]["deadline_days"] if train else None,
        time_to_train_p90_days=p90,
        swing_mw=p.swing.swing_mw if any(r["kind"] == "training" for r in rows) and on_prem
        else None,
        finetune_misses_window=misses,
        estimated_prices=len(d.tco.estimates) if d.tco is not None else 0,
    )
