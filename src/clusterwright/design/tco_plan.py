"""TCO of a designed cluster against cloud offers: the power plan (fabric BOM, racks, IT power),
catalog prices and assumptions, and the pure cost model (``model/tco.py``).

Which prices are estimates is reported, never hidden: every assumption whose source is tagged
``[estimate]``, every network BOM part priced as one, a server price given as input or whose
catalog source is not primary, and a cloud price without a primary source are listed in
``estimates``.

Which cloud offer is compared is not decided here: the caller names it (``cloud``), and
``plan/pricing.py`` holds the policy every command uses. Without one, every offer renting
the GPU is priced as an alternative and none is chosen.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StrictStr

from clusterwright.catalog.registry import Catalog
from clusterwright.catalog.schema import CloudOffer
from clusterwright.design.bom import BomLine
from clusterwright.design.fabric import Fabric
from clusterwright.design.power_plan import (
    MAX_PUE,
    Cooling,
    PowerPlan,
    PowerRequest,
    power_plan,
)
from clusterwright.errors import InputError
from clusterwright.model import tco
from clusterwright.model.power import annual_energy_kwh, average_it_kw
from clusterwright.spec.fabric import MAX_NODES, MAX_RACK_KW, MAX_STORAGE_UNITS
from clusterwright.spec.scenario import MAX_USD_PER_KWH, MAX_YEARS

Price = Annotated[float, Field(ge=0, allow_inf_nan=False)]
MIN_YEARS = 1.0  # depreciation life on the CLI: servers depreciate over 3-6 years
MIN_UTILIZATION = 0.01  # used over installed GPU-hours (a shared cluster may run at 10 %)
MIN_TOKENS_PER_S = 1.0  # served tokens/s per GPU; below, a price per token is meaningless


class TcoRequest(BaseModel):
    """Inputs of ``ops tco``. None means the catalog default (assumptions.yaml) of that name."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    server: StrictStr
    nodes: Annotated[int, Field(gt=0, le=MAX_NODES)]
    # Scenario files pass any positive life up to their MAX_YEARS; the CLI asks MIN_YEARS.
    years: Annotated[float, Field(gt=0, le=MAX_YEARS, allow_inf_nan=False)] | None = None
    electricity_usd_per_kwh: Annotated[Price, Field(le=MAX_USD_PER_KWH)] | None = None
    pue: Annotated[float, Field(ge=1.0, le=MAX_PUE, allow_inf_nan=False)] | None = None
    # Lower bounds keep costs per unit finite: a utilization of 1e-300 made 1e300 $/GPU-hour.
    utilization: Annotated[float, Field(ge=MIN_UTILIZATION, le=1, allow_inf_nan=False)] | None \
        = None
    cloud: StrictStr | None = None  # cloud offer id (plan/pricing chooses); None = none chosen
    # GPU-hours rented on demand per year (an hour-by-hour curve); None = GPUs x 8,760 x
    # utilization
    cloud_gpu_hours_per_year: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None = None
    cooling: Cooling | None = None
    # None: the cooling mode's limit
    rack_kw: Annotated[float, Field(gt=0, le=MAX_RACK_KW, allow_inf_nan=False)] | None = None
    colocation_usd_per_kw_month: Price | None = None
    server_price_usd: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None = None
    training_gpu_hours: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None = None
    tokens_per_s_per_gpu: Annotated[float, Field(ge=MIN_TOKENS_PER_S, le=1e9,
                                                  allow_inf_nan=False)] | None = None
    # the designed storage tier's price (design/storage_plan.py); None: GPUs x the per-GPU
    # read assumption x $ per GB/s
    storage_usd: Annotated[float, Field(ge=0, allow_inf_nan=False)] | None = None
    storage_kw: Annotated[float, Field(ge=0, le=1e6, allow_inf_nan=False)] = 0.0
    # The storage tier's units the fabric wires and racks (PowerRequest's); priced by
    # storage_usd.
    storage_system: StrictStr | None = None
    storage_units: Annotated[int, Field(ge=1, le=MAX_STORAGE_UNITS)] | None = None


