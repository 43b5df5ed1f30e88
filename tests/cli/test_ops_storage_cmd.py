"""``clusterwright ops storage``: the tier, its checkpoint times, bad input exits 2."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from clusterwright.cli.main import app


def cw(*args: str) -> object:
    return CliRunner().invoke(app, ["ops", "storage", *args])


def test_json_tier_and_checkpoint() -> None:
    r = cw("--gpus", "16384", "--model", "llama-3.1-405b", "--json")
    assert r.exit_code == 0, r.output  # type: ignore[attr-defined]
    d = json.loads(r.stdout)  # type: ignore[attr-defined]
    assert d["units"] >= 1 and d["read_gbps"] > 0 and d["feasible"]
    assert d["checkpoint"]["mode"] == "async" and d["checkpoint"]["persist_s"] > 0
    assert d["job_mtbf_hours"] == pytest.approx(2.99, abs=0.05)


def test_mlperf_workload_reports_the_accelerators_fed() -> None:
    r = cw("--gpus", "64", "--mlperf-workload", "unet3d", "--system", "ddn-ai400x2t", "--json")
    d = json.loads(r.stdout)  # type: ignore[attr-defined]
    assert d["units"] == 2 and d["mlperf_workload"]["accelerators_supported"] == 76


def test_a_fixed_tier_too_small_is_reported_not_refused() -> None:
    r = cw("--gpus", "16384", "--model", "llama-3.1-405b", "--system", "ddn-ai400x2t",
           "--units", "1", "--checkpoint", "sync")
    assert r.exit_code == 0  # type: ignore[attr-defined]
    assert "binding" in r.stdout  # type: ignore[attr-defined]


def test_local_nvme_staging_and_small_files_in_json() -> None:
    r = cw("--gpus", "1024", "--model", "llama-3.1-70b", "--checkpoint", "sync",
           "--local-nvme", "dgx-8x3.84tb-u2-gen4", "--json")
    assert r.exit_code == 0, r.output  # type: ignore[attr-defined]
    d = json.loads(r.stdout)  # type: ignore[attr-defined]
    ls = d["local_staging"]
    assert ls["servers"] == 128 and ls["stage_s"] < ls["shared_stall_s"]
    r = cw("--gpus", "64", "--mlperf-workload", "cosmoflow", "--system",
           "aws-s3-standard-prefix", "--json")
    d = json.loads(r.stdout)  # type: ignore[attr-defined]
    assert d["data_read_per_unit"]["bound"] == "requests"
    assert d["units"] == d["units_by_need"]["read"] > 1


@pytest.mark.parametrize(("args", "flag"), [
    (("--gpus", "8", "--local-nvme", "minio-nvme-node"), "--local-nvme"),
    (("--gpus", "8", "--local-nvme", "nope"), "--local-nvme"),
    (("--gpus", "8", "--system", "dgx-8x3.84tb-u2-gen4"), "--system"),
    (("--gpus", "8", "--system", "nope"), "--system"),
    (("--gpus", "8", "--units", "2"), "--units"),
    (("--gpus", "8", "--checkpoint", "lazy"), "--checkpoint"),
    (("--gpus", "8", "--mlperf-workload", "bert"), "--mlperf-workload"),
    (("--gpus", "8", "--dataset-tb", "-1"), "--dataset-tb"),
    (("--gpus", "0",), "--gpus"),
    (("--gpus", "8", "--model", "no-such-model"), "--model"),
])
def test_bad_input_exits_2_naming_the_flag(args: tuple[str, ...], flag: str) -> None:
    r = cw(*args)
    assert r.exit_code == 2, r.output  # type: ignore[attr-defined]
    assert flag in r.output  # type: ignore[attr-defined]


def test_cosmoflow_says_the_hosts_per_file_cost_is_not_modelled() -> None:
    r = cw("--gpus", "256", "--mlperf-workload", "cosmoflow", "--json")
    notes = json.loads(r.stdout)["notes"]  # type: ignore[attr-defined]
    host = [n for n in notes if "per-file cost" in n]
    assert len(host) == 1 and "32 client servers" in host[0] and "56-1,084 GB/s" in host[0]
    r = cw("--gpus", "256", "--mlperf-workload", "unet3d", "--json")
    notes = json.loads(r.stdout)["notes"]  # type: ignore[attr-defined]
    assert not any("per-file cost" in n for n in notes)


def test_an_accelerator_mlperf_storage_does_not_emulate_is_said_so() -> None:
    """MLPerf Storage emulates A100 and H100 only: an L4 was read at the H100's rate with no
    word; it takes the nearer in peak (A100) and a note."""
    r = cw("--gpus", "64", "--server", "esc8000-e11-l4-8", "--mlperf-workload", "unet3d",
           "--json")
    d = json.loads(r.stdout)  # type: ignore[attr-defined]
    assert any("emulates A100 and H100 only" in n and "A100's data rate" in n
               for n in d["notes"])
