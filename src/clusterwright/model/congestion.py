"""Congestion control as fluid models: DCQCN (ECN-based) and TIMELY (delay-based).

Pure formulas over numpy arrays (one element per flow or flow class); the time stepping, the
queues, marking and PFC are ``sim/fluid.py``. Units: rates in packets per second, times in
seconds, queue and thresholds in bytes, unless a name says otherwise.

**DCQCN** (Zhu et al., "Congestion Control for Large-Scale RDMA Deployments", SIGCOMM 2015;
fluid model as analysed in Zhu, Ghobadi, Misra, Padhye, "ECN or Delay: Lessons Learnt from
Analysis of DCQCN and TIMELY", CoNEXT 2016, eq. 11 there)::

    a = 1 - (1 - p)^(tau R')                       P(a CNP in a decrease interval tau)
    b = p / ((1 - p)^(-B) - 1)                      byte-counter expiries per packet sent
    d = p / ((1 - p)^(-T R') - 1)                   timer expiries per packet sent
    dalpha/dt = g / tau' ((1 - (1 - p)^(tau' R')) - alpha)
    dR_T/dt = -(R_T - R_C) a k / tau + R' (b inc_B + d inc_T)
    dR_C/dt = -R_C alpha a / (2 tau) + (R_T - R_C) / 2 R' (b + d)

with ``p`` the probability a packet is ECN-marked on the flow's path and ``R'`` the flow's
rate, both one feedback delay ago. ``inc`` is the target-rate increase per counter expiry:
``R_AI`` once ``F`` expiries passed without a CNP (the paper's ``(1-p)^(F B)`` factor) and,
as an extension for the hyper-increase stage the paper's model leaves out, ``R_HAI`` once
``F + 1`` passed. ``k`` is 1 when a cut sets the target to the current rate (the paper);
NVIDIA's NICs do that only on the first cut after an increase event (CLAMP_TARGET_RATE off),
which happens with probability ``(1 - p)^(T R')``, so ``k`` is that. Marking is RED on the
instantaneous egress queue: 0 below Kmin, rising to Pmax at Kmax, 1 above. Two parameter
sets: the paper's (tau = 50 us CNP interval, tau' = 55 us, T = 55 us, B = 10 MB, F = 5, g =
1/256, R_AI = 40 Mb/s; ``Dcqcn.paper``) and NVIDIA ConnectX's as the HPCC simulator
implements it (decrease every 4 us on a CNP, alpha every 1 us, rate timer 300 us, no byte
counter, F = 1, R_AI = 5 Mb/s and R_HAI = 50 Mb/s per 25 Gb/s, ECN 100-400 KB per 25 Gb/s at
Pmax 0.2; ``Dcqcn.mellanox``, the default).

**TIMELY** (Mittal et al., "TIMELY: RTT-based Congestion Control for the Datacenter",
SIGCOMM 2015, Algorithm 1; fluid form per CoNEXT 2016 section 4): one update per round trip
(as the HPCC simulator updates it); ``g``, the EWMA of the RTT gradient normalised by the
minimum RTT, with weight ``alpha``; below ``T_low`` add ``delta``; above ``T_high`` multiply
by ``1 - beta (1 - T_high / rtt)``; else add ``delta`` (``N delta`` after five gradients in a
row at or below zero; here ``N delta`` whenever the gradient is negative) or multiply by
``1 - beta g``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

MBPS = 1e6 / 8  # bytes/s per Mb/s


@dataclass(frozen=True)
class Dcqcn:
    """DCQCN reaction-point and marking parameters (module docstring); rates in bytes/s."""

    g: float = 1 / 256
    alpha_interval_s: float = 1e-6  # tau'
    decrease_interval_s: float = 4e-6  # tau: at most one rate cut per interval
    increase_timer_s: float = 300e-6  # T
    byte_counter_bytes: float = math.inf  # B; inf: no byte counter
    fast_recovery: int = 1  # F
    rate_ai: float = 5 * MBPS  # bytes/s per increase step
    rate_hai: float = 50 * MBPS
    min_rate: float = 100 * MBPS
    kmin_bytes: float = 100e3
    kmax_bytes: float = 400e3
    pmax: float = 0.2
    # On a cut, set the target rate to the current one (the paper; Mellanox's
    # CLAMP_TARGET_RATE). Without it the target moves only on the first cut after an
    # increase event, i.e. when the timer expired since the last cut: (1 - p)^(T R').
    clamp_target: bool = False

    @classmethod
    def mellanox(cls, link_gbps: float) -> Dcqcn:
        """NVIDIA ConnectX DCQCN as the HPCC ns-3 simulator configures it for a link speed
        (its run.py: everything that scales with bandwidth scaled from 25 Gb/s)."""
        k = link_gbps / 25
        return cls(rate_ai=5 * k * MBPS, rate_hai=50 * k * MBPS, kmin_bytes=100e3 * k,
                   kmax_bytes=400e3 * k)

    @classmethod
    def paper(cls, link_gbps: float = 40) -> Dcqcn:
        """The DCQCN paper's recommended parameters (SIGCOMM 2015, section 5)."""
        return cls(alpha_interval_s=55e-6, decrease_interval_s=50e-6, increase_timer_s=55e-6,
                   byte_counter_bytes=10e6, fast_recovery=5, rate_ai=40 * MBPS,
                   rate_hai=40 * MBPS, min_rate=0.0, kmin_bytes=5e3, kmax_bytes=200e3,
                   pmax=0.01, clamp_target=True)

    def with_(self, **kw: float) -> Dcqcn:
        return replace(self, **kw)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Timely:
    """TIMELY parameters (Mittal et al. 2015, Table 1, as the HPCC simulator uses them)."""

    t_low_s: float = 50e-6
    t_high_s: float = 500e-6
    min_rtt_s: float = 20e-6
    alpha: float = 0.875  # EWMA weight of the RTT difference
    beta: float = 0.8
    delta: float = 10 * MBPS  # bytes/s additive step (at 10 Gb/s, the paper's)
    hai: int = 5  # N: additive steps once the gradient keeps falling
    min_rate: float = 100 * MBPS

    @classmethod
    def for_link(cls, link_gbps: float) -> Timely:
        """The paper's 10 Gb/s additive step scaled to the link speed."""
        return cls(delta=10 * MBPS * link_gbps / 10)


