"""Running a sweep: the process pool gives the same rows as in-process, a failing point is an
error row and the sweep goes on, an infeasible point is a row, and catalog ids are checked
before anything runs. A stand-in planner (``fake_plan``) keeps these fast; the real one runs
in tests/cli/test_sweep_cmd.py."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from clusterwright.catalog.registry import Catalog
from clusterwright.errors import InputError
from clusterwright.plan.sweep import (
    Metrics,
    Row,
    best_rows,
    check_catalog,
    pareto,
    require_ray,
    run_sweep,
)
from clusterwright.spec.scenario import Scenario
from clusterwright.spec.sweep import Sweep, SweepError, load_sweep, loads_sweep

SWEEP = """\
scenario:
  name: "fake"
  seed: 1
  workloads:
    - {kind: "training", name: "t", model: "llama-3.1-8b", tokens: 1.0e12, deadline_days: 30}
  constraints: {gpus: ["h100-sxm"]}
variables:
  constraints.power_per_rack_kw: [20, 40, 60]
  constraints.electricity_usd_per_kwh: [0.1, 0.13]
"""


@dataclass
class FakeBlueprint:
    row: Metrics

    def metrics(self) -> Metrics:
        return self.row


def fake_plan(scenario: Scenario, cat: Catalog, *, quick: bool = False,
              progress: Any = None) -> FakeBlueprint:
    """cost = kW x $1M + price x $100M; days = 1200 / kW; below 30 kW/rack: infeasible;
    at $0.13/kWh: a planner crash."""
    c = scenario.constraints
    if c.electricity_usd_per_kwh == 0.13:
        raise RuntimeError("boom: planner failed\nsecond line of the message")
    kw = c.power_per_rack_kw
    return FakeBlueprint({
        "feasible": kw >= 30,
        "gpu": c.gpus[0] if isinstance(c.gpus, list) else None,
        "total_cost_usd": kw * 1e6 + c.electricity_usd_per_kwh * 1e8,
        "time_to_train_days": 1200 / kw,
        "binding_constraint": None if kw >= 30 else "power_per_rack_kw",
        "quick": quick,
    })


@pytest.fixture(scope="module")
def sweep() -> Sweep:
    return loads_sweep(SWEEP, "sweep.yaml")


def test_local_process_pool_equals_in_process(sweep: Sweep, catalog: Catalog) -> None:
    serial = run_sweep(sweep, catalog, backend="serial", plan=fake_plan)
    local = run_sweep(sweep, catalog, backend="local", workers=2, plan=fake_plan)
    assert [r.as_dict() for r in local.rows] == [r.as_dict() for r in serial.rows]
    assert [r.index for r in local.rows] == list(range(6))
    assert local.workers == 2 and local.backend == "local"


def test_a_failing_point_is_an_error_row_and_the_sweep_goes_on(
    sweep: Sweep, catalog: Catalog
) -> None:
    seen: list[int] = []
    res = run_sweep(sweep, catalog, backend="serial", plan=fake_plan,
                    on_row=lambda r: seen.append(r.index))
    assert sorted(seen) == list(range(6))
    # Grid order: (20, .1), (20, .13), (40, .1), (40, .13), (60, .1), (60, .13).
    errors = [r for r in res.rows if r.error is not None]
    assert [r.index for r in errors] == [1, 3, 5]
    assert errors[0].error == "RuntimeError: boom: planner failed"  # first line only
    assert errors[0].metrics is None and not errors[0].feasible
    ok = res.rows[2]
    # 40 kW x $1M + 0.1 x $100M = $50M; 1200 / 40 = 30 days; quick by default.
    assert ok.metrics == {"feasible": True, "gpu": "h100-sxm", "total_cost_usd": 50e6,
                          "time_to_train_days": 30.0, "binding_constraint": None, "quick": True}


def test_an_infeasible_point_is_a_row_not_an_error(sweep: Sweep, catalog: Catalog) -> None:
    res = run_sweep(sweep, catalog, backend="serial", plan=fake_plan)
    row = res.rows[0]  # 20 kW/rack < 30
    assert row.error is None and row.metrics is not None
    assert row.metrics["feasible"] is False and not row.feasible
    assert row.metrics["binding_constraint"] == "power_per_rack_kw"
    assert row.values == {"constraints.power_per_rack_kw": 20,
                          "constraints.electricity_usd_per_kwh": 0.1}


def _row(i: int, cost: float, days: float, feasible: bool = True) -> Row:
    return Row(i, {}, {"feasible": feasible, "total_cost_usd": cost,
                       "time_to_train_days": days}, None)


def test_best_and_pareto_use_feasible_rows_only() -> None:
    rows = [_row(0, 10, 50), _row(1, 20, 30), _row(2, 15, 60), _row(3, 30, 30),
            _row(4, 5, 10, feasible=False), Row(5, {}, None, "boom")]
    assert [r.index for r in best_rows(rows, n=2)] == [0, 2]
    # Point 2 (15, 60) is beaten by point 0 (10, 50); point 3 (30, 30) ties point 1 on days
    # at a higher cost; the infeasible point 4 does not count.
    assert [r.index for r in pareto(rows, "total_cost_usd", "time_to_train_days")] == [0, 1]


def test_unknown_gpu_id_names_the_variable_and_its_line(catalog: Catalog) -> None:
    s = loads_sweep(SWEEP.replace('[0.1, 0.13]', '[0.1]') + '  constraints.gpus:\n'
                    '    - "h100-sxm"\n    - "h100-sx"\n', "sweep.yaml")
    with pytest.raises(SweepError) as e:
        check_catalog(s, catalog)
    msg = str(e.value)
    assert "variables.constraints.gpus (line 12)" in msg
    assert "'h100-sx'" in msg and "did you mean" in msg


def test_workers_must_be_positive(sweep: Sweep, catalog: Catalog) -> None:
    with pytest.raises(InputError, match="--workers"):
        run_sweep(sweep, catalog, workers=0, plan=fake_plan)


def test_missing_ray_is_a_user_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray now raises ImportError
    with pytest.raises(InputError, match=r"clusterwright\[ray\]"):
        require_ray()


def test_shipped_example_sweeps_validate(catalog: Catalog) -> None:
    root = Path(__file__).resolve().parents[2] / "examples" / "sweeps"
    files = sorted(root.glob("*.yaml"))
    assert files
    for f in files:
        s = load_sweep(f)
        check_catalog(s, catalog)
        assert 2 <= len(s.points) <= 12, f
