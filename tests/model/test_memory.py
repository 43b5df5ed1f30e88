from __future__ import annotations

import pytest

from clusterwright.catalog.registry import Catalog
from clusterwright.model.memory import (
    activation_bytes_per_layer,
    inference_memory,
    kv_cache_bytes,
    kv_cache_bytes_per_token,
    min_gpus_for_bytes,
    optimizer_bytes_per_param,
    state_bytes,
    training_memory,
)
from clusterwright.model.params import total_params
from clusterwright.spec.parallel import ParallelConfig
from tests.conftest import gpt


def test_mixed_precision_adam_is_16_bytes_per_parameter() -> None:
    # ZeRO paper section 3.1: 2 (fp16 weights) + 2 (grads) + 12 (fp32 master, m, v)
    st = state_bytes(1e9, 0, ParallelConfig())
    assert st.total == pytest.approx(16e9)
    assert optimizer_bytes_per_param("adam", "bf16") == 12
    assert optimizer_bytes_per_param("adam", "fp32") == 8
    assert optimizer_bytes_per_param("sgd", "bf16") == 8


def test_megatron_fp32_main_grads_make_18_bytes() -> None:
    assert state_bytes(1e9, 0, ParallelConfig(), "fp16", "fp32").total == pytest.approx(18e9)


@pytest.mark.parametrize(
    ("stage", "w", "g", "o"),
    [(0, 1, 1, 1), (1, 1, 1, 8), (2, 1, 8, 8), (3, 8, 8, 8)],
)
def test_zero_stages_shard_progressively_over_dp(stage: int, w: int, g: int, o: int) -> None:
    base = state_bytes(1e9, 0, ParallelConfig(dp=8))
    st = state_bytes(1e9, 0, ParallelConfig(dp=8, zero_stage=stage))  # type: ignore[arg-type]
    assert base.weights / st.weights == pytest.approx(w)
    assert base.gradients / st.gradients == pytest.approx(g)
    assert base.optimizer / st.optimizer == pytest.approx(o)


def test_experts_shard_over_ep_and_their_smaller_dp_group() -> None:
    par = ParallelConfig(dp=8, ep=4, zero_stage=1)
    st = state_bytes(0, 8e9, par)
    # weights: 8e9 / ep 4 = 2e9 params x 2 B; optimizer sharded over dp/ep = 2
    assert st.weights == pytest.approx(4e9)
    assert st.optimizer == pytest.approx(12 * 2e9 / 2)


def test_korthikanti_table2_forms() -> None:
    arch = gpt()
    s, b, h, a, t = 2048, 1, arch.hidden, arch.heads, 8
    sbh = s * b * h
    kw = {"flash_attention": False, "dropout": True}
    none_tp = activation_bytes_per_layer(arch, s, b, t, False, "none", **kw)
    assert none_tp == pytest.approx(sbh * (10 + 24 / t + 5 * a * s / (h * t)))
    sp = activation_bytes_per_layer(arch, s, b, t, True, "none", **kw)
    assert sp == pytest.approx(sbh / t * (34 + 5 * a * s / h))
    seqsel = activation_bytes_per_layer(arch, s, b, t, True, "selective", **kw)
    assert seqsel == pytest.approx(34 * sbh / t)
    full = activation_bytes_per_layer(arch, s, b, t, False, "full", **kw)
    assert full == pytest.approx(2 * sbh)


def test_flash_attention_removes_the_quadratic_term() -> None:
    arch = gpt()
    short = activation_bytes_per_layer(arch, 2048, 1, 8, True, "none")
    long = activation_bytes_per_layer(arch, 8192, 1, 8, True, "none")
    assert long / short == pytest.approx(4.0, rel=0.01)  # linear in s
    no_flash = activation_bytes_per_layer(arch, 8192, 1, 8, True, "none", flash_attention=False)
    assert no_flash > 2 * long


def test_context_parallel_divides_sequence() -> None:
    arch = gpt()
    one = activation_bytes_per_layer(arch, 8192, 1, 8, True, "selective")
    four = activation_bytes_per_layer(arch, 8192, 1, 8, True, "selective", cp=4)
    assert one / four == pytest.approx(4.0, rel=0.01)


