"""Step-time model of an inference iteration (``model/inference.py``), with a test-only
serving calibration so the properties do not move with the catalog's."""

from __future__ import annotations

import math

import numpy as np
import pytest

from clusterwright.catalog.registry import Catalog
from clusterwright.catalog.stacks import ServingEfficiency
from clusterwright.design.train import net_for
from clusterwright.errors import InfeasibleError, InputError
from clusterwright.model.inference import StepModel, compute_dtype
from clusterwright.model.precision import Precision
from clusterwright.plan.serving_replica import serving_stack

SERVING = ServingEfficiency(
    engine="test", decode_bandwidth_efficiency=0.8, step_overhead_s=0.002, calibration="test",
    gemm_efficiency=[(8.0, 0.07), (9.0, 0.25), (10.0, 0.52), (11.0, 0.68), (12.0, 0.74),
                     (13.0, 0.76)],
    attention_efficiency=0.35,
)


def _model(catalog: Catalog, model: str = "llama-2-7b", gpu: str = "h100-sxm", tp: int = 1,
           weights: Precision = Precision.bf16) -> StepModel:
    g = catalog.gpu(gpu)
    stack = catalog.stack_for_gpu(g.id).model_copy(update={"serving": SERVING})
    arch = catalog.get("models", model)
    return StepModel(arch, g, stack, net_for(catalog, g, stack), tp=tp, weights=weights)


def test_no_work_takes_no_time(catalog: Catalog) -> None:
    assert _model(catalog).step_s(0, 0, 0) == 0.0


def test_small_decode_is_bandwidth_bound(catalog: Catalog) -> None:
    m = _model(catalog)
    t = m.step_s(0, 1, 512)
    stream = m.weight_bytes_per_gpu / (m.gpu.memory_bandwidth_gbps * 1e9 * 0.8)
    assert stream < t < stream * 1.3 + 0.002


def test_time_grows_with_work(catalog: Catalog) -> None:
    m = _model(catalog)
    d = m.step_array(np.zeros(4), np.array([1, 8, 64, 256]), np.array([512, 4096, 32768, 131072]))
    assert np.all(np.diff(d) > 0)
    p = m.step_array(np.array([128, 1024, 8192]), np.zeros(3), np.zeros(3))
    assert np.all(np.diff(p) > 0)


def test_tensor_parallel_cuts_decode_but_not_linearly(catalog: Catalog) -> None:
    t1 = _model(catalog, "llama-3.1-70b", tp=4).step_s(0, 8, 8 * 1024)
    t8 = _model(catalog, "llama-3.1-70b", tp=8).step_s(0, 8, 8 * 1024)
    assert t8 < t1 < 2.0 * t8  # all-reduces and overhead keep TP8 from halving TP4


def test_fp8_weights_decode_faster(catalog: Catalog) -> None:
    bf16 = _model(catalog).step_s(0, 4, 4096)
    fp8 = _model(catalog, weights=Precision.fp8).step_s(0, 4, 4096)
    assert fp8 < bf16
    assert compute_dtype("int4").value == "bf16"


def test_a_stack_without_serving_calibration_is_refused(catalog: Catalog) -> None:
    g = catalog.gpu("b200")
    stack = catalog.stack_for_gpu(g.id)
    assert stack.serving is None
    with pytest.raises(InputError, match="serving"):
        StepModel(catalog.get("models", "llama-2-7b"), g, stack, net_for(catalog, g, stack))


def test_calibrated_stacks_carry_a_serving_block(catalog: Catalog) -> None:
    for gpu in ("a100-80gb-sxm", "h100-sxm", "h200-sxm"):
        stack = serving_stack(catalog, gpu)
        assert stack is not None
        sv = stack.serving
        assert sv is not None and 0 < sv.decode_bandwidth_efficiency <= 0.9
        assert "validate --table serving" in sv.calibration


def test_tp_beyond_the_nvlink_domain_is_refused(catalog: Catalog) -> None:
    with pytest.raises(InfeasibleError, match="tp: 16 exceeds the NVLink domain") as err:
        _model(catalog, tp=16)
    assert (err.value.field, err.value.reason) == ("tp", "nvlink_domain")


def _with(catalog: Catalog, model: str = "llama-3.1-70b", tp: int = 2,
          **serving: object) -> StepModel:
    g = catalog.gpu("h100-sxm")
    sv = SERVING.model_copy(update=serving)
    stack = catalog.stack_for_gpu(g.id).model_copy(update={"serving": sv})
    return StepModel(catalog.get("models", model), g, stack, net_for(catalog, g, stack), tp=tp)


