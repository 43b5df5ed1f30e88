"""GPU memory of training and inference, in bytes.

Training: model states by precision and ZeRO stage (Rajbhandari et al., "ZeRO", SC20),
activations per layer with tensor/sequence parallelism and recomputation (Korthikanti et al.,
"Reducing Activation Recomputation in Large Transformer Models", arXiv 2205.05198, 2022),
pipeline in-flight micro-batches (same paper, section 4.2.3). LoRA fine-tuning (``model/lora``):
frozen base weights (no gradients, no optimizer state, FP8 in an FP8 job), the adapters'
states, and no saved inputs for frozen linear layers that only a weight gradient reads.
Inference: weights, KV cache (GQA and MLA aware) and the engine's reserve. All functions are
pure.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from clusterwright.catalog.schema import Activation, ModelArch
from clusterwright.model.attention_bands import attention_bands
from clusterwright.model.flops import attention_dims, kv_width
from clusterwright.model.layouts import Layouts, in_flight, stage_layers
from clusterwright.model.lora import Lora, adapter_params, adapter_shapes
from clusterwright.model.params import param_counts
from clusterwright.model.precision import Precision, bytes_per
from clusterwright.model.recompute import FULL, parse_recompute
from clusterwright.model.xp import ArrayOps, Ops, ScalarOps
from clusterwright.spec.parallel import Optimizer, ParallelConfig, Recompute

ACT_BYTES = 2.0  # activations are stored in 16-bit in mixed-precision training


@dataclass(frozen=True)
class StateBytes:
    """Bytes per GPU of model states."""

    weights: float
    gradients: float
    optimizer: float

    @property
    def total(self) -> float:
        return self.weights + self.gradients + self.optimizer


def optimizer_bytes_per_param(optimizer: Optimizer, weights: Precision | str) -> float:
    """Optimizer state per parameter: an fp32 master copy when weights are not fp32, plus
    Adam's two fp32 moments (ZeRO paper section 3.1: 12 bytes for mixed-precision Adam) or
    SGD's one momentum buffer."""
    master = 0.0 if Precision(weights) == Precision.fp32 else 4.0
    moments = 8.0 if optimizer == "adam" else 4.0
    return master + moments


def recompute_code(recompute: Recompute | ArrayLike) -> np.ndarray:
    """Recompute modes as integer codes (0 none, 1 selective, 2 full, module bits) for array
    math."""
    if isinstance(recompute, str):
        return np.asarray(parse_recompute(recompute))
    return np.asarray(recompute)


def state_bytes_array(
    dense_params: ArrayLike,
    expert_params: ArrayLike,
    tp: ArrayLike,
    dp: ArrayLike,
    cp: ArrayLike,
    ep: ArrayLike,
    zero_stage: ArrayLike,
    weights: Precision | str = Precision.bf16,
    grads: Precision | str = Precision.bf16,
    optimizer: Optimizer = "adam",
    zero3_group: ArrayLike | None = None,
    ops: Ops = ArrayOps,
) -> tuple[Any, Any, Any]:
    """``state_bytes`` over arrays of layouts (or floats with ``ops=ScalarOps``): (weights,
    gradients, optimizer) bytes per GPU. ``zero3_group`` is ZeRO-3's sharding group (hybrid
    sharding shards inside a group and replicates across groups); None means the whole
    data-parallel group."""
    if ops is ArrayOps:
        cast: Any = lambda v: np.asarray(v, dtype=float)  # noqa: E731
    else:
        cast = float
    t = cast(tp)
    dense = cast(dense_params) / t
    # Experts are whole on each GPU (expert TP 1, MoE parallel folding): ep GPUs of the
    # tp x cp x dp ranks split them, the other t dp cp / ep hold the same ones.
    expert = cast(expert_params) / cast(ep)
    dp_dense = cast(dp) * cast(cp)
    dp_expert = ops.maximum(t * dp_dense / cast(ep), 1.0)
    z = cast(zero_stage)
    if zero3_group is not None:
        g = cast(zero3_group)
        # ZeRO-3 shards all states over its group (for experts: the group's expert share).
        g_expert = ops.maximum(g * dp_expert / dp_dense, 1.0)
        dp_dense = ops.where(z >= 3, g, dp_dense)
        dp_expert = ops.where(z >= 3, g_expert, dp_expert)

    def sharded(stage: int) -> Any:
        return ops.where(z >= stage, dense / dp_dense + expert / dp_expert, dense + expert)

    return (
        bytes_per(weights) * sharded(3),
        bytes_per(grads) * sharded(2),
        optimizer_bytes_per_param(optimizer, weights) * sharded(1),
    )


