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
- MoE expert parallelism (``ep``): the experts split whole over ``ep`` GPUs of the TP group
  instead of being sliced by TP (see ``StepModel`` for what changes);
- a fixed per-iteration overhead (scheduler, sampling, kernel launches), which dominates short
  prefills (16 ms measured vs 7 ms roofline for 128 tokens, inference.md 5);
- a fixed cost per layer (kernel gaps, TP barriers) that does not shrink with the shard: it is
  why bandwidth efficiency falls as TP grows and per-GPU weight shards get small (inference.md 5,
  take-away 1); at batch 1 it is the gap between the weight-streaming roofline and the measured
  inter-token latency.

The serving efficiencies live in the stack's ``serving`` block with their calibration.
"""

from __future__ import annotations

import bisect
import functools
import math
from dataclasses import dataclass

import numpy as np

from clusterwright.catalog.schema import Dtype, Gpu, ModelArch
from clusterwright.catalog.stacks import Stack
from clusterwright.errors import InfeasibleError, InputError
from clusterwright.model.attention_bands import attention_bands, dense_flops_per_key
from clusterwright.model.collectives import Interconnect
from clusterwright.model.flops import attention_dims
from clusterwright.model.memory import kv_cache_bytes_per_token
from clusterwright.model.params import matmul_params, param_counts
from clusterwright.model.precision import Precision, bytes_per
from clusterwright.model.roofline import weight_bytes_touched

ACT_BYTES = 2.0  # activations in 16-bit
# How the MoE block of an expert-parallel layer exchanges tokens (``StepModel.ep_comm``).
EP_COMMS = ("allreduce", "alltoall")


def check_expert_parallel(arch: ModelArch, tp: int, ep: int, ep_comm: str = "allreduce"
                          ) -> None:
    """Raise InputError naming ``--ep`` (or ``--ep-comm``) unless ``ep`` GPUs can split the
    experts of ``arch`` inside a TP group of ``tp`` GPUs.

    EP lives inside the TP group, as vLLM runs it with one data-parallel rank
    (``--enable-expert-parallel``: EP size = TP x DP) and as TensorRT-LLM does with
    ``moe_tp_size x moe_ep_size = tp_size`` (docs/source/advanced/expert-parallelism.md): so
    ``ep`` divides ``tp`` (``ep < tp`` is TensorRT-LLM's hybrid, each expert further sliced
    over ``tp / ep`` GPUs) and the number of experts."""
    if ep < 1:
        raise InputError(f"ep: must be a positive integer, got {ep}", field="ep")
    if ep_comm not in EP_COMMS:
        raise InputError(f"ep_comm: {ep_comm!r} is not one of {', '.join(EP_COMMS)}",
                         field="ep_comm")
    if ep == 1:
        if ep_comm != "allreduce":
            raise InputError("ep_comm: alltoall needs expert parallelism (ep > 1)",
                             field="ep_comm")
        return
    if not arch.is_moe:
        raise InputError(f"ep: {arch.id} is a dense model (no experts); expert "
                         "parallelism needs a mixture-of-experts model, use ep 1", field="ep")
    if tp % ep:
        raise InputError(f"ep: {ep} does not divide tp {tp}: the experts are split inside "
                         "the tensor-parallel group (TensorRT-LLM moe_tp_size x moe_ep_size "
                         "= tp_size)", field="ep")
    if arch.experts % ep:
        raise InputError(f"ep: {ep} does not divide the {arch.experts} experts of {arch.id}",
                         field="ep")
    if ep_comm == "alltoall" and ep != tp:
        raise InputError(f"ep_comm: alltoall needs ep equal to tp ({tp}); the hybrid "
                         f"ep {ep} combines its experts with the TP all-reduce", field="ep_comm")


@functools.lru_cache(maxsize=8192)
def _busiest_touched(local: int, groups: int, top_k: int, experts: int, tokens: float) -> float:
    """Expected experts with at least one token on the busiest of ``groups`` GPUs that hold
    ``local`` experts each (uniform routing of ``tokens`` tokens to ``top_k`` of ``experts``).

    Each expert is touched with q = 1 - (1 - k/E)^tokens; a GPU's count is taken as
    Binomial(local, q), independent across GPUs, and E[max] = sum over m < local of
    1 - P(X <= m)^groups. The step waits for the busiest GPU: at batch 1 of Mixtral (k=2,
    E=8) on EP 8, two GPUs stream a whole expert while TP 8 has every GPU stream 2/8 of one.
    Independence ignores that the GPUs' counts share one routing (at least k experts are
    touched): for that batch-1 case it gives 1 - 0.75^8 = 0.90 experts where the exact value
    is 1; the error vanishes as batches grow and every expert is touched."""
    q = 1.0 - (1.0 - top_k / experts) ** max(tokens, 0.0)
    if q >= 1.0:
        return float(local)
    if q <= 0.0:
        return 0.0
    log_q, log_p = math.log(q), math.log1p(-q)
    log_choose = 0.0
    cdf = total = 0.0
    for m in range(local):
        cdf += math.exp(log_choose + m * log_q + (local - m) * log_p)
        total += 1.0 - min(cdf, 1.0) ** groups
        log_choose += math.log((local - m) / (m + 1.0))
    return total


def compute_dtype(weights: Precision | str) -> Dtype:
    """Tensor-core format the GEMMs run in for a weight precision (weight-only int4/int8
    dequantize to 16-bit; fp8 weights run fp8 GEMMs)."""
    p = Precision(weights)
    if p in (Precision.fp8, Precision.fp4):
        return Dtype.fp8
    return Dtype.bf16


@dataclass(frozen=True)
class _StepConsts:
    """Per-model constants of ``StepModel.step_s`` (units: FLOPs, bytes, seconds)."""

    flops_per_token: float
    gemm_share: float  # FLOPs of one GEMM per FLOP of the stage (layers x 6 GEMM groups)
    gemm_scale: float
    gemm_xs: tuple[float, ...]  # log10 FLOPs
    gemm_ys: tuple[float, ...]  # fraction of peak
    peak: float
    hbm: float  # achieved bytes/s
    dense_weight_bytes: float
    moe_top_k: int
    moe_experts: int
    moe_shared_bytes: float
    moe_expert_bytes: float
    attn_flops_per_pair: float
    attn_rate: float
    kv_read_bytes_per_token: float
    # Softmax attention by band (``attention_bands``): (share of attn_flops_per_pair, share
    # of kv_read_bytes_per_token, keys per context token, window in tokens); one band
    # (1, 1, 1, inf) where every layer attends the whole context.
    attn_bands: tuple[tuple[float, float, float, float], ...]
    ar_calls: float
    ar_bytes_per_token: float
    ring_lat: float
    ring_coef: float
    nvls_lat: float
    nvls_coef: float
    fixed: float
    # Expert parallelism (all zero / one without it).
    ep: float = 1.0
    expert_flops_share: float = 0.0  # routed-expert share of the linear FLOPs
    ep_local_experts: int = 0
    ep_local_expert_bytes: float = 0.0  # one local expert's bytes on one GPU (this stage)
    a2a_calls: float = 0.0
    a2a_bytes_per_token: float = 0.0
    a2a_lat: float = 0.0
    a2a_coef: float = 0.0


def _curve(st: Stack) -> list[tuple[float, float]]:
    """The serving engine's GEMM efficiency curve (log10 FLOPs, fraction of peak)."""
    sv = st.serving
    return list(sv.gemm_efficiency) if sv and sv.gemm_efficiency else list(st.gemm_efficiency)


