"""What every command shares: the catalog option, JSON output, and error handling."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.errors import MarkupError
from rich.markup import escape

from clusterwright.catalog.registry import Catalog, load_catalog
from clusterwright.errors import ClusterwrightError, InputError, word_fields
from clusterwright.jsonsafe import jsonable

GB = 1e9  # decimal gigabyte: sizes in output are GB unless a key says GiB

class _Console(Console):
    """A console whose markup never breaks on user text: names and paths from a dump, a
    catalog or a command line may hold square brackets ("[/x]"), which rich reads as tags.
    Renderers escape the user text they know of; a line that still fails to parse is printed
    with its markup shown rather than a traceback."""

    def print(self, *objects: Any, **kw: Any) -> None:
        try:
            super().print(*objects, **kw)
        except MarkupError:
            super().print(*(escape(o) if isinstance(o, str) else o for o in objects), **kw)


# No emoji codes: a message such as "K:ACCEPT:COST" must print as written
console = _Console(emoji=False)
err_console = _Console(stderr=True, emoji=False)


@dataclass
class AppState:
    """Options given before the command (``clusterwright --catalog X size ...``)."""

    catalog_files: list[Path] = field(default_factory=list)
    _catalog: Catalog | None = None

    def catalog(self) -> Catalog:
        """The catalog, loaded once; a bad file is the user's error (exit code 2) whether or
        not the command loads it inside its own error handling."""
        if self._catalog is None:
            with user_errors():
                self._catalog = load_catalog(self.catalog_files)
        return self._catalog


def state(ctx: typer.Context) -> AppState:
    obj = ctx.find_root().obj
    if not isinstance(obj, AppState):
        obj = AppState()
        ctx.find_root().obj = obj
    return obj


def fail(message: str) -> NoReturn:
    """Print a user error to stderr and exit with code 2."""
    # The message carries user text (ids, paths, patterns): square brackets in it are text,
    # not markup ("[/x]" raised a MarkupError; a "[a-z0-9]" pattern vanished).
    err_console.print(
        f"[bold red]error:[/] {escape(message)}", highlight=False, markup=True, soft_wrap=True
    )
    raise typer.Exit(code=2)


def flag_error(exc: ValidationError, flags: dict[str, str] | None = None) -> str:
    """Turn a pydantic error on CLI-built inputs into ``--flag: message`` lines. An error of
    the whole model (no field) names the flags whose field names its message mentions."""
    flags = flags or {}
    lines = []
    for e in exc.errors(include_url=False):
        msg = str(e["msg"]).removeprefix("Value error, ")
        name = str(e["loc"][0]) if e["loc"] else ""
        if name:
            flag = flags.get(name, "--" + name.replace("_", "-"))
        else:
            # The flag whose field the message names first is the one it is about.
            hits = [
                (m.start(), f)
                for field, f in flags.items()
                if (m := re.search(rf"\b{field}\b", msg))
            ]
            flag = min(hits)[1] if hits else "options"
            for field, f in flags.items():
                msg = re.sub(rf"\b{field}\b", f, msg)
        lines.append(f"{flag}: {msg}")
    return "; ".join(lines)


def field_flag_message(exc: InputError, flags: dict[str, str] | None = None) -> str:
    """``exc``'s message led by the flag of the field it blames (``schedule: ...`` ->
    ``--schedule: ...``), when it blames one."""
    def flag_of(name: str) -> str:
        return (flags or {}).get(name, "--" + name.replace("_", "-"))

    msg = word_fields(str(exc), flag_of)
    name = exc.field
    if not name or not re.fullmatch(r"[a-z0-9_]+(\.[a-z0-9_]+)*", name):
        return msg
    return f"{flag_of(name)}: {msg.removeprefix(f'{name}: ')}"


@contextmanager
def user_errors(flags: dict[str, str] | None = None, name_flags: bool = False
                ) -> Iterator[None]:
    """Map library errors to exit code 2 with a clear message, never a traceback. With
    ``name_flags``, an InputError blaming a field is reported under its CLI flag."""
    try:
        yield
    except InputError as exc:
        fail(field_flag_message(exc, flags) if name_flags else word_fields(
            str(exc), lambda n: (flags or {}).get(n, "--" + n.replace("_", "-"))))
    except ClusterwrightError as exc:
        fail(str(exc))
    except ValidationError as exc:
        fail(flag_error(exc, flags))




@contextmanager
def progress_bar(description: str) -> Iterator[Callable[[int, int], None]]:
    """A progress bar on stderr while the block runs, as ``update(done, total)``; nothing
    when stderr is not a terminal (a pipe, a log, CI), so ``--json`` stdout stays one
    object and logs stay clean."""
    if not err_console.is_terminal:
        yield lambda done, total: None
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=err_console, transient=True) as bar:
        task = bar.add_task(description, total=None)

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=max(total, 1))

        yield update


def emit_json(payload: dict[str, Any]) -> None:
    """Print one JSON object on stdout and nothing else."""
    sys.stdout.write(json.dumps(jsonable(payload), indent=2, sort_keys=False) + "\n")


def run_command(
    as_json: bool, payload: Callable[[], dict[str, Any]], render: Callable[[dict[str, Any]], None]
) -> None:
    data = payload()
    if as_json:
        emit_json(data)
    else:
        render(data)


def gb(nbytes: float) -> float:
    return nbytes / GB
