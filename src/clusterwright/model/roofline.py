"""Roofline of prefill and decode (Williams, Waterman, Patterson, CACM 2009).

Arithmetic intensity (FLOP per byte of HBM traffic) of a forward pass, against a GPU's ridge
point (peak FLOP/s over HBM bytes/s): below the ridge a step is bandwidth-bound. These are
bounds, not predictions: measured decode reaches 40-80 % of the bandwidth roofline
(``shared/reference/inference.md`` section 5).
"""

from __future__ import annotations

from dataclasses import dataclass

from clusterwright.catalog.schema import Dtype, Gpu, ModelArch
from clusterwright.model.flops import attention_flops_per_token
from clusterwright.model.memory import kv_cache_bytes_per_token
from clusterwright.model.params import matmul_params, param_counts
from clusterwright.model.precision import Precision, bytes_per


def ridge_point(gpu: Gpu, dtype: Dtype) -> float:
    """FLOP per byte where compute and bandwidth limits meet."""
    return float(gpu.peak_tflops[dtype] * 1e12 / (gpu.memory_bandwidth_gbps * 1e9))


def weight_bytes_touched(arch: ModelArch, tokens: float, weights: Precision | str) -> float:
    """Weight bytes a forward pass over ``tokens`` tokens reads from HBM. For MoE, only the
    experts some token is routed to are read: E (1 - (1 - k/E)^tokens) per layer, assuming
    uniform routing."""
    c = param_counts(arch)
    b = bytes_per(weights)
    if not arch.is_moe:
        return float(c.total * b)
    per_expert = c.experts / arch.experts
    touched = arch.experts * (1.0 - (1.0 - arch.top_k / arch.experts) ** max(tokens, 0.0))
    return float((c.total - c.experts + per_expert * touched) * b)


@dataclass(frozen=True)
class RooflinePoint:
    """One forward pass: FLOPs, bytes, intensity and the time bound on one GPU group."""

    phase: str
    flops: float
    bytes: float
    intensity: float  # FLOP / byte
    ridge: float  # FLOP / byte
    bound: str  # "compute" or "memory"
    time_s: float  # lower bound, seconds
    attainable_tflops: float  # per GPU


def _point(
    phase: str, flops: float, nbytes: float, gpu: Gpu, dtype: Dtype, tp: int
) -> RooflinePoint:
    peak = gpu.peak_tflops[dtype] * 1e12
    bw = gpu.memory_bandwidth_gbps * 1e9
    ai = flops / nbytes
    ridge = peak / bw
    t = max(flops / (peak * tp), nbytes / (bw * tp))
    return RooflinePoint(
        phase,
        flops,
        nbytes,
        ai,
        ridge,
        "compute" if ai >= ridge else "memory",
        t,
        min(peak, ai * bw) / 1e12,
    )


def prefill(
    arch: ModelArch,
    gpu: Gpu,
    dtype: Dtype,
    batch: int,
    prompt: int,
    weights: Precision | str = "bf16",
    kv_precision: Precision | str = "bf16",
    tp: int = 1,
) -> RooflinePoint:
    """Prefill ``batch`` prompts of ``prompt`` tokens: reads weights once, writes the KV."""
    tokens = batch * prompt
    flops = tokens * (2.0 * matmul_params(arch)) + tokens * float(
        attention_flops_per_token(arch, (prompt + 1) / 2)
    )
    nbytes = weight_bytes_touched(arch, tokens, weights) + tokens * kv_cache_bytes_per_token(
        arch, kv_precision
    )
    return _point("prefill", flops, nbytes, gpu, dtype, tp)


def decode(
    arch: ModelArch,
    gpu: Gpu,
    dtype: Dtype,
    batch: int,
    context: int,
    weights: Precision | str = "bf16",
    kv_precision: Precision | str = "bf16",
    tp: int = 1,
) -> RooflinePoint:
    """One decode step for ``batch`` sequences that each attend to ``context`` tokens."""
    flops = batch * (2.0 * matmul_params(arch) + float(attention_flops_per_token(arch, context)))
    nbytes = weight_bytes_touched(
        arch, batch, weights
    ) + batch * context * kv_cache_bytes_per_token(arch, kv_precision)
    return _point("decode", flops, nbytes, gpu, dtype, tp)
