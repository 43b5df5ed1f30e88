"""The one pricing policy, and how a candidate is priced with it: on-prem capex and opex, cloud
rental, budget checks, cost over time.

Policy (``cloud_price``), used by ``plan``, ``train plan``, ``serve plan`` and ``ops tco`` alike,
so that the same GPUs cost the same everywhere: among the catalog offers renting the GPU
that the scenario's ``cloud:`` allows (a provider, or one offer), the cheapest per GPU-hour
at the scenario's term (on demand by default; ``committed``, ``1y``, ``3y`` take the offer's
committed rate, paid every hour). Ties go to the smaller instance, then the offer id. Every
offer considered is kept with its $/GPU-hour, and prices without a primary source are
marked as estimates wherever they are shown.

Cloud inference with a diurnal curve is rented hour by hour (GPUs per hour = the workload's
``diurnal_gpus``); on-prem still buys the peak.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from clusterwright.catalog.references import matching_offers, provider_key
from clusterwright.catalog.registry import Catalog
from clusterwright.catalog.schema import CloudOffer
from clusterwright.design.blueprint import Candidate, budget_violation, violation
from clusterwright.design.decision import Alternative, Decision
from clusterwright.design.tco_plan import (
    CloudCost,
    TcoPlan,
    TcoRequest,
    price_is_estimate,
    tco_plan,
)
from clusterwright.errors import InputError, UnknownIdError
from clusterwright.model import tco
from clusterwright.plan.context import PlanRun
from clusterwright.spec.pricing import CloudPolicy
from clusterwright.spec.scenario import Scenario, TrainingWorkload

DAYS_PER_YEAR = 365.0  # the diurnal curve is one day; tco.HOURS_PER_YEAR is 8,760 = 365 x 24
DEFAULT_POLICY = CloudPolicy()


@dataclass(frozen=True)
class OfferPrice:
    """One offer at one term, per GPU-hour (USD)."""

    offer: CloudOffer
    term: str  # on_demand | committed | 1y | 3y
    usd_per_gpu_hour: float

    @property
    def estimate(self) -> bool:
        return price_is_estimate(self.offer.source)

    @property
    def label(self) -> str:
        return f"{self.offer.id} {term_words(self.term)}"

    def as_dict(self) -> dict[str, Any]:
        o = self.offer
        return {"offer": o.id, "provider": o.provider, "gpu": o.gpu, "term": self.term,
                "commitment": o.commitment if self.term != "on_demand" else None,
                "usd_per_gpu_hour": self.usd_per_gpu_hour, "price_date": o.price_date,
                "estimate": self.estimate, "source": o.source}


@dataclass(frozen=True)
class CloudChoice:
    """The offer the policy chose for one GPU, every offer it considered, and why."""

    gpu: str
    policy: CloudPolicy
    chosen: OfferPrice
    considered: tuple[OfferPrice, ...]  # every offer renting the GPU at each term it has
    why: str

    @property
    def offer_id(self) -> str:
        return self.chosen.offer.id

    @property
    def usd_per_gpu_hour(self) -> float:
        return self.chosen.usd_per_gpu_hour

    @property
    def committed(self) -> bool:
        return self.policy.term != "on_demand"

    def as_dict(self) -> dict[str, Any]:
        return {"gpu": self.gpu, "provider": self.policy.provider, "offer": self.offer_id,
                "term": self.policy.term, "usd_per_gpu_hour": self.usd_per_gpu_hour,
                "estimate": self.chosen.estimate, "source": self.chosen.offer.source,
                "why": self.why, "considered": [p.as_dict() for p in self.considered]}

    def decision(self, gpus: int | None = None, gpu_hours: float | None = None,
                 utilization: float = 1.0) -> Decision:
        """The ``pricing`` decision: which offer and term, why, and what every other
        offer would cost per GPU-hour and, for ``gpus`` GPUs (``gpu_hours`` rented on
        demand a year, else at ``utilization``), per year."""
        alts = []
        base = self.usd_per_gpu_hour
        mine = annual_usd(self.chosen, gpus, gpu_hours, utilization) if gpus else None
        for p in self.considered:
            if p.offer.id == self.offer_id and p.term == self.chosen.term:
                continue
            diff = p.usd_per_gpu_hour - base
            outcome = f"${p.usd_per_gpu_hour:.2f}/GPU-h, {_pct(diff / base)} per GPU-hour"
            if mine is not None and gpus:
                yearly = annual_usd(p, gpus, gpu_hours, utilization) - mine
                outcome += (f", ${abs(yearly):,.0f} a year {'more' if yearly >= 0 else 'less'}"
                            " for this cluster")
            outcome += ", estimate" if p.estimate else ""
            if not self._allowed(p):
                outcome += f"; outside the scenario's cloud: {self._scope()}"
            alts.append(Alternative(p.label, outcome))
        est = " [estimate: " + _short(self.chosen.offer.source) + "]" if \
            self.chosen.estimate else ""
        return Decision("pricing", f"{self.chosen.label} at ${base:.2f}/GPU-h{est}", self.why,
                        None, tuple(alts))

    def _allowed(self, p: OfferPrice) -> bool:
        pol = self.policy
        if pol.offer is not None and p.offer.id != pol.offer:
            return False
        if pol.provider is not None and provider_key(p.offer.provider) != provider_key(
                pol.provider):
            return False
        return p.term == self.chosen.term

    def _scope(self) -> str:
        pol = self.policy
        parts = [f"offer {pol.offer}" if pol.offer else "",
                 f"provider {pol.provider}" if pol.provider else "",
                 f"term {pol.term}"]
        return ", ".join(x for x in parts if x)


def _pct(x: float) -> str:
    """+38 %, -0.3 %: a signed difference that never rounds a real one to zero."""
    return f"{100 * x:+.1f} %" if abs(x) < 0.1 else f"{100 * x:+.0f} %"


def annual_usd(p: OfferPrice, gpus: int, gpu_hours: float | None, utilization: float) -> float:
    """A year of renting ``gpus`` GPUs at ``p`` (USD), as ``tco_plan`` counts it: on demand
    the rented GPU-hours (``gpu_hours``, else whole instances x 8,760 h x utilization);
    committed every hour of whole instances."""
    n = tco.instances_for(gpus, p.offer.gpus)
    per_instance = p.usd_per_gpu_hour * p.offer.gpus
    if p.term != "on_demand":
        return tco.cloud_committed_annual_usd(n, per_instance)
    if gpu_hours is not None:
        return gpu_hours * p.usd_per_gpu_hour
    return tco.cloud_on_demand_annual_usd(n, per_instance, utilization)


def term_words(term: str) -> str:
    return {"on_demand": "on demand", "committed": "committed", "1y": "1-year committed",
            "3y": "3-year committed"}.get(term, term)


def _short(text: str, width: int = 90) -> str:
    return text if len(text) <= width else text[: width - 3].rstrip() + "..."


def _rate(o: CloudOffer, term: str) -> float | None:
    per_h = o.on_demand_usd_per_hour if term == "on_demand" else o.committed_usd_per_hour
    return per_h / o.gpus if per_h is not None else None


def _considered(cat: Catalog, gpu: str) -> list[OfferPrice]:
    out = []
    for o in cat.all("clouds"):
        if o.gpu != gpu:
            continue
        out.append(OfferPrice(o, "on_demand", o.on_demand_usd_per_hour / o.gpus))
        if o.committed_usd_per_hour is not None:
            out.append(OfferPrice(o, o.committed_term or "committed",
                                  o.committed_usd_per_hour / o.gpus))
    return sorted(out, key=lambda p: (p.usd_per_gpu_hour, p.offer.gpus, p.offer.id, p.term))


def cloud_price(cat: Catalog, gpu: str, policy: CloudPolicy | None = None) -> CloudChoice | None:
    """The policy's offer for ``gpu`` (a catalog GPU id): the cheapest $/GPU-hour at the
    policy's term among the offers it allows. None when no allowed offer rents the GPU."""
    pol = policy or DEFAULT_POLICY
    offers = matching_offers(cat, gpu, pol)
    priced = [(r, o.gpus, o.id, o) for o in offers if (r := _rate(o, pol.term)) is not None]
    if not priced:
        return None
    rate, _, _, best = min(priced, key=lambda t: t[:3])
    term = pol.term if pol.term != "committed" else (best.committed_term or "committed")
    chosen = OfferPrice(best, term, rate)
    considered = tuple(_considered(cat, gpu))
    if pol.offer is not None:
        why = f"asked for by name ({pol.offer})"
    else:
        among = (f"{provider_key(pol.provider)}'s offers" if pol.provider else "catalog offers")
        rivals = sorted((r for r, _, oid, _ in priced if oid != best.id))
        why = (f"cheapest {term_words(pol.term)} $/GPU-hour of {len(priced)} {among} "
               f"renting {gpu}")
        if rivals:
            why += f"; next ${rivals[0]:.2f}/GPU-h ({_pct(rivals[0] / rate - 1)})"
    if pol.term != "on_demand":
        why += f"; committed rate ({best.commitment}) paid every hour of the year"
    if chosen.estimate:
        why += "; the price has no primary source (estimate)"
    return CloudChoice(gpu, pol, chosen, considered, why)


