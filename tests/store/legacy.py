"""Databases as Clusterwright wrote them before schema 2 (no run owners, artifacts under
``<db dir>/runs/<id>``), built with the shipped migration 1 so they match real old files."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from clusterwright.store.migrations import MIGRATIONS


def make_v1_db(path: Path, runs: list[tuple[str, str, str | None]]) -> None:
    """A version-1 file with one scenario and ``runs`` as (status, created_at, artifacts_dir),
    numbered 1, 2, ... in order."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(path) as conn:
        for statement in MIGRATIONS[0]:
            conn.execute(statement)
        conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
        conn.execute("INSERT INTO schema_version VALUES (1)")
        conn.execute("INSERT INTO scenarios (name, revision, yaml_text, created_at) "
                     "VALUES ('old', 1, 'name: old\n', '2025-01-01T00:00:00.000+00:00')")
        for status, created, artifacts in runs:
            done = status in ("done", "failed")
            conn.execute(
                "INSERT INTO runs (scenario_id, status, created_at, finished_at, metrics_json, "
                "blueprint_json, artifacts_dir) VALUES (1, ?, ?, ?, ?, ?, ?)",
                (status, created, created if done else None, '{"gpus": 8}' if done else None,
                 '{"v": 1}' if done else None, artifacts))
    conn.close()
