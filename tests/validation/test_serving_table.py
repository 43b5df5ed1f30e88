"""The serving validation table: TensorRT-LLM measurements predicted by the step model and the
request-level simulator, held to the issue's targets."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from clusterwright.errors import InputError
from clusterwright.validation.rows import TableResult, data_dir
from clusterwright.validation.serving_table import serving_table
from tests.validation import csvrows
from tests.validation.shared import shipped_table


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> TableResult:
    return shipped_table("serving", tmp_path_factory)


def _mape(table: TableResult, quantity: str) -> float:
    rows = [r for r in table.dev_rows if r.quantity == quantity]
    assert rows, quantity
    return sum(abs(r.error) for r in rows) / len(rows)


def test_throughput_rows_within_15_percent(table: TableResult) -> None:
    assert _mape(table, "output_throughput") <= 0.15


def test_ttft_rows_within_20_percent(table: TableResult) -> None:
    assert _mape(table, "ttft") <= 0.20


def test_no_row_is_wildly_off(table: TableResult) -> None:
    assert table.max_abs_error < 0.30


def test_every_row_cites_its_source() -> None:
    with open(data_dir() / "serving.csv", newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) >= 16
    assert all(len(r["source"]) > 10 and r["verify"] in ("V", "S") for r in rows)


def test_tpot_rows_within_20_percent(table: TableResult) -> None:
    assert _mape(table, "itl") <= 0.20


def test_held_out_rows_are_reported_separately(table: TableResult) -> None:
    held = table.held_out_rows
    assert len(held) >= 21 and all(r.set == "held-out" for r in held)
    assert table.held_out_mape is not None


def test_engine_options_apply_to_their_row_only() -> None:
    from clusterwright.catalog.registry import load_catalog
    from clusterwright.validation.serving_table import predict

    cat = load_catalog()
    with open(data_dir() / "serving.csv", newline="", encoding="utf-8") as fh:
        row = next(r for r in csv.DictReader(fh) if r["engine_options"])
    stack_before = cat.stack_for_gpu(row["gpu"])
    with_opt, detail = predict(cat, row)
    assert "gqa_kv_reuse=false" in detail
    without, _ = predict(cat, dict(row, engine_options=""))
    assert with_opt < without  # re-reading the KV cache per query head is slower
    assert cat.stack_for_gpu(row["gpu"]) is stack_before  # the catalog is left as it was


def test_bad_engine_options_name_the_row() -> None:
    from clusterwright.catalog.registry import load_catalog
    from clusterwright.errors import InputError
    from clusterwright.validation.serving_table import predict

    with open(data_dir() / "serving.csv", newline="", encoding="utf-8") as fh:
        row = next(r for r in csv.DictReader(fh) if r["engine_options"])
    with pytest.raises(InputError, match=row["id"]):
        predict(load_catalog(), dict(row, engine_options="no_such_option=1"))


PREFILL = "trtllm_a100_llama7b_bs1_prefill_128"


@pytest.mark.parametrize("changes, reason", [
    ({"gpu": "h20"}, "unknown GPU id 'h20'"),
    ({"model": "falcon-180b"}, "falcon-180b"),
    ({"tp": "16"}, "tp"),
])
def test_a_serving_row_the_model_cannot_predict_is_not_covered(
        tmp_path: Path, changes: dict[str, str], reason: str) -> None:
    _, rows = csvrows.shipped("serving.csv")
    t = serving_table(path=csvrows.write(tmp_path / "s.csv", "serving.csv", PREFILL,
                                         csvrows.like(rows[PREFILL], **changes)))
    assert [r.id for r in t.rows] == [PREFILL]
    (nc,) = t.not_covered
    assert nc.line == 3 and reason in nc.reason, nc.reason


@pytest.mark.parametrize("changes, message", [
    ({"metric": "itl"}, "metric 'itl' is not one of ttft"),
    ({"mode": "offline"}, "mode 'offline' is not one of"),
    ({"input_len": "1k"}, "input_len '1k' is not an integer"),
    ({"engine_options": "gqa_kv_reuse=maybe"}, "engine_options 'gqa_kv_reuse=maybe'"),
    ({"engine_options": "foo=1"}, "engine_options 'foo=1' is rejected (foo: Extra inputs"),
    ({"unit": "tok/s"}, "unit 'tok/s' is not a unit of ttft"),
])
def test_a_malformed_serving_row_names_the_line_and_column(
        tmp_path: Path, changes: dict[str, str], message: str) -> None:
    _, rows = csvrows.shipped("serving.csv")
    with pytest.raises(InputError) as exc:
        serving_table(path=csvrows.write(tmp_path / "s.csv", "serving.csv", PREFILL,
                                         csvrows.like(rows[PREFILL], **changes)))
    assert f"s.csv line 3, row {PREFILL}_new: {message}" in str(exc.value)


def test_a_ttft_in_seconds_is_compared_in_seconds(tmp_path: Path) -> None:
    _, rows = csvrows.shipped("serving.csv")
    row = rows[PREFILL]
    s = csvrows.like(row, unit="s", value=str(float(row["value"]) / 1e3))
    ms, in_s = serving_table(path=csvrows.write(tmp_path / "s.csv", "serving.csv", row, s)).rows
    assert in_s.predicted == pytest.approx(ms.predicted / 1e3)