def price_tco(req: TcoRequest, cat: Catalog,
              policy: CloudPolicy | None = None) -> tuple[TcoPlan, CloudChoice | None]:
    """``tco_plan`` against the policy's offer (``req.cloud`` when the caller names one).
    Raises InputError with field ``cloud.offer`` for an unknown offer id."""
    server = cat.server(req.server)
    if req.cloud is not None:
        try:
            offer = cat.cloud(req.cloud)
        except UnknownIdError as exc:
            raise InputError(f"cloud.offer: {exc}", field="cloud.offer") from None
        choice = cloud_price(cat, offer.gpu, CloudPolicy(offer=offer.id,
                                                         term=(policy or DEFAULT_POLICY).term))
    else:
        choice = cloud_price(cat, server.gpu, policy)
        if choice is not None:
            req = req.model_copy(update={"cloud": choice.offer_id})
    return tco_plan(req, cat), choice


def chosen_annual(cost: CloudCost, choice: CloudChoice | None) -> tuple[float, float | None]:
    """The chosen term's yearly cloud cost (USD) and breakeven (months)."""
    if choice is not None and choice.committed and cost.committed_annual_usd is not None:
        return cost.committed_annual_usd, cost.breakeven_months_committed
    return cost.on_demand_annual_usd, cost.breakeven_months


