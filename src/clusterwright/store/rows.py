"""Rows the store returns: plain frozen dataclasses, decoded from SQLite."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import Any

RUN_STATUSES = ("queued", "running", "done", "failed")


@dataclass(frozen=True)
class ScenarioRow:
    """One revision of a named scenario. ``created_at`` is ISO 8601 UTC."""

    id: int
    name: str
    revision: int
    yaml_text: str
    created_at: str


@dataclass(frozen=True)
class RunRow:
    """One plan of one scenario revision; timestamps are ISO 8601 UTC.

    ``done``/``total`` count progress units of the current ``stage``.
    """

    id: int
    scenario_id: int
    scenario_name: str
    status: str
    stage: str | None
    done: int
    total: int
    message: str | None
    created_at: str
    finished_at: str | None
    metrics: dict[str, Any] | None
    blueprint: dict[str, Any] | None
    artifacts_dir: str | None
    scenario_revision: int = 0
    # The process that created or runs it (None for runs recorded before schema 2) and the
    # last heartbeat of that process while the run was unfinished; see ``store/liveness.py``.
    owner_pid: int | None = None
    owner_host: str | None = None
    owner_started: str | None = None
    heartbeat_at: str | None = None


SCENARIO_COLUMNS = "id, name, revision, yaml_text, created_at"
RUN_COLUMNS = (
    "r.id, r.scenario_id, s.name, r.status, r.stage, r.done, r.total, r.message, "
    "r.created_at, r.finished_at, r.metrics_json, r.blueprint_json, r.artifacts_dir, s.revision, "
    "r.owner_pid, r.owner_host, r.owner_started, r.heartbeat_at"
)
RUN_FROM = "runs r JOIN scenarios s ON s.id = r.scenario_id"


def scenario_row(row: sqlite3.Row | tuple[Any, ...]) -> ScenarioRow:
    return ScenarioRow(
        id=int(row[0]),
        name=str(row[1]),
        revision=int(row[2]),
        yaml_text=str(row[3]),
        created_at=str(row[4]),
    )


def _json(text: str | None) -> dict[str, Any] | None:
    if text is None:
        return None
    value = json.loads(text)
    return value if isinstance(value, dict) else {"value": value}


def run_row(row: sqlite3.Row | tuple[Any, ...]) -> RunRow:
    return RunRow(
        id=int(row[0]),
        scenario_id=int(row[1]),
        scenario_name=str(row[2]),
        status=str(row[3]),
        stage=row[4],
        done=int(row[5]),
        total=int(row[6]),
        message=row[7],
        created_at=str(row[8]),
        finished_at=row[9],
        metrics=_json(row[10]),
        blueprint=_json(row[11]),
        artifacts_dir=row[12],
        scenario_revision=int(row[13]),
        owner_pid=int(row[14]) if row[14] is not None else None,
        owner_host=row[15],
        owner_started=row[16],
        heartbeat_at=row[17],
    )
