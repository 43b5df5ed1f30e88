"""Compute time of one transformer layer, one micro-batch, on one GPU (training).

Each layer runs its GEMMs forward (1x) and backward (2x: data and weight gradients) at an
efficiency that depends on the GEMM's size and precision (the stack's curves), its attention
core at the stack's attention efficiency, and its elementwise work (norms, activations,
residuals, dropout, MoE token permutation) at HBM bandwidth (Korthikanti et al. 2022,
section 4; Narayanan et al., SC21). With FP8 the linear layers' GEMMs run on FP8 tensor cores
(Transformer Engine: QKV, projection, FC1, FC2, expert FCs); the attention core, the router
and the LM head stay in 16-bit, and every FP8 GEMM pays the casts of its inputs (activations
forward, output gradients backward, weights once per step) at HBM speed; the recipe sets how
many bytes a cast moves (current scaling reads the tensor once more for its amax).

Recomputation re-runs what it names in backward: the whole layer (``full``), or modules
(``core_attn`` = Megatron's selective recompute, ``mlp``, ``moe`` experts, ``moe_act``,
``layernorm``), coded as bits (see ``model/recompute``). All times in seconds; arguments
broadcast (numpy arrays or floats, see ``model/xp``).

LoRA fine-tuning (``model/lora``): the frozen base GEMMs run forward and their data gradient
only (backward 1x forward, no weight-gradient GEMM); the backward casts only the output
gradients (no transposed input for a weight gradient); frozen FP8 weights are stored in FP8
(Transformer Engine FP8 parameters), so a step moves 2 bytes per weight element (the FP8
transpose the data gradient reads) instead of a 16-bit cast. Each adapter is two thin 16-bit
GEMMs (x A, then B), memory-bound at small rank (``adapters_s``), run forward and twice
backward (data and weight gradients); column-parallel layers split B's output over tensor
parallelism, row-parallel ones A's input. The LM head is frozen too.
"""

from __future__ import annotations

from dataclasses import dataclass

from clusterwright.catalog.schema import Activation, ModelArch
from clusterwright.catalog.stacks import Stack
from clusterwright.model.attention_bands import attended_share
from clusterwright.model.flops import attention_dims, recurrent_flops_per_token
from clusterwright.model.lora import Lora, adapter_shapes
from clusterwright.model.params import attention_params_per_layer, param_counts
from clusterwright.model.recompute import FULL
from clusterwright.model.xp import Num, Ops

# Bytes an FP8 cast moves per element, by recipe (Transformer Engine on Hopper keeps a
# row-wise and a transposed copy: read 2 B of bf16, write 1 + 1 B; current scaling first reads
# the tensor once more for its amax; MXFP8 writes two block-scaled copies plus their scales).
FP8_CAST_BYTES = {"delayed": 4.0, "current": 6.0, "blockwise": 4.0, "mx": 4.25}
# A frozen weight kept in FP8: the data gradient reads its transposed FP8 copy, made once per
# step (read 1 B, write 1 B); there is no 16-bit master to cast from.
FROZEN_FP8_WEIGHT_BYTES = 2.0


def bit(ops: Ops, code: Num, b: int) -> Num:
    """1.0 where recompute ``code`` has module bit ``b`` (full recompute has none)."""
    return ops.floor(code / b) % 2.0


@dataclass(frozen=True)
class Curves:
    """A stack's GEMM efficiency curves as tuples (log10 FLOPs -> fraction of peak)."""

    xs16: tuple[float, ...]
    ys16: tuple[float, ...]
    xs8: tuple[float, ...]
    ys8: tuple[float, ...]

    @staticmethod
    def of(stack: Stack) -> Curves:
        c16 = stack.gemm_efficiency
        r = stack.fp8_gemm_ratio or 1.0
        return Curves(tuple(x for x, _ in c16), tuple(y for _, y in c16),
                      tuple(x for x, _ in c16), tuple(y * r for _, y in c16))


