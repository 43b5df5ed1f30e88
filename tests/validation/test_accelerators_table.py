"""The accelerators and multisite tables against their targets (issue 22)."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterwright.errors import InputError
from clusterwright.validation.accelerators_table import VARIANT_OF, accelerators_table, coverage
from clusterwright.validation.multisite_table import multisite_table
from clusterwright.validation.rows import mape
from tests.validation import csvrows


@pytest.fixture(scope="module")
def acc():  # type: ignore[no-untyped-def]
    return accelerators_table()


# Accelerators whose rows miss the 15 % target, held to where they are now, with why.
# (GB300 met it once its catalog entry carried NVIDIA's measured BF16 attention ratios and
# Azure's sustained FP8 GEMM ratio over GB200; nothing was fitted on its held-out rows.)
# (MI300X met it once its catalog entry carried its power-limited matrix rate, MI325X's
# measured maximum achievable matmul against its own; 17.4 % before.)
# (GH200 met it once its HPE Cray EX254n node carried the matrix rate its 660 W module cap
# leaves the GPU, fitted on Krai's Isambard-AI runs and held out on CSCS Alps; 33.8 % before.)
KNOWN_MISSES: dict[str, float] = {
    # Optimum Habana's CI baselines (the only Gaudi 3 training runs found with their
    # configuration; the stack is fitted on three of them): the runs land within 40 %, but
    # Falcon-40B LoRA at one 256-token sequence per card is 2.7x slower than predicted.
    "gaudi3": 0.20,
}


# No published training run with its configuration found (see docs/accelerators.md, Limits).
BLOCKED = {"trn2", "trn3"}


def test_every_validated_accelerator_has_three_rows_within_15_percent(acc) -> None:  # type: ignore[no-untyped-def]
    for gpu, n in coverage(acc).items():
        if n == 0:
            continue  # no published run yet: reported as unvalidated, not silently passed
        rows = [r for r in acc.rows if VARIANT_OF.get(r.tag("gpu"), r.tag("gpu")) == gpu]
        assert n >= 3, gpu
        bound = KNOWN_MISSES.get(gpu, 0.15)
        assert mape(rows) <= bound, (gpu, [(r.id, round(r.error, 3)) for r in rows])


def test_tpu_rows_are_predicted_on_the_torus_and_dev_mape_holds(acc) -> None:  # type: ignore[no-untyped-def]
    assert {r.tag("gpu") for r in acc.rows} >= {"tpu-v5e", "tpu-v5p", "tpu-v6e"}
    assert acc.mape <= acc.tolerance
    # the one named miss: v5e 128B offloads activations to host memory (not modelled)
    worst = max(acc.dev_rows, key=lambda r: abs(r.error))
    assert worst.id == "maxtext_v5e_128b_1x256"


def test_intellect1_utilization_within_five_points() -> None:
    tab = multisite_table()
    for r in tab.rows:
        if r.quantity == "compute_utilization":
            assert abs(r.predicted - r.measured) <= 5.0, (r.id, r.predicted, r.measured)
        else:
            assert r.predicted == pytest.approx(r.measured, rel=1e-9)


def test_blackwell_ultra_lifts_gb300_over_gb200_through_attention_and_fp8_gemms() -> None:
    """Equal dense peaks, HBM and NVLink: the same layout runs faster on GB300 than on GB200
    only through the catalog's measured factors, BF16 attention (cuDNN SDPA, forward 1.19,
    backward 1.08) and sustained FP8 GEMMs (cuBLASLt, 1.18). Llama 3 8B FP8 at 8,192 tokens
    gains less than the GEMM factor alone; a BF16 run gains only through attention."""
    from clusterwright.catalog.registry import load_catalog
    from clusterwright.validation.rows import read_csv
    from clusterwright.validation.training_table import _train_row

    cat = load_catalog(env={})
    gb300 = cat.gpu("gb300")
    assert (gb300.attention_fwd_speedup, gb300.attention_bwd_speedup) == (1.19, 1.08)
    assert gb300.fp8_gemm_speedup == 1.18
    assert cat.gpu("gb200").fp8_gemm_speedup == 1.0
    row = next(r for r in read_csv("accelerators.csv")
               if r["id"] == "nemo_25_11_gb300_llama-3-8b_fp8-cs_8")
    fp8 = _train_row(cat, row).value / _train_row(cat, {**row, "gpu": "gb200"}).value
    assert 1.05 < fp8 < 1.18
    bf16_row = {**row, "precision": "bf16", "fp8_recipe": ""}
    bf16 = (_train_row(cat, bf16_row).value
            / _train_row(cat, {**bf16_row, "gpu": "gb200"}).value)
    assert 1.0 < bf16 < fp8


def test_new_parts_have_rows_on_their_own_stacks(acc) -> None:  # type: ignore[no-untyped-def]
    stacks = {r.tag("gpu"): r.group for r in acc.rows}
    assert stacks["tpu-v6e"] == "maxtext-trillium-2025"
    assert stacks["mi355x"] == "megatron-rocm7-mi355x-2025"
    cov = coverage(acc)
    assert cov["tpu-v6e"] >= 3 and cov["mi355x"] >= 3


def test_parts_without_rows_are_the_blocked_ones(acc) -> None:  # type: ignore[no-untyped-def]
    """A part gaining rows (or losing them) updates BLOCKED and the docs' Limits knowingly."""
    assert {g for g, n in coverage(acc).items() if n == 0} == BLOCKED


