"""N-to-1 incast as a fluid problem: on a single switch (the textbook case, and the one the
packet-level comparison in benchmarks/peer_ns3_dcqcn.py runs) and on a designed fabric.

The star: ``senders`` hosts and one receiver on one switch, every link ``link_gbps`` with
``delay_s`` propagation; the switch's egress to the receiver marks ECN (DCQCN's RED
thresholds); PFC with the shared-buffer dynamic thresholds of the HPCC simulator's switch
(headroom 3 x the link's bandwidth-delay product per port, alpha 1/8).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from clusterwright.model.congestion import Dcqcn, Timely
from clusterwright.sim.fluid import (
    FluidConfig,
    FluidFlows,
    FluidLinks,
    FluidResult,
    SharedBuffer,
    simulate_fluid,
)
from clusterwright.sim.fluid_seeds import simulate_star_seeds
from clusterwright.sim.fluid_star import CCS as STAR_CCS
from clusterwright.sim.fluid_star import simulate_star

# NVIDIA's shared-buffer alpha as the HPCC simulator sets it: a port may take 1/2^3 of what
# is free.
PFC_SHIFT = 3.0


def star(senders: int, size_bytes: float, link_gbps: float = 100.0, delay_s: float = 1e-6,
         buffer_bytes: float = 32 * 2**20, dcqcn: Dcqcn | None = None
         ) -> tuple[FluidLinks, FluidFlows, SharedBuffer]:
    """Links, flows and switch buffer of an N-to-1 incast on one switch (module docstring).
    Links 0..N-1 are the senders' uplinks, N the switch's egress to the receiver. The base
    round trip counts two hops each way plus a 1,000-byte packet's serialization."""
    if senders < 1:
        raise ValueError(f"senders: at least 1, got {senders}")
    cap = link_gbps * 1e9 / 8
    d = dcqcn or Dcqcn.mellanox(link_gbps)
    n_l = senders + 1
    kmin = np.full(n_l, np.inf)
    kmax = np.full(n_l, np.inf)
    pmax = np.zeros(n_l)
    kmin[senders], kmax[senders], pmax[senders] = d.kmin_bytes, d.kmax_bytes, d.pmax
    switch = np.r_[np.zeros(senders, dtype=np.int64), -1]
    names = [f"host{i + 1}->switch" for i in range(senders)] + ["switch->receiver"]
    links = FluidLinks(np.full(n_l, cap), kmin, kmax, pmax, switch, names)
    rtt = 4 * delay_s + 2 * 1000 / cap
    flows = FluidFlows.from_paths([[i, senders] for i in range(senders)], size_bytes, cap,
                                  rtt)
    headroom = 3 * cap * delay_s
    buf = SharedBuffer(np.array([float(buffer_bytes)]), np.array([headroom * n_l]),
                       np.array([float(n_l)]), shift=PFC_SHIFT)
    return links, flows, buf


def star_incast(senders: int, size_bytes: float, cc: str = "dcqcn", link_gbps: float = 100.0,
                delay_s: float = 1e-6, buffer_bytes: float = 32 * 2**20, pfc: bool = True,
                dt: float = 4e-6, seed: int = 0, dcqcn: Dcqcn | None = None,
                general: bool = False, order: str = "share",
                queue_trace: list[float] | None = None, packets: bool = False,
                packet_bytes: float = 1000.0) -> FluidResult:
    """Run an N-to-1 incast on one switch (``star``) under ``cc``; the receiver's queue is
    link ``senders`` of the result. DCQCN and no control run in the single-bottleneck
    kernel (``sim/fluid_star.py``: same model and random stream, 3-9x faster) unless
    ``general``; the other controls in ``simulate_fluid``. ``order``: the egress's service
    order in the kernel (``simulate_star``; ``arrival`` is an experiment); ``queue_trace``
    collects the receiver's queue after every step (kernel only); ``packets``: a new rate
    waits out the old rate's packet gap (``simulate_star``, kernel only); ``packet_bytes``:
    a packet on the wire (ECN marks and pacing are per packet)."""
    d = dcqcn or Dcqcn.mellanox(link_gbps)
    links, flows, buf = star(senders, size_bytes, link_gbps, delay_s, buffer_bytes, d)
    cfg = FluidConfig(cc=cc, dcqcn=d, dt=dt, pfc=pfc, shared=buf, seed=seed,
                      timely=Timely.for_link(link_gbps), packet_bytes=packet_bytes)
    if cc in STAR_CCS and not general:
        return simulate_star(links, flows, cfg, order, queue_trace, packets)
    if order != "share" or queue_trace is not None or packets:
        raise ValueError(f"order, queue_trace, packets: need the single-bottleneck kernel (cc "
                         f"{' or '.join(STAR_CCS)}, not general)")
    return simulate_fluid(links, flows, cfg)


def star_incast_seeds(senders: int, size_bytes: float, seeds: Sequence[int], cc: str = "dcqcn",
                      link_gbps: float = 100.0, delay_s: float = 1e-6,
                      buffer_bytes: float = 32 * 2**20, pfc: bool = True, dt: float = 4e-6,
                      dcqcn: Dcqcn | None = None, general: bool = False,
                      packet_bytes: float = 1000.0) -> list[FluidResult]:
    """``star_incast`` once per seed of ``seeds`` (the default service order), the results in
    that order, each the same as ``star_incast(..., seed=s)``'s to rounding. DCQCN and no
    control run each seed in the compiled kernel of ``sim/fluid_seeds.py`` (2-4x the numpy
    kernel's speed; the first call on a machine compiles it, 13-16 s; without numba, the
    ``fast`` extra, ``simulate_star``, 5-10x slower) unless ``general``; the other controls run
    ``simulate_fluid`` once per seed."""
    d = dcqcn or Dcqcn.mellanox(link_gbps)
    links, flows, buf = star(senders, size_bytes, link_gbps, delay_s, buffer_bytes, d)
    cfg = FluidConfig(cc=cc, dcqcn=d, dt=dt, pfc=pfc, shared=buf,
                      timely=Timely.for_link(link_gbps), packet_bytes=packet_bytes)
    if cc in STAR_CCS and not general:
        return simulate_star_seeds(links, flows, cfg, seeds)
    return [simulate_fluid(links, flows, replace(cfg, seed=s)) for s in seeds]
