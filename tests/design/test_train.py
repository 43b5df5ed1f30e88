"""Training building blocks: job_for, estimate_layout, the default batch, confidence."""

from __future__ import annotations

import re

import numpy as np
import pytest

from clusterwright.catalog.registry import Catalog
from clusterwright.design.train import (
    MICRO_BATCHES,
    confidence,
    default_global_batch,
    estimate_layout,
    job_for,
    mfu_record,
    regime_of,
)
from clusterwright.errors import InputError
from clusterwright.model.layouts import Layouts
from clusterwright.model.precision import Precision
from clusterwright.model.train_job import Job
from clusterwright.model.training import estimate, micro_batches

GB = 1e9


def _check_structure(job: Job, lay: Layouts, gpus: int) -> None:
    a = job.arch
    t, p, d, c, e = lay.tp, lay.pp, lay.dp, lay.cp, lay.ep
    assert len(lay) > 0
    assert np.all(t * p * d * c == gpus)
    assert np.all(a.heads % t == 0)
    assert np.all(a.n_kv_heads % t == 0)
    assert np.all(t <= job.net.domain_gpus)
    assert np.all(job.global_batch % d == 0)
    assert np.all(job.global_batch % (d * lay.micro_batch) == 0)
    assert np.all(a.experts % e == 0) if a.is_moe else np.all(e == 1)
    assert np.all((t * d * c) % e == 0)
    assert np.all(p <= a.layers)
    assert np.all(p * lay.interleave <= a.layers)
    assert np.all((lay.interleave == 1) | (p > 1))
    m = micro_batches(job, lay)
    assert np.all(m >= p)  # 1F1B needs at least p micro-batches in flight
    assert np.all((lay.sp == 0) | (t > 1))
    assert np.all((lay.zero < 3) | (p == 1))


@pytest.mark.parametrize("seq_len", [2048, 4096, 8192, 3000, 131072])
def test_default_global_batch_is_about_4m_tokens(seq_len: int) -> None:
    target = 4 * 1024 * 1024
    gb = default_global_batch(seq_len)
    assert gb >= 1
    assert abs(gb * seq_len - target) / target < 0.01
    if target % seq_len == 0:
        assert gb * seq_len == target


def test_default_global_batch_rounds_up_to_whole_dp_groups() -> None:
    gb = default_global_batch(4096, dp_multiple=96)
    assert gb % 96 == 0
    assert 1024 <= gb < 1024 + 96


def test_estimate_layout_searches_the_fastest_micro_batch_that_fits(llama70: Job) -> None:
    fixed = {"tp": 8, "pp": 4, "dp": 4, "recompute": 0, "sp": 1, "interleave": 1, "zero": 0}
    res = estimate_layout(llama70, fixed, ("micro_batch",))
    assert res.fits
    mb = res.layout["micro_batch"]
    assert isinstance(mb, int)
    per_dp = llama70.global_batch // 4
    assert per_dp % mb == 0
    lay = Layouts.of(**fixed, micro_batch=np.array(MICRO_BATCHES))
    est = estimate(llama70, lay)
    fits = est.memory_bytes <= llama70.gpu.memory_gb * GB
    assert fits.any() and not fits.all()  # the largest micro-batches do not fit
    assert res.step_time_s == pytest.approx(float(est.step_time_s[fits].min()), rel=1e-12)
    assert res.memory["total"] <= llama70.gpu.memory_gb * GB


def test_estimate_layout_reports_the_smallest_when_nothing_fits(catalog: Catalog) -> None:
    job = job_for(catalog, catalog.model("llama-3.1-405b"), "h100-sxm", 8192, 64)
    res = estimate_layout(job, {"tp": 8, "pp": 1, "dp": 1}, ("micro_batch", "recompute"))
    assert not res.fits
    assert res.layout["recompute"] == "full" and res.layout["micro_batch"] == 1


def test_job_for_rejects_int8_training_and_fp8_on_a100(catalog: Catalog) -> None:
    arch = catalog.model("llama-3-8b")
    for p in ("int8", "int4"):
        with pytest.raises(InputError, match=p):
            job_for(catalog, arch, "h100-sxm", 4096, 256, p)
    with pytest.raises(InputError, match="fp8"):
        job_for(catalog, arch, "a100-80gb-sxm", 4096, 256, "fp8")
    with pytest.raises(InputError, match="server") as err:
        job_for(catalog, arch, "h100-sxm", 4096, 256, server_id="dgx-a100")
    assert err.value.field == "server"
    # the valid combinations build
    assert job_for(catalog, arch, "h100-sxm", 4096, 256, "fp8").precision == "fp8"
    assert job_for(catalog, arch, "a100-80gb-sxm", 4096, 256, "bf16").gpu.id == "a100-80gb-sxm"


