"""Each site's own physical plan when a training job is split across sites
(``plan/site_fabrics``): its fabric, racks, storage and power designed for its share of the
servers, its address pools a slice of the scenario's, its power checked against its feed."""

from __future__ import annotations

import ipaddress
from typing import Any

import pytest

from clusterwright.catalog.registry import Catalog
from clusterwright.plan.scenario import plan_scenario
from clusterwright.plan.site_fabrics import site_nodes, site_pools
from clusterwright.spec.fabric import AddressPools
from clusterwright.spec.scenario import loads_scenario

SCENARIO = """
name: two-small-sites
workloads:
  - {{name: pretrain-8b, kind: training, model: llama-3.1-8b, tokens: 2.0e10, gpus: 128}}
constraints: {{gpus: [h100-sxm], deployment: on-prem{budget}}}
sites:
  - {{name: east, power_mw: {east}, wan_gbps: 100, latency_ms: 10}}
  - {{name: west, power_mw: 0.12, wan_gbps: 100, latency_ms: 10}}
multisite: {{method: diloco, inner_steps: 100, bits: 8}}
"""


def _plan(catalog: Catalog, east: float = 0.12, budget: float | None = None) -> Any:
    sc, _ = loads_scenario(SCENARIO.format(
        east=east, budget="" if budget is None else f", budget_usd: {budget}"))
    return plan_scenario(sc, catalog, quick=True)


def test_site_pools_are_disjoint_slices_of_each_pool() -> None:
    pools = AddressPools()
    parts = [site_pools(pools, i, 3) for i in range(3)]
    for name, whole in pools.model_dump().items():
        nets = [ipaddress.IPv4Network(getattr(p, name)) for p in parts]
        assert all(n.subnet_of(ipaddress.IPv4Network(whole)) for n in nets), name
        assert not any(a.overlaps(b) for i, a in enumerate(nets) for b in nets[i + 1:]), name
        # Three sites take quarters: the fewest equal parts that give each one.
        assert nets[0].prefixlen == ipaddress.IPv4Network(whole).prefixlen + 2
    assert site_pools(pools, 0, 1) == pools


def test_site_nodes_give_each_site_its_share_and_spread_the_rest() -> None:
    assert site_nodes(16, 64, 8, 2) == [8, 8]
    # Three spares on two sites: two to the first, one to the second.
    assert site_nodes(19, 64, 8, 2) == [10, 9]


def test_each_site_is_designed_and_written_on_its_own(catalog: Catalog) -> None:
    bp = _plan(catalog)
    phys = bp.multisite["physical"]
    assert phys["workload"] == "pretrain-8b"
    east, west = phys["sites"]
    assert (east["site"], east["nodes"], east["gpus"]) == ("east", 8, 64)
    assert east["fits_site_power"] and east["facility_power_kw"]["nameplate"] <= 120.0
    assert east["storage"]["units"] >= catalog.get("storage_systems",
                                                   east["storage"]["system"]).min_units
    assert set(bp.site_fabrics) == {"east", "west"}
    fe, fw = bp.site_fabrics["east"], bp.site_fabrics["west"]
    assert fe.request.nodes == fw.request.nodes == 8
    # Each site's addresses are its own.
    mgmt = [{d.mgmt_ip for d in f.devices if d.mgmt_ip is not None} for f in (fe, fw)]
    assert mgmt[0] and not mgmt[0] & mgmt[1]
    assert phys["sites_fabric_cost_usd"] == pytest.approx(
        east["fabric"]["cost_usd"] + west["fabric"]["cost_usd"])
    assert any("each site is designed on its own" in n for n in phys["notes"])
    # The capex with each site built on its own: the TCO's servers, the sites' network,
    # storage and racks.
    cap, tco = phys["capex"], bp.tco["capex_by_category_usd"]
    assert cap["servers_usd"] == tco["servers"]
    assert cap["sites_usd"] == pytest.approx(
        cap["servers_usd"] + cap["network_usd"] + cap["storage_usd"]
        + cap["racks_and_power_usd"])
    assert cap["network_usd"] == phys["sites_fabric_cost_usd"]
    assert cap["one_site_usd"] == pytest.approx(bp.tco["capex_usd"])
    assert bp.feasible


def test_a_site_whose_plan_outdraws_its_feed_is_infeasible(catalog: Catalog) -> None:
    # 0.107 MW holds 64 GPUs at the servers' nameplate with the PUE (the split's check), but
    # not the site's network and storage on top.
    bp = _plan(catalog, east=0.107)
    east = bp.multisite["physical"]["sites"][0]
    assert east["fits_site_power"] is False
    assert east["facility_power_kw"]["nameplate"] > 107.0
    assert not bp.feasible
    v = [b for b in bp.binding_constraints if b["constraint"] == "site_power"]
    assert len(v) == 1 and "east: its plan draws more than the site's power" in v[0]["message"]


def test_the_budget_holds_the_sites_builds_not_the_one_fabric(catalog: Catalog) -> None:
    # The candidates are priced as one cluster; what is bought is each site's build. A budget
    # between the two capex figures decides on the sites'.
    cap = _plan(catalog).multisite["physical"]["capex"]
    one, split = cap["one_site_usd"], cap["sites_usd"]
    assert one != pytest.approx(split)
    lo, hi = sorted((one, split))
    between = _plan(catalog, budget=(lo + hi) / 2)
    assert between.feasible is (split < one)
    over = [b for b in between.binding_constraints if b["constraint"] == "budget_usd"]
    if split < one:
        assert not over and any(n.startswith("budget: the one fabric's capex") for n in
                                between.notes)
    else:
        assert len(over) == 1 and "2 sites' builds" in over[0]["message"]
    short = _plan(catalog, budget=lo * 0.9)
    assert not short.feasible
    v = [b for b in short.binding_constraints if b["constraint"] == "budget_usd"]
    assert len(v) == 1 and "sites' builds" in v[0]["message"]
    assert v[0]["needed"] == pytest.approx(split)
