"""Store round trips: scenarios with revisions, runs through their lifecycle, deletes."""

from __future__ import annotations

import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

from clusterwright.errors import ClusterwrightError
from clusterwright.ownership import temp_prefix
from clusterwright.store import RunRow, ScenarioRow, Store, StoreError
from tests.store.legacy import make_v1_db

YAML = 'name: "t"\nworkloads: []\n'


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store(tmp_path / "data" / "cw.db")
    yield s
    s.close()


def is_utc_iso(text: str) -> bool:
    offset = datetime.fromisoformat(text).utcoffset()
    return offset is not None and offset.total_seconds() == 0


def test_new_file_is_created_in_wal_mode_with_parent_dirs(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "cw.db"
    with Store(path) as s:
        assert path.is_file()
        assert s._conn().execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert s._conn().execute("PRAGMA foreign_keys").fetchone()[0] == 1
        assert s._conn().execute("PRAGMA busy_timeout").fetchone()[0] == 30000


def test_scenario_round_trip(store: Store) -> None:
    saved = store.save_scenario("  chat  ", YAML)
    assert isinstance(saved, ScenarioRow)
    assert (saved.name, saved.revision, saved.yaml_text) == ("chat", 1, YAML)
    assert is_utc_iso(saved.created_at)
    assert store.get_scenario(saved.id) == saved


def test_saving_a_name_again_makes_a_new_revision_and_lists_only_the_latest(store: Store) -> None:
    a1 = store.save_scenario("a", "v: 1\n")
    b1 = store.save_scenario("b", "v: 1\n")
    a2 = store.save_scenario("a", "v: 2\n")
    assert (a1.revision, a2.revision, b1.revision) == (1, 2, 1)
    assert a2.id != a1.id
    # Latest revision per name, most recently saved first.
    assert store.list_scenarios() == [a2, b1]
    assert store.list_revisions("a") == [a2, a1]
    # The older revision is still there, unchanged.
    assert store.get_scenario(a1.id).yaml_text == "v: 1\n"


def test_deleting_the_latest_revision_shows_the_previous_one(store: Store) -> None:
    a1 = store.save_scenario("a", "v: 1\n")
    a2 = store.save_scenario("a", "v: 2\n")
    store.delete_scenario(a2.id)
    assert store.list_scenarios() == [a1]


@pytest.mark.parametrize("name", ["", "   ", "x" * 201])
def test_bad_scenario_names_are_refused(store: Store, name: str) -> None:
    with pytest.raises(StoreError, match="scenario name"):
        store.save_scenario(name, YAML)


def test_run_lifecycle(store: Store, tmp_path: Path) -> None:
    sc = store.save_scenario("train", YAML)
    run = store.create_run(sc.id)
    assert isinstance(run, RunRow)
    assert (run.status, run.scenario_id, run.scenario_name, run.scenario_revision) == (
        "queued",
        sc.id,
        "train",
        1,
    )
    assert (run.done, run.total, run.stage, run.metrics, run.finished_at) == (
        0,
        0,
        None,
        None,
        None,
    )
    assert is_utc_iso(run.created_at)

    store.update_run(run.id, status="running", stage="design", done=2, total=5)
    store.update_run(run.id, message="half way")
    mid = store.get_run(run.id)
    # Fields not given keep their value.
    assert (mid.status, mid.stage, mid.done, mid.total, mid.message) == (
        "running",
        "design",
        2,
        5,
        "half way",
    )

    out = store.run_dir(run.id)
    store.finish_run(
        run.id,
        blueprint={"version": 1, "nested": {"gpus": [8, 16]}},
        metrics={"cost_usd": 1.5e6, "gpus": 1024},
        artifacts_dir=out,
    )
    done = store.get_run(run.id)
    assert done.status == "done"
    assert done.metrics == {"cost_usd": 1.5e6, "gpus": 1024}
    assert done.blueprint == {"version": 1, "nested": {"gpus": [8, 16]}}
    assert done.artifacts_dir == str(out)
    assert done.finished_at is not None and is_utc_iso(done.finished_at)
    # Keyed by the database file, so two databases in one directory never share it.
    assert out.parent == store.runs_dir() == store.path.parent / "cw.db.runs"


def test_fail_run_records_the_message(store: Store) -> None:
    run = store.create_run(store.save_scenario("s", YAML).id)
    store.fail_run(run.id, "timed out after 300 s")
    got = store.get_run(run.id)
    assert (got.status, got.message) == ("failed", "timed out after 300 s")
    assert got.finished_at is not None


def test_update_run_rejects_bad_values(store: Store) -> None:
    run = store.create_run(store.save_scenario("s", YAML).id)
    with pytest.raises(StoreError, match="status: 'finished' is not one of"):
        store.update_run(run.id, status="finished")
    with pytest.raises(StoreError, match="done: must be >= 0"):
        store.update_run(run.id, done=-1)
    with pytest.raises(StoreError, match="metrics: not JSON-serializable"):
        store.finish_run(run.id, blueprint={}, metrics={"x": object()}, artifacts_dir=None)
    # Nothing of the refused writes landed.
    assert store.get_run(run.id).status == "queued"


def test_absent_ids_raise_store_error_naming_the_id(store: Store) -> None:
    sc = store.save_scenario("s", YAML)
    for call, text in [
        (lambda: store.get_scenario(99), "scenario id 99"),
        (lambda: store.delete_scenario(99), "scenario id 99"),
        (lambda: store.create_run(99), "scenario id 99"),
        (lambda: store.get_run(77), "run id 77"),
        (lambda: store.update_run(77, stage="x"), "run id 77"),
        (lambda: store.update_run(77), "run id 77"),
        (lambda: store.finish_run(77, blueprint={}, metrics={}, artifacts_dir=None), "run id 77"),
        (lambda: store.fail_run(77, "m"), "run id 77"),
        (lambda: store.delete_run(77), "run id 77"),
    ]:
        with pytest.raises(StoreError, match=text):
            call()
    assert issubclass(StoreError, ClusterwrightError)
    assert store.list_runs() == []
    assert store.list_scenarios() == [sc]


def test_list_runs_newest_first_and_by_scenario(store: Store) -> None:
    a = store.save_scenario("a", YAML)
    b = store.save_scenario("b", YAML)
    r1 = store.create_run(a.id)
    r2 = store.create_run(b.id)
    r3 = store.create_run(a.id)
    assert [r.id for r in store.list_runs()] == [r3.id, r2.id, r1.id]
    assert [r.id for r in store.list_runs(a.id)] == [r3.id, r1.id]
    assert [r.id for r in store.list_runs(b.id)] == [r2.id]


def test_delete_run_removes_row_and_artifacts_dir(store: Store) -> None:
    run = store.create_run(store.save_scenario("s", YAML).id)
    out = store.run_dir(run.id)
    (out / "sub").mkdir(parents=True)
    (out / "sub" / "report.html").write_text("<html></html>")
    store.finish_run(run.id, blueprint={}, metrics={}, artifacts_dir=out)
    store.delete_run(run.id)
    assert not out.exists()
    with pytest.raises(StoreError):
        store.get_run(run.id)


def test_delete_run_with_missing_dir_is_fine(store: Store) -> None:
    run = store.create_run(store.save_scenario("s", YAML).id)
    store.finish_run(run.id, blueprint={}, metrics={}, artifacts_dir=store.run_dir(run.id))
    store.delete_run(run.id)
    assert store.list_runs() == []


def test_delete_run_never_removes_a_dir_outside_runs_dir(store: Store, tmp_path: Path) -> None:
    mine = tmp_path / "user-out"
    mine.mkdir()
    (mine / "keep.txt").write_text("x")
    run = store.create_run(store.save_scenario("s", YAML).id)
    store.finish_run(run.id, blueprint={}, metrics={}, artifacts_dir=mine)
    store.delete_run(run.id)
    assert (mine / "keep.txt").read_text() == "x"


def test_delete_scenario_cascades_to_runs_and_their_dirs(store: Store) -> None:
    a = store.save_scenario("a", YAML)
    b = store.save_scenario("b", YAML)
    runs = [store.create_run(a.id) for _ in range(3)]
    other = store.create_run(b.id)
    for r in [*runs, other]:
        store.run_dir(r.id).mkdir(parents=True)
        store.finish_run(r.id, blueprint={}, metrics={}, artifacts_dir=store.run_dir(r.id))
    store.delete_scenario(a.id)
    assert [r.id for r in store.list_runs()] == [other.id]
    assert all(not store.run_dir(r.id).exists() for r in runs)
    assert store.run_dir(other.id).is_dir()
    count = store._conn().execute("SELECT COUNT(*) FROM runs").fetchone()[0]
    assert count == 1


def test_data_persists_across_reopen(tmp_path: Path) -> None:
    path = tmp_path / "cw.db"
    with Store(path) as s:
        sc = s.save_scenario("s", YAML)
        run = s.create_run(sc.id)
        s.finish_run(run.id, blueprint={"b": 1}, metrics={"m": 2.5}, artifacts_dir=None)
    with Store(path) as s:
        assert s.get_scenario(sc.id) == sc
        assert s.get_run(run.id).metrics == {"m": 2.5}


def test_each_thread_gets_its_own_connection(store: Store) -> None:
    seen: list[object] = []

    def work() -> None:
        seen.append(store._conn())
        store.save_scenario("t", YAML)

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({id(c) for c in seen}) == 3
    assert store._conn() not in seen
    assert [r.revision for r in store.list_revisions("t")] == [3, 2, 1]


def test_closed_store_refuses_use(tmp_path: Path) -> None:
    s = Store(tmp_path / "cw.db")
    s.close()
    with pytest.raises(StoreError, match="closed"):
        s.list_runs()


def test_directory_or_garbage_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="is a directory"):
        Store(tmp_path)
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match=r"junk\.db.*not a database"):
        Store(junk)


