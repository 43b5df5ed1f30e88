"""The flow-level network: max-min fair rates by progressive filling, completion times,
dependencies, byte conservation, ECMP statistics, routing policies and failures.

Hand-checkable fabrics: ``rails=1`` cables only NIC 0 of each DGX H100, which carries GPU 0
(global GPU ``8 * host``), so flows between the hosts' GPU 0s cross exactly: PCIe, the NIC's
leaf link, leaf-spine, spine-leaf, the leaf's NIC link, PCIe. Every network link carries
C = 400 Gb/s x the stack's NIC fraction (47 GB/s), the PCIe links more (64 GB/s), so the NIC
links are the bottlenecks.
"""

from __future__ import annotations

import numpy as np
import pytest

from clusterwright.catalog.registry import Catalog
from clusterwright.design.fabric import Fabric, design_fabric
from clusterwright.design.train import net_for
from clusterwright.sim.engine import SimError
from clusterwright.sim.fabric_net import FabricNet
from clusterwright.sim.network import FlowSpec, NetworkSim
from clusterwright.spec.fabric import FabricRequest

V = 1e9  # bytes per flow
REL = 1e-6


@pytest.fixture(scope="module")
def three_leaves(catalog: Catalog) -> Fabric:
    """Three leaves of one host each under a single spine."""
    return design_fabric(FabricRequest(server="dgx-h100", nodes=3, switch="sn5600", rails=1,
                                       su_hosts=1, leaf_uplinks=1, tiers=2), catalog)


@pytest.fixture(scope="module")
def two_leaves(catalog: Catalog) -> Fabric:
    """Two leaves of eight hosts each, each leaf with one link to each of eight spines."""
    return design_fabric(FabricRequest(server="dgx-h100", nodes=16, switch="sn5600", rails=1,
                                       su_hosts=8, leaf_uplinks=8, tiers=2), catalog)


@pytest.fixture
def net3(three_leaves: Fabric, catalog: Catalog) -> FabricNet:
    return FabricNet(three_leaves, catalog)  # fresh: failures change a net's capacities


@pytest.fixture
def net2(two_leaves: Fabric, catalog: Catalog) -> FabricNet:
    return FabricNet(two_leaves, catalog)


def g0(host: int) -> int:
    """Global index of GPU 0 (the cabled one) of host ``host`` (0-based)."""
    return 8 * host


def nic_up(net: FabricNet, host: int) -> int:
    """Link id of host ``host``'s NIC 0 towards its leaf."""
    return net.nic_up[f"gpu{host + 1:05d}/nic0"][0][1]


def nic_down(net: FabricNet, host: int) -> int:
    leaf = net.leaf_of_nic[(f"gpu{host + 1:05d}/nic0", 1)]
    return net.leaf_down[(leaf, f"gpu{host + 1:05d}/nic0")]


def cap(net: FabricNet) -> float:
    return float(net.cap0[nic_up(net, 0)])


def cross(hosts: list[tuple[int, int]]) -> list[FlowSpec]:
    return [FlowSpec(g0(a), g0(b), key=i) for i, (a, b) in enumerate(hosts)]


def test_bad_policy_qps_and_gpus_are_refused(net3: FabricNet) -> None:
    with pytest.raises(SimError, match="routing: unknown policy 'foo'") as info:
        NetworkSim(net3, routing="foo")
    assert info.value.field == "routing"
    with pytest.raises(SimError, match="qps: must be at least 1") as info:
        NetworkSim(net3, qps=0)
    assert info.value.field == "qps"
    with pytest.raises(SimError, match="GPU 24"):
        NetworkSim(net3).add_group("x", [FlowSpec(0, 24, key=1)], V)


# ---------------------------------------------------------------------------- max-min


def test_one_flow_runs_at_its_bottleneck_and_adds_its_latency(net3: FabricNet) -> None:
    sim = NetworkSim(net3)
    g = sim.add_group("one", cross([(0, 1)]), V, latency_s=1e-3)
    res = sim.run()
    assert g.bytes_done_at == pytest.approx(V / cap(net3), rel=REL)
    assert g.done_at == pytest.approx(V / cap(net3) + 1e-3, rel=REL)
    assert res.end_s == g.done_at


