"""The single-bottleneck fluid run, compiled: one seed's whole run in one call of machine code.

Same model, step and random stream as ``sim/fluid.py`` (``simulate_fluid``) and
``sim/fluid_star.py`` (``simulate_star`` with ``order="share"``, no packets): the flows each
come in on a link of their own and share one egress that serves each flow in proportion to
its bytes queued, marks ECN with RED at dequeue and pauses uplinks by PFC; every flow runs
NVIDIA's DCQCN reaction point. ``tests/sim/test_fluid_seeds.py`` checks that each seed gives
``simulate_fluid``'s completion, queue, pauses and CNPs.

Why compiled: a step of the numpy kernels is 30-80 numpy calls of 1-2 us each on arrays of a
few hundred flows, so the interpreter, not the arithmetic, set the time: an incast of 128
flows (2,712 steps of 4 us) cost 45-90 ms a seed even with five seeds sharing every call,
at or under the 100x the packet-level simulator's speed issue 18 asks for. Here a step is a
few loops over the flows: 2.3-4.5x faster than that kernel at 128-8 flows, paired in one
process (docs/netsim.md). Compiled by numba (the ``fast`` extra) on the first call on a
machine, 13-16 s on 2 cores, and cached on disk (``__pycache__`` beside this module, or
``NUMBA_CACHE_DIR``), loaded in 0.2-0.3 s after that. Without numba, ``simulate_star`` runs
each seed.

Same arithmetic as the numpy kernels, operation for operation: the sums over flows are numpy's
pairwise summation (``_pairwise``, bit for bit ``np.add.reduce``), the uniforms the same
``Generator(PCG64(seed))`` stream (numba runs numpy's generator: ``k x n`` a step, step j's
at ``j k n``), so a pause decided to the last bit (every flow's bytes queued about equal
at the shared-buffer threshold) is decided the same way. Left: libm's ``expm1`` where numpy
has its own (one ulp apart in about one value in 10,000; a CNP draw would have to fall in
that ulp). Work skipped as in ``simulate_star``: the PFC thresholds while no flow's bytes can
reach one, completion checks until some flow could have sent its last byte, the draws'
comparisons while no mark is on its way back (alpha's decay then applied lazily as one
power). Not done, for numba's cache: a recursive function (the process that loads it from
the cache crashes).
Units: bytes, seconds, bytes/s.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import replace
from importlib.util import find_spec
from typing import Any, TypeVar, cast

import numpy as np
from numpy.random import PCG64, Generator

from clusterwright.sim.fluid import (
    CNP_LAG,
    MAX_STEPS,
    SAMPLE_S,
    SAMPLES,
    FluidConfig,
    FluidFlows,
    FluidLinks,
    FluidResult,
    _pfc_floor,
    pause_history_steps,
)
from clusterwright.sim.fluid_star import CCS, _sample, check_star, simulate_star

# Without numba (the ``fast`` extra) ``simulate_star`` runs each seed.
COMPILED = find_spec("numba") is not None
F = TypeVar("F", bound=Callable[..., Any])


def _compiled(f: F) -> F:
    """``f`` compiled by numba and cached on disk (as itself without numba: never called).
    Where numba finds no writable cache directory (a read-only install and home, no
    ``NUMBA_CACHE_DIR``) it compiles ``f`` in each process instead of failing the import."""
    if not COMPILED:
        return f
    from numba import njit

    try:
        return cast(F, njit(cache=True)(f))
    except RuntimeError:  # numba: "cannot cache function ...: no locator available"
        return cast(F, njit(f))

BIG = int(np.iinfo(np.int64).max)
PW_BLOCK = 128  # numpy's pairwise summation: blocks of up to 128 summed 8 ways


def simulate_star_seeds(links: FluidLinks, flows: FluidFlows, cfg: FluidConfig,
                        seeds: Sequence[int]) -> list[FluidResult]:
    """Run ``flows`` (flow i: link i, then the last link) on ``links`` once per seed in
    ``seeds`` (``cfg.seed`` is ignored); the results in the order of ``seeds``, each what
    ``simulate_star(links, flows, cfg)`` gives for that seed, to rounding (module
    docstring). Without numba (the ``fast`` extra), ``simulate_star`` runs each seed."""
    check_star(links, flows, cfg)
    if not COMPILED:
        return [simulate_star(links, flows, replace(cfg, seed=s)) for s in seeds]
    return [_run(links, flows, cfg, s) for s in seeds]


def _run(links: FluidLinks, flows: FluidFlows, cfg: FluidConfig, seed: int) -> FluidResult:
    n = len(flows)
    e = n
    dt = cfg.dt
    d = cfg.dcqcn
    dcqcn = cfg.cc == "dcqcn"
    cdt = float(links.cap[e]) * dt
    kmin, kmax, pmax = float(links.kmin[e]), float(links.kmax[e]), float(links.pmax[e])
    sb = cfg.shared
    base = reserve = offset = k_thr = 0.0
    if sb is not None:
        sw = int(links.switch[0])
        base = float(sb.buffer_bytes[sw] - sb.headroom_bytes[sw]
                     - sb.ports[sw] * sb.reserve_bytes)
        reserve, offset, k_thr = sb.reserve_bytes, sb.resume_offset, 2.0 ** -sb.shift
    rtt = flows.rtt
    cnp_lag = np.maximum(1, np.round(CNP_LAG * rtt / dt).astype(np.int64))
    if np.any(cnp_lag != cnp_lag[0]):
        raise ValueError("flows: a single-bottleneck run needs one round trip for all")
    k = max(1, round(dt / d.alpha_interval_s))
    decay = (1 - d.g) ** k
    ideal = cfg.expect_s if cfg.expect_s is not None else \
        float(flows.size.sum()) / float(links.cap.max()) + float(rtt.max(initial=0.0))
    gaps = cfg.pfc and dcqcn
    fparams = np.array([
        dt, cdt, kmin, kmax, pmax, pmax / max(kmax - kmin, 1e-9),
        -1 / cfg.packet_bytes / k,  # log P(no CNP) in one alpha interval per marked byte
        base, reserve, offset, k_thr, _pfc_floor(links, sb, np.arange(n)), decay,
        d.min_rate, d.rate_ai, d.rate_hai])
    iparams = np.array([
        n, k, max(1, round(d.decrease_interval_s / dt)), max(1, round(d.increase_timer_s / dt)),
        d.fast_recovery, int(cnp_lag[0]) if n else 1,
        int(np.maximum(1, np.round(rtt / dt)).max(initial=1)) + 2,
        pause_history_steps(links, cfg.shared, cdt) if gaps else 1,
        max(1, round(SAMPLE_S / dt), int(ideal / dt / SAMPLES)),
        int(dcqcn), int(cfg.pfc), int(sb is not None), int(d.clamp_target), MAX_STEPS,
        # Room for the per-step logs: 4x the ideal run (an incast under DCQCN takes 1-2x),
        # doubled and run again, the same draws, the rare time that is short.
        min(MAX_STEPS, 4 * int(ideal / dt) + 1024)], dtype=np.int64)
    half_gain = (1 - (1 - d.g) ** np.arange(k + 1)) / 2
    xoff = np.ascontiguousarray(links.xoff[:n], dtype=float)
    xon = np.ascontiguousarray(links.xon[:n], dtype=float)
    size, line = flows.size.astype(float), flows.line_rate.astype(float)
    while True:
        cap = int(iparams[14])
        cap_s = cap // int(iparams[8]) + 2
        done_at, pauses = np.full(n, np.nan), np.zeros(n, dtype=np.int64)
        queues, sends, probs = np.empty(cap), np.empty(cap), np.empty(cap)
        s_t, s_rate = np.empty(cap_s), np.empty((cap_s, n))
        s_on, s_done = np.empty((cap_s, n), dtype=bool), np.empty(cap_s, dtype=np.int64)
        counts = np.zeros(3, dtype=np.int64)  # steps, CNPs, samples
        status = _kernel(fparams, iparams, half_gain, size, line, xoff, xon, Generator(PCG64(seed)),
                         done_at, pauses, queues, sends, probs, s_t, s_rate, s_on, s_done,
                         counts)
        if status != 2:
            break
        iparams[14] = min(MAX_STEPS, 2 * cap)
    steps, cnps, n_s = (int(v) for v in counts)
    queues, sends, probs = queues[:steps], sends[:steps], probs[:steps]
    s_t, s_rate, s_on, s_done = s_t[:n_s], s_rate[:n_s], s_on[:n_s], s_done[:n_s]
    if status:
        raise ValueError(f"the fluid run needs more than {MAX_STEPS:,} steps of "
                         f"{dt * 1e6:g} us; fewer bytes or a coarser step")
    spread: list[float] = []
    sample_t: list[float] = []
    if len(s_t):
        if bool(flows.line_rate.min() == flows.line_rate.max()):
            _spreads(s_t, s_rate, s_on, float(flows.line_rate[0]), float(links.cap[e]),
                     spread, sample_t)
        else:
            fair, fair_for = np.zeros(n), -1
            line = flows.line_rate.astype(float)
            for t, r, on, nd in zip(s_t.tolist(), s_rate, s_on, s_done.tolist(),
                                    strict=True):
                if on.any():
                    fair, fair_for = _sample(links, flows, on, r, line, fair, fair_for, nd,
                                             spread, False)
                    sample_t.append(t)
    q_mean = np.zeros(n + 1)
    q_mean[e] = float(queues.sum()) / steps
    q_mx = np.zeros(n + 1)
    q_mx[e] = float(queues.max())
    pause = np.zeros(n + 1)
    pause[:n] = pauses * dt
    sent_b = float(sends.sum())
    return FluidResult(
        end_s=float(np.max(done_at)) if n else 0.0, fct_s=done_at, start_s=np.zeros(n),
        queue_mean_bytes=q_mean, queue_max_bytes=q_mx, pause_s=pause,
        marked_fraction=float(np.add.reduce(sends * probs)) / sent_b if sent_b > 0 else 0.0,
        cnps=int(cnps), rate_spread=np.asarray(spread), sample_times=np.asarray(sample_t),
        steps=int(steps), dt=dt)


def _spreads(ts: np.ndarray, rates: np.ndarray, on: np.ndarray, line: float, cap: float,
             spread: list[float], sample_t: list[float]) -> None:
    """``_sample`` for flows of one line rate, all samples at once: the sending flows share
    the egress evenly (progressive filling on the star), none above the line rate."""
    n_act = np.count_nonzero(on, axis=1)
    ok = n_act > 0
    hi = np.max(np.where(on, rates, -np.inf), axis=1)[ok]
    lo = np.min(np.where(on, rates, np.inf), axis=1)[ok]
    share = np.minimum(line, cap / n_act[ok])
    spread.extend(np.maximum(hi / share - 1, 1 - lo / share).tolist())
    sample_t.extend(ts[ok].tolist())


@_compiled
def _pairwise(a: np.ndarray, lo: int, n: int) -> float:  # pragma: no cover (compiled)
    """numpy's pairwise sum of a[lo:lo + n] (``pairwise_sum_DOUBLE``), bit for bit: halves
    (cut at a multiple of 8) until a part has at most 128 values, each part summed 8 ways,
    the parts added left + right. Without recursion: numba's cache cannot reload a recursive
    function (it crashes the process)."""
    if n <= PW_BLOCK:
        return _block_sum(a, lo, n)
    # The halving tree walked in post-order: a stack of parts (start, length, children
    # visited) and one of the sums made.
    p_lo = np.empty(64, np.int64)
    p_n = np.empty(64, np.int64)
    p_seen = np.empty(64, np.int64)
    sums = np.empty(64)
    top, n_sums = 0, 0
    p_lo[0], p_n[0], p_seen[0] = lo, n, 0
    while top >= 0:
        start, size = p_lo[top], p_n[top]
        if size <= PW_BLOCK:
            sums[n_sums] = _block_sum(a, start, size)
            n_sums += 1
            top -= 1
        elif p_seen[top] == 2:
            sums[n_sums - 2] = sums[n_sums - 2] + sums[n_sums - 1]
            n_sums -= 1
            top -= 1
        else:
            half = size // 2
            half -= half % 8
            right = p_seen[top] == 1
            p_seen[top] += 1
            top += 1
            p_lo[top] = start + half if right else start
            p_n[top] = size - half if right else half
            p_seen[top] = 0
    return float(sums[0])


@_compiled
def _block_sum(a: np.ndarray, lo: int, n: int) -> float:  # pragma: no cover (compiled)
    """numpy's sum of a part of at most 128 values: in order under 8, else 8 running sums
    added as a tree, then the rest in order."""
    if n < 8:
        res = 0.0
        for i in range(lo, lo + n):
            res += a[i]
        return res
    r0, r1, r2, r3 = a[lo], a[lo + 1], a[lo + 2], a[lo + 3]
    r4, r5, r6, r7 = a[lo + 4], a[lo + 5], a[lo + 6], a[lo + 7]
    i = lo + 8
    end8 = lo + n - n % 8
    while i < end8:
        r0 += a[i]
        r1 += a[i + 1]
        r2 += a[i + 2]
        r3 += a[i + 3]
        r4 += a[i + 4]
        r5 += a[i + 5]
        r6 += a[i + 6]
        r7 += a[i + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < lo + n:
        res += a[i]
        i += 1
    return float(res)


@_compiled
def _kernel(fp: np.ndarray, ip: np.ndarray, half_gain: np.ndarray, size: np.ndarray,
            line: np.ndarray, xoff: np.ndarray, xon: np.ndarray, gen: Generator,
            done_at: np.ndarray, pauses: np.ndarray, queues: np.ndarray, sends: np.ndarray,
            probs: np.ndarray, s_t: np.ndarray, s_rate_log: np.ndarray, s_on: np.ndarray,
            s_done: np.ndarray, counts: np.ndarray) -> int:  # pragma: no cover (compiled)
    """One seed's run (``_run`` packs the parameters and makes the outputs): each flow's
    completion and steps paused, each step's queue, bytes sent and marking probability, the
    rate samples (time, rates, flows sending, flows done) and the counts (steps, CNPs,
    samples), in place; the status: 0 done, 1 more than max_steps steps, 2 more steps than
    the logs have room for (cap_steps)."""
    dt, cdt, kmin, kmax, pmax, slope = fp[0], fp[1], fp[2], fp[3], fp[4], fp[5]
    log_per_byte, base, reserve, offset, k_thr, pfc_floor = fp[6], fp[7], fp[8], fp[9], \
        fp[10], fp[11]
    decay, min_rate, rate_ai, rate_hai = fp[12], fp[13], fp[14], fp[15]
    n, k, dec_steps, timer_steps, fast_recovery, c_lag = ip[0], ip[1], ip[2], ip[3], \
        ip[4], ip[5]
    hist_n, gap_n, sample_every, dcqcn, pfc, shared = ip[6], ip[7], ip[8], ip[9] != 0, \
        ip[10] != 0, ip[11] != 0
    clamp, max_steps, cap_steps = ip[12] != 0, ip[13], ip[14]
    gaps = pfc and dcqcn
    kn = k * n
    goal = size * (1 - 1e-9)
    last_tol = 1e-9 * size
    # Reaction points (``_CcState``): the rate, target, 1 - alpha / 2 (the factor of a cut);
    # the rate timer (next increase due, its stage, when it was due after the last increase:
    # an increase came since the last cut iff ev_next == next_timer); the decrease timer.
    rate = line.copy()
    target = line.copy()
    half = np.full(n, 0.5)
    stage = np.zeros(n, np.int64)
    ev_next = np.full(n, -1, np.int64)
    seen = np.zeros(n, np.bool_)
    all_seen = False
    n_seen = 0
    dec_flag = np.zeros(n, np.bool_)
    flags_left = False
    next_dec = np.zeros(n, np.int64)
    next_timer = np.full(n, BIG, np.int64)
    min_dec = BIG
    min_timer = BIG
    decay_due = 0
    # The network.
    q = np.zeros(n)
    qtot = 0.0
    left = size.copy()
    sent = np.zeros(n)
    dt_live = np.full(n, dt)
    dt_send = np.full(n, dt)
    xdt = rate * dt_send
    s_rate = _pairwise(xdt, 0, n)
    sending = np.ones(n, np.bool_)
    waiting = np.zeros(n, np.bool_)
    n_done = 0
    n_wait = 0
    check_at = 0
    g_keep = 1.0
    g_check = 0.0
    paused = np.zeros(n, np.bool_)
    new = np.zeros(n, np.bool_)
    any_paused = False
    gap_ring = np.ones((gap_n + 1, n))
    gap_set = np.zeros(gap_n + 1, np.bool_)
    last_pause = -gap_n
    hist = np.zeros((hist_n, n))
    hist_on = np.zeros(hist_n, np.bool_)
    sx = np.empty(n)
    over = np.empty(n)
    u = np.empty(kn)
    nflag = np.zeros(n, np.int64)
    gh = np.empty(k + 1)
    cnps = 0
    n_samples = 0
    step = 0
    t = 0.0
    drawn = 0  # uniforms of the stream used or skipped
    while n_done < n:
        if step >= max_steps:
            return 1
        if step >= cap_steps:
            return 2
        # Senders at their rates, unless one may send its last bytes.
        exact = step + 1 >= check_at
        if exact:
            for i in range(n):
                sx[i] = min(xdt[i], left[i])
            s_dt = _pairwise(sx, 0, n)
        else:
            sx[:] = xdt
            s_dt = s_rate
        if gaps:
            slot = step % gap_n
            if any_paused:
                for i in range(n):
                    gap_ring[slot, i] = 0.0 if paused[i] else 1.0
                gap_set[slot] = True
                last_pause = step
            elif gap_set[slot]:
                gap_ring[slot, :] = 1.0
                gap_set[slot] = False
        for i in range(n):
            q[i] += sx[i]
            left[i] -= sx[i]
        # The egress: what it holds (h), its capacity shared in proportion to the bytes
        # queued (a flow keeps 1 - cdt / h of its own); RED at dequeue on the queue left;
        # log P(no CNP) per byte queued: the departures, q cdt / h, times -p / packet.
        h = qtot + s_dt
        if h > cdt:
            x = h - cdt
            if x <= kmin:
                p = 0.0
            elif x > kmax:
                p = 1.0
            else:
                p = min((x - kmin) * slope, pmax)
            queue = x
            keep = 1.0 - cdt / h
            per_q = cdt / h * p * log_per_byte
        else:
            queue = keep = p = per_q = 0.0
        queues[step] = queue
        sends[step] = s_dt
        probs[step] = p
        slot_h = step % hist_n
        if dcqcn and p > 0.0:
            hrow = hist[slot_h]
            for i in range(n):
                hrow[i] = q[i] * per_q
                q[i] = q[i] * keep
            if gaps and step - last_pause <= queue / cdt:
                # The departures arrived queue / cdt steps ago (``pause_gap``).
                b = int(queue / cdt)
                if b < gap_n and b <= step:
                    a = (step - b) % gap_n
                    if gap_set[a]:
                        for i in range(n):
                            hrow[i] *= gap_ring[a, i]
            for i in range(n):
                hrow[i] = math.expm1(hrow[i])
            hist_on[slot_h] = True
        else:
            hist_on[slot_h] = False
            for i in range(n):
                q[i] = q[i] * keep
        qtot = queue
        if n_wait:
            g_keep = g_keep * keep
        if exact:
            # Flows that sent their last byte stop sending and wait for their bytes to be
            # delivered.
            fresh = 0
            for i in range(n):
                if left[i] <= last_tol[i]:
                    fresh += 1
                    sending[i] = False
                    waiting[i] = True
                    sent[i] = size[i] - left[i]
                    left[i] = np.inf
                    dt_live[i] = 0.0
            if fresh:
                n_wait += fresh
                g_keep, g_check = 1.0, np.inf
                for i in range(n):
                    dt_send[i] = 0.0 if any_paused and paused[i] else dt_live[i]
                    xdt[i] = rate[i] * dt_send[i]
                s_rate = _pairwise(xdt, 0, n)
            # Until a rate-timer event raises a rate, flow i sends at most rate x dt a step.
            least = np.inf
            for i in range(n):
                least = min(least, left[i] / rate[i])
            check_at = step + max(1, int(min(least / dt, 1e9)))
        if n_wait and g_keep <= g_check:
            # Delivered = sent - queued. A waiting flow's bytes queued shrink by the keep
            # factor each step: g_keep is its product since the last check, and the flow
            # nearest its goal is done once g_keep <= (sent - goal) / queued.
            top = 0.0
            for i in range(n):
                if waiting[i]:
                    if sent[i] - q[i] >= goal[i]:
                        done_at[i] = t + dt
                        waiting[i] = False
                        n_wait -= 1
                        n_done += 1
                    else:
                        top = max(top, (sent[i] - goal[i]) / max(q[i], 1e-300))
            g_keep = 1.0
            g_check = top * (1 + 1e-9)
        # PFC on the egress's bytes by ingress (simulate_fluid's ``_pfc``).
        pause_moved = False
        near = True
        if pfc and not any_paused and shared and queue > pfc_floor:
            # A flow pauses once its bytes past the reserve reach (base - used) / 2^shift,
            # and used <= the queue: none can while each is below reserve + (base - queue)
            # / 2^shift.
            near = q.max() >= (reserve + max(base - queue, 0.0) * k_thr) * (1 - 1e-9)
        if pfc and near and (any_paused or queue > pfc_floor):
            new_any = False
            if not shared:
                for i in range(n):
                    new[i] = q[i] > xon[i] if paused[i] else q[i] > xoff[i]
                    new_any |= new[i]
            else:
                for i in range(n):
                    over[i] = max(q[i] - reserve, 0.0)
                thr = max(base - _pairwise(over, 0, n), 0.0) * k_thr
                # Pause at the threshold; resume at the resume offset below it (> the
                # resume level is >= the next float above it).
                resume = np.nextafter(max(thr - offset, 0.0), np.inf)
                for i in range(n):
                    new[i] = over[i] >= (resume if any_paused and paused[i] else thr)
                    new_any |= new[i]
            # What the senders send moves only if some flow paused or resumed.
            if any_paused or new_any:
                for i in range(n):
                    if new[i] != paused[i]:
                        pause_moved = True
                        break
            paused, new = new, paused
            any_paused = new_any
            if any_paused:
                for i in range(n):
                    if paused[i]:
                        pauses[i] += 1
        changed = pause_moved
        # Reaction points (``_CcState.dcqcn_step``), one CNP delay later.
        if dcqcn:
            m = step + 1
            n_got = 0
            slot_b = (step - c_lag) % hist_n
            if step >= c_lag and hist_on[slot_b]:
                # This step's uniforms: the k x n at step x k x n in the stream.
                at = step * kn
                while drawn < at:
                    gen.random()
                    drawn += 1
                for j in range(kn):
                    u[j] = gen.random()
                drawn = at + kn
                back = hist[slot_b]
                for i in range(n):
                    c = 0
                    for j in range(k):
                        if back[i] < -u[j * n + i]:
                            c += 1
                    nflag[i] = c
                    if c:
                        n_got += 1
            if n_got:
                cnps += n_got
                # Whether every flow is due every step (before this step's first CNPs).
                fast = dec_steps == 1 and all_seen and not flags_left
                # alpha' = alpha d + gain_j is half' = half d + (1 - d) - gain_j / 2.
                dd = decay ** (decay_due + 1)
                for j in range(k + 1):
                    gh[j] = (1.0 - dd) - half_gain[j]
                for i in range(n):
                    if seen[i]:
                        half[i] = half[i] * dd + gh[nflag[i]]
                decay_due = 0
                if not all_seen:
                    for i in range(n):
                        if nflag[i] and not seen[i]:
                            half[i] = 0.5
                            seen[i] = True
                            n_seen += 1
                            next_dec[i] = m + dec_steps
                            min_dec = min(min_dec, m + dec_steps)
                    all_seen = n_seen == n
                if fast:
                    # Every flow is due every step: this step's CNPs cut now (``_cut``).
                    for i in range(n):
                        if nflag[i]:
                            _cut(i, rate, target, half, ev_next, next_timer, m + timer_steps,
                                 min_rate, clamp)
                    min_timer = min(min_timer, m + timer_steps)
                    changed = True
                else:
                    for i in range(n):
                        if nflag[i]:
                            dec_flag[i] = True
                    flags_left = True
            else:
                decay_due += 1  # (only seen flows decay: applied where seen)
            if flags_left and m >= min_dec:
                if decay_due:
                    dd = decay ** decay_due
                    for i in range(n):
                        if seen[i]:
                            half[i] = half[i] * dd + (1.0 - dd)
                    decay_due = 0
                # Each seen flow's decrease comes every ``dec_steps`` (simulate_fluid moves
                # it on even when nothing is flagged); here it is moved on only now.
                flags_left = False
                min_dec = BIG
                for i in range(n):
                    if next_dec[i] < m:
                        next_dec[i] += dec_steps * -((next_dec[i] - m) // dec_steps)
                    if seen[i] and next_dec[i] == m:
                        if dec_flag[i]:
                            _cut(i, rate, target, half, ev_next, next_timer,
                                 m + timer_steps, min_rate, clamp)
                            min_timer = min(min_timer, m + timer_steps)
                            changed = True
                        dec_flag[i] = False
                        next_dec[i] += dec_steps
                    flags_left |= dec_flag[i]
                    if seen[i]:
                        min_dec = min(min_dec, next_dec[i])
            if m >= min_timer:
                least = np.inf
                min_timer = BIG
                for i in range(n):
                    if next_timer[i] <= m:
                        st = stage[i] if ev_next[i] == m else 0
                        inc = 0.0 if st < fast_recovery else (
                            rate_ai if st == fast_recovery else rate_hai)
                        tg = min(target[i] + inc, line[i])
                        target[i] = tg
                        rate[i] = (rate[i] + tg) / 2
                        stage[i] = st + 1
                        ev_next[i] = m + timer_steps
                        next_timer[i] = m + timer_steps
                        # Rates went up: bound those flows again (the others' stand).
                        least = min(least, left[i] / rate[i])
                    min_timer = min(min_timer, next_timer[i])
                changed = True
                check_at = min(check_at, step + max(1, int(min(least / dt, 1e9))))
        if changed:
            for i in range(n):
                if pause_moved:
                    dt_send[i] = 0.0 if any_paused and paused[i] else dt_live[i]
                xdt[i] = rate[i] * dt_send[i]
            s_rate = _pairwise(xdt, 0, n)
        if step % sample_every == 0:
            s_t[n_samples] = t
            s_rate_log[n_samples] = rate
            s_on[n_samples] = sending
            s_done[n_samples] = n_done
            n_samples += 1
        t += dt
        step += 1
    counts[0], counts[1], counts[2] = step, cnps, n_samples
    return 0


@_compiled
def _cut(i: int, rate: np.ndarray, target: np.ndarray, half: np.ndarray,
         ev_next: np.ndarray, next_timer: np.ndarray, timer_at: int, min_rate: float,
         clamp: bool) -> None:  # pragma: no cover (compiled)
    """DCQCN's rate decrease of flow ``i``: the target becomes the rate (unless no increase
    came since the last cut, CLAMP_TARGET_RATE off), the rate rate x (1 - alpha / 2), at
    least ``min_rate``; the rate timer restarts."""
    if clamp or ev_next[i] == next_timer[i]:
        target[i] = rate[i]
    rate[i] = max(rate[i] * half[i], min_rate)
    next_timer[i] = timer_at


__all__ = ["CCS", "simulate_star_seeds"]
