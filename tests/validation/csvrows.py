"""Small validation CSVs for tests: shipped rows picked by id, and copies of them with the
changes a new published measurement could bring, written in the shipped file's format."""

from __future__ import annotations

import csv
from pathlib import Path

from clusterwright.validation.rows import data_dir


def shipped(name: str) -> tuple[list[str], dict[str, dict[str, str]]]:
    """The header of ``validation/NAME`` and its rows by id."""
    with open(data_dir() / name, newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        rows = {r["id"]: r for r in reader}
        return list(reader.fieldnames or []), rows


def like(row: dict[str, str], **changes: str) -> dict[str, str]:
    """A copy of ``row`` with ``changes`` (a new id unless ``id`` is among them)."""
    return {**row, "id": row["id"] + "_new", **changes}


def write(path: Path, name: str, *rows: dict[str, str] | str) -> Path:
    """``path`` in ``validation/NAME``'s format with ``rows`` (a shipped id or a row dict),
    in order: the first row is on line 2."""
    header, by_id = shipped(name)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=header, lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow(by_id[r] if isinstance(r, str) else r)
    return path
