"""The single-bottleneck fluid run (sim/fluid_star.py) against the general one (sim/fluid.py)."""

from __future__ import annotations

import numpy as np
import pytest

from clusterwright.model.congestion import Dcqcn
from clusterwright.sim.fluid import FluidConfig, simulate_fluid
from clusterwright.sim.fluid_star import _pace, _packet_marks, pause_gap, simulate_star
from clusterwright.sim.incast import star, star_incast
from tests.sim.fluid_helpers import GBPS, WIRE, assert_same_run


@pytest.mark.parametrize(("senders", "cc", "buffer_mb"), [
    (8, "dcqcn", 32), (24, "dcqcn", 32), (24, "dcqcn", 4), (16, "none", 4), (16, "none", 32)])
def test_star_kernel_reproduces_the_general_fluid_run(senders: int, cc: str,
                                                      buffer_mb: int) -> None:
    # Same seed, same stream of uniforms: every CNP, cut and pause must coincide. The 4 MB
    # buffer makes PFC pause the senders.
    kw = {"cc": cc, "buffer_bytes": buffer_mb * 2**20, "seed": 3}
    fast = star_incast(senders, WIRE / 4, **kw)  # type: ignore[arg-type]
    slow = star_incast(senders, WIRE / 4, general=True, **kw)  # type: ignore[arg-type]
    assert_same_run(fast, slow)
    if buffer_mb == 4:
        assert fast.pause_s.sum() > 0


def test_star_kernel_reproduces_one_microsecond_steps() -> None:
    # dt = 1 us: one alpha interval a step, a decrease every fourth step.
    fast = star_incast(12, WIRE / 4, dt=1e-6, seed=5)
    slow = star_incast(12, WIRE / 4, dt=1e-6, seed=5, general=True)
    assert_same_run(fast, slow)


def test_star_kernel_reproduces_clamped_target_and_static_pfc() -> None:
    links, flows, _ = star(10, WIRE / 4, GBPS)
    links.xoff[:10] = 60e3
    links.xon[:10] = 40e3
    cfg = FluidConfig(cc="dcqcn", dcqcn=Dcqcn.mellanox(GBPS).with_(clamp_target=True),
                      seed=2)
    fast = simulate_star(links, flows, cfg)
    assert_same_run(fast, simulate_fluid(links, flows, cfg))
    assert fast.pause_s.sum() > 0


def test_star_kernel_refuses_what_it_does_not_model() -> None:
    links, flows, _ = star(4, 1e5, GBPS)
    with pytest.raises(ValueError, match="cc"):
        simulate_star(links, flows, FluidConfig(cc="timely"))
    flows.group_start[:] = 1e-6
    with pytest.raises(ValueError, match="starts every flow at 0"):
        simulate_star(links, flows, FluidConfig())


def test_arrival_order_serves_the_oldest_bytes_first() -> None:
    # Two senders at line rate, 100 KB and 1 MB, no congestion control, no PFC. First in,
    # first out: the small flow's bytes arrived in its first 100 KB / C and are all served
    # by 2 x 100 KB / C. Served in proportion to the bytes queued, its share shrinks as the
    # big flow's grows, and it is done only when the queue empties, at (1.1 MB) / C.
    cap = GBPS * 1e9 / 8
    links, flows, _ = star(2, 1e6, GBPS)
    flows.size[0] = 1e5
    cfg = FluidConfig(cc="none", pfc=False)
    fifo = simulate_star(links, flows, cfg, order="arrival")
    share = simulate_star(links, flows, cfg)
    assert fifo.fct_s[0] == pytest.approx(2e5 / cap, abs=cfg.dt)
    assert share.fct_s[0] == pytest.approx(1.1e6 / cap, abs=cfg.dt)
    # The total queue and the last completion do not depend on the order.
    assert fifo.end_s == pytest.approx(share.end_s)
    np.testing.assert_allclose(fifo.queue_mean_bytes, share.queue_mean_bytes, rtol=1e-9)


@pytest.mark.parametrize("order", ["share", "arrival"])
def test_queue_trace_averages_to_the_mean_queue(order: str) -> None:
    trace: list[float] = []
    r = star_incast(16, WIRE / 4, order=order, queue_trace=trace, seed=1)
    assert len(trace) == r.steps
    assert np.mean(trace) == pytest.approx(r.queue_mean_bytes[16], rel=1e-9)
    assert max(trace) == pytest.approx(r.queue_max_bytes[16])


def test_arrival_order_needs_the_star_kernel() -> None:
    with pytest.raises(ValueError, match="order"):
        star_incast(4, 1e5, order="arrival", general=True)
    with pytest.raises(ValueError, match="order"):
        star_incast(4, 1e5, order="lifo")


