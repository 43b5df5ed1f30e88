"""Serving decisions (``plan/serving.py``): vLLM's memory split, simulated estimates and the
SLO plan. The shipped catalog has no serving calibration yet, so these tests give every stack
a test one."""

from __future__ import annotations

import math
from typing import Any

import pytest

from clusterwright.catalog.registry import Catalog
from clusterwright.catalog.stacks import ServingEfficiency
from clusterwright.errors import InfeasibleError, InputError
from clusterwright.plan import serving as serve
from clusterwright.plan.serving import LoadPoint, plan
from clusterwright.plan.serving_memory import memory_plan
from clusterwright.plan.serving_replica import estimate, replica, workload

SERVING = ServingEfficiency(
    engine="test", decode_bandwidth_efficiency=0.8, step_overhead_s=0.004, calibration="test"
)
CONTRACT = ("ttft_p50_s", "ttft_p99_s", "tpot_p50_s", "tpot_p99_s", "e2e_mean_s", "e2e_p99_s",
            "throughput_tokens_per_s", "requests_per_s", "kv_cache_utilization")


def _with_serving(catalog: Catalog, serving: ServingEfficiency | None) -> Catalog:
    entries = {kind: dict(table) for kind, table in catalog.entries.items()}
    entries["stacks"] = {k: st.model_copy(update={"serving": serving})
                         for k, st in entries["stacks"].items()}
    return Catalog(entries=entries, assumptions=catalog.assumptions, origin=catalog.origin)


@pytest.fixture(scope="module")
def cat(catalog: Catalog) -> Catalog:
    """The catalog with the test serving calibration on every stack."""
    return _with_serving(catalog, SERVING)


def test_memory_plan_of_llama_8b_on_h100_by_hand(cat: Catalog) -> None:
    m = memory_plan(cat.model("llama-3.1-8b"), cat.gpu("h100-sxm"), 1, 1, "bf16", "bf16", cat)
    assert m.usable == pytest.approx(72e9)  # 80 GB x 0.90
    assert m.weights == pytest.approx(8.030261248e9 * 2)  # 8.03 B params, bf16
    # Profiling pass of 8192 tokens: 2 bytes x (4 x 4096 hidden + 2 x 14336 MLP).
    assert m.activations == pytest.approx(2 * 8192 * (4 * 4096 + 2 * 14336))
    assert m.cuda_graphs == pytest.approx(1e9)
    assert m.kv_bytes_per_token == 32 * 2 * 8 * 128 * 2  # layers x K,V x kv heads x dim x 2 B
    kv = 72e9 - 16.060522496e9 - 0.738197504e9 - 1e9
    assert m.kv_cache == pytest.approx(kv)
    assert m.kv_blocks == math.floor(kv / (16 * 131072)) == 25845
    assert m.kv_tokens == 25845 * 16
    assert m.max_batch(2048) == 25845 // 128
    assert m.max_batch(2049) == 25845 // 129  # a partial block is a whole block


def test_tensor_parallel_splits_weights_and_kv_heads(cat: Catalog) -> None:
    a, g = cat.model("llama-3.1-8b"), cat.gpu("h100-sxm")
    m1 = memory_plan(a, g, 1, 1, "bf16", "bf16", cat)
    m2 = memory_plan(a, g, 2, 1, "bf16", "bf16", cat)
    assert m2.weights == pytest.approx(m1.weights / 2)
    assert m2.kv_bytes_per_token == m1.kv_bytes_per_token / 2
    assert m2.kv_tokens > 2 * m1.kv_tokens  # half the bytes per token and more room
    fp8 = memory_plan(a, g, 1, 1, "bf16", "fp8", cat)
    assert fp8.kv_bytes_per_token == m1.kv_bytes_per_token / 2


def test_a_model_too_big_for_its_tp_names_tp_and_the_fix(cat: Catalog) -> None:
    with pytest.raises(InfeasibleError,
                       match=r"tp: .* at tp 1 pp 1: .*141\.1 GB weights.*try tp 4") as err:
        memory_plan(cat.model("llama-3.1-70b"), cat.gpu("h100-sxm"), 1, 1, "bf16", "bf16", cat)
    assert (err.value.field, err.value.reason) == ("tp", "memory")