def tco_dict(tp: TcoPlan, choice: CloudChoice | None) -> dict[str, Any]:
    """``tp.as_dict()`` in the policy's term, with the policy's choice (``pricing``)."""
    out = tp.as_dict()
    out["pricing"] = choice.as_dict() if choice is not None else None
    out["cloud_term"] = choice.policy.term if choice is not None else None
    if tp.cloud is not None and choice is not None and choice.committed:
        annual, be = chosen_annual(tp.cloud, choice)
        out["cloud_annual_cost_usd"], out["breakeven_months"] = annual, be
    return out


# ------------------------------------------------------------------ scenario candidates


def training_only(sc: Scenario) -> bool:
    return all(isinstance(w, TrainingWorkload) for w in sc.workloads)


def rented_gpu_hours(run: PlanRun, cand: Candidate, utilization: float,
                     instance_gpus: int = 1) -> tuple[float | None, str]:
    """GPU-hours a year rented on demand when the candidate serves, and how they were
    counted; (None, basis) for training alone (then GPUs x 8,760 h x utilization).

    Serving replicas are up every hour: a diurnal curve's GPUs hour by hour, a flat fleet's
    all year. Each hour's GPUs are whole instances of ``instance_gpus`` (a cloud bills the
    instance, not a share of it). Training and dedicated fine-tuning GPUs run at
    ``utilization``; fine-tuning in the pool's window rents its GPU-hours."""
    rows = cand.detail.get("workloads", [])
    serving = [r for r in rows if r["kind"] == "inference"]
    if not serving:
        return None, f"{100 * utilization:.0f} % utilization"
    k = max(1, instance_gpus)
    per_hour = [sum((r.get("diurnal_gpus") or [r["gpus"]] * 24)[h] for r in serving)
                for h in range(24)]
    hourly = sum(math.ceil(g / k - 1e-9) * k for g in per_hour) * DAYS_PER_YEAR
    # The other workloads' own GPUs; the servers' rounding is not rented (the instances follow
    # the workloads, not the server count).
    rest = sum(r["gpus"] for r in rows if r["kind"] == "training") + sum(
        r.get("extra_gpus") or 0 for r in rows if r["kind"] == "finetune")
    flat = math.ceil(rest / k - 1e-9) * k * tco.HOURS_PER_YEAR * utilization if rest else 0.0
    # The pool's free GPUs the fine-tuning runs on, over every window it takes (the GPUs
    # the curve leaves idle at night are rented for it).
    pool = sum(min(r["gpu_hours"], (r.get("free_gpu_hours_in_window") or 0.0)
                   * (r.get("windows") or 1)) for r in rows
               if r["kind"] == "finetune" and r.get("pool_gpus"))
    curves = [r["name"] for r in serving if r.get("diurnal_gpus")]
    peak = sum(r["gpus"] for r in serving)
    basis = (f"{', '.join(r['name'] for r in serving)} rented every hour"
             + (f" ({', '.join(curves)} hour by hour from the diurnal curve)" if curves else "")
             + f": {hourly / DAYS_PER_YEAR / 24:,.1f} GPUs on average of {peak:,} at peak"
             + (f", in whole {k}-GPU instances" if k > 1 else ""))
    if rest:
        basis += f", the other {rest:,} GPUs at {100 * utilization:.0f} % utilization"
    if pool:
        basis += f", fine-tuning in the pool's window rents its {pool:,.0f} GPU-hours once a year"
    return hourly + flat + pool, basis


