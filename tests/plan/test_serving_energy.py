"""Energy per million served tokens in the blueprint (examples/serve-llama3-70b.yaml): prefill
at the training draw, decode at the catalog's decode power fraction, weighted by the prefill
time share, and said to be an estimate."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterwright.catalog.registry import load_catalog
from clusterwright.plan.scenario import plan_scenario
from clusterwright.spec.scenario import loads_scenario

ROOT = Path(__file__).resolve().parents[2]


def test_serving_energy_weights_prefill_and_decode_power() -> None:
    cat = load_catalog()
    sc, _ = loads_scenario((ROOT / "examples" / "serve-llama3-70b.yaml").read_text())
    bp = plan_scenario(sc, cat, quick=True)
    assert bp.energy is not None
    (s,) = bp.energy["serving"]
    share = s["prefill_time_share"]
    assert 0.0 < share < 1.0
    (w,) = [r for r in bp.workloads if r["kind"] == "inference"]
    training = s["training_kw_per_gpu"]
    # Decode-only draw per GPU: training draw minus what the GPU does not draw in decode.
    tdp_kw = cat.gpu(w["gpu"]).tdp_w / 1e3
    decode = training - tdp_kw * (1.0 - cat.assumption("decode_gpu_power_fraction"))
    assert s["kw_per_gpu"] == pytest.approx(share * training + (1.0 - share) * decode)
    assert s["kw_per_gpu"] < training
    assert s["estimate"] is True and "estimate" in s["basis"]
    assert "decode_gpu_power_fraction" in s["basis"]
