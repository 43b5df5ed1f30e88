"""Training step time: compute, communication and pipeline bubble, for arrays of layouts.

One call evaluates any number of parallel layouts at once (numpy arrays of tp, pp, dp, ...),
so the planner can sweep 10^5 configurations per second. The model follows Megatron-LM's
execution (Narayanan et al., SC21; Korthikanti et al. 2022):

- per micro-batch and pipeline stage, each transformer layer runs its GEMMs forward (1x) and
  backward (2x) at an efficiency that depends on the GEMM's size (the stack's curve), the
  attention core at the stack's attention efficiency, and the elementwise ops (norms,
  activations, softmax, dropout, residuals) at HBM bandwidth;
- recomputation re-runs the layer forward (full) or the attention core (selective);
- tensor parallelism adds two all-reduces forward and two backward per layer (reduce-scatter
  + all-gather with sequence parallelism: the same volume), partly hidden per the stack;
- the 1F1B pipeline runs m micro-batches plus a bubble of (p-1)/v micro-batch times, and the
  slowest stage (ceil(L/p) layers plus the LM head) sets the pace; p2p sends cost v x 2 per
  micro-batch;
- data parallelism reduces gradients after the last backward (ZeRO 0-2) or gathers weights
  and reduce-scatters gradients every micro-batch (ZeRO-3), with the stack's overlap;
- context parallelism exchanges K/V around a ring; expert parallelism does two all-to-alls
  forward and two backward per MoE layer, slowed by the expert load imbalance.

The breakdown sums to the step time exactly.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike

from clusterwright.catalog.schema import Activation, Dtype, Gpu, ModelArch, Stack
from clusterwright.model.collectives import (
    Interconnect,
    allgather_s,
    allreduce_s,
    alltoall_s,
    p2p_s,
)
from clusterwright.model.flops import training_flops_per_token
from clusterwright.model.memory import (
    ACT_BYTES,
    activation_bytes_per_layer_array,
    state_bytes_array,
)
from clusterwright.model.params import param_counts
from clusterwright.model.precision import Precision, bytes_per, training_dtype

F = np.ndarray
ADAM_BYTES_PER_PARAM = (
    30.0  # read fp32 grad, master, m, v (16 B); write master, m, v, bf16 weight (14 B)
)


@dataclass(frozen=True)
class Layouts:
    """Parallel layouts as equal-length arrays (one entry per candidate)."""

    tp: F
    pp: F
    dp: F
    cp: F
    ep: F
    micro_batch: F
    interleave: F
    zero: F
    recompute: F  # 0 none, 1 selective, 2 full
    sp: F  # bool

    @staticmethod
    def of(**kw: ArrayLike) -> Layouts:
        """Broadcast scalars and arrays to one length."""
        defaults: dict[str, ArrayLike] = {
            "tp": 1,
            "pp": 1,
            "dp": 1,
            "cp": 1,
            "ep": 1,
            "micro_batch": 1,
            "interleave": 1,
            "zero": 0,
            "recompute": 0,
            "sp": False,
        }
        defaults.update(kw)
        arrs = np.broadcast_arrays(*(np.atleast_1d(np.asarray(defaults[k])) for k in defaults))
        return Layouts(*(np.array(a) for a in arrs))

    def __len__(self) -> int:
        return int(self.tp.shape[0])

    def take(self, idx: ArrayLike) -> Layouts:
        i = np.asarray(idx)
        return Layouts(*(getattr(self, f)[i] for f in self.__dataclass_fields__))


@dataclass(frozen=True)
class Job:
    """What does not vary across layouts: model, data shape, hardware and stack."""

    arch: ModelArch
    seq_len: int
    global_batch: int  # sequences per step
    gpu: Gpu
    stack: Stack
    net: Interconnect
    precision: Precision = Precision.bf16
    grad_precision: Precision = Precision.bf16  # dtype gradients are reduced and stored in
    dropout: bool = False
    expert_imbalance: float = 1.1  # slowest expert's load over the mean (MoE)
    reserve_bytes: float = 0.0
    # Slowdown of the network collectives over the closed form, from the flow simulator
    # (train estimate --fidelity sim); 1.0 is the closed form's perfect network.
    dp_comm_factor: float = 1.0
    pp_comm_factor: float = 1.0
    ep_comm_factor: float = 1.0


# The parts of a step, in the order reports show them; they sum to step_time_s.
BREAKDOWN_FIELDS = (
    "compute_s",
    "tp_comm_s",
    "pp_comm_s",
    "pp_bubble_s",
    "dp_comm_exposed_s",
    "cp_comm_s",
    "ep_comm_s",
    "optimizer_s",
    "other_s",
)


@dataclass(frozen=True)
class StepEstimate:
    """Per-layout results (arrays). Times in seconds; the breakdown sums to ``step_time_s``."""

    compute_s: F
    tp_comm_s: F
    pp_comm_s: F
    pp_bubble_s: F
    dp_comm_exposed_s: F
    cp_comm_s: F
    ep_comm_s: F
    optimizer_s: F
    other_s: F
    step_time_s: F
    model_flops: F  # per step, whole job
    hardware_flops: F  # per step, recompute included
    memory_bytes: F  # per GPU, worst pipeline stage
    memory_parts: dict[str, F] = field(default_factory=dict)

    def breakdown_sum(self) -> F:
        return np.asarray(sum(getattr(self, k) for k in BREAKDOWN_FIELDS))


def gemm_efficiency(stack: Stack, flops: ArrayLike) -> F:
    """Achieved fraction of peak for one GEMM of ``flops`` FLOPs (piecewise-linear in log10)."""
    xs = np.array([x for x, _ in stack.gemm_efficiency])
    ys = np.array([y for _, y in stack.gemm_efficiency])
    f = np.maximum(np.asarray(flops, dtype=float), 1.0)
    return np.asarray(np.interp(np.log10(f), xs, ys))


def _gemm_s(flops: F, peak: float, stack: Stack) -> F:
    return np.asarray(flops / (peak * gemm_efficiency(stack, flops)))


def stage_layers(layers: float, pp: F, interleave: F) -> F:
    """Layers on the busiest pipeline rank: v chunks of ceil(L / (p v)) layers. Uneven splits
    are allowed (Megatron-Core's uneven pipeline; Llama 3 section 3.3.2), and cost this
    imbalance."""
    return np.asarray(np.ceil(layers / (pp * interleave)) * interleave)


def micro_batches(job: Job, lay: Layouts) -> F:
    """Micro-batches per pipeline per step (0 where the batch does not divide)."""
    per_dp = job.global_batch / lay.dp
    m = per_dp / lay.micro_batch
    return np.where(np.isclose(m, np.round(m)) & (m >= 1), np.round(m), 0.0)


def estimate(job: Job, lay: Layouts) -> StepEstimate:
    """Step time, breakdown, FLOPs and per-GPU memory for every layout in ``lay``."""
    a, st, net = job.arch, job.stack, job.net
    h, L, V = float(a.hidden), float(a.layers), float(a.vocab)
    t, p, d, c, e = lay.tp, lay.pp, lay.dp, lay.cp, lay.ep
    b, v, z, rc = lay.micro_batch, lay.interleave, lay.zero, lay.recompute
    sp = lay.sp.astype(bool)
    m = micro_batches(job, lay)
    s = float(job.seq_len)
    T = b * s / c  # tokens per micro-batch on one GPU (CP splits the sequence)

    gemm_dtype = training_dtype(job.precision)
    peak = job.gpu.peak_tflops[gemm_dtype] * 1e12
    # Attention and elementwise math stay in 16-bit even when GEMMs run in fp8 (TE).
    peak16 = (
        job.gpu.peak_tflops.get(Dtype.bf16, job.gpu.peak_tflops.get(Dtype.fp16, peak / 1e12)) * 1e12
    )
    hbm = job.gpu.memory_bandwidth_gbps * 1e9 * st.memory_efficiency
    gated = a.activation in (Activation.swiglu, Activation.geglu)
    g = 2.0 if gated else 1.0

    # --- per layer, per micro-batch, forward: GEMM time ---------------------------------
    if a.is_mla:
        assert a.qk_nope_head_dim and a.qk_rope_head_dim and a.v_head_dim and a.kv_lora_rank
        dqk = a.heads * (a.qk_nope_head_dim + a.qk_rope_head_dim)
        dv = a.heads * a.v_head_dim
        q_rank = a.q_lora_rank or 0
        attn_gemms = [
            2 * T * h * (q_rank or dqk) / (1 if q_rank else t),
            2 * T * q_rank * dqk / t if q_rank else 0 * T,
            2 * T * h * (a.kv_lora_rank + a.qk_rope_head_dim),
            2 * T * a.kv_lora_rank * a.heads * (a.qk_nope_head_dim + a.v_head_dim) / t,
            2 * T * dv * h / t,
        ]
    else:
        dqk = a.heads * a.d_head
        dv = dqk
        dkv = a.n_kv_heads * a.d_head
        attn_gemms = [2 * T * h * (dqk + 2 * dkv) / t, 2 * T * dv * h / t]
    attn_gemm_s = sum(_gemm_s(x, peak, st) for x in attn_gemms if np.any(x))

    def mlp_s(width: float, tokens: F) -> F:
        up = _gemm_s(2 * tokens * h * width * g / t, peak, st)
        return np.asarray(up + _gemm_s(2 * tokens * width * h / t, peak, st))

    dense_mlp_s = mlp_s(a.ffn_hidden, T)
    if a.is_moe:
        f_e = float(a.expert_ffn_hidden or a.ffn_hidden)
        local_experts = a.experts / e
        tokens_per_expert = e * T * a.top_k / a.experts  # balanced routing
        moe_mlp_s = local_experts * mlp_s(f_e, tokens_per_expert) * job.expert_imbalance
        moe_mlp_s = moe_mlp_s + (mlp_s(f_e * a.shared_experts, T) if a.shared_experts else 0.0)
        moe_mlp_s = moe_mlp_s + _gemm_s(2 * T * h * a.experts, peak16, st)  # router
        n_moe = L - a.dense_layers
    else:
        moe_mlp_s = 0.0 * T
        n_moe = 0.0
    moe_frac = n_moe / L

    # --- attention core -----------------------------------------------------------------
    flash = st.flash_attention
    # Unfused attention computes the whole s x s score matrix; flash skips the masked half.
    causal = 0.5 if flash else 1.0
    attn_core_flops = 2.0 * T * s * (dqk + dv) / t * causal
    attn_core_s = attn_core_flops / (peak16 * st.attention_efficiency)
    attn_core_bwd = 2.5 if flash else 2.0  # flash backward recomputes the scores

    # --- elementwise (HBM-bound) ----------------------------------------------------------
    drop = 1.0 if job.dropout else 0.0
    sp_div = np.where(sp, t, 1.0)
    # norms (2 x read+write h), two residual adds (read 2h, write h), dropout masks; 2 bytes
    replicated_b = (20.0 + 2.0 * drop) * h / sp_div
    act_b = (6.0 if gated else 4.0) * a.ffn_hidden / t
    softmax_b = 0.0 if flash else a.heads * s * (4.0 + 5.0 * drop) / t
    elem_fwd_s = T * (replicated_b + act_b + softmax_b) / hbm

    layer_fwd = (
        attn_gemm_s + (1 - moe_frac) * dense_mlp_s + moe_frac * moe_mlp_s + attn_core_s + elem_fwd_s
    )
    layer_bwd = 2.0 * (attn_gemm_s + (1 - moe_frac) * dense_mlp_s + moe_frac * moe_mlp_s) + (
        attn_core_bwd * attn_core_s + 2.0 * elem_fwd_s
    )
    recompute_s = np.where(
        rc == 2, layer_fwd, np.where(rc == 1, attn_core_s + T * softmax_b / hbm, 0.0)
    )
    layer_compute = layer_fwd + layer_bwd + recompute_s

    # --- TP communication per layer -------------------------------------------------------
    act_bytes = T * h * ACT_BYTES
    n_tp_colls = np.where(rc == 2, 6.0, 4.0)  # full recompute repeats the forward pair
    tp_coll = allreduce_s(act_bytes, t, 1.0, net)
    layer_tp = n_tp_colls * tp_coll * (1.0 - st.tp_overlap)

    # --- CP ring attention per layer --------------------------------------------------------
    dkv_bytes = (2 * (a.n_kv_heads * a.d_head if not a.is_mla else dqk)) / t * ACT_BYTES
    kv_chunk = T * dkv_bytes
    # forward passes K,V around c-1 hops; backward passes K,V and their gradients
    cp_raw = 3.0 * (c - 1) * p2p_s(kv_chunk, t * c > net.domain_gpus, net) * (c > 1)
    cp_hidden = st.cp_overlap * attn_core_s * (1 + attn_core_bwd)
    layer_cp = np.maximum(0.0, cp_raw - cp_hidden)

    # --- EP all-to-all per MoE layer ----------------------------------------------------------
    if a.is_moe:
        a2a_bytes = T * a.top_k * h * ACT_BYTES
        layer_ep = 4.0 * alltoall_s(a2a_bytes, e, t * c, net) * moe_frac * job.ep_comm_factor
    else:
        layer_ep = 0.0 * T

    # --- the slowest stage ----------------------------------------------------------------------
    layers_stage = stage_layers(L, p, v)
    head_fwd = _gemm_s(2 * T * h * V / t, peak, st) + T * 4.0 * V / t * 3 / hbm  # logits + loss
    head_s = 3.0 * head_fwd
    stage_compute = layers_stage * layer_compute + head_s
    stage_tp = layers_stage * layer_tp
    stage_cp = layers_stage * layer_cp
    stage_ep = layers_stage * layer_ep
    # p2p: activations forward, gradients backward, v chunks each; scatter-gather sends 1/t
    p2p_bytes = act_bytes / t
    crosses = t * c * d >= net.domain_gpus
    stage_pp = np.where(p > 1, 2.0 * v * p2p_s(p2p_bytes, crosses, net), 0.0) * (
        (1 - st.pp_overlap) * job.pp_comm_factor
    )
    per_mb = stage_compute + stage_tp + stage_cp + stage_ep + stage_pp

    compute = m * stage_compute
    tp_comm = m * stage_tp
    cp_comm = m * stage_cp
    ep_comm = m * stage_ep
    pp_comm = m * stage_pp
    bubble = np.where(p > 1, (p - 1) / v * per_mb, 0.0)

    # --- data parallelism -------------------------------------------------------------------------
    pc = param_counts(a)
    dense_total = pc.total - pc.experts
    dense_stage = dense_total / p  # per stage, before TP
    expert_stage = pc.experts / p
    grad_b = bytes_per(job.grad_precision)
    w_b = bytes_per(
        Precision.bf16 if job.precision in (Precision.fp8, Precision.fp4) else job.precision
    )
    dp_ranks = d * c
    dense_local = dense_stage / t
    expert_local = expert_stage / (t * e)
    edp = np.maximum(dp_ranks / e, 1.0)
    grads_ar = job.dp_comm_factor * (
        allreduce_s(dense_local * grad_b, dp_ranks, t, net)
        + allreduce_s(expert_local * grad_b, edp, t * e, net)
    )
    # ZeRO-3 gathers weights forward and backward and reduce-scatters grads every micro-batch.
    z3 = m * job.dp_comm_factor * (
        2 * allgather_s(dense_local * w_b, dp_ranks, t, net)
        + allgather_s(dense_local * grad_b, dp_ranks, t, net)
        + 2 * allgather_s(expert_local * w_b, edp, t * e, net)
        + allgather_s(expert_local * grad_b, edp, t * e, net)
    )
    last_bwd = layers_stage * (layer_bwd + recompute_s)
    dp_exposed = np.where(
        z >= 3,
        np.maximum(0.0, z3 - st.dp_overlap * compute),
        np.maximum(0.0, grads_ar - st.dp_overlap * last_bwd),
    )
    dp_exposed = np.where(dp_ranks > 1, dp_exposed, 0.0)

    # --- optimizer ----------------------------------------------------------------------------
    params_local = (dense_local + expert_local) / np.where(z >= 1, dp_ranks, 1.0)
    optimizer = params_local * ADAM_BYTES_PER_PARAM / hbm
    other = np.full_like(compute, st.step_overhead_s)

    step = compute + tp_comm + pp_comm + bubble + dp_exposed + cp_comm + ep_comm + optimizer + other

    tokens = job.global_batch * s
    model_flops = tokens * float(training_flops_per_token(a, s))
    hw_per_token = np.where(
        rc == 2,
        float(training_flops_per_token(a, s, "full", hardware=True)),
        np.where(
            rc == 1,
            float(training_flops_per_token(a, s, "selective", hardware=True)),
            float(training_flops_per_token(a, s)),
        ),
    )
    mem = memory(job, lay, m)
    return StepEstimate(
        compute,
        tp_comm,
        pp_comm,
        bubble,
        dp_exposed,
        cp_comm,
        ep_comm,
        optimizer,
        other,
        step,
        np.full_like(step, model_flops),
        tokens * hw_per_token,
        mem["total"],
        mem,
    )


def memory(job: Job, lay: Layouts, m: F | None = None) -> dict[str, F]:
    """Per-GPU memory (bytes) of the first pipeline stage, which holds the most in-flight
    activations, plus the embedding; the last stage's LM head and logits when pp = 1."""
    a = job.arch
    t, p, d, c, e, v = lay.tp, lay.pp, lay.dp, lay.cp, lay.ep, lay.interleave
    if m is None:
        m = micro_batches(job, lay)
    pc = param_counts(a)
    L = float(a.layers)
    layers_stage = stage_layers(L, p, v)
    per_layer_dense = (pc.attention + pc.dense_mlp + pc.shared_experts + pc.router + pc.norms) / L
    per_layer_expert = pc.experts / L
    first_embed = pc.embedding + np.where(p == 1, pc.output, 0.0)
    storage = Precision.bf16 if job.precision in (Precision.fp8, Precision.fp4) else job.precision
    w, gr, o = state_bytes_array(
        per_layer_dense * layers_stage + first_embed,
        per_layer_expert * layers_stage,
        t,
        d,
        c,
        e,
        lay.zero,
        storage,
        job.grad_precision,
        "adam",
    )
    moe_frac = (L - a.dense_layers) / L if a.is_moe else 0.0
    per_layer_act = activation_bytes_per_layer_array(
        a,
        job.seq_len,
        lay.micro_batch,
        t,
        lay.sp,
        lay.recompute,
        job.stack.flash_attention,
        job.dropout,
        c,
        False,
    ) * (1 - moe_frac)
    if a.is_moe:
        per_layer_act = per_layer_act + moe_frac * activation_bytes_per_layer_array(
            a,
            job.seq_len,
            lay.micro_batch,
            t,
            lay.sp,
            lay.recompute,
            job.stack.flash_attention,
            job.dropout,
            c,
            True,
        )
    inflight = np.where(
        p == 1,
        1.0,
        np.where(v > 1, np.where(m >= p, p * (1 + (p - 1) / (p * v)), m), np.minimum(p, m)),
    )
    act = per_layer_act * layers_stage * inflight
    act = act + np.where(p == 1, 4.0 * (job.seq_len / c) * lay.micro_batch * a.vocab / t, 0.0)
    total = w + gr + o + act + job.reserve_bytes
    return {
        "weights": w,
        "gradients": gr,
        "optimizer": o,
        "activations": act,
        "reserve": np.full_like(total, job.reserve_bytes),
        "total": total,
    }
