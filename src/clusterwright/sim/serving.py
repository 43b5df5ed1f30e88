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

import math
import time
from array import array
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from clusterwright.sim.engine import Engine
from clusterwright.sim.serving_config import (
    ClusterConfig,
    Disaggregation,
    EngineConfig,
    StepModel,
)
from clusterwright.sim.serving_replica import Replica, Req
from clusterwright.sim.serving_trace import (
    Lengths,
    Requests,
    ServingError,
    Workload,
    make_requests,
)

# The simulator's API: ``simulate`` and the types it takes and returns, importable together.
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

MAX_SAMPLES = 1024  # time-series points kept (the interval doubles when full)

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
    # of which loaded from the host tier (CPU memory) / prompt tokens
    host_hit_rate: float
    mean_in_system: float  # time-average of requests arrived and not finished
    kv_util_mean: float
    series_t_s: FloatArray  # sample times of the series below
    kv_util: FloatArray  # used KV blocks / all KV blocks, over all replicas
    queue_len: FloatArray  # waiting requests, over all replicas
    running: FloatArray
    events: int  # engine callbacks run
    steps: int  # engine iterations simulated (a fast-forwarded block counts all its steps)
    wall_s: float
    # Stopped once the TTFT p99 was sure to exceed ``stop_ttft_p99_over`` (``simulate``):
    # the TTFT statistics are then lower bounds over the requests that had arrived, the
    # others over the requests that had finished.
    truncated: bool = False
    per_request: dict[str, FloatArray] = field(repr=False, default_factory=dict)

    def summary(self) -> dict[str, object]:
        """Scalars only (no arrays), for printing or JSON."""
        return {k: v for k, v in self.__dict__.items()
                if not isinstance(v, np.ndarray) and k != "per_request"}


