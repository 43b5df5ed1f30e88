"""Collectives as flows: uncontended runs agree with their closed forms, busbw reaches the
published anchors (validation/collectives.csv), the algorithms' shapes and refusals."""

from __future__ import annotations

import math

import pytest

from clusterwright.catalog.registry import Catalog
from clusterwright.design.fabric import design_fabric
from clusterwright.design.train import net_for
from clusterwright.model.collectives import (
    Interconnect,
    allreduce_s,
    nvls_latency_s,
    ring_latency_s,
)
from clusterwright.sim.collectives import (
    MAX_FLOWS,
    Collective,
    CollectiveBuilder,
    closed_form_allreduce,
    ring_orders,
)
from clusterwright.sim.engine import SimError
from clusterwright.sim.fabric_net import FabricNet
from clusterwright.sim.network import NetworkSim
from clusterwright.spec.fabric import FabricRequest

GB = 1e9


def setup(catalog: Catalog, nodes: int,
          tiers: int | None = None) -> tuple[NetworkSim, CollectiveBuilder]:
    """DGX H100s on the default fabric (8 x 400G rails), ECMP, seed 0."""
    fab = design_fabric(FabricRequest(server="dgx-h100", nodes=nodes, tiers=tiers), catalog)
    net = FabricNet(fab, catalog)
    model = net_for(catalog, catalog.gpu(fab.server.gpu), net.stack, fab.server)
    sim = NetworkSim(net)
    return sim, CollectiveBuilder(sim, model)


def run_one(catalog: Catalog, nodes: int, collective: str, size: float, algorithm: str = "auto",
            **kw: object) -> tuple[Collective, NetworkSim]:
    sim, b = setup(catalog, nodes)
    col = b.add(collective, list(range(8 * nodes)), size, algorithm, **kw)
    sim.run()
    return col, sim


def model_of(catalog: Catalog) -> Interconnect:
    _, b = setup(catalog, 1)
    return b.model


# ---------------------------------------------------------------------------- closed forms

AGREE = [
    (1, "allreduce", "ring"),
    (1, "allgather", "ring"),
    (1, "reducescatter", "ring"),
    (1, "allreduce", "nvls"),
    (1, "alltoall", "auto"),
    (4, "allreduce", "ring"),
    (4, "allgather", "ring"),
    (4, "reducescatter", "ring"),
    (4, "allreduce", "hierarchical"),
    (4, "allreduce", "tree"),
    (4, "alltoall", "auto"),
]


@pytest.mark.parametrize(("nodes", "collective", "algorithm"), AGREE)
@pytest.mark.parametrize("size", [1 * GB, 8 * GB])
def test_uncontended_collectives_agree_with_their_closed_form(
        catalog: Catalog, nodes: int, collective: str, algorithm: str, size: float) -> None:
    """Four DGX H100s sit in one scalable unit: no contention, so the simulated time is the
    closed form of the simulated algorithm within 5%."""
    col, _ = run_one(catalog, nodes, collective, size, algorithm)
    err = col.time_s / col.algorithm_closed_form_s - 1
    print(f"{nodes} x {collective}/{col.algorithm} {size:.0e} B: {err:+.2%}")
    assert abs(err) < 0.05


@pytest.mark.parametrize("algorithm", ["hierarchical", "tree"])
def test_hierarchical_and_tree_agree_with_their_closed_form_at_16mb(
        catalog: Catalog, algorithm: str) -> None:
    col, _ = run_one(catalog, 4, "allreduce", 16e6, algorithm)
    assert col.time_s == pytest.approx(col.algorithm_closed_form_s, rel=0.05)


@pytest.mark.parametrize("collective", ["allgather", "reducescatter"])
def test_hierarchical_allgather_is_compared_with_its_own_closed_form(
        catalog: Catalog, collective: str) -> None:
    col, _ = run_one(catalog, 4, collective, GB, "hierarchical")
    assert col.time_s == pytest.approx(col.algorithm_closed_form_s, rel=0.05)


def test_closed_form_of_a_single_node_ring_and_nvls(catalog: Catalog) -> None:
    m = model_of(catalog)
    S, n = 1 * GB, 8
    ring = closed_form_allreduce("ring", S, n, 1, m)
    assert ring == pytest.approx(ring_latency_s(n, 1, 2.0, m) + 2 * (n - 1) / n * S
                                 / m.scale_up_busbw)
    nvls = closed_form_allreduce("nvls", S, n, 1, m)
    assert nvls == pytest.approx(nvls_latency_s(m) + 2 * (n - 1) / n * S / m.nvls_busbw)
    # The closed form's best is the minimum over the algorithms.
    best = float(allreduce_s(S, n, 1.0, m))
    assert best == pytest.approx(min(ring, nvls))


