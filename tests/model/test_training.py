"""Training step-time model: the breakdown, the pipeline schedule and what each knob does."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from clusterwright.catalog.registry import Catalog
from clusterwright.design.train import job_for
from clusterwright.model.flops import training_flops_per_token
from clusterwright.model.layouts import Layouts, stage_layers
from clusterwright.model.memory import training_memory
from clusterwright.model.recompute import parse_recompute
from clusterwright.model.train_job import Job
from clusterwright.model.training import StepEstimate, estimate, memory, micro_batches
from clusterwright.spec.parallel import ParallelConfig
from tests.conftest import gpt

PARTS = (
    "compute_s",
    "tp_comm_s",
    "pp_comm_s",
    "pp_bubble_s",
    "dp_comm_exposed_s",
    "cp_comm_s",
    "ep_comm_s",
    "optimizer_s",
    "straggler_s",
    "link_wait_s",
    "other_s",
)
FIELDS = ("tp", "pp", "dp", "cp", "ep", "micro_batch", "interleave", "zero", "recompute", "sp")
Row = tuple[int, ...]


def _layouts(rows: list[Row]) -> Layouts:
    """Layouts from (tp, pp, dp, cp, ep, micro_batch, interleave, zero, recompute, sp) rows."""
    cols = list(zip(*rows, strict=True))
    return Layouts.of(**{f: np.array(c) for f, c in zip(FIELDS, cols, strict=True)})


def _with(rows: list[Row], field: str, values: tuple[int, ...]) -> list[Row]:
    """Each row repeated once per value of ``field`` (rows stay adjacent)."""
    k = FIELDS.index(field)
    return [(*r[:k], x, *r[k + 1 :]) for r in rows for x in values]


@pytest.fixture(scope="module")
def dense(catalog: Catalog) -> Job:
    return job_for(catalog, catalog.model("llama-3-70b"), "h100-sxm", 4096, 512)


@pytest.fixture(scope="module")
def moe(catalog: Catalog) -> Job:
    return job_for(catalog, catalog.model("mixtral-8x7b"), "h100-sxm", 4096, 512)


@pytest.fixture(scope="module")
def megatron_a100(catalog: Catalog) -> Job:
    # Korthikanti-style GPT 22B on the 2022 stack (no overlap: CP exchanges are exposed).
    return job_for(catalog, gpt(), "a100-80gb-sxm", 2048, 512, "fp16", "fp32", dropout=True)


#         tp pp  dp cp ep mb  v  z rc sp
DENSE = [
    (8, 4, 4, 1, 1, 1, 1, 0, 0, 1),
    (8, 4, 4, 1, 1, 1, 2, 1, 1, 1),
    (8, 4, 4, 1, 1, 1, 4, 1, 2, 1),
    (4, 8, 4, 1, 1, 2, 1, 0, 1, 0),
    (8, 1, 16, 1, 1, 1, 1, 3, 2, 1),
    (8, 2, 4, 2, 1, 1, 1, 1, 1, 1),
    (2, 1, 32, 4, 1, 1, 1, 3, 0, 0),
    (1, 1, 64, 1, 1, 1, 1, 1, 2, 0),
    (16, 2, 4, 1, 1, 1, 2, 1, 1, 1),
]
MOE = [
    (1, 1, 32, 1, 8, 1, 1, 1, 0, 0),
    (2, 2, 8, 1, 8, 1, 2, 1, 1, 1),
    (1, 4, 8, 2, 4, 1, 1, 1, 2, 0),
    (4, 1, 16, 1, 4, 2, 1, 3, 1, 1),
    (1, 1, 64, 1, 2, 1, 1, 0, 0, 0),
    (1, 1, 64, 1, 1, 1, 1, 0, 0, 0),
]
A100 = [
    (8, 1, 1, 1, 1, 4, 1, 0, 2, 0),
    (8, 1, 1, 1, 1, 4, 1, 0, 1, 1),
    (4, 2, 4, 2, 1, 1, 2, 1, 1, 1),
    (8, 4, 2, 4, 1, 1, 3, 0, 0, 1),
    (2, 1, 16, 8, 1, 2, 1, 3, 2, 0),
]


def test_breakdown_sums_to_step_time_for_varied_layouts(
    dense: Job, moe: Job, megatron_a100: Job
) -> None:
    for job, rows in ((dense, DENSE), (moe, MOE), (megatron_a100, A100)):
        est = estimate(job, _layouts(rows))
        assert est.step_time_s.shape == (len(rows),)
        assert np.allclose(est.breakdown_sum(), est.step_time_s, rtol=1e-12, atol=0)
        parts = np.stack([getattr(est, p) for p in PARTS])
        assert np.all(np.isfinite(parts)) and np.all(parts >= 0)
        assert np.all(est.compute_s > 0)
    # the batches exercise every communication term, so the sum is not trivially compute
    moe_est = estimate(moe, _layouts(MOE))
    ep = np.array([r[4] for r in MOE])
    assert np.all(moe_est.ep_comm_s[ep > 1] > 0) and np.all(moe_est.ep_comm_s[ep == 1] == 0)
    a100_est = estimate(megatron_a100, _layouts(A100))
    cp = np.array([r[3] for r in A100])
    # Ring attention hides its KV exchange behind block attention (some of it, always):
    # the traffic is there, what is exposed depends on the block's compute.
    cp_total = a100_est.comm_s["cp"]
    assert np.all(cp_total[cp > 1] > 0) and np.all(cp_total[cp == 1] == 0)
    assert np.all(a100_est.cp_comm_s <= cp_total) and np.any(a100_est.cp_comm_s > 0)
    dense_est = estimate(dense, _layouts(DENSE))
    for part in ("tp_comm_s", "pp_comm_s", "pp_bubble_s", "dp_comm_exposed_s", "optimizer_s"):
        assert np.any(getattr(dense_est, part) > 0), part


def test_pipeline_bubble_is_p_minus_1_over_v_micro_batch_times(dense: Job) -> None:
    rows = [
        (8, p, 4, 1, 1, 1, v, 1, 1, 1)
        for p, v in ((1, 1), (2, 1), (4, 1), (4, 2), (4, 4), (8, 1), (8, 2), (16, 5))
    ]
    lay = _layouts(rows)
    # Without the stack's overlap slowdown the exposed times are the schedule's alone.
    dense = dataclasses.replace(
        dense, stack=dense.stack.model_copy(update={"overlap_slowdown": 0.0}))
    est = estimate(dense, lay)
    m = micro_batches(dense, lay)
    p, v = lay.pp, lay.interleave
    assert np.all(m == 128)
    per_mb_total = est.compute_s + est.tp_comm_s + est.pp_comm_s + est.cp_comm_s + est.ep_comm_s
    # bubble = (p-1)/v micro-batch times, i.e. (p-1)/(v m) of the steady-state pipeline time
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = est.pp_bubble_s / per_mb_total
    expected = (p - 1) / (v * m)
    assert np.allclose(ratio, expected, rtol=1e-12)
    assert est.pp_bubble_s[p == 1] == pytest.approx(0.0)
    pipelined = p > 1
    assert np.all(est.pp_bubble_s[pipelined] > 0)
    # and at least (p-1)/(v m) of the compute alone
    assert np.all(est.pp_bubble_s >= expected * est.compute_s * (1 - 1e-12))
    # interleaving shrinks the bubble and multiplies p2p traffic by v; with overlapped p2p
    # (this stack) only the warm-up's (p-1)/(v m) share of it stays exposed
    i1, i2, i4 = 2, 3, 4  # pp=4 with v = 1, 2, 4
    assert est.pp_bubble_s[i4] < est.pp_bubble_s[i2] < est.pp_bubble_s[i1]
    pp_total = est.comm_s["pp"]
    assert pp_total[i2] / pp_total[i1] == pytest.approx(2.0, rel=1e-9)
    assert dense.opts.p2p_overlap
    share = np.minimum(1.0, (p - 1) / (v * m))
    assert np.allclose(est.pp_comm_s, pp_total * share, rtol=1e-12)
    assert est.pp_comm_s[0] == 0.0 and pp_total[0] == 0.0


def test_full_recompute_is_slower_than_selective_which_is_no_faster_than_none(
    dense: Job, moe: Job, megatron_a100: Job
) -> None:
    for job, rows in ((dense, DENSE), (moe, MOE), (megatron_a100, A100)):
        est = estimate(job, _layouts(_with(rows, "recompute", (0, 1, 2))))
        step = est.step_time_s.reshape(-1, 3)
        mem = est.memory_bytes.reshape(-1, 3)
        hw = est.hardware_flops.reshape(-1, 3)
        wait = est.link_wait_s.reshape(-1, 3)
        # full re-runs more work; it shows unless the step already waits for a link
        assert np.all(step[:, 2] >= step[:, 1])
        assert np.all((step[:, 2] > step[:, 1]) | (wait[:, 2] > 0))
        assert np.all(step[:, 1] >= step[:, 0])
        assert np.all(hw[:, 2] > hw[:, 1]) and np.all(hw[:, 1] >= hw[:, 0])
        # what recomputation buys: memory
        assert np.all(mem[:, 2] < mem[:, 1]) and np.all(mem[:, 1] <= mem[:, 0])


def test_sequence_parallelism_keeps_comm_volume_and_saves_memory(
    dense: Job, moe: Job, megatron_a100: Job
) -> None:
    for job, rows in ((dense, DENSE), (moe, MOE), (megatron_a100, A100)):
        tp_rows = [r for r in rows if r[0] > 1]
        est = estimate(job, _layouts(_with(tp_rows, "sp", (0, 1))))
        off, on = slice(0, None, 2), slice(1, None, 2)
        # Same bytes (a reduce-scatter and an all-gather for each all-reduce); the time
        # differs by algorithm only (NVLS serves all-reduces, rings the other two).
        total = est.comm_s["tp"]
        net = job.net
        # (plus one more call's latency per pair: small messages pay it twice)
        ceiling = max(1.0, net.nvls_busbw / net.scale_up_busbw) * 1.5
        assert np.all((total[on] / total[off] > 0.9) & (total[on] / total[off] < ceiling))
        assert np.all(est.step_time_s[on] <= est.step_time_s[off] * 1.05)
        assert np.all(est.memory_bytes[on] < est.memory_bytes[off])
        if job.opts.tp_overlap:
            # TE's userbuffer overlap needs sequence parallelism: it hides TP traffic.
            inside = np.array([r[0] <= job.net.domain_gpus for r in tp_rows])
            hid, bare = est.tp_comm_s[on][inside], est.tp_comm_s[off][inside]
            # (what stays exposed includes the stack's overlap slowdown on the hidden part)
            assert np.all(hid < bare) and hid.sum() < 0.7 * bare.sum()


def test_tensor_parallelism_beyond_the_nvlink_domain_makes_tp_comm_much_slower(
    dense: Job,
) -> None:
    assert dense.net.domain_gpus == 8
    lay = _layouts([(8, 4, 4, 1, 1, 1, 1, 1, 1, 1), (16, 4, 4, 1, 1, 1, 1, 1, 1, 1)])
    est = estimate(dense, lay)
    # twice the GPUs per layer halve the compute, yet TP communication grows
    assert est.compute_s[1] < 0.6 * est.compute_s[0]
    assert est.tp_comm_s[1] > 1.5 * est.tp_comm_s[0]
    # TE's overlap works over CUDA IPC inside the domain only: across it, all exposed.
    assert est.tp_comm_s[1] == pytest.approx(est.comm_s["tp"][1], rel=1e-12)
    assert est.tp_comm_s[0] < 0.5 * est.comm_s["tp"][0]
    share = est.tp_comm_s / est.step_time_s
    assert share[1] > 2.5 * share[0]
    # The same tp=16 inside a (hypothetical) 16-GPU NVLink domain is much cheaper.
    wide = dataclasses.replace(dense, net=dataclasses.replace(dense.net, domain_gpus=16))
    in_domain = estimate(wide, lay)
    assert est.tp_comm_s[1] > 1.5 * in_domain.tp_comm_s[1]
    assert in_domain.tp_comm_s[0] == pytest.approx(est.tp_comm_s[0], rel=1e-12)


def test_zero1_shards_optimizer_state_without_changing_compute(dense: Job, moe: Job) -> None:
    for job, rows in ((dense, DENSE), (moe, MOE)):
        rows = [r for r in rows if r[7] < 3]
        est = estimate(job, _layouts(_with(rows, "zero", (0, 1))))
        z0, z1 = slice(0, None, 2), slice(1, None, 2)
        assert np.array_equal(est.compute_s[z0], est.compute_s[z1])
        dp_cp = np.array([r[2] * r[3] for r in rows], dtype=float)
        assert np.all(dp_cp > 1)
        assert np.all(est.memory_bytes[z1] < est.memory_bytes[z0])
        if not job.arch.is_moe:
            opt = est.memory_parts["optimizer"]
            assert np.allclose(opt[z0] / opt[z1], dp_cp, rtol=1e-12)
    # nothing to shard over with a single data-parallel rank
    single = estimate(dense, _layouts([(8, 8, 1, 1, 1, 1, 1, z, 1, 1) for z in (0, 1)]))
    assert single.memory_bytes[0] == pytest.approx(single.memory_bytes[1])


def test_fp8_is_faster_than_bf16_on_h100_for_a_large_model(catalog: Catalog, dense: Job) -> None:
    fp8 = job_for(catalog, dense.arch, "h100-sxm", dense.seq_len, dense.global_batch, "fp8")
    lay = _layouts(DENSE)
    e8, e16 = estimate(fp8, lay), estimate(dense, lay)
    # FP8 speeds up the GEMMs only (attention, norms and the casts stay): compute gains less
    # where a wide TP shrinks the GEMMs (tp 16 here).
    assert np.all(e8.compute_s < 0.9 * e16.compute_s)
    # (a layout bound by ZeRO-3 gathers gains nothing: within the prefetch ramp's noise)
    assert np.all(e8.step_time_s <= e16.step_time_s * 1.01)
    # ZeRO-3 layouts here are bound by weight gathers, which fp8 GEMMs do not shorten
    in_domain = (lay.zero < 3) & (lay.tp <= 8)
    assert np.all(e8.compute_s[in_domain] < 0.85 * e16.compute_s[in_domain])
    assert np.all(e8.step_time_s[in_domain] < 0.9 * e16.step_time_s[in_domain])
    assert np.array_equal(e8.model_flops, e16.model_flops)


def _assert_same(a: StepEstimate, b: StepEstimate, i: int) -> None:
    for f in dataclasses.fields(StepEstimate):
        if f.name in ("memory_parts", "comm_s"):
            for k, v in getattr(a, f.name).items():
                assert v[i] == pytest.approx(getattr(b, f.name)[k][0], rel=1e-12), k
        else:
            assert getattr(a, f.name)[i] == pytest.approx(getattr(b, f.name)[0], rel=1e-12), f.name


def test_layouts_are_evaluated_independently(dense: Job, moe: Job) -> None:
    for job, rows in ((dense, DENSE), (moe, MOE)):
        lay = _layouts(rows)
        batch = estimate(job, lay)
        for i in range(len(lay)):
            _assert_same(batch, estimate(job, lay.take([i])), i)
            _assert_same(batch, estimate(job, _layouts([rows[i]])), i)
        rev = estimate(job, lay.take(np.arange(len(lay))[::-1]))
        assert np.array_equal(rev.step_time_s[::-1], batch.step_time_s)


def test_micro_batches_is_zero_when_the_batch_does_not_divide(catalog: Catalog) -> None:
    job = job_for(catalog, gpt(), "a100-80gb-sxm", 2048, 100, "fp16")
    lay = Layouts.of(dp=[8, 4, 4, 4, 200, 1], micro_batch=[1, 3, 5, 1, 1, 100])
    assert micro_batches(job, lay).tolist() == [0.0, 0.0, 5.0, 25.0, 0.0, 1.0]


def test_uneven_stages_put_ceil_layers_on_the_busiest_rank() -> None:
    assert float(stage_layers(126, np.asarray(16.0), np.asarray(1.0))) == 8
    assert float(stage_layers(80, np.asarray(4.0), np.asarray(1.0))) == 20
    cases = [(126, 16, 2), (126, 8, 3), (80, 4, 6), (96, 8, 4), (105, 35, 3), (32, 3, 2)]
    L = np.array([c[0] for c in cases], dtype=float)
    p = np.array([c[1] for c in cases], dtype=float)
    v = np.array([c[2] for c in cases], dtype=float)
    got = stage_layers(L, p, v)
    want = [math.ceil(layers / (pp * vv)) * vv for layers, pp, vv in cases]
    assert got.tolist() == want
    assert np.all(got >= L / p)  # never fewer than an even split


@pytest.mark.parametrize(
    ("model", "par"),
    [
        ("llama-3-8b", {"tp": 1, "dp": 8}),
        (
            "llama-3-8b",
            {
                "tp": 2,
                "dp": 4,
                "zero_stage": 1,
                "micro_batch": 2,
                "recompute": "selective",
                "sequence_parallel": True,
            },
        ),
        (
            "llama-3-70b",
            {"tp": 8, "dp": 16, "zero_stage": 3, "recompute": "full", "sequence_parallel": True},
        ),
        ("llama-3-70b", {"tp": 8, "dp": 16, "cp": 2, "zero_stage": 1, "recompute": "selective"}),
    ],
)
def test_memory_agrees_with_training_memory_without_pipelining(
    catalog: Catalog, model: str, par: dict[str, object]
) -> None:
    arch = catalog.model(model)
    pc = ParallelConfig(global_batch=256, **par)  # type: ignore[arg-type]
    job = job_for(catalog, arch, "h100-sxm", 4096, 256)
    lay = Layouts.of(
        tp=pc.tp,
        dp=pc.dp,
        cp=pc.cp,
        zero=pc.zero_stage,
        micro_batch=pc.micro_batch,
        recompute=parse_recompute(pc.recompute),
        sp=pc.sequence_parallel,
    )
    ours = memory(job, lay)
    ref = training_memory(
        arch,
        pc,
        job.seq_len,
        "bf16",
        "bf16",
        "adam",
        job.stack.flash_attention,
        job.dropout,
        job.reserve_bytes,
    )
    assert float(ours["total"][0]) == pytest.approx(ref.total, rel=0.01)
    assert float(ours["activations"][0]) == pytest.approx(ref.activations, rel=0.01)
    assert float(ours["weights"][0] + ours["gradients"][0] + ours["optimizer"][0]) == (
        pytest.approx(ref.states, rel=0.01)
    )
    assert float(estimate(job, lay).memory_bytes[0]) == pytest.approx(ref.total, rel=0.01)


def test_model_flops_are_tokens_times_flops_per_token(
    dense: Job, moe: Job, megatron_a100: Job
) -> None:
    for job, rows in ((dense, DENSE), (moe, MOE), (megatron_a100, A100)):
        est = estimate(job, _layouts(rows))
        tokens = job.global_batch * job.seq_len
        per_token = float(training_flops_per_token(job.arch, job.seq_len))
        assert np.allclose(est.model_flops, tokens * per_token, rtol=1e-12)
        assert np.all(est.hardware_flops >= est.model_flops)


def test_node_limited_routing_reaches_few_remote_domains(catalog: Catalog) -> None:
    from clusterwright.model.training import _remote_domains
    from clusterwright.model.xp import ScalarOps

    dsv3 = catalog.model("deepseek-v3")  # 8 groups of 32 experts, 4 groups per token
    reach = _remote_domains(dsv3, ScalarOps)
    assert reach is not None
    # One group per domain (EP 64 on 8 servers): exactly 4 domains, 3.5 of them remote.
    assert reach(8.0) == pytest.approx(3.5)
    # Two groups per domain (EP 32 on 4 servers): 4 (1 - C(6,4)/C(8,4)) = 3.14 domains hit.
    assert reach(4.0) == pytest.approx(4 * (1 - 15 / 70) * 3 / 4)
    # Groups wider than a domain: capped by the chosen groups' span.
    assert reach(16.0) <= 4 * 16 / 8
    assert _remote_domains(catalog.model("mixtral-8x7b"), ScalarOps) is None


def test_group_limited_routing_cuts_the_deepep_dispatch_of_deepseek_v3(catalog: Catalog) -> None:
    arch = catalog.model("deepseek-v3")
    lay = Layouts.of(tp=1, pp=8, dp=128, ep=64, micro_batch=1, interleave=1, zero=1,
                     recompute=2, sp=0)
    plain = job_for(catalog, arch, "h100-sxm", 4096, 1024, "fp8",
                    options={"ep_dispatcher": "alltoall"})
    dedup = job_for(catalog, arch, "h100-sxm", 4096, 1024, "fp8",
                    options={"ep_dispatcher": "deepep"})
    a, b = estimate(plain, lay), estimate(dedup, lay)
    assert float(b.comm_s["ep"][0]) < 0.6 * float(a.comm_s["ep"][0])
    assert float(b.compute_s[0]) == pytest.approx(float(a.compute_s[0]), rel=1e-12)


def test_no_family_moves_more_traffic_than_the_step_has_time_for(catalog: Catalog) -> None:
    """Hidden or not, a family's transfers all cross one link (NVLink or the NIC), so the
    step is never shorter than any family's total; where hidden families together exceed a
    link, the step waits for it (link_wait_s)."""
    from clusterwright.plan.layouts import enumerate_layouts

    cases = [("llama-3-70b", 1024, 4096, 256, {}),
             ("mixtral-8x22b", 256, 4096, 512, {"ep_overlap": "1f1b"})]
    for model, gpus, seq, gb, opts in cases:
        job = job_for(catalog, catalog.model(model), "h100-sxm", seq, gb, options=opts)
        lay, _ = enumerate_layouts(job, gpus)
        est = estimate(job, lay)
        for fam, total in est.comm_s.items():
            assert np.all(est.step_time_s >= total * (1 - 1e-12)), fam
        waits = est.link_wait_s > 0
        assert waits.any() and not waits.all()
        assert np.all(est.link_wait_s >= 0)


def test_fp8_gemm_speedup_scales_only_the_fp8_linear_gemms(catalog: Catalog) -> None:
    """A GPU's measured sustained FP8 GEMM factor divides the FP8 linear layers' GEMM time;
    attention, casts and elementwise work keep their rates, and a BF16 job ignores it."""
    from clusterwright.catalog.stacks import Stack
    from clusterwright.model.train_compute import compute_job, layer_times
    from clusterwright.model.xp import ScalarOps

    stack: Stack = catalog.stack("megatron-core-blackwell-2025")
    arch = gpt(32, 4096, 32)

    def times(fp8: bool, x: float):  # type: ignore[no-untyped-def]
        cj = compute_job(arch, 4096, stack, 5e15 if fp8 else 2.5e15, 2.5e15, 8e12, fp8,
                         "current" if fp8 else "delayed", False, 1.0, fp8_gemm_speedup=x,
                         flash=stack.flash_attention)
        return layer_times(ScalarOps, cj, 8192.0, 1.0, 1.0, 0.0, 0.0, 8.0, False)

    base, fast = times(True, 1.0), times(True, 1.25)
    assert fast.attn_f == base.attn_f and fast.attn_b == base.attn_b
    assert all(f == pytest.approx(b / 1.25) for f, b in zip(fast.gemm_tp_f, base.gemm_tp_f,
                                                                 strict=True))
    assert fast.fwd < base.fwd
    b16, b16x = times(False, 1.0), times(False, 1.25)
    assert b16x.fwd == b16.fwd and b16x.bwd == b16.bwd


def test_moe_layer_floor_grows_with_the_experts_each_gpu_holds(catalog: Catalog) -> None:
    # Short sequences on a fast GPU: every MoE layer pass is host-bound, so the step's compute
    # is the floor. With only the per-expert part, it scales with E / ep: eight times the
    # experts per GPU, eight times the floor.
    base = job_for(catalog, catalog.model("qwen3-30b-a3b"), "h100-sxm", 256, 64,
                   stack_id="megatron-core-h100-2025")
    per_expert = 1e-3
    job = dataclasses.replace(base, stack=base.stack.model_copy(update={
        "layer_launch_s": 0.0, "moe_layer_launch_s": 0.0, "moe_expert_launch_s": per_expert}))
    bare = dataclasses.replace(base, stack=base.stack.model_copy(update={
        "layer_launch_s": 0.0, "moe_layer_launch_s": 0.0, "moe_expert_launch_s": 0.0}))
    #        tp pp dp cp ep mb  v  z rc sp
    rows = [(1, 1, 8, 1, 1, 1, 1, 1, 0, 0), (1, 1, 8, 1, 8, 1, 1, 1, 0, 0)]
    lay = _layouts(rows)
    floored, free = estimate(job, lay), estimate(bare, lay)
    m = micro_batches(job, lay)
    moe_layers = float(base.arch.layers - base.arch.dense_layers)
    for i, ep in enumerate((1, 8)):
        local = base.arch.experts / ep
        # forward at the floor, backward at twice it, every micro-batch and MoE layer
        floor_s = 3.0 * per_expert * local * moe_layers * float(m[i])
        assert floored.compute_s[i] >= floor_s * (1 - 1e-9)
        assert floored.compute_s[i] <= floor_s + free.compute_s[i]
    assert floored.compute_s[0] > 4.0 * floored.compute_s[1]


def test_fewer_ffn_blocks_than_mixers_shorten_the_layers(catalog: Catalog) -> None:
    """Nemotron-H-56B has 64 mixers but 54 FFN blocks: its step is shorter than the same
    shape with an FFN after every mixer, by less than the 10 missing FFNs' share."""
    arch = catalog.model("nemotron-h-56b")
    every = arch.model_copy(update={"ffn_layers": None})
    lay = _layouts([(8, 1, 8, 1, 1, 1, 1, 1, 0, 1)])
    t54 = float(estimate(job_for(catalog, arch, "h100-sxm", 8192, 256), lay).compute_s[0])
    t64 = float(estimate(job_for(catalog, every, "h100-sxm", 8192, 256), lay).compute_s[0])
    assert 0.8 * t64 < t54 < 0.97 * t64


