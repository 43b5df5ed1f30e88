"""The scenario format (clusterwright.spec.scenario) and ParallelConfig."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from clusterwright.errors import InputError, ScenarioError
from clusterwright.spec.parallel import ParallelConfig
from clusterwright.spec.scenario import (
    Constraints,
    Diurnal,
    FinetuneWorkload,
    InferenceWorkload,
    LengthDist,
    Scenario,
    TrainingWorkload,
    Window,
    load_scenario,
    loads_scenario,
)

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))

SLO = {"ttft_p99_s": 1.0, "tpot_p99_s": 0.05}


def inference(**kw: Any) -> dict[str, Any]:
    d: dict[str, Any] = {
        "kind": "inference",
        "name": "chat",
        "model": "llama-3.1-8b",
        "qps": 10,
        "input_len": 512,
        "output_len": 128,
        "slo": SLO,
    }
    d.update(kw)
    return d


def training(**kw: Any) -> dict[str, Any]:
    d: dict[str, Any] = {
        "kind": "training",
        "name": "pt",
        "model": "llama-3.1-8b",
        "tokens": 1e9,
        "gpus": 8,
    }
    d.update(kw)
    return {k: v for k, v in d.items() if v is not None}


def errors_of(exc: pytest.ExceptionInfo[ValidationError]) -> str:
    return "\n".join(f"{e['loc']}: {e['msg']}" for e in exc.value.errors())


# ---------------------------------------------------------------------------- examples


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_every_example_parses(path: Path) -> None:
    sc, doc = load_scenario(path)
    assert isinstance(sc, Scenario)
    assert sc.workloads
    assert doc.path == str(path)
    assert doc.line_of(("workloads", 0, "name")) is not None


def test_training_example_reads_as_written() -> None:
    sc, _ = load_scenario(ROOT / "examples/train-llama3-70b.yaml")
    (w,) = sc.workloads
    assert isinstance(w, TrainingWorkload)
    assert w.model == "llama-3.1-70b"
    assert w.tokens == 15e12
    assert w.seq_len == 8192
    assert w.global_batch_tokens == 16_777_216
    assert w.deadline_days == 90
    assert sc.constraints.gpus == ["h100-sxm", "h200-sxm", "b200"]


def test_enterprise_example_has_all_three_kinds() -> None:
    sc, _ = load_scenario(ROOT / "examples/enterprise-pool.yaml")
    kinds = [type(w) for w in sc.workloads]
    assert kinds == [InferenceWorkload, InferenceWorkload, FinetuneWorkload]
    code = sc.workloads[1]
    assert isinstance(code, InferenceWorkload)
    assert code.input_len == LengthDist(distribution="fixed", mean=2048)
    lora = sc.workloads[2]
    assert isinstance(lora, FinetuneWorkload)
    assert lora.window == Window(start_hour=22, end_hour=6)  # wraps past midnight


def test_defaults_are_filled_in() -> None:
    sc = Scenario.model_validate({"name": "s", "workloads": [inference()]})
    assert sc.seed == 0
    assert sc.constraints.gpus == "choose"
    assert sc.constraints.pue == 1.3
    w = sc.workloads[0]
    assert isinstance(w, InferenceWorkload)
    assert w.precision == "bf16"
    assert w.kv_precision is None


# ------------------------------------------------------------------- length shorthand


@pytest.mark.parametrize("value", [512, 512.0])
def test_bare_number_is_a_fixed_length(value: float) -> None:
    w = InferenceWorkload.model_validate(inference(input_len=value))
    assert w.input_len.distribution == "fixed"
    assert w.input_len.mean == 512
    assert w.input_len.stddev == 0


def test_mapping_length_is_a_distribution() -> None:
    dist = {"distribution": "lognormal", "mean": 800, "stddev": 400, "min": 16, "max": 8192}
    w = InferenceWorkload.model_validate(inference(output_len=dist))
    assert w.output_len == LengthDist(**dist)


def test_boolean_is_not_a_length() -> None:
    with pytest.raises(ValidationError) as exc:
        InferenceWorkload.model_validate(inference(input_len=True))
    assert "input_len" in errors_of(exc)


@pytest.mark.parametrize("value", [0, -5])
def test_length_shorthand_must_be_positive(value: int) -> None:
    with pytest.raises(ValidationError) as exc:
        InferenceWorkload.model_validate(inference(input_len=value))
    assert "greater than 0" in errors_of(exc)


# ------------------------------------------------------------------ LengthDist bounds


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"mean": 10, "min": 20, "max": 5}, "max=5 is below min=20"),
        ({"mean": 100, "max": 50}, "outside [min, max]"),
        ({"mean": 0.5, "min": 1, "max": 50}, "outside [min, max]"),
        ({"distribution": "normal", "mean": 5}, "normal needs stddev > 0"),
        ({"distribution": "lognormal", "mean": 5}, "lognormal needs stddev > 0"),
        ({"distribution": "uniform", "mean": 5}, "uniform needs max"),
        ({"mean": 0}, "greater than 0"),
        ({"mean": 5, "min": 0}, "greater than 0"),
        ({"mean": 5, "stddev": -1}, "greater than or equal to 0"),
        ({"distribution": "zipf", "mean": 5}, "distribution"),
        ({"mean": 5, "median": 4}, "Extra inputs"),
    ],
)
def test_length_dist_bounds_are_checked(kw: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError) as exc:
        LengthDist(**kw)
    assert message in errors_of(exc)


def test_length_dist_within_bounds_is_accepted() -> None:
    d = LengthDist(distribution="uniform", mean=50, min=1, max=100)
    assert (d.min, d.mean, d.max) == (1, 50, 100)
    assert LengthDist(mean=7, min=7, max=7).mean == 7


def test_mean_below_min_is_rejected_without_max() -> None:
    with pytest.raises(ValidationError):
        LengthDist(mean=5, min=10)


# ------------------------------------------------------------------ training workload


def test_training_needs_deadline_or_gpus() -> None:
    with pytest.raises(ValidationError) as exc:
        TrainingWorkload.model_validate(training(gpus=None))
    assert "give deadline_days or gpus" in errors_of(exc)


@pytest.mark.parametrize(
    "kw", [{"gpus": 8}, {"gpus": None, "deadline_days": 30}, {"deadline_days": 30}]
)
def test_training_with_deadline_or_gpus_is_accepted(kw: dict[str, Any]) -> None:
    w = TrainingWorkload.model_validate(training(**kw))
    assert w.gpus is not None or w.deadline_days is not None


def test_training_batch_in_sequences_or_tokens_not_both() -> None:
    with pytest.raises(ValidationError) as exc:
        TrainingWorkload.model_validate(training(global_batch=512, global_batch_tokens=2**21))
    assert "not both" in errors_of(exc)


def test_training_precision_excludes_integer_formats() -> None:
    with pytest.raises(ValidationError):
        TrainingWorkload.model_validate(training(precision="int8"))
    assert TrainingWorkload.model_validate(training(precision="fp8")).precision == "fp8"


@pytest.mark.parametrize("field", ["tokens", "gpus", "deadline_days", "seq_len"])
def test_training_numbers_must_be_positive(field: str) -> None:
    with pytest.raises(ValidationError) as exc:
        TrainingWorkload.model_validate(training(**{field: 0}))
    assert field in errors_of(exc)


def test_model_may_be_an_inline_mapping() -> None:
    w = TrainingWorkload.model_validate(training(model={"id": "tiny", "layers": 2}))
    assert w.model == {"id": "tiny", "layers": 2}


# --------------------------------------------------------------------------- diurnal


def test_diurnal_hourly_needs_24_values() -> None:
    with pytest.raises(ValidationError) as exc:
        Diurnal(hourly=[1.0] * 23)
    assert "hourly needs 24 values, got 23" in errors_of(exc)
    assert Diurnal(hourly=[0.5] * 24).hourly == [0.5] * 24


@pytest.mark.parametrize(
    "kw",
    [
        {"hourly": [1.5] + [1.0] * 23},
        {"hourly": [-0.1] + [1.0] * 23},
        {"peak_hour": 24},
        {"trough_fraction": 1.2},
    ],
)
def test_diurnal_values_are_bounded(kw: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        Diurnal(**kw)


def test_window_hours_are_bounded() -> None:
    with pytest.raises(ValidationError):
        Window(start_hour=24, end_hour=6)
    assert Window(start_hour=0, end_hour=24).end_hour == 24


# ------------------------------------------------------------ scenario-level checks


def test_workload_names_must_be_unique() -> None:
    with pytest.raises(ValidationError) as exc:
        Scenario.model_validate({"name": "s", "workloads": [inference(), training(name="chat")]})
    assert "'chat' is used twice" in errors_of(exc)


def test_scenario_needs_a_workload() -> None:
    with pytest.raises(ValidationError):
        Scenario.model_validate({"name": "s", "workloads": []})


def test_unknown_workload_kind_is_rejected() -> None:
    with pytest.raises(ValidationError) as exc:
        Scenario.model_validate({"name": "s", "workloads": [inference(kind="batch")]})
    assert "batch" in errors_of(exc)


@pytest.mark.parametrize("value", [False, 1.1, 2024])
def test_ids_are_strict_strings(value: object) -> None:
    with pytest.raises(ValidationError):
        Scenario.model_validate({"name": value, "workloads": [inference()]})
    with pytest.raises(ValidationError):
        Constraints(gpus=[value])  # type: ignore[list-item]


def test_constraints_gpus_is_choose_or_a_non_empty_list() -> None:
    assert Constraints(gpus="choose").gpus == "choose"
    assert Constraints(gpus=["h100-sxm"]).gpus == ["h100-sxm"]
    with pytest.raises(ValidationError, match="at least one GPU"):
        Constraints(gpus=[])
    with pytest.raises(ValidationError):
        Constraints(gpus="any")  # type: ignore[arg-type]


@pytest.mark.parametrize("pue", [0.9, 3.5])
def test_pue_is_physical(pue: float) -> None:
    with pytest.raises(ValidationError):
        Constraints(pue=pue)


def test_models_are_frozen_and_strict() -> None:
    c = Constraints()
    with pytest.raises(ValidationError):
        c.pue = 2.0  # type: ignore[misc]
    with pytest.raises(ValidationError):
        Constraints(gpu=["h100-sxm"])  # type: ignore[call-arg]


# ------------------------------------------------------ parsing text with line numbers


SCENARIO = """\
name: "s"
workloads:
  - kind: "inference"
    name: "chat"
    model: "llama-3.1-8b"
    qps: 10
    input_len: {distribution: "uniform", mean: 10}
    output_len: 128
    slo: {ttft_p99_s: 1.0, tpot_p99_s: 0.05}
    diurnal: {hourly: [1, 0.5]}