def gemm_s(ops: Ops, flops: Num, peak: float, xs: tuple[float, ...], ys: tuple[float, ...]) -> Num:
    """One GEMM of ``flops`` FLOPs at the curve's efficiency for its size."""
    f = ops.maximum(flops, 1.0)
    return f / (peak * ops.interp(ops.log10(f), xs, ys))


@dataclass(frozen=True)
class LayerTimes:
    """One layer, one micro-batch: forward and backward compute and the parts the schedule
    and the overlap models need."""

    fwd: Num  # forward compute
    bwd: Num  # backward compute (data + weight gradients)
    wgrad: Num  # the weight-gradient GEMMs inside bwd (zero-bubble schedules defer them)
    recompute: Num  # forward work re-run during backward
    attn_f: Num  # attention core forward (ring attention hides its hops under it)
    attn_b: Num  # attention core backward
    gemm_tp_f: tuple[Num, Num, Num, Num]  # QKV, projection, FC1, FC2 forward GEMMs (TP overlap)
    moe_f: Num  # expert GEMMs + permutation forward (MoE layers; 0 for dense)


@dataclass(frozen=True)
class ComputeJob:
    """What the per-layer compute needs besides the layout."""

    arch: ModelArch
    seq_len: float
    peak: float  # FLOP/s of the GEMM precision
    peak16: float  # FLOP/s in 16-bit (attention, router, LM head)
    hbm: float  # achieved HBM bytes/s for elementwise work
    curves: Curves
    fp8: bool
    fp8_cast_bytes: float
    attention_efficiency: float
    attention_bwd_efficiency: float
    flash: bool
    dropout: bool
    expert_imbalance: float
    fp8_gemm_speedup: float = 1.0  # the GPU's sustained FP8 GEMM rate over the curve's
    lora: Lora | None = None  # LoRA fine-tuning: frozen base weights, rank-r adapters


def compute_job(arch: ModelArch, seq_len: int, stack: Stack, peak: float, peak16: float,
                hbm_bytes_s: float, fp8: bool, recipe: str, dropout: bool,
                expert_imbalance: float,
                attention_speedup: tuple[float, float] = (1.0, 1.0),
                fp8_gemm_speedup: float = 1.0, lora: Lora | None = None, *,
                flash: bool) -> ComputeJob:
    """``attention_speedup``: the GPU's (forward, backward) attention-kernel throughput over
    the part the stack's attention efficiencies were fitted on (catalog ``Gpu``);
    ``fp8_gemm_speedup``: its sustained FP8 GEMM throughput over what its datasheet peak and
    the stack's curve give (catalog ``Gpu``; applied to the FP8 linear layers only);
    ``flash``: fused attention (the job's option, whose default is the stack's)."""
    fwd_x, bwd_x = attention_speedup
    return ComputeJob(
        arch=arch, seq_len=float(seq_len), peak=peak, peak16=peak16,
        hbm=hbm_bytes_s * stack.memory_efficiency, curves=Curves.of(stack), fp8=fp8,
        fp8_cast_bytes=FP8_CAST_BYTES[recipe] if fp8 else 0.0,
        attention_efficiency=stack.attention_efficiency * fwd_x,
        attention_bwd_efficiency=(stack.attention_bwd_efficiency
                                  or stack.attention_efficiency) * bwd_x,
        flash=flash, dropout=dropout,
        expert_imbalance=expert_imbalance,
        fp8_gemm_speedup=fp8_gemm_speedup if fp8 else 1.0, lora=lora,
    )


