"""Sweep outputs: results.csv and results.json row by row, an offline sweep.html with plotly.js
embedded once, and the --out directory rules (refuse non-empty without --force)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from plotly.offline import get_plotlyjs  # type: ignore[import-untyped]

from clusterwright.catalog.registry import Catalog
from clusterwright.errors import InputError
from clusterwright.export.sweep import display, results_csv, results_json, sweep_html, write_sweep
from clusterwright.plan.sweep import SweepResult, run_sweep
from clusterwright.spec.sweep import loads_sweep
from tests.plan.test_sweep import SWEEP, fake_plan


@pytest.fixture(scope="module")
def result(catalog: Catalog) -> SweepResult:
    text = SWEEP.replace("  constraints.power_per_rack_kw", '  constraints.gpus: ["h100-sxm", '
                         '"<b>x</b>"]\n  constraints.power_per_rack_kw')
    # An id with markup would fail the catalog check; the writer never sees the catalog.
    return run_sweep(loads_sweep(text, "sweep.yaml"), catalog, backend="serial", plan=fake_plan)


def test_display_joins_id_lists() -> None:
    assert display(["h100-sxm", "b200"]) == "h100-sxm+b200"
    assert display(0.1) == "0.1" and display(None) == "" and display(True) == "true"


def test_csv_has_one_row_per_point_with_variables_metrics_and_error(
    result: SweepResult,
) -> None:
    rows = list(csv.DictReader(io.StringIO(results_csv(result))))
    assert len(rows) == 12  # 2 GPUs x 3 kW x 2 prices
    head = list(rows[0])
    assert head[:4] == ["point", "constraints.gpus", "constraints.power_per_rack_kw",
                        "constraints.electricity_usd_per_kwh"]
    assert head[-1] == "error" and "total_cost_usd" in head
    r = rows[2]  # h100-sxm, 40 kW, $0.10: 40e6 + 0.1 x 1e8 = 5e7
    assert (r["constraints.gpus"], r["constraints.power_per_rack_kw"]) == ("h100-sxm", "40")
    assert float(r["total_cost_usd"]) == 5e7 and r["feasible"] == "true" and r["error"] == ""
    assert rows[1]["error"] == "RuntimeError: boom: planner failed"
    assert rows[1]["total_cost_usd"] == ""


def test_json_holds_rows_counts_and_pareto(result: SweepResult) -> None:
    d = results_json(result)
    json.dumps(d, allow_nan=False)  # strict JSON
    assert (d["points"], d["feasible"], d["infeasible"], d["errors"]) == (12, 4, 2, 6)
    assert d["rows"][2]["variables"]["constraints.gpus"] == ["h100-sxm"]
    assert d["run"]["backend"] == "serial"
    # Feasible points: 40 and 60 kW at $0.10 for each GPU: costs 50M/70M, days 30/20; no
    # point dominates another, so the front is 40 kW then 60 kW of the first GPU (ties by
    # point order keep the first).
    assert d["pareto"]["total_cost_usd__time_to_train_days"] == [2, 4]
    assert d["best_by_cost"][:2] == [2, 8]


def test_html_is_offline_with_plotly_once_and_escaped_names(result: SweepResult) -> None:
    page = sweep_html(result)
    js = get_plotlyjs()
    assert page.count(js[:300]) == 1
    assert "<script src=" not in page and "<link" not in page
    assert "&lt;b&gt;x&lt;/b&gt;" in page and "<b>x</b>" not in page.replace(js, "")
    assert 'id="fig-pareto-0"' in page  # cost vs time to train
    assert 'id="fig-0-0"' in page  # cost against the first variable
    assert "Points that failed" in page


def test_write_refuses_a_non_empty_dir_then_replaces_with_force(
    result: SweepResult, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "old.txt").write_text("keep")
    with pytest.raises(InputError, match="set `force`"):
        write_sweep(result, out)
    assert (out / "old.txt").exists()
    files = write_sweep(result, out, force=True)
    assert sorted(files) == ["results.csv", "results.json", "sweep.html"]
    assert sorted(p.name for p in out.iterdir()) == sorted(files)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temp left


def test_a_metric_spanning_decades_gets_a_log_axis() -> None:
    from clusterwright.export.sweep import spans_decades

    # One $2B point would flatten $20M-$80M points on a linear axis.
    assert spans_decades([2e7, 5e7, 8e7, 2e9])
    assert not spans_decades([2e7, 5e7, 8e7])
    assert not spans_decades([0.0, 1.0, 100.0])  # a zero has no place on a log axis
    assert not spans_decades([None, "x"])
