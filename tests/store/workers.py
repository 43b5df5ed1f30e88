"""Worker functions the store's concurrency and crash tests start in other processes.

They live in an importable module (not the test file) so the ``spawn`` start method, which
imports the target afresh in the child, can find them.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from clusterwright.store import Store

SHARED_NAME = "shared"


def save_many(db: Path, worker: str, count: int, start: Any = None) -> None:
    """Save ``count`` revisions of one shared scenario name plus one finished run each."""
    if start is not None:
        start.wait()
    store = Store(db)
    try:
        for k in range(count):
            sc = store.save_scenario(SHARED_NAME, f"worker: {worker}\nk: {k}\n")
            run = store.create_run(sc.id)
            store.update_run(run.id, status="running", stage="design", done=1, total=2)
            store.finish_run(
                run.id, blueprint={"worker": worker, "k": k}, metrics={"k": k}, artifacts_dir=None
            )
    finally:
        store.close()


def blueprint_of(i: int, entries: int) -> dict[str, Any]:
    """A blueprint large enough (about 60 bytes per entry) that writing it takes a while."""
    rows = [{"n": n, "label": f"link-{i}-{n}", "gbps": 400.0} for n in range(entries)]
    return {"i": i, "rows": rows}


def digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()


def scenario_text(i: int, lines: int) -> str:
    body = "".join(f"# padding line {n} of scenario {i}\n" for n in range(lines))
    return f"# sha256: {hashlib.sha256(body.encode()).hexdigest()}\n{body}"


def write_forever(db: Path, entries: int, lines: int, report: Any) -> None:
    """Write until killed: each iteration saves a large scenario, creates a run and finishes
    it with a large blueprint whose digest is in its metrics, and deletes an older scenario
    (a multi-row cascade). ``report`` gets ("begin", i) before and ("end", i) after."""
    store = Store(db)
    i = 0
    while True:
        report.put(("begin", i))
        sc = store.save_scenario(f"s{i}", scenario_text(i, lines))
        run = store.create_run(sc.id)
        bp = blueprint_of(i, entries)
        store.finish_run(
            run.id,
            blueprint=bp,
            metrics={"i": i, "digest": digest(bp), "entries": entries},
            artifacts_dir=None,
        )
        if i >= 3 and i % 3 == 0:
            store.delete_scenario(store.list_revisions(f"s{i - 3}")[0].id)
        report.put(("end", i))
        i += 1