def test_per_layer_overhead_is_paid_once_per_layer(catalog: Catalog) -> None:
    base = _with(catalog).step_s(0, 1, 1024)
    slow = _with(catalog, layer_overhead_s=50e-6).step_s(0, 1, 1024)
    # Llama-3.1-70B has 80 layers: 80 x 50 us = 4 ms, whatever the TP degree.
    assert slow - base == pytest.approx(80 * 50e-6)


def test_per_layer_overhead_makes_efficiency_fall_with_tp(catalog: Catalog) -> None:
    def speedup(**kw: object) -> float:
        return _with(catalog, tp=2, **kw).step_s(0, 1, 1024) / _with(
            catalog, tp=8, **kw).step_s(0, 1, 1024)
    assert speedup(layer_overhead_s=50e-6) < speedup()  # fixed costs do not shrink with TP


def test_engines_without_gqa_kv_reuse_read_the_kv_cache_per_query_head(
        catalog: Catalog) -> None:
    # Llama-3.1-70B: 64 query heads over 8 KV heads, so such a kernel reads the cache 8 times.
    reuse = _with(catalog, "llama-3.1-70b", 2)
    no_reuse = _with(catalog, "llama-3.1-70b", 2, gqa_kv_reuse=False)
    kv = 200_000
    extra = no_reuse.step_s(0, 64, kv) - reuse.step_s(0, 64, kv)
    a = catalog.get("models", "llama-3.1-70b")
    kv_bytes = 80 * 2 * 8 * 128 * 2 / 2 * kv  # layers x K,V x kv heads x dim x bf16 / TP
    hbm = catalog.gpu("h100-sxm").memory_bandwidth_gbps * 1e9 * 0.8
    assert a.heads // a.n_kv_heads == 8
    assert extra == pytest.approx(7 * kv_bytes / hbm, rel=1e-6)
    # Multi-head attention (one KV head per query head) is not affected.
    mha_plain = _with(catalog, "llama-2-7b", 1).step_s(0, 64, kv)
    mha_no_reuse = _with(catalog, "llama-2-7b", 1, gqa_kv_reuse=False).step_s(0, 64, kv)
    assert mha_no_reuse == pytest.approx(mha_plain)


@pytest.mark.parametrize("model,tp,pp,weights", [
    ("llama-2-7b", 1, 1, Precision.bf16),
    ("llama-3.1-70b", 4, 1, Precision.fp8),
    ("llama-3.1-70b", 2, 2, Precision.bf16),
    ("mixtral-8x7b", 2, 1, Precision.bf16),
])
def test_scalar_step_equals_the_array_form(catalog: Catalog, model: str, tp: int, pp: int,
                                           weights: Precision) -> None:
    g = catalog.gpu("h100-sxm")
    sv = SERVING.model_copy(update={"layer_overhead_s": 30e-6, "gemm_scale": 0.9})
    stack = catalog.stack_for_gpu(g.id).model_copy(update={"serving": sv})
    m = StepModel(catalog.get("models", model), g, stack, net_for(catalog, g, stack), tp=tp,
                  pp=pp, weights=weights)
    _assert_scalar_equals_array(m, seed=7)


# ---------------------------------------------------------------- MoE expert parallelism


def _ep(catalog: Catalog, model: str = "mixtral-8x7b", tp: int = 8, ep: int = 8,
        ep_comm: str = "allreduce", pp: int = 1) -> StepModel:
    g = catalog.gpu("h100-sxm")
    stack = catalog.stack_for_gpu(g.id).model_copy(update={"serving": SERVING})
    return StepModel(catalog.get("models", model), g, stack, net_for(catalog, g, stack),
                     tp=tp, pp=pp, ep=ep, ep_comm=ep_comm)


