"""report/xlsx.py: the spreadsheet of every shipped example opens with openpyxl, has its
sheets, and its totals are blueprint.json's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from openpyxl import load_workbook  # type: ignore[import-untyped]

from clusterwright.report.xlsx import render_xlsx

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(p.parent.name for p in (ROOT / "examples").glob("*/blueprint.json"))
SHEETS = ["Summary", "BOM", "Cabling", "Racks", "Costs by year", "Assumptions"]


def _rows(ws: Any) -> list[tuple[Any, ...]]:
    return list(ws.iter_rows(min_row=2, values_only=True))


@pytest.mark.parametrize("name", EXAMPLES)
def test_workbook_totals_equal_the_blueprints(name: str, tmp_path: Path) -> None:
    bp = json.loads((ROOT / "examples" / name / "blueprint.json").read_text())
    path = tmp_path / "report.xlsx"
    render_xlsx(bp, path)
    wb = load_workbook(path)
    assert wb.sheetnames == SHEETS
    summary = dict(_rows(wb["Summary"]))
    rec, tco = bp["recommendation"], bp["tco"]
    for label, key in (("total cost (USD)", "total_cost_usd"), ("capex (USD)", "capex_usd"),
                       ("opex per year (USD)", "annual_opex_usd"),
                       ("cost per used GPU-hour (USD)", "cost_per_gpu_hour_usd")):
        assert summary[label] == pytest.approx(rec[key], rel=1e-12), label  # xlsx digits
    # Capex by category sums to the capex; the BOM lines to the servers and network.
    cats = [v for k, v in summary.items() if str(k).startswith("capex: ")]
    assert sum(cats) == pytest.approx(rec["capex_usd"], rel=1e-12)
    bom = _rows(wb["BOM"])
    assert len(bom) == len(bp["bom"])
    assert sum(r[8] or 0 for r in bom) == pytest.approx(
        sum(b["total_usd"] or 0 for b in bp["bom"]), rel=1e-12)
    cb = tco["capex_by_category_usd"]
    # ... and the storage tier's units, listed as bought (its capex line may add RAG servers).
    units = [b for b in bp["bom"] if b["category"] == "storage"]
    assert [(b["part"], b["quantity"], b["total_usd"]) for b in units] == [
        (bp["storage"]["system"], bp["storage"]["units"], bp["storage"]["price_usd"])]
    assert sum(r[8] or 0 for r in bom) == pytest.approx(
        cb["servers"] + cb["network"] + cb["optics_and_cables"] + bp["storage"]["price_usd"],
        rel=1e-12)
    # Costs by year: capex at year 0, then the opex; the last cumulative is the on-prem total.
    years = _rows(wb["Costs by year"])
    assert years[0][1] == pytest.approx(tco["capex_usd"], rel=1e-12)
    assert years[-1][7] == pytest.approx(rec["on_prem_total_cost_usd"], rel=1e-9)
    assert len(_rows(wb["Racks"])) == len(bp["racks"])
    assert len(_rows(wb["Cabling"])) == len(bp["fabric"]["cabling"])
    links = {r[0]: r[2] for r in _rows(wb["Cabling"])}
    for tier, n in bp["fabric"]["links_by_tier"].items():
        if n:
            assert links[tier] == n
    assert any(str(r[0]).startswith("servers:") for r in _rows(wb["Assumptions"]))


def test_an_infeasible_blueprint_still_writes_a_workbook(tmp_path: Path) -> None:
    from tests.report import blueprints

    path = tmp_path / "r.xlsx"
    render_xlsx(blueprints.infeasible(), path)
    wb = load_workbook(path)
    assert wb.sheetnames == SHEETS and _rows(wb["Costs by year"]) == []
