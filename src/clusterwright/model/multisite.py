"""Training across sites: synchronous data parallelism over WAN links, and the low-communication
methods (DiLoCo, Streaming DiLoCo) with their published communication volumes.

Each site runs the same replica layout on its own fabric; the sites exchange, over WAN links of
``bandwidth_bps`` each way per site (the slowest site's link sets the pace), a ring all-reduce
of the per-site tensor (Thakur et al. 2005: ``2 (k-1)/k`` of the bytes per site and ``2 (k-1)``
latencies), the in-site part (reduce-scatter before, all-gather after) riding the fabric and
left to the training step model. Loss shrinks the useful rate as ``1 - loss`` (retransmits).

What each method sends and when:

- ``sync``: every step, every gradient (``grad_bits``, 16 by default) crosses the WAN,
  hierarchically (reduced in the site first); the last backward (2/3 of a step's compute)
  hides what it can (gradient buckets, as inside a site).
- ``diloco`` (Douillard et al., arXiv 2311.08105): every ``inner_steps`` steps the sites
  all-reduce the pseudo-gradient (the parameters' change, ``bits`` per parameter: 32 in the
  paper, 8 in INTELLECT-1's int8 all-reduce, arXiv 2412.01152); training waits for it (both
  papers block on the outer step). Volume over sync DP: ``inner_steps x grad_bits / bits``
  less (INTELLECT-1: "400x" for 100 steps, fp32 to int8).
- ``streaming`` (Streaming DiLoCo, Douillard et al., arXiv 2501.18512): the parameters in
  ``fragments`` fragments, one synchronised every ``inner_steps / fragments`` steps, each
  overlapped with ``overlap_steps`` inner steps of compute and quantized to ``bits`` (4 in the
  paper: E3M0 outer gradients). Peak bandwidth falls by the fragment count and the exposure by
  the overlap.

Compute utilization is compute time over wall time; the bandwidth each site needs for a target
utilization inverts the same formulas. All in SI units (bytes, bits/s, seconds).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

METHODS = ("sync", "diloco", "streaming")
# Share of a step's compute the backward pass takes (2 of the 3 forward-equivalents), the
# window under which gradient buckets reduce while it runs.
BACKWARD_SHARE = 2.0 / 3.0


@dataclass(frozen=True)
class WanLink:
    """One site's WAN link: bits/s each way, one-way latency (s), packet loss (fraction) and
    price per Gb/s per month (USD)."""

    bandwidth_bps: float
    latency_s: float = 0.0
    loss: float = 0.0
    usd_per_gbps_month: float = 0.0

    @property
    def goodput_bps(self) -> float:
        return self.bandwidth_bps * (1.0 - self.loss)


@dataclass(frozen=True)
class Method:
    """How the sites synchronise: ``sync``, ``diloco`` or ``streaming`` (see the module)."""

    name: str = "sync"
    inner_steps: int = 1  # steps between outer synchronisations (DiLoCo's H)
    bits: float = 16.0  # bits per parameter of what crosses the WAN
    fragments: int = 1  # Streaming DiLoCo's parameter fragments
    overlap_steps: float = 0.0  # inner steps one fragment's exchange overlaps (streaming)

    def __post_init__(self) -> None:
        if self.name not in METHODS:
            raise ValueError(f"method {self.name!r} is not one of {', '.join(METHODS)}")


def ring_bytes(tensor_bytes: float, sites: int) -> float:
    """Bytes each site sends in a ring all-reduce of ``tensor_bytes`` over ``sites``."""
    return 2.0 * (sites - 1) / sites * tensor_bytes if sites > 1 else 0.0


def wan_allreduce_s(tensor_bytes: float, sites: int, link: WanLink) -> float:
    """Ring all-reduce of ``tensor_bytes`` per site across ``sites`` over ``link`` (s)."""
    if sites <= 1:
        return 0.0
    return (ring_bytes(tensor_bytes, sites) * 8.0 / link.goodput_bps
            + 2.0 * (sites - 1) * link.latency_s)


@dataclass(frozen=True)
class MultisiteStep:
    """Per outer period (``inner_steps`` steps): compute, WAN time, the part exposed, the
    utilization, and the WAN bytes each site sends."""

    period_steps: int
    compute_s: float
    wan_s: float
    exposed_s: float
    utilization: float
    wan_bytes_per_site: float

    @property
    def wall_s(self) -> float:
        return self.compute_s + self.exposed_s


def _per_sync_bytes(params: float, m: Method) -> float:
    return params * m.bits / 8.0 / max(m.fragments, 1)


def multisite_step(params: float, step_s: float, sites: int, link: WanLink, m: Method
                   ) -> MultisiteStep:
    """One outer period of training ``params`` parameters at ``step_s`` seconds per inner step
    on each site, synchronised across ``sites`` by ``m`` over ``link``."""
    period = max(m.inner_steps, 1) if m.name != "sync" else 1
    compute = period * step_s
    per_sync = _per_sync_bytes(params, m)
    t_one = wan_allreduce_s(per_sync, sites, link)
    if m.name == "sync":
        wan = t_one
        exposed = max(0.0, wan - BACKWARD_SHARE * step_s)
    elif m.name == "diloco":
        wan = t_one
        exposed = wan
    else:
        wan = t_one * m.fragments
        exposed = m.fragments * max(0.0, t_one - m.overlap_steps * step_s)
    util = compute / (compute + exposed) if compute > 0 else 0.0
    return MultisiteStep(period, compute, wan, exposed, util,
                         ring_bytes(per_sync, sites) * (m.fragments if m.name == "streaming"
                                                        else 1))


def bandwidth_for(utilization: float, params: float, step_s: float, sites: int, link: WanLink,
                  m: Method) -> float:
    """The WAN bandwidth (bits/s, each way per site) at which training reaches
    ``utilization``; inf when latency alone prevents it, 0 with one site."""
    if sites <= 1:
        return 0.0
    if not 0.0 < utilization < 1.0:
        raise ValueError("utilization must be in (0, 1)")
    period = max(m.inner_steps, 1) if m.name != "sync" else 1
    compute = period * step_s
    allowed = compute * (1.0 / utilization - 1.0)  # exposed seconds per period
    lat = 2.0 * (sites - 1) * link.latency_s
    bits = ring_bytes(_per_sync_bytes(params, m), sites) * 8.0
    if m.name == "sync":
        budget = allowed + BACKWARD_SHARE * step_s - lat
    elif m.name == "diloco":
        budget = allowed - lat
    else:
        budget = allowed / m.fragments + m.overlap_steps * step_s - lat
    if budget <= 0:
        return math.inf
    return bits / budget / (1.0 - link.loss)