def _linear(ops: Ops, c: ComputeJob, tokens: Num, k_in: Num, n_out: Num, m: Num, w_share: Num
            ) -> tuple[Num, Num]:
    """(forward GEMM time, FP8 cast time per forward) of a linear layer of ``tokens`` x
    ``k_in`` -> ``n_out`` on this GPU; weight casts are spread over the ``m`` micro-batches of
    a step (Transformer Engine caches the FP8 weights after the first)."""
    flops = 2.0 * tokens * k_in * n_out
    if c.fp8:
        t = gemm_s(ops, flops, c.peak, c.curves.xs8, c.curves.ys8) / c.fp8_gemm_speedup
        w_bytes = FROZEN_FP8_WEIGHT_BYTES if c.lora is not None else c.fp8_cast_bytes
        cast = (c.fp8_cast_bytes * tokens * k_in + w_bytes * k_in * n_out * w_share / m) / c.hbm
        return t, cast
    return gemm_s(ops, flops, c.peak, c.curves.xs16, c.curves.ys16), 0.0 * flops


def adapters_s(ops: Ops, c: ComputeJob, tok: Num, t: Num, ep: Num, moe: bool
               ) -> tuple[Num, Num]:
    """(forward, backward) time of one layer's LoRA adapters for ``tok`` tokens per GPU.

    Per adapted linear layer, x A (k_in -> r) then B (r -> n_out), 16-bit, TP splitting B's
    output (column-parallel) or A's input (row-parallel). At rank r these GEMMs are thin:
    x A does 2 r FLOPs per 2-byte element of x it reads, far below any GPU's ridge point, so
    each runs at the slower of the stack's GEMM curve and reading (writing) its wide operand
    at HBM speed (the roofline: Williams, Waterman, Patterson, CACM 2009). The adapter's
    output is added into the base layer's (read both, write one: 6 bytes per element).
    Backward runs each GEMM twice (data and weight gradients, each reading the wide operand
    again) and adds A's data gradient into the base layer's input gradient. Routed experts'
    adapters see the tokens their experts get (``tok`` k ep / (t E) each, ``E / ep`` local
    experts)."""
    zero = 0.0 * tok
    if c.lora is None:
        return zero, zero
    r = float(c.lora.rank)
    fwd, bwd = zero, zero
    for s in adapter_shapes(c.arch, c.lora, moe):
        k_in = s.k_in if s.column else s.k_in / t
        n_out = s.n_out / t if s.column else s.n_out
        if s.routed:
            a = c.arch
            tok_e = tok / t * a.top_k * ep / a.experts
            copies = a.experts / ep * c.expert_imbalance
        else:
            tok_e, copies = tok, s.copies
        down = ops.maximum(gemm_s(ops, 2.0 * tok_e * k_in * r, c.peak16, c.curves.xs16,
                                  c.curves.ys16), 2.0 * tok_e * k_in / c.hbm)
        up = ops.maximum(gemm_s(ops, 2.0 * tok_e * r * n_out, c.peak16, c.curves.xs16,
                                c.curves.ys16), 2.0 * tok_e * n_out / c.hbm)
        add_out = 6.0 * tok_e * n_out / c.hbm
        add_in = 6.0 * tok_e * k_in / c.hbm
        fwd = fwd + copies * (down + up + add_out)
        bwd = bwd + copies * (2.0 * (down + up) + add_in)
    return fwd, bwd