def _attention(st: Stack) -> float:
    sv = st.serving
    return sv.attention_efficiency if sv and sv.attention_efficiency else st.attention_efficiency


def _interp(x: float, xs: tuple[float, ...], ys: tuple[float, ...]) -> float:
    """``np.interp`` for one point (flat beyond the ends)."""
    if x <= xs[0]:
        return ys[0]
    if x >= xs[-1]:
        return ys[-1]
    i = bisect.bisect_right(xs, x)
    x0, x1, y0, y1 = xs[i - 1], xs[i], ys[i - 1], ys[i]
    return y0 + (y1 - y0) * (x - x0) / (x1 - x0)


def _attn_bands(arch: ModelArch) -> tuple[tuple[float, float, float, float], ...]:
    """``_StepConsts.attn_bands`` of ``arch``: each band's share of the dense per-pair FLOPs
    and of the per-token KV bytes, its keys per context token, its window."""
    bands = attention_bands(arch)
    dense = dense_flops_per_key(arch)
    elems = sum(b.layers * b.scale * b.kv_elems_per_key for b in bands)
    return tuple((b.layers * b.prefill_flops_per_key / dense if dense else 0.0,
                  b.layers * b.kv_elems_per_key / elems if elems else 0.0,
                  b.scale, math.inf if b.window is None else b.window) for b in bands)


