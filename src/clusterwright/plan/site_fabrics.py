"""Each site's own physical plan when a training job is split across sites (issue 22: "sites
with their own fabrics joined by WAN links").

The planner designs one cluster (its fabric, racks, power and TCO) and ``plan/multisite`` splits
the largest training job over the scenario's sites. A site is a building of its own: its
fabric, racks and storage are built there and its power is drawn from its own feed. So each
site is designed here as the designer designs any cluster (``design/bom.plan_fabric`` on the
same request), with its share of the servers, its own storage tier and its own slice of every
address pool (so the sites' frontends and management networks can be routed to each other
over the WAN), and its power plan is checked against the site's megawatts.

What is not designed: the WAN edge (border routers, DCI optics and the carrier circuits the
scenario prices per Gb/s-month). The blueprint's top-level fabric, BOM and TCO stay the one
cluster's; the ``physical`` part of the ``multisite`` section says what the sites build
instead and what it costs against the one fabric.
"""

from __future__ import annotations

import ipaddress
import math
from dataclasses import dataclass, field
from typing import Any

from clusterwright.design.bom import plan_fabric
from clusterwright.design.fabric import Fabric
from clusterwright.design.fabric_summary import fabric_summary
from clusterwright.design.power_plan import PowerRequest, power_plan
from clusterwright.design.tco_plan import rack_costs
from clusterwright.errors import ClusterwrightError
from clusterwright.plan.context import PlanRun
from clusterwright.plan.design import DesignedCluster
from clusterwright.spec.fabric import AddressPools


@dataclass
class SitePlans:
    """Per site: the physical plan's summary (the blueprint's ``multisite.physical``) and the
    designed fabric whose IaC ``plan --out`` writes under ``sites/<name>/``."""

    physical: dict[str, Any] | None = None
    fabrics: dict[str, Fabric] = field(default_factory=dict)


def site_pools(pools: AddressPools, index: int, sites: int) -> AddressPools:
    """Site ``index``'s slice of every pool: each pool split into the fewest equal subnets
    that give every site one (so no two sites share an address)."""
    bits = max(0, math.ceil(math.log2(sites))) if sites > 1 else 0

    def part(cidr: str) -> str:
        net = ipaddress.IPv4Network(cidr)
        if net.prefixlen + bits > 32:
            return cidr  # cannot be split; the addressing plan says if it is too small
        return str(list(net.subnets(prefixlen_diff=bits))[index])

    return AddressPools(**{k: part(v) for k, v in pools.model_dump().items()})


