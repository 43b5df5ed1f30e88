"""``create_app``: the FastAPI app of the web workbench (see docs/web.md)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from importlib import resources
from pathlib import Path

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles

from clusterwright.store import Store
from clusterwright.web import assets, catalog, compare, pages, runs, schema, twin, whatif
from clusterwright.web.config import WebConfig
from clusterwright.web.hosts import allowed_names
from clusterwright.web.middleware import BodyLimitMiddleware, HostOriginMiddleware
from clusterwright.web.runner import RunManager
from clusterwright.web.state import WebState


def _fail_orphans(store: Store) -> None:
    # Only runs whose owner process is gone: another server or a `runs plan` may be running some.
    store.fail_stale_runs()
    store.remove_stale_temp_dirs()


def create_app(db_path: Path | None = None, *, max_body_bytes: int = 1_000_000,
               max_concurrent_runs: int = 2, run_timeout_s: float = 300.0,
               allowed_hosts: Iterable[str] = ()) -> FastAPI:
    """The workbench on the store at ``db_path`` (None: the store's default file).

    ``max_body_bytes``: larger request bodies get 413; ``max_concurrent_runs``: plans running
    at once (more wait in a queue); ``run_timeout_s``: a plan running longer (seconds) is
    stopped and its run failed; ``allowed_hosts``: Host names answered besides localhost,
    127.0.0.1 and [::1] (any other Host gets 400; ValueError for a value that is no name)."""
    config = WebConfig(db_path=db_path, max_body_bytes=max_body_bytes,
                       max_concurrent_runs=max_concurrent_runs, run_timeout_s=run_timeout_s,
                       allowed_hosts=allowed_names(extra=tuple(allowed_hosts)))
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
    # The last added runs first: Host and Origin are checked before any body is read.
    app.add_middleware(BodyLimitMiddleware, max_bytes=max_body_bytes)
    app.add_middleware(HostOriginMiddleware, allowed_hosts=config.allowed_hosts)
    for module in (assets, pages, runs, compare, catalog, schema, twin, whatif):
        app.include_router(module.router)
    static = resources.files("clusterwright.web") / "static"
    app.mount("/static", StaticFiles(directory=str(static)), name="static")
    return app
