"""``clusterwright validate``: predict published measurements and print the error."""

from __future__ import annotations

from typing import Any

import typer
from rich.table import Table

from clusterwright.cli.common import console, emit_json, fail, user_errors
from clusterwright.validation.tables import TABLES, TableResult


def _payload(r: TableResult) -> dict[str, Any]:
    return {
        "file": r.file,
        "rows": len(r.rows),
        "mape": r.mape,
        "max_abs_error": r.max_abs_error,
        "tolerance": r.tolerance,
        "held_out_rows": len(r.held_out_rows),
        "held_out_mape": r.held_out_mape,
        "per_row": [
            {
                "id": x.id,
                "set": x.set,
                "quantity": x.quantity,
                "measured": x.measured,
                "predicted": x.predicted,
                "unit": x.unit,
                "error": x.error,
                "detail": x.detail,
                "group": x.group,
                "tags": dict(x.tags),
            }
            for x in r.rows
        ],
        "by": {key: {k: {"rows": n, "mape": m, "max_abs_error": mx}
                     for k, (n, m, mx) in r.mape_by(key).items()}
               for key in _keys(r)},
    }


def _keys(r: TableResult) -> list[str]:
    """The regime tags a table's rows carry (stack, precision, family, ...), and group."""
    keys = sorted({k for x in r.rows for k, _ in x.tags})
    if any(x.group for x in r.rows):
        keys.append("group")
    return keys


SUMMARY_ABOVE = 80  # rows: larger tables print one line per group and their worst rows


def _print_rows(r: TableResult) -> None:
    t = Table(title=f"{r.name} ({r.file})", title_justify="left")
    for col in ("row", "set", "measured", "predicted", "unit", "error", "layout used"):
        right = col in ("measured", "predicted", "error")
        t.add_column(col, justify="right" if right else "left", overflow="fold")
    for x in r.rows:
        t.add_row(
            x.id,
            x.set,
            f"{x.measured:.4g}",
            f"{x.predicted:.4g}",
            x.unit,
            f"{100 * x.error:+.1f}%",
            x.detail,
        )
    console.print(t)


def _print_groups(r: TableResult) -> None:
    """One line per group (a measured curve): rows, MAPE, worst error, where it lies."""
    t = Table(title=f"{r.name} ({r.file}): {len(r.rows)} rows, one line per group",
              title_justify="left")
    for col in ("group", "set", "rows", "MAPE", "worst", "worst row", "what"):
        t.add_column(col, justify="right" if col in ("rows", "MAPE", "worst") else "left",
                     overflow="fold")
    groups: dict[str, list[Any]] = {}
    for x in r.rows:
        groups.setdefault(x.group, []).append(x)
    for name, rows in groups.items():
        worst = max(rows, key=lambda x: abs(x.error))
        mape = sum(abs(x.error) for x in rows) / len(rows)
        t.add_row(name, rows[0].set, str(len(rows)), f"{100 * mape:.1f}%",
                  f"{100 * worst.error:+.1f}%", worst.id.split("@")[-1], rows[0].detail)
    console.print(t)


def validate(
    table: str | None = typer.Option(None, "--table", help=f"One of: {', '.join(TABLES)}."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Compare every model against published measurements in validation/ (error per row, MAPE)."""
    if table is not None and table not in TABLES:
        fail(f"--table: unknown table {table!r} (tables: {', '.join(TABLES)})")
    names = [table] if table else list(TABLES)
    results: list[TableResult] = []
    with user_errors():
        for n in names:
            results.append(TABLES[n]())
    if as_json:
        emit_json({"tables": {r.name: _payload(r) for r in results}})
        return
    for r in results:
        if len(r.rows) > SUMMARY_ABOVE and any(x.group for x in r.rows):
            _print_groups(r)
        else:
            _print_rows(r)
        for key in _keys(r):
            if key == "group":
                continue
            parts = ", ".join(f"{k} {100 * m:.1f}% ({n})"
                              for k, (n, m, _) in sorted(r.mape_by(key).items()))
            console.print(f"  dev MAPE by {key}: {parts}")
        held = (
            f"; held-out {len(r.held_out_rows)} rows, MAPE {100 * r.held_out_mape:.1f}%"
            if r.held_out_mape is not None
            else ""
        )
        console.print(
            f"[bold]{r.name}[/]: {len(r.dev_rows)} development rows, MAPE {100 * r.mape:.2f}%, "
            f"max |error| {100 * r.max_abs_error:.2f}% (held to {100 * r.tolerance:.0f}%){held}"
        )