def test_mi325x_rows_are_held_out_on_the_cdna3_rocm7_stack(acc) -> None:  # type: ignore[no-untyped-def]
    """MI325X's rows check a stack fitted on no training run (its FP8 GEMM rate is hipBLASLt's
    measured one): all held out, within 15 %, on the stack MI300X and MI325X default to; the
    band they give is reported as MI325X's, not MI300X's (which has no published run)."""
    from clusterwright.catalog.registry import load_catalog

    rows = [r for r in acc.rows if r.tag("gpu") == "mi325x"]
    assert len(rows) >= 4
    assert {(r.group, r.set) for r in rows} == {("megatron-rocm7-cdna3-2026", "held-out")}
    assert all(abs(r.error) <= 0.15 for r in rows), [(r.id, round(r.error, 3)) for r in rows]
    cat = load_catalog(env={})
    assert {cat.stack_for_gpu(g).id for g in ("mi300x", "mi325x")} == {"megatron-rocm7-cdna3-2026"}
    regimes = [r for r in cat.all("training_regimes") if r.stack == "megatron-rocm7-cdna3-2026"
               and r.family != "lora"]
    assert regimes and all(r.accelerators == ["mi325x"] and r.dev_rows == 0 for r in regimes)


def test_lora_rows_are_held_out_and_mi300x_amd_recipe_within_15_percent(acc) -> None:  # type: ignore[no-untyped-def]
    """MLPerf Llama 2 70B LoRA (frozen FP8 base, rank-16 attention adapters): no stack constant
    was fitted on a fine-tuning run, so every row is held out but GH200's, which fit their
    node's power-capped matrix rate (below); MI300X and GH200 on their family's default
    stack. AMD's one-node recipe on MI300X (AMD, Dell, Oracle; v5.0 and v5.1) lands within
    5 % at MI300X's power-limited matrix rate (12-16 % fast at MI325X's)."""
    lora = [r for r in acc.rows if "llama2_70b_lora" in r.id]
    assert len(lora) >= 16
    assert all(r.set == ("dev" if r.tag("gpu") == "gh200-96gb" else "held-out") for r in lora)
    assert all(r.tag("family") == "lora" for r in lora)
    one_node = [r for r in lora if r.tag("gpu") == "mi300x" and "_8_" in r.id]
    assert len(one_node) >= 6 and all(abs(r.error) <= 0.05 for r in one_node), [
        (r.id, round(r.error, 3)) for r in one_node]
    assert {r.group for r in one_node} == {"megatron-rocm7-cdna3-2026"}
    gh = [r for r in lora if r.tag("gpu") == "gh200-96gb"]
    assert len(gh) >= 5 and {r.group for r in gh} == {"megatron-core-h100-2025"}
    # The same recipe on MI325X and MI355X (no recompute) lands within 5 %.
    for gpu in ("mi325x", "mi355x"):
        rows = [r for r in lora if r.tag("gpu") == gpu]
        assert rows and all(abs(r.error) <= 0.05 for r in rows), gpu