def test_replica_engine_takes_blocks_from_the_plan(cat: Catalog) -> None:
    rep = replica(cat, "llama-3.1-8b", "h100-sxm")
    assert rep.engine.kv_blocks == rep.memory.kv_blocks
    assert rep.engine.max_num_seqs == 256
    assert rep.engine.max_num_batched_tokens == 8192
    assert rep.gpus == 1


def test_a_gpu_without_serving_calibration_is_refused(catalog: Catalog) -> None:
    bare = _with_serving(catalog, None)
    with pytest.raises(InputError, match=r"gpu: .*serving calibration"):
        replica(bare, "llama-3.1-8b", "h100-sxm")
    with pytest.raises(InputError, match="gpu: choose: no catalog GPU"):
        plan(bare, "llama-3.1-8b", 1.0, 8, 8, 1.0, 1.0)


def test_workload_needs_exactly_one_of_qps_and_concurrency() -> None:
    for kw in ({}, {"qps": 1.0, "concurrency": 2}):
        with pytest.raises(InputError, match="qps_or_concurrency"):
            workload(128, 128, **kw)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="qps"):
        workload(128, 128, qps=0.0)
    with pytest.raises(InputError, match="output_len"):
        workload(128, 0, qps=1.0)


def _est(cat: Catalog, **kw: object) -> dict[str, object]:
    args: dict[str, object] = {"qps": 4.0, "input_len": 512, "output_len": 128,
                               "num_requests": 300}
    args.update(kw)
    model = str(args.pop("model", "llama-3.1-8b"))
    gpu = str(args.pop("gpu", "h100-sxm"))
    return estimate(cat, model, gpu, **args).as_dict()  # type: ignore[arg-type]


def test_estimate_reports_the_contract_keys(cat: Catalog) -> None:
    d = _est(cat)
    assert set(CONTRACT) <= set(d)
    for k in ("ttft", "tpot", "e2e"):
        assert d[f"{k}_p99_s"] >= d[f"{k}_p50_s"] > 0  # type: ignore[operator]
    assert d["throughput_tokens_per_s"] == pytest.approx(
        d["requests_per_s"] * 128)  # type: ignore[operator]
    assert 0 < d["kv_cache_utilization"] < 1  # type: ignore[operator]
    assert d["gpus"] == 1 and d["preemptions"] == 0


def test_more_load_means_longer_time_to_first_token(cat: Catalog) -> None:
    ttft = [_est(cat, qps=q)["ttft_p99_s"] for q in (2.0, 16.0, 40.0)]
    assert ttft[0] < ttft[1] < ttft[2]  # type: ignore[operator]


def test_tp2_decodes_a_70b_model_faster(cat: Catalog) -> None:
    # B200 holds 70B bf16 on one GPU (162 GB usable), so TP1 and TP2 compare directly.
    tp1 = _est(cat, model="llama-3.1-70b", gpu="b200", tp=1, qps=1.0, num_requests=100)
    tp2 = _est(cat, model="llama-3.1-70b", gpu="b200", tp=2, qps=1.0, num_requests=100)
    assert tp2["tpot_p50_s"] < 0.75 * tp1["tpot_p50_s"]  # type: ignore[operator]


def test_closed_loop_obeys_littles_law(cat: Catalog) -> None:
    d = _est(cat, qps=None, concurrency=16)
    # 16 clients always in the system: throughput x time in system = 16 (less the drain).
    assert d["requests_per_s"] * d["e2e_mean_s"] == pytest.approx(16, rel=0.1)  # type: ignore


def test_replicas_share_the_load(cat: Catalog) -> None:
    one = _est(cat, qps=30.0)
    two = _est(cat, qps=30.0, replicas=2, router="least_outstanding")
    assert two["gpus"] == 2
    assert two["ttft_p99_s"] < one["ttft_p99_s"]  # type: ignore[operator]