def test_interleaving_hides_the_later_chunks_parameter_gathers(dense: Job) -> None:
    # Megatron-Core gathers chunk k+1's parameters while chunk k runs its first p forwards
    # (schedules.py, param_sync_func); only the first chunk's gather waits bucket by bucket.
    # Llama 3 70B, tp 4 x pp 8 x dp 16, 8 micro-batches a step: chunks of 2 layers (v 5).
    def lay(v: int, z: int = 1) -> Layouts:
        return _layouts([(4, 8, 16, 1, 1, 1, v, z, 0, 1)])

    serial = dataclasses.replace(dense.opts, grad_overlap=False, grad_reduce="allreduce")
    on = dataclasses.replace(dense, opts=serial)
    off = dataclasses.replace(dense, opts=dataclasses.replace(serial, param_overlap=False))
    # the all-gather of the updated parameters: ZeRO-1's DP traffic beyond ZeRO-0's all-reduce
    gather = float(estimate(on, lay(5)).comm_s["dp"][0] - estimate(on, lay(5, 0)).comm_s["dp"][0])
    assert gather > 0.0

    def hidden(v: int) -> float:
        return float(estimate(off, lay(v)).dp_comm_exposed_s[0]
                     - estimate(on, lay(v)).dp_comm_exposed_s[0])

    # one chunk: only the first forward of the step hides the gather
    one = estimate(on, lay(1))
    assert hidden(1) <= float(one.compute_s[0]) / 8 + 1e-9
    # five chunks: the four later chunks' gathers hide behind the chunk before them (less
    # the stack's overlap_slowdown, 0.15 of the time hidden)
    assert hidden(5) >= 0.6 * gather
    assert hidden(5) > hidden(1)


