"""design/tco_plan.py: capex from the catalog and the fabric BOM, opex, cloud comparison and the
list of estimated inputs."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from clusterwright.catalog.registry import Catalog
from clusterwright.design.bom import BomLine
from clusterwright.design.tco_plan import TcoRequest, tco_plan
from clusterwright.errors import InputError


def test_capex_parts_from_catalog_and_bom(catalog: Catalog) -> None:
    plan = tco_plan(TcoRequest(server="dgx-h100", nodes=16), catalog)
    bom = [b for b in plan.power.fabric.bom if isinstance(b, BomLine)]
    fab_cost = sum((b.total_usd or 0.0) for b in bom if b.category != "server")
    c = plan.capex
    assert c.servers_usd == pytest.approx(16 * 270_000)
    assert c.network_usd == pytest.approx(fab_cost)
    # storage 128 GPUs x 0.16 GB/s x $10,000 = $204,800
    assert c.storage_usd == pytest.approx(204_800)
    racks = plan.power.racks.compute_racks + plan.power.racks.network_racks
    assert c.racks_usd == pytest.approx(racks * (2500 + 6000))
    assert c.cooling_usd == 0.0  # air-cooled


def test_opex_energy_and_colocation(catalog: Catalog) -> None:
    plan = tco_plan(TcoRequest(server="dgx-h100", nodes=16, utilization=1.0, pue=1.3,
                               electricity_usd_per_kwh=0.1), catalog)
    p = plan.power.power
    # at full use the average is the typical IT draw; energy = kW x 8,760 x 1.3 x $0.10
    assert plan.average_it_kw == pytest.approx(p.typical_kw)
    assert plan.opex.energy_usd == pytest.approx(p.typical_kw * 8760 * 1.3 * 0.1)
    # colocation on nameplate IT: kW x $184.06 x 12
    assert plan.opex.colocation_usd == pytest.approx(p.nameplate_kw * 184.06 * 12)


def test_no_offer_chosen_here_every_offer_of_the_gpu_priced(catalog: Catalog) -> None:
    # The policy lives in plan/pricing.py: without an offer named, none is chosen here.
    plan = tco_plan(TcoRequest(server="dgx-h100", nodes=4), catalog)
    assert plan.cloud is None
    assert {a.offer.gpu for a in plan.alternatives} == {"h100-sxm"}
    assert len(plan.alternatives) == 5 and all(a.instances == 4 for a in plan.alternatives)
    chosen = tco_plan(TcoRequest(server="dgx-h100", nodes=4, cloud="lambda-8x-h100-sxm"), catalog)
    assert chosen.cloud is not None and chosen.cloud.offer.id == "lambda-8x-h100-sxm"
    assert "lambda-8x-h100-sxm" not in {a.offer.id for a in chosen.alternatives}


def test_rented_gpu_hours_replace_the_utilization_model(catalog: Catalog) -> None:
    req = TcoRequest(server="dgx-h100", nodes=4, cloud="aws-p5.48xlarge")
    hourly = tco_plan(req.model_copy(update={"cloud_gpu_hours_per_year": 100_000.0}), catalog)
    assert hourly.cloud is not None
    # 100,000 GPU-hours x $55.04 / 8 per GPU-hour; committed still pays every hour
    assert hourly.cloud.on_demand_annual_usd == pytest.approx(100_000 * 55.04 / 8)
    assert hourly.cloud.committed_annual_usd == pytest.approx(4 * 39.33 * 8760)
    assert "100,000 GPU-hours" in hourly.as_dict()["cloud_model"]


def test_cloud_and_server_prices_without_primary_source_are_estimates(catalog: Catalog) -> None:
    d = tco_plan(TcoRequest(server="dgx-h100", nodes=4, cloud="lambda-8x-h100-sxm"),
                 catalog).as_dict()
    est = {e["input"]: e for e in d["estimates"]}
    assert est["cloud:lambda-8x-h100-sxm"]["value"] == pytest.approx(23.92 / 8)
    assert "costnimbus" in est["cloud:lambda-8x-h100-sxm"]["why"]
    assert "SemiAnalysis estimate" in est["server:dgx-h100"]["why"]
    assert d["cloud"]["estimate"] is True
    # AWS's Capacity Block snapshot for P5e is a primary price page (mirrored): not flagged
    p5e = tco_plan(TcoRequest(server="dgx-h100", nodes=4, cloud="aws-p5e.48xlarge"), catalog)
    assert p5e.cloud is not None and not p5e.cloud.estimate


def test_breakeven_monotonic_in_utilization(catalog: Catalog) -> None:
    # 4 DGX H100 against p5 on-demand: at 20 % the cloud bill (4 x 55.04 x 8,760 x 0.2 = $386k)
    # is below the owned opex (~$531k: colocation, support, one FTE; the one-tier backend of a
    # cluster below one SU cut the support on network capex), so it never breaks even; above
    # that the breakeven comes sooner the more the GPUs are used.
    months: list[float | None] = []
    for u in (0.1, 0.2, 0.5, 0.75, 1.0):
        plan = tco_plan(TcoRequest(server="dgx-h100", nodes=4, utilization=u,
                                   cloud="aws-p5.48xlarge"), catalog)
        assert plan.cloud is not None
        months.append(plan.cloud.breakeven_months)
    assert months[:2] == [None, None]
    finite = [m for m in months[2:] if m is not None]
    assert len(finite) == 3
    assert finite == sorted(finite, reverse=True) and finite[0] > finite[-1]


def test_unpriced_server_needs_a_price(catalog: Catalog) -> None:
    with pytest.raises(InputError, match=r"prices\.server_usd") as err:
        tco_plan(TcoRequest(server="dgx-h200", nodes=2), catalog)
    assert err.value.field == "prices.server_usd" and "--" not in str(err.value)
    with pytest.raises(InputError) as bad:
        tco_plan(TcoRequest(server="dgx-h100", nodes=2, cloud="aws-p9"), catalog)
    assert bad.value.field == "cloud.offer"
    plan = tco_plan(TcoRequest(server="dgx-h200", nodes=2, server_price_usd=400_000), catalog)
    assert plan.capex.servers_usd == pytest.approx(800_000)
    given = {e["input"]: e["why"] for e in plan.estimates}
    assert "given as input" in given["server:dgx-h200"]


def test_estimates_are_listed(catalog: Catalog) -> None:
    d = tco_plan(TcoRequest(server="dgx-h100", nodes=4), catalog).as_dict()
    names = [e["input"] for e in d["estimates"]]
    assert "storage_usd_per_gbps" in names
    assert "electricity_usd_per_kwh" not in names  # sourced (EIA)
    for e in d["estimates"]:
        assert e["why"]


def test_no_offer_for_the_gpu_gives_no_cloud_numbers(catalog: Catalog) -> None:
    d = tco_plan(TcoRequest(server="gb200-nvl72", nodes=1), catalog).as_dict()
    assert d["cloud_annual_cost_usd"] is None and d["breakeven_months"] is None
    assert any("no cloud offer" in n for n in d["notes"])
    # liquid-cooled: the per-rack cooling allowance is charged
    assert d["capex_breakdown_usd"]["cooling"] == pytest.approx(50_000)


@pytest.mark.parametrize(
    "kw",
    [{"utilization": 0.0}, {"utilization": 1.2}, {"pue": 0.9}, {"electricity_usd_per_kwh": -1}],
)
def test_request_rejects_bad_numbers(kw: dict[str, float]) -> None:
    with pytest.raises(ValidationError):
        TcoRequest(server="dgx-h100", nodes=1, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(("field", "value"), [("pue", 1e30), ("pue", 3.5),
                                              ("electricity_usd_per_kwh", 1e300)])
def test_request_rejects_values_past_their_bounds(field: str, value: float) -> None:
    with pytest.raises(ValidationError, match=field):
        TcoRequest(server="dgx-h100", nodes=1, **{field: value})