def test_a_request_longer_than_the_context_names_the_lengths(cat: Catalog) -> None:
    with pytest.raises(InputError, match="request_len"):
        _est(cat, input_len=131072)


def test_lognormal_lengths_are_clipped_to_the_context(cat: Catalog) -> None:
    d = _est(cat, length_dist="lognormal", length_cv=2.0, input_len=4096, output_len=64)
    assert d["requests"] == 300


def test_plan_finds_the_cheapest_fleet_for_an_easy_slo(cat: Catalog) -> None:
    p = plan(cat, "llama-3.1-8b", 20.0, 512, 128, 1.0, 0.05, gpu="h100-sxm", tps=(1, 2),
             num_requests=300, rel_tol=0.1)
    assert p.feasible and p.best is not None
    b = p.best
    assert b["replicas"] * b["qps_per_replica"] >= 20.0
    assert b["ttft_p99_s"] <= 1.0 and b["tpot_p99_s"] <= 0.05
    # Priced from the cheapest H100 offer ($2.99/GPU-h in the catalog).
    price = serve.gpu_hour_price(cat, "h100-sxm")
    assert price is not None
    assert b["usd_per_hour"] == pytest.approx(b["gpus"] * price[0])
    assert b["cost_per_million_tokens_usd"] == pytest.approx(
        b["usd_per_hour"] / (20.0 * 128 * 3600) * 1e6)
    assert b["usd_per_hour"] == min(c["usd_per_hour"] for c in p.candidates)
    assert p.pareto and p.as_dict()["cost_per_million_tokens_usd"] == b[
        "cost_per_million_tokens_usd"]


def test_plan_is_the_same_in_one_process_or_several(cat: Catalog) -> None:
    kw: dict[str, Any] = {"gpu": "h100-sxm", "tps": (1, 2), "num_requests": 200,
                          "rel_tol": 0.2}
    one = plan(cat, "llama-3.1-8b", 20.0, 512, 128, 1.0, 0.05, workers=1, **kw)
    two = plan(cat, "llama-3.1-8b", 20.0, 512, 128, 1.0, 0.05, workers=2, **kw)
    assert one.as_dict() == two.as_dict()


def test_capacity_is_the_same_whether_failing_runs_stop_early_or_not(cat: Catalog) -> None:
    rep = replica(cat, "llama-3.1-8b", "h100-sxm", 1)
    kw: dict[str, Any] = {"num_requests": 300, "rel_tol": 0.1}
    whole = serve.capacity(rep, 512, 256, 0.5, 0.05, stop_early=False, **kw)
    cut = serve.capacity(rep, 512, 256, 0.5, 0.05, **kw)
    assert cut.qps == whole.qps and cut.at_capacity == whole.at_capacity
    assert [p.meets_slo for p in cut.points] == [p.meets_slo for p in whole.points]
    stopped = [p for p in cut.points if p.truncated]
    assert all(not p.meets_slo and p.ttft_p99_s > 0.5 for p in stopped)
    assert any(not p.meets_slo for p in cut.points)
    assert not cut.low_load.truncated


def test_a_loose_slo_cannot_buy_more_than_the_replica_completes(cat: Catalog) -> None:
    """Minutes of TTFT allowed: a finite run at 10x the replica's throughput has a p99 under
    the SLO, yet its queue only grows. The capacity stops at what the replica completes flat
    out (before, one H100 was credited with tens of thousands of 70B requests a second)."""
    rep = replica(cat, "llama-3.1-8b", "h100-sxm", 1)
    kw: dict[str, Any] = {"num_requests": 300, "rel_tol": 0.1}
    loose = serve.capacity(rep, 512, 256, 600.0, 1.0, **kw)
    w = workload(512, 256, qps=1e6, num_requests=300)
    flat_out = serve._simulate(rep, w).requests_per_s
    assert 0 < loose.qps <= flat_out
    tight = serve.capacity(rep, 512, 256, 0.5, 0.05, **kw)
    assert tight.qps <= loose.qps
    assert any(not p.meets_slo and p.qps > flat_out for p in loose.points)


