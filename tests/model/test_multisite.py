"""Training across sites (model/multisite): WAN rings, DiLoCo volumes, required bandwidth."""

from __future__ import annotations

import math

import pytest

from clusterwright.model.multisite import (
    Method,
    WanLink,
    bandwidth_for,
    multisite_step,
    ring_bytes,
    wan_allreduce_s,
)


def test_wan_ring_allreduce_moves_two_times_k_minus_one_over_k() -> None:
    link = WanLink(10e9, latency_s=0.01)
    assert ring_bytes(1e9, 4) == pytest.approx(1.5e9)
    assert wan_allreduce_s(1e9, 4, link) == pytest.approx(1.5e9 * 8 / 10e9 + 6 * 0.01)
    assert wan_allreduce_s(1e9, 1, link) == 0.0


def test_diloco_sends_inner_steps_times_less_than_sync() -> None:
    # INTELLECT-1: 100 inner steps and int8 pseudo-gradients against fp32 DP: "400x"
    p, link = 10e9, WanLink(1e9)
    sync = multisite_step(p, 1.0, 8, link, Method("sync", 1, 32.0))
    dil = multisite_step(p, 1.0, 8, link, Method("diloco", 100, 8.0))
    assert sync.wan_bytes_per_site * 100 / dil.wan_bytes_per_site == pytest.approx(400)


def test_required_bandwidth_inverts_utilization() -> None:
    p, step = 10e9, 20.0
    link = WanLink(1e9, latency_s=0.05)
    for m in (Method("sync"), Method("diloco", 100, 8.0),
              Method("streaming", 100, 4.0, fragments=4, overlap_steps=1.0)):
        bw = bandwidth_for(0.95, p, step, 3, link, m)
        assert math.isfinite(bw)
        got = multisite_step(p, step, 3, WanLink(bw, latency_s=0.05), m).utilization
        assert got == pytest.approx(0.95, abs=1e-6)


def test_streaming_needs_less_bandwidth_than_diloco() -> None:
    link = WanLink(1e9)
    d = bandwidth_for(0.99, 70e9, 10.0, 2, link, Method("diloco", 100, 8.0))
    s = bandwidth_for(0.99, 70e9, 10.0, 2, link, Method("streaming", 100, 4.0, 4, 5.0))
    assert s < d / 2


def test_latency_alone_can_forbid_a_target() -> None:
    link = WanLink(1e12, latency_s=10.0)
    assert bandwidth_for(0.99, 1e9, 0.1, 4, link, Method("sync")) == math.inf
