"""`clusterwright runs ...`: list/show/delete saved runs, save and plan scenarios, errors exit 2."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from clusterwright.cli.main import app
from clusterwright.store import SCHEMA_VERSION, Store
from tests.cli.helpers import json_ok, user_error
from tests.store.workers import Holder

ROOT = Path(__file__).resolve().parents[2]
SERVE = ROOT / "examples" / "serve-llama3-70b.yaml"

runner = CliRunner()


def cw(*args: str, db: Path, input: str | None = None) -> Result:
    return runner.invoke(
        app,
        ["runs", *args],
        env={"CLUSTERWRIGHT_CATALOG": None, "CLUSTERWRIGHT_DB": str(db)},
        input=input,
    )


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """A store with two scenarios; run 1 done (with an artifacts dir), run 2 failed."""
    path = tmp_path / "cw.db"
    with Store(path) as s:
        a = s.save_scenario("alpha", "name: alpha\n")
        s.save_scenario("alpha", "name: alpha\n# r2\n")
        b = s.save_scenario("beta", "name: beta\n")
        r1 = s.create_run(a.id)
        s.run_dir(r1.id).mkdir(parents=True)
        (s.run_dir(r1.id) / "report.html").write_text("<html></html>")
        s.finish_run(
            r1.id,
            blueprint={"version": 1},
            metrics={"total_cost_usd": 1_234_567.0, "gpus": 64, "feasible": True},
            artifacts_dir=s.run_dir(r1.id),
        )
        r2 = s.create_run(b.id)
        s.fail_run(r2.id, "boom")
    return path


def test_list_json_newest_first(db: Path) -> None:
    d = json_ok(cw("list", "--json", db=db))
    assert d["db"] == str(db)
    assert [r["id"] for r in d["runs"]] == [2, 1]
    r1 = d["runs"][1]
    assert (r1["scenario_name"], r1["scenario_revision"], r1["status"]) == ("alpha", 1, "done")
    assert r1["metrics"]["gpus"] == 64
    assert r1["artifacts_dir"] == str(db.parent / "cw.db.runs" / "1")
    assert d["runs"][0]["message"] == "boom"
    assert "blueprint" not in r1


def test_list_filtered_by_scenario_and_unknown_scenario(db: Path) -> None:
    d = json_ok(cw("list", "--scenario", "3", "--json", db=db))
    assert [r["id"] for r in d["runs"]] == [2]
    assert "scenario id 42" in user_error(cw("list", "--scenario", "42", db=db))


def test_list_table_and_empty(db: Path, tmp_path: Path) -> None:
    r = cw("list", db=db)
    assert r.exit_code == 0, r.output
    assert "alpha r1" in r.stdout and "$1.2M" in r.stdout and "failed" in r.stdout
    empty = cw("list", "--db", str(tmp_path / "new" / "e.db"), db=db)
    assert empty.exit_code == 0 and "no runs" in empty.stdout


def test_db_flag_beats_env(db: Path, tmp_path: Path) -> None:
    other = tmp_path / "other.db"
    d = json_ok(cw("list", "--db", str(other), "--json", db=db))
    assert d == {"db": str(other), "runs": []}


def test_show_json_and_table(db: Path) -> None:
    d = json_ok(cw("show", "1", "--json", db=db))
    assert d["id"] == 1 and d["status"] == "done"
    assert (d["scenario_name"], d["scenario_revision"]) == ("alpha", 1)
    assert d["metrics"] == {"total_cost_usd": 1_234_567.0, "gpus": 64, "feasible": True}
    assert "blueprint" not in d
    assert json_ok(cw("show", "1", "--blueprint", "--json", db=db))["blueprint"] == {"version": 1}
    r = cw("show", "1", db=db)
    assert r.exit_code == 0, r.output
    for text in ("alpha (id 1, revision 1)", "total_cost_usd", "1,234,567"):
        assert text in r.stdout, text
    # The run's directory is folded over lines at 80 columns, never cut (long under xdist).
    cells = "".join(line.split("│")[2].strip() for line in r.stdout.splitlines()
                    if line.count("│") == 3)
    assert str(db.parent) in cells, r.stdout


def test_show_unknown_id_exits_2_naming_it(db: Path) -> None:
    assert "run id 99" in user_error(cw("show", "99", "--json", db=db))


def test_delete_asks_and_no_keeps_the_run(db: Path) -> None:
    r = cw("delete", "1", db=db, input="n\n")
    assert r.exit_code == 1
    assert "Delete run 1 of 'alpha'" in r.stderr
    assert (db.parent / "cw.db.runs" / "1" / "report.html").exists()
    assert json_ok(cw("show", "1", "--json", db=db))["id"] == 1


def test_delete_yes_after_prompt_removes_run_and_dir(db: Path) -> None:
    r = cw("delete", "1", db=db, input="y\n")
    assert r.exit_code == 0, r.output
    assert not (db.parent / "cw.db.runs" / "1").exists()
    assert [x["id"] for x in json_ok(cw("list", "--json", db=db))["runs"]] == [2]


def test_delete_with_yes_flag_and_json(db: Path) -> None:
    assert json_ok(cw("delete", "2", "--yes", "--json", db=db)) == {"deleted": 2, "db": str(db)}
    assert "run id 2" in user_error(cw("show", "2", db=db))


def test_delete_unknown_id_exits_2_without_asking(db: Path) -> None:
    err = user_error(cw("delete", "7", db=db))
    assert "run id 7" in err and "Delete run" not in err


def test_non_integer_id_is_a_usage_error(db: Path) -> None:
    r = cw("show", "abc", db=db)
    assert r.exit_code == 2 and "Traceback" not in r.output


def test_newer_schema_file_exits_2_naming_the_path(db: Path) -> None:
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION + 5,))
    err = user_error(cw("list", db=db))
    assert str(db) in err.replace("\n", "") and "newer" in err


def test_garbage_db_and_directory_exit_2(tmp_path: Path) -> None:
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"x" * 4096)
    assert "not a database" in user_error(cw("list", db=junk))
    assert "is a directory" in user_error(cw("list", "--db", str(tmp_path), db=junk))


def test_scenarios_lists_latest_revisions(db: Path) -> None:
    d = json_ok(cw("scenarios", "--json", db=db))
    assert [(s["name"], s["revision"]) for s in d["scenarios"]] == [("beta", 1), ("alpha", 2)]


def test_save_scenario_validates_and_revises(tmp_path: Path) -> None:
    db = tmp_path / "cw.db"
    first = json_ok(cw("save-scenario", str(SERVE), "--json", db=db))
    second = json_ok(cw("save-scenario", str(SERVE), "--json", db=db))
    assert first["name"] == second["name"] == "chat-70b"
    assert (first["revision"], second["revision"]) == (1, 2)
    named = json_ok(cw("save-scenario", str(SERVE), "--name", "mine", "--json", db=db))
    assert (named["name"], named["revision"]) == ("mine", 1)
    with Store(db) as s:
        assert s.get_scenario(first["id"]).yaml_text == SERVE.read_text()


def test_save_scenario_refuses_a_bad_file_naming_the_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text('name: "x"\nworkloads:\n  - kind: "nope"\n')
    err = user_error(cw("save-scenario", str(bad), db=tmp_path / "cw.db"))
    assert "bad.yaml" in err and "line 3" in err.replace("\n", " ")
    with Store(tmp_path / "cw.db") as s:
        assert s.list_scenarios() == []


@pytest.mark.slow
def test_plan_records_a_finished_run_with_artifacts(tmp_path: Path) -> None:
    db = tmp_path / "cw.db"
    sid = json_ok(cw("save-scenario", str(SERVE), "--json", db=db))["id"]
    run = json_ok(cw("plan", str(sid), "--quick", "--json", db=db))
    assert run["status"] == "done" and run["scenario_id"] == sid
    assert run["metrics"]["feasible"] is True and run["metrics"]["gpus"] >= 1
    out = Path(run["artifacts_dir"])
    assert out == db.parent / "cw.db.runs" / str(run["id"])
    assert (out / "blueprint.json").is_file() and (out / "report.html").is_file()
    # The stored blueprint is the one written to disk.
    with Store(db) as s:
        bp = s.get_run(run["id"]).blueprint
    assert bp is not None and bp["recommendation"]["gpus"] == run["metrics"]["gpus"]


def test_plan_unknown_scenario_exits_2(tmp_path: Path) -> None:
    assert "scenario id 5" in user_error(cw("plan", "5", db=tmp_path / "cw.db"))


def test_plan_of_an_invalid_saved_scenario_exits_2_naming_the_line(tmp_path: Path) -> None:
    db = tmp_path / "cw.db"
    with Store(db) as s:
        sc = s.save_scenario("draft", 'name: "x"\nworkloads:\n  - kind: "nope"\n')
    err = user_error(cw("plan", str(sc.id), db=db)).replace("\n", " ")
    assert f"scenario id {sc.id}" in err and "line 3" in err
    with Store(db) as s:
        assert s.list_runs() == []  # refused before a run was recorded


@pytest.fixture
def holders() -> Iterator[list[Holder]]:
    made: list[Holder] = []
    yield made
    for h in made:
        h.close()


@pytest.mark.slow
def test_list_and_show_fail_a_run_whose_owner_was_killed(tmp_path: Path,
                                                         holders: list[Holder]) -> None:
    db = tmp_path / "cw.db"
    with Store(db) as s:
        sid = s.save_scenario("s", "name: s\n").id
    holders.append(h := Holder(db, sid))
    assert json_ok(cw("show", str(h.run_id), "--json", db=db))["status"] == "running"
    h.kill()  # as `kill -9` on a `runs plan`
    run = json_ok(cw("list", "--json", db=db))["runs"][0]
    assert (run["id"], run["status"], run["owner_pid"]) == (h.run_id, "failed", h.pid)
    assert run["message"] == f"interrupted: owner process {h.pid} is gone"
    shown = cw("show", str(h.run_id), db=db)
    assert shown.exit_code == 0 and "interrupted: owner process" in shown.stdout


@pytest.mark.slow
def test_list_leaves_a_run_with_a_live_owner_running(tmp_path: Path,
                                                     holders: list[Holder]) -> None:
    db = tmp_path / "cw.db"
    with Store(db) as s:
        sid = s.save_scenario("s", "name: s\n").id
    holders.append(h := Holder(db, sid))
    for _ in range(2):  # reading twice changes nothing
        run = json_ok(cw("list", "--json", db=db))["runs"][0]
        assert (run["status"], run["owner_pid"], run["message"]) == ("running", h.pid, None)
        assert run["heartbeat_at"] is not None
    table = cw("show", str(h.run_id), db=db).stdout
    assert "running" in table and f"pid {h.pid}" in table
    h.finish()
    assert json_ok(cw("show", str(h.run_id), "--json", db=db))["status"] == "done"


@pytest.mark.slow
def test_sigterm_ends_a_plan_as_an_interrupt(tmp_path: Path) -> None:
    """A scheduler's stop (SIGTERM) left the run "running" and its temporary artifacts on
    disk; it now ends as Ctrl-C does: failed "interrupted", nothing half-written left."""
    import os
    import signal
    import subprocess
    import sys
    import time

    db = tmp_path / "cw.db"
    json_ok(cw("save-scenario", str(ROOT / "examples" / "frontier-16k" / "scenario.yaml"),
               "--json", db=db))
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.Popen([sys.executable, "-m", "clusterwright", "runs", "plan", "1",
                             "--db", str(db)], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # until the run is recorded and planning
        runs = json_ok(cw("list", "--json", db=db))["runs"]
        if runs and runs[0]["status"] == "running":
            break
        time.sleep(0.2)
    time.sleep(1.0)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 130
    run = json_ok(cw("list", "--json", db=db))["runs"][0]
    assert run["status"] == "failed" and run["message"] == "interrupted"
    assert not [p for p in (tmp_path / "cw.db.runs").glob("*") if "tmp" in p.name]
