"""``clusterwright size``: memory and compute to train or serve a model."""

from __future__ import annotations

from typing import Any, Literal

import typer
from rich.table import Table

from clusterwright.catalog.registry import resolve_model
from clusterwright.cli import limits as lim
from clusterwright.cli.common import console, emit_json, fail, gb, state, user_errors
from clusterwright.errors import ClusterwrightError
from clusterwright.model.precision import Precision
from clusterwright.model.sizing import SizeResult, size_inference, size_training
from clusterwright.spec.parallel import ParallelConfig

DEFAULT_CONTEXT = 2048  # tokens; a model with a shorter context is sized at its own

PARALLEL_FLAGS = {
    "context": "--context",
    "tp": "--tp",
    "pp": "--pp",
    "dp": "--dp",
    "zero_stage": "--zero",
    "micro_batch": "--micro-batch",
    "global_batch": "--global-batch",
    "recompute": "--recompute",
    "sequence_parallel": "--sequence-parallel",
    "virtual_stages": "--interleave",
}


def _payload(r: SizeResult, seq_or_context: int, batch: int, model_id: str) -> dict[str, Any]:
    out: dict[str, Any] = {
        "model": model_id,
        "mode": r.mode,
        "params": r.params,
        "active_params": r.active_params,
        "weights_gb": gb(r.weights),
        "gradients_gb": gb(r.gradients),
        "optimizer_gb": gb(r.optimizer),
        "activations_gb": gb(r.activations),
        "kv_cache_gb": gb(r.kv_cache),
        "reserve_gb": gb(r.reserve),
        "total_gb": gb(r.total),
        "min_gpus": {f.gpu: f.min_gpus for f in r.fits if f.supported},
        "min_gpus_layout": {f.gpu: f.min_gpus_layout or None for f in r.fits if f.supported},
        "unsupported": {f.gpu: f.reason for f in r.fits if not f.supported},
        "flops_per_token": r.flops_per_token,
        "batch": batch,
        ("seq_len" if r.mode == "training" else "context"): seq_or_context,
    }
    if r.roofline:
        out["roofline"] = {
            g: {
                phase: {
                    "intensity_flop_per_byte": p.intensity,
                    "ridge_flop_per_byte": p.ridge,
                    "bound": p.bound,
                    "time_lower_bound_s": p.time_s,
                    "attainable_tflops_per_gpu": p.attainable_tflops,
                }
                for phase, p in pts.items()
            }
            for g, pts in r.roofline.items()
        }
    return out


def _render(d: dict[str, Any]) -> None:
    console.print(
        f"[bold]{d['model']}[/] ({d['mode']}): {d['params'] / 1e9:.2f}B parameters"
        + (f", {d['active_params'] / 1e9:.2f}B active" if d["active_params"] != d["params"] else "")
    )
    t = Table(title="memory per GPU (GB = 10^9 bytes)", title_justify="left")
    t.add_column("part")
    t.add_column("GB", justify="right")
    for key in ("weights", "gradients", "optimizer", "activations", "kv_cache", "reserve", "total"):
        v = d[f"{key}_gb"]
        if v or key == "total":
            t.add_row(key.replace("_", " "), f"{v:,.2f}")
    console.print(t)
    serving = d["mode"] == "inference"
    f = Table(title="fewest GPUs that hold it", title_justify="left")
    f.add_column("GPU")
    f.add_column("memory bound", justify="right")
    if serving:
        f.add_column("smallest TP that fits", justify="right")
        f.add_column("decode bound")
        f.add_column("decode step >= ms", justify="right")
    for g, n in d["min_gpus"].items():
        row = [g, str(n)]
        if serving:
            dec = d["roofline"][g]["decode"]
            row += [
                str(d["min_gpus_layout"][g] or "-"),
                dec["bound"],
                f"{dec['time_lower_bound_s'] * 1e3:.2f}",
            ]
        f.add_row(*row)
    for g, why in d["unsupported"].items():
        f.add_row(g, "-", *([why, "", ""] if serving else []))
    if d["unsupported"] and not serving:
        console.print("unsupported: " + "; ".join(d["unsupported"].values()))
    console.print(f)


