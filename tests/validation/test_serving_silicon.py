"""Serving against AIConfigurator's measured configurations (validation/serving_silicon.py)
and its command, ``validate --table serving-silicon``."""

from __future__ import annotations

import csv
import io
import json
import math
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from clusterwright.catalog.registry import load_catalog
from clusterwright.catalog.schema import Dtype
from clusterwright.cli.main import app
from clusterwright.errors import InputError
from clusterwright.sim.serving_steady import SATURATED_SENSITIVITY
from clusterwright.validation import serving_silicon as ss
from clusterwright.validation.rows import data_dir
from clusterwright.validation.tables import TABLES
from tests.validation.shared import shipped_table

runner = CliRunner()
SHIPPED = data_dir() / ss.FILE


def cw(*args: str) -> Result:
    return runner.invoke(app, list(args), env={"CLUSTERWRIGHT_CATALOG": None})


def shipped_rows() -> list[dict[str, str]]:
    with open(SHIPPED, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def write(path: Path, rows: list[dict[str, str]], columns: tuple[str, ...] = ss.COLUMNS
          ) -> Path:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(columns), extrasaction="ignore")
    w.writeheader()
    for r in rows:
        w.writerow({k: r.get(k, "") for k in columns})
    path.write_text(buf.getvalue(), encoding="utf-8")
    return path


def pick(**match: str) -> dict[str, str]:
    for r in shipped_rows():
        if all(r[k] == v for k, v in match.items()):
            return dict(r)
    raise AssertionError(f"no shipped row matches {match}")


AGG = {"model_path": "meta-llama/Llama-3.1-8B-Instruct", "backend": "trtllm", "mode": "agg"}
MOE = {"model_path": "deepseek-ai/DeepSeek-V3", "mode": "agg", "backend": "sglang"}
DISAGG = {"model_path": "deepseek-ai/DeepSeek-V3", "mode": "disagg", "backend": "trtllm",
          "system": "b200_sxm"}


# ---------------------------------------------------------------------------- reading


def test_the_shipped_file_has_the_documented_columns() -> None:
    with open(SHIPPED, encoding="utf-8") as fh:
        assert tuple(fh.readline().strip().split(",")) == ss.COLUMNS
    assert len(shipped_rows()) == 3130


def test_missing_and_extra_columns_name_the_column_on_line_1(tmp_path: Path) -> None:
    rows = [pick(**AGG)]
    cols = tuple(c for c in ss.COLUMNS if c != "isl")
    with pytest.raises(InputError, match=r"line 1: missing column.*isl") as e:
        ss.read_rows(write(tmp_path / "a.csv", rows, cols))
    assert e.value.field == "isl"
    with pytest.raises(InputError, match=r"line 1: unexpected column.*qps"):
        ss.read_rows(write(tmp_path / "b.csv", rows, (*ss.COLUMNS, "qps")))


@pytest.mark.parametrize(("column", "value", "message"), [
    ("backend", "tgi", "backend: 'tgi' is not one of"),
    ("backend_version", "x7", "backend_version: 'x7': names no trtllm release"),
    ("precision", "fp6", "precision: 'fp6' is not one of"),
    ("mode", "split", "mode: 'split' is not agg or disagg"),
    ("isl", "many", "isl: 'many' is not a number"),
    ("silicon_tpot_ms", "-3", "silicon_tpot_ms: '-3' must be positive"),
])
def test_bad_values_name_the_column_and_the_line(column: str, value: str,
                                                 message: str) -> None:
    r = pick(**AGG)
    r[column] = value
    r["_line"] = "17"
    with pytest.raises(InputError, match=f"line 17: {message}") as e:
        ss.resolve(load_catalog(), r)
    assert e.value.field == column


@pytest.mark.parametrize(("column", "value", "message"), [
    ("tp_size", "0", "tp_size: '0' is not an integer >= 1"),
    ("pp_size", "0", "pp_size: '0' is not an integer >= 1"),
    ("tp_size", "", "tp_size: an aggregated row needs its layout"),
    ("isl", "1e30", "isl: '1e30' is more than 10,000,000"),
    ("osl", "100000000", "osl: '100000000' is more than 10,000,000"),
    ("gemm_quant_mode", "bogus", "gemm_quant_mode: 'bogus' is not one of"),
    ("silicon_data_source", "x; silicon_concurrency=0",
     "silicon_data_source: silicon_concurrency=0: a benchmark runs at least one client"),
    ("silicon_data_source", "x; silicon_concurrency=99999999999",
     "silicon_data_source: silicon_concurrency=99999999999: more than 100,000 clients"),
    ("batch_size", "99999999999", "batch_size: '99999999999' is more than 100,000"),
    ("prefill_batch_size", "1e12", "prefill_batch_size: '1e12' is more than 100,000"),
    ("decode_batch_size", "-4", "decode_batch_size: '-4' is not an integer >= 0"),
])
def test_values_no_layout_or_length_can_have_name_the_column_and_the_line(
        column: str, value: str, message: str) -> None:
    """A GPU count of 0 for TP or PP, an aggregated row without TP, lengths past any model's
    context, an unknown weight format and client counts past `serve estimate
    --concurrency`'s bound (10^11 clients were simulated: a TTFT MAPE of 10^11 %; a batch
    column no prediction reads is checked all the same): exit 2 naming the column and the
    CSV line, not a silent 1 (0 stays the file's "not used" for attention-DP and the MoE
    split)."""
    r = pick(**AGG)
    r[column] = value
    r["_line"] = "9"
    with pytest.raises(InputError, match=f"line 9: {message}") as e:
        ss.resolve(load_catalog(), r)
    assert e.value.field == column


def test_a_copied_run_beside_a_run_without_its_measurement_names_that_line(
        tmp_path: Path) -> None:
    """A gap-analysis copy is matched against the InferenceMAX runs of its system and
    lengths by their printed TTFT and TPOT; a run whose TTFT is empty is no match, and its
    own line is what the error names (it was a traceback from the matching)."""
    run = next(r for r in shipped_rows() if ss._INFERENCEMAX.search(r["silicon_data_source"]))
    copy = {**run, "id": "copy", "silicon_data_source": "source_file=gap-analysis.csv",
            "silicon_ttft_ms": "123.45", "silicon_tpot_ms": "6.78"}
    res = cw("validate", "--table", "serving-silicon", "--data",
             str(write(tmp_path / "s.csv", [copy, {**run, "silicon_ttft_ms": ""}])))
    assert res.exit_code == 2, res.output
    assert "line 3: silicon_ttft_ms" in res.output
    assert "Traceback" not in res.output


def test_batch_columns_that_make_too_many_clients_name_the_column() -> None:
    """Each batch is within the bound, their product over the decode workers is not."""
    r = pick(**DISAGG)
    r.update(silicon_data_source="x", decode_batch_size="1000", decode_num_workers="200",
             decode_attention_dp_size="1", _line="3")
    with pytest.raises(InputError, match=r"line 3: decode_batch_size: 1,000 a rank x 200 "
                                         r"ranks = 200,000 clients, more than 100,000") as e:
        ss.concurrency(r)
    assert e.value.field == "decode_batch_size"


def test_worker_counts_past_the_planners_gpus_name_the_role(tmp_path: Path) -> None:
    r = pick(**DISAGG)
    r.update(prefill_num_workers="100000000", decode_num_workers="1", _line="4")
    with pytest.raises(InputError, match=r"line 4: prefill_num_workers: '100000000' is more "
                                         r"than") as e:
        ss.resolve(load_catalog(), r)
    assert e.value.field == "prefill_num_workers"


def test_a_file_without_rows_or_ids_or_with_short_rows_is_refused(tmp_path: Path) -> None:
    """No rows (a pass on nothing), an empty id (the JSON keys rows by it) and a row with
    fewer values than columns (a quoted value broken over lines) exit 2 naming the line; a
    spreadsheet's byte-order mark before the header is read past."""
    with pytest.raises(InputError, match="no rows after the header"):
        ss.read_rows(write(tmp_path / "empty.csv", []))
    r = pick(**AGG)
    with pytest.raises(InputError, match=r"line 2: id: empty") as e:
        ss.read_rows(write(tmp_path / "noid.csv", [{**r, "id": " "}]))
    assert e.value.field == "id"
    text = write(tmp_path / "ok.csv", [r]).read_text(encoding="utf-8")
    short = text.rstrip("\n").rsplit(",", 3)[0] + "\n"
    (tmp_path / "short.csv").write_text(short, encoding="utf-8")
    with pytest.raises(InputError, match=r"line 2: fewer values than columns"):
        ss.read_rows(tmp_path / "short.csv")
    (tmp_path / "bom.csv").write_text("\ufeff" + text, encoding="utf-8")
    assert [x["id"] for x in ss.read_rows(tmp_path / "bom.csv")] == [r["id"]]
    res = cw("validate", "--table", "serving-silicon", "--data", str(tmp_path / "empty.csv"))
    assert res.exit_code == 2 and "no rows after the header" in res.output


@pytest.mark.parametrize(("cols", "column"), [
    ({"moe_tp_size": "1000000000"}, "moe_tp_size"),
    ({"moe_tp_size": "99999999999999999999"}, "moe_tp_size"),
    ({"attention_dp_size": "1e9"}, "attention_dp_size"),
    ({"tp_size": "4", "attention_dp_size": "65536"}, "attention_dp_size"),
    ({"moe_tp_size": "131072", "moe_ep_size": "2"}, "moe_tp_size"),
])
def test_layouts_beyond_the_planners_gpus_are_refused(cols: dict[str, str],
                                                     column: str) -> None:
    # Before vLLM's DP reading such a row was "not covered"; now a huge MoE group would be a
    # huge DP count: every layout column, and the GPUs they add up to, stay within the limit
    r = pick(model_path="MiniMaxAI/MiniMax-M2.5", backend="vllm", mode="agg")
    r.update(tp_size="1", attention_dp_size="", moe_tp_size="1", moe_ep_size="1", _line="5")
    r.update(cols)
    with pytest.raises(InputError, match="line 5: ") as e:
        ss.resolve(load_catalog(), r)
    assert e.value.field == column


def test_inconsistent_moe_layouts_name_the_column() -> None:
    cat = load_catalog()
    r = pick(**MOE)
    r.update(tp_size="4", attention_dp_size="3", moe_tp_size="1", moe_ep_size="8", _line="9")
    with pytest.raises(InputError, match="line 9: attention_dp_size: tp 4 x attention-DP 3"):
        ss.resolve(cat, r)
    r.update(tp_size="1", attention_dp_size="512", moe_tp_size="1", moe_ep_size="512")
    with pytest.raises(InputError, match="moe_ep_size: 512 exceeds the 256 experts"):
        ss.resolve(cat, r)


def test_moe_columns_naming_another_gpu_count_are_not_covered_with_the_reason() -> None:
    # An SGLang row recording tp 2 with moe_tp 4: attention-DP divides the MoE group, but
    # which count ran is not said (vLLM's rows of this shape are its DP: below)
    r = pick(**MOE)
    r.update(tp_size="2", attention_dp_size="1", moe_tp_size="4", moe_ep_size="1")
    with pytest.raises(ss.NotCoveredError, match="tp 2 x attention-DP 1 = 2 GPUs for "
                       "attention, but moe_tp 4 x moe_ep 1 = 4 for the MoE layers"):
        ss.resolve(load_catalog(), r)


@pytest.mark.parametrize(("tp", "moe_tp", "moe_ep", "adp"), [
    ("1", "2", "1", 2), ("2", "4", "1", 2), ("1", "4", "1", 4), ("2", "2", "4", 4)])
def test_a_vllm_row_without_attention_dp_and_a_larger_moe_group_is_vllm_data_parallel(
        tp: str, moe_tp: str, moe_ep: str, adp: int) -> None:
    # vLLM's DP engines run their expert layers as one DP x TP group (its docs,
    # data_parallel_deployment.md): a row recording no attention-DP and a MoE group k x tp
    # ran k engines
    r = pick(model_path="MiniMaxAI/MiniMax-M2.5", backend="vllm", mode="agg")
    r.update(tp_size=tp, attention_dp_size="", moe_tp_size=moe_tp, moe_ep_size=moe_ep)
    cfg = ss.resolve(load_catalog(), r)
    assert cfg.dep.agg is not None
    par = cfg.dep.agg.par
    assert (par.tp, par.adp, par.moe_tp, par.moe_ep) == (int(tp), adp, int(moe_tp),
                                                         int(moe_ep))
    assert any(f"read as vLLM data parallelism {adp}" in n for n in cfg.dep.notes)


@pytest.mark.parametrize(("backend", "dp"), [("vllm", "1"), ("sglang", ""), ("trtllm", "")])
def test_only_vllm_with_no_recorded_attention_dp_reads_the_moe_group_as_dp(
        backend: str, dp: str) -> None:
    r = pick(model_path="MiniMaxAI/MiniMax-M2.5", backend="vllm", mode="agg")
    r.update(backend=backend, backend_version=pick(backend=backend)["backend_version"],
             tp_size="1", attention_dp_size=dp, moe_tp_size="2", moe_ep_size="1")
    with pytest.raises(ss.NotCoveredError, match="layout columns disagree"):
        ss.resolve(load_catalog(), r)


@pytest.mark.parametrize(("backend", "version"), [
    ("vllm", "0.24.0"), ("vllm", "0.26.0"), ("sglang", "0.5.16"), ("trtllm", "1.3.0rc23")])
def test_a_release_newer_than_the_measured_ones_is_read_with_its_family(
        backend: str, version: str) -> None:
    """AIConfigurator's current tables (vLLM 0.24, SGLang 0.5.14-0.5.16, TensorRT-LLM
    1.3.0rc20-rc23) are newer than the shipped rows' releases; a measured set at those
    versions is predicted, not refused as an unknown version."""
    cat = load_catalog()
    r = pick(backend=backend, mode="agg")
    cfg = ss.resolve(cat, {**r, "backend_version": version})
    assert cfg.dep.engine.backend == backend


@pytest.mark.parametrize(("backend", "version"), [
    ("vllm", "1.2.0"), ("sglang", "1.0.0rc1"), ("trtllm", "2.0.0"), ("vllm", "v3.1")])
