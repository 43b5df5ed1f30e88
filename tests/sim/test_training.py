"""The training step's collectives on a simulated fabric (``sim/training.py``)."""

from __future__ import annotations

import math

import pytest

from clusterwright.catalog.registry import Catalog, load_catalog
from clusterwright.design.train import job_for
from clusterwright.model.train_job import Job
from clusterwright.sim.engine import SimError
from clusterwright.sim.training import simulate_step_comm


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog()


@pytest.fixture(scope="module")
def mixtral(catalog: Catalog) -> Job:
    return job_for(catalog, catalog.model("mixtral-8x7b"), "h100-sxm", 4096, 512)


def _layout(tp: int, pp: int, dp: int, ep: int) -> dict[str, int]:
    return {"tp": tp, "pp": pp, "dp": dp, "cp": 1, "ep": ep, "micro_batch": 1}


def test_expert_groups_fold_over_the_tensor_parallel_ranks(mixtral: Job, catalog: Catalog
                                                           ) -> None:
    """EP 8 over tp 4 x dp 2: Megatron-Core's expert groups (expert TP 1) take 8 consecutive
    GPUs of a stage, across tensor- and data-parallel ranks, so the stage's 8 GPUs form one
    group; the simulator once built groups inside dp alone and found none (a crash)."""
    comm = simulate_step_comm(mixtral, _layout(4, 2, 2, 8), "dgx-h100", catalog)
    ep = comm.detail["ep"]
    assert ep["groups"] == 2  # one per pipeline stage
    assert math.isfinite(comm.ep_factor) and comm.ep_factor > 0


def test_expert_groups_are_consecutive_gpus(mixtral: Job, catalog: Catalog) -> None:
    """Consecutive placement keeps an 8-wide EP group on one 8-GPU server whatever tp is:
    tp 2 x dp 8 and tp 1 x dp 16 move the same bytes per GPU over NVLink alone, so their
    simulated all-to-alls take the same time (groups strided over tp would cross servers)."""
    folded = simulate_step_comm(mixtral, _layout(2, 1, 8, 8), "dgx-h100", catalog)
    flat = simulate_step_comm(mixtral, _layout(1, 1, 16, 8), "dgx-h100", catalog)
    assert folded.detail["ep"]["bytes"] == flat.detail["ep"]["bytes"]
    assert folded.detail["ep"]["sim_s"] == pytest.approx(flat.detail["ep"]["sim_s"], rel=1e-6)
    assert folded.detail["ep"]["closed_form_s"] == pytest.approx(
        flat.detail["ep"]["closed_form_s"], rel=1e-9)


def test_expert_groups_crossing_servers_take_longer(mixtral: Job, catalog: Catalog) -> None:
    """EP 16 spans two 8-GPU servers: part of every all-to-all leaves over the NICs."""
    inside = simulate_step_comm(mixtral, _layout(1, 1, 16, 8), "dgx-h100", catalog)
    across = simulate_step_comm(mixtral, _layout(1, 1, 16, 16), "dgx-h100", catalog)
    assert across.detail["ep"]["sim_s"] > inside.detail["ep"]["sim_s"]


def test_expert_parallel_size_must_divide_a_stage(mixtral: Job, catalog: Catalog) -> None:
    with pytest.raises(SimError, match="ep: 16 does not divide the 8 GPUs") as exc:
        simulate_step_comm(mixtral, _layout(4, 2, 2, 16), "dgx-h100", catalog)
    assert exc.value.field == "ep"
