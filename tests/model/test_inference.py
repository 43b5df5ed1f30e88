"""Step-time model of an inference iteration (``model/inference.py``), with a test-only
serving calibration so the properties do not move with the catalog's."""

from __future__ import annotations

import numpy as np
import pytest

from clusterwright.catalog.registry import Catalog
from clusterwright.catalog.schema import ServingEfficiency
from clusterwright.design.train import net_for
from clusterwright.errors import InputError
from clusterwright.model.inference import StepModel, compute_dtype
from clusterwright.model.precision import Precision

SERVING = ServingEfficiency(
    engine="test", decode_bandwidth_efficiency=0.8, step_overhead_s=0.002, calibration="test"
)


def _model(catalog: Catalog, model: str = "llama-2-7b", gpu: str = "h100-sxm", tp: int = 1,
           weights: Precision = Precision.bf16) -> StepModel:
    g = catalog.gpu(gpu)
    stack = catalog.stack_for_gpu(g.id).model_copy(update={"serving": SERVING})
    arch = catalog.get("models", model)
    return StepModel(arch, g, stack, net_for(catalog, g, stack), tp=tp, weights=weights)


def test_no_work_takes_no_time(catalog: Catalog) -> None:
    assert _model(catalog).step_s(0, 0, 0) == 0.0


def test_small_decode_is_bandwidth_bound(catalog: Catalog) -> None:
    m = _model(catalog)
    t = m.step_s(0, 1, 512)
    stream = m.weight_bytes_per_gpu / (m.gpu.memory_bandwidth_gbps * 1e9 * 0.8)
    assert stream < t < stream * 1.3 + 0.002


def test_time_grows_with_work(catalog: Catalog) -> None:
    m = _model(catalog)
    d = m.step_array(np.zeros(4), np.array([1, 8, 64, 256]), np.array([512, 4096, 32768, 131072]))
    assert np.all(np.diff(d) > 0)
    p = m.step_array(np.array([128, 1024, 8192]), np.zeros(3), np.zeros(3))
    assert np.all(np.diff(p) > 0)


def test_tensor_parallel_cuts_decode_but_not_linearly(catalog: Catalog) -> None:
    t1 = _model(catalog, "llama-3.1-70b", tp=4).step_s(0, 8, 8 * 1024)
    t8 = _model(catalog, "llama-3.1-70b", tp=8).step_s(0, 8, 8 * 1024)
    assert t8 < t1 < 2.0 * t8  # all-reduces and overhead keep TP8 from halving TP4


def test_fp8_weights_decode_faster(catalog: Catalog) -> None:
    bf16 = _model(catalog).step_s(0, 4, 4096)
    fp8 = _model(catalog, weights=Precision.fp8).step_s(0, 4, 4096)
    assert fp8 < bf16
    assert compute_dtype("int4").value == "bf16"


def test_a_stack_without_serving_calibration_is_refused(catalog: Catalog) -> None:
    g = catalog.gpu("b200")
    stack = catalog.stack_for_gpu(g.id)
    assert stack.serving is None
    with pytest.raises(InputError, match="serving"):
        StepModel(catalog.get("models", "llama-2-7b"), g, stack, net_for(catalog, g, stack))


def test_calibrated_stacks_carry_a_serving_block(catalog: Catalog) -> None:
    for gpu in ("a100-80gb-sxm", "h100-sxm", "h200-sxm"):
        sv = catalog.stack_for_gpu(gpu).serving
        assert sv is not None and 0 < sv.decode_bandwidth_efficiency <= 0.9
        assert "validate --table serving" in sv.calibration


def test_tp_beyond_the_nvlink_domain_is_refused(catalog: Catalog) -> None:
    with pytest.raises(InputError, match="--tp"):
        _model(catalog, tp=16)
