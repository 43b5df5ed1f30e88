"""Runs plans in the background: a bounded thread pool, each thread supervising one child
process (``web/worker.py``) and killing it past the run time limit.

Threads only wait; the plan itself runs in the child, so the server keeps answering while
plans run. The children come from a fork server that imported the planner once, so starting a
run costs a fork, not an interpreter start.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import shutil
import signal
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from multiprocessing.process import BaseProcess
from pathlib import Path

from clusterwright.plan.scenario import plan_scenario
from clusterwright.store import Store
from clusterwright.web.config import MAX_QUEUED_RUNS, WebConfig
from clusterwright.web.worker import PlanFn, execute_run


def _kill_group(proc: BaseProcess) -> None:
    # The child leads its own process group (worker.execute_run), so its plan's pool
    # workers die with it.
    pid = proc.pid
    if pid is None:
        return
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()


class RunQueueFullError(Exception):
    """Too many runs are waiting for a worker."""


class RunManager:
    """Starts and supervises runs; ``plan_fn`` (a module-level function, as it is sent to a
    child process by reference) can be swapped, e.g. by tests."""

    def __init__(self, store: Store, config: WebConfig) -> None:
        self.store = store
        self.config = config
        self.plan_fn: PlanFn = plan_scenario
        self._pool = ThreadPoolExecutor(max_workers=max(1, config.max_concurrent_runs),
                                        thread_name_prefix="clusterwright-run")
        self._ctx = multiprocessing.get_context("forkserver")
        self._ctx.set_forkserver_preload(["clusterwright.web.worker"])
        self._lock = threading.Lock()
        self._futures: dict[int, Future[None]] = {}
        self._procs: dict[int, BaseProcess] = {}
        self._closed = False

    def pending(self) -> int:
        """Runs queued or running in this server."""
        with self._lock:
            return sum(1 for f in self._futures.values() if not f.done())

    def submit(self, run_id: int, yaml_text: str) -> None:
        """Queue run ``run_id``; RunQueueFullError if too many are waiting."""
        with self._lock:
            if self._closed:
                raise RunQueueFullError("the server is shutting down")
            busy = sum(1 for f in self._futures.values() if not f.done())
            if busy >= MAX_QUEUED_RUNS + self.config.max_concurrent_runs:
                raise RunQueueFullError(
                    f"{busy} runs are queued or running; wait for one to finish")
            self._futures = {k: f for k, f in self._futures.items() if not f.done()}
            self._futures[run_id] = self._pool.submit(self._supervise, run_id, yaml_text)

    def _out_dir(self, run_id: int) -> Path:
        return self.store.run_dir(run_id)

    def _supervise(self, run_id: int, yaml_text: str) -> None:
        out = self._out_dir(run_id)
        proc = self._ctx.Process(
            # Not daemonic: the plan may start its own worker pool (serving plans do).
            target=execute_run, name=f"clusterwright-run-{run_id}", daemon=False,
            args=(str(self.store.path), run_id, yaml_text, str(out), self.plan_fn))
        with self._lock:
            if self._closed:
                return
            self._procs[run_id] = proc
        try:
            proc.start()
            proc.join(self.config.run_timeout_s)
            if proc.is_alive():
                # Recorded before the kill: once the child is gone, any reader would fail the
                # run as interrupted, a message that does not say why.
                self.store.fail_run(
                    run_id, f"the plan ran longer than the {self.config.run_timeout_s:g} s "
                    "limit of this server and was stopped (`clusterwright plan` has no limit)")
                _kill_group(proc)
                proc.join()
                self._remove_partial(run_id)
                return
            # Conditional, not read-then-write: a reader may already have failed the run as
            # interrupted (its owner, the child, is gone); this message says more.
            self._remove_partial(run_id)
            self.store.fail_run(run_id, f"the plan's process ended (exit code {proc.exitcode}) "
                                "before recording a result", unless_finished=True)
        except Exception as exc:  # keep the pool thread alive; the run must end
            self.store.fail_run(run_id, f"could not run the plan: {type(exc).__name__}: {exc}",
                                unless_finished=True)
        finally:
            with self._lock:
                self._procs.pop(run_id, None)

    def _remove_partial(self, run_id: int) -> None:
        # write_blueprint writes into ".<name>.*" next to the target and renames at the end;
        # the child that wrote it has ended.
        root = self.store.run_dir(run_id).parent
        if root.is_dir():
            for p in root.glob(f".{int(run_id)}.*"):
                shutil.rmtree(p, ignore_errors=True)

    def wait(self, run_id: int, timeout: float | None = None) -> None:
        """Block until run ``run_id`` (started here) has ended; for tests and shutdown."""
        with self._lock:
            fut = self._futures.get(run_id)
        if fut is not None:
            fut.result(timeout)

    def shutdown(self) -> None:
        """Stop taking runs, kill running plans and fail what did not finish."""
        with self._lock:
            self._closed = True
            procs = dict(self._procs)
            queued = [k for k, f in self._futures.items() if not f.done()]
        for p in procs.values():
            if p.is_alive():
                _kill_group(p)
        self._pool.shutdown(wait=True, cancel_futures=True)
        for run_id in queued:
            # The store may already be closed; then there is nothing left to record.
            with contextlib.suppress(Exception):
                self.store.fail_run(run_id, "the server stopped before the run finished",
                                    unless_finished=True)