def test_two_groups_on_one_bottleneck_get_equal_rates(net3: FabricNet) -> None:
    sim = NetworkSim(net3)
    a = sim.add_group("a", cross([(0, 1)]), V)
    b = sim.add_group("b", cross([(0, 2)]), V)  # both leave through host 0's NIC
    sim.run(until=1e-6)
    assert a.rate == pytest.approx(cap(net3) / 2, rel=REL)
    assert b.rate == pytest.approx(cap(net3) / 2, rel=REL)
    sim.run()
    assert a.done_at == pytest.approx(2 * V / cap(net3), rel=REL)
    assert b.done_at == pytest.approx(2 * V / cap(net3), rel=REL)


def test_a_finished_group_hands_its_share_to_the_other(net3: FabricNet) -> None:
    C = cap(net3)
    sim = NetworkSim(net3)
    long = sim.add_group("long", cross([(0, 1)]), V)
    short = sim.add_group("short", cross([(2, 1)]), V / 2)  # both enter host 1's NIC
    sim.run()
    assert short.done_at == pytest.approx(V / C, rel=REL)  # V/2 at C/2
    assert long.done_at == pytest.approx(V / C + (V / 2) / C, rel=REL)  # then alone at C


def test_a_group_limited_elsewhere_leaves_its_spare_share_to_the_other(
        net3: FabricNet) -> None:
    C = cap(net3)
    sim = NetworkSim(net3)
    sim.fail(0.0, "gpu00001/nic0->leaf-su001-r1", 0.25)  # host 0's NIC link at C/4
    slow = sim.add_group("slow", cross([(0, 1)]), V)
    fast = sim.add_group("fast", cross([(2, 1)]), V)  # shares host 1's NIC link with slow
    sim.run(until=1e-6)
    assert slow.rate == pytest.approx(C / 4, rel=REL)
    assert fast.rate == pytest.approx(3 * C / 4, rel=REL)
    sim.run()
    assert fast.done_at == pytest.approx(V / (0.75 * C), rel=REL)
    assert slow.done_at == pytest.approx(V / (0.25 * C), rel=REL)


def test_progressive_filling_three_groups_on_two_links(net3: FabricNet) -> None:
    """a: 0->1 and c: 0->2 share host 0's NIC; b: 2->1 shares host 1's NIC with a and is held
    to C/4 by its NIC's up-link (one direction only, degraded). Max-min: b = C/4, a = c = C/2
    (host 0's NIC is full) and host 1's NIC keeps C/4 spare, which nobody can use."""
    C = cap(net3)
    net3.set_capacity([nic_up(net3, 2)], 0.25)
    sim = NetworkSim(net3)
    a = sim.add_group("a", cross([(0, 1)]), V)
    b = sim.add_group("b", cross([(2, 1)]), V)
    c = sim.add_group("c", cross([(0, 2)]), V)
    sim.run(until=1e-6)
    assert (a.rate, b.rate, c.rate) == pytest.approx((C / 2, C / 4, C / 2), rel=REL)
    sim.run()
    assert a.done_at == pytest.approx(2 * V / C, rel=REL)
    assert c.done_at == pytest.approx(2 * V / C, rel=REL)
    assert b.done_at == pytest.approx(2 * V / C + (V / 2) / (C / 4), rel=REL)


def test_a_groups_rate_is_set_by_its_most_loaded_link(net3: FabricNet) -> None:
    """Two flows of one group leave through one NIC: that link carries twice the group's
    rate, so each flow gets C/2."""
    C = cap(net3)
    sim = NetworkSim(net3)
    g = sim.add_group("pair", cross([(0, 1), (0, 2)]), V)
    sim.run(until=1e-6)
    assert g.rate == pytest.approx(C / 2, rel=REL)
    sim.run()
    assert g.done_at == pytest.approx(2 * V / C, rel=REL)