def size(
    ctx: typer.Context,
    model: str = typer.Option(..., "--model", help="Catalog id or path to a model YAML."),
    training: bool = typer.Option(False, "--training", help="Size training (default: serving)."),
    precision: Precision = typer.Option(Precision.bf16, "--precision", help="Weight precision."),
    kv_precision: Precision | None = typer.Option(
        None, "--kv-precision", help="KV cache precision (serving)."
    ),
    grad_precision: Precision | None = typer.Option(
        None,
        "--grad-precision",
        help="Gradient precision (training; Megatron keeps fp32 main grads).",
    ),
    optimizer: str = typer.Option("adam", "--optimizer", help="adam or sgd."),
    zero: int = typer.Option(0, "--zero", help="ZeRO stage 0-3."),
    tp: int = typer.Option(1, "--tp"),
    pp: int = typer.Option(1, "--pp"),
    dp: int = typer.Option(1, "--dp"),
    interleave: int = typer.Option(1, "--interleave", help="Virtual pipeline stages."),
    seq_len: int = typer.Option(2048, "--seq-len", help="Training sequence length, tokens."),
    micro_batch: int = typer.Option(1, "--micro-batch", help="Sequences per micro-batch."),
    global_batch: int | None = typer.Option(None, "--global-batch", help="Sequences per step."),
    recompute: str = typer.Option("none", "--recompute", help="none, selective or full."),
    sequence_parallel: bool = typer.Option(False, "--sequence-parallel"),
    flash_attention: bool = typer.Option(True, "--flash-attention/--no-flash-attention"),
    batch: int = typer.Option(1, "--batch", help="Concurrent sequences (serving)."),
    context: int | None = typer.Option(
        None, "--context", help="Tokens per sequence, prompt plus output (serving; default "
        f"{DEFAULT_CONTEXT}, or the model's context if shorter)."
    ),
    gpu: list[str] = typer.Option([], "--gpu", help="Limit min_gpus to these GPU ids."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Memory and compute a model needs to train or serve, and the fewest GPUs that hold it."""
    if optimizer not in ("adam", "sgd"):
        fail(f"--optimizer: {optimizer!r} is not one of adam, sgd")
    if recompute not in ("none", "selective", "full"):
        fail(f"--recompute: {recompute!r} is not one of none, selective, full")
    for flag, value in (("--seq-len", seq_len), ("--batch", batch), ("--context", context)):
        if value is not None and value <= 0:
            fail(f"{flag}: must be a positive number of tokens or sequences, got {value}")
    lim.within(("--seq-len", seq_len, lim.SEQ_TOKENS), ("--context", context, lim.SEQ_TOKENS),
               ("--batch", batch, lim.SEQUENCES), ("--micro-batch", micro_batch, lim.SEQUENCES),
               ("--global-batch", global_batch, lim.SEQUENCES), ("--tp", tp, lim.PARALLEL),
               ("--pp", pp, lim.PARALLEL), ("--dp", dp, lim.PARALLEL),
               ("--interleave", interleave, lim.INTERLEAVE))
    if tp * pp * dp > lim.GPUS.high:
        fail(f"--tp/--pp/--dp: {tp} x {pp} x {dp} = {tp * pp * dp:,} GPUs; at most "
             f"{lim.GPUS.high:,}")
    if training and Precision(precision) in (Precision.int8, Precision.int4):
        fail(
            f"--precision: {precision.value} is an inference-only format; train in fp32, bf16, "
            "fp16, fp8 or fp4"
        )
    with user_errors():
        cat = state(ctx).catalog()
    try:
        arch = resolve_model(cat, model)
    except ClusterwrightError as exc:
        fail(f"--model: {exc}")
    try:
        gpus = [cat.gpu(g) for g in gpu] if gpu else cat.all("gpus")
    except ClusterwrightError as exc:
        fail(f"--gpu: {exc}")
    opt: Literal["adam", "sgd"] = "adam" if optimizer == "adam" else "sgd"
    with user_errors(PARALLEL_FLAGS):
        # Built in both modes so --tp/--pp/--dp/--zero are checked the same way everywhere.
        par = ParallelConfig(
            tp=tp,
            pp=pp,
            dp=dp,
            zero_stage=zero,
            micro_batch=micro_batch,
            global_batch=global_batch,
            recompute=recompute,
            sequence_parallel=sequence_parallel,
            virtual_stages=interleave,
        )
    if tp > 1 and arch.heads % tp:
        fail(f"--tp: {tp} does not divide the {arch.heads} attention heads of {arch.id}")
    if pp > arch.layers:
        fail(f"--pp: {pp} stages exceed the {arch.layers} layers of {arch.id}")
    with user_errors(PARALLEL_FLAGS, name_flags=True):
        if training:
            r = size_training(
                arch,
                par,
                seq_len,
                gpus,
                precision,
                grad_precision,
                opt,
                flash_attention,
                cat.assumption("training_reserve_gb") * 1e9,
            )
            payload = _payload(r, seq_len, par.batch, arch.id)
        else:
            context = context or min(DEFAULT_CONTEXT, arch.max_seq_len)
            r = size_inference(
                arch,
                batch,
                context,
                gpus,
                precision,
                kv_precision,
                tp,
                pp,
                cat.assumption("inference_gpu_memory_utilization"),
                cat.assumption("inference_max_batched_tokens"),
                cat.assumption("inference_cuda_graph_reserve_gb") * 1e9,
            )
            payload = _payload(r, context, batch, arch.id)
    if as_json:
        emit_json(payload)
    else:
        _render(payload)
