"""Monte Carlo of a training run with failures: reproducible, and its mean agrees with the
analytical model (model/reliability.py) that shares its semantics."""

from __future__ import annotations

import numpy as np
import pytest

from clusterwright.errors import InputError
from clusterwright.model import reliability as rel
from clusterwright.model.reliability import HOUR
from clusterwright.sim.reliability import MAX_TRIALS, RunSpec, simulate_run

M = 3.09 * 3600  # Llama 3 job MTBF, unexpected interruptions only
DAY = 86400.0
# Mean wall-time tolerance: the standard error of the mean is about 0.05 % here (sd of the
# wall time ~0.9 % of 30 days over sqrt(1000) trials), so 0.5 % is ten standard errors.
TOL = 0.005


def _spec(**kw: float) -> RunSpec:
    base = dict(work_s=30 * DAY, interval_s=rel.daly_interval_s(60, M), checkpoint_s=60.0,
                restart_s=600.0, mtbf_s=M)
    base.update(kw)
    return RunSpec(**base)  # type: ignore[arg-type]


def test_mean_wall_time_agrees_with_the_analytical_model() -> None:
    spec = _spec()
    res = simulate_run(spec, trials=1000, seed=1)
    expected = rel.expected_wall_time_s(spec.work_s, spec.interval_s, 60, M, 600)
    assert res.wall_s.mean() == pytest.approx(expected, rel=TOL)
    # ETTR of the mean run: W / E[wall] = 0.852 (the note's first-order estimate: 0.842).
    assert spec.work_s / res.wall_s.mean() == pytest.approx(
        rel.ettr(spec.interval_s, 60, M, 600), rel=TOL
    )
    # Failures: about wall / M (failures also strike restarts and checkpoints).
    assert res.interruptions.mean() == pytest.approx(res.wall_s.mean() / M, rel=0.02)


def test_distribution_is_reported_and_ordered() -> None:
    s = simulate_run(_spec(), trials=500, seed=3).summary()
    ttt = s["time_to_train_days"]
    assert isinstance(ttt, dict)
    assert 30 < ttt["p10"] < ttt["p50"] < ttt["p90"] < 40
    ettr = s["ettr"]
    assert isinstance(ettr, dict)
    assert 0.8 < ettr["p10"] < ettr["p90"] < 0.9


def test_same_seed_same_result_other_seed_differs() -> None:
    a = simulate_run(_spec(), trials=200, seed=7)
    b = simulate_run(_spec(), trials=200, seed=7)
    c = simulate_run(_spec(), trials=200, seed=8)
    assert np.array_equal(a.wall_s, b.wall_s)
    assert not np.array_equal(a.wall_s, c.wall_s)


def test_no_failures_means_work_plus_checkpoints() -> None:
    # 1 day of work in 1-hour segments, 60 s per checkpoint: 86,400 + 24 x 60 s.
    res = simulate_run(_spec(work_s=DAY, interval_s=3600, mtbf_s=1e15), trials=10, seed=0)
    assert np.allclose(res.wall_s, DAY + 24 * 60)
    assert res.interruptions.sum() == 0


def test_zero_spares_wait_the_whole_repair() -> None:
    # With no spare, every repair-needing failure waits exactly the repair time: the
    # analytical model is exact here too.
    spec = _spec(work_s=5 * DAY, repair_fraction=0.5, repair_s=6 * 3600, spares=0)
    res = simulate_run(spec, trials=1000, seed=2)
    expected = rel.expected_wall_time_s(spec.work_s, spec.interval_s, 60, M, 600,
                                        wait_s=0.5 * 6 * 3600)
    assert res.wall_s.mean() == pytest.approx(expected, rel=0.02)
    assert res.spare_wait_s.mean() > 0


def test_enough_spares_remove_the_wait() -> None:
    # 0.77 of failures need repair (Llama 3 mix), 72 h repairs: lambda T = 0.77 / 3.09 h x 72 h
    # = 17.9 nodes in repair on average; 32 spares cover a repair window with p = 0.999.
    lam = 0.77 / 3.09
    assert rel.spare_coverage_probability(lam, 72, 32) > 0.999
    spec = _spec(repair_fraction=0.77, repair_s=72 * 3600, spares=32)
    res = simulate_run(spec, trials=300, seed=4)
    wait = 0.77 * rel.expected_spare_wait_s(lam, 72, 32)
    expected = rel.expected_wall_time_s(spec.work_s, spec.interval_s, 60, M, 600, wait_s=wait)
    assert res.wall_s.mean() == pytest.approx(expected, rel=TOL)
    # Fewer spares cost time; the analytical form over-estimates the wait then (conservative).
    few = simulate_run(_spec(repair_fraction=0.77, repair_s=72 * 3600, spares=24), 300, 4)
    assert few.wall_s.mean() > res.wall_s.mean()
    wait24 = 0.77 * rel.expected_spare_wait_s(lam, 72, 24)
    assert few.wall_s.mean() < rel.expected_wall_time_s(spec.work_s, spec.interval_s, 60, M,
                                                        600, wait_s=wait24)


def test_bad_input_is_named() -> None:
    with pytest.raises(InputError, match="mtbf_s"):
        simulate_run(_spec(mtbf_s=-1.0), trials=1)
    with pytest.raises(InputError, match="trials"):
        simulate_run(_spec(), trials=0)
    with pytest.raises(InputError, match="does not finish"):
        simulate_run(_spec(interval_s=40 * M, work_s=100 * M), trials=2, max_steps=50)


def test_the_work_of_a_monte_carlo_is_bounded() -> None:
    spec = RunSpec(work_s=1000 * HOUR, interval_s=600.0, checkpoint_s=60.0, restart_s=600.0,
                   mtbf_s=HOUR)
    with pytest.raises(InputError, match="trials: 100,001") as info:
        simulate_run(spec, trials=MAX_TRIALS + 1)
    assert info.value.field == "trials"
    # About 1,300 failures per trial x 100,000 trials: 1.3e8 simulated failures.
    with pytest.raises(InputError, match="failures per trial x 100,000 trials") as info:
        simulate_run(spec, trials=MAX_TRIALS)
    assert info.value.field == "trials"
    with pytest.raises(InputError, match="spares") as info:
        simulate_run(RunSpec(work_s=HOUR, interval_s=600.0, checkpoint_s=60.0,
                             restart_s=600.0, mtbf_s=HOUR, spares=10**6), trials=100)
    assert info.value.field == "spares"
    with pytest.raises(InputError, match="seed"):
        simulate_run(spec, trials=1, seed=-1)
