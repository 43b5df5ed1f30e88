"""Every numeric flag is bounded (cli/limits.py): a hostile value exits 2 within seconds with a
message naming the flag, never a traceback, a hang or a nonsense answer; and the JSON of a
seeded command differs between runs only under ``timings``."""

from __future__ import annotations

import time
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from clusterwright.cli import limits as lim
from clusterwright.cli.main import app
from tests.cli.helpers import json_ok, user_error

runner = CliRunner()

BIG = str(2**64)  # above int64: numpy and SQLite overflow on it
NETSIM = ("netsim", "--server", "dgx-h100", "--nodes", "2", "--collective", "allreduce",
          "--size-bytes", "1e6")
SERVE = ("serve", "estimate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--input-len",
         "512", "--output-len", "64", "--num-requests", "100")
SERVE_QPS = (*SERVE, "--qps", "4")
SERVE_PLAN = ("serve", "plan", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--input-len",
              "512", "--output-len", "64", "--ttft-p99", "1", "--tpot-p99", "0.1")
SCHED = ("ops", "schedule", "--synthetic", "--nodes", "8", "--jobs", "20", "--days", "1")
REL = ("ops", "reliability", "--gpus", "1024", "--days", "10")
MC = (*REL, "--monte-carlo", "--checkpoint-write-s", "60", "--trials", "50")
CKPT = ("ops", "checkpoint", "--checkpoint-write-s", "60", "--mtbf-hours", "10")
TRAIN = ("train", "estimate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--gpus", "16",
         "--tp", "8")
PLAN = ("train", "plan", "--model", "llama-3.1-8b", "--gpu", "h100-sxm")
FABRIC = ("fabric", "design", "--server", "dgx-h100", "--nodes", "16")
SIZE = ("size", "--model", "llama-3.1-8b")


def cw(*args: str) -> Result:
    return runner.invoke(app, list(args), env={"CLUSTERWRIGHT_CATALOG": None})