class _Sim:
    """One run: arrivals, routing over the replicas, the prefill-to-decode hand-off, metrics
    (the ``ReplicaHost`` its replicas report to)."""

    def __init__(self, cluster: ClusterConfig, reqs: Requests, model: StepModel,
                 workload: Workload, fast_forward: bool,
                 stop_ttft_p99_over: float | None = None) -> None:
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
        self.host_hit_tokens = 0
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
        # The TTFT p99 over n requests (numpy's linear interpolation) exceeds a bound as soon
        # as n - floor(0.99 (n - 1)) of them do: a token still to come counts from its wait.
        self.stop_over = stop_ttft_p99_over
        self.stop_late = n - math.floor(0.99 * (n - 1))
        self.firsts = 0  # first tokens recorded
        self.late_firsts = 0  # ... later than ``stop_over`` after their arrival
        self.ser_t = array("d")
        self.ser_kv = array("d")
        self.ser_q = array("d")
        self.ser_run = array("d")
        d = cluster.disaggregation
        self.pd = d
        if d is None:
            self.front = [Replica(self, cluster.engine, "both") for _ in range(cluster.replicas)]
            self.back = self.front
        else:
            pcfg = d.prefill_engine or cluster.engine
            self.front = [Replica(self, pcfg, "prefill") for _ in range(d.prefill_replicas)]
            self.back = [Replica(self, cluster.engine, "decode")
                         for _ in range(d.decode_replicas)]
        self.all = self.front + ([] if self.back is self.front else self.back)
        self.total_blocks = sum(r.nblocks for r in self.all)
        self.least = cluster.router in ("least_outstanding", "cache_aware")
        self.cache_aware = cluster.router == "cache_aware"
        self.cluster = cluster
        # cache_aware: the replica each prefix was last routed to (the router's tree holds
        # what it sent where, not what the replicas evicted since)
        self.holder: dict[int, Replica] = {}
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
                # A request preempted under "evict" admission recomputes its prompt and the
                # tokens it had generated in one prefill; "reserve" admission never preempts,
                # so only the prompt has to fit
                evict = cfg.admission == "evict"
                need = tokens if evict else self.reqs.input_len
                long = np.flatnonzero(need > cfg.max_num_batched_tokens)
                if long.size:
                    i = int(long[0])
                    raise ServingError(
                        f"request {i}: {'up to ' if evict else ''}{int(need[i])} prompt tokens"
                        f"{' (after a preemption)' if evict else ''} exceed "
                        f"max_num_batched_tokens {cfg.max_num_batched_tokens} with "
                        "chunked_prefill off; enable chunked prefill or raise the budget")

    # ---- arrivals and routing -----------------------------------------------------------
    def route_prefix(self, r: Req) -> Replica:
        """SGLang's cache-aware policy over the front replicas for ``r``."""
        pool, c = self.front, self.cluster
        loads = [rep.outstanding for rep in pool]
        lo, hi = min(loads), max(loads)
        held = self.holder.get(r.pid) if r.pid >= 0 else None
        balanced = not (hi - lo > c.balance_abs and hi > c.balance_rel * lo)
        if (held is not None and balanced and r.input > 0
                and r.share / r.input >= c.cache_threshold):
            return held
        rep = self.route(pool)
        if r.pid >= 0:
            self.holder[r.pid] = rep
        return rep

    def route(self, pool: list[Replica]) -> Replica:
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
        r = Req(i, self._in[i], self._out[i], self._pid[i], self._share[i])
        rep = self.route_prefix(r) if self.cache_aware else self.route(self.front)
        rep.outstanding += 1
        rep.enqueue(r)

    def handoff(self, rep: Replica, r: Req) -> None:
        """PD: move ``r``'s KV over the prefill replica's link (FIFO), then to decode."""
        assert self.pd is not None
        rep.outstanding -= 1
        now = self.eng.now
        start = max(now, rep.link_free_s)
        xfer = self.pd.kv_bytes_per_token * r.input / self.pd.link_bytes_per_s
        rep.link_free_s = start + xfer
        self.eng.at(start + xfer + self.pd.link_latency_s, self.transferred, rep, r)

    def transferred(self, rep: Replica, r: Req) -> None:
        now = self.eng.now
        rep.release(r, r.target)
        if rep.waiting and not rep.busy:
            rep.busy = True
            self.eng.at(now, rep.schedule)
        if r.g >= r.output:
            if self.first_s[r.i] != self.first_s[r.i]:
                self.first_token(r.i, now)  # a one-token request: its token comes with the KV
            self.finish(r)
            return
        # The first token reaches the client when a decode replica admits the request: the
        # engines hold a prompt's KV transfer (and its first token) until the decode side has
        # a slot for it (SGLang's pre-allocation queue, Dynamo's decode-first hand-off), so a
        # full decode batch delays the first token, not only the later ones.
        r.target = r.input + r.g - 1  # tokens whose KV is cached
        r.computed = r.target
        r.remote = True
        r.shared = 0
        dec = self.route(self.back)
        dec.outstanding += 1
        dec.enqueue(r)

    def finish(self, r: Req) -> None:
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
        # The count is taken only once the late first tokens and the arrived requests still
        # waiting for theirs could reach the stop (an unloaded run never pays for it).
        if (self.stop_over is not None
                and self.late_firsts + self.next_i - self.firsts >= self.stop_late
                and self.late(now) >= self.stop_late):
            self.eng.stop()

    def first_token(self, i: int, now: float) -> None:
        """Request ``i``'s first token, generated at ``now`` (s)."""
        self.first_s[i] = now
        self.firsts += 1
        if self.stop_over is not None and now - self.arrival_s[i] > self.stop_over:
            self.late_firsts += 1

    def ttft_floor(self, now: float) -> FloatArray:
        """Each arrived request's TTFT as known at ``now`` (s): measured, or for a first
        token still to come the wait so far (the client-side delays ``simulate`` adds later
        only lengthen it)."""
        k = self.next_i
        a, f = self.arrival_s[:k], self.first_s[:k]
        return np.where(np.isnan(f), now - a, f - a)

    def late(self, now: float) -> int:
        """Arrived requests whose TTFT already exceeds ``stop_over``."""
        assert self.stop_over is not None
        return int(np.count_nonzero(self.ttft_floor(now) > self.stop_over))

    def run(self) -> None:
        if self.closed:
            for _ in range(min(self.concurrency, self.n)):
                self.eng.at(0.0, self.arrive)
        else:
            self.eng.at(float(self.arrival_s[0]), self.arrive)
        self.eng.run()
        if self.finished < self.n and not self.eng.stopped:
            raise ServingError(
                f"simulation stalled with {self.n - self.finished} of {self.n} requests "
                "unfinished (a scheduler bug or a configuration no request can fit)")


