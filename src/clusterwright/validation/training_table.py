"""The memory and training-step tables: Megatron-LM and published MFU measurements predicted by
the training memory model and the training planner."""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

from clusterwright.catalog.registry import Catalog
from clusterwright.catalog.schema import Activation, Dtype, ModelArch
from clusterwright.design.train import LayoutResult, estimate_layout, job_for, regime_of
from clusterwright.errors import InputError, UnknownIdError
from clusterwright.model.flops import megatron_iteration_flops
from clusterwright.model.layouts import stage_layers
from clusterwright.model.lora import Lora
from clusterwright.model.memory import training_memory
from clusterwright.model.precision import Precision, training_dtype
from clusterwright.model.recompute import parse_recompute
from clusterwright.model.train_compute import FP8_CAST_BYTES
from clusterwright.model.train_job import (
    CP_COMMS,
    EP_DISPATCHERS,
    EP_OVERLAPS,
    GRAD_REDUCES,
    SCHEDULES,
    Job,
)
from clusterwright.model.xp import ScalarOps
from clusterwright.plan.layouts import plan
from clusterwright.spec.parallel import ParallelConfig
from clusterwright.validation.rows import (
    CsvRow,
    NotCoveredError,
    Row,
    TableResult,
    bad,
    choice,
    integer,
    number,
    optional_integer,
    optional_number,
    predict_each,
    read_csv,
    text,
    unit_scale,
)

GIB = 2**30
YES_NO = ("yes", "no")


def _gpt(r: Mapping[str, str]) -> ModelArch:
    # GPT shapes of Korthikanti et al. 2022: ffn = 4h, MHA, learned positions, biases, the
    # GPT-2 vocabulary padded to 51,200 as Megatron does; a row may give its own ffn, KV
    # heads, vocabulary and activation (Megatron-Core's GPT configurations).
    # MaxText's synthetic models (accelerators.csv) add head_dim, no biases, untied RoPE.
    h = integer(r, "hidden", low=1)
    return ModelArch(
        id="validation-gpt",
        name=r["model"],
        source="validation row",
        layers=integer(r, "layers", low=1),
        hidden=h,
        heads=integer(r, "heads", low=1),
        kv_heads=optional_integer(r, "kv_heads", low=1),
        head_dim=optional_integer(r, "head_dim", low=1),
        ffn_hidden=optional_integer(r, "ffn_hidden", low=1) or 4 * h,
        vocab=optional_integer(r, "vocab", low=1) or 51200,
        max_seq_len=integer(r, "seq_len", low=1),
        position=choice(r, "position", ("learned", "rope", "alibi"), default="learned"),
        bias=choice(r, "bias", YES_NO, default="yes") == "yes",
        activation=choice(r, "activation", tuple(Activation), default="gelu"),
        tied_embeddings=choice(r, "tied_embeddings", YES_NO, default="yes") == "yes",
    )


def memory_table(path: str | Path = "memory.csv") -> TableResult:
    """Korthikanti et al. 2022 Figures 1 and 7: per-GPU model states and activations.

    Their setup: Megatron-LM, fp16 weights with fp32 main gradients and Adam (18 bytes per
    parameter), dropout on, no FlashAttention (2022). Figure 1 counts the transformer layers'
    states, so the embedding share is left out of that comparison. ``path``: another file in
    memory.csv's format.
    """
    rows, not_covered = predict_each(read_csv(path), _memory_row)
    return TableResult("memory", str(path), rows, tolerance=0.05, not_covered=not_covered)


# Quantity -> the unit its prediction is in ("per GPU" may be left out of a byte unit).
MEMORY_QUANTITIES = {"params_plus_optimizer_memory": "GiB",
                     "activation_memory": "GiB",
                     "activation_memory_relative": "% of baseline"}
RECOMPUTE_MODES = ("none", "selective", "full")


