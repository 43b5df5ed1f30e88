"""Training requests as plan functions: one layout estimated, or the best layout planned.

``estimate_training`` and ``plan_training`` take a frozen request (what ``train estimate`` and
``train plan`` parse from their flags) and return a frozen result whose ``as_dict`` holds the
command-line contract keys (DESIGN.md). Everything the commands decide lives here: the layout
checks against the model, the batch and the stack; the micro-batch search; the memory misfit
and the changes that would make it fit; the network simulator's second opinion
(``--fidelity sim``); the per-GPU plan with time to train in production (evaluation and
failures, ``design/train_goodput``), price and the GPUs-vs-time front; the choice among GPU
types. Errors carry field paths (``tp``, ``global_batch``, ``shard_group``); the CLI words
them as its flags.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from clusterwright.catalog.registry import Catalog
from clusterwright.catalog.schema import Gpu, ModelArch
from clusterwright.design.train import (
    LayoutResult,
    confidence,
    default_global_batch,
    estimate_layout,
    job_for,
    mfu_record,
    server_for,
)
from clusterwright.design.train_goodput import production_time, production_wall
from clusterwright.errors import InfeasibleError, InputError, UnknownIdError
from clusterwright.model.lora import Lora
from clusterwright.model.precision import Precision, training_dtype
from clusterwright.model.recompute import FULL, NONE, SELECTIVE, parse_recompute
from clusterwright.model.train_job import Job
from clusterwright.model.training import BREAKDOWN_FIELDS
from clusterwright.plan.layouts import (
    PlanResult,
    pareto_front,
    plan,
    sized,
    slice_ladder,
    smallest_for_deadline,
)
from clusterwright.plan.pricing import cloud_price
from clusterwright.plan.serving import gpu_hour_price
from clusterwright.sim.network import ROUTINGS
from clusterwright.sim.training import MAX_SIM_GPUS

FIDELITIES = ("analytical", "sim")
# Largest cluster the deadline search climbs to (gpu_counts' default limit).
MAX_DEADLINE_GPUS = 131072
GB = 1e9


def _job(cat: Catalog, arch: ModelArch, gpu: Gpu, seq_len: int, global_batch: int,
         precision: Precision, server: str | None, stack: str | None,
         options: Mapping[str, Any], lora: Lora | None = None) -> Job:
    """``job_for``, with an unknown stack or server id blamed on its field."""
    try:
        return job_for(cat, arch, gpu.id, seq_len, global_batch, precision, server_id=server,
                       stack_id=stack, options=dict(options), lora=lora)
    except UnknownIdError as exc:
        if exc.kind in ("stack", "server"):
            raise InputError(f"{exc.kind}: {exc}", field=exc.kind) from exc
        raise


def _gpu(cat: Catalog, gpu_id: str) -> Gpu:
    try:
        return cat.gpu(gpu_id)
    except UnknownIdError as exc:
        raise InputError(f"gpu: {exc}", field="gpu") from exc


def layout_payload(cat: Catalog, job: Job, r: LayoutResult) -> dict[str, Any]:
    """The contract keys of one evaluated layout, with its error band and how its MFU
    compares with the highest published on the GPU. Memory in GB (10^9 bytes)."""
    peak = job.gpu.peak_tflops[training_dtype(job.precision)]
    m = r.metrics(job.gpu, peak)
    rec = mfu_record(cat, job.gpu.id, job.precision)
    mfu_check: dict[str, Any] = {"highest_published": None, "above": None}
    if rec is not None:
        mfu_check = {"highest_published": rec.mfu, "model": rec.model, "gpus": rec.gpus,
                     "row": rec.row, "source": rec.source, "above": m["mfu"] > rec.mfu}
    return {
        "gpu": job.gpu.id,
        "gpus": r.gpus,
        **r.layout,
        "step_time_s": r.step_time_s,
        "tokens_per_s": m["tokens_per_s"],
        "tflops_per_gpu": m["tflops_per_gpu"],
        "mfu": m["mfu"],
        "hfu": m["hfu"],
        "memory_per_gpu_gb": r.memory["total"] / GB,
        "memory_gb": {k: v / GB for k, v in r.memory.items() if k != "total"},
        "fits": r.fits,
        "breakdown": {k: r.breakdown[k] for k in BREAKDOWN_FIELDS},
        "comm_s": dict(r.comm),
        "overlap": r.overlap,
        "confidence": confidence(cat, job, r.layout, r.gpus, r.step_time_s),
        "mfu_check": mfu_check,
        "stack": job.stack.id,
        "options": asdict(job.opts),
        "precision": job.precision.value,
        "seq_len": job.seq_len,
        "finetune": job.lora.as_dict() if job.lora is not None else None,
    }


# --------------------------------------------------------------------------- estimate


class LayoutMisfitError(InfeasibleError):
    """A layout that does not fit in memory (reason ``memory``), with the single changes that
    would make it fit: ``fixes`` holds (field, value or None for a switch, memory GB, step s),
    so each face can name them in its own words."""

    def __init__(self, message: str, fixes: list[tuple[str, str | None, float, float]]) -> None:
        super().__init__(message, "memory")
        self.fixes = fixes

    def worded(self, name: Callable[[str, str | None], str]) -> str:
        """The message with the fixes named by ``name(field, value)``."""
        if self.fixes:
            hint = "; it fits with " + " or ".join(
                f"{name(f, v)} ({mem:.1f} GB, step {step:.2f} s)" for f, v, mem, step in self.fixes)
        else:
            hint = (f"; no single change makes it fit: use more GPUs, a larger {name('tp', None)}"
                    f" or {name('pp', None)}, or plan the layout")
        return str(self) + hint


@dataclass(frozen=True)
class TrainEstimateRequest:
    """One training layout to estimate (``train estimate``). ``micro_batch`` and
    ``global_batch`` None: the fastest micro-batch that fits, about 4M tokens per step."""

    model: ModelArch
    gpu: str
    gpus: int
    tp: int = 1
    pp: int = 1
    cp: int = 1
    ep: int = 1
    interleave: int = 1
    zero: int = 0
    shard_group: int | None = None
    micro_batch: int | None = None
    global_batch: int | None = None
    seq_len: int = 4096
    recompute: str = "none"
    recompute_share: float | None = None
    sequence_parallel: bool = False
    precision: Precision = Precision.bf16
    server: str | None = None
    stack: str | None = None
    options: Mapping[str, Any] = field(default_factory=dict)  # framework Options overrides
    fidelity: str = "analytical"
    routing: str = "ecmp"
    seed: int = 0
    lora: Lora | None = None  # LoRA fine-tuning (frozen base weights); None: every weight trained


@dataclass(frozen=True)
class TrainEstimate:
    """The estimated layout: the job, the result, and its contract keys."""

    job: Job
    result: LayoutResult
    payload: dict[str, Any]

    def as_dict(self) -> dict[str, Any]:
        return self.payload


def _check_fidelity(fidelity: str, routing: str) -> None:
    if routing not in ROUTINGS:
        raise InputError(f"routing: {routing!r} is not one of {', '.join(ROUTINGS)}",
                         field="routing")
    if fidelity not in FIDELITIES:
        raise InputError(f"fidelity: {fidelity!r} is not one of {', '.join(FIDELITIES)}",
                         field="fidelity")


def _request_checks(req: TrainEstimateRequest, arch: ModelArch) -> tuple[int, int, int]:
    """(recompute code, dp, global batch) of a layout that divides the model and batch."""
    try:
        rc = parse_recompute(req.recompute)
    except ValueError as exc:
        raise InputError(f"recompute: {exc}", field="recompute") from exc
    if req.recompute_share is not None:
        if not 0.0 < req.recompute_share <= 1.0:
            raise InputError(f"recompute_share: must be in (0, 1], got {req.recompute_share:g}",
                             field="recompute_share")
        if rc != FULL:
            raise InputError("recompute_share: applies to recompute full only",
                             field="recompute_share")
    if req.zero not in (0, 1, 2, 3):
        raise InputError(f"zero: {req.zero} is not a ZeRO stage (0-3)", field="zero")
    for name in ("shard_group", "prefetch", "zeropp"):
        given = req.shard_group if name == "shard_group" else req.options.get(name)
        if given is not None and req.zero != 3:
            raise InputError(f"{name}: applies to zero 3 (ZeRO-3/FSDP) only", field=name)
    t, p, c, e, v = req.tp, req.pp, req.cp, req.ep, req.interleave
    if req.gpus % (t * p * c):
        raise InputError(f"gpus: {req.gpus} is not a multiple of tp*pp*cp = {t * p * c}",
                         field="gpus")
    d = req.gpus // (t * p * c)
    if arch.heads % t or arch.n_kv_heads % t:
        raise InputError(f"tp: {t} does not divide the {arch.heads} heads / {arch.n_kv_heads} "
                         f"KV heads of {arch.id}", field="tp")
    if p > arch.layers:
        raise InputError(f"pp: {p} stages exceed the {arch.layers} layers of {arch.id}",
                         field="pp")
    if v > 1 and (p == 1 or p * v > arch.layers):
        raise InputError(f"interleave: {v} needs pp > 1 and pp*interleave <= {arch.layers} "
                         "layers", field="interleave")
    if req.sequence_parallel and t == 1:
        raise InputError("sequence_parallel: needs tp > 1", field="sequence_parallel")
    if c > 1 and req.seq_len % (2 * c):
        # Megatron-Core CP splits the sequence into 2*cp chunks to balance causal attention.
        raise InputError(f"cp: seq_len {req.seq_len} must be divisible by 2*cp = {2 * c}",
                         field="cp")
    if arch.is_moe and arch.experts % e:
        raise InputError(f"ep: {e} does not divide the {arch.experts} experts of {arch.id}",
                         field="ep")
    if not arch.is_moe and e > 1:
        raise InputError(f"ep: {arch.id} is a dense model; expert parallelism needs experts",
                         field="ep")
    if (t * d * c) % e:
        # Megatron-Core's MoE parallel folding: the expert group spans TP, CP and DP ranks.
        raise InputError(f"ep: {e} does not divide tp*dp*cp = {t * d * c}", field="ep")
    if req.shard_group is not None and (d * c) % req.shard_group:
        raise InputError(f"shard_group: {req.shard_group} does not divide dp*cp = {d * c}",
                         field="shard_group")
    mb = req.micro_batch
    gbatch = req.global_batch or default_global_batch(req.seq_len, d * (mb or 1))
    if gbatch % d:
        raise InputError(f"global_batch: {gbatch} is not a multiple of dp = {d}",
                         field="global_batch")
    if mb and (gbatch // d) % mb:
        raise InputError(f"micro_batch: {mb} does not divide the {gbatch // d} sequences per "
                         "data-parallel rank", field="micro_batch")
    m = gbatch // d // (mb or 1)
    if p > 1 and m < p:
        raise InputError(f"global_batch: {gbatch} gives {m} micro-batches per pipeline, fewer "
                         f"than pp {p}; the pipeline would mostly idle", field="global_batch")
    if v > 1 and m % p:
        raise InputError(f"interleave: the interleaved schedule needs micro-batches ({m}) "
                         f"divisible by pp {p}", field="interleave")
    return rc, d, gbatch


def _stack_checks(req: TrainEstimateRequest, job: Job) -> None:
    """What the job's stack cannot run (catalog stacks.yaml ``features``)."""
    f, sid = job.stack.features, job.stack.id
    if req.zero == 3 and not f.zero3:
        raise InputError(f"zero: stack {sid} has no ZeRO-3/FSDP", field="zero")
    if req.zero == 3 and req.pp > 1 and not f.zero3_with_pp:
        raise InputError(f"zero: stack {sid} runs ZeRO-3/FSDP without pipelining (pp 1)",
                         field="zero")
    if req.zero in (1, 2) and not f.distributed_optimizer:
        raise InputError(f"zero: stack {sid} has no distributed optimizer (ZeRO-1/2)",
                         field="zero")
    if req.shard_group is not None and not f.hsdp:
        raise InputError(f"shard_group: stack {sid} has no hybrid sharding (HSDP)",
                         field="shard_group")
    if req.interleave > 1 and not f.interleaved:
        raise InputError(f"interleave: stack {sid} has no interleaved pipeline schedule",
                         field="interleave")
    if req.cp > 1 and not f.context_parallel:
        raise InputError(f"cp: stack {sid} has no context parallelism", field="cp")
    if job.opts.schedule == "dualpipe" and req.pp > 1 and req.pp % 2:
        raise InputError(f"pp: DualPipe pairs stages: {req.pp} is odd", field="pp")