def _time_mean(t: FloatArray, x: FloatArray) -> float:
    """The time average of a series sampled at times ``t`` (s), linear between samples. The
    samples are taken at events, which a fast-forwarded block of decode iterations makes
    sparse and irregular (one at its end, the KV cache grown over it): their plain mean
    would count that end as often as one iteration's sample and read the cache fuller than
    it was (4-34 % above one event an iteration on the simulator's tests)."""
    if x.size == 0:
        return 0.0
    span = float(t[-1] - t[0]) if t.size else 0.0
    if x.size < 2 or span <= 0:
        return float(x.mean())
    return float(np.sum((x[1:] + x[:-1]) * np.diff(t)) / (2.0 * span))


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
             fast_forward: bool = True, requests: Requests | None = None,
             stop_ttft_p99_over: float | None = None) -> ServingResult:
    """Simulate ``workload`` on ``cluster`` with step times from ``model``.

    ``fast_forward=False`` runs one event per engine iteration (the reference path).
    ``requests`` overrides the workload's stream (its arrival process still decides open or
    closed loop). ``stop_ttft_p99_over`` (s): stop as soon as enough requests have waited
    longer than that for their first token that the whole run's TTFT p99 must exceed it (a
    capacity search asks only whether a load meets an SLO; an overloaded run's queue would
    otherwise be simulated to its end). The result is then ``truncated``: its TTFT p99 is
    a lower bound above the bound (see ``ServingResult``).
    """
    t_wall = time.perf_counter()
    cluster.validate()
    reqs = requests if requests is not None else make_requests(workload)
    if len(reqs) == 0:
        raise ServingError("workload: no requests")
    if stop_ttft_p99_over is not None and not stop_ttft_p99_over >= 0:
        raise ServingError(f"stop_ttft_p99_over: must be a non-negative number of seconds, "
                           f"got {stop_ttft_p99_over}")
    sim = _Sim(cluster, reqs, model, workload, fast_forward, stop_ttft_p99_over)
    sim.run()
    truncated = sim.eng.stopped
    arr, first, fin = sim.arrival_s, sim.first_s, sim.finish_s
    out = reqs.output_len.astype(np.float64)
    eng = cluster.engine
    if eng.token_delay_s > 0 or eng.token_delay_steps > 0:
        step = np.where(out > 1, (fin - first) / np.maximum(out - 1, 1), 0.0)
        shift = eng.token_delay_s + eng.token_delay_steps * step
        first, fin = first + shift, fin + shift
    d = cluster.disaggregation
    if d is not None and d.first_chunk_tokens > 1:
        # The first token reaches the client with the decode replica's first chunk, k - 1
        # tokens beyond the one-token path above (never past the last token): TTFT later,
        # the end unchanged, so TPOT, (end - TTFT) / (out - 1), spreads the rest
        step = np.where(out > 1, (fin - first) / np.maximum(out - 1, 1), 0.0)
        wait = np.minimum(float(d.first_chunk_tokens - 1), np.maximum(out - 1, 0))
        first = first + wait * step
    ttft = first - arr
    e2e = fin - arr
    tpot = np.where(out > 1, (e2e - ttft) / np.maximum(out - 1, 1), 0.0)
    if truncated:
        # The requests that arrived; a TTFT not known yet (or not shifted yet: the shifts
        # need the last token) is its floor so far.
        now = sim.eng.now
        k = sim.next_i
        done = ~np.isnan(fin[:k])
        floor = sim.ttft_floor(now)
        ttft_s = _stats(np.where(np.isnan(ttft[:k]), floor, ttft[:k]))
        ttft_s["p99"] = float(np.partition(floor, -sim.stop_late)[-sim.stop_late])
        e2e, tpot, out = e2e[:k][done], tpot[:k][done], out[:k][done]
        ttft, arr = ttft[:k][done], arr[:k][done]
        duration = float(now - sim.arrival_s[0])
    else:
        ttft_s = _stats(ttft)
        duration = float(fin.max() - arr.min())
    dur = duration if duration > 0 else math.inf
    good = int(np.count_nonzero((ttft <= slo_ttft_s) & (tpot <= slo_tpot_s)))
    kv = np.frombuffer(sim.ser_kv, dtype=np.float64).copy()
    series_t = np.frombuffer(sim.ser_t, dtype=np.float64).copy()
    return ServingResult(
        requests=sim.n,
        duration_s=duration,
        ttft_s=ttft_s,
        tpot_s=_stats(tpot[out > 1]),
        itl_s=_weighted_stats(np.frombuffer(sim.itl_dt, dtype=np.float64),
                              np.frombuffer(sim.itl_w, dtype=np.float64)),
        e2e_s=_stats(e2e),
        output_tokens_per_s=float(out.sum()) / dur,
        requests_per_s=int(out.size) / dur,
        goodput_rps=good / dur,
        slo_ttft_s=slo_ttft_s,
        slo_tpot_s=slo_tpot_s,
        preemptions=sim.preemptions,
        prefix_hit_rate=sim.hit_tokens / sim.prompt_tokens if sim.prompt_tokens else 0.0,
        host_hit_rate=sim.host_hit_tokens / sim.prompt_tokens if sim.prompt_tokens else 0.0,
        mean_in_system=sim.area / dur,
        kv_util_mean=_time_mean(series_t, kv),
        series_t_s=series_t,
        kv_util=kv,
        queue_len=np.frombuffer(sim.ser_q, dtype=np.float64).copy(),
        running=np.frombuffer(sim.ser_run, dtype=np.float64).copy(),
        events=sim.eng.events,
        steps=sim.steps,
        wall_s=time.perf_counter() - t_wall,
        truncated=truncated,
        per_request={"arrival_s": arr, "ttft_s": ttft, "tpot_s": tpot, "e2e_s": e2e},
    )