def red(q: np.ndarray, kmin: np.ndarray | float, kmax: np.ndarray | float,
        pmax: np.ndarray | float) -> np.ndarray:
    """ECN marking probability of a packet on an egress queue of ``q`` bytes (RED on the
    instantaneous queue: 0 to Kmin, linear to Pmax at Kmax, 1 above)."""
    span = np.maximum(np.asarray(kmax) - np.asarray(kmin), 1e-9)
    mid = np.asarray(pmax) * (np.asarray(q) - kmin) / span
    out: np.ndarray = np.where(q <= kmin, 0.0, np.where(q <= kmax, mid, 1.0))
    return out


def _pow1p(p: np.ndarray, n: np.ndarray | float) -> np.ndarray:
    """(1 - p)^n for p in [0, 1], n >= 0 (0^0 = 1)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        out: np.ndarray = np.where(p >= 1.0, np.where(np.asarray(n) > 0, 0.0, 1.0),
                                   np.exp(np.asarray(n) * np.log1p(-np.minimum(p, 1.0))))
    return out


def _expiries(p: np.ndarray, n: np.ndarray | float) -> np.ndarray:
    """p / ((1 - p)^-n - 1): counter expiries per packet sent when an expiry needs ``n``
    packets without a mark (1 / n without marking, 0 when every packet is marked)."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        inv = np.exp(-np.asarray(n) * np.log1p(-np.minimum(p, 1.0 - 1e-15))) - 1.0
        out: np.ndarray = np.where(p <= 0, 1.0 / np.maximum(n, 1e-300),
                                   np.where(p >= 1.0, 0.0, p / np.maximum(inv, 1e-300)))
    return out


