"""Shared by the web tests: a client that talks like a browser on this machine and a wait for
a run to end."""

from __future__ import annotations

import time
from pathlib import Path

from fastapi import FastAPI
from fastapi.testclient import TestClient

from clusterwright.store import RunRow
from clusterwright.web.examples import EXAMPLES_DIR

TRAINING = (EXAMPLES_DIR / "training-1k-h100" / "scenario.yaml").read_text(encoding="utf-8")
RUN_GUARD_S = 120.0  # a guard against a hang, not a timing assertion
# Where `clusterwright web` listens by default. TestClient's own default, http://testserver,
# is a Host the app refuses (as it should: only loopback names are answered by default).
BASE = "http://127.0.0.1:8000"


def client_of(app: FastAPI, *, origin: bool = True) -> TestClient:
    """A client sending Host 127.0.0.1:8000 and, with ``origin``, the Origin of the app's own
    pages on every request, as a browser does on each form post and HTMX request (a write
    without Origin or Referer is refused). Use it as a context manager to run the lifespan."""
    return TestClient(app, base_url=BASE, headers={"Origin": BASE} if origin else None)


def wait_run(client: TestClient, run_id: int, statuses: tuple[str, ...] = ("done", "failed"),
             guard_s: float = RUN_GUARD_S, stage: str | None = None) -> RunRow:
    """Poll the store until run ``run_id`` has one of ``statuses`` (and ``stage``)."""
    store = client.app.state.web.store  # type: ignore[attr-defined]
    end = time.monotonic() + guard_s
    while True:
        run: RunRow = store.get_run(run_id)
        if run.status in statuses and (stage is None or run.stage == stage):
            return run
        if time.monotonic() > end:
            raise AssertionError(f"run {run_id} still {run.status} after {guard_s} s")
        time.sleep(0.05)


def run_id_of(location: str) -> int:
    """``/runs/7`` -> 7."""
    assert location.startswith("/runs/"), location
    return int(Path(location).name)