def test_zero_gradients_all_reduced_cost_twice_the_reduce_scatter_and_show_unoverlapped(
        dense: Job) -> None:
    # DeepSpeed ZeRO-1/2 with "reduce_scatter": false all-reduces each bucket and keeps its
    # shard: twice the bytes of a reduce-scatter; with overlap_comm off (its default below
    # stage 3) the whole reduction and the parameter all-gather sit after the last backward.
    lay = _layouts([(8, 1, 8, 1, 1, 1, 1, z, 1, 1) for z in (0, 1, 2)])
    rs = estimate(dense, lay)
    ar = estimate(dataclasses.replace(
        dense, opts=dataclasses.replace(dense.opts, grad_reduce="allreduce")), lay)
    all_reduce = rs.comm_s["dp"][0]  # ZeRO-0 all-reduces the gradients either way
    assert ar.comm_s["dp"][0] == pytest.approx(all_reduce, rel=1e-12)
    # ZeRO-1/2 all-reducing: the same all-reduce, plus the updated parameters' all-gather
    gather = ar.comm_s["dp"][1:] - all_reduce
    assert np.all(gather > 0.0)
    # reduce-scattering instead: about half the all-reduce (the same bytes once, not twice)
    reduce_scatter = rs.comm_s["dp"][1:] - gather
    assert np.allclose(reduce_scatter / all_reduce, 0.5, rtol=0.1)
    exposed = estimate(dataclasses.replace(
        dense, opts=dataclasses.replace(dense.opts, grad_overlap=False, param_overlap=False,
                                        grad_reduce="allreduce")), lay)
    assert np.allclose(exposed.dp_comm_exposed_s, exposed.comm_s["dp"], rtol=1e-12)
    assert np.all(exposed.dp_comm_exposed_s > ar.dp_comm_exposed_s)
    assert np.all(exposed.step_time_s > ar.step_time_s)


