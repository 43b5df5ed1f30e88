"""`clusterwright sweep`: the real planner end to end on small sweeps (2 points, quick), the
JSON contract, the files written, bad input (exit 2, the field or flag named, no traceback),
and the Ray backend on a real local Ray instance giving the same rows as the process pool."""

from __future__ import annotations

import csv
import json
import signal
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from clusterwright.cli.main import app
from tests.cli.helpers import json_ok, user_error

ROOT = Path(__file__).resolve().parents[2]
SERVE = ROOT / "examples" / "serve-llama3-70b.yaml"

runner = CliRunner()


def cw(*args: str) -> Result:
    return runner.invoke(app, list(args), env={"CLUSTERWRIGHT_CATALOG": None})


def write(tmp_path: Path, body: str, name: str = "sweep.yaml") -> Path:
    f = tmp_path / name
    f.write_text(f'scenario: "{SERVE}"\n' + body)
    return f


TWO = 'variables:\n  workloads.chat.qps: [5, 20]\n'


@pytest.fixture(scope="module")
def local_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    tmp = tmp_path_factory.mktemp("sweep")
    f = write(tmp, TWO)
    out = tmp / "out"
    d = json_ok(cw("sweep", str(f), "--out", str(out), "--workers", "2", "--json"))
    return d, out


def test_json_summary_and_files(local_run: tuple[dict[str, Any], Path]) -> None:
    d, out = local_run
    for key in ("name", "out", "files", "points", "feasible", "infeasible", "errors",
                "variables", "backend", "workers", "elapsed_s", "best", "pareto"):
        assert key in d, key
    assert (d["points"], d["errors"], d["backend"], d["workers"]) == (2, 0, "local", 2)
    assert d["variables"] == ["workloads.chat.qps"]
    assert sorted(p.name for p in out.iterdir()) == ["results.csv", "results.json",
                                                     "sweep.html"]
    rows = list(csv.DictReader((out / "results.csv").open()))
    assert [r["workloads.chat.qps"] for r in rows] == ["5", "20"]
    # Serving at 20 req/s needs at least as many GPUs as at 5 req/s, and costs no less.
    lo, hi = rows
    assert int(hi["gpus"]) >= int(lo["gpus"]) > 0
    assert float(hi["total_cost_usd"]) >= float(lo["total_cost_usd"]) > 0
    assert float(lo["ttft_p99_s"]) > 0


def test_human_output_has_the_summary_and_best_points(tmp_path: Path) -> None:
    f = write(tmp_path, 'variables:\n  workloads.chat.qps: [5]\n')
    r = cw("sweep", str(f), "--out", str(tmp_path / "o"), "--workers", "1")
    assert r.exit_code == 0, r.output
    assert "1 points over workloads.chat.qps" in r.stdout
    assert "Cheapest feasible points" in r.stdout and "Wrote results.csv" in r.stdout


def test_non_empty_out_is_refused_before_any_work(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "x").write_text("")
    err = user_error(cw("sweep", str(write(tmp_path, TWO)), "--out", str(out), "--json"))
    assert "--force" in err and "not empty" in err


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("--backend", "dask"), "--backend"),
        (("--address", "127.0.0.1:6379"), "--address needs --backend ray"),
        (("--workers", "0"), "--workers"),
    ],
)
def test_bad_flags(tmp_path: Path, args: tuple[str, ...], expected: str) -> None:
    err = user_error(cw("sweep", str(write(tmp_path, TWO)), "--out", str(tmp_path / "o"),
                        *args))
    assert expected in err


def test_bad_variable_names_the_line(tmp_path: Path) -> None:
    f = write(tmp_path, 'variables:\n  workloads.chat.qps: [5]\n  constraints.rack_kw: [10]\n')
    err = user_error(cw("sweep", str(f), "--out", str(tmp_path / "o"), "--json"))
    assert "constraints.rack_kw (line 4)" in err and "not a field" in err
    assert not (tmp_path / "o").exists()


def test_missing_sweep_file(tmp_path: Path) -> None:
    err = user_error(cw("sweep", str(tmp_path / "nope.yaml"), "--out", str(tmp_path / "o")))
    assert "no such file" in err


# ---------------------------------------------------------------------------- Ray


def _rows(out: Path) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = json.loads((out / "results.json").read_text())["rows"]
    return rows


@pytest.mark.slow
def test_ray_backend_on_a_local_instance_equals_the_process_pool(
    local_run: tuple[dict[str, Any], Path], tmp_path: Path
) -> None:
    ray = pytest.importorskip("ray", reason="the ray extra: pip install -e '.[dev,ray]'")
    sigterm = signal.getsignal(signal.SIGTERM)  # Ray's driver replaces it and leaves it
    # The smallest object store Ray accepts is 75 MiB; a sweep's objects are a few kB.
    ray.init(num_cpus=2, include_dashboard=False, object_store_memory=100 * 1024**2,
             log_to_driver=False)
    try:
        out = tmp_path / "ray"
        r = cw("sweep", str(write(tmp_path, TWO)), "--out", str(out), "--backend", "ray",
               "--json")
        assert r.exit_code == 0, r.output
        d = json.loads(r.stdout)
        assert (d["backend"], d["points"], d["errors"]) == ("ray", 2, 0)
        assert ray.is_initialized()  # the CLI used this instance and left it running
    finally:
        ray.shutdown()
        signal.signal(signal.SIGTERM, sigterm)
    assert _rows(out) == _rows(local_run[1])


@pytest.mark.slow
def test_ray_backend_starts_and_stops_its_own_instance(
    local_run: tuple[dict[str, Any], Path], tmp_path: Path
) -> None:
    ray = pytest.importorskip("ray", reason="the ray extra: pip install -e '.[dev,ray]'")
    assert not ray.is_initialized()
    sigterm = signal.getsignal(signal.SIGTERM)
    out = tmp_path / "ray"
    d = json.loads(cw("sweep", str(write(tmp_path, TWO)), "--out", str(out), "--backend",
                      "ray", "--workers", "2", "--json").stdout)
    assert (d["backend"], d["workers"], d["errors"]) == ("ray", 2, 0)
    assert not ray.is_initialized()  # shut down after the sweep
    assert signal.getsignal(signal.SIGTERM) is sigterm  # and the process's handler is back
    assert _rows(out) == _rows(local_run[1])


# ------------------------------------------------------------- the input boundary (#19)


def test_more_workers_than_the_cap_is_refused(tmp_path: Path) -> None:
    err = user_error(cw("sweep", str(write(tmp_path, TWO)), "--out", str(tmp_path / "o"),
                        "--workers", "100000"))
    assert "--workers: must be in 1..1,024" in err


def test_a_range_of_1e11_steps_is_a_user_error(tmp_path: Path) -> None:
    f = write(tmp_path, "variables:\n  workloads.chat.qps: {min: 1, max: 100, steps: 1e11}\n")
    err = user_error(cw("sweep", str(f), "--out", str(tmp_path / "o"), "--json"))
    assert "variables.workloads.chat.qps.steps (line 3)" in err
    assert not (tmp_path / "o").exists()


def test_a_device_as_sweep_file_is_a_user_error(tmp_path: Path) -> None:
    if not Path("/dev/zero").exists():
        pytest.skip("no /dev/zero")
    err = user_error(cw("sweep", "/dev/zero", "--out", str(tmp_path / "o")))
    assert "/dev/zero: cannot read: not a regular file" in err
