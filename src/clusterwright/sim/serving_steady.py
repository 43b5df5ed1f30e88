"""Steady state of a closed-loop serving benchmark, solved directly.

A benchmark such as AIPerf with ``--concurrency C`` keeps C clients busy: each sends a prompt
of ``isl`` tokens, streams ``osl`` output tokens, and sends the next prompt. With fixed lengths
the engine settles into a steady state that the event simulator (``sim/serving.py``) reaches
after a few rounds; this module solves for it in closed form, in milliseconds, so that
thousands of measured configurations can be predicted (``validation/serving_silicon.py``)
and a planner can search many layouts.

Aggregated serving, one data-parallel rank with N clients, per iteration (fluid model):
``r`` requests finish, so ``D = r (osl - 1)`` sequences decode and ``r isl`` prompt tokens
are prefilled, within the engine's token budget B (chunked prefill: chunks of the budget the
decodes leave; without it, whole prompts that fit). Admitted requests are those the KV cache
holds (reserved for the whole request, or on average half the output when the engine
preempts instead); the rest wait. Little's law closes it: admitted = r x (iterations to the
first token + osl - 1), with the prefill queue an M/D/1 wait at the budget's utilisation. An
iteration carries a prefill with the frequency that delivers ``r isl`` tokens; its time comes
from the step model; TPOT is the mean iteration time a decoding sequence sees.

Disaggregated serving: prefill workers (one prompt at a time, an M/D/1 queue; once prompts
come faster than that, back-to-back batches of those that gathered, within the budget), the
KV cache sent to a decode worker over the link, and decode workers at the batch
the closed loop leaves them; the request rate solves C = rate x (TTFT + (osl - 1) TPOT).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Protocol, runtime_checkable


class StepModel(Protocol):
    def step_s(self, prefill_tokens: float, decode_seqs: float, kv_tokens: float,
               prefill_pairs: float | None = None) -> float: ...


@runtime_checkable
class SpeculativeStepModel(StepModel, Protocol):
    def speculative_extra_s(self, decode_seqs: float, kv_tokens: float,
                            draft_tokens: int) -> float: ...


@dataclass(frozen=True)
class Pool:
    """Identical engine ranks serving one role: step model, scheduler, KV capacity."""

    step: StepModel
    ranks: int  # data-parallel ranks (workers x attention-DP)
    budget: int  # tokens one iteration carries
    chunked: bool
    admission: str  # "reserve" or "evict"
    kv_tokens: float  # KV cache of one rank, tokens
    max_seqs: int = 1 << 30
    frontend_s: float = 0.0  # API server and first-token path outside the iterations
    burst: float = 0.0  # share of the other running clients' prompts a new prompt waits for
    first_token_iterations: float = 0.0  # iterations between a prompt's prefill and its token
    context_wait_iterations: float = 0.0  # iterations a prompt is held to batch prompts across
    # attention-DP ranks (TRT-LLM attention_dp_config; 0 without attention DP)
    # Batch waiting (``ServingEngine.batch_wait_iterations``): while sequences decode, new
    # prompts are held for up to this many iterations, or until the iteration would carry
    # ``batch_wait_tokens`` tokens (decodes and held prompts together)
    batch_wait_iterations: float = 0.0
    batch_wait_tokens: float = 0.0
    # Request polling (SGLang ``--scheduler-recv-interval``): while sequences decode, new
    # prompts are taken every ``recv_interval`` decode iterations, and right after an
    # iteration that ran a prefill
    recv_interval: int = 1
    # Attention-DP balancing: prompts held until every one of ``balance_ranks`` ranks has
    # one, or ``balance_timeout`` iterations (replaces ``context_wait_iterations``)
    balance_timeout: float = 0.0
    balance_ranks: int = 1
    # Speculative decoding: tokens a decode iteration yields per sequence (1 without), and
    # what such an iteration costs over a plain one (drafts and the wider verification):
    # a factor, or None for the step model's own cost of ``spec_draft`` draft tokens
    # (``SpeculativeStepModel``: the verification's extra tokens and the draft passes)
    spec_yield: float = 1.0
    spec_cost: float | None = 1.0
    spec_draft: int = 0
    # Equal-length closed-loop clients on an engine that prefills every waiting prompt before
    # it decodes (SGLang without mixed chunks): the clients move in lockstep (``lockstep``)
    lockstep: bool = False
    # The engine runs waiting prompts before it decodes again (SGLang's prefill priority)
    prefill_first: bool = False


# A saturated loop's TTFT moving at least 2 % per 1 % of rate error counts as a queue's length
# (``SteadyState.ttft_sensitivity``): below that the queue is short beside the prefill itself.
# A presentation threshold for ``serve estimate`` and the serving-silicon table, not a fit.
SATURATED_SENSITIVITY = 2.0


@dataclass(frozen=True)
class SteadyState:
    ttft_s: float
    tpot_s: float
    requests_per_s: float
    decode_batch: float  # sequences decoding per rank
    admitted: float  # requests holding KV per rank
    detail: str
    # TTFT's parts, seconds: waiting for a batch slot or KV, waiting behind other prompts
    # and the iterations from the prompt's last to its first token, the prompt's own prefill
    # iterations. With the engine's front end (``Pool.frontend_s``), ``first_chunk_s`` and
    # ``handoff_s`` they sum to ``ttft_s`` (before ``with_opening_wave``)
    slot_wait_s: float = 0.0
    queue_wait_s: float = 0.0
    prefill_s: float = 0.0
    # waiting for the decode worker's first streamed chunk (disaggregated, ``first_chunk``)
    first_chunk_s: float = 0.0
    # disaggregated: the request's fixed hand-off and its KV cache's transfer, waiting for
    # the prefill rank's link included (not in ``queue_wait_s``)
    handoff_s: float = 0.0
    # What holds the rate when the loop is saturated: "prefill" (the prefill ranks at their
    # capacity), "slots" (clients waiting for a batch slot or KV cache), "" when the rate
    # follows the clients. Saturated, TTFT = clients / rate - the decode time (Little's law
    # with the rate fixed): a difference of two large terms, ``ttft_sensitivity``.
    bound: str = ""

    def ttft_parts(self, frontend_s: float) -> dict[str, float]:
        """TTFT's parts, seconds, with the engine's front end ``frontend_s``: they sum to
        ``ttft_s`` (before ``with_opening_wave``)."""
        return {"frontend": frontend_s, "slot_wait": self.slot_wait_s,
                "queue_wait": self.queue_wait_s, "handoff": self.handoff_s,
                "prefill": self.prefill_s, "first_chunk": self.first_chunk_s}

    def ttft_sensitivity(self, clients: float) -> float | None:
        """Per cent of TTFT that 1 % of error in the saturated rate moves, (clients / rate) /
        TTFT; None when the rate follows the clients (not saturated)."""
        if not self.bound or self.requests_per_s <= 0 or self.ttft_s <= 0:
            return None
        return clients / self.requests_per_s / self.ttft_s


def _mm1_wait(service: float, util: float) -> float:
    """M/D/1 mean wait before service (Pollaczek-Khinchine), ``util`` < 1."""
    return service * util / (2.0 * (1.0 - util))


def prompts_per_batch(pool: Pool, isl: int) -> int:
    """Prompts of ``isl`` tokens a prefill-only rank runs in one batch: as many as its token
    budget holds, and no more than its max batch (TensorRT-LLM's disaggregated recipes give
    their context workers 1-16 requests, whatever the budget)."""
    return max(1, min(pool.budget // isl, int(pool.max_seqs)))


def prefill_batch_s(pool: Pool, prompts: float, isl: int) -> float:
    """Seconds for a prefill-only rank to prefill ``prompts`` prompts of ``isl`` tokens
    together: one iteration, or with chunked prefill a prompt longer than the token budget in
    budget-sized chunks, each attending to the chunks before it (SGLang's chunked-prefill
    size split over attention-DP ranks leaves 2,048 tokens a rank on 8 ranks)."""
    tokens = prompts * isl
    if not pool.chunked or tokens <= pool.budget:
        return pool.step.step_s(round(tokens), 0, 0, tokens * isl / 2.0)
    b, done, t = float(pool.budget), 0.0, 0.0
    while done < isl:
        c = min(b, isl - done)
        t += pool.step.step_s(round(c), 0, 0, c * (done + c / 2.0))
        done += c
    return t * prompts


def prefill_rate_max(pool: Pool, isl: int) -> float:
    """Prompts of ``isl`` tokens a second that a prefill-only pool's ranks finish at most:
    full batches back to back (``prompts_per_batch``). A disaggregated steady state's rate
    stays below it (``disaggregated`` holds it at 0.999 of this, or of the KV links' rate
    where that is lower)."""
    full = prompts_per_batch(pool, isl)
    return pool.ranks * full / prefill_batch_s(pool, float(full), isl)


def opening_wave_s(pool: Pool, prompts: float, isl: int, osl: int) -> float:
    """Mean TTFT (seconds) of ``prompts`` prompts that reach one idle rank at the same
    instant: a closed-loop benchmark's first round, which starts every client at once.

    The rank prefills them first come, first served, as fast as its token budget allows:
    whole prompts per iteration without chunked prefill, budget-sized chunks with it. The
    prompts it has finished decode in the same iterations (half of them on average over the
    phase), unless the engine runs waiting prompts first. Prompt i's first token comes with
    the iteration that completes it: on average half-way through the phase."""
    a = max(float(prompts), 1.0)
    B = float(pool.budget)
    dec = 0.0 if pool.prefill_first else min(a / 2.0, float(pool.max_seqs))
    kv_dec = dec * (isl + osl / 2.0)
    if pool.chunked:
        p = max(B - dec, 1.0)
        tokens = a * isl
        chunk = min(p, tokens)
        # Prompt i completes in chunk ceil((i + 1) isl / p): the mean over the prompts.
        iters = 1.0 if tokens <= p else (tokens + isl) / (2.0 * p) + 0.5
        t = pool.step.step_s(round(chunk), round(dec), kv_dec, chunk * isl / 2.0)
    else:
        per_iter = max(1.0, math.floor(max(B - dec, 1.0) / isl))
        batch = min(a, per_iter)
        iters = (math.ceil(a / per_iter) + 1.0) / 2.0 if a > per_iter else 1.0
        t = pool.step.step_s(round(batch * isl), round(dec), kv_dec, batch * isl * isl / 2.0)
    t_dec = pool.step.step_s(0, round(a), a * (isl + osl / 2.0))
    return pool.frontend_s + iters * t + (
        pool.first_token_iterations + pool.context_wait_iterations) * t_dec


def with_opening_wave(st: SteadyState, wave_s: float, rounds: float) -> SteadyState:
    """``st`` with its TTFT the mean over a benchmark of ``rounds`` requests per client whose
    first round is an opening wave of mean TTFT ``wave_s`` (0 rounds: the steady state)."""
    if rounds <= 1.0:
        return st if rounds <= 0.0 else replace(st, ttft_s=wave_s)
    ttft = ((rounds - 1.0) * st.ttft_s + wave_s) / rounds
    return replace(st, ttft_s=ttft, detail=st.detail + (
        f"; first of {rounds:g} rounds an opening wave (TTFT {wave_s * 1e3:.0f} ms)"))


def lockstep(pool: Pool, clients: float, isl: int, osl: int) -> SteadyState:
    """Steady state of equal-length closed-loop clients on an engine that runs every waiting
    prompt's prefill before it decodes again (prefill priority, no mixed batches: SGLang's
    scheduler without ``--enable-mixed-chunk``).

    Prompts that arrive together are prefilled together, chunk after chunk of the token
    budget, while every running sequence waits; then all of them decode together, finish in
    the same iteration and come back together. The clients stay in one cluster: a cycle is
    the cluster's prefill phase and ``osl - 1`` decode iterations of the whole batch. A prompt
    gets its first token when the chunk that completes it runs (on average half-way through
    the phase, one chunk's worth later), and waits out the rest of the phase before its
    second token, which TPOT carries. Clients the KV cache or batch limit leave out wait a
    whole cycle per admitted cluster ahead of them."""
    n = clients / pool.ranks
    per_req = isl + (osl if pool.admission == "reserve" else osl / 2.0)
    fits = math.floor(pool.kv_tokens / per_req)
    if fits < 1:
        raise ValueError(f"one request of {isl} + {osl} tokens does not fit the KV cache of "
                         f"{pool.kv_tokens:,.0f} tokens")
    a = float(min(max(n, 1.0), pool.max_seqs, fits))
    B, out1 = float(pool.budget), float(max(osl - 1, 0))
    tokens = a * isl
    chunks = max(1, math.ceil(tokens / B))
    full = min(B, tokens)
    t_full = pool.step.step_s(round(full), 0, 0, full * isl / 2.0)
    last = tokens - (chunks - 1) * B
    t_last = pool.step.step_s(round(last), 0, 0, last * isl / 2.0) if chunks > 1 else t_full
    phase = (chunks - 1) * t_full + t_last
    # Prompt i (of a) completes in chunk ceil((i + 1) isl / B): the mean end over prompts.
    done = (chunks + 1) / 2.0 if chunks > 1 else 1.0
    first = min(phase, done * t_full)
    t_dec = _iteration(pool, 0, round(a), a * (isl + osl / 2.0))
    decode = out1 / pool.spec_yield * t_dec
    cycle = phase + decode
    waiting = max(n - a, 0.0)
    slot_wait = waiting / a * cycle if waiting > 0 else 0.0
    late = pool.first_token_iterations * t_dec
    ttft = pool.frontend_s + slot_wait + first + late
    tpot = ((phase - first) + decode) / out1 if out1 > 0 else t_dec / pool.spec_yield
    rate = a / cycle * pool.ranks if cycle > 0 else 0.0
    detail = (f"{n:.0f} clients/rank in lockstep, {a:.0f} admitted: prefill phase "
              f"{phase * 1e3:.1f} ms ({chunks} chunks of {full:.0f} tokens), decode "
              f"{out1:.0f} x {t_dec * 1e3:.2f} ms")
    # TTFT's parts: the chunks ahead of the prompt's own and the iterations to its token
    # are waits, its own chunk (the whole phase when that is shorter) the prefill
    return SteadyState(ttft, tpot, rate, a, a, detail, slot_wait,
                       max(first - t_full, 0.0) + late, min(t_full, first),
                       bound="slots" if waiting > 0.5 else "")


def _iteration(pool: Pool, prefill_tokens: float, decodes: float, kv_tokens: float,
               pairs: float | None = None) -> float:
    """Seconds of one iteration carrying ``prefill_tokens`` prompt tokens and ``decodes``
    decoding sequences, speculative decoding's cost included on the decodes."""
    t = (pool.step.step_s(prefill_tokens, decodes, kv_tokens) if pairs is None
         else pool.step.step_s(prefill_tokens, decodes, kv_tokens, pairs))
    return speculative_iteration_s(pool.step, t, decodes, kv_tokens, pool.spec_cost,
                                   pool.spec_draft)


def speculative_iteration_s(step: StepModel, plain_s: float, decodes: float,
                            kv_tokens: float, spec_cost: float | None, spec_draft: int
                            ) -> float:
    """Seconds of an iteration of ``plain_s`` without speculation once speculative decoding
    runs on its ``decodes`` sequences: times ``spec_cost`` where the deployment states one,
    else plus the step model's drafts and verification of ``spec_draft`` tokens."""
    if decodes < 0.5:
        return plain_s
    if spec_cost is not None:
        return plain_s * spec_cost
    if not spec_draft:
        return plain_s
    if not isinstance(step, SpeculativeStepModel):
        raise TypeError("spec_cost None needs a step model with speculative_extra_s")
    return plain_s + step.speculative_extra_s(decodes, kv_tokens, spec_draft)


def _held(window: float, more: float) -> float:
    """Mean iterations a prompt is held by a hold of ``window`` iterations that starts with
    one prompt and gathers ``more`` others: the first waits it all, the others half."""
    return (window + more * window / 2.0) / (1.0 + more)


def batch_wait(pool: Pool, rate: float, decodes: float, isl: int) -> tuple[float, float]:
    """Batch waiting on one rank: (mean iterations a prompt is held, prompts released
    together). The hold starts with the first prompt that finds sequences decoding and
    ends after ``batch_wait_iterations`` iterations, or once the held prompts and the
    decodes reach ``batch_wait_tokens``: a window of L iterations into which prompts arrive
    at ``rate`` a iteration (Poisson), the first waiting L and the others L/2 on average.
    ``decodes``: sequences decoding (a token each)."""
    t = pool.batch_wait_iterations
    need = (pool.batch_wait_tokens - decodes) / isl  # prompts that end the hold
    # Either limit at 0 ends every hold at once (TensorRT-LLM stops waiting when the count
    # reaches the timeout or the tokens reach the ratio's share)
    if t <= 0 or pool.batch_wait_tokens <= 0 or need <= 1.0:
        return 0.0, 1.0
    window = t if rate <= 0 else min(t, (need - 1.0) / rate)
    more = rate * window
    return _held(window, more), 1.0 + more


def recv_wait(interval: int, rate: float, t_decode: float,
              t_prefill: float) -> tuple[float, float]:
    """Request polling on one rank (SGLang ``--scheduler-recv-interval``): (mean seconds a
    prompt waits for the poll that takes it, mean prompts taken with it, itself included).

    While the rank decodes, it polls every ``interval`` decode iterations (a gap of
    ``interval`` x ``t_decode``); a poll that finds prompts runs their prefill (``t_prefill``)
    and polls again right after it. Prompts arrive at ``rate`` a decode iteration (Poisson).
    A prompt lands in a gap or in a prefill in proportion to their time and waits out half of
    it; the prompts that land in its gap are taken, and prefilled, with it."""
    gap = interval * t_decode
    found = 1.0 - math.exp(-rate * interval)  # a gap's poll finds a prompt
    again = 1.0 - math.exp(-rate * t_prefill / t_decode) if t_decode > 0 else 0.0
    prefills = found / max(1.0 - again, 1e-9)  # prefill iterations after one gap
    busy = prefills * t_prefill
    total = gap + busy
    if total <= 0:
        return 0.0, 1.0
    in_gap = gap / total
    wait = (gap * gap / 2.0 + busy * t_prefill / 2.0) / total
    return wait, 1.0 + rate * interval * in_gap


def balance_wait(pool: Pool, rate: float) -> float:
    """Mean iterations a prompt is held by attention-DP balancing: the hold starts with a
    prompt on one rank and ends once each of the group's other ranks has one (the slowest
    of ``balance_ranks`` - 1 Poisson arrivals at ``rate`` a rank an iteration: the harmonic
    number over the rate) or at ``balance_timeout``. Prompts that arrive on the group
    during the hold wait half of it on average."""
    t, others = pool.balance_timeout, pool.balance_ranks - 1
    if t <= 0 or others <= 0:
        return 0.0
    harmonic = sum(1.0 / k for k in range(1, others + 1))
    window = t if rate <= 0 else min(t, harmonic / rate)
    return _held(window, pool.balance_ranks * rate * window)


def aggregated(pool: Pool, clients: float, isl: int, osl: int,
               rounds: float = 0.0) -> SteadyState:
    """Steady state of ``clients`` closed-loop clients spread evenly over ``pool``'s ranks;
    with ``rounds`` > 0, TTFT is the mean over a benchmark of that many requests per client
    that starts every client at once (``opening_wave_s``)."""
    if pool.lockstep:
        # Clients in lockstep arrive together in every round: the first is no different.
        return lockstep(pool, clients, isl, osl)
    st = _aggregated(pool, clients, isl, osl)
    if rounds <= 0.0:
        return st
    return with_opening_wave(st, opening_wave_s(pool, st.admitted, isl, osl), rounds)


def _aggregated(pool: Pool, clients: float, isl: int, osl: int) -> SteadyState:
    n = clients / pool.ranks
    per_req = isl + (osl if pool.admission == "reserve" else osl / 2.0)
    fits = math.floor(pool.kv_tokens / per_req)
    # Fewer clients than ranks: the busy ranks run one request each.
    admitted = min(max(n, 1.0), pool.max_seqs, fits)
    if fits < 1:
        raise ValueError(f"one request of {isl} + {osl} tokens does not fit the KV cache of "
                         f"{pool.kv_tokens:,.0f} tokens")
    B, out1 = float(pool.budget), float(max(osl - 1, 0))
    # Decode iterations a request needs (fewer with speculative decoding).
    steps = out1 / pool.spec_yield

    def prefill_capacity(d: float) -> float:
        """Prompt tokens an iteration can take next to ``d`` decodes."""
        room = max(B - d, 1.0)
        if pool.chunked:
            return room
        return max(1.0, math.floor(room / isl)) * isl  # whole prompts

    def wp(r: float) -> tuple[float, float, float]:
        """(iterations from admission to first token, utilisation, prompt iterations)."""
        d = r * steps
        cap = prefill_capacity(d)
        util = r * isl / cap
        service = math.ceil(isl / cap) if pool.chunked else 1.0
        if util >= 1.0:
            return math.inf, util, service
        return service + _mm1_wait(max(isl / cap, 1.0 / max(cap / isl, 1.0)), util), util, service

    # Bisection on r: admitted = r (W_p(r) + osl - 1) is increasing in r.
    lo, hi = 0.0, B / (isl + steps)
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        w, util, _ = wp(mid)
        if util < 1.0 and mid * (w + steps) < admitted:
            lo = mid
        else:
            hi = mid
    r = lo if lo > 0 else hi * 1e-6
    w_p, util, service = wp(r)
    d = r * steps
    cap = prefill_capacity(d)
    # Iterations that carry a prompt: one prompt (or chunk) each when prompts are rare, more
    # at once as they crowd the budget.
    chunk = min(cap, max(min(isl, cap), r * isl))
    f = min(1.0, r * isl / chunk)
    kv_dec = d * (isl + osl / 2.0)
    pairs = chunk * (isl / 2.0) if pool.chunked else chunk * isl / 2.0
    t_with = _iteration(pool, chunk, round(d), kv_dec, pairs)
    t_without = _iteration(pool, 0, round(d), kv_dec) if d >= 0.5 else 0.0
    # Attention-DP ranks run their MoE layers in lock-step, but the engines align the ranks'
    # prefills into the same iterations (SGLang schedules prefill for the whole DP group,
    # TensorRT-LLM's attention-DP balancing holds prompts for it), so a rank's share of
    # prefill iterations stands for the group's.
    t_iter = f * t_with + (1.0 - f) * t_without
    if t_iter <= 0:
        t_iter = t_with
    waiting = n - admitted
    w_q = waiting / r if waiting > 0 else 0.0
    slot_wait = w_q * t_iter
    # One client a rank: its prompt comes when its last request has left, to an idle rank
    # (no iteration to wait out, none to share); more: it lands mid-iteration.
    alone = n <= 1.0
    queue_wait = 0.0 if alone else (max(w_p - service, 0.0) + 0.5) * t_iter
    d_pre, kv_pre = (0, 0.0) if alone else (round(d), kv_dec)
    # Closed-loop clients with equal lengths arrive in clusters: requests admitted together
    # finish together and come back together. A prompt arrives with k - 1 others, k = 1 +
    # burst x (admitted - 1); the engine takes them as its budget allows (whole prompts
    # batched into one iteration without chunking, chunks first come first served with it),
    # and the prompt's first token waits, on average, for half the cluster's prefill.
    k = 1.0 + pool.burst * max(admitted - 1.0, 0.0)
    # A budget smaller than one prompt ends at most one prefill an iteration: the prompts of
    # a cluster finish, and come back, one by one (TPU v6e recipes run vLLM at 512 tokens).
    if cap < isl:
        k = 1.0
    if pool.recv_interval > 1 and not alone and d >= 0.5:
        poll_w, polled = recv_wait(pool.recv_interval, r, t_without or t_iter, t_with)
        queue_wait += poll_w - 0.5 * t_iter
        k = max(k, polled)
    if pool.batch_wait_iterations > 0 and d >= 0.5:
        held, batch_w = batch_wait(pool, r, d, isl)
        queue_wait += held * (t_without or t_iter)
        k = max(k, batch_w)
    if pool.chunked:
        tokens = min(k * isl, cap)
        t_b = pool.step.step_s(round(tokens), d_pre, kv_pre, tokens * isl / 2.0)
        prefill = max(1.0, (k + 1.0) / 2.0 * isl / cap) * t_b
    else:
        per_iter = max(1.0, math.floor(cap / isl))
        batch = min(k, per_iter)
        t_b = pool.step.step_s(round(batch * isl), d_pre, kv_pre, batch * isl * isl / 2.0)
        prefill = (math.ceil(k / per_iter) + 1.0) / 2.0 * t_b
    # The first token reaches the client some iterations after its prefill (overlapped
    # scheduling returns a step's tokens one step late; detokenization and streaming), and
    # after the API server's fixed work.
    held = balance_wait(pool, r) if pool.balance_timeout > 0 else pool.context_wait_iterations
    queue_wait += (pool.first_token_iterations + held) * t_iter
    ttft = pool.frontend_s + slot_wait + queue_wait + prefill
    tpot = (t_iter if d >= 0.5 else t_with) / pool.spec_yield
    rate = r / t_iter * pool.ranks if t_iter > 0 else 0.0
    detail = (f"{n:.0f} clients/rank, {admitted:.0f} admitted, decode batch {d:.0f}, prefill "
              f"{f:.0%} of iterations ({chunk:.0f} tokens, budget use {util:.0%}), iteration "
              f"{t_iter * 1e3:.2f} ms")
    return SteadyState(ttft, tpot, rate, d, admitted, detail, slot_wait, queue_wait, prefill,
                       bound="slots" if waiting > 0.5 else "")


# The decode batch a disaggregated steady state solves for, to this share of itself: the
# rate it sets moves by as much (1e-10: far below anything a measurement resolves; 35-45
# halvings of the batch range, where all 60 ran before)
_BATCH_TOL = 1e-10
# (clients kept busy, requests/s, TTFT s, TPOT s, prefill utilisation) at one decode batch
_At = tuple[float, float, float, float, float]


def disaggregated(prefill: Pool, decode: Pool, clients: float, isl: int, osl: int,
                  kv_bytes_per_token: float, link_bytes_per_s: float,
                  link_latency_s: float = 0.0, overhead_s: float = 0.0,
                  rounds: float = 0.0, first_chunk_tokens: int = 0) -> SteadyState:
    """Steady state of ``clients`` closed-loop clients on separate prefill and decode pools.

    Solved on the decode batch ``d`` per decode rank: it sets TPOT, the completion rate
    (``d`` x ranks / (osl - 1) TPOT, Little's law on the decoding requests), the prefill
    ranks' load at that rate (prompts batched within the budget, an M/D/1 wait) and the
    clients that keeps busy, rate x (TTFT + (osl - 1) TPOT); ``d`` rises until that is
    ``clients``. Clients beyond what the decode KV (or the prefill ranks) can serve wait.
    With ``rounds`` > 0, TTFT is the mean over a benchmark of that many requests per client
    that starts every client at once: in its first round each prefill rank takes its share
    of the clients' prompts in full batches, and each batch's KV caches leave over the
    rank's link one after another.

    ``first_chunk_tokens`` k > 1: the client's first token comes with the decode worker's
    first streamed chunk, k tokens after the prefill worker's token, where the first-token
    path above (fitted with chunks of one token) already covers one: TTFT as the client
    measures it is k - 1 tokens later, and its TPOT, (end - TTFT) / (osl - 1), spreads the
    rest of the output over the same tokens (``first_chunk``)."""
    out1 = float(max(osl - 1, 0))
    per_req = isl + (osl if decode.admission == "reserve" else osl / 2.0)
    dec_cap = float(min(decode.max_seqs, math.floor(decode.kv_tokens / per_req)))
    if dec_cap < 1 or prefill.kv_tokens < isl:
        raise ValueError(f"one request of {isl} + {osl} tokens does not fit a worker's KV cache")
    prompts_max = prompts_per_batch(prefill, isl)
    t1 = prefill_batch_s(prefill, 1.0, isl)
    t_full = prefill_batch_s(prefill, float(prompts_max), isl)
    xfer = kv_bytes_per_token * isl / link_bytes_per_s + link_latency_s
    # Prompts a second at full batches, and no more than the prefill ranks' links send
    rate_p_max = prefill_rate_max(prefill, isl)
    if xfer > 0:
        rate_p_max = min(rate_p_max, prefill.ranks / xfer)

    def xfer_at(rate: float) -> float:
        """Transfer seconds of one prompt's KV cache, waiting included: a prefill rank's
        transfers share its link, one after another (M/D/1)."""
        util = rate / prefill.ranks * xfer
        return xfer + _mm1_wait(xfer, min(util, 0.999))

    def prefill_at(rate: float) -> tuple[float, float, float]:
        """(wait + prefill seconds, utilisation, batch seconds) at ``rate`` prompts/s."""
        lam = rate / prefill.ranks
        # One prompt at a time: an M/D/1 queue.
        util1 = lam * t1
        one = _mm1_wait(t1, util1) + t1 if util1 < 1.0 else math.inf
        if util1 <= 0.5:
            return one, util1, t1
        # Or back to back, each batch the prompts that gathered while the previous one ran
        # (up to the budget): j = lam t(j). Larger batches cost less per prompt, so this
        # holds rates that one prompt at a time cannot, up to full batches. A prompt waits
        # out the running batch (half of one, on average), or as batches fill the budget, a
        # queue of full batches (M/D/1 at the batches' fill), then runs in the next. t(j) is
        # close to affine in j: solved on the chord from one prompt to the budget, then one
        # step on the step model.
        full = lam * t_full / prompts_max
        if full >= 1.0:
            return one, full, t_full
        slope = (t_full - t1) / max(prompts_max - 1, 1)
        pm = float(prompts_max)

        def within(x: float) -> float:
            return min(pm, max(1.0, x))

        j = within(lam * (t1 - slope) / (1.0 - lam * slope) if lam * slope < 1.0 else pm)
        j = within(lam * prefill_batch_s(prefill, j, isl))
        tj = prefill_batch_s(prefill, j, isl)
        batched = max(0.5 * tj, _mm1_wait(t_full, min(j / prompts_max, 0.999))) + tj
        return min(one, batched), max(full, min(util1, 1.0)), tj

    def tpot_at(d: float) -> float:
        return _iteration(decode, 0, max(1, round(d)), d * (isl + osl / 2.0)) / decode.spec_yield

    cap = rate_p_max * 0.999

    def decode_rate(d: float, tpot: float | None = None) -> float:
        """Requests a second that a decode batch of ``d`` a rank completes (Little's law);
        ``tpot``: ``tpot_at(d)`` where the caller has it."""
        if out1 <= 0:
            return rate_p_max * 0.5
        return d * decode.ranks / (out1 * (tpot_at(d) if tpot is None else tpot))

    def at(d: float) -> _At:
        """(clients kept busy, rate, ttft, tpot, prefill utilisation) at decode batch d."""
        tpot = tpot_at(d)
        rate = min(decode_rate(d, tpot), cap)
        pre, util, _ = prefill_at(rate)
        # Clusters (as in ``aggregated``): requests that finish in one decode iteration come
        # back together, k = 1 + burst x (d - 1), spread over the prefill ranks and batched
        # within the budget; a prompt waits on average for half its share.
        k = (1.0 + prefill.burst * max(d - 1.0, 0.0)) / prefill.ranks
        burst = 0.0
        if k > 1.0:
            batch = min(k, float(prompts_max))
            tb = prefill_batch_s(prefill, batch, isl)
            burst = (math.ceil(k / prompts_max) + 1.0) / 2.0 * tb - t1
        ttft = (prefill.frontend_s + overhead_s + pre + max(burst, 0.0) + xfer_at(rate)
                + (0.5 + decode.first_token_iterations) * tpot)
        return rate * (ttft + out1 * tpot), rate, ttft, tpot, util

    lo, hi = 1e-6, dec_cap
    if out1 > 0 and decode_rate(hi) > cap:
        # The prefill ranks bound the rate: the decode batch holds what that rate keeps
        # decoding (Little's law, d x ranks = rate x (osl - 1) x TPOT), and clients beyond
        # it queue for the prefill instead of joining a larger batch
        a, b = 1e-6, hi
        for _ in range(60):
            if b - a <= _BATCH_TOL * b:
                break
            mid = 0.5 * (a + b)
            if decode_rate(mid) < cap:
                a = mid
            else:
                b = mid
        hi = a
    if at(hi)[0] >= clients:
        for _ in range(60):
            if hi - lo <= _BATCH_TOL * hi:
                break
            mid = 0.5 * (lo + hi)
            if at(mid)[0] < clients:
                lo = mid
            else:
                hi = mid
    d = hi
    busy, rate, ttft, tpot, util = at(d)
    waiting = clients - busy
    slot_wait = waiting / rate if waiting > 0.5 else 0.0
    ttft += slot_wait
    detail = (f"{clients:.0f} clients: prefill {prefill.ranks} ranks at {util:.0%} "
              f"({t1 * 1e3:.1f} ms a prompt), KV transfer {xfer * 1e3:.2f} ms, decode "
              f"{decode.ranks} ranks at batch {d:.0f}"
              + (f", {waiting:.0f} clients waiting" if waiting > 0.5 else ""))
    # The rate is held just under the prefill ranks' capacity (``cap``, 0.999 of it) when
    # they bind: a prefill utilisation of 99 % or more is that bound.
    bound = "prefill" if util >= 0.99 else "slots" if waiting > 0.5 else ""
    handoff = overhead_s + xfer_at(rate)
    st = first_chunk(SteadyState(ttft, tpot, rate, d, d, detail, slot_wait,
                                 ttft - slot_wait - t1 - prefill.frontend_s - handoff, t1,
                                 bound=bound, handoff_s=handoff),
                     first_chunk_tokens, out1)
    if rounds <= 0.0:
        return st
    a = max(min(clients, dec_cap * decode.ranks) / prefill.ranks, 1.0)
    batch = min(a, float(prompts_max))
    batches = math.ceil(a / batch)
    wave = (prefill.frontend_s + overhead_s
            + (batches + 1.0) / 2.0 * prefill_batch_s(prefill, batch, isl)
            + (batch + 1.0) / 2.0 * xfer + (0.5 + decode.first_token_iterations) * tpot
            + _first_chunk_wait(first_chunk_tokens, out1) * tpot)
    return with_opening_wave(st, wave, rounds)


def _first_chunk_wait(tokens: int, out1: float) -> float:
    """Tokens a client waits past the first-token path for a first chunk of ``tokens``
    (``disaggregated``): k - 1, and never past the last of the ``out1`` output tokens."""
    return min(float(max(tokens - 1, 0)), out1)


def first_chunk(st: SteadyState, tokens: int, out1: float) -> SteadyState:
    """``st`` as a client measures it when its first token comes with a chunk of ``tokens``
    (``disaggregated``): TTFT later by k - 1 tokens of ``st.tpot_s``, TPOT over the
    ``out1`` later tokens shorter by the same share; unchanged for k <= 1."""
    wait = _first_chunk_wait(tokens, out1)
    if wait <= 0.0 or out1 <= 0.0:
        return st
    return replace(st, ttft_s=st.ttft_s + wait * st.tpot_s, first_chunk_s=wait * st.tpot_s,
                   tpot_s=st.tpot_s * (out1 - wait) / out1,
                   detail=st.detail + f"; first token with a chunk of {tokens} tokens")
