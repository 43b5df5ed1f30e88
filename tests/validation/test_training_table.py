"""Training step time against published runs (validation/training.csv).

Targets (issue 14): MAPE over development rows at most 8 %; every parallelism family and
both precision classes with at least three development rows; no development row worse than
15 % except the named known misses below, each with why (the test fails when one of them
comes back inside 15 %, so the list cannot go stale). Held-out rows are predicted and
reported but never held to the target.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from clusterwright.errors import InputError
from clusterwright.validation.rows import TableResult, data_dir
from clusterwright.validation.training_table import training_table
from tests.validation import csvrows
from tests.validation.shared import shipped_table

ROW_TARGET = 0.15
MAPE_TARGET = 0.08
# Development rows the model misses by more than 15 %, and the physics it lacks.
KNOWN_MISSES = {
    # MoE on the 2025 software: dispatch/combine overlap and kernels vary by model and release
    # more than one stack can follow (see stacks.yaml, megatron-core-h100-2025).
    "nemo_25_09_h100-sxm_deepseek-v3_fp8-cs_1024": "MoE: predicted 35 % faster",
    # 16 experts per GPU: the MoE layer's per-expert host floor (stacks.yaml
    # moe_expert_launch_s), which puts the H100 run of the same model within 1 %.
    "nemo_26_04_01_b200_qwen3-235b-a22b_mxfp8_256": "MoE: predicted 18 % slower",
    "nemo_26_04_01_h100-sxm_gpt-oss-120b_bf16_64": "GPT-OSS kernels: predicted 23 % faster",
    "nemo_26_04_01_b200_gpt-oss-120b_bf16_64": "GPT-OSS kernels: predicted 50 % faster",
    # Same model and GPU as nemo_25_02_b200_llama-3-8b_fp8_8 (within 1 %): the 25.11 release
    # is 18 % faster, which one stack for 25.02-26.08 cannot follow.
    "nemo_25_11_b200_llama-3-8b_fp8-cs_8": "software release: predicted 17 % slower",
    # The README does not state the interleave, so it is searched, and the fastest layout
    # hides the later chunks' parameter gathers behind the chunk before them (model/training).
    "mcore_readme_gpt_177B_2304": "interleave searched: predicted 18 % faster",
}
FAMILIES = ("ptd-p", "zero3", "moe-ep", "cp")
HELD_OUT = {
    "gptneox_20b_training_time",
    "korthikanti22_abstract_530b_mfu_seqsel",
    "korthikanti22_abstract_530b_mfu_full",
    "deepseek_v3_gpu_hours_per_1t_tokens",
}


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> TableResult:
    return shipped_table("training", tmp_path_factory)


def _print(rows: TableResult) -> None:
    for r in rows.rows:
        print(
            f"{r.id:42s} {r.set:8s} measured {r.measured:12.3f} predicted {r.predicted:12.3f} "
            f"{r.unit:8s} error {100 * r.error:+7.2f}%  {r.detail}"
        )
    print(f"dev MAPE {100 * rows.mape:.2f}%  max {100 * rows.max_abs_error:.2f}%")


def test_dev_mape_within_8pct_and_rows_within_15pct_but_the_known_misses(
    table: TableResult,
) -> None:
    _print(table)
    assert len(table.dev_rows) >= 60
    assert table.mape <= MAPE_TARGET
    assert table.tolerance <= MAPE_TARGET
    dev = {r.id: r for r in table.dev_rows}
    assert set(KNOWN_MISSES) <= set(dev), set(KNOWN_MISSES) - set(dev)
    for r in table.dev_rows:
        if r.id in KNOWN_MISSES:
            assert abs(r.error) > ROW_TARGET, f"{r.id} is back within 15 %: drop it from the list"
        else:
            assert abs(r.error) <= ROW_TARGET, f"{r.id}: {100 * r.error:+.1f}%"


def test_every_family_and_precision_has_three_dev_rows_and_dense_ones_meet_the_target(
    table: TableResult,
) -> None:
    fams: dict[str, list[float]] = {f: [] for f in FAMILIES}
    precs: dict[str, int] = {"bf16": 0, "fp8": 0}
    for r in table.dev_rows:
        tags = dict(r.tags)
        for f in tags["family"].split("+"):
            fams[f].append(abs(r.error))
        precs[tags["precision"]] += 1
    for f, errs in fams.items():
        assert len(errs) >= 3, f
    assert min(precs.values()) >= 3, precs
    # The dense families (MoE models are their own regime) within the MAPE target.
    for f in ("ptd-p", "zero3", "cp"):
        assert sum(fams[f]) / len(fams[f]) <= MAPE_TARGET, f


def test_held_out_rows_are_reported_but_not_held_to_the_target(table: TableResult) -> None:
    held = table.held_out_rows
    with open(data_dir() / "training.csv", newline="", encoding="utf-8") as fh:
        marked = {r["id"] for r in csv.DictReader(fh) if r["set"] == "held-out"}
    assert {r.id for r in held} == marked
    # The four held-out rows of the issue; other held-out rows (e.g. MLPerf) may be added.
    assert marked >= HELD_OUT
    assert len(held) >= len(HELD_OUT) == 4
    # reported: each has a finite prediction and the held-out MAPE is computed ...
    assert all(r.predicted > 0 for r in held)
    assert table.held_out_mape is not None and table.held_out_mape > 0
    # ... but kept out of the development MAPE and the per-row target
    assert not {r.id for r in table.dev_rows} & marked
    assert len(table.rows) == len(table.dev_rows) + len(held)


def test_dev_rows_are_predicted_with_layouts_that_fit_in_memory(table: TableResult) -> None:
    for r in table.dev_rows:
        assert r.detail, r.id
        assert "does not fit" not in r.detail, f"{r.id}: {r.detail}"


# Rows a new published measurement could bring, in a small file of training.csv's format.
H100 = "nemo_25_11_h100-sxm_llama-3-8b_fp8-cs_8"


def _small(tmp_path: Path, *rows: dict[str, str] | str) -> TableResult:
    return training_table(path=csvrows.write(tmp_path / "t.csv", "training.csv", H100, *rows))


@pytest.mark.parametrize("changes, reason", [
    ({"gpu": "h20"}, "unknown GPU id 'h20'"),
    ({"model": "falcon-180b"}, "unknown model id 'falcon-180b'"),
    ({"stack": "megatron-core-h100-2027"}, "unknown stack id"),
    ({"gpu": "mi300x"}, "megatron-core-h100-2025 is calibrated for"),
    ({"precision": "fp4"}, "fp4"),
    ({"tp": "", "pp": "4", "dp": ""}, "partial layout"),
    ({"tp": "3", "dp": "1", "n_gpus": "3"}, "tp 3 does not divide the 32 attention heads"),
])
def test_a_row_the_model_cannot_predict_is_not_covered_with_the_reason(
        tmp_path: Path, changes: dict[str, str], reason: str) -> None:
    _, rows = csvrows.shipped("training.csv")
    t = _small(tmp_path, csvrows.like(rows[H100], **changes))
    assert [r.id for r in t.rows] == [H100]  # the other row still predicts
    (nc,) = t.not_covered
    assert nc.id == H100 + "_new" and nc.line == 3 and nc.set == "dev"
    assert reason in nc.reason, nc.reason


def test_an_empty_layout_is_searched_and_the_rows_metric_is_predicted(tmp_path: Path) -> None:
    _, rows = csvrows.shipped("training.csv")
    empty = {k: "" for k in ("tp", "pp", "dp", "cp", "ep", "interleave", "micro_batch",
                             "recompute", "sequence_parallel", "zero")}
    t = _small(tmp_path, csvrows.like(rows[H100], **empty))
    assert not t.not_covered
    given, searched = t.rows
    assert searched.detail.startswith("plan: tp")
    # tokens/s per GPU, not a training time: within a factor of the published layout's
    assert 0.5 < searched.predicted / given.predicted < 2.0


def test_a_time_in_another_unit_is_compared_in_that_unit(tmp_path: Path) -> None:
    _, rows = csvrows.shipped("training.csv")
    row = rows["korthikanti22_t5_22b_full"]
    ms = csvrows.like(row, value=str(1000 * float(row["value"])), unit="ms")
    t = training_table(path=csvrows.write(tmp_path / "t.csv", "training.csv", row, ms))
    s, in_ms = t.rows
    assert in_ms.unit == "ms"
    assert in_ms.predicted == pytest.approx(1000 * s.predicted)
    assert in_ms.error == pytest.approx(s.error)


@pytest.mark.parametrize("changes, message", [
    ({"value": "~137"}, "line 3, row {id}: value '~137' is not a number"),
    ({"tp": "two"}, "line 3, row {id}: tp 'two' is not an integer"),
    ({"metric": "samples_per_s"}, "metric 'samples_per_s' is not one of"),
    ({"precision": "fp6"}, "precision 'fp6' is not one of"),
    ({"set": "calibration"}, "set 'calibration' is not dev or held-out"),
    ({"set": ""}, "set '' is not dev or held-out"),
    ({"unit": "TFLOP/s"}, "unit 'TFLOP/s' is not a unit of tokens_per_s_per_gpu"),
    ({"n_gpus": "16"}, "n_gpus 16 is not tp x pp x dp x cp = 8"),
    ({"recompute": "attention_only"}, "recompute 'attention_only' is not a recompute mode"),
    ({"grad_reduce": "ring"}, "grad_reduce 'ring' is not one of"),
    ({"grad_overlap": "maybe"}, "grad_overlap 'maybe' is not one of"),
    ({"flash_attention": "fused"}, "flash_attention 'fused' is not one of"),
    ({"id": H100}, f"id '{H100}' repeats line 2"),
])
def test_a_malformed_value_names_the_file_line_and_column(
        tmp_path: Path, changes: dict[str, str], message: str) -> None:
    _, rows = csvrows.shipped("training.csv")
    bad = csvrows.like(rows[H100], **changes)
    with pytest.raises(InputError) as exc:
        _small(tmp_path, bad)
    assert f"{tmp_path / 't.csv'} " in str(exc.value)
    assert message.format(id=bad["id"]) in str(exc.value)