"""


def test_loads_scenario_reports_every_error_with_path_and_line() -> None:
    with pytest.raises(ScenarioError) as exc:
        loads_scenario(SCENARIO, "web.yaml")
    msg = str(exc.value)
    assert msg.startswith("web.yaml: invalid scenario:")
    assert "workloads[0].input_len (line 7)" in msg
    assert "uniform needs max" in msg
    assert "workloads[0].diurnal (line 10)" in msg
    assert "hourly needs 24 values, got 2" in msg


def test_scenario_error_is_an_input_error() -> None:
    with pytest.raises(InputError):
        loads_scenario("name: [", "x.yaml")


def test_load_scenario_of_a_missing_file_is_a_scenario_error(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match="no such file"):
        load_scenario(tmp_path / "absent.yaml")


def test_non_mapping_document_is_a_scenario_error() -> None:
    with pytest.raises(ScenarioError, match="mapping"):
        loads_scenario("- a\n- b\n")


# ------------------------------------------------------------------- ParallelConfig


def test_parallel_defaults_are_one_gpu() -> None:
    p = ParallelConfig()
    assert p.gpus == 1
    assert p.batch == 1
    assert p.micro_batches == 1


def test_parallel_gpu_count_and_batch_arithmetic() -> None:
    p = ParallelConfig(dp=4, tp=8, pp=2, cp=2, micro_batch=2, global_batch=64)
    assert p.gpus == 4 * 8 * 2 * 2
    assert p.batch == 64
    assert p.micro_batches == 64 // (4 * 2)


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"dp": 4, "ep": 3}, "ep=3 must divide tp*dp*cp=4"),
        ({"dp": 2, "ep": 8}, "ep=8 must divide tp*dp*cp=2"),
        ({"sequence_parallel": True}, "sequence_parallel needs tp > 1"),
        ({"virtual_stages": 2}, "interleave"),
        ({"dp": 4, "micro_batch": 2, "global_batch": 12}, "not a multiple of dp*micro_batch=8"),
        ({"zero_stage": 4}, "zero_stage"),
        ({"recompute": "some"}, "recompute"),
        ({"tp": 0}, "tp"),
        ({"micro_batch": 0}, "micro_batch"),
        ({"expert_parallel": 2}, "Extra inputs"),
    ],
)
def test_parallel_config_rejects_inconsistent_layouts(kw: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError) as exc:
        ParallelConfig(**kw)
    assert message in errors_of(exc)


@pytest.mark.parametrize(
    "kw",
    [
        {"dp": 2, "cp": 2, "ep": 4},  # ep divides dp*cp even though it exceeds dp
        {"dp": 8, "ep": 8},
        {"tp": 2, "sequence_parallel": True},
        {"pp": 4, "virtual_stages": 3},
        {"dp": 4, "micro_batch": 2, "global_batch": 64},
    ],
)
def test_parallel_config_accepts_consistent_layouts(kw: dict[str, Any]) -> None:
    p = ParallelConfig(**kw)
    for k, v in kw.items():
        assert getattr(p, k) == v


def test_parallel_config_is_frozen() -> None:
    p = ParallelConfig()
    with pytest.raises(ValidationError):
        p.tp = 2  # type: ignore[misc]


# ------------------------------------------------------------- fixed layout, stack, options


def test_training_may_fix_a_layout_stack_and_options() -> None:
    w = TrainingWorkload.model_validate(training(
        gpus=64, stack="megatron-core-h100-2024", layout={"tp": 8, "pp": 2},
        options={"cp_comm": "allgather", "tp_overlap": False}))
    assert w.layout is not None and (w.layout.tp, w.layout.pp, w.layout.cp) == (8, 2, 1)
    assert w.layout.zero is None and w.layout.recompute is None  # left to the search
    assert w.options is not None and w.options.cp_comm == "allgather"


@pytest.mark.parametrize(("kw", "needle"), [
    ({"layout": {"tp": 8}, "gpus": None, "deadline_days": 30}, "fixed layout needs gpus"),
    ({"layout": {"tp": 1, "sequence_parallel": True}}, "sequence_parallel needs tp > 1"),
    ({"layout": {"pp": 1, "interleave": 2}}, "interleave needs pp > 1"),
    ({"layout": {"tp": 0}}, "greater than 0"),
    ({"layout": {"zero": 4}}, "zero"),
    ({"layout": {"recompute": "some"}}, "recompute"),
    ({"layout": {"dp": 4}}, "dp"),
    ({"options": {"schedule": "gpipe"}}, "schedule"),
    ({"options": {"ep_dispatcher": "nccl"}}, "ep_dispatcher"),
])
def test_bad_layouts_and_options_are_rejected_naming_the_field(kw: dict[str, Any],
                                                               needle: str) -> None:
    with pytest.raises(ValidationError) as exc:
        TrainingWorkload.model_validate(training(**kw))
    assert needle in errors_of(exc)


# ------------------------------------------------------------ strict, bounded numbers (#19)

# Line numbers below are 1-based lines of this text; {qps}, {tokens}, ... are substituted.
BOUNDED = """\
name: "b"
seed: {seed}
workloads:
  - kind: "inference"
    name: "chat"
    model: "llama-3.1-8b"
    qps: {qps}
    input_len: {input_len}
    output_len: 128
    slo: {{ttft_p99_s: {ttft}, tpot_p99_s: 0.05, e2e_p99_s: {e2e}}}
  - kind: "finetune"
    name: "ft"
    model: "llama-3.1-8b"
    tokens: {tokens}
    epochs: {epochs}