HOSTILE = [
    # seeds: numpy refused negative ones with a bare ValueError
    pytest.param((*NETSIM, "--seed", "-1"), "--seed", id="netsim-seed-negative"),
    pytest.param((*NETSIM, "--seed", str(2**32)), "--seed", id="netsim-seed-above-32-bit"),
    pytest.param((*SERVE_QPS, "--seed", "-1"), "--seed", id="serve-estimate-seed"),
    pytest.param((*SERVE_QPS, "--engine", "vllm", "--seed", "-1"), "--seed",
                 id="serve-engine-seed"),
    pytest.param((*SERVE_PLAN, "--qps", "4", "--seed", "-1"), "--seed", id="serve-plan-seed"),
    pytest.param((*SCHED, "--seed", "-1"), "--seed", id="schedule-seed"),
    pytest.param((*MC, "--seed", "-1"), "--seed", id="reliability-seed"),
    pytest.param((*TRAIN, "--fidelity", "sim", "--seed", "-1"), "--seed", id="train-sim-seed"),
    # integers above 2^63: numpy and array sizes overflowed
    pytest.param((*TRAIN[:6], "--gpus", BIG, "--tp", "8"), "--gpus", id="train-gpus-2^64"),
    pytest.param((*PLAN, "--gpus", BIG), "--gpus", id="plan-gpus-2^64"),
    pytest.param((*REL[:2], "--gpus", BIG, "--days", "10"), "--gpus", id="reliability-gpus"),
    pytest.param((*TRAIN, "--micro-batch", BIG), "--micro-batch", id="train-micro-batch"),
    pytest.param((*SIZE, "--training", "--micro-batch", BIG), "--micro-batch",
                 id="size-micro-batch"),
    pytest.param((*SIZE, "--batch", BIG), "--batch", id="size-batch"),
    pytest.param((*SERVE, "--qps", "4", "--num-requests", BIG), "--num-requests",
                 id="serve-num-requests-2^64"),
    pytest.param((*NETSIM, "--jobs", BIG), "--jobs", id="netsim-jobs-2^64"),
    pytest.param((*NETSIM, "--ranks", BIG), "--ranks", id="netsim-ranks-2^64"),
    pytest.param((*SCHED[:3], "--nodes", "8", "--jobs", BIG), "--jobs", id="schedule-jobs"),
    pytest.param((*MC, "--trials", BIG), "--trials", id="reliability-trials-2^64"),
    pytest.param((*SERVE_QPS, "--concurrency", BIG), "--concurrency", id="serve-concurrency"),
    pytest.param((*FABRIC[:4], "--nodes", BIG), "--nodes", id="fabric-nodes"),
    pytest.param(("ops", "power", "--server", "dgx-h100", "--nodes", BIG), "--nodes",
                 id="power-nodes"),
    # inf and nan
    pytest.param((*FABRIC, "--storage-gbps-per-gpu", "inf"), "--storage-gbps-per-gpu",
                 id="fabric-storage-inf"),
    pytest.param((*NETSIM[:-1], "inf"), "--size-bytes", id="netsim-size-inf"),
    pytest.param((*NETSIM[:-1], "nan"), "--size-bytes", id="netsim-size-nan"),
    pytest.param((*NETSIM, "--fail-at", "inf"), "--fail-at", id="netsim-fail-at-inf"),
    pytest.param((*SERVE, "--qps", "inf"), "--qps", id="serve-qps-inf"),
    pytest.param((*SERVE_QPS, "--ttft-slo", "nan"), "--ttft-slo", id="serve-slo-nan"),
    pytest.param((*SERVE_QPS, "--length-dist", "lognormal", "--length-cv", "inf"),
                 "--length-cv", id="serve-length-cv-inf"),
    pytest.param((*CKPT[:4], "--mtbf-hours", "inf"), "--mtbf-hours", id="checkpoint-mtbf-inf"),
    pytest.param((*SCHED, "--repair-h", "inf"), "--repair-h", id="schedule-repair-inf"),
    pytest.param((*PLAN, "--tokens", "1e30", "--deadline-days", "10"), "--tokens",
                 id="plan-tokens"),
    pytest.param((*PLAN, "--tokens", "1e12", "--deadline-days", "inf"), "--deadline-days",
                 id="plan-deadline-inf"),
    # work that grows with a number: refused up front, not run for minutes
    pytest.param((*SERVE, "--qps", "1e20"), "--qps", id="serve-qps-1e20"),
    pytest.param((*SERVE_PLAN, "--qps", "1e20"), "--qps", id="serve-plan-qps-1e20"),
    pytest.param((*SERVE_PLAN, "--qps", "4", "--num-requests", "100000"), "--num-requests",
                 id="serve-plan-requests"),
    pytest.param((*SERVE_QPS, "--replicas", "100000"), "--replicas", id="serve-replicas"),
    pytest.param((*SERVE_QPS, "--num-requests", "1000000"), "--num-requests",
                 id="serve-requests-1e6"),
    pytest.param((*SCHED[:-1], "1e30"), "--days", id="schedule-days-1e30"),
    pytest.param((*SCHED, "--failure-rate", "1e30"), "--failure-rate", id="schedule-rate-1e30"),
    pytest.param(("ops", "schedule", "--synthetic", "--nodes", "4096", "--jobs", "20", "--days",
                  "365", "--failure-rate", "0.5"), "--failure-rate", id="schedule-failures"),
    pytest.param((*REL[:4], "--days", "1e30"), "--days", id="reliability-days-1e30"),
    pytest.param((*MC[:-2], "--trials", "1000000"), "--trials", id="reliability-trials"),
    pytest.param(("ops", "reliability", "--gpus", "16384", "--days", "365", "--monte-carlo",
                  "--checkpoint-write-s", "60", "--trials", "100000"), "--trials",
                 id="reliability-trials-x-failures"),
    pytest.param((*MC, "--hot-spares", str(10**12)), "--hot-spares", id="reliability-spares"),
    pytest.param((*CKPT, "--gpus", "8", "--hot-spares", str(10**12)), "--hot-spares",
                 id="checkpoint-spares"),
    pytest.param((*REL, "--radix", BIG), "--radix", id="reliability-radix"),
    pytest.param((*NETSIM, "--qps", "1000000"), "--qps", id="netsim-qps"),
    pytest.param((*NETSIM, "--jobs", "64"), "--jobs", id="netsim-jobs"),
    pytest.param(("netsim", "--server", "dgx-h100", "--nodes", "16385", "--collective",
                  "allreduce", "--size-bytes", "1e6"), "--nodes", id="netsim-gpus"),
    pytest.param(("netsim", "--server", "dgx-h100", "--nodes", "512", "--collective",
                  "alltoall", "--size-bytes", "1e6", "--ranks", "1024", "--qps", "32"), "--qps",
                 id="netsim-flows-x-qps"),
    pytest.param(("train", "estimate", "--model", "llama-3.1-70b", "--gpu", "h100-sxm",
                  "--gpus", "131072", "--tp", "8", "--pp", "4", "--global-batch", "65536",
                  "--fidelity", "sim"), "--gpus", id="train-sim-too-large"),
    pytest.param((*PLAN, "--gpus", "8", "--recheck", BIG), "--recheck", id="plan-recheck"),
    # nonsense accepted before
    pytest.param((*FABRIC, "--su-hosts", "1000"), "--su-hosts", id="fabric-su-hosts"),
    pytest.param((*FABRIC[:4], "--nodes", "65536"), "--nodes", id="fabric-1024-units"),
    pytest.param(("ops", "power", "--server", "dgx-h100", "--nodes", "65536"), "--nodes",
                 id="power-1024-units"),
    pytest.param((*FABRIC, "--out", "/proc/self/x"), "--out", id="fabric-out-proc"),
    pytest.param(("fabric", "verify", "--timeout", "inf"), "--timeout", id="verify-timeout"),
    pytest.param(("ops", "tco", "--server", "dgx-h100", "--nodes", "4", "--years", "1e-300"),
                 "--years", id="tco-years-tiny"),
    pytest.param(("ops", "tco", "--server", "dgx-h100", "--nodes", "4", "--utilization",
                  "1e-300"), "--utilization", id="tco-utilization-tiny"),
    pytest.param(("ops", "tco", "--server", "dgx-h100", "--nodes", "4",
                  "--tokens-per-s-per-gpu", "1e-300"), "--tokens-per-s-per-gpu",
                 id="tco-tokens-tiny"),
    pytest.param((*SERVE, "--qps", "1e-300"), "--qps", id="serve-qps-tiny"),
    pytest.param((*TRAIN, "--server", ""), "--server", id="train-server-empty"),
    pytest.param((*TRAIN, "--stack", " "), "--stack", id="train-stack-blank"),
    pytest.param((*SERVE_QPS, "--speculative", ""), "--speculative", id="serve-spec-empty"),
    pytest.param((*SERVE_PLAN, "--qps", "4", "--engine", ""), "--engine",
                 id="serve-plan-engine-empty"),
    pytest.param((*NETSIM[:4], "16", *NETSIM[5:], "--su-hosts", "1000"), "--su-hosts",
                 id="netsim-su-hosts"),
    pytest.param((*SIZE, "--context", str(10**20)), "--context", id="size-context-1e20"),
    pytest.param((*SIZE, "--context", "1000000"), "--context", id="size-context-over-model"),
    pytest.param(("ops", "power", "--server", "dgx-h100", "--nodes", "4", "--pue", "1e30"),
                 "--pue", id="power-pue"),
    pytest.param(("ops", "tco", "--server", "dgx-h100", "--nodes", "4", "--pue", "1e30"),
                 "--pue", id="tco-pue"),
    pytest.param(("ops", "tco", "--server", "dgx-h100", "--nodes", "4",
                  "--electricity-usd-per-kwh", "1e300"), "--electricity-usd-per-kwh",
                 id="tco-electricity"),
    pytest.param((*SCHED, "--upgrade-batch", "9"), "--upgrade-batch", id="schedule-upgrade"),
    # ids checked wherever they are accepted, never ignored
    pytest.param((*REL, "--monte-carlo", "--checkpoint-write-s", "60", "--model", "nope"),
                 "--model", id="reliability-model-unknown"),
    pytest.param((*REL, "--model", "llama-3.1-8b"), "--model", id="reliability-model-unused"),
    pytest.param((*CKPT, "--model", "nope"), "--model", id="checkpoint-model-without-gpus"),
    pytest.param((*CKPT, "--gpus", "8", "--model", "nope"), "--model",
                 id="checkpoint-model-unknown"),
    pytest.param((*CKPT, "--gpu", "nope"), "--gpu", id="checkpoint-gpu-without-gpus"),
    pytest.param((*CKPT, "--server", "nope"), "--server", id="checkpoint-server-without-gpus"),
    pytest.param((*CKPT, "--gpus", "8", "--gpu", "nope"), "--gpu", id="checkpoint-gpu-unknown"),
    # files that never end
    pytest.param(("size", "--model", "/dev/zero"), "--model", id="size-model-dev-zero"),
    pytest.param(("ops", "schedule", "/dev/zero"), "not a regular file",
                 id="schedule-trace-dev-zero"),
]