def test_a_group_paced_by_its_slowest_flow_leaves_capacity_to_others(net3: FabricNet) -> None:
    """A group of flows 0->1 and 0->2 is held to C/2 by host 0's NIC, so a third group 2->1
    gets C/2 of host 1's NIC, not less."""
    C = cap(net3)
    sim = NetworkSim(net3)
    pair = sim.add_group("pair", cross([(0, 1), (0, 2)]), V)
    other = sim.add_group("other", cross([(2, 1)]), V)
    sim.run(until=1e-6)
    assert pair.rate == pytest.approx(C / 2, rel=REL)
    assert other.rate == pytest.approx(C / 2, rel=REL)


def test_inside_a_server_a_flow_uses_nvlink_only(net3: FabricNet) -> None:
    sim = NetworkSim(net3)
    g = sim.add_group("nvl", [FlowSpec(0, 1, key=1)], V)
    res = sim.run()
    assert g.done_at == pytest.approx(V / net3.nvlink_bps, rel=REL)
    used = {net3.tiers[i] for i in np.flatnonzero(res.link_bytes)}
    assert used == {"nvlink"}


def test_an_empty_group_takes_only_its_latency(net3: FabricNet) -> None:
    sim = NetworkSim(net3)
    g = sim.add_group("empty", cross([(0, 1)]), 0.0, latency_s=5e-6)
    sim.run()
    assert g.done_at == pytest.approx(5e-6)


def test_dependencies_and_start_times_delay_a_group(net3: FabricNet) -> None:
    C = cap(net3)
    sim = NetworkSim(net3)
    first = sim.add_group("first", cross([(0, 1)]), V, latency_s=1e-4)
    second = sim.add_group("second", cross([(0, 1)]), V, after=[first])
    late = sim.add_group("late", cross([(1, 2)]), V, start_at=0.5)
    both = sim.add_group("both", cross([(2, 0)]), V, after=[first], start_at=0.3)
    sim.run()
    assert first.done_at == pytest.approx(V / C + 1e-4, rel=REL)
    assert second.started == first.done_at
    assert second.done_at == pytest.approx(first.done_at + V / C, rel=REL)  # no sharing
    assert late.started == pytest.approx(0.5)
    assert both.started == pytest.approx(0.3)  # later than ``first`` ends
    assert both.done_at == pytest.approx(0.3 + V / C, rel=REL)


def test_bytes_are_conserved_on_every_link(net3: FabricNet) -> None:
    sim = NetworkSim(net3)
    sim.add_group("a", cross([(0, 1), (0, 2)]), V)
    sim.add_group("b", cross([(1, 2)]), V / 3)
    sim.add_group("c", cross([(2, 0)]), V / 2, start_at=0.01)
    res = sim.run()
    lb = res.link_bytes
    assert lb[nic_up(net3, 0)] == pytest.approx(2 * V, rel=REL)
    assert lb[nic_up(net3, 1)] == pytest.approx(V / 3, rel=REL)
    assert lb[nic_down(net3, 2)] == pytest.approx(V + V / 3, rel=REL)
    assert lb[nic_down(net3, 0)] == pytest.approx(V / 2, rel=REL)
    # Every byte crosses one spine uplink and one spine downlink (all flows change leaf).
    up = [i for i, n in enumerate(net3.names) if n.startswith("leaf") and "->spine" in n]
    assert lb[up].sum() == pytest.approx(2 * V + V / 3 + V / 2, rel=REL)
    # Time-averaged utilization never exceeds 1.
    assert 0 < res.max_utilization(net3) <= 1 + 1e-9


# ---------------------------------------------------------------------------- ECMP


def eight_across(net: FabricNet, routing: str, seed: int, qps: int = 1,
                 polarized: bool = False) -> tuple[float, np.ndarray]:
    """8 flows, hosts 0-7 (leaf 1) to hosts 8-15 (leaf 2), one group: (ideal / time, bytes)."""
    sim = NetworkSim(net, routing=routing, seed=seed, qps=qps, polarized=polarized)
    sim.add_group("x", cross([(h, 8 + h) for h in range(8)]), V)
    res = sim.run()
    return V / cap(net) / res.end_s, res.link_bytes


def test_ecmp_is_deterministic_for_a_seed_and_differs_across_seeds(net2: FabricNet) -> None:
    e1, b1 = eight_across(net2, "ecmp", seed=3)
    e2, b2 = eight_across(net2, "ecmp", seed=3)
    assert e1 == e2
    assert (b1 == b2).all()
    patterns = {tuple(np.flatnonzero(eight_across(net2, "ecmp", seed=s)[1]))
                for s in range(10)}
    assert len(patterns) > 5


