"""`clusterwright validate`: predictions against published measurements."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from clusterwright.cli.main import app
from clusterwright.validation.power_table import power_table
from clusterwright.validation.tables import TABLES
from tests.cli.helpers import json_ok, user_error
from tests.validation import csvrows

runner = CliRunner()


def cw(*args: str) -> Result:
    return runner.invoke(app, list(args), env={"CLUSTERWRIGHT_CATALOG": None})


@pytest.fixture(scope="module")
def memory_table() -> dict[str, Any]:
    r = cw("validate", "--table", "memory", "--json")
    assert r.exit_code == 0, r.output
    assert r.stderr == ""
    return json.loads(r.stdout)["tables"]["memory"]


# `validate --json` without --table (every table and the serving-silicon summary) is tested in
# tests/validation/test_serving_silicon.py, which predicts the shipped serving-silicon table
# once for every test that reads it whole.


def test_memory_table_mape_is_below_5_percent(memory_table: dict[str, Any]) -> None:
    assert memory_table["mape"] < 0.05
    assert memory_table["mape"] <= memory_table["tolerance"]


def test_memory_table_reports_error_per_row(memory_table: dict[str, Any]) -> None:
    rows = memory_table["per_row"]
    assert len(rows) == memory_table["rows"] >= 10
    ids = [x["id"] for x in rows]
    assert len(ids) == len(set(ids))
    for x in rows:
        assert x["measured"] > 0 and x["predicted"] > 0, x["id"]
        assert x["unit"]
        assert x["quantity"]
        assert x["error"] == pytest.approx((x["predicted"] - x["measured"]) / x["measured"])


def test_memory_table_summary_matches_its_rows(memory_table: dict[str, Any]) -> None:
    errors = [abs(x["error"]) for x in memory_table["per_row"]]
    assert memory_table["mape"] == pytest.approx(sum(errors) / len(errors))
    assert memory_table["max_abs_error"] == pytest.approx(max(errors))
    assert memory_table["file"].endswith(".csv")


def test_validate_table_memory_human_output(memory_table: dict[str, Any]) -> None:
    r = cw("validate", "--table", "memory")
    assert r.exit_code == 0, r.output
    assert r.stderr == ""
    out = r.stdout
    assert "memory" in out
    assert f"{memory_table['rows']} development rows" in out
    assert f"MAPE {100 * memory_table['mape']:.2f}%" in out
    assert "{" not in out


def test_unknown_table_exits_2_naming_the_flag_and_the_tables() -> None:
    r = cw("validate", "--table", "nope", "--json")
    assert r.exit_code == 2
    assert r.stdout == ""
    assert "--table" in r.stderr
    assert "'nope'" in r.stderr
    assert "memory" in r.stderr


def _power_file(tmp_path: Path, **changes: str) -> Path:
    _, rows = csvrows.shipped("power.csv")
    base = rows["dgx_b200_su_32_nodes"]
    return csvrows.write(tmp_path / "p.csv", "power.csv", base, csvrows.like(base, **changes))


def test_a_row_the_model_cannot_predict_is_reported_and_the_others_still_print(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = _power_file(tmp_path, server="hgx-h20")
    monkeypatch.setitem(TABLES, "power", lambda: power_table(path=p))
    out = json_ok(cw("validate", "--table", "power", "--json"))["tables"]["power"]
    assert [x["id"] for x in out["per_row"]] == ["dgx_b200_su_32_nodes"]
    assert out["not_covered_rows"] == 1
    (nc,) = out["not_covered"]
    assert nc["id"] == "dgx_b200_su_32_nodes_new" and nc["line"] == 3 and nc["set"] == "dev"
    assert "unknown server id 'hgx-h20'" in nc["reason"]
    r = cw("validate", "--table", "power")
    assert r.exit_code == 0, r.output
    assert "dgx_b200_su_32_nodes" in r.stdout
    assert "not covered (1 rows" in r.stdout and "hgx-h20" in r.stdout
    assert "power: 1 development rows" in r.stdout


def test_a_malformed_row_exits_2_naming_the_line_and_column(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = _power_file(tmp_path, nodes="32 nodes")
    monkeypatch.setitem(TABLES, "power", lambda: power_table(path=p))
    err = user_error(cw("validate", "--table", "power", "--json"))
    assert "p.csv line 3, row dgx_b200_su_32_nodes_new: nodes '32 nodes' is not an integer" in err


def test_a_group_line_describes_its_worst_row_and_every_set_it_holds(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The one-line-per-group view printed the group's first row's detail beside its worst
    row's name, and the first row's set for a group of development and held-out rows."""
    import io

    from rich.console import Console

    from clusterwright.cli import validate_cmd
    from clusterwright.validation.accelerators_table import accelerators_table

    tab = accelerators_table()
    rows = [x for x in tab.rows if x.group == "gaudi-2024"]
    worst = max(rows, key=lambda x: abs(x.error))
    assert {x.set for x in rows} == {"dev", "held-out"}
    assert rows[0].detail != worst.detail  # the case the old view got wrong
    out = io.StringIO()
    monkeypatch.setattr(validate_cmd, "console", Console(file=out, width=400))
    validate_cmd._print_groups(tab)
    (line,) = [x for x in out.getvalue().splitlines() if "gaudi-2024" in x]
    assert worst.id in line and worst.detail in line and "dev + held-out" in line
