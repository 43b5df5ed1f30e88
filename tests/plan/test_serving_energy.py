"""Energy per million served tokens in the blueprint (examples/serve-llama3-70b.yaml): the
servers' sustained draw with the GPUs at the serving power model's board power at the
replica's steady state, and said to be an estimate."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterwright.catalog.registry import load_catalog
from clusterwright.plan.scenario import plan_scenario
from clusterwright.spec.scenario import loads_scenario

ROOT = Path(__file__).resolve().parents[2]


def test_serving_energy_puts_the_gpus_at_the_serving_power_model() -> None:
    cat = load_catalog()
    sc, _ = loads_scenario((ROOT / "examples" / "serve-llama3-70b.yaml").read_text())
    bp = plan_scenario(sc, cat, quick=True)
    assert bp.energy is not None
    (s,) = bp.energy["serving"]
    (w,) = [r for r in bp.workloads if r["kind"] == "inference"]
    gpu = cat.gpu(w["gpu"])
    # Between the active floor and TDP; a loaded replica is above the floor.
    floor = s["gpu_idle_w"] + (gpu.tdp_w - s["gpu_idle_w"]) * s["serving_power_active_floor"]
    assert floor < s["gpu_power_w"] <= gpu.tdp_w
    # Server share per GPU: the training draw with the GPU at that power instead of TDP.
    training = s["training_kw_per_gpu"]
    assert s["kw_per_gpu"] == pytest.approx(training - (gpu.tdp_w - s["gpu_power_w"]) / 1e3)
    assert 0.0 < s["prefill_time_share"] < 1.0 and s["batch_per_replica"] >= 1.0
    assert s["estimate"] is True and "ML.ENERGY" in s["basis"]