def test_a_release_newer_than_every_family_is_read_with_the_newest_and_said(
        backend: str, version: str) -> None:
    """A measured set from a later release than the catalog's families is predicted with
    the newest family and a note, not refused: the whole file would otherwise exit 2."""
    cat = load_catalog()
    cfg = ss.resolve(cat, {**pick(backend=backend, mode="agg"), "backend_version": version})
    assert cfg.dep.engine.id == cat.serving_engine(backend).id
    assert cfg.dep.engine.release == version
    assert any(f"backend_version {version}: newer than every catalogued {backend} family" in n
               for n in cfg.dep.notes)


@pytest.mark.parametrize(("backend", "version"), [
    ("vllm", "0.9.2"), ("vllm", "0.8.5.post1"), ("sglang", "0.4.6.post5")])
def test_a_release_older_than_every_family_is_not_covered(backend: str,
                                                          version: str) -> None:
    """vLLM before its V1 engine (0.10) and SGLang before 0.5 scheduled otherwise: such a
    row is not covered, with the reason, and the rest of the file is still predicted."""
    cat = load_catalog()
    r = {**pick(backend=backend, mode="agg"), "backend_version": version}
    with pytest.raises(ss.NotCoveredError, match=f"{version}: older than every catalogued"):
        ss.resolve(cat, r)
    got = ss.predict_all([r, pick(backend=backend, mode="agg")], cat)
    assert got[0].skipped and "older than every" in got[0].skipped
    assert got[1].skipped is None and got[1].pred_tpot_ms
    # A malformed row still stops the file, even with an old release
    with pytest.raises(InputError, match="mode"):
        ss.resolve(cat, {**r, "mode": "both"})


@pytest.mark.parametrize(("backend", "build"), [
    ("sglang", "nightly-dev"), ("sglang", "nightly-dev-20260216-d3bae71e"),
    ("sglang", "glm5-hopper"), ("trtllm", "gpt-oss-dev"), ("vllm", "main")])
def test_a_development_build_is_read_with_the_newest_family_and_said(backend: str,
                                                                     build: str) -> None:
    cat = load_catalog()
    r = pick(**(MOE if backend == "sglang" else AGG))
    r.update(backend=backend, backend_version=build)
    cfg = ss.resolve(cat, r)
    assert cfg.dep.engine.id == cat.serving_engine(backend).id
    assert f"backend_version {build!r} is a development build" in cfg.dep.notes[0]
    released = ss.resolve(cat, pick(**(MOE if backend == "sglang" else AGG)))
    assert not any("development build" in n for n in released.dep.notes)


@pytest.mark.parametrize(("mode", "name", "compute", "nbytes"), [
    ("int4_wo", "int4_wo", Dtype.bf16, 0.515625), ("bfloat16", "bf16", Dtype.bf16, 2.0),
    ("sq", "sq", Dtype.int8, 1.0), ("w4afp8", "w4afp8", Dtype.fp8, 0.515625),
    ("w4a16_mxfp4", "w4a16_mxfp4", Dtype.bf16, 0.53125)])
def test_aiconfigurator_quant_modes_are_read(mode: str, name: str, compute: Dtype,
                                             nbytes: float) -> None:
    cat = load_catalog()
    r = pick(**AGG)
    r.update(gemm_quant_mode=mode, moe_quant_mode=mode,
             precision="int4" if "4" in mode else r["precision"])
    cfg = ss.resolve(cat, r)
    assert (cfg.dep.dense.name, cfg.dep.dense.compute, cfg.dep.dense.bytes_per_weight) == (
        name, compute, nbytes)
    st, _ = ss.predict(cat, cfg)
    assert st.tpot_s > 0


def test_a_disaggregated_row_needs_both_roles() -> None:
    r = pick(**DISAGG)
    r["decode_tp_size"] = ""
    r["_line"] = "40"
    with pytest.raises(InputError, match="line 40: decode_tp_size: a disaggregated row") as e:
        ss.resolve(load_catalog(), r)
    assert e.value.field == "decode_tp_size"


# ---------------------------------------------------------------------------- reading rules


def test_tp_that_does_not_divide_the_heads_is_read_as_attention_dp() -> None:
    r = pick(**MOE)
    r.update(tp_size="48", attention_dp_size="1", moe_tp_size="6", moe_ep_size="8")
    cfg = ss.resolve(load_catalog(), r)
    assert cfg.dep.agg is not None
    par = cfg.dep.agg.par
    assert (par.tp, par.adp, par.moe_tp, par.moe_ep) == (1, 48, 6, 8)
    assert any("read as attention-DP 48" in n for n in cfg.dep.notes)


def test_missing_worker_counts_are_sized_and_said() -> None:
    cat = load_catalog()
    r = pick(**DISAGG)
    r.update(prefill_num_workers="", decode_num_workers="")
    cfg = ss.resolve(cat, r)
    st, note = ss.predict(cat, cfg)
    assert "worker counts not recorded" in note and "sized" in note
    assert st.tpot_s > 0


def test_a_sweep_without_worker_counts_is_sized_once_for_its_top_concurrency() -> None:
    # One benchmark sweep runs one deployment (every config_id of the file keeps its workers
    # across client counts): rows that differ only in concurrency get the workers sized for
    # the highest, not each its own.
    cat = load_catalog()
    base = pick(**DISAGG)
    base.update(prefill_num_workers="", decode_num_workers="",
                silicon_data_source="run 7; silicon_concurrency=4; image x")
    high = dict(base, id="high", silicon_data_source="run 7; silicon_concurrency=512; image x")
    other = dict(base, id="other", silicon_data_source="run 8; silicon_concurrency=4; image x")
    low, top, alone = ss.mark_sweeps([base, high, other])
    assert low["_sweep_clients"] == top["_sweep_clients"] == "512"
    assert alone["_sweep_clients"] == "4"  # another run: its own sweep
    lo, hi, al = (ss.resolve(cat, r) for r in (low, top, alone))
    assert lo.clients == 4 and hi.clients == 512

    def workers(cfg: ss.RowConfig) -> tuple[int, int]:
        assert cfg.dep.prefill is not None and cfg.dep.decode is not None
        pw, dw = cfg.dep.prefill.workers, cfg.dep.decode.workers
        assert pw is not None and dw is not None
        return pw, dw

    assert workers(lo) == workers(hi)
    assert sum(workers(al)) < sum(workers(lo))  # 4 clients alone need fewer workers
    assert "highest concurrency (512 clients)" in " ".join(lo.dep.notes)
    recorded = pick(**DISAGG)
    assert "_sweep_clients" not in ss.mark_sweeps([recorded])[0]


def test_concurrency_prefers_the_source_then_the_batch_columns() -> None:
    r = pick(**AGG)
    r["silicon_data_source"] = "x; silicon_concurrency=48; y"
    assert ss.concurrency(r) == 48
    r.update(silicon_data_source="", batch_size="16", attention_dp_size="4")
    assert ss.concurrency(r) == 64


def test_clients_beyond_the_batch_columns_are_other_replicas_of_a_dense_model() -> None:
    r = pick(**AGG)
    r.update(silicon_data_source="x; silicon_concurrency=416; y", batch_size="13",
             attention_dp_size="1", tp_size="2")
    cfg = ss.resolve(load_catalog(), r)
    assert cfg.clients == 13  # 32 replicas of 13 clients; one is simulated
    assert cfg.dep.agg is not None and cfg.dep.agg.par.adp == 1
    assert "32 replicas" in cfg.dep.notes[-1]


def test_clients_of_tp_times_the_batch_on_a_moe_model_are_attention_dp() -> None:
    r = pick(**MOE)
    r.update(silicon_data_source="x; silicon_concurrency=224; y", batch_size="56",
             tp_size="4", attention_dp_size="1", moe_tp_size="1", moe_ep_size="4")
    cfg = ss.resolve(load_catalog(), r)
    assert cfg.dep.agg is not None
    par = cfg.dep.agg.par
    assert (par.tp, par.adp, par.moe_tp, par.moe_ep) == (1, 4, 1, 4) and cfg.clients == 224
    assert "read as attention-DP 4" in cfg.dep.notes[-1]


def test_clients_equal_to_the_batch_columns_change_nothing() -> None:
    r = pick(**AGG)
    r.update(silicon_data_source="x; silicon_concurrency=16; y", batch_size="16",
             attention_dp_size="1")
    cfg = ss.resolve(load_catalog(), r)
    assert cfg.clients == 16 and cfg.dep.notes == ()


# ---------------------------------------------------------------------------- the table


def test_a_small_file_predicts_every_row(tmp_path: Path) -> None:
    rows = [pick(**AGG), pick(**MOE), pick(**DISAGG),
            pick(model_path="openai/gpt-oss-120b", backend="vllm", system="b200_sxm")]
    res = ss.serving_silicon(write(tmp_path / "s.csv", rows))
    p = res.payload()
    # The issue's contract, plus keys added beside it (never renamed or dropped)
    assert {"total", "covered", "ttft_mape", "tpot_mape", "partitions", "rows"} <= set(p)
    assert set(p) - {"total", "covered", "ttft_mape", "tpot_mape", "partitions", "rows"} == {
        "recorded", "repeat_noise", "unwarmed", "warmed", "saturated", "unsaturated",
        "open_deployment", "settled_deployment", "ttft_median_error", "tpot_median_error",
        "within_target", "complete"}
    assert p["recorded"]["n"] <= p["covered"]
    assert p["unwarmed"]["n"] + p["warmed"]["n"] == p["covered"]
    assert p["total"] == p["covered"] == 4
    for x in p["rows"]:
        assert {"id", "ttft_ms", "tpot_ms", "pred_ttft_ms", "pred_tpot_ms", "skipped"} <= set(x)
        assert x["skipped"] is None and x["pred_ttft_ms"] > 0 and x["pred_tpot_ms"] > 0
    for q in p["partitions"]:
        assert set(q) == {"system", "backend", "mode", "n", "ttft_mape", "tpot_mape",
                          "ttft_median_error", "tpot_median_error"}
    assert res.passed  # no partition reaches 10 rows, so none is held to the target


def _row(i: int, system: str, pred_ttft: float, note: str = "", unwarmed: bool = False
         ) -> ss.RowResult:
    return ss.RowResult(f"r{i}", i + 2, system, "vllm", "agg", 100.0, 10.0, pred_ttft, 10.0,
                        None, note=note, unwarmed=unwarmed)


def test_partitions_within_the_target_are_counted_per_metric() -> None:
    """Only partitions of PARTITION_MIN rows count; each metric is held to the target on its
    own, and the rows the data describes in full are counted apart."""
    n = ss.PARTITION_MIN
    rows = ([_row(i, "b200_sxm", 110.0) for i in range(n)]  # TTFT 10 %: within
            + [_row(n + i, "h100_sxm", 130.0) for i in range(n)]  # TTFT 30 %: not
            + [_row(2 * n + i, "gb200", 500.0) for i in range(n - 1)])  # too few rows
    res = ss.SiliconResult(rows)
    assert res.within_target() == {"partitions": 2, "ttft": 1, "tpot": 2}
    assert not res.passed
    # An unwarmed row and a row whose deployment is open leave the full description: the
    # H100 partition drops below PARTITION_MIN there
    rows[n] = replace(rows[n], unwarmed=True)
    rows[n + 1] = replace(rows[n + 1], note=ss.POOLED_NOTE + "2 deployments")
    res = ss.SiliconResult(rows)
    assert [r.id for r in res.complete if r.system == "h100_sxm"] == [
        f"r{i}" for i in range(n + 2, 2 * n)]
    assert res.within_target(res.complete) == {"partitions": 1, "ttft": 1, "tpot": 1}
    p = res.payload()
    assert p["complete"]["n"] == len(rows) - 2
    assert p["complete"]["within_target"] == {"partitions": 1, "ttft": 1, "tpot": 1}
    assert p["within_target"] == {"partitions": 2, "ttft": 1, "tpot": 2}


def test_a_row_the_model_cannot_hold_is_not_covered_with_the_reason(tmp_path: Path) -> None:
    r = pick(model_path="deepseek-ai/DeepSeek-V3", backend="sglang", mode="agg")
    r.update(tp_size="1", attention_dp_size="1", moe_tp_size="1", moe_ep_size="1",
             precision="fp8", gemm_quant_mode="fp8", moe_quant_mode="fp8_block")
    p = ss.serving_silicon(write(tmp_path / "s.csv", [r])).payload()
    assert p["covered"] == 0
    assert "no room for one request's KV cache" in p["rows"][0]["skipped"]


def _twins() -> tuple[dict[str, str], dict[str, str]]:
    """A disaggregated row without worker counts and the recorded row of the same run."""
    rows = shipped_rows()
    recorded = {(r["system"], r["isl"], r["silicon_ttft_ms"], r["silicon_tpot_ms"]): r
                for r in rows if r["mode"] == "disagg" and r["decode_num_workers"]}
    for r in rows:
        if r["mode"] == "disagg" and not r["decode_num_workers"]:
            twin = recorded.get((r["system"], r["isl"], r["silicon_ttft_ms"],
                                 r["silicon_tpot_ms"]))
            if twin is not None:
                return dict(r), dict(twin)
    raise AssertionError("the shipped file has no twin rows")


def test_a_row_repeating_a_recorded_run_takes_its_deployment(tmp_path: Path) -> None:
    bare, twin = _twins()
    alone = ss.read_rows(write(tmp_path / "a.csv", [bare]))[0]
    assert "_twin" not in alone  # (InferenceMAX's configuration may still name its layout)
    both = ss.read_rows(write(tmp_path / "b.csv", [bare, twin]))
    got = both[0]
    for col in ss.ROLE_COLUMNS:
        assert got[col] == twin[col], col
    assert got["model_path"] == bare["model_path"] and got["id"] == bare["id"]
    assert got["_twin"] == f"{twin['id']} (line 3)"
    cfg = ss.resolve(load_catalog(), got)
    assert cfg.dep.decode is not None and cfg.dep.decode.workers == int(
        twin["decode_num_workers"])
    assert "the same measurement as" in cfg.dep.notes[0]