def state_bytes(
    dense_params: float,
    expert_params: float,
    par: ParallelConfig,
    weights: Precision | str = Precision.bf16,
    grads: Precision | str = Precision.bf16,
    optimizer: Optimizer = "adam",
) -> StateBytes:
    """Model-state bytes per GPU for parameters already split by pipeline stage.

    Dense parameters shard over tp; experts, whole (expert TP 1), over ep. ZeRO 1/2/3 shard
    optimizer state, then gradients, then weights over the data-parallel group: dp*cp for
    dense parameters (Megatron's distributed optimizer shards over the combined DP x CP
    group) and tp*dp*cp/ep for experts (the GPUs holding the same experts).
    """
    w, g, o = state_bytes_array(
        dense_params,
        expert_params,
        par.tp,
        par.dp,
        par.cp,
        par.ep,
        par.zero_stage,
        weights,
        grads,
        optimizer,
    )
    return StateBytes(weights=float(w), gradients=float(g), optimizer=float(o))


def activation_bytes_per_layer_array(
    arch: ModelArch,
    seq_len: ArrayLike,
    micro_batch: ArrayLike,
    tp: ArrayLike,
    sequence_parallel: ArrayLike,
    recompute: ArrayLike,
    flash_attention: bool = True,
    dropout: bool = False,
    cp: ArrayLike = 1,
    moe_layer: bool = False,
    ops: Ops = ArrayOps,
    fp8: bool = False,
    lora: Lora | None = None,
) -> Any:
    """``activation_bytes_per_layer`` over arrays of layouts (or floats with
    ``ops=ScalarOps``); ``recompute`` holds codes (see ``recompute_code``: 0 none, 2 full, else
    module bits) and ``sequence_parallel`` booleans. With ``fp8`` the inputs the linear layers
    keep for their backward are their FP8 copies (Transformer Engine saves the casted input:
    1 byte per element instead of 2). With ``lora`` a frozen linear layer without an adapter
    keeps no input (only its weight gradient would read it; Transformer Engine saves the input
    only for a weight that requires a gradient), except the attention output, which
    FlashAttention's backward reads; each adapter keeps its r-wide intermediate."""
    if ops is ArrayOps:
        s = np.asarray(seq_len, dtype=float) / np.asarray(cp, dtype=float)
        b = np.asarray(micro_batch, dtype=float)
        t = np.asarray(tp, dtype=float)
        sp_on = np.asarray(sequence_parallel, dtype=bool)
        rc = recompute_code(recompute).astype(float)
    else:
        s, b, t = float(seq_len) / float(cp), float(micro_batch), float(tp)  # type: ignore[arg-type, assignment]
        sp_on = bool(sequence_parallel)  # type: ignore[assignment]
        rc = float(recompute)  # type: ignore[arg-type, assignment]
    sp_div = ops.where(sp_on, t, 1.0)

    def has(bit: int) -> Any:
        return ops.floor(rc / bit) % 2.0

    h = arch.hidden
    a = arch.heads
    sbh = s * b * h

    mask = 1.0 if dropout else 0.0
    lin_in = 1.0 if fp8 else ACT_BYTES  # bytes per element of a saved linear-layer input

    def keeps(module: str) -> float:
        # Whether the input of a linear layer is saved: always when it trains, with LoRA
        # only when it has an adapter.
        return 1.0 if lora is None or lora.has(module) else 0.0

    # Outside the TP region: the two norm outputs (attention and MLP inputs, dropped by
    # layernorm recompute), the two residual inputs, two dropout masks.
    norm_outs = keeps("qkv") + keeps("fc1")
    replicated = ((norm_outs * lin_in * (1.0 - has(32))) + 2.0 + 2.0 + 2.0 * mask) * sbh
    if arch.is_mla:
        assert arch.qk_nope_head_dim and arch.qk_rope_head_dim and arch.v_head_dim
        assert arch.kv_lora_rank is not None
        dqk = float(a * (arch.qk_nope_head_dim + arch.qk_rope_head_dim))
        dv = float(a * arch.v_head_dim)
        latents = arch.kv_lora_rank + (arch.q_lora_rank or 0)
        # Q, K (full per-head width after up-projection), V, and the compressed latents;
        # mla_up_proj recompute keeps only the latents.
        qkv = ACT_BYTES * s * b * ((2 * dqk + dv) * (1.0 - has(64)) + latents)
    else:
        # (the mean over banded and whole-context layers where they differ: Gemma 4)
        dqk, dv = attention_dims(arch)
        dkv = kv_width(arch) / 2.0
        qkv = ACT_BYTES * s * b * (dqk + 2 * dkv)
    context = lin_in * s * b * dv  # attention output = input of the output projection
    if lora is not None and not lora.has("proj"):
        # Frozen projection: FlashAttention's backward still reads the 16-bit output.
        context = (ACT_BYTES if flash_attention else 0.0) * s * b * dv
    if flash_attention:
        # FlashAttention keeps only the fp32 log-sum-exp per row and recomputes scores.
        core = 4.0 * a * s * b
    else:
        # softmax output (2 a s^2 b), dropout mask (a s^2 b) and dropout output (2 a s^2 b);
        # selective (core_attn) recompute drops exactly these.
        core = (1.0 - has(1)) * (2.0 + 3.0 * mask) * a * s * s * b
    attention = qkv + context + core

    gated = arch.activation in (Activation.swiglu, Activation.geglu)
    # GELU: fc1 output and activation output (2 + 2 bytes per element). SwiGLU (Megatron's
    # fused bias-swiglu): fc1 output of width 2f and the gated product of width f (4 + 2).
    fc1_out = 4.0 if gated else 2.0
    act_out = lin_in * keeps("fc2")  # the activation's output is FC2's input

    if moe_layer:
        f_e = arch.expert_ffn_hidden or arch.ffn_hidden
        tok = s * arch.top_k * b
        # moe recompute keeps only the layer input; moe_act drops the activation outputs.
        # LatentMoE: an expert's input is latent-wide, and the down projection's output
        # (the up projection's input) is kept once per token.
        routed = (1.0 - has(8)) * (tok * arch.expert_width * lin_in * keeps("fc1")
                                   + (s * b * arch.moe_latent * lin_in if arch.moe_latent
                                      else 0.0)
                                   + tok * f_e * (fc1_out + act_out * (1.0 - has(16))))
        shared = (1.0 - has(8)) * s * b * f_e * arch.shared_experts * (fc1_out + act_out)
        router = 4.0 * s * b * arch.experts  # fp32 router logits
        ffn = routed + shared + router
    else:
        ffn = (1.0 - has(4)) * s * b * arch.ffn_hidden * (fc1_out + act_out)
        if arch.ffn_layers is not None:
            # Mixers and FFN blocks apart (Nemotron-H, Puzzle-pruned Llama): the dense FFNs
            # spread over the layers that are not MoE, on average, as the step time has them.
            ffn = ffn * ((arch.n_ffn_layers - arch.moe_layers)
                         / max(arch.layers - arch.moe_layers, 1))

    kept = replicated / sp_div + (attention + ffn) / t
    if lora is not None:
        # x A of each adapter (r wide, 16-bit), which B's weight gradient reads.
        n_ad = sum(sh.copies * (arch.top_k / arch.experts if sh.routed else 1.0)
                   for sh in adapter_shapes(arch, lora, moe_layer))
        kept = kept + ACT_BYTES * s * b * lora.rank * n_ad
    # Full recompute keeps only each layer's input (2 s b h, split by SP).
    return ops.where(rc == 2, ACT_BYTES * sbh / sp_div, kept)


