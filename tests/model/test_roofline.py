from __future__ import annotations

import pytest

from clusterwright.catalog.registry import Catalog
from clusterwright.catalog.schema import Dtype
from clusterwright.model.roofline import decode, prefill, ridge_point, weight_bytes_touched


def test_h100_bf16_ridge_is_about_295_flop_per_byte(catalog: Catalog) -> None:
    assert ridge_point(catalog.gpu("h100-sxm"), Dtype.bf16) == pytest.approx(
        989e12 / 3.35e12, rel=0.01
    )


def test_decode_at_batch_one_is_memory_bound(catalog: Catalog) -> None:
    g, m = catalog.gpu("h100-sxm"), catalog.model("llama-3.1-8b")
    p = decode(m, g, Dtype.bf16, batch=1, context=1024)
    assert p.bound == "memory"
    assert p.intensity < 2.0  # ~1 FLOP per byte: every weight read once per token
    # time bound: weights / bandwidth ~ 16 GB / 3.35 TB/s ~ 4.8 ms
    assert p.time_s == pytest.approx(16.06e9 / 3.35e12, rel=0.05)


def test_long_prefill_is_compute_bound(catalog: Catalog) -> None:
    g, m = catalog.gpu("h100-sxm"), catalog.model("llama-3.1-8b")
    p = prefill(m, g, Dtype.bf16, batch=1, prompt=4096)
    assert p.bound == "compute"
    assert p.attainable_tflops == pytest.approx(989, rel=0.01)


def test_decode_intensity_grows_with_batch(catalog: Catalog) -> None:
    g, m = catalog.gpu("h100-sxm"), catalog.model("llama-3.1-70b")
    ai = [decode(m, g, Dtype.bf16, batch=b, context=512).intensity for b in (1, 8, 64)]
    assert ai[0] < ai[1] < ai[2]


def test_tp_divides_the_time_bound(catalog: Catalog) -> None:
    g, m = catalog.gpu("h100-sxm"), catalog.model("llama-3.1-70b")
    one = decode(m, g, Dtype.bf16, batch=1, context=512, tp=1).time_s
    four = decode(m, g, Dtype.bf16, batch=1, context=512, tp=4).time_s
    assert one / four == pytest.approx(4)


def test_moe_decode_reads_only_routed_experts(catalog: Catalog) -> None:
    m = catalog.model("mixtral-8x7b")
    one = weight_bytes_touched(m, 1, "bf16")
    many = weight_bytes_touched(m, 512, "bf16")
    assert one < 0.4 * many  # one token touches 2 of 8 experts
    assert many == pytest.approx(m.published_params * 2, rel=0.01)
