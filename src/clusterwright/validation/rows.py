"""What every validation table returns: measured rows with our prediction and error, and how
a table reads its CSV of published measurements from ``validation/``."""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from clusterwright.errors import InputError


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
class TableResult:
    name: str
    file: str
    rows: list[Row]
    tolerance: float  # the MAPE this table is held to by the tests

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


def read_csv(name: str) -> list[dict[str, str]]:
    """The rows of ``validation/NAME`` as dicts of strings."""
    with open(data_dir() / name, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))