@dataclass(frozen=True)
class CloudCost:
    """One cloud offer priced for the same GPU count."""

    offer: CloudOffer
    instances: int
    on_demand_annual_usd: float
    committed_annual_usd: float | None
    breakeven_months: float | None  # vs on-demand at the utilization
    breakeven_months_committed: float | None

    @property
    def on_demand_usd_per_gpu_hour(self) -> float:
        return self.offer.on_demand_usd_per_hour / self.offer.gpus

    @property
    def committed_usd_per_gpu_hour(self) -> float | None:
        c = self.offer.committed_usd_per_hour
        return c / self.offer.gpus if c is not None else None

    @property
    def estimate(self) -> bool:
        """The offer's source is not a primary price list."""
        return price_is_estimate(self.offer.source)

    def as_dict(self) -> dict[str, Any]:
        o = self.offer
        return {
            "offer": o.id,
            "gpu": o.gpu,
            "instances": self.instances,
            "on_demand_usd_per_hour": o.on_demand_usd_per_hour,
            "committed_usd_per_hour": o.committed_usd_per_hour,
            "commitment": o.commitment,
            "price_date": o.price_date,
            "on_demand_annual_usd": self.on_demand_annual_usd,
            "committed_annual_usd": self.committed_annual_usd,
            "breakeven_months": self.breakeven_months,
            "breakeven_months_committed": self.breakeven_months_committed,
            "on_demand_usd_per_gpu_hour": self.on_demand_usd_per_gpu_hour,
            "committed_usd_per_gpu_hour": self.committed_usd_per_gpu_hour,
            "committed_term": o.committed_term,
            "provider": o.provider,
            "estimate": self.estimate,
            "source": o.source,
        }


