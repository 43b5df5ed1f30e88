"""`clusterwright ops schedule`: JSON keys, the text report, and bad input (exit 2, the flag or
trace line named, no traceback)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from clusterwright.cli.main import app
from tests.cli.helpers import json_ok, user_error

runner = CliRunner()
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "ops" / "jobs.csv"
SMALL = ("--nodes", "16", "--days", "2", "--jobs", "60")


def cw(*args: str) -> Result:
    return runner.invoke(app, ["ops", "schedule", *args], env={"CLUSTERWRIGHT_CATALOG": None})


def sched_json(*args: str) -> dict[str, Any]:
    return json_ok(cw(*args, "--json"))


def test_synthetic_json_has_the_metrics() -> None:
    d = sched_json("--synthetic", *SMALL, "--policy", "backfill", "--seed", "3")
    assert d["policy"] == "backfill" and d["nodes"] == 16 and d["gpus"] == 128
    assert 0.0 <= d["gpu_utilization_mean"] <= 1.0
    assert d["gpu_hours"]["allocated"] <= d["gpu_hours"]["capacity"]
    for kind in ("train", "finetune", "inference", "mig"):
        assert set(d["by_kind"][kind]["queueing_delay_h"]) == {"n", "mean", "p50", "p90", "p99"}
    assert {"stranded_gpu_fraction_mean", "gang_jobs_across_sus_fraction"} <= set(
        d["fragmentation"])
    assert d["source"] == "synthetic" and d["upgrade"] is None
    assert set(d["timings"]) == {"sim_wall_s", "events_per_s"}  # wall clock, only there
    again = sched_json("--synthetic", *SMALL, "--policy", "backfill", "--seed", "3")
    assert {**again, "timings": d["timings"]} == d


def test_example_trace_with_a_rollout() -> None:
    d = sched_json(str(EXAMPLE), "--policy", "priority", "--topology-aware",
                   "--upgrade-batch", "8", "--failure-rate", "0")
    assert d["jobs"] == 23 and d["node_failures"] == 0 and d["topology_aware"] is True
    up = d["upgrade"]
    assert up["max_nodes_out"] <= 8 and up["finished_h"] is not None
    assert up["gpu_hours_out_of_service"] == pytest.approx(64 * 8 * 2.0)  # each node 2 h
    assert "mean_queueing_delay_increase_h" in up
    assert d["inference"]["slo_attainment"] == pytest.approx(1.0)  # priority preempts for it


def test_text_report() -> None:
    r = cw(str(EXAMPLE), "--days", "2")
    assert r.exit_code == 0, r.output
    assert "GPU utilization" in r.stdout and "Jobs by kind" in r.stdout


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("--synthetic", "--policy", "lottery"), "--policy"),
        (("--synthetic", "--days", "0"), "--days"),
        (("--synthetic", "--nodes", "0"), "--nodes"),
        (("--synthetic", "--failure-rate", "-1"), "--failure-rate"),
        (("--synthetic", "--mix", "1,2"), "--mix"),
        (("--synthetic", "--upgrade-batch", "0"), "--upgrade-batch"),
        (("--synthetic", "--server", "dgx-h1000"), "dgx-h1000"),
        (("--synthetic", "--oversubscription", "0.5"), "--oversubscription"),
        ((), "exactly one"),
        ((str(EXAMPLE), "--synthetic"), "exactly one"),
        (("missing.csv",), "no such file"),
        (("/dev/zero",), "not a regular file"),
    ],
)
def test_bad_flags_exit_2(args: tuple[str, ...], needle: str) -> None:
    assert needle in user_error(cw(*args))


def test_trace_errors_name_the_line(tmp_path: Path) -> None:
    bad = tmp_path / "jobs.csv"
    bad.write_text("id,kind,submit_h,duration_h,gpus,owner\n", encoding="utf-8")
    assert "line 1: unknown column(s) 'owner'" in user_error(cw(str(bad)))
    bad.write_text("id,kind,submit_h,duration_h,gpus\na,train,0,1,8\nb,train,0,1,1024\n",
                   encoding="utf-8")
    err = user_error(cw(str(bad), "--nodes", "16"))
    assert "line 3" in err and "'b'" in err and "16 nodes" in err


def test_a_rack_scale_system_counts_racks_and_their_hosts() -> None:
    """--nodes 4 racks of GB200 NVL72 are 72 compute trays (hosts); the report said
    "72 x gb200-nvl72" (72 racks)."""
    d = sched_json("--synthetic", "--server", "gb200-nvl72", "--nodes", "4", "--days", "1",
                   "--jobs", "30")
    assert (d["nodes"], d["hosts"], d["gpus"]) == (4, 72, 288)
    r = cw("--synthetic", "--server", "gb200-nvl72", "--nodes", "4", "--days", "1",
           "--jobs", "30")
    assert "4 x gb200-nvl72 (72 hosts, 288 GPUs)" in r.stdout


def test_an_upgrade_compares_the_same_jobs() -> None:
    """Draining the whole cluster made jobs "wait 6.5 h less": the means were over different
    jobs (one that did not finish dropped out of one of them)."""
    up = sched_json(str(EXAMPLE), "--nodes", "64", "--upgrade-batch", "64")["upgrade"]
    assert up["mean_queueing_delay_increase_h"] >= 0
    assert up["mean_completion_time_increase_h"] >= 0


def test_trace_columns_given_twice_are_refused_and_a_bom_is_read(tmp_path: Path) -> None:
    dup = tmp_path / "dup.csv"
    dup.write_text("id,kind,submit_h,duration_h,gpus,gpus\na,train,0,10,8,16\n")
    assert "'gpus' given twice" in user_error(cw(str(dup)))
    bom = tmp_path / "bom.csv"
    bom.write_bytes(b"\xef\xbb\xbfid,kind,submit_h,duration_h,gpus\na,train,0,10,8\n")
    assert sched_json(str(bom), "--nodes", "4")["jobs"] == 1


def test_a_job_after_the_horizon_is_noted() -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "late.csv"
        p.write_text("id,kind,submit_h,duration_h,gpus\na,train,0,10,8\nb,train,1000,10,8\n")
        notes = sched_json(str(p), "--nodes", "4", "--days", "2")["notes"]
    assert any("after the 2-day horizon" in n for n in notes)