@pytest.mark.parametrize(("model", "tp", "ep", "comm", "match"), [
    ("llama-2-7b", 2, 2, "allreduce", "ep: llama-2-7b is a dense model"),
    ("mixtral-8x7b", 4, 8, "allreduce", "ep: 8 does not divide tp 4"),
    ("mixtral-8x7b", 6, 6, "allreduce", "ep: 6 does not divide the 8 experts"),
    ("mixtral-8x7b", 8, 4, "alltoall", "ep_comm: alltoall needs ep equal to tp"),
    ("mixtral-8x7b", 8, 1, "alltoall", "ep_comm"),
    ("mixtral-8x7b", 8, 8, "ring", "ep_comm"),
    ("mixtral-8x7b", 8, 0, "allreduce", "ep: must be a positive"),
])
def test_bad_expert_parallelism_is_refused_naming_ep(catalog: Catalog, model: str, tp: int,
                                                     ep: int, comm: str, match: str) -> None:
    with pytest.raises(InputError, match=match) as err:
        _ep(catalog, model, tp, ep, comm)
    # A field path, never a CLI flag: each face words it (the CLI as --ep / --ep-comm).
    assert err.value.field == match.split(":")[0]


def test_ep_1_is_the_tensor_parallel_step(catalog: Catalog) -> None:
    # The ep = 1 path is today's code line for line (clusterwright validate --table serving
    # gave identical output before and after EP was added); pinned at this commit.
    m = _ep(catalog, tp=2, ep=1)
    default = StepModel(m.arch, m.gpu, m.stack, m.net, tp=2)
    for p, d, kv in ((0, 64, 64 * 2048), (4096, 0, 0), (512, 32, 100_000)):
        assert m.step_s(p, d, kv) == default.step_s(p, d, kv)
    assert m.step_s(0, 64, 64 * 2048) == pytest.approx(0.023773971625432357, rel=1e-12)
    assert m.step_s(4096, 0, 0) == pytest.approx(0.08856524509330588, rel=1e-12)


def test_ep_at_batch_1_waits_for_the_gpu_holding_a_touched_expert(catalog: Catalog) -> None:
    # Mixtral 8x7B, TP 8, one decode token, bf16: every GPU of TP 8 streams 1/8 of the 2
    # touched experts; under EP 8 each GPU holds one whole expert, touched with q = 2/8, and
    # the busiest of 8 (independent) GPUs has 1 - 0.75^8 = 0.8999 experts.
    # One expert over 32 layers: 32 x 3 x 4096 x 14336 x 2 B = 11.274 GB.
    expert = 32 * 3 * 4096 * 14336 * 2
    hbm = 3350e9 * 0.8
    tp, ep = _ep(catalog, ep=1), _ep(catalog, ep=8)
    extra = ep.step_s(0, 1, 1024) - tp.step_s(0, 1, 1024)
    assert extra == pytest.approx((1 - 0.75 ** 8 - 2 / 8) * expert / hbm, rel=1e-9)  # 2.73 ms
    # Large batches touch every expert on every GPU: weights read agree again.
    assert ep.step_s(0, 256, 1024) <= tp.step_s(0, 256, 1024)


def test_ep_widens_expert_gemms_at_large_prefill(catalog: Catalog) -> None:
    # 8192-token prefill is compute-bound; EP 8 runs each expert's GEMMs 8x wider than TP 8's
    # slices, at a higher point of the GEMM efficiency curve, with the same all-reduces.
    assert _ep(catalog, ep=8).step_s(8192, 0, 0) < _ep(catalog, ep=1).step_s(8192, 0, 0)


def test_alltoall_replaces_the_moe_all_reduce_by_hand(catalog: Catalog) -> None:
    # Mixtral 8x7B, TP = EP = 8, 8192 prefill tokens on H100 (NVLink busbw 369 GB/s, NVLS
    # 477 GB/s, NCCL base 8.4 us, 3.4 us a step). Per MoE layer (all 32 are):
    # - the all-reduce given up: 8192 x 4096 x 2 B = 67.1 MB, NVLS 8.4 + 2 x 3.4 +
    #   1.75 x 67.1 MB / 477 GB/s = 261.4 us (ring: 382.7 us);
    # - two all-to-alls, each GPU sending its 1/8 of the tokens, top-2 copies:
    #   8192 / 8 x 2 x 4096 x 2 B = 16.8 MB, 7/8 of it off the GPU:
    #   8.4 + 7 x 3.4 + 14.68 MB / 369 GB/s = 72.0 us each.
    # 32 x (2 x 72.0 - 261.4) = -3.76 ms: cheaper, top-2 of 8 experts sends less than one
    # hidden state per token over the domain.
    s_ar = 8192 * 4096 * 2
    ar = 8.4e-6 + 2 * 3.4e-6 + 2 * 7 / 8 * s_ar / 477e9
    s_a2a = 8192 / 8 * 2 * 4096 * 2
    a2a = 8.4e-6 + 7 * 3.4e-6 + 7 / 8 * s_a2a / 369e9
    delta = (_ep(catalog, ep_comm="alltoall").step_s(8192, 0, 0)
             - _ep(catalog, ep_comm="allreduce").step_s(8192, 0, 0))
    assert delta == pytest.approx(32 * (2 * a2a - ar), rel=1e-9)
    assert delta == pytest.approx(-3.758e-3, rel=1e-3)


