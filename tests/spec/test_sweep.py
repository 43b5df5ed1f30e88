"""The sweep file: parsing, path resolution, grid and random expansion, the point cap, and
errors that name the variable and its YAML line."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterwright.spec.sweep import (
    MAX_POINTS,
    SweepError,
    VariableSpec,
    grid_values,
    load_sweep,
    loads_sweep,
    resolve_path,
    split_path,
)

ROOT = Path(__file__).resolve().parents[2]

# An inline base scenario: two workloads (one addressed by name, one by index).
BASE = """\
scenario:
  name: "base"
  seed: 5
  workloads:
    - kind: "training"
      name: "pretrain"
      model: "llama-3.1-8b"
      tokens: 1.0e12
      deadline_days: 30
    - kind: "inference"
      name: "chat"
      model: "llama-3.1-8b"
      qps: 10
      input_len: 512
      output_len: {distribution: "lognormal", mean: 200, stddev: 100, min: 8, max: 1024}
      slo: {ttft_p99_s: 1.0, tpot_p99_s: 0.05}
  constraints:
    gpus: ["h100-sxm"]
    power_per_rack_kw: 40
"""


def sweep(body: str, base: str = BASE) -> str:
    return base + body


def error(text: str) -> str:
    with pytest.raises(SweepError) as e:
        loads_sweep(text, "sweep.yaml")
    return str(e.value)


# ---------------------------------------------------------------------------- paths


def test_split_path_reads_dots_and_indices() -> None:
    assert split_path("workloads[0].slo.ttft_p99_s") == ["workloads", 0, "slo", "ttft_p99_s"]
    assert split_path("constraints.gpus") == ["constraints", "gpus"]
    with pytest.raises(ValueError):
        split_path("constraints..gpus")


def test_workloads_are_addressed_by_name_or_index() -> None:
    data = {"workloads": [{"name": "a"}, {"name": "b"}], "constraints": {}}
    assert resolve_path(data, "workloads.b.qps") == ("workloads", 1, "qps")
    assert resolve_path(data, "workloads[0].qps") == ("workloads", 0, "qps")
    # A field the file leaves at its default is still a place to sweep.
    assert resolve_path(data, "constraints.pue") == ("constraints", "pue")


# ---------------------------------------------------------------------------- grid


def test_grid_ranges_are_inclusive_and_integer_ends_give_integers() -> None:
    # 20..60 in 3 steps: 20, 40, 60 (integers because both ends are).
    assert grid_values(VariableSpec(min=20, max=60, steps=3), integer=True) == [20, 40, 60]
    # log 0.05..0.2 in 3 steps: the middle is the geometric mean sqrt(0.05 * 0.2) = 0.1.
    assert grid_values(VariableSpec(min=0.05, max=0.2, steps=3, log=True), integer=False) == [
        0.05, 0.1, 0.2]
    # 0.1..0.3 in 3 steps rounds 0.1 + 0.1 to 0.2, not 0.20000000000000004.
    assert grid_values(VariableSpec(min=0.1, max=0.3, steps=3), integer=False)[1] == 0.2
    # Rounding to integers drops repeats: 1..2 in 4 steps -> 1, 1.33, 1.67, 2 -> 1, 2.
    assert grid_values(VariableSpec(min=1, max=2, steps=4), integer=True) == [1, 2]


def test_grid_is_every_combination_last_variable_fastest() -> None:
    s = loads_sweep(sweep("""\
variables:
  constraints.gpus: ["h100-sxm", "h200-sxm"]
  constraints.power_per_rack_kw: {min: 20, max: 60, steps: 3}
  workloads.pretrain.deadline_days: {values: [30, 60]}
"""), "sweep.yaml")
    assert len(s.points) == 2 * 3 * 2
    assert [p.index for p in s.points] == list(range(12))
    assert s.points[0].values == {"constraints.gpus": ["h100-sxm"],
                                  "constraints.power_per_rack_kw": 20,
                                  "workloads.pretrain.deadline_days": 30}
    assert s.points[1].values["workloads.pretrain.deadline_days"] == 60
    last = s.points[-1].scenario
    # A single id for a list-of-ids field is a one-element list.
    assert last.constraints.gpus == ["h200-sxm"]
    assert last.constraints.power_per_rack_kw == 60
    assert last.workloads[0].deadline_days == 60  # type: ignore[union-attr]
    assert last.seed == 5  # the scenario's seed is untouched: every point plans the same way
    assert s.mode == "grid" and s.quick


def test_index_paths_and_nested_fields_reach_the_workload() -> None:
    s = loads_sweep(sweep("""\
variables:
  workloads[1].qps: [5, 20]
  workloads.chat.slo.ttft_p99_s: [0.5]
