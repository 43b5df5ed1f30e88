"""The end-to-end latency SLO (``slo.e2e_p99_s``) is planned for, not ignored (#19): the
serving planner's capacity search holds p99 end-to-end latency to it, and an unreachable one
is the binding constraint."""

from __future__ import annotations

from typing import Any

import pytest

from clusterwright.catalog.registry import Catalog
from clusterwright.errors import InputError
from clusterwright.plan import serving as serving_plan
from clusterwright.plan.scenario import plan_scenario
from clusterwright.spec.scenario import loads_scenario

SERVE = """
name: s
workloads:
  - {{kind: inference, name: chat, model: "llama-3.1-8b", qps: 500, input_len: 512,
     output_len: 128, slo: {{ttft_p99_s: 1.0, tpot_p99_s: 0.05{e2e}}}}}
constraints: {{gpus: ["h100-sxm"], deployment: "cloud"}}
"""


def _plan(cat: Catalog, e2e: str = "") -> dict[str, Any]:
    sc, _ = loads_scenario(SERVE.format(e2e=e2e))
    return plan_scenario(sc, cat, quick=True).to_dict()


def test_an_e2e_slo_changes_the_design_to_one_that_meets_it(catalog: Catalog) -> None:
    free = _plan(catalog)["workloads"][0]
    assert free["e2e_p99_s"] > 3.0  # without the SLO the cheapest design is slower than 3 s
    bound = _plan(catalog, ", e2e_p99_s: 3.0")
    assert bound["feasible"]
    w = bound["workloads"][0]
    assert w["slo"]["e2e_p99_s"] == 3.0
    assert w["e2e_p99_s"] <= 3.0


def test_an_unreachable_e2e_slo_is_the_binding_constraint(catalog: Catalog) -> None:
    d = _plan(catalog, ", e2e_p99_s: 0.3")
    assert d["feasible"] is False
    (b,) = d["binding_constraints"]
    assert b["constraint"] == "slo" and b["limit"] == 0.3
    assert "end-to-end latency" in b["message"]


def test_the_serving_planner_refuses_a_non_finite_e2e_slo(catalog: Catalog) -> None:
    with pytest.raises(InputError) as exc:
        serving_plan.plan(catalog, "llama-3.1-8b", 10, 512, 128, 1.0, 0.05, gpu="h100-sxm",
                          e2e_p99_s=float("inf"))
    assert exc.value.field == "e2e_p99_s"
