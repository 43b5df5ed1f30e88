"""``clusterwright validate``: predict published measurements and print the error."""

from __future__ import annotations

import typer
from rich.table import Table

from clusterwright.cli.common import console, emit_json, fail, user_errors
from clusterwright.validation.tables import TABLES, TableResult


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
        emit_json(
            {
                "tables": {
                    r.name: {
                        "file": r.file,
                        "rows": len(r.rows),
                        "mape": r.mape,
                        "max_abs_error": r.max_abs_error,
                        "tolerance": r.tolerance,
                        "per_row": [
                            {
                                "id": x.id,
                                "quantity": x.quantity,
                                "measured": x.measured,
                                "predicted": x.predicted,
                                "unit": x.unit,
                                "error": x.error,
                            }
                            for x in r.rows
                        ],
                    }
                    for r in results
                }
            }
        )
        return
    for r in results:
        t = Table(title=f"{r.name} ({r.file})", title_justify="left")
        for col in ("row", "quantity", "measured", "predicted", "unit", "error"):
            t.add_column(
                col, justify="right" if col in ("measured", "predicted", "error") else "left"
            )
        for x in r.rows:
            t.add_row(
                x.id,
                x.quantity,
                f"{x.measured:.4g}",
                f"{x.predicted:.4g}",
                x.unit,
                f"{100 * x.error:+.1f}%",
            )
        console.print(t)
        console.print(
            f"[bold]{r.name}[/]: {len(r.rows)} rows, MAPE {100 * r.mape:.2f}%, "
            f"max |error| {100 * r.max_abs_error:.2f}% (held to {100 * r.tolerance:.0f}%)"
        )