def price_cloud_only(run: PlanRun, cand: Candidate, choice: CloudChoice | None) -> bool:
    """Cloud cost from the policy's offer, for a server the catalog has no purchase price
    for. False when no offer rents the GPU."""
    c = run.scenario.constraints
    if choice is None:
        cand.violations.append(violation("gpus", None, None, "", no_offer_text(run, cand.gpu)))
        return True
    util = run.cat.assumption("cluster_utilization")
    hours, how = rented_gpu_hours(run, cand, util, choice.chosen.offer.gpus)
    annual = annual_usd(choice.chosen, cand.gpus or 0, hours, util)
    cand.cost_basis = set_cloud_cost(run, cand, choice, annual, how)
    cand.total_cost_usd = cand.cloud_total_cost_usd
    cand.decisions.append(choice.decision(cand.gpus, hours, util))
    if (v := budget_violation(cand.total_cost_usd or 0.0, c.budget_usd,
                              f"cloud cost on {cand.gpu}")) is not None:
        cand.violations.append(v)
    return True


def no_offer_text(run: PlanRun, gpu: str) -> str:
    pol = run.scenario.cloud
    if pol.offer is not None:
        return f"cloud.offer {pol.offer} does not rent {gpu}"
    if pol.provider is not None:
        return f"cloud.provider {pol.provider} rents no {gpu} at term {pol.term}"
    if pol.term != "on_demand":
        return f"no catalog cloud offer rents {gpu} at term {pol.term}"
    return f"no catalog cloud offer rents {gpu}"


def set_cloud_cost(run: PlanRun, cand: Candidate, choice: CloudChoice, annual_usd: float,
                   how: str) -> str:
    """Set the candidate's cloud costs; return their basis. The total covers the same years
    as on-prem, so the two compare; a scenario of training workloads only, deployed in the
    cloud, rents the GPUs for the (failure-free) run only."""
    c = run.scenario.constraints
    rate = choice.usd_per_gpu_hour
    est = ", estimate" if choice.chosen.estimate else ""
    cand.cloud_annual_cost_usd = annual_usd
    cand.cloud_total_cost_usd = annual_usd * c.years
    term = term_words(choice.chosen.term)
    if choice.committed:
        how = f"{cand.gpus:,} GPUs every hour"
    basis = f"{c.years:g} years {term} ({choice.offer_id}, ${rate:.2f}/GPU-h{est}; {how})"
    if training_only(run.scenario):
        hours = max(r["time_to_train_days"] or 0.0 for r in cand.detail["workloads"]) * 24
        cand.detail["cloud_run_cost_usd"] = (cand.gpus or 0) * rate * hours
        if c.deployment == "cloud":
            cand.cloud_total_cost_usd = cand.detail["cloud_run_cost_usd"]
            basis = (f"renting {cand.gpus:,} GPUs {term} ({choice.offer_id}, ${rate:.2f}"
                     f"/GPU-h{est}) for the {hours / 24:.1f}-day failure-free training run")
    return basis


