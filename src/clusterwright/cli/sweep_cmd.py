"""``clusterwright sweep SWEEP.yaml --out DIR``: plan a grid or random sample of scenarios."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.table import Table

from clusterwright.cli.common import console, emit_json, err_console, fail, state, user_errors
from clusterwright.report.fmt import usd

if TYPE_CHECKING:
    from clusterwright.plan.sweep import Backend, Row, SweepResult
    from clusterwright.spec.sweep import Sweep
# The sweep's own modules (multiprocessing, numpy draws, the writers) load inside the command,
# so `clusterwright --help` does not pay for them.

# Each local worker is a process holding the catalog; more than this is a typo, and a Ray
# cluster runs at most one task per core anyway.
MAX_WORKERS = 1024

def sweep(
    ctx: typer.Context,
    sweep_file: Path = typer.Argument(..., metavar="SWEEP.yaml", help="Sweep file."),
    out: Path = typer.Option(..., "--out", help="Directory for results.csv/.json, sweep.html."),
    backend: str = typer.Option("local", "--backend", help="local (process pool) or ray."),
    address: str | None = typer.Option(
        None, "--address", help="Ray cluster address (default: start a local Ray instance)."
    ),
    workers: int | None = typer.Option(
        None, "--workers", help="Parallel points (default: the machine's cores)."
    ),
    force: bool = typer.Option(False, "--force", help="Replace a non-empty --out directory."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Run a grid or random sample over scenario variables; write a table and plots."""
    if backend not in ("local", "ray"):
        fail(f"--backend: {backend!r} is not one of local, ray")
    if address is not None and backend != "ray":
        fail("--address needs --backend ray")
    if workers is not None and not 1 <= workers <= MAX_WORKERS:
        fail(f"--workers: must be in 1..{MAX_WORKERS:,}, got {workers:,}")
    from clusterwright.export.fabric import check_out_dir
    from clusterwright.export.sweep import write_sweep
    from clusterwright.plan.sweep import check_catalog, require_ray
    from clusterwright.spec.sweep import load_sweep

    be: Backend = "ray" if backend == "ray" else "local"
    with user_errors():
        with user_errors(name_flags=True):  # out, force -> --out, --force
            check_out_dir(out, force)  # refuse before any work, not after
        sw = load_sweep(sweep_file)
        cat = state(ctx).catalog()
        check_catalog(sw, cat)
        if be == "ray":
            require_ray()  # a missing Ray is a user error before any point runs
        # The bar goes to stderr, and only to a terminal: stdout keeps the table or JSON.
        result = _run(sw, cat, be, workers, address, show=err_console.is_terminal)
        files = write_sweep(result, out, force=force)
    payload = _payload(result, out, files)
    if as_json:
        emit_json(payload)
    else:
        _render(result, payload)


def _run(sw: Sweep, cat: Any, backend: Backend, workers: int | None, address: str | None,
         show: bool) -> SweepResult:
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    from clusterwright.plan.sweep import run_sweep

    if not show:
        return run_sweep(sw, cat, backend=backend, workers=workers, address=address)
    columns = (TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
               TextColumn("{task.fields[status]}"), TimeElapsedColumn(), TimeRemainingColumn())
    with Progress(*columns, console=err_console, transient=True) as progress:
        task = progress.add_task(f"sweep {sw.name}", total=len(sw.points), status="")
        seen = {"infeasible": 0, "errors": 0}

        def on_row(row: Row) -> None:
            if row.error is not None:
                seen["errors"] += 1
            elif not row.feasible:
                seen["infeasible"] += 1
            progress.update(task, advance=1,
                            status=f"{seen['infeasible']} infeasible, {seen['errors']} errors")

        return run_sweep(sw, cat, backend=backend, workers=workers, address=address,
                         on_row=on_row)


def _row(r: Row) -> dict[str, Any]:
    return r.as_dict()


def _payload(result: SweepResult, out: Path, files: list[str]) -> dict[str, Any]:
    from clusterwright.export.sweep import PARETO, counts
    from clusterwright.plan.sweep import best_rows, pareto

    fronts = {f"{x}__{y}": [r.index for r in pareto(result.rows, x, y)] for x, y in PARETO}
    return {
        "name": result.sweep.name,
        "out": str(out),
        "files": files,
        **counts(result),
        "variables": [v.path for v in result.sweep.variables],
        "backend": result.backend,
        "workers": result.workers,
        "elapsed_s": round(result.elapsed_s, 3),
        "best": [_row(r) for r in best_rows(result.rows, n=5)],
        "pareto": {k: v for k, v in fronts.items() if v},
        "errors_by_point": {str(r.index): r.error for r in result.rows if r.error},
    }


def _g(v: Any) -> str:
    if isinstance(v, int | float) and not isinstance(v, bool):
        return f"{v:.3g}"
    return "-"


METRIC_COLUMNS: tuple[tuple[str, str, Callable[[Any], str]], ...] = (
    ("cost", "total_cost_usd", usd),
    ("train days", "time_to_train_days", _g),
    ("TTFT p99 s", "ttft_p99_s", _g),
    ("TPOT p99 s", "tpot_p99_s", _g),
)  # power and the rest are in results.csv: the table fits 80 columns


def _render(result: SweepResult, d: dict[str, Any]) -> None:
    from clusterwright.export.sweep import display
    from clusterwright.plan.sweep import best_rows

    console.print(
        f"[bold]{d['name']}[/]: {d['points']} points over {', '.join(d['variables'])} "
        f"({d['backend']}, {d['workers']} workers, {d['elapsed_s']:.1f} s): "
        f"{d['feasible']} feasible, {d['infeasible']} infeasible, {d['errors']} errors"
    )
    best = best_rows(result.rows, n=5)
    if best:
        # A variable with one value is an override of the base: same in every row.
        paths = [v.path for v in result.sweep.variables
                 if len({display(r.values[v.path]) for r in result.rows}) > 1]
        t = Table(title="Cheapest feasible points", title_justify="left", show_edge=False)
        t.add_column("point", justify="right")
        for p in paths:  # the last part of the path keeps the table narrow
            t.add_column(p.rsplit(".", 1)[-1].replace("_", " "), justify="left")
        t.add_column("design", justify="left", no_wrap=True)
        # Only the metrics these points have (no TTFT column for a training-only sweep).
        cols = [(label, key, f) for label, key, f in METRIC_COLUMNS
                if any((r.metrics or {}).get(key) is not None for r in best)]
        for label, _, _ in cols:
            t.add_column(label, justify="right", no_wrap=True)
        for r in best:
            m = r.metrics or {}
            t.add_row(
                str(r.index), *(display(r.values[p]) for p in paths),
                f"{m.get('gpus', '-')} x {m.get('gpu', '-')}",
                *(f(m.get(key)) for _, key, f in cols),
            )
        console.print(t)
    else:
        console.print("[yellow]No feasible point[/]: see the binding constraints in results.csv")
    for key, front in d["pareto"].items():
        x, y = key.split("__")
        console.print(f"Pareto front ({x} vs {y}): points {', '.join(map(str, front))}")
    for idx, err in list(d["errors_by_point"].items())[:5]:
        console.print(f"[red]point {idx} failed[/]: {err}", soft_wrap=True)
    console.print(f"Wrote {', '.join(d['files'])} to {d['out']}")
