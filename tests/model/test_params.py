from __future__ import annotations

import pytest

from clusterwright.catalog.registry import Catalog
from clusterwright.catalog.schema import ModelArch
from clusterwright.model.params import active_params, matmul_params, param_counts, total_params


def _models(catalog: Catalog) -> list[ModelArch]:
    return catalog.all("models")


def test_every_catalog_model_matches_its_published_count_within_1pct(catalog: Catalog) -> None:
    checked = 0
    for m in _models(catalog):
        assert m.published_params is not None, f"{m.id} has no published_params"
        err = total_params(m) / m.published_params - 1
        assert abs(err) < m.published_params_tolerance, (
            f"{m.id}: derived {total_params(m):.4g} vs {m.published_params:.4g}")
        checked += 1
    assert checked >= 16


def test_moe_active_params_match_published_within_2pct(catalog: Catalog) -> None:
    # Published active counts are rounded (13B, 39B, 37B), hence 2 %.
    for m in _models(catalog):
        if m.published_active_params is not None:
            assert active_params(m) == pytest.approx(m.published_active_params, rel=0.02), m.id


def test_dense_model_active_equals_total(catalog: Catalog) -> None:
    m = catalog.model("llama-3.1-70b")
    assert active_params(m) == total_params(m)


def test_llama2_7b_count_is_exact(catalog: Catalog) -> None:
    # 32 x (4 h^2 + 3 h f + 2 h) + 2 V h + h, from the released checkpoint
    assert total_params(catalog.model("llama-2-7b")) == 6_738_415_616


