"""Parameter counts of decoder-only transformers: dense, GQA, MLA, SwiGLU and MoE.

Counts are exact for the layer shapes (weights, biases, norms); they are checked against the
published count of every catalog model (tests/model/test_params.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from clusterwright.catalog.schema import Activation, ModelArch


@dataclass(frozen=True)
class ParamCounts:
    """Parameters of one model, split by where they live (counts, not bytes)."""

    embedding: int  # token (+ learned position) embedding
    output: int  # LM head; 0 when tied to the embedding
    attention: int  # all layers
    dense_mlp: int  # all dense FFN layers
    experts: int  # routed experts, all MoE layers
    # Shared experts, all MoE layers, with LatentMoE's latent projections: dense weights every
    # token of an MoE layer multiplies.
    shared_experts: int
    router: int  # gate weights, all MoE layers
    norms: int  # layer norms, all layers plus the final one

    @property
    def total(self) -> int:
        return (
            self.embedding
            + self.output
            + self.attention
            + self.dense_mlp
            + self.experts
            + self.shared_experts
            + self.router
            + self.norms
        )

    @property
    def per_layer_nonexpert(self) -> int:
        """Attention + dense MLP + router + norms summed over layers (not per layer)."""
        return self.attention + self.dense_mlp + self.shared_experts + self.router + self.norms


def _norm_params(arch: ModelArch) -> int:
    # LayerNorm has a scale and a bias; RMSNorm only a scale.
    return 2 * arch.hidden if arch.norm == "layernorm" else arch.hidden


def attention_params_per_layer(arch: ModelArch, global_layer: bool = False) -> int:
    """Q, K, V and output projections (and biases) of one banded (or, with ``global_layer``,
    whole-context) softmax layer, in parameters; the two differ only where the model gives
    its global layers a shape of their own (Gemma 4)."""
    h = arch.hidden
    if arch.is_mla:
        # DeepSeek-V2/V3 multi-head latent attention (DeepSeek-V2 report, section 2.1.2).
        assert arch.qk_nope_head_dim and arch.qk_rope_head_dim and arch.v_head_dim
        assert arch.kv_lora_rank is not None
        qk = arch.qk_nope_head_dim + arch.qk_rope_head_dim
        if arch.q_lora_rank:
            q = h * arch.q_lora_rank + arch.q_lora_rank + arch.q_lora_rank * arch.heads * qk
        else:
            q = h * arch.heads * qk
        latent = arch.kv_lora_rank + arch.qk_rope_head_dim
        if arch.mla_shared_kv:
            # DeepSeek-V4: wkv makes the one shared head (normed whole), no up-projection;
            # a learned attention sink per head.
            kv_down, kv_up = h * latent + latent, arch.heads
        else:
            kv_down = h * latent + arch.kv_lora_rank
            kv_up = arch.kv_lora_rank * arch.heads * (arch.qk_nope_head_dim + arch.v_head_dim)
        if arch.o_lora_rank and arch.o_groups:
            # Grouped low-rank output (DeepSeek-V4's wo_a, block-diagonal over o_groups
            # groups of heads, then wo_b from the groups' o_lora_rank outputs).
            o = (arch.o_lora_rank * arch.heads * arch.v_head_dim
                 + arch.o_groups * arch.o_lora_rank * h)
        else:
            o = arch.heads * arch.v_head_dim * h
        return q + kv_down + kv_up + o
    head_dim = arch.layer_head_dim(global_layer)
    dq = arch.heads * head_dim
    dkv = arch.layer_kv_heads(global_layer) * head_dim
    kv_proj = 1 if (global_layer and arch.global_k_eq_v) else 2  # K = V: one projection
    # (gated attention: q_proj also emits the output gate, dq more outputs)
    weights = h * dq * (2 if arch.attention_output_gate else 1) + kv_proj * h * dkv + dq * h
    biases = (dq + kv_proj * dkv + h) if arch.bias else 0
    return weights + biases


def linear_attention_params_per_layer(arch: ModelArch) -> int:
    """One Gated DeltaNet layer (Qwen3.5, Qwen3-Next; Transformers' ``Qwen3NextGatedDeltaNet``),
    in parameters: in_proj_qkvz (q and k per key head, v and the output gate z per value
    head), in_proj_ba (the delta rule's beta and the decay's a, one each per value head), the
    depthwise causal convolution over q, k and v (no bias), the decay's A_log and dt_bias,
    the gated RMSNorm over a value head, out_proj. 0 without linear attention."""
    if not arch.linear_attention_layers:
        return 0
    assert arch.linear_key_heads and arch.linear_value_heads
    assert arch.linear_key_head_dim and arch.linear_value_head_dim and arch.linear_conv_kernel
    h = arch.hidden
    dk = arch.linear_key_heads * arch.linear_key_head_dim
    dv = arch.linear_value_heads * arch.linear_value_head_dim
    qkvz = h * (2 * dk + 2 * dv)
    ba = h * 2 * arch.linear_value_heads
    conv = (2 * dk + dv) * arch.linear_conv_kernel
    decay = 2 * arch.linear_value_heads
    norm = arch.linear_value_head_dim
    return qkvz + ba + conv + decay + norm + dv * h


def mamba_params_per_layer(arch: ModelArch) -> int:
    """One Mamba-2 mixer (Transformers' ``NemotronHMamba2Mixer``), in parameters: in_proj
    (the gate z and x, one width each, B and C per group, dt per head), the depthwise causal
    convolution over x, B and C with its bias, dt_bias, A_log and D per head, the gated
    RMSNorm, out_proj. 0 without Mamba-2 layers."""
    if not arch.mamba_layers:
        return 0
    assert arch.mamba_heads and arch.mamba_head_dim and arch.mamba_state
    assert arch.mamba_groups and arch.mamba_conv_kernel
    h = arch.hidden
    inner = arch.mamba_heads * arch.mamba_head_dim
    bc = 2 * arch.mamba_groups * arch.mamba_state
    conv_dim = inner + bc
    return (h * (2 * inner + bc + arch.mamba_heads) + conv_dim * (arch.mamba_conv_kernel + 1)
            + 3 * arch.mamba_heads + inner + inner * h)


def mlp_params(arch: ModelArch, ffn_hidden: int, width: int | None = None) -> int:
    """One feed-forward block of width ``ffn_hidden`` between tokens ``width`` wide (default
    ``hidden``; a LatentMoE expert: the latent width): gated units have three matrices."""
    h = width or arch.hidden
    gated = arch.activation in (Activation.swiglu, Activation.geglu)
    weights = (3 if gated else 2) * h * ffn_hidden
    biases = ((2 if gated else 1) * ffn_hidden + h) if arch.bias else 0
    return weights + biases


def compression_params(arch: ModelArch) -> int:
    """DeepSeek-V4's compressors and indexers (DeepSeek-V3.2's and GLM-5's indexers at ratio
    1), all layers, in parameters (0 without
    ``compressed_attention``). A compressor gates and projects each token to the cached
    head (wkv, wgate), twice as wide where its windows overlap (the sparse groups: ratio 4 in
    the released configs), with a learned position per slot of its ratio and a norm; a
    sparse group's indexer adds its query up-projection (from the q latent), per-head
    weights and a compressor of its own at index_head_dim."""
    if not arch.compressed_attention:
        return 0
    assert arch.kv_lora_rank is not None and arch.qk_rope_head_dim is not None
    h, head = arch.hidden, arch.kv_lora_rank + arch.qk_rope_head_dim

    def compressor(width: int, ratio: int, overlap: bool) -> int:
        out = (2 if overlap else 1) * width
        return 2 * h * out + ratio * out + width

    total = 0
    for g in arch.compressed_attention:
        # At ratio 1 (DeepSeek Sparse Attention) the cache is MLA's own: no compressor, and
        # the indexer projects its key with one matrix and a LayerNorm (DeepSeek-V3.2's
        # inference code: wk, k_norm)
        whole = g.ratio == 1
        per_layer = 0 if whole else compressor(head, g.ratio, bool(g.topk))
        if g.topk:
            assert arch.index_heads and arch.index_head_dim
            d = arch.index_head_dim
            per_layer += ((arch.q_lora_rank or h) * arch.index_heads * d
                          + h * arch.index_heads
                          + (h * d + 2 * d if whole else compressor(d, g.ratio, True)))
        total += g.layers * per_layer
    return total


def hyper_connection_params(arch: ModelArch) -> int:
    """DeepSeek-V4's manifold-constrained hyper-connections, all layers, in parameters (0 at
    hc_mult 1): per sub-layer a map from the hc_mult streams to (2 + hc_mult) x hc_mult
    mixing weights with its bias, and one more map before the head."""
    n = arch.hc_mult
    if n == 1:
        return 0
    mix = (2 + n) * n
    per_layer = 2 * (mix * n * arch.hidden + mix + 3)
    return arch.layers * per_layer + n * n * arch.hidden + n + 1


def latent_projection_params(arch: ModelArch) -> int:
    """LatentMoE's down (hidden -> latent) and up (latent -> hidden) projections of one MoE
    layer, in parameters; 0 without a latent."""
    return 2 * arch.hidden * arch.moe_latent if arch.moe_latent else 0


def param_counts(arch: ModelArch) -> ParamCounts:
    """All parameters of ``arch`` by component."""
    h, L = arch.hidden, arch.layers
    embedding = arch.vocab * h + (arch.max_seq_len * h if arch.position == "learned" else 0)
    output = 0 if arch.tied_embeddings else arch.vocab * h
    attention = (arch.banded_layers * attention_params_per_layer(arch)
                 + arch.global_layers * attention_params_per_layer(arch, global_layer=True)
                 + arch.linear_attention_layers * linear_attention_params_per_layer(arch)
                 + arch.mamba_layers * mamba_params_per_layer(arch)
                 + compression_params(arch) + hyper_connection_params(arch))
    moe_layers = arch.moe_layers
    dense_layers = arch.n_ffn_layers - moe_layers
    dense_mlp = dense_layers * mlp_params(arch, arch.ffn_hidden)
    experts = shared = router = 0
    if arch.is_moe:
        f_e = arch.expert_ffn_hidden or arch.ffn_hidden
        experts = moe_layers * arch.experts * mlp_params(arch, f_e, arch.expert_width)
        shared = moe_layers * (arch.shared_experts * mlp_params(arch, f_e)
                               + latent_projection_params(arch))
        router = moe_layers * arch.experts * h
    # A pre-norm per mixer and per FFN (two per layer), and the final one.
    norms = (L + arch.n_ffn_layers) * _norm_params(arch) + _norm_params(arch)
    return ParamCounts(embedding, output, attention, dense_mlp, experts, shared, router, norms)


def total_params(arch: ModelArch) -> int:
    """Every parameter stored, in parameters."""
    return param_counts(arch).total


def active_params(arch: ModelArch) -> int:
    """Parameters one token touches: MoE counts top_k routed experts, not all of them."""
    c = param_counts(arch)
    if not arch.is_moe:
        return c.total
    return c.total - c.experts + c.experts * arch.top_k // arch.experts


def matmul_params(arch: ModelArch, active: bool = True) -> int:
    """Parameters that take part in a matrix multiply per token: everything but the input
    embedding lookup and norms (the LM head does multiply, tied or not)."""
    c = param_counts(arch)
    experts = c.experts * arch.top_k // arch.experts if (active and arch.is_moe) else c.experts
    head = arch.vocab * arch.hidden
    return c.attention + c.dense_mlp + experts + c.shared_experts + c.router + head
