"""The blueprint's sections built from the recommended design: racks, power, fabric, summary text,
recommendation and the facts the risk assessment reads."""

from __future__ import annotations

from typing import Any

from clusterwright.catalog.registry import Catalog
from clusterwright.design.blueprint import (
    Candidate,
    DesignFacts,
    InferenceFacts,
    Violation,
)
from clusterwright.design.fabric_tables import (
    bom_rows,
    cabling_rows,
    capex_by_category,
    shape_dict,
)
from clusterwright.plan.design import DesignedCluster
from clusterwright.plan.pricing import cost_over_time, offers_over_time, tco_dict
from clusterwright.report.fmt import usd
from clusterwright.spec.scenario import (
    Scenario,
)


def row_letter(i: int) -> str:
    s = ""
    i += 1
    while i:
        i, r = divmod(i - 1, 26)
        s = chr(65 + r) + s
    return s


def racks_view(d: DesignedCluster, cat: Catalog) -> list[dict[str, Any]]:
    """Racks with their devices in rack-unit order (the report's elevations)."""
    fab = d.fab
    by_name = {dev.name: dev for dev in fab.devices}
    net_ratio = d.power.summary.typical_power_ratio
    typ = cat.assumption("server_typical_power_fraction")
    out = []
    for r in fab.racks:
        devs = sorted((by_name[n] for n in r.devices if n in by_name), key=lambda x: x.rack_u)
        role = r.kind if r.kind in ("compute", "network") else "network"
        if any(x.role == "storage" for x in devs):
            role = "storage"
        kw = r.power_w / 1e3
        out.append({
            "name": r.name, "row": row_letter(r.row), "position": r.position + 1,
            "role": role, "cooling": r.cooling, "units": r.units, "used_units": r.used_units,
            "kw_nameplate": kw, "kw_typical": kw * (typ if r.kind == "compute" else net_ratio),
            "devices": [{"name": x.name, "role": x.role, "part": x.part, "u": x.rack_u,
                         "height_u": x.units} for x in devs],
        })
    return out


def power_view(d: DesignedCluster) -> dict[str, Any]:
    out = d.power.as_dict()
    p = d.power
    out.update({
        "it_power_kw_typical": p.power.typical_kw,
        "it_power_kw_nameplate": p.power.nameplate_kw,
        "facility_power_kw_typical": p.power.typical_kw * p.pue,
        "swing_mw": p.swing.swing_mw,
        "rack_limit_kw": p.racks.limit_kw,
        "densest_rack_kw": max(p.racks.compute_max_kw, p.racks.network_max_kw),
    })
    return out


def fabric_view(d: DesignedCluster, cat: Catalog) -> dict[str, Any]:
    """The fabric summary, plus what the drawings and tables read: the fat tree's shape
    (one scalable unit, one pod) and the cabling per tier."""
    out = d.power.summary.blueprint_dict()
    out["shape"] = shape_dict(d.fab)
    out["cabling"] = cabling_rows(d.fab, cat)
    return out


def bom_view(d: DesignedCluster) -> list[dict[str, Any]]:
    """The recommendation's bill of materials, line by line, with each price's source."""
    return bom_rows(d.fab)