def test_gqa_shrinks_kv_projections(catalog: Catalog) -> None:
    m = catalog.model("llama-2-70b")
    mha = m.model_copy(update={"kv_heads": None})
    h, L = m.hidden, m.layers
    # K and V lose 7/8 of their width with 8 KV heads out of 64
    assert param_counts(mha).attention - param_counts(m).attention == L * 2 * h * (h - h // 8)


def test_tied_embeddings_have_no_separate_head(catalog: Catalog) -> None:
    m = catalog.model("gpt3-175b")
    assert param_counts(m).output == 0
    untied = m.model_copy(update={"tied_embeddings": False})
    assert total_params(untied) - total_params(m) == m.vocab * m.hidden


def test_mla_latent_attention_is_smaller_than_mha(catalog: Catalog) -> None:
    ds = catalog.model("deepseek-v3")
    c = param_counts(ds)
    mha_equiv = ds.layers * 4 * ds.hidden * ds.heads * 128
    assert c.attention < mha_equiv


def test_matmul_params_include_the_lm_head_even_when_tied(catalog: Catalog) -> None:
    m = catalog.model("gpt3-175b")
    c = param_counts(m)
    assert matmul_params(m) == c.attention + c.dense_mlp + m.vocab * m.hidden


def test_gated_deltanet_and_gated_attention_layers_count_their_projections(
        catalog: Catalog) -> None:
    # Qwen3.5-397B-A17B's config.json: 45 Gated DeltaNet layers (16 key / 64 value heads of
    # 128: in_proj_qkvz 4096 x 20480, in_proj_ba 4096 x 128, conv1d 12288 x 4, A_log and
    # dt_bias 64 each, a 128-wide gated norm, out_proj 8192 x 4096) and 15 gated attention
    # layers (q_proj 4096 x 2 x 8192 with the gate, k and v 4096 x 512, o_proj 8192 x 4096).
    from clusterwright.model.params import (
        attention_params_per_layer,
        linear_attention_params_per_layer,
    )

    m = catalog.model("qwen3.5-397b-a17b")
    delta = 4096 * 20480 + 4096 * 128 + 12288 * 4 + 2 * 64 + 128 + 8192 * 4096
    gated = 4096 * 16384 + 2 * 4096 * 512 + 8192 * 4096
    assert linear_attention_params_per_layer(m) == delta
    assert attention_params_per_layer(m) == gated
    assert param_counts(m).attention == 45 * delta + 15 * gated
    plain = m.model_copy(update={"linear_attention_layers": 0, "linear_key_heads": None,
                                 "linear_value_heads": None, "linear_key_head_dim": None,
                                 "linear_value_head_dim": None, "linear_conv_kernel": None,
                                 "attention_output_gate": False})
    assert linear_attention_params_per_layer(plain) == 0
    assert param_counts(plain).attention == 60 * (gated - 4096 * 8192)


def test_mamba2_mixers_and_ffn_blocks_count_from_the_config(catalog: Catalog) -> None:
    # Nemotron 3 Nano's config.json: 23 Mamba-2 mixers (64 heads of 64, state 128, 8 groups,
    # 4-tap convolution with bias), 6 attention mixers, 23 MoE FFN blocks (no dense FFN).
    from clusterwright.model.params import mamba_params_per_layer

    m = catalog.model("nemotron-3-nano-30b-a3b")
    inner, bc = 64 * 64, 2 * 8 * 128
    in_proj = 2688 * (2 * inner + bc + 64)
    conv = (inner + bc) * (4 + 1)
    assert mamba_params_per_layer(m) == in_proj + conv + 3 * 64 + inner + inner * 2688
    c = param_counts(m)
    assert c.dense_mlp == 0
    assert c.experts == 23 * 128 * 2 * 2688 * 1856  # squared ReLU: up and down only
    assert (m.layers, m.full_attention_layers, m.moe_layers) == (29, 6, 23)
    # The derived count lands on the published 31.6B (the general check holds it to 1 %).
    assert total_params(m) == pytest.approx(31.6e9, rel=0.002)


def test_latent_moe_experts_sit_in_the_latent_and_its_projections_count_once(
        catalog: Catalog) -> None:
    # Nemotron 3 Super's config.json: 40 MoE blocks of 512 experts (2,688 wide, squared
    # ReLU) in a 1,024-wide latent, a shared expert of 5,376 at the hidden width 4,096, and
    # per block a down (4,096 x 1,024) and an up (1,024 x 4,096) latent projection.
    m = catalog.model("nemotron-3-super-120b-a12b")
    c = param_counts(m)
    assert m.expert_width == 1024
    assert c.experts == 40 * 512 * 2 * 1024 * 2688
    assert c.shared_experts == 40 * (2 * 4096 * 5376 + 2 * 4096 * 1024)
    assert c.router == 40 * 512 * 4096
    # 120.67B derived without the MTP layer, against the published 120B total
    assert total_params(m) == pytest.approx(120.67e9, rel=1e-4)
    # Every token of an MoE block passes the projections: they count as active.
    wide = m.model_copy(update={"moe_latent": None})
    assert param_counts(wide).experts == 4 * c.experts
    assert active_params(m) - c.experts * 22 // 512 == (
        active_params(wide) - param_counts(wide).experts * 22 // 512 + 40 * 2 * 4096 * 1024)


def test_a_latent_needs_experts() -> None:
    with pytest.raises(ValueError, match="moe_latent"):
        ModelArch(id="x", name="x", source="a test shape", layers=2, hidden=64, heads=4,
                  ffn_hidden=128, vocab=100, max_seq_len=128, moe_latent=16)


def test_a_pruned_model_counts_its_attention_blocks_and_every_ffn(catalog: Catalog) -> None:
    # Llama 3.3 Nemotron Super 49B's config.json: 49 of 80 blocks keep attention (64 Q / 8 KV
    # heads of 128), all 80 have a SwiGLU FFN, their widths summing to 1,642,496.
    m = catalog.model("llama-3.3-nemotron-super-49b")
    c = param_counts(m)
    assert (m.full_attention_layers, m.n_ffn_layers) == (49, 80)
    assert c.attention == 49 * (2 * 8192 * 8192 + 2 * 8192 * 1024)
    assert c.dense_mlp == pytest.approx(3 * 8192 * 1_642_496, rel=1e-5)  # at the mean width
    assert c.norms == (49 + 80 + 1) * 8192


def test_gemma4_global_layers_have_their_own_heads_and_one_kv_projection(
        catalog: Catalog) -> None:
    # Gemma 4 31B's config.json: 50 banded layers of 32 Q / 16 KV heads of 256, 10 global
    # layers of 32 Q / 4 KV heads of 512 whose V is read from K's projection.
    from clusterwright.model.params import attention_params_per_layer

    m = catalog.model("gemma-4-31b")
    h = 5376
    assert attention_params_per_layer(m) == h * 8192 + 2 * h * 4096 + 8192 * h
    assert attention_params_per_layer(m, global_layer=True) == h * 16384 + h * 2048 + 16384 * h
    assert (m.banded_layers, m.global_layers) == (50, 10)
    # 30.7B published for the text model
    assert total_params(m) == pytest.approx(30.7e9, rel=0.001)


def test_global_layer_shapes_need_banded_layers_beside_them() -> None:
    with pytest.raises(ValueError, match="global_head_dim"):
        ModelArch(id="x", name="x", source="a test shape", layers=4, hidden=64, heads=4,
                  ffn_hidden=128, vocab=100, max_seq_len=128, global_head_dim=32)


def test_deepseek_v4_counts_its_shared_head_grouped_output_and_compressors(
        catalog: Catalog) -> None:
    # DeepSeek-V4-Flash's config.json: wq_a 4,096 x 1,024, wq_b 1,024 x 64 x 512, wkv
    # 4,096 x 512 (one shared head, no up-projection), wo_a 1,024 x 64 x 512 over 8 groups,
    # wo_b 8 x 1,024 x 4,096; the paper's 284B total (arXiv 2606.19348).
    from clusterwright.model.params import attention_params_per_layer, compression_params

    m = catalog.model("deepseek-v4-flash")
    q = 4096 * 1024 + 1024 + 1024 * 64 * 512
    kv = 4096 * 512 + 512 + 64  # the shared head, its norm, the attention sinks
    o = 1024 * 64 * 512 + 8 * 1024 * 4096
    assert attention_params_per_layer(m) == q + kv + o
    # 21 sparse layers: a compressor with overlapping windows (2 x 512 wide) and an
    # indexer (64 heads of 128 from the q latent, its weights, its own compressor); 20
    # heavily compressed layers: a compressor 512 wide
    csa = (2 * 4096 * 1024 + 4 * 1024 + 512
           + 1024 * 64 * 128 + 4096 * 64 + 2 * 4096 * 256 + 4 * 256 + 128)
    hca = 2 * 4096 * 512 + 128 * 512 + 512
    assert compression_params(m) == 21 * csa + 20 * hca
    assert total_params(m) == pytest.approx(284e9, rel=0.002)
    assert total_params(catalog.model("deepseek-v4-pro")) == pytest.approx(1.573e12, rel=0.001)


def test_deepseek_sparse_attention_counts_its_indexer(catalog: Catalog) -> None:
    # GLM-5's config.json: index_n_heads 32, index_head_dim 128, q_lora_rank 2048, hidden
    # 6144; the indexer's wq_b (2048 x 32 x 128), wk (6144 x 128), weights_proj (6144 x 32)
    # and k_norm (a LayerNorm of 128) on every one of its 78 layers, no compressor at ratio 1
    from clusterwright.model.params import compression_params

    glm = catalog.model("glm-5")
    per_layer = 2048 * 32 * 128 + 6144 * 128 + 6144 * 32 + 2 * 128
    assert compression_params(glm) == 78 * per_layer
    assert total_params(glm) == pytest.approx(744e9, rel=0.001)
    v32, v3 = catalog.model("deepseek-v3.2"), catalog.model("deepseek-v3")
    # DeepSeek-V3.2 is V3 and its indexer (64 heads of 128 from the 1,536-wide q latent)
    assert total_params(v32) - total_params(v3) == 61 * (1536 * 64 * 128 + 7168 * 128
                                                         + 7168 * 64 + 2 * 128)


def test_deepseek_v4_shapes_are_checked() -> None:
    base = dict(id="x", name="x", source="a test shape", layers=4, hidden=64, heads=4,
                ffn_hidden=128, vocab=100, max_seq_len=128, q_lora_rank=32,
                kv_lora_rank=24, qk_nope_head_dim=24, qk_rope_head_dim=8, v_head_dim=32)
    ModelArch(**base, mla_shared_kv=True)
    with pytest.raises(ValueError, match="v_head_dim"):
        ModelArch(**{**base, "v_head_dim": 24}, mla_shared_kv=True)
    with pytest.raises(ValueError, match="sliding_window"):
        ModelArch(**base, compressed_attention=[{"layers": 2, "ratio": 4}])
    # Ratio 1 (DeepSeek Sparse Attention): no window needed, but an indexer with its top-k
    sparse = ModelArch(**base, index_heads=2, index_head_dim=8,
                       compressed_attention=[{"layers": 4, "ratio": 1, "topk": 16}])
    assert (sparse.indexed_layers, sparse.windowed_compressed_layers) == (4, 0)
    with pytest.raises(ValueError, match="without topk"):
        ModelArch(**base, compressed_attention=[{"layers": 2, "ratio": 1}])
    with pytest.raises(ValueError, match="greater than 0"):
        ModelArch(**base, compressed_attention=[{"layers": 2, "ratio": 0, "topk": 16}])
    with pytest.raises(ValueError, match="index_heads"):
        ModelArch(**base, sliding_window=8, compressed_attention=[
            {"layers": 2, "ratio": 4, "topk": 16}])
    with pytest.raises(ValueError, match="covers 5 layers"):
        ModelArch(**base, sliding_window=8, compressed_attention=[{"layers": 5, "ratio": 4}])
    with pytest.raises(ValueError, match="MLA models"):
        ModelArch(id="x", name="x", source="a test shape", layers=4, hidden=64, heads=4,
                  ffn_hidden=128, vocab=100, max_seq_len=128, sliding_window=8,
                  compressed_attention=[{"layers": 2, "ratio": 4}])
    with pytest.raises(ValueError, match="o_lora_rank and o_groups"):
        ModelArch(**base, o_lora_rank=16)
