"""Training requests planned below the CLI: frozen request in, frozen result out, errors with
field paths."""

from __future__ import annotations

import dataclasses
import math

import pytest

from clusterwright.catalog.registry import Catalog
from clusterwright.errors import InfeasibleError, InputError
from clusterwright.plan.train_request import (
    LayoutMisfitError,
    TrainEstimateRequest,
    TrainPlanRequest,
    estimate_training,
    plan_training,
)


def test_estimate_is_frozen_and_reports_the_contract_keys(catalog: Catalog) -> None:
    req = TrainEstimateRequest(catalog.model("llama-3.1-8b"), "h100-sxm", 8, tp=2,
                               sequence_parallel=True, zero=1)
    est = estimate_training(catalog, req)
    with pytest.raises(dataclasses.FrozenInstanceError):
        est.job = est.job  # type: ignore[misc]
    d = est.as_dict()
    assert (d["tp"], d["dp"], d["zero"], d["recompute"]) == (2, 4, 1, "none")
    assert d["fits"] and d["memory_per_gpu_gb"] <= 80
    assert sum(d["breakdown"].values()) == pytest.approx(d["step_time_s"], rel=1e-9)


@pytest.mark.parametrize(("change", "field"), [
    ({"tp": 3, "gpus": 12}, "tp"),              # 32 heads do not split three ways
    ({"gpus": 12, "tp": 8}, "gpus"),            # not a multiple of tp*pp*cp
    ({"pp": 8, "global_batch": 8}, "global_batch"),  # fewer micro-batches than stages
    ({"shard_group": 4}, "shard_group"),        # only with ZeRO-3
    ({"recompute": "attn"}, "recompute"),
    ({"routing": "bogus"}, "routing"),
])
def test_bad_layouts_name_the_field_not_a_flag(catalog: Catalog, change: dict[str, object],
                                               field: str) -> None:
    base = {"model": catalog.model("llama-3.1-8b"), "gpu": "h100-sxm", "gpus": 64}
    with pytest.raises(InputError) as err:
        estimate_training(catalog, TrainEstimateRequest(**{**base, **change}))  # type: ignore[arg-type]
    assert err.value.field == field
    assert "--" not in str(err.value)


def test_a_misfit_lists_the_single_changes_that_fit(catalog: Catalog) -> None:
    req = TrainEstimateRequest(catalog.model("llama-3.1-70b"), "h100-sxm", 64, tp=8,
                               global_batch=64)
    with pytest.raises(LayoutMisfitError) as err:
        estimate_training(catalog, req)
    exc = err.value
    assert isinstance(exc, InfeasibleError) and exc.reason == "memory"
    assert [(f, v) for f, v, _, _ in exc.fixes] == [("zero", "2"), ("zero", "3")]
    assert all(mem <= 80 for _, _, mem, _ in exc.fixes)
    # Each face words the fixes: the library as fields, the CLI as flags.
    assert "zero 2 (" in exc.worded(lambda f, v: f if v is None else f"{f} {v}")
    assert "--zero 2 (" in exc.worded(lambda f, v: f"--{f} {v}")


def test_plan_best_is_the_estimate_of_its_layout(catalog: Catalog) -> None:
    arch = catalog.model("llama-3.1-8b")
    p = plan_training(catalog, TrainPlanRequest(arch, "h100-sxm", gpus=16, tokens=1e10,
                                                fidelity="analytical")).as_dict()
    b = p["best"]
    again = estimate_training(catalog, TrainEstimateRequest(
        arch, "h100-sxm", 16, tp=b["tp"], pp=b["pp"], cp=b["cp"], ep=b["ep"],
        interleave=b["interleave"], zero=b["zero"], micro_batch=b["micro_batch"],
        global_batch=p["global_batch"], recompute=b["recompute"],
        recompute_share=b["recompute_share"] or None,
        sequence_parallel=b["sequence_parallel"])).as_dict()
    assert again["step_time_s"] == pytest.approx(b["step_time_s"], rel=1e-9)
    assert p["time_to_train_days"] > 0 and p["pareto"]


def test_plan_needs_a_size_or_a_deadline(catalog: Catalog) -> None:
    with pytest.raises(InputError) as err:
        plan_training(catalog, TrainPlanRequest(catalog.model("llama-3.1-8b"), "h100-sxm"))
    assert err.value.field == "gpus"


def test_plan_with_nothing_that_fits_is_infeasible_for_memory(catalog: Catalog) -> None:
    with pytest.raises(InfeasibleError) as err:
        plan_training(catalog, TrainPlanRequest(catalog.model("llama-3.1-405b"), "h100-sxm",
                                                gpus=8, fidelity="analytical"))
    assert (err.value.field, err.value.reason) == ("gpus", "memory")


@pytest.mark.parametrize("gpu", ["tpu-v5p", "tpu-v7"])
def test_deadline_on_a_tpu_pod_climbs_its_slice_shapes(catalog: Catalog, gpu: str) -> None:
    # A pod is not the smallest unit one job gets: the search tries the slices the pod forms
    # (4x4x4 = 64 chips and up), so a deadline that a part of a pod meets does not buy all of
    # it, and the chosen count is a slice whose shape the plan names.
    arch = catalog.model("llama-3.1-70b")
    # (TPU v7 took the whole 9,216-chip pod before its catalog entry listed slices.)
    srv = next(s for s in catalog.all("servers") if s.gpu == gpu and s.torus)
    assert srv.torus is not None
    sizes = {math.prod(sh) for sh in srv.torus.slices}
    p = plan_training(catalog, TrainPlanRequest(arch, gpu, tokens=1e12, deadline_days=30,
                                                fidelity="analytical")).as_dict()
    chips = p["best"]["gpus"]
    assert chips < srv.nvlink_domain_gpus and chips in sizes
    assert math.prod(int(d) for d in p["slice"].split("x")) == chips
    assert p["time_to_train_days"] <= 30


def test_choose_reports_the_front_for_the_chosen_type_only(catalog: Catalog) -> None:
    p = plan_training(catalog, TrainPlanRequest(
        catalog.model("llama-3.1-8b"), "choose", tokens=1e11, deadline_days=20,
        fidelity="analytical")).as_dict()
    assert p["pareto"] and p["top"] and p["by_gpu"]
    assert p["best"]["gpu"] in {r["gpu"] for r in p["by_gpu"]}
    assert all("_finish" not in k for k in p)