def sources_view(d: DesignedCluster | None, cand: Candidate, cat: Catalog,
                 tco: dict[str, Any] | None, energy: dict[str, Any] | None = None
                 ) -> list[dict[str, Any]]:
    """Every catalog entry a number of the blueprint comes from, with its source and price
    source: the GPU, server, NICs, switches, optics and cables on the BOM, the cloud offers
    priced, the models and software stacks of the workloads, the storage system, the grid
    region of the carbon figures, and the TCO's assumptions."""
    keys: list[tuple[str, str]] = [("gpus", cand.gpu)]
    if cand.server:
        keys.append(("servers", cand.server))
    if d is not None:
        srv = d.fab.server
        keys += [("nics", n) for n in (srv.backend_nics.nic, srv.frontend_nics.nic) if n]
        for b in d.fab.bom:
            kind = {"switch": "switches", "transceiver": "transceivers",
                    "cable": "cables"}.get(getattr(b, "category", ""))
            if kind:
                keys.append((kind, b.part))  # type: ignore[attr-defined]
    for w in cand.detail.get("workloads", []):
        if w.get("model"):
            keys.append(("models", w["model"]))
        if w.get("stack"):
            keys.append(("stacks", w["stack"]))
    for o in ((tco or {}).get("pricing") or {}).get("considered") or []:
        keys.append(("clouds", o["offer"]))
    if d is not None and d.storage is not None:
        keys.append(("storage_systems", d.storage.system.id))
    if energy and isinstance(energy.get("grid"), dict):
        keys.append(("grid_regions", str(energy["grid"].get("region"))))
    out: list[dict[str, Any]] = []
    seen: set[tuple[str, str]] = set()
    for kind, entry in keys:
        if (kind, entry) in seen or entry not in cat.entries.get(kind, {}):
            continue
        seen.add((kind, entry))
        e = cat.get(kind, entry)
        out.append({"key": f"{kind}:{entry}", "kind": kind, "id": entry,
                    "name": getattr(e, "name", None) or entry,
                    "source": getattr(e, "source", None),
                    "price_source": getattr(e, "price_source", None)})
    for name in ((tco or {}).get("inputs") or {}):
        if name in cat.assumptions:
            a = cat.assumptions[name]
            out.append({"key": f"assumptions:{name}", "kind": "assumptions", "id": name,
                        "name": name.replace("_", " "), "source": a.source,
                        "price_source": None, "value": a.value})
    return out


def _with_failures(rel: dict[str, Any] | None, name: str) -> str:
    """What the Monte Carlo says of the run's time beside the production figure (which
    assumes a failed node is replaced at once): with the design's spare servers and, when
    more are recommended, with those. Empty without a reliability view of this workload."""
    if not rel or rel.get("workload") != name:
        return ""
    mc = (rel.get("monte_carlo") or {}).get("time_to_train_days") or {}
    rec = rel.get("with_recommended_spares") or {}
    have, want = rel.get("hot_spares") or 0, rel.get("recommended_spares")
    if mc.get("p50") is None:
        return ""
    # The Monte Carlo counts spares in hosts (an NVL72 rack is 18): its unit, named so.
    spares = ("no spare node" if not have else
              f"its {have} spare node{'' if have == 1 else 's'}")
    text = f"; with failures (Monte Carlo) p50 {mc['p50']:.1f} days with {spares}"
    p50 = (rec.get("time_to_train_days") or {}).get("p50")
    if want is not None and want > have and p50 is not None:
        text += f", {p50:.1f} days with the {want} recommended (cluster.spares)"
    return text


def summary_text(sc: Scenario, cand: Candidate, feasible: bool, binding: list[Violation],
                  alternatives: list[dict[str, Any]],
                  multisite: dict[str, Any] | None = None,
                  reliability: dict[str, Any] | None = None) -> str:
    c = sc.constraints
    rows = cand.detail.get("workloads", [])
    split = {w["name"]: w for w in (multisite or {}).get("workloads", []) if "error" not in w}
    parts = []
    for r in rows:
        if r["kind"] == "training":
            days = r["time_to_train_days"]
            line = (f"{r['name']} trains {r['model']} on {r['gpus']:,} GPUs in {days:.1f} days"
                    if days is not None else f"{r['name']} on {r['gpus']:,} GPUs")
            m = split.get(r["name"])
            if m is not None and days is not None:
                # The single-site figure is one fabric's synchronous run; the scenario's
                # sites run the multisite method, which the headline must not hide.
                across = (m.get("methods") or {}).get(m.get("method"), {})
                if across.get("time_to_train_days") is not None:
                    line += (f" as one site; across its {m['sites']} sites ({m['method']}, "
                             f"{100 * m['utilization']:.0f} % compute utilization): "
                             f"{across['time_to_train_days']:.1f} days (multisite)")
            if r.get("mfu_above_published") and r.get("mfu_highest_published") is not None:
                line += (f" (MFU {100 * r['mfu']:.0f} %, above every published run on "
                         f"{r['gpu']} at this precision, {100 * r['mfu_highest_published']:.0f} "
                         "%: optimistic)")
            if days is not None:
                # The production time replaces a failed node at once; the fleet model
                # waits for repairs when there are no spares, which the headline must show.
                line += _with_failures(reliability, r["name"])
            parts.append(line)
        elif r["kind"] == "inference":
            what = (f"({r['deployment']}) under {r['engine']}" if r.get("engine")
                    else f"TP{r['tp']} replicas")
            parts.append(f"{r['name']} serves {r['peak_qps']:g} req/s with {r['replicas']} x "
                         f"{what} ({r['gpus']} GPUs)")
        else:
            parts.append(f"{r['name']} runs {r['gpu_hours']:,.0f} GPU-hours on the "
                         f"{r['runs_on']}")
    where = (f"{cand.nodes:,} x {cand.server} ({cand.gpus:,} {cand.gpu} GPUs)"
             if cand.nodes else f"{cand.gpu}")
    head = (f"Recommended: {where}" if feasible else
            f"No design meets every constraint; the nearest is {where}")
    cost = ""
    if cand.total_cost_usd is not None:
        cost = f", {usd(cand.total_cost_usd)} ({cand.cost_basis})"
    text = head + cost + ". " + ("; ".join(parts) + ". " if parts else "")
    if c.deployment == "compare" and cand.cloud_total_cost_usd is not None \
            and cand.on_prem_total_cost_usd is not None:
        cheaper = "on-prem" if cand.on_prem_total_cost_usd <= cand.cloud_total_cost_usd \
            else "cloud"
        be = (f"; on-prem breaks even after {cand.breakeven_months:.0f} months"
              if cand.breakeven_months is not None else "")
        text += (f"Cloud alternative: {usd(cand.cloud_total_cost_usd)}; {cheaper} is cheaper "
                 f"over this horizon{be}. ")
    ok_alts = [a for a in alternatives if a["feasible"]]
    if feasible and ok_alts:
        a = min(ok_alts, key=lambda a: a["total_cost_usd"])
        text += f"Runner-up {a['gpu']}: {a['why_not']}. "
    elif feasible and alternatives:
        text += "Every other GPU breaks a constraint (see alternatives). "
    if not feasible:
        text += "Binding: " + "; ".join(v.message for v in binding) + "."
    return text.strip()


