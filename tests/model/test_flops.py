from __future__ import annotations

import numpy as np
import pytest

from clusterwright.catalog.registry import Catalog
from clusterwright.catalog.schema import ModelArch
from clusterwright.model.flops import (
    attention_flops_per_token,
    finetune_flops_per_token,
    forward_flops_per_token,
    megatron_iteration_flops,
    six_n_d,
    training_flops,
    training_flops_per_token,
    utilization,
)
from clusterwright.model.params import active_params
from tests.conftest import gpt


def _gpt(layers: int, hidden: int, heads: int) -> ModelArch:
    return gpt(layers, hidden, heads, bias=False)


@pytest.mark.parametrize("shape", [(24, 2304, 24), (96, 12288, 96), (128, 25600, 160)])
def test_matches_megatron_formula_without_recompute(shape: tuple[int, int, int]) -> None:
    arch = _gpt(*shape)
    B, s = 8, 2048
    ours = B * s * training_flops_per_token(arch, s)
    megatron = megatron_iteration_flops(B, s, arch.layers, arch.hidden, arch.vocab, False)
    # differences: position embeddings and norms are not multiplies; < 0.1 %
    assert float(ours) == pytest.approx(float(megatron), rel=1e-3)


def test_full_recompute_hfu_matches_megatron_96_formula() -> None:
    arch = _gpt(96, 12288, 96)
    B, s = 4, 2048
    hw = B * s * training_flops_per_token(arch, s, recompute="full", hardware=True)
    megatron = megatron_iteration_flops(B, s, 96, 12288, 51200, True)
    assert float(hw) == pytest.approx(float(megatron), rel=1e-3)


def test_hfu_exceeds_mfu_only_with_recompute(catalog: Catalog) -> None:
    m = catalog.model("llama-3-8b")
    base = training_flops_per_token(m, 4096)
    assert training_flops_per_token(m, 4096, "none", hardware=True) == base
    sel = training_flops_per_token(m, 4096, "selective", hardware=True)
    full = training_flops_per_token(m, 4096, "full", hardware=True)
    assert base < sel < full
    # 4/3 less the LM head, which full recompute does not rerun
    assert 1.28 < float(full / base) < 4 / 3


def test_six_n_d_is_close_to_full_count_at_short_context(catalog: Catalog) -> None:
    m = catalog.model("llama-3.1-70b")
    D = 15e12
    full = training_flops(m, D, 2048)
    approx = six_n_d(active_params(m), D)
    assert float(full / approx) == pytest.approx(1.0, abs=0.1)
    # Llama 3 405B: 3.8e25 FLOPs on 15.6T tokens (Llama 3 paper section 3; S-grade) is 6ND;
    # the attention term at 8K context adds a few percent on top.
    big = catalog.model("llama-3.1-405b")
    assert float(six_n_d(active_params(big), 15.6e12)) == pytest.approx(3.8e25, rel=0.01)
    causal = float(training_flops(big, 15.6e12, 8192, causal=True))
    assert 1.0 < causal / 3.8e25 < 1.08


def test_moe_counts_active_experts_only(catalog: Catalog) -> None:
    m = catalog.model("mixtral-8x7b")
    per_token = float(forward_flops_per_token(m, 1))
    assert per_token < 2.2 * 12.9e9 + 1e9
    assert per_token > 2 * 12.0e9


def test_causal_attention_halves_the_attention_term(catalog: Catalog) -> None:
    m = catalog.model("llama-3-8b")
    s = 32768
    full = forward_flops_per_token(m, s, causal=False)
    causal = forward_flops_per_token(m, s, causal=True)
    base = forward_flops_per_token(m, 0)
    assert float((causal - base) / (full - base)) == pytest.approx(0.5, rel=1e-3)


def test_vectorized_over_sequence_lengths(catalog: Catalog) -> None:
    m = catalog.model("llama-3-8b")
    seqs = np.array([1024, 2048, 4096])
    out = training_flops_per_token(m, seqs)
    assert out.shape == (3,)
    assert np.all(np.diff(out) > 0)


def test_lora_costs_two_thirds_of_full_finetune_in_the_gemms(catalog: Catalog) -> None:
    m = catalog.model("llama-3.1-8b")
    ratio = float(finetune_flops_per_token(m, 4096, "lora") / finetune_flops_per_token(m, 4096))
    # GEMMs 2/3 (no weight gradients); the attention core keeps its 2x backward, so the
    # whole step lands a little above 2/3 at 4,096 tokens, and the adapters add under 1 %.
    assert 2 / 3 < ratio < 0.75
    short = float(finetune_flops_per_token(m, 16, "lora") / finetune_flops_per_token(m, 16))
    assert short == pytest.approx(2 / 3, rel=0.01)


def test_utilization_is_flops_over_time_gpus_peak() -> None:
    assert float(utilization(1e15, 2.0, 4, 1e15)) == pytest.approx(0.125)


def test_linear_attention_costs_the_same_per_token_at_any_context(catalog: Catalog) -> None:
    from clusterwright.model.flops import (
        attention_flops_per_token,
        recurrent_flops_per_token,
    )

    m = catalog.model("qwen3.5-397b-a17b")
    delta = recurrent_flops_per_token(m)
    assert delta == 45 * 6 * 64 * 128 * 128
    # Softmax attention grows with the context in the 15 full-attention layers only.
    grow = float(attention_flops_per_token(m, 2000) - attention_flops_per_token(m, 1000))
    assert grow == 2 * 15 * (32 * 256 * 2) * 1000
    assert float(attention_flops_per_token(m, 0)) == delta


def test_banded_layers_count_their_window_only(catalog: Catalog) -> None:
    """Gemma 4 31B's 50 banded layers (heads of 256) attend at most 1,024 tokens, its 10
    global ones (heads of 512) the whole context."""
    m = catalog.model("gemma-4-31b")
    got = float(attention_flops_per_token(m, 8192.0))
    want = 2.0 * (10 * 2 * 32 * 512 * 8192 + 50 * 2 * 32 * 256 * 1024)
    assert got == pytest.approx(want)
    assert float(attention_flops_per_token(m, 512.0)) == pytest.approx(
        2.0 * (10 * 2 * 32 * 512 + 50 * 2 * 32 * 256) * 512)
