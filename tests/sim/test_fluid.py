"""The fluid congestion-control simulator (sim/fluid.py) and the incast builder."""

from __future__ import annotations

import numpy as np
import pytest

from clusterwright.sim.fluid import FluidConfig, FluidFlows, FluidLinks, fair_shares, simulate_fluid
from clusterwright.sim.incast import star, star_incast

GBPS = 100
CAP = GBPS * 1e9 / 8
DT = 4e-6


def _links(n: int, marking: tuple[int, ...] = (), xoff: dict[int, float] | None = None,
           stuck: tuple[int, ...] = ()) -> FluidLinks:
    kmin = np.full(n, np.inf)
    kmax = np.full(n, np.inf)
    pmax = np.zeros(n)
    for i in marking:
        kmin[i], kmax[i], pmax[i] = 400e3, 1600e3, 0.2
    xo = np.full(n, np.inf)
    for i, v in (xoff or {}).items():
        xo[i] = v
    st = np.zeros(n, dtype=bool)
    st[list(stuck)] = True
    return FluidLinks(np.full(n, CAP), kmin, kmax, pmax, np.zeros(n, dtype=np.int64),
                      [f"l{i}" for i in range(n)], xoff=xo, xon=xo * 0.9, stuck=st)


def test_one_flow_alone_finishes_at_line_rate_without_queue_or_marks() -> None:
    links = _links(2, marking=(1,))
    flows = FluidFlows.from_paths([[0, 1]], 1e6, CAP, 4e-6)
    r = simulate_fluid(links, flows, FluidConfig(dt=DT))
    assert r.end_s == pytest.approx(1e6 / CAP, abs=2 * DT)
    assert r.queue_max_bytes.max() == pytest.approx(0.0, abs=1e-6)
    assert r.cnps == 0 and r.marked_fraction == 0.0


def test_incast_without_congestion_control_queues_everything_but_one_senders_share() -> None:
    # N senders at line rate for size/C: the bottleneck drains size, (N - 1) size queue up.
    n, size = 4, 1e6
    links, flows, _ = star(n, size, GBPS)
    r = simulate_fluid(links, flows, FluidConfig(cc="none", dt=DT, pfc=False))
    assert r.end_s == pytest.approx(n * size / CAP, rel=0.01)
    assert r.queue_max_bytes[n] == pytest.approx((n - 1) * size, rel=0.01)


def test_dcqcn_incast_cuts_rates_and_keeps_the_queue_below_no_control() -> None:
    n, size = 8, 300e3
    dc = star_incast(n, size, "dcqcn", dt=DT, seed=1)
    none = star_incast(n, size, "none", dt=DT, pfc=False)
    assert dc.cnps > 0 and 0 < dc.marked_fraction <= 1
    assert dc.end_s >= n * size / CAP
    assert dc.queue_max_bytes[n] < none.queue_max_bytes[n]
    assert 0.5 < dc.jain_fairness(np.full(n, size)) <= 1.0
    again = star_incast(n, size, "dcqcn", dt=DT, seed=1)
    assert again.end_s == dc.end_s  # seeded
    assert np.array_equal(again.queue_mean_bytes, dc.queue_mean_bytes)


@pytest.mark.parametrize("cc", ["dcqcn-fluid", "timely"])
def test_mean_field_models_finish_an_incast(cc: str) -> None:
    n, size = 8, 300e3
    r = star_incast(n, size, cc, dt=DT)
    assert np.isfinite(r.fct_s).all()
    assert r.end_s >= n * size / CAP * 0.999
    none = star_incast(n, size, "none", dt=DT, pfc=False)
    assert r.queue_mean_bytes[n] < none.queue_mean_bytes[n]


def test_pfc_bounds_the_switch_buffer_and_pauses_the_senders() -> None:
    n, size = 16, 1e6
    buf = 4 * 2**20
    r = star_incast(n, size, "none", dt=DT, buffer_bytes=buf)
    assert r.pause_s[:n].max() > 0
    # Dynamic thresholds keep the port under the buffer (plus one step of arrivals).
    assert r.queue_max_bytes[n] < buf + n * CAP * DT
    free = star_incast(n, size, "none", dt=DT, buffer_bytes=buf, pfc=False)
    assert free.queue_max_bytes[n] > buf
    assert r.end_s == pytest.approx(free.end_s, rel=0.02)  # lossless: same bytes, same link