"""
GOOD = {"seed": 1, "qps": 10, "input_len": 512, "ttft": 1.0, "e2e": 30, "tokens": 1e9,
        "epochs": 2}


def _bounded(**kw: Any) -> str:
    return BOUNDED.format(**{**GOOD, **kw})


def _bounded_error(**kw: Any) -> str:
    with pytest.raises(ScenarioError) as exc:
        loads_scenario(_bounded(**kw), "b.yaml")
    return str(exc.value)


def test_bounded_template_is_valid() -> None:
    sc, _ = loads_scenario(_bounded(), "b.yaml")
    w = sc.workloads[0]
    assert isinstance(w, InferenceWorkload)
    assert w.slo.e2e_p99_s == 30.0


@pytest.mark.parametrize(("field", "value", "path", "line", "message"), [
    ("qps", ".inf", "workloads[0].qps", 7, "finite number"),
    ("qps", ".nan", "workloads[0].qps", 7, ""),
    ("qps", "true", "workloads[0].qps", 7, "not the boolean true"),
    ("qps", '"20"', "workloads[0].qps", 7, "not the string '20'"),
    ("qps", "1e300", "workloads[0].qps", 7, "less than or equal to 1000000"),
    ("input_len", ".inf", "workloads[0].input_len.mean", 8, "finite number"),
    ("input_len", "{mean: .inf}", "workloads[0].input_len.mean", 8, "finite number"),
    ("input_len", "1e12", "workloads[0].input_len.mean", 8, "less than or equal to 10000000"),
    ("ttft", ".inf", "workloads[0].slo.ttft_p99_s", 10, "finite number"),
    ("e2e", "yes", "workloads[0].slo.e2e_p99_s", 10, "not the boolean true"),
    ("tokens", ".inf", "workloads[1].tokens", 14, "finite number"),
    ("tokens", '"1e9"', "workloads[1].tokens", 14, "not the string '1e9'"),
    ("epochs", ".inf", "workloads[1].epochs", 15, "finite number"),
    ("epochs", "1e9", "workloads[1].epochs", 15, "less than or equal to 1000"),
    ("seed", "-1", "seed", 2, "greater than or equal to 0"),
    ("seed", "true", "seed", 2, "not the boolean true"),
    ("seed", "99999999999999999999", "seed", 2, "less than or equal to 4294967295"),
])
def test_bad_numbers_are_refused_naming_the_yaml_field_and_line(
        field: str, value: str, path: str, line: int, message: str) -> None:
    msg = _bounded_error(**{field: value})
    assert f"{path} (line {line}): " in msg
    assert message in msg
    assert "--" not in msg  # a field, never a CLI flag


@pytest.mark.parametrize(("kw", "field"), [
    ({"gpus": True}, "gpus"),
    ({"gpus": "8"}, "gpus"),
    ({"gpus": 10**6}, "gpus"),
    ({"seq_len": 1e300}, "seq_len"),
    ({"deadline_days": float("inf")}, "deadline_days"),
    ({"global_batch": True}, "global_batch"),
    ({"layout": {"tp": True}}, "tp"),
    ({"layout": {"zero": True}}, "zero"),
    ({"layout": {"tp": 2, "sequence_parallel": 1}}, "sequence_parallel"),
])
def test_training_numbers_are_strict_and_bounded(kw: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError) as exc:
        TrainingWorkload.model_validate(training(**kw))
    assert field in errors_of(exc)


@pytest.mark.parametrize("kw", [
    {"pue": True}, {"power_per_rack_kw": float("inf")}, {"years": "4"},
    {"budget_usd": float("nan")}, {"gpus": ["h100-sxm"] * 101},
])
def test_constraint_numbers_are_strict_and_bounded(kw: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        Constraints.model_validate(kw)


def test_diurnal_and_window_numbers_are_strict() -> None:
    with pytest.raises(ValidationError):
        Diurnal.model_validate({"peak_hour": True})
    with pytest.raises(ValidationError):
        Diurnal.model_validate({"hourly": [True] * 24})
    with pytest.raises(ValidationError):
        Window.model_validate({"start_hour": "1", "end_hour": 5})


@pytest.mark.parametrize("name", ["[a, b]", "{a: 1}", "[chat]"])
def test_a_workload_name_that_is_a_list_or_mapping_is_a_scenario_error(name: str) -> None:
    text = _bounded().replace('name: "ft"', f"name: {name}")
    with pytest.raises(ScenarioError, match=r"workloads\[1\]\.name \(line 12\): must be a string"):
        loads_scenario(text, "b.yaml")


def test_too_many_workloads_are_refused() -> None:
    data = {"name": "x", "workloads": [inference(name=f"w{i}") for i in range(101)]}
    with pytest.raises(ValidationError, match="at most 100 items"):
        Scenario.model_validate(data)


def test_parallel_config_numbers_are_strict() -> None:
    for kw in ({"tp": True}, {"zero_stage": True}, {"sequence_parallel": 1, "tp": 2},
               {"dp": "2"}):
        with pytest.raises(ValidationError):
            ParallelConfig.model_validate(kw)


def test_thousands_of_workloads_are_refused_before_any_is_validated() -> None:
    text = 'name: "many"\nworkloads:\n' + "- {kind: training}\n" * 50_000
    with pytest.raises(ScenarioError) as exc:
        loads_scenario(text, "m.yaml")
    assert str(exc.value) == ("m.yaml: workloads (line 2): 50,000 workloads; a scenario holds "
                              "at most 100")


LORA_SCENARIO = """\
name: ft
workloads:
  - kind: "finetune"
    name: "ft"
    model: "llama-3.1-8b"
    tokens: 1.0e9
    lora_rank: {rank}
    lora_targets: {targets}
