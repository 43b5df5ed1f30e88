"""Run owners and heartbeats: a run whose owner process is gone is failed as interrupted when
read, a run whose owner is alive never is (store/liveness.py)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from clusterwright.ownership import Owner, process_alive, process_started, this_host
from clusterwright.store import Store, liveness
from clusterwright.store.rows import RUN_COLUMNS, RUN_FROM, run_row
from tests.store.workers import Holder

GUARD_S = 60.0  # a guard against a hang, not a timing assertion
LINUX = process_started(os.getpid()) is not None


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store(tmp_path / "cw.db")
    yield s
    s.close()


@pytest.fixture
def holders(tmp_path: Path) -> Iterator[list[Holder]]:
    made: list[Holder] = []
    yield made
    for h in made:
        h.close()


def _insert_run(db: Path, *, status: str = "running", pid: int | None, host: str | None,
                started: str | None, beat_age_s: float | None, created_age_s: float = 0.0) -> int:
    """A run row written directly, as another process or host (or an old version) left it."""
    now = datetime.now(UTC)

    def stamp(age: float | None) -> str | None:
        return None if age is None else (now - timedelta(seconds=age)).isoformat()

    with sqlite3.connect(db) as conn:
        if conn.execute("SELECT COUNT(*) FROM scenarios").fetchone()[0] == 0:
            conn.execute("INSERT INTO scenarios (name, revision, yaml_text, created_at) "
                         "VALUES ('s', 1, 'x: 1\n', ?)", (stamp(0),))
        cur = conn.execute(
            "INSERT INTO runs (scenario_id, status, created_at, owner_pid, owner_host, "
            "owner_started, heartbeat_at) VALUES (1, ?, ?, ?, ?, ?, ?)",
            (status, stamp(created_age_s), pid, host, started, stamp(beat_age_s)))
        run_id = cur.lastrowid
    conn.close()
    assert run_id is not None
    return run_id


def _dead_pid() -> int:
    """The pid of a process that has ended and been reaped."""
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def _status_in_file(db: Path, run_id: int) -> tuple[str, str | None]:
    with sqlite3.connect(db) as conn:
        row = conn.execute("SELECT status, message FROM runs WHERE id = ?", (run_id,)).fetchone()
    conn.close()
    return row[0], row[1]


# ------------------------------------------------------------------ real processes


@pytest.mark.slow
def test_a_run_whose_owner_was_killed_is_failed_as_interrupted(
        store: Store, holders: list[Holder]) -> None:
    sc = store.save_scenario("s", "x: 1\n")
    holders.append(h := Holder(store.path, sc.id))
    assert store.get_run(h.run_id).status == "running"
    h.kill()
    run = store.get_run(h.run_id)
    assert run.status == "failed"
    assert run.message == f"interrupted: owner process {h.pid} is gone"
    assert run.finished_at is not None and run.owner_pid == h.pid
    # Recorded in the file, not only shown.
    assert _status_in_file(store.path, h.run_id) == ("failed", run.message)
    assert [r.status for r in store.list_runs()] == ["failed"]


@pytest.mark.slow
def test_a_run_with_a_live_owner_is_never_failed(store: Store, holders: list[Holder]) -> None:
    sc = store.save_scenario("s", "x: 1\n")
    holders.append(h := Holder(store.path, sc.id))
    run = store.get_run(h.run_id)
    assert (run.status, run.owner_pid, run.owner_host) == ("running", h.pid, this_host())
    # Even with a heartbeat far in the past (a stopped or suspended owner), a live owner on
    # this host keeps its run.
    with sqlite3.connect(store.path) as conn:
        conn.execute("UPDATE runs SET heartbeat_at = '2000-01-01T00:00:00.000+00:00'")
    conn.close()
    assert store.fail_stale_runs() == []
    assert [r.status for r in store.list_runs()] == ["running"]
    with Store(store.path) as other:  # a second reader, as a second server would be
        assert other.fail_stale_runs() == [] and other.get_run(h.run_id).status == "running"
    h.finish()
    done = store.get_run(h.run_id)
    assert (done.status, done.metrics) == ("done", {"held": 1})


# ------------------------------------------------------------------ the rule, row by row


def test_a_dead_owner_on_this_host_is_stale_at_once(store: Store) -> None:
    rid = _insert_run(store.path, pid=_dead_pid(), host=this_host(), started=None, beat_age_s=0.0)
    assert store.fail_stale_runs() == [rid]
    assert "is gone" in (store.get_run(rid).message or "")


@pytest.mark.skipif(not LINUX, reason="process start times come from /proc")
def test_a_reused_pid_is_not_taken_for_the_owner(store: Store) -> None:
    # This process is alive, but it is not the owner that started at tick 1 since boot.
    rid = _insert_run(store.path, pid=os.getpid(), host=this_host(), started="1",
                      beat_age_s=0.0)
    run = store.get_run(rid)
    assert run.status == "failed" and run.message == (
        f"interrupted: owner process {os.getpid()} is gone")


def test_owner_on_another_host_is_judged_by_its_heartbeat(store: Store) -> None:
    fresh = _insert_run(store.path, pid=1234, host="elsewhere.invalid", started="99",
                        beat_age_s=liveness.STALE_AFTER_S / 2, created_age_s=3600)
    old = _insert_run(store.path, pid=1234, host="elsewhere.invalid", started="99",
                      beat_age_s=liveness.STALE_AFTER_S + 5)
    assert store.fail_stale_runs() == [old]
    assert store.get_run(fresh).status == "running"
    msg = store.get_run(old).message or ""
    assert msg.startswith("interrupted: owner process 1234 on elsewhere.invalid sent no heartbeat")


def test_a_run_from_before_owners_is_stale_once_unchanged_for_the_threshold(
        store: Store) -> None:
    recent = _insert_run(store.path, status="queued", pid=None, host=None, started=None,
                         beat_age_s=None, created_age_s=1)
    old = _insert_run(store.path, status="queued", pid=None, host=None, started=None,
                      beat_age_s=None, created_age_s=liveness.STALE_AFTER_S + 5)
    assert [r.status for r in store.list_runs()] == ["failed", "queued"]
    assert "recorded no owner" in (store.get_run(old).message or "")
    assert store.get_run(recent).status == "queued"


def test_finished_runs_are_never_touched(store: Store) -> None:
    dead = _dead_pid()
    rid = _insert_run(store.path, status="done", pid=dead, host=this_host(), started=None,
                      beat_age_s=None, created_age_s=3600)
    assert store.fail_stale_runs() == []
    assert store.get_run(rid).status == "done"


def test_a_run_finished_after_it_was_read_is_not_failed(store: Store) -> None:
    # Staleness is judged again under the write lock: the owner may have recorded its result
    # between the read and the write, and that result must stand.
    rid = _insert_run(store.path, pid=_dead_pid(), host=this_host(), started=None,
                      beat_age_s=0.0)
    snapshot = run_row(store._read(f"SELECT {RUN_COLUMNS} FROM {RUN_FROM} WHERE r.id = ?",
                                   (rid,))[0])
    store.finish_run(rid, blueprint={}, metrics={"late": 1}, artifacts_dir=None)
    assert store._reap([snapshot])[0].status == "running"  # the snapshot, not failed
    assert _status_in_file(store.path, rid)[0] == "done"


def test_fail_run_unless_finished_leaves_a_finished_run(store: Store) -> None:
    run = store.create_run(store.save_scenario("s", "x: 1\n").id)
    store.finish_run(run.id, blueprint={}, metrics={}, artifacts_dir=None)
    assert store.fail_run(run.id, "too late", unless_finished=True) is False
    assert store.get_run(run.id).status == "done"
    other = store.create_run(run.scenario_id)
    assert store.fail_run(other.id, "stopped", unless_finished=True) is True
    assert store.get_run(other.id).message == "stopped"


# ------------------------------------------------------------------ owner and heartbeat


def test_create_and_start_record_this_process_as_owner(store: Store) -> None:
    run = store.create_run(store.save_scenario("s", "x: 1\n").id)
    me = Owner.current()
    assert (run.owner_pid, run.owner_host, run.owner_started) == (me.pid, me.host, me.started)
    assert run.heartbeat_at is not None
    with sqlite3.connect(store.path) as conn:  # as if a worker had taken it
        conn.execute("UPDATE runs SET owner_pid = 1, owner_started = NULL")
    conn.close()
    store.start_run(run.id)
    taken = store.get_run(run.id)
    assert (taken.status, taken.owner_pid) == ("running", me.pid)


def test_heartbeat_advances_while_owned_and_stops_when_finished(
        store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(liveness, "HEARTBEAT_INTERVAL_S", 0.02)
    run = store.create_run(store.save_scenario("s", "x: 1\n").id)
    store.start_run(run.id)
    first = store.get_run(run.id).heartbeat_at
    end = time.monotonic() + GUARD_S
    while store.get_run(run.id).heartbeat_at == first:
        assert time.monotonic() < end, "no heartbeat"
        time.sleep(0.01)
    store.finish_run(run.id, blueprint={}, metrics={}, artifacts_dir=None)
    last = store.get_run(run.id).heartbeat_at
    time.sleep(0.2)
    assert store.get_run(run.id).heartbeat_at == last  # a finished run is not beaten
    beat = store._beat
    store.close()
    assert beat is not None and not beat.is_alive()


def test_heartbeat_does_not_touch_a_run_another_process_took(
        store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(liveness, "HEARTBEAT_INTERVAL_S", 0.02)
    run = store.create_run(store.save_scenario("s", "x: 1\n").id)
    stamp = "2001-01-01T00:00:00.000+00:00"
    with sqlite3.connect(store.path) as conn:  # a worker on another host took it over
        conn.execute("UPDATE runs SET owner_pid = 7, owner_host = 'elsewhere.invalid', "
                     "heartbeat_at = ?", (stamp,))
    conn.close()
    end = time.monotonic() + GUARD_S
    while run.id in store._owned:  # dropped at the first beat that finds it taken
        assert time.monotonic() < end
        time.sleep(0.01)
    with sqlite3.connect(store.path) as conn:
        assert conn.execute("SELECT heartbeat_at FROM runs").fetchone()[0] == stamp
    conn.close()


@pytest.mark.skipif(not LINUX, reason="zombies and start times are read from /proc")
def test_process_alive_sees_zombies_and_reused_pids_as_gone() -> None:
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        started = process_started(p.pid)
        assert process_alive(p.pid, started)
        assert not process_alive(p.pid, "1")  # another process's start time
        p.kill()
        deadline = time.monotonic() + GUARD_S
        # Killed but not reaped: a zombie, gone for our purposes.
        while process_alive(p.pid, started):
            assert time.monotonic() < deadline
            time.sleep(0.01)
    finally:
        p.kill()
        p.wait()
    assert not process_alive(p.pid, started)
    assert not process_alive(0, None) and not process_alive(-5, None)