@pytest.mark.parametrize(("args", "flag"), HOSTILE)
def test_hostile_values_exit_2_quickly_naming_the_flag(args: tuple[str, ...], flag: str) -> None:
    start = time.monotonic()
    err = user_error(cw(*args, "--json"))
    # A hang guard, not a benchmark: each of these ran for minutes or overflowed before.
    assert time.monotonic() - start < 20.0
    assert flag in err


@pytest.mark.parametrize("args", [
    (*TRAIN[:6], "--gpus", "1e20", "--tp", "8"),  # not an integer
    (*NETSIM, "--seed", "abc"),
    (*SERVE_QPS, "--replicas", "1e20"),
])
def test_typer_parse_errors_stay_exit_2(args: tuple[str, ...]) -> None:
    r = cw(*args)
    assert r.exit_code == 2 and "Traceback" not in r.output


def test_a_bound_names_its_range_and_reason() -> None:
    err = user_error(cw(*NETSIM, "--seed", "-1"))
    assert "--seed: must be between 0 and 4,294,967,295" in err and "got -1" in err
    assert lim.SEED.holds(0) and lim.SEED.holds(2**32 - 1) and not lim.SEED.holds(2**32)
    assert not lim.QPS.holds(0.0) and lim.QPS.holds(1e6) and not lim.QPS.holds(float("nan"))


