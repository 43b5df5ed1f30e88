"""DCQCN and TIMELY fluid formulas (model/congestion.py)."""

from __future__ import annotations

import numpy as np
import pytest

from clusterwright.model.congestion import (
    MBPS,
    Dcqcn,
    Timely,
    dcqcn_derivatives,
    dcqcn_fixed_point,
    red,
    timely_derivatives,
)


def test_red_marks_nothing_below_kmin_pmax_at_kmax_everything_above() -> None:
    q = np.array([0.0, 100e3, 250e3, 400e3, 400e3 + 1])
    p = red(q, 100e3, 400e3, 0.2)
    assert p.tolist() == pytest.approx([0.0, 0.0, 0.1, 0.2, 1.0])


def test_mellanox_parameters_scale_from_25g_as_the_hpcc_simulator_does() -> None:
    # HPCC run.py at 100 Gb/s: RATE_AI 20 Mb/s, RATE_HAI 200 Mb/s, KMIN 400 KB, KMAX 1,600 KB.
    d = Dcqcn.mellanox(100)
    assert d.rate_ai == pytest.approx(20 * MBPS)
    assert d.rate_hai == pytest.approx(200 * MBPS)
    assert (d.kmin_bytes, d.kmax_bytes, d.pmax) == (400e3, 1600e3, 0.2)
    assert (d.alpha_interval_s, d.decrease_interval_s, d.increase_timer_s) == (1e-6, 4e-6,
                                                                                300e-6)
    assert not d.clamp_target


@pytest.mark.parametrize("flows", [2, 10, 20])
def test_fixed_point_is_a_rest_point_of_the_fluid_model(flows: int) -> None:
    c = Dcqcn.paper()
    cap = 40e9 / 8
    fp = dcqcn_fixed_point(flows, cap, c, 1000.0)
    one = np.ones(1)
    drc, drt, dal = dcqcn_derivatives(one * fp["rate_c"], one * fp["rate_t"],
                                      one * fp["alpha"], one * fp["p"], one * fp["rate_c"], c,
                                      1000.0)
    # Relative to the rate's own scale (bytes/s per s over C/N per decrease interval).
    scale = fp["rate_c"] / c.decrease_interval_s
    assert abs(drc[0]) / scale < 1e-6
    assert abs(drt[0]) / scale < 1e-6
    assert abs(dal[0]) < 1e-6


def test_fixed_point_queue_grows_with_the_number_of_flows() -> None:
    # The CoNEXT 2016 analysis: DCQCN's stable queue grows with N (its Fig. 6 trend); with
    # the paper's parameters the marking probability rises with N and the queue with it,
    # pinned at Kmax once the probability needed exceeds Pmax.
    c = Dcqcn.paper()
    cap = 40e9 / 8
    qs = [dcqcn_fixed_point(n, cap, c, 1000.0)["queue_bytes"] for n in (2, 10, 50)]
    ps = [dcqcn_fixed_point(n, cap, c, 1000.0)["p"] for n in (2, 10, 50)]
    assert ps[0] < ps[1] < ps[2]
    assert c.kmin_bytes < qs[0] < qs[1] <= qs[2] <= c.kmax_bytes


def test_timely_cuts_above_t_high_and_adds_below_t_low() -> None:
    t = Timely()
    rate = np.array([10e9, 10e9])
    dr, _ = timely_derivatives(rate, np.zeros(2), np.array([10e-6, 1e-3]), np.zeros(2), t)
    assert dr[0] > 0  # below T_low: additive increase
    assert dr[1] < 0  # above T_high: multiplicative decrease
