"""The serving rows of issue 22's accelerators, predicted by the engine path (serve estimate
--engine): held out but for the AWS Neuron engine's few dev rows, errors held where they
are, each miss named."""

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
from tests import scripts
from tests.validation import csvrows


@pytest.fixture(scope="module")
def tab():  # type: ignore[no-untyped-def]
    return serving_accelerators_table()


def test_only_the_neuron_engine_is_fitted_here_and_only_on_trn1(tab) -> None:  # type: ignore[no-untyped-def]
    """The NVIDIA-fitted engines' rows are all held out; the Neuron engine's dev rows are
    Transformers NeuronX on Trn1 (Llama 2 70B and 7B at batch 1), and everything else it
    predicts, Trn2 included, is held out."""
    assert tab.rows and tab.dev_rows
    for r in tab.dev_rows:
        assert r.group == "trn1" and dict(r.tags)["engine"].startswith("neuron@tnx"), r.id
    assert {r.group for r in tab.held_out_rows} >= {"tpu-v6e", "mi300x", "gaudi3", "trn1",
                                                     "trn2"}
    for r in tab.rows:
        assert r.predicted > 0 and math.isfinite(r.predicted), r.id
    cov = coverage(tab)
    assert all(cov[g] >= 3 for g in ("tpu-v6e", "mi300x", "gaudi3", "trn1", "trn2")), cov


# Where each part stands, held so a change that moves it is seen (not targets: the engine
# constants were fitted on H100/B200/GB200 and are not refitted here).
BOUNDS = {
    # vLLM on TPU v6e (Llama 3.3 70B, TP8): decode iterations predicted ~20 % slow, so output
    # throughput ~15 % low.
    ("tpu-v6e", "tpot_ms"): 0.25,
    ("tpu-v6e", "output_throughput"): 0.20,
    # MI300X vLLM batch latency: 70B batch 1-4 predicted 18-24 % slow; 405B predicted 9-37 %
    # fast, the miss growing with the batch.
    ("mi300x", "batch_latency_s"): 0.16,
    # Gaudi 3 (engine not named by the source; the vllm entry stands in): -23 to +23 %, 9.7 %
    # on average once GEMMs run at the gaudi-2024 stack's fitted FP8 efficiency (14.8 % at
    # the generic prior's, which no Gaudi 3 row had checked); 11.1 % since the stack's
    # collectives run at HCCL's measured bus bandwidth (0.97 of the ports, was 0.80); 13.8 %
    # since stop 53's vLLM refit (attention at FlashAttention-3's rate, GEMMs at 0.735 of the
    # curve), which moved MI300X the other way (17.9 -> 14.9 %).
    ("gaudi3", "output_throughput"): 0.16,
    # Trn1, Transformers NeuronX (TP 32 NeuronCores = 16 chips), dev and held out: TPOT 6 %;
    # TTFT 26 %, most of it Llama 2 13B's long prompts (74-83 % short), the static batches of
    # long prompts (43-52 % short) and the 7-8B batches of eight (22-45 % short).
    ("trn1", "tpot_ms"): 0.08,
    ("trn1", "ttft_ms"): 0.28,
    # Trn2, NxD Inference under vLLM (TP 64 logical cores = 16 chips), all held out: Llama 3.3
    # 70B 9 / 14 % short, Llama 3.1 405B 21 / 17 % long.
    ("trn2", "tpot_ms"): 0.17,
    ("trn2", "ttft_ms"): 0.17,
}


OPTIMUM = "neuron@optimum-"  # Hugging Face's optimum-neuron: another library's model code


def neuron_rows(tab, optimum: bool = False, **kw):  # type: ignore[no-untyped-def]
    return [r for r in tab.rows if dict(r.tags)["engine"].startswith("neuron@")
            and dict(r.tags)["engine"].startswith(OPTIMUM) == optimum
            and all(getattr(r, k) == v for k, v in kw.items())]


def test_the_neuron_engine_fits_its_dev_rows_and_carries_to_the_rest(tab) -> None:  # type: ignore[no-untyped-def]
    assert mape(neuron_rows(tab, set="dev")) <= 0.05
    assert mape(neuron_rows(tab, set="held-out")) <= 0.21
    assert not tab.not_covered  # Llama 2 13B's 40 heads run padded on TP 32


