"""`clusterwright size`: the JSON contract, textbook sizing answers, and bad input."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from clusterwright.cli.main import app
from tests.cli.helpers import user_error

CONTRACT_KEYS = (
    "params",
    "weights_gb",
    "gradients_gb",
    "optimizer_gb",
    "activations_gb",
    "kv_cache_gb",
    "total_gb",
    "min_gpus",
)
PARTS = ("weights_gb", "gradients_gb", "optimizer_gb", "activations_gb", "kv_cache_gb")

runner = CliRunner()


def cw(*args: str) -> Result:
    return runner.invoke(app, list(args), env={"CLUSTERWRIGHT_CATALOG": None})


def size_json(*args: str) -> dict[str, Any]:
    r = cw("size", *args, "--json")
    assert r.exit_code == 0, r.output
    assert r.stderr == ""
    data = json.loads(r.stdout)
    assert isinstance(data, dict)
    return data


GPT_YAML = """\
id: "tiny-gpt"
name: "Tiny GPT (test)"
source: "made up for a unit test"
layers: 12
hidden: 768
heads: 12
ffn_hidden: 3072
vocab: 50257
max_seq_len: 1024
"""


# ---------------------------------------------------------------------------- contract


@pytest.mark.parametrize(
    "args",
    [
        ("--model", "llama-2-7b", "--training"),
        ("--model", "llama-2-7b"),
        ("--model", "mixtral-8x7b", "--training", "--dp", "8", "--zero", "1"),
    ],
    ids=["training", "serving", "moe-training"],
)
def test_json_has_contract_keys_and_parts_sum_to_total(args: tuple[str, ...]) -> None:
    d = size_json(*args)
    for key in CONTRACT_KEYS:
        assert key in d, key
    assert isinstance(d["params"], int) and d["params"] > 0
    for key in PARTS:
        assert d[key] >= 0, key
    assert d["weights_gb"] > 0
    assert d["total_gb"] == pytest.approx(sum(d[k] for k in PARTS) + d.get("reserve_gb", 0.0))
    assert d["min_gpus"]
    for gpu, n in d["min_gpus"].items():
        assert isinstance(n, int) and n >= 1, gpu


def test_training_has_no_kv_cache_and_serving_has_no_optimizer() -> None:
    train = size_json("--model", "llama-2-7b", "--training")
    serve = size_json("--model", "llama-2-7b")
    assert train["mode"] == "training"
    assert serve["mode"] == "inference"
    assert train["kv_cache_gb"] == 0
    assert train["gradients_gb"] > 0 and train["optimizer_gb"] > 0
    assert serve["gradients_gb"] == 0 and serve["optimizer_gb"] == 0
    assert serve["kv_cache_gb"] > 0


def test_gpu_flag_limits_min_gpus_to_those_gpus() -> None:
    d = size_json("--model", "llama-2-7b", "--gpu", "h100-sxm", "--gpu", "b200")
    assert set(d["min_gpus"]) == {"h100-sxm", "b200"}


def test_min_gpus_hold_the_weights() -> None:
    d = size_json("--model", "llama-2-70b", "--gpu", "h100-sxm", "--gpu", "a100-40gb-sxm")
    mem = {"h100-sxm": 80, "a100-40gb-sxm": 40}
    for gpu, n in d["min_gpus"].items():
        assert n * mem[gpu] >= d["weights_gb"]
        assert (n - 1) * mem[gpu] * 0.9 < d["weights_gb"] + d["kv_cache_gb"] + 1.0


# ---------------------------------------------------------------------- classic answers


def test_adam_mixed_precision_7b_needs_16_bytes_per_param_of_states() -> None:
    d = size_json("--model", "llama-2-7b", "--training", "--optimizer", "adam")
    p = d["params"]
    assert p == pytest.approx(6.74e9, rel=0.005)  # Llama 2 7B
    assert d["weights_gb"] * 1e9 / p == pytest.approx(2)  # bf16 weights
    assert d["gradients_gb"] * 1e9 / p == pytest.approx(2)  # bf16 grads
    assert d["optimizer_gb"] * 1e9 / p == pytest.approx(12)  # fp32 master + m + v
    states = d["weights_gb"] + d["gradients_gb"] + d["optimizer_gb"]
    assert states == pytest.approx(107.8, rel=0.005)
    assert states == pytest.approx(16 * p / 1e9, rel=1e-9)


def test_sgd_without_momentum_state_needs_less_than_adam() -> None:
    adam = size_json("--model", "llama-2-7b", "--training")
    sgd = size_json("--model", "llama-2-7b", "--training", "--optimizer", "sgd")
    assert sgd["optimizer_gb"] < adam["optimizer_gb"]
    assert sgd["weights_gb"] == adam["weights_gb"]


def test_gpt3_175b_fp16_serving_needs_tp8_on_h100() -> None:
    d = size_json("--model", "gpt3-175b", "--precision", "fp16", "--gpu", "h100-sxm")
    assert d["params"] == pytest.approx(175e9, rel=0.005)
    assert d["weights_gb"] == pytest.approx(349.2, rel=0.005)
    # 349 GB of weights over 80 GB GPUs: at least 5 by memory alone ...
    assert d["min_gpus"]["h100-sxm"] >= 5
    # ... and the smallest power-of-two TP dividing 96 heads that fits is 8.
    assert d["min_gpus_layout"]["h100-sxm"] == 8


def test_kv_cache_of_llama2_70b_is_327680_bytes_per_token() -> None:
    d = size_json(
        "--model",
        "llama-2-70b",
        "--batch",
        "8",
        "--context",
        "4096",
        "--tp",
        "1",
        "--precision",
        "bf16",
    )
    per_token = 2 * 80 * 8 * 128 * 2  # K and V, layers, kv heads (GQA), head dim, bf16
    assert per_token == 327_680
    assert d["kv_cache_gb"] == pytest.approx(per_token * 8 * 4096 / 1e9, rel=1e-9)


def test_kv_cache_scales_with_batch_tp_and_kv_precision() -> None:
    base = ("--model", "llama-2-70b", "--batch", "8", "--context", "4096")
    kv = size_json(*base)["kv_cache_gb"]
    assert size_json(*base[:3], "16", *base[4:])["kv_cache_gb"] == pytest.approx(2 * kv)
    assert size_json(*base, "--tp", "8")["kv_cache_gb"] == pytest.approx(kv / 8)
    assert size_json(*base, "--kv-precision", "fp8")["kv_cache_gb"] == pytest.approx(kv / 2)


def test_llama2_70b_on_a100s_needs_more_than_one_gpu() -> None:
    d = size_json("--model", "llama-2-70b", "--gpu", "a100-80gb-sxm", "--gpu", "a100-40gb-sxm")
    assert d["weights_gb"] == pytest.approx(138, rel=0.005)  # bf16
    # One 80 GB GPU cannot hold 138 GB of weights.
    assert d["min_gpus"]["a100-80gb-sxm"] >= 2
    assert d["min_gpus_layout"]["a100-80gb-sxm"] >= 2
    # 40 GB parts: four hold the weights only with nothing left over; TP 8 is needed.
    assert d["min_gpus"]["a100-40gb-sxm"] >= 4
    assert d["min_gpus_layout"]["a100-40gb-sxm"] == 8


def test_llama2_70b_tp_that_fits_on_a100_is_physically_consistent() -> None:
    """The TP picked is the first whose per-GPU total fits in 90 % of the GPU (vLLM's
    default gpu_memory_utilization), checked against `size --tp T` for the same model."""

    def per_gpu(tp: int, *extra: str) -> float:
        return size_json("--model", "llama-2-70b", "--tp", str(tp), *extra)["total_gb"]

    # 80 GB at batch 1, context 2048: TP 2 leaves 69 GB of weights per GPU, under 72 GB.
    layout = size_json("--model", "llama-2-70b", "--gpu", "a100-80gb-sxm")["min_gpus_layout"]
    assert layout["a100-80gb-sxm"] == 2
    assert per_gpu(1) > 0.9 * 80
    assert per_gpu(2) <= 0.9 * 80
    # 40 GB: TP 4 leaves 34.5 GB of weights per GPU and no room; TP 8 fits.
    assert per_gpu(4) > 0.9 * 40
    assert per_gpu(8) <= 0.9 * 40
    # A longer context and bigger batch on 80 GB parts needs TP 4.
    long = ("--batch", "32", "--context", "4096")
    d = size_json("--model", "llama-2-70b", "--gpu", "a100-80gb-sxm", *long)
    assert d["min_gpus_layout"]["a100-80gb-sxm"] == 4
    assert per_gpu(2, *long) > 0.9 * 80
    assert per_gpu(4, *long) <= 0.9 * 80


def test_zero3_shards_weights_grads_and_optimizer_over_dp() -> None:
    args = ("--model", "llama-2-7b", "--training", "--dp", "8")
    z0 = size_json(*args, "--zero", "0")
    z3 = size_json(*args, "--zero", "3")
    for key in ("gradients_gb", "optimizer_gb"):
        assert z3[key] == pytest.approx(z0[key] / 8), key
    # Weights: the shard, plus the layer being computed and the one prefetched, gathered
    # whole (2 of Llama-2-7B's 32 layers).
    assert z0["weights_gb"] / 8 < z3["weights_gb"] < z0["weights_gb"] * (1 / 8 + 2 / 32)
    assert z3["activations_gb"] == pytest.approx(z0["activations_gb"])


def test_zero1_shards_only_the_optimizer() -> None:
    args = ("--model", "llama-2-7b", "--training", "--dp", "8")
    z0 = size_json(*args, "--zero", "0")
    z1 = size_json(*args, "--zero", "1")
    z2 = size_json(*args, "--zero", "2")
    assert z1["optimizer_gb"] == pytest.approx(z0["optimizer_gb"] / 8)
    assert z1["weights_gb"] == pytest.approx(z0["weights_gb"])
    assert z1["gradients_gb"] == pytest.approx(z0["gradients_gb"])
    assert z2["gradients_gb"] == pytest.approx(z0["gradients_gb"] / 8)
    assert z2["weights_gb"] == pytest.approx(z0["weights_gb"])


def test_zero_without_data_parallelism_changes_nothing() -> None:
    z0 = size_json("--model", "llama-2-7b", "--training", "--zero", "0")
    z3 = size_json("--model", "llama-2-7b", "--training", "--zero", "3")
    assert z3["total_gb"] == pytest.approx(z0["total_gb"])


def test_tensor_and_pipeline_parallelism_split_the_weights() -> None:
    one = size_json("--model", "llama-2-70b", "--training")
    tp8 = size_json("--model", "llama-2-70b", "--training", "--tp", "8")
    tp8pp4 = size_json("--model", "llama-2-70b", "--training", "--tp", "8", "--pp", "4")
    assert tp8["weights_gb"] == pytest.approx(one["weights_gb"] / 8, rel=0.02)
    assert tp8pp4["weights_gb"] < tp8["weights_gb"] / 3


def test_recompute_reduces_activation_memory() -> None:
    args = ("--model", "llama-2-7b", "--training", "--seq-len", "4096")
    none = size_json(*args, "--recompute", "none")["activations_gb"]
    sel = size_json(*args, "--recompute", "selective")["activations_gb"]
    full = size_json(*args, "--recompute", "full")["activations_gb"]
    assert full < sel <= none


def test_decode_at_batch_1_is_memory_bound_on_h100() -> None:
    d = size_json("--model", "llama-2-7b", "--gpu", "h100-sxm", "--batch", "1")
    h100 = json.loads(cw("catalog", "show", "h100-sxm", "--json").stdout)
    roof = d["roofline"]["h100-sxm"]
    assert set(roof) == {"prefill", "decode"}
    for phase in roof.values():
        assert phase["intensity_flop_per_byte"] > 0
        assert phase["ridge_flop_per_byte"] > 0
        assert phase["time_lower_bound_s"] > 0
    dec, pre = roof["decode"], roof["prefill"]
    assert dec["bound"] == "memory"
    assert dec["intensity_flop_per_byte"] < dec["ridge_flop_per_byte"]
    # Ridge = peak FLOP/s over HBM bytes/s.
    ridge = h100["peak_tflops"]["bf16"] * 1e12 / (h100["memory_bandwidth_gbps"] * 1e9)
    assert dec["ridge_flop_per_byte"] == pytest.approx(ridge, rel=0.01)
    # One decode step reads every weight once: at least weights / bandwidth.
    read_all = d["weights_gb"] / h100["memory_bandwidth_gbps"]
    assert dec["time_lower_bound_s"] >= 0.99 * read_all
    # A 2048-token prompt at batch 1 is compute bound.
    assert pre["bound"] == "compute"
    assert pre["intensity_flop_per_byte"] > pre["ridge_flop_per_byte"]


def test_training_json_has_no_roofline() -> None:
    assert "roofline" not in size_json("--model", "llama-2-7b", "--training")


def test_fp8_training_on_a100_is_unsupported_not_a_crash() -> None:
    d = size_json(
        "--model",
        "llama-2-7b",
        "--training",
        "--precision",
        "fp8",
        "--gpu",
        "a100-80gb-sxm",
        "--gpu",
        "h100-sxm",
    )
    assert "a100-80gb-sxm" in d["unsupported"]
    assert "fp8" in d["unsupported"]["a100-80gb-sxm"]
    assert "a100-80gb-sxm" not in d["min_gpus"]
    assert d["min_gpus"]["h100-sxm"] >= 1
    assert "h100-sxm" not in d["unsupported"]


def test_fp8_training_unsupported_gpu_shows_in_human_output() -> None:
    r = cw(
        "size",
        "--model",
        "llama-2-7b",
        "--training",
        "--precision",
        "fp8",
        "--gpu",
        "a100-80gb-sxm",
    )
    assert r.exit_code == 0, r.output
    assert "a100-80gb-sxm" in r.stdout
    assert "fp8" in r.stdout


@pytest.mark.parametrize("mode", [(), ("--training",)], ids=["serving", "training"])
def test_human_output_renders_memory_table(mode: tuple[str, ...]) -> None:
    r = cw("size", "--model", "llama-2-7b", "--gpu", "h100-sxm", *mode)
    assert r.exit_code == 0, r.output
    assert r.stderr == ""
    assert "llama-2-7b" in r.stdout
    assert "weights" in r.stdout
    assert "total" in r.stdout
    assert "h100-sxm" in r.stdout


# ----------------------------------------------------------------- custom model files


def test_model_yaml_file_is_sized_like_a_catalog_model(tmp_path: Path) -> None:
    f = tmp_path / "tiny.yaml"
    f.write_text(GPT_YAML)
    d = size_json("--model", str(f), "--training")
    assert d["model"] == "tiny-gpt"
    h, ffn, layers, vocab = 768, 3072, 12, 50257
    expected = layers * (4 * h * h + 2 * h * ffn) + 2 * vocab * h  # untied embeddings
    assert d["params"] == pytest.approx(expected, rel=1e-3)
    assert d["weights_gb"] == pytest.approx(2 * d["params"] / 1e9)
    serve = size_json("--model", str(f))
    assert serve["params"] == d["params"]
    # Sized at its own 1,024-token context: the default 2,048 would exceed it.
    assert serve["context"] == 1024
    assert serve["kv_cache_gb"] == pytest.approx(2 * 12 * 768 * 2 * 1024 / 1e9)


def test_model_yaml_file_may_wrap_one_entry_in_models(tmp_path: Path) -> None:
    f = tmp_path / "wrapped.yml"
    entry = textwrap.indent(GPT_YAML, "    ").replace("    id:", "  - id:", 1)
    f.write_text("models:\n" + entry)
    assert size_json("--model", str(f))["model"] == "tiny-gpt"


def test_model_yaml_with_a_bad_field_names_field_and_line(tmp_path: Path) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text(GPT_YAML + "hiden: 10\n")  # line 10
    err = user_error(cw("size", "--model", str(f)))
    assert "hiden" in err
    assert "line 10" in err
    assert "unknown field" in err


def test_model_yaml_with_a_bad_value_names_field_and_line(tmp_path: Path) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text(GPT_YAML.replace("layers: 12", "layers: -12"))  # line 4
    err = user_error(cw("size", "--model", str(f), "--json"))
    assert "layers" in err
    assert "line 4" in err


def test_model_yaml_that_does_not_exist_is_a_user_error(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    err = user_error(cw("size", "--model", str(missing), "--json"))
    assert str(missing) in err
    assert "no such file" in err


# ------------------------------------------------------------------------- bad input


# 12 sequences per step is not a multiple of dp * micro-batch = 8.
BAD_GLOBAL_BATCH = ["--model", "llama-2-7b", "--training", "--dp", "4", "--micro-batch", "2"]
BAD_GLOBAL_BATCH += ["--global-batch", "12"]

BAD_INPUT = [
    pytest.param(
        ["--model", "llama-2-70"],
        ["unknown model id", "did you mean", "'llama-2-70b'"],
        id="unknown-model",
    ),
    pytest.param(
        ["--model", "llama-2-7b", "--gpu", "h100"],
        ["unknown GPU id 'h100'", "did you mean", "'h100-sxm'"],
        id="unknown-gpu",
    ),
    pytest.param(
        ["--model", "llama-2-70b", "--tp", "3"],
        ["--tp", "64 attention heads"],
        id="tp-not-dividing-heads",
    ),
    pytest.param(
        ["--model", "llama-2-70b", "--training", "--tp", "3"],
        ["--tp"],
        id="tp-not-dividing-heads-training",
    ),
    pytest.param(
        ["--model", "llama-2-7b", "--pp", "64"], ["--pp", "32 layers"], id="pp-over-layers"
    ),
    pytest.param(
        ["--model", "llama-2-7b", "--training", "--pp", "33"],
        ["--pp", "32 layers"],
        id="pp-over-layers-training",
    ),
    pytest.param(
        ["--model", "llama-2-7b", "--training", "--seq-len", "0"], ["--seq-len"], id="zero-seq-len"
    ),
    pytest.param(
        ["--model", "llama-2-7b", "--training", "--seq-len", "-5"],
        ["--seq-len"],
        id="negative-seq-len",
    ),
    pytest.param(["--model", "llama-2-7b", "--batch", "0"], ["--batch"], id="zero-batch"),
    pytest.param(["--model", "llama-2-7b", "--batch", "-1"], ["--batch"], id="negative-batch"),
    pytest.param(["--model", "llama-2-7b", "--context", "0"], ["--context"], id="zero-context"),
    pytest.param(
        ["--model", "llama-2-7b", "--context", "-4096"], ["--context"], id="negative-context"
    ),
    pytest.param(
        BAD_GLOBAL_BATCH,
        ["--global-batch=12", "8"],
        id="global-batch-multiple",
    ),
    pytest.param(
        ["--model", "llama-2-7b", "--training", "--recompute", "bogus"],
        ["--recompute", "bogus"],
        id="recompute",
    ),
    pytest.param(
        ["--model", "llama-2-7b", "--optimizer", "bogus"], ["--optimizer", "bogus"], id="optimizer"
    ),
    pytest.param(
        ["--model", "llama-2-7b", "--training", "--zero", "5"], ["--zero"], id="zero-5-training"
    ),
    pytest.param(["--model", "llama-2-7b", "--training", "--dp", "0"], ["--dp"], id="dp-0"),
    pytest.param(
        ["--model", "llama-2-7b", "--training", "--interleave", "2"],
        ["interleave"],
        id="interleave-without-pp",
    ),
    pytest.param(
        ["--model", "llama-2-7b", "--training", "--sequence-parallel"],
        ["--sequence-parallel", "--tp"],
        id="sequence-parallel-without-tp",
    ),
    pytest.param(
        ["--model", "llama-2-7b", "--precision", "fp12"], ["--precision"], id="unknown-precision"
    ),
    pytest.param(["--model", "llama-2-7b", "--zero", "5"], ["--zero"], id="zero-5-serving"),
    pytest.param(["--model", "llama-2-7b", "--tp", "0"], ["--tp"], id="tp-0-serving"),
    pytest.param(["--model", "llama-2-7b", "--pp", "0"], ["--pp"], id="pp-0-serving"),
    pytest.param(["--model", "llama-2-7b", "--tp", "-2"], ["--tp"], id="negative-tp-serving"),
    pytest.param(
        ["--model", "llama-2-7b", "--training", "--precision", "int8"],
        ["--precision"],
        id="int8-training",
    ),
]


@pytest.mark.parametrize(("args", "needles"), BAD_INPUT)
def test_bad_input_exits_2_with_a_message_naming_it(args: list[str], needles: list[str]) -> None:
    err = user_error(cw("size", *args, "--json"))
    for needle in needles:
        assert needle in err


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (["--model", "llama-2-70"], "--model"),
        (["--model", "llama-2-7b", "--gpu", "h100"], "--gpu"),
        (
            BAD_GLOBAL_BATCH,
            "--global-batch",
        ),
        (["--model", "no/such/model.yaml"], "--model"),
    ],
    ids=["model", "gpu", "global-batch", "model-file"],
)
def test_error_message_names_the_flag(args: list[str], flag: str) -> None:
    assert flag in user_error(cw("size", *args))


def test_missing_model_flag_is_a_usage_error() -> None:
    r = cw("size", "--json")
    assert r.exit_code == 2
    assert "--model" in r.stderr
    assert r.stdout == ""


def test_real_process_bad_input_exits_2_without_traceback() -> None:
    p = subprocess.run(
        [sys.executable, "-m", "clusterwright", "size", "--model", "llama-2-70", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert p.returncode == 2
    assert p.stdout == ""
    assert "did you mean" in p.stderr
    assert "Traceback" not in p.stderr


def test_real_process_json_is_the_only_thing_on_stdout() -> None:
    p = subprocess.run(
        [sys.executable, "-m", "clusterwright", "size", "--model", "llama-2-7b", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    assert math.isfinite(data["total_gb"])
