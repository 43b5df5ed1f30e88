"""Fabric switch and cable counts against published designs (validation/fabric.csv).

Counts are integers: every row must match exactly (DGX SuperPOD B200 Table 3 and both DGX B300
Table 3s, Spectrum-X twin-plane and XDR, through the full ``plan_fabric`` path; the two- and
three-tier fat-tree maxima through ``fabric_shape``).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from clusterwright.cli.main import app
from clusterwright.errors import InputError
from clusterwright.validation.fabric_table import CountRow, fabric_table
from clusterwright.validation.rows import TableResult, data_dir
from clusterwright.validation.tables import TABLES
from tests.validation import csvrows
from tests.validation.shared import shipped_table

QUANTITIES = {
    "leaf_switches",
    "spine_switches",
    "core_switches",
    "node_leaf_links",
    "leaf_spine_links",
    "spine_core_links",
}
SUPERPOD_B200 = [f"superpod_b200_{su}su" for su in (2, 4, 8, 16, 32, 64)]
FAT_TREE_MAXIMA = [f"fattree_{t}tier_r{k}" for k in (64, 128, 144) for t in (2, 3)]


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> TableResult:
    return shipped_table("fabric", tmp_path_factory)


def _csv_rows() -> list[dict[str, str]]:
    with open(data_dir() / "fabric.csv", newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def test_every_published_count_is_predicted_exactly(table: TableResult) -> None:
    for r in table.rows:
        print(
            f"{r.id:44s} measured {r.measured:9.0f} predicted {r.predicted:9.0f} "
            f"{r.unit:8s} error {100 * r.error:+6.2f}%  {r.detail}"
        )
        assert r.predicted == r.measured, f"{r.id}: {r.predicted:.0f} != {r.measured:.0f}"
    assert table.mape == 0.0
    assert table.max_abs_error == 0.0
    assert table.mape <= table.tolerance < 1e-6


def test_superpod_b200_six_designs_by_six_quantities_and_the_fat_tree_maxima(
    table: TableResult,
) -> None:
    by_design: dict[str, set[str]] = {}
    for r in table.rows:
        by_design.setdefault(r.id.split(".")[0], set()).add(r.quantity)
    for design in SUPERPOD_B200 + FAT_TREE_MAXIMA:
        assert by_design.get(design, set()) >= QUANTITIES, design
    for k, total in ((64, 5120), (128, 20480), (144, 25920)):  # 5k^2/4 (Al-Fares et al.)
        row = next(r for r in table.rows if r.id == f"fattree_3tier_r{k}.switches_total")
        assert row.measured == row.predicted == total
    assert {"superpod_b300_spx_1su", "superpod_b300_spx_16su", "superpod_b300_xdr_18su"} <= set(
        by_design
    )
    assert len(table.rows) >= 6 * 6 + 6 * 6 + 3
    assert len({r.id for r in table.rows}) == len(table.rows)
    assert all(r.set == "dev" and r.unit in ("switches", "links") for r in table.rows)


def test_catalog_designs_go_through_plan_fabric_and_the_rest_through_fabric_shape(
    table: TableResult,
) -> None:
    for r in table.rows:
        if r.id.startswith("superpod_b200"):
            assert r.detail.startswith("plan_fabric dgx-b200"), r.id
        elif r.id.startswith("superpod_b300_spx"):
            # DGX B300 in the catalog: the Spectrum-X rows are real twin-plane designs.
            assert r.detail.startswith("plan_fabric dgx-b300"), r.id
            assert r.detail.endswith("2 planes"), r.id
        elif r.id.startswith("superpod_b300_xdr"):
            assert r.detail.startswith("plan_fabric dgx-b300"), r.id
            assert "q3400 r144" in r.detail and "planes" not in r.detail, r.id
        else:
            assert r.detail.startswith("fabric_shape"), r.id


def test_superpod_b300_table_3_of_both_editions_is_matched(table: TableResult) -> None:
    got = {r.id: r.predicted for r in table.rows if r.id.startswith("superpod_b300")}
    # Spectrum-X twin-plane (64-node SU) and XDR (72-node SU) RAs, Table 3: (leaf, spine).
    for su, leaf, spine in ((1, 16, 8), (2, 32, 16), (4, 64, 32), (8, 128, 64), (16, 256, 128)):
        assert got[f"superpod_b300_spx_{su}su.leaf_switches"] == leaf
        assert got[f"superpod_b300_spx_{su}su.spine_switches"] == spine
    for su, leaf, spine in ((1, 8, 4), (2, 16, 8), (4, 32, 18), (8, 64, 36), (18, 144, 72)):
        assert got[f"superpod_b300_xdr_{su}su.leaf_switches"] == leaf
        # 4 and 8 SU: 18 and 36 spines, not 16 and 32, so 72 uplinks split evenly.
        assert got[f"superpod_b300_xdr_{su}su.spine_switches"] == spine
        assert got[f"superpod_b300_xdr_{su}su.node_leaf_links"] == su * 72 * 8


def test_every_csv_row_cites_a_source_and_a_verify_tag() -> None:
    rows = _csv_rows()
    assert len(rows) >= len(SUPERPOD_B200) + len(FAT_TREE_MAXIMA) + 3
    for r in rows:
        assert r["source"].strip(), r["id"]
        assert r["verify"] in ("V", "S", "M", "D"), r["id"]
    assert all(r["verify"] == "V" for r in rows if r["id"].startswith("superpod_"))
    assert all(r["verify"] == "D" for r in rows if r["id"].startswith("fattree_"))


def test_a_count_published_as_zero_is_exact_only_when_predicted_zero() -> None:
    def row(measured: float, predicted: float) -> CountRow:
        return CountRow("x", "core_switches", measured, predicted, "switches", "s")

    assert row(0, 0).error == 0.0
    assert row(0, 4).error == float("inf")
    assert row(8, 6).error == pytest.approx(-0.25)


def test_validate_cli_prints_the_fabric_table_and_includes_it_by_default(
        table: TableResult, monkeypatch: pytest.MonkeyPatch) -> None:
    runner = CliRunner()
    env = {"CLUSTERWRIGHT_CATALOG": None}
    assert "fabric" in TABLES
    assert TABLES["fabric"] is fabric_table
    # The command prints the table the fixture computed (the default catalog, as env gives
    # the command) instead of planning the sixteen designs twice more.
    monkeypatch.setitem(TABLES, "fabric", lambda: table)
    r = runner.invoke(app, ["validate", "--table", "fabric", "--json"], env=env)
    assert r.exit_code == 0, r.output
    t = json.loads(r.stdout)["tables"]["fabric"]
    assert t["rows"] == len(t["per_row"]) >= 75
    assert t["max_abs_error"] == 0.0
    r = runner.invoke(app, ["validate", "--table", "fabric"], env=env)
    assert r.exit_code == 0, r.output
    assert f"fabric: {t['rows']} development rows, MAPE 0.00%" in r.stdout


SU2 = "superpod_b200_2su"


def test_a_server_the_catalog_lacks_is_not_covered(tmp_path: Path) -> None:
    _, rows = csvrows.shipped("fabric.csv")
    t = fabric_table(csvrows.write(tmp_path / "f.csv", "fabric.csv", SU2,
                                   csvrows.like(rows[SU2], server_id="dgx-h20")))
    assert {r.id.split(".")[0] for r in t.rows} == {SU2}
    (nc,) = t.not_covered
    assert nc.line == 3 and "dgx-h20" in nc.reason


def test_a_malformed_count_names_the_line_and_column(tmp_path: Path) -> None:
    _, rows = csvrows.shipped("fabric.csv")
    with pytest.raises(InputError, match=r"f\.csv line 3, row .*: leaf 'sixteen' is not an "
                       "integer"):
        fabric_table(csvrows.write(tmp_path / "f.csv", "fabric.csv", SU2,
                                   csvrows.like(rows[SU2], leaf="sixteen")))
