"""The software entries' own checks (catalog/stacks.py): a refitted table that breaks its
shape is refused when the catalog loads, not when a model first reads it."""

from __future__ import annotations

import statistics
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from clusterwright.catalog.registry import ENTRY_TYPES, Catalog
from clusterwright.catalog.stacks import (
    CollectiveLib,
    EngineRegime,
    ServingEngine,
    Stack,
    StackFeatures,
)


def changed(entry: BaseModel, **fields: Any) -> dict[str, Any]:
    data = entry.model_dump()
    data.update(fields)
    return data


def test_a_gemm_curve_must_ascend(catalog: Catalog) -> None:
    st = catalog.stack_for_gpu("h100-sxm")
    Stack.model_validate(changed(st))  # the packaged entry passes
    flipped = list(reversed(st.gemm_efficiency))
    with pytest.raises(ValidationError, match="strictly ascending"):
        Stack.model_validate(changed(st, gemm_efficiency=flipped))


def test_the_tree_correction_table_has_24_points(catalog: Catalog) -> None:
    lib = catalog.collective_lib(catalog.stack_for_gpu("h100-sxm").collectives)
    table = dict(lib.tree_correction)
    table["simple"] = table["simple"][:23]
    with pytest.raises(ValidationError, match=r"tree_correction.simple: 24 points"):
        CollectiveLib.model_validate(changed(lib, tree_correction=table))


def test_a_feature_list_names_its_default_first() -> None:
    assert StackFeatures().schedules == ["1f1b"]
    with pytest.raises(ValidationError, match="at least one entry"):
        StackFeatures(schedules=[])


def test_every_software_kind_loads_with_its_model() -> None:
    assert ENTRY_TYPES["stacks"] is Stack
    assert ENTRY_TYPES["collective_libs"] is CollectiveLib


def test_mixed_chunks_need_chunked_prefill_and_end_prompts_first(catalog: Catalog) -> None:
    sg = catalog.serving_engine("sglang")
    assert sg.prefill_priority and sg.prompts_first
    mixed = ServingEngine.model_validate(changed(sg, mixed_chunk=True))
    assert not mixed.prompts_first
    with pytest.raises(ValidationError, match="mixed_chunk"):
        ServingEngine.model_validate(changed(sg, mixed_chunk=True, chunked_prefill=False))


def test_a_layouts_regime_names_tp_and_attention_dp_of_aggregated_rows() -> None:
    base = {"gpu": "b200", "mode": "agg", "family": "dense", "rows": 30, "ttft_mape": 0.2,
            "tpot_mape": 0.1}
    assert EngineRegime(**base, tp=8, attention_dp=1).tp == 8
    assert EngineRegime(**base).tp is None  # every layout pooled
    with pytest.raises(ValidationError, match="go together"):
        EngineRegime(**base, tp=8)
    with pytest.raises(ValidationError, match="aggregated"):
        EngineRegime(**{**base, "mode": "disagg"}, tp=8, attention_dp=1)
    with pytest.raises(ValidationError):
        EngineRegime(**base, tp=0, attention_dp=1)


def test_the_moe_floor_is_the_gpus_measured_one_else_their_median(catalog: Catalog) -> None:
    """``moe_layer_floor_s``: the listed GPU's value, an unlisted GPU the median of the listed
    ones, an engine without a table none; values are 0-1,000 us."""
    e = catalog.serving_engine("sglang")
    table = e.moe_layer_floor_us
    assert e.moe_layer_floor_s("h100-sxm") == pytest.approx(table["h100-sxm"] * 1e-6)
    values = sorted(table.values())
    mid = len(values) // 2
    median = values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2
    assert e.moe_layer_floor_s("mi300x") == pytest.approx(median * 1e-6)
    assert catalog.serving_engine("trtllm").moe_layer_floor_s("h100-sxm") == 0.0
    for bad in ({"h100-sxm": -1.0}, {"h100-sxm": 1e4}, {"h100-sxm": float("nan")},
                {"h100-sxm": "fast"}, [25.0]):
        with pytest.raises(ValidationError, match="moe_layer_floor_us"):
            ServingEngine.model_validate(changed(e, moe_layer_floor_us=bad))


def test_the_formats_measured_moe_speedup_is_read_per_gpu_and_format(catalog: Catalog) -> None:
    """``moe_speedup_over_bf16``: the listed GPU's value for the listed format, None for a GPU
    or format not listed and for an engine without measurements; values in (0, 8], narrow
    formats only, GPUs of the catalog."""
    e = catalog.serving_engine("sglang")
    assert e.moe_speedup_over_bf16("b200", "fp8_block") == e.moe_format_speedup["b200"][
        "fp8_block"]
    assert e.moe_speedup_over_bf16("b200", "fp8") is None
    assert e.moe_speedup_over_bf16("mi300x", "fp8_block") is None
    assert catalog.serving_engine("trtllm").moe_speedup_over_bf16("b200", "nvfp4") is None
    for bad in ({"b200": {"fp8_block": 0}}, {"b200": {"fp8_block": 9.0}},
                {"b200": {"bf16": 1.0}}, {"b200": {"fp8_block": float("nan")}},
                {"b200": [0.8]}, [0.8]):
        with pytest.raises(ValidationError, match="moe_format_speedup"):
            ServingEngine.model_validate(changed(e, moe_format_speedup=bad))


