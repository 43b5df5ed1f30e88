"""Run pages: live progress, summary metrics, the report and the artifacts as a zip.

Files are only ever read from ``Store.artifacts_dir`` of a run found by the integer id of the
route (``<db file>.runs/<id>``, or ``<db dir>/runs/<id>`` for a run recorded before schema 2):
no text from a request becomes part of a path, and symlinks inside are skipped. Reading a run
whose owner process is gone fails it (``store/liveness.py``), so its page stops polling.
"""

from __future__ import annotations

import os
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import FileResponse, StreamingResponse
from starlette.responses import Response

from clusterwright.store import RunRow, StoreError
from clusterwright.web.metrics import metric_rows
from clusterwright.web.state import WebState, web

router = APIRouter()
State = Annotated[WebState, Depends(web)]
CHUNK = 64 * 1024
FINISHED = ("done", "failed")


def _run(w: WebState, run_id: int) -> RunRow | None:
    try:
        return w.store.get_run(run_id)
    except StoreError:
        return None


def _missing(request: Request, w: WebState, run_id: int) -> Response:
    return w.render(request, "message.html", status_code=404, title="No such run",
                    message=f"run {run_id} is not in this database")


def run_dir(w: WebState, run: RunRow) -> Path | None:
    """The artifacts directory of a finished run, or None if it has none."""
    if run.status != "done":
        return None
    return w.store.artifacts_dir(run)


def _live(w: WebState, run: RunRow) -> dict[str, Any]:
    pct = 100.0 * run.done / run.total if run.total else 0.0
    return {"run": run, "finished": run.status in FINISHED, "pct": min(100.0, pct),
            "has_artifacts": run_dir(w, run) is not None,
            "rows": metric_rows([run]) if run.metrics else [],
            "decisions": (run.blueprint or {}).get("decisions", []) if run.status == "done"
            else []}


@router.get("/runs/{run_id}")
def show_run(request: Request, run_id: int, w: State) -> Response:
    """The run page: progress until the plan ends, then links and the metrics table."""
    run = _run(w, run_id)
    if run is None:
        return _missing(request, w, run_id)
    return w.render(request, "run.html", **_live(w, run))


@router.get("/runs/{run_id}/progress")
def run_progress(request: Request, run_id: int, w: State) -> Response:
    """The live part of the run page (HTMX polls it until the run has finished)."""
    run = _run(w, run_id)
    if run is None:
        return _missing(request, w, run_id)
    return w.render(request, "_run_live.html", **_live(w, run))


@router.get("/runs/{run_id}/report")
def run_report(request: Request, run_id: int, w: State) -> Response:
    """The run's report.html (self-contained, plotly.js embedded)."""
    run = _run(w, run_id)
    d = run_dir(w, run) if run is not None else None
    report = d / "report.html" if d is not None else None
    if report is None or not report.is_file() or report.is_symlink():
        return w.render(request, "message.html", status_code=404, title="No report",
                        message=f"run {run_id} has no report (not finished, or it failed)")
    return FileResponse(report, media_type="text/html; charset=utf-8")


def _files(root: Path) -> list[tuple[Path, str]]:
    out: list[tuple[Path, str]] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if not (Path(dirpath) / d).is_symlink())
        for f in sorted(filenames):
            p = Path(dirpath) / f
            if p.is_file() and not p.is_symlink():
                out.append((p, p.relative_to(root).as_posix()))
    return out


def _zip_chunks(root: Path, prefix: str) -> Iterator[bytes]:
    # Spooled: a report with plotly is ~5 MB; larger archives go to a temporary file.
    with tempfile.SpooledTemporaryFile(max_size=32 * 1024 * 1024) as buf:
        with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            for path, rel in _files(root):
                zf.write(path, f"{prefix}/{rel}")
        buf.seek(0)
        while chunk := buf.read(CHUNK):
            yield chunk


@router.get("/runs/{run_id}/artifacts.zip")
def run_zip(request: Request, run_id: int, w: State) -> Response:
    """Every artifact of the run (blueprint.json, bom.csv, cabling.csv, configs/,
    report.html) in one zip, streamed."""
    run = _run(w, run_id)
    d = run_dir(w, run) if run is not None else None
    if d is None:
        return w.render(request, "message.html", status_code=404, title="No artifacts",
                        message=f"run {run_id} has no artifacts (not finished, or it failed)")
    name = f"clusterwright-run-{int(run_id)}"
    return StreamingResponse(_zip_chunks(d, name), media_type="application/zip",
                             headers={"Content-Disposition": f'attachment; filename="{name}.zip"'})