def test_optimum_neurons_moe_path_is_far_below_the_engine_and_its_dense_models_near(
        tab) -> None:  # type: ignore[no-untyped-def]
    """optimum-neuron 0.4 on Trn2 (held out, nothing fitted on it), read at its one 4,096-token
    bucket: its dense models decode within 30 % and their prompts come out 60-75 % long; its
    MoE models' prompts run 5-17x slower than the constants fitted on dense Transformers
    NeuronX runs say (held where they stand, so a change is seen)."""
    rows = neuron_rows(tab, optimum=True, set="held-out")
    assert len(rows) == 12
    dense = [r for r in rows if "llama31_8b" in r.id or "qwen3_32b" in r.id]
    assert len(dense) == 4
    assert all(0.0 < r.error <= 0.30 for r in dense if r.quantity == "tpot_ms")
    assert all(0.5 < r.error <= 0.8 for r in dense if r.quantity == "ttft_ms")
    moe_ttft = [r for r in rows if r not in dense and r.quantity == "ttft_ms"]
    assert len(moe_ttft) == 4 and all(-0.95 <= r.error <= -0.75 for r in moe_ttft)


def test_the_neuron_engines_validated_regimes_are_what_the_table_scores(tab) -> None:  # type: ignore[no-untyped-def]
    """``scripts/calibrate_serving_accelerators.py --regimes --write`` regenerates them."""
    from clusterwright.catalog.registry import load_catalog

    mod = scripts.load("calibrate_serving_accelerators")

    cat = load_catalog(env={})
    fresh = mod.regimes(cat)
    stored = {e.id: [(v.gpu, v.mode, v.rows, v.ttft_mape, v.tpot_mape, v.ttft_median_error,
                      v.tpot_median_error) for v in e.validated]
              for e in cat.all("serving_engines") if e.vendors}
    assert set(stored) == set(fresh) == {"neuron"}
    for eng, items in fresh.items():
        assert [(i["gpu"], i["mode"], i["rows"]) for i in items] == [x[:3] for x in stored[eng]]
        for i, x in zip(items, stored[eng], strict=True):
            assert i["ttft_mape"] == pytest.approx(x[3], abs=0.002)
            assert i["tpot_mape"] == pytest.approx(x[4], abs=0.002)
            assert i["ttft_median_error"] == pytest.approx(x[5], abs=0.002)
            assert i["tpot_median_error"] == pytest.approx(x[6], abs=0.002)


T2 = "neuron_nxdi221_llama33_70b_trn2_tp16_10000_1501_bs1_ttft"


def test_a_row_names_its_compiled_buckets(tmp_path: Path) -> None:
    """Trn2's Llama 3.3 70B compiled context buckets up to 12,288: its 10,000-token prompt
    runs as 12,288 tokens. Without the column the automatic buckets (powers of two up to
    11,501 tokens) pad it to 11,501, a shorter TTFT."""
    _, rows = csvrows.shipped("serving_accelerators.csv")
    r = rows[T2]
    given = serving_accelerators_table(path=csvrows.write(
        tmp_path / "a.csv", "serving_accelerators.csv", csvrows.like(r)))
    auto = serving_accelerators_table(path=csvrows.write(
        tmp_path / "b.csv", "serving_accelerators.csv", csvrows.like(r, buckets="")))
    assert auto.rows[0].predicted < given.rows[0].predicted
    for bad in ("prefill 2048/1024; decode 4096", "2048/4096", "prefill 2048; decode x"):
        with pytest.raises(InputError) as exc:
            serving_accelerators_table(path=csvrows.write(
                tmp_path / "c.csv", "serving_accelerators.csv", T2, csvrows.like(r, buckets=bad)))
        assert "line 3" in str(exc.value) and "buckets:" in str(exc.value)


def test_errors_stay_where_they_are(tab) -> None:  # type: ignore[no-untyped-def]
    for (gpu, metric), bound in BOUNDS.items():
        # optimum-neuron's rows are held by their own test above
        rows = [r for r in tab.rows if r.group == gpu and r.quantity == metric
                and not dict(r.tags)["engine"].startswith(OPTIMUM)]
        assert rows, (gpu, metric)
        assert mape(rows) <= bound, (gpu, metric, [(r.id, round(r.error, 3)) for r in rows])


def test_tpu_ttft_has_no_clusters_at_its_budget(tab) -> None:  # type: ignore[no-untyped-def]
    # vLLM-TPU's mean TTFT (250-510 ms, 1,000-token prompts, 512-token budget) was predicted
    # 2.8x too long while the steady state clustered its equal-length clients; a budget below
    # one prompt ends one prefill an iteration, so the clusters dissolve (the event simulator
    # shows it, tests/sim/test_serving_steady.py): within 25 % since 2026-11-30, not tuned.
    rows = [r for r in tab.rows if r.group == "tpu-v6e" and r.quantity == "ttft_ms"]
    assert len(rows) == 2
    assert all(0.75 < r.predicted / r.measured < 1.25 for r in rows)


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
