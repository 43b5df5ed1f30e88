"""The typed fabric summary: built once, its dict is the ``fabric design`` contract and the
blueprint's section, and its fields agree with the design they summarize."""

from __future__ import annotations

import dataclasses

import pytest

from clusterwright.catalog.registry import Catalog
from clusterwright.design.bom import plan_fabric, summary
from clusterwright.design.fabric_summary import fabric_summary
from clusterwright.spec.fabric import FabricRequest

CONTRACT = ("nodes", "gpus", "tiers", "leaf_switches", "spine_switches", "core_switches",
            "links_by_tier", "transceivers", "cables", "power_w", "cost_usd")


def test_summary_is_frozen_and_its_dict_carries_the_contract(catalog: Catalog) -> None:
    fab = plan_fabric(FabricRequest(server="dgx-h100", nodes=32, switch="qm9700"), catalog)
    s = fabric_summary(fab)
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.tiers = 3  # type: ignore[misc]
    d = summary(fab)
    assert set(CONTRACT) <= set(d) and d == s.as_dict()
    # SuperPOD RA: one SU of 32 DGX H100 on QM9700 is 8 leaves and 4 spines.
    assert (s.tiers, s.leaf_switches, s.spine_switches) == (2, 8, 4)
    assert s.backend_switches == 12 and s.backend_links == 32 * 8 + 8 * 32
    assert s.power_w <= s.power_max_w and 0 < s.typical_power_ratio <= 1


def test_blueprint_dict_has_the_leaf_figure_and_both_tiers(catalog: Catalog) -> None:
    fab = plan_fabric(FabricRequest(server="dgx-h100", nodes=8, oversubscription=2.0,
                                    tiers=2), catalog)
    s = fabric_summary(fab)
    b = s.blueprint_dict()
    assert b["oversubscription"] == s.leaf_oversubscription > 1.0
    assert b["oversubscription_by_tier"] == {"leaf": s.leaf_oversubscription, "spine": None}
    assert b["nodes_per_su"] == s.nodes_per_su == s.su_hosts


def test_power_plan_carries_the_same_summary(catalog: Catalog) -> None:
    from clusterwright.design.power_plan import PowerRequest, power_plan

    fab = plan_fabric(FabricRequest(server="dgx-h100", nodes=4), catalog)
    pp = power_plan(PowerRequest(server="dgx-h100", nodes=4), catalog, fab=fab)
    assert pp.summary == fabric_summary(fab)
    assert pp.fabric_summary == pp.summary.as_dict()
    assert pp.power.network_nameplate_kw == pytest.approx(pp.summary.power_max_w / 1e3)
