"""The Monte Carlo with the fleet model: node losses by domain, lemons, fail-slows, and the
GPU-hours lost. Means agree with the model's formulas; the tails are what the fleet adds."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from clusterwright.model import reliability as rel
from clusterwright.model.reliability import NodeLoss
from clusterwright.sim.reliability import RunSpec, simulate_run

DAY = 86400.0
M = 46.0 * 3600  # about 1,024 H100 GPUs


def _spec(**kw: object) -> RunSpec:
    base = dict(work_s=20 * DAY, interval_s=rel.daly_interval_s(30, M), checkpoint_s=30.0,
                restart_s=600.0, mtbf_s=M)
    base.update(kw)
    return RunSpec(**base)  # type: ignore[arg-type]


def test_lemons_keep_the_mean_and_widen_the_spread() -> None:
    plain = simulate_run(_spec(), trials=2000, seed=5)
    lemons = simulate_run(_spec(nodes=16, lemon_fraction=3 / 63, lemon_multiplier=20.0,
                                lemon_share=0.9), trials=2000, seed=5)
    # Mean failures agree (the published rate is the mean over the lemons drawn) ...
    assert lemons.interruptions.mean() == pytest.approx(plain.interruptions.mean(), rel=0.05)
    # ... but a 16-node job with two lemons fails far more than one with none.
    assert lemons.interruptions.std() > 1.5 * plain.interruptions.std()  # measured 1.9x
    assert lemons.lemons is not None and lemons.lemons.mean() == pytest.approx(16 * 3 / 63,
                                                                                rel=0.1)
    s = lemons.summary()
    assert "lemon_nodes" in s


def test_fail_slows_stretch_the_run_by_the_expected_factor() -> None:
    per_h, mean_s, slow = 5.85e-4 * 128, 1.2 * 3600, 1.24
    spec = _spec(fail_slow_per_hour=per_h, fail_slow_mean_s=mean_s, fail_slow_slowdown=slow)
    res = simulate_run(spec, trials=1000, seed=2)
    stretch = rel.fail_slow_stretch(5.85e-4, 128, 1.2, 1.24)
    expected = rel.expected_wall_time_s(spec.work_s * stretch, spec.interval_s, 30, M, 600)
    assert res.wall_s.mean() == pytest.approx(expected, rel=0.005)
    assert res.fail_slow_s is not None
    assert res.fail_slow_s.mean() == pytest.approx(spec.work_s * (stretch - 1), rel=0.05)


def test_a_rack_loss_without_spares_waits_its_repair() -> None:
    # Every failure takes a 4-node rack for 5 h; with no spare the job waits 5 h each time.
    loss = NodeLoss("rack", 1.0, 4, 5 * 3600.0)
    res = simulate_run(_spec(losses=(loss,), spares=0), trials=300, seed=1)
    assert np.allclose(res.spare_wait_s, res.interruptions * 5 * 3600.0)
    # Four spares cover it at once (the rack comes back 5 h later, long before the next
    # failure on average), three do not.
    four = simulate_run(_spec(losses=(loss,), spares=4), trials=300, seed=1)
    three = simulate_run(_spec(losses=(loss,), spares=3), trials=300, seed=1)
    assert four.spare_wait_s.mean() < 0.05 * res.spare_wait_s.mean()
    assert three.spare_wait_s.mean() > 0.5 * res.spare_wait_s.mean()


def test_node_resets_come_back_sooner_than_repairs() -> None:
    repair = NodeLoss("node", 1.0, 1, 72 * 3600.0)
    reset = dataclasses.replace(repair, reset_share=1.0, reset_s=4 * 3600.0)
    a = simulate_run(_spec(losses=(repair,), spares=0), trials=200, seed=3)
    b = simulate_run(_spec(losses=(reset,), spares=0), trials=200, seed=3)
    assert b.spare_wait_s.sum() / b.interruptions.sum() == pytest.approx(4 * 3600.0)
    assert a.wall_s.mean() > b.wall_s.mean()


def test_hours_lost_add_up_to_the_wall_time_over_the_work() -> None:
    spec = _spec(losses=(NodeLoss("node", 0.8, 1, 72 * 3600.0, 0.3, 4 * 3600.0),), spares=2,
                 nodes=128, lemon_fraction=0.0476, lemon_multiplier=20.0, lemon_share=0.8,
                 fail_slow_per_hour=0.07, fail_slow_mean_s=4320.0, fail_slow_slowdown=1.24)
    res = simulate_run(spec, trials=500, seed=9)
    lost = res.hours_lost()
    assert set(lost) == {"restarts", "spare_wait", "fail_slow", "checkpoints", "lost_work"}
    assert sum(lost.values()) == pytest.approx((res.wall_s.mean() - spec.work_s) / 3600,
                                               rel=1e-6)
    assert all(v >= 0 for v in lost.values())