@dataclass(frozen=True)
class TcoPlan:
    """Everything ``ops tco`` reports."""

    power: PowerPlan
    years: float
    utilization: float
    pue: float
    electricity_usd_per_kwh: float
    capex: tco.Capex
    opex: tco.Opex
    average_it_kw: float
    annual_energy_kwh: float
    fte: float
    cloud: CloudCost | None
    alternatives: list[CloudCost]
    inputs: dict[str, float]
    estimates: list[dict[str, Any]]
    training_gpu_hours: float | None
    tokens_per_s_per_gpu: float | None
    notes: list[str] = field(default_factory=list)
    cloud_gpu_hours_per_year: float | None = None
    # the yearly opex with every GPU busy (the energy bill at utilization 1), USD
    full_use_opex_usd: float | None = None

    @property
    def gpus(self) -> int:
        return self.power.gpus

    def cost_per_gpu_hour(self, utilization: float | None = None) -> float:
        return tco.cost_per_gpu_hour(
            self.capex.total_usd, self.years, self.opex.total_usd, self.gpus,
            self.utilization if utilization is None else utilization,
        )

    def cost_per_gpu_hour_at_full_use(self) -> float:
        """Owned USD per GPU-hour with every GPU busy, the energy bill included at that use."""
        opex = self.opex.total_usd if self.full_use_opex_usd is None else self.full_use_opex_usd
        return tco.cost_per_gpu_hour(self.capex.total_usd, self.years, opex, self.gpus, 1.0)

    def cloud_model(self) -> str:
        od = ("on-demand: used GPU-hours only (instances x rate x 8760 h x utilization)"
              if self.cloud_gpu_hours_per_year is None else
              f"on-demand: {self.cloud_gpu_hours_per_year:,.0f} GPU-hours rented per year x "
              "rate per GPU-hour")
        return (od + "; committed: every hour of the term (instances x rate x 8760 h); "
                "breakeven = capex / monthly (cloud - on-prem opex)")

    def as_dict(self) -> dict[str, Any]:
        c, o = self.capex, self.opex
        per_h = self.cost_per_gpu_hour()
        cloud = self.cloud
        out: dict[str, Any] = {
            "server": self.power.server.id,
            "nodes": self.power.nodes,
            "gpus": self.gpus,
            "years": self.years,
            "utilization": self.utilization,
            "pue": self.pue,
            "electricity_usd_per_kwh": self.electricity_usd_per_kwh,
            "capex_usd": c.total_usd,
            "capex_breakdown_usd": {
                "servers": c.servers_usd, "network": c.network_usd, "storage": c.storage_usd,
                "racks": c.racks_usd, "cooling": c.cooling_usd,
            },
            "average_it_power_kw": self.average_it_kw,
            "annual_energy_kwh": self.annual_energy_kwh,
            "annual_energy_cost_usd": o.energy_usd,
            "annual_opex_usd": o.total_usd,
            "opex_breakdown_usd": {
                "energy": o.energy_usd, "colocation": o.colocation_usd,
                "support": o.support_usd, "staff": o.staff_usd,
            },
            "staff_fte": self.fte,
            "annual_depreciation_usd": c.total_usd / self.years,
            "annual_cost_usd": c.total_usd / self.years + o.total_usd,
            "cost_per_gpu_hour_usd": per_h,
            "cost_per_gpu_hour_at_full_use_usd": self.cost_per_gpu_hour_at_full_use(),
            "cloud_annual_cost_usd": cloud.on_demand_annual_usd if cloud else None,
            "breakeven_months": cloud.breakeven_months if cloud else None,
            "breakeven_months_committed": cloud.breakeven_months_committed if cloud else None,
            "cloud": cloud.as_dict() if cloud else None,
            "cloud_alternatives": [a.as_dict() for a in self.alternatives],
            "cloud_model": self.cloud_model(),
            "energy_model": (
                "average IT kW (idle + utilization x (typical - idle)) x 8760 h x PUE; "
                "colocation on nameplate IT kW"
            ),
            "inputs": dict(self.inputs),
            "estimates": list(self.estimates),
            "notes": list(self.notes),
        }
        if self.training_gpu_hours is not None:
            out["training_run_cost_usd"] = self.training_gpu_hours * per_h
            out["training_run_cloud_cost_usd"] = (
                self.training_gpu_hours * cloud.on_demand_usd_per_gpu_hour if cloud else None
            )
        if self.tokens_per_s_per_gpu is not None:
            out["cost_per_million_tokens_usd"] = tco.cost_per_million_tokens(
                per_h, self.tokens_per_s_per_gpu
            )
            out["cloud_cost_per_million_tokens_usd"] = (
                tco.cost_per_million_tokens(
                    cloud.on_demand_usd_per_gpu_hour, self.tokens_per_s_per_gpu
                ) if cloud else None
            )
        return out


def _is_estimate(source: str) -> bool:
    return "[estimate]" in source


# Words by which a catalog source says it is not a primary price list (shared/reference tags:
# [S] secondary, [W] weak, [M] from memory; analysts' estimates; recollections).
_NOT_PRIMARY = ("[estimate]", "estimate", "[s]", "secondary", "[w]", "[weak]", "weak",
                "[m]", "recollection", "unverified", "reported", "channel quote")


def price_is_estimate(source: str | None) -> bool:
    """A price whose source is not a primary price list (missing, an estimate, secondary,
    weak or from memory): shown as an estimate wherever it is used."""
    return not source or any(w in source.lower() for w in _NOT_PRIMARY)


def rack_costs(pp: PowerPlan, value: Callable[[str], float]) -> tuple[float, float]:
    """(racks and PDUs, liquid cooling) of a power plan's racks, USD; ``value`` reads a
    catalog assumption (rack_usd, rack_pdu_usd, liquid_cooling_usd_per_rack)."""
    racks_n = pp.racks.compute_racks + pp.racks.network_racks
    racks_usd = tco.rack_capex_usd(racks_n, value("rack_usd"), value("rack_pdu_usd"))
    cooling_usd = 0.0
    if pp.cooling == "liquid":
        cooling_usd = pp.racks.compute_racks * value("liquid_cooling_usd_per_rack")
    return racks_usd, cooling_usd