def test_llama70b_uneven_interleaved_split_holds_two_full_chunks_on_the_first_rank(
    catalog: Catalog,
) -> None:
    # Llama-3.1-70B, tp8 pp3 dp4, 2 virtual stages, ZeRO-1, SP, s=8192, b=1, 16 micro-batches,
    # bf16 + Adam, FlashAttention, no dropout. 80 layers in 6 chunks of ceil(80/6) = 14 (the
    # last chunk holds 10): rank 0 keeps chunks 0 and 3, 28 layers (not ceil(80/3) = 27).
    arch = catalog.model("llama-3.1-70b")
    par = ParallelConfig(tp=8, pp=3, dp=4, virtual_stages=2, micro_batch=1, global_batch=64,
                         sequence_parallel=True, zero_stage=1)
    m = training_memory(arch, par, 8192, reserve_bytes=2e9)
    h, f, s = 8192, 28672, 8192
    attn = h * (h + 2 * 8 * 128) + h * h  # QKV (GQA, 8 KV heads of 128) and output projection
    layer = attn + 3 * h * f + 2 * h + h / 80  # SwiGLU MLP, two norms, the final norm's share
    params = (28 * layer + 128256 * h) / 8  # rank 0: 28 layers + the embedding, over tp
    assert m.weights == pytest.approx(2 * params, rel=1e-9)
    assert m.gradients == pytest.approx(2 * params, rel=1e-9)
    assert m.optimizer == pytest.approx(12 * params / 4, rel=1e-9)  # ZeRO-1 over dp=4
    # Per layer and micro-batch, bytes / s: norms' outputs and residuals 8h split by SP,
    # QKV 2(h + 2*1024), attention output 2h, softmax statistics 4*64, SwiGLU 6f; over tp.
    per_layer = s * (8 * h / 8 + (2 * (h + 2048) + 2 * h + 4 * 64 + 6 * f) / 8)
    assert m.in_flight_micro_batches == pytest.approx(3 * (1 + 2 / 6))  # 4.0
    assert m.activations == pytest.approx(per_layer * 28 * 4.0, rel=1e-9)
    assert m.stage == "first"
    assert m.total / 1e9 == pytest.approx(55.39, abs=0.01)


def test_first_stage_of_pipeline_holds_most_activations() -> None:
    arch = gpt(96, 12288, 96)
    par = ParallelConfig(tp=8, pp=8, global_batch=64)
    m = training_memory(arch, par, 2048, flash_attention=False, dropout=True)
    assert m.stage == "first"
    assert m.embedding_states > 0


def test_moe_layer_activations_grow_with_top_k(catalog: Catalog) -> None:
    m = catalog.model("mixtral-8x7b")
    top2 = activation_bytes_per_layer(m, 4096, 1, moe_layer=True)
    top1 = activation_bytes_per_layer(m.model_copy(update={"top_k": 1}), 4096, 1, moe_layer=True)
    assert top2 > top1


def test_kv_cache_per_token_llama2_70b(catalog: Catalog) -> None:
    # 2 (K, V) x 80 layers x 8 KV heads x 128 dims x 2 bytes
    assert kv_cache_bytes_per_token(catalog.model("llama-2-70b")) == 327_680
    assert kv_cache_bytes_per_token(catalog.model("llama-2-70b"), "fp8") == 163_840


def test_kv_cache_mla_caches_the_latent(catalog: Catalog) -> None:
    ds = catalog.model("deepseek-v3")
    assert kv_cache_bytes_per_token(ds) == 61 * (512 + 64) * 2


def test_kv_heads_replicate_beyond_tp_equal_kv_heads(catalog: Catalog) -> None:
    m = catalog.model("llama-2-70b")
    full = kv_cache_bytes(m, 4, 4096)
    assert kv_cache_bytes(m, 4, 4096, tp=8) == pytest.approx(full / 8)
    assert kv_cache_bytes(m, 4, 4096, tp=16) == pytest.approx(full / 8)


def test_serving_gpt3_175b_fp16_needs_five_80gb_gpus_for_weights(catalog: Catalog) -> None:
    m = catalog.model("gpt3-175b")
    w = total_params(m) * 2
    assert w / 1e9 == pytest.approx(349.2, rel=0.002)
    assert min_gpus_for_bytes(w, 80e9) == 5


def test_inference_memory_splits_weights_over_tp_and_pp(catalog: Catalog) -> None:
    m = catalog.model("llama-3.1-70b")
    one = inference_memory(m, 1, 1024)
    eight = inference_memory(m, 1, 1024, tp=4, pp=2)
    assert one.weights / eight.weights == pytest.approx(8)


def test_min_gpus_rounds_up() -> None:
    assert min_gpus_for_bytes(161e9, 80e9) == 3
    assert min_gpus_for_bytes(1, 80e9) == 1
    with pytest.raises(ValueError):
        min_gpus_for_bytes(1, 0)


