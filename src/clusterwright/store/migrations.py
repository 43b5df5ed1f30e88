"""Ordered schema migrations. Migration N brings a file from version N-1 to N.

Append new migrations at the end; never edit one that has shipped, since files in users'
data directories were built by it.
"""

from __future__ import annotations

import sqlite3

from clusterwright.store.errors import StoreError

# One statement per string: sqlite3's executescript() would COMMIT the open transaction.
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    # 1: scenarios (named YAML, one row per revision) and runs (one plan of one revision).
    (
        """CREATE TABLE scenarios (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            name TEXT NOT NULL,
            revision INTEGER NOT NULL CHECK (revision >= 1),
            yaml_text TEXT NOT NULL,
            created_at TEXT NOT NULL,
            UNIQUE (name, revision)
        )""",
        """CREATE TABLE runs (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            scenario_id INTEGER NOT NULL REFERENCES scenarios(id) ON DELETE CASCADE,
            status TEXT NOT NULL CHECK (status IN ('queued', 'running', 'done', 'failed')),
            stage TEXT,
            done INTEGER NOT NULL DEFAULT 0,
            total INTEGER NOT NULL DEFAULT 0,
            message TEXT,
            created_at TEXT NOT NULL,
            finished_at TEXT,
            metrics_json TEXT,
            blueprint_json TEXT,
            artifacts_dir TEXT
        )""",
        "CREATE INDEX runs_by_scenario ON runs (scenario_id)",
    ),
    # 2: the process that owns an unfinished run and its heartbeat, so that a run whose owner
    # was killed is told apart from one still running (``store/liveness.py``). Rows from
    # version 1 keep NULL owners. Their artifacts_dir stays as recorded (``<db dir>/runs/<id>``);
    # new runs write under ``<db file>.runs/<id>``.
    (
        "ALTER TABLE runs ADD COLUMN owner_pid INTEGER",
        "ALTER TABLE runs ADD COLUMN owner_host TEXT",
        "ALTER TABLE runs ADD COLUMN owner_started TEXT",
        "ALTER TABLE runs ADD COLUMN heartbeat_at TEXT",
        "CREATE INDEX runs_unfinished ON runs (status) WHERE status IN ('queued', 'running')",
    ),
)

SCHEMA_VERSION = len(MIGRATIONS)


def current_version(conn: sqlite3.Connection) -> int:
    """The file's schema version; 0 for a new file or one without a version row."""
    conn.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
    row = conn.execute("SELECT MAX(version) FROM schema_version").fetchone()
    return int(row[0]) if row and row[0] is not None else 0


def migrate(conn: sqlite3.Connection, where: str) -> int:
    """Bring the schema to SCHEMA_VERSION inside the caller's open write transaction.

    Returns the version the file had. A file from a newer Clusterwright is refused rather
    than guessed at: an older program writing it could lose columns it does not know.
    """
    found = current_version(conn)
    if found > SCHEMA_VERSION:
        raise StoreError(
            f"{where}: database schema version {found} is newer than this Clusterwright "
            f"knows ({SCHEMA_VERSION}); upgrade Clusterwright or use another --db"
        )
    for version in range(found + 1, SCHEMA_VERSION + 1):
        for statement in MIGRATIONS[version - 1]:
            conn.execute(statement)
    if found != SCHEMA_VERSION:
        conn.execute("DELETE FROM schema_version")
        conn.execute("INSERT INTO schema_version (version) VALUES (?)", (SCHEMA_VERSION,))
    return found