def activation_bytes_per_layer(
    arch: ModelArch,
    seq_len: float,
    micro_batch: float,
    tp: int = 1,
    sequence_parallel: bool = False,
    recompute: Recompute = "none",
    flash_attention: bool = True,
    dropout: bool = False,
    cp: int = 1,
    moe_layer: bool = False,
) -> float:
    """Activation bytes one transformer layer keeps for backward, per GPU, one micro-batch.

    Korthikanti et al. 2022, section 4.1, generalized to GQA/MLA, SwiGLU and MoE. For a GPT
    layer (ffn = 4h, MHA, dropout, no flash attention) it reduces to their Table 2:
    s b h (10 + 24/t + 5 a s / (h t)) with tensor parallelism, s b h / t (34 + 5 a s / h) with
    sequence parallelism, and 34 s b h / t with selective recompute; full recompute keeps only
    the layer input, 2 s b h (/t with sequence parallelism).
    """
    return float(
        activation_bytes_per_layer_array(
            arch,
            seq_len,
            micro_batch,
            tp,
            sequence_parallel,
            recompute,
            flash_attention,
            dropout,
            cp,
            moe_layer,
        )
    )


def kv_cache_bytes_per_token(arch: ModelArch, kv_precision: Precision | str = "bf16") -> float:
    """KV-cache bytes per token, whole model: 2 * layers * kv_heads * head_dim (K and V);
    MLA caches the compressed latent plus the decoupled RoPE key (DeepSeek-V2, section 2.1).
    Linear-attention and Mamba-2 layers keep none (``recurrent_state_bytes_per_sequence``)."""
    return sum(kv_cache_bytes_per_token_split(arch, kv_precision))


