"""Static assets: the vendored htmx and CSS from ``web/static/``, plotly.js from the installed
``plotly`` package (kept in memory after the first request, never copied into the repo)."""

from __future__ import annotations

import functools
import hashlib

from fastapi import APIRouter, Request
from starlette.responses import Response

router = APIRouter()


@functools.cache
def plotly_js() -> tuple[bytes, str]:
    """The plotly.min.js bundled with the plotly package, and its ETag."""
    from plotly.offline import get_plotlyjs  # type: ignore[import-untyped]

    body = str(get_plotlyjs()).encode("utf-8")
    return body, '"' + hashlib.sha256(body).hexdigest()[:32] + '"'


@router.get("/static/plotly.min.js")
def plotly(request: Request) -> Response:
    """plotly.js (about 4.8 MB), cached by the browser for an hour and revalidated by ETag."""
    body, etag = plotly_js()
    headers = {"ETag": etag, "Cache-Control": "public, max-age=3600"}
    if request.headers.get("if-none-match") == etag:
        return Response(status_code=304, headers=headers)
    return Response(body, media_type="text/javascript; charset=utf-8", headers=headers)


@router.get("/favicon.ico")
def favicon() -> Response:
    """No icon. The report page (report.html, served as written) links none, and a 404 here
    would be a console error in the browser."""
    return Response(status_code=204, headers={"Cache-Control": "public, max-age=86400"})


@router.get("/healthz")
def healthz() -> dict[str, bool]:
    """Liveness: answers while plans run, since they run in other processes."""
    return {"ok": True}
