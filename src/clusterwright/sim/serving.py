"""Request-level LLM serving simulator on the shared event engine.

Each replica runs a vLLM-V1-like scheduler (vLLM ``v1/core/sched/scheduler.py``): every
iteration schedules the running requests first (one decode token each, or the next prefill
chunk), then waiting requests' prefill chunks under the token budget
(``max_num_batched_tokens``) and ``max_num_seqs``; paged KV blocks of ``block_size`` tokens are
allocated as sequences grow, and when a running request needs a block and none is free, the most
recently arrived running request is preempted (blocks freed, recomputed later). Optional: prefix
caching, several replicas behind a router, prefill/decode disaggregation with a KV transfer,
speculative decoding with an acceptance rate. Step times come from a :class:`StepModel`.

Speed. Decode sequences are not simulated one by one. A replica keeps a decode-step counter
``S`` and a token counter ``G`` (tokens every running sequence has gained since the replica
started); a running request stores only its offset from ``G``, so a decode iteration is O(1)
whatever the batch. Block demand comes from a histogram of context lengths mod ``block_size``
(a sequence needs a new block when its context is a multiple of the block size). When a batch
has no prefill work, the next ``k`` iterations are identical but for the KV length, so they
run as one event: ``k`` = steps until the first running request finishes or the free blocks
run out; an arrival routed to the replica cuts the block short at the next step boundary
(lazy cancellation). Step times within the block are linear in the step index for a linear
step model (exact), and the trapezoid between the first and last step otherwise.

Approximations. Speculative decoding gives every sequence in a step the same number of tokens
(the expected yield, accumulated so that S steps give floor(S x yield) tokens). With
disaggregation the first token reaches the client when the KV transfer ends (TTFT = queue +
prefill + transfer). ITL within a fast-forwarded block is the block's mean step time, one
sample per sequence and step. A preemption inside an iteration that already counted the
victim's prefill chunk leaves that chunk in the iteration's step time.
"""

from __future__ import annotations

import heapq
import math
import time
from array import array
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import numpy as np
import numpy.typing as npt

from clusterwright.sim.engine import Engine, Event, check_seed
from clusterwright.sim.serving_trace import (
    MAX_REQUESTS,
    Lengths,
    Requests,
    ServingError,
    gamma_arrivals,
    load_trace,
    poisson_arrivals,
)

__all__ = [
    "ClusterConfig",
    "Disaggregation",
    "EngineConfig",
    "Lengths",
    "ServingError",
    "ServingResult",
    "StepModel",
    "Workload",
    "make_requests",
    "simulate",
]

ROUTERS = ("round_robin", "least_outstanding")
ARRIVALS = ("poisson", "gamma", "closed", "trace")
MAX_SAMPLES = 1024  # time-series points kept (the interval doubles when full)
# Replicas behind one router: every step visits each (1,024 x 100,000 requests: about 6 s).
MAX_REPLICAS = 1_024


class StepModel(Protocol):
    def step_s(self, prefill_tokens: int, decode_seqs: int, kv_tokens: int,
               prefill_pairs: float | None = None) -> float:
        """Seconds for one engine iteration that processes ``prefill_tokens`` new prompt tokens
        (all prefill chunks in the batch) and one token for each of ``decode_seqs`` running
        sequences, with attention reading ``kv_tokens`` cached tokens in total.
        ``prefill_pairs``: the chunks' attention (query, key) pairs, sum of p (c + p/2) for a
        chunk of p tokens after c cached ones."""
        ...


@dataclass(frozen=True)
class EngineConfig:
    """One replica's engine (vLLM names). ``speculative`` = (draft tokens k, acceptance rate
    a, draft cost factor): each decode iteration yields 1 + a(1 - a^k)/(1 - a) tokens per
    sequence in expectation (Leviathan et al., "Fast Inference from Transformers via
    Speculative Decoding", ICML 2023, eq. 1) and costs ``factor`` x a plain iteration."""

    kv_blocks: int
    block_size: int = 16
    max_num_seqs: int = 256
    max_num_batched_tokens: int = 8192
    chunked_prefill: bool = True
    enable_prefix_caching: bool = False
    # "evict": admit while blocks last and preempt when they run out (vLLM); "reserve": admit
    # only when the blocks of the whole request (prompt + output) can be reserved, so nothing
    # is ever preempted (TensorRT-LLM's default GUARANTEED_NO_EVICT capacity scheduler).
    admission: str = "evict"
    speculative: tuple[int, float, float] | None = None
    # Latency every streamed token carries beyond the iterations: a fixed part (API server,
    # network) and a number of the request's own iterations (engines that return a step's
    # tokens one step late). It shifts TTFT and end-to-end time, not TPOT.
    token_delay_s: float = 0.0
    token_delay_steps: float = 0.0

    def validate(self, name: str = "engine") -> None:
        if self.admission not in ("evict", "reserve"):
            raise ServingError(f"{name}.admission: {self.admission!r} is not evict or reserve")
        for key in ("kv_blocks", "block_size", "max_num_seqs", "max_num_batched_tokens"):
            if getattr(self, key) < 1:
                raise ServingError(f"{name}.{key}: {getattr(self, key)} must be >= 1")
        if self.speculative is not None:
            k, a, f = self.speculative
            if k < 1 or not 0.0 <= a <= 1.0 or not f > 0:
                raise ServingError(
                    f"{name}.speculative: {self.speculative} needs draft tokens >= 1, "
                    "acceptance rate in [0, 1] and a positive cost factor")
        per_seq = 1 + (self.speculative[0] if self.speculative else 0)
        if self.max_num_batched_tokens < self.max_num_seqs * per_seq:
            raise ServingError(
                f"{name}.max_num_batched_tokens: {self.max_num_batched_tokens} is below "
                f"max_num_seqs x {per_seq} = {self.max_num_seqs * per_seq} tokens, so a full "
                "decode batch would not fit the budget; raise it or lower max_num_seqs")

    def tokens_per_step(self) -> float:
        """Expected tokens per sequence per decode iteration (1 without speculation)."""
        if self.speculative is None:
            return 1.0
        k, a, _ = self.speculative
        return 1.0 + (float(k) if a >= 1.0 else a * (1.0 - a**k) / (1.0 - a))