def kv_cache_bytes_per_token_split(arch: ModelArch, kv_precision: Precision | str = "bf16"
                                   ) -> tuple[float, float]:
    """``kv_cache_bytes_per_token`` as (what the cache keeps of the whole context, what it
    keeps of a sliding window: bytes per token of context there), from
    ``attention_bands``: a layer type of its own shape (Gemma 4's global layers) keeps its
    own heads, and a K = V layer still caches both (K after its norm and RoPE, V after its
    own norm); a compressed layer (DeepSeek-V4) keeps one entry per ratio tokens of the
    whole context, its indexer's keys beside them, and its window."""
    b = bytes_per(kv_precision)
    whole = banded = 0.0
    for band in attention_bands(arch):
        per_token = band.layers * band.scale * band.kv_elems_per_key * b
        if band.kept is None:
            whole += per_token
        else:
            banded += per_token
    return whole, banded


# The recurrent layers' state is kept in FP32: Qwen3.5's config.json sets mamba_ssm_dtype
# "float32", Nemotron-H's and Nemotron 3's mamba_ssm_cache_dtype "float32", and SGLang's
# --mamba-ssm-dtype defaults to float32 (srt/server_args.py, "Mamba cache").
RECURRENT_STATE_BYTES = 4.0


def recurrent_state_bytes_per_sequence(arch: ModelArch, conv_bytes: float = 2.0) -> float:
    """Bytes one sequence keeps in the recurrent (linear-attention and Mamba-2) layers, whole
    model, whatever its length: each layer's state in FP32 (a Gated DeltaNet layer's
    key_dim x value_dim per value head; a Mamba-2 layer's head_dim x state per head,
    mamba_ssm_cache_dtype float32 in Nemotron-H's config.json) and its convolution's last
    kernel - 1 inputs (16-bit). 0 without them."""
    total = 0.0
    if arch.linear_attention_layers:
        assert arch.linear_key_heads and arch.linear_value_heads and arch.linear_conv_kernel
        assert arch.linear_key_head_dim and arch.linear_value_head_dim
        dk = arch.linear_key_heads * arch.linear_key_head_dim
        dv = arch.linear_value_heads * arch.linear_value_head_dim
        state = arch.linear_value_heads * arch.linear_key_head_dim * arch.linear_value_head_dim
        conv = (2 * dk + dv) * (arch.linear_conv_kernel - 1)
        total += arch.linear_attention_layers * (state * RECURRENT_STATE_BYTES + conv * conv_bytes)
    if arch.mamba_layers:
        assert arch.mamba_heads and arch.mamba_head_dim and arch.mamba_state
        assert arch.mamba_groups and arch.mamba_conv_kernel
        inner = arch.mamba_heads * arch.mamba_head_dim
        state = inner * arch.mamba_state
        conv = (inner + 2 * arch.mamba_groups * arch.mamba_state) * (arch.mamba_conv_kernel - 1)
        total += arch.mamba_layers * (state * RECURRENT_STATE_BYTES + conv * conv_bytes)
    return total


