"""The one reliability pipeline: interruptions, checkpoint plan, spares, Monte Carlo."""

from __future__ import annotations

import pytest

from clusterwright.catalog.registry import Catalog
from clusterwright.errors import InfeasibleError
from clusterwright.model import reliability as rel
from clusterwright.plan.reliability import RunInputs, forecast_run, interruptions


def _fleet(catalog: Catalog, gpus: int) -> tuple[list, rel.FleetUnits]:  # type: ignore[type-arg]
    modes = rel.modes_for_gpu(catalog.all("failure_modes"), "h100-sxm")
    return modes, rel.fleet_units(gpus, 8, 64)


def test_interruptions_scale_with_the_window_and_agree_with_the_mtbf(catalog: Catalog) -> None:
    modes, units = _fleet(catalog, 16384)
    day = interruptions(modes, units, 24.0)
    week = interruptions(modes, units, 7 * 24.0)
    assert week.total == pytest.approx(7 * day.total, rel=1e-12)
    # A Poisson process: the expected count over a window is the window over the MTBF.
    assert day.total == pytest.approx(24.0 / day.job_mtbf_hours, rel=1e-9)
    assert sum(day.by_category.values()) == pytest.approx(day.total, rel=1e-12)
    assert set(day.categories) >= set(day.by_cause)


def test_forecast_uses_daly_and_its_monte_carlo_mean_matches_the_analytical_ettr(
    catalog: Catalog,
) -> None:
    modes, units = _fleet(catalog, 16384)
    inter = interruptions(modes, units, 24.0)
    fc = forecast_run(inter, RunInputs(work_s=30 * rel.DAY, checkpoint_write_s=60.0,
                                       restart_s=600.0, repair_hours=24.0, trials=400, seed=3))
    assert fc.interval_s == fc.checkpoint.daly_interval_s
    assert fc.spare is None and fc.spare_wait_s == 0.0
    assert fc.summary["ettr"]["mean"] == pytest.approx(fc.analytical_ettr, abs=0.005)
    assert fc.analytical_ettr == pytest.approx(fc.checkpoint.ettr, rel=1e-6)


def test_hot_spares_add_a_wait_that_lowers_the_ettr(catalog: Catalog) -> None:
    modes, units = _fleet(catalog, 2048)
    inter = interruptions(modes, units, 24.0)
    base = RunInputs(work_s=10 * rel.DAY, checkpoint_write_s=60.0, restart_s=600.0,
                     repair_hours=72.0, trials=50)
    none = forecast_run(inter, base)
    one = forecast_run(inter, RunInputs(**{**base.__dict__, "hot_spares": 0}))
    assert one.spare is not None and one.spare_wait_s > 0
    assert one.analytical_ettr < none.analytical_ettr


def test_nothing_that_can_fail_is_infeasible_naming_gpus() -> None:
    inter = interruptions([], rel.fleet_units(8, 8, 64), 24.0)
    with pytest.raises(InfeasibleError) as err:
        forecast_run(inter, RunInputs(work_s=rel.DAY, checkpoint_write_s=1.0, restart_s=1.0,
                                      repair_hours=1.0))
    assert err.value.field == "gpus"
