"""Worker functions the store's concurrency and crash tests start in other processes, and
``Holder``, a process holding a run ``running`` (for the stale-run tests of every face).

They live in an importable module (not the test file) so the ``spawn`` start method, which
imports the target afresh in the child, can find them.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing as mp
import os
import signal
from pathlib import Path
from typing import Any

from clusterwright.store import Store

SHARED_NAME = "shared"
# spawn, not fork: test processes have threads, and a forked sqlite3 handle is unsafe.
CTX = mp.get_context("spawn")
GUARD_S = 60.0  # a guard against a hang, not a timing assertion


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


def hold_run(db: Path, scenario_id: int, report: Any, release: Any) -> None:
    """Create a run and take it as this process's (``start_run``), report its id, then hold it
    ``running`` until ``release`` is set (or this process is killed); then finish it."""
    store = Store(db)
    try:
        run = store.create_run(scenario_id)
        store.start_run(run.id)
        store.update_run(run.id, stage="design", done=1, total=2)
        report.put(run.id)
        release.wait()
        store.finish_run(run.id, blueprint={"held": True}, metrics={"held": 1}, artifacts_dir=None)
    finally:
        store.close()


class Holder:
    """A process holding one run ``running`` (``hold_run``) until released or killed."""

    def __init__(self, db: Path, scenario_id: int) -> None:
        self.report: Any = CTX.Queue()
        self.release: Any = CTX.Event()
        self.proc = CTX.Process(target=hold_run,
                                args=(db, scenario_id, self.report, self.release))
        self.proc.start()
        self.run_id: int = self.report.get(timeout=GUARD_S)
        assert self.proc.pid is not None
        self.pid: int = self.proc.pid

    def kill(self) -> None:
        os.kill(self.pid, signal.SIGKILL)
        self.proc.join(GUARD_S)  # reaped: the pid names no process now

    def finish(self) -> None:
        self.release.set()
        self.proc.join(GUARD_S)
        assert self.proc.exitcode == 0

    def close(self) -> None:
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join()
        self.report.close()


def open_new_files(root: Path, rounds: int, barrier: Any, failures: Any) -> None:
    """Open a ``Store`` on a new file ``root/<round>.db`` each round, all workers together.

    Every failed open is put on ``failures`` as its message, so the test can show it."""
    for r in range(rounds):
        barrier.wait()
        try:
            Store(root / f"{r}.db").close()
        except Exception as exc:  # reported, not raised: the other rounds still run
            failures.put(f"round {r}: {exc}")