def _memory_row(r: CsvRow, set_: str) -> list[Row]:
    q = choice(r, "quantity", MEMORY_QUANTITIES)
    unit = text(r, "unit")
    scale = unit_scale(r, MEMORY_QUANTITIES[q], q, unit=unit.removesuffix(" per GPU"))
    measured = number(r, "value", positive=True)
    rc = choice(r, "recompute", RECOMPUTE_MODES, default="none")
    sp = choice(r, "sequence_parallel", YES_NO, default="no") == "yes"
    layout = {k: integer(r, k, low=1)
              for k in ("tp", "pp", "dp", "interleave", "micro_batch", "global_batch")}
    arch = _gpt(r)
    seq = integer(r, "seq_len", low=1)

    def mem(recompute: str, sp: bool) -> tuple[float, float]:
        par = ParallelConfig(
            tp=layout["tp"],
            pp=layout["pp"],
            dp=layout["dp"],
            virtual_stages=layout["interleave"],
            micro_batch=layout["micro_batch"],
            global_batch=layout["global_batch"],
            recompute=recompute,
            sequence_parallel=sp,
        )
        m = training_memory(
            arch, par, seq, "fp16", "fp32", "adam", flash_attention=False, dropout=True
        )
        return m.states - m.embedding_states, m.activations

    if q == "params_plus_optimizer_memory":
        pred = mem("none", False)[0] / GIB
    elif q == "activation_memory":
        pred = mem(rc, sp)[1] / GIB
    else:
        pred = 100.0 * mem(rc, sp)[1] / mem("none", False)[1]
    return [Row(r["id"], q, measured, pred / scale, unit, r["source"], set_)]


# Columns of training.csv that set a framework option (empty: the stack's default), with the
# values the frameworks have (a value a row's stack lacks is not covered, not malformed).
OPTION_COLUMNS: dict[str, tuple[str, ...]] = {
    "schedule": SCHEDULES, "ep_overlap": EP_OVERLAPS, "ep_dispatcher": EP_DISPATCHERS,
    "cp_comm": CP_COMMS, "fp8_recipe": tuple(FP8_CAST_BYTES), "grad_reduce": GRAD_REDUCES}
BOOL_OPTION_COLUMNS = {"tp_overlap": "tp_overlap", "dispatch_fp8": "dispatch_fp8",
                       "grad_overlap": "grad_overlap", "flash_attention": "flash_attention"}
FLAGS = {"yes": True, "true": True, "1": True, "no": False, "false": False, "0": False}
PRECISIONS = tuple(p.value for p in Precision)


def _flag(r: Mapping[str, str], col: str) -> bool:
    return FLAGS[choice(r, col, FLAGS)]


def _arch(cat: Catalog, r: Mapping[str, str]) -> ModelArch:
    """``gpt``: the row's shape columns; otherwise the catalog model of that id."""
    model = text(r, "model")
    if model == "gpt":
        return _gpt(r)
    try:
        return cat.model(model)
    except UnknownIdError as exc:
        raise NotCoveredError(f"{exc} (model gpt predicts from the row's shape columns)"
                              ) from None


def train_job(cat: Catalog, r: Mapping[str, str]) -> Job:
    """The Job a training.csv row describes (model, GPU, stack, precision, options)."""
    precision = choice(r, "precision", PRECISIONS)
    grad = choice(r, "grad_precision", PRECISIONS, default="") or None
    options: dict[str, object] = {k: choice(r, k, known, default="")
                                  for k, known in OPTION_COLUMNS.items() if r.get(k)}
    for col, key in BOOL_OPTION_COLUMNS.items():
        if r.get(col):
            options[key] = _flag(r, col)
    imbalance = optional_number(r, "expert_imbalance", positive=True)
    if imbalance is not None:
        options["expert_imbalance"] = imbalance
    seq, gb = integer(r, "seq_len", low=1), integer(r, "global_batch", low=1)
    dropout = choice(r, "dropout", YES_NO, default="no") == "yes"
    # LoRA fine-tuning rows (MLPerf Training llama2_70b_lora): rank and targets.
    rank = optional_integer(r, "lora_rank", low=1)
    lora = None
    if rank is not None:
        try:
            lora = Lora.of(rank, (r.get("lora_targets") or "attention").split("+"))
        except InputError as exc:
            raise bad(r, exc.field or "lora_targets", str(exc).split(": ", 1)[-1]) from None
    arch = _arch(cat, r)
    return job_for(
        cat,
        arch,
        text(r, "gpu"),
        seq,
        gb,
        precision,
        grad,
        server_id=(r.get("server") or "").strip() or None,
        stack_id=(r.get("stack") or "").strip() or None,
        dropout=dropout,
        options=options,
        lora=lora,
    )