def test_ecmp_collisions_match_the_monte_carlo_rows(net2: FabricNet) -> None:
    """validation/collectives.csv: 8 flows hashed onto 8 equal paths, paced by the most loaded
    path: mean max load 2.6, mean effective bandwidth 0.41."""
    eff = np.array([eight_across(net2, "ecmp", seed=s)[0] for s in range(200)])
    assert eff.mean() == pytest.approx(0.41, rel=0.05)
    assert (1 / eff).mean() == pytest.approx(2.6, rel=0.05)
    assert set(np.round(1 / eff, 6)) <= {1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0}


def test_more_queue_pairs_bring_ecmp_closer_to_ideal(net2: FabricNet) -> None:
    """8 QPs per connection: 64 subflows on 8 paths (the 64 -> 8 row: 0.66)."""
    one = np.mean([eight_across(net2, "ecmp", seed=s)[0] for s in range(100)])
    eight = np.mean([eight_across(net2, "ecmp", seed=s, qps=8)[0] for s in range(100)])
    assert eight > one + 0.15
    assert eight == pytest.approx(0.66, rel=0.05)


@pytest.mark.parametrize("routing", ["spray", "adaptive"])
def test_spray_and_adaptive_reach_the_ideal_on_eight_paths(net2: FabricNet,
                                                           routing: str) -> None:
    for s in range(5):
        eff, lb = eight_across(net2, routing, seed=s)
        assert eff == pytest.approx(1.0, rel=REL)
        up = [i for i, n in enumerate(net2.names) if n.startswith("leaf-su001") and "->spine" in n]
        assert lb[up] == pytest.approx(np.full(8, V), rel=REL)  # one flow's worth each


def test_polarized_hashing_is_worse_on_three_tiers(catalog: Catalog) -> None:
    """Same hash at every tier: a spine only uses the core links whose index matches the hash
    that brought the flow to it (4 of its 32), so cross-pod traffic collides more."""
    fab = design_fabric(FabricRequest(server="dgx-h100", nodes=64, switch="qm9700", tiers=3,
                                      su_hosts=8), catalog)
    assert fab.shape.pods == 2
    net = FabricNet(fab, catalog)
    flows = [FlowSpec(g, g + 256, key=g) for g in range(256)]  # pod 1 -> pod 2, every rail
    times = {False: [], True: []}
    for polarized in (False, True):
        for s in range(3):
            sim = NetworkSim(net, seed=s, polarized=polarized)
            sim.add_group("x", flows, V)
            times[polarized].append(sim.run().end_s)
    assert np.mean(times[True]) > 1.5 * np.mean(times[False])


# ---------------------------------------------------------------------------- failures


def test_a_spine_failing_mid_run_reroutes_the_sprayed_flows(net2: FabricNet) -> None:
    """Spray: 8 flows fill 8 spine links. One spine fails at T/2: the rest of the bytes go over
    7 at 7/8 of the rate."""
    T = V / cap(net2)
    sim = NetworkSim(net2, routing="spray")
    sim.fail(T / 2, "spine-003")
    g = sim.add_group("x", cross([(h, 8 + h) for h in range(8)]), V)
    res = sim.run()
    assert g.done_at == pytest.approx(T / 2 + T / 2 * 8 / 7, rel=REL)
    dead = net2.links_of("spine-003")
    assert not net2.alive[dead].any()
    assert res.link_bytes[dead].sum() == pytest.approx(2 * 8 * V / 8 / 2, rel=REL)


@pytest.mark.parametrize("routing", ["ecmp", "adaptive", "spray"])
def test_a_failed_spine_slows_but_does_not_stop_a_cross_leaf_group(net2: FabricNet,
                                                                   routing: str) -> None:
    def run(fail: bool) -> float:
        net2.set_capacity(list(range(net2.n_links)), 1.0)
        sim = NetworkSim(net2, routing=routing, seed=1)
        if fail:
            for s in range(1, 7):  # 2 of 8 spines left
                sim.fail(1e-3, f"spine-{s:03d}")
        sim.add_group("x", cross([(h, 8 + h) for h in range(8)]), V)
        return sim.run().end_s

    base, failed = run(False), run(True)
    assert failed > base
    assert np.isfinite(failed)