def estimate_training(cat: Catalog, req: TrainEstimateRequest) -> TrainEstimate:
    """Step time, throughput, MFU and memory of one layout (the fastest micro-batch that
    fits when none is given), with the error band of the closest validated regime; with
    ``fidelity="sim"`` re-estimated with its DP/PP/EP collectives simulated on the fabric.
    A layout that does not fit raises ``InfeasibleError`` (reason ``memory``) naming the
    single changes that would make it fit."""
    _check_fidelity(req.fidelity, req.routing)
    arch = req.model
    g = _gpu(cat, req.gpu)
    rc, dp, gbatch = _request_checks(req, arch)
    job = _job(cat, arch, g, req.seq_len, gbatch, req.precision, req.server, req.stack,
               req.options, req.lora)
    _stack_checks(req, job)
    fixed: dict[str, Any] = {
        "tp": req.tp, "pp": req.pp, "dp": dp, "cp": req.cp, "ep": req.ep,
        "interleave": req.interleave, "zero": req.zero, "recompute": rc,
        "sp": int(req.sequence_parallel), "shard": req.shard_group or 0,
    }
    if req.recompute_share is not None:
        fixed["rc_frac"] = req.recompute_share
    if req.micro_batch:
        fixed["micro_batch"] = req.micro_batch
    res = estimate_layout(job, fixed, () if req.micro_batch else ("micro_batch",))
    payload = layout_payload(cat, job, res)
    host = res.memory.get("host", 0.0)
    if host > job.host_capacity_bytes + 1.0:
        raise InputError(f"offload: the offloaded optimizer state takes {host / GB:.1f} GB per "
                         f"GPU, more than the {job.host_capacity_bytes / GB:g} GB of CPU memory "
                         f"{job.gpu.id} has behind its link; use more GPUs or zero 1-3",
                         field="offload")
    if not res.fits:
        _explain_misfit(job, fixed, payload)
    if req.fidelity == "sim":
        job2, res2, comm, srv = _resimulate(cat, job, res, req.server, req.routing, req.seed)
        analytical = payload["step_time_s"]
        payload = layout_payload(cat, job2, res2)
        payload["fidelity"] = "sim"
        payload["sim"] = {
            "routing": req.routing, "seed": req.seed, "server": srv,
            "comm_factors": {"dp": comm.dp_factor, "pp": comm.pp_factor, "ep": comm.ep_factor},
            "analytical_step_time_s": analytical,
            **comm.detail,
        }
        # Wall-clock only, under one key: the rest is a function of the inputs and the seed.
        payload["timings"] = {"sim_wall_s": comm.wall_s}
        return TrainEstimate(job2, res2, payload)
    return TrainEstimate(job, res, payload)