@pytest.mark.parametrize(("model", "tp", "pp", "ep", "comm"), [
    ("mixtral-8x7b", 8, 1, 8, "allreduce"),
    ("mixtral-8x7b", 4, 1, 2, "allreduce"),
    ("mixtral-8x22b", 4, 2, 4, "alltoall"),
    ("deepseek-v3", 8, 1, 8, "alltoall"),
])
def test_scalar_step_equals_the_array_form_with_ep(catalog: Catalog, model: str, tp: int,
                                                   pp: int, ep: int, comm: str) -> None:
    m = _ep(catalog, model, tp, ep, comm, pp)
    _assert_scalar_equals_array(m, seed=11)


def test_busiest_gpu_touched_experts_by_hand() -> None:
    from clusterwright.model.inference import _busiest_touched

    # One expert per GPU: P(some GPU touched) = 1 - (1 - q)^8, q = 2/8 for one token.
    assert _busiest_touched(1, 8, 2, 8, 1.0) == pytest.approx(1 - 0.75 ** 8)
    # One GPU: the mean, local x q (q = 1 - (1 - 8/256)^3 for 3 tokens).
    q = 1 - (1 - 8 / 256) ** 3
    assert _busiest_touched(32, 1, 8, 256, 3.0) == pytest.approx(32 * q)
    # Many tokens: every expert touched.
    assert _busiest_touched(32, 8, 8, 256, 10_000.0) == 32.0


def _assert_scalar_equals_array(m: StepModel, seed: int) -> None:
    """``step_s`` (the simulator's scalar fast path) equals ``step_array`` on random work."""
    rng = np.random.default_rng(seed)
    for _ in range(50):
        p, d = int(rng.integers(0, 9000)), int(rng.integers(0, 600))
        kv = int(rng.integers(0, 2_000_000))
        pairs = float(rng.uniform(0, p * p)) if rng.random() < 0.5 else None
        arr = float(m.step_array(np.asarray(p), np.asarray(d), np.asarray(kv),
                                 None if pairs is None else np.asarray(pairs)))
        assert m.step_s(p, d, kv, pairs) == pytest.approx(arr, rel=1e-9, abs=1e-15)


# The growth's share left: gpt-oss attends the whole context on half its layers; Gemma 4 on a
# sixth, with a quarter of the banded layers' KV heads; DeepSeek-V4 one entry per 4 or 128
# tokens, or the indexer's top 512.
@pytest.mark.parametrize(("model", "share"), [("gpt-oss-120b", 0.51), ("gemma-4-31b", 0.1),
                                              ("deepseek-v4-flash", 0.03)])
def test_windowed_and_compressed_layers_read_their_keys_on_the_stack_path(
        catalog: Catalog, model: str, share: float) -> None:
    """The stack path reads attention by bands too: decoding at 64k tokens of context costs
    a windowed or compressed model far less than the same shape attending everything, the
    scalar and array forms agreeing; a model without windows keeps one whole-context band."""
    m = _model(catalog, model, tp=8, weights=Precision.fp8)
    arch = catalog.model(model)
    full = arch.model_copy(update={
        "sliding_window": None, "sliding_window_layers": 0, "compressed_attention": [],
        "index_heads": None, "index_head_dim": None, "global_head_dim": None,
        "global_kv_heads": None, "global_k_eq_v": False})
    g = catalog.gpu("h100-sxm")
    dense = StepModel(full, g, m.stack, m.net, tp=8, weights=Precision.fp8)
    grow = m.step_s(0, 16, 16 * 64_000) - m.step_s(0, 16, 16 * 4_000)
    assert grow < share * (dense.step_s(0, 16, 16 * 64_000) - dense.step_s(0, 16, 16 * 4_000))
    _assert_scalar_equals_array(m, seed=7)
    assert _model(catalog, "llama-3.1-70b")._consts.attn_bands == ((1.0, 1.0, 1.0, math.inf),)
