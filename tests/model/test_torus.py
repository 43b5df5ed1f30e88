"""Torus collectives (model/torus): the JAX scaling book's ring formulas, hierarchical DCN."""

from __future__ import annotations

import numpy as np
import pytest

from clusterwright.catalog.registry import load_catalog
from clusterwright.design.train import net_for
from clusterwright.model import collectives as co
from clusterwright.model import torus as tz
from clusterwright.model.xp import ArrayOps, ScalarOps

W = 100e9  # bytes/s per link per direction
TOR = tz.TorusNet((16, 16, 24), True, W, 1e-6)


def test_allgather_on_one_closed_axis_is_a_bidirectional_ring() -> None:
    s = 1e9
    t = tz.allgather_s(ScalarOps, s, 16, 1, TOR)
    # V (N-1)/N / (2 W) plus N/2 hops
    assert t == pytest.approx(s * 15 / 16 / (2 * W) + 8 * 1e-6)


def test_two_axes_double_the_bandwidth_and_open_axes_halve_it() -> None:
    s = 1e9
    one = tz.allgather_s(ScalarOps, s, 16, 1, TOR) - 8e-6
    two = tz.allgather_s(ScalarOps, s, 256, 1, TOR) - 16e-6
    assert two == pytest.approx(one / 2 * (255 / 256) / (15 / 16))
    mesh = tz.TorusNet((16, 16, 24), False, W, 1e-6)
    assert tz.allgather_s(ScalarOps, s, 16, 1, mesh) - 15e-6 == pytest.approx(2 * one)
    # a partial axis does not wrap: 8 of 16 chips run one way
    part = tz.allgather_s(ScalarOps, s, 8, 1, TOR) - 7e-6
    assert part == pytest.approx(s * 7 / 8 / W)


def test_allreduce_is_twice_allgather_and_arrays_match_scalars() -> None:
    sizes = np.array([1e6, 1e8, 1e9])
    ranks = np.array([4.0, 64.0, 6144.0])
    strides = np.array([1.0, 4.0, 1.0])
    arr = tz.allreduce_s(ArrayOps, sizes, ranks, strides, TOR)
    for i in range(3):
        one = tz.allreduce_s(ScalarOps, float(sizes[i]), float(ranks[i]), float(strides[i]), TOR)
        assert arr[i] == pytest.approx(one)
        assert one == pytest.approx(
            2 * tz.allgather_s(ScalarOps, float(sizes[i]), float(ranks[i]), float(strides[i]), TOR))


def test_tpu_pod_collectives_use_the_torus_inside_a_slice_and_dcn_across() -> None:
    cat = load_catalog(env={})
    g = cat.gpu("tpu-v5p")
    net = net_for(cat, g, cat.stack_for_gpu(g.id))
    assert net.torus is not None and net.domain_gpus == 6144
    inside = co.allreduce_s(1e9, 64, 1, net, ScalarOps)
    # across two slices: the 1/64 shard crosses the 50 Gb/s-per-chip DCN
    across = co.allreduce_s(1e9, 128, 1, net, ScalarOps)
    assert across > inside  # the same in-slice rings plus the DCN ring of the shard
    dcn_only = co.allreduce_s(1e9, 2, 6144, net, ScalarOps)
    assert dcn_only > 1e9 / net.net_busbw  # a whole gigabyte over the DCN


@pytest.mark.parametrize("shape, ok", [([16, 16, 24], True), ([4, 4, 8], True),
                                       ([16, 16, 32], False), ([3, 4, 4], False),
                                       ([16, 16], False)])
def test_slice_shapes_the_pod_cannot_form_are_named(shape: list[int], ok: bool) -> None:
    srv = load_catalog(env={}).server("tpu-v5p-cube")
    assert srv.torus is not None
    err = tz.torus_shape_error(shape, srv.torus.dims, srv.torus.slices)
    assert (err is None) == ok
