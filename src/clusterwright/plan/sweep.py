"""Run a sweep: every point through the scenario planner, in a process pool or on Ray.

Each point is planned by ``plan_scenario(scenario, cat, quick=...)`` and reduced to
``Blueprint.metrics()``, a flat row. An infeasible design is a row with ``feasible`` false;
an exception in one point becomes a row with the error message and the sweep goes on. Every
point carries its scenario's seed, so the rows do not depend on the backend, the number of
workers or the order in which points finish.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import dataclass
from multiprocessing import get_context
from typing import Any, Literal, Protocol

from clusterwright.catalog.references import resolve
from clusterwright.catalog.registry import Catalog
from clusterwright.errors import InputError, ScenarioError
from clusterwright.spec.sweep import Point, Sweep, SweepError

Backend = Literal["serial", "local", "ray"]
Metrics = dict[str, float | str | bool | None]


class HasMetrics(Protocol):
    def metrics(self) -> Metrics: ...


PlanFn = Callable[..., HasMetrics]  # plan_scenario(scenario, cat, *, quick) -> Blueprint
OnRow = Callable[["Row"], None]


@dataclass(frozen=True)
class Row:
    """The result of one point: its values, the flat metrics, or the error that stopped it."""

    index: int
    values: dict[str, Any]
    metrics: Metrics | None
    error: str | None

    @property
    def feasible(self) -> bool:
        return self.error is None and bool((self.metrics or {}).get("feasible"))

    def as_dict(self) -> dict[str, Any]:
        return {"index": self.index, "variables": self.values, "metrics": self.metrics,
                "error": self.error}


@dataclass
class SweepResult:
    """Every row, in point order, and how the sweep ran."""

    sweep: Sweep
    rows: list[Row]
    backend: str
    workers: int
    elapsed_s: float = 0.0


def default_plan() -> PlanFn:
    """The scenario planner (imported late: it pulls in every model)."""
    from clusterwright.plan.scenario import plan_scenario

    return plan_scenario


def evaluate(point: Point, cat: Catalog, quick: bool, plan: PlanFn | None = None) -> Row:
    """Plan one point; any exception becomes an error row (the sweep goes on without it)."""
    fn = plan or default_plan()
    try:
        metrics = dict(fn(point.scenario, cat, quick=quick).metrics())
    except Exception as exc:
        msg = str(exc).strip().splitlines()
        return Row(point.index, point.values, None,
                   f"{type(exc).__name__}: {msg[0] if msg else 'no message'}")
    return Row(point.index, point.values, metrics, None)


def check_catalog(sweep: Sweep, cat: Catalog) -> None:
    """Every id a point names (models, GPUs, servers) is in the catalog; else SweepError
    naming the variable value, or the base scenario, that brought the unknown id in."""
    try:
        resolve(sweep.base, cat)
    except ScenarioError as exc:
        raise SweepError(f"{sweep.source}: base scenario: {exc}") from None
    for var in sweep.variables:
        for value, line in zip(var.values or (), var.value_lines or (), strict=False):
            try:
                resolve(sweep.scenario_with({var.path: value}), cat)
            except ScenarioError as exc:
                where = f" (line {line})" if line else ""
                detail = str(exc).removeprefix("<scenario>: ")
                raise SweepError(
                    f"{sweep.source}: variables.{var.path}{where}: value {value!r}: {detail}"
                ) from None
    for point in sweep.points:
        try:
            resolve(point.scenario, cat)
        except ScenarioError as exc:
            raise SweepError(f"{sweep.source}: point {point.index} {point.values}: {exc}") from None


# ------------------------------------------------------------------ backends

_WORKER: dict[str, Any] = {}


def _init_worker(cat: Catalog, quick: bool, plan: PlanFn | None) -> None:
    # The catalog travels once per worker process, not once per point.
    _WORKER.update(cat=cat, quick=quick, plan=plan)


def _evaluate_in_worker(point: Point) -> Row:
    return evaluate(point, _WORKER["cat"], _WORKER["quick"], _WORKER["plan"])


def _run_serial(points: Sequence[Point], cat: Catalog, quick: bool, plan: PlanFn | None,
                on_row: OnRow) -> None:
    for p in points:
        on_row(evaluate(p, cat, quick, plan))


def _run_local(points: Sequence[Point], cat: Catalog, quick: bool, plan: PlanFn | None,
               workers: int, on_row: OnRow) -> None:
    # spawn, not fork: the parent runs a progress-bar thread, and a forked child could
    # inherit a lock that thread holds.
    with ProcessPoolExecutor(
        max_workers=workers, mp_context=get_context("spawn"), initializer=_init_worker,
        initargs=(cat, quick, plan),
    ) as pool:
        futures: dict[Future[Row], Point] = {pool.submit(_evaluate_in_worker, p): p
                                             for p in points}
        try:
            for fut in as_completed(futures):
                p = futures[fut]
                try:
                    row = fut.result()
                except BrokenProcessPool as exc:
                    row = Row(p.index, p.values, None, f"worker process died: {exc}")
                on_row(row)
        except BaseException:
            for fut in futures:
                fut.cancel()
            raise


def require_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise InputError(
            "--backend ray: Ray is not installed; pip install 'clusterwright[ray]' "
            "(or use --backend local)"
        ) from None
    return ray


def _ray_evaluate(point: Point, cat: Catalog, quick: bool, plan: PlanFn | None) -> Row:
    return evaluate(point, cat, quick, plan)


@contextmanager
def _own_signal_handlers() -> Iterator[None]:
    """Ray's driver installs a SIGTERM handler and leaves it after shutdown; put back the
    caller's, so a sweep run inside a longer-lived process does not change its signals."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    saved = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for sig, handler in saved.items():
            if handler is not None:
                signal.signal(sig, handler)