def kv_cache_bytes(
    arch: ModelArch,
    batch: float,
    context: float,
    kv_precision: Precision | str = "bf16",
    tp: int = 1,
) -> float:
    """KV cache for ``batch`` sequences of ``context`` tokens, per GPU under tensor
    parallelism. KV heads split over TP until each GPU holds one; beyond that they are
    replicated (vLLM does this), so the per-GPU size stops shrinking. MLA's latent is
    replicated on every TP rank. Sliding-window layers keep their window of a sequence, a
    compressed cache one entry per its ratio tokens (``attention_bands``)."""
    b = bytes_per(kv_precision)
    total = 0.0
    for band in attention_bands(arch):
        per_token = band.layers * band.scale * band.kv_elems_per_key * b
        # A sliding-window band keeps only its window of each sequence.
        held = context if band.kept is None else min(context, band.kept)
        total += per_token * held / (min(tp, band.kv_heads) if band.kv_heads else 1)
    return total * batch


@dataclass(frozen=True)
class TrainingMemory:
    """Per-GPU training memory of the pipeline stage that needs the most, in bytes (floats
    for one layout, arrays from ``layout_memory`` over many)."""

    weights: Any
    gradients: Any
    optimizer: Any
    activations: Any
    reserve: Any
    embedding_states: Any  # part of weights+gradients+optimizer from embedding / LM head
    stage: str  # "first", "last" or "only" ("worst" over arrays: see ``last_worse``)
    in_flight_micro_batches: Any
    last_worse: Any = False  # True where the last stage (LM head, logits) needs the most

    @property
    def states(self) -> Any:
        return self.weights + self.gradients + self.optimizer

    @property
    def total(self) -> Any:
        return self.states + self.activations + self.reserve


