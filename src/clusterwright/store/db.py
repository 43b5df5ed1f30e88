"""The SQLite store: saved scenarios (named YAML with revisions) and the runs planned from them.

Concurrency: WAL mode lets readers proceed while one writer commits; every write is one
``BEGIN IMMEDIATE`` transaction, so it takes the write lock up front and waits (busy_timeout)
instead of failing half way when another thread or process holds it. sqlite3 connections must
not be shared between threads, so each thread (and each process after a fork) opens its own.

Runs record their owner process and a heartbeat (``store/liveness.py``); reading a run whose
owner is gone fails it, so a killed plan does not stay ``running`` forever.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any

from clusterwright.ownership import Owner, remove_stale_temp_dirs
from clusterwright.store import liveness
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


def _use_wal(conn: sqlite3.Connection) -> None:
    """Switch the file to WAL, waiting up to ``BUSY_TIMEOUT_S`` for other connections.

    The mode is persistent in the file; setting it on every open heals a file created by
    another tool. While another connection is switching the same new file, SQLite answers
    "database is locked" at once, without calling its busy handler: five processes opening
    a new file together failed that way in CI, and 0.4-4 % of opens with eight at a time
    (``tests/store/test_concurrency.py``). So the switch is retried here."""
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    pause = 0.001
    while True:
        try:
            if conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal":
                return
            conn.execute("PRAGMA journal_mode = WAL").fetchone()
            return
        except sqlite3.OperationalError as exc:
            busy = "locked" in str(exc) or "busy" in str(exc)
            if not busy or time.monotonic() + pause > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.05)


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
        # Unfinished runs this process owns, kept fresh by the heartbeat thread.
        self._owned: set[int] = set()
        self._beat: threading.Thread | None = None
        self._beat_pid = 0
        self._beat_stop = threading.Event()
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
            _use_wal(conn)
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
        """Close every connection this process opened; the store is unusable afterwards.

        Runs this process still owns stop beating; if it keeps them unfinished, they become
        stale ``STALE_AFTER_S`` later for readers on other hosts (at once on this one, when the
        process ends)."""
        self._closed = True
        self._beat_stop.set()
        beat = self._beat
        if beat is not None and beat is not threading.current_thread() and beat.is_alive():
            # Its write must end before its connection is closed under it.
            beat.join(BUSY_TIMEOUT_S + 1.0)
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
        """A new run of one scenario revision, status ``queued``, owned by this process (which
        heartbeats for it until it is finished or another process takes it with ``start_run``)."""
        me = Owner.current()
        now = utc_now()
        with self._write() as conn:
            if not _exists(conn, "scenarios", scenario_id):
                raise StoreError(f"scenario id {scenario_id}: not found in {self.path}")
            cur = conn.execute(
                "INSERT INTO runs (scenario_id, status, created_at, owner_pid, owner_host, "
                "owner_started, heartbeat_at) VALUES (?, 'queued', ?, ?, ?, ?, ?)",
                (scenario_id, now, me.pid, me.host, me.started, now),
            )
            run_id = cur.lastrowid
            row = conn.execute(f"SELECT {RUN_COLUMNS} FROM {RUN_FROM} WHERE r.id = ?", (run_id,))
            run = run_row(row.fetchone())
        self._own(run.id)
        return run

    def start_run(self, run_id: int) -> None:
        """Mark a run ``running`` and owned by this process from now on: the process that
        executes a plan calls it, so the run is failed as interrupted if this process dies."""
        me = Owner.current()
        self._update(run_id, {"status": "running", "owner_pid": me.pid, "owner_host": me.host,
                              "owner_started": me.started, "heartbeat_at": utc_now()})
        self._own(run_id)

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
        self._disown(run_id)
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

    def fail_run(self, run_id: int, message: str, *, unless_finished: bool = False) -> bool:
        """Mark a run ``failed`` with a message a user can act on. ``unless_finished``: only
        if it is still queued or running (another process may have recorded its end first).
        Returns whether the run was changed."""
        self._disown(run_id)
        return self._update(
            run_id, {"status": "failed", "finished_at": utc_now(), "message": message},
            unfinished_only=unless_finished)

    def _update(self, run_id: int, changes: dict[str, Any], *,
                unfinished_only: bool = False) -> bool:
        with self._write() as conn:
            if not _exists(conn, "runs", run_id):
                raise StoreError(f"run id {run_id}: not found in {self.path}")
            if not changes:
                return True
            # Column names come from the fixed keys above, never from user input.
            sets = ", ".join(f"{col} = ?" for col in changes)
            where = " AND status IN ('queued', 'running')" if unfinished_only else ""
            cur = conn.execute(
                f"UPDATE runs SET {sets} WHERE id = ?{where}", (*changes.values(), run_id)
            )
            return cur.rowcount > 0

    # ------------------------------------------------------------------ owners and heartbeats

    def _own(self, run_id: int) -> None:
        """Heartbeat for ``run_id`` from this process until it is finished or taken over."""
        pid = os.getpid()
        with self._lock:
            if self._closed:
                return
            self._owned.add(int(run_id))
            beat = self._beat
            # A thread is not inherited through fork(): a child starts its own.
            if beat is None or not beat.is_alive() or self._beat_pid != pid:
                self._beat_stop = threading.Event()
                self._beat_pid = pid
                self._beat = threading.Thread(
                    target=self._heartbeat, args=(self._beat_stop,), daemon=True,
                    name="clusterwright-store-heartbeat")
                self._beat.start()

    def _disown(self, run_id: int) -> None:
        with self._lock:
            self._owned.discard(int(run_id))

    def _heartbeat(self, stop: threading.Event) -> None:
        # Read each time round, so tests can shorten it.
        while not stop.wait(liveness.HEARTBEAT_INTERVAL_S):
            with self._lock:
                ids = sorted(self._owned)
            if not ids:
                continue
            me = Owner.current()
            now = utc_now()
            try:
                with self._write() as conn:
                    # Only while this process still owns it: a run taken over by a worker
                    # (start_run) or finished elsewhere is dropped.
                    lost = [run_id for run_id in ids if conn.execute(
                        "UPDATE runs SET heartbeat_at = ? WHERE id = ? AND status IN "
                        "('queued', 'running') AND owner_pid = ? AND owner_host = ? "
                        "AND owner_started IS ?", (now, run_id, me.pid, me.host, me.started),
                    ).rowcount == 0]
            except StoreError:
                continue  # closed, or the lock was busy for 30 s: beat again next time
            with self._lock:
                self._owned.difference_update(lost)

    def _reap(self, runs: list[RunRow]) -> list[RunRow]:
        """``runs`` with every stale one (``liveness.stale_reason``) failed, in the file too."""
        now = datetime.now(UTC)
        stale = {r.id: why for r in runs if (why := liveness.stale_reason(r, now)) is not None}
        if not stale:
            return runs
        try:
            failed = self._fail_stale(set(stale))
        except StoreError:
            # A file we cannot write (read-only, locked): still show the truth.
            failed = {run_id: (why, None) for run_id, why in stale.items()}
        return [replace(r, status="failed", message=failed[r.id][0], finished_at=failed[r.id][1])
                if r.id in failed else r for r in runs]

    def _fail_stale(self, candidates: set[int]) -> dict[int, tuple[str, str | None]]:
        failed: dict[int, tuple[str, str | None]] = {}
        with self._write() as conn:
            # Judged again under the write lock: an owner may have finished the run or beaten
            # since it was read, and nothing can change it between this check and the update.
            now = datetime.now(UTC)
            for run_id in sorted(candidates):
                row = conn.execute(
                    f"SELECT {RUN_COLUMNS.replace('r.blueprint_json', 'NULL')} FROM {RUN_FROM} "
                    "WHERE r.id = ?", (run_id,)).fetchone()
                why = liveness.stale_reason(run_row(row), now) if row is not None else None
                if why is None:
                    continue
                finished = utc_now()
                conn.execute(
                    "UPDATE runs SET status = 'failed', message = ?, finished_at = ? "
                    "WHERE id = ?", (why, finished, run_id))
                failed[run_id] = (why, finished)
        return failed

    def fail_stale_runs(self) -> list[int]:
        """Fail every queued or running run whose owner is gone (``store/liveness.py``); never
        one whose owner is alive. Returns their ids. The web server calls it when it starts;
        reads (``get_run``, ``list_runs``) do the same for the runs they return."""
        rows = self._read(
            f"SELECT {RUN_COLUMNS.replace('r.blueprint_json', 'NULL')} FROM {RUN_FROM} "
            "WHERE r.status IN ('queued', 'running') ORDER BY r.id")
        runs = [run_row(r) for r in rows]
        before = {r.id: r.status for r in runs}
        return [r.id for r in self._reap(runs) if r.status != before[r.id]]

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
        return self._reap([run_row(r) for r in self._read(sql, params)])

    def get_run(self, run_id: int) -> RunRow:
        """One run by id; StoreError naming the id if absent. A stale run (its owner is gone)
        is failed first, as in ``fail_stale_runs``."""
        rows = self._read(f"SELECT {RUN_COLUMNS} FROM {RUN_FROM} WHERE r.id = ?", (run_id,))
        if not rows:
            raise StoreError(f"run id {run_id}: not found in {self.path}")
        return self._reap([run_row(rows[0])])[0]

    def delete_run(self, run_id: int) -> None:
        """Delete a run and then its artifacts directory (a missing directory is fine)."""
        with self._write() as conn:
            row = conn.execute("SELECT artifacts_dir FROM runs WHERE id = ?", (run_id,)).fetchone()
            if row is None:
                raise StoreError(f"run id {run_id}: not found in {self.path}")
            conn.execute("DELETE FROM runs WHERE id = ?", (run_id,))
        self._disown(run_id)
        self._remove_artifacts(run_id, row[0])

    # ------------------------------------------------------------------ artifacts

    def runs_dir(self) -> Path:
        """The directory holding each run's artifacts directory: ``<db file>.runs/``, keyed by
        the database file so that two databases in one directory never share a run's files."""
        return self.path.with_name(self.path.name + ".runs")

    def run_dir(self, run_id: int) -> Path:
        """The artifacts directory a run should use: ``runs_dir() / str(run_id)`` (not created)."""
        return self.runs_dir() / str(int(run_id))

    def legacy_run_dir(self, run_id: int) -> Path:
        """Where runs recorded before schema 2 put their artifacts: ``<db dir>/runs/<id>``,
        shared by every database in that directory."""
        return self.path.parent / "runs" / str(int(run_id))

    def artifacts_dir(self, run: RunRow) -> Path | None:
        """The run's artifacts directory if it exists: ``run_dir(id)``, or for a run recorded
        before schema 2 the ``legacy_run_dir(id)`` it recorded. No other recorded path is
        trusted; a symlink is not followed."""
        candidates = [self.run_dir(run.id)]
        if run.artifacts_dir and Path(run.artifacts_dir) == self.legacy_run_dir(run.id):
            candidates.append(self.legacy_run_dir(run.id))
        for path in candidates:
            if path.is_dir() and not path.is_symlink():
                return path
        return None

    def remove_stale_temp_dirs(self) -> list[Path]:
        """Remove half-written artifacts directories of runs whose writer was killed (the
        temporary siblings ``write_blueprint`` fills before its rename); returns them."""
        return remove_stale_temp_dirs(self.runs_dir())

    def _remove_artifacts(self, run_id: int, recorded: str | None) -> None:
        root = self.runs_dir().resolve()
        targets = {self.run_dir(run_id).resolve()}
        if recorded:
            path = Path(recorded).resolve()
            # Only ever delete inside runs_dir(), or the directory of a run from before schema
            # 2 that no other database shares: a recorded path elsewhere is the user's.
            ours = path != root and path.is_relative_to(root)
            legacy = path == self.legacy_run_dir(run_id).resolve()
            if ours or (legacy and not self._legacy_shared(run_id, path)):
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

    def _legacy_shared(self, run_id: int, path: Path) -> bool:
        """Whether another database in this directory has a run recording ``path`` (before
        schema 2 runs of every database there wrote to ``<db dir>/runs/<id>``). When unsure
        (a database that cannot be read), say yes: keeping a directory is the safe mistake."""
        try:
            siblings = [p for p in self.path.parent.iterdir()
                        if p.is_file() and p.name != self.path.name]
        except OSError:
            return True
        for other in siblings:
            try:
                with other.open("rb") as f:
                    if f.read(16) != b"SQLite format 3\x00":
                        continue
            except OSError:
                continue
            try:
                conn = sqlite3.connect(f"{other.resolve().as_uri()}?mode=ro", uri=True,
                                       timeout=BUSY_TIMEOUT_S)
            except sqlite3.Error:
                return True
            try:
                if conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' "
                                "AND name = 'runs'").fetchone() is None:
                    continue
                row = conn.execute("SELECT artifacts_dir FROM runs WHERE id = ?",
                                   (run_id,)).fetchone()
            except sqlite3.Error:
                return True
            finally:
                conn.close()
            if row is not None and row[0] and Path(row[0]).resolve() == path:
                return True
        return False
