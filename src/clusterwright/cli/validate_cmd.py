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
            }
            for x in r.rows
        ],
    }


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
        held = (
            f"; held-out {len(r.held_out_rows)} rows, MAPE {100 * r.held_out_mape:.1f}%"
            if r.held_out_mape is not None
            else ""
        )
        console.print(
            f"[bold]{r.name}[/]: {len(r.dev_rows)} development rows, MAPE {100 * r.mape:.2f}%, "
            f"max |error| {100 * r.max_abs_error:.2f}% (held to {100 * r.tolerance:.0f}%){held}"
        )
