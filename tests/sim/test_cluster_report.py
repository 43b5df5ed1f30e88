"""Metrics of a cluster run: units (hours, GPU-hours), percentiles, the rollout comparison."""

from __future__ import annotations

import pytest

from clusterwright.sim.cluster import ClusterConfig, Upgrade, simulate
from clusterwright.sim.cluster_jobs import HOUR, Job
from clusterwright.sim.cluster_report import run_schedule, summarize, upgrade_delay
from clusterwright.sim.cluster_shape import simple_shape

FOUR = simple_shape(4, nodes_per_su=4, sus_per_pod=1)


def job(jid: str, nodes: int, submit_h: float, hours: float) -> Job:
    return Job(id=jid, kind="train", submit_s=submit_h * HOUR, duration_s=hours * HOUR,
               nodes=nodes)


def test_summary_in_hours_and_gpu_hours() -> None:
    jobs = [job("a", 4, 0, 5), job("b", 2, 1, 2)]
    r = simulate(FOUR, jobs, ClusterConfig(horizon_s=10 * HOUR, failure_rate_per_node_hour=0))
    d = summarize(r)
    # a: 4 nodes x 8 GPUs x 5 h = 160; b waits 4 h, runs 2 h on 16 GPUs = 32. Capacity 320.
    assert d["gpu_hours"]["capacity"] == pytest.approx(320)
    assert d["gpu_hours"]["allocated"] == pytest.approx(192)
    assert d["gpu_utilization_mean"] == pytest.approx(0.6)
    q = d["by_kind"]["train"]["queueing_delay_h"]
    assert q["n"] == 2 and q["p50"] == pytest.approx(2.0) and q["mean"] == pytest.approx(2.0)
    assert d["by_kind"]["train"]["completion_time_h"]["p99"] == pytest.approx(
        5 + 0.99 * (6 - 5))  # numpy's linear rule: index 0.99 x (n - 1) between 5 h and 6 h
    assert d["fragmentation"]["placements_by_span"]["leaf"] == 2
    assert d["inference"]["slo_attainment"] is None and d["upgrade"] is None


def test_rollout_cost_compares_with_a_run_without_it() -> None:
    jobs = [job("a", 4, 0, 3), job("b", 4, 0.5, 3)]
    up = Upgrade(start_s=0.25 * HOUR, batch_nodes=4, batch_s=1 * HOUR, drain_timeout_s=0.0)
    cfg = ClusterConfig(horizon_s=20 * HOUR, failure_rate_per_node_hour=0, restart_s=0,
                        upgrade=up)
    d = run_schedule(FOUR, jobs, cfg)
    # a is stopped at 0.25 h (checkpoint on stop), all 4 nodes are out 0.25-1.25 h: a resumes
    # at 1.25 h and ends at 4 h (1 h later than without), b follows at 4 h and ends at 7 h.
    assert d["upgrade"]["mean_completion_time_increase_h"] == pytest.approx(1.0)
    assert d["upgrade"]["gpu_hours_out_of_service"] == pytest.approx(32)
    base = simulate(FOUR, jobs, ClusterConfig(horizon_s=20 * HOUR, failure_rate_per_node_hour=0))
    assert upgrade_delay(base, base)["mean_queueing_delay_increase_h"] == 0.0
