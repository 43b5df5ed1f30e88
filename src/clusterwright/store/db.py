"""The SQLite store: saved scenarios (named YAML with revisions) and the runs planned from them.

Concurrency: WAL mode lets readers proceed while one writer commits; every write is one
``BEGIN IMMEDIATE`` transaction, so it takes the write lock up front and waits (busy_timeout)
instead of failing half way when another thread or process holds it. sqlite3 connections must
not be shared between threads, so each thread (and each process after a fork) opens its own.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any

from clusterwright.store.errors import StoreError
from clusterwright.store.migrations import migrate
from clusterwright.store.paths import default_db_path
from clusterwright.store.rows import (
    RUN_COLUMNS,
    RUN_FROM,
    RUN_STATUSES,
    SCENARIO_COLUMNS,
    RunRow,
    ScenarioRow,
    run_row,
    scenario_row,
)

# How long a write waits for another writer's lock before giving up, in seconds. Writes
# here take milliseconds; the margin covers a slow disk under many concurrent writers.
BUSY_TIMEOUT_S = 30.0
MAX_NAME_CHARS = 200


def utc_now() -> str:
    """The current time as ISO 8601 UTC with milliseconds (``2026-01-02T03:04:05.678+00:00``)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def _dumps(value: dict[str, Any], field: str) -> str:
    try:
        return json.dumps(value)
    except (TypeError, ValueError) as exc:
        raise StoreError(f"{field}: not JSON-serializable: {exc}") from exc


def _exists(conn: sqlite3.Connection, table: str, row_id: int) -> bool:
    # ``table`` is one of our two table names, never user input.
    return conn.execute(f"SELECT 1 FROM {table} WHERE id = ?", (row_id,)).fetchone() is not None


