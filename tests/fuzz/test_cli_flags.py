"""Every option of every command, mutated one at a time from a valid invocation.

Two passes: a fixed table of hostile values for each option (numbers that are not finite,
negative or beyond 64 bits; empty, unknown and oversized strings; special files), and a
hypothesis search over any number or text on a random option. Each case must end in exit 0
or 2 within 20 s with no traceback; the values marked as nonsense must be refused; an
accepted case must print finite, physically possible numbers.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.fuzz import commands as cmds
from tests.fuzz.harness import invoke, problems, run
from tests.fuzz.values import (
    FREE_TEXT,
    INT_ONLY_REFUSED,
    NUMBER_VALUES,
    SPECIAL_INPUTS,
    SPECIAL_OUTPUTS,
    STRING_VALUES,
    numbers,
    strings,
)

OPTIONS = cmds.options()
_OUTPUT_NAMES = {"--out", "--db"}


@pytest.fixture(scope="module")
def tmp(tmp_path_factory: pytest.TempPathFactory) -> str:
    d = tmp_path_factory.mktemp("fuzz")
    os.mkfifo(d / "fifo")
    (d / "loop").symlink_to(d / "loop")
    (d / "a-file").write_text("not a directory\n", encoding="utf-8")
    return str(d)


def test_every_command_has_a_base() -> None:
    assert set(cmds.commands()) == set(cmds.BASES)


@pytest.mark.parametrize("command", sorted(set(cmds.BASES) - cmds.REFUSE_ONLY - {"runs show",
                                                  "runs delete"}))
def test_base_invocations_are_valid(command: str, tmp: str) -> None:
    """The fuzzer's starting points run: a mutation that fails, fails because of the value."""
    o = invoke(cmds.base(command, tmp))
    assert o.exit_code == 0, o.describe()
    assert not problems(o), o.describe()


def _values(opt: cmds.Option, tmp: str) -> list[tuple[str, bool]]:
    if opt.kind in ("int", "float"):
        return [(v, refuse or (opt.kind == "int" and v in INT_ONLY_REFUSED))
                for v, refuse in NUMBER_VALUES]
    if opt.kind == "path":
        specials = SPECIAL_OUTPUTS if opt.name in _OUTPUT_NAMES else SPECIAL_INPUTS
        return [(v.replace("{tmp}", tmp), True) for v in specials]
    free = opt.id in FREE_TEXT
    return [(v, refuse and not free) for v, refuse in STRING_VALUES]


def _needs_subprocess(value: str) -> bool:
    # Reading these in-process would take this test's own memory; the subprocess has 1 GiB.
    return value in ("/dev/zero", "/dev/urandom") or value.endswith("/fifo")


@pytest.mark.parametrize("opt", OPTIONS, ids=lambda o: o.id)
def test_hostile_values(opt: cmds.Option, tmp: str) -> None:
    found = []
    for value, must_refuse in _values(opt, tmp):
        if opt.command in cmds.REFUSE_ONLY and not must_refuse:
            continue
        args = cmds.with_value(opt, value, tmp)
        o = run(args) if _needs_subprocess(value) else invoke(args)
        found += [f"{o.describe()}\n  -> {p}" for p in problems(o, must_refuse)]
    assert not found, "\n\n".join(found)


_FUZZABLE = [o for o in OPTIONS if o.command not in cmds.REFUSE_ONLY and o.kind != "path"]


@settings(deadline=None)
@given(data=st.data())
def test_any_value_on_any_option(data: st.DataObject, tmp_path_factory: pytest.TempPathFactory
                                 ) -> None:
    opt = data.draw(st.sampled_from(_FUZZABLE), label="option")
    value = data.draw(numbers() if opt.kind in ("int", "float") else strings(), label="value")
    tmp = str(tmp_path_factory.getbasetemp() / "hyp")
    Path(tmp).mkdir(exist_ok=True)
    o = invoke(cmds.with_value(opt, value, tmp))
    assert not problems(o), o.describe()


# The base invocation of ``serve estimate`` has no --engine, so the engine path's batch
# limits (--max-num-seqs and --max-tokens with --engine, a role's max_batch= and
# max_tokens=) are fuzzed here on their own.
_ENGINE_AGG = ["serve", "estimate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--engine",
               "vllm", "--concurrency", "16", "--input-len", "512", "--output-len", "128",
               "--steady-only", "--json"]