def test_list_runs_limit_and_without_blueprint(store: Store) -> None:
    sc = store.save_scenario("s", YAML)
    ids = []
    for n in range(4):
        run = store.create_run(sc.id)
        store.finish_run(run.id, blueprint={"n": n}, metrics={"n": n}, artifacts_dir=None)
        ids.append(run.id)
    light = store.list_runs(with_blueprint=False, limit=2)
    assert [r.id for r in light] == ids[::-1][:2]
    assert [r.blueprint for r in light] == [None, None]
    assert [r.metrics for r in light] == [{"n": 3}, {"n": 2}]
    assert [r.blueprint for r in store.list_runs(sc.id, limit=1)] == [{"n": 3}]
    with pytest.raises(StoreError, match="limit"):
        store.list_runs(limit=-1)


def test_connections_of_ended_threads_are_closed(store: Store) -> None:
    store.list_runs()  # this thread's connection
    for _ in range(20):
        t = threading.Thread(target=store.list_runs)
        t.start()
        t.join()
    # One connection per live thread: this one; the 20 ended threads' ones were closed.
    assert store.open_connections() == 1


def test_relative_path_is_made_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with Store("sub/cw.db") as s:
        assert s.path == tmp_path / "sub" / "cw.db"
        assert s.runs_dir() == tmp_path / "sub" / "cw.db.runs"