def test_plan_reports_an_impossible_slo_as_infeasible(cat: Catalog) -> None:
    p = plan(cat, "llama-3.1-8b", 20.0, 512, 128, 0.001, 0.05, gpu="h100-sxm", tps=(1, 2),
             num_requests=200)
    assert not p.feasible and p.best is None
    a = p.best_achievable
    assert a is not None and a["ttft_p99_s"] > 0.001
    assert a["closest"]["tp"] in (1, 2)
    assert p.as_dict()["cost_per_million_tokens_usd"] is None


def test_plan_rejects_layouts_that_do_not_fit(cat: Catalog) -> None:
    with pytest.raises(InfeasibleError, match=r"model: llama-3\.1-70b fits no TP") as err:
        plan(cat, "llama-3.1-70b", 1.0, 512, 128, 1.0, 0.05, gpu="h100-sxm", tps=(1, 2))
    # Every layout was rejected for memory: the typed reason says so, no message parsing.
    assert err.value.reason == "memory"


def _pt(per_gpu: float, per_user: float) -> LoadPoint:
    return LoadPoint("g", 1, 1.0, 0.1, 0.01, per_gpu, per_user, True, None)


def test_pareto_keeps_only_undominated_points() -> None:
    pts = [_pt(100, 10), _pt(50, 20), _pt(40, 15), _pt(10, 50), _pt(100, 5)]
    front = serve.pareto(pts)
    assert [(p.tokens_per_s_per_gpu, p.tokens_per_s_per_user) for p in front] == [
        (100, 10), (50, 20), (10, 50)]


def test_free_memory_rule_takes_the_fraction_of_what_weights_leave(cat: Catalog) -> None:
    """TensorRT-LLM sizes the KV cache as free_gpu_memory_fraction x (memory - weights -
    activations); vLLM as utilization x memory - weights - activations."""
    a, g = cat.model("llama-3.1-70b"), cat.gpu("h100-sxm")
    total = memory_plan(a, g, 2, 1, "fp8", "fp8", cat)
    free = memory_plan(a, g, 2, 1, "fp8", "fp8", cat, rule="free")
    left = 80e9 - free.weights - free.activations - free.cuda_graphs
    assert free.kv_cache == pytest.approx(0.9 * left)
    assert total.kv_cache == pytest.approx(0.9 * 80e9 - (80e9 - left))
    # 0.9 x left - (0.9 x 80 GB - 80 GB + left) = 0.1 x (80 GB - left): the weights' share.
    assert free.kv_cache - total.kv_cache == pytest.approx(0.1 * (80e9 - left))


def test_free_memory_rule_still_refuses_a_model_that_does_not_fit(cat: Catalog) -> None:
    with pytest.raises(InputError, match="fraction of free memory"):
        memory_plan(cat.model("llama-3.1-70b"), cat.gpu("h100-sxm"), 1, 1, "bf16", "bf16",
                    cat, rule="free")


# ---------------------------------------------------------------- MoE expert parallelism


def test_expert_parallel_keeps_the_memory_per_gpu(cat: Catalog) -> None:
    # Mixtral 8x7B bf16 on two H100s: TP slices every expert in two, EP 2 gives each GPU four
    # whole experts; both are 46,702,792,704 params x 2 B / 2 = 46.7 GB of weights per GPU.
    tp = replica(cat, "mixtral-8x7b", "h100-sxm", tp=2)
    ep = replica(cat, "mixtral-8x7b", "h100-sxm", tp=2, ep=2)
    assert ep.memory == tp.memory
    assert ep.memory.weights == pytest.approx(46_702_792_704 * 2 / 2)
    assert ep.gpus == 2 and ep.model.ep == 2 and ep.engine == tp.engine


def test_expert_parallel_on_a_dense_model_names_ep(cat: Catalog) -> None:
    with pytest.raises(InputError, match=r"ep: llama-3\.1-8b is a dense model"):
        replica(cat, "llama-3.1-8b", "h100-sxm", tp=2, ep=2)
    with pytest.raises(InputError, match="ep: 4 does not divide tp 2"):
        estimate(cat, "mixtral-8x7b", "h100-sxm", tp=2, ep=4, qps=1.0, input_len=8,
                 output_len=8)


