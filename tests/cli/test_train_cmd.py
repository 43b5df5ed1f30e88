"""`clusterwright train estimate` and `train plan`: the JSON contract, the physics the numbers
must obey (breakdowns sum, memory fits, the plan beats hand-picked layouts), and bad input."""

from __future__ import annotations

import itertools
import json
import math
import re
import subprocess
import sys
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from clusterwright.cli.main import app
from tests.cli.helpers import json_ok, user_error

ESTIMATE_KEYS = (
    "step_time_s",
    "tokens_per_s",
    "tflops_per_gpu",
    "mfu",
    "hfu",
    "memory_per_gpu_gb",
    "micro_batch",
    "breakdown",
)
BREAKDOWN_KEYS = (
    "compute_s",
    "tp_comm_s",
    "pp_comm_s",
    "pp_bubble_s",
    "dp_comm_exposed_s",
    "cp_comm_s",
    "ep_comm_s",
    "optimizer_s",
    "straggler_s",
    "link_wait_s",
    "other_s",
)
CONFIG_KEYS = (
    "gpu",
    "gpus",
    "tp",
    "pp",
    "dp",
    "cp",
    "ep",
    "micro_batch",
    "interleave",
    "zero",
    "recompute",
    "sequence_parallel",
)
PLAN_KEYS = (
    "best",
    "top",
    "pareto",
    "time_to_train_days",
    "gpu_hours",
    "candidates_evaluated",
    "rejected",
)

runner = CliRunner()


def cw(*args: str) -> Result:
    return runner.invoke(app, list(args), env={"CLUSTERWRIGHT_CATALOG": None})


def ok_json(*args: str) -> dict[str, Any]:
    return json_ok(cw(*args, "--json"))


def estimate(*args: str) -> dict[str, Any]:
    return ok_json("train", "estimate", *args)


def plan(*args: str) -> dict[str, Any]:
    return ok_json("train", "plan", *args)


def try_estimate(*args: str) -> dict[str, Any] | None:
    """The estimate, or None when the layout is rejected (exit 2, e.g. does not fit)."""
    r = cw("train", "estimate", *args, "--json")
    if r.exit_code == 2:
        user_error(r)
        return None
    assert r.exit_code == 0, r.output
    return dict(json.loads(r.stdout))


def gpu_spec(gpu: str) -> dict[str, Any]:
    return ok_json("catalog", "show", gpu)


def assert_breakdown_sums(d: dict[str, Any]) -> None:
    parts = d["breakdown"]
    assert set(BREAKDOWN_KEYS) <= set(parts)
    for k in BREAKDOWN_KEYS:
        assert parts[k] >= 0, k
    assert sum(parts[k] for k in BREAKDOWN_KEYS) == pytest.approx(d["step_time_s"], rel=1e-9)


def assert_layout_is_sane(d: dict[str, Any], memory_gb: float) -> None:
    assert d["tp"] * d["pp"] * d["dp"] * d["cp"] == d["gpus"]
    assert 0 < d["mfu"] < 1
    assert d["mfu"] <= d["hfu"] + 1e-12
    assert d["memory_per_gpu_gb"] <= memory_gb
    assert d["fits"] is True
    assert_breakdown_sums(d)


# Llama 2 7B on one 8 x H100 server, pure data parallelism with ZeRO-1.
E7B = ("--model", "llama-2-7b", "--gpu", "h100-sxm", "--gpus", "8", "--zero", "1")
E7B += ("--global-batch", "1024")
# Llama 3.1 70B, 64 H100s, 8k context, 512 x 8k = 4M tokens per step.
L70 = ("--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--gpus", "64")
L70 += ("--seq-len", "8192", "--global-batch", "512")


@pytest.fixture(scope="module")
def h100() -> dict[str, Any]:
    return gpu_spec("h100-sxm")


@pytest.fixture(scope="module")
def est_7b() -> dict[str, Any]:
    return estimate(*E7B)


@pytest.fixture(scope="module")
def plan_7b() -> dict[str, Any]:
    return plan("--model", "llama-2-7b", "--gpu", "h100-sxm", "--gpus", "8", "--tokens", "1e11")


@pytest.fixture(scope="module")
def plan_70b() -> dict[str, Any]:
    return plan(*L70)


DEADLINE = ("--model", "llama-2-7b", "--tokens", "1e12", "--deadline-days", "14")


@pytest.fixture(scope="module")
def deadline_h100() -> dict[str, Any]:
    return plan(*DEADLINE, "--gpu", "h100-sxm")


@pytest.fixture(scope="module")
def deadline_choose() -> dict[str, Any]:
    return plan(*DEADLINE, "--gpu", "choose")


# ------------------------------------------------------------------- train estimate


def test_estimate_json_has_contract_keys_and_breakdown_sums_to_step_time(
    est_7b: dict[str, Any], h100: dict[str, Any]
) -> None:
    for key in ESTIMATE_KEYS:
        assert key in est_7b, key
    assert est_7b["gpus"] == 8
    assert (est_7b["tp"], est_7b["pp"], est_7b["dp"]) == (1, 1, 8)
    assert est_7b["step_time_s"] > 0
    assert_layout_is_sane(est_7b, h100["memory_gb"])
    # Pure data parallelism inside one server: no tensor, pipeline, context or expert traffic.
    b = est_7b["breakdown"]
    for k in ("tp_comm_s", "pp_comm_s", "pp_bubble_s", "cp_comm_s", "ep_comm_s"):
        assert b[k] == 0, k
    assert b["compute_s"] > 0.9 * est_7b["step_time_s"]


def test_estimate_throughput_mfu_and_memory_are_consistent(
    est_7b: dict[str, Any], h100: dict[str, Any]
) -> None:
    d = est_7b
    tokens_per_step = 1024 * 4096
    assert d["tokens_per_s"] == pytest.approx(tokens_per_step / d["step_time_s"], rel=1e-9)
    # MFU is achieved model TFLOP/s per GPU over the dense bf16 peak.
    assert d["mfu"] == pytest.approx(d["tflops_per_gpu"] / h100["peak_tflops"]["bf16"], rel=1e-6)
    # Training FLOPs of a dense transformer are at least 6 x params x tokens.
    params = ok_json("size", "--model", "llama-2-7b")["params"]
    model_flops = d["tflops_per_gpu"] * 1e12 * d["step_time_s"] * d["gpus"]
    assert model_flops >= 6 * params * tokens_per_step * 0.999
    # The parts of the memory add up to the per-GPU total.
    assert sum(d["memory_gb"].values()) == pytest.approx(d["memory_per_gpu_gb"], rel=1e-9)


