"""How much memory and compute a model needs to train or serve, and on how many GPUs.

Composes params, flops, memory and roofline into the answer of ``clusterwright size``.
Sizes are bytes here; the CLI converts to GB (10^9 bytes) at the edge.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from clusterwright.catalog.schema import Gpu, ModelArch
from clusterwright.errors import InputError
from clusterwright.model import memory as mem
from clusterwright.model import roofline
from clusterwright.model.flops import forward_flops_per_token, training_flops_per_token
from clusterwright.model.params import active_params, param_counts
from clusterwright.model.precision import (
    Precision,
    default_kv_precision,
    inference_dtype,
    training_dtype,
)
from clusterwright.spec.parallel import Optimizer, ParallelConfig


@dataclass(frozen=True)
class GpuFit:
    """How one GPU type holds the job."""

    gpu: str
    supported: bool
    reason: str = ""
    min_gpus: int = 0  # memory lower bound: perfect sharding over N GPUs
    min_gpus_layout: int = 0  # smallest realisable layout (inference: a TP degree)
    per_gpu_bytes_at_layout: float = 0.0
    usable_bytes_per_gpu: float = 0.0


@dataclass(frozen=True)
class SizeResult:
    """Memory per GPU under the given layout (bytes), FLOPs, and fit per GPU type."""

    mode: str  # "training" or "inference"
    params: int
    active_params: int
    weights: float
    gradients: float
    optimizer: float
    activations: float
    kv_cache: float
    reserve: float
    flops_per_token: float  # training: model FLOPs (fwd+bwd); inference: forward
    fits: list[GpuFit] = field(default_factory=list)
    roofline: dict[str, dict[str, roofline.RooflinePoint]] = field(default_factory=dict)

    @property
    def total(self) -> float:
        return (
            self.weights
            + self.gradients
            + self.optimizer
            + self.activations
            + self.kv_cache
            + self.reserve
        )


def size_training(
    arch: ModelArch,
    par: ParallelConfig,
    seq_len: int,
    gpus: list[Gpu],
    precision: Precision | str = Precision.bf16,
    grads: Precision | str | None = None,
    optimizer: Optimizer = "adam",
    flash_attention: bool = True,
    reserve_bytes: float = 0.0,
) -> SizeResult:
    """Training memory per GPU under ``par`` and the fewest GPUs of each type that hold it.

    The minimum is a memory lower bound: every model state sharded over N GPUs (ZeRO-3 or
    model parallelism) plus one micro-batch's activations per GPU sharded the same way.
    """
    # FP8/FP4 training runs the GEMMs in low precision but keeps weights and gradients in
    # 16-bit and casts per GEMM (NVIDIA Transformer Engine docs, "Using FP8 with Transformer
    # Engine"; DeepSeek-V3 report section 3.3), so storage stays bf16.
    storage = (
        Precision.bf16 if Precision(precision) in (Precision.fp8, Precision.fp4) else precision
    )
    grads = grads or storage
    m = mem.training_memory(
        arch,
        par,
        seq_len,
        storage,
        grads,
        optimizer,
        flash_attention,
        reserve_bytes=reserve_bytes,
    )
    whole = ParallelConfig(micro_batch=par.micro_batch, recompute=par.recompute)
    one = mem.training_memory(arch, whole, seq_len, storage, grads, optimizer, flash_attention)
    need = one.states + one.activations
    dtype = training_dtype(precision)
    fits = []
    for g in gpus:
        usable = g.memory_gb * 1e9 - reserve_bytes
        if dtype not in g.peak_tflops:
            fits.append(GpuFit(g.id, False, f"{g.id} has no {dtype.value} tensor cores"))
            continue
        n = mem.min_gpus_for_bytes(need, usable)
        fits.append(GpuFit(g.id, True, "", n, n, need / n + reserve_bytes, usable))
    return SizeResult(
        "training",
        param_counts(arch).total,
        active_params(arch),
        m.weights,
        m.gradients,
        m.optimizer,
        m.activations,
        0.0,
        m.reserve,
        float(training_flops_per_token(arch, seq_len)),
        fits,
    )


def tp_degrees(arch: ModelArch, limit: int) -> list[int]:
    """Powers of two up to ``limit`` that divide the attention heads (Megatron/vLLM need it)."""
    out, t = [], 1
    while t <= limit:
        if arch.heads % t == 0:
            out.append(t)
        t *= 2
    return out


def size_inference(
    arch: ModelArch,
    batch: int,
    context: int,
    gpus: list[Gpu],
    precision: Precision | str = Precision.bf16,
    kv_precision: Precision | str | None = None,
    tp: int = 1,
    pp: int = 1,
    memory_utilization: float = 0.9,
    max_batched_tokens: float = 8192,
    reserve_bytes: float = 0.0,
    max_tp: int = 64,
) -> SizeResult:
    """Serving memory per GPU at ``tp``/``pp`` and the fewest GPUs of each type that hold
    the weights plus ``batch`` x ``context`` tokens of KV cache.

    ``min_gpus`` shards everything perfectly; ``min_gpus_layout`` is the smallest TP degree
    (a power of two dividing the heads) whose per-GPU weights, KV, activation peak and reserve
    fit in ``memory_utilization`` of the GPU, the way vLLM checks it.
    """
    if context > arch.max_seq_len:
        raise InputError(f"context: {context:,} tokens exceed the {arch.max_seq_len:,}-token "
                         f"context of {arch.id}", field="context")
    kv_p = kv_precision or default_kv_precision(precision)
    m = mem.inference_memory(
        arch, batch, context, precision, kv_p, tp, pp, max_batched_tokens, reserve_bytes
    )
    whole = mem.inference_memory(arch, batch, context, precision, kv_p, 1, 1, max_batched_tokens)
    dtype = inference_dtype(precision)
    fits: list[GpuFit] = []
    points: dict[str, dict[str, roofline.RooflinePoint]] = {}
    for g in gpus:
        usable = g.memory_gb * 1e9 * memory_utilization
        if dtype not in g.peak_tflops:
            fits.append(GpuFit(g.id, False, f"{g.id} has no {dtype.value} tensor cores"))
            continue
        n = mem.min_gpus_for_bytes(whole.weights + whole.kv_cache, usable - reserve_bytes)
        layout, per_gpu = 0, 0.0
        for t in tp_degrees(arch, max_tp):
            im = mem.inference_memory(
                arch, batch, context, precision, kv_p, t, 1, max_batched_tokens, reserve_bytes
            )
            if im.total <= usable:
                layout, per_gpu = t, im.total
                break
        reason = "" if layout else f"no TP degree up to {max_tp} fits"
        fits.append(GpuFit(g.id, True, reason, n, layout, per_gpu, usable))
        t_eval = layout or tp
        points[g.id] = {
            "prefill": roofline.prefill(arch, g, dtype, batch, context, precision, kv_p, t_eval),
            "decode": roofline.decode(arch, g, dtype, batch, context, precision, kv_p, t_eval),
        }
    return SizeResult(
        "inference",
        param_counts(arch).total,
        active_params(arch),
        m.weights,
        0.0,
        0.0,
        m.activations,
        m.kv_cache,
        m.reserve,
        float(forward_flops_per_token(arch, context)),
        fits,
        points,
    )


__all__ = ["GpuFit", "SizeResult", "size_inference", "size_training", "tp_degrees"]
