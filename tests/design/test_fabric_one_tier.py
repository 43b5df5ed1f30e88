"""One-tier backends below one scalable unit (the default there): no spines, no leaf-spine
optics, the SU policy and growth plan stated; full SUs keep the SuperPOD two-tier counts."""

from __future__ import annotations

import pytest

from clusterwright.catalog.registry import Catalog
from clusterwright.design.bom import plan_fabric, summary
from clusterwright.design.fabric_shape import FabricError, fabric_shape
from clusterwright.spec.fabric import FabricRequest


def _fab(catalog: Catalog, nodes: int, **kw: object):  # type: ignore[no-untyped-def]
    return plan_fabric(FabricRequest(server="dgx-h100", nodes=nodes, **kw), catalog)


def test_one_node_is_one_switch_without_spines_or_uplink_optics(catalog: Catalog) -> None:
    two = summary(_fab(catalog, 1, tiers=2))  # the full SU built before right-sizing
    fab = _fab(catalog, 1)
    one = summary(fab)
    assert (fab.shape.tiers, fab.count("leaf"), fab.count("spine")) == (1, 1, 0)
    assert fab.shape.rails_per_leaf == 8 and not fab.links_in("leaf-spine")
    assert len(fab.links_in("node-leaf")) == 8
    # The full SU build was 8 leaves, 4 spines and 512 leaf-spine links (560 optics).
    assert one["transceivers"] < two["transceivers"] // 5  # type: ignore[operator]
    assert one["cost_usd"] < two["cost_usd"] / 3  # type: ignore[operator]
    note = next(n for n in fab.notes if n.startswith("backend right-sized"))
    assert "below 64 hosts one tier" in note and "adding 4 spines" in note


def test_31_nodes_one_tier_is_a_leaf_per_rail(catalog: Catalog) -> None:
    fab = _fab(catalog, 31, switch="qm9700")  # the default below one SU of 32
    assert (fab.count("leaf"), fab.count("spine"), fab.shape.rails_per_leaf) == (8, 0, 1)
    assert {d.rail for d in fab.switches("leaf")} == set(range(1, 9))
    assert len(fab.links_in("node-leaf")) == 31 * 8
    # Rail r of every host lands on the rail-r leaf.
    assert all(fab.by_name[lk.b].rail == lk.rail + 1 for lk in fab.links_in("node-leaf"))
    assert "grows to two tiers, adding 4 spines" in " ".join(fab.notes)


def test_one_tier_refuses_more_hosts_than_a_leaf_carries() -> None:
    with pytest.raises(FabricError, match="one tier holds at most 32 hosts"):
        fabric_shape(hosts=33, rails=8, radix=64, tiers=1)


@pytest.mark.parametrize(("nodes", "leaves", "spines"), [(32, 8, 4), (64, 16, 8)])
def test_full_scalable_units_keep_the_superpod_counts(nodes: int, leaves: int,
                                                      spines: int) -> None:
    sh = fabric_shape(hosts=nodes, rails=8, radix=64)
    assert (sh.tiers, sh.leaf_switches, sh.spine_switches) == (2, leaves, spines)
    assert sh.leaf_spine_links == nodes * 8


def test_two_dgx_backend_is_one_switch(catalog: Catalog) -> None:
    """2 x DGX H100 with a backend: one SN5600 instead of the full SU's 8 leaves and 4 spines.
    (The shipped enterprise pool needs no backend at all: tests/plan/test_fabric_choice.py.)"""
    fab = _fab(catalog, 2)
    f = summary(fab)
    assert (f["tiers"], f["leaf_switches"], f["spine_switches"]) == (1, 1, 0)
    assert f["links_by_tier"]["leaf-spine"] == 0  # type: ignore[index]
    assert any("SU policy" in n for n in fab.notes)
    assert f["cost_usd"] < 0.5 * f["servers_cost_usd"]  # type: ignore[operator]
