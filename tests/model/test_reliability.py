"""Reliability model: rates from the catalog, checkpoint size and I/O, Young and Daly intervals,
ETTR, restart cost and hot spares, with worked cases checked by hand in the comments."""

from __future__ import annotations

import math

import pytest

from clusterwright.catalog.registry import Catalog
from clusterwright.catalog.schema import FailureMode
from clusterwright.errors import InputError
from clusterwright.model import reliability as rel

LLAMA3_HOURS = 54 * 24  # 1,296 h
LLAMA3 = rel.FleetUnits(gpus=16384, hosts=2048, links=16384 * 15 / 7)


@pytest.fixture(scope="module")
def modes(catalog: Catalog) -> list[FailureMode]:
    return rel.modes_for_gpu(catalog.all("failure_modes"), "h100-sxm")


def test_catalog_rates_reproduce_the_llama3_table(modes: list[FailureMode]) -> None:
    # Every rate is count / unit-hours, so 54 days on Meta's units gives back the counts.
    exp = rel.expected_interruptions(modes, LLAMA3, LLAMA3_HOURS)
    assert sum(exp.values()) == pytest.approx(419, rel=1e-5)
    assert exp["faulty-gpu"] == pytest.approx(148, rel=1e-5)
    cats = rel.by_category(modes, exp)
    assert cats["gpu"] == pytest.approx(268, rel=1e-5)  # 148+72+19+17+6+6
    assert cats["host"] == pytest.approx(21, rel=1e-5)  # NIC 7 + SSD 3 + PSU 3 + 4 x 2
    with_planned = rel.expected_interruptions(modes, LLAMA3, LLAMA3_HOURS, include_planned=True)
    assert sum(with_planned.values()) == pytest.approx(466, rel=1e-5)


def test_job_mtbf_matches_the_derived_mtti(modes: list[FailureMode]) -> None:
    # operations.md 1.1: 54 x 24 / 419 = 3.09 h unexpected; / 466 = 2.78 h all.
    assert rel.job_mtbf_hours(modes, LLAMA3) == pytest.approx(1296 / 419, rel=1e-4)
    assert rel.job_mtbf_hours(modes, LLAMA3, include_planned=True) == pytest.approx(
        1296 / 466, rel=1e-4
    )


def test_per_gpu_rate_matches_the_note(modes: list[FailureMode]) -> None:
    # 419 / (16,384 x 54) = 4.74e-4 unexpected interruptions per GPU-day.
    one_gpu_day = rel.expected_interruptions(
        [m for m in modes if m.unit == "gpu"], rel.FleetUnits(1, 0), 24
    )
    per_host = rel.expected_interruptions(
        [m for m in modes if m.unit == "host"], rel.FleetUnits(0, 1), 24
    )
    gpu_share = sum(one_gpu_day.values())
    # GPU-scaled: GPU category 268 + software 54 + NIC 7 + NCCL 7 = 336 of the 419; per host:
    # maintenance 32 + SSD 3 + PSU 3 + 4 x 2 = 46; the rest is network 35 (link), dependency 2.
    assert gpu_share == pytest.approx(336 / (16384 * 54), rel=1e-4)
    assert sum(per_host.values()) == pytest.approx(46 / (2048 * 54), rel=1e-4)


def test_mtbf_scales_inversely_with_gpus_for_gpu_causes(modes: list[FailureMode]) -> None:
    gpu_only = [m for m in modes if m.unit == "gpu"]
    small = rel.job_mtbf_hours(gpu_only, rel.fleet_units(1024, 8))
    big = rel.job_mtbf_hours(gpu_only, rel.fleet_units(16384, 8))
    assert small / big == pytest.approx(16.0)


def test_repair_fraction(modes: list[FailureMode]) -> None:
    # Not cleared by a restart alone: all but software bug 54, network 35, NCCL 7, dependency 2.
    assert rel.repair_fraction(modes, LLAMA3) == pytest.approx((419 - 98) / 419, rel=1e-4)


def test_gpu_specific_entries_replace_the_generic_set(modes: list[FailureMode]) -> None:
    special = FailureMode(id="a100-any", name="A100", source="test source text", category="gpu",
                          unit="gpu", rate_per_million_unit_hours=10, needs_repair=True,
                          gpus=["a100-80gb-sxm"])
    chosen = rel.modes_for_gpu([*modes, special], "a100-80gb-sxm")
    assert [m.id for m in chosen] == ["a100-any"]
    assert special not in rel.modes_for_gpu([*modes, special], "h100-sxm")


def test_rate_must_match_its_observation() -> None:
    with pytest.raises(ValueError, match="does not match"):
        FailureMode(id="x", name="x", source="test source text", category="gpu", unit="gpu",
                    rate_per_million_unit_hours=2.0, needs_repair=True, observed_count=1,
                    observed_unit_hours=1e6)
    with pytest.raises(ValueError):
        FailureMode(id="x", name="x", source="test source text", category="gpu", unit="gpu",
                    rate_per_million_unit_hours=-1.0, needs_repair=True)


