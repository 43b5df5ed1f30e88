"""``clusterwright runs ...``: the saved scenarios and plan results in the local store."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

import typer
from rich.table import Table

from clusterwright.cli.common import console, emit_json, err_console, state, user_errors
from clusterwright.report.fmt import usd

if TYPE_CHECKING:
    from clusterwright.store import RunRow, ScenarioRow, Store

app = typer.Typer(help="Saved scenarios and plan results (the local SQLite store).",
                  no_args_is_help=True)

DB_HELP = "Database file (default: $CLUSTERWRIGHT_DB, else the user data directory)."


def _open(db: Path | None) -> Store:
    # Imported here so `clusterwright --help` does not load sqlite3.
    from clusterwright.store import Store

    return Store(db)


def _run_dict(run: RunRow, *, blueprint: bool = False) -> dict[str, Any]:
    d: dict[str, Any] = {
        "id": run.id,
        "scenario_id": run.scenario_id,
        "scenario_name": run.scenario_name,
        "scenario_revision": run.scenario_revision,
        "status": run.status,
        "stage": run.stage,
        "done": run.done,
        "total": run.total,
        "message": run.message,
        "created_at": run.created_at,
        "finished_at": run.finished_at,
        "artifacts_dir": run.artifacts_dir,
        "metrics": run.metrics,
        "owner_pid": run.owner_pid,
        "owner_host": run.owner_host,
        "heartbeat_at": run.heartbeat_at,
    }
    if blueprint:
        d["blueprint"] = run.blueprint
    return d


def _scenario_dict(sc: ScenarioRow) -> dict[str, Any]:
    return {"id": sc.id, "name": sc.name, "revision": sc.revision, "created_at": sc.created_at}


def _fmt(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:,.4g}" if abs(v) < 1e4 else f"{v:,.0f}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def list_runs(
    db: Path | None = typer.Option(None, "--db", help=DB_HELP),
    scenario: int | None = typer.Option(None, "--scenario", help="Only runs of this scenario id."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """List saved runs, newest first. A queued or running run whose owner process is gone is
    failed ("interrupted") as it is read."""
    with user_errors(), _open(db) as store:
        if scenario is not None:
            store.get_scenario(scenario)  # an unknown id is an error, not an empty list
        runs = store.list_runs(scenario, with_blueprint=False)
    if as_json:
        emit_json({"db": str(store.path), "runs": [_run_dict(r) for r in runs]})
        return
    if not runs:
        console.print(f"no runs in {store.path}", highlight=False)
        return
    t = Table(title=f"runs in {store.path}", title_justify="left")
    for col in ("id", "scenario", "status", "progress", "created (UTC)", "total cost"):
        t.add_column(col, justify="right" if col in ("id", "total cost") else "left")
    for r in runs:
        progress = f"{r.stage or ''} {r.done}/{r.total}".strip() if r.status == "running" else ""
        cost = (r.metrics or {}).get("total_cost_usd")
        t.add_row(str(r.id), f"{r.scenario_name} r{r.scenario_revision}", r.status, progress,
                  r.created_at[:19].replace("T", " "), usd(cost) if cost else "-")
    console.print(t)


def show_run(
    run_id: int = typer.Argument(..., metavar="ID", help="Run id (see `runs list`)."),
    db: Path | None = typer.Option(None, "--db", help=DB_HELP),
    blueprint: bool = typer.Option(False, "--blueprint", help="Include the blueprint in --json."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Show one run: status, scenario name and revision, metrics, artifacts directory."""
    with user_errors(), _open(db) as store:
        run = store.get_run(run_id)
    if as_json:
        emit_json(_run_dict(run, blueprint=blueprint))
        return
    t = Table(title=f"run {run.id}", title_justify="left", show_header=False)
    t.add_column("field")
    # Folded, never cut with an ellipsis: the artifacts path is something to copy.
    t.add_column("value", overflow="fold")
    rows = [("scenario", f"{run.scenario_name} (id {run.scenario_id}, revision "
                         f"{run.scenario_revision})"),
            ("status", run.status), ("stage", run.stage), ("progress", f"{run.done}/{run.total}"),
            ("message", run.message), ("created (UTC)", run.created_at),
            ("finished (UTC)", run.finished_at), ("artifacts", run.artifacts_dir)]
    if run.owner_pid is not None:
        rows.append(("owner", f"pid {run.owner_pid} on {run.owner_host}"))
    if run.status in ("queued", "running"):
        rows.append(("heartbeat (UTC)", run.heartbeat_at))
    for k, v in rows:
        t.add_row(k, _fmt(v))
    console.print(t)
    if run.metrics:
        m = Table(title="metrics", title_justify="left")
        m.add_column("metric")
        m.add_column("value", justify="right")
        for k, v in run.metrics.items():
            m.add_row(k, _fmt(v))
        console.print(m)