def test_gaudi3_stack_is_fitted_on_three_runs_and_holds_on_the_other_runs(acc) -> None:  # type: ignore[no-untyped-def]
    """The gaudi-2024 stack's BF16 curve and FP8 ratio come from the LLaMA 7B LoRA pair alone,
    its ZeRO-3 fetch cost from ChatGLM3-6B's ZeRO-3 run alone; the other Optimum Habana runs
    are held out. The other sharded runs (Mixtral under DeepSpeed ZeRO-3 with leaf promotion,
    LLaMA 7B under torch FSDP) land within 20 % on that one constant (-71 and -66 % without
    it); every held-out run but Falcon-40B at one 256-token sequence a card stays within 40 %,
    16 % on average. Falcon is the named miss, slower than predicted."""
    rows = [r for r in acc.rows if r.tag("gpu") == "gaudi3"]
    assert {r.id for r in rows if r.set == "dev"} == {
        "ohf_gaudi3_llama7b_lora_bf16_8", "ohf_gaudi3_llama7b_lora_fp8_8",
        "ohf_gaudi3_chatglm3_6b_zero3_8"}
    held = [r for r in rows if r.set != "dev"]
    assert len(held) >= 15 and {r.group for r in rows} == {"gaudi-2024"}
    sharded = [r for r in held if " zero3 " in r.detail]
    assert len(sharded) == 2 and all(abs(r.error) <= 0.20 for r in sharded), [
        (r.id, round(r.error, 3)) for r in sharded]
    named = [r for r in held if "falcon40b" in r.id]
    assert len(named) == 2 and all(r.error < -0.5 for r in named), [
        (r.id, round(r.error, 3)) for r in named]
    rest = [r for r in held if r not in named]
    assert all(abs(r.error) <= 0.40 for r in rest), [(r.id, round(r.error, 3)) for r in rest]
    assert mape(rest) <= 0.16


def test_trn1_rows_fit_the_neuron_stack_on_three_nxd_runs_and_hold_on_the_rest(acc) -> None:  # type: ignore[no-untyped-def]
    """AWS's Trn1 table, NeuronCore layouts written on chips (TP/2): the neuronx-2025 curve is
    fitted on three NxD runs; the other layouts and the NeMo Megatron runs are held out."""
    rows = [r for r in acc.rows if r.tag("gpu") == "trn1"]
    assert {r.id for r in rows if r.set == "dev"} == {
        "neuron_trn1_nxd_llama2-7b_nc-tp8_256", "neuron_trn1_nxd_llama2-13b_nc-tp8-pp8_512",
        "neuron_trn1_nxd_llama3.1-8b_nc-tp32_512"}
    held = [r for r in rows if r.set != "dev"]
    assert len(held) >= 10 and any("nemo" in r.id for r in held)
    assert all(abs(r.error) <= 0.25 for r in held), [(r.id, round(r.error, 3)) for r in held]
    assert mape(held) <= 0.11


V6E = "trillium_llama3.1-8b_bf16_8"


def test_a_new_accelerator_is_not_covered_and_the_other_rows_predict(tmp_path: Path) -> None:
    _, rows = csvrows.shipped("accelerators.csv")
    t = accelerators_table(csvrows.write(tmp_path / "a.csv", "accelerators.csv", V6E,
                                         csvrows.like(rows[V6E], gpu="a10g")))
    assert [r.id for r in t.rows] == [V6E]
    (nc,) = t.not_covered
    assert nc.line == 3 and "unknown GPU id 'a10g'" in nc.reason


def test_a_malformed_accelerator_row_names_the_line_and_column(tmp_path: Path) -> None:
    _, rows = csvrows.shipped("accelerators.csv")
    with pytest.raises(InputError, match=r"a\.csv line 3, row .*: value '120 TFLOP/s' is not "
                       "a number"):
        accelerators_table(csvrows.write(tmp_path / "a.csv", "accelerators.csv", V6E,
                                         csvrows.like(rows[V6E], value="120 TFLOP/s")))


def test_gh200_power_capped_node_is_fitted_on_one_site_and_holds_at_another(acc) -> None:  # type: ignore[no-untyped-def]
    """The HPE Cray EX254n caps each GH200 module at 660 W (Grace, GPU and memory): its
    matrix_rate is fitted on Krai's Isambard-AI runs alone, and the runs on CSCS Alps (other
    people, models, precision and software) are held out. At the H100's rate every one of
    them was 22-62 % fast."""
    rows = [r for r in acc.rows if r.tag("gpu") == "gh200-96gb"]
    dev = [r for r in rows if r.set == "dev"]
    held = [r for r in rows if r.set != "dev"]
    assert {r.id.split("_")[-1] for r in dev} == {"krai"} and len(dev) == 5
    assert len(held) >= 6 and not any("krai" in r.id for r in held)
    assert all(abs(r.error) <= 0.03 for r in dev), [(r.id, round(r.error, 3)) for r in dev]
    assert mape(held) <= 0.10 and all(abs(r.error) <= 0.20 for r in held), [
        (r.id, round(r.error, 3)) for r in held]
    # Standard Llama 3.1 8B runs (no Apertus extras) land within 7 %.
    llama = [r for r in held if "llama31_8b" in r.id]
    assert len(llama) == 2 and all(abs(r.error) <= 0.07 for r in llama)
