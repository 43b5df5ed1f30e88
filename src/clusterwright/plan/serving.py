"""Serving capacity planning: the cheapest deployment that meets latency SLOs.

``plan`` searches GPU type x tensor parallelism (and, for MoE models, expert parallelism over
the TP group) for the largest load one replica sustains under p99 TTFT and TPOT SLOs (a loop
of simulations: no closed form gives p99 latency under load), then sizes and prices the
fleet. The replica and its memory are built by ``plan/serving_replica`` and
``plan/serving_memory``; rejected layouts are counted by their typed ``reason``.
"""

from __future__ import annotations

import functools
import math
import os
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

from clusterwright.catalog.registry import Catalog, resolve_model
from clusterwright.catalog.schema import ModelArch
from clusterwright.errors import InfeasibleError, InputError, rejection_reason
from clusterwright.model.precision import Precision
from clusterwright.plan.serving_replica import (
    Replica,
    check_request_fits,
    replica,
    serving_gpus,
    serving_stack,
    workload,
)
from clusterwright.sim.serving import (
    ClusterConfig,
    ServingResult,
    Workload,
    simulate,
)

PLAN_TPS = (1, 2, 4, 8)


def gpu_hour_price(cat: Catalog, gpu_id: str) -> tuple[float, str] | None:
    """$/GPU-hour and offer id for ``gpu_id`` by the one pricing policy (plan/pricing.py)."""
    from clusterwright.plan.pricing import cloud_price

    c = cloud_price(cat, gpu_id)
    return (c.usd_per_gpu_hour, c.offer_id) if c is not None else None


@dataclass(frozen=True)
class LoadPoint:
    """One simulation of one replica at one offered load."""

    gpu: str
    tp: int
    qps: float  # offered to one replica
    ttft_p99_s: float
    tpot_p99_s: float
    tokens_per_s_per_gpu: float  # output tokens
    tokens_per_s_per_user: float  # 1 / mean TPOT: the speed one client sees while decoding
    meets_slo: bool
    usd_per_gpu_hour: float | None
    ep: int = 1  # expert-parallel GPUs inside the TP group
    e2e_p99_s: float = math.nan  # arrival to last token
    # Stopped once its TTFT p99 was sure to miss the SLO: ttft_p99_s is then a lower bound
    # above the SLO, and the other figures cover the requests finished by then.
    truncated: bool = False
    # Prompts sharing prefixes: the share of prompt tokens the prefix cache served
    prefix_hit_rate: float | None = None

    def as_dict(self) -> dict[str, Any]:
        usd = None
        if self.usd_per_gpu_hour is not None and self.tokens_per_s_per_gpu > 0:
            usd = self.usd_per_gpu_hour / (self.tokens_per_s_per_gpu * 3600) * 1e6
        return {
            "gpu": self.gpu,
            "tp": self.tp,
            "ep": self.ep,
            "qps_per_replica": self.qps,
            "tokens_per_s_per_gpu": self.tokens_per_s_per_gpu,
            "tokens_per_s_per_user": self.tokens_per_s_per_user,
            "ttft_p99_s": self.ttft_p99_s,
            "tpot_p99_s": self.tpot_p99_s,
            "e2e_p99_s": self.e2e_p99_s,
            "meets_slo": self.meets_slo,
            "cost_per_million_tokens_usd": usd,
        }


@dataclass(frozen=True)
class Capacity:
    """The largest per-replica load of one (GPU, TP) that meets the SLOs (0 if none)."""

    gpu: str
    tp: int
    qps: float
    low_load: LoadPoint  # the lightest load tried: the best p99s this layout achieves
    at_capacity: LoadPoint | None
    points: list[LoadPoint]
    usd_per_gpu_hour: float | None
    price_offer: str | None
    ep: int = 1