def regime_tags(job: Job, layout: dict[str, object], n_gpus: int) -> tuple[tuple[str, str], ...]:
    """Where a prediction sits: stack, precision class, parallelism families, scale."""
    reg = regime_of(job, layout, n_gpus)
    return (("stack", reg.stack), ("precision", reg.precision), ("family", reg.family),
            ("scale", reg.scale), ("gpu", reg.gpu))


# Metrics in the time sense (larger = slower); the others are throughputs (larger = faster).
TIME_METRICS = ("iteration_time", "training_time", "gpu_hours_per_1t_tokens")
# Metric -> the unit it is predicted in, and other names of that unit. A row may state a time
# in another time unit (ms, h) or MFU as a fraction: it is compared in its own unit.
METRICS: dict[str, tuple[str, tuple[str, ...]]] = {
    "iteration_time": ("s", ()),
    "tflops_per_gpu_megatron": ("TFLOP/s", ("TFLOP/s/GPU", "TFLOPS")),
    "tflops_per_gpu": ("TFLOP/s", ("TFLOP/s/GPU", "TFLOP/s/chip", "TFLOPS")),
    "tokens_per_s_per_gpu": ("tokens/s/GPU", ("tokens/s/chip", "tokens/s/device",
                                              "tok/s/GPU", "tok/s/chip")),
    "fp8_speedup": ("x", ()),
    "mfu": ("%", ()),
    "training_time": ("h", ()),
    "gpu_hours_per_1t_tokens": ("GPU-h", ("GPU-hours",)),
}
LAYOUT = ("tp", "pp", "dp", "cp", "ep")


class TrainPrediction(NamedTuple):
    """One training row predicted: the value in the row's metric and unit, a layout summary,
    the regime tags, and the model-FLOPs utilisation of the predicted step (fraction)."""

    value: float
    detail: str
    tags: tuple[tuple[str, str], ...]
    mfu: float


def measured_mfu(r: dict[str, str], p: TrainPrediction) -> float | None:
    """The MFU the row's measurement implies, counted with our model FLOPs (None for ratio
    metrics such as fp8_speedup)."""
    if r["metric"] == "fp8_speedup":
        return None
    meas = float(r["value"])
    if r["metric"] in TIME_METRICS:
        return p.mfu * p.value / meas
    return p.mfu * meas / p.value