"""


def test_lora_targets_default_to_attention_and_accept_groups_and_modules() -> None:
    sc, _ = loads_scenario(LORA_SCENARIO.format(rank=8, targets="[mlp, qkv]"), "ft.yaml")
    assert sc.workloads[0].lora_targets == ("mlp", "qkv")  # type: ignore[union-attr]
    sc, _ = loads_scenario(LORA_SCENARIO.format(rank=8, targets="[all]").replace(
        "    lora_targets: [all]\n", ""), "ft.yaml")
    assert sc.workloads[0].lora_targets == ("attention",)  # type: ignore[union-attr]


@pytest.mark.parametrize(("rank", "targets", "where"), [
    (0, "[attention]", "workloads[0].lora_rank (line 7)"),
    (16, "[attention, q_proj]", "workloads[0].lora_targets[1] (line 8)"),
    (16, "[]", "workloads[0].lora_targets (line 8)"),
])
def test_bad_lora_fields_name_the_field_and_line(rank: int, targets: str, where: str) -> None:
    with pytest.raises(ScenarioError) as exc:
        loads_scenario(LORA_SCENARIO.format(rank=rank, targets=targets), "ft.yaml")
    assert where in str(exc.value)


@pytest.mark.parametrize("kv", ["int4", "fp32", "fp4", "int8"])
def test_a_kv_precision_no_engine_stores_is_refused_at_load(kv: str) -> None:
    """It passed `check`, then every GPU rejected it and the plan named an unrelated A100."""
    with pytest.raises(ValidationError, match="kv_precision"):
        InferenceWorkload.model_validate(inference(kv_precision=kv))
    assert InferenceWorkload.model_validate(inference(kv_precision="fp8")).kv_precision == "fp8"