def test_estimate_reports_ep_and_ep_1_is_unchanged(cat: Catalog) -> None:
    base = _est(cat, model="mixtral-8x7b", tp=2, num_requests=100)
    one = _est(cat, model="mixtral-8x7b", tp=2, num_requests=100, ep=1)
    two = _est(cat, model="mixtral-8x7b", tp=2, num_requests=100, ep=2, ep_comm="alltoall")
    assert base["ep"] == 1 and base["ep_comm"] == "allreduce"
    assert two["ep"] == 2 and two["ep_comm"] == "alltoall"
    for k in ("ttft_p99_s", "tpot_p99_s", "throughput_tokens_per_s"):
        assert one[k] == base[k]
    assert two["memory"] == base["memory"]


def test_plan_screens_expert_parallel_layouts(cat: Catalog) -> None:
    tp2 = replica(cat, "mixtral-8x7b", "h100-sxm", tp=2)
    ep2 = replica(cat, "mixtral-8x7b", "h100-sxm", tp=2, ep=2)
    # 512-token prompts on TP 2 bf16 stream weights (same prefill, same flat-out rate) and EP
    # reads more at batch 1: TP alone survives the screen.
    assert [r.model.ep for r in serve._ep_layouts(tp2, ep2, 512, 64)] == [1]
    # 8192-token prompts on TP 8: EP prefills faster but decodes batch 1 slower: both stay.
    tp8 = replica(cat, "mixtral-8x7b", "h100-sxm", tp=8)
    ep8 = replica(cat, "mixtral-8x7b", "h100-sxm", tp=8, ep=8)
    assert [r.model.ep for r in serve._ep_layouts(tp8, ep8, 8192, 64)] == [1, 8]
    p = plan(cat, "mixtral-8x7b", 5.0, 8192, 64, 5.0, 0.1, gpu="h100-sxm", tps=(8,),
             num_requests=100, workers=1)
    assert sorted(c["ep"] for c in p.candidates) == [1, 8]
    assert p.best is not None and p.best["ep"] in (1, 8)
    assert all("ep" in x for x in p.pareto)
    off = plan(cat, "mixtral-8x7b", 5.0, 8192, 64, 5.0, 0.1, gpu="h100-sxm", tps=(8,),
               num_requests=100, workers=1, expert_parallel=False)
    assert [c["ep"] for c in off.candidates] == [1]


def test_a_plan_on_shared_prefixes_sizes_replicas_on_the_prefix_cache(cat: Catalog) -> None:
    """8,000-token prompts of which 7,000 are one of 20 documents: each replica's prefix
    cache serves most prompt tokens, so a replica carries more load within the SLOs and the
    fleet needs fewer of them; the plan reports the reuse at capacity."""
    kw: dict[str, Any] = {"gpu": "h100-sxm", "tps": (1,), "num_requests": 400, "rel_tol": 0.1,
                          "workers": 1, "precision": "fp8"}
    whole = plan(cat, "llama-3.1-8b", 20.0, 8000, 200, 2.0, 0.05, **kw)
    shared = plan(cat, "llama-3.1-8b", 20.0, 8000, 200, 2.0, 0.05, prefix_len=7000,
                  prefix_groups=20, **kw)
    assert whole.best is not None and shared.best is not None
    assert shared.best["qps_per_replica"] > 2 * whole.best["qps_per_replica"]
    assert shared.best["replicas"] < whole.best["replicas"]
    assert whole.best["prefix_hit_rate"] is None
    assert 0.5 < shared.best["prefix_hit_rate"] < 7000 / 8000


def test_a_request_longer_than_the_context_at_every_tp_blames_the_lengths(cat: Catalog) -> None:
    """The context is the model's whatever the TP: `serve plan` blamed --model."""
    with pytest.raises(InputError) as e:
        plan(cat, "llama-2-70b", 5.0, 4096, 256, 1.0, 0.05, gpu="h100-sxm", num_requests=100)
    assert e.value.field == "request_len" and "exceed the 4096-token context" in str(e.value)