def _layout(r: Mapping[str, str]) -> tuple[dict[str, int] | None, int]:
    """The row's tp, pp, dp, cp, ep (None: not published, the planner's best is used) and its
    GPU count. cp and ep default to 1 and dp to what the GPU count leaves; the GPU count must
    be tp x pp x dp x cp."""
    n = optional_integer(r, "n_gpus", low=1)
    given = {k: optional_integer(r, k, low=1) for k in LAYOUT}
    if given["tp"] is None:
        if any(v is not None for v in given.values()):
            raise NotCoveredError("a partial layout (tp empty, " + ", ".join(
                k for k, v in given.items() if v is not None) + " given): give tp and pp "
                "(dp, cp, ep default to the rest, 1, 1), or leave the layout empty to search it")
        if n is None:
            raise bad(r, "n_gpus", "is required when the layout is not given")
        return None, n
    if given["pp"] is None:
        raise NotCoveredError("tp given without pp: give both (dp, cp and ep default to the "
                              "rest, 1 and 1), or leave the layout empty to search it")
    fixed = {k: 1 if v is None else v for k, v in given.items()}
    tp_pp_cp = fixed["tp"] * fixed["pp"] * fixed["cp"]
    if given["dp"] is None:
        if n is None:
            raise bad(r, "dp", "is empty and so is n_gpus (give one of them)")
        if n % tp_pp_cp:
            raise bad(r, "dp", f"is empty and n_gpus {n} is not a multiple of tp x pp x cp "
                      f"= {tp_pp_cp}")
        fixed["dp"] = n // tp_pp_cp
    total = tp_pp_cp * fixed["dp"]
    if n is not None and n != total:
        raise bad(r, "n_gpus", f"{n} is not tp x pp x dp x cp = {total}")
    return fixed, total


def _train_row(cat: Catalog, r: Mapping[str, str]) -> TrainPrediction:
    """Predict one training row with its published configuration. Fields left empty are
    searched (fastest layout that fits), as ``train estimate`` does; with no layout at all
    (tp to ep empty), the planner's best layout on the row's GPUs is used."""
    metric = choice(r, "metric", METRICS)
    canonical, synonyms = METRICS[metric]
    scale = unit_scale(r, canonical, metric, synonyms)
    number(r, "value", positive=True)
    tokens = number(r, "tokens", positive=True) if metric == "training_time" else 0.0
    fixed, n = _layout(r)
    interleave = optional_integer(r, "interleave", low=1)
    zero = optional_integer(r, "zero", low=0)
    micro_batch = optional_integer(r, "micro_batch", low=1)
    shard = optional_integer(r, "shard", low=1)
    rc_text = (r.get("recompute") or "").strip()
    try:
        recompute = parse_recompute(rc_text) if rc_text else None
    except ValueError as exc:
        raise bad(r, "recompute", str(exc)) from None
    rc_layers = optional_integer(r, "recompute_layers", low=1)
    sp = choice(r, "sequence_parallel", YES_NO, default="")
    job = train_job(cat, r)
    arch = job.arch
    prefix = ""
    if fixed is None:
        # Layout not published: predict with the planner's best layout, then read the row's
        # metric from that layout as for any other row.
        best = plan(job, n, top_n=1).best
        if best is None:
            raise NotCoveredError(f"no layout of {arch.id} fits on {n} x {job.gpu.id}")
        lay = best.layout
        fixed = {k: int(str(lay[k])) for k in LAYOUT}
        prefix = (f"plan: tp{lay['tp']} pp{lay['pp']} dp{lay['dp']} cp{lay['cp']} "
                  f"ep{lay['ep']}; ")
        interleave, zero, micro_batch = (int(str(lay[k])) for k in (
            "interleave", "zero", "micro_batch"))
        recompute, sp = parse_recompute(str(lay["recompute"])), (
            "yes" if lay["sequence_parallel"] else "no")
        shard = int(str(lay["shard"]))
        if str(lay["recompute"]) == "full":
            fixed["rc_frac"] = float(str(lay["recompute_share"]))  # type: ignore[assignment]
    if arch.heads % fixed["tp"]:
        raise NotCoveredError(f"tp {fixed['tp']} does not divide the {arch.heads} attention "
                              f"heads of {arch.id}")
    search: list[str] = []
    for key, value in (("interleave", interleave), ("zero", zero), ("micro_batch", micro_batch)):
        if value is not None:
            fixed[key] = value
        else:
            search.append(key)
    if shard is not None:
        fixed["shard"] = shard
    if recompute is not None:
        fixed["recompute"] = recompute
        if rc_layers is not None and interleave is not None:
            # Megatron's --recompute-num-layers counts layers per model chunk.
            per_chunk = stage_layers(float(arch.layers), fixed["pp"], interleave,
                                     ScalarOps) / interleave
            fixed["rc_frac"] = min(1.0, rc_layers / per_chunk)
    else:
        search.append("recompute")
    if sp:
        fixed["sp"] = int(sp == "yes")
    else:
        search.append("sp")
    res = estimate_layout(job, fixed, tuple(search))
    pred = _metric(cat, r, metric, job, res, fixed, n, tokens)
    lay = res.layout
    detail = prefix + (
        f"mb{lay['micro_batch']} v{lay['interleave']} {lay['recompute']} "
        f"sp{int(bool(lay['sequence_parallel']))} zero{lay['zero']} "
        f"mem {res.memory['total'] / 1e9:.0f} GB" + ("" if res.fits else " (does not fit)")
    )
    return TrainPrediction(pred / scale, detail, regime_tags(job, lay, n),
                           res.metrics(job.gpu, _peak(job))["mfu"])