def _resimulate(cat: Catalog, job: Job, res: LayoutResult, server: str | None, routing: str,
                seed: int) -> tuple[Job, LayoutResult, Any, str]:
    """``res`` re-estimated with its DP/PP/EP collectives simulated as flows on the job's
    fabric: (job with the simulated slow-downs, result, the simulation's detail, server)."""
    from clusterwright.sim.training import simulate_step_comm

    srv = cat.server(server) if server else server_for(cat, job.gpu)
    if srv is None:
        raise InputError(f"server: no catalog server holds {job.gpu.id}; the simulated "
                         "fidelity needs one", field="server")
    layout = {k: int(v) for k, v in res.layout.items()
              if isinstance(v, int | float) and k != "recompute_share"}
    comm = simulate_step_comm(job, layout, srv.id, cat, routing=routing, seed=seed)
    job2 = replace(job, dp_comm_factor=comm.dp_factor, pp_comm_factor=comm.pp_factor,
                   ep_comm_factor=comm.ep_factor)
    lay = res.layout
    fixed = {"tp": lay["tp"], "pp": lay["pp"], "dp": lay["dp"], "cp": lay["cp"],
             "ep": lay["ep"], "micro_batch": lay["micro_batch"], "interleave": lay["interleave"],
             "zero": lay["zero"], "recompute": parse_recompute(str(lay["recompute"])),
             "sp": int(bool(lay["sequence_parallel"])), "shard": lay["shard"],
             "rc_frac": float(str(lay["recompute_share"])) or 1.0}
    return job2, estimate_layout(job2, fixed, ()), comm, srv.id