def test_fat_tree_estimate_matches_superpod_and_k_ary_counts() -> None:
    # DGX SuperPOD B200 2 SU: 512 GPUs on radix 64: 16 leaves + 8 spines, 2 x 512 links.
    assert rel.fat_tree_estimate(512, 64) == rel.FabricEstimate(2, 24, 1024)
    # 3 tiers: 4,096 GPUs -> 5 x 4096 / 64 = 320 switches (128 + 128 + 64, RA Table 3).
    assert rel.fat_tree_estimate(4096, 64) == rel.FabricEstimate(3, 320, 12288)
    assert rel.fat_tree_estimate(0, 64).links == 0
    # One 8-GPU host uses no fabric.
    assert rel.fleet_units(8, 8).links == 0
    assert rel.fleet_units(100, 8).hosts == 13
    assert rel.fleet_units(64, 8, links=1000).links == 1000


def test_checkpoint_bytes_per_param() -> None:
    assert rel.checkpoint_bytes_per_param("bf16", "adam") == 14  # 2 + 4 + 8
    assert rel.checkpoint_bytes_per_param("fp32", "adam") == 12  # no master copy: 4 + 8
    assert rel.checkpoint_bytes_per_param("bf16", "sgd") == 10  # 2 + 4 + 4 (momentum)
    # operations.md 1.4: 405B -> 5.67 TB full checkpoint.
    assert rel.checkpoint_bytes(405e9) == pytest.approx(5.67e12)


def test_transfer_time_is_capped_by_the_storage_system() -> None:
    # 5.67 TB over 16,384 writers at 0.5 GB/s (8.2 TB/s) capped at 2 TB/s -> 2.835 s.
    assert rel.transfer_s(5.67e12, 16384, 0.5, 2000) == pytest.approx(2.835)
    # One replica of 64 model-parallel ranks writes: 32 GB/s -> 177.2 s.
    assert rel.transfer_s(5.67e12, 64, 0.5, 2000) == pytest.approx(177.1875)
    assert rel.shard_bytes(5.67e12, 16384) == pytest.approx(346.07e6, rel=1e-4)
    with pytest.raises(InputError, match="per-GPU storage bandwidth"):
        rel.transfer_s(1e9, 8, 0.0)


def test_young_interval_worked_cases() -> None:
    # delta = 5 min, M = 24 h: sqrt(2 x 300 x 86,400) = 7,200 s exactly.
    assert rel.young_interval_s(300, 86400) == pytest.approx(7200)
    # operations.md 1.4: M = 3.09 h, delta = 1 min -> 19.3 min; delta = 6 s -> 6.1 min.
    assert rel.young_interval_s(60, 3.09 * 3600) / 60 == pytest.approx(19.26, abs=0.01)
    assert rel.young_interval_s(6, 3.09 * 3600) / 60 == pytest.approx(6.09, abs=0.01)


def test_daly_interval_worked_cases() -> None:
    # delta = 300 s, M = 86,400 s: delta/2M = 1/576, sqrt = 1/24.
    # tau = 7200 (1 + 1/72 + 1/5184) - 300 = 7200 + 100 + 1.3889 - 300 = 7001.389 s.
    assert rel.daly_interval_s(300, 86400) == pytest.approx(7001.3889, abs=1e-3)
    # delta = 1 h, M = 2 h: delta/2M = 1/4, sqrt = 1/2; sqrt(2 delta M) = 2 h.
    # tau = 2 (1 + 1/6 + 1/36) - 1 = 2.38889 - 1 = 1.38889 h.
    assert rel.daly_interval_s(3600, 7200) == pytest.approx(1.388889 * 3600, rel=1e-6)
    # delta >= 2M: tau = M (Daly's piecewise form), on and beyond the boundary.
    assert rel.daly_interval_s(7200, 3600) == 3600
    assert rel.daly_interval_s(36000, 3600) == 3600
    # delta << M: sqrt(2 delta M) x 1/3 sqrt(delta / 2M) = delta / 3, so Daly's interval is
    # shorter than Young's by about delta - delta/3 = 2 delta / 3.
    young, daly = rel.young_interval_s(1, 1e6), rel.daly_interval_s(1, 1e6)
    assert young - daly == pytest.approx(2 / 3, abs=0.01)


def test_daly_interval_maximises_the_exact_ettr() -> None:
    # The higher-order estimate sits at the optimum of Daly's exponential model to within
    # a fraction of a percent of ETTR.
    d, m, r = 120.0, 4 * 3600.0, 600.0
    best = max(rel.ettr(t, d, m, r) for t in range(300, 6000, 5))
    assert rel.ettr(rel.daly_interval_s(d, m), d, m, r) == pytest.approx(best, abs=2e-5)