"""), "sweep.yaml")
    qps = [p.scenario.workloads[1].qps for p in s.points]  # type: ignore[union-attr]
    assert qps == [5, 20]
    assert s.points[0].scenario.workloads[1].slo.ttft_p99_s == 0.5  # type: ignore[union-attr]


def test_base_scenario_path_is_relative_to_the_sweep_file(tmp_path: Path) -> None:
    (tmp_path / "sc").mkdir()
    (tmp_path / "sc" / "train.yaml").write_text(
        (ROOT / "examples" / "train-llama3-70b.yaml").read_text())
    f = tmp_path / "sweeps" / "s.yaml"
    f.parent.mkdir()
    f.write_text('scenario: "../sc/train.yaml"\nvariables:\n  constraints.pue: [1.1, 1.5]\n')
    s = load_sweep(f)
    assert s.name == "s" and s.scenario_source is not None
    assert [p.scenario.constraints.pue for p in s.points] == [1.1, 1.5]
    assert s.base.name == "llama3-70b-pretrain"


# ---------------------------------------------------------------------------- random


RANDOM = """\
mode: "random"
samples: 50
seed: 9
variables:
  constraints.power_per_rack_kw: {min: 20, max: 60}
  constraints.electricity_usd_per_kwh: {min: 0.02, max: 0.5, log: true}
  constraints.gpus: ["h100-sxm", "h200-sxm", "b200"]
"""


def test_random_draws_are_seeded_within_range_and_typed() -> None:
    a = loads_sweep(sweep(RANDOM), "sweep.yaml")
    b = loads_sweep(sweep(RANDOM), "sweep.yaml")
    c = loads_sweep(sweep(RANDOM.replace("seed: 9", "seed: 10")), "sweep.yaml")
    assert len(a.points) == 50
    assert [p.values for p in a.points] == [p.values for p in b.points]
    assert [p.values for p in a.points] != [p.values for p in c.points]
    kw = [p.values["constraints.power_per_rack_kw"] for p in a.points]
    price = [p.values["constraints.electricity_usd_per_kwh"] for p in a.points]
    assert all(isinstance(v, int) and 20 <= v <= 60 for v in kw)  # integer ends: integers
    assert all(0.02 <= v <= 0.5 for v in price)
    # Log-uniform over 0.02..0.5: the median is near the geometric mean 0.1, far below the
    # arithmetic mean 0.26; with 50 draws it lies well inside 0.05..0.2.
    assert 0.05 < sorted(price)[25] < 0.2
    gpus = {tuple(p.values["constraints.gpus"]) for p in a.points}
    assert gpus <= {("h100-sxm",), ("h200-sxm",), ("b200",)} and len(gpus) == 3


# ---------------------------------------------------------------------------- errors


def test_unknown_field_names_the_variable_and_its_line() -> None:
    msg = error(sweep("variables:\n  constraints.gpu_count: [8, 16]\n"))
    line = BASE.count("\n") + 2
    assert f"constraints.gpu_count (line {line})" in msg
    assert "not a field of the scenario" in msg


def test_unknown_workload_name_lists_the_names() -> None:
    msg = error(sweep("variables:\n  workloads.serve.qps: [1]\n"))
    assert "workloads.serve.qps" in msg and "'pretrain', 'chat'" in msg


def test_invalid_value_names_the_variable_value_and_value_line() -> None:
    msg = error(sweep("""\
variables:
  constraints.power_per_rack_kw:
    values:
      - 30
      - -5
"""))
    line = BASE.count("\n") + 5  # the line of `- -5`
    assert f"(line {line})" in msg
    assert "constraints.power_per_rack_kw" in msg and "-5" in msg
    assert "greater than 0" in msg


def test_a_scalar_field_cannot_be_entered() -> None:
    msg = error(sweep("variables:\n  workloads.chat.input_len.mean: [100]\n"))
    assert "workloads[1].input_len is the value 512, not a mapping" in msg


def test_grid_over_the_cap_names_the_largest_variable() -> None:
    msg = error(sweep("""\
variables:
  constraints.power_per_rack_kw: {min: 1, max: 200, steps: 200}
  constraints.pue: {min: 1.0, max: 2.0, steps: 60}
"""))
    # 200 x 60 = 12,000 points > 10,000.
    assert "12,000 points" in msg and f"{MAX_POINTS:,}" in msg
    assert "variable constraints.power_per_rack_kw" in msg
    assert f"(line {BASE.count(chr(10)) + 2})" in msg


def test_random_samples_over_the_cap() -> None:
    msg = error(sweep(RANDOM.replace("samples: 50", "samples: 20000")))
    assert "samples 20,000" in msg and f"(line {BASE.count(chr(10)) + 2})" in msg


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("variables:\n  constraints.pue: {min: 1.1, max: 1.5}\n", "a grid range needs steps"),
        ("mode: random\nsamples: 3\nvariables:\n  constraints.pue: {min: 1.1, max: 1.5, "
         "steps: 2}\n", "steps is for mode grid"),
        ("mode: random\nvariables:\n  constraints.pue: [1.2]\n", "needs samples"),
        ("samples: 3\nvariables:\n  constraints.pue: [1.2]\n", "samples is for mode random"),
        ("variables:\n  constraints.pue: {min: 1.5, max: 1.1, steps: 2}\n", "is below min"),
        ("variables:\n  constraints.pue: {values: [1.2], min: 1}\n", "not both"),
        ("variables: {}\n", "variables"),
        ("variables:\n  constraints.pue: 1.2\n", "give a list of values"),
        ("variables:\n  workloads.pretrain.tokens: [1e12]\n  workloads[0].tokens: [2e12]\n",
         "names the same field as workloads.pretrain.tokens"),
    ],
)
def test_malformed_sweeps_are_refused(body: str, expected: str) -> None:
    assert expected in error(sweep(body))


def test_a_combination_that_breaks_the_scenario_names_the_point() -> None:
    # Each value alone is valid (mean 300 <= max 1024; max 250 >= mean 200); together the
    # mean 300 exceeds the max 250.
    msg = error(sweep("""\