def _attended_keys(bands: tuple[tuple[float, float, float, float], ...], p: float, d: float,
                   kv: float, pairs: float) -> tuple[float, float]:
    """(pairs and KV tokens in units of attn_flops_per_pair, KV tokens in units of
    kv_read_bytes_per_token) one iteration attends: each band its window of each sequence,
    its share of the keys."""
    flops = nbytes = 0.0
    for wf, wb, scale, window in bands:
        if window == math.inf:  # (0 x inf would be NaN)
            seen_kv, seen_pairs = scale * kv, scale * pairs
        else:
            seen_kv, seen_pairs = scale * min(kv, d * window), scale * min(pairs, p * window)
        flops += wf * (seen_kv + seen_pairs)
        nbytes += wb * seen_kv
    return flops, nbytes


def _moe_weight_bytes(c: _StepConsts, tokens: float) -> float:
    """``weight_bytes_touched`` per GPU for MoE: experts some token is routed to are read.
    With EP, the busiest GPU's touched local experts (``_busiest_touched``)."""
    if c.ep_local_experts:
        busiest = _busiest_touched(c.ep_local_experts, int(c.ep), c.moe_top_k, c.moe_experts,
                                   float(max(tokens, 0.0)))
        return float(c.moe_shared_bytes + c.ep_local_expert_bytes * busiest)
    e = c.moe_experts
    touched = e * (1.0 - (1.0 - c.moe_top_k / e) ** max(tokens, 0.0))
    return float(c.moe_shared_bytes + c.moe_expert_bytes * touched)


