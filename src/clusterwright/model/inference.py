"""Step time of an inference engine iteration: prefill chunks and decode tokens together.

One iteration runs the model forward over ``prefill_tokens`` new prompt tokens and one token for
each of ``decode_seqs`` running sequences (continuous batching with chunked prefill), with
attention reading ``kv_tokens`` cached tokens. Per GPU of a tensor-parallel group:

- linear layers: each GEMM takes the longer of its compute time (FLOPs at the stack's
  size-dependent GEMM efficiency) and the time to stream its weights from HBM at the stack's
  decode bandwidth efficiency (decode is bandwidth-bound: shared/reference/inference.md 5);
- attention: prefill FLOPs at the attention efficiency, and the KV bytes read at the
  bandwidth efficiency;
- two all-reduces per layer over the TP group inside the NVLink domain (closed-form NCCL);
- a fixed per-iteration overhead (scheduler, sampling, kernel launches), which dominates short
  prefills (16 ms measured vs 7 ms roofline for 128 tokens, inference.md 5).

The serving efficiencies live in the stack's ``serving`` block with their calibration.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from clusterwright.catalog.schema import Dtype, Gpu, ModelArch, Stack
from clusterwright.errors import InputError
from clusterwright.model.collectives import Interconnect, allreduce_s
from clusterwright.model.flops import attention_dims
from clusterwright.model.memory import kv_cache_bytes_per_token
from clusterwright.model.params import matmul_params
from clusterwright.model.precision import Precision
from clusterwright.model.roofline import weight_bytes_touched
from clusterwright.model.training import gemm_efficiency

ACT_BYTES = 2.0  # activations in 16-bit


def compute_dtype(weights: Precision | str) -> Dtype:
    """Tensor-core format the GEMMs run in for a weight precision (weight-only int4/int8
    dequantize to 16-bit; fp8 weights run fp8 GEMMs)."""
    p = Precision(weights)
    if p in (Precision.fp8, Precision.fp4):
        return Dtype.fp8
    return Dtype.bf16


@dataclass(frozen=True)
class StepModel:
    """Iteration time of one model replica (TP x PP GPUs). Implements the simulator's
    ``StepModel`` protocol: ``step_s(prefill_tokens, decode_seqs, kv_tokens)``."""

    arch: ModelArch
    gpu: Gpu
    stack: Stack
    net: Interconnect
    tp: int = 1
    pp: int = 1
    weights: Precision = Precision.bf16
    kv_precision: Precision = Precision.bf16

    def __post_init__(self) -> None:
        if self.stack.serving is None:
            raise InputError(
                f"stack {self.stack.id} has no calibrated serving efficiencies for "
                f"{self.gpu.id}; serving estimates need one (catalog stacks.yaml `serving:`)"
            )
        if self.tp > self.net.domain_gpus:
            raise InputError(
                f"--tp {self.tp} exceeds the NVLink domain of {self.net.domain_gpus} GPUs"
            )

    @property
    def weight_bytes_per_gpu(self) -> float:
        return weight_bytes_touched(self.arch, 1e9, self.weights) / (self.tp * self.pp)

    def step_s(self, prefill_tokens: int, decode_seqs: int, kv_tokens: int,
               prefill_pairs: float | None = None) -> float:
        """Seconds for one iteration (see module docstring); 0 when there is no work.
        ``prefill_pairs``: attention (query, key) pairs of the prefill chunks, sum over chunks
        of p (c + p/2) for p new tokens after c cached; default one chunk, p^2/2."""
        pairs = None if prefill_pairs is None else np.asarray(prefill_pairs)
        return float(self.step_array(np.asarray(prefill_tokens), np.asarray(decode_seqs),
                                     np.asarray(kv_tokens), pairs))

    def step_array(self, prefill_tokens: np.ndarray, decode_seqs: np.ndarray,
                   kv_tokens: np.ndarray, prefill_pairs: np.ndarray | None = None
                   ) -> np.ndarray:
        """``step_s`` over arrays (broadcast)."""
        a, g, st = self.arch, self.gpu, self.stack
        sv = st.serving
        assert sv is not None
        tp, pp = self.tp, self.pp
        p = np.asarray(prefill_tokens, dtype=float)
        d = np.asarray(decode_seqs, dtype=float)
        kv = np.asarray(kv_tokens, dtype=float)
        tokens = p + d
        peak = g.peak_tflops[compute_dtype(self.weights)] * 1e12
        peak16 = g.peak_tflops.get(Dtype.bf16, peak / 1e12) * 1e12
        hbm = g.memory_bandwidth_gbps * 1e9 * sv.decode_bandwidth_efficiency
        # Linear layers of one pipeline stage: compute vs weight streaming, per GEMM group.
        flops = 2.0 * matmul_params(a) * tokens / (tp * pp)
        gemm_eff = sv.gemm_scale * gemm_efficiency(
            st, np.maximum(flops / max(a.layers / pp, 1.0) / 6.0, 1.0)
        )
        w_bytes = weight_bytes_touched(a, float(np.max(tokens)) if tokens.size else 1.0,
                                       self.weights) / (tp * pp)
        linear = np.maximum(flops / (peak * gemm_eff), w_bytes / hbm)
        # Attention: prefill chunk FLOPs (causal, against what is cached plus itself) and the
        # KV cache read by every sequence in the batch.
        dqk, dv = attention_dims(a)
        # Decode tokens attend their whole context (kv); prefill chunks their pairs.
        pairs = p * p / 2.0 if prefill_pairs is None else np.asarray(prefill_pairs, dtype=float)
        attn_flops = 2.0 * a.layers / pp * (dqk + dv) * (kv + pairs) / tp
        kv_b = kv_cache_bytes_per_token(a, self.kv_precision) / (tp * pp) * kv
        attn = attn_flops / (peak16 * st.attention_efficiency) + kv_b / hbm
        # TP: two all-reduces of the hidden states per layer.
        comm = np.zeros_like(tokens)
        if tp > 1:
            per = allreduce_s(tokens * a.hidden * ACT_BYTES, tp, 1.0, self.net)
            comm = 2.0 * a.layers / pp * per
        busy = linear + attn + comm + sv.step_overhead_s
        return np.where(tokens > 0, busy * pp, 0.0)


__all__ = ["StepModel", "compute_dtype"]