_ENGINE_DISAGG = ["serve", "estimate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm",
                  "--engine", "trtllm", "--concurrency", "16", "--input-len", "512",
                  "--output-len", "128", "--steady-only", "--json", "--prefill",
                  "workers=1,tp=1"]


@pytest.mark.parametrize("where", ["--max-num-seqs", "--max-tokens", "max_batch=",
                                   "max_tokens="])
def test_hostile_batch_limits_on_the_engine_path(where: str) -> None:
    found = []
    for value, must_refuse in NUMBER_VALUES:
        must_refuse = must_refuse or value in INT_ONLY_REFUSED
        if where.startswith("--"):
            args = [*_ENGINE_AGG, where, value]
        else:
            args = [*_ENGINE_DISAGG, "--decode", f"workers=1,tp=1,{where}{value}"]
        o = invoke(args)
        found += [f"{o.describe()}\n  -> {p}" for p in problems(o, must_refuse)]
    assert not found, "\n\n".join(found)


_ENGINE_TRT = ["serve", "estimate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--engine",
               "trtllm", "--concurrency", "16", "--input-len", "512", "--output-len", "128",
               "--steady-only", "--json", "--batch-wait"]


@pytest.mark.parametrize("part", ["iterations", "ratio"])
def test_hostile_batch_waits_on_the_engine_path(part: str) -> None:
    """--batch-wait ITERATIONS:RATIO, each half hostile in turn (the base invocation of
    ``serve estimate`` has no --engine, so the fuzzer above only sees it refused)."""
    found = []
    for value, must_refuse in NUMBER_VALUES:
        if part == "iterations":
            arg = f"{value}:0.9"
            must_refuse = must_refuse or value in INT_ONLY_REFUSED
        else:
            arg = f"20:{value}"
        o = invoke([*_ENGINE_TRT, arg])
        found += [f"{o.describe()}\n  -> {p}" for p in problems(o, must_refuse)]
    assert not found, "\n\n".join(found)


def test_hostile_recv_intervals_on_the_sglang_path() -> None:
    found = []
    for value, must_refuse in NUMBER_VALUES:
        o = invoke([*_ENGINE_TRT[:7], "sglang", *_ENGINE_TRT[8:-1], "--recv-interval", value])
        found += [f"{o.describe()}\n  -> {p}"
                  for p in problems(o, must_refuse or value in INT_ONLY_REFUSED)]
    assert not found, "\n\n".join(found)


_ENGINE_SPEC = ["serve", "estimate", "--model", "deepseek-v3", "--gpu", "b200", "--engine",
                "trtllm", "--precision", "fp4", "--tp", "8", "--concurrency", "8",
                "--input-len", "512", "--output-len", "128", "--steady-only", "--json",
                "--speculative"]


@pytest.mark.parametrize("part", ["draft_tokens", "acceptance", "cost"])
def test_hostile_speculative_decoding_on_the_engine_path(part: str) -> None:
    """--speculative K:ACCEPT[:COST], each part hostile in turn; an acceptance above 1, a
    draft count above 64 and a cost factor outside [1, 100] are refused too."""
    found = []
    for value, must_refuse in NUMBER_VALUES:
        if part == "draft_tokens":
            arg = f"{value}:0.7"
            must_refuse = must_refuse or value in INT_ONLY_REFUSED or value in (
                "0", "1e30", "4294967296")
        elif part == "acceptance":
            arg = f"3:{value}"
            must_refuse = must_refuse or value in ("1e30", "4294967296")
        else:
            arg = f"3:0.7:{value}"
            must_refuse = must_refuse or value in ("0", "1e30", "4294967296", "1e-300")
        o = invoke([*_ENGINE_SPEC, arg])
        found += [f"{o.describe()}\n  -> {p}" for p in problems(o, must_refuse)]
    assert not found, "\n\n".join(found)


@pytest.mark.parametrize("command", ["estimate", "plan"])
def test_hostile_weight_offloads_on_a_grace_superchip(command: str) -> None:
    """--cpu-offload-gb where it applies (vLLM on GH200; the base invocations have no
    --engine, so the fuzzer above only sees it refused): a share of a GPU's 480 GB is
    accepted, hostile numbers are refused."""
    base = (["serve", "estimate", "--model", "llama-3.1-8b", "--gpu", "gh200", "--engine",
             "vllm", "--concurrency", "4", "--input-len", "512", "--output-len", "64",
             "--steady-only", "--json"] if command == "estimate" else
            ["serve", "plan", "--model", "llama-3.1-8b", "--gpu", "gh200", "--engine", "vllm",
             "--qps", "1", "--input-len", "512", "--output-len", "64", "--ttft-p99", "5",
             "--tpot-p99", "1", "--json"])
    found = []
    for value, must_refuse in NUMBER_VALUES:
        o = invoke([*base, "--cpu-offload-gb", value])
        found += [f"{o.describe()}\n  -> {p}" for p in problems(o, must_refuse)]
    assert not found, "\n\n".join(found)