# --------------------------------------------------------------------------- framework options


@pytest.mark.parametrize(("opts", "field", "needle"), [
    ({"schedule": "gpipe"}, "schedule", "not one of"),
    ({"schedule": "dualpipe"}, "schedule", "not supported by stack"),
    ({"ep_overlap": "dualpipe"}, "ep_overlap", "not supported by stack"),
    ({"ep_dispatcher": "nccl"}, "ep_dispatcher", "not one of"),
    ({"cp_comm": "ring"}, "cp_comm", "not one of"),
    ({"fp8_recipe": "mx"}, "fp8_recipe", "not supported by stack"),
    ({"prefetch": -1}, "prefetch", ">= 0"),
    ({"expert_imbalance": 0.9}, "expert_imbalance", "[1, 64]"),
])
def test_options_the_framework_lacks_are_input_errors_naming_the_field(
    catalog: Catalog, opts: dict[str, object], field: str, needle: str
) -> None:
    arch = catalog.model("mixtral-8x7b")
    with pytest.raises(InputError, match=re.escape(needle)) as err:
        job_for(catalog, arch, "h100-sxm", 4096, 64, options=opts)
    assert err.value.field == field


def test_a_2022_stack_cannot_overlap_tp_and_the_default_options_follow_the_stack(
    catalog: Catalog,
) -> None:
    arch = catalog.model("llama-3-8b")
    with pytest.raises(InputError, match="tp_overlap") as err:
        job_for(catalog, arch, "a100-80gb-sxm", 4096, 64, options={"tp_overlap": True})
    assert err.value.field == "tp_overlap"
    old = job_for(catalog, arch, "a100-80gb-sxm", 4096, 64)
    assert not old.opts.tp_overlap and not old.opts.grad_overlap
    new = job_for(catalog, arch, "h100-sxm", 4096, 64)
    f = new.stack.features
    assert new.opts.tp_overlap == f.tp_comm_overlap and new.opts.schedule == f.schedules[0]
    with pytest.raises(InputError, match="stack") as err2:
        job_for(catalog, arch, "h100-sxm", 4096, 64, stack_id="megatron-a100-2022")
    assert err2.value.field == "stack"


# --------------------------------------------------------------------------- confidence


def test_regime_names_the_families_a_layout_uses(llama70: Job, mixtral: Job) -> None:
    base = {"tp": 8, "pp": 4, "cp": 1, "ep": 1, "zero": 1}
    assert regime_of(llama70, base, 256).families == ("ptd-p",)
    assert regime_of(llama70, {**base, "cp": 2}, 256).family == "ptd-p+cp"
    assert regime_of(llama70, {**base, "tp": 1, "pp": 1, "zero": 3}, 64).families == ("zero3",)
    # A MoE model is its own regime whatever its layout.
    assert regime_of(mixtral, {**base, "ep": 8}, 64).families == ("moe-ep",)
    assert regime_of(llama70, base, 64).scale == "<=64"
    assert regime_of(llama70, base, 16384).scale == ">1024"


def test_confidence_is_the_closest_validated_regimes_band(catalog: Catalog, llama70: Job) -> None:
    layout = {"tp": 8, "pp": 4, "cp": 1, "ep": 1, "zero": 1}
    c = confidence(catalog, llama70, layout, 256, 10.0)
    regimes = {r.id: r for r in catalog.all("training_regimes")}
    assert c["matched"] and all(m in regimes for m in c["matched"])
    band = max(regimes[m].band for m in c["matched"])
    assert c["band"] == band
    assert c["step_time_range_s"] == pytest.approx([10.0 / (1 + band), 10.0 * (1 + band)])
    # Far beyond the largest validated run: said, and not called validated.
    far = confidence(catalog, llama70, layout, 10**6, 10.0)
    assert not far["validated"] and any("beyond validated scale" in n for n in far["notes"])


def test_confidence_of_an_unvalidated_stack_says_so(catalog: Catalog) -> None:
    job = job_for(catalog, catalog.model("llama-3-8b"), "l40s", 4096, 64)
    c = confidence(catalog, job, {"tp": 1, "pp": 1}, 8, 1.0)
    assert c["validated"] is False and c["band"] is None
    assert "unvalidated" in c["notes"][0]


