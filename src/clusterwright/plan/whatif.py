"""What-if re-pricing of a stored blueprint: change the prices and the utilization, keep the
design. Pure: reads the blueprint dict ``plan`` wrote and the TCO model (``model/tco.py``,
``model/power.py``), the same formulas ``design/tco_plan.py`` and ``plan/pricing.py`` used, so
with no change it gives back the blueprint's own numbers (tests/plan/test_whatif.py holds
that for every shipped example).

What a slider may change without a new plan: cluster utilization, electricity $/kWh, the
server price, the cloud $/GPU-hour and term (on demand or committed), and the deadline (only
checked: the design's time to train does not move). What needs a re-plan is said, not
guessed: a deadline shorter than the planned time to train needs more GPUs, and one the
failure Monte Carlo's p90 runs past (the plan's "deadline at risk with failures") needs hot
spares or more GPUs.

Costs are USD; ``utilization`` is used over installed GPU-hours in (0, 1].
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from clusterwright.errors import InputError
from clusterwright.model import tco
from clusterwright.model.power import ClusterPower, annual_energy_kwh, average_it_kw

TERMS = ("on_demand", "committed")
# The controls' ranges (what the web sliders offer, and what this function accepts).
MAX_USD_PER_KWH = 10.0
MAX_USD_PER_GPU_HOUR = 1000.0
MAX_SERVER_USD = 1e8
MAX_DEADLINE_DAYS = 3650.0


@dataclass(frozen=True)
class WhatIf:
    """Overrides; None keeps the blueprint's value."""

    utilization: float | None = None
    electricity_usd_per_kwh: float | None = None
    server_price_usd: float | None = None
    cloud_usd_per_gpu_hour: float | None = None
    cloud_term: str | None = None  # on_demand | committed
    deadline_days: float | None = None


@dataclass(frozen=True)
class DeadlineCheck:
    workload: str
    time_to_train_days: float | None
    deadline_days: float | None
    meets: bool | None  # None: no deadline
    # The failure Monte Carlo's p90 time to train (days), and whether it runs past the
    # deadline (the plan's "deadline at risk with failures"); None: no deadline or no Monte
    # Carlo in the blueprint
    time_to_train_p90_days: float | None = None
    at_risk: bool | None = None


@dataclass(frozen=True)
class Repriced:
    """The blueprint's costs at the what-if's inputs (USD; months; USD per GPU-hour)."""

    inputs: dict[str, Any]
    capex_usd: float
    capex_by_category_usd: dict[str, float]
    annual_opex_usd: float
    opex_breakdown_usd: dict[str, float]
    annual_energy_kwh: float
    on_prem_total_usd: float
    cloud_annual_usd: float | None
    cloud_total_usd: float | None
    breakeven_months: float | None
    cost_per_gpu_hour_usd: float
    breakeven_utilization: float | None  # owning beats renting above it (on demand)
    total_cost_usd: float | None  # in the blueprint's cost basis
    deployment: str
    budget_usd: float | None
    within_budget: bool | None
    deadlines: list[DeadlineCheck] = field(default_factory=list)
    replan: list[str] = field(default_factory=list)  # why a re-plan is needed, if it is

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _num(x: Any) -> float | None:
    return float(x) if isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(
        x) else None


def _need(d: Mapping[str, Any], key: str, where: str) -> float:
    v = _num(d.get(key))
    if v is None:
        raise InputError(f"blueprint: {where}.{key} is missing; re-plan to re-price",
                         field=f"{where}.{key}")
    return v


def _check(name: str, value: float | None, lo: float, hi: float, lo_open: bool = False) -> None:
    if value is None:
        return
    bad = not math.isfinite(value) or value > hi or (value <= lo if lo_open else value < lo)
    if bad:
        left = "(" if lo_open else "["
        raise InputError(f"{name}: {value:g} is outside {left}{lo:g}, {hi:g}]", field=name)


# Each control's accepted range: (low, high, low excluded). The web page checks the same
# ranges before it asks (so a refusal is a message, not a failed request), the server again.
LIMITS: dict[str, tuple[float, float, bool]] = {
    "utilization": (0.0, 1.0, True),
    "electricity_usd_per_kwh": (0.0, MAX_USD_PER_KWH, False),
    "server_price_usd": (0.0, MAX_SERVER_USD, True),
    "cloud_usd_per_gpu_hour": (0.0, MAX_USD_PER_GPU_HOUR, True),
    "deadline_days": (0.0, MAX_DEADLINE_DAYS, True),
}