def test_failing_the_only_spine_cuts_cross_leaf_flows_off(net3: FabricNet) -> None:
    sim = NetworkSim(net3)
    sim.fail(0.0, "spine-001")
    sim.add_group("x", cross([(0, 1)]), V)
    with pytest.raises(SimError, match="gpu00001/gpu0 -> gpu00002/gpu0"):
        sim.run()


def test_failing_a_ranks_leaf_raises_naming_the_cut_off_gpu(net3: FabricNet) -> None:
    sim = NetworkSim(net3)
    sim.fail(0.0, "leaf-su002-r1")
    sim.add_group("ring", cross([(0, 1), (1, 2), (2, 0)]), V)
    with pytest.raises(SimError, match="gpu00002/gpu0"):
        sim.run()


def test_a_leaf_failing_mid_run_names_the_failure_and_the_gpu(net3: FabricNet) -> None:
    sim = NetworkSim(net3)
    sim.fail(V / cap(net3) / 2, "leaf-su003-r1")
    sim.add_group("x", cross([(0, 2)]), V)
    with pytest.raises(SimError, match=r"after leaf-su003-r1 fails.*gpu00003/gpu0"):
        sim.run()


def test_a_link_degraded_to_half_on_the_critical_path_doubles_the_time(net3: FabricNet) -> None:
    C = cap(net3)
    sim = NetworkSim(net3)
    sim.fail(0.0, "leaf-su002-r1->spine-001", 0.5)  # named the other way round from its cable
    g = sim.add_group("x", cross([(0, 1)]), V)
    sim.run()
    assert g.done_at == pytest.approx(2 * V / C, rel=REL)


def test_degrading_mid_run_slows_only_the_rest(net3: FabricNet) -> None:
    C = cap(net3)
    sim = NetworkSim(net3)
    sim.fail(V / C / 2, "gpu00002/nic0", 0.5)
    g = sim.add_group("x", cross([(0, 1)]), V)
    sim.run()
    assert g.done_at == pytest.approx(V / C / 2 + (V / 2) / (C / 2), rel=REL)


def test_a_link_off_every_path_changes_nothing(net3: FabricNet) -> None:
    sim = NetworkSim(net3)
    sim.fail(0.0, "gpu00003/nic0", 0.0)
    g = sim.add_group("x", cross([(0, 1)]), V)
    sim.run()
    assert g.done_at == pytest.approx(V / cap(net3), rel=REL)


def test_adaptive_routing_keeps_same_leaf_flows_on_the_leaf(catalog: Catalog) -> None:
    # Regression: adaptive routing once sent flows between two hosts of one leaf up through
    # a spine, which made a rail-aligned ring slower than ECMP.
    from clusterwright.sim.collectives import CollectiveBuilder

    fab = design_fabric(FabricRequest(server="dgx-h100", nodes=64, switch="qm9700"), catalog)
    net = FabricNet(fab, catalog)
    srv = catalog.server("dgx-h100")
    model = net_for(catalog, catalog.gpu(srv.gpu), net.stack, srv)
    times = {}
    for routing in ("ecmp", "adaptive"):
        sim = NetworkSim(net, routing=routing, seed=0)
        col = CollectiveBuilder(sim, model).add(
            "allreduce", list(range(net.n_gpus)), 2**30, algorithm="ring")
        sim.run()
        times[routing] = col.time_s
        spine_bytes = sum(
            b for b, t in zip(sim.link_bytes, net.tiers, strict=True) if t == "leaf-spine"
        )
        # 2 SUs: only the ring edges crossing the SU boundary (2 per channel) reach a spine.
        per_edge = 2 * (net.n_gpus - 1) / net.n_gpus * 2**30 / 8
        assert spine_bytes <= 8 * 2 * 2 * per_edge * 1.001
    assert times["adaptive"] <= times["ecmp"] * (1 + 1e-9)
