"""The serving rows of issue 22's accelerators, predicted by the engine path (serve estimate
--engine): every row held out, errors held where they are, each miss named."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from clusterwright.errors import InputError
from clusterwright.validation.rows import mape
from clusterwright.validation.serving_accelerators_table import (
    coverage,
    serving_accelerators_table,
)
from tests.validation import csvrows


@pytest.fixture(scope="module")
def tab():  # type: ignore[no-untyped-def]
    return serving_accelerators_table()


def test_every_row_is_held_out_and_predicted(tab) -> None:  # type: ignore[no-untyped-def]
    assert tab.rows and not tab.dev_rows  # nothing fitted on these rows
    assert math.isnan(tab.mape)
    for r in tab.rows:
        assert r.predicted > 0 and math.isfinite(r.predicted), r.id
    cov = coverage(tab)
    assert cov["tpu-v6e"] >= 3 and cov["mi300x"] >= 3 and cov["gaudi3"] >= 3 and cov["trn1"] >= 3


# Where each part stands, held so a change that moves it is seen (not targets: the engine
# constants were fitted on H100/B200/GB200 and are not refitted here).
BOUNDS = {
    # vLLM on TPU v6e (Llama 3.3 70B, TP8): decode iterations predicted ~20 % slow, so output
    # throughput ~15 % low.
    ("tpu-v6e", "tpot_ms"): 0.25,
    ("tpu-v6e", "output_throughput"): 0.20,
    # MI300X vLLM batch latency: 70B batch 1-4 predicted 18-24 % slow; 405B predicted 9-37 %
    # fast, the miss growing with the batch.
    ("mi300x", "batch_latency_s"): 0.22,
    # Gaudi 3 (engine not named by the source; the vllm entry stands in): -23 to +23 %, 9.7 %
    # on average once GEMMs run at the gaudi-2024 stack's fitted FP8 efficiency (14.8 % at
    # the generic prior's, which no Gaudi 3 row had checked).
    ("gaudi3", "output_throughput"): 0.11,
    # Trn1 (Transformers NeuronX at batch 1, TP 32 NeuronCores = 16 chips; the vllm entry
    # stands in): TPOT 32-38 % short on every row (the GPU engine's decode path on Neuron's
    # collectives and HBM); TTFT 2.1-2.3x long for 128-token prompts (the GPU engine's
    # per-request overheads), 27-43 % short for 2,048-token ones.
    ("trn1", "tpot_ms"): 0.40,
    ("trn1", "ttft_ms"): 0.75,
}


def test_errors_stay_where_they_are(tab) -> None:  # type: ignore[no-untyped-def]
    for (gpu, metric), bound in BOUNDS.items():
        rows = [r for r in tab.rows if r.group == gpu and r.quantity == metric]
        assert rows, (gpu, metric)
        assert mape(rows) <= bound, (gpu, metric, [(r.id, round(r.error, 3)) for r in rows])


def test_tpu_ttft_is_the_named_miss(tab) -> None:  # type: ignore[no-untyped-def]
    # vLLM-TPU's mean TTFT (250-510 ms, 1,000-token prompts, 512-token budget) is predicted
    # about twice too long (3.3-3.5x before vLLM's refit with InferenceMAX's opening wave):
    # the steady state's prefill share and first-token iterations are the GPU engine's;
    # recorded, not tuned.
    rows = [r for r in tab.rows if r.group == "tpu-v6e" and r.quantity == "ttft_ms"]
    assert len(rows) == 2
    assert all(1.5 < r.predicted / r.measured < 2.5 for r in rows)


def test_batch_latency_is_ttft_plus_decode_steps(tab) -> None:  # type: ignore[no-untyped-def]
    r = next(x for x in tab.rows if x.quantity == "batch_latency_s")
    assert "TTFT +" in r.detail and "x TPOT" in r.detail


GAUDI = "intel_sw118_llama-31-8b_fp8_gaudi3_tp1_128_128_bs1536"


@pytest.mark.parametrize("changes, reason", [
    ({"gpu": "mi250x"}, "unknown GPU id 'mi250x'"),
    ({"engine": "tgi"}, "engine: 'tgi' is not one of"),
    ({"model": "gemma-2-27b"}, "unknown model id 'gemma-2-27b'"),
])
def test_a_serving_row_on_a_part_the_catalog_lacks_is_not_covered(
        tmp_path: Path, changes: dict[str, str], reason: str) -> None:
    _, rows = csvrows.shipped("serving_accelerators.csv")
    t = serving_accelerators_table(path=csvrows.write(
        tmp_path / "s.csv", "serving_accelerators.csv", GAUDI,
        csvrows.like(rows[GAUDI], **changes)))
    assert [r.id for r in t.rows] == [GAUDI]
    (nc,) = t.not_covered
    assert nc.line == 3 and nc.set == "held-out" and reason in nc.reason, nc.reason


def test_a_malformed_serving_accelerators_row_names_the_line_and_column(tmp_path: Path) -> None:
    _, rows = csvrows.shipped("serving_accelerators.csv")
    for changes, message in (({"concurrency": "64 clients"},
                              "concurrency '64 clients' is not an integer"),
                             ({"metric": "e2e_ms"}, "metric 'e2e_ms' is not one of")):
        with pytest.raises(InputError) as exc:
            serving_accelerators_table(path=csvrows.write(
                tmp_path / "s.csv", "serving_accelerators.csv", GAUDI,
                csvrows.like(rows[GAUDI], **changes)))
        assert f"s.csv line 3, row {GAUDI}_new: {message}" in str(exc.value)