def test_confidence_says_when_a_part_runs_below_its_stacks_matrix_rate(catalog: Catalog) -> None:
    """MI300X runs its matrix work at its power-limited 0.852 of the CDNA 3 stack's rate: the
    estimate says so; MI325X, the level the stack stands for, carries no such note."""
    for gpu, said in (("mi300x", True), ("mi325x", False)):
        job = job_for(catalog, catalog.model("llama-3-8b"), gpu, 4096, 64, "fp8")
        c = confidence(catalog, job, {"tp": 1, "pp": 1}, 8, 1.0)
        hits = [n for n in c["notes"] if "matrix_rate" in n]
        assert bool(hits) is said, gpu
        if said:
            assert hits[0].startswith("mi300x runs its GEMMs and attention at 0.852")


def test_confidence_on_a_gpu_its_stack_never_ran_on_is_not_validated(catalog: Catalog) -> None:
    """The 144 GB GH200 shares the H100 stack, whose runs are on other parts (H100, H200 and
    the 96 GB GH200): the band is theirs, the estimate is not called validated and says on
    which GPUs the band was measured."""
    job = job_for(catalog, catalog.model("llama-3-8b"), "gh200", 4096, 64)
    c = confidence(catalog, job, {"tp": 1, "pp": 1}, 8, 1.0)
    assert c["validated"] is False and c["band"] is not None
    note = c["notes"][0]
    assert note.startswith("unvalidated on gh200: no published run on it; the band is stack ")
    named = note.rsplit(" on ", 1)[1].split(", ")
    assert named and "gh200" not in named
    assert set(named) <= {g.id for g in catalog.all("gpus")}
    h100 = confidence(catalog, job_for(catalog, catalog.model("llama-3-8b"), "h100-sxm", 4096, 64),
                      {"tp": 1, "pp": 1}, 8, 1.0)
    assert not any(n.startswith("unvalidated") for n in h100["notes"])


def test_mfu_record_is_the_highest_published_for_the_gpu_and_precision(
    catalog: Catalog,
) -> None:
    rec = mfu_record(catalog, "a100-80gb-sxm", Precision.bf16)
    assert rec is not None and 0.4 < rec.mfu < 0.7 and rec.row
    assert mfu_record(catalog, "a100-80gb-sxm", Precision.fp8) is None
    # fp4 counts as the fp8 class
    assert mfu_record(catalog, "h100-sxm", Precision.fp4) == mfu_record(
        catalog, "h100-sxm", Precision.fp8)


def test_confidence_of_an_overridden_gpu_is_not_validated(catalog: Catalog,
                                                         llama70: Job) -> None:
    """A user catalog's h100-sxm with twice the rates kept "12 published runs, ±6 %": the runs
    measured the shipped part. Said first, and not called validated."""
    from dataclasses import replace

    twice = llama70.gpu.model_copy(update={
        "peak_tflops": {k: 2 * v for k, v in llama70.gpu.peak_tflops.items()}})
    twice._overrides = "catalog/data/gpus.yaml:1"
    layout = {"tp": 8, "pp": 4, "cp": 1, "ep": 1, "zero": 1}
    shipped = confidence(catalog, llama70, layout, 256, 10.0)
    c = confidence(catalog, replace(llama70, gpu=twice), layout, 256, 10.0)
    assert not c["validated"] and not any("overridden" in n for n in shipped["notes"])
    assert c["notes"][0].startswith("unvalidated: h100-sxm is overridden by a user catalog")


def test_a_server_that_caps_its_gpu_modules_sets_their_matrix_rate(catalog: Catalog) -> None:
    """HPE's EX254n shares 660 W between each GH200's Grace, GPU and memory: a job on that node
    runs its matrix work at the node's rate, the same part in no named server at its own, and
    the estimate says so."""
    model = catalog.model("llama-3-8b")
    node = catalog.server("hpe-ex254n-gh200")
    assert node.matrix_rate is not None and 0.5 < node.matrix_rate < 1.0
    capped = job_for(catalog, model, "gh200-96gb", 4096, 64, server_id=node.id)
    free = job_for(catalog, model, "gh200-96gb", 4096, 64)
    assert capped.gpu.matrix_rate == node.matrix_rate and free.gpu.matrix_rate == 1.0
    assert capped.compute.peak == pytest.approx(free.compute.peak * node.matrix_rate)
    lay = {"tp": 1, "pp": 1}
    note = [n for n in confidence(catalog, capped, lay, 8, 1.0)["notes"] if "matrix_rate" in n]
    assert note and f"{node.matrix_rate:.3g} of stack" in note[0]
    assert not any("matrix_rate" in n for n in confidence(catalog, free, lay, 8, 1.0)["notes"])