@dataclass(frozen=True)
class Disaggregation:
    """Separate prefill and decode pools. After its prefill, a request's KV cache
    (``kv_bytes_per_token`` x prompt tokens) crosses its prefill replica's link (one transfer
    at a time, FIFO) before the request joins a decode replica."""

    prefill_replicas: int
    decode_replicas: int
    kv_bytes_per_token: float
    link_bytes_per_s: float
    link_latency_s: float = 0.0
    prefill_engine: EngineConfig | None = None  # None = the cluster's engine
    # Step times of the prefill replicas when their layout differs from the decode
    # replicas' (None: the model passed to ``simulate``)
    prefill_model: StepModel | None = None


@dataclass(frozen=True)
class ClusterConfig:
    engine: EngineConfig
    replicas: int = 1
    router: str = "round_robin"  # or "least_outstanding"
    disaggregation: Disaggregation | None = None

    def validate(self) -> None:
        self.engine.validate()
        if self.router not in ROUTERS:
            raise ServingError(f"router: {self.router!r} is not one of {', '.join(ROUTERS)}")
        if self.replicas < 1:
            raise ServingError(f"replicas: {self.replicas} must be >= 1")
        if self.replicas > MAX_REPLICAS:
            raise ServingError(f"replicas: {self.replicas:,} simulated replicas; at most "
                               f"{MAX_REPLICAS:,} (each adds work to every step)",
                               field="replicas")
        d = self.disaggregation
        if d is not None:
            if d.prefill_replicas < 1 or d.decode_replicas < 1:
                raise ServingError("disaggregation: needs >= 1 prefill and >= 1 decode replica")
            if not d.link_bytes_per_s > 0 or d.kv_bytes_per_token < 0 or d.link_latency_s < 0:
                raise ServingError(
                    "disaggregation: link_bytes_per_s must be > 0, kv_bytes_per_token and "
                    "link_latency_s >= 0")
            if d.prefill_engine is not None:
                d.prefill_engine.validate("disaggregation.prefill_engine")


@dataclass(frozen=True)
class Workload:
    """Where requests come from. ``arrival``: poisson (``qps``), gamma (``qps``, ``cv``),
    closed (``concurrency`` clients, each sends its next request when the last finishes) or
    trace (``trace`` file, lengths from the file). With ``prefix_groups`` > 0, synthetic
    requests get one of that many shared prefixes of ``shared_prefix_len`` tokens, put in
    front of their sampled prompt."""

    num_requests: int = 1000
    arrival: str = "poisson"
    qps: float = 1.0
    cv: float = 1.0
    concurrency: int = 1
    input_len: Lengths = field(default_factory=lambda: Lengths("fixed", 128))
    output_len: Lengths = field(default_factory=lambda: Lengths("fixed", 128))
    trace: str | Path | None = None
    seed: int = 0
    prefix_groups: int = 0
    shared_prefix_len: int = 0


def make_requests(w: Workload) -> Requests:
    """The request stream of ``w`` (arrival times are 0 for a closed loop: clients set them)."""
    if w.arrival not in ARRIVALS:
        raise ServingError(f"workload.arrival: {w.arrival!r} is not one of {', '.join(ARRIVALS)}")
    if w.arrival == "trace":
        if w.trace is None:
            raise ServingError("workload.trace: arrival 'trace' needs a trace file")
        return load_trace(w.trace)
    n = w.num_requests
    if n < 1:
        raise ServingError(f"workload.num_requests: {n} must be >= 1")
    if n > MAX_REQUESTS:
        raise ServingError(f"workload.num_requests: {n:,} requests; at most {MAX_REQUESTS:,} "
                           "(about 5 s of simulation)", field="workload.num_requests")
    check_seed(w.seed, "workload.seed")
    w.input_len.validate("workload.input_len")
    w.output_len.validate("workload.output_len")
    # One generator per component, spawned from the scenario seed (STYLE.md, 5).
    r_arr, r_in, r_out, r_pre = (np.random.default_rng(s)
                                 for s in np.random.SeedSequence(w.seed).spawn(4))
    if w.arrival == "poisson":
        if not w.qps > 0:
            raise ServingError(f"workload.qps: {w.qps} must be > 0")
        arr = poisson_arrivals(n, w.qps, r_arr)
    elif w.arrival == "gamma":
        if not w.qps > 0 or not w.cv > 0:
            raise ServingError(f"workload: gamma arrivals need qps > 0 and cv > 0 "
                               f"(got qps={w.qps}, cv={w.cv})")
        arr = gamma_arrivals(n, w.qps, w.cv, r_arr)
    else:
        if w.concurrency < 1:
            raise ServingError(f"workload.concurrency: {w.concurrency} must be >= 1")
        arr = np.zeros(n)
    inp = w.input_len.sample(n, r_in)
    out = w.output_len.sample(n, r_out)
    pid = np.full(n, -1, dtype=np.int64)
    plen = np.zeros(n, dtype=np.int64)
    if w.prefix_groups > 0 and w.shared_prefix_len > 0:
        pid = r_pre.integers(0, w.prefix_groups, size=n).astype(np.int64)
        plen[:] = w.shared_prefix_len
        inp = inp + w.shared_prefix_len
    return Requests(arr, inp, out, pid, plen)


