"""The serving validation table: TensorRT-LLM measurements predicted by the step model and the
request-level simulator, held to the issue's targets."""

from __future__ import annotations

import csv

import pytest

from clusterwright.validation.serving_table import serving_table
from clusterwright.validation.tables import TableResult, data_dir


@pytest.fixture(scope="module")
def table() -> TableResult:
    return serving_table()


def _mape(table: TableResult, quantity: str) -> float:
    rows = [r for r in table.dev_rows if r.quantity == quantity]
    assert rows, quantity
    return sum(abs(r.error) for r in rows) / len(rows)


def test_throughput_rows_within_15_percent(table: TableResult) -> None:
    assert _mape(table, "output_throughput") <= 0.15


def test_ttft_rows_within_20_percent(table: TableResult) -> None:
    assert _mape(table, "ttft") <= 0.20


def test_no_row_is_wildly_off(table: TableResult) -> None:
    assert table.max_abs_error < 0.30


def test_every_row_cites_its_source() -> None:
    with open(data_dir() / "serving.csv", newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) >= 16
    assert all(len(r["source"]) > 10 and r["verify"] in ("V", "S") for r in rows)
