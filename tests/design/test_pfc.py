"""PFC headroom of planned fabrics (design/pfc.py): every cable's two ends get their cited
formula's value, switches are checked against their buffers, the shortfall reaches the
notes, the fabric summary and the blueprint's risks."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterwright.catalog.registry import Catalog
from clusterwright.design.blueprint import DesignFacts, assess_risks
from clusterwright.design.bom import plan_fabric, summary
from clusterwright.design.fabric import Fabric
from clusterwright.design.pfc import pfc_plan
from clusterwright.model.pfc import lanes_of, mlx5_lossless_buffer_bytes, sonic_mellanox_headroom
from clusterwright.plan.scenario import plan_scenario
from clusterwright.spec.fabric import FabricRequest
from clusterwright.spec.scenario import loads_scenario

ROOT = Path(__file__).resolve().parents[2]


def expected(fab: Fabric, mtu: int) -> dict[tuple[str, str], int]:
    """Each backend cable's ends recomputed from its length, speed and the MTU."""
    out = {}
    for lk in fab.links:
        if lk.network != "backend":
            continue
        for end, name in (("a", lk.a), ("b", lk.b)):
            if fab.by_name[name].role == "host":
                size = mlx5_lossless_buffer_bytes(lk.speed_gbps, lk.length_m, mtu)
            else:
                size = sonic_mellanox_headroom(lk.speed_gbps, lk.length_m, mtu,
                                               lanes=lanes_of(lk.speed_gbps)).size
            out[(f"{lk.a}:{lk.a_port}->{lk.b}:{lk.b_port}", end)] = size
    return out


def test_every_cable_of_a_blueprint_gets_its_formulas_headroom(catalog: Catalog) -> None:
    # The shipped 1K-GPU training example, on RoCE Ethernet instead of InfiniBand.
    text = (ROOT / "examples" / "training-1k-h100" / "scenario.yaml").read_text()
    sc, _ = loads_scenario(text.replace('protocol: "infiniband"', 'protocol: "ethernet"'))
    bp = plan_scenario(sc, catalog, quick=True)
    fab = bp.fabric_design
    assert fab is not None and fab.backend.protocol == "ethernet"
    plan = fab.pfc
    want = expected(fab, plan.mtu)
    assert len(want) == 2 * sum(1 for lk in fab.links if lk.network == "backend")
    assert plan.port_headroom == want
    # The blueprint's fabric section carries the per-port-type table.
    pfc = bp.fabric["pfc"]
    assert {p["port"] for p in pfc["port_types"]} >= {"NIC (node-leaf)",
                                                      "leaf down (node-leaf)"}
    for p in pfc["port_types"]:
        assert p["ports"] > 0 and p["headroom_bytes"] > p["xoff_bytes"] > 0


def test_switch_totals_add_their_ports_and_count_the_priorities_that_fit(
        catalog: Catalog) -> None:
    fab = plan_fabric(FabricRequest(server="dgx-h100", nodes=64, switch="sn5600"), catalog)
    plan = fab.pfc
    by_switch: dict[str, int] = {}
    for (link, end), size in plan.port_headroom.items():
        a, b = link.split("->")
        name = (a if end == "a" else b).split(":")[0]
        if fab.by_name[name].role != "host":
            by_switch[name] = by_switch.get(name, 0) + size
    buf = int(catalog.switch("sn5600").buffer_mb * 1e6)
    for s in plan.switches:
        assert s.headroom_bytes_per_priority == by_switch[s.name]
        assert s.priorities_that_fit == buf // by_switch[s.name]
    assert plan.worst is not None and plan.switches_short == []
    assert any("PFC headroom" in n for n in fab.notes)


def test_a_larger_mtu_and_more_priorities_cost_more(catalog: Catalog) -> None:
    small = plan_fabric(FabricRequest(server="dgx-h100", nodes=32, switch="sn5600",
                                      mtu=1500), catalog).pfc
    big = plan_fabric(FabricRequest(server="dgx-h100", nodes=32, switch="sn5600",
                                    mtu=9216), catalog).pfc
    assert small.worst.headroom_bytes_per_priority < big.worst.headroom_bytes_per_priority


def test_priorities_that_do_not_fit_are_flagged_everywhere(catalog: Catalog) -> None:
    # Tomahawk 5's catalog buffer is a 100 MB lower bound: eight lossless priorities of
    # 128 ports' headroom cannot fit.
    fab = plan_fabric(FabricRequest(server="dgx-h100", nodes=64, switch="tomahawk5-64x800",
                                    lossless_priorities=8), catalog)
    plan = fab.pfc
    assert plan.switches_short and plan.worst.priorities_that_fit < 8
    d = summary(fab)["pfc"]
    assert d["switches_short_count"] == len(plan.switches_short) > 0
    assert any("cannot hold 8 lossless priorities" in n for n in fab.notes)
    facts = DesignFacts(gpus=512, lossless_priorities=8,
                        lossless_priorities_fit=plan.worst.priorities_that_fit,
                        pfc_switches_short=len(plan.switches_short),
                        pfc_worst_switch=plan.worst.name)
    risks = [r for r in assess_risks(facts) if "lossless" in r.title]
    assert risks and risks[0].severity == "high" and plan.worst.name in risks[0].detail


def test_infiniband_has_no_pfc_headroom(catalog: Catalog) -> None:
    fab = plan_fabric(FabricRequest(server="dgx-h100", nodes=32, switch="qm9700"), catalog)
    assert fab.pfc.protocol == "infiniband" and not fab.pfc.port_headroom
    assert "credit-based" in fab.pfc.note
    assert summary(fab)["pfc"]["port_types"] == []


def test_a_design_without_lengths_gets_the_zero_length_floor(catalog: Catalog) -> None:
    """Before placement every cable is 0 m: the headroom is the formula's floor."""
    from clusterwright.design.fabric import design_fabric

    fab = design_fabric(FabricRequest(server="dgx-h100", nodes=16, switch="sn5600"), catalog)
    plan = pfc_plan(fab, catalog)
    floor = sonic_mellanox_headroom(400, 0, 9216).size
    assert all(p.headroom_bytes_max == floor for p in plan.port_types
               if not p.port.startswith("NIC"))


@pytest.mark.parametrize("bad", [{"mtu": 1499}, {"mtu": 9217}, {"lossless_priorities": 9}])
def test_out_of_range_lossless_settings_are_refused(bad: dict[str, int]) -> None:
    with pytest.raises(ValueError):
        FabricRequest(server="dgx-h100", nodes=4, **bad)  # type: ignore[arg-type]