class Store:
    """Saved scenarios and runs in one SQLite file (default: ``default_db_path()``).

    Safe to share between threads of one process; other processes may open the same file.
    """

    def __init__(self, path: Path | str | None = None) -> None:
        # Absolute, so artifacts paths recorded in the file and the path handed to worker
        # processes do not depend on the current directory.
        self.path = (Path(path) if path is not None else default_db_path()).expanduser().absolute()
        if self.path.is_dir():
            raise StoreError(f"{self.path}: is a directory, not a database file")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"{self.path.parent}: cannot create directory: {exc}") from exc
        self._local = threading.local()
        self._lock = threading.Lock()
        # (pid, thread, connection) of every connection opened, to close them in close() and
        # to close those of threads that have ended (a web server may start one per request).
        self._conns: list[tuple[int, threading.Thread, sqlite3.Connection]] = []
        self._closed = False
        try:
            with self._write() as conn:
                migrate(conn, str(self.path))
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------------ connections

    def _connect(self) -> sqlite3.Connection:
        try:
            # isolation_level=None: the module opens no implicit transactions; ours are explicit.
            conn = sqlite3.connect(
                self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: cannot open database: {exc}") from exc
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
            conn.execute("PRAGMA foreign_keys = ON")
            # Persistent in the file; setting it on every open is cheap and heals a file
            # created by another tool.
            conn.execute("PRAGMA journal_mode = WAL").fetchone()
        except sqlite3.Error as exc:
            conn.close()
            raise StoreError(f"{self.path}: cannot open database: {exc}") from exc
        return conn

    def _conn(self) -> sqlite3.Connection:
        if self._closed:
            raise StoreError(f"{self.path}: store is closed")
        pid = os.getpid()
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        # A connection inherited through fork() must never be used by the child.
        if conn is None or getattr(self._local, "pid", None) != pid:
            conn = self._connect()
            self._local.conn = conn
            self._local.pid = pid
            with self._lock:
                self._prune(pid)
                self._conns.append((pid, threading.current_thread(), conn))
        return conn

    def _prune(self, pid: int) -> None:
        """Close the connections of this process's threads that have ended (lock held)."""
        live = []
        for owner, thread, conn in self._conns:
            if owner == pid and not thread.is_alive():
                conn.close()
            else:
                live.append((owner, thread, conn))
        self._conns = live

    def open_connections(self) -> int:
        """How many connections this process holds open (one per live thread that used it)."""
        pid = os.getpid()
        with self._lock:
            self._prune(pid)
            return sum(1 for owner, _, _ in self._conns if owner == pid)

    def close(self) -> None:
        """Close every connection this process opened; the store is unusable afterwards."""
        self._closed = True
        pid = os.getpid()
        with self._lock:
            conns, self._conns = self._conns, []
        for owner, _, conn in conns:
            if owner == pid:
                conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction: all of the block commits, or none of it."""
        conn = self._conn()
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: cannot start a write: {exc}") from exc
        try:
            yield conn
            conn.execute("COMMIT")
        except BaseException as exc:
            if conn.in_transaction:
                # A failed ROLLBACK must not hide the error that caused it; SQLite rolls
                # back an unfinished transaction on the next open anyway.
                with suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
            if isinstance(exc, sqlite3.Error):
                raise StoreError(f"{self.path}: write failed: {exc}") from exc
            if isinstance(exc, OverflowError):
                raise StoreError(f"{self.path}: not found: an id is beyond 2**63 - 1") from exc
            raise

    def _read(self, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
        try:
            return self._conn().execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: read failed: {exc}") from exc
        except OverflowError as exc:
            # An id past SQLite's 64-bit INTEGER range names no row (web ids come from URLs).
            raise StoreError(f"{self.path}: not found: an id is beyond 2**63 - 1") from exc

    # ------------------------------------------------------------------ scenarios

    def save_scenario(self, name: str, yaml_text: str) -> ScenarioRow:
        """Save ``yaml_text`` as the next revision of scenario ``name`` (revision 1 if new)."""
        name = name.strip()
        if not name:
            raise StoreError("scenario name: must not be empty")
        if len(name) > MAX_NAME_CHARS:
            raise StoreError(f"scenario name: longer than {MAX_NAME_CHARS} characters")
        created = utc_now()
        with self._write() as conn:
            (revision,) = conn.execute(
                "SELECT COALESCE(MAX(revision), 0) + 1 FROM scenarios WHERE name = ?", (name,)
            ).fetchone()
            cur = conn.execute(
                "INSERT INTO scenarios (name, revision, yaml_text, created_at) VALUES (?, ?, ?, ?)",
                (name, revision, yaml_text, created),
            )
            scenario_id = cur.lastrowid
        assert scenario_id is not None  # an INSERT into a rowid table always sets it
        return ScenarioRow(scenario_id, name, int(revision), yaml_text, created)

    def list_scenarios(self) -> list[ScenarioRow]:
        """The latest revision of every name, most recently saved first."""
        rows = self._read(
            f"SELECT {SCENARIO_COLUMNS} FROM scenarios s WHERE revision = "
            "(SELECT MAX(revision) FROM scenarios WHERE name = s.name) "
            "ORDER BY id DESC"
        )
        return [scenario_row(r) for r in rows]

    def list_revisions(self, name: str) -> list[ScenarioRow]:
        """Every revision of scenario ``name``, newest first (empty if none)."""
        rows = self._read(
            f"SELECT {SCENARIO_COLUMNS} FROM scenarios WHERE name = ? ORDER BY revision DESC",
            (name.strip(),),
        )
        return [scenario_row(r) for r in rows]

    def get_scenario(self, scenario_id: int) -> ScenarioRow:
        """One scenario revision by id; StoreError naming the id if absent."""
        rows = self._read(f"SELECT {SCENARIO_COLUMNS} FROM scenarios WHERE id = ?", (scenario_id,))
        if not rows:
            raise StoreError(f"scenario id {scenario_id}: not found in {self.path}")
        return scenario_row(rows[0])

    def delete_scenario(self, scenario_id: int) -> None:
        """Delete one scenario revision, its runs and their artifacts directories."""
        with self._write() as conn:
            if not _exists(conn, "scenarios", scenario_id):
                raise StoreError(f"scenario id {scenario_id}: not found in {self.path}")
            runs = conn.execute(
                "SELECT id, artifacts_dir FROM runs WHERE scenario_id = ?", (scenario_id,)
            ).fetchall()
            # ON DELETE CASCADE removes the runs in the same transaction.
            conn.execute("DELETE FROM scenarios WHERE id = ?", (scenario_id,))
        for run_id, artifacts in runs:
            self._remove_artifacts(int(run_id), artifacts)

    # ------------------------------------------------------------------ runs

    def create_run(self, scenario_id: int) -> RunRow:
        """A new run of one scenario revision, status ``queued``."""
        with self._write() as conn:
            if not _exists(conn, "scenarios", scenario_id):
                raise StoreError(f"scenario id {scenario_id}: not found in {self.path}")
            cur = conn.execute(
                "INSERT INTO runs (scenario_id, status, created_at) VALUES (?, 'queued', ?)",
                (scenario_id, utc_now()),
            )
            run_id = cur.lastrowid
            row = conn.execute(f"SELECT {RUN_COLUMNS} FROM {RUN_FROM} WHERE r.id = ?", (run_id,))
            return run_row(row.fetchone())

    def update_run(
        self,
        run_id: int,
        *,
        status: str | None = None,
        stage: str | None = None,
        done: int | None = None,
        total: int | None = None,
        message: str | None = None,
    ) -> None:
        """Record progress: only the given fields change. ``status``: queued|running|done|failed."""
        changes: dict[str, Any] = {}
        if status is not None:
            if status not in RUN_STATUSES:
                raise StoreError(f"status: {status!r} is not one of {', '.join(RUN_STATUSES)}")
            changes["status"] = status
        for field, value in (("done", done), ("total", total)):
            if value is not None:
                if value < 0:
                    raise StoreError(f"{field}: must be >= 0, got {value}")
                changes[field] = int(value)
        if stage is not None:
            changes["stage"] = stage
        if message is not None:
            changes["message"] = message
        self._update(run_id, changes)

    def finish_run(
        self,
        run_id: int,
        *,
        blueprint: dict[str, Any],
        metrics: dict[str, Any],
        artifacts_dir: Path | None,
    ) -> None:
        """Mark a run ``done`` with its blueprint and metrics (both stored as JSON)."""
        self._update(
            run_id,
            {
                "status": "done",
                "finished_at": utc_now(),
                # Serialized before the transaction so the write lock is held briefly.
                "metrics_json": _dumps(metrics, "metrics"),
                "blueprint_json": _dumps(blueprint, "blueprint"),
                "artifacts_dir": str(artifacts_dir) if artifacts_dir is not None else None,
            },
        )

    def fail_run(self, run_id: int, message: str) -> None:
        """Mark a run ``failed`` with a message a user can act on."""
        self._update(run_id, {"status": "failed", "finished_at": utc_now(), "message": message})

    def _update(self, run_id: int, changes: dict[str, Any]) -> None:
        with self._write() as conn:
            if changes:
                # Column names come from the fixed keys above, never from user input.
                sets = ", ".join(f"{col} = ?" for col in changes)
                cur = conn.execute(
                    f"UPDATE runs SET {sets} WHERE id = ?", (*changes.values(), run_id)
                )
                found = cur.rowcount > 0
            else:
                found = _exists(conn, "runs", run_id)
            if not found:
                raise StoreError(f"run id {run_id}: not found in {self.path}")

    def list_runs(
        self,
        scenario_id: int | None = None,
        *,
        limit: int | None = None,
        with_blueprint: bool = True,
    ) -> list[RunRow]:
        """Runs, newest first; only those of one scenario revision when ``scenario_id`` is given.

        ``limit`` keeps the newest N. ``with_blueprint=False`` leaves ``blueprint`` None: a
        blueprint is ~100 kB of JSON, too much to decode for a list page.
        """
        columns = RUN_COLUMNS if with_blueprint else RUN_COLUMNS.replace("r.blueprint_json", "NULL")
        sql = f"SELECT {columns} FROM {RUN_FROM}"
        params: tuple[Any, ...] = ()
        if scenario_id is not None:
            sql += " WHERE r.scenario_id = ?"
            params = (scenario_id,)
        sql += " ORDER BY r.id DESC"
        if limit is not None:
            if limit < 0:
                raise StoreError(f"limit: must be >= 0, got {limit}")
            sql += " LIMIT ?"
            params = (*params, limit)
        return [run_row(r) for r in self._read(sql, params)]

    def get_run(self, run_id: int) -> RunRow:
        """One run by id; StoreError naming the id if absent."""
        rows = self._read(f"SELECT {RUN_COLUMNS} FROM {RUN_FROM} WHERE r.id = ?", (run_id,))
        if not rows:
            raise StoreError(f"run id {run_id}: not found in {self.path}")
        return run_row(rows[0])

    def delete_run(self, run_id: int) -> None:
        """Delete a run and then its artifacts directory (a missing directory is fine)."""
        with self._write() as conn:
            row = conn.execute("SELECT artifacts_dir FROM runs WHERE id = ?", (run_id,)).fetchone()
            if row is None:
                raise StoreError(f"run id {run_id}: not found in {self.path}")
            conn.execute("DELETE FROM runs WHERE id = ?", (run_id,))
        self._remove_artifacts(run_id, row[0])

    # ------------------------------------------------------------------ artifacts

    def runs_dir(self) -> Path:
        """The directory holding each run's artifacts directory: ``<db dir>/runs/``."""
        return self.path.parent / "runs"

    def run_dir(self, run_id: int) -> Path:
        """The artifacts directory a run should use: ``runs_dir() / str(run_id)`` (not created)."""
        return self.runs_dir() / str(int(run_id))

    def _remove_artifacts(self, run_id: int, recorded: str | None) -> None:
        root = self.runs_dir().resolve()
        targets = {self.run_dir(run_id).resolve()}
        if recorded:
            # Only ever delete inside runs_dir(): a recorded path elsewhere is the user's.
            path = Path(recorded).resolve()
            if path != root and path.is_relative_to(root):
                targets.add(path)
        for target in targets:
            try:
                shutil.rmtree(target)
            except FileNotFoundError:
                pass
            except OSError as exc:
                raise StoreError(
                    f"run id {run_id}: deleted, but its artifacts directory {target} "
                    f"could not be removed: {exc}"
                ) from exc