def layout_memory(
    arch: ModelArch,
    lay: Layouts,
    seq_len: int,
    micro_batches: Any,
    weights: Precision | str = Precision.bf16,
    grads: Precision | str = Precision.bf16,
    optimizer: Optimizer = "adam",
    flash_attention: bool = True,
    dropout: bool = False,
    fp8: bool = False,
    reserve_bytes: float = 0.0,
    prefetch: int = 1,
    dualpipe: bool = False,
    ops: Ops = ArrayOps,
    lora: Lora | None = None,
    frozen: Precision | str | None = None,
) -> TrainingMemory:
    """Per-GPU training memory (bytes) of every layout in ``lay``: the larger of the first
    pipeline rank (embedding, the most in-flight activations) and the last (LM head, fp32
    logits), each holding ``stage_layers`` layers. The one training-memory model: the step
    model, the planner, ``size`` and the validation tables all call it.

    States: ZeRO 1/2/3 over the data-parallel group (ZeRO-3 over its sharding group
    ``lay.shard``), plus the gathered layer ZeRO-3 computes with and the ``prefetch`` layers it
    gathers ahead. Activations: ``activation_bytes_per_layer_array`` times the rank's layers
    times its in-flight micro-batches (``layouts.in_flight``); with block recompute only
    ``rc_frac`` of the layers drop theirs. DualPipe keeps two model chunks (a stage and its
    mirror) per rank with p + 1 micro-batches in flight (DeepSeek-V3 report, Table 2).
    ``weights`` is the storage dtype (16-bit for FP8 training) and ``fp8`` saves FP8 copies of
    the linear layers' inputs. With ``lora`` the base weights are frozen, stored as ``frozen``
    (default ``weights``) without gradients or optimizer state, and the adapters (16-bit
    ``weights``, sharded like the layer they adapt) carry the gradients and Adam's state.
    """
    c = param_counts(arch)
    L = float(arch.layers)
    t, p, d, cp, e, v = lay.tp, lay.pp, lay.dp, lay.cp, lay.ep, lay.interleave
    Ls = stage_layers(L, p, v, ops)
    layer_dense = float(c.attention + c.dense_mlp + c.shared_experts + c.router + c.norms) / L
    layer_expert = float(c.experts) / L
    moe_frac = arch.moe_layers / L
    dp_ranks = d * cp
    shard = lay.shard if lay.shard is not None else 0.0
    z3_group = ops.where(lay.zero >= 3, ops.where(shard > 0, ops.minimum(shard, dp_ranks),
                                                  dp_ranks), dp_ranks)
    copies = 2.0 if dualpipe else 1.0

    base_w = weights if lora is None or frozen is None else frozen
    ad_dense, ad_expert = adapter_params(arch, lora) if lora is not None else (0.0, 0.0)

    def states(dense: Any, expert: Any, layers: Any = 0.0) -> tuple[Any, Any, Any]:
        if lora is None:
            return state_bytes_array(dense, expert, t, dp_ranks, 1.0, e, lay.zero, weights,
                                     grads, optimizer, z3_group, ops)
        # Frozen base: its weights only. Adapters of ``layers`` layers: every state.
        w, _, _ = state_bytes_array(dense, expert, t, dp_ranks, 1.0, e, lay.zero, base_w,
                                    grads, optimizer, z3_group, ops)
        aw, ag, ao = state_bytes_array(ad_dense / L * layers, ad_expert / L * layers, t,
                                       dp_ranks, 1.0, e, lay.zero, weights, grads, optimizer,
                                       z3_group, ops)
        return w + aw, ag, ao

    # ZeRO-3/FSDP holds the gathered layer it computes with and the ones it prefetches.
    layer_w = (layer_dense / t + layer_expert / e) * bytes_per(base_w)
    gathered = ops.where((lay.zero >= 3) & (z3_group > 1), (1.0 + max(prefetch, 0)) * layer_w,
                         0.0)

    def act(recompute: Any, moe: bool) -> Any:
        return activation_bytes_per_layer_array(
            arch, seq_len, lay.micro_batch, t, lay.sp, recompute, flash_attention, dropout, cp,
            moe, ops, fp8, lora)

    def per_layer(recompute: Any) -> Any:
        a = act(recompute, False) * (1.0 - moe_frac)
        return a + moe_frac * act(recompute, True) if moe_frac else a

    per_layer_act = per_layer(lay.recompute)
    # Block recompute: a share of the layers keep only their input, the rest everything.
    full = lay.recompute == FULL
    rc_frac = lay.rc_frac if lay.rc_frac is not None else 1.0
    frac = ops.where(full, rc_frac, 1.0)
    if ops is ArrayOps or frac < 1.0:
        per_layer_act = ops.where(full, frac * per_layer_act + (1.0 - frac) * per_layer(
            lay.recompute * 0.0), per_layer_act)
    # Logits in fp32 for the cross-entropy backward, sharded over vocab by TP, one micro-batch.
    logits = 4.0 * (seq_len / cp) * lay.micro_batch * arch.vocab / t

    def stage(first: bool) -> TrainingMemory:
        if first:
            embed = c.embedding + ops.where(p == 1, float(c.output), 0.0)
        else:
            # Megatron keeps a copy of a tied embedding on the last stage for the LM head.
            embed = float(arch.vocab * arch.hidden)
        w, g, o = states(layer_dense * Ls + embed, layer_expert * Ls, Ls)
        we, ge, oe = states(embed, 0.0)
        inflight = (ops.where(p == 1, 1.0, p + 1.0) if dualpipe
                    else in_flight(p, v, micro_batches, first, ops))
        a = per_layer_act * Ls * inflight
        a = a + (logits if not first else ops.where(p == 1, logits, 0.0))
        return TrainingMemory(
            w * copies + gathered, g * copies, o * copies, a,
            ops.full(a, reserve_bytes), (we + ge + oe) * copies,
            "first" if first else "last", inflight,
        )

    head = stage(True)
    if dualpipe:
        # Every DualPipe rank holds a first and a last chunk; the mirror is counted above.
        return head
    tail = stage(False)
    worse = (p > 1) & (tail.total > head.total)

    def pick(name: str) -> Any:
        return ops.where(worse, getattr(tail, name), getattr(head, name))

    return TrainingMemory(
        pick("weights"), pick("gradients"), pick("optimizer"), pick("activations"),
        pick("reserve"), pick("embedding_states"), "worst", pick("in_flight_micro_batches"),
        worse,
    )