def recommendation_view(sc: Scenario, cand: Candidate, feasible: bool, binding: list[Violation],
                    alternatives: list[dict[str, Any]],
                    multisite: dict[str, Any] | None = None,
                    reliability: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "summary": summary_text(sc, cand, feasible, binding, alternatives, multisite,
                                reliability),
        "gpu": cand.gpu, "server": cand.server, "nodes": cand.nodes, "gpus": cand.gpus,
        "deployment": "cloud" if sc.constraints.deployment == "cloud" else "on-prem",
        "capex_usd": cand.capex_usd if sc.constraints.deployment != "cloud" else None,
        "annual_opex_usd": cand.annual_opex_usd,
        "cloud_annual_cost_usd": cand.cloud_annual_cost_usd,
        "cloud_total_cost_usd": cand.cloud_total_cost_usd,
        "on_prem_total_cost_usd": cand.on_prem_total_cost_usd,
        "breakeven_months": cand.breakeven_months,
        "total_cost_usd": cand.total_cost_usd,
        "cost_basis": cand.cost_basis,
        "cost_per_gpu_hour_usd": cand.cost_per_gpu_hour_usd,
        "cloud_training_run_cost_usd": cand.detail.get("cloud_run_cost_usd"),
    }


def design_facts(sc: Scenario, cand: Candidate, d: DesignedCluster | None,
           rel_out: dict[str, Any] | None) -> DesignFacts:
    c = sc.constraints
    rows = cand.detail.get("workloads", [])
    inf = tuple(InferenceFacts(r["name"], r["replicas"], r["peak_qps"],
                               r["replicas"] * r["qps_per_replica"])
                for r in rows if r["kind"] == "inference")
    train = [r for r in rows if r["kind"] == "training" and r.get("deadline_days")]
    p90 = train[0]["time_to_train_days_p90"] if train else None
    # Pool jobs whose deadline's windows the pool's free GPUs cannot fill: GPUs were added.
    misses = tuple(r["name"] for r in rows if r["kind"] == "finetune"
                   and r.get("windows") is not None and r.get("extra_gpus"))
    if d is None:
        return DesignFacts(gpus=cand.gpus or 0, inference=inf, budget_usd=c.budget_usd,
                           total_cost_usd=cand.total_cost_usd, finetune_misses_window=misses)
    s = d.power.summary
    p = d.power
    on_prem = c.deployment != "cloud"
    return DesignFacts(
        gpus=cand.gpus or 0,
        densest_rack_kw=max(p.racks.compute_max_kw, p.racks.network_max_kw) if on_prem else None,
        rack_limit_kw=c.power_per_rack_kw if on_prem else None,
        cooling=d.cooling,
        cooling_cap_kw=d.power.checks[d.cooling].limit_kw if d.cooling in d.power.checks else None,
        interruptions_per_day=rel_out["expected_interruptions_per_day"] if rel_out else None,
        job_mtbf_hours=rel_out["job_mtbf_hours"] if rel_out else None,
        leaf_oversubscription=s.leaf_oversubscription,
        spine_oversubscription=s.spine_oversubscription,
        tiers=s.tiers, spine_switches=s.spine_switches, core_switches=s.core_switches,
        storage_ports=s.frontend.storage_ports if on_prem else None,
        storage_links_unresolved=s.frontend.storage_links_unresolved if on_prem else 0,
        storage_system=s.frontend.storage_system, frontend_switch=s.frontend.switch,
        frontend_spines=s.frontend.spine_switches if on_prem else None,
        inference=inf,
        total_cost_usd=(cand.capex_usd if on_prem else cand.total_cost_usd),
        budget_usd=c.budget_usd,
        on_prem_total_cost_usd=cand.on_prem_total_cost_usd if on_prem else None,
        cloud_total_cost_usd=cand.cloud_total_cost_usd if on_prem else None,
        deadline_days=train[0]["deadline_days"] if train else None,
        time_to_train_p90_days=p90,
        swing_mw=p.swing.swing_mw if any(r["kind"] == "training" for r in rows) and on_prem
        else None,
        finetune_misses_window=misses,
        estimated_prices=len(d.tco.estimates) if d.tco is not None else 0,
        **_reliability_facts(rel_out),
        **_pfc_facts(s.pfc),
    )