def test_two_databases_in_one_directory_keep_separate_artifacts(tmp_path: Path) -> None:
    with Store(tmp_path / "a.db") as a, Store(tmp_path / "b.db") as b:
        ra = a.create_run(a.save_scenario("s", YAML).id)
        rb = b.create_run(b.save_scenario("s", YAML).id)
        assert ra.id == rb.id == 1  # the same id in both files
        for store, run, text in ((a, ra, "a"), (b, rb, "b")):
            out = store.run_dir(run.id)
            out.mkdir(parents=True)
            (out / "report.html").write_text(text)
            store.finish_run(run.id, blueprint={}, metrics={}, artifacts_dir=out)
        assert a.run_dir(1) != b.run_dir(1)
        b.delete_run(rb.id)
        assert not b.run_dir(1).exists()
        kept = a.artifacts_dir(a.get_run(ra.id))
        assert kept is not None and (kept / "report.html").read_text() == "a"


def test_a_legacy_directory_another_database_records_is_kept(tmp_path: Path) -> None:
    # Before schema 2, run 1 of a.db and of b.db both wrote <dir>/runs/1.
    shared = tmp_path / "runs" / "1"
    shared.mkdir(parents=True)
    (shared / "report.html").write_text("x")
    for name in ("a.db", "b.db"):
        make_v1_db(tmp_path / name, [("done", "2025-01-01T00:00:00.000+00:00", str(shared))])
    with Store(tmp_path / "b.db") as b:
        b.delete_run(1)
        assert b.list_runs() == []
    assert (shared / "report.html").is_file()  # a.db still points at it
    with Store(tmp_path / "a.db") as a:
        assert a.artifacts_dir(a.get_run(1)) == shared
        a.delete_run(1)  # no other database records it any more
    assert not shared.exists()


def test_artifacts_dir_trusts_only_the_runs_own_directories(store: Store, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    run = store.create_run(store.save_scenario("s", YAML).id)
    store.finish_run(run.id, blueprint={}, metrics={}, artifacts_dir=elsewhere)
    assert store.artifacts_dir(store.get_run(run.id)) is None  # a recorded path is not enough
    store.runs_dir().mkdir()
    store.run_dir(run.id).symlink_to(elsewhere)
    assert store.artifacts_dir(store.get_run(run.id)) is None  # nor a symlink
    store.run_dir(run.id).unlink()
    store.run_dir(run.id).mkdir()
    assert store.artifacts_dir(store.get_run(run.id)) == store.run_dir(run.id)


def test_half_written_run_dirs_of_dead_writers_are_removed(store: Store) -> None:
    store.runs_dir().mkdir()
    # A writer that has ended, as if killed inside write_blueprint, and one still running.
    code = ("import sys, tempfile; from clusterwright.ownership import temp_prefix; "
            "tempfile.mkdtemp(prefix=temp_prefix('7'), dir=sys.argv[1])")
    subprocess.run([sys.executable, "-c", code, str(store.runs_dir())], check=True)
    live = Path(tempfile.mkdtemp(prefix=temp_prefix("8"), dir=store.runs_dir()))
    (store.runs_dir() / "9").mkdir()
    dead = [p for p in store.runs_dir().iterdir() if p.name.startswith(".7.")]
    assert len(dead) == 1
    assert store.remove_stale_temp_dirs() == dead
    assert sorted(p.name for p in store.runs_dir().iterdir()) == sorted([live.name, "9"])
