"""The scheduler's view of a designed fabric and the fragmentation ratio."""

from __future__ import annotations

import pytest

from clusterwright.catalog.registry import Catalog
from clusterwright.errors import InputError
from clusterwright.sim.cluster_shape import cluster_shape, simple_shape


def test_dgx_h100_levels_follow_the_fabric_designer(catalog: Catalog) -> None:
    s = cluster_shape(catalog, "dgx-h100", 2048)
    # SN5600 at 400G: 64 down ports per leaf -> SUs of 64 nodes; 8 SUs per pod -> 4 pods.
    assert (s.nodes, s.gpus_per_node, s.nodes_per_su, s.sus_per_pod) == (2048, 8, 64, 8)
    assert s.gpus == 16_384 and s.nodes_per_pod == 512
    assert s.span([0, 63]) == 0 and s.span([0, 64]) == 2 and s.span([0, 512]) == 3


def test_rack_scale_systems_schedule_compute_trays(catalog: Catalog) -> None:
    s = cluster_shape(catalog, "gb200-nvl72", 8)
    assert s.nodes == 8 * 18 and s.gpus_per_node == 4
    assert s.nodes_per_su % 18 == 0  # whole NVLink domains per SU


def test_non_blocking_fabric_has_no_closed_form_penalty(catalog: Catalog) -> None:
    assert cluster_shape(catalog, "dgx-h100", 256).ratio == (1.0, 1.0, 1.0, 1.0)


def test_oversubscribed_leaves_slow_cross_su_allreduce(catalog: Catalog) -> None:
    s = cluster_shape(catalog, "dgx-h100", 256, oversubscription=2.0)
    # 2:1 leaves halve the per-GPU network bandwidth across SUs; a 1 GB all-reduce is
    # bandwidth-bound, so the ratio is close to (and not above) 2.
    assert 1.6 < s.ratio[2] <= 2.0
    assert list(s.ratio) == sorted(s.ratio)
    # c = 0.15 of the step in exposed DP communication: 1 + 0.15 (r - 1).
    assert s.slowdown(2, 0.15) == pytest.approx(1 + 0.15 * (s.ratio[2] - 1))
    assert s.slowdown(0, 0.15) == 1.0


def test_hand_made_shape_is_checked() -> None:
    s = simple_shape(10, nodes_per_su=4, sus_per_pod=2)
    assert [s.su_of(i) for i in (0, 3, 4, 9)] == [0, 0, 1, 2]
    assert s.pod_of(9) == 1
    with pytest.raises(InputError, match="divide"):
        simple_shape(8, nodes_per_su=4, nodes_per_leaf=3)
    with pytest.raises(InputError, match="ratios"):
        simple_shape(8, ratio=(1.0, 0.5, 1.0, 1.0))
