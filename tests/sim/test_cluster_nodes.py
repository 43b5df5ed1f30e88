"""The scheduling twin's node bookkeeping: free nodes by fabric domain and the placement
policy, preemption victims, the EASY reservation, MIG slots and queue, service accounting."""

from __future__ import annotations

import math

from clusterwright.catalog.registry import Catalog
from clusterwright.model import mig
from clusterwright.sim.cluster_jobs import HOUR, Job
from clusterwright.sim.cluster_nodes import (
    FreeNodes,
    MigNode,
    MigQueue,
    Run,
    Service,
    mig_slot,
    preemption_victims,
    reservation,
)
from clusterwright.sim.cluster_shape import simple_shape
from clusterwright.sim.engine import Event

# 8 nodes: leaf groups of 2, SUs of 4, pods of 2 SUs.
SHAPE = simple_shape(8, nodes_per_su=4, sus_per_pod=2, nodes_per_leaf=2)


def gang(jid: str, nodes: list[int], priority: int = 0, start_s: float = 0.0,
         end_s: float | None = None) -> Run:
    run = Run(Job(jid, "train", 0.0, HOUR, nodes=len(nodes), priority=priority), nodes,
              start_s, 0.0, 1.0)
    if end_s is not None:
        run.end_ev = Event(end_s, 0, print)
    return run


def test_take_and_give_keep_every_domain_count() -> None:
    pool = FreeNodes(SHAPE, topology_aware=False)
    pool.take(0)
    pool.take(5)
    assert pool.free == 6
    assert pool.free_su == [3, 3] and pool.free_pod == [6]
    assert pool.free_leaf[0] == {1} and pool.free_leaf[2] == {4}
    pool.give(5)
    assert pool.free == 7 and pool.free_su == [3, 4] and pool.free_leaf[2] == {4, 5}


def test_slurm_order_takes_the_first_free_nodes_and_topology_aware_the_best_fit() -> None:
    for aware, expect in ((False, [1, 3]), (True, [4, 5])):
        pool = FreeNodes(SHAPE, topology_aware=aware)
        pool.take(0)
        pool.take(2)
        # Slurm order: the first free nodes, one in each of two leaf groups. Topology-aware:
        # a leaf group that holds both (leaf 2, the first of the two that do).
        assert pool.pick(2) == expect, aware


def test_topology_aware_prefers_the_smallest_domain_then_the_fullest() -> None:
    pool = FreeNodes(SHAPE, topology_aware=True)
    for nd in (0, 1, 2, 4):  # SU 0: node 3 free; SU 1: nodes 5, 6, 7 free
        pool.take(nd)
    # SU 1 holds all three (no leaf group does); inside it the emptiest leaf group first,
    # so the job spans as few groups as it can.
    assert pool.pick(3) == [6, 7, 5]
    assert pool.pick(5) is None  # only 4 free


def test_preemption_takes_the_lowest_priority_and_the_smallest_gang_that_covers() -> None:
    small = gang("small", [0], priority=0, start_s=10.0)
    big = gang("big", [1, 2, 3, 4], priority=0, start_s=20.0)
    mid = gang("mid", [5, 6], priority=0, start_s=5.0)
    high = gang("high", [7], priority=5)
    assert preemption_victims([small, big, mid, high], 2, priority=3) == [mid]
    # None covers 7: the latest started goes first (big, then small), then mid covers the rest.
    assert preemption_victims([small, big, mid, high], 7, priority=3) == [big, small, mid]
    # Equal priority is never preempted; what cannot be freed preempts nothing.
    assert preemption_victims([small, big, mid, high], 8, priority=3) is None
    assert preemption_victims([high], 1, priority=5) is None


def test_the_reservation_is_when_enough_nodes_free_up() -> None:
    runs = [gang("a", [0, 1], end_s=300.0), gang("b", [2], end_s=100.0),
            gang("c", [3, 4, 5], end_s=200.0)]
    # 1 free now; b ends at 100 s (2 free), c at 200 s (5 free): a head of 4 starts at 200 s
    # and one node is spare then.
    assert reservation(4, 1, runs) == (200.0, 1)
    assert reservation(2, 1, runs) == (100.0, 0)
    assert reservation(9, 1, runs) == (math.inf, 0)


def test_a_mig_slot_skips_full_gpus_and_draining_nodes(catalog: Catalog) -> None:
    profiles = mig.profiles_by_name(catalog.gpu("h100-sxm").mig_profiles)
    full = profiles["7g.80gb"]
    small = profiles["1g.10gb"]
    busy = MigNode(0, [mig.create(mig.Layout(), full, 0), mig.Layout()])
    draining = bytearray(2)
    slot = mig_slot([busy], small, draining)
    assert slot is not None and slot[:2] == (busy, 1)  # GPU 0 is full
    draining[0] = 1
    assert mig_slot([busy], small, draining) is None


def test_the_mig_queue_stops_at_a_full_profile_and_keeps_the_order() -> None:
    q = MigQueue()
    for i, profile in enumerate(["a", "b", "a", "b"]):
        q.push(i, profile)
    q.push(9, "b", front=True)
    profile = {0: "a", 1: "b", 2: "a", 3: "b", 9: "b"}
    tried: list[int] = []

    def place(i: int) -> bool:
        tried.append(i)
        return profile[i] == "a"

    q.place(profile.__getitem__, place, fifo=False)
    # 9 misses: "b" is full for the pass, so 1 and 3 are not tried; the "a"s are placed.
    assert tried == [9, 0, 2]
    assert list(q.jobs) == [9, 1, 3] and q.queued == {"b": 3}
    tried.clear()
    q.place(profile.__getitem__, place, fifo=True)
    assert tried == [9] and list(q.jobs) == [9, 1, 3]


def test_service_demand_follows_the_day_curve_and_its_time_is_accounted() -> None:
    sv = Service(Job("svc", "inference", 0.0, 48 * HOUR, nodes=1, replicas=8,
                     night_fraction=0.25))
    assert sv.demand_at(14 * HOUR, peak_hour=14.0) == 8
    assert sv.demand_at(2 * HOUR, peak_hour=14.0) == 2  # 12 h from the peak: night
    assert sv.demand_at(20 * HOUR, peak_hour=14.0) == 5  # ceil(8 x 0.625)
    sv.active, sv.demand = True, 4
    sv.replicas = [gang("r0", [0]), gang("r1", [1])]
    sv.account(100.0)
    assert (sv.total_s, sv.ok_s) == (100.0, 0.0)
    assert (sv.demanded_replica_s, sv.served_replica_s) == (400.0, 200.0)
    assert sv.last_s == 100.0

