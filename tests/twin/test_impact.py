"""Impact: capacity, network (simulated), placement, severity and ranking."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterwright.catalog.registry import Catalog
from clusterwright.twin.blueprint import Plan
from clusterwright.twin.impact import Impact, Job, rank
from clusterwright.twin.model import Finding
from clusterwright.twin.run import TwinRequest, twin_diff
from clusterwright.twin.synth import synthesize


def _f(kind: str, subject: str, lost: float = 0.0, sev: str = "minor") -> Finding:
    return Finding(kind=kind, subject=subject, summary="", expected="", observed="",
                   repair="", key=(kind, subject), severity=sev,
                   gpu_hours_lost_per_day=lost)


def test_rank_by_gpu_hours_then_severity_then_kind() -> None:
    out = rank([_f("extra_link", "a"), _f("missing_link", "b", 10.0, "major"),
                _f("slow_gpu", "c", 100.0, "critical"), _f("node_unavailable", "d", 10.0,
                                                            "critical")])
    assert [f.subject for f in out] == ["c", "d", "b", "a"]
    assert [f.id for f in out] == ["F001", "F002", "F003", "F004"]


def test_a_drained_node_shrinks_a_job_that_filled_the_cluster(eth_plan: Plan,
                                                               catalog: Catalog) -> None:
    imp = Impact(eth_plan, catalog, simulate=False)
    imp.job = Job(gpus=64, step_s=1.0, model_parallel=16, pp=2, comm_share=0.1,
                  compute_share=0.8, dp_comm_s=0.1, source="test")
    loss, why = imp.shrink_loss(8)
    # 56 GPUs left hold 3 replicas of 16 = 48: 16 GPUs idle, not 8
    assert loss == 16 * 24 and "3 replicas" in why
    imp.job = Job(gpus=48, step_s=1.0, model_parallel=16, pp=2, comm_share=0.1,
                  compute_share=0.8, dp_comm_s=0.1, source="test")
    assert imp.shrink_loss(8)[0] == 8 * 24  # a spare node takes its place


def test_network_faults_are_simulated_and_priced(eth_bp: Path, eth_plan: Plan, tmp_path: Path,
                                                 catalog: Catalog) -> None:
    syn = synthesize(eth_plan, tmp_path, faults=40, seed=4)
    rep = twin_diff(TwinRequest(blueprint=eth_bp, inputs={k: tuple(v) for k, v in
                                                          syn.inputs.items()}), catalog)
    d = rep.as_dict()
    assert d["impact"]["network"]["faults_simulated"] > 0
    assert d["impact"]["network"]["collective_slowdown"] >= 1.0
    sim = [f for f in rep.findings if f.impact.get("method", "").startswith("network")]
    assert sim and all(f.impact["collective_slowdown"] >= 1.0 for f in sim)
    drained = [f for f in rep.findings if f.impact.get("method", "").startswith("capacity")]
    assert drained and all(f.severity == "critical" for f in drained)
    assert all(f.gpu_hours_lost_per_day >= 8 * 24 for f in drained)
    sched = d["impact"]["scheduling"]
    assert sched["as_built"]["allocated_gpu_hours"] <= sched["as_designed"]["allocated_gpu_hours"]
    # ranked: most GPU-hours first
    lost = [f.gpu_hours_lost_per_day for f in rep.findings]
    assert lost == sorted(lost, reverse=True)
    assert d["gpu_hours_lost_per_day"] > 0
    assert all(f.severity in ("critical", "major", "minor") for f in rep.findings)


def test_without_impact_the_findings_still_get_a_severity(eth_bp: Path, eth_plan: Plan,
                                                          tmp_path: Path,
                                                          catalog: Catalog) -> None:
    syn = synthesize(eth_plan, tmp_path, faults=20, seed=6)
    rep = twin_diff(TwinRequest(blueprint=eth_bp, inputs={k: tuple(v) for k, v in
                                                          syn.inputs.items()}, impact=False),
                    catalog)
    assert {f.severity for f in rep.findings} <= {"critical", "major", "minor"}
    assert rep.impact["note"].startswith("impact not estimated")


@pytest.mark.parametrize("kind", ["missing_link", "miswired_link"])
def test_ethernet_host_cable_faults_drain_the_node(eth_plan: Plan, catalog: Catalog,
                                                   kind: str) -> None:
    lk = next(lk for lk in eth_plan.links if lk.tier == "node-leaf")
    f = Finding(kind=kind, subject="x", summary="", expected="", observed="", repair="",
                key=(kind,), devices=[lk.a, lk.b], links=[lk.index])
    assert lk.a in Impact(eth_plan, catalog, simulate=False).drained_hosts([f])
