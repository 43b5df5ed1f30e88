"""The single-bottleneck fluid run for several seeds at once: one step of every seed per numpy
call.

Same model, step and random streams as ``sim/fluid.py`` (``simulate_fluid``) and
``sim/fluid_star.py`` (``simulate_star`` with ``order="share"``, no packets): the flows each
come in on a link of their own and share one egress that serves each flow in proportion to
its bytes queued, marks ECN with RED at dequeue and pauses uplinks by PFC; every flow runs
NVIDIA's DCQCN reaction point. ``tests/sim/test_fluid_seeds.py`` checks that each seed gives
``simulate_fluid``'s completion, queue, pauses and CNPs.

Why: a step of the single-seed kernel is some 30 numpy calls of 1-2 us whatever the flow
count, so an incast of 128 flows (2,800 steps of 4 us) costs 100-150 ms a seed. A
validation runs several seeds of one scenario (``benchmarks/peer_ns3_dcqcn.py``: five).
Here the state is an array of seeds x flows and the per-seed scalars (queue, FIFO share,
marking probability, PFC threshold) short lists, so a numpy call does the work of all seeds:
five seeds cost about twice one (what grows is the element work and the uniforms). Seeds
step together; a seed that is done is left inert (its flows send nothing, its timers are
off) and its result taken at its last step.

Work skipped, as in ``simulate_star``: the CNP comparisons while no mark is on its way back
(alpha's decay is then applied lazily as one power), the PFC thresholds while no flow's
bytes can reach one, completion checks until some flow could have sent its last byte. Calls
saved: alpha kept as the cut factor 1 - alpha / 2, a cut leaving the timer stage to the next
increase, pause and resume in one comparison, samples, queues and pauses summed at the end.
Units: bytes, seconds, bytes/s.
"""

from __future__ import annotations

from collections.abc import Sequence

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
from clusterwright.sim.fluid_star import (
    BLOCK,
    CCS,
    _sample,
    check_star,
)

add_reduce = np.add.reduce
max_reduce = np.maximum.reduce
min_reduce = np.minimum.reduce
count_nonzero = np.count_nonzero
BIG = int(np.iinfo(np.int64).max)