def delete_run(
    run_id: int = typer.Argument(..., metavar="ID", help="Run id (see `runs list`)."),
    db: Path | None = typer.Option(None, "--db", help=DB_HELP),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Delete a run and its artifacts directory (asks first unless --yes)."""
    with user_errors(), _open(db) as store:
        run = store.get_run(run_id)
        if not yes:
            where = f" and {run.artifacts_dir}" if run.artifacts_dir else ""
            # Asked on stderr so stdout stays clean; no answer (EOF) means no.
            typer.confirm(f"Delete run {run.id} of {run.scenario_name!r} "
                          f"(revision {run.scenario_revision}){where}?",
                          abort=True, err=True)
        store.delete_run(run_id)
    if as_json:
        emit_json({"deleted": run_id, "db": str(store.path)})
    else:
        err_console.print(f"deleted run {run_id}", highlight=False)


def scenarios(
    db: Path | None = typer.Option(None, "--db", help=DB_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """List saved scenarios (latest revision of each name), newest first."""
    with user_errors(), _open(db) as store:
        rows = store.list_scenarios()
    if as_json:
        emit_json({"db": str(store.path), "scenarios": [_scenario_dict(s) for s in rows]})
        return
    if not rows:
        console.print(f"no scenarios in {store.path}", highlight=False)
        return
    t = Table(title=f"scenarios in {store.path}", title_justify="left")
    for col in ("id", "name", "revision", "saved (UTC)"):
        t.add_column(col)
    for s in rows:
        t.add_row(str(s.id), s.name, str(s.revision), s.created_at[:19].replace("T", " "))
    console.print(t)


def save_scenario(
    scenario: Path = typer.Argument(..., metavar="FILE.yaml", help="Scenario file to save."),
    name: str | None = typer.Option(None, "--name", help="Name (default: the scenario's name)."),
    db: Path | None = typer.Option(None, "--db", help=DB_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Validate a scenario file and save it (a new revision if the name exists)."""
    from clusterwright.spec.scenario import load_scenario

    with user_errors():
        sc, _ = load_scenario(scenario)  # invalid files are refused with field and line
        text = scenario.read_text(encoding="utf-8")
        with _open(db) as store:
            row = store.save_scenario(name if name is not None else sc.name, text)
    if as_json:
        emit_json({**_scenario_dict(row), "db": str(store.path)})
    else:
        console.print(f"saved scenario {row.name!r} revision {row.revision} as id {row.id}",
                      highlight=False)


def plan_run(
    ctx: typer.Context,
    scenario_id: int = typer.Argument(..., metavar="SCENARIO_ID", help="Saved scenario id."),
    db: Path | None = typer.Option(None, "--db", help=DB_HELP),
    quick: bool = typer.Option(False, "--quick", help="Smaller simulations (as in sweeps)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Plan a saved scenario; record the run, its metrics and its artifacts in the store."""
    from clusterwright.catalog.references import resolve
    from clusterwright.errors import ClusterwrightError
    from clusterwright.export.blueprint import write_blueprint
    from clusterwright.plan.run import plan_to_dir
    from clusterwright.spec.scenario import loads_scenario

    with user_errors(), _open(db) as store:
        saved = store.get_scenario(scenario_id)
        sc, doc = loads_scenario(saved.yaml_text, f"scenario id {scenario_id}")
        cat = state(ctx).catalog()
        resolve(sc, cat, doc)
        # Half-written artifacts of runs killed earlier (kill -9 leaves no chance to clean up).
        store.remove_stale_temp_dirs()
        run = store.create_run(scenario_id)
        # Owned by this process with a heartbeat: if it is killed, readers fail the run.
        store.start_run(run.id)

        def progress(stage: str, done: int, total: int) -> None:
            store.update_run(run.id, stage=stage, done=done, total=total)

        try:
            out = store.run_dir(run.id)
            with _terminate_as_interrupt():
                res = plan_to_dir(sc, cat, out, progress, write=write_blueprint, doc=doc,
                                  quick=quick, force=True,
                                  source=f"scenario {saved.name!r} r{saved.revision}")
        except ClusterwrightError as exc:
            store.fail_run(run.id, str(exc))
            raise
        except OSError as exc:
            store.fail_run(run.id, f"cannot write artifacts: {exc}")
            raise ClusterwrightError(f"run {run.id}: cannot write artifacts: {exc}") from exc
        except KeyboardInterrupt:
            store.fail_run(run.id, "interrupted")
            raise
        store.finish_run(run.id, blueprint=res.data, metrics=res.metrics, artifacts_dir=out)
        done = store.get_run(run.id)
    if as_json:
        emit_json(_run_dict(done))
    else:
        console.print(f"run {done.id}: {done.status}; artifacts in {done.artifacts_dir}",
                      highlight=False)


@contextmanager
def _terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM (a scheduler's or systemd's stop) ends the plan as Ctrl-C does: the run is
    marked interrupted and its half-written artifacts removed, rather than left "running"
    until a reader notices the heartbeat stopped."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


app.command("list")(list_runs)
app.command("show")(show_run)
app.command("delete")(delete_run)
app.command("scenarios")(scenarios)
app.command("save-scenario")(save_scenario)
app.command("plan")(plan_run)
