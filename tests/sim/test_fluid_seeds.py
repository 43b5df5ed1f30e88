"""Several seeds in one pass (sim/fluid_seeds.py) against one run per seed (sim/fluid.py,
sim/fluid_star.py)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from clusterwright.model.congestion import Dcqcn
from clusterwright.sim import fluid_seeds
from clusterwright.sim.fluid import FluidConfig, simulate_fluid
from clusterwright.sim.fluid_seeds import _pairwise, simulate_star_seeds
from clusterwright.sim.incast import star, star_incast, star_incast_seeds
from tests.sim.fluid_helpers import GBPS, WIRE, assert_same_run


@pytest.mark.parametrize(("senders", "cc", "buffer_mb"), [
    (8, "dcqcn", 32), (24, "dcqcn", 4), (16, "none", 4)])
def test_each_seed_reproduces_the_general_fluid_run(senders: int, cc: str,
                                                    buffer_mb: int) -> None:
    # The seeds end at different steps; the 4 MB buffer makes PFC pause the senders.
    seeds = [3, 0, 7]
    kw = {"cc": cc, "buffer_bytes": buffer_mb * 2**20}
    batch = star_incast_seeds(senders, WIRE / 4, seeds, **kw)  # type: ignore[arg-type]
    assert len(batch) == len(seeds)
    for s, r in zip(seeds, batch, strict=True):
        assert_same_run(r, star_incast(senders, WIRE / 4, seed=s, general=True,
                             **kw))  # type: ignore[arg-type]
    if buffer_mb == 4:
        assert all(r.pause_s.sum() > 0 for r in batch)
    if cc == "dcqcn":
        assert len({r.cnps for r in batch}) == len(seeds)  # the seeds differ


def test_each_seed_reproduces_one_microsecond_steps() -> None:
    # dt = 1 us: one alpha interval a step, a decrease every fourth step (the flagged path).
    batch = star_incast_seeds(12, WIRE / 4, [5, 1], dt=1e-6)
    for s, r in zip([5, 1], batch, strict=True):
        assert_same_run(r, star_incast(12, WIRE / 4, dt=1e-6, seed=s, general=True))


def test_each_seed_reproduces_clamped_target_and_static_pfc() -> None:
    links, flows, _ = star(10, WIRE / 4, GBPS)
    links.xoff[:10] = 60e3
    links.xon[:10] = 40e3
    cfg = FluidConfig(cc="dcqcn", dcqcn=Dcqcn.mellanox(GBPS).with_(clamp_target=True))
    batch = simulate_star_seeds(links, flows, cfg, [2, 4])
    for s, r in zip([2, 4], batch, strict=True):
        assert_same_run(r, simulate_fluid(links, flows, replace(cfg, seed=s)))
        assert r.pause_s.sum() > 0


def test_seeds_in_one_pass_match_the_single_seed_kernel_under_pfc() -> None:
    # 48 senders into 8 MB: the queue reaches the shared buffer's PFC threshold, where
    # every flow's bytes queued are about equal and a pause is decided to the last bit.
    seeds = [0, 1, 2]
    batch = star_incast_seeds(48, WIRE / 2, seeds, buffer_bytes=8 * 2**20)
    for s, r in zip(seeds, batch, strict=True):
        assert_same_run(r, star_incast(48, WIRE / 2, seed=s, buffer_bytes=8 * 2**20))
        assert r.pause_s.sum() > 0


def test_no_seeds_no_runs() -> None:
    assert star_incast_seeds(4, 1e5, []) == []
    with pytest.raises(ValueError, match="cc"):
        links, flows, _ = star(4, 1e5, GBPS)
        simulate_star_seeds(links, flows, FluidConfig(cc="timely"), [0])


def test_other_controls_run_once_per_seed() -> None:
    runs = star_incast_seeds(4, 1e5, [0, 1], cc="timely")
    assert [r.end_s for r in runs] == [star_incast(4, 1e5, cc="timely", seed=s).end_s
                                       for s in (0, 1)]


def test_each_seed_reproduces_senders_of_two_line_rates() -> None:
    # Half the senders on 50 Gb/s NICs: the rate samples compare against max-min shares.
    links, flows, buf = star(8, WIRE / 4, GBPS)
    flows.line_rate[:4] = flows.line_rate[:4] / 2
    cfg = FluidConfig(cc="dcqcn", dcqcn=Dcqcn.mellanox(GBPS), shared=buf)
    batch = simulate_star_seeds(links, flows, cfg, [1, 2])
    for s, r in zip([1, 2], batch, strict=True):
        assert_same_run(r, simulate_fluid(links, flows, replace(cfg, seed=s)))
        assert len(r.rate_spread) > 10


@pytest.mark.parametrize("n", [1, 7, 8, 9, 127, 128, 129, 300, 1000, 4099])
def test_sums_are_numpys_pairwise_sums_bit_for_bit(n: int) -> None:
    # Values over nine decades: a sum in another order differs in its last bits.
    rng = np.random.default_rng(n)
    a = rng.random(n) * 10.0 ** rng.uniform(-3, 6, n)
    assert _pairwise(a, 0, n) == np.add.reduce(a)
    assert _pairwise(a, 1, n - 1) == np.add.reduce(a[1:])


def test_a_run_longer_than_the_logs_room_runs_again_with_more() -> None:
    # expect_s says the run is 1 us: the first room (4x that, plus 1,024 steps) is too short
    # for 16 x 1 MB at 1-us steps (some 1,400 steps); the rerun gives the general run's.
    links, flows, buf = star(16, WIRE, GBPS)
    cfg = FluidConfig(cc="dcqcn", dcqcn=Dcqcn.mellanox(GBPS), shared=buf, dt=1e-6,
                      expect_s=1e-6)
    (r,) = simulate_star_seeds(links, flows, cfg, [3])
    assert r.steps > 1024 + 4
    assert_same_run(r, simulate_fluid(links, flows, replace(cfg, seed=3)))


def test_without_numba_each_seed_runs_in_the_numpy_kernel(
        monkeypatch: pytest.MonkeyPatch) -> None:
    assert fluid_seeds.COMPILED  # the dev extra installs numba: the tests above compiled
    seeds = [2, 9]
    compiled = star_incast_seeds(12, WIRE / 4, seeds)
    monkeypatch.setattr(fluid_seeds, "COMPILED", False)
    for a, b in zip(compiled, star_incast_seeds(12, WIRE / 4, seeds), strict=True):
        assert_same_run(a, b)


def test_no_writable_cache_directory_compiles_without_the_cache(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # numba finds no cache locator (a read-only install and home): the function still
    # compiles and runs, uncached, instead of the import failing.
    from numba.core import caching

    impl = getattr(caching, "CacheImpl", None) or caching._CacheImpl  # (before numba 0.61)
    monkeypatch.setattr(impl, "_locator_classes", [])

    def add(a: float, b: float) -> float:
        return a + b

    assert fluid_seeds._compiled(add)(2.0, 3.0) == 5.0