def _metric(cat: Catalog, r: Mapping[str, str], metric: str, job: Job, res: LayoutResult,
            fixed: dict[str, int], n: int, tokens: float) -> float:
    """The row's metric of the estimated layout, in the metric's own unit."""
    arch, seq, gb = job.arch, job.seq_len, job.global_batch
    step = res.step_time_s
    if metric == "iteration_time":
        return step
    if metric == "tflops_per_gpu_megatron":
        flops = megatron_iteration_flops(gb, seq, arch.layers, arch.hidden, arch.vocab, True)
        return float(flops) / step / n / 1e12
    if metric == "tflops_per_gpu":
        return res.model_flops / step / n / 1e12
    if metric == "tokens_per_s_per_gpu":
        return gb * seq / step / n
    if metric == "fp8_speedup":
        # FP8 over BF16 throughput at the same layout (micro-batch and recompute as found for
        # FP8, held for BF16).
        bf16 = train_job(cat, {**r, "precision": "bf16", "fp8_recipe": ""})
        fixed16 = {**fixed, "micro_batch": res.layout["micro_batch"],
                   "recompute": parse_recompute(str(res.layout["recompute"])),
                   "interleave": res.layout["interleave"], "zero": res.layout["zero"],
                   "sp": int(bool(res.layout["sequence_parallel"]))}
        return estimate_layout(bf16, fixed16, ()).step_time_s / step
    if metric == "mfu":
        flops = megatron_iteration_flops(gb, seq, arch.layers, arch.hidden, arch.vocab, False)
        return 100.0 * float(flops) / step / n / (job.gpu.peak_tflops[Dtype.fp16] * 1e12)
    if metric == "training_time":
        return tokens / (gb * seq) * step / 3600.0
    return 1e12 / (gb * seq) * step * n / 3600.0  # gpu_hours_per_1t_tokens


def _peak(job: Job) -> float:
    return float(job.gpu.peak_tflops[training_dtype(job.precision)])


def train_rows(cat: Catalog, r: CsvRow, set_: str) -> list[Row]:
    """One row of training.csv's format (training and accelerators tables) as a Row."""
    pred, detail, tags, _ = _train_row(cat, r)
    return [Row(r["id"], r["metric"], number(r, "value", positive=True), pred, r["unit"],
                r["source"], set_, detail, group=r.get("stack", ""), tags=tags)]


def training_table(path: str | Path = "training.csv") -> TableResult:
    """Step time / throughput of published training runs, predicted with each row's stack
    and layout (``validation/training.csv``; its README lists the sources). ``path``: another
    file in training.csv's format."""
    from clusterwright.catalog.registry import load_catalog

    cat = load_catalog(env={})
    rows, not_covered = predict_each(read_csv(path), lambda r, s: train_rows(cat, r, s),
                                     default_set=None)
    return TableResult("training", str(path), rows, tolerance=0.08, not_covered=not_covered)
