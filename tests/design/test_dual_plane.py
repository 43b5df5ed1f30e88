"""Twin-plane (dual-plane) backend fabrics with a real catalog server: DGX B300 on SN5600.

The DGX SuperPOD B300 Spectrum-X RA (Network Fabrics) gives each GPU 2 x 400GbE "through two
different planes": each ConnectX-8 800G port is split, one half per plane, and each plane is its
own rail-optimized fat tree (SU = 64 nodes: 8 leaves and 4 spines per plane, Table 3).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import networkx as nx
import pytest
import yaml

from clusterwright.catalog.registry import Catalog, load_catalog
from clusterwright.design.bom import plan_fabric, summary
from clusterwright.design.fabric import Fabric, Link
from clusterwright.design.fabric_shape import fabric_shape
from clusterwright.design.physical import transceiver_counts
from clusterwright.sim.netsim import NetsimRequest, run_netsim
from clusterwright.spec.fabric import FabricRequest

RAILS = 8


def _request(nodes: int, dual_plane: bool = True) -> FabricRequest:
    return FabricRequest(server="dgx-b300", nodes=nodes, switch="sn5600", dual_plane=dual_plane)


@pytest.fixture(scope="module")
def fab(catalog: Catalog) -> Fabric:
    return plan_fabric(_request(64), catalog)  # one SU


def _backend_switch_links(fab: Fabric) -> list[Link]:
    return [lk for lk in fab.links if lk.tier in ("leaf-spine", "spine-core")]


def test_the_design_has_two_planes_of_backend_switches(fab: Fabric) -> None:
    assert fab.shape.planes == 2
    for role in ("leaf", "spine"):
        per_plane = Counter(d.plane for d in fab.switches(role))
        assert set(per_plane) == {1, 2}, role
        assert per_plane[1] == per_plane[2], role
    assert all(d.name.split("-")[1] in ("p1", "p2") for d in fab.switches("leaf", "spine"))


def test_no_link_joins_the_two_planes_and_each_plane_is_a_full_fat_tree(fab: Fabric) -> None:
    plane_of = {d.name: d.plane for d in fab.switches("leaf", "spine", "core")}
    for lk in _backend_switch_links(fab):
        assert plane_of[lk.a] == plane_of[lk.b] == lk.plane, (lk.a, lk.b)
    for lk in fab.links_in("node-leaf"):
        assert plane_of[lk.b] == lk.plane
    for plane in (1, 2):
        g: nx.Graph[str] = nx.Graph()
        g.add_edges_from((lk.a, lk.b) for lk in _backend_switch_links(fab) if lk.plane == plane)
        leaves = [d.name for d in fab.switches("leaf") if d.plane == plane]
        spines = [d.name for d in fab.switches("spine") if d.plane == plane]
        assert set(g.nodes) == set(leaves) | set(spines)
        assert nx.is_connected(g)
        # two tiers: every leaf reaches every spine of its plane directly
        for leaf in leaves:
            assert set(g.neighbors(leaf)) == set(spines), leaf


def test_every_gpu_has_one_400g_link_in_each_plane(fab: Fabric) -> None:
    by_gpu: dict[tuple[str, int], list[Link]] = defaultdict(list)
    for lk in fab.links_in("node-leaf"):
        by_gpu[(lk.a, lk.rail)].append(lk)
    assert len(by_gpu) == 64 * RAILS
    for (host, rail), links in by_gpu.items():
        assert sorted(lk.plane for lk in links) == [1, 2], (host, rail)
        assert all(lk.speed_gbps == 400 for lk in links)  # half of a ConnectX-8 800G port
        # the two halves land on the same rail's leaf in each plane
        assert {fab.by_name[lk.b].rail for lk in links} == {rail + 1}
        assert len({lk.a_port for lk in links}) == 2


def test_counts_are_twice_one_plane_of_the_same_shape(fab: Fabric) -> None:
    one = fabric_shape(hosts=64, rails=RAILS, radix=128, planes=1, su_hosts=64)
    s = summary(fab)
    assert s["leaf_switches"] == 2 * one.leaf_switches == 16  # SuperPOD B300 RA Table 3, 1 SU
    assert s["spine_switches"] == 2 * one.spine_switches == 8
    links = s["links_by_tier"]
    assert isinstance(links, dict)
    assert links["node-leaf"] == 2 * one.node_leaf_links == 2 * 64 * RAILS
    assert links["leaf-spine"] == 2 * one.leaf_spine_links


@pytest.mark.parametrize("nodes", [64, 128, 256])
def test_leaves_per_plane_follow_the_scalable_unit(catalog: Catalog, nodes: int) -> None:
    f = plan_fabric(_request(nodes), catalog)
    sus = math.ceil(nodes / 64)
    assert f.shape.su_hosts == 64 and f.shape.sus == sus
    for plane in (1, 2):
        leaves = [d for d in f.switches("leaf") if d.plane == plane]
        assert len(leaves) == sus * RAILS  # one leaf per rail per SU per plane
        assert Counter((d.su, d.rail) for d in leaves) == {
            (su, r): 1 for su in range(1, sus + 1) for r in range(1, RAILS + 1)
        }


def test_every_link_is_cabled_and_switch_modules_match_the_cages(
    fab: Fabric, catalog: Catalog
) -> None:
    links = fab.links_in("node-leaf") + fab.links_in("leaf-spine")
    assert all(lk.cable and lk.a_xcvr and lk.b_xcvr for lk in links)  # 400G optics, both ends
    xcvr = {t.id: t for t in catalog.all("transceivers")}
    assert {xcvr[lk.b_xcvr].side for lk in links} == {"switch"}
    assert {xcvr[lk.a_xcvr].side for lk in fab.links_in("node-leaf")} == {"host"}
    # switch side: one twin-port module per pair of 400G ports in a 800G cage
    per_cage: Counter[tuple[str, str]] = Counter()
    for lk in links:
        per_cage[(lk.b, lk.b_cage)] += 1
        if lk.tier == "leaf-spine":
            per_cage[(lk.a, lk.a_cage)] += 1
    assert max(per_cage.values()) == 2
    counts = transceiver_counts(fab, catalog)
    assert counts["mma4z00-ns"] >= sum(math.ceil(n / 2) for n in per_cage.values())


def test_every_host_cage_holds_exactly_one_module(fab: Fabric, catalog: Catalog) -> None:
    cages = {(lk.a, lk.a_cage) for lk in fab.links_in("node-leaf")}
    assert len(cages) == 64 * RAILS  # 8 OSFP cages per DGX B300, one per ConnectX-8
    host_parts = {lk.a_xcvr for lk in fab.links_in("node-leaf")}
    assert sum(transceiver_counts(fab, catalog)[p] for p in host_parts) == len(cages)


# ------------------------------------------------------------------ network simulation


@pytest.fixture(scope="module")
def sim_catalog(catalog: Catalog, tmp_path_factory: pytest.TempPathFactory) -> Catalog:
    """The catalog plus a software stack for b300-sxm (stacks.yaml does not list it yet): a copy
    of the uncalibrated generic stack, which is what a new GPU would get."""
    stack = catalog.entries["stacks"]["generic-uncalibrated-2024"].model_dump(
        mode="json", exclude_none=True
    )
    stack.update(id="test-b300-generic", gpus=["b300-sxm"])
    path: Path = tmp_path_factory.mktemp("stacks") / "b300-stack.yaml"
    path.write_text(yaml.safe_dump({"stacks": [stack]}))
    return load_catalog([path], env={})


def _netsim(cat: Catalog, dual_plane: bool) -> dict[str, Any]:
    fabric = FabricRequest(
        server="dgx-b300", nodes=4, switch="sn5600", su_hosts=4, dual_plane=dual_plane
    )
    out: dict[str, Any] = run_netsim(
        NetsimRequest(fabric=fabric, collective="alltoall", size_bytes=2**26, routing="spray"),
        cat,
    )
    return out


def test_netsim_sprays_over_both_planes(sim_catalog: Catalog) -> None:
    one, two = _netsim(sim_catalog, False), _netsim(sim_catalog, True)
    assert two["gpus"] == one["gpus"] == 32
    # Two 400G halves carry what one 800G port carries: same time, when spray splits evenly.
    assert two["completion_time_s"] == pytest.approx(one["completion_time_s"], rel=1e-6)
    top_one = max(lk["bytes"] for lk in one["top_links"] if lk["tier"] == "node-leaf")
    top_two = max(lk["bytes"] for lk in two["top_links"] if lk["tier"] == "node-leaf")
    assert top_two == pytest.approx(top_one / 2)  # each plane's NIC link carries half
    assert all("-p1-" in lk["link"] or "-p2-" in lk["link"] for lk in two["top_links"])
