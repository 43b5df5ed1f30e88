"""``serve estimate --engine`` and ``serve plan --engine``."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner, Result

from clusterwright.cli.main import app

runner = CliRunner()
BASE = ("serve", "estimate", "--input-len", "1024", "--output-len", "256")


def cw(*args: str) -> Result:
    return runner.invoke(app, list(args), env={"CLUSTERWRIGHT_CATALOG": None})


def test_steady_state_on_b200_as_json() -> None:
    r = cw(*BASE, "--model", "llama-3.1-70b", "--gpu", "b200", "--engine", "vllm", "--tp", "2",
           "--precision", "fp8", "--concurrency", "32", "--steady-only", "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    st = d["steady_state"]
    assert st["ttft_mean_s"] > 0 and st["tpot_mean_s"] > 0
    assert d["validation"]["validated"] is True
    assert d["deployment"]["agg"]["tp"] == 2
    assert "ttft_p99_s" not in d  # no simulation asked for
    assert d["disaggregation"]["aggregated"]["gpus"] == 2


def test_the_validated_regime_names_the_layout_it_scored() -> None:
    r = cw(*BASE, "--model", "llama-3.1-70b", "--gpu", "b200", "--engine", "vllm", "--tp", "8",
           "--precision", "fp8", "--concurrency", "8", "--steady-only")
    assert r.exit_code == 0, r.output
    assert "(agg at tp 8 x attention-DP 1)" in " ".join(r.stdout.split())
    r = cw(*BASE, "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--engine", "vllm",
           "--concurrency", "8", "--steady-only")
    assert r.exit_code == 0, r.output
    assert "every layout pooled" in " ".join(r.stdout.split())


def test_attention_dp_and_expert_parallel_render() -> None:
    r = cw(*BASE, "--model", "deepseek-v3", "--gpu", "b200", "--engine", "sglang", "--tp", "1",
           "--adp", "8", "--precision", "fp4", "--concurrency", "128", "--num-requests", "300")
    assert r.exit_code == 0, r.output
    assert "adp 8" in r.stdout and "ep 8" in r.stdout
    assert "steady state" in r.stdout and "TPOT" in r.stdout


def test_the_steady_state_says_where_its_time_goes() -> None:
    """TTFT's parts and the iterations' (dense GEMMs, experts, attention, communication,
    fixed overheads) are printed and in the JSON, the parts summing to their totals."""
    args = (*BASE, "--model", "deepseek-v3", "--gpu", "b200", "--engine", "trtllm", "--tp",
            "8", "--moe-ep", "8", "--precision", "fp8", "--concurrency", "64", "--steady-only")
    r = cw(*args)
    assert r.exit_code == 0, r.output
    text = " ".join(r.stdout.split())
    assert "TTFT" in text and "front end" in text
    assert "one prompt alone (1,024 tokens):" in text
    assert "a decode iteration (64 sequences a rank at 1,152 tokens of context)" in text
    assert "experts" in text and "communication" in text
    d = json.loads(cw(*args, "--json").stdout)["steady_state"]
    assert sum(d["ttft_parts_s"].values()) == pytest.approx(d["ttft_mean_s"], rel=1e-9)
    for role in ("prefill", "decode"):
        it = d["iterations"][role]
        assert sum(it["parts_s"].values()) == pytest.approx(it["iteration_s"], rel=1e-9)
        assert it["parts_s"]["experts"] > 0.0


def test_disaggregated_roles() -> None:
    r = cw(*BASE, "--model", "deepseek-v3", "--gpu", "gb200", "--engine", "trtllm",
           "--precision", "fp4", "--concurrency", "512", "--num-requests", "300",
           "--prefill", "workers=1,tp=4", "--decode", "workers=auto,tp=1,adp=8", "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["deployment"]["mode"] == "disagg"
    assert d["deployment"]["decode"]["adp"] == 8
    assert d["deployment"]["decode"]["workers"] >= 1


@pytest.mark.parametrize(("args", "message"), [
    (("--adp", "2"), "--adp: only with --engine"),
    (("--engine", "tgi"), "--engine: 'tgi' is not one of"),
    (("--engine", "vllm@3.0"), "--engine: no vllm entry in the catalog covers version"),
    (("--engine", "vllm", "--tp", "3"), "tp: 3 does not divide"),
    (("--engine", "vllm", "--moe-ep", "2"), "--moe-ep: llama-3.1-8b is a dense model"),
    (("--engine", "vllm", "--gemm-quant", "fp5"), "--gemm-quant: 'fp5'"),
    (("--engine", "vllm", "--prefill", "workers=1,tp=1"), "--prefill/--decode: a "
     "disaggregated deployment needs both roles"),
    (("--engine", "vllm", "--prefill", "tp=x", "--decode", "tp=1"), "--prefill: tp='x' is "
     "not an integer"),
    (("--engine", "vllm", "--prefill", "gpus=2", "--decode", "tp=1"), "--prefill: 'gpus=2' "
     "is not key=value"),
    (("--engine", "vllm", "--prefill", "tp=3", "--decode", "tp=1"), "--prefill: 3 does not "
     "divide"),
    (("--engine", "vllm", "--ep", "2"), "--ep: with --engine, give --moe-ep"),
])
def test_bad_engine_options_exit_2_naming_the_flag(args: tuple[str, ...], message: str) -> None:
    r = cw(*BASE, "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--concurrency", "8", *args)
    assert r.exit_code == 2, r.output
    assert message in r.stderr.replace("\n", " ")
    assert "Traceback" not in r.output


def test_weights_that_do_not_fit_exit_2() -> None:
    r = cw(*BASE, "--model", "deepseek-v3", "--gpu", "h100-sxm", "--engine", "sglang",
           "--tp", "8", "--precision", "fp8", "--concurrency", "8")
    assert r.exit_code == 2
    assert "no room for one request's KV cache" in r.stderr.replace("\n", " ")


def test_plan_with_an_engine_says_whether_disaggregation_pays() -> None:
    r = cw("serve", "plan", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--engine", "vllm",
           "--qps", "10", "--input-len", "1024", "--output-len", "128", "--ttft-p99", "2",
           "--tpot-p99", "0.05", "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert isinstance(d["disaggregation_pays"], bool)
    assert d["choice"]["gpus"] >= 1
    assert "disaggregat" in d["verdict"]
    # The text reads the choice's p99s at the ratios one row in ten of its regime exceeds
    tail = d["measured_lean"]["p90"]
    r = cw("serve", "plan", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--engine", "vllm",
           "--qps", "10", "--input-len", "1024", "--output-len", "128", "--ttft-p99", "2",
           "--tpot-p99", "0.05")
    text = " ".join(r.stdout.split())
    assert (f"at the ratios 1 row in 10 exceeds (TTFT {tail['ttft_ratio']:.2f}x, TPOT "
            f"{tail['tpot_ratio']:.2f}x)") in text
    assert ("still meets the SLOs" if tail["meets_slo"] else "misses the SLOs") in text.split(
        "1 row in 10 exceeds")[1]


def test_plan_on_other_silicon_says_its_gemm_rate_is_carried_over() -> None:
    args = ("serve", "plan", "--model", "llama-3.1-8b", "--gpu", "mi300x", "--engine", "vllm",
            "--qps", "4", "--input-len", "1024", "--output-len", "128", "--ttft-p99", "2",
            "--tpot-p99", "0.05", "--precision", "fp8")
    r = cw(*args, "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["choice"]["validation"]["validated"] is False
    (note,) = d["choice"]["notes"]
    assert "fitted on NVIDIA GPUs" in note and "megatron-rocm7-cdna3-2026" in note
    r = cw(*args)
    assert r.exit_code == 0, r.output
    assert "note: vllm's constants were fitted on NVIDIA GPUs" in " ".join(r.stdout.split())
    # On an NVIDIA GPU no such note.
    r = cw(*args[:5], "h100-sxm", *args[6:], "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["choice"]["notes"] == []


def test_plan_with_an_engine_needs_one_gpu() -> None:
    r = cw("serve", "plan", "--model", "llama-3.1-8b", "--engine", "vllm", "--qps", "10",
           "--input-len", "1024", "--output-len", "128", "--ttft-p99", "2", "--tpot-p99",
           "0.05")
    assert r.exit_code == 2
    assert "--gpu: with --engine, name one GPU" in r.stderr.replace("\n", " ")


def test_speculative_decoding_shortens_tpot() -> None:
    args = (*BASE, "--model", "deepseek-v3", "--gpu", "gb200", "--engine", "trtllm", "--tp",
            "8", "--precision", "fp4", "--concurrency", "8", "--steady-only", "--json")
    plain = json.loads(cw(*args).stdout)
    spec = cw(*args, "--speculative", "3:0.7:1.3")
    assert spec.exit_code == 0, spec.output
    s = json.loads(spec.stdout)
    assert s["speculative"]["tokens_per_step"] == pytest.approx(1 + 0.7 * (1 - 0.7**3) / 0.3)
    # Each iteration costs 1.3x and yields 2.2 tokens; prompts come back sooner, so a larger
    # share of iterations carry a prefill: TPOT falls by less than 1.3 / 2.2.
    ratio = s["steady_state"]["tpot_mean_s"] / plain["steady_state"]["tpot_mean_s"]
    assert 0.95 * 1.3 / s["speculative"]["tokens_per_step"] < ratio < 0.75
    bad = cw(*args, "--speculative", "3:1.7:1.3")
    assert bad.exit_code == 2 and "--speculative" in bad.stderr
    # Without COST the model costs the drafts (DeepSeek's MTP layer and the verification):
    # at the same yield, TPOT falls, by less than the yield
    own = cw(*args, "--speculative", "3:0.7")
    assert own.exit_code == 0, own.output
    o = json.loads(own.stdout)
    assert o["speculative"]["cost"] is None
    assert o["speculative"]["tokens_per_step"] == s["speculative"]["tokens_per_step"]
    assert (plain["steady_state"]["tpot_mean_s"] / o["speculative"]["tokens_per_step"]
            < o["steady_state"]["tpot_mean_s"] < 0.75 * plain["steady_state"]["tpot_mean_s"])
    many = cw(*args, "--speculative", "65:0.7")
    assert many.exit_code == 2 and "--speculative" in many.stderr and "1-64" in many.stderr


def test_a_benchmark_of_rounds_reports_its_opening_wave() -> None:
    """A benchmark that starts 64 clients at once on an idle deployment measures a longer
    mean TTFT than the steady state (its first round waits for the whole wave's prefill);
    the more rounds, the nearer the steady state. TPOT and throughput are the steady
    state's."""
    args = (*BASE, "--model", "llama-3.1-70b", "--gpu", "b200", "--engine", "vllm", "--tp", "4",
            "--precision", "fp8", "--concurrency", "64", "--steady-only", "--json")
    st = json.loads(cw(*args).stdout)["steady_state"]
    assert "benchmark" not in st
    ten = json.loads(cw(*args, "--benchmark-rounds", "10").stdout)["steady_state"]
    many = json.loads(cw(*args, "--benchmark-rounds", "1000").stdout)["steady_state"]
    assert ten["benchmark"]["rounds"] == 10
    assert ten["benchmark"]["ttft_mean_s"] > 1.2 * st["ttft_mean_s"]
    assert st["ttft_mean_s"] < many["benchmark"]["ttft_mean_s"] < ten["benchmark"]["ttft_mean_s"]
    assert ten["tpot_mean_s"] == st["tpot_mean_s"]
    text = cw(*args[:-1], "--benchmark-rounds", "10")
    assert text.exit_code == 0 and "opening wave" in text.stdout


@pytest.mark.parametrize(("extra", "flag"), [
    (("--benchmark-rounds", "0"), "--benchmark-rounds"),
    (("--benchmark-rounds", "-3"), "--benchmark-rounds"),
    (("--benchmark-rounds", "10001"), "--benchmark-rounds"),
    (("--benchmark-rounds", "99999999999999999999999"), "--benchmark-rounds"),
    (("--benchmark-rounds", "inf"), "--benchmark-rounds"),
    (("--benchmark-rounds", "nan"), "--benchmark-rounds"),
    (("--benchmark-rounds", "2.5"), "--benchmark-rounds"),
    (("--benchmark-rounds", "ten"), "--benchmark-rounds"),
    (("--benchmark-rounds", ""), "--benchmark-rounds"),
    (("--benchmark-rounds", "10", "--length-dist", "lognormal"), "--benchmark-rounds"),
])
def test_bad_benchmark_rounds_name_the_flag(extra: tuple[str, ...], flag: str) -> None:
    r = cw(*BASE, "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--engine", "vllm",
           "--concurrency", "8", "--steady-only", *extra)
    assert r.exit_code == 2 and flag in r.stderr


def test_benchmark_rounds_need_a_closed_loop() -> None:
    r = cw(*BASE, "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--engine", "vllm",
           "--qps", "2", "--num-requests", "100", "--benchmark-rounds", "10")
    assert r.exit_code == 2 and "--benchmark-rounds" in r.stderr
    r = cw(*BASE, "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--concurrency", "8",
           "--benchmark-rounds", "10")
    assert r.exit_code == 2 and "only with --engine" in r.stderr


def test_expert_parallelism_beyond_the_experts_exits_2_and_within_them_runs_slots() -> None:
    args = (*BASE, "--model", "deepseek-v3", "--gpu", "gb200", "--engine", "sglang",
            "--precision", "fp8", "--concurrency", "64", "--steady-only")
    r = cw(*args, "--adp", "512", "--moe-ep", "512")
    assert r.exit_code == 2, r.output
    assert "--moe-ep: 512 exceeds the 256 experts" in r.stderr.replace("\n", " ")
    # EP 48 does not divide 256: six slots a GPU (EPLB's redundant copies), not an error
    r = cw(*args, "--adp", "48", "--moe-ep", "48", "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["deployment"]["agg"]["expert_slots_per_gpu"] == 6


DISAGG_DS = ("--model", "deepseek-v3", "--gpu", "b200", "--engine", "trtllm", "--precision",
             "fp4", "--prefill", "workers=1,tp=8", "--concurrency", "48", "--steady-only")


@pytest.mark.parametrize("value, message", [
    ("0", "max_batch=0 must be >= 1"), ("-8", "max_batch=-8 must be >= 1"),
    ("x", "max_batch='x' is not an integer"), ("", "max_batch='' is not an integer"),
    ("8.5", "max_batch='8.5' is not an integer"), ("inf", "max_batch='inf' is not an integer"),
    ("100000000", "max_batch=100000000 is above 10,000,000"),
    ("9" * 40, "is above 10,000,000"),
])
def test_a_roles_bad_max_batch_exits_2_naming_the_flag(value: str, message: str) -> None:
    r = cw(*BASE, *DISAGG_DS, "--decode", f"workers=2,tp=8,moe_ep=8,max_batch={value}")
    assert r.exit_code == 2, r.output
    assert "--decode" in r.stderr and message in r.stderr.replace("\n", " ")
    assert "Traceback" not in r.output


@pytest.mark.parametrize("value, message", [
    ("0", "max_tokens=0 must be >= 1"), ("x", "max_tokens='x' is not an integer"),
    ("99999999999", "is above 10,000,000 tokens an iteration"),
])
def test_a_roles_bad_max_tokens_exits_2_naming_the_flag(value: str, message: str) -> None:
    r = cw(*BASE, *DISAGG_DS, "--decode", "workers=2,tp=8,moe_ep=8",
           "--prefill", f"workers=1,tp=8,max_tokens={value}")
    assert r.exit_code == 2, r.output
    assert "--prefill" in r.stderr and message in r.stderr.replace("\n", " ")
    assert "Traceback" not in r.output


def test_a_context_workers_batch_limits_lengthen_ttft_under_load() -> None:
    """A TensorRT-LLM recipe's context workers take 2 requests a batch: at a load near the
    prefill's capacity, prompts wait longer than with the engine's defaults (a batch of up to
    8 1k prompts), and the deployment reports the limits."""
    args = ("--model", "deepseek-v3", "--gpu", "b200", "--engine", "trtllm", "--precision",
            "fp4", "--decode", "workers=8,tp=8,moe_ep=8", "--concurrency", "4096",
            "--steady-only", "--json")
    free = cw(*BASE, *args, "--prefill", "workers=1,tp=8,moe_ep=8")
    capped = cw(*BASE, *args, "--prefill", "workers=1,tp=8,moe_ep=8,max_batch=2,max_tokens=16896")
    assert free.exit_code == 0 and capped.exit_code == 0, free.output + capped.output
    f, c = json.loads(free.stdout), json.loads(capped.stdout)
    assert c["deployment"]["prefill"]["max_tokens"] == 16896
    assert f["deployment"]["prefill"]["max_tokens"] == 8192
    assert c["steady_state"]["ttft_mean_s"] > 1.5 * f["steady_state"]["ttft_mean_s"]


def test_a_roles_max_batch_holds_clients_back() -> None:
    """2 decode workers of at most 8 requests serve 16 of 48 clients; the rest wait."""
    capped = cw(*BASE, *DISAGG_DS, "--decode", "workers=2,tp=8,moe_ep=8,max_batch=8", "--json")
    free = cw(*BASE, *DISAGG_DS, "--decode", "workers=2,tp=8,moe_ep=8", "--json")
    assert capped.exit_code == 0 and free.exit_code == 0, capped.output + free.output
    c, f = json.loads(capped.stdout), json.loads(free.stdout)
    assert c["deployment"]["decode"]["max_batch"] == 8
    assert "clients waiting" in c["steady_state"]["detail"]
    assert c["steady_state"]["ttft_mean_s"] > 3 * f["steady_state"]["ttft_mean_s"]


def test_the_request_level_simulation_keeps_a_roles_max_batch() -> None:
    """The simulated requests meet the same slots as the steady state: 2 decode workers of
    at most 8 requests for 48 clients queue the other 40."""
    args = [a for a in DISAGG_DS if a != "--steady-only"]
    capped = cw(*BASE, *args, "--num-requests", "150", "--decode",
                "workers=2,tp=8,moe_ep=8,max_batch=8", "--json")
    free = cw(*BASE, *args, "--num-requests", "150", "--decode", "workers=2,tp=8,moe_ep=8",
              "--json")
    assert capped.exit_code == 0 and free.exit_code == 0, capped.output + free.output
    c, f = json.loads(capped.stdout), json.loads(free.stdout)
    assert c["ttft_mean_s"] > 3 * f["ttft_mean_s"]
    # and agrees with the steady state's wait within a third
    assert c["ttft_mean_s"] == pytest.approx(c["steady_state"]["ttft_mean_s"], rel=0.35)


AGG_8B = ("--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--engine", "vllm",
          "--concurrency", "64", "--steady-only")


def test_max_num_seqs_with_an_engine_caps_the_aggregated_ranks() -> None:
    capped = cw(*BASE, *AGG_8B, "--max-num-seqs", "8", "--json")
    free = cw(*BASE, *AGG_8B, "--json")
    assert capped.exit_code == 0 and free.exit_code == 0, capped.output + free.output
    c, f = json.loads(capped.stdout), json.loads(free.stdout)
    assert c["deployment"]["agg"]["max_batch"] == 8
    assert f["deployment"]["agg"]["max_batch"] == 1024  # vLLM's max_num_seqs default
    assert "8 admitted" in c["steady_state"]["detail"]
    assert c["steady_state"]["ttft_mean_s"] > 10 * f["steady_state"]["ttft_mean_s"]


@pytest.mark.parametrize("extra, message", [
    (("--max-num-seqs", "0"), "--max-num-seqs: must be between 1 and 10,000,000"),
    (("--max-num-seqs", "-3"), "--max-num-seqs: must be between 1 and 10,000,000"),
    (("--max-num-seqs", "1" + "0" * 30), "--max-num-seqs: must be between 1 and 10,000,000"),
    (("--max-num-seqs", "8", "--prefill", "workers=1,tp=1", "--decode", "workers=1,tp=1"),
     "--max-num-seqs: with --prefill/--decode, give each role's max_batch= instead"),
])
def test_bad_max_num_seqs_with_an_engine_exits_2(extra: tuple[str, ...], message: str) -> None:
    r = cw(*BASE, *AGG_8B, *extra)
    assert r.exit_code == 2, r.output
    assert message in r.stderr.replace("\n", " ")
    assert "Traceback" not in r.output


@pytest.mark.parametrize("value", ["x", "", "8.5", "nan"])
def test_a_max_num_seqs_that_is_no_integer_exits_2(value: str) -> None:
    r = cw(*BASE, *AGG_8B, "--max-num-seqs", value)
    assert r.exit_code == 2, r.output
    assert "--max-num-seqs" in r.output + r.stderr
    assert "Traceback" not in r.output


def test_batch_waiting_holds_prompts_on_the_trtllm_path() -> None:
    """--batch-wait 20:0.9 (InferenceMAX's Llama 70B settings): at 4 clients every prompt
    finds sequences decoding and waits about 20 decode iterations; vLLM has no such option."""
    base = ["serve", "estimate", "--model", "llama-3.1-70b", "--gpu", "b200", "--engine",
            "trtllm", "--tp", "2", "--precision", "fp8", "--concurrency", "4", "--input-len",
            "1024", "--output-len", "1024", "--steady-only", "--json"]
    plain = json.loads(cw(*base).output)
    held = json.loads(cw(*base, "--batch-wait", "20:0.9").output)
    tpot = held["steady_state"]["tpot_mean_s"]
    added = held["steady_state"]["ttft_mean_s"] - plain["steady_state"]["ttft_mean_s"]
    assert added == pytest.approx(20 * tpot, rel=0.1)
    assert held["deployment"]["batch_wait"] == {"iterations": 20, "tokens_ratio": 0.9}
    assert "batch_wait" not in plain["deployment"]
    r = cw(*base[:7], "vllm", *base[8:], "--batch-wait", "20:0.9")
    assert r.exit_code == 2 and "TensorRT-LLM's" in r.output
    r = cw(*base[:6], *base[8:-2], "--batch-wait", "20:0.9")
    assert r.exit_code == 2 and "--batch-wait: only with --engine" in r.output


def test_request_polling_delays_prompts_on_the_sglang_path() -> None:
    """--recv-interval 30 (InferenceMAX's DeepSeek SGLang scripts at 16+ clients): a prompt
    of clients drawing their lengths waits for the poll every 30 decode iterations; the
    deployment says so; other engines and attention DP refuse it."""
    base = ["serve", "estimate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--engine",
            "sglang", "--concurrency", "16", "--input-len", "1024", "--output-len", "256",
            "--length-dist", "lognormal", "--length-cv", "0.1", "--num-requests", "160",
            "--json"]
    plain = json.loads(cw(*base).output)
    polled = json.loads(cw(*base, "--recv-interval", "30").output)
    assert polled["deployment"]["recv_interval"] == 30
    assert "recv_interval" not in plain["deployment"]
    assert polled["ttft_mean_s"] > plain["ttft_mean_s"] + 0.05
    r = cw(*base[:7], "vllm", *base[8:], "--recv-interval", "30")
    assert r.exit_code == 2 and "SGLang's" in r.output
    r = cw(*base, "--adp", "2", "--recv-interval", "30")
    assert r.exit_code == 2 and "--recv-interval" in r.output


def test_vllm_0_11_adds_its_host_work_unless_told_it_runs_async_scheduling() -> None:
    """vLLM 0.11 schedules synchronously: the host's work for the running sequences adds to
    every iteration, and the output says so. --async-scheduling overlaps it (the GPU's
    iteration is then the longer); other engines refuse the flag."""
    base = ["serve", "estimate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--engine",
            "vllm@0.11.1", "--concurrency", "128", "--input-len", "100", "--output-len",
            "400", "--steady-only", "--json"]
    sync = json.loads(cw(*base).output)
    overlapped = json.loads(cw(*base, "--async-scheduling").output)
    host = sync["scheduling"]["host_s_per_sequence"]
    assert sync["scheduling"]["async"] is False and overlapped["scheduling"]["async"] is True
    assert host > 0
    added = sync["steady_state"]["tpot_mean_s"] - overlapped["steady_state"]["tpot_mean_s"]
    assert added == pytest.approx(128 * host, rel=0.1)
    assert any("schedules synchronously" in n for n in sync["notes"])
    assert not any("schedules synchronously" in n for n in overlapped["notes"])
    later = json.loads(cw(*base[:7], "vllm@0.19.0", *base[8:]).output)
    assert later["scheduling"]["async"] is True
    r = cw(*base[:7], "trtllm", *base[8:], "--sync-scheduling")
    assert r.exit_code == 2 and "vLLM only" in r.output


def test_the_neuron_engine_on_trainium_and_not_on_a_gpu() -> None:
    r = cw(*BASE, "--model", "llama-3.1-70b", "--gpu", "trn2", "--engine", "neuron@nxdi-2.21",
           "--tp", "16", "--concurrency", "1", "--steady-only", "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["engine"] == "neuron" and d["gpus"] == 16
    assert d["validation"]["validated"] is True and d["validation"]["gpu"] == "trn2"
    bad = cw(*BASE, "--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--engine", "neuron",
             "--tp", "8", "--concurrency", "1", "--steady-only")
    assert bad.exit_code == 2
    assert "--engine" in bad.output and "runs on aws accelerators" in bad.output
    assert "Traceback" not in bad.output


def test_the_output_says_which_figures_were_validated() -> None:
    """The regime's MAPE is the steady state's (what ``validate`` checks), not the
    request-level simulation's percentiles; when their mean TTFTs part by more than a
    quarter the output says so, with both numbers."""
    args = ("serve", "estimate", "--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--tp", "4",
            "--precision", "fp8", "--engine", "trtllm", "--concurrency", "16",
            "--input-len", "1024", "--output-len", "512")
    d = json.loads(cw(*args, "--json").stdout)
    assert d["validation"]["figures"] == "steady_state"
    r = cw(*args)
    assert r.exit_code == 0
    text = " ".join(r.stdout.split())
    assert "validated (the steady state's means)" in text
    # TensorRT-LLM on H100 measures above the model on most rows: the output says which way
    v = d["validation"]
    assert v["ttft_median_error"] < -0.05
    assert f"the median row measured {1 / (1 + v['ttft_median_error']):.2f}x the model: " \
           "above it" in text
    # ... and the range 8 rows in 10 measured in, from the regime's error deciles
    assert v["ttft_error_p10"] < v["ttft_median_error"] < v["ttft_error_p90"]
    assert (f"8 rows in 10 measured {1 / (1 + v['ttft_error_p90']):.2f}-"
            f"{1 / (1 + v['ttft_error_p10']):.2f}x") in text
    assert "simulated (not validated)" in text
    ratio = d["ttft_mean_s"] / d["steady_state"]["ttft_mean_s"]
    assert (abs(ratio - 1.0) > 0.25) == ("is what was checked against measured runs" in text)
    steady_only = " ".join(cw(*args, "--steady-only").stdout.split())
    assert "checked against measured runs" not in steady_only
    other = cw("serve", "estimate", "--model", "llama-3.1-8b", "--gpu", "mi300x", "--engine",
               "vllm", "--precision", "fp8", "--concurrency", "4", "--input-len", "512",
               "--output-len", "128")
    assert other.exit_code == 0, other.output
    assert "not validated:" in other.stdout


def test_a_decode_role_s_stream_interval_moves_the_first_token() -> None:
    """``--decode ...,stream_interval=30`` on SGLang: the client's first token waits for the
    decode worker's first chunk (29 tokens of TPOT more, JSON ``first_chunk_tokens``);
    TensorRT-LLM's client gets it from the context worker, so the key changes nothing there;
    a value that is not a positive integer, or absurdly large, is refused with exit 2."""
    def run(engine: str, decode: str) -> dict:  # type: ignore[type-arg]
        r = cw("serve", "estimate", "--model", "deepseek-r1", "--gpu", "b200", "--engine",
               engine, "--precision", "fp8", "--concurrency", "32", "--input-len", "1024",
               "--output-len", "1024", "--prefill", "workers=1,tp=8", "--decode", decode,
               "--steady-only", "--json")
        assert r.exit_code == 0, r.output
        return json.loads(r.stdout)  # type: ignore[no-any-return]
    base = run("sglang", "workers=1,tp=8")
    chunk = run("sglang", "workers=1,tp=8,stream_interval=30")
    s0, s1 = base["steady_state"], chunk["steady_state"]
    assert s1["ttft_mean_s"] == pytest.approx(s0["ttft_mean_s"] + 29 * s0["tpot_mean_s"])
    assert chunk["deployment"]["first_chunk_tokens"] == 30
    assert s1["ttft_parts_s"]["first_chunk"] == pytest.approx(29 * s0["tpot_mean_s"])
    assert s0["ttft_parts_s"]["first_chunk"] == 0.0
    assert "first_chunk_tokens" not in base["deployment"]
    t0 = run("trtllm", "workers=1,tp=8")["steady_state"]
    t1 = run("trtllm", "workers=1,tp=8,stream_interval=30")["steady_state"]
    assert t1["ttft_mean_s"] == pytest.approx(t0["ttft_mean_s"])
    for bad in ("0", "-3", "abc", "100000000"):
        r = cw("serve", "estimate", "--model", "deepseek-r1", "--gpu", "b200", "--engine",
               "sglang", "--precision", "fp8", "--concurrency", "32", "--input-len", "1024",
               "--output-len", "1024", "--prefill", "workers=1,tp=8", "--decode",
               f"workers=1,tp=8,stream_interval={bad}")
        assert r.exit_code == 2 and "--decode" in r.stderr and "Traceback" not in r.output



def test_expert_imbalance_slows_the_busiest_expert_parallel_gpu() -> None:
    """--expert-imbalance 1.5 on DeepSeek-V3 with attention DP and EP 8: the busiest GPU's
    expert GEMMs and all-to-all share grow 1.5x, so iterations lengthen (TPOT and TTFT up, by
    less than 1.5x: attention and the dense layers do not change); the deployment and a note
    say so; a dense model, a value below 1 or above 64 and the request-level path refuse it."""
    base = ["serve", "estimate", "--model", "deepseek-v3", "--gpu", "b200", "--engine",
            "sglang", "--tp", "8", "--adp", "8", "--moe-ep", "8", "--precision", "fp8",
            "--concurrency", "256", "--input-len", "1024", "--output-len", "1024",
            "--steady-only", "--json"]
    even = json.loads(cw(*base).output)
    skew = json.loads(cw(*base, "--expert-imbalance", "1.5").output)
    assert even["deployment"]["expert_imbalance"] == 1.0
    assert skew["deployment"]["expert_imbalance"] == 1.5
    ratio = skew["steady_state"]["tpot_mean_s"] / even["steady_state"]["tpot_mean_s"]
    assert 1.05 < ratio < 1.5
    assert skew["steady_state"]["ttft_mean_s"] > even["steady_state"]["ttft_mean_s"]
    assert any("expert load imbalance 1.5" in n and "not validated" in n
               for n in skew["notes"])
    assert not any("imbalance" in n for n in even["notes"])
    for value, words in (("0.9", "outside 1 .. 64"), ("65", "outside 1 .. 64"),
                         ("nan", "outside 1 .. 64")):
        r = cw(*base, "--expert-imbalance", value)
        assert r.exit_code == 2 and f"--expert-imbalance: {value}"[:22] in r.output, r.output
        assert words in r.output
    r = cw("serve", "estimate", "--model", "llama-3.1-8b", "--gpu", "b200", "--engine",
           "sglang", "--concurrency", "16", "--input-len", "1024", "--output-len", "128",
           "--steady-only", "--expert-imbalance", "1.2")
    assert r.exit_code == 2 and "has no routed experts" in r.output, r.output
    r = cw("serve", "estimate", "--model", "deepseek-v3", "--gpu", "b200", "--tp", "8",
           "--qps", "1", "--input-len", "100", "--output-len", "10",
           "--expert-imbalance", "1.2")
    assert r.exit_code == 2 and "--expert-imbalance: only with --engine" in r.output


def test_serve_plan_takes_the_expert_imbalance_on_the_engine_path_only() -> None:
    base = ["serve", "plan", "--qps", "2", "--input-len", "512", "--output-len", "128",
            "--ttft-p99", "2", "--tpot-p99", "0.05"]
    r = cw(*base, "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--engine", "vllm",
           "--expert-imbalance", "1.3")
    assert r.exit_code == 2 and "llama-3.1-8b has no routed experts" in r.output, r.output
    r = cw(*base, "--model", "deepseek-v3", "--expert-imbalance", "1.3")
    assert r.exit_code == 2 and "--expert-imbalance: only with --engine" in r.output, r.output
    r = cw(*base, "--model", "deepseek-v3", "--gpu", "b200", "--engine", "sglang",
           "--expert-imbalance", "100")
    assert r.exit_code == 2 and "outside 1 .. 64" in r.output, r.output


def test_mixed_chunks_break_sglang_s_lockstep() -> None:
    """--mixed-chunk (SGLang's --enable-mixed-chunk): equal-length clients no longer move in
    lockstep, the deployment says so; it is refused on another engine, on a disaggregated
    deployment and without --engine."""
    base = ["serve", "estimate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--engine",
            "sglang", "--concurrency", "64", "--input-len", "2048", "--output-len", "512",
            "--steady-only", "--json"]
    first = json.loads(cw(*base).output)
    mixed = json.loads(cw(*base, "--mixed-chunk").output)
    assert "mixed_chunk" not in first["deployment"]
    assert mixed["deployment"]["mixed_chunk"] is True
    assert "lockstep" in first["steady_state"]["detail"]
    assert "lockstep" not in mixed["steady_state"]["detail"]
    assert mixed["steady_state"]["ttft_mean_s"] < first["steady_state"]["ttft_mean_s"]
    assert any("--enable-mixed-chunk" in n and "held-out H200" in n for n in mixed["notes"])
    assert not any("--enable-mixed-chunk" in n for n in first["notes"])
    r = cw(*base[:7], "trtllm", *base[8:], "--mixed-chunk")
    assert r.exit_code == 2 and "--mixed-chunk: mixing a prompt's chunk" in r.output, r.output
    r = cw(*base, "--mixed-chunk", "--prefill", "workers=1,tp=1", "--decode", "workers=1,tp=1")
    assert r.exit_code == 2 and "--mixed-chunk: an aggregated server's option" in r.output
    r = cw(*base, "--mixed-chunk", "--speculative", "3:0.7")
    assert r.exit_code == 2 and "turns mixed chunks off under speculative" in r.output
    r = cw("serve", "estimate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm",
           "--concurrency", "8", "--input-len", "512", "--output-len", "64", "--mixed-chunk")
    assert r.exit_code == 2 and "--mixed-chunk: only with --engine" in r.output, r.output
    r = cw("serve", "plan", "--model", "llama-3.1-8b", "--qps", "2", "--input-len", "512",
           "--output-len", "128", "--ttft-p99", "2", "--tpot-p99", "0.05", "--mixed-chunk")
    assert r.exit_code == 2 and "--mixed-chunk: only with --engine sglang" in r.output


def test_serve_plan_searches_mixed_chunk_layouts() -> None:
    r = cw("serve", "plan", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--engine", "sglang",
           "--qps", "2", "--input-len", "512", "--output-len", "128", "--ttft-p99", "2",
           "--tpot-p99", "0.05", "--mixed-chunk", "--json")
    assert r.exit_code == 0, r.output
    agg = json.loads(r.stdout)["aggregated"]
    assert agg is not None and agg["mixed_chunk"] is True
    r = cw("serve", "plan", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--engine", "vllm",
           "--qps", "2", "--input-len", "512", "--output-len", "128", "--ttft-p99", "2",
           "--tpot-p99", "0.05", "--mixed-chunk")
    assert r.exit_code == 2 and "--mixed-chunk: mixing a prompt's chunk" in r.output, r.output


def test_max_tokens_bounds_an_aggregated_iteration() -> None:
    """--max-tokens (vLLM --max-num-batched-tokens): 8k prompts in 1,024-token chunks take
    eight iterations each, so TTFT grows; the deployment reports the budget. Refused without
    --engine, beside --prefill/--decode, out of bounds, and below the prompt on an engine that
    takes prompts whole."""
    base = ["serve", "estimate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--engine",
            "vllm", "--concurrency", "16", "--input-len", "8192", "--output-len", "256",
            "--steady-only", "--json"]
    wide = json.loads(cw(*base).output)
    narrow = json.loads(cw(*base, "--max-tokens", "1024").output)
    assert narrow["deployment"]["agg"]["max_tokens"] == 1024
    assert wide["deployment"]["agg"]["max_tokens"] > 1024
    assert narrow["steady_state"]["ttft_mean_s"] > 1.5 * wide["steady_state"]["ttft_mean_s"]
    for extra, words in ((("--max-tokens", "0"), "--max-tokens: must be"),
                         (("--max-tokens", "20000000"), "--max-tokens: must be"),
                         (("--max-tokens", "1024", "--prefill", "workers=1,tp=1", "--decode",
                           "workers=1,tp=1"), "give each role's max_tokens= instead")):
        r = cw(*base, *extra)
        assert r.exit_code == 2 and words in r.output, r.output
    r = cw(*base[:7], "trtllm", *base[8:], "--max-tokens", "4096")
    assert r.exit_code == 2 and "takes a prompt whole" in r.output, r.output
    r = cw("serve", "estimate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm",
           "--concurrency", "8", "--input-len", "512", "--output-len", "64",
           "--max-tokens", "1024")
    assert r.exit_code == 2 and "--max-tokens: only with --engine" in r.output, r.output


def test_serve_plan_takes_a_token_budget_for_its_aggregated_layouts() -> None:
    base = ["serve", "plan", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--qps", "2",
            "--input-len", "2048", "--output-len", "128", "--ttft-p99", "3", "--tpot-p99", "0.05"]
    r = cw(*base, "--engine", "vllm", "--max-tokens", "512", "--json")
    assert r.exit_code == 0, r.output
    agg = json.loads(r.stdout)["aggregated"]
    assert agg is not None and agg["agg"]["max_tokens"] == 512
    r = cw(*base, "--max-tokens", "512")
    assert r.exit_code == 2 and "--max-tokens: only with --engine" in r.output, r.output
    r = cw(*base, "--engine", "trtllm", "--max-tokens", "512")
    assert r.exit_code == 2 and "takes a prompt whole" in r.output, r.output


def test_serve_plan_refuses_a_request_past_the_context() -> None:
    r = cw("serve", "plan", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--engine", "vllm",
           "--qps", "2", "--input-len", "2000000", "--output-len", "128", "--ttft-p99", "2",
           "--tpot-p99", "0.05")
    assert r.exit_code == 2, r.output
    assert "--input-len: 2000000 + 128 tokens exceed the 131072-token context" in r.output


def test_cpu_offload_on_a_grace_superchip() -> None:
    """--cpu-offload-gb: Llama-3.1-70B in 16 bits fits one GH200 only with an offload, which
    the estimate streams over NVLink-C2C and reports as not validated; elsewhere it is
    refused with the flag named."""
    base = ["serve", "estimate", "--model", "llama-3.1-70b", "--gpu", "gh200", "--engine",
            "vllm", "--concurrency", "4", "--input-len", "1024", "--output-len", "128",
            "--steady-only"]
    r = cw(*base)
    assert r.exit_code == 2 and "no room for one request's KV cache" in r.output, r.output
    r = cw(*base, "--cpu-offload-gb", "30", "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["deployment"]["agg"]["offloaded_gib_per_gpu"] == pytest.approx(30.0)
    assert d["validation"]["validated"] is False and d["validation"]["offload_note"]
    # 32 GB over the link in every decode iteration: over 86 ms a token
    assert d["steady_state"]["tpot_mean_s"] > 32.2e9 / 374e9
    for args, msg in ((("--engine", "trtllm"), "--cpu-offload-gb: trtllm has no weight offload"),
                      (("--gpu", "h100-sxm"), "--cpu-offload-gb: h100-sxm has no CPU memory")):
        swapped = list(base)
        swapped[swapped.index(args[0]) + 1] = args[1]
        r = cw(*swapped, "--cpu-offload-gb", "30")
        assert r.exit_code == 2 and msg in r.output, r.output
    r = cw("serve", "plan", "--model", "llama-3.1-70b", "--gpu", "gh200", "--engine", "vllm",
           "--qps", "1", "--input-len", "1024", "--output-len", "512", "--ttft-p99", "10",
           "--tpot-p99", "0.3", "--cpu-offload-gb", "30")
    assert r.exit_code == 0, r.output
    assert "the offload pays" in r.output and "no deployment meets the SLOs without it" in r.output


def test_shared_prefixes_and_a_kv_host_tier() -> None:
    """--prefix-len, --prefix-groups, --kv-offload-gb: prompts that share prefixes reuse them
    from HBM or the host tier; the estimate says how much and what the tier changes, and bad
    combinations exit 2 naming the flag."""
    base = ["serve", "estimate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--engine",
            "vllm", "--qps", "3", "--input-len", "8500", "--output-len", "200",
            "--num-requests", "800"]
    r = cw(*base, "--prefix-len", "8000", "--prefix-groups", "100", "--kv-offload-gb", "100",
           "--json")
    assert r.exit_code == 0, r.output
    pc = json.loads(r.stdout)["prefix_cache"]
    assert pc["groups"] == 100 and pc["prefix_len"] == 8000
    assert pc["hit_rate"] > pc["without_host_tier"]["hit_rate"]
    r = cw(*base, "--prefix-len", "8000", "--prefix-groups", "100", "--kv-offload-gb", "100")
    assert r.exit_code == 0, r.output
    assert "loaded from the host tier" in r.output and "without the host tier" in r.output
    for extra, msg in (
            (("--kv-offload-gb", "10"), "--kv-offload-gb: the host tier serves prompts that "
                                        "share a prefix"),
            (("--prefix-groups", "3"), "--prefix-groups: give --prefix-len"),
            (("--prefix-len", "9000"), "--prefix-len: 9000 tokens exceed the 8500-token"),
            (("--prefix-len", "0"), "--prefix-len"),
            (("--prefix-len", "100", "--kv-offload-gb", "5000"), "--kv-offload-gb: 5000 GiB "
                                                                "exceeds the 256 GiB"),
            (("--prefix-len", "100", "--kv-offload-gb", "nan"), "--kv-offload-gb"),
            (("--prefix-len", "100", "--prefix-groups", "-1"), "--prefix-groups"),
            (("--prefix-len", "100", "--benchmark-rounds", "10"), "--benchmark-rounds")):
        r = cw(*base, *extra)
        assert r.exit_code == 2 and msg in r.output, (extra, r.output)
    # Without --engine the replicas' prefix caches serve the prefixes; the host tier is the
    # engines'
    plain = ["serve", "estimate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--qps",
             "3", "--input-len", "2000", "--output-len", "50", "--num-requests", "300"]
    r = cw(*plain, "--prefix-len", "1500", "--prefix-groups", "4", "--json")
    assert r.exit_code == 0, r.output
    pc = json.loads(r.stdout)["prefix_cache"]
    assert pc["groups"] == 4 and 0.5 < pc["hit_rate"] < 1500 / 2000
    r = cw(*plain, "--prefix-len", "1500", "--kv-offload-gb", "10")
    assert r.exit_code == 2 and "--kv-offload-gb: only with --engine" in r.output, r.output
    r = cw(*plain, "--prefix-len", "3000")
    assert r.exit_code == 2 and "--prefix-len: 3000 tokens exceed" in r.output, r.output


def test_a_plan_on_shared_prefixes_and_a_kv_host_tier() -> None:
    """serve plan --engine with --prefix-len, --prefix-groups, --kv-offload-gb: the plan
    sizes the fleet with the prefix cache and says what it and the host tier save; bad
    combinations exit 2 naming the flag."""
    base = ["serve", "plan", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--engine",
            "vllm", "--qps", "20", "--input-len", "8000", "--output-len", "200",
            "--ttft-p99", "2", "--tpot-p99", "0.05"]
    r = cw(*base, "--prefix-len", "7000", "--prefix-groups", "20", "--kv-offload-gb", "64",
           "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    pc = d["prefix_cache"]
    assert pc["groups"] == 20 and pc["prefix_len"] == 7000
    assert pc["gpus"] < pc["gpus_without_reuse"]
    r = cw(*base, "--prefix-len", "7000", "--prefix-groups", "20")
    assert r.exit_code == 0, r.output
    text = " ".join(r.output.split())  # as wrapped to the terminal's width
    assert "prefix cache:" in text and "computing every prompt whole" in text
    for extra, msg in (
            (("--kv-offload-gb", "10"), "--kv-offload-gb: the host tier serves prompts that "
                                        "share a prefix"),
            (("--prefix-groups", "3"), "--prefix-groups: give --prefix-len"),
            (("--prefix-len", "9000"), "--prefix-len: 9000 tokens exceed the 8000-token"),
            (("--prefix-len", "0"), "--prefix-len"),
            (("--prefix-len", "100", "--kv-offload-gb", "5000"), "--kv-offload-gb: 5000 GiB "
                                                                "exceeds the 256 GiB"),
            (("--prefix-len", "100", "--prefix-groups", "-1"), "--prefix-groups")):
        r = cw(*base, *extra)
        assert r.exit_code == 2 and msg in r.output, (extra, r.output)
    # Without --engine the replicas' own prefix caches serve the prefixes; the host tier is
    # the engines'
    no_engine = [a for a in base if a not in ("--engine", "vllm")]
    r = cw(*no_engine, "--precision", "fp8", "--prefix-len", "7000", "--prefix-groups", "20",
           "--num-requests", "300", "--gpu", "h100-sxm", "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["best"]["prefix_hit_rate"] > 0.5
    r = cw(*no_engine, "--prefix-len", "50", "--kv-offload-gb", "10")
    assert r.exit_code == 2 and "--kv-offload-gb: only with --engine" in r.output, r.output


def test_a_prompt_longer_than_the_measured_rows_says_so() -> None:
    """The validated regime's longest measured prompt bounds what its TTFT error covers;
    vLLM adds where its prefill alone was checked (validate --table kv-offload)."""
    base = ["serve", "estimate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--concurrency",
            "2", "--output-len", "64", "--steady-only", "--json"]
    short = json.loads(cw(*base, "--engine", "sglang", "--input-len", "1000").stdout)
    assert short["validation"]["validated"] and "prompt_note" not in short["validation"]
    for engine, extra in (("sglang", None), ("vllm", "checked on H100 up to 100,000 tokens")):
        r = cw(*base, "--engine", engine, "--input-len", "60000")
        assert r.exit_code == 0, r.output
        note = json.loads(r.stdout)["validation"]["prompt_note"]
        assert "prompts of 60,000 tokens are longer than any measured" in note
        assert (extra in note) if extra else ("kv-offload" not in note)


ENGINE_EST = ["serve", "estimate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--engine",
              "vllm", "--concurrency", "4", "--input-len", "512", "--output-len", "32"]
DSV3 = ["serve", "estimate", "--model", "deepseek-v3", "--gpu", "gb200", "--engine", "trtllm",
        "--precision", "fp4", "--concurrency", "64", "--input-len", "1024", "--output-len",
        "256"]


@pytest.mark.parametrize("args, msg", [
    ((*ENGINE_EST, "--server", "nonexistent"), "--server: only without --engine"),
    ((*ENGINE_EST, "--router", "bogus"), "--router: 'bogus' is not one of least_outstanding, "
                                         "cache_aware"),
    ((*ENGINE_EST, "--ep-comm", "alltoall"), "--ep-comm: only without --engine"),
    ((*ENGINE_EST, "--kv-precision", "fp8"), "--kv-precision: only without --engine"),
    ((*ENGINE_EST, "--steady-only", "--length-dist", "lognormal"),
     "--steady-only: the steady state is for prompts and outputs of fixed lengths"),
    ((*DSV3, "--prefill", "workers=1,tp=4", "--decode", "workers=1,tp=4", "--tp", "8"),
     "--tp: with --prefill/--decode, give each role's layout"),
    ((*DSV3, "--prefill", "workers=1,tp=4,tp=8", "--decode", "workers=1,tp=4"),
     "--prefill: tp is given twice"),
    ((*DSV3, "--prefill", "workers=1000000,tp=4", "--decode", "workers=1,tp=4"),
     "--prefill: workers=1000000 is above 1,024 workers a role"),
    ((*DSV3, "--prefill", ",,,", "--decode", "workers=1,tp=4"), "--prefill: empty"),
    ((*DSV3, "--prefill", "workers=1,tp=4,max_tokens=1", "--decode", "workers=1,tp=4"),
     "--prefill: max_tokens=1 cannot hold a 1,024-token prompt"),
    (("serve", "estimate", "--model", "deepseek-v3", "--engine", "sglang", "--gpu", "b200",
      "--tp", "8", "--precision", "fp8", "--moe-tp", "16", "--concurrency", "8",
      "--input-len", "100", "--output-len", "10"), "--moe-tp: 16 does not divide"),
    (("serve", "estimate", "--engine", "trtllm", "--model", "llama-3.1-70b", "--gpu", "b200",
      "--tp", "8", "--input-len", "100000", "--output-len", "100", "--concurrency", "2"),
     "--input-len: a 100,000-token prompt exceeds trtllm's budget of 8,192 tokens"),
    (("serve", "plan", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--engine", "vllm",
      "--qps", "1", "--input-len", "512", "--output-len", "32", "--ttft-p99", "2",
      "--tpot-p99", "0.1", "--kv-precision", "fp8"), "--kv-precision: only without --engine"),
    (("serve", "plan", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--engine", "vllm",
      "--qps", "1", "--input-len", "512", "--output-len", "32", "--ttft-p99", "2",
      "--tpot-p99", "0.1", "--length-dist", "lognormal"), "--length-dist/--length-cv: only"),
    ((*ENGINE_EST, "--speculative", "3"), "is not K:ACCEPT or K:ACCEPT:COST"),
])
def test_options_the_engine_path_would_drop_or_misread_exit_2_naming_the_flag(
        args: tuple[str, ...], msg: str) -> None:
    """Options of the engine-less path, role specs that repeat or overflow, budgets that
    cannot hold a prompt: each is refused with its own flag (never accepted and dropped, or
    blamed on another flag), and messages print as written (no emoji codes)."""
    r = cw(*args)
    assert r.exit_code == 2, r.output
    assert msg in " ".join(r.output.split()), r.output


def test_a_cache_aware_router_keeps_prefixes_where_they_are_held() -> None:
    """--router cache_aware on the engine path: four one-GPU ranks and 200 documents reuse
    more of their prompts than behind the least-outstanding default, and serve plan sizes a
    smaller fleet with it; without --engine the plan refuses the option."""
    est = ["serve", "estimate", "--engine", "vllm", "--gpu", "h100-sxm", "--model",
           "llama-3.1-8b", "--replicas", "4", "--qps", "12", "--input-len", "8000",
           "--output-len", "200", "--prefix-len", "7000", "--prefix-groups", "200",
           "--num-requests", "1500", "--json"]
    hit = {}
    for router in ("least_outstanding", "cache_aware"):
        r = cw(*est, "--router", router)
        assert r.exit_code == 0, r.output
        d = json.loads(r.stdout)
        assert d["sim"]["router"] == router
        hit[router] = d["prefix_cache"]["hit_rate"]
    assert hit["cache_aware"] > hit["least_outstanding"] + 0.3
    plan = ["serve", "plan", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--engine", "vllm",
            "--qps", "20", "--input-len", "8000", "--output-len", "200", "--ttft-p99", "2",
            "--tpot-p99", "0.05", "--prefix-len", "7000", "--prefix-groups", "200", "--json"]
    gpus = {}
    for router in ("least_outstanding", "cache_aware"):
        r = cw(*plan, "--router", router)
        assert r.exit_code == 0, r.output
        d = json.loads(r.stdout)
        assert d["router"] == router
        gpus[router] = d["choice"]["gpus"]
    assert gpus["cache_aware"] < gpus["least_outstanding"]
    r = cw("serve", "plan", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--qps", "2",
           "--input-len", "512", "--output-len", "32", "--ttft-p99", "2", "--tpot-p99", "0.1",
           "--router", "cache_aware")
    assert r.exit_code == 2 and "--router: only with --engine" in r.output, r.output


def test_an_overridden_gpu_is_not_called_validated(tmp_path: object) -> None:
    """The serving-silicon rows measured the shipped H100: a user's h100-sxm (here with twice
    the memory bandwidth) is not "validated on 228 rows"."""
    from pathlib import Path

    import yaml

    shown = json.loads(cw("catalog", "show", "h100-sxm", "--json").stdout)
    entry = {k: v for k, v in shown.items() if k not in ("catalog_kind", "defined_in")}
    entry["memory_bandwidth_gbps"] = 2 * entry["memory_bandwidth_gbps"]
    entry["override"] = True
    path = Path(str(tmp_path)) / "mine.yaml"
    path.write_text(yaml.safe_dump({"gpus": [entry]}))
    args = ("--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--engine", "vllm",
            "--concurrency", "8", "--steady-only", "--json")
    shipped = json.loads(cw(*BASE, *args).stdout)["validation"]
    r = cw("--catalog", str(path), *BASE, *args)
    assert r.exit_code == 0, r.output
    mine = json.loads(r.stdout)["validation"]
    assert shipped["validated"] is True and mine["validated"] is False
    assert "h100-sxm is overridden by a user catalog" in mine["note"]


def test_a_saturated_disaggregated_loop_says_its_ttft_is_a_queue() -> None:
    """6,144 clients on one 4-GPU prefill worker: the prefill sets the rate, and TTFT is the
    clients over it less the decode time, which a small rate error moves a lot."""
    args = ("serve", "estimate", "--input-len", "1024", "--output-len", "1024",
            "--model", "deepseek-r1", "--gpu", "gb200", "--engine", "trtllm",
            "--precision", "fp4", "--concurrency", "6144", "--steady-only",
            "--prefill", "workers=1,tp=1,adp=4,moe_ep=4",
            "--decode", "workers=2,tp=1,adp=4,moe_ep=4,max_batch=768")
    r = cw(*args, "--json")
    assert r.exit_code == 0, r.output
    st = json.loads(r.stdout)["steady_state"]
    assert st["saturated_by"] == "prefill"
    k = 6144 / st["requests_per_s"] / st["ttft_mean_s"]
    assert st["ttft_sensitivity"] == pytest.approx(k) and k > 10
    text = cw(*args).stdout
    assert "saturated (the prefill workers at their capacity)" in text
    assert f"about {k:.0f} %" in text
    calm = json.loads(cw(*BASE, "--model", "llama-3.1-70b", "--gpu", "b200", "--engine", "vllm",
                         "--tp", "2", "--precision", "fp8", "--concurrency", "8",
                         "--steady-only", "--json").stdout)["steady_state"]
    assert calm["saturated_by"] is None and calm["ttft_sensitivity"] is None


def test_the_validated_line_names_the_model_kind() -> None:
    # Trn2's MoE rows (optimum-neuron) are reported apart from its dense ones.
    r = cw("serve", "estimate", "--model", "qwen3-235b-a22b", "--gpu", "trn2", "--tp", "16",
           "--input-len", "1500", "--output-len", "250", "--engine", "neuron@optimum-0.4",
           "--concurrency", "1", "--num-requests", "20")
    assert r.exit_code == 0, r.output
    out = " ".join(r.stdout.split())
    assert "4 measured neuron rows of MoE models on trn2 (agg, every layout pooled)" in out


@pytest.mark.parametrize(("extra", "message"), [
    (("--engine", "vllm", "--margin", "p99"), "--margin: 'p99' is not one of none, median, p90"),
    (("--margin", "p90"), "--margin: only with --engine"),
    (("--engine", "vllm", "--margin", " "), "--margin: empty"),
])
def test_a_bad_margin_exits_2_naming_the_flag(extra: tuple[str, ...], message: str) -> None:
    r = cw("serve", "plan", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--qps", "4",
           "--input-len", "1024", "--output-len", "128", "--ttft-p99", "2", "--tpot-p99",
           "0.05", *extra)
    assert r.exit_code == 2, r.output
    assert message in " ".join((r.stdout + r.stderr).split())


def test_a_plan_with_a_margin_says_what_it_held_the_slos_to() -> None:
    args = ("serve", "plan", "--model", "llama-3.1-70b", "--gpu", "b200", "--engine", "vllm",
            "--precision", "fp8", "--qps", "4", "--input-len", "1024", "--output-len", "512",
            "--ttft-p99", "0.5", "--tpot-p99", "0.03", "--margin", "p90", "--num-requests",
            "300")
    d = json.loads(cw(*args, "--json").stdout)
    m = d["margin"]
    text = " ".join(cw(*args).stdout.split())
    assert ("sized with a margin (the measured rows' ratio one row in ten exceeds): its model "
            f"p99s x TTFT {m['ttft_ratio']:.2f} and TPOT {m['tpot_ratio']:.2f} within the SLOs"
            ) in text
    plain = " ".join(cw(*args[:-4], "--num-requests", "300").stdout.split())
    assert "sized with a margin" not in plain


def test_a_gpu_only_the_held_out_file_measured_says_its_rows_were_not_fitted_on() -> None:
    """SGLang's constants were fitted on no H200 row; the held-out file measured it: the
    output reports that file's error and says its rows were held out."""
    args = ("serve", "estimate", "--model", "deepseek-v3", "--gpu", "h200-sxm", "--tp", "8",
            "--precision", "fp8", "--engine", "sglang", "--concurrency", "32",
            "--input-len", "1024", "--output-len", "1024", "--steady-only")
    d = json.loads(cw(*args, "--json").stdout)
    v = d["validation"]
    assert v["validated"] is True and v["held_out"] is True and v["gpu"] == "h200-sxm"
    text = " ".join(cw(*args).stdout.split())
    assert (f"{v['rows']} measured sglang rows of MoE models on h200-sxm (agg at tp 8 x "
            "attention-DP 1, held out: no constant was fitted on them)") in text


def test_a_plan_on_a_held_out_gpu_says_its_lean_is_of_rows_not_fitted_on() -> None:
    args = ("serve", "plan", "--model", "llama-3.1-70b", "--gpu", "h200-sxm", "--engine",
            "vllm", "--precision", "fp8", "--qps", "4", "--input-len", "1024",
            "--output-len", "512", "--ttft-p99", "2", "--tpot-p99", "0.05")
    d = json.loads(cw(*args, "--json").stdout)
    assert d["choice"]["validation"]["held_out"] is True
    text = " ".join(cw(*args).stdout.split())
    assert ("measured lean: this regime's rows (held out: no constant was fitted on them) "
            "measured TTFT") in text
