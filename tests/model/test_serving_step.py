"""The iteration-time model of a serving deployment (model/serving_step.py)."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from clusterwright.catalog.registry import Catalog, load_catalog
from clusterwright.catalog.schema import Dtype, ModelArch
from clusterwright.design.train import net_for, server_for
from clusterwright.errors import InputError
from clusterwright.model.serving_step import (
    Buckets,
    DeploymentStep,
    ServingParallel,
    kv_bytes_per_token,
    weight_format,
)


@pytest.fixture(scope="module")
def cat() -> Catalog:
    return load_catalog()


def step(cat: Catalog, model: str, gpu: str, par: ServingParallel, fmt: str = "bf16",
         engine: str = "vllm", kv: str = "bf16") -> DeploymentStep:
    g = cat.gpu(gpu)
    arch = cat.model(model)
    net = net_for(cat, g, cat.stack_for_gpu(g.id), server_for(cat, g))
    f = weight_format(fmt, g)
    return DeploymentStep(arch, g, cat.serving_engine(engine), net, par, f, f,
                          kv_bytes_per_token(arch, kv))


def test_fp4_weights_run_weight_only_on_a_gpu_without_fp4(cat: Catalog) -> None:
    assert weight_format("nvfp4", cat.gpu("b200")).compute == Dtype.fp4
    h100 = weight_format("nvfp4", cat.gpu("h100-sxm"))
    assert h100.compute == Dtype.bf16
    assert h100.bytes_per_weight == pytest.approx(0.5625)  # 4 bits + an FP8 scale per 16


def test_unknown_or_unsupported_formats_name_the_field(cat: Catalog) -> None:
    with pytest.raises(InputError, match="gemm_quant_mode: 'fp3'"):
        weight_format("fp3", cat.gpu("h100-sxm"), "gemm_quant_mode")


def test_fp8_weights_run_weight_only_on_a_gpu_without_fp8(cat: Catalog) -> None:
    # vLLM's Marlin W8A16 on Ampere
    a100 = weight_format("fp8", cat.gpu("a100-80gb-sxm"), "moe_quant_mode")
    assert (a100.compute, a100.bytes_per_weight) == (Dtype.bf16, 1.0)
    assert weight_format("fp8", cat.gpu("h100-sxm")).compute == Dtype.fp8


def test_layout_checks_name_the_field(cat: Catalog) -> None:
    ds = cat.model("deepseek-v3")
    with pytest.raises(InputError, match="prefill_tp: 48 does not divide"):
        ServingParallel(tp=48).check(ds, "prefill_")
    with pytest.raises(InputError, match="moe_ep"):
        ServingParallel(tp=8, adp=1, moe_tp=1, moe_ep=4).check(ds)  # 4 != 8 GPUs
    with pytest.raises(InputError, match="moe_ep: 512 exceeds the 256 experts"):
        ServingParallel(tp=1, adp=512, moe_tp=1, moe_ep=512).check(ds)
    with pytest.raises(InputError, match="dense model"):
        ServingParallel(tp=2, moe_ep=2).check(cat.model("llama-3.1-70b"))
    ServingParallel(tp=1, adp=8, moe_tp=1, moe_ep=8).check(ds)


def test_small_batch_decode_streams_the_weights(cat: Catalog) -> None:
    """A decode step at batch 1 is bound by reading the weights once: bytes / (HBM x the
    engine's efficiency), plus fixed costs that do not scale with the model: the graph, the
    layers and 160 small TP all-reduces (the engine's launch cost and some 15 us of NVLink
    latency each)."""
    s = step(cat, "llama-3.1-70b", "h100-sxm", ServingParallel(tp=4), "fp8")
    e = s.engine
    weights = 70.6e9 / 4  # FP8, one byte a weight, a quarter per GPU
    bw = cat.gpu("h100-sxm").memory_bandwidth_gbps * 1e9 * e.decode_bandwidth_efficiency
    t = s.step_s(0, 1, 1000)
    assert t > weights / bw
    ar = 160 * (e.collective_launch_us + 15.0) * 1e-6
    assert t < weights / bw * 1.25 + e.graph_step_overhead_s + 80 * e.layer_overhead_s + ar


def test_decode_time_grows_with_batch_and_context(cat: Catalog) -> None:
    s = step(cat, "llama-3.1-8b", "h100-sxm", ServingParallel())
    t1, t64, t256 = (s.step_s(0, b, b * 1500) for b in (1, 64, 256))
    assert t1 < t64 < t256
    assert s.step_s(0, 64, 64 * 8000) > s.step_s(0, 64, 64 * 1000)


def test_prefill_is_compute_bound_and_near_linear(cat: Catalog) -> None:
    s = step(cat, "llama-3.1-70b", "b200", ServingParallel(tp=2), "fp8")
    t4k, t8k = s.step_s(4096, 0, 0), s.step_s(8192, 0, 0)
    assert 1.7 < t8k / t4k < 2.4  # linear GEMMs plus a quadratic attention share


def test_tensor_parallelism_adds_all_reduces(cat: Catalog) -> None:
    one = step(cat, "llama-3.1-8b", "h100-sxm", ServingParallel(tp=1))
    two = step(cat, "llama-3.1-8b", "h100-sxm", ServingParallel(tp=2))
    assert one._comm(64, 32, one._k) == 0.0  # type: ignore[attr-defined]
    assert two._comm(64, 32, two._k) > 0.0  # type: ignore[attr-defined]


def test_all_reduce_times_are_shared_by_step_models_on_one_network(cat: Catalog) -> None:
    """Step models of one network and TP read one table of all-reduce times (a validation
    table builds thousands of them): a second model gets the first one's values, and
    another TP or engine (collective launch cost) gets its own."""
    a = step(cat, "llama-3.1-8b", "h100-sxm", ServingParallel(tp=2))
    t = a._allreduce(3.0e6)  # type: ignore[attr-defined]
    b = step(cat, "llama-3.1-70b", "h100-sxm", ServingParallel(tp=2))
    assert b._allreduce(3.0e6) == t  # type: ignore[attr-defined]
    assert b._ar_memo is a._ar_memo  # type: ignore[attr-defined]
    c = step(cat, "llama-3.1-8b", "h100-sxm", ServingParallel(tp=4))
    d = step(cat, "llama-3.1-8b", "h100-sxm", ServingParallel(tp=2), engine="trtllm")
    for other in (c, d):
        other._allreduce(3.0e6)  # type: ignore[attr-defined]
        assert other._ar_memo is not a._ar_memo  # type: ignore[attr-defined]
    assert c._allreduce(3.0e6) > t  # type: ignore[attr-defined]


def test_sliding_window_layers_cap_attention(cat: Catalog) -> None:
    """gpt-oss attends only its 128-token window on half its layers: long contexts cost
    about half of what full attention on every layer would."""
    arch = cat.model("gpt-oss-120b")
    full = arch.model_copy(update={"sliding_window": None, "sliding_window_layers": 0})
    par = ServingParallel(tp=2, moe_tp=2)

    def with_arch(a: ModelArch) -> DeploymentStep:
        s = step(cat, "gpt-oss-120b", "b200", par, "nvfp4", "trtllm")
        return DeploymentStep(a, s.gpu, s.engine, s.net, par, s.dense_format, s.moe_format,
                              s.kv_bytes_per_token)

    banded, dense = with_arch(arch), with_arch(full)
    assert banded.step_s(0, 64, 64 * 32_000) < 0.8 * dense.step_s(0, 64, 64 * 32_000)
    assert banded.step_s(0, 64, 64 * 100) == pytest.approx(dense.step_s(0, 64, 64 * 100))


def test_attention_dp_routes_every_ranks_tokens_through_the_experts(cat: Catalog) -> None:
    """With attention DP the MoE layers gather all ranks' tokens, so a rank's step with 8
    ranks costs more than a lone rank's but far less than 8 times as much."""
    lone = step(cat, "deepseek-v3", "b200", ServingParallel(tp=8, moe_tp=1, moe_ep=8), "fp8",
                "sglang", "fp8")
    dp = step(cat, "deepseek-v3", "b200", ServingParallel(tp=1, adp=8, moe_tp=1, moe_ep=8),
              "fp8", "sglang", "fp8")
    t_lone, t_dp = lone.step_s(0, 64, 64 * 1500), dp.step_s(0, 64, 64 * 1500)
    assert t_lone < t_dp * 8


def test_mla_latent_cache_is_not_split_by_tensor_parallelism(cat: Catalog) -> None:
    a = step(cat, "deepseek-v3", "b200", ServingParallel(tp=8, moe_tp=8), "fp8", "sglang")
    b = step(cat, "deepseek-v3", "b200", ServingParallel(tp=4, moe_tp=4), "fp8", "sglang")
    assert a.kv_bytes_read_per_token == b.kv_bytes_read_per_token


def test_a_part_with_bf16_but_no_fp16_peak_runs_attention_at_bf16(cat: Catalog) -> None:
    """TPUs list BF16 and INT8 but no FP16: attention runs at the BF16 peak (no KeyError)."""
    g = cat.gpu("tpu-v5e")
    assert Dtype.fp16 not in g.peak_tflops and Dtype.bf16 in g.peak_tflops
    s = step(cat, "llama-3.1-8b", "tpu-v5e", ServingParallel(tp=4))
    assert s.step_s(1024, 0, 0) > 0 and s.step_s(0, 8, 8 * 1024) > 0


def test_expert_parallelism_that_does_not_divide_the_experts_runs_redundant_slots(
        cat: Catalog) -> None:
    """EP 48 over DeepSeek's 256 experts: 6 slots a GPU (288 in all, 32 redundant), as the
    engines' EPLB places them; a GPU holds and streams 6 experts, not 256 / 48."""
    ds = cat.model("deepseek-v3")
    p48 = ServingParallel(tp=1, adp=48, moe_tp=1, moe_ep=48)
    p48.check(ds)
    assert p48.expert_slots(ds) == 6
    assert ServingParallel(tp=1, adp=32, moe_tp=1, moe_ep=32).expert_slots(ds) == 8
    assert ServingParallel(tp=1, adp=24, moe_tp=1, moe_ep=24).expert_slots(ds) == 11
    assert ServingParallel(tp=8).expert_slots(cat.model("llama-3.1-70b")) == 0


def test_speculative_drafts_cost_layer_passes_and_a_wider_verification(cat: Catalog) -> None:
    """MTP's extra time per iteration: nothing without drafts or sequences; more with more
    drafts; each draft a pass of one decoder layer and the LM head (a small share of a
    61-layer step at a small batch, where the verification's extra tokens ride on weights
    read anyway); at a large, compute-bound batch the verification of 1 + k tokens per
    sequence costs more relative to the plain step."""
    s = step(cat, "deepseek-r1", "b200", ServingParallel(tp=8, moe_tp=8), fmt="nvfp4",
             engine="trtllm")
    assert s.speculative_extra_s(0, 0, 3) == 0.0
    assert s.speculative_extra_s(8, 8 * 1500, 0) == 0.0
    one, three = (s.speculative_extra_s(8, 8 * 1500, k) for k in (1, 3))
    assert 0.0 < one < three
    plain_small = s.step_s(0, 8, 8 * 1500)
    assert three < plain_small  # three layer passes and a head: not another step
    plain_big = s.step_s(0, 512, 512 * 1500)
    big = s.speculative_extra_s(512, 512 * 1500, 3)
    assert big / plain_big > three / plain_small
    # The verification alone is step_s with 1 + k queries per sequence
    assert s.step_s(0, 8, 8 * 1500, queries=4.0) > plain_small


def test_a_verifications_extra_query_rows_cost_what_the_mla_kernel_adds(cat: Catalog) -> None:
    """With the engine's measured MLA decode kernel (compute R_c, KV read R_m), the 1 + k
    query rows of a verification cost the first row as before plus the roofline's increment,
    max(F (1 + k) / R_c, B / R_m) - max(F / R_c, B / R_m), not k more rows at the fitted
    attention rate: much less at a compute-bound long context, nothing more where the KV
    read hides them. A plain decode step is unchanged; so is a model without MLA."""
    par = ServingParallel(tp=1, adp=8, moe_tp=1, moe_ep=8)
    base = step(cat, "deepseek-r1", "gb200", par, fmt="nvfp4", engine="trtllm", kv="fp8")
    rc, rm = 2414e12, 6.24e12
    meas = replace(base, mla_kernel=(rc, rm))
    b, ctx = 32, 9000
    assert meas.step_s(0, b, b * ctx) == base.step_s(0, b, b * ctx)
    from clusterwright.model.serving_step import _attended
    _, f, nbytes = _attended(base._bands, 0, b, b * ctx, None)  # type: ignore[attr-defined]
    k = base._k  # type: ignore[attr-defined]
    e = base.engine
    fitted_rows = 3 * f / (k["peak16"] * e.attention_efficiency)
    kernel_rows = max(4 * f / rc, nbytes / rm) - max(f / rc, nbytes / rm)
    assert base.gpu_s(0, b, b * ctx, queries=4.0) - meas.gpu_s(0, b, b * ctx, queries=4.0) \
        == pytest.approx(fitted_rows - kernel_rows, rel=1e-9)
    assert kernel_rows < fitted_rows / 2  # 2,414 TFLOP/s against ~1,100
    assert meas.speculative_extra_s(b, b * ctx, 3) < base.speculative_extra_s(b, b * ctx, 3)
    # TP 8 (16 query heads a GPU): the kernel is bound by its KV read, which hides the rows
    tp8 = step(cat, "deepseek-r1", "gb200", ServingParallel(tp=8, moe_tp=8), fmt="nvfp4",
               engine="trtllm", kv="fp8")
    _, f8, n8 = _attended(tp8._bands, 0, b, b * ctx, None)  # type: ignore[attr-defined]
    assert 4 * f8 / rc < n8 / rm
    tp8m = replace(tp8, mla_kernel=(rc, rm))
    assert tp8m.gpu_s(0, b, b * ctx, queries=4.0) - tp8m.gpu_s(0, b, b * ctx) < \
        tp8.gpu_s(0, b, b * ctx, queries=4.0) - tp8.gpu_s(0, b, b * ctx)
    assert tp8m.gpu_s(0, b, b * ctx, queries=4.0) - tp8m.gpu_s(0, b, b * ctx) == \
        pytest.approx(tp8.gpu_s(0, b, b * ctx, queries=4.0) - tp8.gpu_s(0, b, b * ctx)
                      - 3 * f8 / (tp8._k["peak16"] * e.attention_efficiency))  # type: ignore
    llama = step(cat, "llama-3.1-70b", "b200", ServingParallel(tp=8), fmt="fp8",
                 engine="trtllm", kv="fp8")
    assert replace(llama, mla_kernel=(rc, rm)).gpu_s(0, 32, 32 * ctx, queries=4.0) == \
        llama.gpu_s(0, 32, 32 * ctx, queries=4.0)


# ---------------------------------------------------------------- static shapes (Neuron)


def test_automatic_buckets_are_powers_of_two_up_to_the_longest_sequence() -> None:
    b = Buckets.powers_of_two(1152)
    assert b.prefill == b.decode == (128, 256, 512, 1024, 1152)
    assert b.prompt(100) == 128 and b.prompt(1025) == 1152
    assert b.context(1536) == 1536  # beyond the largest bucket: as long as it is


def test_a_static_engine_computes_its_buckets_not_the_tokens(cat: Catalog) -> None:
    """A 10,000-token prompt on buckets 8,192 / 12,288 costs what 12,288 tokens cost; a decode
    step at 10,500 tokens of context attends the 12,800 bucket."""
    s = step(cat, "llama-3.1-70b", "trn2", ServingParallel(tp=16), engine="neuron")
    sb = replace(s, buckets=Buckets((8192, 12288), (8192, 12800)))
    assert sb.step_s(10000, 0, 0) == pytest.approx(s.step_s(12288, 0, 0))
    assert sb.step_s(0, 1, 10500) == pytest.approx(s.step_s(0, 1, 12800))
    # Four prompts of 1,000 tokens pad one by one (to 8,192 each), not as 4,000 tokens.
    assert sb.step_s(4000, 0, 0, 4 * 1000 * 1000 / 2) == pytest.approx(
        s.step_s(4 * 8192, 0, 0, 4 * 8192 * 8192 / 2))


def test_each_tp_rank_keeps_a_kv_head(cat: Catalog) -> None:
    """Llama 3.1 70B's 8 KV heads on TP 16 Trn2 chips = 64 ranks (4 a chip at LNC=2): each rank
    holds one head, so a chip reads 4 heads' KV, where a GPU of TP 16 reads one (8 heads over
    16 GPUs, replicated to one each)."""
    trn2 = step(cat, "llama-3.1-70b", "trn2", ServingParallel(tp=16), engine="neuron")
    h100 = step(cat, "llama-3.1-70b", "h100-sxm", ServingParallel(tp=8))
    per_token = kv_bytes_per_token(cat.model("llama-3.1-70b"), "bf16")
    assert trn2.kv_bytes_read_per_token == pytest.approx(per_token * 4 / 8)
    assert h100.kv_bytes_read_per_token == pytest.approx(per_token / 8)


def test_an_engine_that_pads_heads_runs_any_tp_at_the_padded_count(cat: Catalog) -> None:
    """Llama 2 13B's 40 heads on TP 16 Trn1 chips (32 NeuronCores): the Neuron engine pads
    them to 64 (and its multi-head KV with them); a GPU engine refuses the layout."""
    from clusterwright.model.serving_step import padded_heads, padding_params

    arch, trn1 = cat.model("llama-2-13b"), cat.gpu("trn1")
    neuron = cat.serving_engine("neuron")
    assert padded_heads(arch, trn1, neuron, 16) == 64
    assert padded_heads(arch, trn1, cat.serving_engine("vllm"), 16) == 40
    # q and o projections for 24 more heads of 128: 2 x 5,120 x 3,072 a layer, 40 layers
    assert padding_params(arch, 64) == pytest.approx(2 * 5120 * 24 * 128 * 40)
    with pytest.raises(InputError, match="tp: 16 does not divide the 40 attention heads"):
        ServingParallel(tp=16).check(arch)
    ServingParallel(tp=16).check(arch, pads_heads=True)
    s = step(cat, "llama-2-13b", "trn1", ServingParallel(tp=16), engine="neuron")
    per_token = kv_bytes_per_token(arch, "bf16")
    # 64 KV heads over 32 ranks: 2 a rank, 4 a chip, of the model's 40
    assert s.kv_bytes_read_per_token == pytest.approx(per_token * 4 / 40)


def test_a_static_engine_decodes_its_compiled_batch(cat: Catalog) -> None:
    """A token-generation graph compiled for 8 runs 8 slots every step: one live sequence
    costs what 8 at its context cost."""
    s = step(cat, "llama-3.1-8b", "trn2", ServingParallel(tp=1), engine="neuron")
    b = Buckets.powers_of_two(4096)
    one = replace(s, buckets=b, static_batch=8).step_s(0, 1, 1500)
    assert one == pytest.approx(replace(s, buckets=b).step_s(0, 8, 8 * 1500))
    assert one > replace(s, buckets=b).step_s(0, 1, 1500)


def test_linear_attention_layers_read_their_state_not_the_context(cat: Catalog) -> None:
    """Qwen3.5's 45 Gated DeltaNet layers keep no KV cache: at long contexts a decode step
    reads a quarter of what all-softmax layers would, and every decoding sequence reads and
    writes its fixed state (192 MB over 8 GPUs) at each step."""
    from clusterwright.model.memory import recurrent_state_bytes_per_sequence

    arch = cat.model("qwen3.5-397b-a17b")
    softmax = arch.model_copy(update={
        "linear_attention_layers": 0, "linear_key_heads": None, "linear_value_heads": None,
        "linear_key_head_dim": None, "linear_value_head_dim": None,
        "linear_conv_kernel": None})
    par = ServingParallel(tp=8, moe_tp=8)

    def with_arch(a: ModelArch) -> DeploymentStep:
        s = step(cat, "qwen3.5-397b-a17b", "b200", par, "fp8", "sglang", "fp8")
        return DeploymentStep(a, s.gpu, s.engine, s.net, par, s.dense_format, s.moe_format,
                              kv_bytes_per_token(a, "fp8"))

    hybrid, full = with_arch(arch), with_arch(softmax)
    long_h = hybrid.step_s(0, 64, 64 * 32_000) - hybrid.step_s(0, 64, 64)
    long_f = full.step_s(0, 64, 64 * 32_000) - full.step_s(0, 64, 64)
    assert long_h == pytest.approx(long_f / 4, rel=0.05)
    state = 2.0 * recurrent_state_bytes_per_sequence(arch) / 8 * 32
    hbm = hybrid.gpu.memory_bandwidth_gbps * 1e9 * (
        hybrid.engine.kv_bandwidth_efficiency or hybrid.engine.decode_bandwidth_efficiency)
    assert hybrid.step_s(0, 64, 64) - hybrid.step_s(0, 32, 32) > 0.99 * state / hbm


def test_a_synchronous_scheduler_adds_the_hosts_work_per_running_sequence(
        cat: Catalog) -> None:
    """Without async scheduling the GPU waits while the engine core does the running
    sequences' work: it adds to the iteration, linearly in the batch. With it the host works
    while the GPU runs the previous iteration: the iteration is the longer of the two."""
    par = ServingParallel(tp=1)
    base = step(cat, "llama-3.1-8b", "h100-sxm", par)
    e = base.engine.model_copy(update={"seq_overhead_s": 50e-6})
    sync = replace(base, engine=e.model_copy(update={"async_scheduling": False}))
    overlap = replace(base, engine=e.model_copy(update={"async_scheduling": True}))
    for d in (8, 64, 256):
        gpu = sync.gpu_s(0, d, d * 1000)
        assert gpu > 0 and gpu == pytest.approx(base.gpu_s(0, d, d * 1000))
        assert sync.step_s(0, d, d * 1000) == pytest.approx(gpu + 50e-6 * d)
        assert overlap.step_s(0, d, d * 1000) == pytest.approx(max(gpu, 50e-6 * d))
    # A host far slower than the GPU bounds even the overlapped engine
    slow = replace(overlap, engine=overlap.engine.model_copy(update={"seq_overhead_s": 1e-3}))
    assert slow.step_s(0, 256, 256_000) == pytest.approx(0.256)


def test_vllm_0_11_schedules_synchronously(cat: Catalog) -> None:
    """Before vllm#27614 vLLM scheduled synchronously by default: the catalog's vLLM entry
    runs 0.10 and 0.11 so (ML.ENERGY's 0.11.1 shows the host's cost), later versions (and
    an unspecified one) overlapped (0.12's measured runs show no such cost)."""
    for version, overlapped in (("0.10.2", False), ("0.11.1", False), ("0.12.0", True),
                                ("0.14.1", True), ("0.19.0", True), ("", True)):
        e = cat.serving_engine("vllm", version)
        assert e.id == "vllm"
        assert e.async_scheduling is overlapped, version
    assert cat.serving_engine("vllm", "0.11.1").seq_overhead_s > 0


def test_latent_moe_dispatches_latent_wide_tokens(cat: Catalog) -> None:
    """Nemotron 3 Super moves its tokens at the 1,024-wide latent: with attention DP over
    expert parallelism the dispatch and combine take less than at the 4,096-wide hidden
    (up to 4x less, the per-message latency not shrinking)."""
    arch = cat.model("nemotron-3-super-120b-a12b")
    par = ServingParallel(tp=1, adp=8, moe_ep=8)

    def comm(a: ModelArch) -> float:
        s = step(cat, "nemotron-3-super-120b-a12b", "b200", par, "fp8", "trtllm", "fp8")
        s = DeploymentStep(a, s.gpu, s.engine, s.net, par, s.dense_format, s.moe_format,
                           s.kv_bytes_per_token)
        return float(s._comm(4096, 48, s._k))  # type: ignore[attr-defined]

    latent, wide = comm(arch), comm(arch.model_copy(update={"moe_latent": 4096}))
    assert wide / 4 <= latent < wide


def test_gemma4_banded_layers_carry_their_share_of_flops_and_kv(cat: Catalog) -> None:
    """Gemma 4 31B's 50 banded layers have half the head width of its 10 global ones and
    four times their KV heads: beyond the window, long contexts cost the global layers'
    share only, a larger share of the FLOPs than of the KV bytes."""
    from clusterwright.model.attention_bands import attended_share

    arch = cat.model("gemma-4-31b")
    # at 8,192 tokens of context the banded layers attend 1,024 of them
    fb = 50 * 256 / (50 * 256 + 10 * 512)
    assert attended_share(arch, 8192) == pytest.approx(1 - fb + fb / 8)
    s = step(cat, "gemma-4-31b", "h100-sxm", ServingParallel(tp=2), "fp8", "vllm", "fp8")
    whole, banded = s._bands  # type: ignore[attr-defined]
    assert (whole[1], banded[1]) == (math.inf, 1024)  # the bands' windows
    assert banded[4] / (whole[4] + banded[4]) == pytest.approx(
        50 * 16 * 256 / (50 * 16 * 256 + 10 * 4 * 512))  # the banded layers' share of KV
    # Decode at 64k of context reads little more KV than at 32k: the banded layers stop
    # at their window.
    t32, t64 = s.step_s(0, 16, 16 * 32_000), s.step_s(0, 16, 16 * 64_000)
    full = arch.model_copy(update={"sliding_window": None, "sliding_window_layers": 0,
                                   "global_head_dim": None, "global_kv_heads": None,
                                   "global_k_eq_v": False})
    f = DeploymentStep(full, s.gpu, s.engine, s.net, s.par, s.dense_format, s.moe_format,
                       kv_bytes_per_token(full, "fp8"))
    assert t64 - t32 < f.step_s(0, 16, 16 * 64_000) - f.step_s(0, 16, 16 * 32_000)


def test_deepseek_v4_long_contexts_cost_its_compressed_cache_not_the_context(
        cat: Catalog) -> None:
    """DeepSeek-V4-Flash decodes a 64k-token context reading a fraction of the KV a dense
    latent of the same width would: its sparse layers attend the indexer's top 512 entries
    (the indexer scoring every one, in FP8), its heavily compressed layers one entry per 128
    tokens, every layer its window."""
    par = ServingParallel(tp=1, adp=8, moe_ep=8)
    s = step(cat, "deepseek-v4-flash", "b200", par, "nvfp4", "sglang", "fp8")
    bands = s._bands  # type: ignore[attr-defined]
    scales = sorted((b[0], b[1]) for b in bands)
    assert scales == [(1 / 128, math.inf), (0.25, 2048.0), (0.25, math.inf), (1.0, 128.0)]
    short, long_ = s.step_s(0, 16, 16 * 4_000), s.step_s(0, 16, 16 * 64_000)
    dense = cat.model("deepseek-v4-flash").model_copy(update={
        "compressed_attention": [], "index_heads": None, "index_head_dim": None,
        "sliding_window": None, "sliding_window_layers": 0})
    d = DeploymentStep(dense, s.gpu, s.engine, s.net, par, s.dense_format, s.moe_format,
                       kv_bytes_per_token(dense, "fp8"))
    assert long_ - short < 0.25 * (d.step_s(0, 16, 16 * 64_000) - d.step_s(0, 16, 16 * 4_000))


def test_sparse_attention_attends_its_top_k_and_pays_its_indexer_floor(cat: Catalog) -> None:
    """GLM-5 (DeepSeek Sparse Attention on its 78 layers): each decode query attends at most
    the indexer's 2,048 picks of its latent cache, while the indexer scores the whole
    context in FP8; a decoding iteration adds the engine's floor per indexed layer, an
    iteration carrying no decode does not."""
    par = ServingParallel(tp=8)
    s = step(cat, "glm-5", "h200-sxm", par, "fp8", "sglang", "fp8")
    bands = sorted((b[0], b[1]) for b in s._bands)  # type: ignore[attr-defined]
    assert bands == [(1.0, 2048.0), (1.0, math.inf)]
    floor = s.engine.sparse_layer_floor_s("h200-sxm")
    assert floor == pytest.approx(s.engine.sparse_layer_floor_us["h200-sxm"] * 1e-6)
    none = replace(s, engine=s.engine.model_copy(update={"sparse_layer_floor_us": {}}))
    for d, kv in ((4, 4 * 1500), (64, 64 * 9000)):
        got = s.gpu_parts(0, d, kv).attention_s - none.gpu_parts(0, d, kv).attention_s
        assert got == pytest.approx(78 * floor, rel=1e-9)
    assert s.gpu_parts(4096, 0, 0).total_s == pytest.approx(none.gpu_parts(4096, 0, 0).total_s)
    # A plain MLA model takes no floor, and its attention grows with the whole context
    v3 = step(cat, "deepseek-v3", "h200-sxm", par, "fp8", "sglang", "fp8")
    assert v3._k["indexed_layers"] == 0  # type: ignore[attr-defined]
    grow_sparse = s.gpu_parts(0, 16, 16 * 64_000).attention_s - s.gpu_parts(
        0, 16, 16 * 8_000).attention_s
    grow_dense = v3.gpu_parts(0, 16, 16 * 64_000).attention_s - v3.gpu_parts(
        0, 16, 16 * 8_000).attention_s
    assert 0 < grow_sparse < 0.5 * grow_dense


def test_offloaded_weights_cross_the_host_link_in_every_pass(cat: Catalog) -> None:
    """A share f of the layer weights in CPU memory: a batch-1 decode reads that share over
    the link instead of HBM, so it takes f x weights x (1 / link - 1 / HBM) longer; a large
    prefill, bound by its GEMMs, stays bound by them while streaming takes less; MoE
    experts stream their share the same way."""
    plain = step(cat, "llama-3.1-70b", "gh200", ServingParallel(tp=1), "fp8")
    link = 375e9
    off = replace(plain, offload_share=0.5, host_read_bps=link)
    k = plain._k  # type: ignore[attr-defined]
    extra = 0.5 * k["dense_bytes"] * (1.0 / link - 1.0 / k["hbm"])
    assert off.step_s(0, 1, 1000) - plain.step_s(0, 1, 1000) == pytest.approx(extra, rel=1e-9)
    assert extra > 0.08  # 35 GB more over the link: tens of milliseconds
    # 16k prompt tokens: 2.3 PFLOP of GEMMs (~3 s) against ~0.1 s of streaming
    assert off.step_s(16384, 0, 0) == pytest.approx(plain.step_s(16384, 0, 0), rel=1e-9)
    moe = step(cat, "qwen3-235b-a22b", "gb200", ServingParallel(tp=4, moe_ep=4), "fp8")
    moe_off = replace(moe, offload_share=0.25, host_read_bps=187e9)
    assert moe_off.step_s(0, 1, 1000) > moe.step_s(0, 1, 1000) * 1.5
    for share, rate in ((1.5, link), (-0.1, link), (0.2, 0.0)):
        with pytest.raises(ValueError, match="offload_share"):
            replace(plain, offload_share=share, host_read_bps=rate)


def test_a_gpu_listing_only_one_16bit_rate_serves_at_it(cat: Catalog) -> None:
    """A user catalog may list FP16 only (a V100-class part): the engine step read the BF16
    rate unchecked and raised KeyError. BF16 and FP16 stand in for each other; a part with
    neither is refused by name."""
    h100 = cat.gpu("h100-sxm")
    fp16_only = h100.model_copy(update={"peak_tflops": {Dtype.fp16: h100.peak_tflops[Dtype.bf16]}})
    arch = cat.model("llama-3.1-8b")
    net = net_for(cat, h100, cat.stack_for_gpu(h100.id), server_for(cat, h100))
    par = ServingParallel(tp=1)

    def make(g: object) -> DeploymentStep:
        f = weight_format("bf16", g)  # type: ignore[arg-type]
        return DeploymentStep(arch, g, cat.serving_engine("vllm"), net, par, f, f,  # type: ignore[arg-type]
                              kv_bytes_per_token(arch, "bf16"))

    assert make(fp16_only).step_s(2048, 0, 0) == pytest.approx(make(h100).step_s(2048, 0, 0))
    none16 = h100.model_copy(update={"peak_tflops": {Dtype.fp8: 1979.0}})
    with pytest.raises(InputError, match="lists no"):
        make(none16).step_s(2048, 0, 0)


def test_moe_kernels_take_their_floor_per_moe_layer(cat: Catalog) -> None:
    """Each MoE layer of an iteration costs the engine's measured kernel floor on the GPU
    (``moe_layer_floor_us``) on top of its weight stream, whatever the batch; a dense model
    has no MoE layer to charge, and an engine without floors charges none."""
    par = ServingParallel(tp=8, moe_tp=8)
    vllm = cat.serving_engine("vllm")
    bare = vllm.model_copy(update={"moe_layer_floor_us": {}})
    arch = cat.model("deepseek-v3")
    for gpu in ("h200-sxm", "b200"):
        g = cat.gpu(gpu)
        net = net_for(cat, g, cat.stack_for_gpu(g.id), server_for(cat, g))
        f = weight_format("fp8", g)
        kv = kv_bytes_per_token(arch, "fp8")
        with_floor = DeploymentStep(arch, g, vllm, net, par, f, f, kv)
        without = DeploymentStep(arch, g, bare, net, par, f, f, kv)
        floor = vllm.moe_layer_floor_us[gpu] * 1e-6 * arch.moe_layers
        for batch in (1, 64):
            extra = with_floor.gpu_s(0, batch, batch * 2000) - without.gpu_s(0, batch,
                                                                              batch * 2000)
            assert extra == pytest.approx(floor, rel=1e-9)
    # Hopper's kernels: a higher floor than Blackwell's (AIConfigurator's tables)
    assert vllm.moe_layer_floor_us["h200-sxm"] > vllm.moe_layer_floor_us["b200"]
    dense = step(cat, "llama-3.1-70b", "h200-sxm", ServingParallel(tp=8))
    plain = replace(dense, engine=bare)
    assert dense.gpu_s(0, 8, 8000) == plain.gpu_s(0, 8, 8000)


@pytest.mark.parametrize("model,par,shape", [
    ("llama-3.1-70b", ServingParallel(tp=8), (8192, 0, 0)),
    ("llama-3.1-70b", ServingParallel(tp=4, pp=2), (0, 64, 64 * 2048)),
    ("deepseek-v3", ServingParallel(tp=1, adp=8, moe_tp=1, moe_ep=8), (512, 32, 32 * 4096)),
    ("qwen3-32b", ServingParallel(tp=1), (1024, 16, 16 * 1500)),
])
def test_gpu_parts_sum_to_the_iteration(cat: Catalog, model: str, par: ServingParallel,
                                        shape: tuple[int, int, int]) -> None:
    s = step(cat, model, "h100-sxm", par, "fp8")
    parts = s.gpu_parts(*shape)
    assert parts.total_s == pytest.approx(s.gpu_s(*shape), rel=1e-12)
    assert all(x >= 0.0 for x in parts)
    assert parts.fixed_s > 0.0
    # Only a MoE model has routed experts; only more than one GPU communicates
    assert (parts.experts_s > 0.0) == cat.model(model).is_moe
    assert (parts.comm_s > 0.0) == (par.gpus > 1)


def test_gpu_parts_of_no_work_are_zero(cat: Catalog) -> None:
    parts = step(cat, "llama-3.1-8b", "h100-sxm", ServingParallel(tp=1)).gpu_parts(0, 0, 0)
    assert parts.total_s == 0.0 and tuple(parts) == (0.0,) * 5


def test_a_long_prompt_spends_more_of_itself_in_attention(cat: Catalog) -> None:
    s = step(cat, "llama-3.1-70b", "h100-sxm", ServingParallel(tp=8))
    short, long = s.gpu_parts(1024, 0, 0), s.gpu_parts(32768, 0, 0)
    assert long.attention_s / long.total_s > 2.0 * short.attention_s / short.total_s
