"""serve plan on catalog engines: the search, its p99 check and what shared prefixes, a KV
host tier, a cache-aware router and a weight offload save (plan/serving_engine_plan.py)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from clusterwright.catalog.registry import Catalog, load_catalog
from clusterwright.errors import InputError
from clusterwright.plan.serving_deployment import Role
from clusterwright.plan.serving_engine import deployment, engine_of, layout
from clusterwright.plan.serving_engine_plan import (
    PlanCandidate,
    measured_lean,
    plan_engine,
    slo_margin,
)
from clusterwright.sim.serving_steady import SteadyState


@pytest.fixture(scope="module")
def cat() -> Catalog:
    return load_catalog()


def test_plan_finds_both_modes_and_a_verdict(cat: Catalog) -> None:
    arch = cat.model("llama-3.1-8b")
    d = plan_engine(cat, arch, cat.gpu("h100-sxm"), engine_of(cat, "vllm"), 20.0, 1024, 256,
                    2.0, 0.05, requests=300)
    assert d["aggregated"] is not None
    c = d["choice"]
    assert c["ttft_p99_s"] <= 2.0 and c["tpot_p99_s"] <= 0.05
    assert c["copies"] * c["requests_per_s_per_copy"] >= 20.0 * 0.999 or c["copies"] > 1
    # The means are one copy's at its capacity (the most clients within the SLOs' means),
    # named as such; the p99s are the simulation's at the target rate
    cap = c["capacity"]
    assert cap["clients"] == c["clients_per_copy"] > 0
    assert cap["requests_per_s"] == c["requests_per_s_per_copy"]
    assert (cap["ttft_mean_s"], cap["tpot_mean_s"]) == (c["ttft_mean_s"], c["tpot_mean_s"])
    assert cap["ttft_mean_s"] <= 2.0 and cap["tpot_mean_s"] <= 0.05
    assert d["verdict"].startswith(("disaggregation pays", "disaggregation does not pay",
                                    "no disaggregated", "only a disaggregated"))
    assert d["disaggregation_pays"] == (
        d["disaggregated"] is not None and (d["aggregated"] is None
                                            or d["disaggregated"]["gpus"]
                                            < d["aggregated"]["gpus"]))
    # The choice's p99s read at the way its regime's measured rows lean (vLLM on H100)
    lean, v = d["measured_lean"], c["validation"]
    assert lean["ttft_ratio"] == pytest.approx(1.0 / (1.0 + v["ttft_median_error"]))
    assert lean["ttft_p99_s"] == pytest.approx(c["ttft_p99_s"] * lean["ttft_ratio"])
    assert lean["tpot_p99_s"] == pytest.approx(c["tpot_p99_s"] * lean["tpot_ratio"])
    assert lean["meets_slo"] == (lean["ttft_p99_s"] <= 2.0 and lean["tpot_p99_s"] <= 0.05)
    # ... and at the ratios one row in ten exceeds, which lie beyond the medians
    tail = lean["p90"]
    assert tail["ttft_ratio"] == pytest.approx(1.0 / (1.0 + v["ttft_error_p10"]))
    assert tail["ttft_ratio"] > lean["ttft_ratio"] and tail["tpot_ratio"] > lean["tpot_ratio"]
    assert tail["ttft_p99_s"] == pytest.approx(c["ttft_p99_s"] * tail["ttft_ratio"])


def test_the_measured_lean_is_none_where_nothing_was_measured(cat: Catalog) -> None:
    """A regime without measured rows (vLLM on MI300X) or without recorded medians (a user
    catalog written before they existed) gives no lean; a TTFT the rows measure 1.5x the
    model's turns a p99 that met the SLO into one that misses it."""
    arch = cat.model("llama-3.1-8b")
    st = SteadyState(0.1, 0.01, 1.0, 1.0, 1.0, "")
    vllm = engine_of(cat, "vllm")
    dep = deployment(cat, arch, cat.gpu("mi300x"), vllm, "fp8", agg=Role(layout(arch), 1))
    assert measured_lean(PlanCandidate(dep, 1.0, st, 1, (0.2, 0.02)), 1.0, 1.0) is None
    dep = deployment(cat, arch, cat.gpu("h100-sxm"), vllm, "fp8", agg=Role(layout(arch), 1))
    regime = [x for x in vllm.validated if x.gpu == "h100-sxm" and x.mode == "agg"]
    leaning = regime[0].model_copy(update={"ttft_median_error": -1.0 / 3.0,
                                           "tpot_median_error": 0.0})
    dep = replace(dep, engine=vllm.model_copy(update={"validated": [leaning]}))
    lean = measured_lean(PlanCandidate(dep, 1.0, st, 1, (0.3, 0.02)), 0.4, 0.05)
    assert lean is not None and lean["ttft_ratio"] == pytest.approx(1.5)
    assert lean["ttft_p99_s"] == pytest.approx(0.45) and not lean["meets_slo"]
    # The median meets the SLO; one row in ten measured 2x the model, and there it misses
    wide = leaning.model_copy(update={"ttft_median_error": 0.0, "ttft_error_p10": -0.5,
                                      "ttft_error_p90": 0.2, "tpot_error_p10": -0.1,
                                      "tpot_error_p90": 0.1})
    dep = replace(dep, engine=vllm.model_copy(update={"validated": [wide]}))
    lean = measured_lean(PlanCandidate(dep, 1.0, st, 1, (0.3, 0.02)), 0.4, 0.05)
    assert lean is not None and lean["meets_slo"]
    assert lean["p90"]["ttft_ratio"] == pytest.approx(2.0)
    assert lean["p90"]["ttft_p99_s"] == pytest.approx(0.6) and not lean["p90"]["meets_slo"]
    bare = wide.model_copy(update={"ttft_error_p10": None, "ttft_error_p90": None})
    dep = replace(dep, engine=vllm.model_copy(update={"validated": [bare]}))
    lean = measured_lean(PlanCandidate(dep, 1.0, st, 1, (0.3, 0.02)), 0.4, 0.05)
    assert lean is not None and "p90" not in lean
    unrecorded = leaning.model_copy(update={"ttft_median_error": None})
    dep = replace(dep, engine=vllm.model_copy(update={"validated": [unrecorded]}))
    assert measured_lean(PlanCandidate(dep, 1.0, st, 1, (0.3, 0.02)), 0.4, 0.05) is None


