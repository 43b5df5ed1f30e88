"""plan/whatif.py: re-pricing a stored blueprint. With no change it gives back the
blueprint's own numbers (so it prices as the planner did); each control moves what it must;
a value outside its range is refused naming the control."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from clusterwright.errors import InputError
from clusterwright.plan.whatif import WhatIf, baseline, reprice

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(p.parent.name for p in (ROOT / "examples").glob("*/blueprint.json"))


def _bp(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((ROOT / "examples" / name / "blueprint.json").read_text())
    return data


@pytest.mark.parametrize("name", EXAMPLES)
def test_no_change_gives_the_blueprints_own_numbers(name: str) -> None:
    bp = _bp(name)
    r = reprice(bp, WhatIf())
    t, rec = bp["tco"], bp["recommendation"]
    assert r.capex_usd == pytest.approx(t["capex_usd"], rel=1e-9)
    assert r.annual_opex_usd == pytest.approx(t["annual_opex_usd"], rel=1e-9)
    assert r.cost_per_gpu_hour_usd == pytest.approx(t["cost_per_gpu_hour_usd"], rel=1e-9)
    assert r.cloud_annual_usd == pytest.approx(t["cloud_annual_cost_usd"], rel=1e-9)
    assert r.total_cost_usd == pytest.approx(rec["total_cost_usd"], rel=1e-9)
    if rec["breakeven_months"] is None:
        assert r.breakeven_months is None
    else:
        assert r.breakeven_months == pytest.approx(rec["breakeven_months"], rel=1e-9)
    assert sum(r.capex_by_category_usd.values()) == pytest.approx(r.capex_usd, rel=1e-12)


def test_each_control_moves_what_it_must() -> None:
    bp = _bp("training-1k-h100")
    base = reprice(bp, WhatIf())
    # Dearer power: more opex, later breakeven; capex unchanged.
    e = reprice(bp, WhatIf(electricity_usd_per_kwh=0.30))
    assert e.capex_usd == base.capex_usd and e.annual_opex_usd > base.annual_opex_usd
    assert e.opex_breakdown_usd["energy"] == pytest.approx(
        base.opex_breakdown_usd["energy"] * 0.30 / 0.08)
    # A cheaper server: lower capex (servers only) and lower support.
    s = reprice(bp, WhatIf(server_price_usd=200_000))
    assert s.capex_by_category_usd["servers"] == 200_000 * bp["recommendation"]["nodes"]
    assert s.opex_breakdown_usd["support"] < base.opex_breakdown_usd["support"]
    # Lower utilization: dearer owned GPU-hours, cheaper on-demand cloud, later breakeven.
    u = reprice(bp, WhatIf(utilization=0.4))
    assert u.cost_per_gpu_hour_usd > base.cost_per_gpu_hour_usd
    assert u.cloud_annual_usd is not None and base.cloud_annual_usd is not None
    assert u.cloud_annual_usd == pytest.approx(base.cloud_annual_usd / 2)
    # Committed cloud pays every hour at the offer's committed rate.
    c = reprice(bp, WhatIf(cloud_term="committed"))
    assert c.cloud_annual_usd == pytest.approx(bp["tco"]["cloud"]["committed_annual_usd"])
    assert c.breakeven_months == pytest.approx(bp["tco"]["breakeven_months_committed"])
    # A cloud price at which owning never pays back.
    cheap = reprice(bp, WhatIf(cloud_usd_per_gpu_hour=0.5))
    assert cheap.breakeven_months is None


def test_a_deadline_shorter_than_the_training_time_asks_for_a_replan() -> None:
    bp = _bp("training-1k-h100")
    w = bp["workloads"][0]
    ttt, p90 = w["time_to_train_days"], w["time_to_train_days_p90"]
    assert ttt < p90
    ok = reprice(bp, WhatIf(deadline_days=p90 + 1))
    assert ok.deadlines[0].meets is True and ok.deadlines[0].at_risk is False
    assert ok.replan == []
    late = reprice(bp, WhatIf(deadline_days=ttt - 1))
    assert late.deadlines[0].meets is False
    assert "re-plan" in late.replan[0] and "pretrain-70b" in late.replan[0]
    # Met without failures, missed by one run in ten with them: the plan's own risk.
    tight = reprice(bp, WhatIf(deadline_days=(ttt + p90) / 2))
    d = tight.deadlines[0]
    assert (d.meets, d.at_risk, d.time_to_train_p90_days) == (True, True, p90)
    assert len(tight.replan) == 1 and "Monte Carlo's p90" in tight.replan[0]
    assert "hot spares" in tight.replan[0]


@pytest.mark.parametrize("what, control", [
    (WhatIf(utilization=0.0), "utilization"),
    (WhatIf(utilization=1.2), "utilization"),
    (WhatIf(electricity_usd_per_kwh=-0.1), "electricity_usd_per_kwh"),
    (WhatIf(server_price_usd=-5), "server_price_usd"),
    (WhatIf(cloud_usd_per_gpu_hour=0), "cloud_usd_per_gpu_hour"),
    (WhatIf(cloud_usd_per_gpu_hour=float("nan")), "cloud_usd_per_gpu_hour"),
    (WhatIf(deadline_days=-3), "deadline_days"),
    (WhatIf(cloud_term="monthly"), "cloud_term"),
])
def test_a_value_out_of_range_names_its_control(what: WhatIf, control: str) -> None:
    with pytest.raises(InputError, match=rf"^{control}: ") as exc:
        reprice(_bp("training-1k-h100"), what)
    assert exc.value.field == control


def test_baseline_is_what_the_sliders_start_at() -> None:
    b = baseline(_bp("training-1k-h100"))
    assert b["repriceable"] and b["utilization"] == 0.8
    assert b["server_price_usd"] == 270_000 and b["cloud_term"] == "on_demand"
    assert b["deadline_days"] == 45.0


def test_a_blueprint_without_a_tco_cannot_be_repriced() -> None:
    bp = _bp("training-1k-h100")
    bp["tco"] = None
    assert baseline(bp)["repriceable"] is False
    with pytest.raises(InputError, match="re-plan"):
        reprice(bp, WhatIf())