def test_a_new_rate_waits_for_the_next_packet() -> None:
    # HPCC's rdma-hw.cc times a QP's next packet at its rate when the last one went; a DCQCN
    # increase does not move it. Flow 0 at 100 Mb/s sent a packet at 0: its next (1,048 B)
    # is due at 83.84 us, so the raise to 50 Gb/s at 10 us waits until then. Flow 1, at
    # 50 Gb/s, sends a packet every 0.17 us: a cut takes effect at once.
    pkt = 1048.0
    rate = np.array([50e9 / 8, 25e9 / 8])
    eff = np.array([0.1e9 / 8, 50e9 / 8])
    next_pkt = np.array([pkt / (0.1e9 / 8), 10e-6])
    assert _pace(eff, rate, next_pkt, 11e-6, None, pkt)
    assert eff.tolist() == [0.1e9 / 8, 25e9 / 8]
    assert next_pkt[1] == 11e-6  # fallen behind the step: due again at its end
    assert not _pace(eff, rate, next_pkt, 83e-6, None, pkt)
    assert eff[0] == 0.1e9 / 8 and next_pkt[1] == 83e-6
    # Due by 84 us: the packet goes at the new rate, the next one a 50-Gb/s gap later.
    # Flow 1, paused, keeps its sending rate: its packet waits for the resume.
    paused = np.array([False, True])
    rate[1] = 10e9 / 8
    assert _pace(eff, rate, next_pkt, 84e-6, paused, pkt)
    assert eff.tolist() == [rate[0], 25e9 / 8]
    assert next_pkt[0] == pytest.approx(pkt / (0.1e9 / 8) + pkt / rate[0])
    assert next_pkt[1] == 83e-6


def test_marks_fall_on_whole_packets() -> None:
    # ns-3 marks each departing packet with probability p (switch-mmu.cc ShouldSendCN); a
    # flow's packets are where its departures cross a multiple of the packet size.
    dep_pkts = np.array([0.0, 0.9, 1.5])
    dep = np.array([500.0, 200.0, 2000.0])  # bytes leaving this step, 1,000-byte packets
    lam = _packet_marks(dep, dep_pkts, 1000.0, 1.0, 1)
    # p = 1: no packet of flow 0 left (0 -> 0.5), so no CNP; flows 1 and 2 get one for sure.
    assert lam[0] == 0.0
    assert np.isneginf(lam[1:]).all()
    np.testing.assert_allclose(dep_pkts, [0.5, 1.1, 3.5])
    # p = 0.5: flow 2's next 2,000 B cross 2 packet boundaries (3.5 -> 5.5): P(no CNP) =
    # 0.5^2, spread over the step's 4 alpha intervals.
    lam = _packet_marks(dep, dep_pkts, 1000.0, 0.5, 4)
    assert lam[2] == pytest.approx(2 * np.log(0.5) / 4)
    assert lam[0] == pytest.approx(np.log(0.5) / 4)  # 0.5 -> 1.0: one packet
    assert lam[1] == 0.0  # 1.1 -> 1.3


@pytest.mark.parametrize("buffer_mb", [4, 32])
def test_packets_change_nothing_when_no_rate_moves(buffer_mb: int) -> None:
    # Without congestion control no rate moves and nothing is marked: pacing a rate that
    # never changes is the fluid itself, PFC pauses included.
    kw = {"cc": "none", "buffer_bytes": buffer_mb * 2**20, "order": "arrival",
          "dt": 1e-6}
    a = star_incast(16, WIRE / 4, **kw)  # type: ignore[arg-type]
    b = star_incast(16, WIRE / 4, packets=True, packet_bytes=1048, **kw)  # type: ignore[arg-type]
    assert a.end_s == pytest.approx(b.end_s, rel=1e-9)
    np.testing.assert_allclose(a.queue_mean_bytes, b.queue_mean_bytes, rtol=1e-9)
    np.testing.assert_allclose(a.pause_s, b.pause_s, rtol=1e-9, atol=1e-12)


def test_a_pause_reaches_the_egress_one_queueing_delay_later() -> None:
    # Steps 0-9 of history, queue of 2.5 steps of capacity: this step's departures arrived
    # 2 steps ago; what was paused then has a gap now.
    cdt = 1000.0
    ring: list[np.ndarray | None] = [None] * 10
    ring[5 % 10] = np.array([False, True])
    assert pause_gap(ring, 7, 2500.0, cdt) is ring[5]
    assert pause_gap(ring, 7, 500.0, cdt) is None  # arrived this step: nothing paused
    assert pause_gap(ring, 1, 2500.0, cdt) is None  # before the run began
    assert pause_gap(ring, 30, 25_000.0, cdt) is None  # older than the history kept


def test_paused_senders_get_no_cnps_for_the_gap_their_pause_leaves(monkeypatch:
                                                                    pytest.MonkeyPatch) -> None:
    # 24 senders on a 4 MB buffer: PFC pauses them. Marking a paused flow's queued bytes,
    # as service in proportion to the bytes queued would, gives more CNPs than the gaps its
    # pauses leave in a FIFO allow.
    kw = {"buffer_bytes": 4 * 2**20, "seed": 3}
    fifo_gaps = star_incast(24, WIRE / 4, **kw)  # type: ignore[arg-type]
    assert fifo_gaps.pause_s.sum() > 0
    monkeypatch.setattr("clusterwright.sim.fluid_star.pause_gap", lambda *a: None)
    no_gaps = star_incast(24, WIRE / 4, **kw)  # type: ignore[arg-type]
    assert fifo_gaps.cnps < 0.95 * no_gaps.cnps