def test_values_at_the_bounds_are_accepted() -> None:
    json_ok(cw(*NETSIM, "--seed", str(2**32 - 1), "--json"))
    json_ok(cw("ops", "tco", "--server", "dgx-h100", "--nodes", "4", "--pue", "3", "--json"))
    json_ok(cw(*FABRIC, "--su-hosts", "64", "--json"))  # one full leaf per rail


def test_wide_lognormal_lengths_give_positive_throughput() -> None:
    # --length-cv inf reported -2.5e19 tokens/s: a length beyond int64 wrapped negative.
    d = json_ok(cw(*SERVE_QPS, "--length-dist", "lognormal", "--length-cv", "10", "--json"))
    assert 0 < d["throughput_tokens_per_s"] < 1e9


# --- wall-clock fields live under `timings` only -----------------------------------------

def _walk_keys(obj: Any) -> list[str]:
    if isinstance(obj, dict):
        return [k for k, v in obj.items() for k in (k, *_walk_keys(v))]
    if isinstance(obj, list):
        return [k for v in obj for k in _walk_keys(v)]
    return []


SEEDED = [
    pytest.param((*NETSIM, "--seed", "7", "--routing", "ecmp"), {"build_wall_s", "sim_wall_s",
                                                                "events_per_s"}, id="netsim"),
    pytest.param((*NETSIM[:4], "16", *NETSIM[5:], "--ranks", "32", "--jobs", "2",
                  "--placement", "random", "--seed", "3"),
                 {"build_wall_s", "sim_wall_s", "events_per_s"}, id="netsim-jobs"),
    pytest.param((*SERVE, "--qps", "8", "--seed", "5", "--length-dist", "lognormal"),
                 {"sim_wall_s"}, id="serve-estimate"),
    pytest.param((*SERVE, "--concurrency", "8", "--engine", "vllm", "--seed", "5"),
                 {"sim_wall_s"}, id="serve-estimate-engine"),
    pytest.param((*SCHED, "--seed", "11", "--failure-rate", "0.01"),
                 {"sim_wall_s", "events_per_s"}, id="ops-schedule"),
    pytest.param((*MC, "--seed", "3"), None, id="ops-reliability"),
    pytest.param((*TRAIN, "--fidelity", "sim", "--seed", "2"), {"sim_wall_s"},
                 id="train-estimate-sim"),
]


@pytest.mark.parametrize(("args", "timings"), SEEDED)
def test_seeded_json_differs_only_in_timings(args: tuple[str, ...],
                                             timings: set[str] | None) -> None:
    one, two = (json_ok(cw(*args, "--json")) for _ in range(2))
    if timings is None:
        assert "timings" not in one  # nothing measured: the whole object repeats
    else:
        assert set(one.pop("timings")) == timings
        two.pop("timings")
    assert not [k for k in _walk_keys(one) if "wall" in k or "elapsed" in k]
    assert one == two
