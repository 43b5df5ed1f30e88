"""Reading a validation CSV: each row knows its file and line; a malformed file (a row with
more or fewer values than the header, an id that repeats, a missing column) is an input
error naming the line; a row's set and unit are checked; ``predict_each`` keeps malformed
rows (an error) apart from rows the model cannot predict (not covered, with the reason)."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterwright.errors import InputError, UnknownIdError
from clusterwright.validation.rows import (
    CsvRow,
    NotCoveredError,
    Row,
    bad,
    predict_each,
    read_csv,
    row_set,
    unit_scale,
)


def _csv(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "x.csv"
    p.write_text(text, encoding="utf-8")
    return p


def test_rows_carry_their_line_even_after_a_quoted_line_break(tmp_path: Path) -> None:
    rows = read_csv(_csv(tmp_path, 'id,note,value\na,"two\nlines",1\n\nb,,2\n'))
    assert [(r["id"], r.line) for r in rows] == [("a", 2), ("b", 5)]
    assert rows[0].file == str(tmp_path / "x.csv")


@pytest.mark.parametrize("text, message", [
    ("id,value\na,1,2\n", "x.csv line 2: 3 values, but the header has 2 columns"),
    ("id,value\na\n", "x.csv line 2: 1 values, but the header has 2 columns"),
    ("id,value\na,1\nb,2\na,3\n", "x.csv line 4, row a: id 'a' repeats line 2"),
])
def test_a_malformed_file_names_the_line(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(InputError) as exc:
        read_csv(_csv(tmp_path, text))
    assert message in str(exc.value)


def test_a_column_the_file_lacks_is_named_not_a_key_error(tmp_path: Path) -> None:
    (r,) = read_csv(_csv(tmp_path, "id,value\na,1\n"))
    with pytest.raises(InputError, match="no column 'unit'"):
        r["unit"]
    assert r.get("unit") is None


def test_a_missing_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        read_csv(tmp_path / "none.csv")


def test_set_and_unit() -> None:
    r = CsvRow({"id": "a", "set": "", "unit": "ms"}, "x.csv", 7)
    assert row_set(r, "dev") == "dev"
    with pytest.raises(InputError, match=r"x\.csv line 7, row a: set '' is not dev or held-out"):
        row_set(r, None)
    assert unit_scale(r, "s", "iteration_time") == pytest.approx(1e-3)
    assert unit_scale({**r, "unit": "s"}, "s", "iteration_time") == 1.0
    with pytest.raises(InputError, match="unit 'ms' is not a unit of power"):
        unit_scale(r, "kW", "power")


def test_predict_each_reports_rows_the_model_cannot_predict_and_stops_on_malformed_ones(
        ) -> None:
    rows = [CsvRow({"id": i, "set": s}, "x.csv", n)
            for n, (i, s) in enumerate([("ok", "dev"), ("gpu", "held-out"), ("why", "")], 2)]

    def predict(r: CsvRow, set_: str) -> list[Row]:
        if r["id"] == "gpu":
            raise UnknownIdError("GPU", "h20", [])
        if r["id"] == "why":
            raise NotCoveredError("a layout the model does not hold")
        return [Row(r["id"], "q", 1.0, 1.1, "u", "src", set_)]

    out, skipped = predict_each(rows, predict)
    assert [r.id for r in out] == ["ok"]
    assert [(x.id, x.line, x.set, x.reason) for x in skipped] == [
        ("gpu", 3, "held-out", "unknown GPU id 'h20'"),
        ("why", 4, "dev", "a layout the model does not hold")]

    def malformed(r: CsvRow, set_: str) -> list[Row]:
        raise bad(r, "value", "'x' is not a number")

    with pytest.raises(InputError, match=r"x\.csv line 2, row ok: value 'x' is not a number"):
        predict_each(rows, malformed)
