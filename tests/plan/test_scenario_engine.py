"""An inference workload sized with a catalog serving engine (``engine:``): the main job
serves on GPUs whose stacks carry no serving calibration (B200, MI300X, ...) with the engine
search ``serve plan --engine`` runs (plan/inference.py)."""

from __future__ import annotations

from typing import Any

import pytest

from clusterwright.catalog.references import resolve
from clusterwright.catalog.registry import Catalog
from clusterwright.errors import ScenarioError
from clusterwright.plan.scenario import plan_scenario
from clusterwright.spec.scenario import loads_scenario

SERVE = """
name: s
workloads:
  - kind: inference
    name: chat
    model: "llama-3.1-70b"
    qps: 10
    input_len: 1024
    output_len: 256
    slo: {{ttft_p99_s: 2.0, tpot_p99_s: 0.08{e2e}}}
    precision: "fp8"
    diurnal: {{peak_hour: 14, trough_fraction: 0.25}}{engine}
constraints: {{gpus: ["{gpu}"], deployment: "cloud"}}
"""


def _plan(cat: Catalog, gpu: str, engine: str | None) -> dict[str, Any]:
    text = SERVE.format(gpu=gpu, e2e="",
                        engine="" if engine is None else f'\n    engine: "{engine}"')
    sc, _ = loads_scenario(text)
    return plan_scenario(sc, cat, quick=True).to_dict()


def test_an_engine_serves_on_a_gpu_without_a_serving_stack(catalog: Catalog) -> None:
    d = _plan(catalog, "b200", "vllm")
    assert d["feasible"]
    (w,) = d["workloads"]
    assert w["engine"] == "vllm" and w["gpu"] == "b200"
    assert w["replicas"] * w["gpus_per_replica"] == w["gpus"]
    assert w["ttft_p99_s"] <= 2.0 and w["tpot_p99_s"] <= 0.08
    assert w["replicas"] * w["qps_per_replica"] == pytest.approx(10.0)
    # The peak hour needs every GPU; the trough (a quarter of the rate) fewer or as many
    assert max(w["diurnal_gpus"]) == w["gpus"] and min(w["diurnal_gpus"]) <= w["gpus"]
    # The latency curve simulates the chosen deployment; below the planned load it meets the
    # SLOs (a quick plan draws 0.5, 0.9 and 1.15 of it)
    below = [p for p in w["curve"] if p["load_fraction"] < 1.0]
    assert below and all(p["meets_slo"] for p in below)
    assert w["curve"][-1]["ttft_p99_s"] >= w["curve"][0]["ttft_p99_s"]
    conf = w["confidence"]
    assert conf["validation_table"] == "serving-silicon" and "validated" in conf
    assert w["deployment"].startswith(("aggregated", "prefill"))
    decision = next(x for x in d["decisions"] if x["area"] == "replicas")
    assert "under vllm" in decision["choice"]
    # Energy per token from the deployment's own step model at its peak batch (aggregated),
    # or the stated floor (disaggregated)
    (e,) = d["energy"]["serving"]
    if w["mode"] == "agg":
        assert e["batch_per_replica"] >= 1 and "per data-parallel rank" in e["basis"]
    else:
        assert e["batch_per_replica"] is None and "not modelled apart" in e["basis"]
    assert e["kwh_per_million_tokens"] > 0


def test_without_an_engine_the_gpu_says_how_to_serve_on_it(catalog: Catalog) -> None:
    d = _plan(catalog, "b200", None)
    assert d["feasible"] is False
    (b,) = d["binding_constraints"]
    assert "no serving calibration" in b["message"] and "engine" in b["message"]


def test_an_engine_for_another_vendor_rejects_the_gpu(catalog: Catalog) -> None:
    d = _plan(catalog, "h100-sxm", "neuron")
    assert d["feasible"] is False
    assert "neuron runs on aws accelerators" in d["binding_constraints"][0]["message"]


@pytest.mark.parametrize(("engine", "message"), [
    ("vllmx", "workloads[0].engine (line 13): 'vllmx' is not one of"),
    ("vllm@9.9", "no vllm entry in the catalog covers version '9.9'"),
    ("vllm@", "'vllm@' names no version after '@'"),
])
def test_an_unknown_engine_names_its_line(catalog: Catalog, engine: str, message: str) -> None:
    text = SERVE.format(gpu="b200", e2e="", engine=f'\n    engine: "{engine}"')
    sc, doc = loads_scenario(text)
    with pytest.raises(ScenarioError, match=message.replace("[", r"\[").replace("(", r"\(")
                       .replace(")", r"\)")):
        resolve(sc, catalog, doc)


def test_an_engine_with_an_end_to_end_slo_is_refused() -> None:
    text = SERVE.format(gpu="b200", e2e=", e2e_p99_s: 30", engine='\n    engine: "vllm"')
    with pytest.raises(ScenarioError, match=r"slo\.e2e_p99_s: an engine-sized workload"):
        loads_scenario(text)


def test_a_margin_needs_an_engine_and_flows_into_the_plan(catalog: Catalog) -> None:
    """``slo.margin`` is refused by name on a workload without an engine (the stacks' path
    has no measured regimes); with one, the row carries the ratios the choice was held to."""
    text = SERVE.format(gpu="b200", e2e=', margin: "p90"', engine="")
    with pytest.raises(ScenarioError, match=r"slo\.margin: the measured rows' margin"):
        loads_scenario(text)
    text = SERVE.format(gpu="b200", e2e=', margin: "p99"', engine='\n    engine: "vllm"')
    with pytest.raises(ScenarioError, match=r"slo\.margin"):
        loads_scenario(text)
    text = SERVE.format(gpu="b200", e2e=', margin: "p90"', engine='\n    engine: "vllm"')
    sc, _ = loads_scenario(text)
    (w,) = plan_scenario(sc, catalog, quick=True).to_dict()["workloads"]
    m = w["margin"]
    assert m["kind"] == "p90" and w["slo"]["margin"] == "p90"
    assert m["ttft_ratio"] >= 1.0 and m["tpot_ratio"] >= 1.0
    assert w["ttft_p99_s"] * m["ttft_ratio"] <= 2.0 and w["tpot_p99_s"] * m["tpot_ratio"] <= 0.08