@dataclass
class ServePlan:
    """Result of ``plan``: the cheapest deployment meeting the SLOs, or why none does."""

    model: str
    qps: float
    input_len: int
    output_len: int
    slo_ttft_p99_s: float
    slo_tpot_p99_s: float
    best: dict[str, Any] | None
    candidates: list[dict[str, Any]]
    pareto: list[dict[str, Any]]
    rejected: dict[str, int]
    best_achievable: dict[str, Any] | None
    simulations: int
    notes: list[str] = field(default_factory=list)
    slo_e2e_p99_s: float | None = None

    @property
    def feasible(self) -> bool:
        return self.best is not None

    def as_dict(self) -> dict[str, Any]:
        return {
            "feasible": self.feasible,
            "best": self.best,
            "pareto": self.pareto,
            "cost_per_million_tokens_usd": (self.best or {}).get("cost_per_million_tokens_usd"),
            "model": self.model,
            "qps": self.qps,
            "input_len": self.input_len,
            "output_len": self.output_len,
            "slo": {"ttft_p99_s": self.slo_ttft_p99_s, "tpot_p99_s": self.slo_tpot_p99_s,
                    "e2e_p99_s": self.slo_e2e_p99_s},
            "candidates": self.candidates,
            "rejected": self.rejected,
            "best_achievable": self.best_achievable,
            "simulations": self.simulations,
            "notes": self.notes,
        }


def _point(rep: Replica, w: Workload, ttft_slo: float, tpot_slo: float,
           price: float | None, e2e_slo: float | None = None,
           stop_early: bool = False) -> LoadPoint:
    """One simulated load; ``stop_early``: end the run once its TTFT p99 must miss the SLO
    (the point fails either way; an overloaded queue costs its whole run otherwise)."""
    r = _simulate(rep, w, ttft_slo if stop_early else None)
    return _load_point(rep, w, r, ttft_slo, tpot_slo, price, e2e_slo)


def _simulate(rep: Replica, w: Workload, stop_ttft: float | None = None) -> ServingResult:
    shares = w.prefix_groups > 0 and w.shared_prefix_len > 0
    engine = replace(rep.engine, enable_prefix_caching=True) if shares else rep.engine
    return simulate(ClusterConfig(engine=engine), w, rep.model, stop_ttft_p99_over=stop_ttft)


def _load_point(rep: Replica, w: Workload, r: ServingResult, ttft_slo: float, tpot_slo: float,
                price: float | None, e2e_slo: float | None) -> LoadPoint:
    shares = w.prefix_groups > 0 and w.shared_prefix_len > 0
    tpot_mean = r.tpot_s["mean"]
    return LoadPoint(
        gpu=rep.model.gpu.id,
        tp=rep.model.tp,
        qps=w.qps,
        ttft_p99_s=r.ttft_s["p99"],
        tpot_p99_s=r.tpot_s["p99"],
        tokens_per_s_per_gpu=r.output_tokens_per_s / rep.gpus,
        tokens_per_s_per_user=1.0 / tpot_mean if tpot_mean > 0 else math.inf,
        # One-token outputs have no TPOT (NaN), which then meets any TPOT SLO.
        meets_slo=(r.ttft_s["p99"] <= ttft_slo and not r.tpot_s["p99"] > tpot_slo
                   and (e2e_slo is None or r.e2e_s["p99"] <= e2e_slo)),
        usd_per_gpu_hour=price,
        ep=rep.model.ep,
        e2e_p99_s=r.e2e_s["p99"],
        truncated=r.truncated,
        prefix_hit_rate=r.prefix_hit_rate if shares else None,
    )