def _hol_network(xoff: float | None, stuck: bool = False) -> tuple[FluidLinks, FluidFlows]:
    # Links: 0 a->s1, 1 v->s1, 2 s1->s2, 3 c->s2, 4 s2->r (bottleneck), 5 s2->r2 (free).
    # Flow 0: a -> r via s1; flow 1: c -> r (incast at s2->r); flow 2 (victim): v -> r2 via
    # s1, sharing only s1->s2 with flow 0.
    links = _links(6, xoff={2: xoff} if xoff is not None else None,
                   stuck=(4,) if stuck else ())
    links.switch[:] = np.array([0, 0, 1, 1, -1, -1])
    flows = FluidFlows.from_paths([[0, 2, 4], [3, 4], [1, 2, 5]], np.array([4e6, 4e6, 1e6]),
                                  CAP, 6e-6)
    return links, flows


def test_pfc_pause_blocks_a_victim_flow_head_of_line() -> None:
    base = simulate_fluid(*_hol_network(None), FluidConfig(cc="none", dt=DT, pfc=True))
    hol = simulate_fluid(*_hol_network(100e3), FluidConfig(cc="none", dt=DT, pfc=True))
    # Without a threshold the victim shares s1->s2 only with flow 0 (half the link); with
    # PFC, s2 pauses s1->s2 for flow 0's queue at s2->r and the victim waits behind it.
    assert hol.pause_s[2] > 0 and base.pause_s[2] == 0
    assert hol.fct_s[2] > 1.5 * base.fct_s[2]


def test_a_pfc_storm_spreads_upstream_and_starves_the_victim() -> None:
    r = simulate_fluid(*_hol_network(100e3, stuck=True),
                       FluidConfig(cc="none", dt=DT, pfc=True, until_s=2e-3))
    assert r.pause_s[4] == pytest.approx(2e-3, abs=2 * DT)  # the stuck port
    assert r.pause_s[2] > 1e-3  # spread to the link into its switch
    assert np.isnan(r.fct_s[2])  # the victim behind it never finishes


def test_fair_shares_split_a_bottleneck_evenly_and_fill_the_rest() -> None:
    links = _links(3)
    links.cap[2] = 3 * CAP
    # Flows 0 and 1 share link 0; flow 2 alone on link 2 (NIC limited to CAP).
    flows = FluidFlows.from_paths([[0], [0], [2]], 1e6, CAP, 4e-6)
    r = fair_shares(links, flows, np.ones(3, dtype=bool))
    assert r.tolist() == pytest.approx([CAP / 2, CAP / 2, CAP])


def test_a_sprayed_hop_splits_bytes_over_parallel_links() -> None:
    links = _links(3)
    # One flow: link 0 (2x capacity), then half on link 1 and half on link 2.
    links.cap[0] = 2 * CAP
    flows = FluidFlows(np.array([0, 0, 0]), np.array([0, 1, 2]), np.array([0, 1, 1]),
                       np.array([1.0, 0.5, 0.5]), np.array([2e6]), np.array([0]),
                       np.array([2 * CAP]), np.array([4e-6]))
    r = simulate_fluid(links, flows, FluidConfig(cc="none", dt=DT))
    assert r.end_s == pytest.approx(2e6 / (2 * CAP), abs=2 * DT)
    assert r.queue_max_bytes.max() == pytest.approx(0.0, abs=1.0)


def test_a_group_waits_for_the_groups_it_follows() -> None:
    links = _links(1)
    flows = FluidFlows.from_paths([[0], [0]], 1e6, CAP, 4e-6, group=np.array([0, 1]))
    flows.group_after = [[], [0]]
    flows.group_latency = np.array([0.0, 10e-6])  # added after each group's last byte
    r = simulate_fluid(links, flows, FluidConfig(cc="none", dt=DT))
    first_done = r.start_s[0] + r.fct_s[0]
    assert r.start_s[1] == pytest.approx(first_done)  # group 0 has no latency
    assert r.end_s == pytest.approx(2e6 / CAP + 10e-6, abs=3 * DT)  # group 1's counts


def test_unknown_congestion_control_is_refused() -> None:
    links, flows, _ = star(2, 1e5)
    with pytest.raises(ValueError, match="cc: unknown 'cubic'"):
        simulate_fluid(links, flows, FluidConfig(cc="cubic"))