def test_a_copy_of_an_inferencemax_result_is_read_as_that_run(tmp_path: Path) -> None:
    """AIConfigurator's gap analyses copy InferenceMAX's results with two decimals and no
    date: such a row takes the run's source (client, date, script options), keeps its own
    columns and concurrency; a different measurement stays as it is."""
    run = pick(system="b200_sxm", backend="vllm", mode="agg", model_path="MiniMaxAI/MiniMax-M2.5")
    copy = {**run, "id": "copy", "silicon_data_source": "source_file=x-gap-analysis.csv; "
            f"silicon_concurrency={ss.concurrency(run)}; aic_database_mode=SILICON",
            "silicon_ttft_ms": f"{float(run['silicon_ttft_ms']):.2f}",
            "silicon_tpot_ms": f"{float(run['silicon_tpot_ms']):.2f}"}
    other = {**copy, "id": "other",
             "silicon_tpot_ms": f"{float(run['silicon_tpot_ms']) + 0.01:.2f}"}
    got = {r["id"]: r for r in ss.read_rows(write(tmp_path / "g.csv", [run, copy, other]))}
    assert got["copy"]["silicon_data_source"] == run["silicon_data_source"]
    assert got["copy"]["_run"].startswith(run["id"]) and "gap-analysis" in got["copy"]["_source"]
    assert "_run" not in got["other"]
    assert got["other"]["silicon_data_source"] == other["silicon_data_source"]
    cfg = ss.resolve(load_catalog(), got["copy"])
    assert not cfg.equal_lengths and cfg.rounds > 0  # InferenceMAX's client
    assert "the same measurement as InferenceMAX's" in cfg.dep.notes[0]
    # Without the run beside it, the copy is read as AIConfigurator's own equal-length client
    alone = ss.read_rows(write(tmp_path / "a.csv", [copy]))[0]
    assert ss.resolve(load_catalog(), alone).equal_lengths


def test_a_different_measurement_is_no_twin(tmp_path: Path) -> None:
    bare, twin = _twins()
    twin["silicon_tpot_ms"] = str(float(twin["silicon_tpot_ms"]) * 1.0001)
    got = ss.read_rows(write(tmp_path / "a.csv", [bare, twin]))[0]
    assert "_twin" not in got


def test_repeat_noise_is_the_spread_of_repeated_configurations(tmp_path: Path) -> None:
    base = pick(**AGG)
    a, b, c = dict(base), dict(base), dict(base)
    a["id"], b["id"], c["id"] = "a", "b", "c"
    a["silicon_ttft_ms"], b["silicon_ttft_ms"], c["silicon_ttft_ms"] = "100", "110", "120"
    a["silicon_tpot_ms"] = b["silicon_tpot_ms"] = c["silicon_tpot_ms"] = "10"
    other = dict(base, id="d", isl=str(int(base["isl"]) * 2))  # another configuration
    rows = ss.read_rows(write(tmp_path / "n.csv", [a, b, c, other]))
    noise = ss.repeat_noise(rows)["repeats"]
    assert noise["configurations"] == 1 and noise["measurements"] == 3
    # median 110: |110/100 - 1|, 0, |110/120 - 1|
    assert noise["ttft_mape"] == pytest.approx((0.1 + 0 + 10 / 120) / 3)
    assert noise["tpot_mape"] == 0.0
    # Another checkpoint path of the same architecture is indistinct to the model only
    d = dict(a, id="e", model_path="meta-llama/Llama-3.1-8B", silicon_ttft_ms="150")
    rows = ss.read_rows(write(tmp_path / "m.csv", [a, d]))
    got = ss.repeat_noise(rows)
    assert got["repeats"]["configurations"] == 0
    assert got["model_inputs"]["configurations"] == 1


def test_partitions_of_ten_rows_are_held_to_twenty_percent() -> None:
    def row(i: int, err: float) -> ss.RowResult:
        return ss.RowResult(f"r{i}", i, "b200_sxm", "vllm", "agg", 100.0, 10.0,
                            100.0 * (1 + err), 10.0, None)
    good = ss.SiliconResult([row(i, 0.1) for i in range(10)])
    bad = ss.SiliconResult([row(i, 0.3) for i in range(10)])
    small = ss.SiliconResult([row(i, 0.9) for i in range(9)])
    assert good.passed and not bad.passed and small.passed


def test_partitions_say_which_way_the_model_misses() -> None:
    """MAPE hides the direction: a partition whose rows mostly measure above the model (TTFT
    -40 % on seven rows, +10 % on three) has a negative median error, the mean of the errors'
    sizes aside; TPOT exact on every row is 0."""
    def row(i: int, err: float) -> ss.RowResult:
        return ss.RowResult(f"r{i}", i, "b200_sxm", "vllm", "agg", 100.0, 10.0,
                            100.0 * (1 + err), 10.0, None)
    res = ss.SiliconResult([row(i, -0.4) for i in range(7)] + [row(i, 0.1) for i in range(3)])
    (q,) = res.partitions()
    assert q["ttft_mape"] == pytest.approx(0.31)
    assert q["ttft_median_error"] == pytest.approx(-0.4)
    assert q["tpot_median_error"] == 0.0
    assert res.payload()["ttft_median_error"] == pytest.approx(-0.4)
    assert ss.median_error([None, None]) is None


# ---------------------------------------------------------------------------- command


def test_cli_bad_file_exits_2_naming_the_column_and_line(tmp_path: Path) -> None:
    r = pick(**AGG)
    r["precision"] = "fp6"
    res = cw("validate", "--table", "serving-silicon", "--data",
             str(write(tmp_path / "bad.csv", [pick(**MOE), r])))
    assert res.exit_code == 2
    assert "line 3: precision: 'fp6'" in res.stderr
    res = cw("validate", "--table", "serving-silicon", "--data", str(tmp_path / "none.csv"))
    assert res.exit_code == 2 and "--data" in res.stderr
    res = cw("validate", "--table", "memory", "--data", str(tmp_path / "bad.csv"))
    assert res.exit_code == 2 and "only with --table serving-silicon" in res.stderr


def test_cli_json_on_a_small_file(tmp_path: Path) -> None:
    res = cw("validate", "--table", "serving-silicon", "--json", "--data",
             str(write(tmp_path / "s.csv", [pick(**AGG), pick(**MOE)])))
    assert res.exit_code == 0, res.output
    p: dict[str, Any] = json.loads(res.stdout)
    assert p["total"] == 2 and p["covered"] == 2


@pytest.fixture(scope="module")
def shipped_result() -> ss.SiliconResult:
    """The shipped table predicted once with the packaged catalog, for the commands and the
    engines' regimes that read it whole (~10 s a prediction)."""
    return ss.serving_silicon(cat=load_catalog(env={}))


def _shipped_once(shipped: ss.SiliconResult) -> Any:
    """``serving_silicon`` that answers what ``shipped`` was computed from (the shipped file,
    the packaged catalog: ``load_catalog`` returns that very object when no user catalog is
    set) with ``shipped``; anything else is predicted as before."""
    real = ss.serving_silicon
    packaged = load_catalog(env={})

    def serving_silicon(path: str | Path | None = None,
                        cat: Any = None) -> ss.SiliconResult:
        if path is None and (cat if cat is not None else load_catalog()) is packaged:
            return shipped
        return real(path, cat)

    return serving_silicon


@pytest.mark.slow
def test_aiconfigurator_0_12_rows_held_out_are_read_whole() -> None:
    # The 2,091 rows AIConfigurator 0.12.0's silicon sample adds to the shipped file (newer
    # engine builds, H200, B300, GB300, GLM-5, Qwen3.5, Kimi-K2.5): nothing fitted on them.
    # Every row reads without a format error and is covered; the 19 vLLM rows that record a
    # MoE group larger than their TP and no attention-DP are read as vLLM data parallelism.
    cat = load_catalog()
    rows = ss.read_rows(data_dir() / "serving_silicon_aic012.csv")
    assert len(rows) == 2091
    lookup = ss._lookup(cat)
    dp_read = 0
    for r in rows:
        cfg = ss.resolve(cat, r, lookup)
        dp_read += any("read as vLLM data parallelism" in n for n in cfg.dep.notes)
    assert dp_read == 19