def site_nodes(total: int, gpus_per_site: int, gpus_per_server: int, sites: int) -> list[int]:
    """Servers per site: the job's share of each site, and the cluster's other servers
    (spares, other workloads) spread one by one from the first site."""
    base = [gpus_per_site // gpus_per_server] * sites
    extra = max(0, total - sum(base))
    for i in range(extra):
        base[i % sites] += 1
    return base


def design_sites(run: PlanRun, d: DesignedCluster, multisite: dict[str, Any]) -> SitePlans:
    """Each scenario site's fabric, racks, storage and power for the largest training job
    split over the sites (``multisite``: ``plan/scenario.multisite_view``); an empty plan when
    no job was split. A site the designer cannot build (or whose power does not hold its
    plan) is reported with its reason, never dropped."""
    split = [w for w in multisite.get("workloads", []) if "error" not in w]
    if not split:
        return SitePlans()
    job = max(split, key=lambda w: int(w["gpus"]))
    sites = run.scenario.sites
    fab = d.fab
    srv = fab.server
    n = len(sites)
    counts = site_nodes(fab.request.nodes, int(job["gpus_per_site"]), srv.gpus, n)
    one = fabric_summary(fab)
    tier = d.storage
    out: list[dict[str, Any]] = []
    fabrics: dict[str, Fabric] = {}
    reused: list[str] = []
    for i, (site, nodes) in enumerate(zip(sites, counts, strict=True)):
        share = nodes / max(1, fab.request.nodes)
        update: dict[str, Any] = {"nodes": nodes, "pools": site_pools(fab.request.pools, i, n)}
        units = 0
        if tier is not None and fab.request.storage_units:
            # Each site reads its data and writes its checkpoints locally: its share of the
            # tier, at least the system's smallest redundant deployment.
            units = max(tier.system.min_units, math.ceil(tier.units * share))
            update["storage_units"] = units
        if fab.request.storage_tier_gbps is not None:
            update["storage_tier_gbps"] = fab.request.storage_tier_gbps * share
        entry: dict[str, Any] = {"site": site.name, "nodes": nodes, "gpus": nodes * srv.gpus,
                                 "site_power_mw": site.power_mw}
        try:
            try:
                sf = plan_fabric(fab.request.model_copy(update=update), run.cat)
            except ClusterwrightError as exc:
                if not str(getattr(exc, "field", "") or "").startswith("pools"):
                    raise
                # A slice too small for the site: the scenario's whole pools, said so.
                update["pools"] = fab.request.pools
                sf = plan_fabric(fab.request.model_copy(update=update), run.cat)
                reused.append(site.name)
            storage_kw = units * tier.system.power_w / 1e3 if tier is not None and units else 0.0
            pp = power_plan(PowerRequest(
                server=srv.id, nodes=nodes, cooling=d.cooling, rack_kw=fab.request.rack_kw,
                pue=run.scenario.constraints.pue, storage_kw=storage_kw), run.cat, fab=sf)
        except ClusterwrightError as exc:
            entry["error"] = f"{site.name}: the site's plan cannot be designed ({exc})"
            out.append(entry)
            continue
        s = fabric_summary(sf)
        power = pp.as_dict()
        racks_usd = sum(rack_costs(pp, run.cat.assumption))
        storage_usd = (units * tier.system.price_usd
                       if tier is not None and units and tier.system.price_usd is not None
                       else 0.0)
        facility = power["facility_power_kw"]["nameplate"]
        entry.update({
            "fabric": {"tiers": s.tiers, "leaf_switches": s.leaf_switches,
                       "spine_switches": s.spine_switches, "core_switches": s.core_switches,
                       "switches_total": s.switches_total, "links_total": s.links_total,
                       "transceivers": s.transceivers, "cables": s.cables,
                       "cost_usd": s.cost_usd, "power_w": s.power_w},
            "racks": {"compute": s.racks_compute, "network": s.racks_network},
            "storage": ({"system": tier.system.id, "units": units}
                        if tier is not None and units else None),
            "it_power_kw": power["it_power_kw"],
            "facility_power_kw": power["facility_power_kw"],
            "fits_site_power": facility <= site.power_mw * 1e3,
            # What the site adds to the servers' price, priced as the TCO prices them (USD)
            "capex_usd": {"network": s.cost_usd, "storage": storage_usd,
                          "racks_and_power": racks_usd},
            "configs": f"sites/{site.name}/",
        })
        fabrics[site.name] = sf
        out.append(entry)
    built = [e for e in out if "fabric" in e]
    sites_cost = sum(e["fabric"]["cost_usd"] for e in built)
    per_site = ", ".join(f"{e['site']}: {e['nodes']:,}" for e in out)
    sign = "+" if sites_cost >= one.cost_usd else "-"
    notes = [
        f"each site is designed on its own ({per_site} x {srv.id}), its IaC under "
        f"sites/<name>/; the blueprint's fabric, BOM and TCO are one fabric of all "
        f"{fab.request.nodes:,} servers ({one.tiers} tier(s), {one.switches_total:,} switches, "
        f"${one.cost_usd:,.0f}); the sites' fabrics together have "
        f"{sum(e['fabric']['switches_total'] for e in built):,} switches and cost "
        f"${sites_cost:,.0f} ({sign}${abs(sites_cost - one.cost_usd):,.0f})",
        "not designed: the WAN edge (border routers, DCI optics; the carrier circuits are "
        "priced per Gb/s-month in each method's WAN cost); device names and private ASNs "
        "repeat from site to site (each site a routing domain of its own behind that edge)",
    ]
    split_ok = [e["site"] for e in built if e["site"] not in reused]
    if split_ok:
        notes.append(f"{', '.join(split_ok)}: each site's addresses come from its own slice "
                     f"of every pool, so the sites route to each other without renumbering")
    units = sum((e["storage"] or {}).get("units", 0) for e in built)
    if tier is not None and units and units != tier.units:
        price = tier.system.price_usd
        extra = (units - tier.units) * price if price is not None else None
        more = ("" if extra is None else
                f", {'+' if extra >= 0 else '-'}${abs(extra):,.0f} of storage")
        notes.append(f"storage: {units} x {tier.system.id} across the sites (each its share, at "
                     f"least the system's {tier.system.min_units}) against the one tier's "
                     f"{tier.units}{more}, not in the TCO")
    if reused:
        notes.append(f"{', '.join(reused)}: a 1/{2 ** math.ceil(math.log2(n))} slice of "
                     f"the default address pools is too small for the site's servers, so it "
                     f"uses the whole pools, as the other sites may: their frontend and "
                     f"management subnets overlap, and routing them to each other over the "
                     f"WAN needs NAT or per-site pools (the designer's FabricRequest.pools, "
                     f"not a scenario field)")
    over = [e for e in built if not e["fits_site_power"]]
    for e in over:
        notes.append(f"{e['site']}: its plan draws {e['facility_power_kw']['nameplate'] / 1e3:.2f}"
                     f" MW at nameplate with PUE, over the site's {e['site_power_mw']:g} MW")
    # Rented GPUs have no capex of their own to compare (the TCO prices a cloud offer).
    capex = _capex(d, built) if run.scenario.constraints.deployment != "cloud" else None
    if capex is not None:
        notes.append(
            f"capex with each site built on its own: ${capex['sites_usd']:,.0f} against the "
            f"TCO's ${capex['one_site_usd']:,.0f} for one site "
            f"({'+' if capex['sites_usd'] >= capex['one_site_usd'] else '-'}"
            f"${abs(capex['sites_usd'] - capex['one_site_usd']):,.0f}: the same servers; "
            f"network, storage, racks and power per site)")
    physical = {"workload": job["name"], "sites": out, "capex": capex,
                "one_fabric": {"nodes": fab.request.nodes, "tiers": one.tiers,
                               "switches_total": one.switches_total, "cost_usd": one.cost_usd},
                "sites_fabric_cost_usd": sites_cost, "notes": notes}
    return SitePlans(physical, fabrics)


def _capex(d: DesignedCluster, built: list[dict[str, Any]]) -> dict[str, float] | None:
    """The TCO's capex with its network, storage and racks replaced by the sites' (USD); None
    without a TCO (a cloud deployment) or when a site could not be designed."""
    if d.tco is None or not built or any("capex_usd" not in e for e in built):
        return None
    c = d.tco.capex
    sites = {k: sum(e["capex_usd"][k] for e in built)
             for k in ("network", "storage", "racks_and_power")}
    # The TCO's storage line may carry a RAG tier's index servers beside the storage units:
    # they stay as priced.
    if any(e["storage"] for e in built):
        units_usd = d.storage.price_usd if d.storage is not None else None
        storage = sites["storage"] + max(0.0, c.storage_usd - (units_usd or 0.0))
    else:
        storage = c.storage_usd  # a tier not built per site (no ports of its own): as priced
        sites["storage"] = storage
    total = c.servers_usd + sites["network"] + storage + sites["racks_and_power"]
    return {"sites_usd": total, "one_site_usd": c.total_usd,
            "network_usd": sites["network"], "storage_usd": sites["storage"],
            "racks_and_power_usd": sites["racks_and_power"], "servers_usd": c.servers_usd}
