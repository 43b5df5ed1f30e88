"""Fail-slow detection: modified z-scores per iteration, persistence, job slowdown."""

from __future__ import annotations

import random

import pytest

from clusterwright.ingest.model import Sample, StepTime
from clusterwright.twin.slow import detect, modified_z


def _steps(slow: dict[tuple[str, int], float], nodes: int = 16, gph: int = 8,
           iters: int = 12, noise: float = 0.004, spikes: bool = False) -> list[StepTime]:
    rng = random.Random(5)
    out = []
    for n in range(nodes):
        for g in range(gph):
            for i in range(iters):
                f = slow.get((f"n{n:02d}", g), 1.0)
                t = 2.0 * f * (1 + rng.uniform(-noise, noise))
                if spikes and g == 0 and n == 3 and i == 4:
                    t *= 1.5  # one slow iteration: noise, not a fail-slow rank
                out.append(StepTime(f"n{n:02d}", n * gph + g, i, t, "log", 1 + i))
    return out


def _resolve(name: str) -> str:
    return name


def test_modified_z() -> None:
    assert modified_z(10.0, 10.0, 0.0) == 0.0
    assert modified_z(11.0, 10.0, 0.0) == float("inf")
    assert modified_z(12.0, 10.0, 1.0) == pytest.approx(0.6745 * 2)


def test_a_persistently_slow_gpu_is_found_and_one_spike_is_not() -> None:
    res = detect(_steps({("n05", 2): 1.10}, spikes=True), [], _resolve, 8)
    assert [f.subject for f in res.findings] == ["n05"]
    f = res.findings[0]
    assert "rank(s) 42" in f.summary
    # a synchronous job runs at its slowest rank: about 10 % slower, all 128 GPUs pay
    s = f.impact["job_slowdown_from_this_node"]
    assert s == pytest.approx(1.10, rel=0.01)  # less the healthy ranks' own noise
    assert f.gpu_hours_lost_per_day == pytest.approx(128 * 24 * (1 - 1 / s))
    assert res.job["slowdown"] == pytest.approx(1.10, rel=0.01)


def test_a_whole_slow_node_is_named_as_the_node() -> None:
    res = detect(_steps({("n07", g): 1.06 for g in range(8)}), [], _resolve, 8)
    [f] = res.findings
    assert "the whole node" in f.summary


def test_small_differences_are_not_fail_slow() -> None:
    # 1 % slower is an outlier by z-score alone (tight noise) but below MIN_SLOWDOWN
    assert detect(_steps({("n01", 1): 1.01}, noise=0.001), [], _resolve, 8).findings == []


def test_two_slow_nodes_each_cost_their_own_slowdown_not_the_sum() -> None:
    res = detect(_steps({("n01", 0): 1.20, ("n02", 0): 1.10}), [], _resolve, 8)
    by = {f.subject: f.impact["job_slowdown_from_this_node"] for f in res.findings}
    assert by["n01"] == pytest.approx(1.20, rel=0.01)
    assert by["n02"] == pytest.approx(1.10, rel=0.01)
    assert res.job["slowdown"] == pytest.approx(1.20, rel=0.01)


def test_dcgm_clock_outlier_with_throttle_reason() -> None:
    samples = [Sample("gpu_sm_clock_mhz", f"h{n}", str(g), 1980.0 - (n + g) % 7, "m", 1)
               for n in range(4) for g in range(8)]
    samples[9] = Sample("gpu_sm_clock_mhz", "h1", "1", 1410.0, "m", 10)
    samples.append(Sample("gpu_throttle_reasons", "h1", "1", 0x40, "m", 11,
                          raw_name="DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"))
    [f] = detect([], samples, _resolve, 8).findings
    assert f.subject == "h1" and "hardware thermal slowdown" in f.summary
    assert f.impact["compute_slowdown"] == pytest.approx(1977 / 1410, rel=0.01)
