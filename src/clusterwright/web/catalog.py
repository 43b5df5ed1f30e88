"""Catalog browser: one kind's table with live search over id and the shown columns.

The columns are those of ``clusterwright catalog list KIND`` (``report/catalog_columns.py``),
so the page and the command show the same numbers.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from starlette.responses import Response

from clusterwright.catalog.registry import Catalog
from clusterwright.report.catalog_columns import COLUMNS, KINDS
from clusterwright.web.state import WebState, web

router = APIRouter()
State = Annotated[WebState, Depends(web)]
WEB_KINDS = ("gpus", "servers", "switches", "models", "nics", "optics", "clouds")
MAX_QUERY = 100


def catalog_table(cat: Catalog, kind: str, q: str) -> dict[str, Any]:
    """Headers and rows of ``kind`` (a ``catalog list`` kind) whose id, name or any shown
    column contains ``q`` (case-insensitive)."""
    needle = q.strip().lower()[:MAX_QUERY]
    tables = []
    for entry_kind in KINDS[kind]:
        cols = COLUMNS[entry_kind]
        rows = []
        for e in sorted(cat.all(entry_kind), key=lambda e: e.id):
            cells = [str(fn(e)) for _, fn in cols]
            hay = " ".join([*cells, str(getattr(e, "name", "")), str(getattr(e, "vendor", ""))])
            if needle in hay.lower():
                rows.append({"id": e.id, "cells": cells, "source": getattr(e, "source", "")})
        tables.append({"kind": entry_kind, "headers": [h for h, _ in cols], "rows": rows})
    return {"tables": tables, "count": sum(len(t["rows"]) for t in tables)}


def _kind(kind: str) -> str:
    return kind if kind in WEB_KINDS else "gpus"


@router.get("/catalog")
def catalog_page(request: Request, w: State, kind: str = "gpus",
                 q: Annotated[str, Query(max_length=MAX_QUERY)] = "") -> Response:
    """The catalog page for ``kind`` filtered by ``q``."""
    k = _kind(kind)
    return w.render(request, "catalog.html", kind=k, kinds=WEB_KINDS, q=q,
                    unknown=kind if kind != k else None, **catalog_table(w.catalog, k, q))


@router.get("/catalog/rows")
def catalog_rows(request: Request, w: State, kind: str = "gpus",
                 q: Annotated[str, Query(max_length=MAX_QUERY)] = "") -> Response:
    """The ``#catalog`` table alone, for the live search."""
    k = _kind(kind)
    return w.render(request, "_catalog_table.html", kind=k, q=q,
                    **catalog_table(w.catalog, k, q))
