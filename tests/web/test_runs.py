"""Runs in the workbench: save and run a shipped example end to end (progress, report, zip,
metrics, compare), a slow plan does not block other requests, the run time limit, and
downloads only from the run's own directory."""

from __future__ import annotations

import io
import os
import re
import sqlite3
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from clusterwright.store import Store
from clusterwright.web.app import create_app
from tests.store.workers import Holder
from tests.web import plans
from tests.web.helpers import TRAINING, client_of, run_id_of, wait_run

pytestmark = pytest.mark.slow  # each plan runs in a child process (about 1 s)


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with client_of(create_app(tmp_path / "cw.db")) as c:
        yield c


def _start(client: TestClient, yaml: str = TRAINING, name: str = "") -> int:
    r = client.post("/scenarios", data={"name": name, "yaml": yaml, "action": "run"},
                    follow_redirects=False)
    assert r.status_code == 303, r.text
    return run_id_of(r.headers["location"])


def test_save_run_report_zip_and_compare(client: TestClient) -> None:
    first = _start(client)
    run = wait_run(client, first)
    assert run.status == "done", run.message
    page = client.get(f"/runs/{first}").text
    assert 'data-status="done"' in page
    assert f'id="report-link" href="/runs/{first}/report"' in page
    assert f'id="download-link" href="/runs/{first}/artifacts.zip"' in page
    # 1,024 H100s as the scenario asks (its gpus: 1024), on 128 DGX H100 (8 GPUs each), and
    # the 3 spare servers the planner buys for its deadline (cluster.spares is unset).
    assert '<tr data-key="gpus"><th>GPUs</th><td>1,048</td></tr>' in page
    assert '<tr data-key="nodes"><th>servers</th><td>131</td></tr>' in page
    # Why: the decisions of the blueprint, each with its reason (the size is the scenario's).
    assert '<ul id="decisions">' in page and 'data-area="parallelism"' in page
    assert "given by workloads[0].gpus" in page
    # The polled fragment stops polling once the run has finished.
    live = client.get(f"/runs/{first}/progress").text
    assert live.startswith('<div id="run-live">') and "hx-trigger" not in live

    report = client.get(f"/runs/{first}/report")
    assert report.status_code == 200 and report.headers["content-type"].startswith("text/html")
    assert "training-1k-h100" in report.text and "Plotly" in report.text

    z = client.get(f"/runs/{first}/artifacts.zip")
    assert z.headers["content-type"] == "application/zip"
    names = zipfile.ZipFile(io.BytesIO(z.content)).namelist()
    prefix = f"clusterwright-run-{first}/"
    assert all(n.startswith(prefix) for n in names)
    assert {prefix + f for f in ("blueprint.json", "bom.csv", "cabling.csv", "report.html")} \
        <= set(names)

    # A second revision (another rack power limit), then compare the two runs.
    second = _start(client, TRAINING.replace("power_per_rack_kw: 40", "power_per_rack_kw: 60"))
    assert wait_run(client, second).status == "done"
    home = client.get("/").text
    assert home.count('class="compare-run"') == 2 and 'id="compare"' in home
    cmp_page = client.get(f"/compare?run={first}&run={second}").text
    assert 'id="compare"' in cmp_page
    assert f"#{first} training-1k-h100 r1" in cmp_page and f"#{second} training-1k-h100 r2" \
        in cmp_page
    plots = re.findall(r'<div class="plot" data-figure=\'([^\']+)\'', cmp_page)
    # Training only: cost, time to train, IT power, switches, GPUs (no TTFT/TPOT charts).
    assert len(plots) == 5
    assert '<script src="/static/plotly.min.js"></script>' in cmp_page


def test_zip_holds_only_the_runs_own_files(client: TestClient) -> None:
    rid = wait_run(client, _start(client)).id
    store = client.app.state.web.store  # type: ignore[attr-defined]
    run_dir = store.runs_dir() / str(rid)
    secret = store.runs_dir().parent / "secret.txt"
    secret.write_text("not yours")
    os.symlink(secret, run_dir / "link.txt")  # a link out of the directory is not followed
    (store.runs_dir() / "999").mkdir()
    (store.runs_dir() / "999" / "other.txt").write_text("another run")
    names = zipfile.ZipFile(io.BytesIO(client.get(f"/runs/{rid}/artifacts.zip").content))
    assert not any(n.endswith(("link.txt", "other.txt")) for n in names.namelist())
    # Run 999 is not in the database: its directory is never served.
    assert client.get("/runs/999/artifacts.zip").status_code == 404


def test_a_slow_plan_does_not_block_other_requests(client: TestClient, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    client.app.state.web.runner.plan_fn = plans.gated_plan  # type: ignore[attr-defined]
    slow = TRAINING.replace('description: "', f'description: "{gate}" #', 1)
    rid = _start(client, slow)
    wait_run(client, rid, ("running",), stage="sizing")
    # The plan is blocked on the gate; the server still answers every page.
    for url in ("/healthz", "/", f"/runs/{rid}", f"/runs/{rid}/progress", "/catalog"):
        assert client.get(url).status_code == 200, url
    live = client.get(f"/runs/{rid}/progress").text
    assert 'data-status="running"' in live and "stage sizing: 0/1" in live
    assert 'hx-trigger="every 500ms"' in live
    assert client.app.state.web.store.get_run(rid).status == "running"  # type: ignore[attr-defined]
    gate.touch()
    assert wait_run(client, rid).status == "done"


def test_a_run_past_the_time_limit_is_failed(tmp_path: Path) -> None:
    with client_of(create_app(tmp_path / "cw.db", run_timeout_s=1.0)) as c:
        c.app.state.web.runner.plan_fn = plans.hanging_plan  # type: ignore[attr-defined]
        rid = _start(c)
        run = wait_run(c, rid)
        assert run.status == "failed"
        assert "longer than the 1 s limit" in (run.message or "")
        assert "longer than the 1 s limit" in c.get(f"/runs/{rid}").text
        assert c.get(f"/runs/{rid}/artifacts.zip").status_code == 404


def test_a_saved_scenario_runs_from_its_page(client: TestClient) -> None:
    r = client.post("/scenarios", data={"name": "mine", "yaml": TRAINING},
                    follow_redirects=False)
    sid = int(r.headers["location"].rsplit("/", 1)[1])
    r = client.post(f"/scenarios/{sid}/runs", follow_redirects=False)
    rid = run_id_of(r.headers["location"])
    assert wait_run(client, rid).status == "done"
    assert f'href="/runs/{rid}"' in client.get(f"/scenarios/{sid}").text


def test_start_up_fails_only_runs_whose_owner_is_gone(tmp_path: Path) -> None:
    # Two runs held by other processes (as by `runs plan` or another server); one is killed.
    db = tmp_path / "cw.db"
    with Store(db) as s:
        sid = s.save_scenario("s", TRAINING).id
    live, dead = Holder(db, sid), Holder(db, sid)
    try:
        dead.kill()
        with client_of(create_app(db)) as c:
            with sqlite3.connect(db) as conn:  # what start-up wrote, before any page is read
                status = dict(conn.execute("SELECT id, status FROM runs").fetchall())
            conn.close()
            assert status == {live.run_id: "running", dead.run_id: "failed"}
            page = c.get(f"/runs/{dead.run_id}").text
            assert 'data-status="failed"' in page
            assert f"interrupted: owner process {dead.pid} is gone" in page
            assert 'data-status="running"' in c.get(f"/runs/{live.run_id}/progress").text
            live.finish()
            assert 'data-status="done"' in c.get(f"/runs/{live.run_id}/progress").text
    finally:
        live.close()
        dead.close()
