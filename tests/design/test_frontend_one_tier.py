"""One-tier frontends below one backend scalable unit: one leaf pair for every host and storage
target, no spines and no leaf-spine links; full SUs keep the two-tier frontend."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clusterwright.catalog.registry import Catalog
from clusterwright.design.bom import plan_fabric, summary
from clusterwright.spec.fabric import FabricRequest


def _fab(catalog: Catalog, nodes: int, **kw: object):  # type: ignore[no-untyped-def]
    return plan_fabric(FabricRequest(server="dgx-h100", nodes=nodes, **kw), catalog)


@pytest.mark.parametrize("nodes", [1, 2])
def test_small_frontend_is_one_leaf_pair(catalog: Catalog, nodes: int) -> None:
    fab = _fab(catalog, nodes)
    fe = summary(fab)["frontend"]
    assert (fe["tiers"], fe["leaf_switches"], fe["spine_switches"]) == (1, 2, 0)  # type: ignore[index]
    assert not fab.links_in("fe-leaf-spine") and not fab.links_in("fe-spine-core")
    leaves = {d.name for d in fab.switches("fe-leaf")}
    assert leaves == {"fe-leaf-su001-a", "fe-leaf-su001-b"}
    # Every host and storage target is dual-homed: one link to each leaf of the pair.
    storage = [d.name for d in fab.devices if d.role == "storage"]
    for dev in [h.name for h in fab.hosts] + storage:
        ends = sorted(lk.b for lk in fab.links if lk.network == "frontend" and lk.a == dev)
        assert ends == sorted(leaves), dev
    assert len(fab.links_in("fe-storage-leaf")) == 2 * len(storage)
    note = next(n for n in fab.notes if n.startswith("frontend right-sized"))
    assert "2 spines are added" in note and "dual-homed" in note


def test_asked_two_tiers_keeps_the_two_tier_frontend(catalog: Catalog) -> None:
    fab = _fab(catalog, 2, tiers=2)
    assert (fab.count("fe-leaf"), fab.count("fe-spine")) == (4, 2)
    assert fab.links_in("fe-leaf-spine")


@pytest.mark.parametrize(("nodes", "switch"), [(32, "qm9700"), (64, None)])
def test_full_scalable_units_keep_the_frontend(catalog: Catalog, nodes: int,
                                               switch: str | None) -> None:
    fab = _fab(catalog, nodes, switch=switch)
    assert fab.shape.tiers == 2 and fab.frontend_shape is not None
    assert fab.frontend_shape.tiers == 2
    assert (fab.count("fe-leaf"), fab.count("fe-spine")) == (4, 2)
    assert not any(n.startswith("frontend right-sized") for n in fab.notes)


def test_enterprise_pool_frontend_is_one_pair() -> None:
    """The shipped 2 x DGX H100 pool: 2 SN5600 frontend leaves instead of 4 leaves and 2
    spines; network share of capex 45.6 % -> 30.0 % (the rest is listed in docs/fabric.md)."""
    root = Path(__file__).resolve().parents[2]
    b = json.loads((root / "examples/enterprise-inference-pool/blueprint.json").read_text())
    fe = b["fabric"]["frontend"]
    assert (fe["tiers"], fe["leaf_switches"], fe["spine_switches"]) == (1, 2, 0)
    capex = b["tco"]["capex_breakdown_usd"]
    assert capex["network"] < 0.31 * sum(capex.values())