def saturation_qps(rep: Replica, input_len: int, output_len: int) -> float:
    """Rough requests/s one replica serves flat out: a full decode batch (``max_num_seqs``
    or what the KV cache holds at the mean context) plus each request's prefill, both from
    the step model. Only brackets the capacity search."""
    ctx = input_len + output_len
    batch = max(1, min(rep.engine.max_num_seqs, rep.memory.max_batch(ctx)))
    decode = rep.model.step_s(0, batch, batch * (input_len + output_len // 2))
    prefill = rep.model.step_s(input_len, 0, 0)
    return 1.0 / (output_len * decode / batch + prefill)


def capacity(rep: Replica, input_len: int, output_len: int, ttft_slo: float,
             tpot_slo: float, *, num_requests: int = 2000, seed: int = 0,
             length_dist: str = "fixed", length_cv: float = 1.0, rel_tol: float = 0.05,
             max_sims: int = 16, price: tuple[float, str] | None = None,
             e2e_slo: float | None = None, stop_early: bool = True, prefix_len: int = 0,
             prefix_groups: int = 1) -> Capacity:
    """Largest Poisson load one replica sustains with p99 TTFT <= ``ttft_slo``, p99 TPOT
    <= ``tpot_slo`` and, when given, p99 end-to-end latency <= ``e2e_slo`` (seconds), and no
    more than the replica completes flat out (a queue that only grows meets no SLO): a
    light-load run first (if it misses, nothing will), then a bracket
    doubled from the saturation estimate, then geometric bisection to ``rel_tol``. The same
    seed at every load scales one set of arrival gaps, so feasibility is monotone in load.
    ``stop_early``: the bracket and bisection runs end once their TTFT p99 must miss the SLO
    (same capacity, without simulating an overloaded queue to its end; the light-load run,
    whose p99s a plan reports when nothing fits, always runs whole). ``prefix_len`` > 0: the
    first ``prefix_len`` tokens of every prompt are one of ``prefix_groups`` shared prefixes,
    which the replica's prefix cache reuses (``workload``)."""
    cap = min(rep.model.arch.max_seq_len, rep.memory.kv_tokens)
    usd = price[0] if price else None

    def run(q: float, n: int, probe: bool = True) -> LoadPoint:
        w = workload(input_len, output_len, qps=q, num_requests=n, seed=seed,
                     length_dist=length_dist, length_cv=length_cv, max_context=cap,
                     prefix_len=prefix_len, prefix_groups=prefix_groups)
        return _point(rep, w, ttft_slo, tpot_slo, usd, e2e_slo, stop_early and probe)

    sat = saturation_qps(rep, input_len, output_len)
    low = run(sat / 100, min(num_requests, 500), probe=False)
    points = [low]
    gpu, tp, ep = rep.model.gpu.id, rep.model.tp, rep.model.ep
    offer = price[1] if price else None
    if not low.meets_slo:
        return Capacity(gpu, tp, 0.0, low, None, points, usd, offer, ep)
    # The requests/s the replica completes when it is never idle (every request queued at
    # once): a higher load only grows the queue, which a finite run with a loose SLO (minutes
    # of TTFT) would otherwise pass. Such loads fail without being simulated.
    w_flood = workload(input_len, output_len, qps=sat * 1e3, num_requests=num_requests,
                       seed=seed, length_dist=length_dist, length_cv=length_cv,
                       max_context=cap, prefix_len=prefix_len, prefix_groups=prefix_groups)
    flood = _simulate(rep, w_flood)
    service_qps = flood.requests_per_s
    overload = replace(_load_point(rep, w_flood, flood, ttft_slo, tpot_slo, usd, e2e_slo),
                       meets_slo=False)

    def probe(q: float) -> LoadPoint:
        if q > service_qps:
            return replace(overload, qps=q)
        return run(q, num_requests)

    lo_pt = low
    hi = sat
    for _ in range(max_sims):  # bracket: double until the SLOs break
        p = probe(hi)
        points.append(p)
        if not p.meets_slo:
            break
        lo_pt, hi = p, hi * 2
    else:
        return Capacity(gpu, tp, lo_pt.qps, low, lo_pt, points, usd, offer, ep)
    while hi / lo_pt.qps > 1 + rel_tol and len(points) < max_sims:
        mid = math.sqrt(lo_pt.qps * hi)
        p = probe(mid)
        points.append(p)
        if p.meets_slo:
            lo_pt = p
        else:
            hi = mid
    # The light-load run used fewer requests; if the bracket never passed, capacity is its load.
    return Capacity(gpu, tp, lo_pt.qps, low, lo_pt, points, usd, offer, ep)


def pareto(points: list[LoadPoint]) -> list[LoadPoint]:
    """Points no other point beats on both tokens/s/GPU and tokens/s/user, by tokens/s/GPU."""
    front: list[LoadPoint] = []
    best_user = -math.inf
    for p in sorted(points, key=lambda p: (-p.tokens_per_s_per_gpu, -p.tokens_per_s_per_user)):
        if p.tokens_per_s_per_user > best_user:
            front.append(p)
            best_user = p.tokens_per_s_per_user
    return front


def plan(cat: Catalog, model: str | ModelArch, qps: float, input_len: int, output_len: int,
         ttft_p99_s: float, tpot_p99_s: float, *, gpu: str = "choose",
         tps: tuple[int, ...] = PLAN_TPS, precision: Precision | str = Precision.bf16,
         kv_precision: Precision | str = Precision.bf16, num_requests: int = 2000,
         seed: int = 0, length_dist: str = "fixed", length_cv: float = 1.0,
         rel_tol: float = 0.05, workers: int | None = None,
         expert_parallel: bool = True, e2e_p99_s: float | None = None,
         progress: Callable[[int, int], None] | None = None,
         stop_early: bool = True, prefix_len: int = 0, prefix_groups: int = 1) -> ServePlan:
    """Cheapest fleet of identical replicas serving ``qps`` requests/s within p99 SLOs
    (TTFT and TPOT, and end-to-end latency when ``e2e_p99_s`` is given; seconds).
    ``workers``: processes for the per-layout searches (default: one per CPU).
    ``progress(done, total)`` is called as each layout's search ends.
    ``expert_parallel``: for a MoE model, also try ep = tp at every TP > 1 whose degree
    divides the experts (``_ep_layouts`` keeps only what a cheap step-model screen cannot
    rule out). ``stop_early``: end each search's failing runs once their TTFT p99 must miss
    the SLO (``capacity``; the plan is the same either way, only faster). ``prefix_len`` and
    ``prefix_groups``: prompts that share prefixes, reused by each replica's prefix cache
    (``capacity``); every replica sees every group (no routing by prefix).

    For every candidate GPU (``gpu``, or with "choose" every catalog GPU with a serving
    calibration) and TP in ``tps`` that fits the NVLink domain and memory: the per-replica
    capacity (``capacity``), replicas = ceil(qps / capacity), cost from the cheapest cloud
    offer per GPU-hour. Priced configurations compete on $/hour, unpriced ones only when
    none is priced (then on GPU count). The Pareto front of tokens/s/GPU against
    tokens/s/user is taken over every simulated (GPU, TP, load) point that meets the TTFT
    SLO (beyond it the queue grows without bound and throughput is only the drain rate).
    With no feasible configuration, ``best`` is None and ``best_achievable`` holds the
    lowest light-load p99s found.
    """
    for name, v in (("input_len", input_len), ("output_len", output_len),
                    ("num_requests", num_requests)):
        if v < 1:
            raise InputError(f"{name}: must be a positive integer, got {v}", field=name)
    if not (qps > 0 and math.isfinite(qps)):
        raise InputError(f"qps: must be a positive request rate, got {qps:g}", field="qps")
    for name, s in (("ttft_p99_s", ttft_p99_s), ("tpot_p99_s", tpot_p99_s)):
        if not s > 0:
            raise InputError(f"{name}: must be a positive number of seconds, got {s:g}",
                             field=name)
    if e2e_p99_s is not None and not (e2e_p99_s > 0 and math.isfinite(e2e_p99_s)):
        raise InputError(f"e2e_p99_s: must be a positive number of seconds, got {e2e_p99_s:g}",
                         field="e2e_p99_s")
    arch = model if isinstance(model, ModelArch) else resolve_model(cat, model)
    if gpu == "choose":
        gpus = serving_gpus(cat)
        if not gpus:
            raise InfeasibleError("gpu: choose: no catalog GPU has a serving calibration (stacks."
                             "yaml `serving:`); name one", "no_serving_calibration", field="gpu")
    else:
        gpus = [cat.gpu(gpu)]
        if serving_stack(cat, gpu) is None:
            raise InfeasibleError(f"gpu: {gpu} has no serving calibration in the catalog (a "
                                  "stack covering it needs a `serving:` block in stacks.yaml); "
                                  "engine trtllm|vllm|sglang plans it with a catalog serving "
                                  "engine", "no_serving_calibration", field="gpu")
    rejected: Counter[str] = Counter()
    errors: list[str] = []
    first_error: list[InputError] = []
    layouts: list[tuple[Replica, tuple[float, str] | None]] = []
    for g in gpus:
        price = gpu_hour_price(cat, g.id)
        for tp in tps:
            try:
                rep = replica(cat, arch, g.id, tp, 1, precision, kv_precision)
                check_request_fits(rep, input_len, output_len)
            except InputError as exc:
                rejected[rejection_reason(exc)] += 1
                first_error.append(exc)
                errors.append(f"{g.id} tp {tp}: {exc}")
                continue
            if expert_parallel and arch.is_moe and tp > 1 and arch.experts % tp == 0:
                alt = replica(cat, arch, g.id, tp, 1, precision, kv_precision, ep=tp)
                layouts.extend((r, price) for r in _ep_layouts(rep, alt, input_len, output_len))
            else:
                layouts.append((rep, price))
    search = functools.partial(_capacity_of, input_len=input_len, output_len=output_len,
                               ttft_slo=ttft_p99_s, tpot_slo=tpot_p99_s,
                               num_requests=num_requests, seed=seed, length_dist=length_dist,
                               length_cv=length_cv, rel_tol=rel_tol, e2e_slo=e2e_p99_s,
                               stop_early=stop_early, prefix_len=prefix_len,
                               prefix_groups=prefix_groups)
    n_workers = min(workers if workers is not None else (os.cpu_count() or 1), len(layouts))
    tick = progress or (lambda done, total: None)
    tick(0, len(layouts))
    caps = []
    if n_workers > 1:
        # Layouts are independent searches: one process per core (results are the same as
        # in one process, each search being seeded; a test checks).
        with ProcessPoolExecutor(max_workers=n_workers) as pool:
            for cap in pool.map(search, layouts):
                caps.append(cap)
                tick(len(caps), len(layouts))
    else:
        for layout in layouts:
            caps.append(search(layout))
            tick(len(caps), len(layouts))
    if not caps:
        too_long = [e for e in first_error if rejection_reason(e) == "request_too_long"]
        if too_long:
            raise too_long[0]  # the context is the model's at any TP: the lengths are at fault
        if len(rejected) == 1 and "precision" in rejected:
            raise first_error[0]
        where = gpu if gpu != "choose" else "any calibrated GPU"
        # One reason for every rejection is the reason; memory binds whenever it is one.
        reason = next(iter(rejected)) if len(rejected) == 1 else (
            "memory" if "memory" in rejected else "other")
        raise InfeasibleError(f"model: {arch.id} fits no TP in {', '.join(map(str, tps))} on "
                              f"{where}: " + "; ".join(errors[-3:]), reason, field="model")
    candidates = [_candidate(c, qps, output_len) for c in caps]
    feasible = [c for c in candidates if c["replicas"] is not None]
    priced = [c for c in feasible if c["usd_per_hour"] is not None]
    best: dict[str, Any] | None = None
    notes: list[str] = []
    if priced:
        best = min(priced, key=lambda c: (c["usd_per_hour"], c["gpus"], c["tp"], c["ep"]))
    elif feasible:
        best = min(feasible, key=lambda c: (c["gpus"], c["tp"], c["ep"]))
        notes.append("no catalog cloud offer prices these GPUs: chose the fewest GPUs")
    achievable = None
    if best is None:
        lows = [c.low_load for c in caps]
        # The configuration closest to the SLOs: smallest worst ratio of p99 to SLO.
        near = min(lows, key=lambda p: _slo_ratio(p, ttft_p99_s, tpot_p99_s, e2e_p99_s))
        achievable = {
            "ttft_p99_s": min(p.ttft_p99_s for p in lows),
            "tpot_p99_s": min(p.tpot_p99_s for p in lows),
            "e2e_p99_s": min(p.e2e_p99_s for p in lows),
            "closest": {"gpu": near.gpu, "tp": near.tp, "ep": near.ep,
                        "ttft_p99_s": near.ttft_p99_s,
                        "tpot_p99_s": near.tpot_p99_s, "e2e_p99_s": near.e2e_p99_s,
                        "qps_per_replica": near.qps},
        }
        which = "all three SLOs" if e2e_p99_s is not None else "both SLOs"
        notes.append(f"no configuration meets {which} even at light load; best_achievable "
                     "holds the lowest p99s seen (each at light load)")
    stable = [p for c in caps for p in c.points if p.ttft_p99_s <= ttft_p99_s]
    return ServePlan(
        model=arch.id, qps=qps, input_len=input_len, output_len=output_len,
        slo_ttft_p99_s=ttft_p99_s, slo_tpot_p99_s=tpot_p99_s, best=best,
        candidates=candidates, pareto=[p.as_dict() for p in pareto(stable)],
        rejected=dict(rejected), best_achievable=achievable,
        simulations=sum(len(c.points) for c in caps), notes=notes, slo_e2e_p99_s=e2e_p99_s,
    )


def _slo_ratio(p: LoadPoint, ttft: float, tpot: float, e2e: float | None) -> float:
    """The worst ratio of a point's p99 to its SLO (1 = exactly at the SLO)."""
    ratios = [p.ttft_p99_s / ttft, p.tpot_p99_s / tpot]
    if e2e is not None:
        ratios.append(p.e2e_p99_s / e2e)
    return max(ratios)


def _ep_layouts(tp_rep: Replica, ep_rep: Replica, input_len: int,
                output_len: int) -> list[Replica]:
    """The TP-only and the ep = tp replica of one MoE (GPU, TP), less either one the other
    beats on all of the step model's flat-out rate (``saturation_qps``), its batch-1 decode
    step (light-load TPOT) and its prefill of one prompt (light-load TTFT). A screen of six
    step evaluations, so the simulated capacity search runs twice only when the SLOs could
    pick either (EP streams more weights at small batches, runs wider GEMMs at large ones)."""
    ctx = input_len + output_len // 2

    def score(r: Replica) -> tuple[float, float, float]:
        return (saturation_qps(r, input_len, output_len), -r.model.step_s(0, 1, ctx),
                -r.model.step_s(input_len, 0, 0))

    a, b = score(tp_rep), score(ep_rep)
    if all(x >= y for x, y in zip(a, b, strict=True)):
        return [tp_rep]
    if all(y >= x for x, y in zip(a, b, strict=True)):
        return [ep_rep]
    return [tp_rep, ep_rep]


def _capacity_of(layout: tuple[Replica, tuple[float, str] | None], *, input_len: int,
                 output_len: int, ttft_slo: float, tpot_slo: float, num_requests: int,
                 seed: int, length_dist: str, length_cv: float, rel_tol: float,
                 e2e_slo: float | None = None, stop_early: bool = True, prefix_len: int = 0,
                 prefix_groups: int = 1) -> Capacity:
    rep, price = layout
    return capacity(rep, input_len, output_len, ttft_slo, tpot_slo, num_requests=num_requests,
                    seed=seed, length_dist=length_dist, length_cv=length_cv, rel_tol=rel_tol,
                    price=price, e2e_slo=e2e_slo, stop_early=stop_early,
                    prefix_len=prefix_len, prefix_groups=prefix_groups)


def _candidate(c: Capacity, qps: float, output_len: int) -> dict[str, Any]:
    """One (GPU, TP) sized for ``qps``: replicas, GPUs, $/hour and $/million output tokens."""
    replicas = math.ceil(qps / c.qps * (1 - 1e-9)) if c.qps > 0 else None
    gpus = replicas * c.tp if replicas is not None else None
    usd_h = gpus * c.usd_per_gpu_hour if gpus is not None and c.usd_per_gpu_hour else None
    at = c.at_capacity
    return {
        "gpu": c.gpu,
        "tp": c.tp,
        "pp": 1,
        "ep": c.ep,
        "replicas": replicas,
        "gpus": gpus,
        "qps_per_replica": c.qps,
        "ttft_p99_s": at.ttft_p99_s if at else c.low_load.ttft_p99_s,
        "tpot_p99_s": at.tpot_p99_s if at else c.low_load.tpot_p99_s,
        "e2e_p99_s": at.e2e_p99_s if at else c.low_load.e2e_p99_s,
        "tokens_per_s_per_gpu": at.tokens_per_s_per_gpu if at else None,
        "tokens_per_s_per_user": at.tokens_per_s_per_user if at else None,
        "prefix_hit_rate": at.prefix_hit_rate if at else c.low_load.prefix_hit_rate,
        "light_load_ttft_p99_s": c.low_load.ttft_p99_s,
        "light_load_tpot_p99_s": c.low_load.tpot_p99_s,
        "usd_per_gpu_hour": c.usd_per_gpu_hour,
        "price_offer": c.price_offer,
        "usd_per_hour": usd_h,
        # The fleet serves the target rate, so its output is qps x output_len tokens/s.
        "cost_per_million_tokens_usd": (usd_h / (qps * output_len * 3600) * 1e6
                                        if usd_h is not None else None),
        "simulations": len(c.points),
    }


__all__ = [
    "Capacity",
    "LoadPoint",
    "ServePlan",
    "capacity",
    "gpu_hour_price",
    "pareto",
    "plan",
    "saturation_qps",
]
