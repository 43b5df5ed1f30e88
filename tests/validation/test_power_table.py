"""The power validation table: published server and cluster power, predicted by the power plan."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from clusterwright.errors import InputError
from clusterwright.validation.power_table import power_table
from clusterwright.validation.rows import TableResult, data_dir
from clusterwright.validation.tables import TABLES
from tests.validation import csvrows
from tests.validation.shared import shipped_table


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> TableResult:
    return shipped_table("power", tmp_path_factory)


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


SU = "dgx_b200_su_32_nodes"


def test_a_server_the_catalog_lacks_is_not_covered(tmp_path: Path) -> None:
    _, rows = csvrows.shipped("power.csv")
    t = power_table(path=csvrows.write(tmp_path / "p.csv", "power.csv", SU,
                                       csvrows.like(rows[SU], server="hgx-h20")))
    assert [r.id for r in t.rows] == [SU]
    (nc,) = t.not_covered
    assert nc.line == 3 and "unknown server id 'hgx-h20'" in nc.reason


def test_power_in_watts_is_compared_in_watts(tmp_path: Path) -> None:
    _, rows = csvrows.shipped("power.csv")
    row = rows["dgx_h100_typical_under_load"]
    w = csvrows.like(row, unit="W", value="7500")
    kw, in_w = power_table(path=csvrows.write(tmp_path / "p.csv", "power.csv", row, w)).rows
    assert in_w.predicted == pytest.approx(1e3 * kw.predicted)
    assert in_w.error == pytest.approx(kw.error)


@pytest.mark.parametrize("changes, message", [
    ({"nodes": "32 nodes"}, "nodes '32 nodes' is not an integer"),
    ({"quantity": "rack_kw"}, "quantity 'rack_kw' is not one of"),
    ({"value": "~458"}, "value '~458' is not a number"),
    ({"set": "test"}, "set 'test' is not dev or held-out"),
    ({"unit": "kWh"}, "unit 'kWh' is not a unit of servers_nameplate_kw (kW or another power "
                      "unit)"),
])
def test_a_malformed_power_row_names_the_line_and_column(
        tmp_path: Path, changes: dict[str, str], message: str) -> None:
    _, rows = csvrows.shipped("power.csv")
    with pytest.raises(InputError) as exc:
        power_table(path=csvrows.write(tmp_path / "p.csv", "power.csv", SU,
                                       csvrows.like(rows[SU], **changes)))
    assert f"p.csv line 3, row {SU}_new: {message}" in str(exc.value)
