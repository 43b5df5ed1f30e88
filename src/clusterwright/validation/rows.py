"""What every validation table returns: measured rows with our prediction and error, and how
a table reads its CSV of published measurements from ``validation/``.

A table reads its rows with ``read_csv`` (each row knows its file and line) and predicts them
with ``predict_each``, which keeps two kinds of trouble apart:

- a malformed value (not a number, an unknown metric or ``set``, a unit of another kind) is a
  ``BadRowError``, an input error naming the file, the line and the column (exit 2);
- a well-formed row the model cannot predict (a GPU, model, stack or server the catalog
  lacks, a layout or combination the model does not support) is not covered: it is reported
  with its reason (``TableResult.not_covered``), counted apart from the MAPE, and the table's
  other rows are predicted as usual.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from clusterwright.errors import ClusterwrightError, InputError

SETS = ("dev", "held-out")
MAX_CSV_BYTES = 64 << 20  # a measurement table is read whole


@dataclass(frozen=True)
class Row:
    """One measured value, our prediction and the relative error."""

    id: str
    quantity: str
    measured: float
    predicted: float
    unit: str
    source: str
    set: str = "dev"  # "dev": used to calibrate the catalog; "held-out": never looked at then
    detail: str = ""
    group: str = ""  # rows that belong together (one curve, one source table)
    tags: tuple[tuple[str, str], ...] = ()  # regime: (stack, ...), (precision, ...), ...

    def tag(self, name: str) -> str:
        return dict(self.tags).get(name, "")

    @property
    def error(self) -> float:
        """Signed relative error, (predicted - measured) / measured."""
        return (self.predicted - self.measured) / self.measured


@dataclass(frozen=True)
class NotCovered:
    """A well-formed row the model cannot predict, and why (kept out of every MAPE)."""

    id: str
    line: int
    set: str
    reason: str


@dataclass(frozen=True)
class TableResult:
    name: str
    file: str
    rows: list[Row]
    tolerance: float  # the MAPE this table is held to by the tests
    not_covered: list[NotCovered] = field(default_factory=list)

    @property
    def mape(self) -> float:
        """Mean absolute percentage error over the development rows (NaN for a table whose
        rows are all held out: nothing was fitted on it)."""
        return mape(self.dev_rows) if self.dev_rows else math.nan

    @property
    def max_abs_error(self) -> float:
        return max((abs(r.error) for r in self.dev_rows), default=math.nan)

    @property
    def dev_rows(self) -> list[Row]:
        return [r for r in self.rows if r.set == "dev"]

    @property
    def held_out_rows(self) -> list[Row]:
        return [r for r in self.rows if r.set == "held-out"]

    @property
    def held_out_mape(self) -> float | None:
        rows = self.held_out_rows
        return mape(rows) if rows else None

    def mape_by(self, key: str, subset: str = "dev") -> dict[str, tuple[int, float, float]]:
        """(rows, MAPE, max |error|) per value of tag ``key`` (or per ``group`` when key is
        "group"), over the development or held-out rows."""
        rows = self.dev_rows if subset == "dev" else self.held_out_rows
        out: dict[str, list[Row]] = {}
        for r in rows:
            value = r.group if key == "group" else r.tag(key)
            for v in value.split("+") if value else ["-"]:
                out.setdefault(v, []).append(r)
        return {k: (len(v), mape(v), max(abs(r.error) for r in v)) for k, v in out.items()}


def mape(rows: list[Row]) -> float:
    return sum(abs(r.error) for r in rows) / len(rows)


def data_dir() -> Path:
    """``validation/`` of a source checkout, or the copy shipped inside the wheel."""
    shipped = resources.files("clusterwright") / "_validation"
    if shipped.is_dir():
        return Path(str(shipped))
    repo = Path(__file__).resolve().parents[3] / "validation"
    if repo.is_dir():
        return repo
    raise InputError("validation data not found (expected validation/ next to src/)")


# --------------------------------------------------------------------------- reading


class BadRowError(InputError):
    """A malformed value in a validation CSV (not a number, an unknown enum value, a unit of
    another kind); the message names the file, the line and the column. Never read as 'not
    covered': the row is wrong, not the model."""


class NotCoveredError(ClusterwrightError):
    """A well-formed row the model cannot predict; the message is the reason."""


class CsvRow(dict[str, str]):
    """One CSV row by column, with the file it comes from and the line it starts on. Reading
    a column the file does not have is a BadRowError naming it (not a KeyError)."""

    def __init__(self, values: Mapping[str, str], file: str, line: int) -> None:
        super().__init__(values)
        self.file = file
        self.line = line

    def __missing__(self, key: str) -> str:
        raise BadRowError(f"{self.file}: no column {key!r} (line 1, the header)", field=key)


