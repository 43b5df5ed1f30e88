"""``serve plan --engine``: the cheapest aggregated and disaggregated deployments of a model
on a catalog serving engine that serve a request rate within p99 TTFT and TPOT SLOs, and
whether disaggregation pays (``plan/serving_engine`` builds, estimates and simulates one
deployment).

Layouts and prefill/decode splits are screened on the closed loop's steady state (the model
``validate --table serving-silicon`` checks); the cheapest of each mode are simulated at
their share of the rate and given copies until their p99s meet the SLOs. Shared prefixes
(a prefix cache, its host tier, a cache-aware router) are screened on a bound and decided
by the simulation.

Units: seconds, tokens, requests per second.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from clusterwright.catalog.registry import Catalog
from clusterwright.catalog.schema import Gpu, ModelArch
from clusterwright.catalog.stacks import ServingEngine
from clusterwright.errors import InputError
from clusterwright.model.serving_step import ServingParallel
from clusterwright.plan.serving_deployment import (
    Deployment,
    DeploymentError,
    PoolCache,
    Role,
    pool,
    steady,
    step_model,
)
from clusterwright.plan.serving_engine import (
    deployment,
    layout,
    roles_view,
    router_config,
    simulate_deployment,
    validation_regime,
)
from clusterwright.plan.serving_replica import workload
from clusterwright.sim.serving_steady import SteadyState, prefill_rate_max

# Deployments of each mode a plan with shared prefixes simulates: the screen's cheapest, whose
# order is a bound's (every prefix cached), not the simulation's
PREFIX_VERIFIED = 3
# Simulations a verified deployment gets while copies are added (each try adds a quarter, at
# least one: 1 copy grows to 30 in twelve tries)
VERIFY_TRIES = 12
# Requests a verifying simulation with shared prefixes runs: ten a group, so that each
# group's first (cold) prompt weighs little, within these bounds
PREFIX_REQUESTS_PER_GROUP = 10
PREFIX_REQUESTS_MAX = 20_000


@dataclass(frozen=True)
class PlanCandidate:
    dep: Deployment
    clients: float  # per deployment, the most that keep the SLOs
    state: SteadyState
    copies: int  # deployments to serve the target rate
    p99: tuple[float, float] | None = None  # simulated (TTFT, TPOT) p99 at the target rate
    isl: int | None = None  # prompt tokens planned for (whether the regime measured them)
    # Shared prefixes: the verifying simulation's share of prompt tokens reused, and of
    # them loaded from the host tier (None without shared prefixes)
    reuse: tuple[float, float] | None = None
    # measured / model ratios (TTFT, TPOT) the SLOs were held to with a margin (slo_margin):
    # the candidate's p99s x these within the SLOs; (1, 1) without one
    scale: tuple[float, float] = (1.0, 1.0)

    @property
    def gpus(self) -> int:
        return (self.dep.gpus() or 0) * self.copies

    def as_dict(self) -> dict[str, Any]:
        return {**roles_view(self.dep), "gpus_per_copy": self.dep.gpus(), "copies": self.copies,
                "gpus": self.gpus, "clients_per_copy": self.clients,
                "requests_per_s_per_copy": self.state.requests_per_s,
                # One copy's steady state at its capacity (clients_per_copy), not at the
                # target rate, where the p99s below were simulated: so the mean can exceed
                # the p99. Kept under their first names for readers of earlier output;
                # ``capacity`` says what they are.
                "ttft_mean_s": self.state.ttft_s, "tpot_mean_s": self.state.tpot_s,
                "capacity": {"clients": self.clients,
                             "requests_per_s": self.state.requests_per_s,
                             "ttft_mean_s": self.state.ttft_s,
                             "tpot_mean_s": self.state.tpot_s},
                "ttft_p99_s": self.p99[0] if self.p99 else None,
                "tpot_p99_s": self.p99[1] if self.p99 else None,
                **({"prefix_hit_rate": self.reuse[0], "host_hit_rate": self.reuse[1]}
                   if self.reuse is not None else {}),
                "validation": validation_regime(self.dep, self.isl),
                "margin_ratios": list(self.scale),
                "notes": list(self.dep.notes)}


def measured_lean(c: PlanCandidate, ttft_slo: float, tpot_slo: float) -> dict[str, Any] | None:
    """How the chosen deployment's p99s would read at the way its regime's measured rows
    lean: each p99 x measured / model at the regime's median error (1 / (1 + median)), and
    whether the SLOs still hold; under ``p90``, the same at the ratios one row in ten
    exceeds, where the regime records them. None when the regime was not validated or
    records no median. The plan itself is sized on the model's numbers; this says how much
    margin the measurements suggest."""
    v = validation_regime(c.dep)
    if not v["validated"] or c.p99 is None:
        return None
    med_t, med_p = v.get("ttft_median_error"), v.get("tpot_median_error")
    if med_t is None or med_p is None:
        return None
    rt, rp = 1.0 / (1.0 + med_t), 1.0 / (1.0 + med_p)
    ttft, tpot = c.p99[0] * rt, c.p99[1] * rp
    out: dict[str, Any] = {"ttft_ratio": rt, "tpot_ratio": rp, "ttft_p99_s": ttft,
                           "tpot_p99_s": tpot, "meets_slo": ttft <= ttft_slo and tpot <= tpot_slo}
    # The ratios one row in ten exceeds (the errors' 10th percentiles), where recorded: the
    # margin a plan that must hold on most deployments like this one would take.
    lo_t, lo_p = v.get("ttft_error_p10"), v.get("tpot_error_p10")
    if lo_t is not None and lo_p is not None:
        ht, hp = 1.0 / (1.0 + lo_t), 1.0 / (1.0 + lo_p)
        out["p90"] = {"ttft_ratio": ht, "tpot_ratio": hp, "ttft_p99_s": c.p99[0] * ht,
                      "tpot_p99_s": c.p99[1] * hp,
                      "meets_slo": c.p99[0] * ht <= ttft_slo and c.p99[1] * hp <= tpot_slo}
    return out


# How a plan may hold the SLOs against the measured rows of each deployment's regime: not at
# all (the model's figures), at their median lean, or at the ratios one row in ten exceeds.
MARGINS = ("none", "median", "p90")


def check_margin(margin: str) -> None:
    """Refuse a margin that is not one of MARGINS, naming the field."""
    if margin not in MARGINS:
        raise InputError(f"margin: {margin!r} is not one of {', '.join(MARGINS)}",
                         field="margin")


def slo_margin(dep: Deployment, margin: str) -> tuple[float, float]:
    """The measured / model ratios (TTFT, TPOT) a deployment's model p99s are multiplied by
    before they are held to the SLOs under ``margin`` (MARGINS): 1 / (1 + e) for the
    regime's median error (``median``) or its errors' 10th percentile (``p90``: the ratio
    one measured row in ten exceeds). Never below 1: where the rows measured under the
    model, the model's figure stands (a margin does not loosen an SLO). (1, 1) for
    ``none``, or where the deployment's regime was not measured or records no such error
    (the plan's output says which)."""
    check_margin(margin)
    if margin == "none":
        return 1.0, 1.0
    v = validation_regime(dep)
    if not v["validated"]:
        return 1.0, 1.0
    key = "median_error" if margin == "median" else "error_p10"
    out = []
    for m in ("ttft", "tpot"):
        e = v.get(f"{m}_{key}")
        out.append(1.0 if e is None else max(1.0, 1.0 / (1.0 + e)))
    return out[0], out[1]


def _verify_p99(cat: Catalog, c: PlanCandidate, qps: float, isl: int, osl: int,
                ttft_slo: float, tpot_slo: float, requests: int, seed: int,
                prefix: tuple[int, int] = (0, 1), router: str = "least_outstanding",
                beat: PlanCandidate | None = None) -> PlanCandidate | None:
    """Simulate one copy at its share of ``qps`` (Poisson) and add copies until the p99s
    meet the SLOs (at most VERIFY_TRIES simulations); the steady state screens on means
    only. None when no number of copies tried meets them: the plan never offers a fleet its
    own simulation says misses the SLOs.
    ``prefix``: (tokens, groups) every prompt shares with its group (``workload``). Behind a
    least_outstanding router each copy sees every group; behind a cache_aware one, the
    router keeps each group on one copy, so a copy sees its share of the groups (and its
    ranks share them the same way). ``beat``: a candidate verified before this one; None,
    unsimulated, once this one's copies can no longer come out ahead of it (more GPUs, or
    as many at no lower mean TPOT: copies only grow)."""
    copies = c.copies
    reuse = None
    per_copy = c.dep.gpus() or 0
    for _ in range(VERIFY_TRIES):
        if beat is not None and (per_copy * copies, c.state.tpot_s) >= (
                beat.gpus, beat.state.tpot_s):
            return None
        groups = (math.ceil(prefix[1] / copies) if router == "cache_aware" else prefix[1])
        w = workload(isl, osl, qps=qps / copies, num_requests=requests, seed=seed,
                     prefix_len=prefix[0], prefix_groups=groups)
        # A run whose TTFT p99 is sure to miss stops there: only a run that meets the SLOs
        # is reported, and such a run is never stopped
        res = simulate_deployment(cat, c.dep, w, isl, osl, router=router,
                                  stop_ttft_p99_over=ttft_slo / c.scale[0])
        p99 = (res.ttft_s["p99"], res.tpot_s["p99"])
        if prefix[0] > 0:
            reuse = (res.prefix_hit_rate, res.host_hit_rate)
        if (not res.truncated and p99[0] * c.scale[0] <= ttft_slo
                and p99[1] * c.scale[1] <= tpot_slo):
            return replace(c, copies=copies, p99=p99, reuse=reuse)
        copies = max(copies + 1, math.ceil(copies * 1.25))
    return None


def _verify_cheapest(cat: Catalog, cands: list[PlanCandidate], qps: float, isl: int,
                     osl: int, ttft_slo: float, tpot_slo: float, requests: int, seed: int,
                     prefix: tuple[int, int], router: str, prune: bool = True
                     ) -> PlanCandidate | None:
    """The cheapest of ``cands`` after each is verified (``_verify_p99``): fewest GPUs, then
    lowest mean TPOT, then the first. ``prune``: a candidate stops adding copies once they
    cannot beat the cheapest verified before it, which leaves the choice as verifying each
    in full (False)."""
    best: PlanCandidate | None = None
    for k in cands:
        got = _verify_p99(cat, k, qps, isl, osl, ttft_slo, tpot_slo, requests, seed, prefix,
                          router, beat=best if prune else None)
        if got is not None and (best is None or (got.gpus, got.state.tpot_s) < (
                best.gpus, best.state.tpot_s)):
            best = got
    return best


def _gpus_floor(cat: Catalog, dep: Deployment, qps: float, isl: int, osl: int,
                cache: PoolCache) -> int:
    """GPUs below which copies of the disaggregated ``dep`` cannot serve ``qps`` requests/s
    of ``isl``-token prompts: its copy's GPUs times the copies that its prefill workers' most
    prompts a second (``prefill_rate_max``, which every steady state of it stays under)
    call for. Its copy's GPUs alone where its prefill pool does not build."""
    assert dep.prefill is not None
    per_copy = dep.gpus() or 0
    try:
        pre = pool(cat, dep, dep.prefill.par, dep.prefill.workers or 1, isl, osl, "prefill.",
                   cache, True, dep.prefill.max_batch, dep.prefill.max_tokens)
    except DeploymentError:
        return per_copy
    rate = prefill_rate_max(pre, isl)
    return per_copy * max(1, math.ceil(qps / rate)) if rate > 0 else per_copy


def _max_clients(cat: Catalog, dep: Deployment, isl: int, osl: int, ttft_slo: float,
                 tpot_slo: float, cache: PoolCache | None = None
                 ) -> tuple[float, SteadyState, Deployment] | None:
    """The most closed-loop clients ``dep`` serves with mean TTFT and TPOT within the SLOs
    (bisection on a geometric grid; latencies rise with clients)."""
    def ok(c: float) -> tuple[bool, SteadyState, Deployment] | None:
        try:
            st, solved = steady(cat, dep, c, isl, osl, cache)
        except DeploymentError:
            return None
        return st.ttft_s <= ttft_slo and st.tpot_s <= tpot_slo, st, solved
    first = ok(1.0)
    if first is None or not first[0]:
        return None
    lo, lo_st, lo_dep = 1.0, first[1], first[2]
    hi = 2.0
    while hi < 1e6:
        r = ok(hi)
        if r is None or not r[0]:
            break
        lo, lo_st, lo_dep = hi, r[1], r[2]
        hi *= 2.0
    for _ in range(12):
        mid = math.sqrt(lo * hi)
        r = ok(mid)
        if r is not None and r[0]:
            lo, lo_st, lo_dep = mid, r[1], r[2]
        else:
            hi = mid
    return lo, lo_st, lo_dep


def _candidates(arch: ModelArch, domain: int, limit: int) -> list[ServingParallel]:
    """Worker layouts to search: TP within the NVLink domain; for MoE models attention DP
    with expert parallelism over the group too. A MoE worker may also span several domains,
    up to ``limit`` GPUs (a model whose weights one domain cannot hold, or whose KV cache is
    short there), as the measured rows run DeepSeek-R1 on 2 x 8 H100 (validate --table
    serving-silicon: TP 16, and attention DP 16 with EP 16): TP over the domains, or
    attention DP over them with the experts across every GPU. A dense model's worker stays in
    one domain: no measured serving row ran one over the network (and none pipelined)."""
    out = []
    top = limit if arch.is_moe else domain
    tp = 1
    while tp <= top:
        if arch.heads % tp == 0:
            out.append(layout(arch, tp=tp))
        if arch.is_moe and tp <= domain:
            adp = 2
            while tp * adp <= limit:
                with contextlib.suppress(InputError):
                    out.append(layout(arch, tp=tp, adp=adp))
                adp *= 2
        tp *= 2
    return out


def plan_engine(cat: Catalog, arch: ModelArch, gpu: Gpu, engine: ServingEngine, qps: float,
                isl: int, osl: int, ttft_slo: float, tpot_slo: float,
                precision: str = "bf16", gemm_quant: str | None = None,
                moe_quant: str | None = None, max_gpus_per_copy: int = 64,
                requests: int = 800, seed: int = 0,
                max_tokens: int | None = None, prune: bool = True,
                cpu_offload_gb: float = 0.0, prefix_len: int = 0, prefix_groups: int = 1,
                kv_offload_gb: float = 0.0, router: str = "least_outstanding",
                margin: str = "none", verdicts: bool = True) -> dict[str, Any]:
    """``plan_engine_choice``'s result, without the chosen candidate."""
    return plan_engine_choice(cat, arch, gpu, engine, qps, isl, osl, ttft_slo, tpot_slo,
                              precision, gemm_quant, moe_quant, max_gpus_per_copy, requests,
                              seed, max_tokens, prune, cpu_offload_gb, prefix_len,
                              prefix_groups, kv_offload_gb, router, margin, verdicts)[0]


def plan_engine_choice(cat: Catalog, arch: ModelArch, gpu: Gpu, engine: ServingEngine,
                       qps: float, isl: int, osl: int, ttft_slo: float, tpot_slo: float,
                       precision: str = "bf16", gemm_quant: str | None = None,
                       moe_quant: str | None = None, max_gpus_per_copy: int = 64,
                       requests: int = 800, seed: int = 0,
                       max_tokens: int | None = None, prune: bool = True,
                       cpu_offload_gb: float = 0.0, prefix_len: int = 0,
                       prefix_groups: int = 1, kv_offload_gb: float = 0.0,
                       router: str = "least_outstanding", margin: str = "none",
                       verdicts: bool = True) -> tuple[dict[str, Any], PlanCandidate]:
    """Cheapest aggregated and disaggregated deployments serving ``qps`` with p99 TTFT and
    TPOT within the SLOs, and whether disaggregation pays (fewer GPUs). Layouts and splits
    are screened on the steady state's means (a deployment whose means miss the SLOs cannot
    meet them at p99); the cheapest of each mode is then simulated at its share of ``qps``
    and given copies until its p99s meet them. ``max_tokens``: the aggregated layouts'
    token budget an iteration (None: the engine's). ``prune``: skip a deployment whose one
    copy takes more GPUs than its mode's cheapest so far (with shared prefixes, than the
    last of its cheapest few), and stop a verification whose copies can no longer beat the
    one before it (neither can win; False solves and verifies every one, for the same
    answer). ``cpu_offload_gb``: GiB of weights each GPU keeps in CPU
    memory (``deployment``).

    ``prefix_len`` > 0: every prompt's first ``prefix_len`` tokens are shared with the other
    prompts of its group, one of ``prefix_groups`` (``workload``), and the engine's prefix
    cache reuses them, with ``kv_offload_gb`` GiB a GPU of host tier behind HBM. The steady
    state knows no cache, so the screen solves it for prompts of ``input_len - prefix_len``
    tokens: every prefix cached, stored once, and the rest of each prompt attending to it
    free, a bound below every deployment's real cost. The screen's PREFIX_VERIFIED cheapest
    of each mode are then simulated with the shared prefixes (each copy seeing every group)
    and the cheapest after their copies is kept. The result says what the reuse saves: the
    same plan without it, and without the host tier. ``router``: least_outstanding, or
    cache_aware (SGLang's router: each prefix kept on the copy and rank that holds it, while
    the load stays balanced).

    ``margin`` (MARGINS): hold each deployment's model figures, multiplied by how its
    regime's measured rows lean (``slo_margin``: at their median, or at the ratios one row
    in ten exceeds), to the SLOs, so the plan is sized on what the measurements say; none:
    on the model's figures, with the lean only reported (``measured_lean``).

    ``verdicts``: False leaves out what the offload and the prefix cache save (each a plan
    of its own without them), for a plan whose choice alone is asked for: those plans'."""
    check_margin(margin)
    if not (qps > 0 and ttft_slo > 0 and tpot_slo > 0):
        raise InputError("qps and the SLOs must be positive", field="qps")
    if isl + osl > arch.max_seq_len:
        raise InputError(f"input_len: {isl} + {osl} tokens exceed the {arch.max_seq_len}-token "
                         f"context of {arch.id}", field="input_len")
    if not 0 <= prefix_len <= isl:
        raise InputError(f"prefix_len: {prefix_len} tokens must be within 0-{isl} (the prompt "
                         "they begin)", field="prefix_len")
    if prefix_groups < 1:
        raise InputError(f"prefix_groups: must be a positive integer, got {prefix_groups}",
                         field="prefix_groups")
    if kv_offload_gb > 0 and prefix_len == 0:
        raise InputError("kv_offload_gb: the host tier serves prompts that share a prefix; "
                         "give prefix_len", field="kv_offload_gb")
    router_config(cat, router)  # an unknown router is refused before any search
    shares = prefix_len > 0
    # Prompt tokens the screen charges: with shared prefixes, only each prompt's own part
    # (an optimistic bound: the simulation charges the misses)
    screen_isl = max(1, isl - prefix_len)
    base = deployment(cat, arch, gpu, engine, precision, gemm_quant, moe_quant,
                      agg=Role(ServingParallel()), cpu_offload_gb=cpu_offload_gb,
                      kv_offload_gb=kv_offload_gb)
    domain = step_model(cat, base, ServingParallel()).net.domain_gpus
    layouts = _candidates(arch, min(domain, max_gpus_per_copy), max_gpus_per_copy)
    best: dict[str, PlanCandidate | None] = {"agg": None, "disagg": None}
    # Where each mode's cheapest so far stands in the search's own order: among candidates
    # of equal GPUs and TPOT the first in that order wins, whatever order they are solved in
    best_at: dict[str, int] = {"agg": 0, "disagg": 0}
    # With shared prefixes, the screen's cheapest few of each mode (its order is a bound's)
    ranked: dict[str, list[PlanCandidate]] = {"agg": [], "disagg": []}
    evaluated = 0
    cache: PoolCache = {}

    def consider(mode: str, dep: Deployment, order: int = 0, floor: int = 0) -> None:
        """Screen ``dep``, the ``order``-th of its mode in the search; ``floor``: GPUs
        below which no steady state of it serves ``qps`` (0: its one copy's)."""
        nonlocal evaluated
        evaluated += 1
        cur = best[mode]
        per_copy = dep.gpus()
        if shares:
            # With shared prefixes the cheapest few are verified, not the cheapest alone:
            # what cannot enter them is skipped (more GPUs than the last of a full few)
            few = ranked[mode]
            cur = few[-1] if len(few) == PREFIX_VERIFIED else None
        if prune and cur is not None and per_copy is not None \
                and max(per_copy, floor) > cur.gpus:
            # One copy, or the copies the rate bound asks for, already take more GPUs than
            # the mode's cheapest so far: it cannot win, whatever its steady state (the same
            # choice, without solving it)
            return
        scale = slo_margin(dep, margin)
        r = _max_clients(cat, dep, screen_isl, osl, ttft_slo / scale[0], tpot_slo / scale[1],
                         cache)
        if r is None:
            return
        c, st, solved = r
        if st.requests_per_s <= 0:
            return
        copies = max(1, math.ceil(qps / st.requests_per_s))
        cand = PlanCandidate(solved, c, st, copies, isl=isl, scale=scale)
        cur = best[mode]
        if cur is None or (cand.gpus, cand.state.tpot_s, order) < (
                cur.gpus, cur.state.tpot_s, best_at[mode]):
            best[mode], best_at[mode] = cand, order
        if shares:
            ranked[mode] = sorted(ranked[mode] + [cand],
                                  key=lambda k: (k.gpus, k.state.tpot_s))[:PREFIX_VERIFIED]

    for i, par in enumerate(layouts):
        consider("agg", replace(base, agg=Role(par, 1, max_tokens=max_tokens)), i)
    fits = []
    for par in layouts:
        try:
            pool(cat, base, par, 1, isl, osl, "", cache)
            fits.append(par)
        except DeploymentError:
            continue
    splits = [replace(base, agg=None, prefill=Role(pp_, pw), decode=Role(dp_, dw))
              for pp_ in fits for dp_ in fits
              for pw, dw in ((1, 1), (1, 2), (1, 3), (2, 1), (1, 4), (2, 3))
              if pp_.gpus * pw + dp_.gpus * dw <= max_gpus_per_copy]
    floors = [0] * len(splits)
    order = list(range(len(splits)))
    if prune and not shares:
        # The GPUs each split needs at the least: its copy times the copies ``qps`` asks
        # of a rate its prefill workers cannot pass (full batches back to back). Screened
        # from the lowest, the cheapest is found early and the rest fall to the bound
        # unsolved; the choice is the one the search's own order gives.
        floors = [_gpus_floor(cat, d, qps, screen_isl, osl, cache) for d in splits]
        order.sort(key=lambda i: (floors[i], i))
    for i in order:
        consider("disagg", splits[i], i, floors[i])
    a, d = best["agg"], best["disagg"]
    # Modes whose screen found a deployment (what the simulation may still turn down)
    screened = [m for m in ("agg", "disagg") if best[m] is not None]
    if shares:
        # The bound's order is not the simulation's: verify the screen's cheapest few and
        # keep the cheapest after their copies
        prefix = (prefix_len, prefix_groups)
        runs = min(max(requests, PREFIX_REQUESTS_PER_GROUP * prefix_groups),
                   PREFIX_REQUESTS_MAX)
        a, d = (_verify_cheapest(cat, ranked[m], qps, isl, osl, ttft_slo, tpot_slo, runs,
                                 seed, prefix, router, prune) for m in ("agg", "disagg"))
    else:
        if a is not None:
            a = _verify_p99(cat, a, qps, isl, osl, ttft_slo, tpot_slo, requests, seed,
                            router=router)
        if d is not None:
            d = _verify_p99(cat, d, qps, isl, osl, ttft_slo, tpot_slo, requests, seed,
                            router=router)
    if not fits:
        largest = max(p.gpus for p in layouts)
        raise InputError(f"model: {arch.id}'s weights leave no room for one request's KV cache "
                         f"on any layout of up to {largest} {gpu.id} GPUs a worker"
                         + ("" if arch.is_moe else " (one NVLink domain: no measured serving "
                            "row ran a dense model's worker across nodes)")
                         + (f", {cpu_offload_gb:g} GiB of weights a GPU offloaded"
                            if cpu_offload_gb > 0 else ""), field="model")
    if a is None and d is None:
        held = ("" if margin == "none" else
                f", its figures x how its regime's measured rows lean ({margin} margin)")
        if screened:
            raise InputError(
                f"no deployment of {arch.id} on {gpu.id} under {engine.id} meets p99 TTFT "
                f"{ttft_slo:g} s and TPOT {tpot_slo:g} s in simulation at {qps:g} requests/s"
                f"{held}: the cheapest by the steady state's means"
                + (f" ({PREFIX_VERIFIED} a mode, with shared prefixes)" if shares else "")
                + f" still miss them with {VERIFY_TRIES} tries of more copies (a quarter more "
                "a try)", field="ttft_slo")
        raise InputError(f"no deployment of {arch.id} on {gpu.id} under {engine.id} meets "
                         f"TTFT {ttft_slo:g} s and TPOT {tpot_slo:g} s (means) for one "
                         f"client{held}", field="ttft_slo")
    pays = d is not None and (a is None or d.gpus < a.gpus)
    if a is not None and d is not None:
        verdict = (f"disaggregation pays: {d.gpus} GPUs against {a.gpus} aggregated"
                   if pays else f"disaggregation does not pay: {d.gpus} GPUs against "
                   f"{a.gpus} aggregated")
    elif d is None:
        verdict = "no disaggregated deployment meets the SLOs" + (
            " (the cheapest by the screen miss the p99s in simulation)"
            if "disagg" in screened else "")
    else:
        verdict = "only a disaggregated deployment meets the SLOs" + (
            " (the cheapest aggregated by the screen miss the p99s in simulation)"
            if "agg" in screened else "")
    choice = d if pays else a
    assert choice is not None
    extra: dict[str, Any] = {}
    def again(**kw: Any) -> dict[str, Any]:
        args: dict[str, Any] = {"cpu_offload_gb": cpu_offload_gb, "prefix_len": prefix_len,
                                "prefix_groups": prefix_groups, "kv_offload_gb": kv_offload_gb,
                                "router": router, "margin": margin, "verdicts": False}
        args.update(kw)
        return plan_engine(cat, arch, gpu, engine, qps, isl, osl, ttft_slo, tpot_slo,
                           precision, gemm_quant, moe_quant, max_gpus_per_copy, requests,
                           seed, max_tokens, prune, **args)

    if cpu_offload_gb > 0 and verdicts:
        extra["offload"] = _offload_verdict(choice.gpus, cpu_offload_gb,
                                            lambda: again(cpu_offload_gb=0.0))
    if shares and verdicts:
        extra["prefix_cache"] = _prefix_verdict(
            choice, prefix_len, prefix_groups, kv_offload_gb,
            lambda: again(prefix_len=0, prefix_groups=1, kv_offload_gb=0.0),
            (lambda: again(kv_offload_gb=0.0)) if kv_offload_gb > 0 else None)
    return ({"model": arch.id, "gpu": gpu.id, "engine": engine.id, "qps": qps, **extra,
            "router": router,
            "margin": {"kind": margin, "ttft_ratio": choice.scale[0],
                       "tpot_ratio": choice.scale[1]},
            "measured_lean": measured_lean(choice, ttft_slo, tpot_slo),
            "input_len": isl, "output_len": osl,
            "slo": {"ttft_p99_s": ttft_slo, "tpot_p99_s": tpot_slo},
            "choice": choice.as_dict(), "aggregated": a.as_dict() if a else None,
            "disaggregated": d.as_dict() if d else None,
            "disaggregation_pays": pays, "verdict": verdict,
            "deployments_evaluated": evaluated,
            "note": ("layouts screened on the steady state's means (the model validate "
                     "--table serving-silicon checks), the cheapest of each mode simulated "
                     "for its p99s" + (
                         f"; with shared prefixes the screen charges each prompt's own "
                         f"{screen_isl:,} tokens (every prefix cached: a bound), and its "
                         f"{PREFIX_VERIFIED} cheapest of each mode are simulated with the "
                         "prefix cache" if shares else ""))}, choice)


def _plan_gpus(plan: Callable[[], dict[str, Any]]) -> int | None:
    """GPUs of ``plan``'s choice, or None where no deployment meets the SLOs."""
    try:
        return int(plan()["choice"]["gpus"])
    except InputError:
        return None


def _prefix_verdict(choice: PlanCandidate, prefix_len: int, groups: int, kv_offload_gb: float,
                    without: Callable[[], dict[str, Any]],
                    without_host: Callable[[], dict[str, Any]] | None) -> dict[str, Any]:
    """What the prefix cache (and its host tier) saves: the choice's GPUs and reuse against
    the same plan without shared prefixes (every prompt computed whole), and without the
    host tier where the plan has one."""
    hit, host = choice.reuse if choice.reuse is not None else (0.0, 0.0)
    plain = _plan_gpus(without)
    out: dict[str, Any] = {
        "prefix_len": prefix_len, "groups": groups, "kv_offload_gib_per_gpu": kv_offload_gb,
        "hit_rate": hit, "host_hit_rate": host, "gpus": choice.gpus,
        "gpus_without_reuse": plain}
    parts = [f"{choice.gpus} GPUs with {100 * hit:.0f} % of prompt tokens reused"
             + (f" ({100 * host:.0f} % from the host tier)" if kv_offload_gb > 0 else ""),
             "no deployment meets the SLOs computing every prompt whole" if plain is None
             else f"{plain} computing every prompt whole"]
    if without_host is not None:
        no_host = _plan_gpus(without_host)
        out["gpus_without_host_tier"] = no_host
        parts.append("none meets them without the host tier" if no_host is None
                     else f"{no_host} without the host tier")
    out["verdict"] = "; ".join(parts)
    return out


def _offload_verdict(gpus: int, gib: float,
                     without: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """Whether offloading ``gib`` GiB of weights a GPU pays: the plan's GPUs against the
    same plan's without the offload (``without``; an InputError there: none meets the SLOs
    without it, or the weights do not fit)."""
    try:
        plain: int | None = int(without()["choice"]["gpus"])
    except InputError:
        plain = None
    pays = plain is None or gpus < plain
    if plain is None:
        verdict = (f"the offload pays: {gpus} GPUs, and no deployment meets the SLOs "
                   "without it")
    else:
        verdict = (f"the offload {'pays' if pays else 'does not pay'}: {gpus} GPUs against "
                   f"{plain} without it")
    return {"cpu_offload_gb": gib, "gpus": gpus, "gpus_without": plain, "pays": pays,
            "verdict": verdict}


__all__ = ["MARGINS", "PREFIX_VERIFIED", "PlanCandidate", "measured_lean", "plan_engine",
           "plan_engine_choice", "slo_margin"]