def test_ettr_test_vectors_from_the_note() -> None:
    # operations.md 1.4: M = 3.09 h, delta = 1 min, R = 10 min -> 0.842 (first order);
    # delta = 6 s, R = 5 min -> 0.940; M = 0.5 h, delta = 1 min, R = 10 min -> 0.41.
    m = 3.09 * 3600
    assert rel.checkpoint_plan(60, m, 600).ettr_first_order == pytest.approx(0.842, abs=5e-4)
    assert rel.checkpoint_plan(6, m, 300).ettr_first_order == pytest.approx(0.940, abs=5e-4)
    assert rel.checkpoint_plan(60, 1800, 600).ettr_first_order == pytest.approx(0.41, abs=5e-3)
    # The exact exponential model is close to the first-order one when tau, R << M.
    plan = rel.checkpoint_plan(6, m, 300)
    assert plan.ettr == pytest.approx(plan.ettr_first_order, abs=0.003)


def test_expected_segment_is_dalys_closed_form() -> None:
    # Daly 2006: T = M e^(R/M) (e^((tau+delta)/M) - 1) per segment.
    m, r, seg = 10000.0, 500.0, 1000.0
    assert rel.expected_segment_s(seg, m, r) == pytest.approx(
        m * math.exp(r / m) * math.expm1(seg / m)
    )
    # Whole run: 10 full segments of 1,000 s + one of 500 s, each with a 100 s checkpoint.
    t = rel.expected_wall_time_s(10500, 1000, 100, m, r)
    assert t == pytest.approx(
        10 * rel.expected_segment_s(1100, m, r) + rel.expected_segment_s(600, m, r)
    )
    # No failures in sight: wall = work + checkpoints.
    assert rel.expected_wall_time_s(10500, 1000, 100, 1e12, r) == pytest.approx(11600, rel=1e-6)


def test_lost_work_is_about_half_a_segment() -> None:
    assert rel.expected_lost_work_s(600, 1e7) == pytest.approx(300, rel=1e-3)
    assert rel.expected_lost_work_s(3600, 3600) < 1800  # earlier failures are likelier


def test_restart_cost_sums_its_parts() -> None:
    assert rel.restart_cost_s(60, 480, 3, 125) == 668
    with pytest.raises(InputError, match="restore_s"):
        rel.restart_cost_s(60, 480, -3)


def test_hot_spare_probabilities() -> None:
    # lambda T = 2: P(N <= 2) = e^-2 (1 + 2 + 2) = 5 e^-2 = 0.676676.
    assert rel.spare_coverage_probability(0.5, 4, 2) == pytest.approx(5 * math.exp(-2))
    # A failure finds no spare when N >= S: 1 - P(N <= 1) = 1 - 3 e^-2 = 0.593994.
    assert rel.spare_shortfall_probability(0.5, 4, 2) == pytest.approx(1 - 3 * math.exp(-2))
    assert rel.spare_shortfall_probability(0.5, 4, 0) == 1.0
    # S = 0: every repair-needing failure waits the whole repair.
    assert rel.expected_spare_wait_s(0.5, 4, 0) == 4 * 3600
    # Large pools in log space without overflow: Poisson(1000) is covered by 1,200 spares.
    assert rel.spare_coverage_probability(100, 10, 1200) == pytest.approx(1.0, abs=1e-9)


def test_goodput_multiplies() -> None:
    assert rel.goodput(0.9, 0.95, 0.4) == pytest.approx(0.342)
    with pytest.raises(InputError, match="ettr"):
        rel.goodput(1.2)


def test_bad_inputs_name_the_field() -> None:
    with pytest.raises(InputError, match="MTBF"):
        rel.young_interval_s(60, 0)
    with pytest.raises(InputError, match="checkpoint time"):
        rel.daly_interval_s(-1, 3600)
    with pytest.raises(InputError, match="gpus"):
        rel.fleet_units(0, 8)


def test_hopeless_runs_give_zero_ettr_not_an_overflow() -> None:
    # delta >= 2M: tau = M, and a segment of M + 1e6 s against M = 3.6 s never completes.
    plan = rel.checkpoint_plan(1e6, 3.6, 600)
    assert plan.daly_interval_s == 3.6
    assert plan.ettr == 0.0 and plan.ettr_first_order == 0.0
    assert rel.expected_wall_time_s(10, 5, 1e6, 3.6, 0) == math.inf
    assert rel.expected_lost_work_s(1e6, 3.6) == 3.6


def test_a_restart_that_never_outlives_the_next_failure_gives_no_progress() -> None:
    """R/M above ~709 overflowed e^(R/M): 0 x inf made the ETTR NaN."""
    assert rel.ettr(3.6, 100.0, 3.6, 100_000.0) == 0.0
    assert rel.ettr(3.6, 100.0, 3.6, 100_000.0, wait_s=60.0) == 0.0