_PREFIX = ["serve", "estimate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--engine",
           "vllm", "--qps", "2", "--input-len", "2000", "--output-len", "32",
           "--num-requests", "60", "--json"]


_PREFIX_PLAN = ["serve", "plan", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--engine",
                "vllm", "--qps", "2", "--input-len", "2000", "--output-len", "32",
                "--ttft-p99", "5", "--tpot-p99", "1", "--json"]


@pytest.mark.parametrize("command", ["estimate", "plan"])
@pytest.mark.parametrize("flag", ["--prefix-len", "--prefix-groups", "--kv-offload-gb"])
def test_hostile_prefixes_and_host_tiers_on_the_engine_path(flag: str, command: str) -> None:
    """--prefix-len, --prefix-groups and --kv-offload-gb where they apply (the base
    invocation of ``serve estimate`` has no --engine, so the fuzzer above only sees them
    refused): each hostile in turn beside valid values of the others. A prefix past the
    2,000-token prompt and a host tier past the GPU's 256 GiB share of DGX H100's memory
    are refused too."""
    others = {"--prefix-len": "1500", "--prefix-groups": "4", "--kv-offload-gb": "20"}
    found = []
    for value, must_refuse in NUMBER_VALUES:
        if flag != "--kv-offload-gb":
            must_refuse = must_refuse or value in INT_ONLY_REFUSED
        # None of the three takes 0, and 1e30 or 2^32 is past each one's bound
        must_refuse = must_refuse or value in ("0", "1e30", "4294967296")
        args = [*(_PREFIX if command == "estimate" else _PREFIX_PLAN)]
        for f, v in others.items():
            args += [f, value if f == flag else v]
        o = invoke(args)
        found += [f"{o.describe()}\n  -> {p}" for p in problems(o, must_refuse)]
    assert not found, "\n\n".join(found)


# --storage-units needs --storage-system (and back): the fuzzer above mutates one flag on a
# base without the other, so it only sees "give them together". Here each is hostile with
# the other set, on every command that takes them.
_STORAGE = {"fabric design": ["fabric", "design", "--server", "dgx-h100", "--nodes", "8",
                              "--json"],
            "ops power": ["ops", "power", "--server", "dgx-h100", "--nodes", "8", "--json"],
            "ops tco": ["ops", "tco", "--server", "dgx-h100", "--nodes", "8", "--json"]}


@pytest.mark.parametrize("command", sorted(_STORAGE))
@pytest.mark.parametrize("flag", ["--storage-units", "--storage-system"])
def test_hostile_storage_tier_flags(command: str, flag: str) -> None:
    found = []
    if flag == "--storage-units":
        cases = [(v, refuse or v in INT_ONLY_REFUSED) for v, refuse in NUMBER_VALUES]
        other = ["--storage-system", "ddn-ai400x2t"]
    else:
        cases = list(STRING_VALUES)
        other = ["--storage-units", "2"]
    for value, must_refuse in cases:
        o = invoke([*_STORAGE[command], *other, flag, value])
        found += [f"{o.describe()}\n  -> {p}" for p in problems(o, must_refuse)]
    assert not found, "\n\n".join(found)


_ROW = "2026_03_25_gpt_oss_120b_gb200_trtllm_fp4_disagg_1024x1024_c1_tp1_0_ep1_0_1279"


@pytest.mark.parametrize("row_id,refuse", [
    ("", True), (" ", True), ("x" * 100_000, True), ("../../etc/passwd", True),
    ("\u00e9\u4e2d\U0001f600", True), (_ROW + " ", True), (_ROW.upper(), True),
    ("--json", True), (_ROW, False),
])
def test_hostile_row_ids_against_the_silicon_table(row_id: str, refuse: bool) -> None:
    """``validate --table serving-silicon --row``, which the base invocation (another table)
    refuses before reading the value: ids are matched exactly, anything else exits 2."""
    o = invoke(["validate", "--table", "serving-silicon", "--row", row_id, "--json"])
    assert not problems(o, must_refuse=refuse), o.describe()
    assert o.exit_code == (2 if refuse else 0), o.describe()