def _reliability_facts(rel_out: dict[str, Any] | None) -> dict[str, Any]:
    """The reliability numbers the risks are judged on (None when there is no training job)."""
    if not rel_out:
        return {}
    mc = rel_out.get("monte_carlo") or {}
    alt = rel_out.get("with_recommended_spares") or {}
    return {
        "rate_basis": rel_out.get("rate_basis", ""),
        "job_gpus": rel_out.get("gpus"),
        "hot_spares": rel_out.get("hot_spares"),
        "spare_wait_hours": (mc.get("spare_wait_hours") or {}).get("mean"),
        "recommended_spares": rel_out.get("recommended_spares"),
        "ettr": rel_out.get("ettr"),
        "ettr_with_recommended_spares": alt.get("ettr"),
    }


def _pfc_facts(pfc: dict[str, Any] | None) -> dict[str, Any]:
    """DesignFacts' lossless-Ethernet fields from the fabric summary's ``pfc``."""
    w = (pfc or {}).get("worst_switch")
    if not pfc or pfc.get("protocol") != "ethernet" or not w:
        return {}
    share = w["headroom_bytes"] / w["buffer_bytes"] if w.get("buffer_bytes") else None
    return {"lossless_priorities": pfc["lossless_priorities"],
            "lossless_priorities_fit": w["priorities_that_fit"],
            "pfc_buffer_share": share, "pfc_switches_short": pfc["switches_short_count"],
            "pfc_worst_switch": w["name"]}


def tco_view(d: DesignedCluster, years: float) -> dict[str, Any] | None:
    if d.tco is None:
        return None
    out = tco_dict(d.tco, d.cloud)
    cl = d.tco.cloud
    out["cost_over_time"] = cost_over_time(
        d.tco.capex.total_usd, d.tco.opex.total_usd,
        cl.on_demand_annual_usd if cl else None, cl.committed_annual_usd if cl else None, years)
    out["cloud_offers_over_time"] = offers_over_time(d.tco, d.cloud, years)
    out["cloud_cost_basis"] = d.cloud_basis or None
    # What the what-if re-pricing reads: the GPU-hours rented on demand a year when a
    # diurnal curve sets them (None: GPUs x 8,760 h x utilization), and capex by category.
    out["cloud_gpu_hours_per_year"] = d.tco.cloud_gpu_hours_per_year
    c = d.tco.capex
    out["capex_by_category_usd"] = capex_by_category(
        bom_rows(d.fab), c.servers_usd, c.storage_usd, c.racks_usd, c.cooling_usd)
    return out
