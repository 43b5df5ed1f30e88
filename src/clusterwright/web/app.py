"""``create_app``: the FastAPI app of the web workbench (see docs/web.md)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib import resources
from pathlib import Path

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles

from clusterwright.store import Store
from clusterwright.web import assets, catalog, compare, pages, runs
from clusterwright.web.config import WebConfig
from clusterwright.web.middleware import BodyLimitMiddleware, SameOriginMiddleware
from clusterwright.web.runner import RunManager
from clusterwright.web.state import WebState


def _fail_orphans(store: Store) -> None:
    # Runs left queued or running by a server that stopped can never finish now.
    for r in store.list_runs(with_blueprint=False):
        if r.status in ("queued", "running"):
            store.fail_run(r.id, "the server stopped before the run finished; run it again")


def create_app(db_path: Path | None = None, *, max_body_bytes: int = 1_000_000,
               max_concurrent_runs: int = 2, run_timeout_s: float = 300.0) -> FastAPI:
    """The workbench on the store at ``db_path`` (None: the store's default file).

    ``max_body_bytes``: larger request bodies get 413; ``max_concurrent_runs``: plans running
    at once (more wait in a queue); ``run_timeout_s``: a plan running longer (seconds) is
    stopped and its run failed."""
    config = WebConfig(db_path=db_path, max_body_bytes=max_body_bytes,
                       max_concurrent_runs=max_concurrent_runs, run_timeout_s=run_timeout_s)
    store = Store(db_path)
    _fail_orphans(store)
    state = WebState(config=config, store=store, runner=RunManager(store, config))

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        try:
            yield
        finally:
            state.runner.shutdown()
            state.store.close()

    app = FastAPI(title="Clusterwright workbench", lifespan=lifespan, docs_url=None,
                  redoc_url=None, openapi_url=None)
    app.state.web = state
    app.add_middleware(SameOriginMiddleware)
    app.add_middleware(BodyLimitMiddleware, max_bytes=max_body_bytes)
    for module in (assets, pages, runs, compare, catalog):
        app.include_router(module.router)
    static = resources.files("clusterwright.web") / "static"
    app.mount("/static", StaticFiles(directory=str(static)), name="static")
    return app
