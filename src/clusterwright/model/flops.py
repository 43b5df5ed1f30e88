"""FLOPs of a transformer: per token, per training run, Megatron's per-iteration formula.

Conventions (PaLM, Chowdhery et al. 2022, appendix B): a multiply-add is 2 FLOPs; backward
costs twice the forward; *model* FLOPs exclude recomputation (MFU), *hardware* FLOPs include it
(HFU). Functions accept numpy arrays for sequence lengths and token counts.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

from clusterwright.catalog.schema import ModelArch
from clusterwright.model.attention_bands import attention_bands, softmax_mean
from clusterwright.model.lora import Lora, adapter_flops_per_token
from clusterwright.model.params import matmul_params

Recompute = Literal["none", "selective", "full"]


def attention_dims(arch: ModelArch, global_layer: bool | None = None) -> tuple[float, float]:
    """(query-key width, value width) summed over heads, in elements: of a banded layer
    (``global_layer`` False), a whole-context one (True), or the mean over the softmax
    layers (None), which differ only where the global layers have a shape of their own
    (Gemma 4)."""
    if arch.is_mla:
        assert arch.qk_nope_head_dim and arch.qk_rope_head_dim and arch.v_head_dim
        return (
            arch.heads * (arch.qk_nope_head_dim + arch.qk_rope_head_dim),
            arch.heads * arch.v_head_dim,
        )
    if global_layer is None:
        w = softmax_mean(arch, arch.layer_head_dim)
        return arch.heads * w, arch.heads * w
    w = arch.layer_head_dim(global_layer)
    return arch.heads * w, arch.heads * w


def kv_width(arch: ModelArch) -> float:
    """K and V widths of one softmax layer (2 x KV heads x head width), in elements: the
    mean over the banded and the whole-context layers, which differ only where the global
    layers have a shape of their own (Gemma 4). Not for MLA."""
    return softmax_mean(arch, lambda g: 2.0 * arch.layer_kv_heads(g) * arch.layer_head_dim(g))


def attention_flops_per_token(arch: ModelArch, context: ArrayLike) -> np.ndarray:
    """Forward FLOPs of QK^T and AV for one token attending to ``context`` tokens in the
    whole-context softmax layers and at most their window in the banded ones, plus the
    recurrent layers' (linear attention, Mamba-2), which do not grow with the context
    (``recurrent_flops_per_token``)."""
    ctx = np.asarray(context, dtype=float)
    total = 0.0 * ctx
    for b in attention_bands(arch):
        seen = ctx if b.window is None else np.minimum(ctx, b.window)
        total = total + b.layers * b.prefill_flops_per_key * b.scale * seen
    return total + recurrent_flops_per_token(arch)


def recurrent_flops_per_token(arch: ModelArch) -> float:
    """Forward FLOPs of the recurrent layers for one token: the gated delta rule (per value
    head the state times the key, the rank-one update and the query's read-out, three
    key_dim x value_dim products) and Mamba-2's selective scan (per head the state's update
    by B x and the read-out by C, two head_dim x state products), 2 FLOPs a multiply-add.
    The chunked kernels (flash-linear-attention's chunk_gated_delta_rule, Mamba-2's SSD) do
    the same work in blocks. 0 without them."""
    total = 0.0
    if arch.linear_attention_layers:
        assert arch.linear_value_heads and arch.linear_key_head_dim
        assert arch.linear_value_head_dim
        total += arch.linear_attention_layers * 6.0 * arch.linear_value_heads \
            * arch.linear_key_head_dim * arch.linear_value_head_dim
    if arch.mamba_layers:
        assert arch.mamba_heads and arch.mamba_head_dim and arch.mamba_state
        total += arch.mamba_layers * 4.0 * arch.mamba_heads * arch.mamba_head_dim \
            * arch.mamba_state
    return total


def forward_flops_per_token(
    arch: ModelArch, seq_len: ArrayLike, causal: bool = False
) -> np.ndarray:
    """Forward FLOPs per token of a sequence of ``seq_len`` tokens.

    ``2 * matmul params`` (active params for MoE, LM head included) plus attention. With
    ``causal=False`` attention counts the full s x s score matrix, as PaLM's MFU and
    Megatron's formula do; ``causal=True`` counts the (s + 1) / 2 keys a token really sees.
    """
    s = np.asarray(seq_len, dtype=float)
    context = (s + 1.0) / 2.0 if causal else s
    return 2.0 * matmul_params(arch) + attention_flops_per_token(arch, context)


def training_flops_per_token(
    arch: ModelArch,
    seq_len: ArrayLike,
    recompute: Recompute = "none",
    hardware: bool = False,
    causal: bool = False,
    lora: Lora | None = None,
) -> np.ndarray:
    """Training FLOPs per token: 3x forward (model FLOPs, for MFU).

    With ``hardware=True`` recomputation is counted (HFU): full recompute runs the layers'
    forward again (about 4x forward); selective recompute reruns only the attention core
    (Korthikanti et al. 2022, section 5).

    With ``lora`` the base weights are frozen (``model/lora``): forward (base and adapters),
    the data gradient of every base GEMM (1x its forward, no weight gradient), the attention
    core's backward (2x its forward, as in full training) and the adapters' backward (2x
    theirs): 2 fwd + attention + 3 adapters, about 2/3 of full training.
    """
    fwd = forward_flops_per_token(arch, seq_len, causal)
    s = np.asarray(seq_len, dtype=float)
    attn = attention_flops_per_token(arch, (s + 1.0) / 2.0 if causal else s)
    if lora is None:
        total = 3.0 * fwd
        adapters = 0.0
    else:
        adapters = adapter_flops_per_token(arch, lora)
        total = 2.0 * fwd + attn + 3.0 * adapters
    if hardware:
        if recompute == "full":
            # Megatron checkpoints the transformer layers; the LM head is not rerun
            # (the V term of SC21 eq. 3 is the same with and without recompute).
            total = total + fwd + adapters - 2.0 * arch.vocab * arch.hidden
        elif recompute == "selective":
            total = total + attn
    return np.asarray(total)


def training_flops(
    arch: ModelArch, tokens: ArrayLike, seq_len: ArrayLike, causal: bool = False
) -> np.ndarray:
    """Model FLOPs to train on ``tokens`` tokens: about 6 * N_active * D plus attention."""
    per_token = training_flops_per_token(arch, seq_len, causal=causal)
    return np.asarray(np.asarray(tokens, dtype=float) * per_token)


def six_n_d(arch_active_params: ArrayLike, tokens: ArrayLike) -> np.ndarray:
    """Kaplan et al. 2020: C = 6 N D (no attention term)."""
    return np.asarray(
        6.0 * np.asarray(arch_active_params, dtype=float) * np.asarray(tokens, dtype=float)
    )


def megatron_iteration_flops(
    batch: ArrayLike,
    seq_len: ArrayLike,
    layers: int,
    hidden: int,
    vocab: int,
    full_recompute: bool = True,
) -> np.ndarray:
    """Narayanan et al., SC21, eq. 3: FLOPs of one iteration of a GPT model (ffn = 4h, MHA).

    With full recompute: 96 B s l h^2 (1 + s/6h + V/16lh); without: 72 B s l h^2
    (1 + s/6h + V/12lh). Only valid for that shape; use ``training_flops_per_token`` in general.
    """
    B = np.asarray(batch, dtype=float)
    s = np.asarray(seq_len, dtype=float)
    l, h, V = float(layers), float(hidden), float(vocab)
    if full_recompute:
        return np.asarray(96.0 * B * s * l * h * h * (1.0 + s / (6.0 * h) + V / (16.0 * l * h)))
    return np.asarray(72.0 * B * s * l * h * h * (1.0 + s / (6.0 * h) + V / (12.0 * l * h)))


def utilization(
    flops_per_step: ArrayLike, step_time_s: ArrayLike, gpus: ArrayLike, peak_flops: ArrayLike
) -> np.ndarray:
    """Achieved over peak: MFU with model FLOPs, HFU with hardware FLOPs (peak in FLOP/s)."""
    return np.asarray(
        np.asarray(flops_per_step, dtype=float)
        / (
            np.asarray(step_time_s, dtype=float)
            * np.asarray(gpus, dtype=float)
            * np.asarray(peak_flops, dtype=float)
        )
    )


def finetune_flops_per_token(
    arch: ModelArch, seq_len: ArrayLike, method: Literal["full", "lora"] = "full",
    lora: Lora | None = None,
) -> np.ndarray:
    """Fine-tuning model FLOPs per token. Full fine-tuning costs as pre-training (3x
    forward); LoRA (``lora``, default rank 16 on the attention projections) about 2x forward
    plus the attention core's backward and the adapters (``training_flops_per_token``)."""
    if method == "full":
        return training_flops_per_token(arch, seq_len)
    return training_flops_per_token(arch, seq_len, lora=lora or Lora.of(16))