def test_the_sparse_floor_is_the_gpus_measured_one_else_their_median(catalog: Catalog) -> None:
    """``sparse_layer_floor_s`` reads its table as the MoE floor does: the listed GPU's, an
    unlisted one the median, values 0-1,000 us."""
    e = catalog.serving_engine("trtllm")
    table = e.sparse_layer_floor_us
    assert table and e.sparse_layer_floor_s("gb200") == pytest.approx(table["gb200"] * 1e-6)
    assert e.sparse_layer_floor_s("h200-sxm") == pytest.approx(
        statistics.median(table.values()) * 1e-6)
    for bad in ({"b200": -1.0}, {"b200": 1e4}, {"b200": "slow"}):
        with pytest.raises(ValidationError, match="sparse_layer_floor_us"):
            ServingEngine.model_validate(changed(e, sparse_layer_floor_us=bad))


def test_the_mla_kernel_rates_are_the_gpus_and_formats_measured(catalog: Catalog) -> None:
    """``mla_decode_rates``: the listed GPU and KV format's (FLOP/s, bytes/s); an unlisted GPU
    or format (SGLang's Hopper FP8, vLLM's every GPU) None; values positive and bounded."""
    e = catalog.serving_engine("sglang")
    tflops, tbs = e.mla_decode_kernel["b200"]["fp8"]
    assert e.mla_decode_rates("b200", "fp8") == (tflops * 1e12, tbs * 1e12)
    assert e.mla_decode_rates("h100-sxm", "fp8") is None
    assert e.mla_decode_rates("h100-sxm", "bf16") is not None
    assert e.mla_decode_rates("mi300x", "bf16") is None
    assert catalog.serving_engine("vllm").mla_decode_rates("b200", "fp8") is None
    for bad in ({"b200": {"fp8": [0, 6.0]}}, {"b200": {"fp8": [2000, -1]}},
                {"b200": {"fp4": [2000, 6.0]}}, {"b200": {"fp8": [2000]}},
                {"b200": {"fp8": [float("inf"), 6.0]}}):
        with pytest.raises(ValidationError, match="mla_decode_kernel"):
            ServingEngine.model_validate(changed(e, mla_decode_kernel=bad))


@pytest.mark.parametrize(("backend", "version", "covered"), [
    ("vllm", "0.19.0", True), ("vllm", "0.24.0", True), ("vllm", "0.26.0rc1", True),
    ("vllm", "v0.20.1", True), ("vllm", "nightly-5b8c", True),
    ("vllm", "0.9.2", False), ("vllm", "0.1.2", False), ("vllm", "1.0.0", False),
    ("sglang", "0.5.16", True), ("sglang", "0.6.0", True), ("sglang", "0.4.6", False),
    ("trtllm", "1.3.0rc23", True), ("trtllm", "0.8.1.post2", True), ("trtllm", "7.1", False),
])
def test_an_engine_covers_its_release_range(catalog: Catalog, backend: str, version: str,
                                            covered: bool) -> None:
    """AIConfigurator's current vLLM tables are 0.24 (0.26 on B60): a release range, not the
    "0.1" prefix the entry had (which took 0.1.2 of 2023 and refused 0.24.0)."""
    engines = [e for e in catalog.all("serving_engines") if e.backend == backend]
    assert any(e.covers(version) for e in engines) is covered


def test_an_engine_knows_the_first_release_past_its_families(catalog: Catalog) -> None:
    vllm = catalog.serving_engine("vllm")
    assert vllm.release_ceiling() == (1,)  # ">=0.10,<1" and the nightly prefix
    assert catalog.serving_engine("trtllm").release_ceiling() == (2,)  # "1." and "0."
    assert vllm.model_copy(update={"versions": ["nightly-"]}).release_ceiling() is None
    assert vllm.model_copy(update={"versions": [">=0.10,<0.12", ">=0.12,<3.1"]}
                           ).release_ceiling() == (3, 1)


@pytest.mark.parametrize("bad", [">=0.10", ">=0.10,<0.5", ">=x,<1", ">=0.10,<1.a"])
def test_a_malformed_release_range_is_refused(catalog: Catalog, bad: str) -> None:
    vllm = catalog.serving_engine("vllm")
    with pytest.raises(ValidationError, match="range of two release numbers"):
        ServingEngine.model_validate(changed(vllm, versions=[bad]))


def test_measured_releases_are_ranges(catalog: Catalog) -> None:
    vllm = catalog.serving_engine("vllm")
    assert vllm.at_version("0.24.0").release == "0.24.0" and vllm.release == ""
    with pytest.raises(ValidationError, match=r"measured_releases: '0\.11'"):
        ServingEngine.model_validate(changed(vllm, measured_releases=["0.11"]))
