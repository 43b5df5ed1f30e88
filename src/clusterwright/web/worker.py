"""The process one plan runs in: parse, plan, write the artifacts, record the result.

It runs in a child process (see ``web/runner.py``) so a slow plan never holds the server's
interpreter lock and a run past its time limit can be killed. It opens the store itself:
SQLite in WAL mode lets this process write progress while the server reads it. It takes the
run over from the server (``Store.start_run``): if this process is killed, whoever reads the
run next fails it as interrupted, even when the server is gone too.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from clusterwright.catalog.references import resolve
from clusterwright.catalog.registry import Catalog, load_catalog
from clusterwright.design.blueprint import Blueprint
from clusterwright.errors import ClusterwrightError
from clusterwright.export.blueprint import blueprint_json, write_blueprint
from clusterwright.sim.scenario_plan import Progress, plan_scenario
from clusterwright.spec.scenario import Scenario, loads_scenario
from clusterwright.store import Store

PlanFn = Callable[..., Blueprint]  # (scenario, catalog, *, progress, source) -> Blueprint
PROGRESS_EVERY_S = 0.2  # at most ~5 progress writes a second within one stage


def plan(scenario: Scenario, cat: Catalog, *, progress: Progress, source: str) -> Blueprint:
    """The full plan of ``scenario`` (the same as ``clusterwright plan``)."""
    return plan_scenario(scenario, cat, progress=progress, source=source)


def _json_ready(obj: dict[str, Any]) -> dict[str, Any]:
    # NaN and infinity become null, numpy scalars plain numbers (blueprint.json's rules).
    data: dict[str, Any] = json.loads(blueprint_json(obj))
    return data


def execute_run(db_path: str, run_id: int, yaml_text: str, out_dir: str,
                plan_fn: PlanFn = plan) -> None:
    """Plan run ``run_id`` of the scenario text and record it in the store at ``db_path``:
    progress while it runs, then the blueprint, metrics and artifacts under ``out_dir``, or
    the error message. Never raises for a bad scenario: the run is failed with the message."""
    # Lead a process group, so that stopping this run also stops any pool the plan starts.
    os.setpgid(0, 0)
    store = Store(db_path)
    last_stage = [""]
    last_t = [0.0]

    def progress(stage: str, done: int, total: int) -> None:
        now = time.monotonic()
        if stage == last_stage[0] and done < total and now - last_t[0] < PROGRESS_EVERY_S:
            return
        last_stage[0], last_t[0] = stage, now
        store.update_run(run_id, stage=stage, done=done, total=total)

    try:
        store.start_run(run_id)
        store.update_run(run_id, stage="starting", done=0, total=1)
        sc, doc = loads_scenario(yaml_text, "<scenario>")
        cat = load_catalog()
        resolve(sc, cat, doc)
        bp = plan_fn(sc, cat, progress=progress, source=f"web run {run_id}")
        store.update_run(run_id, stage="artifacts", done=0, total=1)
        out = Path(out_dir)
        write_blueprint(bp, bp.fabric_design, out, force=True)
        store.finish_run(run_id, blueprint=_json_ready(bp.to_dict()),
                         metrics=_json_ready(dict(bp.metrics())), artifacts_dir=out)
    except ClusterwrightError as exc:
        store.fail_run(run_id, str(exc))
    except Exception as exc:  # a bug must still end the run with a message, not hang it
        store.fail_run(run_id, f"internal error: {type(exc).__name__}: {exc}")
    finally:
        store.close()
