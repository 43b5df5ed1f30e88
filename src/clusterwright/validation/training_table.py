"""The memory and training-step tables: Megatron-LM and published MFU measurements predicted by
the training memory model and the training planner."""
from __future__ import annotations

from typing import NamedTuple

from clusterwright.catalog.registry import Catalog
from clusterwright.catalog.schema import Dtype, ModelArch
from clusterwright.design.train import estimate_layout, job_for, regime_of
from clusterwright.errors import ClusterwrightError, InputError
from clusterwright.model.flops import megatron_iteration_flops
from clusterwright.model.layouts import stage_layers
from clusterwright.model.lora import Lora
from clusterwright.model.memory import training_memory
from clusterwright.model.precision import training_dtype
from clusterwright.model.recompute import parse_recompute
from clusterwright.model.train_job import Job
from clusterwright.model.xp import ScalarOps
from clusterwright.plan.layouts import plan
from clusterwright.spec.parallel import ParallelConfig
from clusterwright.validation.rows import Row, TableResult, read_csv

GIB = 2**30


def _gpt(r: dict[str, str]) -> ModelArch:
    # GPT shapes of Korthikanti et al. 2022: ffn = 4h, MHA, learned positions, biases, the
    # GPT-2 vocabulary padded to 51,200 as Megatron does; a row may give its own ffn, KV
    # heads, vocabulary and activation (Megatron-Core's GPT configurations).
    # MaxText's synthetic models (accelerators.csv) add head_dim, no biases, untied RoPE.
    h = int(r["hidden"])
    return ModelArch(
        id="validation-gpt",
        name=r["model"],
        source="validation row",
        layers=int(r["layers"]),
        hidden=h,
        heads=int(r["heads"]),
        kv_heads=int(r["kv_heads"]) if r.get("kv_heads") else None,
        head_dim=int(r["head_dim"]) if r.get("head_dim") else None,
        ffn_hidden=int(r.get("ffn_hidden") or 4 * h),
        vocab=int(r.get("vocab") or 51200),
        max_seq_len=int(r["seq_len"]),
        position=r.get("position") or "learned",
        bias=(r.get("bias") or "yes") == "yes",
        activation=r.get("activation") or "gelu",
        tied_embeddings=(r.get("tied_embeddings") or "yes") == "yes",
    )


def memory_table() -> TableResult:
    """Korthikanti et al. 2022 Figures 1 and 7: per-GPU model states and activations.

    Their setup: Megatron-LM, fp16 weights with fp32 main gradients and Adam (18 bytes per
    parameter), dropout on, no FlashAttention (2022). Figure 1 counts the transformer layers'
    states, so the embedding share is left out of that comparison.
    """
    rows = []
    for r in read_csv("memory.csv"):
        arch = _gpt(r)
        seq = int(r["seq_len"])

        def mem(
            recompute: str,
            sp: bool,
            r: dict[str, str] = r,
            arch: ModelArch = arch,
            seq: int = seq,
        ) -> tuple[float, float]:
            par = ParallelConfig(
                tp=int(r["tp"]),
                pp=int(r["pp"]),
                dp=int(r["dp"]),
                virtual_stages=int(r["interleave"]),
                micro_batch=int(r["micro_batch"]),
                global_batch=int(r["global_batch"]),
                recompute=recompute,
                sequence_parallel=sp,
            )
            m = training_memory(
                arch, par, seq, "fp16", "fp32", "adam", flash_attention=False, dropout=True
            )
            return m.states - m.embedding_states, m.activations

        q = r["quantity"]
        rc = r["recompute"] or "none"
        sp = r["sequence_parallel"] == "yes"
        if q == "params_plus_optimizer_memory":
            pred = mem("none", False)[0] / GIB
        elif q == "activation_memory":
            pred = mem(rc, sp)[1] / GIB
        elif q == "activation_memory_relative":
            pred = 100.0 * mem(rc, sp)[1] / mem("none", False)[1]
        else:
            raise InputError(f"memory.csv row {r['id']}: unknown quantity {q!r}")
        rows.append(Row(r["id"], q, float(r["value"]), pred, r["unit"], r["source"]))
    return TableResult("memory", "memory.csv", rows, tolerance=0.05)


# Columns of training.csv that set a framework option (empty: the stack's default).
OPTION_COLUMNS = ("schedule", "ep_overlap", "ep_dispatcher", "cp_comm", "fp8_recipe")
BOOL_OPTION_COLUMNS = {"tp_overlap": "tp_overlap", "dispatch_fp8": "dispatch_fp8"}


def _flag(value: str) -> bool:
    return value.strip().lower() in ("yes", "true", "1")