def tco_request(run: PlanRun, cand: Candidate, choice: CloudChoice | None,
                **kw: Any) -> TcoRequest:
    """The TCO request of one candidate in the policy: the scenario's server price, the
    policy's offer and the hour-by-hour rental."""
    sc = run.scenario
    server = cand.detail["server"]
    hours, _ = rented_gpu_hours(run, cand, run.cat.assumption("cluster_utilization"),
                                choice.chosen.offer.gpus if choice is not None else 1)
    return TcoRequest(server=server.id, nodes=cand.nodes or 0,
                      server_price_usd=sc.prices.server_usd.get(server.id),
                      cloud=choice.offer_id if choice is not None else None,
                      cloud_gpu_hours_per_year=hours, **kw)


def price_candidate(run: PlanRun, cand: Candidate, tp: TcoPlan,
                    choice: CloudChoice | None) -> None:
    """Fill the candidate's costs in the deployment's basis and check the budget."""
    c = run.scenario.constraints
    years = c.years
    capex, opex = tp.capex.total_usd, tp.opex.total_usd
    cand.capex_usd, cand.annual_opex_usd = capex, opex
    cand.on_prem_total_cost_usd = capex + opex * years
    cand.cost_per_gpu_hour_usd = tp.cost_per_gpu_hour()
    cloud = tp.cloud
    if cloud is not None and choice is not None:
        annual, cand.breakeven_months = chosen_annual(cloud, choice)
        hours, how = rented_gpu_hours(run, cand, tp.utilization, choice.chosen.offer.gpus)
        cloud_basis = set_cloud_cost(run, cand, choice, annual, how)
        cand.detail["cloud_cost_basis"] = cloud_basis
        cand.decisions.append(choice.decision(tp.gpus, hours, tp.utilization))
    else:
        cloud_basis = no_offer_text(run, cand.gpu)
    est = len(tp.estimates)
    on_prem_basis = (f"capex + {years:g} years of opex (energy at "
                     f"${c.electricity_usd_per_kwh:g}/kWh, PUE {c.pue:g}, colocation, support, "
                     "staff)" + (f"; {est} input{'s' if est != 1 else ''} without a primary "
                                 "source, see tco.estimates" if est else ""))
    if c.deployment == "cloud":
        cand.cost_basis = cloud_basis
        cand.total_cost_usd = cand.cloud_total_cost_usd
        if cloud is None or choice is None:
            cand.violations.append(violation("gpus", None, None, "", cloud_basis))
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


# ------------------------------------------------------------------ cost over time


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


def offers_over_time(tp: TcoPlan, choice: CloudChoice | None,
                     years: float) -> list[dict[str, Any]]:
    """Every offer renting the GPU, at each term it has, as cumulative cost by month (USD,
    months 0..12 x years as in ``cost_over_time``), the policy's choice marked."""
    months = max(1, math.ceil(years * 12))
    out = []
    for cost in ([tp.cloud] if tp.cloud else []) + list(tp.alternatives):
        o = cost.offer
        terms: list[tuple[str, float | None]] = [("on_demand", cost.on_demand_annual_usd),
                                                 (o.committed_term or "committed",
                                                  cost.committed_annual_usd)]
        for term, annual in terms:
            if annual is None:
                continue
            chosen = (choice is not None and o.id == choice.offer_id
                      and term == choice.chosen.term)
            rate = _rate(o, "on_demand" if term == "on_demand" else "committed")
            out.append({"offer": o.id, "provider": o.provider, "term": term,
                        "usd_per_gpu_hour": rate, "annual_usd": annual, "chosen": chosen,
                        "estimate": price_is_estimate(o.source),
                        "cumulative_usd": [annual * m / 12 for m in range(months + 1)]})
    return sorted(out, key=lambda s: (not s["chosen"], s["annual_usd"]))
