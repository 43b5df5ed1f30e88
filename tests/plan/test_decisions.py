"""Decisions: every choice of the recommendation says why, and the alternatives it lists did
lose by the margin it states (checked against the planners, not against the text)."""

from __future__ import annotations

from typing import Any

import pytest

from clusterwright.catalog.registry import Catalog
from clusterwright.design.train import job_for
from clusterwright.plan.decisions import layout_text
from clusterwright.plan.layouts import gpu_counts, plan
from clusterwright.plan.scenario import plan_scenario
from clusterwright.spec.scenario import loads_scenario

DEADLINE = """
name: d
workloads:
  - {kind: training, name: tr, model: "llama-3.1-8b", tokens: 2.0e11, seq_len: 4096,
     deadline_days: 10}
constraints: {gpus: ["h100-sxm"], deployment: "on-prem"}
"""

POOL = """
name: p
workloads:
  - kind: inference
    name: chat
    model: "llama-3.1-8b"
    qps: 40
    input_len: {mean: 1000}
    output_len: {mean: 200}
    slo: {ttft_p99_s: 1.0, tpot_p99_s: 0.05}
constraints: {gpus: ["h100-sxm", "a100-80gb-sxm"], deployment: "on-prem"}
"""


def _plan(cat: Catalog, text: str) -> dict[str, Any]:
    sc, _ = loads_scenario(text)
    return plan_scenario(sc, cat, quick=True).to_dict()


def _by_area(d: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {x["area"]: x for x in d["decisions"]}


@pytest.fixture(scope="module")
def deadline(catalog: Catalog) -> dict[str, Any]:
    return _plan(catalog, DEADLINE)


@pytest.fixture(scope="module")
def pool(catalog: Catalog) -> dict[str, Any]:
    return _plan(catalog, POOL)


def test_every_decision_has_a_reason_and_json_shape(deadline: dict[str, Any],
                                                    pool: dict[str, Any]) -> None:
    for d in (deadline, pool):
        assert d["decisions"], "a feasible plan explains its choices"
        for x in d["decisions"]:
            assert set(x) == {"area", "subject", "choice", "why", "alternatives"}
            assert x["choice"] and len(x["why"]) > 20
            for a in x["alternatives"]:
                assert a["option"] and a["outcome"]


def test_the_gpu_decision_lists_the_gpu_that_lost(pool: dict[str, Any]) -> None:
    g = _by_area(pool)["gpu"]
    assert g["choice"] == pool["recommendation"]["gpu"]
    lost = {a["option"] for a in g["alternatives"]}
    assert lost == {a["gpu"] for a in pool["alternatives"]}
    assert g["choice"] not in lost


def test_the_deadline_size_is_the_smallest_rung_that_meets_it(catalog: Catalog,
                                                              deadline: dict[str, Any]) -> None:
    size = _by_area(deadline)["cluster_size"]
    row = deadline["workloads"][0]
    assert size["choice"].startswith(f"{row['gpus']:,} ")
    assert row["time_to_train_days"] <= 10
    # Independently of the text: the rung below is on the ladder and is listed as missing
    # the deadline (else the planner should have chosen it).
    rungs = [k for k in gpu_counts(row["gpus"], 8) if k < row["gpus"]]
    assert rungs, "10 days of 2e11 tokens on one server would be too fast a test"
    below = next(a for a in size["alternatives"] if a["option"] == f"{rungs[-1]:,} GPUs")
    assert "misses the deadline" in below["outcome"] or "no layout fits" in below["outcome"]


def test_the_layout_beats_each_listed_runner_up(catalog: Catalog,
                                                deadline: dict[str, Any]) -> None:
    par = _by_area(deadline)["parallelism"]
    row = deadline["workloads"][0]
    assert par["choice"] == layout_text(row["layout"])
    job = job_for(catalog, catalog.model("llama-3.1-8b"), "h100-sxm", row["seq_len"],
                  _batch(row), "bf16", server_id="dgx-h100")
    res = plan(job, row["gpus"], top_n=4)
    assert res.best is not None and res.best.step_time_s == pytest.approx(row["step_time_s"])
    assert [a["option"] for a in par["alternatives"]] == [layout_text(r.layout)
                                                         for r in res.top[1:]]
    assert all(r.step_time_s >= res.best.step_time_s for r in res.top[1:])


def _batch(row: dict[str, Any]) -> int:
    # The scenario gives no batch: the planner's default of about 4M tokens per step.
    from clusterwright.design.train import default_global_batch

    return default_global_batch(row["seq_len"])


def test_replicas_cover_the_peak_and_cheaper_layouts_do_not_exist(pool: dict[str, Any]) -> None:
    rep = _by_area(pool)["replicas"]
    row = next(w for w in pool["workloads"] if w["kind"] == "inference")
    assert row["replicas"] * row["tp"] == row["gpus"]
    assert row["replicas"] * row["qps_per_replica"] >= row["peak_qps"]
    assert rep["choice"].startswith(f"{row['replicas']} x TP{row['tp']}")
    mine = next(c for c in row["considered"] if (c["tp"], c["ep"]) == (row["tp"], row["ep"]))
    for c in row["considered"]:
        if c["usd_per_hour"] is not None and mine["usd_per_hour"] is not None:
            assert c["usd_per_hour"] >= mine["usd_per_hour"] - 1e-9


def test_a_fixed_layout_says_the_scenario_decided(catalog: Catalog) -> None:
    d = _plan(catalog, """
name: f
workloads:
  - {kind: training, name: tr, model: "llama-3.1-8b", tokens: 1.0e11, seq_len: 4096, gpus: 16,
     layout: {tp: 2, pp: 1}}
constraints: {gpus: ["h100-sxm"], deployment: "on-prem"}
""")
    by = _by_area(d)
    assert "workloads[0].layout" in by["parallelism"]["why"]
    assert "workloads[0].gpus" in by["cluster_size"]["why"]
    assert by["parallelism"]["choice"].startswith("TP2 DP8")