def dcqcn_derivatives(rc: np.ndarray, rt: np.ndarray, alpha: np.ndarray, p: np.ndarray,
                      r_seen: np.ndarray, c: Dcqcn, packet_bytes: float
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(dR_C/dt, dR_T/dt, dalpha/dt) of the DCQCN fluid model (module docstring). Rates in
    bytes/s; ``p`` and ``r_seen`` (the rate that drew the marks) one feedback delay ago."""
    pk = np.maximum(r_seen, 0.0) / packet_bytes  # packets/s
    a = 1.0 - _pow1p(p, c.decrease_interval_s * pk)
    alpha_target = 1.0 - _pow1p(p, c.alpha_interval_s * pk)
    dalpha = c.g / c.alpha_interval_s * (alpha_target - alpha)
    n_timer = c.increase_timer_s * pk
    d = _expiries(p, n_timer)
    f = c.fast_recovery
    inc_t = c.rate_ai * _pow1p(p, f * n_timer) + (c.rate_hai - c.rate_ai) * _pow1p(
        p, (f + 1) * n_timer)
    if math.isfinite(c.byte_counter_bytes):
        nb = c.byte_counter_bytes / packet_bytes
        b = _expiries(p, nb)
        inc_b = c.rate_ai * _pow1p(p, f * nb) + (c.rate_hai - c.rate_ai) * _pow1p(
            p, (f + 1) * nb)
    else:
        b = inc_b = np.zeros_like(p)
    clamp = 1.0 if c.clamp_target else _pow1p(p, n_timer)
    drt = -(rt - rc) * a * clamp / c.decrease_interval_s + pk * (b * inc_b + d * inc_t)
    drc = -rc * alpha * a / (2 * c.decrease_interval_s) + (rt - rc) / 2 * pk * (b + d)
    return drc, drt, dalpha


def dcqcn_fixed_point(flows: int, capacity: float, c: Dcqcn, packet_bytes: float
                      ) -> dict[str, float]:
    """The fixed point of the DCQCN fluid model for ``flows`` identical flows sharing a
    bottleneck of ``capacity`` bytes/s: every flow at C/n, and the marking probability where
    cuts balance increases (dR_C/dt = dR_T/dt = dalpha/dt = 0):
    ``alpha a^2 = tau^2 R (b + d)(b inc_B + d inc_T)`` with alpha = 1 - (1-p)^(tau' R),
    solved for p by bisection; the queue is where RED marks with that probability.
    Returns p, alpha, the rates (bytes/s) and the queue (bytes)."""
    rate = capacity / flows
    pk = rate / packet_bytes
    one = np.ones(1)

    def gap(p: float) -> float:
        pa = one * p
        a = 1.0 - _pow1p(pa, c.decrease_interval_s * pk)
        alpha = 1.0 - _pow1p(pa, c.alpha_interval_s * pk)
        n_timer = c.increase_timer_s * pk
        d = _expiries(pa, n_timer)
        f = c.fast_recovery
        inc = d * (c.rate_ai * _pow1p(pa, f * n_timer)
                   + (c.rate_hai - c.rate_ai) * _pow1p(pa, (f + 1) * n_timer))
        bd = d.copy()
        if math.isfinite(c.byte_counter_bytes):
            nb = c.byte_counter_bytes / packet_bytes
            b = _expiries(pa, nb)
            inc = inc + b * (c.rate_ai * _pow1p(pa, f * nb)
                             + (c.rate_hai - c.rate_ai) * _pow1p(pa, (f + 1) * nb))
            bd = bd + b
        # R_T - R_C = tau R' inc / a from dR_T/dt = 0, into dR_C/dt = 0:
        # alpha a^2 = tau^2 R'^2 (b + d) inc / R, and R'^2 / R = R' / packet_bytes
        lhs = alpha * a * a
        rhs = (c.decrease_interval_s ** 2) * pk * bd * inc / packet_bytes
        return float((lhs - rhs)[0])

    lo, hi = 1e-12, 1.0 - 1e-12
    if gap(lo) > 0:
        p = lo
    else:
        for _ in range(200):
            mid = math.sqrt(lo * hi)
            if gap(mid) > 0:
                hi = mid
            else:
                lo = mid
        p = math.sqrt(lo * hi)
    pa = one * p
    a = float(1.0 - _pow1p(pa, c.decrease_interval_s * pk)[0])
    alpha = float(1.0 - _pow1p(pa, c.alpha_interval_s * pk)[0])
    n_timer = c.increase_timer_s * pk
    d = float(_expiries(pa, n_timer)[0])
    b = (float(_expiries(pa, c.byte_counter_bytes / packet_bytes)[0])
         if math.isfinite(c.byte_counter_bytes) else 0.0)
    rt = rate + rate * alpha * a / (c.decrease_interval_s * pk * (b + d)) if b + d > 0 \
        else rate
    # Marking jumps to 1 above Kmax: a probability above Pmax puts the queue there.
    q = c.kmin_bytes + p / c.pmax * (c.kmax_bytes - c.kmin_bytes) if p <= c.pmax \
        else c.kmax_bytes
    return {"p": p, "alpha": alpha, "rate_c": rate, "rate_t": rt, "queue_bytes": q,
            "cut_probability": a}


def timely_derivatives(rate: np.ndarray, g: np.ndarray, rtt: np.ndarray,
                       rtt_gradient: np.ndarray, t: Timely) -> tuple[np.ndarray, np.ndarray]:
    """(dR/dt, dg/dt) of TIMELY (module docstring): ``rtt`` the RTT the flow measures now,
    ``rtt_gradient`` its rate of change (s/s); rates in bytes/s. One update per round trip,
    as the HPCC simulator's implementation does (its ``UpdateRateTimely``)."""
    upd = 1.0 / np.maximum(rtt, t.min_rtt_s)  # updates per second
    # The EWMA tracks the RTT change over one update, normalised by the minimum RTT.
    new_diff = rtt_gradient * rtt / t.min_rtt_s
    dg = upd * t.alpha * (new_diff - g)
    add = np.where(g < 0, t.hai * t.delta, t.delta)
    step = np.where(rtt < t.t_low_s, t.delta,
                    np.where(rtt > t.t_high_s, -t.beta * (1 - t.t_high_s / rtt) * rate,
                             np.where(g <= 0, add, -t.beta * g * rate)))
    return upd * step, dg