FloatArray = npt.NDArray[np.float64]


@dataclass
class ServingResult:
    """Latencies in seconds; percentiles over finished requests (ITL over tokens)."""

    requests: int
    duration_s: float  # first arrival to last completion
    ttft_s: dict[str, float]  # keys p50, p90, p99, mean
    tpot_s: dict[str, float]  # mean inter-token time per request, (e2e - ttft)/(out - 1)
    itl_s: dict[str, float]  # inter-token latency, per token (one sample per sequence-step)
    e2e_s: dict[str, float]
    output_tokens_per_s: float
    requests_per_s: float
    goodput_rps: float  # requests/s meeting both SLOs
    slo_ttft_s: float
    slo_tpot_s: float
    preemptions: int
    prefix_hit_rate: float  # prompt tokens served from the prefix cache / prompt tokens
    mean_in_system: float  # time-average of requests arrived and not finished
    kv_util_mean: float
    series_t_s: FloatArray  # sample times of the series below
    kv_util: FloatArray  # used KV blocks / all KV blocks, over all replicas
    queue_len: FloatArray  # waiting requests, over all replicas
    running: FloatArray
    events: int  # engine callbacks run
    steps: int  # engine iterations simulated (a fast-forwarded block counts all its steps)
    wall_s: float
    per_request: dict[str, FloatArray] = field(repr=False, default_factory=dict)

    def summary(self) -> dict[str, object]:
        """Scalars only (no arrays), for printing or JSON."""
        return {k: v for k, v in self.__dict__.items()
                if not isinstance(v, np.ndarray) and k != "per_request"}


class _Req:
    __slots__ = ("committed", "computed", "entry", "g", "hit", "i", "input", "key", "output",
                 "pid", "remote", "share", "shared", "target", "ver")

    def __init__(self, i: int, inp: int, out: int, pid: int, share: int) -> None:
        self.i = i  # arrival index: the preemption order
        self.input = inp
        self.output = out
        self.pid = pid
        self.share = share  # prompt tokens shareable under pid
        self.g = 0  # output tokens produced (offset from the replica's G while decoding)
        self.target = inp  # tokens the next prefill must have computed (prompt + outputs)
        self.computed = 0
        self.key = 0  # context length minus the replica's G, while decoding
        self.shared = 0  # blocks referenced from the prefix cache (not owned)
        self.hit = 0
        self.entry: list[int] | None = None  # [blocks, refs] of the prefix-cache entry used
        self.ver = 0
        self.remote = False  # KV arrives from a prefill replica: no prefill here
        self.committed = 0  # blocks reserved for the whole request (admission "reserve")


