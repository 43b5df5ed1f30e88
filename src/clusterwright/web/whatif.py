"""What-if on a finished run: sliders re-price its stored blueprint (``plan/whatif.py``)
without a new plan, and say when a change needs one.

``GET /runs/{id}/whatif`` is the page; ``GET /runs/{id}/whatif.json?utilization=..`` answers
the re-priced numbers (200) or, for a value outside its control's range, 422 with the
control's name and the message, so the page shows it and keeps its last valid numbers.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import JSONResponse
from starlette.responses import Response

from clusterwright.errors import InputError
from clusterwright.jsonsafe import jsonable
from clusterwright.plan import whatif
from clusterwright.store import RunRow, StoreError
from clusterwright.web.state import WebState, web

router = APIRouter()
State = Annotated[WebState, Depends(web)]
# name, label, unit, min, max, step (the ranges plan/whatif.py accepts)
CONTROLS: tuple[tuple[str, str, str, float, float, float], ...] = (
    ("utilization", "utilization (used / installed GPU-hours)", "", 0.05, 1.0, 0.01),
    ("electricity_usd_per_kwh", "electricity", "$/kWh", 0.0, 0.5, 0.005),
    ("server_price_usd", "server price", "$", 10_000.0, 5_000_000.0, 1_000.0),
    ("cloud_usd_per_gpu_hour", "cloud price", "$/GPU-h", 0.1, 20.0, 0.01),
    ("deadline_days", "training deadline", "days", 1.0, 365.0, 1.0),
)


def _done_run(w: WebState, run_id: int) -> RunRow | None:
    try:
        run = w.store.get_run(run_id)
    except StoreError:
        return None
    return run if run.status == "done" and run.blueprint else None


@router.get("/runs/{run_id}/whatif")
def whatif_page(request: Request, run_id: int, w: State) -> Response:
    """The what-if page of a finished run: its baseline, sliders and the re-priced costs."""
    run = _done_run(w, run_id)
    if run is None:
        return w.render(request, "message.html", status_code=404, title="No what-if",
                        message=f"run {run_id} has no finished blueprint to re-price")
    assert run.blueprint is not None
    base = whatif.baseline(run.blueprint)
    controls = []
    for name, label, unit, lo, hi, step in CONTROLS:
        value = base.get(name)
        if value is None:
            continue
        low, high, open_low = whatif.LIMITS[name]
        controls.append({"name": name, "label": label, "unit": unit, "step": step,
                         "min": min(lo, value), "max": max(hi, value), "value": value,
                         "low": low, "high": high, "open_low": open_low})
    first: dict[str, Any] | None = None
    if base["repriceable"]:
        try:
            first = jsonable(whatif.reprice(run.blueprint, whatif.WhatIf()).as_dict())
        except (InputError, TypeError, ValueError, KeyError):
            # A stored blueprint that lacks what re-pricing needs (an older or edited one).
            base = {**base, "repriceable": False}
    return w.render(request, "whatif.html", run=run, base=base, controls=controls,
                    first=first, terms=whatif.TERMS)


@router.get("/runs/{run_id}/whatif.json")
def whatif_json(run_id: int, w: State,
                utilization: Annotated[float | None, Query()] = None,
                electricity_usd_per_kwh: Annotated[float | None, Query()] = None,
                server_price_usd: Annotated[float | None, Query()] = None,
                cloud_usd_per_gpu_hour: Annotated[float | None, Query()] = None,
                cloud_term: Annotated[str | None, Query()] = None,
                deadline_days: Annotated[float | None, Query()] = None) -> Response:
    """The run's blueprint re-priced at the given values (each optional)."""
    run = _done_run(w, run_id)
    if run is None:
        return JSONResponse({"error": f"run {run_id} has no finished blueprint",
                             "control": None}, status_code=404)
    assert run.blueprint is not None
    what = whatif.WhatIf(utilization=utilization,
                         electricity_usd_per_kwh=electricity_usd_per_kwh,
                         server_price_usd=server_price_usd,
                         cloud_usd_per_gpu_hour=cloud_usd_per_gpu_hour,
                         cloud_term=cloud_term or None, deadline_days=deadline_days)
    try:
        out = whatif.reprice(run.blueprint, what)
    except InputError as exc:
        return JSONResponse({"error": str(exc), "control": exc.field}, status_code=422)
    except (TypeError, ValueError, KeyError) as exc:
        return JSONResponse({"error": f"blueprint: cannot be re-priced ({exc}); re-plan",
                             "control": None}, status_code=422)
    return JSONResponse(jsonable(out.as_dict()))
