"""Training step time against published runs (validation/training.csv).

Targets (the issue's): every development row within 20 %, MAPE over development rows at most
10 %. Held-out rows are predicted and reported but never held to the target.
"""

from __future__ import annotations

import csv

import pytest

from clusterwright.validation.tables import TableResult, data_dir, training_table

ROW_TARGET = 0.20
MAPE_TARGET = 0.10
HELD_OUT = {
    "gptneox_20b_training_time",
    "korthikanti22_abstract_530b_mfu_seqsel",
    "korthikanti22_abstract_530b_mfu_full",
    "deepseek_v3_gpu_hours_per_1t_tokens",
}


@pytest.fixture(scope="module")
def table() -> TableResult:
    return training_table()


def _print(rows: TableResult) -> None:
    for r in rows.rows:
        print(
            f"{r.id:42s} {r.set:8s} measured {r.measured:12.3f} predicted {r.predicted:12.3f} "
            f"{r.unit:8s} error {100 * r.error:+7.2f}%  {r.detail}"
        )
    print(f"dev MAPE {100 * rows.mape:.2f}%  max {100 * rows.max_abs_error:.2f}%")


def test_every_dev_row_is_within_20pct_and_mape_within_10pct(table: TableResult) -> None:
    _print(table)
    assert len(table.dev_rows) >= 21
    for r in table.dev_rows:
        assert abs(r.error) <= ROW_TARGET, f"{r.id}: {100 * r.error:+.1f}%"
    assert table.mape <= MAPE_TARGET
    assert table.tolerance <= MAPE_TARGET


def test_held_out_rows_are_reported_but_not_held_to_the_target(table: TableResult) -> None:
    held = table.held_out_rows
    with open(data_dir() / "training.csv", newline="", encoding="utf-8") as fh:
        marked = {r["id"] for r in csv.DictReader(fh) if r["set"] == "held-out"}
    assert {r.id for r in held} == marked
    # The four held-out rows of the issue; other held-out rows (e.g. MLPerf) may be added.
    assert marked >= HELD_OUT
    assert len(held) >= len(HELD_OUT) == 4
    # reported: each has a finite prediction and the held-out MAPE is computed ...
    assert all(r.predicted > 0 for r in held)
    assert table.held_out_mape is not None and table.held_out_mape > 0
    # ... but kept out of the development MAPE and the per-row target
    assert not {r.id for r in table.dev_rows} & marked
    assert len(table.rows) == len(table.dev_rows) + len(held)


def test_dev_rows_are_predicted_with_layouts_that_fit_in_memory(table: TableResult) -> None:
    for r in table.dev_rows:
        assert r.detail, r.id
        assert "does not fit" not in r.detail, f"{r.id}: {r.detail}"