def _explain_misfit(job: Job, fixed: dict[str, Any], payload: dict[str, Any]) -> None:
    """Raise the memory breakdown and the single changes that would make the layout fit."""
    parts = ", ".join(f"{k} {v:.1f}" for k, v in payload["memory_gb"].items() if v)
    f = job.stack.features
    tries: list[tuple[str, str | None, dict[str, Any]]] = []
    if fixed["tp"] > 1 and not fixed["sp"]:
        tries.append(("sequence_parallel", None, {"sp": 1}))
    if fixed["recompute"] == NONE:
        tries.append(("recompute", "selective", {"recompute": SELECTIVE}))
    if fixed["recompute"] != FULL:
        tries.append(("recompute", "full", {"recompute": FULL, "rc_frac": 1.0}))
    if fixed["zero"] < 1 and fixed["dp"] * fixed["cp"] > 1:
        tries.append(("zero", "1", {"zero": 1}))
    if fixed["zero"] < 2 and fixed["dp"] * fixed["cp"] > 1:
        tries.append(("zero", "2", {"zero": 2}))
    if fixed["zero"] < 3 and fixed["pp"] == 1 and fixed["dp"] > 1 and f.zero3:
        tries.append(("zero", "3", {"zero": 3}))
    fixes = []
    for name, value, change in tries:
        r = estimate_layout(job, {**fixed, **change}, ("micro_batch",))
        if r.fits:
            fixes.append((name, value, r.memory["total"] / GB, r.step_time_s))
    raise LayoutMisfitError(
        f"layout does not fit: {payload['memory_per_gpu_gb']:.1f} GB per GPU > "
        f"{job.gpu.memory_gb:g} GB on {job.gpu.id} ({parts} GB)", fixes)