def training_memory(
    arch: ModelArch,
    par: ParallelConfig,
    seq_len: int,
    weights: Precision | str = Precision.bf16,
    grads: Precision | str = Precision.bf16,
    optimizer: Optimizer = "adam",
    flash_attention: bool = True,
    dropout: bool = False,
    reserve_bytes: float = 0.0,
    prefetch: int = 1,
) -> TrainingMemory:
    """Per-GPU memory (bytes) of training ``arch`` under one validated ``par``:
    ``layout_memory`` on floats, with the stage that needs the most named."""
    lay = Layouts.from_config(par).scalar(0)
    m = layout_memory(arch, lay, seq_len, float(par.micro_batches), weights, grads, optimizer,
                      flash_attention, dropout, reserve_bytes=reserve_bytes, prefetch=prefetch,
                      ops=ScalarOps)
    name = "only" if par.pp == 1 else ("last" if m.last_worse else "first")
    return TrainingMemory(
        float(m.weights), float(m.gradients), float(m.optimizer), float(m.activations),
        float(m.reserve), float(m.embedding_states), name, float(m.in_flight_micro_batches),
        bool(m.last_worse),
    )


@dataclass(frozen=True)
class InferenceMemory:
    """Per-GPU inference memory, in bytes."""

    weights: float
    kv_cache: float
    activations: float
    reserve: float

    @property
    def total(self) -> float:
        return self.weights + self.kv_cache + self.activations + self.reserve


def inference_memory(
    arch: ModelArch,
    batch: float,
    context: float,
    weights: Precision | str = Precision.bf16,
    kv_precision: Precision | str = Precision.bf16,
    tp: int = 1,
    pp: int = 1,
    max_batched_tokens: float = 8192,
    reserve_bytes: float = 0.0,
) -> InferenceMemory:
    """Per-GPU memory to serve ``batch`` sequences of ``context`` tokens.

    Weights split over tp*pp (embeddings included); KV over tp (see kv_cache_bytes) and pp
    (layers); activation peak of one forward pass over ``max_batched_tokens`` tokens (the
    engine's profiling run: hidden states plus the widest MLP intermediate, 16-bit).
    """
    w = param_counts(arch).total * bytes_per(weights) / (tp * pp)
    kv = kv_cache_bytes(arch, batch, context, kv_precision, tp) / pp
    width = max(arch.ffn_hidden, (arch.expert_ffn_hidden or 0) * max(arch.top_k, 1))
    act = ACT_BYTES * max_batched_tokens * (4 * arch.hidden + 2 * width / tp)
    return InferenceMemory(w, kv, act, reserve_bytes)


def min_gpus_for_bytes(total_bytes: float, usable_bytes_per_gpu: float) -> int:
    """Fewest GPUs whose usable memory holds ``total_bytes`` when it shards perfectly."""
    if usable_bytes_per_gpu <= 0:
        raise ValueError("usable memory per GPU must be positive")
    return max(1, math.ceil(total_bytes / usable_bytes_per_gpu))
