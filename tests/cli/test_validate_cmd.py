"""`clusterwright validate`: predictions against published measurements."""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from clusterwright.cli.main import app

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