# --------------------------------------------------------------------------- plan


@dataclass(frozen=True)
class TrainPlanRequest:
    """What to plan (``train plan``): ``gpu`` a catalog id or ``choose``; ``gpus`` None
    with a deadline finds the fewest that meet it. ``recheck`` leading layouts are
    re-simulated on the fabric (``fidelity="sim"``) within ``recheck_budget_s`` seconds."""

    model: ModelArch
    gpu: str
    gpus: int | None = None
    seq_len: int = 4096
    global_batch: int | None = None
    tokens: float | None = None
    deadline_days: float | None = None
    precision: Precision = Precision.bf16
    server: str | None = None
    stack: str | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    fidelity: str = "sim"
    recheck: int = 3
    recheck_budget_s: float = 2.0
    routing: str = "ecmp"
    # A TPU slice shape ("16x16x24"): the job's ICI torus is that slice (None: the pod's
    # largest); it must be a shape the pod forms.
    slice: str | None = None
    lora: Lora | None = None  # LoRA fine-tuning (frozen base weights); None: every weight trained


@dataclass(frozen=True)
class TrainPlan:
    """The plan: the chosen GPU type's best layout and front, each type's summary, notes."""

    model: str
    global_batch: int
    seq_len: int
    chosen: dict[str, Any]
    by_gpu: list[dict[str, Any]] | None
    fidelity: str
    notes: list[str]

    def as_dict(self) -> dict[str, Any]:
        keys = ("best", "top", "pareto", "time_to_train_days", "gpu_hours", "compute_days",
                "production", "stack", "candidates_evaluated", "rejected", "cost_usd",
                "usd_per_gpu_hour", "price_offer", "pricing", "meets_deadline")
        out: dict[str, Any] = {"model": self.model, "global_batch": self.global_batch,
                               "seq_len": self.seq_len, **{k: self.chosen.get(k) for k in keys}}
        if self.chosen.get("slice"):
            out["slice"] = self.chosen["slice"]  # the TPU slice shape the deadline search chose
        if self.by_gpu is not None:
            out["by_gpu"] = self.by_gpu
        out["fidelity"] = self.fidelity
        out["notes"] = self.notes
        return out