@dataclass(frozen=True)
class StepModel:
    """Iteration time of one model replica (TP x PP GPUs). Implements the simulator's
    ``StepModel`` protocol: ``step_s(prefill_tokens, decode_seqs, kv_tokens)``.

    ``ep`` > 1 (MoE only; vLLM ``--enable-expert-parallel``, TensorRT-LLM
    ``moe_expert_parallel_size``): the MoE layers' experts are split whole over ``ep`` GPUs
    of the TP group (each further sliced over ``tp / ep`` GPUs when ``ep < tp``); attention
    and dense layers stay TP-sharded. What changes:

    - memory: nothing per GPU. E/ep experts, 1/(tp/ep) of each, is E/tp experts' bytes, the
      same as TP's 1/tp of all E (so is the MoE activation peak: tokens x k / ep rows of
      the full expert width vs tokens x k rows of 1/tp of it);
    - weights read per step: the busiest GPU's touched local experts (``_busiest_touched``).
      Same mean as TP slicing, but the step waits for the maximum, so small decode batches
      stream more under EP; at large batches every expert is touched and the two agree;
    - GEMMs: each expert's GEMMs are ``ep`` times wider than TP's slices (f/(tp/ep) columns
      vs f/tp), so the routed-expert share of the FLOPs runs at the GEMM efficiency of an
      ``ep`` times larger GEMM;
    - communication (``ep_comm``): "allreduce" is what vLLM does with one DP rank (its
      all-to-all kernels need ``dp_size > 1``: ``FusedMoEParallelConfig.use_all2all_kernels``
      in vllm/model_executor/layers/fused_moe/config.py) and TensorRT-LLM's MoE plugin: the
      attention all-reduce leaves every GPU with all tokens, each GPU runs its experts on
      the tokens routed to them, and the MoE output is combined by the same all-reduce TP
      uses, so both all-reduces of every layer remain. "alltoall" (``ep == tp``) is the
      DeepEP/pplx-style dispatch and combine of the DeepSeek-V3 report (arXiv 2412.19437,
      section 3.4): per MoE layer the attention all-reduce remains (as a reduce-scatter and
      an all-gather around the MoE block, the same bytes) and the MoE all-reduce becomes
      two all-to-alls in which each GPU sends its 1/ep of the batch's tokens, top_k copies
      each, (ep - 1)/ep of them off the GPU; dense layers keep both all-reduces;
    - load imbalance from skewed routing is not modelled (uniform routing throughout).
    """

    arch: ModelArch
    gpu: Gpu
    stack: Stack
    net: Interconnect
    tp: int = 1
    pp: int = 1
    weights: Precision = Precision.bf16
    kv_precision: Precision = Precision.bf16
    ep: int = 1
    ep_comm: str = "allreduce"

    def __post_init__(self) -> None:
        check_expert_parallel(self.arch, self.tp, self.ep, self.ep_comm)
        if self.stack.serving is None:
            raise InputError(
                f"stack {self.stack.id} has no calibrated serving efficiencies for "
                f"{self.gpu.id}; serving estimates need one (catalog stacks.yaml `serving:`)"
            )
        if self.tp > self.net.domain_gpus:
            raise InfeasibleError(
                f"tp: {self.tp} exceeds the NVLink domain of {self.net.domain_gpus} GPUs",
                "nvlink_domain", field="tp")

    @property
    def weight_bytes_per_gpu(self) -> float:
        return weight_bytes_touched(self.arch, 1e9, self.weights) / (self.tp * self.pp)

    def step_s(self, prefill_tokens: int, decode_seqs: int, kv_tokens: int,
               prefill_pairs: float | None = None) -> float:
        """Seconds for one iteration (see module docstring); 0 when there is no work.
        ``prefill_pairs``: attention (query, key) pairs of the prefill chunks, sum over chunks
        of p (c + p/2) for p new tokens after c cached; default one chunk, p^2/2.

        The simulator calls this once per engine event, so it is the scalar form of
        ``step_array`` with the per-model constants computed once (a test holds the two
        equal)."""
        p, d = float(prefill_tokens), float(decode_seqs)
        tokens = p + d
        if tokens <= 0:
            return 0.0
        c = self._consts
        flops = c.flops_per_token * tokens
        per_gemm = max(flops * c.gemm_share, 1.0)
        gemm_eff = c.gemm_scale * _interp(math.log10(per_gemm), c.gemm_xs, c.gemm_ys)
        w_bytes = (c.dense_weight_bytes if c.moe_top_k == 0 else
                   _moe_weight_bytes(c, tokens))
        if c.expert_flops_share:
            # EP: the routed experts' GEMMs are ep times wider than TP slices.
            s = c.expert_flops_share
            eff_e = c.gemm_scale * _interp(math.log10(per_gemm * c.ep), c.gemm_xs, c.gemm_ys)
            compute = flops * ((1.0 - s) / (c.peak * gemm_eff) + s / (c.peak * eff_e))
        else:
            compute = flops / (c.peak * gemm_eff)
        linear = max(compute, w_bytes / c.hbm)
        pairs = p * p / 2.0 if prefill_pairs is None else float(prefill_pairs)
        seen, read = _attended_keys(c.attn_bands, p, d, float(kv_tokens), pairs)
        attn = (c.attn_flops_per_pair * seen / c.attn_rate
                + c.kv_read_bytes_per_token * read / c.hbm)
        comm = 0.0
        if c.ar_calls:
            size = tokens * c.ar_bytes_per_token
            comm = c.ar_calls * min(c.ring_lat + size * c.ring_coef,
                                    c.nvls_lat + size * c.nvls_coef)
        if c.a2a_calls:
            comm += c.a2a_calls * (c.a2a_lat + tokens * c.a2a_bytes_per_token * c.a2a_coef)
        return (linear + attn + comm + c.fixed) * self.pp

    def work_s(self, prefill_tokens: float, decode_seqs: float, kv_tokens: float,
               prefill_pairs: float | None = None) -> tuple[float, float]:
        """(tensor-core seconds, HBM seconds) of one iteration on one GPU: the FLOPs and
        bytes ``step_s`` times, at the datasheet peak and bandwidth instead of the stack's
        efficiencies (the busy fractions of ``model/serving_power``)."""
        p, d = float(prefill_tokens), float(decode_seqs)
        tokens = p + d
        if tokens <= 0:
            return 0.0, 0.0
        c = self._consts
        w_bytes = (c.dense_weight_bytes if c.moe_top_k == 0 else
                   _moe_weight_bytes(c, tokens))
        pairs = p * p / 2.0 if prefill_pairs is None else float(prefill_pairs)
        peak16 = self.gpu.peak_tflops.get(Dtype.bf16, c.peak / 1e12) * 1e12
        seen, read = _attended_keys(c.attn_bands, p, d, float(kv_tokens), pairs)
        tensor = (c.flops_per_token * tokens / c.peak
                  + c.attn_flops_per_pair * seen / peak16)
        nbytes = w_bytes + c.kv_read_bytes_per_token * read
        return tensor * self.pp, nbytes / (self.gpu.memory_bandwidth_gbps * 1e9) * self.pp

    @functools.cached_property
    def _consts(self) -> _StepConsts:
        a, g, st, net = self.arch, self.gpu, self.stack, self.net
        sv = st.serving
        assert sv is not None
        tp, pp = self.tp, self.pp
        peak = g.peak_tflops[compute_dtype(self.weights)] * 1e12
        peak16 = g.peak_tflops.get(Dtype.bf16, peak / 1e12) * 1e12
        dqk, dv = attention_dims(a)
        kv_read = kv_cache_bytes_per_token(a, self.kv_precision) / (tp * pp)
        if not sv.gqa_kv_reuse:
            kv_read *= a.heads // a.n_kv_heads
        ring_lat = ring_coef = 0.0
        nvls_lat = nvls_coef = math.inf
        base_s, step_s = sv.collective_base_us * 1e-6, sv.collective_step_us * 1e-6
        if tp > 1:
            # Inside one NVLink domain (tp <= domain): ring or NVLS, both affine in size.
            n = float(tp)
            vol = 2.0 * (n - 1.0) / n
            ring_lat = base_s + 2.0 * (n - 1.0) * step_s
            ring_coef = vol / net.scale_up_busbw
            if net.nvls_busbw > 0:
                nvls_lat = base_s + 2.0 * step_s
                nvls_coef = vol / net.nvls_busbw
        c = param_counts(a)
        b = bytes_per(self.weights)
        ep = self.ep
        moe_layers = float(a.moe_layers)
        a2a = self.ep_comm == "alltoall"
        ar_calls = (a.layers + a.n_ffn_layers - (moe_layers if a2a else 0.0)) / pp
        a2a_lat = a2a_coef = 0.0
        if a2a:
            # Inside the NVLink domain (ep == tp <= domain): each GPU keeps 1/ep, one step a peer.
            a2a_lat = base_s + (ep - 1.0) * step_s
            a2a_coef = (ep - 1.0) / ep / net.scale_up_busbw
        return _StepConsts(
            flops_per_token=2.0 * matmul_params(a) / (tp * pp),
            gemm_share=1.0 / (max(a.layers / pp, 1.0) * 6.0),
            gemm_scale=sv.gemm_scale,
            gemm_xs=tuple(x for x, _ in _curve(st)),
            gemm_ys=tuple(y for _, y in _curve(st)),
            peak=peak,
            hbm=g.memory_bandwidth_gbps * 1e9 * sv.decode_bandwidth_efficiency,
            dense_weight_bytes=weight_bytes_touched(a, 1.0, self.weights) / (tp * pp),
            moe_top_k=a.top_k if a.is_moe else 0,
            moe_experts=a.experts if a.is_moe else 0,
            moe_shared_bytes=(c.total - c.experts) * b / (tp * pp) if a.is_moe else 0.0,
            moe_expert_bytes=(c.experts / a.experts * b / (tp * pp)) if a.is_moe else 0.0,
            attn_flops_per_pair=2.0 * a.full_attention_layers / pp * (dqk + dv) / tp,
            attn_rate=peak16 * _attention(st),
            kv_read_bytes_per_token=kv_read,
            attn_bands=_attn_bands(a),
            ar_calls=ar_calls if tp > 1 else 0.0,
            ar_bytes_per_token=a.hidden * ACT_BYTES,
            ring_lat=ring_lat, ring_coef=ring_coef, nvls_lat=nvls_lat, nvls_coef=nvls_coef,
            fixed=sv.step_overhead_s + sv.layer_overhead_s * a.layers / pp,
            ep=float(ep),
            expert_flops_share=self._expert_flops_share,
            ep_local_experts=a.experts // ep if ep > 1 else 0,
            ep_local_expert_bytes=(c.experts / a.experts * b * ep / (tp * pp)
                                   if ep > 1 else 0.0),
            a2a_calls=2.0 * moe_layers / pp if a2a else 0.0,
            a2a_bytes_per_token=a.top_k * a.hidden * ACT_BYTES / ep if a2a else 0.0,
            a2a_lat=a2a_lat, a2a_coef=a2a_coef,
        )

    @property
    def _expert_flops_share(self) -> float:
        """Routed experts' share of the linear FLOPs per token (0 without EP)."""
        a = self.arch
        if self.ep == 1:
            return 0.0
        c = param_counts(a)
        return c.experts * a.top_k // a.experts / matmul_params(a)

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
        per_gemm = np.maximum(flops / max(a.layers / pp, 1.0) / 6.0, 1.0)
        xs, ys = (np.array(v) for v in zip(*_curve(st), strict=True))
        gemm_eff = sv.gemm_scale * np.interp(np.log10(per_gemm), xs, ys)
        max_tokens = float(np.max(tokens)) if tokens.size else 1.0
        if self.ep > 1:
            # EP: the busiest GPU's touched experts (whole experts, each 1/(tp/ep) sliced).
            c = param_counts(a)
            busiest = _busiest_touched(a.experts // self.ep, self.ep, a.top_k, a.experts,
                                       max(max_tokens, 0.0))
            w_bytes = ((c.total - c.experts) * bytes_per(self.weights) / (tp * pp)
                       + c.experts / a.experts * bytes_per(self.weights) * self.ep / (tp * pp)
                       * busiest)
            # The routed experts' GEMMs are ep times wider than TP's slices.
            share = self._expert_flops_share
            eff_e = sv.gemm_scale * np.interp(np.log10(per_gemm * self.ep), xs, ys)
            compute = flops * ((1.0 - share) / (peak * gemm_eff) + share / (peak * eff_e))
        else:
            w_bytes = weight_bytes_touched(a, max_tokens, self.weights) / (tp * pp)
            compute = flops / (peak * gemm_eff)
        linear = np.maximum(compute, w_bytes / hbm)
        # Attention: prefill chunk FLOPs (causal, against what is cached plus itself) and the
        # KV cache read by every sequence in the batch.
        dqk, dv = attention_dims(a)
        # Decode tokens attend their whole context (kv); prefill chunks their pairs.
        pairs = p * p / 2.0 if prefill_pairs is None else np.asarray(prefill_pairs, dtype=float)
        seen, read = 0.0 * kv, 0.0 * kv
        for wf, wb, scale, window in self._consts.attn_bands:
            if window == math.inf:
                seen_kv, seen_pairs = scale * kv, scale * pairs
            else:
                seen_kv = scale * np.minimum(kv, d * window)
                seen_pairs = scale * np.minimum(pairs, p * window)
            seen = seen + wf * (seen_kv + seen_pairs)
            read = read + wb * seen_kv
        attn_flops = 2.0 * a.full_attention_layers / pp * (dqk + dv) * seen / tp
        kv_b = kv_cache_bytes_per_token(a, self.kv_precision) / (tp * pp) * read
        if not sv.gqa_kv_reuse:
            kv_b = kv_b * (a.heads // a.n_kv_heads)
        attn = attn_flops / (peak16 * _attention(st)) + kv_b / hbm
        # TP: two all-reduces of the hidden states per layer (EP all-to-alls replace the
        # second one of each MoE layer; see the class docstring). Same constants as step_s.
        k = self._consts
        comm = np.zeros_like(tokens)
        if k.ar_calls:
            size = tokens * k.ar_bytes_per_token
            comm = k.ar_calls * np.minimum(k.ring_lat + size * k.ring_coef,
                                           k.nvls_lat + size * k.nvls_coef)
        if k.a2a_calls:
            comm = comm + k.a2a_calls * (k.a2a_lat + tokens * k.a2a_bytes_per_token * k.a2a_coef)
        # Fixed costs: per iteration, and per layer of this stage (launch gaps, TP barriers).
        fixed = sv.step_overhead_s + sv.layer_overhead_s * a.layers / pp
        busy = linear + attn + comm + fixed
        return np.where(tokens > 0, busy * pp, 0.0)


__all__ = ["EP_COMMS", "StepModel", "check_expert_parallel", "compute_dtype"]
