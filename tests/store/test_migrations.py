"""Schema versions: old files are migrated in place, newer ones are refused."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from clusterwright.store import SCHEMA_VERSION, Store, StoreError
from clusterwright.store.migrations import MIGRATIONS
from tests.store.legacy import make_v1_db


def version_of(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        return int(conn.execute("SELECT MAX(version) FROM schema_version").fetchone()[0])


def tables_of(path: Path) -> set[str]:
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    return {r[0] for r in rows}


def test_schema_version_counts_the_migrations() -> None:
    assert SCHEMA_VERSION == len(MIGRATIONS) >= 1


def test_empty_sqlite_file_is_migrated(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    sqlite3.connect(path).close()  # a valid but empty database: version 0
    with Store(path) as s:
        s.save_scenario("a", "x: 1\n")
    assert version_of(path) == SCHEMA_VERSION
    assert {"schema_version", "scenarios", "runs"} <= tables_of(path)


def test_version_zero_table_is_migrated_and_keeps_one_version_row(tmp_path: Path) -> None:
    path = tmp_path / "v0.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
        conn.execute("INSERT INTO schema_version VALUES (0)")
        # A table another tool left in the file must survive the migration.
        conn.execute("CREATE TABLE notes (t TEXT)")
        conn.execute("INSERT INTO notes VALUES ('keep')")
    Store(path).close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT version FROM schema_version").fetchall() == [(SCHEMA_VERSION,)]
        assert conn.execute("SELECT t FROM notes").fetchall() == [("keep",)]


def test_reopening_a_current_file_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "cw.db"
    with Store(path) as s:
        sc = s.save_scenario("a", "x: 1\n")
    with Store(path) as s:
        assert s.list_scenarios() == [sc]
    assert version_of(path) == SCHEMA_VERSION


def test_newer_version_is_refused_with_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "future.db"
    with Store(path) as s:
        s.save_scenario("a", "x: 1\n")
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION + 1,))
    with pytest.raises(StoreError) as info:
        Store(path)
    msg = str(info.value)
    assert str(path) in msg
    assert f"schema version {SCHEMA_VERSION + 1} is newer" in msg
    assert "upgrade Clusterwright" in msg
    # Refusing did not touch the file.
    assert version_of(path) == SCHEMA_VERSION + 1


def test_a_failed_migration_leaves_the_old_file_untouched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "old.db"
    sqlite3.connect(path).close()
    import clusterwright.store.migrations as m

    broken = (*m.MIGRATIONS, ("CREATE TABLE extra (x)", "THIS IS NOT SQL"))
    monkeypatch.setattr(m, "MIGRATIONS", broken)
    monkeypatch.setattr(m, "SCHEMA_VERSION", len(broken))
    with pytest.raises(StoreError, match="write failed"):
        Store(path)
    # All migrations ran in one transaction: none of them is left behind.
    assert tables_of(path) <= {"schema_version"}


def test_a_version_1_file_is_upgraded_and_its_runs_keep_working(tmp_path: Path) -> None:
    path = tmp_path / "cw.db"
    legacy = tmp_path / "runs" / "1"  # where version 1 put run 1's artifacts
    legacy.mkdir(parents=True)
    (legacy / "report.html").write_text("<html>old</html>")
    make_v1_db(path, [("done", "2025-01-01T00:00:00.000+00:00", str(legacy)),
                      ("running", "2025-01-01T00:00:01.000+00:00", None)])
    with Store(path) as s:
        assert version_of(path) == SCHEMA_VERSION == 2
        old = s.get_run(1)
        assert (old.status, old.metrics, old.artifacts_dir) == ("done", {"gpus": 8}, str(legacy))
        assert (old.owner_pid, old.heartbeat_at) == (None, None)
        assert s.artifacts_dir(old) == legacy  # still found where it was recorded
        # Left running by an old version long ago, with no owner to ask: interrupted.
        stuck = s.get_run(2)
        assert stuck.status == "failed" and "recorded no owner" in (stuck.message or "")
        new = s.create_run(old.scenario_id)
        assert new.id == 3 and new.owner_pid == os.getpid()
        assert s.run_dir(new.id) == tmp_path / "cw.db.runs" / "3"
        s.delete_run(1)  # no other database records it: removed
        assert not legacy.exists()
    with sqlite3.connect(path) as conn:
        cols = {r[1] for r in conn.execute("PRAGMA table_info(runs)")}
        assert {"owner_pid", "owner_host", "owner_started", "heartbeat_at"} <= cols
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