variables:
  workloads.chat.output_len.mean: [300]
  workloads.chat.output_len.max: [250]
"""))
    assert "point 0" in msg and "workloads.chat.output_len.mean=300" in msg
    assert "above max" in msg


def test_missing_base_scenario_file_names_the_scenario_line() -> None:
    msg = error('name: "x"\nscenario: "nope.yaml"\nvariables:\n  constraints.pue: [1.2]\n')
    assert "scenario (line 2)" in msg and "nope.yaml" in msg


def test_invalid_inline_scenario_points_at_the_sweep_file_line() -> None:
    bad = BASE.replace("qps: 10", "qps: -1")
    msg = error(sweep("variables:\n  constraints.pue: [1.2]\n", base=bad))
    line = next(i for i, t in enumerate(bad.splitlines(), 1) if "qps: -1" in t)
    assert f"workloads[1].qps (line {line})" in msg


# --------------------------------------------------------- bounded, strict sweeps (#19)


def test_a_range_of_1e11_steps_is_refused_before_any_value_is_built() -> None:
    msg = error(sweep("variables:\n  constraints.power_per_rack_kw: "
                      "{min: 20, max: 60, steps: 1e11}\n"))
    assert "variables.constraints.power_per_rack_kw.steps (line 21)" in msg
    assert f"less than or equal to {MAX_POINTS}" in msg


def test_grid_values_refuses_more_steps_than_the_cap() -> None:
    spec = VariableSpec.model_construct(min=0.0, max=1.0, steps=MAX_POINTS + 1, log=False,
                                        values=None, integer=None)
    with pytest.raises(ValueError, match="more than the cap"):
        grid_values(spec, integer=False)


def test_the_grid_size_is_checked_before_the_values(monkeypatch: pytest.MonkeyPatch) -> None:
    import clusterwright.spec.sweep as sweep_mod

    checked: list[object] = []
    real = sweep_mod._check_value
    monkeypatch.setattr(sweep_mod, "_check_value",
                        lambda *a: checked.append(a[2]) or real(*a))
    msg = error(sweep(
        "variables:\n"
        "  constraints.power_per_rack_kw: {min: 20, max: 60.0, steps: 200}\n"
        "  constraints.electricity_usd_per_kwh: {min: 0.05, max: 0.2, steps: 200}\n"))
    assert "the grid has 40,000 points" in msg
    assert checked == []  # no scenario was validated for a sweep that is refused anyway


def test_random_samples_beyond_the_cap_are_refused_before_the_values() -> None:
    msg = error(sweep("mode: random\nsamples: 1e11\nvariables:\n"
                      "  constraints.power_per_rack_kw: {min: 20, max: 60}\n"))
    assert "samples (line 21): samples 100,000,000,000 is more than the cap" in msg


@pytest.mark.parametrize(("body", "where"), [
    ("quick: 1\nvariables:\n  constraints.power_per_rack_kw: [20]\n", "quick (line 20)"),
    ("seed: true\nvariables:\n  constraints.power_per_rack_kw: [20]\n", "seed (line 20)"),
    ("variables:\n  constraints.power_per_rack_kw: {min: .inf, max: 60, steps: 2}\n",
     "min (line 21)"),
    ("variables:\n  constraints.power_per_rack_kw: {min: true, max: 60, steps: 2}\n",
     "min (line 21)"),
    ("variables:\n  constraints.power_per_rack_kw: {min: 20, max: 60, steps: 2, log: 1}\n",
     "log (line 21)"),
])
def test_sweep_numbers_and_flags_are_strict(body: str, where: str) -> None:
    assert where in error(sweep(body))


def test_a_boolean_value_for_a_number_is_refused_naming_the_value() -> None:
    msg = error(sweep("variables:\n  constraints.power_per_rack_kw: [40, true]\n"))
    assert "power_per_rack_kw[1] (line 21)" in msg
    assert "not the boolean true" in msg


def test_a_whole_float_range_end_stays_a_float() -> None:
    assert VariableSpec(min=1.0, max=2.0, steps=2).min == 1.0
    assert isinstance(VariableSpec(min=1.0, max=2.0, steps=2).min, float)
    assert isinstance(VariableSpec(min=1, max=2, steps=2).min, int)