def test_linear_attention_layers_keep_a_fixed_state_and_no_kv_cache(catalog: Catalog) -> None:
    from clusterwright.model.memory import recurrent_state_bytes_per_sequence

    m = catalog.model("qwen3.5-397b-a17b")  # 15 full-attention layers of 45 + 15
    # K and V of 2 heads of 256 in the 15 full-attention layers only
    assert kv_cache_bytes_per_token(m, "bf16") == 15 * 2 * 2 * 256 * 2
    # Each DeltaNet layer: 64 value heads x 128 x 128 in FP32, and the convolution's last 3
    # inputs of q, k and v (2 x 2,048 + 8,192 wide) in 16 bits
    per_layer = 64 * 128 * 128 * 4 + 12288 * 3 * 2
    assert recurrent_state_bytes_per_sequence(m) == 45 * per_layer
    assert recurrent_state_bytes_per_sequence(catalog.model("llama-3.1-8b")) == 0.0


def test_mamba2_layers_keep_a_state_and_no_kv_cache(catalog: Catalog) -> None:
    from clusterwright.model.memory import recurrent_state_bytes_per_sequence

    m = catalog.model("nemotron-h-56b")  # 10 attention mixers of 64, 54 Mamba-2
    assert kv_cache_bytes_per_token(m, "bf16") == 10 * 2 * 8 * 128 * 2
    # 256 heads x 64 x a 256-wide state in FP32, and the convolution's last 3 inputs of x, B
    # and C (16,384 + 2 x 8 x 256 wide) in 16 bits, per Mamba-2 layer
    per_layer = 256 * 64 * 256 * 4 + (16384 + 4096) * 3 * 2
    assert recurrent_state_bytes_per_sequence(m) == 54 * per_layer


def test_ffn_activations_follow_the_ffn_blocks_per_mixer(catalog: Catalog) -> None:
    """A model with 80 FFN blocks over 49 attention mixers keeps 80/49 FFNs' activations per
    layer, as its step time charges them."""
    m = catalog.model("llama-3.3-nemotron-super-49b")
    one = m.model_copy(update={"ffn_layers": None})
    nofn = m.model_copy(update={"ffn_layers": None, "ffn_hidden": 1})
    per = activation_bytes_per_layer(m, 4096, 1, 8, True)
    base, mixer = activation_bytes_per_layer(one, 4096, 1, 8, True), \
        activation_bytes_per_layer(nofn, 4096, 1, 8, True)
    assert per - mixer == pytest.approx((base - mixer) * 80 / 49, rel=1e-3)


def test_gemma4_kv_cache_keeps_each_layer_types_heads(catalog: Catalog) -> None:
    """Gemma 4 31B caches 16 KV heads of 256 on its 50 banded layers and 4 of 512 on its 10
    global ones (K and V both, though one projection makes them); at TP 8 the banded heads
    split 8 ways, the global ones only 4."""
    from clusterwright.model.memory import kv_cache_bytes_per_token_split

    m = catalog.model("gemma-4-31b")
    whole, banded = kv_cache_bytes_per_token_split(m, "bf16")
    assert whole == 10 * 2 * 4 * 512 * 2 and banded == 50 * 2 * 16 * 256 * 2
    assert kv_cache_bytes_per_token(m, "bf16") == whole + banded
    assert kv_cache_bytes(m, 1, 1, "bf16", tp=8) == pytest.approx(whole / 4 + banded / 8)


def test_deepseek_v4_pro_keeps_the_papers_kv_cache_at_a_million_tokens(
        catalog: Catalog) -> None:
    """DeepSeek-V4 (arXiv 2606.19348): a 1M-token sequence of V4-Pro keeps 9.62 GiB of KV
    cache in BF16: its 30 sparse layers one 512-wide entry and one 128-wide indexer key per
    4 tokens, its 31 heavily compressed layers one entry per 128, each layer its last 128
    tokens."""
    m = catalog.model("deepseek-v4-pro")
    got = kv_cache_bytes(m, 1, 2**20, "bf16") / 2**30
    assert got == pytest.approx(9.62, abs=0.01)
    # DeepSeek-V3.2's dense latent at the same length, 8.7x less compressed by the paper's
    # count (its indexer keys beside it, not modelled here: 7.1x)
    assert kv_cache_bytes(catalog.model("deepseek-v3.2"), 1, 2**20, "bf16") / 2**30 > 7 * got
