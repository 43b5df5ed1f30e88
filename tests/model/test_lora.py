"""LoRA fine-tuning in the training model: adapters, FLOPs, compute, memory, communication."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from clusterwright.catalog.registry import Catalog
from clusterwright.design.train import job_for
from clusterwright.errors import InputError
from clusterwright.model.flops import training_flops_per_token
from clusterwright.model.layouts import Layouts
from clusterwright.model.lora import Lora, adapter_flops_per_token, adapter_params
from clusterwright.model.params import param_counts
from clusterwright.model.train_compute import layer_times
from clusterwright.model.train_job import Job
from clusterwright.model.training import estimate
from clusterwright.model.xp import ScalarOps

ATTN = Lora.of(16, ["attention"])


@pytest.fixture(scope="module")
def full(catalog: Catalog) -> Job:
    return job_for(catalog, catalog.model("llama-2-70b"), "h100-sxm", 8192, 64, "fp8")


@pytest.fixture(scope="module")
def lora(full: Job) -> Job:
    return dataclasses.replace(full, lora=ATTN)


def _one(**kw: float) -> Layouts:
    base = dict(tp=8, pp=1, dp=8, cp=1, ep=1, micro_batch=1, interleave=1, zero=1, recompute=0,
                sp=1)
    base.update(kw)
    return Layouts.of(**{k: np.array([v]) for k, v in base.items()})


def test_targets_expand_groups_and_reject_unknown_names() -> None:
    assert Lora.of(8, ["attention"]).targets == ("qkv", "proj")
    assert Lora.of(8, ["fc2", "qkv", "qkv"]).targets == ("qkv", "fc2")
    assert Lora.of(8, ["all"]).targets == ("qkv", "proj", "fc1", "fc2")
    with pytest.raises(InputError) as err:
        Lora.of(8, ["q_proj"])
    assert err.value.field == "lora_targets"
    for bad in (0, -4):
        with pytest.raises(InputError) as err:
            Lora.of(bad, ["attention"])
        assert err.value.field == "lora_rank"


def test_llama2_70b_attention_adapters_are_r_times_in_plus_out(catalog: Catalog) -> None:
    a = catalog.model("llama-2-70b")
    dense, expert = adapter_params(a, ATTN)
    # QKV: 8192 -> 8192 + 2 x 1024 (GQA, 8 KV heads); proj: 8192 -> 8192; 80 layers, r = 16.
    assert dense == 80 * 16 * ((8192 + 10240) + (8192 + 8192))
    assert expert == 0.0
    assert dense / param_counts(a).total < 1e-3  # 44.6M of 69B


def test_lora_gemm_flops_are_two_thirds_of_full_training(catalog: Catalog) -> None:
    a = catalog.model("llama-2-70b")
    # At a short sequence the attention core is negligible: GEMMs only.
    ratio = float(training_flops_per_token(a, 8, lora=ATTN) / training_flops_per_token(a, 8))
    assert ratio == pytest.approx(2 / 3, rel=2e-3)
    assert ratio > 2 / 3  # the adapters cost something
    assert adapter_flops_per_token(a, Lora.of(32, ["attention"])) == pytest.approx(
        2 * adapter_flops_per_token(a, ATTN))


def test_lora_layer_backward_is_about_one_forward_of_gemms(full: Job, lora: Job) -> None:
    f = layer_times(ScalarOps, full.compute, 8192.0, 8.0, 1.0, 1.0, 0.0, 8.0, False)
    lo = layer_times(ScalarOps, lora.compute, 8192.0, 8.0, 1.0, 1.0, 0.0, 8.0, False)
    gemm = sum(f.gemm_tp_f)
    # Full backward pays data and weight gradients (2x the GEMMs), LoRA only the data ones.
    assert f.bwd - lo.bwd > 0.8 * gemm
    assert lo.fwd > f.fwd  # the adapters run forward on top of the same base GEMMs
    # Only the adapters have weight gradients: thin, memory-bound GEMMs, a fraction of the base.
    assert lo.wgrad < 0.25 * f.wgrad


def test_lora_step_is_faster_and_its_dp_traffic_tiny(full: Job, lora: Job) -> None:
    lay = _one()
    ef, el = estimate(full, lay), estimate(lora, lay)
    assert 0.6 < float(el.step_time_s[0] / ef.step_time_s[0]) < 0.85
    # Data parallelism reduces the adapters' gradients only: under 1 % of full training's.
    assert float(el.comm_s["dp"][0]) < 0.01 * float(ef.comm_s["dp"][0])
    assert float(el.optimizer_s[0]) < 0.01 * float(ef.optimizer_s[0])
    assert float(el.model_flops[0] / ef.model_flops[0]) == pytest.approx(0.7, abs=0.05)


def test_lora_memory_drops_gradients_and_optimizer_state(full: Job, lora: Job) -> None:
    lay = _one(zero=0, dp=1)
    mf = estimate(full, lay).memory_parts
    ml = estimate(lora, lay).memory_parts
    base = param_counts(full.arch).total / 8  # per GPU over TP 8
    # Full: 16-bit weights and gradients, 12 bytes of Adam state per parameter.
    assert float(mf["optimizer"][0]) == pytest.approx(12 * base, rel=0.01)
    # LoRA: frozen weights kept in FP8 (1 byte), adapters' states only.
    assert float(ml["weights"][0]) == pytest.approx(base, rel=0.01)
    adapters = adapter_params(full.arch, ATTN)[0] / 8
    assert float(ml["optimizer"][0]) == pytest.approx(12 * adapters, rel=0.01)
    assert float(ml["gradients"][0]) == pytest.approx(2 * adapters, rel=0.01)
    # Frozen MLP layers keep no inputs for weight gradients: fewer activations.
    assert float(ml["activations"][0]) < float(mf["activations"][0])


def test_bf16_lora_keeps_16_bit_frozen_weights(catalog: Catalog) -> None:
    job = job_for(catalog, catalog.model("llama-2-70b"), "h100-sxm", 8192, 64, lora=ATTN)
    w = float(estimate(job, _one(zero=0, dp=1)).memory_parts["weights"][0])
    assert w == pytest.approx(2 * param_counts(job.arch).total / 8, rel=0.01)


def test_scalar_and_array_paths_agree_under_lora(lora: Job) -> None:
    one = estimate(lora, _one(recompute=2))
    many = estimate(lora, Layouts.of(**{k: np.repeat(getattr(_one(recompute=2), k), 2)
                                         for k in ("tp", "pp", "dp", "cp", "ep", "micro_batch",
                                                   "interleave", "zero", "recompute", "sp")}))
    assert float(one.step_time_s[0]) == pytest.approx(float(many.step_time_s[1]))
    assert float(one.memory_bytes[0]) == pytest.approx(float(many.memory_bytes[1]))


def test_mlp_adapters_on_moe_count_every_expert(catalog: Catalog) -> None:
    a = catalog.model("mixtral-8x7b")
    dense, expert = adapter_params(a, Lora.of(8, ["mlp"]))
    f = a.expert_ffn_hidden or a.ffn_hidden
    assert expert == a.layers * a.experts * 8 * ((a.hidden + 2 * f) + (f + a.hidden))
    assert dense == 0.0
    job = job_for(catalog, a, "h100-sxm", 4096, 64, lora=Lora.of(8, ["all"]))
    est = estimate(job, _one(ep=8))
    assert np.isfinite(est.step_time_s).all()