def test_plan_with_unreachable_slos_is_an_input_error(cat: Catalog) -> None:
    arch = cat.model("llama-3.1-70b")
    with pytest.raises(InputError, match="meets TTFT"):
        plan_engine(cat, arch, cat.gpu("h100-sxm"), engine_of(cat, "vllm"), 5.0, 1024, 256,
                    0.001, 0.001, requests=200)


def test_a_plan_past_the_model_s_context_names_the_lengths(cat: Catalog) -> None:
    """A request longer than the model's context is refused as such, not as SLOs no
    deployment meets."""
    arch = cat.model("llama-3.1-8b")
    with pytest.raises(InputError, match="exceed the 131072-token context") as err:
        plan_engine(cat, arch, cat.gpu("h100-sxm"), engine_of(cat, "vllm"), 5.0,
                    arch.max_seq_len, 1, 2.0, 0.05, requests=200)
    assert err.value.field == "input_len"


def _count_calls(monkeypatch: pytest.MonkeyPatch, name: str = "_max_clients") -> list[int]:
    """A list that grows by one each time the plan calls ``name`` (by default: solves a
    deployment's steady state)."""
    import clusterwright.plan.serving_engine_plan as se

    calls: list[int] = []
    real = getattr(se, name)

    def counting(*args: object, **kwargs: object) -> object:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(se, name, counting)
    return calls