def check(w: WhatIf) -> None:
    """Refuse a value outside its control's range, naming the control (InputError)."""
    for name, (lo, hi, lo_open) in LIMITS.items():
        _check(name, getattr(w, name), lo, hi, lo_open=lo_open)
    if w.cloud_term is not None and w.cloud_term not in TERMS:
        raise InputError(f"cloud_term: {w.cloud_term!r} is not one of {', '.join(TERMS)}",
                         field="cloud_term")


def baseline(bp: Mapping[str, Any]) -> dict[str, Any]:
    """The blueprint's own values of the controls (what the sliders start at), and whether
    it can be re-priced at all (a cloud-only or infeasible blueprint without a TCO cannot)."""
    t = bp.get("tco") or {}
    cloud = t.get("cloud") or {}
    term = "on_demand" if (t.get("cloud_term") or "on_demand") == "on_demand" else "committed"
    nodes = _num(t.get("nodes"))
    servers = _num((t.get("capex_breakdown_usd") or {}).get("servers"))
    rate = cloud.get("on_demand_usd_per_gpu_hour") if term == "on_demand" else cloud.get(
        "committed_usd_per_gpu_hour")
    deadlines = [_num(w.get("deadline_days")) for w in bp.get("workloads") or []
                 if w.get("kind") == "training"]
    return {
        "repriceable": bool(t) and bool(t.get("capex_breakdown_usd")),
        "utilization": _num(t.get("utilization")),
        "electricity_usd_per_kwh": _num(t.get("electricity_usd_per_kwh")),
        "server_price_usd": servers / nodes if servers is not None and nodes else None,
        "cloud_usd_per_gpu_hour": _num(rate),
        "cloud_term": term if cloud else None,
        "cloud_committed_available": cloud.get("committed_usd_per_gpu_hour") is not None,
        "deadline_days": next((d for d in deadlines if d is not None), None),
    }