def read_csv(name: str | Path) -> list[CsvRow]:
    """The rows of ``validation/NAME`` (or of the file ``NAME`` when it is a path), each a
    dict of strings that knows its file and line. BadRowError for a row with more or fewer
    values than the header has columns, and for an ``id`` that repeats."""
    p = Path(name)
    shown = str(name) if isinstance(name, Path) or p.parent != Path() else p.name
    if not (isinstance(name, Path) or p.parent != Path()):
        p = data_dir() / p
    from clusterwright.spec.yamlio import YamlError, read_text

    try:
        text = read_text(p, MAX_CSV_BYTES)
    except YamlError as exc:
        raise InputError(str(exc)) from None
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader, [])
        rows: list[CsvRow] = []
        seen: dict[str, int] = {}
        line = reader.line_num + 1
        for values in reader:
            start, line = line, reader.line_num + 1
            if not values:
                continue
            if len(values) != len(header):
                raise BadRowError(f"{shown} line {start}: {len(values)} values, but the header "
                                  f"has {len(header)} columns")
            r = CsvRow(dict(zip(header, values, strict=True)), shown, start)
            rid = r.get("id")
            if rid is not None:
                if rid in seen:
                    raise BadRowError(f"{where(r)}: id {rid!r} repeats line {seen[rid]} (each "
                                      "measurement needs its own id)", field="id")
                seen[rid] = start
            rows.append(r)
    except csv.Error as exc:
        raise InputError(f"{shown}: not a CSV file: {exc}") from None
    return rows


def where(r: Mapping[str, str]) -> str:
    """``FILE line N, row ID``: where a row is, for a message (``row ID`` alone for a dict
    that does not come from ``read_csv``)."""
    file, line = getattr(r, "file", None), getattr(r, "line", None)
    at = f"{file} line {line}, " if file is not None else ""
    return f"{at}row {r.get('id', '?')}"


def bad(r: Mapping[str, str], col: str, msg: str) -> BadRowError:
    """``FILE line N, row ID: COL MSG`` as an input error blaming the column."""
    return BadRowError(f"{where(r)}: {col} {msg}", field=col)


def text(r: Mapping[str, str], col: str) -> str:
    """The cell, stripped; BadRowError naming the column when the file lacks it."""
    v = r.get(col)
    if v is None:
        raise BadRowError(f"{where(r)}: no column {col!r}", field=col)
    return v.strip()


def required(r: Mapping[str, str], col: str) -> str:
    """The cell, stripped, which must not be empty."""
    v = text(r, col)
    if not v:
        raise bad(r, col, "is empty (required)")
    return v


def number(r: Mapping[str, str], col: str, *, positive: bool = False,
           nonnegative: bool = False) -> float:
    """The cell as a finite number; BadRowError naming the column and line otherwise."""
    v = required(r, col)
    try:
        x = float(v)
    except ValueError:
        raise bad(r, col, f"{v!r} is not a number") from None
    if not math.isfinite(x):
        raise bad(r, col, f"{v!r} is not a finite number")
    if positive and not x > 0:
        raise bad(r, col, f"{v!r} must be positive")
    if nonnegative and x < 0:
        raise bad(r, col, f"{v!r} must not be negative")
    return x


def optional_number(r: Mapping[str, str], col: str, *, positive: bool = False,
                    nonnegative: bool = False) -> float | None:
    """``number``, or None for an empty (or absent) cell."""
    if not (r.get(col) or "").strip():
        return None
    return number(r, col, positive=positive, nonnegative=nonnegative)


def integer(r: Mapping[str, str], col: str, *, low: int | None = None) -> int:
    """The cell as a whole number (``8`` or ``8.0``) of at least ``low``."""
    v = required(r, col)
    try:
        x = float(v)
    except ValueError:
        raise bad(r, col, f"{v!r} is not an integer") from None
    if not math.isfinite(x) or x != int(x):
        raise bad(r, col, f"{v!r} is not an integer")
    if low is not None and x < low:
        raise bad(r, col, f"{v!r} must be at least {low}")
    return int(v) if v.lstrip("+-").isdigit() else int(x)


def optional_integer(r: Mapping[str, str], col: str, *, low: int | None = None) -> int | None:
    """``integer``, or None for an empty (or absent) cell."""
    if not (r.get(col) or "").strip():
        return None
    return integer(r, col, low=low)


def choice(r: Mapping[str, str], col: str, options: Iterable[str],
           default: str | None = None) -> str:
    """The cell, one of ``options`` (``default`` for an empty cell when one is given)."""
    opts = tuple(options)
    v = text(r, col) if default is None else (r.get(col) or "").strip()
    if not v and default is not None:
        return default
    if v not in opts:
        raise bad(r, col, f"{v!r} is not one of {', '.join(opts)}")
    return v