# ---------------------------------------------------------------------------- busbw anchors


def test_single_node_ring_busbw_is_the_nvlink_anchor(catalog: Catalog) -> None:
    """h100_nvlink_ring_busbw: ~370 GB/s."""
    for collective in ("allreduce", "allgather", "reducescatter"):
        col, _ = run_one(catalog, 1, collective, 8 * GB, "ring")
        print(collective, col.busbw() / GB)
        assert col.busbw() / GB == pytest.approx(370, rel=0.10)


def test_nvls_busbw_is_the_nvls_anchor(catalog: Catalog) -> None:
    """h100_nvls_allreduce_busbw ~480, simai_const_nvls_h100 475."""
    col, _ = run_one(catalog, 1, "allreduce", 8 * GB, "nvls")
    assert 470 <= col.busbw() / GB <= 485
    assert col.algbw() / GB == pytest.approx(col.busbw() / GB * 8 / 14)


@pytest.mark.parametrize("nodes", [3, 4, 16])
def test_multinode_ring_busbw_is_in_the_8x400g_band(catalog: Catalog, nodes: int) -> None:
    """multinode_8x400g_allreduce_busbw: 360-380 GB/s with 3 or more nodes."""
    col, _ = run_one(catalog, nodes, "allreduce", 8 * GB, "ring")
    print(nodes, col.busbw() / GB)
    assert 360 <= col.busbw() / GB <= 380


def test_busbw_factors_are_the_nccl_tests_ones(catalog: Catalog) -> None:
    ar, _ = run_one(catalog, 1, "allreduce", GB, "ring")
    ag, _ = run_one(catalog, 1, "allgather", GB, "ring")
    assert ar.algbw() == pytest.approx(GB / ar.time_s)
    assert ar.busbw() == pytest.approx(ar.algbw() * 2 * 7 / 8)
    assert ag.busbw() == pytest.approx(ag.algbw() * 7 / 8)
    # All-gather and reduce-scatter move the same bytes the same way.
    rs, _ = run_one(catalog, 1, "reducescatter", GB, "ring")
    assert rs.time_s == pytest.approx(ag.time_s)


def test_a_collective_that_has_not_run_has_no_time(catalog: Catalog) -> None:
    sim, b = setup(catalog, 1)
    col = b.add("allreduce", list(range(8)), GB, "ring")
    assert math.isnan(col.time_s)
    sim.run()
    assert col.time_s > 0


# ---------------------------------------------------------------------------- shapes


