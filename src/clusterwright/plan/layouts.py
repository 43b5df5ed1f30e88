"""The training layout search: every parallel layout of a job on N GPUs, the fastest that fits.

``enumerate_layouts`` lists every layout (tp, pp, dp, cp, ep, micro-batch, interleave, ZeRO,
recompute, sequence parallelism, ZeRO-3 sharding group, block-recompute share) that divides
the model, the batch and the GPU count and that the stack can run, as one ``Layouts`` (the
type ``model/layouts`` defines; recompute as its integer code). ``plan`` estimates them all at
once (``model/training.estimate`` on arrays) and keeps the fastest that fit in memory, as
``LayoutResult``s (``design/train``: the layout as a dict with recompute named, the estimate
as floats). ``pareto_front`` and ``smallest_for_deadline`` size the cluster: the best layout at
each GPU count of a ladder (``gpu_counts``), with time to train (``SizedPlan``).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

import numpy as np

from clusterwright.catalog.schema import Torus
from clusterwright.design.train import (
    MICRO_BATCHES,
    RC_FRACTIONS,
    LayoutResult,
    layout_result,
    recompute_choices,
)
from clusterwright.model.flops import training_flops_per_token
from clusterwright.model.layouts import Layouts
from clusterwright.model.recompute import FULL
from clusterwright.model.torus import TorusNet
from clusterwright.model.train_job import Job
from clusterwright.model.training import estimate, memory


def _divisors(n: int) -> list[int]:
    return [k for k in range(1, n + 1) if n % k == 0]


def _pow2_upto(n: int) -> list[int]:
    return [1 << k for k in range(int(math.log2(max(n, 1))) + 1)]


@dataclass
class PlanResult:
    """Everything ``train plan`` reports."""

    best: LayoutResult | None
    top: list[LayoutResult]
    pareto: list[dict[str, float]]
    candidates_evaluated: int
    rejected: dict[str, int]
    gpus: int
    notes: list[str] = field(default_factory=list)


def enumerate_layouts(job: Job, gpus: int) -> tuple[Layouts, dict[str, int]]:
    """Every layout of ``gpus`` GPUs that divides the model and batch and that the stack can
    run, plus counts of the structurally impossible ones by reason. Memory is checked later,
    on the arrays."""
    a = job.arch
    f = job.stack.features
    rejected: dict[str, int] = {}

    def reject(reason: str, n: int = 1) -> None:
        rejected[reason] = rejected.get(reason, 0) + n

    # Megatron splits whole KV heads across TP ranks: tp divides heads and KV heads.
    tps = [t for t in _pow2_upto(min(gpus, 64)) if a.heads % t == 0 and a.n_kv_heads % t == 0]
    domain = job.net.domain_gpus
    cps = [c for c in _pow2_upto(64) if job.seq_len % (2 * c) == 0 or c == 1]
    if not f.context_parallel:
        cps = [1]
    eps = [1] if not a.is_moe else [x for x in _pow2_upto(a.experts) if a.experts % x == 0]
    pps = [p for p in _divisors(gpus) if p <= a.layers]
    if job.opts.schedule == "dualpipe":
        pps = [p for p in pps if p == 1 or p % 2 == 0]  # DualPipe pairs stages: even p
    interleaves = (1, 2, 3, 4, 6, 8) if f.interleaved and job.opts.schedule != "dualpipe" else (1,)
    zeros = [0] + ([1, 2] if f.distributed_optimizer else []) + ([3] if f.zero3 else [])
    rcs = recompute_choices(job)
    # The outer choices (tp, pp, dp, cp, ep, micro-batch, interleave) are few; the choices
    # inside them (ZeRO stage, shard, recompute, its share, SP) repeat the same block for
    # every outer row with the same key, so that block is built once and repeated with numpy,
    # in the loops' order.
    blocks: dict[tuple[bool, tuple[int, ...], bool], np.ndarray] = {}

    def block(zero3: bool, shards: tuple[int, ...], tp_split: bool) -> np.ndarray:
        key = (zero3, shards, tp_split)
        if key not in blocks:
            inner = [(zero, rc, int(sp), shard, frac)
                     for zero in zeros if zero != 3 or zero3
                     for shard in (shards if zero == 3 else (0,))
                     for rc in rcs
                     for frac in (RC_FRACTIONS if rc == FULL else (1.0,))
                     for sp in ((False, True) if tp_split else (False,))]
            blocks[key] = np.array(inner, dtype=float).reshape(-1, 5)
        return blocks[key]

    outer: list[tuple[float, ...]] = []
    inners: list[np.ndarray] = []
    for t, c, p in itertools.product(tps, cps, pps):
        if gpus % (t * c * p):
            continue  # not a factorization of the GPU count: not a candidate at all
        if t > domain:
            reject("tp crosses the NVLink domain")
            continue
        d = gpus // (t * c * p)
        if job.global_batch % d:
            reject("global batch not divisible by dp")
            continue
        per_dp = job.global_batch // d
        # ZeRO-3 shards over the whole data-parallel group, or (hybrid) inside a server.
        shards = (0, domain // t) if f.hsdp and d * c > domain // t > 1 else (0,)
        # FSDP/ZeRO-3 with pipelining only where the framework has it.
        inner = block(p == 1 or f.zero3_with_pp, shards, t > 1)
        for ep in eps:
            if (t * d * c) % ep:
                reject("ep does not divide tp*dp*cp")
                continue
            for b in MICRO_BATCHES:
                if per_dp % b:
                    continue
                m = per_dp // b
                for v in interleaves:
                    if v > 1 and (p == 1 or p * v > a.layers or m % p):
                        continue  # interleaving needs m divisible by p (Megatron)
                    if p > 1 and m < p:
                        reject("fewer micro-batches than pipeline stages")
                        break
                    outer.append((t, p, d, c, ep, b, v))
                    inners.append(inner)
    if not outer:
        return Layouts.of(), rejected
    counts = np.array([len(x) for x in inners])
    head = np.repeat(np.array(outer, dtype=float), counts, axis=0)
    tail = np.concatenate(inners) if inners else np.empty((0, 5))
    if len(head) == 0:
        return Layouts.of(), rejected
    t_, p_, d_, c_, ep_, b_, v_ = head.T
    zero, rc, sp, shard, frac = tail.T
    lay = Layouts(t_, p_, d_, c_, ep_, b_, v_, zero, rc, sp, shard, frac)
    return lay, rejected


def plan(job: Job, gpus: int, top_n: int = 5) -> PlanResult:
    """Best layout on ``gpus`` GPUs: fastest step among layouts that fit in memory."""
    lay, rejected = enumerate_layouts(job, gpus)
    if len(lay) == 0 or (len(lay) == 1 and lay.tp[0] * lay.pp[0] * lay.dp[0] * lay.cp[0] != gpus):
        return PlanResult(
            None, [], [], 0, rejected, gpus, ["no layout divides this model, batch and GPU count"]
        )
    # Memory first: most layouts of a large model on a small GPU do not fit, and the memory
    # model is a small part of the step model's cost, so only the layouts that fit are timed.
    mem = memory(job, lay)
    fits = job.fits(mem)
    n_over = int((~fits).sum())
    if n_over:
        rejected["does not fit in memory"] = rejected.get("does not fit in memory", 0) + n_over
    idx = np.flatnonzero(fits)
    if idx.size == 0:
        return PlanResult(None, [], [], len(lay), rejected, gpus)
    ok, ok_mem = lay, mem
    if n_over:
        ok, ok_mem = lay.take(idx), {k: v[idx] if np.ndim(v) else v for k, v in mem.items()}
    est = estimate(job, ok, mem=ok_mem)
    order = np.argsort(est.step_time_s, kind="stable")
    top = [layout_result(job, ok, est, int(i)) for i in order[:top_n]]
    return PlanResult(top[0], top, [], len(lay), rejected, gpus)


# --------------------------------------------------------------------------- time to train


def gpu_counts(limit: int, unit: int = 8) -> list[int]:
    """A ladder of cluster sizes: unit x {1, 1.5} x 2^k up to ``limit`` (whole servers)."""
    out: set[int] = set()
    k = 1
    while unit * k <= limit:
        out.add(unit * k)
        if unit * k * 3 // 2 <= limit and (k * 3) % 2 == 0:
            out.add(unit * k * 3 // 2)
        k *= 2
    return sorted(out)


# Wall time of a run: (GPUs, failure-free compute seconds) -> seconds. The identity is the
# steady state; design/train_goodput.py adds evaluation and failures (production).
WallTime = Callable[[int, float], float]


def _steady(gpus: int, compute_s: float) -> float:
    return compute_s


@dataclass(frozen=True)
class SizedPlan:
    """The best layout at one GPU count, with time-to-train when tokens are known (wall
    time under ``WallTime``; ``compute_days``: the failure-free steps alone)."""

    gpus: int
    best: LayoutResult
    time_to_train_days: float | None
    gpu_hours: float | None
    compute_days: float | None = None

    def as_dict(self) -> dict[str, object]:
        return {
            "gpus": self.gpus,
            "step_time_s": self.best.step_time_s,
            "tokens_per_s": self.best.tokens_per_step / self.best.step_time_s,
            "time_to_train_days": self.time_to_train_days,
            "gpu_hours": self.gpu_hours,
            "compute_days": self.compute_days,
            "layout": self.best.layout,
        }


def sized(best: LayoutResult, gpus: int, tokens: float | None,
          wall: WallTime = _steady) -> SizedPlan:
    if tokens is None:
        return SizedPlan(gpus, best, None, None)
    compute = tokens / (best.tokens_per_step / best.step_time_s)
    seconds = wall(gpus, compute)
    return SizedPlan(gpus, best, seconds / 86400.0, seconds * gpus / 3600.0, compute / 86400.0)


def pareto_front(job: Job, counts: list[int], tokens: float | None,
                 wall: WallTime = _steady,
                 known: Mapping[int, LayoutResult] | None = None) -> list[SizedPlan]:
    """Best plan at each GPU count, keeping only counts that train faster than every smaller
    count (more GPUs that do not help are dominated). ``known``: best layouts already planned
    for some counts (the caller's own plan), reused rather than searched again."""
    front: list[SizedPlan] = []
    best_time = np.inf
    for n in sorted(counts):
        best = known[n] if known is not None and n in known else plan(job, n, top_n=1).best
        if best is None:
            continue
        s = sized(best, n, tokens, wall)
        key = s.time_to_train_days if s.time_to_train_days is not None else best.step_time_s
        if key < best_time:
            best_time = key
            front.append(s)
    return front


# Share of the peak-rate bound a step may come within: the bound counts every model FLOP at
# the GEMM peak; the step model times attention against the 16-bit peak scaled by a per-GPU
# attention factor (e.g. GB300's 1.35x, catalog), so keep a margin before pruning on it.
BOUND_MARGIN = 0.8


def compute_floor_s(job: Job, tokens: float, gpus: int) -> float:
    """Seconds ``gpus`` GPUs need at least to train ``tokens`` tokens: the model FLOPs
    (causal attention, the fewest any layout does) at the GEMM precision's peak rate, scaled
    by ``BOUND_MARGIN``. No layout's estimate is faster, so a count whose floor misses a
    deadline need not be planned."""
    per_token = float(training_flops_per_token(job.arch, job.seq_len, causal=True,
                                               lora=job.lora))
    return BOUND_MARGIN * tokens * per_token / (gpus * job.peak_flops)


def smallest_for_deadline(
    job: Job, tokens: float, deadline_days: float, limit: int = 131072,
    wall: WallTime = _steady, counts: list[int] | None = None,
    job_at: Callable[[int], Job] | None = None,
) -> tuple[SizedPlan, PlanResult] | None:
    """Fewest GPUs (on the ladder ``counts``, by default whole scale-up domains from
    ``gpu_counts``) whose best layout trains ``tokens`` within the deadline, with that count's
    whole plan. ``job_at(n)`` gives the job on ``n`` GPUs where it depends on the count (a
    TPU slice's torus). Counts whose compute floor (``compute_floor_s``) already misses the
    deadline are skipped without planning."""
    ladder = counts if counts is not None else gpu_counts(
        limit, job.net.domain_gpus if job.net.domain_gpus > 1 else 8)
    for n in ladder:
        jn = job_at(n) if job_at is not None else job
        if wall(n, compute_floor_s(jn, tokens, n)) > deadline_days * 86400.0:
            continue
        res = plan(jn, n)
        if res.best is None:
            continue
        s = sized(res.best, n, tokens, wall)
        if s.time_to_train_days is not None and s.time_to_train_days <= deadline_days:
            return s, res
    return None


def slice_ladder(job: Job, torus: Torus | None, limit: int = 131072
                 ) -> tuple[list[int] | None, Callable[[int], Job] | None]:
    """Chip counts a deadline search tries on a TPU pod, and the job on each: the slice shapes
    the pod forms (its catalog ``slices``, smallest first), then doublings of the largest
    joined over the data-centre network. A pod is not the smallest unit a job gets. (None,
    None) off a pod: whole scale-up domains, as ``gpu_counts`` climbs them."""
    if torus is None or not torus.slices or job.net.torus is None:
        return None, None
    by_chips: dict[int, tuple[int, ...]] = {}
    for sh in sorted((tuple(x) for x in torus.slices), key=lambda x: (math.prod(x), x)):
        by_chips.setdefault(math.prod(sh), sh)
    largest = max(by_chips)
    counts = sorted(by_chips)
    k = 2
    while largest * k <= limit:
        counts.append(largest * k)
        k *= 2
    old = job.net.torus

    def job_at(n: int) -> Job:
        shape = by_chips.get(n, by_chips[largest])
        # Each axis closes through the OCS when it spans whole 4-chip cube sides (as
        # train_request's --slice reads a shape).
        net = replace(job.net, domain_gpus=math.prod(shape), torus=TorusNet(
            shape, old.wraparound and all(d % 4 == 0 for d in shape), old.link_bw, old.hop_s))
        return replace(job, net=net)

    return counts, job_at
