"""The layout search: the candidate layouts, the best plan, the GPU-count ladder."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest

from clusterwright.catalog.registry import Catalog
from clusterwright.catalog.schema import ModelArch
from clusterwright.design.train import MICRO_BATCHES, RC_FRACTIONS, job_for, recompute_choices
from clusterwright.model.layouts import Layouts
from clusterwright.model.recompute import FULL
from clusterwright.model.train_job import Job
from clusterwright.model.training import estimate, micro_batches
from clusterwright.plan.layouts import (
    compute_floor_s,
    enumerate_layouts,
    gpu_counts,
    pareto_front,
    plan,
    smallest_for_deadline,
)

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


@pytest.mark.parametrize("gpus", [8, 64, 256])
def test_enumerated_dense_layouts_divide_gpus_heads_and_batch(llama70: Job, gpus: int) -> None:
    lay, _ = enumerate_layouts(llama70, gpus)
    _check_structure(llama70, lay, gpus)


def test_enumerated_moe_layouts_fold_experts_over_tp_dp_cp(mixtral: Job) -> None:
    # Megatron-Core's MoE parallel folding: the expert group spans the attention's TP, CP
    # and DP ranks (expert TP 1), so ep divides tp*dp*cp.
    lay, _ = enumerate_layouts(mixtral, 64)
    _check_structure(mixtral, lay, 64)
    assert set(lay.ep.tolist()) == {1.0, 2.0, 4.0, 8.0}  # every expert split is tried
    assert np.all((lay.tp * lay.dp * lay.cp) % lay.ep == 0)
    assert np.any((lay.dp * lay.cp) % lay.ep != 0)  # folding reaches into TP
    _, small = enumerate_layouts(mixtral, 8)
    assert small.get("ep does not divide tp*dp*cp", 0) > 0


def test_enumerated_tp_divides_kv_heads_of_a_narrow_gqa_model(catalog: Catalog) -> None:
    arch = ModelArch(
        id="gqa-4kv",
        name="GQA with 4 KV heads",
        source="synthetic test shape",
        layers=32,
        hidden=4096,
        heads=32,
        kv_heads=4,
        ffn_hidden=14336,
        vocab=32000,
        max_seq_len=4096,
        activation="swiglu",
        position="rope",
        norm="rmsnorm",
    )
    job = job_for(catalog, arch, "h100-sxm", 4096, 256)
    lay, _ = enumerate_layouts(job, 64)
    assert np.all(arch.n_kv_heads % lay.tp == 0), sorted(set(lay.tp.tolist()))


def test_rejected_layouts_are_counted_by_reason(llama70: Job, gpt3: Job) -> None:
    # 256 GPUs: tp 16, 32 would leave the 8-GPU NVLink domain; batch 96 does not split 64 ways.
    assert enumerate_layouts(gpt3, 256)[1]["tp crosses the NVLink domain"] > 0
    job96 = dataclasses.replace(llama70, global_batch=96)
    _, rejected = enumerate_layouts(job96, 256)
    assert rejected["global batch not divisible by dp"] > 0
    assert rejected["fewer micro-batches than pipeline stages"] > 0
    for reason, count in rejected.items():
        assert isinstance(reason, str) and reason
        assert isinstance(count, int) and count > 0
    # memory is checked by plan and reported alongside
    res = plan(llama70, 8)
    assert res.rejected["does not fit in memory"] > 0


def test_tp_rejections_count_only_factorizations_of_the_gpu_count(gpt3: Job) -> None:
    gpus = 256
    _, rejected = enumerate_layouts(gpt3, gpus)
    # (tp, cp, pp) with tp in 16, 32 (dividing 96 heads) whose product divides 256
    factorizations = sum(
        1
        for t in (16, 32)
        for c in (1, 2, 4, 8, 16, 32, 64)
        for p in (1, 2, 4, 8, 16, 32, 64)
        if gpus % (t * c * p) == 0
    )
    assert 0 < rejected["tp crosses the NVLink domain"] <= factorizations


def _layouts_one_by_one(job: Job, gpus: int) -> np.ndarray:
    """The planner's candidates in its loop order, built one tuple at a time (the reference
    the repeated-block enumeration must reproduce row for row)."""
    a, f = job.arch, job.stack.features
    pow2 = [1 << k for k in range(12)]
    tps = [t for t in pow2 if t <= min(gpus, 64) and a.heads % t == 0 and a.n_kv_heads % t == 0]
    cps = [c for c in pow2 if c <= 64 and (job.seq_len % (2 * c) == 0 or c == 1)]
    cps = cps if f.context_parallel else [1]
    eps = [1] if not a.is_moe else [x for x in pow2 if x <= a.experts and a.experts % x == 0]
    pps = [p for p in range(1, gpus + 1) if gpus % p == 0 and p <= a.layers]
    vs = (1, 2, 3, 4, 6, 8) if f.interleaved else (1,)
    zeros = [0] + ([1, 2] if f.distributed_optimizer else []) + ([3] if f.zero3 else [])
    dom = job.net.domain_gpus
    rows = []
    for t, c, p in itertools.product(tps, cps, pps):
        if gpus % (t * c * p) or t > dom:
            continue
        d = gpus // (t * c * p)
        if job.global_batch % d:
            continue
        shards = [0] + ([dom // t] if f.hsdp and d * c > dom // t > 1 else [])
        for ep in eps:
            if (t * d * c) % ep:
                continue
            for b in MICRO_BATCHES:
                if (job.global_batch // d) % b:
                    continue
                m = job.global_batch // d // b
                for v in vs:
                    if v > 1 and (p == 1 or p * v > a.layers or m % p):
                        continue
                    if p > 1 and m < p:
                        break
                    for z in zeros:
                        if z == 3 and p > 1 and not f.zero3_with_pp:
                            continue
                        for sh in (shards if z == 3 else [0]):
                            for rc in recompute_choices(job):
                                for fr in (RC_FRACTIONS if rc == FULL else (1.0,)):
                                    for sp in (0, 1) if t > 1 else (0,):
                                        rows.append((t, p, d, c, ep, b, v, z, rc, sp, sh, fr))
    return np.array(rows, dtype=float)


@pytest.mark.parametrize(("model", "gpus"), [("llama70", 256), ("mixtral", 64)])
def test_enumeration_matches_the_candidates_one_by_one(request: pytest.FixtureRequest,
                                                        model: str, gpus: int) -> None:
    job = request.getfixturevalue(model)
    lay, _ = enumerate_layouts(job, gpus)
    got = np.column_stack([lay.tp, lay.pp, lay.dp, lay.cp, lay.ep, lay.micro_batch,
                           lay.interleave, lay.zero, lay.recompute, lay.sp, lay.shard,
                           lay.rc_frac])
    want = _layouts_one_by_one(job, gpus)
    assert len(want) > 1000
    assert np.array_equal(got, want)


def test_plan_times_only_fitting_layouts_with_the_same_ranking(llama70: Job) -> None:
    # plan() screens memory before timing; its top must be the full estimate's, tie order kept.
    lay, _ = enumerate_layouts(llama70, 64)
    est = estimate(llama70, lay)
    fits = llama70.fits(est.memory_parts)
    order = np.argsort(np.where(fits, est.step_time_s, np.inf), kind="stable")[:10]
    res = plan(llama70, 64, top_n=10)
    assert [r.step_time_s for r in res.top] == [float(est.step_time_s[i]) for i in order]
    assert [r.layout["tp"] for r in res.top] == [int(lay.tp[i]) for i in order]
    assert [r.memory["total"] for r in res.top] == [float(est.memory_parts["total"][i])
                                                      for i in order]


def test_plan_picks_the_fastest_layout_that_fits(llama70: Job) -> None:
    gpus = 64
    res = plan(llama70, gpus, top_n=5)
    lay, _ = enumerate_layouts(llama70, gpus)
    est = estimate(llama70, lay)
    fits = est.memory_bytes <= llama70.gpu.memory_gb * GB
    assert res.candidates_evaluated == len(lay)
    assert 0 < fits.sum() < len(lay)  # memory actually prunes something here
    assert res.rejected["does not fit in memory"] == int((~fits).sum())
    assert res.best is not None and res.best.fits
    assert res.best.memory["total"] <= llama70.gpu.memory_gb * GB
    assert res.best.gpus == gpus
    assert res.best.step_time_s == pytest.approx(float(est.step_time_s[fits].min()), rel=1e-12)
    # the best is no slower than any layout that fits
    assert np.all(est.step_time_s[fits] >= res.best.step_time_s * (1 - 1e-12))


def test_plan_top_is_sorted_by_step_time_and_all_fit(llama70: Job) -> None:
    res = plan(llama70, 64, top_n=10)
    times = [r.step_time_s for r in res.top]
    assert len(times) == 10
    assert times == sorted(times)
    assert res.top[0] is res.best
    assert all(r.fits for r in res.top)


def test_plan_without_a_fitting_layout_has_no_best(catalog: Catalog) -> None:
    job = job_for(catalog, catalog.model("llama-3.1-405b"), "h100-sxm", 8192, 64)
    res = plan(job, 8)
    assert res.best is None and res.top == []
    assert res.rejected["does not fit in memory"] == res.candidates_evaluated > 0


@pytest.mark.parametrize(("limit", "unit"), [(1000, 8), (131072, 8), (2000, 72), (7, 8)])
def test_gpu_count_ladder_is_ascending_whole_servers(limit: int, unit: int) -> None:
    ladder = gpu_counts(limit, unit)
    if limit < unit:
        assert ladder == []
        return
    assert ladder[0] == unit
    assert all(b > a for a, b in itertools.pairwise(ladder))
    assert all(n % unit == 0 and n <= limit for n in ladder)
    assert all(b <= 2 * a for a, b in itertools.pairwise(ladder))  # no gaps > 2x
    assert ladder[-1] * 2 > limit  # climbs as high as the limit allows


def test_smallest_for_deadline_is_the_first_ladder_count_that_meets_it(llama8: Job) -> None:
    tokens, deadline = 1e12, 10.0
    found = smallest_for_deadline(llama8, tokens, deadline)
    assert found is not None
    s, res = found
    assert res.gpus == s.gpus and res.best is not None
    assert res.best.step_time_s == s.best.step_time_s
    assert s.time_to_train_days is not None and s.time_to_train_days <= deadline
    ladder = gpu_counts(131072, 8)
    assert s.gpus in ladder
    smaller = [n for n in ladder if n < s.gpus]
    assert smaller  # the answer is not trivially the first rung
    for n in smaller:
        best = plan(llama8, n, top_n=1).best
        if best is None:
            continue
        days = tokens / (best.tokens_per_step / best.step_time_s) / 86400
        assert days > deadline, n
    assert s.gpu_hours == pytest.approx(s.time_to_train_days * 24 * s.gpus)


def test_smallest_for_deadline_is_none_when_no_count_is_enough(llama8: Job) -> None:
    assert smallest_for_deadline(llama8, 1e12, 1.0, limit=64) is None


@pytest.mark.parametrize("gpus", [8, 64, 512])
def test_compute_floor_is_below_every_estimate(llama8: Job, gpus: int) -> None:
    # The deadline search skips counts on this floor: it must never exceed what the step
    # model predicts for the best layout, or a count that meets the deadline would be missed.
    res = plan(llama8, gpus)
    assert res.best is not None
    tokens = 1e9
    compute = tokens / (res.best.tokens_per_step / res.best.step_time_s)
    floor = compute_floor_s(llama8, tokens, gpus)
    assert 0.3 * compute < floor < compute


def test_deadline_search_skips_counts_below_the_floor(llama8: Job,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    import clusterwright.plan.layouts as layouts

    planned: list[int] = []
    real = layouts.plan

    def counting(job: Job, gpus: int, top_n: int = 5) -> layouts.PlanResult:
        planned.append(gpus)
        return real(job, gpus, top_n)

    monkeypatch.setattr(layouts, "plan", counting)
    tokens, deadline = 1e12, 10.0
    found = smallest_for_deadline(llama8, tokens, deadline)
    assert found is not None
    floor_days = [compute_floor_s(llama8, tokens, n) / 86400 for n in planned]
    assert all(d <= deadline for d in floor_days)
    skipped = [n for n in gpu_counts(131072, 8) if n < found[0].gpus and n not in planned]
    assert skipped  # the floor spared some plans


def test_pareto_front_trades_more_gpus_for_strictly_less_time(llama8: Job) -> None:
    counts = [8, 16, 32, 40, 48, 64]
    front = pareto_front(llama8, counts, 1e12)
    gpus = [p.gpus for p in front]
    times = [p.best.step_time_s for p in front]
    assert all(b > a for a, b in itertools.pairwise(gpus))
    assert all(b < a for a, b in itertools.pairwise(times))
    # a count is on the front exactly when it beats every smaller count
    best = {n: plan(llama8, n, top_n=1).best for n in counts}
    expected, fastest = [], np.inf
    for n in counts:
        b = best[n]
        if b is not None and b.step_time_s < fastest:
            fastest = b.step_time_s
            expected.append(n)
    assert gpus == expected
    assert len(expected) < len(counts)  # this ladder has a dominated count
    days = [p.time_to_train_days for p in front]
    assert all(d is not None for d in days)