def test_ring_orders_visit_every_rank_once_per_channel() -> None:
    ranks = list(range(32))
    orders = ring_orders(ranks, 8)
    assert len(orders) == 8
    for o in orders:
        assert sorted(o) == ranks
    # Each channel leaves every server exactly once.
    for o in orders:
        crossings = sum(a // 8 != b // 8 for a, b in zip(o, o[1:] + o[:1], strict=True))
        assert crossings == 4
    # An uneven placement gets one ring in rank order.
    assert ring_orders([0, 1, 2, 8], 8) == [[0, 1, 2, 8]]


def test_a_ring_inside_one_scalable_unit_never_crosses_a_spine(catalog: Catalog) -> None:
    _, sim = run_one(catalog, 2, "allreduce", GB, "ring")
    net = sim.net
    spine = [i for i, t in enumerate(net.tiers) if t == "leaf-spine"]
    assert sim.link_bytes[spine].sum() == 0


def test_each_nic_carries_one_ring_channel_each_way(catalog: Catalog) -> None:
    """Rail-aligned rings: every NIC sends and receives 1/8 of the ring's bytes."""
    S = GB
    _, sim = run_one(catalog, 4, "allreduce", S, "ring")
    net = sim.net
    per_edge = 2 * 31 / 32 * S / 8
    for nic, ups in net.nic_up.items():
        assert sim.link_bytes[ups[0][1]] == pytest.approx(per_edge, rel=1e-6), nic


def test_all_to_all_with_pxn_stays_on_rail(catalog: Catalog) -> None:
    """PXN relays over NVLink to the GPU on the destination's rail, so no byte crosses a
    spine in one SU; without PXN cross-rail pairs do."""
    spine_bytes = {}
    for pxn in (True, False):
        # tiers=2: 4 hosts alone are one switch with no spine to measure.
        sim, b = setup(catalog, 4, tiers=2)
        b.add("alltoall", list(range(32)), GB, "auto", pxn=pxn)
        sim.run()
        spine = [i for i, t in enumerate(sim.net.tiers) if t == "leaf-spine"]
        spine_bytes[pxn] = sim.link_bytes[spine].sum()
        # Every rank sends (n-1)/n of its buffer; 24 of 31 peers are on other servers.
        nic = [i for i, t in enumerate(sim.net.tiers) if t == "node-leaf"]
        assert sim.link_bytes[nic].sum() == pytest.approx(2 * 32 * 24 * GB / 32, rel=1e-6)
    assert spine_bytes[True] == 0
    assert spine_bytes[False] > 0


def test_tree_uses_two_trees_per_rail_and_nvlink_phases(catalog: Catalog) -> None:
    sim, b = setup(catalog, 4)
    col = b.add("allreduce", list(range(32)), GB, "tree")
    labels = [g.label for g in col.groups]
    assert labels[0].endswith("intra-rs") and labels[-1].endswith("intra-ag")
    inter = [g for g in col.groups if "inter-rail" in g.label]
    assert len(inter) == 8
    for g in inter:
        # Two trees over 4 servers, 3 edges each, both directions.
        assert len(g.flows) == 2 * 3 * 2
        assert {f.src % 8 for f in g.flows} == {f.dst % 8 for f in g.flows}  # on its rail
    sim.run()
    assert col.time_s > 0


def test_auto_picks_what_the_closed_form_picks(catalog: Catalog) -> None:
    col, _ = run_one(catalog, 1, "allreduce", 8 * GB)
    assert col.algorithm == "nvls"
    assert col.closed_form_s == pytest.approx(col.algorithm_closed_form_s)
    col, _ = run_one(catalog, 4, "allreduce", 8 * GB, "ring")
    assert col.closed_form_s <= col.algorithm_closed_form_s


# ---------------------------------------------------------------------------- refusals


@pytest.mark.parametrize(("collective", "ranks", "size", "algorithm", "match"), [
    ("allreduce", list(range(16)), GB, "nvls", "nvls"),
    ("allgather", list(range(16)), GB, "tree", "tree"),
    ("broadcast", list(range(8)), GB, "auto", "collective: unknown"),
    ("allreduce", list(range(8)), 0.0, "auto", "size_bytes: must be"),
    ("allreduce", list(range(8)), -1.0, "auto", "size_bytes: must be"),
    ("allreduce", [3], GB, "auto", "at least 2 ranks"),
    ("allreduce", [1, 1, 2], GB, "auto", "twice"),
    ("allreduce", [0, 16], GB, "auto", r"\[16\]"),
    ("allreduce", list(range(8)), GB, "pat", "algorithm: unknown"),
    ("allreduce", [0, 1, 2, 8], GB, "hierarchical", "same number of ranks"),
])
def test_impossible_collectives_are_refused(catalog: Catalog, collective: str,
                                            ranks: list[int], size: float, algorithm: str,
                                            match: str) -> None:
    _, b = setup(catalog, 2)
    with pytest.raises(SimError, match=match):
        b.add(collective, ranks, size, algorithm)


def test_an_all_to_all_above_max_flows_is_aggregated_or_refused(catalog: Catalog) -> None:
    n = math.ceil((1 + math.sqrt(1 + 4 * MAX_FLOWS)) / 2)  # n (n - 1) > MAX_FLOWS
    nodes = math.ceil(n / 8)
    sim, b = setup(catalog, nodes)
    with pytest.raises(SimError, match="smaller expert-parallel group"):
        b.add("alltoall", list(range(nodes * 8)), GB, aggregate=False)
    assert sim.groups == []
    col = b.add("alltoall", list(range(nodes * 8)), GB)
    assert col.aggregated
    (g,) = col.groups
    assert len(g.flows) == 0 and g.n_flows == nodes * 8 * (nodes * 8 - 1)
    sim.run()
    assert col.time_s > 0


@pytest.mark.parametrize("servers", [3, 9, 17])
def test_every_ring_edge_between_servers_stays_on_one_rail(servers: int) -> None:
    """With 1 (mod 8) servers the last one was entered and left on the same rail, so the
    closing edge crossed rails: on a one-tier rail fabric it had no path at all."""
    ranks = list(range(servers * 8))
    for o in ring_orders(ranks, 8):
        for a, b in zip(o, o[1:] + o[:1], strict=True):
            assert a // 8 == b // 8 or a % 8 == b % 8, (a, b)