def test_estimate_with_tp_and_pp_reports_their_communication_and_bubble(
    h100: dict[str, Any],
) -> None:
    d = estimate(*L70, "--tp", "8", "--pp", "8", "--sequence-parallel")
    assert (d["tp"], d["pp"], d["dp"]) == (8, 8, 1)
    assert d["sequence_parallel"] is True
    assert_layout_is_sane(d, h100["memory_gb"])
    b = d["breakdown"]
    assert b["tp_comm_s"] > 0
    assert b["pp_comm_s"] > 0
    assert b["pp_bubble_s"] > 0
    assert b["ep_comm_s"] == 0


def test_estimate_with_context_and_expert_parallelism_reports_their_communication(
    h100: dict[str, Any],
) -> None:
    moe = estimate(
        "--model",
        "mixtral-8x7b",
        "--gpu",
        "h100-sxm",
        "--gpus",
        "32",
        "--pp",
        "2",
        "--ep",
        "8",
        "--zero",
        "1",
        "--global-batch",
        "256",
    )
    assert moe["ep"] == 8
    assert_layout_is_sane(moe, h100["memory_gb"])
    assert moe["breakdown"]["ep_comm_s"] > 0
    # A context-parallel ring of 8 x TP 8 crosses servers: its KV passing is not all hidden.
    cp = estimate(*L70, "--tp", "8", "--cp", "8", "--sequence-parallel", "--zero", "3")
    assert cp["cp"] == 8
    assert_layout_is_sane(cp, h100["memory_gb"])
    assert cp["breakdown"]["cp_comm_s"] > 0


def test_estimate_picks_the_fastest_micro_batch_that_fits_and_reports_it(
    est_7b: dict[str, Any],
) -> None:
    auto = est_7b
    assert auto["micro_batch"] in (1, 2, 4, 8, 16, 32)
    tried: dict[int, dict[str, Any] | None] = {
        mb: try_estimate(*E7B, "--micro-batch", str(mb)) for mb in (1, 2, 4, 8, 16)
    }
    fitting = {mb: d for mb, d in tried.items() if d is not None}
    # Some micro-batch sizes run out of memory, so the choice is a real one.
    assert len(fitting) < len(tried)
    assert auto["micro_batch"] in fitting
    for mb, d in fitting.items():
        assert d["micro_batch"] == mb
        assert d["step_time_s"] >= auto["step_time_s"] * (1 - 1e-9), mb
    assert fitting[auto["micro_batch"]]["step_time_s"] == pytest.approx(auto["step_time_s"])


def test_full_recompute_costs_hardware_flops_that_hfu_counts_and_mfu_does_not() -> None:
    base = (*L70, "--tp", "8", "--pp", "8", "--sequence-parallel", "--micro-batch", "1")
    none = estimate(*base)
    full = estimate(*base, "--recompute", "full")
    assert none["hfu"] == pytest.approx(none["mfu"])
    assert full["hfu"] > 1.2 * full["mfu"]
    assert full["step_time_s"] > none["step_time_s"]
    assert full["memory_per_gpu_gb"] < none["memory_per_gpu_gb"]
    # Same model work either way: model TFLOPs per step are equal.
    work = [d["tflops_per_gpu"] * d["step_time_s"] for d in (none, full)]
    assert work[0] == pytest.approx(work[1], rel=1e-9)


def test_estimate_of_a_layout_that_does_not_fit_lists_memory_parts_and_a_flag_that_fixes_it(
    h100: dict[str, Any],
) -> None:
    args = (*L70, "--tp", "8", "--pp", "8")
    err = user_error(cw("train", "estimate", *args, "--json"))
    assert "does not fit" in err
    m = re.search(r"([\d.]+) GB per GPU > ([\d.]+) GB", err)
    assert m, err
    assert float(m.group(1)) > float(m.group(2)) == h100["memory_gb"]
    for part in ("weights", "gradients", "optimizer", "activations"):
        assert re.search(rf"{part} [\d.]+", err), part
    assert "--sequence-parallel" in err
    # The suggested flag really makes it fit.
    fixed = estimate(*args, "--sequence-parallel")
    assert fixed["memory_per_gpu_gb"] <= h100["memory_gb"]


def test_estimate_of_70b_on_one_server_without_recompute_says_how_to_make_it_fit() -> None:
    args = ("--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--gpus", "8", "--tp", "8")
    args += ("--seq-len", "8192")
    for mode in (("--json",), ()):
        err = user_error(cw("train", "estimate", *args, *mode))
        assert "does not fit" in err
        assert re.search(r"optimizer [\d.]+", err)
        assert "GB" in err
        assert "--tp" in err
        assert "--pp" in err


def test_estimate_matches_plan_best_when_given_its_layout(plan_70b: dict[str, Any]) -> None:
    b = plan_70b["best"]
    args = [*L70, "--tp", str(b["tp"]), "--pp", str(b["pp"]), "--cp", str(b["cp"])]
    args += ["--ep", str(b["ep"]), "--interleave", str(b["interleave"])]
    args += ["--zero", str(b["zero"]), "--micro-batch", str(b["micro_batch"])]
    args += ["--recompute", b["recompute"]]
    if b["sequence_parallel"]:
        args.append("--sequence-parallel")
    d = estimate(*args)
    assert d["step_time_s"] == pytest.approx(b["step_time_s"], rel=1e-9)
    assert d["memory_per_gpu_gb"] == pytest.approx(b["memory_per_gpu_gb"], rel=1e-9)
    assert d["breakdown"] == pytest.approx(b["breakdown"], rel=1e-9)


def test_estimate_human_output_shows_layout_and_breakdown() -> None:
    r = cw("train", "estimate", *E7B)
    assert r.exit_code == 0, r.output
    assert r.stderr == ""
    assert "8 x h100-sxm" in r.stdout
    assert "MFU" in r.stdout
    assert "compute" in r.stdout