def _run_ray(points: Sequence[Point], cat: Catalog, quick: bool, plan: PlanFn | None,
             workers: int, address: str | None, on_row: OnRow) -> None:
    ray = require_ray()
    if ray.is_initialized():  # a notebook's or a test's instance: use it, leave it running
        _ray_tasks(ray, points, cat, quick, plan, on_row)
        return
    with _own_signal_handlers():
        try:
            if address:
                ray.init(address=address, log_to_driver=False, logging_level=logging.WARNING)
            else:
                # A local instance sized for this machine; sweep objects are small.
                ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False,
                         logging_level=logging.WARNING, object_store_memory=200 * 1024**2)
        except Exception as exc:
            where = f"--address {address}" if address else "--backend ray"
            raise InputError(f"{where}: cannot start or reach Ray: {exc}") from None
        try:
            _ray_tasks(ray, points, cat, quick, plan, on_row)
        finally:
            ray.shutdown()


def _ray_tasks(ray: Any, points: Sequence[Point], cat: Catalog, quick: bool,
               plan: PlanFn | None, on_row: OnRow) -> None:
    task = ray.remote(num_cpus=1, max_retries=0)(_ray_evaluate)
    cat_ref = ray.put(cat)
    pending = {task.remote(p, cat_ref, quick, plan): p for p in points}
    while pending:
        done, _ = ray.wait(list(pending), num_returns=1)
        for ref in done:
            p = pending.pop(ref)
            try:
                row = ray.get(ref)
            except Exception as exc:  # a crashed worker or lost node, not a plan error
                row = Row(p.index, p.values, None,
                          f"Ray task failed: {type(exc).__name__}: {exc}".splitlines()[0])
            on_row(row)


def run_sweep(
    sweep: Sweep,
    cat: Catalog,
    *,
    backend: Backend = "local",
    workers: int | None = None,
    address: str | None = None,
    plan: PlanFn | None = None,
    on_row: OnRow | None = None,
) -> SweepResult:
    """Plan every point of ``sweep``; rows come back in point order whatever the backend.

    ``workers`` defaults to the machine's cores (never more than the points). ``on_row`` is
    called in this process as each point finishes (the CLI's progress bar). ``plan`` replaces
    ``plan_scenario`` (tests); it must be importable by name for the local and Ray backends.
    """
    if workers is not None and workers < 1:
        raise InputError(f"--workers must be at least 1, got {workers}")
    n = max(1, min(workers or os.cpu_count() or 1, len(sweep.points) or 1))
    rows: list[Row] = []

    def collect(row: Row) -> None:
        rows.append(row)
        if on_row is not None:
            on_row(row)

    t0 = time.perf_counter()
    if backend == "serial":
        _run_serial(sweep.points, cat, sweep.quick, plan, collect)
        n = 1
    elif backend == "local":
        _run_local(sweep.points, cat, sweep.quick, plan, n, collect)
    elif backend == "ray":
        _run_ray(sweep.points, cat, sweep.quick, plan, n, address, collect)
    else:
        raise InputError(f"--backend: {backend!r} is not one of local, ray")
    rows.sort(key=lambda r: r.index)
    return SweepResult(sweep=sweep, rows=rows, backend=backend, workers=n,
                       elapsed_s=time.perf_counter() - t0)


# ------------------------------------------------------------------ summaries

OBJECTIVES = ("total_cost_usd", "time_to_train_days", "ttft_p99_s")


def _num(v: object) -> float | None:
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    return float(v)


def best_rows(rows: Sequence[Row], key: str = "total_cost_usd", n: int = 5) -> list[Row]:
    """The ``n`` feasible rows lowest in ``key`` (ties by point order)."""
    ok = [r for r in rows if r.feasible and _num((r.metrics or {}).get(key)) is not None]
    return sorted(ok, key=lambda r: (_num((r.metrics or {})[key]), r.index))[:n]


def pareto(rows: Sequence[Row], x: str, y: str) -> list[Row]:
    """Feasible rows no other feasible row beats in both ``x`` and ``y`` (both minimized),
    sorted by ``x``."""
    pts = [(float(_num(m.get(x)) or 0.0), float(_num(m.get(y)) or 0.0), r) for r in rows
           if r.feasible and (m := r.metrics or {}) and _num(m.get(x)) is not None
           and _num(m.get(y)) is not None]
    pts.sort(key=lambda t: (t[0], t[1], t[2].index))
    front: list[Row] = []
    best_y = float("inf")
    for _, yv, r in pts:
        if yv < best_y:
            front.append(r)
            best_y = yv
    return front