def _plan_one(cat: Catalog, req: TrainPlanRequest, g: Gpu, global_batch: int) -> dict[str, Any]:
    """The plan on one GPU type, as contract keys (plus ``_recheck``: what to re-simulate)."""
    arch = req.model
    job = _job(cat, arch, g, req.seq_len, global_batch, req.precision, req.server, req.stack,
               req.options, req.lora)
    if req.slice is not None:
        job = _on_slice(cat, job, req)
    out: dict[str, Any] = {"gpu": g.id, "stack": job.stack.id}
    price = gpu_hour_price(cat, g.id)
    srv = cat.server(req.server) if req.server else server_for(cat, g)
    wall = production_wall(cat, arch, g.id, srv)
    gpus, tokens = req.gpus, req.tokens
    res: PlanResult | None = None
    if req.deadline_days is not None and tokens is not None and gpus is None:
        counts, job_at = _slice_ladder(cat, job, req)
        found = smallest_for_deadline(job, tokens, req.deadline_days, wall=wall,
                                      counts=counts, job_at=job_at)
        if found is None:
            out["meets_deadline"] = False
            return out
        gpus, res = found[0].gpus, found[1]
        if job_at is not None:
            job = job_at(gpus)
            out["slice"] = "x".join(str(d) for d in job.net.torus.dims) if job.net.torus else None
    assert gpus is not None
    if res is None:
        res = plan(job, gpus)
    out.update(candidates_evaluated=res.candidates_evaluated, rejected=res.rejected)
    if res.best is None:
        out["best"] = None
        return out
    best = sized(res.best, gpus, tokens, wall)
    out["best"] = layout_payload(cat, job, res.best)
    # The other layouts and the GPUs-vs-time front are only reported for the chosen type
    # (``_finish``): with --gpu choose, two dozen types would each plan five more counts.
    out["_recheck"] = (job, res.top)
    out["time_to_train_days"] = best.time_to_train_days
    out["gpu_hours"] = best.gpu_hours
    out["compute_days"] = best.compute_days
    if best.compute_days is not None:
        out["production"] = production_time(cat, arch, g.id, srv, gpus,
                                            best.compute_days * 86400.0).as_dict()
    if req.deadline_days is not None and best.time_to_train_days is not None:
        out["meets_deadline"] = best.time_to_train_days <= req.deadline_days
    if price is not None:
        out["usd_per_gpu_hour"] = price[0]
        out["price_offer"] = price[1]
        # The policy's whole answer: every offer considered, and whether the price is sourced.
        choice = cloud_price(cat, g.id)
        out["pricing"] = choice.as_dict() if choice is not None else None
        if best.gpu_hours is not None:
            out["cost_usd"] = best.gpu_hours * price[0]
    ladder = sorted({max(job.net.domain_gpus, gpus // k) for k in (8, 4, 2, 1)} | {gpus})
    out["_finish"] = (job, ladder, tokens, wall, {gpus: res.best})
    return out


def _finish(cat: Catalog, r: dict[str, Any]) -> None:
    """The chosen type's other leading layouts and its GPUs-vs-time front (in place)."""
    job, top = r["_recheck"]
    _, ladder, tokens, wall, known = r.pop("_finish")
    r["top"] = [layout_payload(cat, job, x) for x in top]
    r["pareto"] = [p.as_dict() for p in pareto_front(job, ladder, tokens, wall, known)]


def _slice_ladder(cat: Catalog, job: Job, req: TrainPlanRequest
                  ) -> tuple[list[int] | None, Callable[[int], Job] | None]:
    """The deadline search's chip counts and job per count on a TPU pod (``slice_ladder``);
    (None, None) when the user fixed the shape with ``--slice`` or off a pod."""
    if req.slice is not None:
        return None, None
    srv = cat.server(req.server) if req.server else server_for(cat, job.gpu)
    return slice_ladder(job, srv.torus if srv is not None else None, MAX_DEADLINE_GPUS)


def _on_slice(cat: Catalog, job: Job, req: TrainPlanRequest) -> Job:
    """``job`` on the TPU slice ``req.slice``: its torus is the slice's shape (closing each
    axis that spans a whole number of 4-chip cube sides, through the OCS). InputError
    (field ``slice``) for a shape the pod cannot form or larger than the pod."""
    from clusterwright.model.torus import TorusNet, torus_shape_error

    srv = cat.server(req.server) if req.server else server_for(cat, job.gpu)
    tor = srv.torus if srv is not None else None
    if srv is None or tor is None or job.net.torus is None:
        raise InputError(f"slice: {job.gpu.id} is not in a torus pod; slices are for TPU pods",
                         field="slice")
    try:
        shape = [int(x) for x in str(req.slice).lower().split("x")]
    except ValueError:
        raise InputError(f"slice: {req.slice!r} is not a shape like 16x16x24",
                         field="slice") from None
    why = torus_shape_error(shape, list(tor.dims), [list(s) for s in tor.slices])
    if why:
        raise InputError(f"slice: {req.slice} cannot be formed on {srv.id}: {why}", field="slice")
    chips = 1
    for d in shape:
        chips *= d
    if req.gpus is not None and req.gpus % chips:
        raise InputError(f"gpus: {req.gpus} is not a whole number of {req.slice} slices "
                         f"({chips} chips)", field="gpus")
    old = job.net.torus
    net = replace(job.net, domain_gpus=chips, torus=TorusNet(
        tuple(shape), old.wraparound and all(d % 4 == 0 for d in shape), old.link_bw,
        old.hop_s))
    return replace(job, net=net)


def _recheck(cat: Catalog, chosen: dict[str, Any], server: str | None, routing: str,
             count: int, budget_s: float) -> None:
    """The network simulator's second opinion on the leading ``count`` layouts (their DP, PP
    and EP collectives as flows on the fabric), added beside the analytical numbers; the
    ranking stays the analytical one. The best is always re-checked; the next ones while the
    simulations have taken less than ``budget_s`` (a 16K-GPU fabric takes seconds each)."""
    job, top = chosen["_recheck"]
    if job.net.torus is not None:
        # The flow simulator models switched fabrics (NVLink domains, rails, leaf/spine); an
        # ICI or NeuronLink torus and its DCN are not simulated: the closed form stands alone.
        chosen["recheck_skipped"] = ("the layouts were not re-checked on a simulated fabric: "
                                     f"{job.gpu.id} runs on a torus (model/torus closed form "
                                     "only; the flow simulator covers switched fabrics)")
        chosen["best"]["sim"] = None
        return
    start = time.perf_counter()
    for i, (entry, r) in enumerate(list(zip(chosen["top"], top, strict=True))[:count]):
        if r.gpus > MAX_SIM_GPUS:
            # Past the simulator's size the analytical estimate stands alone, said in notes.
            chosen["recheck_skipped"] = (f"{r.gpus:,} GPUs are more than the network "
                                         f"simulator's {MAX_SIM_GPUS:,}: the layouts were not "
                                         "re-checked on the simulated fabric")
            break
        if i and time.perf_counter() - start > budget_s:
            break
        _, r2, comm, srv = _resimulate(cat, job, r, server, routing, 0)
        entry["sim"] = {"step_time_s": r2.step_time_s, "routing": routing, "server": srv,
                        "comm_factors": {"dp": comm.dp_factor, "pp": comm.pp_factor,
                                         "ep": comm.ep_factor}}
    if count:
        chosen["best"]["sim"] = chosen["top"][0].get("sim")


def _plan_notes(chosen: dict[str, Any]) -> list[str]:
    """What a reader must know about the chosen plan: the band's caveats, an MFU above what
    anyone published on this GPU, and the simulator disagreeing with the estimate."""
    b = chosen["best"]
    notes = list(b["confidence"].get("notes") or [])
    if chosen.get("recheck_skipped"):
        notes.append(chosen["recheck_skipped"])
    mc = b["mfu_check"]
    if mc.get("above"):
        notes.append(
            f"MFU {100 * b['mfu']:.1f}% is above the highest published on {b['gpu']} in this "
            f"precision ({100 * mc['highest_published']:.1f}%, {mc['model']} on {mc['gpus']:,} "
            "GPUs): treat it as optimistic")
    elif mc.get("highest_published") is None:
        notes.append(f"no published MFU record for {b['gpu']} in this precision to compare with")
    sim = b.get("sim")
    if sim and sim["step_time_s"] > b["step_time_s"] * 1.05:
        notes.append(
            f"the network simulator puts the step at {sim['step_time_s']:.3f} s, "
            f"{100 * (sim['step_time_s'] / b['step_time_s'] - 1):.0f}% above the estimate "
            "(contention on the fabric)")
    return notes


def plan_training(cat: Catalog, req: TrainPlanRequest) -> TrainPlan:
    """The fastest layout that fits on ``req.gpus`` GPUs (or the fewest GPUs that meet the
    deadline) on one GPU type or, with ``gpu="choose"``, on each type that trains in the
    precision: with a deadline the cheapest priced type wins, otherwise the fewest
    GPU-seconds per step. Raises ``InfeasibleError`` when no layout works anywhere."""
    _check_fidelity(req.fidelity, req.routing)
    if req.gpus is None and req.deadline_days is None:
        raise InputError("gpus: give a GPU count, or deadline_days with tokens to find one",
                         field="gpus")
    if req.deadline_days is not None and req.tokens is None:
        raise InputError("deadline_days: needs tokens (how much to train)",
                         field="deadline_days")
    if req.precision in (Precision.int8, Precision.int4):
        raise InputError(f"precision: {req.precision.value} is not a training precision (use "
                         "fp32, bf16, fp16, fp8 or fp4)", field="precision")
    arch = req.model
    if req.gpu == "choose":
        dtype = training_dtype(req.precision)
        candidates = [g for g in cat.all("gpus") if dtype in g.peak_tflops]
        if req.stack is not None:
            try:
                covered = cat.stack(req.stack).gpus
            except UnknownIdError as exc:
                raise InputError(f"stack: {exc}", field="stack") from exc
            candidates = [g for g in candidates if g.id in covered]
    else:
        candidates = [_gpu(cat, req.gpu)]
    gbatch = req.global_batch or default_global_batch(req.seq_len)
    per_gpu = [_plan_one(cat, req, g, gbatch) for g in candidates]
    feasible = [r for r in per_gpu if r.get("best")]
    if not feasible:
        reasons = {k: v for r in per_gpu for k, v in (r.get("rejected") or {}).items()}
        why = (", ".join(f"{k}: {v}" for k, v in reasons.items())
               or "no GPU count up to 131072 meets the deadline")
        name = "gpus" if req.gpus is not None else "deadline_days"
        raise InfeasibleError(f"{name}: no layout of {arch.id} works on "
                              f"{req.gpus or 'any count of'} {req.gpu} ({why})",
                              "memory" if "does not fit in memory" in reasons else "other",
                              field=name)
    # With a deadline, the cheapest priced type wins (types without a cloud price are listed
    # but cannot be compared in dollars); otherwise the fewest GPU-seconds per step.
    priced = [r for r in feasible if r.get("cost_usd") is not None]
    if req.gpu != "choose":
        chosen = feasible[0]
    elif req.deadline_days is not None and priced:
        chosen = min(priced, key=lambda r: float(r["cost_usd"]))
    else:
        chosen = min(feasible, key=lambda r: float(r["best"]["step_time_s"]) * r["best"]["gpus"])
    _finish(cat, chosen)
    if req.fidelity == "sim":
        _recheck(cat, chosen, req.server, req.routing, req.recheck, req.recheck_budget_s)
    by_gpu = None
    if req.gpu == "choose":
        by_gpu = [
            {k: r.get(k) for k in ("gpu", "time_to_train_days", "gpu_hours", "cost_usd",
                                   "meets_deadline")}
            | {"gpus": r["best"]["gpus"] if r.get("best") else None,
               "step_time_s": r["best"]["step_time_s"] if r.get("best") else None}
            for r in per_gpu
        ]
    return TrainPlan(arch.id, gbatch, req.seq_len, chosen, by_gpu, req.fidelity,
                     _plan_notes(chosen))