# ------------------------------------------------------------------------ train plan


def test_plan_json_has_contract_keys(plan_7b: dict[str, Any], h100: dict[str, Any]) -> None:
    d = plan_7b
    for key in PLAN_KEYS:
        assert key in d, key
    for key in (*CONFIG_KEYS, *ESTIMATE_KEYS):
        assert key in d["best"], key
    assert d["best"]["gpus"] == 8
    assert_layout_is_sane(d["best"], h100["memory_gb"])
    assert isinstance(d["top"], list) and d["top"]
    assert isinstance(d["pareto"], list) and d["pareto"]
    assert isinstance(d["candidates_evaluated"], int)
    assert d["candidates_evaluated"] >= len(d["top"])


def test_plan_rejections_are_counted_by_reason(
    plan_7b: dict[str, Any], plan_70b: dict[str, Any]
) -> None:
    for d in (plan_7b, plan_70b):
        rejected = d["rejected"]
        assert rejected, "a real search rejects something"
        for reason, n in rejected.items():
            assert isinstance(reason, str) and reason.strip()
            assert isinstance(n, int) and n > 0, reason
    # 7B with Adam in bf16 is ~112 GB of state: without ZeRO it does not fit in 80 GB.
    assert plan_7b["rejected"]["does not fit in memory"] > 0
    assert plan_7b["best"]["zero"] > 0


def test_plan_best_fits_and_top_is_sorted_by_step_time(
    plan_70b: dict[str, Any], h100: dict[str, Any]
) -> None:
    d = plan_70b
    top = d["top"]
    assert top[0] == d["best"]
    steps = [t["step_time_s"] for t in top]
    assert steps == sorted(steps)
    for t in top:
        assert t["gpus"] == 64
        assert t["global_batch"] == 512
        assert_layout_is_sane(t, h100["memory_gb"])
    assert d["time_to_train_days"] is None
    assert d["gpu_hours"] is None


HAND_LAYOUTS = [
    ("--tp", "8", "--pp", "8", "--sequence-parallel"),
    ("--tp", "8", "--pp", "8", "--sequence-parallel", "--interleave", "2"),
    ("--tp", "8", "--pp", "4", "--sequence-parallel", "--recompute", "selective"),
    ("--tp", "8", "--pp", "2", "--cp", "2", "--sequence-parallel", "--zero", "1"),
    ("--tp", "4", "--pp", "4", "--sequence-parallel", "--recompute", "full"),
    ("--tp", "8", "--cp", "8", "--sequence-parallel", "--zero", "3"),
    ("--tp", "2", "--cp", "4", "--zero", "3", "--recompute", "selective"),
    ("--cp", "4", "--zero", "3"),
]


def test_plan_best_is_at_least_as_fast_as_hand_picked_layouts(plan_70b: dict[str, Any]) -> None:
    best = plan_70b["best"]["step_time_s"]
    ran = 0
    for layout in HAND_LAYOUTS:
        d = try_estimate(*L70, *layout)
        if d is None:
            continue
        ran += 1
        assert best <= d["step_time_s"] * (1 + 1e-9), layout
    assert ran >= 5


def test_plan_best_is_at_least_as_fast_as_a_zero2_layout() -> None:
    args = ("--model", "llama-2-13b", "--gpu", "a100-80gb-sxm", "--gpus", "32")
    args += ("--global-batch", "256")
    zero2 = estimate(*args, "--tp", "2", "--zero", "2")
    assert zero2["fits"] is True
    best = plan(*args)["best"]
    assert best["step_time_s"] <= zero2["step_time_s"] * (1 + 1e-9)


def test_plan_with_tokens_gives_time_to_train_gpu_hours_and_cost(
    plan_7b: dict[str, Any],
) -> None:
    d = plan_7b
    b = d["best"]
    days = d["time_to_train_days"]
    # Failure-free steps, then evaluation and failures on top (production time).
    assert d["compute_days"] == pytest.approx(1e11 / b["tokens_per_s"] / 86400, rel=1e-9)
    prod = d["production"]
    assert 0.5 < prod["ettr"] < 1.0 and prod["eval_fraction"] > 0
    assert prod["days"] == pytest.approx(days, rel=1e-12)
    assert days > d["compute_days"] * (1 + prod["eval_fraction"])
    assert days < d["compute_days"] * (1 + prod["eval_fraction"]) / prod["ettr"] * 1.01
    assert d["gpu_hours"] == pytest.approx(days * 24 * b["gpus"], rel=0.01)
    assert d["usd_per_gpu_hour"] > 0
    assert d["cost_usd"] == pytest.approx(d["gpu_hours"] * d["usd_per_gpu_hour"], rel=1e-9)


def test_plan_pareto_front_trades_gpus_for_time(deadline_h100: dict[str, Any]) -> None:
    front = deadline_h100["pareto"]
    assert len(front) >= 2
    gpus = [p["gpus"] for p in front]
    steps = [p["step_time_s"] for p in front]
    days = [p["time_to_train_days"] for p in front]
    assert gpus == sorted(set(gpus))
    assert all(a > b for a, b in itertools.pairwise(steps))
    assert all(a > b for a, b in itertools.pairwise(days))
    for p in front:
        assert p["gpu_hours"] == pytest.approx(p["time_to_train_days"] * 24 * p["gpus"], rel=0.01)
    best = deadline_h100["best"]
    assert front[-1]["gpus"] == best["gpus"]
    assert front[-1]["step_time_s"] == pytest.approx(best["step_time_s"])