def test_unfused_attention_moves_the_scores_through_hbm_and_keeps_them(dense: Job) -> None:
    # Eager attention (no fused kernel): the s x s scores and probabilities are written,
    # read back and stored for backward, unless the attention core is recomputed.
    lay = _layouts([(8, 1, 8, 1, 1, 1, 1, 1, rc, 1) for rc in (0, 1)])
    fused = estimate(dense, lay)
    eager = estimate(dataclasses.replace(
        dense, opts=dataclasses.replace(dense.opts, flash_attention=False)), lay)
    assert np.all(eager.compute_s > fused.compute_s)
    grown = eager.memory_parts["activations"] - fused.memory_parts["activations"]
    assert grown[0] > 0.0
    assert grown[1] < 0.1 * grown[0]  # selective recompute drops the stored scores


def test_latent_moe_shrinks_expert_compute_and_dispatch(catalog: Catalog) -> None:
    """Nemotron 3 Super's experts run in a 1,024-wide latent: at the same layout its step
    computes and dispatches less than the same shape with experts at the hidden width."""
    arch = catalog.model("nemotron-3-super-120b-a12b")
    wide = arch.model_copy(update={"moe_latent": None})
    lay = _layouts([(1, 1, 8, 1, 8, 1, 1, 1, 0, 0)])
    lat = estimate(job_for(catalog, arch, "h100-sxm", 4096, 64), lay)
    full = estimate(job_for(catalog, wide, "h100-sxm", 4096, 64), lay)
    assert float(lat.compute_s[0]) < float(full.compute_s[0])
    assert 0 < float(lat.ep_comm_s[0]) < float(full.ep_comm_s[0])