def layer_times(ops: Ops, c: ComputeJob, tok: Num, t: Num, ep: Num, sp: Num, rc: Num, m: Num,
                moe: bool) -> LayerTimes:
    """Compute times of one dense (``moe`` False) or MoE layer for ``tok`` tokens per GPU per
    micro-batch (the micro-batch's tokens after context parallelism), tensor parallelism ``t``,
    expert parallelism ``ep``, sequence parallelism ``sp`` (0/1), recompute code ``rc`` and
    ``m`` micro-batches per step."""
    a = c.arch
    h = float(a.hidden)
    gated = a.activation in (Activation.swiglu, Activation.geglu)
    g = 2.0 if gated else 1.0
    s = c.seq_len

    # --- attention GEMMs (column-parallel in, row-parallel out: both split by t) ----------
    if a.is_mla:
        assert a.qk_nope_head_dim and a.qk_rope_head_dim and a.v_head_dim and a.kv_lora_rank
        dqk = float(a.heads * (a.qk_nope_head_dim + a.qk_rope_head_dim))
        dv = float(a.heads * a.v_head_dim)
        qr = float(a.q_lora_rank or 0)
        kvr = float(a.kv_lora_rank + a.qk_rope_head_dim)
        if qr:
            q_dn, q_dn_c = _linear(ops, c, tok, h, qr, m, 1.0)
            q_up, q_up_c = _linear(ops, c, tok, qr, dqk / t, m, 1.0)
        else:
            q_dn, q_dn_c = _linear(ops, c, tok, h, dqk / t, m, 1.0)
            q_up, q_up_c = 0.0 * tok, 0.0 * tok
        kv_dn, kv_dn_c = _linear(ops, c, tok, h, kvr, m, 1.0)
        if a.mla_shared_kv:
            # DeepSeek-V4: the shared head is K and V as projected, no up-projection.
            kv_up, kv_up_c = 0.0 * tok, 0.0 * tok
        else:
            kv_up, kv_up_c = _linear(ops, c, tok, float(a.kv_lora_rank),
                                     a.heads * (a.qk_nope_head_dim + a.v_head_dim) / t, m,
                                     1.0)
        qkv = q_dn + q_up + kv_dn + kv_up
        qkv_c = q_dn_c + q_up_c + kv_dn_c + kv_up_c
        mla_up = q_up + kv_up
    else:
        dqk = float(a.heads * a.d_head)
        dv = dqk
        dkv = float(a.n_kv_heads * a.d_head)
        # (gated attention: q_proj also emits the output gate)
        gate = dqk if a.attention_output_gate else 0.0
        qkv, qkv_c = _linear(ops, c, tok, h, (dqk + gate + 2.0 * dkv) / t, m, 1.0)
        mla_up = 0.0 * tok
    if a.o_lora_rank and a.o_groups:
        # A grouped low-rank output (DeepSeek-V4): each group's heads to o_lora_rank, the
        # groups' outputs to the hidden width.
        lo = float(a.o_lora_rank * a.o_groups)
        pa, pa_c = _linear(ops, c, tok, dv / t, float(a.o_lora_rank), m, 1.0)
        pb, pb_c = _linear(ops, c, tok, lo / t, h, m, 1.0)
        proj, proj_c = pa + pb, pa_c + pb_c
    else:
        proj, proj_c = _linear(ops, c, tok, dv / t, h, m, 1.0)
    if (a.linear_attention_layers or a.mamba_layers or a.global_head_dim
            or a.global_kv_heads or a.global_k_eq_v or a.compressed_attention
            or a.hc_mult > 1):
        # A hybrid's layer is the mean of its kinds: Gated DeltaNet and Mamba-2 layers project
        # more (their gates, heads and out_proj) than the full-attention shape above, and
        # global layers of their own shape (Gemma 4) otherwise, and DeepSeek-V4's layers
        # add their compressors, indexers and hyper-connection maps; its projections' time
        # scales by the weights' ratio.
        mix = float(param_counts(a).attention) / (a.layers * attention_params_per_layer(a))
        qkv, qkv_c, proj, proj_c = qkv * mix, qkv_c * mix, proj * mix, proj_c * mix
    if not a.is_mla:
        dqk, dv = attention_dims(a)  # the softmax layers' mean widths

    # --- attention core (16-bit): flash skips the masked half of the causal scores --------
    causal = 0.5 if c.flash else 1.0
    attn_flops = 2.0 * tok * s * (dqk + dv) / t * causal
    if (a.sliding_window or a.compressed_attention) and c.flash:
        # Banded layers see at most the window: min(w, s/2) keys on average, not s/2, and a
        # compressed cache (DeepSeek-V4) one entry per its ratio, or its top-k, with the
        # indexer's scoring (``attended_share``: each band's share of the FLOPs).
        attn_flops = attn_flops * attended_share(a, s / 2.0)
    if a.linear_attention_layers or a.mamba_layers:
        # Softmax attention in the full-attention layers only; the delta rule or the scan
        # elsewhere, at a cost per token that does not grow with the sequence (per layer, on
        # average).
        attn_flops = (attn_flops * a.full_attention_layers / a.layers
                      + tok * recurrent_flops_per_token(a) / a.layers / t)
    attn_f = attn_flops / (c.peak16 * c.attention_efficiency)
    attn_b = 2.5 * attn_flops / (c.peak16 * c.attention_bwd_efficiency) if c.flash else (
        2.0 * attn_flops / (c.peak16 * c.attention_efficiency))

    # --- MLP: dense, or routed + shared experts -------------------------------------------
    if moe:
        f_e = float(a.expert_ffn_hidden or a.ffn_hidden)
        k = float(a.top_k)
        E = float(a.experts)
        # Each GPU routes its share of the micro-batch's tokens (tok / t: the tensor-parallel
        # ranks split the sequence; experts are whole, expert TP 1). Balanced routing gives
        # each local expert tok k ep / (t E) tokens; the busiest GPU's experts get
        # ``expert_imbalance`` times the mean, and the step waits for it.
        Tm = tok / t
        tok_e = Tm * k * ep / E
        w_e = float(a.expert_width)  # LatentMoE: experts between latent-wide tokens
        up, up_c = _linear(ops, c, tok_e, w_e, f_e * g, m, 1.0)
        dn, dn_c = _linear(ops, c, tok_e, f_e, w_e, m, 1.0)
        local = E / ep
        routed = local * (up + dn + up_c + dn_c) * c.expert_imbalance
        shared = 0.0 * tok
        shared_c = 0.0 * tok
        if a.moe_latent:
            # The latent down and up projections, on the GPU's routed tokens (the same FLOPs
            # per GPU as splitting them over the tensor-parallel ranks).
            ld, ld_c = _linear(ops, c, Tm, h, w_e, m, 1.0)
            lu, lu_c = _linear(ops, c, Tm, w_e, h, m, 1.0)
            shared = ld + lu
            shared_c = ld_c + lu_c
        if a.shared_experts:
            su, su_c = _linear(ops, c, tok, h, f_e * a.shared_experts * g / t, m, 1.0)
            sd, sd_c = _linear(ops, c, tok, f_e * a.shared_experts / t, h, m, 1.0)
            shared = shared + su + sd
            shared_c = shared_c + su_c + sd_c
        router = gemm_s(ops, 2.0 * Tm * h * E, c.peak16, c.curves.xs16, c.curves.ys16)
        # Permute and unpermute copy each routed token's state (read + write, 16-bit).
        permute = Tm * k * w_e * 2.0 * 2.0 * 2.0 / c.hbm
        act_e = Tm * k * f_e * (6.0 if gated else 4.0) * c.expert_imbalance / c.hbm
        moe_f = routed + permute + act_e
        fc1 = shared + router  # what runs next to the TP collectives
        fc2 = 0.0 * tok
        mlp_gemm = routed + shared + router
        mlp_cast = shared_c
        mlp_act = act_e + (tok * f_e * a.shared_experts * (6.0 if gated else 4.0) / t / c.hbm
                           if a.shared_experts else 0.0 * tok)
        mlp_elem = permute + mlp_act
    else:
        f = float(a.ffn_hidden)
        fc1, fc1_c = _linear(ops, c, tok, h, f * g / t, m, 1.0)
        fc2, fc2_c = _linear(ops, c, tok, f / t, h, m, 1.0)
        moe_f = 0.0 * tok
        mlp_gemm = fc1 + fc2
        mlp_cast = fc1_c + fc2_c
        mlp_act = tok * f * (6.0 if gated else 4.0) / t / c.hbm
        if a.ffn_layers is not None:
            # Mixer and FFN blocks apart (Nemotron-H): the dense FFNs spread over the layers
            # that are not MoE, on average (none where every FFN is MoE).
            share = (a.n_ffn_layers - a.moe_layers) / max(a.layers - a.moe_layers, 1)
            fc1, fc2, fc1_c, fc2_c = fc1 * share, fc2 * share, fc1_c * share, fc2_c * share
            mlp_gemm, mlp_cast, mlp_act = mlp_gemm * share, mlp_cast * share, mlp_act * share
        mlp_elem = mlp_act

    # --- elementwise (HBM-bound) ------------------------------------------------------------
    drop = 1.0 if c.dropout else 0.0
    sp_div = ops.where(sp > 0, t, 1.0)
    # two norms (read+write h), two residual adds (read 2h, write h), dropout masks; 2 bytes
    norm_b = 8.0 * h / sp_div
    resid_b = (12.0 + 2.0 * drop) * h / sp_div
    softmax_b = 0.0 if c.flash else a.heads * s * (4.0 + 5.0 * drop) / t
    norm_f = tok * norm_b / c.hbm
    elem_f = tok * (resid_b + softmax_b) / c.hbm + norm_f + mlp_elem

    gemm_f = qkv + proj + mlp_gemm
    cast_f = qkv_c + proj_c + mlp_cast
    if c.lora is None:
        fwd = gemm_f + cast_f + attn_f + elem_f
        # Backward: data- and weight-gradient GEMMs (2x), casts of the output gradients (the
        # same element counts as the forward's inputs and outputs), attention backward,
        # elementwise gradients (2x).
        wgrad = gemm_f
        bwd = 2.0 * gemm_f + 2.0 * cast_f + attn_b + 2.0 * elem_f
    else:
        # LoRA: frozen base GEMMs take their data gradient only (1x) and cast only their
        # output gradients; the adapters run forward, then data and weight gradients.
        ad_f, ad_b = adapters_s(ops, c, tok, t, ep, moe)
        fwd = gemm_f + cast_f + attn_f + elem_f + ad_f
        wgrad = 0.5 * ad_b  # the adapters' weight-gradient GEMMs
        bwd = gemm_f + cast_f + attn_b + 2.0 * elem_f + ad_b

    # --- recomputation ------------------------------------------------------------------------
    full = rc == FULL
    modules = (bit(ops, rc, 1) * (attn_f + tok * softmax_b / c.hbm)
               + bit(ops, rc, 4) * (0.0 if moe else 1.0) * (mlp_gemm + mlp_cast + mlp_act)
               + bit(ops, rc, 8) * (moe_f if moe else 0.0 * tok)
               + bit(ops, rc, 16) * (act_e if moe else 0.0 * tok)
               + bit(ops, rc, 32) * norm_f
               + (0.0 * tok if not a.is_mla else bit(ops, rc, 64) * mla_up))
    recompute = ops.where(full, fwd, ops.where(rc == 0, 0.0, modules))
    tp_f = (qkv, proj, fc1, fc2)
    return LayerTimes(fwd, bwd, wgrad, recompute, attn_f, attn_b, tp_f, moe_f)


def head_times(ops: Ops, c: ComputeJob, tok: Num, t: Num) -> tuple[Num, Num]:
    """(forward, backward) of the LM head and loss for ``tok`` tokens (16-bit, vocab split by
    t): the logits GEMM and the fp32 softmax/cross-entropy over them."""
    V = float(c.arch.vocab)
    h = float(c.arch.hidden)
    logits = gemm_s(ops, 2.0 * tok * h * V / t, c.peak16, c.curves.xs16, c.curves.ys16)
    loss = tok * V / t * 4.0 * 3.0 / c.hbm
    fwd = logits + loss
    # A frozen head (LoRA) computes the gradient of its input only.
    grads = 1.0 if c.lora is not None else 2.0
    return fwd, grads * logits + 2.0 * loss
