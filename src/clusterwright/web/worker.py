"""The process one plan runs in: parse, plan, write the artifacts, record the result.

It runs in a child process (see ``web/runner.py``) so a slow plan never holds the server's
interpreter lock and a run past its time limit can be killed. It opens the store itself:
SQLite in WAL mode lets this process write progress while the server reads it. It takes the
run over from the server (``Store.start_run``): if this process is killed, whoever reads the
run next fails it as interrupted, even when the server is gone too.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

from clusterwright.catalog.registry import load_catalog
from clusterwright.design.blueprint import Blueprint
from clusterwright.design.fabric import Fabric
from clusterwright.errors import ClusterwrightError
from clusterwright.export.blueprint import write_blueprint
from clusterwright.plan.run import plan_to_dir
from clusterwright.plan.scenario import plan_scenario
from clusterwright.spec.scenario import loads_scenario
from clusterwright.store import Store

PlanFn = Callable[..., Blueprint]  # (scenario, catalog, *, progress, source) -> Blueprint
PROGRESS_EVERY_S = 0.2  # at most ~5 progress writes a second within one stage


def execute_run(db_path: str, run_id: int, yaml_text: str, out_dir: str,
                plan_fn: PlanFn = plan_scenario) -> None:
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
        out = Path(out_dir)

        def _write(bp: Blueprint, fab: Fabric | None, out: Path, force: bool = False) -> list[str]:
            store.update_run(run_id, stage="artifacts", done=0, total=1)
            return write_blueprint(bp, fab, out, force=force)

        res = plan_to_dir(sc, cat, out, progress, write=_write, doc=doc, force=True,
                          source=f"web run {run_id}", plan=plan_fn)
        store.finish_run(run_id, blueprint=res.data, metrics=res.metrics, artifacts_dir=out)
    except ClusterwrightError as exc:
        store.fail_run(run_id, str(exc))
    except Exception as exc:  # a bug must still end the run with a message, not hang it
        store.fail_run(run_id, f"internal error: {type(exc).__name__}: {exc}")
    finally:
        store.close()