def test_matrix_rate_slows_matrix_work_not_hbm_bound_work(catalog: Catalog) -> None:
    """MI300X's power-limited matrix rate (0.852 of MI325X's, the same die at 750 W against
    1,000 W) slows every GEMM and attention kernel of a step by 1 / 0.852, and the step by
    less: its FP8 casts and elementwise work run at HBM speed, which the power limit does not
    touch. FP8 and BF16 alike."""
    mi300x = catalog.gpu("mi300x")
    assert mi300x.matrix_rate == pytest.approx(668.4 / 784.9, abs=1e-3)
    assert catalog.gpu("mi325x").matrix_rate == 1.0
    lay = _layouts([(1, 1, 8, 1, 1, 1, 1, 1, 0, 0)])
    for precision in ("bf16", "fp8"):
        job = job_for(catalog, catalog.model("llama-3.1-8b"), "mi300x", 8192, 64, precision)
        free = dataclasses.replace(job, gpu=mi300x.model_copy(update={"matrix_rate": 1.0}))
        slow, fast = (float(estimate(j, lay).compute_s[0]) for j in (job, free))
        assert fast * 1.05 < slow < fast / 0.852, precision
        assert job.peak_flops == pytest.approx(free.peak_flops * 0.852)


def test_a_synchronous_zero3_fetch_costs_time_per_layer_and_pass(catalog: Catalog) -> None:
    """A stack whose ZeRO-3 fetch stalls the host (DeepSpeed's, gaudi-2024: 11 ms) adds it per
    layer and pass to every micro-batch of a sharded run: forward and backward, and the
    recompute's forward under full recompute; ZeRO-1 runs and unsharded ones pay nothing."""
    base = job_for(catalog, catalog.model("llama-2-7b"), "gaudi3", 1024, 64)
    assert base.stack.id == "gaudi-2024" and base.stack.features.zero3_fetch_s == 0.011
    free = dataclasses.replace(base, stack=base.stack.model_copy(update={
        "features": base.stack.features.model_copy(update={"zero3_fetch_s": 0.0})}))
    #        tp pp dp cp ep mb  v  z rc sp
    rows = [(1, 1, 8, 1, 1, 1, 1, 3, 0, 0), (1, 1, 8, 1, 1, 1, 1, 3, 2, 0),
            (1, 1, 8, 1, 1, 1, 1, 1, 0, 0)]
    lay = _layouts(rows)
    slow, fast = estimate(base, lay), estimate(free, lay)
    m = micro_batches(base, lay)
    layers = float(base.arch.layers)
    for i, passes in enumerate((2.0, 3.0, 0.0)):
        extra = float(slow.dp_comm_exposed_s[i] - fast.dp_comm_exposed_s[i])
        assert extra == pytest.approx(0.011 * layers * passes * float(m[i]), rel=1e-6), i
