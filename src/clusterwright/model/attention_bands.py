"""A model's softmax attention as bands of layers that attend the same keys.

A query of a band's layer attends ``scale x min(context, window)`` keys: the whole context
(``window`` None, ``scale`` 1), a sliding window (gpt-oss, Gemma 4, and every DeepSeek-V4
layer), or the entries of a KV cache compressed along the sequence (DeepSeek-V4: one entry
per ``ratio`` tokens, ``scale`` 1 / ratio; with a lightning indexer each query attends only
its top-k entries, a window of top-k x ratio tokens, while the indexer itself scores every
entry; at ratio 1, DeepSeek Sparse Attention, the top-k of the uncompressed context). The
serving step, the KV-cache sizes and the model FLOPs all read these bands, so
a layer type costs and keeps the same in each of them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from clusterwright.catalog.schema import ModelArch


def softmax_mean(arch: ModelArch, of: Callable[[bool], float]) -> float:
    """Mean of a softmax layer's ``of(global_layer)`` over the banded and the whole-context
    layers (they differ where the global layers have a shape of their own: Gemma 4)."""
    b, g = arch.banded_layers, arch.global_layers
    return (b * of(False) + g * of(True)) / max(b + g, 1)


@dataclass(frozen=True)
class AttentionBand:
    """``layers`` layers whose queries attend the same keys (per query and layer)."""

    layers: int
    scale: float  # keys per token of context (1 / the compression ratio)
    window: float | None  # tokens of context attended (None: all of it)
    kept: float | None  # tokens of context the cache keeps (None: all of it)
    prefill_flops_per_key: float  # 2 (d_qk + d_v) summed over heads
    decode_flops_per_key: float  # the same, as decode runs it (MLA: in the latent)
    kv_elems_per_key: float  # cache elements one key holds
    kv_heads: int  # KV heads tensor parallelism splits (0: a latent every rank keeps)
    fp8: bool = False  # scored in FP8 (DeepSeek's lightning indexer)


def _mla_widths(arch: ModelArch) -> tuple[float, float, float]:
    """(prefill, decode FLOPs per key, cache elements per key) of one MLA layer."""
    assert arch.qk_nope_head_dim and arch.qk_rope_head_dim and arch.v_head_dim
    assert arch.kv_lora_rank is not None
    h = arch.heads
    prefill = 2.0 * h * (arch.qk_nope_head_dim + arch.qk_rope_head_dim + arch.v_head_dim)
    # Decode attends in the latent (projections absorbed): the query-key width is the latent
    # plus the RoPE part; the value width the latent, or the whole shared head (DeepSeek-V4).
    v = arch.v_head_dim if arch.mla_shared_kv else arch.kv_lora_rank
    decode = 2.0 * h * (arch.kv_lora_rank + arch.qk_rope_head_dim + v)
    return prefill, decode, float(arch.kv_lora_rank + arch.qk_rope_head_dim)


def attention_bands(arch: ModelArch) -> list[AttentionBand]:
    """The softmax layers of ``arch`` as bands (empty bands left out). Counts are per layer
    and key; multiply by a band's layers and attended keys."""
    w = float(arch.sliding_window) if arch.sliding_window else None
    bands: list[AttentionBand] = []
    if arch.is_mla:
        pf, dec, elems = _mla_widths(arch)
        plain = arch.global_layers - arch.compressed_layers
        if plain:
            bands.append(AttentionBand(plain, 1.0, None, None, pf, dec, elems, 0))
        # Every compressed layer also attends (and keeps) its window of recent tokens
        # (DeepSeek-V4's; a ratio-1 sparse layer, DeepSeek-V3.2's and GLM-5's, has none).
        windowed = arch.banded_layers + arch.windowed_compressed_layers
        if windowed and w:
            bands.append(AttentionBand(windowed, 1.0, w, w, pf, dec, elems, 0))
        for g in arch.compressed_attention:
            scale = 1.0 / g.ratio
            attended = float(g.topk * g.ratio) if g.topk else None
            bands.append(AttentionBand(g.layers, scale, attended, None, pf, dec, elems, 0))
            if g.topk:
                assert arch.index_heads and arch.index_head_dim
                idx = 2.0 * arch.index_heads * arch.index_head_dim
                bands.append(AttentionBand(g.layers, scale, None, None, idx, idx,
                                           float(arch.index_head_dim), 0, fp8=True))
        return bands
    for global_layer, n, window in ((True, arch.global_layers, None),
                                    (False, arch.banded_layers, w)):
        if not n:
            continue
        head_dim = arch.layer_head_dim(global_layer)
        kv_heads = arch.layer_kv_heads(global_layer)
        per_key = 2.0 * 2.0 * arch.heads * head_dim
        bands.append(AttentionBand(n, 1.0, window, window, per_key, per_key,
                                   2.0 * kv_heads * head_dim, kv_heads))
    return bands


def dense_flops_per_key(arch: ModelArch) -> float:
    """Prefill attention FLOPs per query and key over all softmax layers, had every one of
    them attended the whole context uncompressed."""
    if arch.is_mla:
        return arch.full_attention_layers * _mla_widths(arch)[0]
    return sum(b.layers * b.prefill_flops_per_key for b in attention_bands(arch))


def attended_share(arch: ModelArch, context: float) -> float:
    """The softmax layers' attention FLOPs at ``context`` tokens of context (per query), as
    a share of the same layers attending all of it uncompressed (1 without windows or
    compression; the indexer's scoring counted)."""
    dense = dense_flops_per_key(arch)
    if not dense or context <= 0:
        return 1.0
    got = sum(b.layers * b.prefill_flops_per_key * attended(b, context)
              for b in attention_bands(arch))
    return got / (dense * context)


def attended(band: AttentionBand, context: float, queries: float = 1.0) -> float:
    """Keys ``queries`` queries of ``band`` attend at ``context`` tokens of context each
    (aggregated over sequences: ``context`` and the window scaled by ``queries``)."""
    seen = context if band.window is None else min(context, queries * band.window)
    return band.scale * seen


def kept(band: AttentionBand, context: float, sequences: float = 1.0) -> float:
    """Cache entries ``band`` keeps for ``sequences`` sequences holding ``context`` tokens in
    all, per layer."""
    held = context if band.kept is None else min(context, sequences * band.kept)
    return band.scale * held
