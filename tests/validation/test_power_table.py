"""The power validation table: published server and cluster power, predicted by the power plan."""

from __future__ import annotations

import csv

import pytest

from clusterwright.validation.power_table import power_table
from clusterwright.validation.rows import TableResult, data_dir
from clusterwright.validation.tables import TABLES


@pytest.fixture(scope="module")
def table() -> TableResult:
    return power_table()


def test_registered() -> None:
    assert "power" in TABLES


def test_within_tolerance(table: TableResult) -> None:
    assert table.mape <= table.tolerance
    assert table.max_abs_error < 0.20


def test_b200_scalable_unit_is_the_nameplate_sum(table: TableResult) -> None:
    row = next(r for r in table.rows if r.id == "dgx_b200_su_32_nodes")
    assert row.predicted == pytest.approx(32 * 14.3)


def test_measured_maximum_is_above_our_typical(table: TableResult) -> None:
    row = next(r for r in table.rows if r.id == "latif_h100_hgx_training_max")
    assert row.predicted < row.measured


def test_every_row_cites_its_source() -> None:
    with open(data_dir() / "power.csv", newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) >= 4
    for r in rows:
        assert len(r["source"]) > 20 and r["verify"] in {"V", "S", "M", "D"}