@pytest.mark.slow
def test_the_shipped_table(shipped_result: ss.SiliconResult,
                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Coverage at least 95 %; the exit code says whether every partition of 10+ rows is
    within 20 % on both metrics."""
    monkeypatch.setattr("clusterwright.cli.validate_cmd.serving_silicon",
                        _shipped_once(shipped_result))
    res = cw("validate", "--table", "serving-silicon", "--json")
    assert res.exit_code in (0, 1), res.output
    p = json.loads(res.stdout)
    assert p["total"] == 3130
    assert p["covered"] >= 0.95 * p["total"]
    held = [q for q in p["partitions"] if q["n"] >= ss.PARTITION_MIN]
    ok = all(q["ttft_mape"] <= ss.TARGET and q["tpot_mape"] <= ss.TARGET for q in held)
    assert res.exit_code == (0 if ok else 1)
    assert all(x["skipped"] for x in p["rows"] if x["pred_ttft_ms"] is None)


def test_the_text_table_reports_each_split_with_both_sides(
        shipped_result: ss.SiliconResult, monkeypatch: pytest.MonkeyPatch) -> None:
    """The text output gives each split's rows and the rest, with their counts summing to the
    covered rows."""
    monkeypatch.setattr("clusterwright.cli.validate_cmd.serving_silicon",
                        _shipped_once(shipped_result))
    res = cw("validate", "--table", "serving-silicon")
    text = " ".join(res.output.split())
    p = shipped_result.payload()
    for part, rest, what in (("unwarmed", "warmed", "warm-up requests"),
                             ("saturated", "unsaturated", "loop is saturated"),
                             ("open_deployment", "settled_deployment", "leaves open")):
        a, b = p[part]["n"], p[rest]["n"]
        assert a + b == p["covered"]
        m = re.search(rf"{a} [^;]*{what}.*?: TTFT MAPE [^;]*; the other {b}: TTFT MAPE", text)
        assert m, (what, text[:2000])


def test_the_rows_the_data_describes_in_full_are_reported_with_their_partitions(
        shipped_result: ss.SiliconResult, monkeypatch: pytest.MonkeyPatch) -> None:
    """The shipped rows whose deployment is settled and whose server was warmed: their
    count, MAPE and partitions within the target, in the JSON and in the text table, with
    the whole table's count of partitions within the target beside its verdict."""
    p = shipped_result.payload()
    full = p["complete"]
    expect = sum(1 for r in shipped_result.covered
                 if not r.unwarmed and not ss.open_deployment(r.note))
    assert full["n"] == expect and 1000 < expect < min(p["warmed"]["n"],
                                                      p["settled_deployment"]["n"])
    for counts, parts in ((p["within_target"], p["partitions"]),
                          (full["within_target"], shipped_result.partitions(
                              shipped_result.complete))):
        held = [q for q in parts if q["n"] >= ss.PARTITION_MIN]
        assert counts == {"partitions": len(held),
                          "ttft": sum(q["ttft_mape"] <= ss.TARGET for q in held),
                          "tpot": sum(q["tpot_mape"] <= ss.TARGET for q in held)}
    monkeypatch.setattr("clusterwright.cli.validate_cmd.serving_silicon",
                        _shipped_once(shipped_result))
    text = " ".join(cw("validate", "--table", "serving-silicon").output.split())
    w, fw = p["within_target"], full["within_target"]
    assert (f"{full['n']} rows the data describes in full" in text
            and f"TTFT {fw['ttft']} of {fw['partitions']}, TPOT {fw['tpot']} of "
                f"{fw['partitions']}" in text), text[-1500:]
    assert f"(TTFT {w['ttft']}, TPOT {w['tpot']} of {w['partitions']})" in text


def test_validate_json_has_the_memory_table(shipped_result: ss.SiliconResult,
                                           monkeypatch: pytest.MonkeyPatch,
                                           tmp_path_factory: pytest.TempPathFactory) -> None:
    """``validate --json`` without --table: every table, and the serving-silicon summary
    (here, not in tests/cli/test_validate_cmd.py, to share the shipped table's prediction).
    The other tables are the session's predictions of them (tests/validation/shared.py),
    which their own files check against the published values."""
    monkeypatch.setattr("clusterwright.cli.validate_cmd.serving_silicon",
                        _shipped_once(shipped_result))
    monkeypatch.delenv("CLUSTERWRIGHT_CATALOG", raising=False)  # as the command is run
    for name in list(TABLES):
        table = shipped_table(name, tmp_path_factory)
        monkeypatch.setitem(TABLES, name, lambda table=table: table)
    r = cw("validate", "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    tables = out["tables"]
    assert "memory" in tables
    for name, t in tables.items():
        assert t["rows"] == len(t["per_row"]) > 0, name
    # Without --table the serving-silicon summary comes along, and never fails the command.
    assert out["serving_silicon"]["total"] == 3130


@pytest.mark.slow
def test_engine_regimes_in_the_catalog_match_the_model(
        shipped_result: ss.SiliconResult, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each engine's ``validated`` list is what the model scores now
    (``scripts/calibrate_serving_engines.py --regimes --write`` regenerates it)."""
    monkeypatch.setattr(ss, "serving_silicon", _shipped_once(shipped_result))
    from tests import scripts

    mod = scripts.load("calibrate_serving_engines")
    cat = load_catalog()
    now = mod.regimes(cat)
    for e in cat.all("serving_engines"):
        if e.vendors:
            continue  # fitted and scored on serving_accelerators.csv (its own test)
        spread = ("ttft_error_p10", "ttft_error_p90", "tpot_error_p10", "tpot_error_p90")
        stored = {(v.gpu, v.mode, v.family, v.tp, v.attention_dp, v.held_out): (
            v.rows, v.ttft_mape, v.tpot_mape, v.ttft_median_error, v.tpot_median_error,
            *(getattr(v, f) for f in spread)) for v in e.validated}
        fresh = {(v["gpu"], v["mode"], v["family"], v.get("tp"), v.get("attention_dp"),
                  bool(v.get("held_out"))): (
            v["rows"], v["ttft_mape"], v["tpot_mape"], v["ttft_median_error"],
            v["tpot_median_error"], *(v.get(f) for f in spread)) for v in now.get(e.id, [])}
        assert len(stored) == len(e.validated), e.id  # one entry per regime
        assert stored.keys() == fresh.keys(), e.id
        for k, (n, *errors) in fresh.items():
            assert stored[k][0] == n, (e.id, k)
            for s, f in zip(stored[k][1:], errors, strict=True):
                assert s == pytest.approx(f, abs=0.002), (e.id, k)
            # The errors' deciles are kept from 10 rows up (the script's spread), else none
            assert all((x is None) == (n < 10) for x in stored[k][-4:]), (e.id, k)


def test_an_inferencemax_row_is_read_at_its_clients_mean_lengths() -> None:
    """InferenceMAX draws lengths uniformly from [int(0.8 L), L] (random range ratio 0.8):
    its rows are predicted at the mean lengths, with clients that are not in lockstep."""
    r = pick(backend="sglang", mode="agg", system="b200_sxm", isl="1024", osl="1024")
    assert "workflow_run_id=" in r["silicon_data_source"] or r["silicon_data_source"].startswith(
        "source_file=20")
    cfg = ss.resolve(load_catalog(), r)
    assert (cfg.isl, cfg.osl, cfg.equal_lengths) == (922, 922, False)
    assert any(n.startswith("InferenceMAX client") for n in cfg.dep.notes)
    # Ten prompts per client, the first round all at once: TTFT is the rounds' mean.
    assert cfg.rounds == ss.INFERENCEMAX_ROUNDS == 10


def test_a_row_of_another_collection_is_read_at_its_stated_lengths() -> None:
    r = pick(backend="sglang", mode="agg", system="h100_sxm")
    assert r["silicon_data_source"].startswith("source_file=h100_sxm/")
    cfg = ss.resolve(load_catalog(), r)
    assert (cfg.isl, cfg.osl, cfg.equal_lengths) == (int(r["isl"]), int(r["osl"]), True)
    assert cfg.rounds == 0.0 and not ss.unwarmed(r)


def test_inferencemax_rows_before_its_warm_up_requests_are_reported_apart(
        shipped_result: ss.SiliconResult) -> None:
    """InferenceMAX's client warms the server up since 2026-01-21: rows measured earlier are
    flagged, and the table reports them and the rest separately."""
    base = pick(backend="sglang", mode="agg", system="b200_sxm", isl="1024", osl="1024")
    src = base["silicon_data_source"]

    def at(day: str) -> dict[str, str]:
        return {**base, "silicon_data_source": re.sub(r"measured=[0-9-]+", f"measured={day}",
                                                      src)}

    assert "measured=" in src
    assert ss.unwarmed(at("2025-11-10"))
    assert not ss.unwarmed(at("2026-01-21")) and not ss.unwarmed(at("2026-04-03"))
    p = shipped_result.payload()
    assert p["unwarmed"]["n"] > 100 and p["warmed"]["n"] > 100
    assert p["unwarmed"]["n"] + p["warmed"]["n"] == p["covered"]


def test_rows_whose_predicted_loop_is_saturated_are_reported_apart(
        shipped_result: ss.SiliconResult) -> None:
    """Where the model's rate is fixed (prefill at capacity, clients waiting for slots), its
    TTFT is clients / rate less the decode time: the table reports those rows apart, each
    with its sensitivity, so a reader sees how much of the TTFT error lives there."""
    p = shipped_result.payload()
    sat, free = p["saturated"], p["unsaturated"]
    assert sat["n"] > 100 and free["n"] > 1000 and sat["n"] + free["n"] == p["covered"]
    rows = [r for r in shipped_result.covered if r.ttft_sensitivity is not None]
    assert all(r.ttft_sensitivity >= 1.0 - 1e-9 for r in rows)  # clients / rate >= TTFT
    assert sum(1 for r in rows if r.ttft_sensitivity >= SATURATED_SENSITIVITY) == sat["n"]


def test_rows_whose_deployment_the_data_leaves_open_are_reported_apart(
        shipped_result: ss.SiliconResult) -> None:
    """A row predicted as the pool of the deployments its benchmark ran at its client count,
    or without the speculative decoding its configuration ran at an unnamed depth, is counted
    apart, so a reader sees how much of the error the data's own ambiguity carries."""
    p = shipped_result.payload()
    op, settled = p["open_deployment"], p["settled_deployment"]
    assert op["n"] > 100 and settled["n"] > 1000 and op["n"] + settled["n"] == p["covered"]
    pooled = [r for r in shipped_result.covered if "the geometric mean of their" in r.note]
    unsized = [r for r in shipped_result.covered if "speculative decoding mtp" in r.note
               and "not modelled" in r.note]
    assert pooled and unsized
    assert all(ss.open_deployment(r.note) for r in pooled + unsized)
    # A row read as recorded never is
    assert not any(ss.open_deployment(r.note) for r in shipped_result.recorded)
    assert not ss.open_deployment("")


# --------------------------------------------------------------------------- InferenceMAX layouts


def _layout(**kw: str) -> dict[str, str]:
    e = {"config": "dsr1-fp4-gb200-dynamo-trt", "commit": "abc", "valid_from": "2026-01-01",
         "valid_to": "2026-02-01", "system": "gb200", "backend": "trtllm",
         "model_paths": "deepseek-ai/DeepSeek-R1", "precision": "fp4", "isl": "1024",
         "osl": "1024", "concurrencies": "4 8 16", "prefill_workers": "2", "prefill_tp": "4",
         "prefill_ep": "4", "prefill_dp_attn": "yes", "decode_workers": "3",
         "decode_tp": "8", "decode_ep": "8", "decode_dp_attn": "no", "spec_decoding": "none",
         "recipe": "recipes/x.yaml"}
    e.update(kw)
    return e


def _open_row(**kw: str) -> dict[str, str]:
    r = {c: "" for c in ss.COLUMNS}
    r.update(id="r", backend="trtllm", model_path="deepseek-ai/DeepSeek-R1", system="gb200",
             precision="fp4", mode="disagg", isl="1024", osl="1024", prefill_tp_size="4",
             decode_tp_size="8", silicon_ttft_ms="100", silicon_tpot_ms="10",
             silicon_data_source="source_file=2026-03-25.csv; model=DeepSeek-R1; "
                                 "silicon_concurrency=8; measured=2026-01-15T00:00:00Z")
    r.update(kw)
    return r


def test_a_row_without_workers_takes_the_benchmark_configuration_of_its_day() -> None:
    got = ss.complete_from_layouts([_open_row()], [_layout()])[0]
    assert (got["prefill_num_workers"], got["prefill_tp_size"],
            got["prefill_attention_dp_size"], got["prefill_moe_ep_size"]) == ("2", "1", "4", "4")
    assert (got["decode_num_workers"], got["decode_tp_size"], got["decode_attention_dp_size"],
            got["decode_moe_tp_size"], got["decode_moe_ep_size"]) == ("3", "8", "1", "1", "8")
    assert "dsr1-fp4-gb200-dynamo-trt" in got["_layout"] and "2026-01-15" in got["_layout"]
    cfg = ss.resolve(load_catalog(), got)
    assert cfg.dep.prefill is not None and cfg.dep.decode is not None
    assert (cfg.dep.prefill.workers, cfg.dep.prefill.par.adp) == (2, 4)
    assert (cfg.dep.decode.workers, cfg.dep.decode.par.tp) == (3, 8)
    assert any("InferenceMAX" in n for n in cfg.dep.notes)


@pytest.mark.parametrize("row, entry", [
    ({"silicon_data_source": "source_file=2026-03-25.csv; silicon_concurrency=8; "
                             "measured=2026-02-15T00:00:00Z"}, {}),  # after the entry
    ({"silicon_data_source": "source_file=2026-03-25.csv; silicon_concurrency=32; "
                             "measured=2026-01-15T00:00:00Z"}, {}),  # clients not in the list
    ({"decode_tp_size": "16"}, {}),  # another decode TP
    ({"precision": "fp8"}, {}),
    ({"model_path": "openai/gpt-oss-120b"}, {}),
    ({}, {"prefill_tp": "1", "prefill_dp_attn": "yes"}),  # a placeholder entry
    ({"silicon_data_source": "db-dump; silicon_concurrency=8; "
                             "measured=2026-01-15T00:00:00Z"}, {}),  # not an InferenceMAX row
])
def test_a_row_the_configuration_does_not_name_keeps_its_columns(
        row: dict[str, str], entry: dict[str, str]) -> None:
    r = _open_row(**row)
    got = ss.complete_from_layouts([r], [_layout(**entry)])[0]
    assert got == r


def test_entries_that_disagree_make_the_row_each_of_their_deployments() -> None:
    """The configuration ran two deployments at the row's client count and the row does
    not say which: the row keeps its columns and carries both, and resolves to both."""
    r = _open_row()
    two = [_layout(), _layout(decode_workers="4", spec_decoding="mtp")]
    got = ss.complete_from_layouts([r], two)[0]
    assert {k: v for k, v in got.items() if k != "_candidates"} == r
    cands = json.loads(got["_candidates"])
    assert sorted(c["decode_num_workers"] for c in cands) == ["3", "4"]
    assert sum("mtp" in c["_layout"] for c in cands) == 1
    cfg = ss.resolve(load_catalog(), got)
    assert len(cfg.alternatives) == 2 and cfg.alternatives[0] == replace(cfg, alternatives=())
    got_workers = sorted(a.dep.decode.workers for a in cfg.alternatives if a.dep.decode)
    assert got_workers == [3, 4]
    # A row no entry names at its client count stays open
    assert ss.complete_from_layouts([r], [_layout(concurrencies="64")])[0] == r
    # The same deployment with and without MTP: the layout is known, the MTP is not
    same = [_layout(), _layout(spec_decoding="mtp")]
    got = ss.complete_from_layouts([r], same)[0]
    assert got["decode_num_workers"] == "3" and "mtp" in got["_layout"]
    assert "_candidates" not in got


def test_a_row_of_several_deployments_predicts_their_geometric_mean() -> None:
    """Each deployment predicted alone (under the row's engine); the row's TTFT, TPOT and
    rate are their geometric means, and the note names every one."""
    cat = load_catalog()
    two = [_layout(), _layout(decode_workers="1", decode_tp="8", decode_ep="8",
                              decode_dp_attn="yes")]
    cfg = ss.resolve(cat, ss.complete_from_layouts([_open_row()], two)[0])
    alone = [ss.predict(cat, a)[0] for a in cfg.alternatives]
    assert alone[0].tpot_s != pytest.approx(alone[1].tpot_s, rel=0.05)
    st, note = ss.predict(cat, cfg)
    assert st.ttft_s == pytest.approx(math.sqrt(alone[0].ttft_s * alone[1].ttft_s))
    assert st.tpot_s == pytest.approx(math.sqrt(alone[0].tpot_s * alone[1].tpot_s))
    assert st.requests_per_s == pytest.approx(
        math.sqrt(alone[0].requests_per_s * alone[1].requests_per_s))
    assert "geometric mean" in note and "(1)" in note and "(2)" in note
    # The engine the row's configuration carries is the one every deployment runs (the
    # calibration script swaps it on the row's configuration alone)
    slow = cfg.dep.engine.model_copy(update={"frontend_s": cfg.dep.engine.frontend_s + 1.0})
    st2, _ = ss.predict(cat, replace(cfg, dep=replace(cfg.dep, engine=slow)))
    assert st2.ttft_s > st.ttft_s + 0.9


def test_a_deployment_that_cannot_be_predicted_drops_out_of_a_row(
        monkeypatch: pytest.MonkeyPatch) -> None:
    cat = load_catalog()
    two = [_layout(), _layout(decode_workers="4", spec_decoding="mtp")]
    cfg = ss.resolve(cat, ss.complete_from_layouts([_open_row()], two)[0])
    one = ss.predict(cat, cfg.alternatives[0])
    real = ss._predict_one

    def fails_on_four(cat_: Any, c: ss.RowConfig) -> Any:
        if c.dep.decode is not None and c.dep.decode.workers == 4:
            raise ss.NotCoveredError("no room")
        return real(cat_, c)

    monkeypatch.setattr(ss, "_predict_one", fails_on_four)
    st, note = ss.predict(cat, cfg)
    assert (st.ttft_s, st.tpot_s, note) == (one[0].ttft_s, one[0].tpot_s, one[1])
    monkeypatch.setattr(ss, "_predict_one", lambda *_: (_ for _ in ()).throw(
        ss.NotCoveredError("no room")))
    with pytest.raises(ss.NotCoveredError, match="no room"):
        ss.predict(cat, cfg)


def test_a_run_before_its_configuration_was_merged_takes_the_first_version() -> None:
    """A pull request's runs precede the configuration entry that names them on main: a
    row measured up to PRE_MERGE_DAYS before the first entry for its benchmark reads that
    entry; later than that, or where an entry for the benchmark was in force, it does not."""
    early = _open_row(silicon_data_source="source_file=2026-03-25.csv; silicon_concurrency=8;"
                                          " measured=2025-12-20T00:00:00Z")
    got = ss.complete_from_layouts([early], [_layout()])[0]
    assert got["decode_num_workers"] == "3" and "on 2026-01-01" in got["_layout"]
    too_early = _open_row(silicon_data_source="source_file=2026-03-25.csv; "
                                              "silicon_concurrency=8; "
                                              "measured=2025-11-20T00:00:00Z")
    assert ss.complete_from_layouts([too_early], [_layout()])[0] == too_early
    # An entry for the benchmark in force on the day, at other client counts: the row's
    # configuration is that one, which does not name the row's clients
    older = _layout(valid_from="2025-12-01", valid_to="2026-01-01", concurrencies="64")
    assert ss.complete_from_layouts([early], [older, _layout()])[0] == early
    # A run the file labels aggregated is not read as a later configuration's
    # disaggregated deployment of as many GPUs
    agg = _open_row(mode="agg", tp_size="32", prefill_tp_size="", decode_tp_size="",
                    silicon_data_source=early["silicon_data_source"])
    assert ss.complete_from_layouts([agg], [_layout()])[0] == agg
    on_time = dict(agg, silicon_data_source=_open_row()["silicon_data_source"])
    assert ss.complete_from_layouts([on_time], [_layout()])[0]["mode"] == "disagg"


def test_recorded_rows_are_left_alone() -> None:
    r = _open_row(prefill_num_workers="1", decode_num_workers="1")
    assert ss.complete_from_layouts([r], [_layout()])[0] == r


def test_a_recorded_deployment_takes_its_recipe_s_limits() -> None:
    """A row that records the entry's very deployment takes what the file leaves out: the
    recipe's max batch and MTP; its own columns stay. Another deployment takes nothing."""
    e = _layout(recipe="recipes/trtllm/ctx2_gen3_tep8_batch8_eplb0_mtp3.yaml",
                spec_decoding="mtp")
    r = _open_row(prefill_num_workers="2", prefill_tp_size="1", prefill_attention_dp_size="4",
                  prefill_moe_tp_size="1", prefill_moe_ep_size="4", decode_num_workers="3",
                  decode_tp_size="8", decode_attention_dp_size="1", decode_moe_tp_size="1",
                  decode_moe_ep_size="8")
    got = ss.complete_from_layouts([r], [e])[0]
    assert {k: got[k] for k in r} == r
    assert (got["_decode_max_batch"], got["_mtp"]) == ("8", "3")
    assert "_layout" not in got and "ctx2_gen3" in got["_recipe"]
    cfg = ss.resolve(load_catalog(), got)
    assert cfg.dep.decode is not None and cfg.dep.decode.max_batch == 8
    assert cfg.dep.speculative is not None and cfg.dep.speculative[0] == 3
    assert any("its limits taken" in n for n in cfg.dep.notes)
    other = {**r, "decode_num_workers": "4"}
    assert ss.complete_from_layouts([other], [e])[0] == other


def test_a_run_the_file_labels_aggregated_takes_the_deployment_of_its_gpus() -> None:
    """AIConfigurator's dumps record GB200's early Dynamo runs as aggregated with all their
    GPUs as TP: 36 = one 4-GPU context worker + four TEP8 generation workers."""
    e = _layout(prefill_workers="1", decode_workers="4", decode_dp_attn="no",
                concurrencies="4 8 16", prefill_max_batch="4", decode_max_batch="128")
    row = _open_row(mode="agg", tp_size="36", attention_dp_size="1", prefill_tp_size="",
                    decode_tp_size="")
    got = ss.complete_from_layouts([row], [e])[0]
    assert got["mode"] == "disagg" and got["_file_mode"] == "agg"
    assert (got["prefill_num_workers"], got["decode_num_workers"]) == ("1", "4")
    assert (got["_prefill_max_batch"], got["_decode_max_batch"]) == ("4", "128")
    assert "as aggregated, with its 36 GPUs as TP" in got["_layout"]
    cfg = ss.resolve(load_catalog(), got)
    assert cfg.dep.prefill is not None and cfg.dep.decode is not None
    assert (cfg.dep.prefill.max_batch, cfg.dep.decode.max_batch) == (4, 128)
    assert cfg.dep.prefill.workers * cfg.dep.prefill.par.gpus + (
        cfg.dep.decode.workers * cfg.dep.decode.par.gpus) == 36
    # The table keeps the file's label as the row's partition
    res = ss.predict_all([got])[0]
    assert res.mode == "agg" and res.pred_ttft_ms is not None
    # Other GPU counts, days or client counts: the row stays as the file records it
    for other in (_open_row(mode="agg", tp_size="32", prefill_tp_size="", decode_tp_size=""),
                  _open_row(mode="agg", tp_size="8", attention_dp_size="4",
                            prefill_tp_size="", decode_tp_size=""),
                  {**row, "silicon_data_source": row["silicon_data_source"].replace(
                      "silicon_concurrency=8", "silicon_concurrency=32")}):
        assert ss.complete_from_layouts([other], [e])[0] == other


def test_a_disaggregated_row_with_its_gpus_in_both_tp_columns_takes_that_deployment() -> None:
    e = _layout(prefill_workers="5", decode_workers="1", decode_tp="32", decode_ep="32",
                decode_dp_attn="yes")
    r = _open_row(prefill_tp_size="52", decode_tp_size="52")
    got = ss.complete_from_layouts([r], [e])[0]
    assert (got["prefill_num_workers"], got["decode_attention_dp_size"]) == ("5", "32")
    assert got["_file_mode"] == "disagg" and "both roles' TP" in got["_layout"]
    # Unequal TP columns are per-role values: no match on the total
    odd = _open_row(prefill_tp_size="20", decode_tp_size="32")
    assert ss.complete_from_layouts([odd], [e])[0] == odd


def test_every_shipped_gb200_run_labelled_aggregated_reads_as_disaggregated() -> None:
    """InferenceMAX ran GB200 only through Dynamo's disaggregated launchers until its
    configuration listed aggregated GB200 runs; every such row must find its deployment."""
    rows = [r for r in shipped_rows() if r["system"] == "gb200" and r["mode"] == "agg"
            and "measured=2025" in r["silicon_data_source"]]
    assert len(rows) >= 50
    got = ss.complete_from_layouts(rows)
    assert all(g["mode"] == "disagg" and "launch_gb200-nv.sh" in g["_layout"] for g in got)


def test_the_shipped_layouts_agree_with_every_recorded_twin() -> None:
    """The same runs recorded with their deployment in AIConfigurator's database (twins):
    the layout read from InferenceMAX's configuration must be the recorded one."""
    rows = shipped_rows()
    for i, r in enumerate(rows):
        r["_line"] = str(i + 2)
    twins = [r for r in ss.complete_from_twins(rows) if r.get("_twin")]
    by_id = {r["id"]: r for r in rows}
    got = ss.complete_from_layouts([dict(by_id[t["id"]]) for t in twins])
    checked = moe_recorded_before_fix = recipe_attention = 0
    for g, t in zip(got, twins, strict=True):
        if not g.get("_layout"):
            continue
        checked += 1
        for col in ss.ROLE_COLUMNS:
            if "batch" in col:
                continue
            if col.endswith(("moe_tp_size", "moe_ep_size")) and (
                    "as the configuration corrected it" in g["_layout"]):
                # The database recorded these runs from the entry's uncorrected metadata
                # (ep 1: moe_tp = the GPUs); workers, TP and attention DP must still agree
                moe_recorded_before_fix += col.endswith("moe_ep_size")
                continue
            if col.endswith(("_tp_size", "attention_dp_size", "moe_ep_size")) and (
                    "as its recipe runs it" in g["_layout"]):
                # The database recorded the configuration's attention layout and EP; the
                # recipe ran others, and the twin, read with its recipe, takes them too
                recipe_attention += col.endswith(("attention_dp_size", "moe_ep_size"))
                twin = ss.complete_from_layouts([dict(t)])[0]
                assert (g.get(col) or "") == (twin.get(col) or ""), (t["id"], col)
                continue
            assert (g.get(col) or "") == (t.get(col) or ""), (t["id"], col)
    assert checked >= 100 and moe_recorded_before_fix >= 10 and recipe_attention >= 1


def test_the_shipped_layouts_file_names_its_source() -> None:
    table = ss.load_layouts()
    assert len(table) > 100
    for e in table:
        assert re.fullmatch(r"[0-9a-f]{12}", e["commit"]) and e["valid_from"]
        assert not e["valid_to"] or e["valid_from"] <= e["valid_to"]
        assert e["prefill_dp_attn"] in ("yes", "no") and int(e["decode_workers"]) >= 1
        assert (re.fullmatch(r"(\.github/)?configs/(deprecated/)?nvidia-[\w.+-]*master\.yaml",
                             e["file"]) or e["file"] == "runners/launch_gb200-nv.sh"), e["file"]
        assert not e["ep_from"] or re.fullmatch(r"[0-9a-f]{12}", e["ep_from"])
        for role in ("prefill", "decode"):
            assert not e[f"{role}_max_batch"] or int(e[f"{role}_max_batch"]) >= 1


def test_a_recipes_max_batch_binds_the_decode_ranks() -> None:
    """``gen4_tep8_batch8``: four decode workers of 8 requests each serve 32 of 48 clients;
    the other 16 wait for a slot, which the row's TTFT carries."""
    recipe = "recipes/trtllm/gb200-fp4/1k1k/mtp/ctx1_gen4_tep8_batch8_eplb0_mtp3.yaml"
    e = _layout(concurrencies="48", decode_workers="4", recipe=recipe)
    src = ("source_file=2026-03-25.csv; model=DeepSeek-R1; silicon_concurrency=48; "
           "measured=2026-01-15T00:00:00Z")
    got = ss.complete_from_layouts([_open_row(silicon_data_source=src)], [e])[0]
    assert got["_decode_max_batch"] == "8"
    cat = load_catalog()
    capped = ss.resolve(cat, got)
    assert capped.dep.decode is not None and capped.dep.decode.max_batch == 8
    free = ss.resolve(cat, {k: v for k, v in got.items() if k != "_decode_max_batch"})
    st_capped, _ = ss.predict(cat, capped)
    st_free, _ = ss.predict(cat, free)
    assert st_capped.slot_wait_s > 0 and st_free.slot_wait_s == 0
    assert st_capped.ttft_s > st_free.ttft_s
    # A recipe that names no batch (SGLang's) leaves the engine's default
    plain = ss.complete_from_layouts(
        [_open_row(silicon_data_source=src)],
        [_layout(concurrencies="48", recipe="recipes/b200-fp4/1k1k/stp/low-latency.yaml")])[0]
    assert "_decode_max_batch" not in plain


def test_a_client_fixed_at_512_against_a_capped_server_is_not_covered() -> None:
    """gptoss_fp4_h100_docker.sh ran 512 clients against vLLM at --max-num-seqs=$CONC from
    2025-11-21 to 2025-12-08: the row's 512 is not what the server ran at once."""
    r = pick(system="h100_sxm", backend="vllm", model_path="openai/gpt-oss-120b")
    src = ("source_file=2026-04-06.csv; model=GPT-OSS-120B; silicon_concurrency=512; "
           "measured=2025-12-05T00:00:00.000Z; wip=False")
    cat = load_catalog()
    with pytest.raises(ss.NotCoveredError, match="--max-num-seqs=\\$CONC"):
        ss.resolve(cat, {**r, "silicon_data_source": src})
    for other in (src.replace("2025-12-05", "2025-12-09"),  # after the fix
                  src.replace("concurrency=512", "concurrency=64"),  # the client at CONC
                  src.replace("source_file=2026-04-06.csv", "db-dump")):  # not InferenceMAX
        assert ss.resolve(cat, {**r, "silicon_data_source": other}).clients > 0


@pytest.mark.parametrize("cols, want", [
    # InferenceMAX's `{tp: 8, ep: 8}` recorded as tp 64, moe_tp 8, moe_ep 8
    ({"tp_size": "64", "attention_dp_size": "1", "moe_tp_size": "8", "moe_ep_size": "8"},
     (8, 1, 1, 8)),
    # `{tp: 8, ep: 8, dp-attn: true}` recorded as attention-DP 64
    ({"tp_size": "1", "attention_dp_size": "64", "moe_tp_size": "8", "moe_ep_size": "8"},
     (1, 8, 1, 8)),
])
def test_inferencemax_tp_times_ep_is_read_as_its_gpus(cols: dict[str, str],
                                                      want: tuple[int, ...]) -> None:
    r = pick(system="b200_sxm", backend="trtllm", mode="agg", model_path="deepseek-ai/DeepSeek-R1")
    src = ("source_file=2026-04-06.csv; model=DeepSeek-R1; silicon_concurrency=16; "
           "measured=2026-01-14T00:00:00.000Z; wip=False")
    cat = load_catalog()
    cfg = ss.resolve(cat, {**r, **cols, "silicon_data_source": src, "batch_size": "16"})
    assert cfg.dep.agg is not None
    par = cfg.dep.agg.par
    assert (par.tp, par.adp, par.moe_tp, par.moe_ep) == want and par.gpus == 8
    assert any("InferenceMAX's TP x EP" in n for n in cfg.dep.notes)
    # AIConfigurator's own sweeps record a real MoE TP x EP grid: left as recorded
    own = ss.resolve(cat, {**r, **cols, "batch_size": "16", "silicon_data_source":
                           "source_file=b200_sxm/trtllm/1.2.0/x.csv; silicon_concurrency=16"})
    assert own.dep.agg is not None and own.dep.agg.par.gpus == 64


def test_the_batch_column_of_a_folded_attention_dp_counts_the_recorded_ranks() -> None:
    """A dump row of `{tp: 8, ep: 8, dp-attn: true}` at 256 clients records attention-DP 64
    and batch 4 (256 / 64): one deployment of 8 ranks with 32 clients each, not 8 replicas
    of 32 clients (the batch times the 8 ranks it folds into)."""
    r = pick(system="b200_sxm", backend="trtllm", mode="agg", model_path="deepseek-ai/DeepSeek-R1")
    src = ("db-dump/2026-04-27; config_id=191; silicon_concurrency=256; "
           "measured=2026-02-03T00:00:00.000Z; workflow_run_id=253")
    cols = {"tp_size": "1", "attention_dp_size": "64", "moe_tp_size": "8", "moe_ep_size": "8"}
    cfg = ss.resolve(load_catalog(), {**r, **cols, "silicon_data_source": src,
                                      "batch_size": "4"})
    assert cfg.dep.agg is not None and cfg.dep.agg.par.gpus == 8
    assert cfg.clients == 256
    assert not any("replicas" in n for n in cfg.dep.notes)


def test_inferencemax_vllm_tp_ep_recorded_as_attention_dp_is_read_as_its_gpus() -> None:
    """The dumps record vLLM's `{tp: 2, ep: 2}` (tensor-parallel-size 2 with
    --enable-expert-parallel: 2 GPUs) as attention-DP 2 with moe_ep 4 and half the batch;
    the dated result files record the same run as tp 2, moe_ep 2, the whole batch."""
    r = pick(system="b200_sxm", backend="vllm", mode="agg", model_path="MiniMaxAI/MiniMax-M2.5")
    cat = load_catalog()
    dump = {**r, "silicon_data_source": "db-dump/2026-04-27; config_id=690; silicon_concurrency="
            "256; measured=2026-04-03T00:00:00.000Z; workflow_run_id=761",
            "tp_size": "2", "attention_dp_size": "2", "moe_tp_size": "1", "moe_ep_size": "4",
            "batch_size": "128"}
    dated = {**dump, "silicon_data_source": "source_file=2026-03-25.csv; model=MiniMax-M2.5; "
             "silicon_concurrency=256; measured=2026-04-03T02:34:55Z; wip=True",
             "attention_dp_size": "1", "moe_ep_size": "2", "batch_size": "256"}
    for row in (dump, dated):
        cfg = ss.resolve(cat, row)
        assert cfg.dep.agg is not None
        par = cfg.dep.agg.par
        assert (par.tp, par.adp, par.moe_tp, par.moe_ep, par.gpus) == (2, 1, 1, 2, 2)
        assert cfg.clients == 256
    # Outside InferenceMAX's runs the columns are read as recorded: 4 GPUs
    own = {**dump, "silicon_data_source": "source_file=b200_sxm/vllm/0.19.0/x.csv; "
           "silicon_concurrency=256"}
    assert ss.resolve(cat, own).dep.agg.par.gpus == 4  # type: ignore[union-attr]


def test_a_script_s_engine_options_apply_to_the_runs_it_made() -> None:
    """InferenceMAX's Llama 70B TensorRT-LLM scripts (2025-09-18 to 2025-10-29) ran
    trtllm-serve with --max_num_tokens 16384, and at 1k/1k with TP below 8 with batch
    waiting (20 iterations, 0.9 of the budget)."""
    cat = load_catalog()
    base = cat.serving_engine("trtllm")
    r = pick(system="b200_sxm", backend="trtllm", model_path="meta-llama/Llama-3.1-70B",
             precision="fp8", isl="1024", osl="1024", tp_size="2")
    eng, note = ss.script_settings(r, base)
    assert (eng.batch_wait_iterations, eng.batch_wait_tokens_ratio,
            eng.max_num_batched_tokens) == (20, 0.9, 16384)
    assert "70b_fp8_b200_trt" in note and "batch_wait_iterations=20" in note
    assert base.batch_wait_iterations == 0  # the catalog's engine is left as it was
    cfg = ss.resolve(cat, r)
    assert cfg.dep.engine.batch_wait_iterations == 20
    assert any("InferenceMAX's script" in n for n in cfg.dep.notes)
    # TP 8 at 1k/1k: the budget only; another length: the budget only
    for other in ({**r, "tp_size": "8"}, {**r, "osl": "8192"}):
        eng, _ = ss.script_settings(other, base)
        assert (eng.batch_wait_iterations, eng.max_num_batched_tokens) == (0, 16384)
    # After the scripts were removed, or outside InferenceMAX: nothing applies
    late = r["silicon_data_source"].replace("2025-10-29", "2025-11-02")
    assert ss.script_settings({**r, "silicon_data_source": late}, base) == (base, "")
    assert ss.script_settings({**r, "silicon_data_source": "db-dump; measured=2025-10-29"},
                              base) == (base, "")
    # The scripts start one aggregated server: a disaggregated run of the same model and day
    # came from Dynamo's recipes
    assert ss.script_settings({**r, "mode": "disagg"}, base) == (base, "")


def test_sglang_scripts_poll_for_requests_by_their_client_count() -> None:
    """InferenceMAX's DeepSeek-R1 SGLang scripts on B200 (dsr1_fp8_b200.sh) set
    --scheduler-recv-interval 30 at 16 clients or more and 10 below, and cap the server at
    --max-running-requests 128 for TP 8 (32 for TP 4 at 8k/1k). A run with more clients than
    the cap did not come from the script and takes none of its options."""
    from clusterwright.catalog.stacks import ServingEngine
    cat = load_catalog()
    base = cat.serving_engine("sglang")
    r = pick(system="b200_sxm", backend="sglang", mode="agg", precision="fp8", tp_size="8",
             isl="1024", osl="1024", model_path="deepseek-ai/DeepSeek-R1")

    def at(clients: int, **cols: str) -> tuple[ServingEngine, str]:
        src = re.sub(r"silicon_concurrency=\d+", f"silicon_concurrency={clients}",
                     r["silicon_data_source"])
        return ss.script_settings({**r, **cols, "silicon_data_source": src}, base)

    eng, note = at(64)
    assert (eng.scheduler_recv_interval, eng.max_batch, eng.kv_memory_fraction,
            eng.max_num_batched_tokens_160gb) == (30, 128, 0.82, 32768)
    assert "dsr1_fp8_b200" in note and "scheduler_recv_interval=30" in note
    assert at(8)[0].scheduler_recv_interval == 10
    tp4, _ = at(16, tp_size="4", isl="8192")
    assert (tp4.scheduler_recv_interval, tp4.max_batch) == (10, 32)
    # 512 clients against a 128-request server: another launch
    assert at(512) == (base, "")
    assert base.scheduler_recv_interval == 1
    # The row's deployment polls; with attention DP the engine does not (SGLang asserts it)
    from clusterwright.plan.serving_deployment import Role, pool
    from clusterwright.plan.serving_engine import deployment, layout
    arch = cat.model("deepseek-v3")
    for adp, interval in ((1, 30), (8, 1)):
        dep = deployment(cat, arch, cat.gpu("b200"), eng, "fp8",
                         agg=Role(layout(arch, 8 // adp, adp=adp), 1))
        assert dep.agg is not None
        assert pool(cat, dep, dep.agg.par, 1, 1024, 1024).recv_interval == interval


def test_a_disaggregated_deepseek_run_takes_no_aggregated_script_options() -> None:
    # dsr1_fp8_h200_trt set attention-DP balancing for its aggregated servers; H200's Dynamo
    # runs of the same model on the same days did not run that script
    cat = load_catalog()
    rows = [r for r in ss.read_rows(data_dir() / "serving_silicon_aic012.csv")
            if r["system"] == "h200_sxm" and r["backend"] == "trtllm"
            and "DeepSeek" in r["model_path"]]
    agg = [r for r in rows if r["mode"] == "agg"]
    dis = [r for r in rows if r["mode"] == "disagg"]
    assert agg and dis
    base = cat.serving_engine("trtllm")
    assert any("dsr1_fp8_h200_trt" in ss.script_settings(r, base)[1] for r in agg)
    assert all(ss.script_settings(r, base) == (base, "") for r in dis)


def test_the_shipped_engine_settings_name_real_engine_options() -> None:
    from clusterwright.catalog.stacks import ServingEngine
    rows = ss.load_engine_settings()
    assert rows
    for e in rows:
        assert re.fullmatch(r"[0-9a-f]{12}", e["commit"])
        assert not e["valid_to"] or e["valid_from"] < e["valid_to"]
        for pair in e["settings"].split():
            name = pair.split("=")[0]
            assert (name in ServingEngine.model_fields or name in ss.SPEC_SETTINGS
                    or name in ss.BUDGET_SETTINGS or name in ss.LAYOUT_SETTINGS), pair


def test_a_vllm_entry_run_data_parallel_is_read_as_attention_dp() -> None:
    """minimaxm2.5-fp4-b300-vllm ran `{tp: 2, ep: 2, dp-attn: true}` at 256-2048 clients from
    2026-04-21 and `{tp: 2, ep: 2}` at 128: the same columns, two layouts. Data-parallel,
    each of the two ranks schedules its own batch (vLLM's 1,024 sequences each)."""
    r = pick(system="b200_sxm", backend="vllm", mode="agg", model_path="MiniMaxAI/MiniMax-M2.5")
    cat = load_catalog()

    def row(clients: int, day: str) -> dict[str, str]:
        return {**r, "system": "b300_sxm", "precision": "fp4", "isl": "1024", "osl": "1024",
                "tp_size": "2", "attention_dp_size": "2", "moe_tp_size": "1",
                "moe_ep_size": "4", "batch_size": str(clients // 2),
                "silicon_data_source": f"db-dump/2026-04-27; config_id=727; silicon_concurrency="
                f"{clients}; measured={day}T00:00:00.000Z; workflow_run_id=1"}
    for clients, day, want in ((2048, "2026-04-21", (1, 2, 2)), (128, "2026-04-21", (2, 1, 2)),
                               (2048, "2026-04-20", (2, 1, 2))):
        cfg = ss.resolve(cat, row(clients, day))
        assert cfg.dep.agg is not None and cfg.clients == clients
        par = cfg.dep.agg.par
        assert (par.tp, par.adp, par.moe_ep) == want, (clients, day)
        assert ("run data-parallel" in " ".join(cfg.dep.notes)) == (par.adp == 2)


def test_an_sglang_entry_gives_its_attention_dp_workers_gpus_as_ep() -> None:
    """GB200's SGLang entries write attention-DP workers as tp 1 with EP = their GPUs
    (InferenceX a27b37e5c: "EP = (NODES x 4 GPUs) / num-workers"); tp 1 with EP 1 is a
    placeholder and is not read."""
    e = _layout(backend="sglang", prefill_workers="3", prefill_tp="1", prefill_ep="8",
                prefill_dp_attn="yes", decode_workers="1", decode_tp="1", decode_ep="48",
                decode_dp_attn="yes")
    roles = ss._layout_roles(e)
    assert (roles["prefill_attention_dp_size"], roles["prefill_moe_ep_size"]) == ("8", "8")
    assert (roles["decode_attention_dp_size"], roles["decode_moe_tp_size"]) == ("48", "1")
    assert ss._gpus(e) == 72
    r = _open_row(backend="sglang", prefill_tp_size="1", decode_tp_size="1")
    assert ss.complete_from_layouts([r], [e])[0]["decode_attention_dp_size"] == "48"
    held = {**e, "prefill_ep": "1", "decode_ep": "1"}
    assert ss.complete_from_layouts([r], [held])[0] == r


def test_inferencemax_deepseek_trtllm_runs_balance_their_attention_dp_ranks() -> None:
    cat = load_catalog()
    base = cat.serving_engine("trtllm")
    r = pick(system="b200_sxm", backend="trtllm", mode="agg", model_path="deepseek-ai/DeepSeek-R1",
             precision="fp8")
    eng, note = ss.script_settings(r, base)
    assert eng.adp_balance_timeout_iterations == 60 and "dsr1_fp8_b200_trt" in note
    assert base.adp_balance_timeout_iterations == 0


def test_deepseek_trtllm_scripts_size_the_token_budget_from_the_run() -> None:
    """InferenceMAX's DeepSeek TensorRT-LLM scripts pass --max_num_tokens
    $(( ($CONC + $ISL + 64 + 63) / 64 * 64 )): one 1k prompt an iteration at few clients;
    from 2026-01-22 at least 8,192."""
    cat = load_catalog()
    base = cat.serving_engine("trtllm")
    r = pick(system="b200_sxm", backend="trtllm", mode="agg", precision="fp8",
             model_path="deepseek-ai/DeepSeek-R1", isl="1024")

    def budget(clients: int, day: str) -> int:
        src = re.sub(r"silicon_concurrency=\d+", f"silicon_concurrency={clients}",
                     r["silicon_data_source"])
        src = re.sub(r"measured=\d{4}-\d\d-\d\d", f"measured={day}", src)
        eng, note = ss.script_settings({**r, "silicon_data_source": src}, base)
        assert "dsr1_fp8_b200_trt" in note
        return eng.max_num_batched_tokens

    assert budget(4, "2025-12-01") == 1152
    assert budget(256, "2025-12-01") == 1344
    assert budget(4, "2026-02-01") == 8192
    assert base.max_num_batched_tokens == 8192


def test_the_mtp_depth_comes_from_the_recipe_when_every_matching_entry_ran_mtp() -> None:
    """TensorRT-LLM recipes name their MTP draft tokens (``..._mtp3.yaml``,
    ``..._mtp2_1600.yaml``); an entry that ran MTP without a number, or entries that ran
    with and without MTP for the same row, leave it unmodelled."""
    assert ss._RECIPE_MTP.search("ctx1_gen4_tep8_batch8_eplb0_mtp3.yaml").group(1) == "3"
    assert ss._RECIPE_MTP.search("ctx1_gen2_dep8_batch768_eplb0_mtp2_1600.yaml").group(1) == "2"
    assert ss._RECIPE_MTP.search("ctx1_gen1_dep16_batch64_eplb0_mtp1").group(1) == "1"
    assert ss._RECIPE_MTP.search("ctx1_gen1_dep32_batch8_eplb0_mtp.yaml") is None
    mtp = _layout(spec_decoding="mtp", recipe="r/ctx1_gen3_tep8_batch4_eplb0_mtp3.yaml")
    got = ss.complete_from_layouts([_open_row()], [mtp])[0]
    assert got["_mtp"] == "3" and "MTP with 3 draft token(s)" in got["_layout"]
    cfg = ss.resolve(load_catalog(), got)
    assert cfg.dep.speculative == (3, ss.MTP_ACCEPTANCE, None)
    unnamed = _layout(spec_decoding="mtp", recipe="r/ctx1_gen1_dep32_batch8_eplb0_mtp.yaml")
    got = ss.complete_from_layouts([_open_row()], [unnamed])[0]
    assert "_mtp" not in got and "not modelled" in got["_layout"]
    plain = _layout(decode_workers="4")  # another deployment: the row matches neither
    both = [mtp, {**mtp, "spec_decoding": "none", "recipe": "r/ctx1_gen3_tep8_batch4.yaml"}]
    got = ss.complete_from_layouts([_open_row()], both)[0]
    assert "_mtp" not in got and "mtp or none" in got["_layout"]
    assert ss.complete_from_layouts([_open_row()], [plain])[0].get("_mtp") is None


def test_the_aggregated_mtp_scripts_apply_to_their_image_only() -> None:
    """InferenceMAX's DeepSeek-R1 MTP scripts on B200 (dsr1_*_b200_trt_mtp.sh) ran 3 draft
    tokens, 1 with attention DP; from February 2026 their runs are the ones on TensorRT-LLM
    1.2.0rc6.post3, an image no other DeepSeek script used."""
    r = _open_row(system="b200_sxm", mode="agg", backend_version="1.2.0rc6.post3",
                  prefill_tp_size="", decode_tp_size="", tp_size="8", batch_size="8",
                  silicon_data_source="source_file=2026-03-25.csv; model=DeepSeek-R1; "
                                      "silicon_concurrency=8; measured=2026-02-12T00:00:00Z")
    assert ss.script_draft_tokens(r, adp=False)[0] == 3
    assert ss.script_draft_tokens(r, adp=True)[0] == 1
    cfg = ss.resolve(load_catalog(), r)
    assert cfg.dep.speculative == (3, ss.MTP_ACCEPTANCE, None)
    assert any("MTP with 3 draft token(s)" in n for n in cfg.dep.notes)
    # The engine options skip the MTP settings (they are not engine fields)
    assert "draft_tokens" not in ss.script_settings(r, load_catalog().serving_engine("trtllm"))[1]
    for other in ({"backend_version": "1.2.0rc6.post2"},
                  {"silicon_data_source": r["silicon_data_source"].replace("02-12", "01-20")},
                  {"precision": "fp8", "backend_version": "1.1.0rc2.post2"}):
        assert ss.script_draft_tokens({**r, **other}, adp=False) == (0, "")


def test_mtp_rows_predict_a_shorter_tpot_than_the_same_run_without() -> None:
    """The physics of the reading: the same B200 aggregated row resolves with MTP on its
    script's image and predicts a TPOT below the plain deployment's, by less than the
    drafts' yield (the drafts and the wider verification cost time)."""
    cat = load_catalog()
    r = _open_row(system="b200_sxm", mode="agg", backend_version="1.2.0rc6.post3",
                  prefill_tp_size="", decode_tp_size="", tp_size="8", batch_size="8",
                  silicon_data_source="source_file=2026-03-25.csv; model=DeepSeek-R1; "
                                      "silicon_concurrency=8; measured=2026-02-12T00:00:00Z")
    spec = ss.resolve(cat, r)
    plain = ss.resolve(cat, {**r, "backend_version": "1.2.0rc6.post2"})
    t_spec = ss.predict(cat, spec)[0].tpot_s
    t_plain = ss.predict(cat, plain)[0].tpot_s
    assert t_plain / spec.dep.spec_yield() < t_spec < t_plain


def _recipes_script() -> Any:
    from tests import scripts

    return scripts.load("import_srt_slurm_recipes")


def test_an_srt_slurm_variant_is_its_base_with_the_variant_s_values() -> None:
    """``file.yaml:zip_override_mtp_lowlat[1]``: the base recipe with the section laid on it,
    each list giving its second value; SGLang's draft tokens are its EAGLE steps at top-k 1
    and its max running requests divide over the attention-DP ranks."""
    imp = _recipes_script()
    text = """
base:
  backend:
    sglang_config:
      prefill: {max-running-requests: 512, chunked-prefill-size: 32768,
                data-parallel-size: 4, enable-dp-attention: true}
      decode: {max-running-requests: 512, data-parallel-size: 1, stream-interval: 50}
zip_override_mtp_maxtpt:
  backend:
    sglang_config:
      decode:
        data-parallel-size: 8
        enable-dp-attention: true
        max-running-requests: [1024, 256]
        speculative-num-steps: 2
        speculative-eagle-topk: 1
"""
    got = imp.settings(imp.config(text, "zip_override_mtp_maxtpt", 1))
    assert got == {"decode_draft_tokens": "2", "decode_max_running": "256", "decode_dp": "8",
                   "prefill_max_running": "512", "prefill_dp": "4",
                   "prefill_chunked": "32768", "prefill_max_tokens": "",
                   "decode_stream_interval": "50", "prefill_attention_dp": "yes",
                   "decode_attention_dp": "yes", "prefill_ep": "", "decode_ep": "",
                   "prefill_tp": "", "decode_tp": "", "concurrencies": ""}
    plain = imp.settings(imp.config(text, None, 0))
    assert plain["decode_draft_tokens"] == "" and plain["decode_dp"] == "1"
    assert plain["decode_attention_dp"] == "no"
    tree = text.replace("speculative-eagle-topk: 1", "speculative-eagle-topk: 4")
    assert imp.settings(imp.config(tree, "zip_override_mtp_maxtpt", 0))[
        "decode_draft_tokens"] == ""  # a draft tree is not k chained drafts


def test_a_trtllm_recipe_gives_its_workers_batches_budget_and_mtp() -> None:
    """srt-slurm's TensorRT-LLM recipes (``backend.trtllm_config``): ``max_batch_size`` per
    attention-DP rank (so no division), the context workers' ``max_num_tokens``, the
    generation workers' MTP drafts. ctx1_gen5_tep8_batch8 gives its generation workers 16,
    not the 8 its name says."""
    imp = _recipes_script()
    text = """
backend:
  type: trtllm
  trtllm_config:
    prefill: {max_batch_size: 2, max_num_tokens: 16896, enable_attention_dp: true}
    decode:
      max_batch_size: 16
      speculative_config: {decoding_type: MTP, max_draft_len: 3}
benchmark: {type: sa-bench, concurrencies: "10x15x25"}
"""
    got = imp.settings(imp.config(text, None, 0))
    assert got == {"decode_draft_tokens": "3", "decode_max_running": "16", "decode_dp": "1",
                   "prefill_max_running": "2", "prefill_dp": "1", "prefill_chunked": "",
                   "prefill_max_tokens": "16896", "decode_stream_interval": "",
                   "prefill_attention_dp": "yes", "decode_attention_dp": "no",
                   "prefill_ep": "", "decode_ep": "", "prefill_tp": "", "decode_tp": "",
                   "concurrencies": "10 15 25"}
    stated = text.replace("enable_attention_dp: true}",
                          "enable_attention_dp: true, moe_expert_parallel_size: 4}")
    assert imp.settings(imp.config(stated, None, 0))["prefill_ep"] == "4"
    # The validation takes the recipe's batch over its name's, and its context budget
    e = _layout(backend="trtllm", recipe="recipes/trtllm/b200-fp4/8k1k/stp/"
                "ctx1_gen5_tep8_batch8_eplb0_mtp0.yaml")
    assert ss._max_batch(e, "decode", "2026-02-01") == "16"
    assert ss._max_batch(e, "prefill", "2026-02-01") == "2"
    assert ss._max_tokens(e, "2026-02-01") == "16896"
    named = _layout(backend="trtllm", recipe="recipes/x/ctx1_gen4_tep8_batch32_eplb0_mtp0.yaml")
    assert ss._max_batch(named, "decode") == "32" and ss._max_tokens(named) == ""


def test_a_role_runs_the_attention_layout_its_recipe_sets() -> None:
    """InferenceMAX's H200 TensorRT-LLM entries said ``dp-attn: false`` for context workers
    whose srt-slurm recipe sets ``enable_attention_dp: true`` (and the other way round at
    8k/1k) until the configuration was corrected on 2026-03-23: a row measured before then
    runs the recipe's layout, whether the file leaves the deployment open or records the
    configuration's."""
    recipe = "recipes/trtllm/h200/1k1k/stp/c4_ctx1_gen9_tep8_batch256_eplb0_mtp0.yaml"
    assert ss.recipe_settings(recipe, "2026-02-14")["prefill_attention_dp"] == "yes"
    e = _layout(system="h200_sxm", precision="fp8", concurrencies="4 36", prefill_workers="1",
                prefill_tp="8", prefill_ep="8", prefill_dp_attn="no", decode_workers="9",
                decode_tp="8", decode_ep="8", decode_dp_attn="no", recipe=recipe,
                valid_from="2026-01-29", valid_to="2026-03-23")
    src = ("source_file=x; silicon_concurrency=36; measured=2026-02-14T00:00:00.000Z; "
           "workflow_run_id=288")
    row = _open_row(system="h200_sxm", precision="fp8", prefill_tp_size="8",
                    decode_tp_size="8", silicon_data_source=src)
    got = ss.complete_from_layouts([row], [e])[0]
    assert (got["prefill_tp_size"], got["prefill_attention_dp_size"]) == ("1", "8")
    assert (got["decode_tp_size"], got["decode_attention_dp_size"]) == ("8", "1")
    assert "prefill attention data parallel as its recipe runs it" in got["_layout"]
    # A row recording the configuration's layout (AIConfigurator's cfg303) takes the recipe's
    roles = dict(prefill_num_workers="1", prefill_tp_size="8", prefill_attention_dp_size="1",
                 prefill_moe_tp_size="1", prefill_moe_ep_size="8", decode_num_workers="9",
                 decode_tp_size="8", decode_attention_dp_size="1", decode_moe_tp_size="1",
                 decode_moe_ep_size="8")
    recorded = _open_row(system="h200_sxm", precision="fp8", silicon_data_source=src, **roles)
    got = ss.complete_from_layouts([recorded], [e])[0]
    assert (got["prefill_tp_size"], got["prefill_attention_dp_size"]) == ("1", "8")
    assert got["decode_num_workers"] == "9" and "as its recipe runs it" in got["_recipe"]
    # ... and one recording the recipe's layout (cfg590) matches the entry all the same
    as_run = {**recorded, "prefill_tp_size": "1", "prefill_attention_dp_size": "8"}
    got = ss.complete_from_layouts([as_run], [e])[0]
    assert got["_decode_max_batch"] == "256" and got["prefill_attention_dp_size"] == "8"
    # The configuration's own layout where the recipe is not in the table
    plain = {**e, "recipe": "recipes/none.yaml"}
    got = ss.complete_from_layouts([row], [plain])[0]
    assert (got["prefill_tp_size"], got["prefill_attention_dp_size"]) == ("8", "1")
    assert "as its recipe runs it" not in got["_layout"]
    # The other way round: the 8k/1k context worker the configuration ran attention-DP
    e8 = {**e, "isl": "8192", "concurrencies": "128", "prefill_dp_attn": "yes",
          "decode_workers": "1", "decode_dp_attn": "yes",
          "recipe": "recipes/trtllm/h200/8k1k/stp/c128_ctx1_gen1_dep8_batch256_eplb0_mtp0.yaml"}
    row8 = {**row, "isl": "8192", "silicon_data_source": src.replace("=36", "=128")}
    got = ss.complete_from_layouts([row8], [e8])[0]
    assert (got["prefill_tp_size"], got["prefill_attention_dp_size"]) == ("8", "1")
    assert (got["decode_tp_size"], got["decode_attention_dp_size"]) == ("1", "8")
    assert "prefill attention tensor parallel as its recipe runs it" in got["_layout"]


def test_a_recipe_s_layout_is_read_only_where_it_fits_the_entry(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """An EP that does not divide the worker's GPUs changes nothing, a stated EP that
    divides them does; a recipe whose worker has other GPUs than the entry's gives
    nothing at all."""
    said = {"prefill_tp": "8", "prefill_ep": "3", "decode_tp": "8", "decode_ep": "4",
            "decode_attention_dp": "no"}
    monkeypatch.setattr(ss, "recipe_settings", lambda recipe, day: said)
    e = _layout(prefill_tp="8", prefill_ep="8", decode_tp="8", decode_ep="8")
    assert ss._recipe_changes(e, "2026-01-15") == {"decode": (None, 4)}
    roles = ss._recipe_roles(e, "2026-01-15")
    assert (roles["decode_moe_tp_size"], roles["decode_moe_ep_size"]) == ("2", "4")
    said.update(prefill_attention_dp="no")
    assert ss._recipe_changes(e, "2026-01-15") == {"prefill": (False, None),
                                                   "decode": (None, 4)}
    # A recipe whose decode worker has other GPUs describes another deployment: nothing
    said.update(decode_tp="16")
    assert ss._recipe_changes(e, "2026-01-15") == {} and ss.entry_recipe(e, "x") == {}


def test_a_role_runs_the_expert_parallelism_its_recipe_sets() -> None:
    """InferenceMAX's B200 FP8 TensorRT-LLM entries said EP 8 for a context worker whose
    recipe sets ``moe_expert_parallel_size: 1`` (corrected to the recipe on 2026-03-23):
    the worker's experts run tensor-parallel over its 8 GPUs."""
    recipe = "recipes/trtllm/b200-fp8/8k1k/stp/ctx1_gen1_tp8_batch1_eplb0_mtp0_1.yaml"
    assert ss.recipe_settings(recipe, "2026-03-10")["prefill_ep"] == "1"
    e = _layout(system="b200_sxm", precision="fp8", isl="8192", concurrencies="8",
                prefill_workers="1", prefill_tp="8", prefill_ep="8", prefill_dp_attn="yes",
                decode_workers="1", decode_tp="8", decode_ep="1", decode_dp_attn="no",
                recipe=recipe, valid_from="2026-02-10", valid_to="2026-03-23")
    row = _open_row(system="b200_sxm", precision="fp8", isl="8192", prefill_tp_size="8",
                    decode_tp_size="8", silicon_data_source="source_file=2026-03-25.csv; "
                    "model=DeepSeek-R1; silicon_concurrency=8; measured=2026-03-10T00:00:00Z")
    got = ss.complete_from_layouts([row], [e])[0]
    assert (got["prefill_tp_size"], got["prefill_attention_dp_size"]) == ("8", "1")
    assert (got["prefill_moe_tp_size"], got["prefill_moe_ep_size"]) == ("8", "1")
    assert (got["decode_moe_tp_size"], got["decode_moe_ep_size"]) == ("8", "1")
    assert "prefill experts over EP 1 as its recipe runs it" in got["_layout"]
    assert ss._recipe_changes({**e, "prefill_ep": "1", "prefill_dp_attn": "no"},
                              "2026-03-10") == {}
    # Nor is anything read from a recipe whose worker is not the entry's: srt-slurm rewrote
    # its GLM-5 GB300 variants under the same names on 2026-07-30 (variant 0's decode worker
    # went from TP 24 with EP 24 to TP 8 with EP 1)
    glm = _layout(system="gb300", backend="sglang", precision="fp8", prefill_tp="4",
                  prefill_ep="1", decode_workers="1", decode_tp="24", decode_ep="24",
                  decode_dp_attn="yes",
                  recipe="recipes/gb300-fp8/glm5.yaml:zip_override_1k1k_hightpt[0]")
    assert ss.recipe_settings(glm["recipe"], "2026-07-30")["decode_ep"] == "1"
    assert ss._recipe_changes(glm, "2026-07-30") == {}
    assert ss.recipe_settings(glm["recipe"], "2026-07-10")["decode_ep"] == "24"
    # ... and the entry takes none of the rewritten recipe's settings: its batch caps, budget
    # and client counts are the earlier form's, or none
    assert ss.entry_recipe(glm, "2026-07-30") == {}
    assert ss._max_batch(glm, "decode", "2026-07-30") == ""
    assert ss._max_batch(glm, "decode", "2026-07-10") == str(8192 // 24)
    assert "8192" in ss._entry_clients(glm, "2026-07-10")
    assert "2576" not in ss._entry_clients(glm, "2026-07-30")


def test_an_entry_also_matches_the_clients_its_recipe_runs() -> None:
    """InferenceMAX's H200 TensorRT-LLM entry lists 4 clients for
    ``c4_ctx1_gen11_tep8_batch128_eplb0_mtp3``, whose srt-slurm benchmark section runs 44
    (4 x 11 generation workers): a row at 44 clients takes the entry's deployment and MTP."""
    e = _layout(system="h200_sxm", backend="trtllm", precision="fp8", concurrencies="4",
                prefill_workers="1", prefill_tp="8", prefill_ep="8", prefill_dp_attn="no",
                decode_workers="11", decode_tp="8", decode_ep="8", decode_dp_attn="no",
                spec_decoding="mtp",
                recipe="recipes/trtllm/h200/1k1k/mtp/c4_ctx1_gen11_tep8_batch128_eplb0_mtp3.yaml")
    assert "44" in ss._entry_clients(e, "2026-03-23")
    row = _open_row(system="h200_sxm", precision="fp8", prefill_tp_size="8", decode_tp_size="8",
                    silicon_data_source="source_file=2026-03-25.csv; model=DeepSeek-R1; "
                    "silicon_concurrency=44; measured=2026-01-15T00:00:00Z")
    got = ss.complete_from_layouts([row], [e])[0]
    assert (got["decode_num_workers"], got["_mtp"], got["_decode_max_batch"]) == ("11", "3",
                                                                                 "128")
    other = _open_row(**{**{k: row[k] for k in ("system", "precision", "prefill_tp_size",
                                               "decode_tp_size")},
                         "silicon_data_source": row["silicon_data_source"].replace("=44", "=45")})
    assert ss.complete_from_layouts([other], [e])[0] == other


def test_an_sglang_entry_takes_mtp_and_batches_from_its_recipe_on_the_day() -> None:
    """The shipped recipe table: an SGLang entry naming a recipe version gets its EAGLE
    steps as MTP draft tokens and its max running requests per attention-DP rank; a day
    before the recipe's first version takes that first version."""
    recipes = ss.load_recipes()
    name = "recipes/b200-fp4/1k1k.yaml:zip_override_mtp_maxtpt[0]"
    first = recipes[name][0]
    assert ss.recipe_settings(name, "2020-01-01") == first
    assert ss.recipe_settings(name, "2099-01-01") == recipes[name][-1]
    assert ss.recipe_settings("recipes/none.yaml", "2026-03-01") == {}
    e = _layout(backend="sglang", recipe=name, spec_decoding="mtp", valid_from="2026-03-01",
                valid_to="2026-04-01")
    assert ss._mtp_depth(e, "2026-03-10") == first["decode_draft_tokens"] == "2"
    assert ss._max_batch(e, "decode", "2026-03-10") == str(
        int(first["decode_max_running"]) // int(first["decode_dp"]))


def test_an_sglang_recipe_s_stream_interval_delays_the_first_token() -> None:
    """A disaggregated SGLang row whose srt-slurm recipe sets the decode workers'
    ``stream-interval`` k: its client gets the first token with the decode worker's first
    chunk, k - 1 tokens later than the model's first-token path, and TPOT as the client
    measures it, (end - TTFT) / (osl - 1), shares the same output over the remaining tokens;
    the closed loop's rate is unchanged. The shipped table holds such recipes (k = 10, 30,
    50)."""
    recipes = ss.load_recipes()
    ks = {int(v["decode_stream_interval"]) for vs in recipes.values() for v in vs
          if v["decode_stream_interval"]}
    assert {10, 30, 50} <= ks
    cat = load_catalog()
    rows = ss.read_rows(ss.data_dir() / ss.FILE)
    hit = [r for r in rows if r.get("_decode_stream_interval") and r["backend"] == "sglang"]
    assert len(hit) >= 100
    r = hit[0]
    k, osl = int(r["_decode_stream_interval"]), int(r["osl"])
    cfg = ss.resolve(cat, r)
    assert cfg.dep.decode is not None and cfg.dep.decode.stream_interval == k
    with_chunk, _ = ss.predict(cat, cfg)
    plain = replace(cfg, dep=replace(cfg.dep, decode=replace(cfg.dep.decode,
                                                              stream_interval=1)))
    without, _ = ss.predict(cat, plain)
    assert with_chunk.requests_per_s == pytest.approx(without.requests_per_s)
    assert with_chunk.ttft_s > without.ttft_s
    assert "first token with a chunk of" in with_chunk.detail
    # TTFT + (osl - 1) TPOT, the client's view of a request, is the same request
    out1 = cfg.osl - 1
    assert (with_chunk.ttft_s + out1 * with_chunk.tpot_s) == pytest.approx(
        without.ttft_s + out1 * without.tpot_s, rel=1e-9)
    assert osl > k



def _aic_sglang_row(version: str, extra: str = "") -> dict[str, str]:
    r = pick(backend="sglang", mode="agg", system="h100_sxm", backend_version="0.5.1.post1")
    r["backend_version"] = version
    r["silicon_data_source"] = (f"source_file=h100_sxm/sglang/{version}/Qwen_Qwen3-32B.csv; "
                                f"silicon_concurrency=16{extra}")
    return r


@pytest.mark.parametrize(("version", "extra", "mixed"), [
    ("0.5.1.post1", "", False),  # collected before the generator deployed SGLang
    ("0.5.6.post2", "", True),
    ("0.5.8.post1", "", True),
    ("0.5.6.post2", "; measured=2026-01-10", False),  # a dated run before the flag
    ("0.5.1.post1", "; measured=2026-02-02", True),  # a dated run after it
])
def test_aiconfigurator_s_own_sglang_servers_mix_prompt_chunks_from_its_generator_s_date(
        version: str, extra: str, mixed: bool) -> None:
    """AIConfigurator's generator runs aggregated SGLang with --enable-mixed-chunk since
    2026-01-19: such a row is read with prompt chunks mixed into the decode batch (no lockstep
    of its equal-length clients), and a note says so; older collections keep the default."""
    cfg = ss.resolve(load_catalog(), _aic_sglang_row(version, extra))
    assert cfg.dep.engine.mixed_chunk is mixed
    assert cfg.dep.engine.prompts_first is not mixed
    assert any("--enable-mixed-chunk" in n for n in cfg.dep.notes) is mixed


def test_mixed_chunks_change_the_prediction_of_an_aiconfigurator_sglang_row() -> None:
    """The same measured row predicted as lockstep and as mixed chunks: the steady states
    differ (a mixed batch spreads the prefills over the decode iterations)."""
    cat = load_catalog()
    old = ss.predict(cat, ss.resolve(cat, _aic_sglang_row("0.5.1.post1")))[0]
    new = ss.predict(cat, ss.resolve(cat, _aic_sglang_row("0.5.6.post2")))[0]
    assert "lockstep" in old.detail and "lockstep" not in new.detail
    assert abs(new.ttft_s - old.ttft_s) > 0.05 * old.ttft_s


@pytest.mark.parametrize("change", [
    {"mode": "disagg"},  # the flag is the generator's aggregated rule
    {"silicon_data_source": "source_file=2026-04-06.csv; model=Qwen3-32B; "
                            "silicon_concurrency=16; measured=2026-02-02T00:00:00.000Z"},
])
def test_only_aiconfigurator_s_own_aggregated_sglang_rows_take_the_generator_s_flag(
        change: dict[str, str]) -> None:
    r = {**_aic_sglang_row("0.5.6.post2"), **change}
    engine = load_catalog().serving_engine("sglang", "0.5.6.post2")
    assert ss.aic_generator_settings(r, engine) == (engine, "")


def test_the_mixed_chunk_note_states_the_rows_that_ran_it(
        shipped_result: ss.SiliconResult) -> None:
    """``serve estimate --engine sglang --mixed-chunk`` quotes how the mixed scheduler did on
    the rows read with it; the figures follow the model (recomputed here, held out too)."""
    from clusterwright.plan.serving_engine import MIXED_CHUNK_NOTE

    held = ss.predict_all([r for r in ss.read_rows(data_dir() / "serving_silicon_aic012.csv")
                           if r["backend"] == "sglang" and r["mode"] == "agg"])

    def figures(rows: list[ss.RowResult]) -> tuple[int, int, int]:
        mixed = [r for r in rows if "--enable-mixed-chunk" in r.note and r.skipped is None]
        assert mixed
        return (len(mixed), round(100 * ss._mape([r.ttft_error for r in mixed]) or 0),
                round(100 * ss._mape([r.tpot_error for r in mixed]) or 0))

    n, ttft, tpot = figures(held)
    assert f"{n} held-out H200 rows at TTFT {ttft} % / TPOT {tpot} %" in MIXED_CHUNK_NOTE
    n, ttft, tpot = figures(shipped_result.rows)
    assert f"{n} H100 rows at {ttft} % / {tpot} %" in MIXED_CHUNK_NOTE


@pytest.mark.parametrize(("precision", "fmt"), [("bfloat16", "bf16"), ("float16", "fp16")])
def test_the_16_bit_precisions_take_aiconfigurators_spelling(precision: str, fmt: str) -> None:
    r = {**pick(**AGG), "precision": precision, "gemm_quant_mode": "", "moe_quant_mode": ""}
    assert ss.resolve(load_catalog(), r).dep.dense.name == fmt


ROW_ALTERNATIVES = "2026_03_25_deepseek_r1_gb200_trtllm_fp4_disagg_1024x1024_c2253_tp4_0_ep4_0_385"
ROW_ONE = "2026_03_25_gpt_oss_120b_gb200_trtllm_fp4_disagg_1024x1024_c1_tp1_0_ep1_0_1279"
ROW_UNCOVERED = "dsr1_gb200_sglang_fp8_disagg_1024x1024_c128_cfg227"


@pytest.mark.parametrize("row_id", [ROW_ONE, ROW_ALTERNATIVES])
def test_one_row_explained_is_the_table_s_prediction(row_id: str) -> None:
    """``validate --table serving-silicon --row ID``: the row's prediction as the table makes
    it, and a breakdown whose parts add up to the steady state it comes from."""
    rows = ss.read_rows(data_dir() / ss.FILE)
    cat = load_catalog()
    r = next(x for x in rows if x["id"] == row_id)
    table = ss.predict_all([r], cat)[0]
    d = ss.explain_row(row_id, cat=cat)
    assert d["predicted"]["ttft_ms"] == pytest.approx(table.pred_ttft_ms, rel=1e-12)
    assert d["predicted"]["tpot_ms"] == pytest.approx(table.pred_tpot_ms, rel=1e-12)
    assert d["measured"]["ttft_ms"] == table.ttft_ms and d["line"] == table.line
    assert (d["deployments"] > 1) == (row_id == ROW_ALTERNATIVES)
    st = d["steady_state"]
    assert sum(st["ttft_parts_s"].values()) == pytest.approx(st["ttft_mean_s"], rel=1e-9)
    assert st["ttft_parts_s"]["handoff"] > 0.0  # disaggregated
    dec = st["iterations"]["decode"]
    assert dec["iteration_s"] / dec["tokens_per_iteration"] == pytest.approx(
        st["tpot_mean_s"], rel=1e-9)
    if d["deployments"] == 1:
        # No opening wave in the breakdown, but the same TPOT as the benchmark's
        assert st["tpot_mean_s"] * 1e3 == pytest.approx(d["predicted"]["tpot_ms"], rel=1e-9)


def test_an_uncovered_row_explained_says_why() -> None:
    d = ss.explain_row(ROW_UNCOVERED)
    assert "no room for one request's KV cache" in d["skipped"]
    assert "predicted" not in d


def test_the_row_flag_prints_the_breakdown_and_refuses_unknown_ids() -> None:
    r = cw("validate", "--table", "serving-silicon", "--row", ROW_ONE)
    assert r.exit_code == 0, r.output
    text = " ".join(r.stdout.split())
    assert "measured TTFT 37.5 ms" in text and "hand-off and KV transfer" in text
    assert "one prompt alone (922 tokens)" in text
    d = json.loads(cw("validate", "--table", "serving-silicon", "--row", ROW_ONE,
                      "--json").stdout)
    assert d["id"] == ROW_ONE and d["deployment"]["mode"] == "disagg"
    for args, message in ((("--table", "serving-silicon", "--row", "nope"),
                           "--row: no row has the id 'nope'"),
                          (("--row", ROW_ONE), "--row: only with --table serving-silicon"),
                          (("--table", "training", "--row", ROW_ONE), "--row: only with")):
        bad = cw("validate", *args)
        assert bad.exit_code == 2, bad.output
        assert message in bad.stderr.replace("\n", " ")
        assert "Traceback" not in bad.output


def test_inferencemax_amd_runners_and_checkpoints_resolve(tmp_path: Path) -> None:
    """A measured set of InferenceMAX's AMD runs in this format (runner names mi300x, mi325x,
    mi355x; AMD's and NVIDIA's 4-bit checkpoints of DeepSeek-R1-0528) is predicted, not
    dropped: every row gets a finite TTFT and TPOT."""
    rows = list(csv.DictReader(io.StringIO((data_dir() / ss.FILE).read_text())))
    base = next(r for r in rows if r["backend"] == "sglang" and r["system"] == "b200_sxm"
                and r["model_path"] == "deepseek-ai/DeepSeek-R1" and r["mode"] == "agg")
    out = []
    for i, (system, backend, path) in enumerate((
            ("mi355x", "sglang", "amd/DeepSeek-R1-0528-MXFP4"),
            ("mi325x", "sglang", "amd/DeepSeek-R1-0528-MXFP4-v2"),
            ("mi300x", "vllm", "amd/DeepSeek-R1-0528-MXFP4-Preview"),
            ("b200_sxm", "sglang", "nvidia/DeepSeek-R1-0528-FP4-V2"))):
        out.append({**base, "id": f"amd{i}", "system": system, "backend": backend,
                    "backend_version": "", "model_path": path, "gemm_quant_mode": "fp8",
                    "moe_quant_mode": "mxfp4" if system.startswith("mi") else "nvfp4"})
    f = tmp_path / "amd.csv"
    with f.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(out)
    res = ss.serving_silicon(f)
    assert [r.skipped for r in res.rows] == [None] * 4
    assert all(0 < (r.pred_ttft_ms or 0) < math.inf and 0 < (r.pred_tpot_ms or 0) < math.inf
               for r in res.rows)
    assert {r.system for r in res.rows} == {"mi355x", "mi325x", "mi300x", "b200_sxm"}