def tco_plan(req: TcoRequest, cat: Catalog, fab: Fabric | None = None) -> TcoPlan:
    """Price the cluster ``req`` describes (on ``fab`` when the caller designed it already)
    and compare it with renting the same GPUs."""
    server = cat.server(req.server)
    offer = _offer(cat, req.cloud) if req.cloud is not None else None
    pp = power_plan(
        PowerRequest(server=req.server, nodes=req.nodes, cooling=req.cooling,
                     rack_kw=req.rack_kw, pue=req.pue, storage_kw=req.storage_kw,
                     storage_system=req.storage_system, storage_units=req.storage_units),
        cat, fab=fab
    )
    a = cat.assumption

    def pick(value: float | None, name: str) -> float:
        if value is not None:
            return value
        used.append(name)
        return a(name)

    # The power plan's constants that the cost depends on (not the swing's ramp, not its PUE).
    used: list[str] = [
        n for n in pp.assumptions_used
        if not n.startswith("pue_") and n != "training_power_ramp_s"
    ]
    years = pick(req.years, "depreciation_years")
    utilization = pick(req.utilization, "cluster_utilization")
    usd_kwh = pick(req.electricity_usd_per_kwh, "electricity_usd_per_kwh")
    colo = pick(req.colocation_usd_per_kw_month, "colocation_usd_per_kw_month")
    if req.pue is None:
        used.append(f"pue_{pp.cooling}")
    estimates: list[dict[str, Any]] = []
    notes: list[str] = []

    # Capex.
    if req.server_price_usd is not None:
        server_price = req.server_price_usd
        estimates.append(_estimate(f"server:{server.id}", server_price,
                                   "given as input (prices.server_usd), not a catalog price"))
    elif server.price_usd is not None:
        server_price = server.price_usd
        if price_is_estimate(server.price_source):
            estimates.append(_estimate(f"server:{server.id}", server_price,
                                       server.price_source or "no source"))
    else:
        raise InputError(
            f"prices.server_usd: the catalog has no price for server {server.id}; give one",
            field="prices.server_usd")
    bom = [b for b in pp.fabric.bom if isinstance(b, BomLine)
           and b.category not in ("server", "storage")]  # storage is priced on its own line
    unpriced = sorted({b.part for b in bom if b.unit_price_usd is None})
    if unpriced:
        notes.append(f"network parts without a catalog price, counted as 0: {', '.join(unpriced)}")
    estimates += [
        _estimate(f"network:{part}", price, src)
        for part, (price, src) in sorted({
            b.part: (b.unit_price_usd, b.price_source) for b in bom
            if b.unit_price_usd is not None and _is_estimate(b.price_source)
        }.items())
    ]
    network_usd = sum(b.total_usd or 0.0 for b in bom)
    if req.storage_usd is not None:
        storage = req.storage_usd
    else:
        storage_gbps = pick(None, "storage_aggregate_read_gbps_per_gpu")
        storage = tco.storage_capex_usd(pp.gpus, storage_gbps,
                                        pick(None, "storage_usd_per_gbps"))
    racks_usd, cooling_usd = rack_costs(pp, lambda name: pick(None, name))
    capex = tco.Capex(
        servers_usd=server_price * req.nodes, network_usd=network_usd, storage_usd=storage,
        racks_usd=racks_usd, cooling_usd=cooling_usd,
    )

    # Opex.
    avg_kw = average_it_kw(pp.power, utilization)
    energy_kwh = annual_energy_kwh(avg_kw, pp.pue)
    full_energy_usd = tco.annual_energy_cost_usd(
        annual_energy_kwh(average_it_kw(pp.power, 1.0), pp.pue), usd_kwh)
    fte = tco.staff_fte(req.nodes * server.hosts, pick(None, "staff_nodes_per_fte"),
                        pick(None, "staff_min_fte"))
    opex = tco.annual_opex(
        energy_cost_usd=tco.annual_energy_cost_usd(energy_kwh, usd_kwh),
        colocation_usd=tco.annual_colocation_usd(pp.power.nameplate_kw, colo),
        capex_usd=capex.total_usd,
        support_fraction=pick(None, "support_fraction_per_year"),
        fte=fte,
        loaded_usd_per_fte=pick(None, "staff_loaded_usd_per_year"),
    )

    # Cloud.
    same_gpu = [o for o in cat.all("clouds") if o.gpu == server.gpu]
    if offer is not None and offer.gpu != server.gpu:
        notes.append(
            f"cloud offer {offer.id} rents {offer.gpu}, not the server's {server.gpu}: "
            "compared GPU for GPU, not by throughput"
        )
    chosen = offer
    if not same_gpu and chosen is None:
        notes.append(f"no cloud offer in the catalog rents {server.gpu}")
    hours = req.cloud_gpu_hours_per_year

    def cost(o: CloudOffer) -> CloudCost:
        n = tco.instances_for(pp.gpus, o.gpus)
        od = (tco.cloud_on_demand_annual_usd(n, o.on_demand_usd_per_hour, utilization)
              if hours is None else hours * o.on_demand_usd_per_hour / o.gpus)
        com = (
            tco.cloud_committed_annual_usd(n, o.committed_usd_per_hour)
            if o.committed_usd_per_hour is not None else None
        )
        return CloudCost(
            offer=o, instances=n, on_demand_annual_usd=od, committed_annual_usd=com,
            breakeven_months=tco.breakeven_months(capex.total_usd, opex.total_usd, od),
            breakeven_months_committed=(
                tco.breakeven_months(capex.total_usd, opex.total_usd, com)
                if com is not None else None
            ),
        )

    cloud = cost(chosen) if chosen is not None else None
    alternatives = [cost(o) for o in same_gpu if chosen is None or o.id != chosen.id]
    if cloud and cloud.breakeven_months is not None and cloud.breakeven_months > 12 * years:
        notes.append(
            f"breakeven against on-demand ({cloud.breakeven_months:.0f} months) comes after the "
            f"{years:g}-year depreciation life"
        )
    if cloud is not None and cloud.estimate:
        estimates.append(_estimate(f"cloud:{cloud.offer.id}", cloud.on_demand_usd_per_gpu_hour,
                                   cloud.offer.source))
    estimates += [
        _estimate(n, cat.assumptions[n].value, cat.assumptions[n].source)
        for n in _unique(used) if _is_estimate(cat.assumptions[n].source)
    ]
    return TcoPlan(
        power=pp, years=years, utilization=utilization, pue=pp.pue,
        electricity_usd_per_kwh=usd_kwh, capex=capex, opex=opex, average_it_kw=avg_kw,
        annual_energy_kwh=energy_kwh, fte=fte, cloud=cloud, alternatives=alternatives,
        inputs={n: a(n) for n in _unique(used)}, estimates=estimates,
        training_gpu_hours=req.training_gpu_hours, tokens_per_s_per_gpu=req.tokens_per_s_per_gpu,
        notes=notes + list(pp.fabric_summary.get("notes", [])),
        cloud_gpu_hours_per_year=hours,
        full_use_opex_usd=opex.total_usd - opex.energy_usd + full_energy_usd,
    )


def _offer(cat: Catalog, offer_id: str) -> CloudOffer:
    try:
        return cat.cloud(offer_id)
    except InputError as exc:
        raise InputError(f"cloud.offer: {exc}", field="cloud.offer") from None


def _unique(names: list[str]) -> list[str]:
    return list(dict.fromkeys(names))


def _estimate(name: str, value: float, why: str, width: int = 200) -> dict[str, Any]:
    """One input that no source gave, with the start of its reasoning (the catalog has it all)."""
    why = why if len(why) <= width else why[: width - 3].rstrip() + "..."
    return {"input": name, "value": value, "why": why}