class _Replica:
    """One engine: waiting queue, running requests, KV blocks, prefix cache, step events."""

    def __init__(self, sim: _Sim, cfg: EngineConfig, role: str) -> None:
        self.sim = sim
        self.eng = sim.eng
        self.cfg = cfg
        self.reserve = cfg.admission == "reserve"
        self.committed = 0  # blocks reserved by admitted requests (admission "reserve")
        self.role = role  # "both", "prefill" or "decode"
        self.bs = cfg.block_size
        self.nblocks = cfg.kv_blocks
        self.max_seqs = cfg.max_num_seqs
        self.budget = cfg.max_num_batched_tokens
        self.chunked = cfg.chunked_prefill
        self.caching = cfg.enable_prefix_caching
        self.y = cfg.tokens_per_step()
        self.spec_k = cfg.speculative[0] if cfg.speculative else 0
        self.factor = cfg.speculative[2] if cfg.speculative else 1.0
        pm = sim.pd.prefill_model if sim.pd is not None and role == "prefill" else None
        self.step_s = (pm or sim.model).step_s
        self.waiting: deque[_Req] = deque()
        self.prefilling: list[_Req] = []
        self.decode: dict[int, _Req] = {}
        self.heap: list[tuple[int, int, int, _Req]] = []  # (G at finish, i, ver, req)
        self.count = [0] * self.bs  # decoding requests by (context - G) mod block_size
        self.kvrel = 0  # sum over decoding requests of (context - G)
        self.S = 0
        self.G = 0
        self.used = 0  # blocks owned by requests
        self.cache: OrderedDict[int, list[int]] = OrderedDict()  # prefix id -> [blocks, refs]
        self.cache_blocks = 0
        self.evictable = 0  # cached blocks no running request references
        self.busy = False
        self.ev: Event | None = None
        self.ff: tuple[float, int, float, float, int] | None = None  # t0, k, step0, slope, N
        self.outstanding = 0
        self.link_free_s = 0.0
        self.pending = 0  # tokens of decode growth already allocated in this iteration

    # ---- blocks -------------------------------------------------------------------------
    def g_of(self, s: int) -> int:
        """Token counter after ``s`` decode iterations (floor of s x tokens per step)."""
        return s if self.y == 1.0 else int(s * self.y + 1e-9)

    def demand(self, dg: int) -> int:
        """New blocks the decoding requests need to gain ``dg`` tokens each from now."""
        n = len(self.decode)
        q, rem = divmod(dg, self.bs)
        d = q * n
        g, bs, c = self.G, self.bs, self.count
        for j in range(rem):
            d += c[-(g + j) % bs]
        return d

    def max_advance(self, avail: int) -> int:
        """Largest token gain every decoding request can make within ``avail`` blocks."""
        n = len(self.decode)
        q = avail // n
        left = avail - q * n
        dg = q * self.bs
        g, bs, c = self.G, self.bs, self.count
        while True:
            need = c[-(g + dg) % bs]
            if need > left:
                return dg
            left -= need
            dg += 1

    def free(self) -> int:
        return self.nblocks - self.used - self.cache_blocks

    def alloc(self, x: int) -> bool:
        if x <= self.nblocks - self.used - self.cache_blocks:
            self.used += x
            return True
        if x > self.nblocks - self.used - self.cache_blocks + self.evictable:
            return False
        for pid in list(self.cache):  # evict least recently used unreferenced prefixes
            ent = self.cache[pid]
            if ent[1] == 0:
                del self.cache[pid]
                self.cache_blocks -= ent[0]
                self.evictable -= ent[0]
                if x <= self.nblocks - self.used - self.cache_blocks:
                    break
        self.used += x
        return True

    def release(self, r: _Req, ctx: int) -> None:
        """Free ``r``'s own blocks (``ctx`` tokens held) and its prefix-cache reference."""
        bs = self.bs
        if r.committed:
            self.committed -= r.committed
            r.committed = 0
        self.used -= -(-ctx // bs) - r.shared
        self.drop_entry(r)

    def drop_entry(self, r: _Req) -> None:
        """Give up ``r``'s prefix-cache reference (unreferenced entries become evictable)."""
        ent = r.entry
        if ent is not None:
            ent[1] -= 1
            if ent[1] == 0:
                self.evictable += ent[0]
        r.entry = None
        r.shared = 0

    def prefix_hit(self, r: _Req) -> None:
        """On admission of a fresh prefill: reuse cached full blocks of ``r``'s prefix."""
        ent = self.cache.get(r.pid)
        if ent is None:
            return
        hit = min(ent[0], r.share // self.bs, (r.target - 1) // self.bs)
        if hit <= 0:
            return
        self.cache.move_to_end(r.pid)
        if ent[1] == 0:
            self.evictable -= ent[0]
        ent[1] += 1
        r.entry = ent
        r.shared = hit
        r.computed = hit * self.bs
        r.hit = hit * self.bs

    def undo_hit(self, r: _Req) -> None:
        self.drop_entry(r)
        r.computed = 0
        r.hit = 0

    def register_prefix(self, r: _Req) -> None:
        """After ``r``'s prefill: its full shared-prefix blocks become a cache entry."""
        s = min(r.share, r.input) // self.bs
        ent = self.cache.get(r.pid)
        if ent is None:
            if s <= 0:
                return
            ent = [s, 1]
            self.cache[r.pid] = ent
            self.cache_blocks += s
            self.used -= s
            r.entry, r.shared = ent, s
        elif ent is r.entry and s > ent[0]:
            grow = s - ent[0]
            ent[0] = s
            self.cache_blocks += grow
            self.used -= grow
            r.shared = s

    # ---- decode set ---------------------------------------------------------------------
    def join(self, r: _Req, ctx: int) -> None:
        """``r`` (``ctx`` tokens cached, ``r.g`` produced) starts decoding."""
        G = self.G
        r.key = ctx - G
        self.count[r.key % self.bs] += 1
        self.kvrel += r.key
        r.g -= G  # offset: produced = g + G
        self.decode[r.i] = r
        r.ver += 1
        heapq.heappush(self.heap, (r.output - r.g, r.i, r.ver, r))

    def leave(self, r: _Req) -> None:
        self.count[r.key % self.bs] -= 1
        self.kvrel -= r.key
        del self.decode[r.i]
        r.g += self.G
        r.ver += 1

    def preempt_one(self) -> _Req | None:
        """Preempt the most recently arrived running request (recompute later)."""
        best: _Req | None = None
        for r in self.decode.values():
            if best is None or r.i > best.i:
                best = r
        for r in self.prefilling:
            if best is None or r.i > best.i:
                best = r
        if best is None:
            return None
        if best.i in self.decode:
            ctx = best.key + self.G + self.pending
            self.leave(best)
        else:
            ctx = best.computed + best.key  # key: the chunk allocated in this iteration
            self.prefilling.remove(best)
        self.release(best, ctx)
        best.target = best.input + best.g
        best.computed = 0
        best.hit = 0
        best.remote = False
        self.waiting.appendleft(best)
        self.sim.preemptions += 1
        return best

    # ---- events -------------------------------------------------------------------------
    def enqueue(self, r: _Req) -> None:
        was_empty = not self.waiting
        self.waiting.append(r)
        if not self.busy:
            self.busy = True
            self.eng.at(self.eng.now, self.schedule)
        elif was_empty and self.ff is not None:
            self.truncate(self.eng.now)

    def truncate(self, now: float) -> None:
        """Cut the running fast-forward block at the first step boundary at or after now."""
        assert self.ff is not None and self.ev is not None
        t0, k, s0, d, n = self.ff
        e = now - t0

        def span(j: int) -> float:  # time of j steps: step times s0, s0 + d, s0 + 2d, ...
            return j * s0 + d * j * (j - 1) / 2

        if abs(d) < 1e-15 * s0:
            j = math.ceil(e / s0)
        else:  # root of d/2 j^2 + (s0 - d/2) j = e
            b = s0 - d / 2
            disc = b * b + 2 * d * e
            j = math.ceil((-b + math.sqrt(disc)) / d) if disc >= 0 else k
        j = max(1, min(k, j))
        while j > 1 and span(j - 1) >= e:
            j -= 1
        while j < k and span(j) < e:
            j += 1
        if j < k:
            self.ev.cancel()
            self.ff = (t0, j, s0, d, n)
            self.ev = self.eng.at(t0 + span(j), self.ff_end)

    def can_admit(self, r: _Req) -> bool:
        """Could the waiting head be admitted now (optimistic; False = surely not until a
        request finishes, since decoding only uses blocks up)."""
        if len(self.decode) + len(self.prefilling) >= self.max_seqs:
            return False
        avail = self.free() + self.evictable
        bs = self.bs
        if r.remote:
            return -(-(r.target) // bs) <= avail
        budget = self.budget - len(self.decode) * (1 + self.spec_k)
        if budget <= 0:
            return False
        hit = 0
        if self.caching and r.computed == 0:
            ent = self.cache.get(r.pid)
            if ent is not None:
                hit = min(ent[0], r.share // bs, (r.target - 1) // bs)
        rem = r.target - r.computed - hit * bs
        if not self.chunked and rem > budget:
            return False
        done = r.computed + hit * bs
        chunk = min(rem, budget)
        return -(-(done + chunk) // bs) - -(-done // bs) <= avail

    def schedule(self) -> None:
        """Start the next iteration (or fast-forwarded block), or go idle."""
        sim = self.sim
        bs = self.bs
        waiting = self.waiting
        decode = self.decode
        # Requests whose KV came from a prefill replica join the decode batch directly.
        while waiting and waiting[0].remote and len(decode) + len(self.prefilling) < self.max_seqs:
            r = waiting[0]
            if not self.alloc(-(-r.target // bs)):
                break
            waiting.popleft()
            self.join(r, r.target)
        n = len(decode)
        if (sim.fast_forward and n and not self.prefilling
                and (not waiting or not self.can_admit(waiting[0]))):
            k = self.plan_block()
            if k > 1:
                self.start_block(k)
                return
        # One iteration. Running decodes first: one token (or a speculative group) each.
        self.pending = 0
        dg = self.g_of(self.S + 1) - self.G
        d = self.demand(dg) if n else 0
        while n and d > self.free() + self.evictable:
            self.preempt_one()
            n = len(decode)
            d = self.demand(dg) if n else 0
        if n:
            self.alloc(d)
            self.pending = dg
        budget = self.budget - n * (1 + self.spec_k)
        kv = self.kvrel + n * self.G if n else 0
        ptoks = 0
        pairs = 0.0
        # Running prefills (chunks continue), in admission order.
        for r in list(self.prefilling):
            if r not in self.prefilling:  # preempted below by an earlier one
                continue
            chunk = min(r.target - r.computed, budget) if budget > 0 else 0
            if chunk <= 0:
                r.key = 0
                continue
            need = -(-(r.computed + chunk) // bs) - -(-r.computed // bs)
            while not self.alloc(need):
                victim = self.preempt_one()
                if victim is r or victim is None:
                    chunk = 0
                    break
            if r.i in decode or r not in self.prefilling:
                continue
            r.key = chunk  # the chunk scheduled in this iteration
            budget -= chunk
            ptoks += chunk
            pairs += chunk * (r.computed + chunk / 2.0)
            kv += r.computed + chunk
        n = len(decode)
        # Waiting requests, FCFS, while budget, seats and blocks last.
        while waiting and budget > 0 and n + len(self.prefilling) < self.max_seqs:
            r = waiting[0]
            if r.remote:
                break
            fresh = r.computed == 0
            if fresh and self.caching:
                self.prefix_hit(r)
            rem = r.target - r.computed
            if not self.chunked and rem > budget:
                if fresh:
                    self.undo_hit(r)
                break
            chunk = min(rem, budget)
            full = -(-(r.input + r.output) // bs) if self.reserve and fresh else 0
            if full and self.committed + full > self.nblocks:
                if fresh:
                    self.undo_hit(r)
                break
            need = -(-(r.computed + chunk) // bs) - -(-r.computed // bs)
            if not self.alloc(need):
                if fresh:
                    self.undo_hit(r)
                break
            if full:
                self.committed += full
                r.committed = full
            waiting.popleft()
            if fresh:
                sim.prompt_tokens += r.target
                sim.hit_tokens += r.hit
            self.prefilling.append(r)
            r.key = chunk
            budget -= chunk
            ptoks += chunk
            pairs += chunk * (r.computed + chunk / 2.0)
            kv += r.computed + chunk
        if not ptoks and not n:
            self.busy = False
            self.ev = None
            return
        dt = self.step_s(ptoks, n, kv, pairs)
        if n and self.factor != 1.0:
            dt *= self.factor
        self.ev = self.eng.at(self.eng.now + dt, self.step_end, n, dt)

    def plan_block(self) -> int:
        """Decode iterations that can run as one event (0 or 1: not worth it)."""
        heap = self.heap
        while heap and (heap[0][3].ver != heap[0][2] or heap[0][1] not in self.decode):
            heapq.heappop(heap)
        gmin = heap[0][0]
        need = gmin - self.G  # tokens until the first request finishes
        S = self.S
        if self.y == 1.0:
            kfin = need
        else:
            kfin = max(1, math.ceil((self.g_of(S) + need) / self.y - 1e-9) - S)
            while self.g_of(S + kfin) - self.G < need:
                kfin += 1
            while kfin > 1 and self.g_of(S + kfin - 1) - self.G >= need:
                kfin -= 1
        dmax = self.max_advance(self.free() + self.evictable)
        if self.y == 1.0:
            kkv = dmax
        else:
            kkv = int((self.G + dmax) / self.y) - S
            while kkv > 0 and self.g_of(S + kkv) - self.G > dmax:
                kkv -= 1
        return min(kfin, kkv)

    def start_block(self, k: int) -> None:
        n = len(self.decode)
        f = self.factor
        s0 = self.step_s(0, n, self.kvrel + n * self.G) * f
        s1 = self.step_s(0, n, self.kvrel + n * self.g_of(self.S + k - 1)) * f
        d = (s1 - s0) / (k - 1)
        now = self.eng.now
        self.ff = (now, k, s0, d, n)
        self.ev = self.eng.at(now + k * s0 + d * k * (k - 1) / 2, self.ff_end)

    def ff_end(self) -> None:
        assert self.ff is not None
        _, k, s0, d, n = self.ff
        self.ff = None
        g1 = self.g_of(self.S + k)
        self.alloc(self.demand(g1 - self.G))
        self.S += k
        self.G = g1
        self.sim.record_steps(k, s0 + d * (k - 1) / 2, n)
        self.finish_due()
        self.sim.sample(self.eng.now)
        self.schedule()

    def step_end(self, n: int, dt: float) -> None:
        sim = self.sim
        self.S += 1
        self.G = self.g_of(self.S)
        self.pending = 0
        sim.record_steps(1, dt, n)
        if self.prefilling:
            done: list[_Req] = []
            for r in self.prefilling:
                r.computed += r.key
                r.key = 0
                if r.computed >= r.target:
                    done.append(r)
            for r in done:
                self.prefilling.remove(r)
                self.prefill_done(r)
        self.finish_due()
        sim.sample(self.eng.now)
        self.schedule()

    def prefill_done(self, r: _Req) -> None:
        sim = self.sim
        now = self.eng.now
        r.g += 1
        if self.caching and r.pid >= 0:
            self.register_prefix(r)
        if self.role == "prefill":
            sim.handoff(self, r)
            return
        if sim.first_s[r.i] != sim.first_s[r.i]:  # NaN: first token of this request
            sim.first_s[r.i] = now
        if r.g >= r.output:
            self.release(r, r.target)
            self.outstanding -= 1
            sim.finish(r)
        else:
            self.join(r, r.target)

    def finish_due(self) -> None:
        heap = self.heap
        G = self.G
        decode = self.decode
        while heap and heap[0][0] <= G:
            _, i, ver, r = heapq.heappop(heap)
            if r.ver != ver or i not in decode:
                continue
            ctx = r.key + G
            self.leave(r)
            self.release(r, ctx)
            self.outstanding -= 1
            self.sim.finish(r)


class _Sim:
    def __init__(self, cluster: ClusterConfig, reqs: Requests, model: StepModel,
                 workload: Workload, fast_forward: bool) -> None:
        self.eng = Engine(seed=workload.seed)
        self.model = model
        self.fast_forward = fast_forward
        self.reqs = reqs
        self.closed = workload.arrival == "closed"
        self.concurrency = workload.concurrency
        n = len(reqs)
        self.n = n
        self.arrival_s = np.array(reqs.arrival_s, dtype=np.float64)
        self.first_s = np.full(n, np.nan)
        self.finish_s = np.full(n, np.nan)
        self._in = reqs.input_len.tolist()
        self._out = reqs.output_len.tolist()
        self._pid = reqs.prefix_id.tolist()
        share = reqs.prefix_len.tolist()
        self._share = [s if s > 0 else i for s, i in zip(share, self._in, strict=True)]
        self.preemptions = 0
        self.prompt_tokens = 0
        self.hit_tokens = 0
        self.finished = 0
        self.next_i = 0
        self.steps = 0
        self.itl_dt = array("d")
        self.itl_w = array("d")
        self.in_system = 0
        self.area = 0.0
        self.last_t = 0.0
        self.sample_dt = 1e-3
        self.next_sample = 0.0
        self.ser_t = array("d")
        self.ser_kv = array("d")
        self.ser_q = array("d")
        self.ser_run = array("d")
        d = cluster.disaggregation
        self.pd = d
        if d is None:
            self.front = [_Replica(self, cluster.engine, "both") for _ in range(cluster.replicas)]
            self.back = self.front
        else:
            pcfg = d.prefill_engine or cluster.engine
            self.front = [_Replica(self, pcfg, "prefill") for _ in range(d.prefill_replicas)]
            self.back = [_Replica(self, cluster.engine, "decode")
                         for _ in range(d.decode_replicas)]
        self.all = self.front + ([] if self.back is self.front else self.back)
        self.total_blocks = sum(r.nblocks for r in self.all)
        self.least = cluster.router == "least_outstanding"
        self.rr = {id(self.front): 0, id(self.back): 0}
        self.check_fits(cluster)

    def check_fits(self, cluster: ClusterConfig) -> None:
        tokens = self.reqs.input_len + self.reqs.output_len
        for pool in {id(self.front): self.front, id(self.back): self.back}.values():
            cfg = pool[0].cfg
            cap = cfg.kv_blocks * cfg.block_size
            bad = np.flatnonzero(tokens > cap)
            if bad.size:
                i = int(bad[0])
                raise ServingError(
                    f"request {i} ({self.reqs.source}): {int(tokens[i])} tokens (input "
                    f"{int(self.reqs.input_len[i])} + output {int(self.reqs.output_len[i])}) "
                    f"exceed one replica's KV cache of {cap} tokens ({cfg.kv_blocks} blocks "
                    f"x {cfg.block_size}); raise kv_blocks or cap the lengths")
            if not cfg.chunked_prefill:
                long = np.flatnonzero(tokens > cfg.max_num_batched_tokens)
                if long.size:
                    i = int(long[0])
                    raise ServingError(
                        f"request {i}: up to {int(tokens[i])} prompt tokens (after a "
                        f"preemption) exceed max_num_batched_tokens "
                        f"{cfg.max_num_batched_tokens} with chunked_prefill off; enable "
                        "chunked prefill or raise the budget")

    # ---- arrivals and routing -----------------------------------------------------------
    def route(self, pool: list[_Replica]) -> _Replica:
        if self.least:
            best = pool[0]
            for rep in pool:
                if rep.outstanding < best.outstanding:
                    best = rep
            return best
        key = id(pool)
        j = self.rr[key]
        self.rr[key] = (j + 1) % len(pool)
        return pool[j]

    def arrive(self) -> None:
        """Admit request ``next_i`` now; open-loop arrivals chain the next one."""
        i = self.next_i
        self.next_i += 1
        now = self.eng.now
        if not self.closed and self.next_i < self.n:
            self.eng.at(float(self.arrival_s[self.next_i]), self.arrive)
        self.arrival_s[i] = now
        self.area += self.in_system * (now - self.last_t)
        self.last_t = now
        self.in_system += 1
        r = _Req(i, self._in[i], self._out[i], self._pid[i], self._share[i])
        rep = self.route(self.front)
        rep.outstanding += 1
        rep.enqueue(r)

    def handoff(self, rep: _Replica, r: _Req) -> None:
        """PD: move ``r``'s KV over the prefill replica's link (FIFO), then to decode."""
        assert self.pd is not None
        rep.outstanding -= 1
        now = self.eng.now
        start = max(now, rep.link_free_s)
        xfer = self.pd.kv_bytes_per_token * r.input / self.pd.link_bytes_per_s
        rep.link_free_s = start + xfer
        self.eng.at(start + xfer + self.pd.link_latency_s, self.transferred, rep, r)

    def transferred(self, rep: _Replica, r: _Req) -> None:
        now = self.eng.now
        rep.release(r, r.target)
        if rep.waiting and not rep.busy:
            rep.busy = True
            self.eng.at(now, rep.schedule)
        if self.first_s[r.i] != self.first_s[r.i]:
            self.first_s[r.i] = now  # the first token reaches the client with the KV
        if r.g >= r.output:
            self.finish(r)
            return
        r.target = r.input + r.g - 1  # tokens whose KV is cached
        r.computed = r.target
        r.remote = True
        r.shared = 0
        dec = self.route(self.back)
        dec.outstanding += 1
        dec.enqueue(r)

    def finish(self, r: _Req) -> None:
        now = self.eng.now
        self.finish_s[r.i] = now
        self.finished += 1
        self.area += self.in_system * (now - self.last_t)
        self.last_t = now
        self.in_system -= 1
        if self.closed and self.next_i < self.n:
            self.arrive()

    # ---- metrics ------------------------------------------------------------------------
    def record_steps(self, k: int, mean_dt: float, n: int) -> None:
        self.steps += k
        if n:
            self.itl_dt.append(mean_dt)
            self.itl_w.append(float(n * k))

    def sample(self, now: float) -> None:
        if now < self.next_sample:
            return
        if len(self.ser_t) >= MAX_SAMPLES:  # keep every other point, sample half as often
            for a in (self.ser_t, self.ser_kv, self.ser_q, self.ser_run):
                a[:] = a[::2]
            self.sample_dt *= 2
        used = sum(r.used + r.cache_blocks - r.evictable for r in self.all)
        self.ser_t.append(now)
        self.ser_kv.append(used / self.total_blocks)
        self.ser_q.append(float(sum(len(r.waiting) for r in self.all)))
        self.ser_run.append(float(sum(len(r.decode) + len(r.prefilling) for r in self.all)))
        self.next_sample = now + self.sample_dt

    def run(self) -> None:
        if self.closed:
            for _ in range(min(self.concurrency, self.n)):
                self.eng.at(0.0, self.arrive)
        else:
            self.eng.at(float(self.arrival_s[0]), self.arrive)
        self.eng.run()
        if self.finished < self.n:
            raise ServingError(
                f"simulation stalled with {self.n - self.finished} of {self.n} requests "
                "unfinished (a scheduler bug or a configuration no request can fit)")


def _stats(x: FloatArray) -> dict[str, float]:
    if x.size == 0:
        return {"p50": math.nan, "p90": math.nan, "p99": math.nan, "mean": math.nan}
    p50, p90, p99 = np.percentile(x, [50, 90, 99])
    return {"p50": float(p50), "p90": float(p90), "p99": float(p99), "mean": float(x.mean())}


def _weighted_stats(v: FloatArray, w: FloatArray) -> dict[str, float]:
    if v.size == 0 or w.sum() <= 0:
        return _stats(np.empty(0))
    order = np.argsort(v, kind="stable")
    v, w = v[order], w[order]
    cw = np.cumsum(w)
    out = {}
    for name, q in (("p50", 0.5), ("p90", 0.9), ("p99", 0.99)):
        out[name] = float(v[min(int(np.searchsorted(cw, q * cw[-1])), v.size - 1)])
    out["mean"] = float((v * w).sum() / cw[-1])
    return out


def simulate(cluster: ClusterConfig, workload: Workload, model: StepModel, *,
             slo_ttft_s: float = math.inf, slo_tpot_s: float = math.inf,
             fast_forward: bool = True, requests: Requests | None = None) -> ServingResult:
    """Simulate ``workload`` on ``cluster`` with step times from ``model``.

    ``fast_forward=False`` runs one event per engine iteration (the reference path).
    ``requests`` overrides the workload's stream (its arrival process still decides open or
    closed loop).
    """
    t_wall = time.perf_counter()
    cluster.validate()
    reqs = requests if requests is not None else make_requests(workload)
    if len(reqs) == 0:
        raise ServingError("workload: no requests")
    sim = _Sim(cluster, reqs, model, workload, fast_forward)
    sim.run()
    arr, first, fin = sim.arrival_s, sim.first_s, sim.finish_s
    out = reqs.output_len.astype(np.float64)
    eng = cluster.engine
    if eng.token_delay_s > 0 or eng.token_delay_steps > 0:
        step = np.where(out > 1, (fin - first) / np.maximum(out - 1, 1), 0.0)
        shift = eng.token_delay_s + eng.token_delay_steps * step
        first, fin = first + shift, fin + shift
    ttft = first - arr
    e2e = fin - arr
    tpot = np.where(out > 1, (e2e - ttft) / np.maximum(out - 1, 1), 0.0)
    duration = float(fin.max() - arr.min())
    dur = duration if duration > 0 else math.inf
    good = int(np.count_nonzero((ttft <= slo_ttft_s) & (tpot <= slo_tpot_s)))
    kv = np.frombuffer(sim.ser_kv, dtype=np.float64).copy()
    return ServingResult(
        requests=sim.n,
        duration_s=duration,
        ttft_s=_stats(ttft),
        tpot_s=_stats(tpot[out > 1]),
        itl_s=_weighted_stats(np.frombuffer(sim.itl_dt, dtype=np.float64),
                              np.frombuffer(sim.itl_w, dtype=np.float64)),
        e2e_s=_stats(e2e),
        output_tokens_per_s=float(out.sum()) / dur,
        requests_per_s=sim.n / dur,
        goodput_rps=good / dur,
        slo_ttft_s=slo_ttft_s,
        slo_tpot_s=slo_tpot_s,
        preemptions=sim.preemptions,
        prefix_hit_rate=sim.hit_tokens / sim.prompt_tokens if sim.prompt_tokens else 0.0,
        mean_in_system=sim.area / dur,
        kv_util_mean=float(kv.mean()) if kv.size else 0.0,
        series_t_s=np.frombuffer(sim.ser_t, dtype=np.float64).copy(),
        kv_util=kv,
        queue_len=np.frombuffer(sim.ser_q, dtype=np.float64).copy(),
        running=np.frombuffer(sim.ser_run, dtype=np.float64).copy(),
        events=sim.eng.events,
        steps=sim.steps,
        wall_s=time.perf_counter() - t_wall,
        per_request={"arrival_s": arr, "ttft_s": ttft, "tpot_s": tpot, "e2e_s": e2e},
    )
