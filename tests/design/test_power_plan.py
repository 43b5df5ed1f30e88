"""design/power_plan.py: the power view of a planned fabric (racks, network BOM, swing)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from clusterwright.catalog.registry import Catalog
from clusterwright.design.power_plan import PowerRequest, power_plan
from clusterwright.errors import InputError


def test_dgx_h100_air_racks_hold_four_servers(catalog: Catalog) -> None:
    plan = power_plan(PowerRequest(server="dgx-h100", nodes=16), catalog)
    # air limit 42.9 kW: 4 x 10.2 = 40.8 kW per compute rack, 16 / 4 = 4 compute racks
    assert plan.cooling == "air"
    assert plan.pue == catalog.assumption("pue_air")
    assert plan.racks.servers_per_rack == 4
    assert plan.racks.compute_racks == 4
    assert plan.racks.compute_max_kw == pytest.approx(40.8)
    assert plan.checks["air"].feasible and plan.checks["liquid"].feasible
    # servers 16 x 10.2 = 163.2 kW nameplate, plus the fabric's maximum
    p = plan.power
    assert p.servers_nameplate_kw == pytest.approx(163.2)
    assert p.network_nameplate_kw > 0 and p.network_typical_kw <= p.network_nameplate_kw
    assert p.nameplate_kw == pytest.approx(163.2 + p.network_nameplate_kw)


def test_network_power_is_the_fabric_boms(catalog: Catalog) -> None:
    from clusterwright.design.bom import summary

    plan = power_plan(PowerRequest(server="dgx-h100", nodes=16), catalog)
    s = summary(plan.fabric)
    assert plan.power.network_typical_kw == pytest.approx(float(s["power_w"]) / 1e3)  # type: ignore[arg-type]
    assert plan.power.network_nameplate_kw == pytest.approx(float(s["power_max_w"]) / 1e3)  # type: ignore[arg-type]


def test_liquid_rack_system_and_air_refused(catalog: Catalog) -> None:
    plan = power_plan(PowerRequest(server="gb200-nvl72", nodes=2), catalog)
    assert plan.cooling == "liquid"
    assert plan.checks["air"].feasible is False
    assert plan.checks["liquid"].feasible is True
    # swing per rack 72 x 1,200 W x 0.88 = 76.032 kW; 2 racks = 0.152064 MW
    assert plan.swing.swing_mw == pytest.approx(0.152064)
    with pytest.raises(InputError, match=r"^cooling: .* air cooling cannot host it"):
        power_plan(PowerRequest(server="gb200-nvl72", nodes=2, cooling="air"), catalog)


def test_explicit_pue_and_rack_kw(catalog: Catalog) -> None:
    plan = power_plan(PowerRequest(server="dgx-h100", nodes=8, pue=1.2, rack_kw=25), catalog)
    # 25 kW racks: floor(25 / 10.2) = 2 servers
    assert plan.racks.servers_per_rack == 2
    d = plan.as_dict()
    assert d["facility_power_kw"]["typical"] == pytest.approx(1.2 * d["it_power_kw"]["typical"])
    assert d["annual_energy_kwh"] == pytest.approx(d["it_power_kw"]["typical"] * 8760 * 1.2)
    assert "pue_air" not in d["assumptions"]


def test_request_rejects_pue_below_one() -> None:
    with pytest.raises(ValidationError, match="pue"):
        PowerRequest(server="dgx-h100", nodes=1, pue=0.95)


@pytest.mark.parametrize("pue", [3.01, 1e30, float("inf")])
def test_request_rejects_pue_above_three(pue: float) -> None:
    # Scenario files cap PUE at 3; a PUE of 1e30 was accepted here.
    with pytest.raises(ValidationError, match="pue"):
        PowerRequest(server="dgx-h100", nodes=1, pue=pue)
