"""How a candidate is priced: on-prem capex and opex, cloud rental, budget checks, cost over
time."""

from __future__ import annotations

import math
from typing import Any

from clusterwright.design.blueprint import (
    Candidate,
    budget_violation,
    violation,
)
from clusterwright.design.tco_plan import TcoPlan
from clusterwright.plan.context import PlanRun
from clusterwright.spec.scenario import (
    Scenario,
    TrainingWorkload,
)


def price_cloud_only(run: PlanRun, cand: Candidate) -> bool:
    """Cloud cost from the first catalog offer renting the GPU (as ``tco_plan`` picks it),
    for a server the catalog has no purchase price for. False when no offer rents it."""
    from clusterwright.model import tco

    c = run.scenario.constraints
    offer = next((o for o in run.cat.all("clouds") if o.gpu == cand.gpu), None)
    if offer is None:
        cand.violations.append(violation("gpus", None, None, "",
                                         f"no catalog cloud offer rents {cand.gpu}"))
        return True
    util = run.cat.assumption("cluster_utilization")
    annual = tco.cloud_on_demand_annual_usd(tco.instances_for(cand.gpus or 0, offer.gpus),
                                            offer.on_demand_usd_per_hour, util)
    cand.cost_basis = set_cloud_cost(run, cand, offer.id, offer.on_demand_usd_per_hour / offer.gpus,
                                  annual, util)
    cand.total_cost_usd = cand.cloud_total_cost_usd
    if (v := budget_violation(cand.total_cost_usd or 0.0, c.budget_usd,
                              f"cloud cost on {cand.gpu}")) is not None:
        cand.violations.append(v)
    return True


def training_only(sc: Scenario) -> bool:
    return all(isinstance(w, TrainingWorkload) for w in sc.workloads)


def set_cloud_cost(run: PlanRun, cand: Candidate, offer: str, usd_per_gpu_hour: float,
                annual_usd: float, utilization: float) -> str:
    """Set the candidate's cloud costs; return their basis. The total covers the same years
    as on-prem, so the two compare; a scenario of training workloads only, deployed in the
    cloud, rents the GPUs for the (failure-free) run only."""
    c = run.scenario.constraints
    cand.cloud_annual_cost_usd = annual_usd
    cand.cloud_total_cost_usd = annual_usd * c.years
    basis = f"{c.years:g} years on demand ({offer}, {100 * utilization:.0f} % utilization)"
    if training_only(run.scenario):
        hours = max(r["time_to_train_days"] or 0.0 for r in cand.detail["workloads"]) * 24
        cand.detail["cloud_run_cost_usd"] = (cand.gpus or 0) * usd_per_gpu_hour * hours
        if c.deployment == "cloud":
            cand.cloud_total_cost_usd = cand.detail["cloud_run_cost_usd"]
            basis = (f"renting {cand.gpus:,} GPUs on demand ({offer}, ${usd_per_gpu_hour:.2f}"
                     f"/GPU-h) for the {hours / 24:.1f}-day failure-free training run")
    return basis


def price_candidate(run: PlanRun, cand: Candidate, tp: TcoPlan) -> None:
    """Fill the candidate's costs in the deployment's basis and check the budget."""
    c = run.scenario.constraints
    years = c.years
    capex, opex = tp.capex.total_usd, tp.opex.total_usd
    cand.capex_usd, cand.annual_opex_usd = capex, opex
    cand.on_prem_total_cost_usd = capex + opex * years
    cand.cost_per_gpu_hour_usd = tp.cost_per_gpu_hour()
    cloud = tp.cloud
    if cloud is not None:
        cand.breakeven_months = cloud.breakeven_months
        cloud_basis = set_cloud_cost(run, cand, cloud.offer.id, cloud.on_demand_usd_per_gpu_hour,
                                  cloud.on_demand_annual_usd, tp.utilization)
    else:
        cloud_basis = "no catalog cloud offer"
    on_prem_basis = (f"capex + {years:g} years of opex (energy at "
                     f"${c.electricity_usd_per_kwh:g}/kWh, PUE {c.pue:g}, colocation, support, "
                     "staff)")
    if c.deployment == "cloud":
        cand.cost_basis = cloud_basis
        cand.total_cost_usd = cand.cloud_total_cost_usd
        if cloud is None:
            cand.violations.append(violation("gpus", None, None, "",
                                             f"no catalog cloud offer rents {cand.gpu}"))
        elif (v := budget_violation(cand.total_cost_usd or 0.0, c.budget_usd,
                                    f"cloud cost on {cand.gpu}")) is not None:
            cand.violations.append(v)
    else:
        cand.cost_basis = on_prem_basis
        cand.total_cost_usd = cand.on_prem_total_cost_usd
        if (v := budget_violation(capex, c.budget_usd, f"capex on {cand.gpu}")) is not None:
            cand.violations.append(v)
    if tp.power.racks.compute_racks + tp.power.racks.network_racks != 0:
        cand.detail["tco_racks"] = tp.power.racks.compute_racks + tp.power.racks.network_racks


def cost_over_time(capex: float, annual_opex: float, cloud_on_demand_annual: float | None,
                   cloud_committed_annual: float | None, years: float) -> list[dict[str, Any]]:
    """Cumulative cost by month: on-prem (capex at month 0, then opex) against renting the
    same GPUs on demand and committed (USD)."""
    months = max(1, math.ceil(years * 12))
    return [{
        "month": m,
        "on_prem_cumulative_usd": capex + annual_opex * m / 12,
        "cloud_on_demand_cumulative_usd": (cloud_on_demand_annual * m / 12
                                           if cloud_on_demand_annual is not None else None),
        "cloud_committed_cumulative_usd": (cloud_committed_annual * m / 12
                                           if cloud_committed_annual is not None else None),
    } for m in range(months + 1)]
