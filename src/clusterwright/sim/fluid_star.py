"""The fluid run of a single-bottleneck problem, the N-to-1 incast, at a few numpy calls a step.

Same model, same step and same random stream as ``sim/fluid.py`` (``simulate_fluid``): the
flows each come in on a link of their own (``star``: a sender's uplink, at its line rate, so
it never queues) and share one egress, which queues FIFO, marks ECN with RED at dequeue and
accounts its bytes by ingress for PFC (shared-buffer dynamic thresholds). DCQCN is the same
per-flow NVIDIA reaction point (``_CcState.dcqcn_step``). ``tests/sim/test_fluid_star.py``
checks that both give the same completion, queue, pauses and CNPs for the same seed.

Why a second implementation: ``simulate_fluid`` serves any topology (stages of links,
bincounts over flow-link entries, group pacing) and spends about 130 us a step in some 50
numpy calls, whatever the flow count; an incast of 8 to 128 flows needs 300 to 2,800 steps of
4 us. Here the topology is fixed, so a step is the egress's FIFO share (one scalar), the
marking probability (a scalar), the PFC thresholds (one sum) and the reaction points; the
random draws come in blocks of steps; work that does nothing is skipped:

- while no mark is on its way back (the egress below Kmin one CNP delay ago) no CNP can
  arrive: no draw is compared, alpha decays (applied lazily as one power), and a cut cannot
  happen;
- PFC is evaluated only when the queue could reach a threshold (``_pfc_floor``) or a link is
  paused, as in ``simulate_fluid``;
- a flow can finish only once it has sent its last byte: completions are checked only when
  the least remaining flow could have.

Supported: ``cc`` ``dcqcn`` and ``none`` (``star_incast`` falls back to ``simulate_fluid`` for
the others). Units: bytes, seconds, bytes/s.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import numpy as np

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
    fair_shares,
    pause_history_steps,
)

CCS: tuple[str, ...] = ("dcqcn", "none")
ORDERS: tuple[str, ...] = ("share", "arrival")
# Reductions called without ndarray's Python-level wrappers (a microsecond a call here).
add_reduce = np.add.reduce
min_reduce = np.minimum.reduce
count_nonzero = np.count_nonzero
ZERO = np.int64(0)
# Steps of random draws made at once (uniforms of one block: BLOCK x k x flows).
BLOCK = 256


def simulate_star(links: FluidLinks, flows: FluidFlows, cfg: FluidConfig,
                  order: str = "share", queue_trace: list[float] | None = None,
                  packets: bool = False) -> FluidResult:
    """Run ``flows`` (flow i: link i, then the last link) to completion on ``links`` as
    ``simulate_fluid`` would (module docstring). Every flow must start at 0, alone in its
    group, with its first link at its line rate and not stuck.

    ``order``: how the egress serves what it holds. ``share`` (simulate_fluid's): each flow
    in proportion to its bytes queued. ``arrival`` (an experiment, no counterpart in
    simulate_fluid): first in, first out by the step the bytes arrived in, as a switch's
    packet FIFO does, so a mark reaches a flow for bytes it sent one queueing delay ago
    (docs/netsim.md, "Validation against a packet-level simulator").
    ``queue_trace``: if given, the egress's queue (bytes) after every step is appended.
    ``packets`` (an experiment, no counterpart in simulate_fluid): senders and marks move in
    whole packets of ``cfg.packet_bytes``, as in the HPCC simulator:

    - a sender's new rate takes effect only once the packet gap of its old rate has run out
      (``rdma-hw.cc``: ``m_nextAvail = now + size / m_rate`` when a packet goes; the Mlx
      decrease and increase events assign ``m_rate`` directly, not through ``ChangeRate``,
      which would move ``m_nextAvail``). A flow at the 100-Mb/s minimum waits up to 84 us
      to speed up;
    - the egress marks each departing packet with probability p (``switch-mmu.cc``
      ``ShouldSendCN``, at dequeue), and the receiver returns a CNP with the ACK of each
      marked packet (``ReceiveUdp``; an ACK per packet): a flow's packets are where its
      departures cross a multiple of the packet size, so a flow gets no CNP in an interval
      in which none of its packets left, and always one when p = 1 and one did. (The
      default draws a CNP per byte, Poisson: at p = 1 a flow with 1.5 packets leaving in an
      interval misses its CNP 22 % of the time, and flows desynchronise.)"""
    if order not in ORDERS:
        raise ValueError(f"order: one of {', '.join(ORDERS)}, not {order!r}")
    arrival = order == "arrival"
    check_star(links, flows, cfg)
    n = len(flows)
    e = n  # the shared egress
    dt = cfg.dt
    d = cfg.dcqcn
    dcqcn = cfg.cc == "dcqcn"
    pfc = cfg.pfc
    inv_dt = 1 / dt
    cdt = float(links.cap[e]) * dt
    kmin, kmax, pmax = float(links.kmin[e]), float(links.kmax[e]), float(links.pmax[e])
    slope = pmax / max(kmax - kmin, 1e-9)
    neg_inv_pkt = -1 / cfg.packet_bytes
    size = flows.size.astype(float)
    line = flows.line_rate.astype(float)
    goal = size * (1 - 1e-9)
    # PFC: the shared buffer (the egress's switch) or static thresholds per uplink.
    sb = cfg.shared
    pfc_floor = _pfc_floor(links, sb, np.arange(n))
    if sb is not None:
        sw = int(links.switch[0])
        base = float(sb.buffer_bytes[sw] - sb.headroom_bytes[sw]
                     - sb.ports[sw] * sb.reserve_bytes)
        reserve, offset, k_thr = sb.reserve_bytes, sb.resume_offset, 2.0 ** -sb.shift
    xoff, xon = links.xoff[:n], links.xon[:n]
    # Reaction points (``_CcState``): per-flow arrays, scalar schedule bounds.
    rate = line.copy()
    target = line.copy()
    # packets: the rate each flow sends at (its rate when its last packet went) and when its
    # next packet is due; otherwise eff is rate itself.
    eff = rate.copy() if packets else rate
    next_pkt = np.zeros(n)
    pkt_b = float(cfg.packet_bytes)
    # packets: each flow's departures so far, in packets. Flows that start together reach
    # the egress's FIFO interleaved, one packet of each in turn: flow i's packets sit i / n
    # of a packet out of phase with flow 0's.
    dep_pkts = np.arange(n) / max(n, 1)
    alpha = np.ones(n)
    stage = np.zeros(n, dtype=np.int64)
    seen = np.zeros(n, dtype=bool)
    n_seen = 0
    dec_flag = np.zeros(n, dtype=bool)
    flags_left = False
    next_dec = np.zeros(n, dtype=np.int64)
    big = int(np.iinfo(np.int64).max)
    next_timer = np.full(n, big)
    min_dec = min_timer = big
    k = max(1, round(dt / d.alpha_interval_s))
    dec_steps = max(1, round(d.decrease_interval_s / dt))
    timer_steps = max(1, round(d.increase_timer_s / dt))
    decay = (1 - d.g) ** k
    gain = 1 - (1 - d.g) ** np.arange(k + 1)
    decay_due = 0  # steps of alpha decay not yet applied
    # log P(no CNP) in one alpha interval per marked byte departing.
    log_per_byte = neg_inv_pkt * (1.0 / k)
    # The network: bytes each flow sends a step at its rate (0 when paused), their sum.
    sent = np.zeros(n)
    q = np.zeros(n)  # bytes of each flow queued at the egress (the uplinks never queue)
    qtot = 0.0
    dt_live = np.full(n, dt)  # dt, 0 once a flow has sent its last byte
    dt_send = dt_live  # and 0 while its uplink is paused
    xdt = eff * dt_send
    s_rate = float(xdt.sum())
    done_at = np.full(n, np.nan)
    n_done = 0
    check_at = 0  # no flow can send its last byte before this step
    sending = np.ones(n, dtype=bool)
    n_wait = 0  # flows that sent every byte, not yet delivered
    g_keep, g_check = 1.0, 0.0
    paused = np.zeros(n, dtype=bool)
    any_paused = False
    pause_steps = np.zeros(n)
    q_sum = q_max = 0.0
    sent_b = marked_b = 0.0
    cnps = 0
    rtt = flows.rtt
    lag = np.maximum(1, np.round(rtt / dt).astype(np.int64))
    # A CNP reaches its sender CNP_LAG round trips after its packet left the egress. With
    # ``packets``, the sender's new rate reaches the egress one hop later, as the uplink's
    # propagation (which this kernel does not hold bytes for) would delay it: the loop from
    # a mark back to the egress is the whole round trip.
    cnp_lag = lag if packets else \
        np.maximum(1, np.round(CNP_LAG * rtt / dt).astype(np.int64))
    if np.any(cnp_lag != cnp_lag[0]):
        raise ValueError("flows: a single-bottleneck run needs one round trip for all")
    c_lag = int(cnp_lag[0])
    hist_n = int(lag.max(initial=1)) + 2
    # log P(no CNP) per alpha interval of each flow's departures, by step (None: no mark).
    hist: list[np.ndarray | None] = [None] * hist_n
    # Pause gaps (``pause_gap``): the pauses in force, by step, for as many steps as
    # the egress can hold bytes (None: nothing paused). The arrival order and the packet
    # model serve first in, first out already.
    gaps = pfc and dcqcn and not arrival and not packets
    gap_n = pause_history_steps(links, sb, cdt) if gaps else 1
    paused_at: list[np.ndarray | None] = [None] * gap_n
    bits = np.random.PCG64(cfg.seed)  # default_rng(seed)'s generator, which can skip ahead
    rng = np.random.Generator(bits)
    # The uniforms simulate_fluid draws (k x n a step), BLOCK steps at a time, negated:
    # u < P(CNP) = -expm1(log P(none)) is expm1(log P(none)) < -u.
    nu = np.zeros((0, k, n))
    blk0 = 0  # the step of nu[0]
    ideal = cfg.expect_s if cfg.expect_s is not None else \
        float(size.sum()) / float(links.cap.max()) + float(rtt.max(initial=0.0))
    sample_every = max(1, round(SAMPLE_S / dt), int(ideal / dt / SAMPLES))
    spread: list[float] = []
    sample_t: list[float] = []
    fair = np.zeros(n)
    fair_for = -1
    one_line = bool(line.min() == line.max())
    last_mark = -(10**9)  # the last step that marked
    # order "arrival": what arrived, step by step, not yet served ([bytes per flow, total]).
    fifo: deque[list[Any]] = deque()
    step = 0
    t = 0.0
    while n_done < n:
        if step >= MAX_STEPS:
            raise ValueError(f"the fluid run needs more than {MAX_STEPS:,} steps of "
                             f"{dt * 1e6:g} us; fewer bytes or a coarser step")
        # Quiet stretch: no mark on its way back, no cut pending, nothing paused, no flow
        # near its end, the next rate-timer event ahead: rates stay put, so while the queue
        # stays at or below Kmin (no marks) and under every PFC threshold the steps to the
        # event are arithmetic (``_jump``).
        if last_mark + c_lag < step and not flags_left and not any_paused and not arrival \
                and not packets:
            span = min(check_at - 1, min_timer - 1, MAX_STEPS) - step
            if span >= 2:
                lim = min(kmin, pfc_floor if pfc else np.inf)
                qs: list[float] = []
                qt, gk = qtot, g_keep
                while len(qs) < span:
                    h = qt + s_rate
                    qn = h - cdt if h > cdt else 0.0
                    # A waiting flow delivers its last byte: that step is not skipped.
                    gn = gk * (1.0 - cdt / h) if h > cdt else 0.0
                    if qn > lim or (n_wait and gn <= g_check):
                        break
                    qs.append(qn)
                    qt, gk = qn, gn
                kk = len(qs)
                if kk >= 2:
                    q = _jump(q, xdt, qtot, s_rate, cdt, qs)
                    sent += kk * xdt
                    qtot, g_keep = qt, gk
                    q_sum += sum(qs)
                    if queue_trace is not None:
                        queue_trace.extend(qs)
                    q_max = max(q_max, max(qs))
                    sent_b += kk * s_rate
                    for s_ in range(step, step + min(kk, hist_n)):
                        hist[s_ % hist_n] = None
                    if gaps:
                        for s_ in range(step, step + min(kk, gap_n)):
                            paused_at[s_ % gap_n] = None
                    if n_seen:
                        decay_due += kk
                    # Rate samples: no flow starts or stops sending in the stretch, no rate
                    # moves, so each is the same.
                    first_sample = -(-step // sample_every) * sample_every
                    at = range(first_sample, step + kk, sample_every)
                    if len(at) and count_nonzero(sending):
                        fair, fair_for = _sample(links, flows, sending, rate, line,
                                                 fair, fair_for, n_done, spread, one_line)
                        spread.extend(spread[-1:] * (len(at) - 1))
                        sample_t.extend(t + (s_ - step) * dt for s_ in at)
                    for _ in range(kk):
                        t += dt
                    step += kk
                    continue
        # Senders: at their rates, unless one may send its last bytes (then as
        # simulate_fluid does it).
        exact = step + 1 >= check_at
        if exact:
            x = np.minimum(eff, (size - sent) * inv_dt)
            if any_paused:
                x[paused] = 0.0
            sx = x * dt
            s_dt = float(sx.sum())
        else:
            sx, s_dt = xdt, s_rate
        if gaps:
            paused_at[step % gap_n] = paused.copy() if any_paused else None
        # The egress: what it holds, its capacity shared FIFO.
        q += sx
        sent += sx
        held = qtot + s_dt
        queue = held - cdt if held > cdt else 0.0
        # ECN at dequeue (RED on the queue after the step).
        p = 0.0 if queue <= kmin else (1.0 if queue > kmax else
                                       min((queue - kmin) * slope, pmax))
        lam = None
        if arrival:
            if s_dt > 0.0:
                fifo.append([sx.copy(), s_dt])
            if held > cdt:
                dep = _serve_fifo(fifo, cdt, n)
                q -= dep
                np.maximum(q, 0.0, out=q)  # rounding
                if packets and not (p > 0.0 and dcqcn):
                    dep_pkts += dep / pkt_b
                if p > 0.0 and dcqcn:
                    lam = dep * (p * log_per_byte) if not packets else \
                        _packet_marks(dep, dep_pkts, pkt_b, p, k)
            else:
                if packets:
                    dep_pkts += q / pkt_b
                q.fill(0.0)
                fifo.clear()
            g_keep = 0.0  # waiting flows are checked every step
        elif held > cdt:
            f = cdt / held
            if p > 0.0 and dcqcn:
                # the departures, q f, times p / packet
                lam = q * (f * p * log_per_byte) if not packets else \
                    _packet_marks(q * f, dep_pkts, pkt_b, p, k)
                if gaps:
                    gap = pause_gap(paused_at, step, queue, cdt)
                    if gap is not None:
                        lam = np.where(gap, 0.0, lam)
            elif packets:
                dep_pkts += q * (f / pkt_b)
            q *= 1.0 - f
            g_keep *= 1.0 - f
        else:
            if packets:
                dep_pkts += q / pkt_b
            q.fill(0.0)
            g_keep = 0.0
        qtot = queue
        if exact:
            # Flows that sent their last byte stop sending (simulate_fluid sends them
            # rounding residues of 1e-12 bytes) and wait for their bytes to be delivered.
            fresh = np.flatnonzero(sending & (size - sent <= 1e-9 * size))
            if len(fresh):
                sending[fresh] = False
                dt_live[fresh] = 0.0
                n_wait += len(fresh)
                g_keep, g_check = 1.0, np.inf
                dt_send = np.where(paused, 0.0, dt_live) if any_paused else dt_live
                xdt = eff * dt_send
                s_rate = float(add_reduce(xdt))
            # Until a rate-timer event raises a rate, flow i sends at most rate x dt a step:
            # no flow can send its last byte in fewer steps than its bytes left / that.
            left = (size - sent) / np.maximum(np.maximum(rate, eff) * dt, 1e-300)
            least = float(left[sending].min(initial=np.inf))
            check_at = step + max(1, int(min(least, 1e9)))
        if n_wait and g_keep <= g_check:
            # Delivered = sent - queued (an uplink holds nothing). A waiting flow's bytes
            # queued shrink by the egress's keep factor 1 - f each step, the same for all:
            # g_keep is its product since the last check, and the flow nearest its goal is
            # done once g_keep <= (sent - goal) / queued; checked with the arrays from then.
            wait = ~sending & np.isnan(done_at)
            fin = np.flatnonzero(wait & (sent - q >= goal))
            if len(fin):
                done_at[fin] = t + dt
                n_done += len(fin)
                n_wait -= len(fin)
                wait[fin] = False
            # Every flow still waiting has bytes queued (q = 0 would have made it done).
            ratio = (sent[wait] - goal[wait]) / np.maximum(q[wait], 1e-300)
            g_keep = 1.0
            g_check = float(ratio.max(initial=0.0)) * (1 + 1e-9) if n_wait else 0.0
        q_sum += queue
        if queue_trace is not None:
            queue_trace.append(queue)
        if queue > q_max:
            q_max = queue
        hist[step % hist_n] = lam
        if lam is not None:
            last_mark = step
        if p > 0.0:
            marked_b += s_dt * p
        sent_b += s_dt
        # PFC on the egress's bytes by ingress (simulate_fluid's ``_pfc``).
        changed = pause_moved = False  # whether what the senders send a step moves
        if pfc and (any_paused or queue > pfc_floor):
            if sb is None:
                new = np.where(paused, q > xon, q > xoff)
            else:
                used = qtot - n * reserve if float(min_reduce(q)) >= reserve else \
                    float(add_reduce(np.maximum(q - reserve, 0.0)))
                thresh = max(base - used, 0.0) * k_thr
                if thresh > 0.0:
                    new = q >= reserve + thresh
                    if any_paused:
                        new |= paused & (q > reserve + max(thresh - offset, 0.0))
                else:
                    new = ~paused | (q > reserve)
            pause_moved = any_paused
            paused = new
            any_paused = bool(count_nonzero(paused) > 0)
            pause_moved = pause_moved or any_paused
            changed = changed or pause_moved
        if any_paused:
            pause_steps += paused
        # Reaction points (``_CcState.dcqcn_step``), one CNP delay later.
        if dcqcn:
            m = step + 1
            j = step - blk0
            if j >= len(nu):
                # simulate_fluid draws k x n uniforms every step: skip those of the steps
                # jumped over since the last block (one 64-bit draw a uniform).
                bits.advance((step - blk0 - len(nu)) * k * n)
                nu = -rng.random((BLOCK, k, n))
                blk0, j = step, 0
            back = hist[(step - c_lag) % hist_n] if step >= c_lag else None
            n_got = 0
            if back is not None:
                # CNPs in each of the step's alpha intervals.
                nflag = add_reduce(np.expm1(back) < nu[j], 0, np.uint8)
                got = nflag > 0
                n_got = int(count_nonzero(got))
            fast = dec_steps == 1 and n_seen == n and not flags_left
            if n_got:
                cnps += n_got
                if n_seen == n:
                    alpha *= decay ** (decay_due + 1)
                    alpha += gain.take(nflag)
                elif n_seen:
                    alpha = np.where(seen, alpha * decay ** (decay_due + 1) + gain.take(nflag),
                                     alpha)
                decay_due = 0
                if n_seen < n:
                    first = got & ~seen
                    if first.any():
                        alpha[first] = 1.0
                        seen |= first
                        n_seen = int(np.count_nonzero(seen))
                        next_dec[first] = m + dec_steps
                        min_dec = min(min_dec, m + dec_steps)
                if fast:
                    # Every flow is due every step: this step's CNPs cut now.
                    if d.clamp_target:
                        np.copyto(target, rate, where=got)
                    else:
                        np.copyto(target, rate, where=got & (stage != 0))
                    # rate (1 - alpha / 2), at least the minimum. (A full product and a
                    # masked copy: ``multiply(where=)`` costs four times as much.)
                    cut = alpha * -0.5
                    cut += 1.0
                    cut *= rate
                    np.maximum(cut, d.min_rate, out=cut)
                    np.copyto(rate, cut, where=got)
                    np.copyto(stage, ZERO, where=got)
                    np.copyto(next_timer, np.int64(m + timer_steps), where=got)
                    min_timer = min(min_timer, m + timer_steps)
                    changed = True
                else:
                    dec_flag |= got
                    flags_left = True
            elif n_seen:
                decay_due += 1
            if flags_left and m >= min_dec:
                if decay_due:
                    alpha = np.where(seen, alpha * decay ** decay_due, alpha)
                    decay_due = 0
                # Each seen flow's decrease comes every ``dec_steps`` (simulate_fluid moves
                # it on even when nothing is flagged); here it is moved on only now.
                if dec_steps == 1:
                    np.maximum(next_dec, m, out=next_dec)
                else:
                    late = next_dec < m
                    next_dec[late] += dec_steps * -((next_dec[late] - m) // dec_steps)
                due = seen & (next_dec == m)
                c = np.flatnonzero(due & dec_flag)
                if len(c):
                    rc = rate[c]
                    if not d.clamp_target:
                        target[c] = np.where(stage[c] == 0, target[c], rc)
                    else:
                        target[c] = rc
                    rate[c] = np.maximum(d.min_rate, rc * (1 - alpha[c] / 2))
                    stage[c] = 0
                    next_timer[c] = m + timer_steps
                    min_timer = min(min_timer, m + timer_steps)
                    changed = True
                dec_flag &= ~due
                flags_left = bool(dec_flag.any())
                next_dec[due] += dec_steps
                min_dec = int(next_dec[seen].min())
            if m >= min_timer:
                i = np.flatnonzero(next_timer <= m)
                st = stage[i]
                inc = np.where(st < d.fast_recovery, 0.0,
                               np.where(st == d.fast_recovery, d.rate_ai, d.rate_hai))
                target[i] = np.minimum(target[i] + inc, line[i])
                rate[i] = (rate[i] + target[i]) / 2
                stage[i] += 1
                next_timer[i] += timer_steps
                min_timer = int(next_timer.min())
                changed = True
                check_at = min(check_at, step + 1)  # rates went up: bound it again
        # packets: a flow's packet due in the next step goes at the rate in force from this
        # step's end (after its cuts and increases), which the flow then sends at; its next
        # packet is due a packet time at that rate later (the phase kept, unless the flow
        # falls behind: several packets a step, or a resume). A paused flow's packet waits
        # for the resume.
        if packets and _pace(eff, rate, next_pkt, t + 2 * dt,
                             paused if any_paused else None, pkt_b):
            changed = True
            check_at = min(check_at, step + 1)
        if changed:
            if pause_moved:
                dt_send = np.where(paused, 0.0, dt_live) if any_paused else dt_live
            xdt = eff * dt_send
            s_rate = float(add_reduce(xdt))
        if step % sample_every == 0 and count_nonzero(sending):
            fair, fair_for = _sample(links, flows, sending, rate, line, fair, fair_for, n_done,
                                     spread, one_line)
            sample_t.append(t)
        t += dt
        step += 1
    if decay_due:
        alpha = np.where(seen, alpha * decay ** decay_due, alpha)
    span = max(step, 1)
    q_mean = np.zeros(n + 1)
    q_mean[e] = q_sum / span
    q_mx = np.zeros(n + 1)
    q_mx[e] = q_max
    pause = np.zeros(n + 1)
    pause[:n] = pause_steps * dt
    return FluidResult(
        end_s=float(np.max(done_at)) if n else 0.0, fct_s=done_at, start_s=np.zeros(n),
        queue_mean_bytes=q_mean, queue_max_bytes=q_mx, pause_s=pause,
        marked_fraction=marked_b / sent_b if sent_b > 0 else 0.0, cnps=cnps,
        rate_spread=np.asarray(spread), sample_times=np.asarray(sample_t), steps=step,
        dt=dt)


def check_star(links: FluidLinks, flows: FluidFlows, cfg: FluidConfig) -> None:
    """Raise ValueError unless ``flows`` and ``cfg`` are a single-bottleneck problem: flow i
    crosses link i, then the last link, every flow starts at 0 alone in its group on an
    uplink at least at its line rate, nothing stuck, ``cfg.cc`` one of ``CCS``."""
    n = len(flows)
    if cfg.cc not in CCS:
        raise ValueError(f"cc: the single-bottleneck run supports {', '.join(CCS)}, not "
                         f"{cfg.cc!r}")
    if len(links.cap) != n + 1 or not np.array_equal(
            flows.entry_link, np.ravel(np.c_[np.arange(n), np.full(n, n)])):
        raise ValueError("flows: flow i must cross link i, then the last link")
    if cfg.until_s is not None or links.stuck.any() or np.any(flows.group_start != 0) \
            or any(flows.group_after) or np.any(flows.group_latency != 0) \
            or not np.array_equal(flows.group, np.arange(n)) \
            or np.any(links.cap[:n] < flows.line_rate):
        raise ValueError("flows: a single-bottleneck run starts every flow at 0, alone in "
                         "its group, on an uplink at least at its line rate, nothing stuck")


def _sample(links: FluidLinks, flows: FluidFlows, active: np.ndarray, rate: np.ndarray,
            line: np.ndarray, fair: np.ndarray, fair_for: int, n_done: int,
            spread: list[float], one_line: bool) -> tuple[np.ndarray, int]:
    """Append the sending flows' largest |rate / max-min share - 1| to ``spread``
    (``simulate_fluid``'s samples); the shares are recomputed when the sending set moved.
    ``one_line``: every flow has the same line rate."""
    n = len(rate)
    n_act = int(np.count_nonzero(active))
    if one_line:
        # One line rate: the active flows share the egress evenly (progressive filling on
        # the star), and no rate is above the line rate.
        share = min(float(line[0]), float(links.cap[-1]) / n_act)
        r = rate if n_act == n else rate[active]
        spread.append(max(float(r.max()) / share - 1, 1 - float(r.min()) / share))
        return fair, fair_for
    key = n_done + n_act * (n + 1)
    if fair_for != key:
        fair, fair_for = fair_shares(links, flows, active), key
    a_ = active & (fair > 0)
    spread.append(float(np.abs(np.minimum(rate[a_], line[a_]) / fair[a_] - 1).max())
                  if a_.any() else 0.0)
    return fair, fair_for


def _pace(eff: np.ndarray, rate: np.ndarray, next_pkt: np.ndarray, until: float,
          paused: np.ndarray | None, pkt: float) -> bool:
    """The senders' packet pacing (``simulate_star``'s ``packets``): each flow whose next
    packet is due by ``until`` (and not paused) sends it at its current ``rate``, which
    becomes its sending rate ``eff``, and its next packet is due ``pkt`` / rate later (at
    ``until`` if that is sooner: several packets a step, or a resume). Moves ``eff`` and
    ``next_pkt`` in place; whether a sending rate moved."""
    due = next_pkt <= until
    if paused is not None:
        due &= ~paused
    moved = due & (eff != rate)
    any_moved = bool(moved.any())
    if any_moved:
        np.copyto(eff, rate, where=moved)
    nxt = next_pkt + pkt / rate
    np.copyto(next_pkt, np.where(nxt > until, nxt, until), where=due)
    return any_moved


def _packet_marks(dep: np.ndarray, dep_pkts: np.ndarray, pkt: float, p: float, k: int
                  ) -> np.ndarray:
    """log P(no CNP) per alpha interval of each flow when ``dep`` bytes of it leave the
    egress at marking probability ``p`` and each departing packet is marked independently:
    the packets are the multiples of ``pkt`` its departures cross (``dep_pkts``, its
    departures so far in packets, is moved on); (1 - p)^packets over the step's ``k``
    intervals."""
    before = np.floor(dep_pkts)
    dep_pkts += dep / pkt
    count = np.floor(dep_pkts) - before
    out: np.ndarray = np.where(count > 0, -np.inf, 0.0) if p >= 1.0 else \
        count * (float(np.log1p(-p)) / k)
    return out


def _serve_fifo(fifo: deque[list[Any]], cdt: float, n: int) -> np.ndarray:
    """Serve ``cdt`` bytes from the oldest arrivals on (the last one in part): bytes per
    flow."""
    dep = np.zeros(n)
    budget = cdt
    while budget > 0.0 and fifo:
        head = fifo[0]
        if head[1] <= budget * (1 + 1e-12):
            dep += head[0]
            budget -= head[1]
            fifo.popleft()
        else:
            part = head[0] * (budget / head[1])
            dep += part
            head[0] = head[0] - part
            head[1] -= budget
            budget = 0.0
    return dep


def _jump(q: np.ndarray, xdt: np.ndarray, qtot: float, s_rate: float, cdt: float,
          qs: list[float]) -> np.ndarray:
    """Each flow's bytes at the egress after ``len(qs)`` steps without marks or pauses: every
    step adds ``xdt`` and the egress serves ``cdt`` FIFO, keeping the share 1 - cdt / held of
    what it held (nothing once it drained); ``qs``: the queue after each step from ``qtot``.
    Linear in q and xdt: q_K = q_0 prod(c) + xdt sum_j prod_{l >= j} c_l."""
    keep = []
    before = qtot
    for qn in qs:
        h = before + s_rate
        keep.append(1.0 - cdt / h if h > cdt else 0.0)
        before = qn
    c = np.asarray(keep)
    tail = np.cumprod(c[::-1])[::-1]  # prod_{l >= j} c_l
    out: np.ndarray = q * tail[0] + xdt * float(tail.sum())
    return out


def pause_gap(paused_at: list[np.ndarray | None], step: int, queue: float,
              cdt: float) -> np.ndarray | None:
    """The flows whose departures from the egress have a gap this step: those paused when
    the bytes now leaving arrived, ``queue / cdt`` steps ago (first in, first out), or None.

    While PFC pauses a sender it puts nothing in the egress's FIFO, so one queueing delay
    later none of its bytes leave and no ECN mark, hence no CNP, can reach it (the HPCC
    simulator's receiver returns a CNP only for a marked packet it gets). Served in
    proportion to the bytes queued, the fluid would go on marking its queued bytes; these
    flows get no marks instead."""
    k = int(queue / cdt)
    if k >= len(paused_at) or step < k:
        return None
    return paused_at[(step - k) % len(paused_at)]

