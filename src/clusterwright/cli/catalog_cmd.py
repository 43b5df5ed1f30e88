"""``clusterwright catalog list KIND`` and ``catalog show ID``."""

from __future__ import annotations

import difflib
from typing import Any

import typer
from rich.table import Table

from clusterwright.catalog.registry import Catalog
from clusterwright.cli.common import console, emit_json, fail, state, user_errors
from clusterwright.model.params import active_params, total_params
from clusterwright.report.catalog_columns import COLUMNS, KINDS

app = typer.Typer(help="Browse the hardware and model catalog.", no_args_is_help=True)



def _dump(cat: Catalog, kind: str, entry: Any) -> dict[str, Any]:
    # `catalog_kind` is the table; an entry's own `kind` field (server/rack, dac/fiber) stays.
    d: dict[str, Any] = {"catalog_kind": kind, **entry.model_dump(mode="json")}
    if kind == "models":
        d["params"] = total_params(entry)
        d["active_params"] = active_params(entry)
    d["defined_in"] = cat.origin.get((kind, entry.id))
    return d


@app.command("list")
def list_(
    ctx: typer.Context,
    kind: str = typer.Argument(..., help=f"One of: {', '.join(KINDS)}."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """List catalog entries of one kind."""
    if kind not in KINDS:
        sugg = difflib.get_close_matches(kind, list(KINDS), n=1)
        fail(
            f"KIND: unknown kind {kind!r}"
            + (f"; did you mean {sugg[0]!r}?" if sugg else "")
            + f" (kinds: {', '.join(KINDS)})"
        )
    with user_errors():
        cat = state(ctx).catalog()
    if as_json:
        emit_json(
            {"kind": kind, "entries": [_dump(cat, k, e) for k in KINDS[kind] for e in cat.all(k)]}
        )
        return
    for k in KINDS[kind]:
        entries = cat.all(k)
        table = Table(title=k, title_justify="left")
        # Ids are what a user types next: never wrapped or cut; the other columns wrap.
        widest = max((len(e.id) for e in entries), default=2)
        for i, (header, _) in enumerate(COLUMNS[k]):
            if i == 0:
                table.add_column(header, no_wrap=True, min_width=widest, overflow="ignore")
            else:
                # One word a line: a header breaks between words, not inside one ("TFLOP/ s"),
                # as long as the terminal leaves each column its longest word.
                table.add_column("\n".join(header.split()), overflow="fold")
        for e in entries:
            table.add_row(*(fn(e) for _, fn in COLUMNS[k]))
        console.print(table)


@app.command("show")
def show(
    ctx: typer.Context,
    entry_id: str = typer.Argument(..., metavar="ID", help="A catalog id."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Show every field of one catalog entry, with its source."""
    with user_errors():
        cat = state(ctx).catalog()
    found = [(k, cat.entries[k][entry_id]) for k in cat.entries if entry_id in cat.entries[k]]
    if not found:
        sugg: list[str] = []
        for k in cat.entries:
            sugg += cat.suggest(k, entry_id, n=2)
        close = difflib.get_close_matches(entry_id, sugg, n=3, cutoff=0.0) if sugg else []
        fail(
            f"ID: unknown catalog id {entry_id!r}"
            + (f"; did you mean {', '.join(map(repr, close))}?" if close else "")
        )
    dumps = [_dump(cat, k, e) for k, e in found]
    if as_json:
        emit_json(dumps[0] if len(dumps) == 1 else {"matches": dumps})
        return
    for d in dumps:
        table = Table(
            title=f"{d['catalog_kind']}: {d['id']}", title_justify="left", show_header=False
        )
        table.add_column("field", style="bold")
        table.add_column("value", overflow="fold")
        for key, value in d.items():
            if key in ("catalog_kind", "id"):
                continue
            if isinstance(value, list) and value and isinstance(value[0], dict):
                value = "\n".join(", ".join(f"{a}={b}" for a, b in v.items()) for v in value)
            elif isinstance(value, dict):
                value = ", ".join(f"{a}={b}" for a, b in value.items())
            table.add_row(key, str(value))
        console.print(table)