def test_plan_with_a_deadline_finds_the_smallest_gpu_count_that_meets_it(
    deadline_h100: dict[str, Any], h100: dict[str, Any]
) -> None:
    d = deadline_h100
    n = d["best"]["gpus"]
    assert d["meets_deadline"] is True
    assert d["time_to_train_days"] <= 14
    assert d["gpu_hours"] == pytest.approx(d["time_to_train_days"] * 24 * n, rel=0.01)
    assert d["cost_usd"] == pytest.approx(d["gpu_hours"] * d["usd_per_gpu_hour"], rel=1e-9)
    assert_layout_is_sane(d["best"], h100["memory_gb"])
    # Whole servers fewer than the answer miss the deadline.
    assert n % 8 == 0
    for fewer in sorted({n // 2, n - 16, n - 8}):
        smaller = plan(
            "--model", "llama-2-7b", "--gpu", "h100-sxm", "--gpus", str(fewer), "--tokens", "1e12"
        )
        assert smaller["time_to_train_days"] > 14, fewer


def test_plan_choose_with_a_deadline_reports_every_gpu_type_with_its_cost(
    deadline_choose: dict[str, Any], deadline_h100: dict[str, Any]
) -> None:
    by_gpu = deadline_choose["by_gpu"]
    ids = [r["gpu"] for r in by_gpu]
    assert len(ids) == len(set(ids)) >= 3
    assert deadline_choose["best"]["gpu"] in ids
    assert deadline_choose["meets_deadline"] is True
    assert deadline_choose["time_to_train_days"] <= 14
    priced = 0
    for r in by_gpu:
        if not r["meets_deadline"]:
            continue
        assert r["time_to_train_days"] <= 14, r["gpu"]
        assert r["gpu_hours"] == pytest.approx(r["time_to_train_days"] * 24 * r["gpus"], rel=0.01)
        if r["cost_usd"] is not None:
            priced += 1
            assert r["cost_usd"] > 0
    assert priced >= 2
    # The H100 row is the single-GPU-type answer, priced at its $/GPU-hour.
    (row,) = [r for r in by_gpu if r["gpu"] == "h100-sxm"]
    assert row["gpus"] == deadline_h100["best"]["gpus"]
    assert row["gpu_hours"] == pytest.approx(deadline_h100["gpu_hours"])
    price = deadline_h100["usd_per_gpu_hour"]
    assert row["cost_usd"] == pytest.approx(row["gpu_hours"] * price, rel=1e-9)


def test_plan_choose_with_a_deadline_picks_the_cheapest_priced_gpu(
    deadline_choose: dict[str, Any],
) -> None:
    priced = [r for r in deadline_choose["by_gpu"] if r["cost_usd"] is not None]
    cheapest = min(priced, key=lambda r: r["cost_usd"])
    assert deadline_choose["cost_usd"] is not None
    assert deadline_choose["best"]["gpu"] == cheapest["gpu"]


def test_plan_choose_fp8_compares_only_gpus_with_fp8_and_picks_the_fastest() -> None:
    d = plan("--model", "llama-2-7b", "--gpu", "choose", "--gpus", "8", "--precision", "fp8")
    ids = {r["gpu"] for r in d["by_gpu"]}
    assert "h100-sxm" in ids
    assert not any(i.startswith("a100") for i in ids)
    assert d["best"]["precision"] == "fp8"
    assert all(r["gpus"] == 8 for r in d["by_gpu"])
    fastest = min(d["by_gpu"], key=lambda r: r["step_time_s"])
    assert d["best"]["gpu"] == fastest["gpu"]
    assert d["best"]["step_time_s"] == pytest.approx(fastest["step_time_s"])


def test_plan_human_output_shows_best_top_and_rejections() -> None:
    r = cw("train", "plan", "--model", "llama-2-7b", "--gpu", "h100-sxm", "--gpus", "8")
    assert r.exit_code == 0, r.output
    assert r.stderr == ""
    assert "best for llama-2-7b" in r.stdout
    assert "top layouts" in r.stdout
    assert "rejected" in r.stdout


def test_plan_where_nothing_fits_exits_2_with_the_reason() -> None:
    err = user_error(
        cw("train", "plan", "--model", "llama-3.1-405b", "--gpu", "h100-sxm", "--gpus", "8")
    )
    m = re.search(r"does not fit in memory: (\d+)", err)
    assert m, err
    assert int(m.group(1)) > 0
    assert "llama-3.1-405b" in err


def test_plan_where_nothing_divides_exits_2_with_the_reason() -> None:
    # 37 is prime and larger than the 32 layers: only dp = 37 is left, which 1024 is not.
    err = user_error(
        cw("train", "plan", "--model", "llama-2-7b", "--gpu", "h100-sxm", "--gpus", "37", "--json")
    )
    assert "37" in err
    assert "global batch not divisible by dp" in err


def test_plan_where_nothing_divides_names_the_gpus_flag() -> None:
    err = user_error(
        cw("train", "plan", "--model", "llama-2-7b", "--gpu", "h100-sxm", "--gpus", "37", "--json")
    )
    assert "--gpus" in err


def test_plan_with_an_unreachable_deadline_exits_2() -> None:
    err = user_error(
        cw(
            "train",
            "plan",
            "--model",
            "llama-2-7b",
            "--gpu",
            "h100-sxm",
            "--tokens",
            "1e9",
            "--deadline-days",
            "0.0001",
            "--json",
        )
    )
    assert "deadline" in err


def test_real_process_plan_prints_only_json_on_stdout() -> None:
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "clusterwright",
            "train",
            "plan",
            "--model",
            "llama-2-7b",
            "--gpu",
            "h100-sxm",
            "--gpus",
            "16",
            "--tokens",
            "2e12",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    for key in PLAN_KEYS:
        assert key in data, key
    assert data["best"]["gpus"] == 16
    assert math.isfinite(data["time_to_train_days"])
    assert data["gpu_hours"] == pytest.approx(data["time_to_train_days"] * 24 * 16, rel=0.01)


# ------------------------------------------------------------------------- bad input

H8 = ["--gpu", "h100-sxm", "--gpus", "8"]
L7 = ["--model", "llama-2-7b", *H8]

ESTIMATE_BAD = [
    pytest.param(
        ["--model", "llama-2-70", *H8],
        ["--model", "did you mean", "'llama-2-70b'"],
        id="unknown-model",
    ),
    pytest.param(
        ["--model", "llama-2-7b", "--gpu", "h100", "--gpus", "8"],
        ["--gpu", "did you mean", "'h100-sxm'"],
        id="unknown-gpu",
    ),
    pytest.param(
        ["--model", "no/such/model.yaml", *H8], ["--model", "no/such/model.yaml"], id="model-file"
    ),
    pytest.param(
        ["--model", "llama-2-7b", "--gpu", "h100-sxm", "--gpus", "12", "--tp", "8"],
        ["--gpus", "12", "8"],
        id="gpus-not-multiple-of-tp",
    ),
    pytest.param(
        ["--model", "llama-2-7b", "--gpu", "h100-sxm", "--gpus", "6", "--tp", "2", "--pp", "2"],
        ["--gpus", "tp*pp*cp = 4"],
        id="gpus-not-multiple-of-tp-pp",
    ),
    pytest.param(
        ["--model", "llama-2-7b", *H8, "--cp", "3"],
        ["--gpus", "tp*pp*cp = 3"],
        id="gpus-not-multiple-of-cp",
    ),
    pytest.param(
        ["--model", "llama-2-70b", "--gpu", "h100-sxm", "--gpus", "48", "--tp", "3"],
        ["--tp", "64 heads"],
        id="tp-not-dividing-heads",
    ),
    pytest.param(
        ["--model", "llama-2-7b", "--gpu", "h100-sxm", "--gpus", "64", "--pp", "64"],
        ["--pp", "32 layers"],
        id="pp-over-layers",
    ),
    pytest.param([*L7, "--interleave", "2"], ["--interleave", "needs pp > 1"],
                 id="interleave-no-pp"),
    pytest.param(
        [*L7, "--pp", "2", "--interleave", "32"], ["--interleave", "32 layers"], id="interleave-big"
    ),
    pytest.param(
        [*L7, "--pp", "4", "--interleave", "2", "--global-batch", "12"],
        ["--interleave", "divisible by pp 4"],
        id="interleave-micro-batches-not-divisible-by-pp",
    ),
    pytest.param([*L7, "--sequence-parallel"], ["--sequence-parallel", "needs tp > 1"],
                 id="sp-without-tp"),
    pytest.param(
        [*L7, "--cp", "8", "--seq-len", "4100"], ["--cp", "seq_len 4100"], id="cp-vs-seq-len"
    ),
    pytest.param([*L7, "--ep", "2"], ["--ep", "dense"], id="ep-on-dense-model"),
    pytest.param(
        ["--model", "mixtral-8x7b", "--gpu", "h100-sxm", "--gpus", "24", "--ep", "3"],
        ["--ep", "8 experts"],
        id="ep-not-dividing-experts",
    ),
    pytest.param(
        ["--model", "mixtral-8x7b", *H8, "--tp", "2", "--pp", "2", "--ep", "8"],
        ["--ep", "tp*dp*cp = 4"],
        id="ep-not-dividing-tp-dp-cp",
    ),
    pytest.param(
        [*L7, "--global-batch", "12"], ["--global-batch", "12", "dp = 8"], id="global-batch-vs-dp"
    ),
    pytest.param(
        [*L7, "--global-batch", "48", "--micro-batch", "4"],
        ["--micro-batch", "6 sequences"],
        id="micro-batch-not-dividing-rank-batch",
    ),
    pytest.param(
        [
            "--model",
            "llama-2-7b",
            "--gpu",
            "h100-sxm",
            "--gpus",
            "16",
            "--pp",
            "8",
            "--global-batch",
            "8",
        ],
        ["--global-batch", "fewer than pp 8", "micro-batches"],
        id="too-few-micro-batches-for-pp",
    ),
    pytest.param(
        [*L7, "--pp", "4", "--global-batch", "8", "--micro-batch", "2"],
        ["--global-batch", "fewer than pp 4"],
        id="too-few-micro-batches-with-micro-batch",
    ),
    pytest.param([*L7, "--zero", "5"], ["--zero", "5"], id="zero-5"),
    pytest.param([*L7, "--zero", "-1"], ["--zero"], id="zero-negative"),
    pytest.param([*L7, "--recompute", "bogus"], ["--recompute", "bogus"], id="recompute"),
    pytest.param(["--model", "llama-2-7b", *H8[:3], "0"], ["--gpus", "0"], id="gpus-0"),
    pytest.param(["--model", "llama-2-7b", *H8[:3], "-8"], ["--gpus", "-8"], id="gpus-negative"),
    pytest.param([*L7, "--tp", "0"], ["--tp"], id="tp-0"),
    pytest.param([*L7, "--pp", "-1"], ["--pp"], id="pp-negative"),
    pytest.param([*L7, "--cp", "0"], ["--cp"], id="cp-0"),
    pytest.param([*L7, "--ep", "0"], ["--ep"], id="ep-0"),
    pytest.param([*L7, "--interleave", "0"], ["--interleave"], id="interleave-0"),
    pytest.param([*L7, "--micro-batch", "0"], ["--micro-batch"], id="micro-batch-0"),
    pytest.param([*L7, "--global-batch", "-4"], ["--global-batch"], id="global-batch-negative"),
    pytest.param([*L7, "--seq-len", "0"], ["--seq-len"], id="seq-len-0"),
    pytest.param(
        ["--model", "llama-2-7b", "--gpu", "a100-80gb-sxm", "--gpus", "8", "--precision", "fp8"],
        ["--precision", "a100-80gb-sxm", "fp8"],
        id="fp8-on-a100",
    ),
    pytest.param([*L7, "--precision", "int8"], ["--precision", "int8"], id="int8"),
    pytest.param([*L7, "--precision", "fp12"], ["--precision"], id="unknown-precision"),
    pytest.param(
        [*L7, "--fidelity", "sim", "--routing", "bogus"], ["--routing", "bogus"],
        id="fidelity-sim-bad-routing",
    ),
    pytest.param([*L7, "--fidelity", "bogus"], ["--fidelity", "bogus"], id="fidelity-bogus"),
    pytest.param(
        [*L7, "--server", "dgx-b200"], ["--server", "dgx-b200", "h100-sxm"], id="server-gpu"
    ),
]


@pytest.mark.parametrize(("args", "needles"), ESTIMATE_BAD)
def test_estimate_bad_input_exits_2_naming_the_flag(args: list[str], needles: list[str]) -> None:
    err = user_error(cw("train", "estimate", *args, "--json"))
    for needle in needles:
        assert needle in err


P7 = ["--model", "llama-2-7b", "--gpu", "h100-sxm"]

PLAN_BAD = [
    pytest.param(
        ["--model", "llama-2-7", "--gpu", "h100-sxm", "--gpus", "8"],
        ["--model", "did you mean", "'llama-2-7b'"],
        id="unknown-model",
    ),
    pytest.param(
        ["--model", "llama-2-7b", "--gpu", "h10", "--gpus", "8"],
        ["--gpu", "did you mean", "'h100-sxm'"],
        id="unknown-gpu",
    ),
    pytest.param(P7, ["--gpus", "deadline_days"], id="no-gpus-no-deadline"),
    pytest.param([*P7, "--deadline-days", "10"], ["--deadline-days", "needs tokens"],
                 id="no-tokens"),
    pytest.param([*P7, "--gpus", "8", "--tokens", "-5"], ["--tokens", "-5"], id="tokens-negative"),
    pytest.param([*P7, "--gpus", "8", "--tokens", "0"], ["--tokens"], id="tokens-0"),
    pytest.param(
        [*P7, "--gpus", "8", "--tokens", "1e9", "--deadline-days", "-1"],
        ["--deadline-days"],
        id="deadline-negative",
    ),
    pytest.param([*P7, "--gpus", "0"], ["--gpus"], id="gpus-0"),
    pytest.param([*P7, "--gpus", "-16"], ["--gpus"], id="gpus-negative"),
    pytest.param([*P7, "--gpus", "8", "--global-batch", "0"], ["--global-batch"], id="batch-0"),
    pytest.param([*P7, "--gpus", "8", "--seq-len", "-1"], ["--seq-len"], id="seq-len-negative"),
    pytest.param(
        ["--model", "llama-2-7b", "--gpu", "a100-80gb-sxm", "--gpus", "8", "--precision", "fp8"],
        ["--precision", "fp8"],
        id="fp8-on-a100",
    ),
    pytest.param([*P7, "--gpus", "8", "--precision", "int8"], ["--precision"], id="int8"),
]


@pytest.mark.parametrize(("args", "needles"), PLAN_BAD)
def test_plan_bad_input_exits_2_naming_the_flag(args: list[str], needles: list[str]) -> None:
    err = user_error(cw("train", "plan", *args, "--json"))
    for needle in needles:
        assert needle in err


def test_plan_choose_with_int8_is_a_user_error_not_a_traceback() -> None:
    err = user_error(
        cw(
            "train",
            "plan",
            "--model",
            "llama-2-7b",
            "--gpu",
            "choose",
            "--gpus",
            "8",
            "--precision",
            "int8",
            "--json",
        )
    )
    assert "--precision" in err


def test_missing_required_flags_are_usage_errors() -> None:
    for cmd in (("train", "estimate", "--gpu", "h100-sxm", "--gpus", "8"), ("train", "plan")):
        r = cw(*cmd, "--json")
        assert r.exit_code == 2
        assert r.stdout == ""
        assert "--model" in r.stderr


# --- --fidelity sim: DP/PP/EP collectives simulated on the fabric -------------------------

SIM_LAYOUT = [
    "--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--gpus", "256", "--tp", "8", "--pp", "4",
    "--seq-len", "8192", "--global-batch", "64", "--micro-batch", "1", "--sequence-parallel",
    "--recompute", "selective",
]


def test_fidelity_sim_reports_factors_and_keeps_the_breakdown_summing() -> None:
    r = cw("train", "estimate", *SIM_LAYOUT, "--fidelity", "sim", "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["fidelity"] == "sim"
    sim = d["sim"]
    assert set(sim["comm_factors"]) == {"dp", "pp", "ep"}
    assert sim["dp"]["ranks_per_group"] == 8 and sim["dp"]["groups"] == 32
    assert sim["pp"]["sends"] == 3 * 8 * 8
    assert abs(sum(d["breakdown"].values()) - d["step_time_s"]) < 1e-9 * d["step_time_s"]
    # A contended network can only slow a step, never speed it past the closed form by much.
    assert d["step_time_s"] >= 0.98 * sim["analytical_step_time_s"]


def test_fidelity_sim_with_spraying_is_no_slower_than_ecmp() -> None:
    times = {}
    for routing in ("ecmp", "spray"):
        r = cw("train", "estimate", *SIM_LAYOUT, "--fidelity", "sim", "--routing", routing,
               "--json")
        assert r.exit_code == 0, r.output
        times[routing] = json.loads(r.stdout)["step_time_s"]
    assert times["spray"] <= times["ecmp"] * (1 + 1e-9)


def test_fidelity_sim_uncontended_dp_matches_the_closed_form() -> None:
    # One data-parallel group per node pair inside one SU: no spine traffic, no collisions.
    args = ["--model", "llama-2-7b", "--gpu", "h100-sxm", "--gpus", "16", "--tp", "8",
            "--seq-len", "4096", "--global-batch", "16", "--micro-batch", "1"]
    d = json.loads(cw("train", "estimate", *args, "--fidelity", "sim", "--json").stdout)
    assert abs(d["sim"]["comm_factors"]["dp"] - 1.0) < 0.05


# --- framework options: what the stack supports, or an error naming the flag ------------

Z3 = [*L7, "--zero", "3"]
MOE8 = ["--model", "mixtral-8x7b", "--gpu", "h100-sxm", "--gpus", "16", "--ep", "8"]

OPTION_BAD = [
    pytest.param([*L7, "--schedule", "gpipe"], ["--schedule", "gpipe", "1f1b"], id="schedule"),
    pytest.param([*L7, "--schedule", "dualpipe"], ["--schedule", "not supported", "stack"],
                 id="schedule-unsupported"),
    pytest.param([*MOE8, "--ep-overlap", "dualpipe"], ["--ep-overlap", "not supported"],
                 id="ep-overlap-unsupported"),
    pytest.param([*MOE8, "--ep-overlap", "async"], ["--ep-overlap", "async"], id="ep-overlap"),
    pytest.param([*MOE8, "--ep-dispatcher", "nccl"], ["--ep-dispatcher", "nccl"],
                 id="ep-dispatcher"),
    pytest.param([*L7, "--cp", "2", "--cp-comm", "ring"], ["--cp-comm", "ring"], id="cp-comm"),
    pytest.param([*L7, "--precision", "fp8", "--fp8-recipe", "mx"],
                 ["--fp8-recipe", "not supported"], id="fp8-recipe-unsupported"),
    pytest.param([*L7, "--zero", "1", "--grad-reduce", "ring"],
                 ["--grad-reduce", "'ring'", "allreduce"], id="grad-reduce"),
    pytest.param([*Z3, "--prefetch", "-1"], ["--prefetch", "got -1"], id="prefetch-negative"),
    pytest.param([*L7, "--prefetch", "2"], ["--prefetch", "zero 3"], id="prefetch-without-z3"),
    pytest.param([*L7, "--shard-group", "4"], ["--shard-group", "zero 3"],
                 id="shard-group-without-z3"),
    pytest.param([*Z3, "--shard-group", "3"], ["--shard-group", "dp*cp = 8"],
                 id="shard-group-not-dividing"),
    pytest.param(["--model", "llama-2-7b", "--gpu", "a100-80gb-sxm", "--gpus", "8", "--zero", "3"],
                 ["--zero", "megatron-a100-2022", "ZeRO-3"], id="zero3-unsupported"),
    pytest.param(["--model", "llama-2-7b", "--gpu", "a100-80gb-sxm", "--gpus", "8", "--tp", "2",
                  "--tp-overlap"], ["--tp-overlap", "megatron-a100-2022"],
                 id="tp-overlap-unsupported"),
    pytest.param(["--model", "llama-2-7b", "--gpu", "a100-80gb-sxm", "--gpus", "8",
                  "--flash-attention"], ["--flash-attention", "megatron-a100-2022"],
                 id="flash-attention-unsupported"),
    pytest.param([*L7, "--stack", "megatron-core-h101"], ["--stack", "did you mean"],
                 id="stack-unknown"),
    pytest.param([*L7, "--stack", "megatron-a100-2022"], ["--stack", "a100"], id="stack-gpu"),
    pytest.param([*L7, "--recompute-share", "0.5"], ["--recompute-share", "full"],
                 id="recompute-share-without-full"),
    pytest.param([*L7, "--recompute", "full", "--recompute-share", "1.5"],
                 ["--recompute-share", "(0, 1]"], id="recompute-share-range"),
    pytest.param([*L7, "--recompute", "attn"], ["--recompute", "'attn'", "core_attn"],
                 id="recompute-module"),
    pytest.param([*MOE8, "--expert-imbalance", "0.5"], ["--expert-imbalance", "[1, 64]"],
                 id="expert-imbalance"),
]


@pytest.mark.parametrize(("args", "needles"), OPTION_BAD)
def test_framework_options_the_stack_lacks_exit_2_naming_the_flag(
    args: list[str], needles: list[str]
) -> None:
    for mode in (("--json",), ()):
        err = user_error(cw("train", "estimate", *args, *mode))
        for needle in needles:
            assert needle in err, (needle, err)


def test_plan_rejects_an_unsupported_schedule_naming_the_flag() -> None:
    err = user_error(cw("train", "plan", *P7, "--gpus", "8", "--schedule", "dualpipe", "--json"))
    assert "--schedule" in err and "not supported" in err


def test_options_change_the_estimate_and_are_echoed() -> None:
    base = [*L70, "--tp", "8", "--pp", "8", "--sequence-parallel", "--micro-batch", "1"]
    on = estimate(*base)
    off = estimate(*base, "--no-tp-overlap")
    assert on["options"]["tp_overlap"] is True and off["options"]["tp_overlap"] is False
    # The same bytes move; without the overlap all of them are exposed.
    assert off["comm_s"]["tp"] == pytest.approx(on["comm_s"]["tp"], rel=1e-9)
    assert off["breakdown"]["tp_comm_s"] == pytest.approx(off["comm_s"]["tp"], rel=1e-9)
    assert on["breakdown"]["tp_comm_s"] < 0.5 * off["breakdown"]["tp_comm_s"]
    assert on["overlap"]["tp"] > 0.5
    assert off["overlap"].get("tp", 0.0) == pytest.approx(0.0, abs=1e-12)
    # A 1F1B-overlapped MoE all-to-all hides some of it; across servers, a deduplicating
    # dispatcher sends fewer bytes.
    moe = ["--model", "qwen3-30b-a3b", "--gpu", "h100-sxm", "--gpus", "64", "--ep", "16",
           "--pp", "4", "--zero", "1", "--global-batch", "256", "--micro-batch", "1",
           "--recompute", "full"]
    plain = estimate(*moe, "--ep-overlap", "none")
    hidden = estimate(*moe, "--ep-overlap", "1f1b")
    dedup = estimate(*moe, "--ep-overlap", "none", "--ep-dispatcher", "deepep")
    assert hidden["breakdown"]["ep_comm_s"] < plain["breakdown"]["ep_comm_s"]
    assert dedup["comm_s"]["ep"] < plain["comm_s"]["ep"]


def test_estimate_carries_an_error_band_and_the_mfu_record(est_7b: dict[str, Any]) -> None:
    conf = est_7b["confidence"]
    assert conf["regime"]["stack"] == est_7b["stack"]
    assert conf["regime"]["family"] == "ptd-p"
    assert 0 < conf["band"] < 1
    lo, hi = conf["step_time_range_s"]
    assert lo < est_7b["step_time_s"] < hi
    assert conf["matched"]
    mc = est_7b["mfu_check"]
    assert 0 < mc["highest_published"] < 1 and mc["source"]
    assert mc["above"] == (est_7b["mfu"] > mc["highest_published"])


def test_a_stack_without_validation_says_so() -> None:
    d = estimate("--model", "llama-2-7b", "--gpu", "l40s", "--gpus", "8", "--zero", "3")
    assert d["confidence"]["validated"] is False
    assert d["confidence"]["band"] is None
    assert "unvalidated" in d["confidence"]["notes"][0]


def test_trainium2_borrows_trn1_band_and_says_it_is_unvalidated() -> None:
    """neuronx-2025 is fitted on Trn1 runs; a Trn2 estimate carries their band, labelled."""
    c = estimate("--model", "llama-2-7b", "--gpu", "trn2", "--gpus", "16",
                 "--zero", "1")["confidence"]
    assert c["validated"] is False and c["band"] is not None
    assert c["notes"][0].startswith("unvalidated on trn2") and "trn1" in c["notes"][0]


def test_gaudi3_bands_come_from_its_runs_by_family() -> None:
    """Gaudi 3's published runs are fine-tuning (Optimum Habana CI baselines): a LoRA estimate
    gets the LoRA runs' band, a full-model one the DDP/ZeRO runs' (ptd-p family), narrower."""
    lora = estimate("--model", "llama-2-7b", "--gpu", "gaudi3", "--gpus", "8",
                    "--lora-rank", "8", "--lora-targets", "attention")["confidence"]
    full = estimate("--model", "llama-2-7b", "--gpu", "gaudi3", "--gpus", "8",
                    "--zero", "1")["confidence"]
    assert lora["regime"]["family"] == "lora" and lora["matched"] == ["gaudi-2024.bf16.lora"]
    assert full["validated"] is True and full["matched"] == ["gaudi-2024.bf16.ptd-p"]
    assert 0 < full["band"] < lora["band"]


def test_gaudi3_runs_eager_attention_unless_asked_for_the_fused_kernel() -> None:
    """Optimum Habana's default is eager attention (the runs gaudi-2024 was fitted on); its
    fused SDPA is a choice, and fused attention keeps no s x s scores."""
    args = ("--model", "llama-2-7b", "--gpu", "gaudi3", "--gpus", "8", "--seq-len", "2048",
            "--micro-batch", "1")
    eager, fused = estimate(*args), estimate(*args, "--flash-attention")
    assert eager["options"]["flash_attention"] is False
    assert fused["options"]["flash_attention"] is True
    assert fused["step_time_s"] < eager["step_time_s"]
    assert fused["memory_gb"]["activations"] < eager["memory_gb"]["activations"]


def test_a_gpu_without_runs_on_a_validated_stack_says_so() -> None:
    """MI300X shares its stack with MI325X, whose runs give the band; MI300X has none."""
    d = estimate("--model", "llama-2-7b", "--gpu", "mi300x", "--gpus", "8")
    c = d["confidence"]
    assert c["validated"] is False and c["band"] is not None
    assert c["notes"][0].startswith("unvalidated on mi300x") and "mi325x" in c["notes"][0]


def test_plan_rechecks_its_leading_layouts_on_the_simulated_fabric() -> None:
    args = ["--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--gpus", "64", "--seq-len", "8192",
            "--global-batch", "128", "--tokens", "1e11"]
    sim = plan(*args)
    assert sim["fidelity"] == "sim"
    assert sim["best"]["sim"]["step_time_s"] > 0
    rechecked = [t for t in sim["top"] if "sim" in t]
    assert len(rechecked) == min(3, len(sim["top"]))
    for t in rechecked:
        # A contended fabric only slows the step (small closed-form differences aside).
        assert t["sim"]["step_time_s"] >= 0.98 * t["step_time_s"]
    fast = plan(*args, "--fidelity", "analytical")
    assert "sim" not in fast["best"]
    assert fast["best"]["step_time_s"] == pytest.approx(sim["best"]["step_time_s"], rel=1e-12)
    assert isinstance(sim["notes"], list)


def test_plan_flags_an_mfu_above_the_highest_published() -> None:
    d = plan("--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--gpus", "1024", "--seq-len",
             "8192", "--global-batch", "2048", "--fidelity", "analytical")
    b = d["best"]
    if b["mfu_check"]["above"]:
        assert any("above the highest published" in n for n in d["notes"])
    else:
        assert not any("above the highest published" in n for n in d["notes"])


LORA_70B = ("--model", "llama-2-70b", "--gpu", "h100-sxm", "--gpus", "8", "--tp", "4",
            "--seq-len", "8192", "--global-batch", "8", "--micro-batch", "1", "--precision",
            "fp8", "--sequence-parallel")


def test_lora_rank_estimates_fine_tuning_faster_than_full_training() -> None:
    args = ("--model", "llama-2-13b", *LORA_70B[2:], "--zero", "1")
    full = estimate(*args)
    lora = estimate(*args, "--lora-rank", "16")
    assert full["finetune"] is None
    assert lora["finetune"] == {"method": "lora", "rank": 16, "targets": ["qkv", "proj"]}
    assert lora["step_time_s"] < 0.9 * full["step_time_s"]  # 13B at 8,192: attention-heavy
    assert lora["memory_gb"]["optimizer"] < 0.01 * full["memory_gb"]["optimizer"]
    assert lora["confidence"]["regime"]["family"] == "lora"
    mlp = estimate(*args, "--lora-rank", "16", "--lora-targets", "all")
    assert mlp["finetune"]["targets"] == ["qkv", "proj", "fc1", "fc2"]
    assert mlp["step_time_s"] > lora["step_time_s"]


@pytest.mark.parametrize(("flags", "named"), [
    (("--lora-rank", "0"), "--lora-rank"),
    (("--lora-rank", "16", "--lora-targets", "attention,q_proj"), "--lora-targets"),
    (("--lora-targets", "mlp"), "--lora-targets"),
])
def test_bad_lora_flags_exit_2_naming_the_flag(flags: tuple[str, ...], named: str) -> None:
    err = user_error(cw("train", "estimate", *LORA_70B, *flags, "--json"))
    assert named in err


@pytest.mark.parametrize("gpu", ["gaudi3", "mi325x"])
def test_train_plan_designs_a_cluster_of_the_new_parts(gpu: str) -> None:
    """Gaudi 3 (its 24 x 200GbE through 6 OSFP cages, 4 links each) and MI325X (MiTAC's
    8-GPU platform) plan end to end: a layout, and a fabric the simulator can run."""
    r = CliRunner().invoke(app, ["train", "plan", "--model", "llama-2-13b", "--gpu", gpu,
                                 "--gpus", "64", "--seq-len", "4096", "--tokens", "1e11",
                                 "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["best"]["gpu"] == gpu and out["best"]["gpus"] == 64
    assert out["best"]["step_time_s"] > 0 and out["fidelity"] == "sim"
