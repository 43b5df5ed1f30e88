"""The serving power model (model/serving_power.py): power rises with the batch, stays at or
below TDP, and a development row of the ML.ENERGY table is reproduced."""

from __future__ import annotations

import itertools

import pytest

from clusterwright.catalog.registry import load_catalog
from clusterwright.errors import InputError
from clusterwright.model.serving_power import (
    PowerParams,
    gpu_power_w,
    iteration_mix,
    serving_power,
)
from clusterwright.plan.energy import power_params
from clusterwright.plan.serving_deployment import Role, step_model
from clusterwright.plan.serving_engine import deployment, layout
from clusterwright.validation.rows import read_csv
from clusterwright.validation.serving_energy_table import predict_row


def _llama8b_h100():  # type: ignore[no-untyped-def]
    cat = load_catalog(env={})
    arch, gpu = cat.model("llama-3.1-8b"), cat.gpu("h100-sxm")
    par = layout(arch, tp=1)
    dep = deployment(cat, arch, gpu, cat.serving_engine("vllm", "0.11.1"), agg=Role(par))
    return step_model(cat, dep, par), power_params(cat, "h100-sxm")


def test_power_rises_with_the_batch_and_stays_at_or_below_tdp() -> None:
    step, p = _llama8b_h100()
    watts = [serving_power(step, p, b, 100, 400).power_w for b in (1, 8, 64, 256, 1024)]
    assert all(b >= a - 1e-9 for a, b in itertools.pairwise(watts)), watts
    assert watts[-1] > watts[0]
    assert all(p.idle_w < w <= p.tdp_w for w in watts)


def test_no_iteration_is_idle_and_saturated_tensor_cores_cap_at_tdp() -> None:
    p = PowerParams(idle_w=70.0, tdp_w=700.0, active_floor=0.64, tensor_weight=0.62)
    assert gpu_power_w(p, 0.0, 0.0, 0.0) == 70.0
    assert gpu_power_w(p, 0.01, 0.0, 0.01) == pytest.approx(70.0 + 630.0 * 0.64)
    assert gpu_power_w(p, 0.01, 0.01, 0.0) == 700.0


def test_iteration_mix_shares_sum_to_one_and_carry_every_prompt() -> None:
    for batch, i, o in ((8, 100, 400), (512, 100, 400), (1, 0, 10)):
        mix = iteration_mix(batch, i, o)
        assert sum(s for s, *_ in mix) == pytest.approx(1.0)
        # Prompt tokens per iteration = prompts joining per iteration x input length.
        assert sum(s * pre for s, pre, *_ in mix) == pytest.approx(batch / o * i)
    with pytest.raises(InputError):
        iteration_mix(0, 100, 100)


def test_bad_power_params_are_rejected() -> None:
    with pytest.raises(InputError):
        PowerParams(idle_w=800.0, tdp_w=700.0, active_floor=0.5, tensor_weight=0.5)
    with pytest.raises(InputError):
        PowerParams(idle_w=70.0, tdp_w=700.0, active_floor=1.5, tensor_weight=0.5)


def test_a_development_row_is_reproduced_within_15_percent() -> None:
    """ML.ENERGY v3, Llama 3.1 8B on one H100, max_num_seqs 64: 610.3 W per GPU."""
    cat = load_catalog(env={})
    (r,) = [x for x in read_csv("serving_energy.csv")
            if x["id"] == "Llama-3.1-8B-Instruct@lm-arena-chat@h100-sxmx1@seqs64"]
    assert r["set"] == "dev"
    got = predict_row(cat, r).point.power_w
    assert got == pytest.approx(float(r["power_w_per_gpu"]), rel=0.15)
