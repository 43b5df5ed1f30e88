"""The scenario format as the editor's completion reads it: sections, their fields, types,
defaults, bounds and descriptions, from the pydantic models (``spec/reference.py``)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from clusterwright.spec.reference import completion

router = APIRouter()


@router.get("/scenario-schema.json")
def scenario_schema() -> JSONResponse:
    """Field names valid at each place of a scenario and their hints (``static/app.js``
    completes from it). It changes only with the code, so browsers may keep it an hour."""
    body: dict[str, Any] = completion()
    return JSONResponse(body, headers={"Cache-Control": "public, max-age=3600"})
