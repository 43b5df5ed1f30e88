"""`clusterwright serve estimate` and `serve plan`: the JSON contract and bad input. The shipped
catalog has no serving calibration yet, so a `--catalog` file overrides the H100 stack with a
test one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner, Result

from clusterwright.catalog.registry import Catalog
from clusterwright.cli.main import app
from tests.cli.helpers import json_ok, user_error

ESTIMATE_KEYS = ("ttft_p50_s", "ttft_p99_s", "tpot_p50_s", "tpot_p99_s", "e2e_mean_s",
                 "e2e_p99_s", "throughput_tokens_per_s", "requests_per_s", "kv_cache_utilization")
PLAN_KEYS = ("best", "pareto", "cost_per_million_tokens_usd")
BEST_KEYS = ("gpu", "tp", "replicas", "gpus")

runner = CliRunner()


@pytest.fixture(scope="module")
def serving_catalog(catalog: Catalog, tmp_path_factory: pytest.TempPathFactory) -> Path:
    stack = catalog.stack_for_gpu("h100-sxm").model_dump(mode="json")
    stack["serving"] = {"engine": "test", "decode_bandwidth_efficiency": 0.8,
                        "step_overhead_s": 0.004, "calibration": "test"}
    stack["override"] = True
    path = tmp_path_factory.mktemp("catalog") / "serving.yaml"
    path.write_text(yaml.safe_dump({"stacks": [stack]}), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def cw(serving_catalog: Path) -> Any:
    def run(*args: str) -> Result:
        return runner.invoke(app, ["--catalog", str(serving_catalog), "serve", *args],
                             env={"CLUSTERWRIGHT_CATALOG": None})
    return run


BASE = ("estimate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--input-len", "512",
        "--output-len", "64", "--num-requests", "100")


def test_estimate_json_has_the_contract_keys(cw: Any) -> None:
    d = json_ok(cw(*BASE, "--qps", "4", "--json"))
    assert set(ESTIMATE_KEYS) <= set(d)
    assert d["ttft_p99_s"] >= d["ttft_p50_s"] > 0
    assert d["memory"]["kv_blocks"] == 25845


def test_estimate_closed_loop_and_replicas(cw: Any) -> None:
    d = json_ok(cw(*BASE, "--concurrency", "8", "--replicas", "2", "--router",
                   "least_outstanding", "--json"))
    assert d["gpus"] == 2 and d["concurrency"] == 8 and d["qps"] is None


def test_estimate_renders_a_table(cw: Any) -> None:
    r = cw(*BASE, "--qps", "4")
    assert r.exit_code == 0, r.output
    assert "TTFT" in r.stdout and "KV cache" in r.stdout


PLAN = ("plan", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--qps", "20", "--input-len",
        "512", "--output-len", "64", "--tpot-p99", "0.05", "--num-requests", "200")


def test_plan_json_has_the_contract_keys(cw: Any) -> None:
    d = json_ok(cw(*PLAN, "--ttft-p99", "1", "--json"))
    assert set(PLAN_KEYS) <= set(d)
    assert d["feasible"] is True
    assert set(BEST_KEYS) <= set(d["best"])
    assert d["best"]["replicas"] * d["best"]["qps_per_replica"] >= 20
    assert d["cost_per_million_tokens_usd"] > 0
    assert d["pareto"]


def test_plan_with_an_impossible_slo_is_an_explicit_infeasible_result(cw: Any) -> None:
    d = json_ok(cw(*PLAN, "--ttft-p99", "0.0001", "--json"))
    assert d["feasible"] is False and d["best"] is None
    assert d["best_achievable"]["ttft_p99_s"] > 0.0001
    r = cw(*PLAN, "--ttft-p99", "0.0001")
    assert r.exit_code == 0 and "infeasible" in r.stdout


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (("--qps", "0"), "--qps"),
        (("--qps", "-1"), "--qps"),
        ((), "--qps/--concurrency"),
        (("--qps", "1", "--concurrency", "2"), "--qps/--concurrency"),
        (("--qps", "1", "--model", "llama-3.1-70b"), "--tp: llama-3.1-70b (bf16) does not fit"),
        (("--qps", "1", "--gpu", "h999"), "--gpu"),
        (("--qps", "1", "--gpu", "b200"), "--gpu"),
        (("--qps", "1", "--model", "no-such-model"), "--model"),
        (("--qps", "1", "--input-len", "0"), "--input-len"),
        (("--qps", "1", "--output-len", "-5"), "--output-len"),
        (("--qps", "1", "--input-len", "200000"), "--input-len"),
        (("--qps", "1", "--tp", "16"), "--tp"),
        (("--qps", "1", "--tp", "3"), "--tp"),
        (("--qps", "1", "--server", "nope"), "--server"),
        (("--qps", "1", "--router", "random"), "--router"),
        (("--qps", "1", "--length-dist", "zipf"), "--length-dist"),
        (("--qps", "1", "--kv-precision", "int4"), "--kv-precision"),
    ],
)
def test_estimate_bad_input_exits_2_naming_the_flag(cw: Any, args: tuple[str, ...],
                                                    flag: str) -> None:
    assert flag in user_error(cw(*BASE, *args, "--json"))


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (("--qps", "0"), "--qps"),
        (("--ttft-p99", "0"), "--ttft-p99"),
        (("--input-len", "0"), "--input-len"),
        (("--gpu", "b200"), "--gpu"),
        (("--gpu", "h999"), "--gpu"),
        (("--model", "llama-3.1-405b"), "--model"),
    ],
)
def test_plan_bad_input_exits_2_naming_the_flag(cw: Any, args: tuple[str, ...],
                                                flag: str) -> None:
    assert flag in user_error(cw(*PLAN, "--ttft-p99", "1", *args, "--json"))



MOE = ("estimate", "--model", "mixtral-8x7b", "--gpu", "h100-sxm", "--tp", "2", "--input-len",
       "512", "--output-len", "32", "--num-requests", "50", "--qps", "2")


def test_estimate_reports_expert_parallelism(cw: Any) -> None:
    d = json_ok(cw(*MOE, "--ep", "2", "--json"))
    assert d["ep"] == 2 and d["ep_comm"] == "allreduce" and d["gpus"] == 2
    assert json_ok(cw(*MOE, "--json"))["ep"] == 1
    r = cw(*MOE, "--ep", "2", "--ep-comm", "alltoall")
    assert r.exit_code == 0, r.output
    assert "ep 2 (alltoall)" in r.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--model", "llama-3.1-8b", "--ep", "2"), "--ep: llama-3.1-8b is a dense model"),
        (("--ep", "4"), "--ep: 4 does not divide tp 2"),
        (("--tp", "6", "--ep", "6"), "--tp"),  # 32 heads: TP 6 is refused first
        (("--ep", "0"), "--ep"),
        (("--ep", "2", "--ep-comm", "ring"), "--ep-comm"),
        (("--ep-comm", "alltoall"), "--ep-comm"),
    ],
)
def test_bad_expert_parallelism_exits_2_naming_the_flag(cw: Any, args: tuple[str, ...],
                                                        message: str) -> None:
    assert message in user_error(cw(*MOE, *args, "--json"))