def reprice(bp: Mapping[str, Any], w: WhatIf) -> Repriced:
    """The blueprint ``bp`` (a blueprint.json dict) re-priced at ``w``. Raises InputError
    naming the control for a value out of range, or the blueprint key that is missing."""
    check(w)
    t = bp.get("tco")
    if not isinstance(t, Mapping) or not t.get("capex_breakdown_usd"):
        raise InputError("blueprint: no on-prem TCO to re-price (cloud-only or infeasible "
                         "design); re-plan instead", field="tco")
    base = baseline(bp)
    pw = bp.get("power") or {}
    br = pw.get("it_power_breakdown_kw") or {}
    inputs = t.get("inputs") or {}
    rec = bp.get("recommendation") or {}
    cons = (bp.get("scenario") or {}).get("constraints") or {}

    years = _need(t, "years", "tco")
    gpus = int(_need(t, "gpus", "tco"))
    nodes = int(_need(t, "nodes", "tco"))
    pue = _need(t, "pue", "tco")
    u = w.utilization if w.utilization is not None else _need(t, "utilization", "tco")
    usd_kwh = (w.electricity_usd_per_kwh if w.electricity_usd_per_kwh is not None
               else _need(t, "electricity_usd_per_kwh", "tco"))
    price = w.server_price_usd if w.server_price_usd is not None else base["server_price_usd"]

    cb = dict(t["capex_breakdown_usd"])
    capex = tco.Capex(servers_usd=price * nodes, network_usd=float(cb["network"]),
                      storage_usd=float(cb["storage"]), racks_usd=float(cb["racks"]),
                      cooling_usd=float(cb.get("cooling") or 0.0))
    cats = dict(t.get("capex_by_category_usd") or {})
    cats["servers"] = capex.servers_usd

    power = ClusterPower(
        servers=nodes, servers_nameplate_kw=_need(br, "servers_nameplate", "power"),
        servers_typical_kw=_need(br, "servers_typical", "power"),
        servers_idle_kw=_need(br, "servers_idle", "power"),
        network_nameplate_kw=_need(br, "network_nameplate", "power"),
        network_typical_kw=_need(br, "network_typical", "power"),
        storage_kw=_num(br.get("storage")) or 0.0)  # blueprint 1.3: the storage tier
    energy_kwh = annual_energy_kwh(average_it_kw(power, u), pue)
    ob = t.get("opex_breakdown_usd") or {}
    opex = tco.annual_opex(
        energy_cost_usd=tco.annual_energy_cost_usd(energy_kwh, usd_kwh),
        colocation_usd=_need(ob, "colocation", "tco.opex_breakdown_usd"),
        capex_usd=capex.total_usd,
        support_fraction=_need(inputs, "support_fraction_per_year", "tco.inputs"),
        fte=1.0, loaded_usd_per_fte=_need(ob, "staff", "tco.opex_breakdown_usd"))
    per_h = tco.cost_per_gpu_hour(capex.total_usd, years, opex.total_usd, gpus, u)
    on_prem_total = capex.total_usd + opex.total_usd * years

    cloud = t.get("cloud") or None
    cloud_annual = breakeven = be_util = None
    term = w.cloud_term or base["cloud_term"]
    rate = None
    if cloud:
        if w.cloud_usd_per_gpu_hour is not None:
            rate = w.cloud_usd_per_gpu_hour
        elif term == "on_demand":
            rate = _num(cloud.get("on_demand_usd_per_gpu_hour"))
        else:
            rate = _num(cloud.get("committed_usd_per_gpu_hour"))
        if rate is None:
            raise InputError("cloud_term: the offer has no committed price; give "
                             "cloud_usd_per_gpu_hour", field="cloud_term")
        per_instance = _need(cloud, "on_demand_usd_per_hour", "tco.cloud") / _need(
            cloud, "on_demand_usd_per_gpu_hour", "tco.cloud")
        rented = _need(cloud, "instances", "tco.cloud") * round(per_instance)
        hours = _num(t.get("cloud_gpu_hours_per_year"))
        if term != "on_demand":
            cloud_annual = rented * rate * tco.HOURS_PER_YEAR
        elif hours is not None:
            cloud_annual = hours * rate
        else:
            cloud_annual = rented * rate * tco.HOURS_PER_YEAR * u
        breakeven = tco.breakeven_months(capex.total_usd, opex.total_usd, cloud_annual)
        full = tco.cost_per_gpu_hour(capex.total_usd, years, opex.total_usd, gpus, 1.0)
        be_util = tco.breakeven_utilization(full, rate) if rate > 0 else None

    deployment = str(rec.get("deployment") or "on-prem")
    training = [x for x in bp.get("workloads") or [] if x.get("kind") == "training"]
    cloud_total = cloud_annual * years if cloud_annual is not None else None
    only_training = bool(training) and all(
        x.get("kind") == "training" for x in bp.get("workloads") or [])
    if deployment == "cloud" and only_training and rate is not None:
        days = max((_num(x.get("time_to_train_days")) or 0.0) for x in training)
        cloud_total = (_num(rec.get("gpus")) or gpus) * rate * days * 24
    total = cloud_total if deployment == "cloud" else on_prem_total
    budget = _num(cons.get("budget_usd"))
    checked = cloud_total if deployment == "cloud" else capex.total_usd
    within = None if budget is None or checked is None else checked <= budget

    deadlines, replan = [], []
    for x in training:
        ttt = _num(x.get("time_to_train_days"))
        dl = w.deadline_days if w.deadline_days is not None else _num(x.get("deadline_days"))
        meets = None if dl is None or ttt is None else ttt <= dl
        p90 = _num(x.get("time_to_train_days_p90"))
        at_risk = None if dl is None or p90 is None else p90 > dl
        deadlines.append(DeadlineCheck(str(x.get("name") or ""), ttt, dl, meets, p90, at_risk))
        if meets is False:
            replan.append(f"{x.get('name')}: trains in {ttt:.1f} days, past the {dl:g}-day "
                          "deadline; more GPUs need a re-plan")
        elif at_risk:
            # As the plan's own risk: the time to train assumes each failed node is replaced
            # at once; the failure Monte Carlo's runs say how often that holds.
            replan.append(f"{x.get('name')}: trains in {ttt:.1f} days without failures, but "
                          f"with failures and restarts one run in ten takes more than "
                          f"{p90:.1f} days (the Monte Carlo's p90), past the {dl:g}-day "
                          "deadline; hot spares or more GPUs need a re-plan")
    if within is False:
        replan.append("the cost exceeds the budget: a cheaper design needs a re-plan")
    return Repriced(
        inputs={"utilization": u, "electricity_usd_per_kwh": usd_kwh,
                "server_price_usd": price, "cloud_usd_per_gpu_hour": rate, "cloud_term": term,
                "deadline_days": w.deadline_days if w.deadline_days is not None
                else base["deadline_days"], "years": years},
        capex_usd=capex.total_usd, capex_by_category_usd=cats,
        annual_opex_usd=opex.total_usd,
        opex_breakdown_usd={"energy": opex.energy_usd, "colocation": opex.colocation_usd,
                            "support": opex.support_usd, "staff": opex.staff_usd},
        annual_energy_kwh=energy_kwh, on_prem_total_usd=on_prem_total,
        cloud_annual_usd=cloud_annual, cloud_total_usd=cloud_total,
        breakeven_months=breakeven, cost_per_gpu_hour_usd=per_h,
        breakeven_utilization=be_util, total_cost_usd=total, deployment=deployment,
        budget_usd=budget, within_budget=within, deadlines=deadlines, replan=replan)