def simulate_star_seeds(links: FluidLinks, flows: FluidFlows, cfg: FluidConfig,
                        seeds: Sequence[int]) -> list[FluidResult]:
    """Run ``flows`` (flow i: link i, then the last link) on ``links`` once per seed in
    ``seeds`` (``cfg.seed`` is ignored); the results in the order of ``seeds``, each what
    ``simulate_star(links, flows, cfg)`` gives for that seed, to rounding (module
    docstring)."""
    check_star(links, flows, cfg)
    n_s, n = len(seeds), len(flows)
    if n_s == 0:
        return []
    rows = range(n_s)
    e = n
    dt = cfg.dt
    d = cfg.dcqcn
    dcqcn = cfg.cc == "dcqcn"
    pfc = cfg.pfc
    cdt = float(links.cap[e]) * dt
    kmin, kmax, pmax = float(links.kmin[e]), float(links.kmax[e]), float(links.pmax[e])
    slope = pmax / max(kmax - kmin, 1e-9)
    size = np.tile(flows.size.astype(float), (n_s, 1))
    line = np.tile(flows.line_rate.astype(float), (n_s, 1))
    goal = size * (1 - 1e-9)
    last_tol = 1e-9 * size
    sb = cfg.shared
    pfc_floor = _pfc_floor(links, sb, np.arange(n))
    base = reserve = offset = k_thr = 0.0
    if sb is not None:
        sw = int(links.switch[0])
        base = float(sb.buffer_bytes[sw] - sb.headroom_bytes[sw]
                     - sb.ports[sw] * sb.reserve_bytes)
        reserve, offset, k_thr = sb.reserve_bytes, sb.resume_offset, 2.0 ** -sb.shift
    xoff, xon = links.xoff[:n], links.xon[:n]
    shape = (n_s, n)
    # Reaction points, seeds x flows (``_CcState``); the schedule bounds over all seeds.
    rate = line.copy()
    target = line.copy()
    half = np.full(shape, 0.5)  # 1 - alpha / 2, the factor of a cut
    # The rate timer: when each flow's next increase is due, and its stage (increases since
    # its last cut). A cut restarts the timer but leaves ``stage`` and ``ev_next`` (when the
    # timer was due after the flow's last increase) alone: the flow had an increase since
    # its last cut iff ev_next == next_timer, and its stage counts from 0 again at its next
    # increase unless that increase is due at ev_next (one copy a cut fewer).
    stage = np.zeros(shape, dtype=np.int64)
    ev_next = np.full(shape, -1, dtype=np.int64)
    seen = np.zeros(shape, dtype=bool)
    all_seen = False
    dec_flag = np.zeros(shape, dtype=bool)
    flags_left = False
    next_dec = np.zeros(shape, dtype=np.int64)
    next_timer = np.full(shape, BIG)
    min_dec = min_timer = BIG
    k = max(1, round(dt / d.alpha_interval_s))
    dec_steps = max(1, round(d.decrease_interval_s / dt))
    timer_steps = max(1, round(d.increase_timer_s / dt))
    decay = (1 - d.g) ** k
    half_gain = (1 - (1 - d.g) ** np.arange(k + 1)) / 2
    decay_due = 0  # steps of alpha decay not yet applied (the same for every seed)
    gh_of = [_half_step(decay ** (i + 1), half_gain) for i in range(4)]
    # log P(no CNP) in one alpha interval per marked byte departing.
    log_per_byte = -1 / cfg.packet_bytes / k
    # The network; per-seed scalars are lists (a few seeds: faster than numpy).
    q = np.zeros(shape)  # bytes of each flow queued at the egress
    qtot = [0.0] * n_s
    # Bytes each flow has still to send (inf once it has sent them all: it is then never the
    # next to finish) and, once it has, what it sent.
    left = size.copy()
    sent = np.zeros(shape)
    dt_live = np.full(shape, dt)  # dt, 0 once a flow has sent its last byte
    dt_send = dt_live  # and 0 while its uplink is paused
    xdt = rate * dt_send  # bytes each flow sends a step
    s_rate = add_reduce(xdt, 1).tolist()
    sending = np.ones(shape, dtype=bool)
    n_sending = [n] * n_s
    waiting = np.zeros(shape, dtype=bool)  # sent every byte, not all delivered
    done_at = np.full(shape, np.nan)
    n_done = [0] * n_s
    check_at = 0  # no flow of any seed can send its last byte before this step
    n_wait = 0
    g_keep = [1.0] * n_s  # each seed's egress keep factor since its last check
    g_check = [0.0] * n_s
    paused = np.zeros(shape, dtype=bool)
    any_paused = False
    paused_log: list[tuple[int, np.ndarray]] = []  # (step, paused) of every step with one
    # Pause gaps (``fluid_star.pause_gap``): 1 - the pauses in force at each of the last
    # gap_n steps, seeds x flows (a ring; ``gap_set``: slots holding a pause), and the last step
    # with one.
    gaps = pfc and dcqcn
    gap_n = pause_history_steps(links, sb, cdt) if gaps else 1
    # (one slot more, never set: where a seed's departures have no history to look at)
    gap_ring = np.ones((gap_n + 1, n_s, n)) if gaps else np.ones((1, 1, 1))
    gap_set = [False] * (gap_n + 1)
    last_pause = -gap_n
    seed_idx = np.arange(n_s)
    cnps = [0] * n_s
    # Each step's queue, bytes sent and marking probability, per seed (summed at the end).
    log: list[tuple[list[float], list[float], list[float]]] = []
    rtt = flows.rtt
    cnp_lag = np.maximum(1, np.round(CNP_LAG * rtt / dt).astype(np.int64))
    if np.any(cnp_lag != cnp_lag[0]):
        raise ValueError("flows: a single-bottleneck run needs one round trip for all")
    c_lag = int(cnp_lag[0])
    hist_n = int(np.maximum(1, np.round(rtt / dt)).max(initial=1)) + 2
    # expm1(log P(no CNP)) in one alpha interval for each flow's departures, by step (None:
    # no seed marked).
    hist: list[np.ndarray | None] = [None] * hist_n
    # Each seed's uniforms (default_rng(seed)'s stream: k x n a step, simulate_fluid's
    # draws), BLOCK steps at a time, negated: u < P(CNP) = -expm1(log P(none)) is
    # expm1(log P(none)) < -u. nu[s, j]: the k x n of seed s, step j of the block.
    bits = [PCG64(s) for s in seeds]
    gens = [Generator(b) for b in bits]
    drawn = [0] * n_s  # uniforms of each stream used or skipped
    nu = np.zeros((n_s, BLOCK, k, n))
    nu_block = -1
    ideal = cfg.expect_s if cfg.expect_s is not None else \
        float(flows.size.sum()) / float(links.cap.max()) + float(rtt.max(initial=0.0))
    sample_every = max(1, round(SAMPLE_S / dt), int(ideal / dt / SAMPLES))
    spread: list[list[float]] = [[] for _ in rows]
    sample_t: list[list[float]] = [[] for _ in rows]
    one_line = bool(flows.line_rate.min() == flows.line_rate.max()) if n else True
    share_cap = float(links.cap[e])
    fair = [np.zeros(n) for _ in rows]
    fair_for = [-1] * n_s
    # One line rate: each sample's rates, flows sending, counts and live seeds, turned into
    # spreads at the end.
    samples: list[tuple[float, np.ndarray, np.ndarray, list[int], list[bool]]] = []
    sending_now = sending.copy()  # (a copy made when ``sending`` changes)
    end_step = [0] * n_s  # the steps each seed ran
    end_cnps = [0] * n_s
    end_pause = [np.zeros(n) for _ in rows]
    live = [True] * n_s  # seeds not done
    n_live = n_s
    step = 0
    t = 0.0
    while n_live:
        if step >= MAX_STEPS:
            raise ValueError(f"the fluid run needs more than {MAX_STEPS:,} steps of "
                             f"{dt * 1e6:g} us; fewer bytes or a coarser step")
        # Senders at their rates, unless one may send its last bytes.
        exact = step + 1 >= check_at
        if exact:
            sx = np.minimum(xdt, left)
            s_dt = add_reduce(sx, 1).tolist()
        else:
            sx, s_dt = xdt, s_rate
        if gaps:
            slot = step % gap_n
            if any_paused:
                np.logical_not(paused, out=gap_ring[slot], casting="unsafe")
                gap_set[slot] = True
                last_pause = step
            elif gap_set[slot]:
                gap_ring[slot] = 1.0
                gap_set[slot] = False
        q += sx
        left -= sx
        # The egress: what it holds (h), its capacity shared in proportion to the bytes
        # queued (a flow keeps 1 - cdt / h of its own); RED at dequeue on the queue left;
        # log P(no CNP) per byte queued: the departures, q cdt / h, times -p / packet.
        queue, keep, p, per_q = [], [], [], []
        for qt, sd in zip(qtot, s_dt, strict=True):
            h = qt + sd
            if h > cdt:
                x = h - cdt
                pp = 0.0 if x <= kmin else (1.0 if x > kmax else min((x - kmin) * slope,
                                                                      pmax))
                queue.append(x)
                keep.append(1.0 - cdt / h)
                p.append(pp)
                per_q.append(cdt / h * pp * log_per_byte)
            else:
                queue.append(0.0)
                keep.append(0.0)
                p.append(0.0)
                per_q.append(0.0)
        log.append((queue, s_dt, p))
        if dcqcn and max(p) > 0.0:
            # One product for both: log P(no CNP) and the bytes kept.
            lam, q = q * np.array([per_q, keep])[:, :, None]
            if gaps and step - last_pause <= max(queue) / cdt:
                # Each seed's departures arrived queue / cdt steps ago (``pause_gap``).
                slots = [(step - b) % gap_n if b < gap_n and b <= step and pp > 0.0
                         else gap_n for b, pp in zip([int(x / cdt) for x in queue], p,
                                                     strict=True)]
                if any(gap_set[a] for a in slots):
                    lam *= gap_ring[slots, seed_idx]
            hist[step % hist_n] = np.expm1(lam, out=lam)
        else:
            hist[step % hist_n] = None
            q = q * np.array(keep)[:, None]
        qtot = queue
        if n_wait:
            g_keep = [a * b for a, b in zip(g_keep, keep, strict=True)]
        if exact:
            # Flows that sent their last byte stop sending and wait for their bytes to be
            # delivered.
            fresh = left <= last_tol
            if count_nonzero(fresh):
                sending &= ~fresh
                n_sending = add_reduce(sending, 1).tolist()
                sending_now = sending.copy()
                waiting |= fresh
                sent = np.where(fresh, size - left, sent)
                left[fresh] = np.inf
                n_wait += int(count_nonzero(fresh))
                dt_live = np.where(fresh, 0.0, dt_live)
                for r in np.flatnonzero(fresh.any(1)).tolist():
                    g_keep[r], g_check[r] = 1.0, np.inf
                dt_send = np.where(paused, 0.0, dt_live) if any_paused else dt_live
                xdt = rate * dt_send
                s_rate = add_reduce(xdt, 1).tolist()
            # Until a rate-timer event raises a rate, flow i sends at most rate x dt a step.
            least = float(min_reduce(left / rate, None)) / dt
            check_at = step + max(1, int(min(least, 1e9)))
        ended: list[int] = []  # seeds done this step
        if n_wait and any(a <= b for a, b in zip(g_keep, g_check, strict=True)):
            # Delivered = sent - queued. A waiting flow's bytes queued shrink by its seed's
            # keep factor each step: g_keep is its product since the last check, and the
            # flow nearest its goal is done once g_keep <= (sent - goal) / queued.
            fin = waiting & (sent - q >= goal)
            if count_nonzero(fin):
                done_at[fin] = t + dt
                waiting &= ~fin
                n_wait -= int(count_nonzero(fin))
                for r, c in enumerate(add_reduce(fin, 1).tolist()):
                    n_done[r] += c
                    if c and n_done[r] == n:
                        ended.append(r)
            ratio = np.where(waiting, (sent - goal) / np.maximum(q, 1e-300), 0.0)
            g_keep = [1.0] * n_s
            g_check = [v * (1 + 1e-9) for v in max_reduce(ratio, 1).tolist()]
        # PFC on the egress's bytes by ingress (simulate_fluid's ``_pfc``).
        pause_moved = False
        if pfc and not any_paused and sb is not None and max(queue) > pfc_floor:
            # A flow pauses once its bytes past the reserve reach (base - used) / 2^shift,
            # and used <= the queue: none can while each is below reserve + (base - queue)
            # / 2^shift.
            near = any(a >= (reserve + max(base - b, 0.0) * k_thr) * (1 - 1e-9)
                       for a, b in zip(max_reduce(q, 1).tolist(), qtot, strict=True))
        else:
            near = True
        if pfc and near and (any_paused or max(queue) > pfc_floor):
            if sb is None:
                new = np.where(paused, q > xon, q > xoff)
            else:
                over = np.maximum(q - reserve, 0.0)
                thr = [max(base - u, 0.0) * k_thr for u in add_reduce(over, 1).tolist()]
                # Pause at the threshold; resume at the resume offset below it.
                if any_paused:
                    # (> the resume level is >= the next float above it.)
                    new = over >= np.where(paused, np.nextafter(np.array(
                        [max(x - offset, 0.0) for x in thr]), np.inf)[:, None],
                        np.array(thr)[:, None])
                else:
                    new = over >= np.array(thr)[:, None]
            new_any = bool(count_nonzero(new))
            # What the senders send moves only if some flow paused or resumed.
            pause_moved = (any_paused or new_any) and bool((new ^ paused).any())
            paused = new
            any_paused = new_any
            if any_paused:
                paused_log.append((step, paused))
        changed = pause_moved
        # Reaction points (``_CcState.dcqcn_step``), one CNP delay later.
        if dcqcn:
            m = step + 1
            back = hist[(step - c_lag) % hist_n] if step >= c_lag else None
            nflag = None
            if back is not None:
                if step // BLOCK != nu_block:
                    nu_block = step // BLOCK
                    at = nu_block * BLOCK * k * n
                    for s_, g_ in enumerate(gens):
                        bits[s_].advance(at - drawn[s_])
                        g_.random((BLOCK, k, n), out=nu[s_])
                        np.negative(nu[s_], out=nu[s_])
                        drawn[s_] = at + BLOCK * k * n
                # CNPs in each of the step's alpha intervals.
                nflag = add_reduce(back[:, None, :] < nu[:, step % BLOCK], 1, np.uint8)
                got = nflag > 0
                n_got = add_reduce(got, 1).tolist()
                if not max(n_got):
                    nflag = None
            if nflag is not None:
                cnps = [a + b for a, b in zip(cnps, n_got, strict=True)]
                # Whether every flow is due every step (before this step's first CNPs).
                fast = dec_steps == 1 and all_seen and not flags_left
                # alpha' = alpha d + gain_j is half' = half d + (1 - d) - gain_j / 2.
                dd, gh = gh_of[decay_due] if decay_due < len(gh_of) else \
                    _half_step(decay ** (decay_due + 1), half_gain)
                if all_seen:
                    half *= dd
                    half += gh.take(nflag, mode="clip")
                else:
                    half = np.where(seen, half * dd + gh.take(nflag, mode="clip"), half)
                decay_due = 0
                if not all_seen:
                    first = got & ~seen
                    if count_nonzero(first):
                        half[first] = 0.5
                        seen |= first
                        all_seen = bool(seen.all())
                        next_dec[first] = m + dec_steps
                        min_dec = min(min_dec, m + dec_steps)
                if fast:
                    # Every flow is due every step: this step's CNPs cut now (``_cut``,
                    # inline).
                    if d.clamp_target:
                        np.copyto(target, rate, where=got)
                    else:
                        np.copyto(target, rate, where=got & (ev_next == next_timer))
                    cut = rate * half
                    np.maximum(cut, d.min_rate, out=cut)
                    np.copyto(rate, cut, where=got)
                    np.copyto(next_timer, m + timer_steps, where=got)
                    min_timer = min(min_timer, m + timer_steps)
                    changed = True
                else:
                    dec_flag |= got
                    flags_left = True
            else:
                decay_due += 1  # (only seen flows decay: applied where seen)
            if flags_left and m >= min_dec:
                if decay_due:
                    dd = decay ** decay_due
                    half = np.where(seen, half * dd + (1.0 - dd), half)
                    decay_due = 0
                # Each seen flow's decrease comes every ``dec_steps`` (simulate_fluid moves
                # it on even when nothing is flagged); here it is moved on only now.
                if dec_steps == 1:
                    np.maximum(next_dec, m, out=next_dec)
                else:
                    late = next_dec < m
                    next_dec[late] += dec_steps * -((next_dec[late] - m) // dec_steps)
                due = seen & (next_dec == m)
                c = due & dec_flag
                if count_nonzero(c):
                    _cut(c, rate, target, half, ev_next, next_timer, m + timer_steps,
                         d.min_rate, d.clamp_target)
                    min_timer = min(min_timer, m + timer_steps)
                    changed = True
                dec_flag &= ~due
                flags_left = bool(count_nonzero(dec_flag))
                next_dec[due] += dec_steps
                min_dec = int(next_dec[seen].min())
            if m >= min_timer:
                i = np.flatnonzero(next_timer <= m)
                st = np.where(ev_next.flat[i] == m, stage.flat[i], 0)
                inc = np.where(st < d.fast_recovery, 0.0,
                               np.where(st == d.fast_recovery, d.rate_ai, d.rate_hai))
                tg = np.minimum(target.flat[i] + inc, line.flat[i])
                target.flat[i] = tg
                rate.flat[i] = (rate.flat[i] + tg) / 2
                stage.flat[i] = st + 1
                ev_next.flat[i] = m + timer_steps
                next_timer.flat[i] = m + timer_steps
                min_timer = int(next_timer.min())
                changed = True
                # Rates went up: bound those flows again (the others' bounds stand).
                least_i = float(min_reduce(left.flat[i] / rate.flat[i], None,
                                           initial=np.inf)) / dt
                check_at = min(check_at, step + max(1, int(min(least_i, 1e9))))
        if changed:
            if pause_moved:
                dt_send = np.where(paused, 0.0, dt_live) if any_paused else dt_live
            xdt = rate * dt_send
            s_rate = add_reduce(xdt, 1).tolist()
        if step % sample_every == 0:
            if one_line:
                samples.append((t, rate.copy(), sending_now, n_sending, live.copy()))
            else:
                _samples(links, flows, sending, n_sending, rate, line, live, fair, fair_for,
                         n_done, spread, sample_t, t)
        t += dt
        step += 1
        for r in ended:
            # Seed r is done: its counts now; its flows stay silent and its timers off.
            live[r] = False
            n_live -= 1
            end_step[r] = step
            end_cnps[r] = cnps[r]
            next_timer[r] = BIG
            min_timer = int(next_timer.min())
    queues, sends, probs = (np.asarray(v) for v in zip(*log, strict=True))
    if samples:
        _spreads(samples, float(flows.line_rate[0]), share_cap, spread, sample_t)
    if paused_log:
        when = np.asarray([s_ for s_, _ in paused_log])
        held_back = np.asarray([v for _, v in paused_log])
        for r in rows:
            end_pause[r] = add_reduce(held_back[when < end_step[r], r], 0) * dt
    out = []
    for r in rows:
        span = end_step[r]
        qs, xs = queues[:span, r], sends[:span, r]
        q_mean = np.zeros(n + 1)
        q_mean[e] = float(qs.sum()) / span
        q_mx = np.zeros(n + 1)
        q_mx[e] = float(qs.max())
        pause = np.zeros(n + 1)
        pause[:n] = end_pause[r]
        sent_b = float(xs.sum())
        out.append(FluidResult(
            end_s=float(np.max(done_at[r])) if n else 0.0, fct_s=done_at[r].copy(),
            start_s=np.zeros(n), queue_mean_bytes=q_mean, queue_max_bytes=q_mx,
            pause_s=pause,
            # (a sum of products, not ``@``: BLAS would leave its threads spinning)
            marked_fraction=float(add_reduce(xs * probs[:span, r])) / sent_b if sent_b > 0
            else 0.0,
            cnps=end_cnps[r], rate_spread=np.asarray(spread[r]),
            sample_times=np.asarray(sample_t[r]), steps=span, dt=dt))
    return out


def _half_step(dd: float, half_gain: np.ndarray) -> tuple[float, np.ndarray]:
    """alpha' = alpha dd + gain_j as half = 1 - alpha / 2: half' = half dd + gh_j; (dd, gh)."""
    return dd, (1.0 - dd) - half_gain


def _cut(c: np.ndarray, rate: np.ndarray, target: np.ndarray, half: np.ndarray,
         ev_next: np.ndarray, next_timer: np.ndarray, timer_at: int, min_rate: float,
         clamp_target: bool) -> None:
    """DCQCN's rate decrease of the flows ``c`` (in place): the target becomes the rate
    (unless no increase came since the last cut, CLAMP_TARGET_RATE off), the rate
    rate x ``half`` (1 - alpha / 2), at least ``min_rate``; the rate timer restarts
    (``simulate_star_seeds``'s timer state)."""
    if clamp_target:
        np.copyto(target, rate, where=c)
    else:
        np.copyto(target, rate, where=c & (ev_next == next_timer))
    cut = rate * half
    np.maximum(cut, min_rate, out=cut)
    np.copyto(rate, cut, where=c)
    np.copyto(next_timer, timer_at, where=c)


def _samples(links: FluidLinks, flows: FluidFlows, sending: np.ndarray, n_act: list[int],
             rate: np.ndarray, line: np.ndarray, live: list[bool], fair: list[np.ndarray],
             fair_for: list[int], n_done: list[int], spread: list[list[float]],
             sample_t: list[list[float]], t: float) -> None:
    """Each live seed with a flow sending: its largest |rate / max-min share - 1| over its
    sending flows (``simulate_star``'s samples), flows of several line rates; ``n_act``:
    each seed's flows sending."""
    for r, a in enumerate(n_act):
        if live[r] and a:
            fair[r], fair_for[r] = _sample(links, flows, sending[r], rate[r], line[r],
                                           fair[r], fair_for[r], n_done[r], spread[r], False)
            sample_t[r].append(t)


def _spreads(samples: list[tuple[float, np.ndarray, np.ndarray, list[int], list[bool]]],
             line: float, cap: float, spread: list[list[float]],
             sample_t: list[list[float]]) -> None:
    """``_samples`` for flows of one line rate, all samples at once: the sending flows share
    the egress evenly (progressive filling on the star), none above the line rate. Each
    sample: (time, rates, flows sending, their count per seed, seeds live)."""
    ts = np.asarray([v[0] for v in samples])
    rates = np.asarray([v[1] for v in samples])
    on = np.asarray([v[2] for v in samples])
    n_act = np.asarray([v[3] for v in samples])
    live = np.asarray([v[4] for v in samples])
    hi = max_reduce(np.where(on, rates, -np.inf), 2)
    lo = min_reduce(np.where(on, rates, np.inf), 2)
    for r in range(rates.shape[1]):
        ok = live[:, r] & (n_act[:, r] > 0)
        share = np.minimum(line, cap / np.maximum(n_act[ok, r], 1))
        spread[r] = np.maximum(hi[ok, r] / share - 1, 1 - lo[ok, r] / share).tolist()
        sample_t[r] = ts[ok].tolist()


__all__ = ["CCS", "simulate_star_seeds"]