def train_job(cat: Catalog, r: dict[str, str]) -> Job:
    """The Job a training.csv row describes (model, GPU, stack, precision, options)."""
    arch = _gpt(r) if r["model"] == "gpt" else cat.model(r["model"])
    options: dict[str, object] = {k: r[k] for k in OPTION_COLUMNS if r.get(k)}
    for col, key in BOOL_OPTION_COLUMNS.items():
        if r.get(col):
            options[key] = _flag(r[col])
    if r.get("expert_imbalance"):
        options["expert_imbalance"] = float(r["expert_imbalance"])
    # LoRA fine-tuning rows (MLPerf Training llama2_70b_lora): rank and targets.
    lora = (Lora.of(int(r["lora_rank"]), (r.get("lora_targets") or "attention").split("+"))
            if r.get("lora_rank") else None)
    return job_for(
        cat,
        arch,
        r["gpu"],
        int(r["seq_len"]),
        int(r["global_batch"]),
        r["precision"],
        r.get("grad_precision") or None,
        server_id=r.get("server") or None,
        stack_id=r.get("stack") or None,
        dropout=r.get("dropout") == "yes",
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


class TrainPrediction(NamedTuple):
    """One training row predicted: the value in the row's metric, a layout summary, the
    regime tags, and the model-FLOPs utilisation of the predicted step (fraction)."""

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


def _train_row(cat: Catalog, r: dict[str, str]) -> TrainPrediction:
    """Predict one training row with its published configuration. Fields left empty are
    searched (fastest layout that fits), as ``train estimate`` does."""
    job = train_job(cat, r)
    arch = job.arch
    seq = job.seq_len
    gb = job.global_batch
    n = int(r["n_gpus"])
    if not r["tp"]:
        # Layout not published (MLPerf): predict with the planner's best layout.
        res_plan = plan(job, n, top_n=1)
        if res_plan.best is None:
            raise InputError(f"training.csv row {r['id']}: no layout fits")
        best = res_plan.best
        tps = best.tokens_per_step / best.step_time_s
        lay = best.layout
        detail = (
            f"plan: tp{lay['tp']} pp{lay['pp']} dp{lay['dp']} cp{lay['cp']} "
            f"v{lay['interleave']} {lay['recompute']}"
        )
        mfu = best.metrics(job.gpu, _peak(job))["mfu"]
        return TrainPrediction(float(r["tokens"]) / tps / 60.0, detail, regime_tags(job, lay, n),
                               mfu)
    fixed: dict[str, int] = {k: int(r[k]) for k in ("tp", "pp", "dp", "cp", "ep")}
    search: list[str] = []
    for key, col in (
        ("interleave", "interleave"),
        ("zero", "zero"),
        ("micro_batch", "micro_batch"),
    ):
        if r[col]:
            fixed[key] = int(r[col])
        else:
            search.append(key)
    if r.get("shard"):
        fixed["shard"] = int(r["shard"])
    if r["recompute"]:
        fixed["recompute"] = parse_recompute(r["recompute"])
        if r.get("recompute_layers") and r.get("interleave"):
            # Megatron's --recompute-num-layers counts layers per model chunk.
            per_chunk = stage_layers(float(arch.layers), fixed["pp"], int(r["interleave"]),
                                     ScalarOps) / int(r["interleave"])
            fixed["rc_frac"] = min(1.0, int(r["recompute_layers"]) / per_chunk)
    else:
        search.append("recompute")
    if r["sequence_parallel"]:
        fixed["sp"] = int(r["sequence_parallel"] == "yes")
    else:
        search.append("sp")
    res = estimate_layout(job, fixed, tuple(search))
    step = res.step_time_s
    metric = r["metric"]
    if metric == "iteration_time":
        pred = step
    elif metric == "tflops_per_gpu_megatron":
        flops = megatron_iteration_flops(gb, seq, arch.layers, arch.hidden, arch.vocab, True)
        pred = float(flops) / step / n / 1e12
    elif metric == "tflops_per_gpu":
        pred = res.model_flops / step / n / 1e12
    elif metric == "tokens_per_s_per_gpu":
        pred = gb * seq / step / n
    elif metric == "fp8_speedup":
        # FP8 over BF16 throughput at the same layout (micro-batch and recompute as found for
        # FP8, held for BF16).
        bf16 = train_job(cat, {**r, "precision": "bf16", "fp8_recipe": ""})
        fixed16 = {**fixed, "micro_batch": res.layout["micro_batch"],
                   "recompute": parse_recompute(str(res.layout["recompute"])),
                   "interleave": res.layout["interleave"], "zero": res.layout["zero"],
                   "sp": int(bool(res.layout["sequence_parallel"]))}
        pred = estimate_layout(bf16, fixed16, ()).step_time_s / step
    elif metric == "mfu":
        flops = megatron_iteration_flops(gb, seq, arch.layers, arch.hidden, arch.vocab, False)
        pred = 100.0 * float(flops) / step / n / (job.gpu.peak_tflops[Dtype.fp16] * 1e12)
    elif metric == "training_time":
        pred = float(r["tokens"]) / (gb * seq) * step / 3600.0
    elif metric == "gpu_hours_per_1t_tokens":
        pred = 1e12 / (gb * seq) * step * n / 3600.0
    else:
        raise InputError(f"training.csv row {r['id']}: unknown metric {metric!r}")
    lay = res.layout
    detail = (
        f"mb{lay['micro_batch']} v{lay['interleave']} {lay['recompute']} "
        f"sp{int(bool(lay['sequence_parallel']))} zero{lay['zero']} "
        f"mem {res.memory['total'] / 1e9:.0f} GB" + ("" if res.fits else " (does not fit)")
    )
    return TrainPrediction(pred, detail, regime_tags(job, lay, n),
                           res.metrics(job.gpu, _peak(job))["mfu"])


def _peak(job: Job) -> float:
    return float(job.gpu.peak_tflops[training_dtype(job.precision)])


def training_table() -> TableResult:
    """Step time / throughput of published training runs, predicted with each row's stack
    and layout (``validation/training.csv``; its README lists the sources)."""
    from clusterwright.catalog.registry import load_catalog

    cat = load_catalog(env={})
    rows = []
    for r in read_csv("training.csv"):
        try:
            pred, detail, tags, _ = _train_row(cat, r)
        except ClusterwrightError as exc:
            raise InputError(f"training.csv row {r['id']}: {exc}") from None
        rows.append(
            Row(
                r["id"],
                r["metric"],
                float(r["value"]),
                pred,
                r["unit"],
                r["source"],
                r["set"],
                detail,
                group=r.get("stack", ""),
                tags=tags,
            )
        )
    return TableResult("training", "training.csv", rows, tolerance=0.08)