def test_skipping_deployments_that_cannot_win_keeps_the_plan(cat: Catalog,
                                                            monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    """A deployment whose one copy takes more GPUs than its mode's cheapest so far is not
    solved: the plan is the same as solving every one, and fewer are solved."""
    solved = _count_calls(monkeypatch)
    arch = cat.model("llama-3.1-8b")
    args = (cat, arch, cat.gpu("h100-sxm"), engine_of(cat, "vllm"), 20.0, 1024, 256, 2.0,
            0.05)
    pruned = plan_engine(*args, requests=200)
    n_pruned = len(solved)
    solved.clear()
    full = plan_engine(*args, requests=200, prune=False)
    assert pruned == full
    assert len(solved) == full["deployments_evaluated"]
    assert n_pruned < len(solved)


@pytest.mark.slow
def test_splits_whose_prefill_cannot_carry_the_rate_are_not_solved(
        cat: Catalog, monkeypatch: pytest.MonkeyPatch) -> None:
    """A disaggregated split whose copies, at the most prompts a second its prefill workers
    finish, take more GPUs than the cheapest so far is skipped as well (MoE workers over
    two NVLink domains made the search 3x longer): the plan is the one solving every split
    gives, and fewer are solved than with the copy's GPUs alone as the bound."""
    import clusterwright.plan.serving_engine_plan as se

    solved = _count_calls(monkeypatch)
    arch = cat.model("qwen3-235b-a22b")
    args = (cat, arch, cat.gpu("h100-sxm"), engine_of(cat, "sglang"), 20.0, 2000, 500, 2.0,
            0.05, "fp8")
    bounded = plan_engine(*args, requests=200)
    n_bounded = len(solved)
    solved.clear()
    monkeypatch.setattr(se, "_gpus_floor", lambda *a, **k: 0)
    per_copy = plan_engine(*args, requests=200)
    n_per_copy = len(solved)
    solved.clear()
    full = plan_engine(*args, requests=200, prune=False)
    assert bounded == per_copy == full
    assert n_bounded < n_per_copy < len(solved)


def _load_bound_simulation(monkeypatch: pytest.MonkeyPatch, limit: float) -> list[float]:
    """The plan's simulations replaced by one in which a copy meets any SLO at up to
    ``limit`` requests/s and misses every one above it (TTFT p99 an hour); returns the rates
    a copy was simulated at."""
    from types import SimpleNamespace

    import clusterwright.plan.serving_engine_plan as se

    rates: list[float] = []

    def simulated(cat: Catalog, dep: object, w: object, isl: int, osl: int,
                  **kw: object) -> SimpleNamespace:
        rate = float(w.qps)  # type: ignore[attr-defined]
        rates.append(rate)
        ok = rate <= limit
        return SimpleNamespace(ttft_s={"p99": 0.1 if ok else 3600.0},
                               tpot_s={"p99": 0.01 if ok else 1.0}, truncated=not ok,
                               prefix_hit_rate=0.0, host_hit_rate=0.0)

    monkeypatch.setattr(se, "simulate_deployment", simulated)
    return rates


def test_copies_are_added_until_the_simulated_p99s_meet_the_slos(
        cat: Catalog, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the fifth try too (the plan once offered the fifth try's fleet whatever its
    p99s): a copy that carries 1 request/s of the 20 needs 20 copies, which copies added a
    quarter at a time reach in under VERIFY_TRIES tries (1, 2, 3, 4, 5, 7, ..., 24)."""
    rates = _load_bound_simulation(monkeypatch, 1.0)
    arch = cat.model("llama-3.1-8b")
    d = plan_engine(cat, arch, cat.gpu("h100-sxm"), engine_of(cat, "vllm"), 20.0, 1024, 256,
                    2.0, 0.05, requests=100)
    for mode in ("aggregated", "disaggregated"):
        c = d[mode]
        assert c["ttft_p99_s"] <= 2.0 and c["tpot_p99_s"] <= 0.05
        assert 20.0 / c["copies"] <= 1.0 < 20.0 / max(c["copies"] - 1, 1) * 1.25
    assert min(rates) <= 1.0 and len(rates) > 10


def test_a_plan_whose_simulation_never_meets_the_slos_says_so(
        cat: Catalog, monkeypatch: pytest.MonkeyPatch) -> None:
    """No fleet is offered that the plan's own simulation says misses the SLOs: with no
    copy meeting them at any rate tried, the plan exits 2 naming the SLO, and says why."""
    import clusterwright.plan.serving_engine_plan as se

    rates = _load_bound_simulation(monkeypatch, 0.0)
    arch = cat.model("llama-3.1-8b")
    with pytest.raises(InputError, match="in simulation at 20 requests/s") as err:
        plan_engine(cat, arch, cat.gpu("h100-sxm"), engine_of(cat, "vllm"), 20.0, 1024, 256,
                    2.0, 0.05, requests=100)
    assert err.value.field == "ttft_slo"
    assert len(rates) == 2 * se.VERIFY_TRIES  # each mode's cheapest, every try


@pytest.mark.slow
def test_a_prefix_plan_that_overflows_the_cache_offers_a_fleet_that_meets_the_slos(
        cat: Catalog) -> None:
    """200 documents of 7,000 tokens overflow Qwen3-32B's KV cache on H100, so the screen's
    bound (every prefix cached) is far off: one-GPU copies need many more than the screen
    says. The plan used to stop adding copies at the fifth try and offer 7 GPUs whose
    simulated TTFT p99 was 189 s against 3 s; it now offers what meets the SLOs."""
    arch, g, e = cat.model("qwen3-32b"), cat.gpu("h100-sxm"), engine_of(cat, "vllm")
    d = plan_engine(cat, arch, g, e, 10.0, 8000, 200, 3.0, 0.06, "fp8", requests=300,
                    prefix_len=7000, prefix_groups=200)
    for mode in ("choice", "aggregated", "disaggregated"):
        c = d[mode]
        assert c is None or (c["ttft_p99_s"] <= 3.0 and c["tpot_p99_s"] <= 0.06), mode


def test_the_plan_says_whether_the_offload_pays(cat: Catalog) -> None:
    """Llama-3.1-70B in 16 bits (141 GB) leaves a 144 GB GH200 no KV cache: only the offload
    serves it. In FP8 it fits, and streaming a third of it every pass does not pay."""
    arch, g, e = cat.model("llama-3.1-70b"), cat.gpu("gh200"), engine_of(cat, "vllm")
    needed = plan_engine(cat, arch, g, e, 1.0, 1024, 512, 10.0, 0.3, requests=200,
                         cpu_offload_gb=30)
    assert needed["offload"]["pays"] and needed["offload"]["gpus_without"] is None
    assert needed["choice"]["agg"]["offloaded_gib_per_gpu"] == pytest.approx(30.0)
    with pytest.raises(InputError, match="no room for one request's KV cache") as err:
        plan_engine(cat, arch, g, e, 1.0, 1024, 512, 10.0, 0.3, requests=200)
    assert err.value.field == "model"
    costly = plan_engine(cat, arch, g, e, 20.0, 1024, 512, 10.0, 0.3, "fp8", requests=200,
                         cpu_offload_gb=30)
    v = costly["offload"]
    # No fewer GPUs with the offload (as many, with vLLM's stop-53 constants; one more before)
    assert not v["pays"] and v["gpus"] >= v["gpus_without"] and "does not pay" in v["verdict"]


def test_a_plan_with_shared_prefixes_sizes_the_fleet_on_the_prefix_cache(cat: Catalog) -> None:
    """8,000-token prompts of which 7,000 are one of four shared documents: the cache
    reuses most prompt tokens, and the plan serves the load on fewer GPUs than computing
    every prompt whole, which it reports; the choice's simulated p99s (with the cache) meet
    the SLOs."""
    arch, g, e = cat.model("llama-3.1-8b"), cat.gpu("h100-sxm"), engine_of(cat, "vllm")
    args = (cat, arch, g, e, 20.0, 8000, 200, 2.0, 0.05)
    d = plan_engine(*args, requests=300, prefix_len=7000, prefix_groups=4)
    pc = d["prefix_cache"]
    plain = plan_engine(*args, requests=300)
    assert pc["gpus_without_reuse"] == plain["choice"]["gpus"]
    assert pc["gpus"] == d["choice"]["gpus"] < pc["gpus_without_reuse"]
    assert pc["hit_rate"] > 0.7 and pc["host_hit_rate"] == 0.0
    assert d["choice"]["prefix_hit_rate"] == pc["hit_rate"]
    assert d["choice"]["ttft_p99_s"] <= 2.0 and d["choice"]["tpot_p99_s"] <= 0.05
    assert "gpus_without_host_tier" not in pc and "computing every prompt whole" in pc["verdict"]
    # No shared prefix: the plan is the one without the options
    assert plan_engine(*args, requests=300, prefix_len=0) == plain


def test_the_prefix_screen_is_a_bound_below_the_simulation(
        cat: Catalog, monkeypatch: pytest.MonkeyPatch) -> None:
    """The screen solves the steady state on each prompt's own tokens (every prefix cached),
    so a deployment holds at least as many clients there as on whole prompts, and the plan
    simulates its PREFIX_VERIFIED cheapest of each mode with the cache, not one."""
    import clusterwright.plan.serving_engine_plan as se

    arch, g, e = cat.model("llama-3.1-8b"), cat.gpu("h100-sxm"), engine_of(cat, "vllm")
    dep = deployment(cat, arch, g, e, agg=Role(layout(arch)))
    own = se._max_clients(cat, dep, 1000, 200, 2.0, 0.05)
    whole = se._max_clients(cat, dep, 8000, 200, 2.0, 0.05)
    assert own is not None and whole is not None and own[0] >= whole[0]
    verified: list[tuple[int, int]] = []
    real = se._verify_p99

    def counting(*a: object, **k: object) -> PlanCandidate:
        # (cat, candidate, qps, isl, osl, ttft, tpot, requests, seed, prefix, router)
        verified.append(a[9] if len(a) > 9 else (0, 1))  # type: ignore[arg-type]
        return real(*a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(se, "_verify_p99", counting)
    se.plan_engine(cat, arch, g, e, 20.0, 8000, 200, 2.0, 0.05, requests=200,
                   prefix_len=7000, prefix_groups=4)
    with_prefix = [v for v in verified if v == (7000, 4)]
    assert 2 < len(with_prefix) <= 2 * se.PREFIX_VERIFIED


def test_the_plan_says_what_the_kv_host_tier_saves(cat: Catalog) -> None:
    """200 documents of 7,000 tokens (1.4 M tokens, 170 GiB of KV) overflow an H100's HBM: a
    host tier of 100 GiB a GPU serves some prompts from CPU memory, and the plan compares
    the fleet without it."""
    arch, g, e = cat.model("llama-3.1-8b"), cat.gpu("h100-sxm"), engine_of(cat, "vllm")
    d = plan_engine(cat, arch, g, e, 20.0, 8000, 200, 2.0, 0.05, requests=300,
                    prefix_len=7000, prefix_groups=200, kv_offload_gb=100)
    pc = d["prefix_cache"]
    assert pc["host_hit_rate"] > 0.0 and pc["kv_offload_gib_per_gpu"] == 100
    assert pc["gpus_without_host_tier"] is not None
    assert pc["gpus"] <= pc["gpus_without_host_tier"] <= pc["gpus_without_reuse"]
    assert "without the host tier" in pc["verdict"]


@pytest.mark.slow
def test_a_prefix_plan_skips_what_cannot_win_and_keeps_its_choice(
        cat: Catalog, monkeypatch: pytest.MonkeyPatch) -> None:
    """With shared prefixes the screen keeps its cheapest few of each mode: a deployment that
    cannot enter them is not solved, and a verification stops adding copies once they cannot
    beat the one verified before it. The plan, its verdicts included, is the one solving and
    verifying every one gives, with fewer solves and fewer simulations."""
    solved = _count_calls(monkeypatch)
    sims = _count_calls(monkeypatch, "simulate_deployment")
    arch, g, e = cat.model("llama-3.1-8b"), cat.gpu("h100-sxm"), engine_of(cat, "vllm")
    args = (cat, arch, g, e, 20.0, 8000, 200, 2.0, 0.05)
    kw = {"requests": 200, "prefix_len": 7000, "prefix_groups": 40}
    pruned = plan_engine(*args, **kw)  # type: ignore[arg-type]
    n_solved, n_sims = len(solved), len(sims)
    solved.clear()
    sims.clear()
    full = plan_engine(*args, prune=False, **kw)  # type: ignore[arg-type]
    assert pruned == full
    assert n_solved < len(solved) and n_sims < len(sims)


@pytest.mark.parametrize(("kw", "field"), [
    ({"prefix_len": 9000}, "prefix_len"),
    ({"prefix_len": -1}, "prefix_len"),
    ({"prefix_len": 100, "prefix_groups": 0}, "prefix_groups"),
    ({"kv_offload_gb": 10.0}, "kv_offload_gb"),
    ({"prefix_len": 100, "kv_offload_gb": 5000.0}, "kv_offload_gb"),
])
def test_a_plan_s_bad_prefix_names_the_field(cat: Catalog, kw: dict[str, float],
                                            field: str) -> None:
    arch = cat.model("llama-3.1-8b")
    with pytest.raises(InputError) as err:
        plan_engine(cat, arch, cat.gpu("h100-sxm"), engine_of(cat, "vllm"), 1.0, 8000, 200,
                    2.0, 0.05, requests=100, **kw)  # type: ignore[arg-type]
    assert err.value.field == field


def test_a_cache_aware_plan_gives_each_copy_its_share_of_the_prefixes(
        cat: Catalog, monkeypatch: pytest.MonkeyPatch) -> None:
    """Behind the cache-aware router the fleet keeps each document on one copy: a copy is
    simulated with its share of the 200 groups (and its ranks route by prefix), against
    every group behind the least-outstanding router; an unknown router names the field."""
    import clusterwright.plan.serving_engine_plan as se

    groups: list[tuple[str, int]] = []
    real = se.simulate_deployment

    def spy(*a: object, **k: object) -> object:
        groups.append((str(k.get("router")), a[2].prefix_groups))  # type: ignore[attr-defined]
        return real(*a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(se, "simulate_deployment", spy)
    arch, g, e = cat.model("llama-3.1-8b"), cat.gpu("h100-sxm"), engine_of(cat, "vllm")
    d = se.plan_engine(cat, arch, g, e, 20.0, 8000, 200, 2.0, 0.05, requests=300,
                       prefix_len=7000, prefix_groups=200, router="cache_aware")
    assert d["router"] == "cache_aware"
    shared = [n for r, n in groups if r == "cache_aware" and n > 0]
    # ceil(200 / copies): 200 for one copy, 100 for two, 67 for three ...
    shares = {-(-200 // copies) for copies in range(1, 201)}
    assert shared and min(shared) < 200 and set(shared) <= shares
    with pytest.raises(InputError) as err:
        se.plan_engine(cat, arch, g, e, 20.0, 8000, 200, 2.0, 0.05, router="random")
    assert err.value.field == "router"


def test_a_model_one_nvlink_domain_cannot_hold_is_planned_over_several(cat: Catalog) -> None:
    """DeepSeek-R1 in FP8 (671 GB) leaves 8 H100s (640 GB) no room: the plan spreads a worker
    over two HGX nodes, as the measured H100 rows run it (TP 16, or attention DP with EP 16).
    Capped at one domain's 8 GPUs a worker, it is refused, naming the cap."""
    arch, g, e = cat.model("deepseek-r1"), cat.gpu("h100-sxm"), engine_of(cat, "sglang")
    d = plan_engine(cat, arch, g, e, 2.0, 2048, 512, 5.0, 0.1, "fp8", requests=200)
    c = d["choice"]
    roles = [c[k] for k in ("agg", "prefill", "decode") if c.get(k)]
    assert roles and all(r["gpus_per_worker"] >= 16 for r in roles)
    assert c["ttft_p99_s"] <= 5.0 and c["tpot_p99_s"] <= 0.1
    with pytest.raises(InputError, match="up to 8 h100-sxm GPUs a worker") as err:
        plan_engine(cat, arch, g, e, 2.0, 2048, 512, 5.0, 0.1, "fp8", requests=200,
                    max_gpus_per_copy=8)
    assert err.value.field == "model"


def test_a_margin_holds_the_model_s_figures_times_the_measured_lean(cat: Catalog) -> None:
    """``slo_margin``: 1 / (1 + the regime's median error, or its errors' 10th percentile),
    never below 1; (1, 1) with no margin or where nothing was measured; an unknown margin
    is refused naming the field."""
    arch = cat.model("llama-3.1-8b")
    vllm = engine_of(cat, "vllm")
    dep = deployment(cat, arch, cat.gpu("h100-sxm"), vllm, "fp8", agg=Role(layout(arch), 1))
    regime = next(x for x in vllm.validated if x.gpu == "h100-sxm" and x.mode == "agg")
    wide = regime.model_copy(update={"ttft_median_error": -0.2, "tpot_median_error": 0.1,
                                     "ttft_error_p10": -0.5, "ttft_error_p90": 0.2,
                                     "tpot_error_p10": 0.05, "tpot_error_p90": 0.3})
    dep = replace(dep, engine=vllm.model_copy(update={"validated": [wide]}))
    assert slo_margin(dep, "none") == (1.0, 1.0)
    # TTFT measured 1.25x the model at the median; TPOT under it, which does not loosen it
    assert slo_margin(dep, "median") == pytest.approx((1.25, 1.0))
    assert slo_margin(dep, "p90") == pytest.approx((2.0, 1.0))
    bare = wide.model_copy(update={"ttft_error_p10": None, "ttft_error_p90": None})
    dep_bare = replace(dep, engine=vllm.model_copy(update={"validated": [bare]}))
    assert slo_margin(dep_bare, "p90") == pytest.approx((1.0, 1.0))
    other = deployment(cat, arch, cat.gpu("mi300x"), vllm, "fp8", agg=Role(layout(arch), 1))
    assert slo_margin(other, "p90") == (1.0, 1.0)
    with pytest.raises(InputError, match="margin: 'p99' is not one of") as err:
        slo_margin(dep, "p99")
    assert err.value.field == "margin"


def test_a_p90_margin_sizes_the_plan_for_the_measured_rows(cat: Catalog) -> None:
    """Held to the ratios one measured row in ten exceeds, the plan's choice meets the SLOs
    at those ratios, on at least as many GPUs as the plan on the model's figures (Llama-3.1-70B
    FP8 on B200: one GPU on the model's figures, two with the margin)."""
    arch = cat.model("llama-3.1-70b")
    args = (cat, arch, cat.gpu("b200"), engine_of(cat, "vllm"), 4.0, 1024, 512, 0.5, 0.03,
            "fp8")
    plain = plan_engine(*args, requests=300)
    held = plan_engine(*args, requests=300, margin="p90")
    assert plain["margin"] == {"kind": "none", "ttft_ratio": 1.0, "tpot_ratio": 1.0}
    m, c = held["margin"], held["choice"]
    assert m["kind"] == "p90" and m["tpot_ratio"] > 1.0
    assert c["margin_ratios"] == [m["ttft_ratio"], m["tpot_ratio"]]
    assert c["ttft_p99_s"] * m["ttft_ratio"] <= 0.5 and c["tpot_p99_s"] * m["tpot_ratio"] <= 0.03
    assert held["measured_lean"]["p90"]["meets_slo"]
    assert c["gpus"] > plain["choice"]["gpus"]
    with pytest.raises(InputError, match="margin"):
        plan_engine(*args, requests=300, margin="loose")
