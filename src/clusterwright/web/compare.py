"""Compare two or more runs side by side: the metrics table and bar charts."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from starlette.responses import Response

from clusterwright.store import RunRow, StoreError
from clusterwright.web.metrics import figures, metric_rows, run_label
from clusterwright.web.state import WebState, web

router = APIRouter()
State = Annotated[WebState, Depends(web)]
MAX_COMPARED = 12


@router.get("/compare")
def compare(request: Request, w: State,
            run: Annotated[list[int] | None, Query()] = None) -> Response:
    """``/compare?run=1&run=2...``: finished runs side by side (each id once, in order)."""
    ids = list(dict.fromkeys(run or []))[:MAX_COMPARED]
    runs: list[RunRow] = []
    problems: list[str] = []
    for i in ids:
        try:
            r = w.store.get_run(i)
        except StoreError:
            problems.append(f"run {i} is not in this database")
            continue
        if r.status != "done" or not r.metrics:
            problems.append(f"run {i} ({r.scenario_name}) has no results: it is {r.status}")
            continue
        runs.append(r)
    if len(runs) < 2:
        problems.append("tick two or more finished runs on the home page to compare them")
    return w.render(request, "compare.html", runs=runs, labels=[run_label(r) for r in runs],
                    rows=metric_rows(runs), figures=figures(runs) if len(runs) >= 2 else [],
                    problems=problems)