def row_set(r: Mapping[str, str], default: str | None) -> str:
    """The row's ``set``: ``dev`` or ``held-out`` (any other value would leave the row out
    of both MAPEs); ``default`` when the file has no such column or the cell is empty, and
    required when ``default`` is None."""
    v = (r.get("set") or "").strip()
    if not v and default is not None:
        return default
    if v not in SETS:
        raise bad(r, "set", f"{v!r} is not dev or held-out")
    return v


# Units of one kind, by their size in the kind's base unit; a row may state its value in any
# of them and is compared in its own unit.
UNIT_KINDS: dict[str, dict[str, float]] = {
    "time": {"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "min": 60.0, "h": 3600.0,
             "days": 86400.0, "d": 86400.0},
    "power": {"W": 1.0, "kW": 1e3, "MW": 1e6, "GW": 1e9},
    "energy": {"Wh": 1.0, "kWh": 1e3, "MWh": 1e6, "GWh": 1e9, "J": 1.0 / 3600.0,
               "kJ": 1.0 / 3.6, "MJ": 1e3 / 3.6},
    "mass": {"kgCO2e": 1.0, "tCO2e": 1e3, "ktCO2e": 1e6},
    "bytes": {"B": 1.0, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12, "KiB": 2.0**10,
              "MiB": 2.0**20, "GiB": 2.0**30, "TiB": 2.0**40},
    "bandwidth": {"GB/s": 1.0, "MB/s": 1e-3, "TB/s": 1e3, "Gb/s": 0.125, "Gbit/s": 0.125},
    "ratio": {"%": 1.0, "fraction": 100.0},
}


def in_row_unit(cat: Any, r: Mapping[str, str], quantities: Mapping[str, str],
                predict: Callable[[Any, Mapping[str, str], str], tuple[float, str]]
                ) -> tuple[float, str]:
    """``predict(cat, r, quantity)`` (a value in the quantity's canonical unit, and a detail)
    converted into the row's own unit: the table's ``quantities`` map each quantity to its
    canonical unit."""
    q = choice(r, "quantity", quantities)
    scale = unit_scale(r, quantities[q], q)
    value, detail = predict(cat, r, q)
    return value / scale, detail


def unit_scale(r: Mapping[str, str], canonical: str, what: str,
               synonyms: Iterable[str] = (), unit: str | None = None) -> float:
    """How many ``canonical`` units one unit of the row's ``unit`` (or ``unit``, the cell as
    the table reads it) is: 1.0 for the canonical unit or a synonym of it, so a prediction in
    ``canonical`` divided by it is in the row's unit. BadRowError naming the column when the
    row's unit is not of ``what``'s kind."""
    u = text(r, "unit") if unit is None else unit
    if u == canonical or u in synonyms:
        return 1.0
    for sizes in UNIT_KINDS.values():
        if u in sizes and canonical in sizes:
            return sizes[u] / sizes[canonical]
    kind = next((k for k, sizes in UNIT_KINDS.items() if canonical in sizes), None)
    also = [*synonyms] + ([f"another {kind} unit"] if kind else [])
    raise bad(r, "unit", f"{text(r, 'unit')!r} is not a unit of {what} "
              f"({' or '.join([canonical, *also])})")


# --------------------------------------------------------------------------- predicting


def predict_each(rows: Iterable[CsvRow], predict: Callable[[CsvRow, str], list[Row]],
                 default_set: str | None = "dev") -> tuple[list[Row], list[NotCovered]]:
    """Predict every row (``predict(row, set)`` returns its Rows). A BadRowError (a malformed
    value, found by the table's own reading of the row) stops the table; a row whose
    prediction raises NotCoveredError, or an error of the catalog or the model (an unknown GPU,
    model, stack or server; a layout, combination or scale the model does not support), is
    not covered, with the message as its reason, and the other rows are predicted."""
    out: list[Row] = []
    skipped: list[NotCovered] = []
    for r in rows:
        s = row_set(r, default_set)
        try:
            out.extend(predict(r, s))
        except BadRowError:
            raise
        except ClusterwrightError as exc:
            skipped.append(NotCovered(r.get("id", ""), getattr(r, "line", 0), s, str(exc)))
        except ValidationError as exc:
            # A request the model's own specs reject (a count above what it handles, ...).
            why = "; ".join(f"{'.'.join(str(x) for x in e['loc']) or 'value'}: {e['msg']}"
                            for e in exc.errors()) or str(exc)
            skipped.append(NotCovered(r.get("id", ""), getattr(r, "line", 0), s, why))
    return out, skipped
