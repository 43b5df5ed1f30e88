from __future__ import annotations

import pytest

from clusterwright.catalog.registry import Catalog
from clusterwright.errors import InputError
from clusterwright.model.sizing import size_inference, size_training, tp_degrees
from clusterwright.spec.parallel import ParallelConfig


def test_training_7b_needs_two_80gb_gpus(catalog: Catalog) -> None:
    m = catalog.model("llama-2-7b")
    r = size_training(m, ParallelConfig(), 2048, [catalog.gpu("h100-sxm")])
    states = r.weights + r.gradients + r.optimizer
    assert states == pytest.approx(16 * 6.738e9, rel=0.001)
    assert r.fits[0].min_gpus == 2


def test_fp8_training_is_unsupported_on_ampere(catalog: Catalog) -> None:
    m = catalog.model("llama-2-7b")
    r = size_training(
        m,
        ParallelConfig(),
        2048,
        [catalog.gpu("a100-80gb-sxm"), catalog.gpu("h100-sxm")],
        precision="fp8",
    )
    by = {f.gpu: f for f in r.fits}
    assert not by["a100-80gb-sxm"].supported
    assert "fp8" in by["a100-80gb-sxm"].reason
    assert by["h100-sxm"].supported


def test_tp_degrees_divide_heads(catalog: Catalog) -> None:
    assert tp_degrees(catalog.model("llama-2-70b"), 64) == [1, 2, 4, 8, 16, 32, 64]
    assert tp_degrees(catalog.model("bloom-176b"), 64) == [1, 2, 4, 8, 16]


def test_serving_175b_fp16_fits_tp8_on_80gb(catalog: Catalog) -> None:
    m = catalog.model("gpt3-175b")
    r = size_inference(m, 1, 2048, [catalog.gpu("h100-sxm")], "fp16", reserve_bytes=1e9)
    f = r.fits[0]
    assert f.min_gpus >= 5
    assert f.min_gpus_layout == 8


def test_int4_weights_quarter_the_memory_and_keep_16bit_kv(catalog: Catalog) -> None:
    m = catalog.model("llama-2-70b")
    g = [catalog.gpu("a100-80gb-sxm")]
    bf16 = size_inference(m, 8, 4096, g, "bf16")
    int4 = size_inference(m, 8, 4096, g, "int4")
    assert bf16.weights / int4.weights == pytest.approx(4)
    assert int4.kv_cache == pytest.approx(bf16.kv_cache)
    assert int4.fits[0].min_gpus_layout == 1


def test_fp8_training_keeps_16bit_weights(catalog: Catalog) -> None:
    m = catalog.model("llama-2-7b")
    g = [catalog.gpu("h100-sxm")]
    bf16 = size_training(m, ParallelConfig(), 2048, g)
    fp8 = size_training(m, ParallelConfig(), 2048, g, precision="fp8")
    assert fp8.weights == bf16.weights
    assert fp8.gradients == bf16.gradients


def test_a_context_beyond_the_models_is_refused(catalog: Catalog) -> None:
    # A 10^20-token context answered a 1.3e16 GB KV cache.
    arch = catalog.model("llama-3.1-8b")
    with pytest.raises(InputError, match="131,072-token context") as info:
        size_inference(arch, 1, arch.max_seq_len + 1, catalog.all("gpus"))
    assert info.value.field == "context"
    assert size_inference(arch, 1, arch.max_seq_len, catalog.all("gpus")).kv_cache > 0
