"""The report's headline page, bill of materials, cabling and sources sections, built from
the blueprint dict (``report/html.py`` renders them). Nothing is modelled here: the numbers
are the blueprint's, only arranged, summed for a total line, or turned into display text.

Every number that comes from the catalog carries a reference ``[n]`` to the sources
section, where the catalog entry's ``source`` and ``price_source`` are quoted.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from clusterwright.report.drawings import protocol_name
from clusterwright.report.fmt import (
    DASH,
    duration,
    energy_kwh,
    fmt,
    get,
    mapping,
    num,
    pct,
    power_mw,
    records,
    text,
    unit,
    usd,
)

# Capex and opex categories in the order a TCO sheet lists them (blueprint keys, labels).
CAPEX = (("servers", "servers"), ("network", "network switches"),
         ("optics_and_cables", "optics, cables"), ("storage", "storage"),
         ("racks_and_power", "racks, power"))
OPEX = (("energy", "energy"), ("colocation", "colocation"), ("support", "support"),
        ("staff", "staff"))
BOM_CATEGORIES = (("server", "servers"), ("storage", "storage"),
                  ("switch", "network (switches)"), ("transceiver", "optics"), ("cable", "cables"))
_URL = re.compile(r"https?://[^\s,;)\]]+")


class Refs:
    """Numbered references to the sources section: ``ref("servers", "dgx-h100")`` is the
    entry's number and anchor, or None when the blueprint cites no such entry."""

    def __init__(self, sources: list[Mapping[str, Any]]) -> None:
        self.by_key = {str(s.get("key")): i + 1 for i, s in enumerate(sources)}

    def ref(self, kind: str, entry: Any) -> dict[str, Any] | None:
        n = self.by_key.get(f"{kind}:{entry}")
        return {"n": n, "href": f"#src-{n}"} if n else None


def source_refs(bp: Mapping[str, Any]) -> Refs:
    return Refs(records(bp.get("sources")))


def capex_rows(tco: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Capex by category with its share: label, USD, share (0-1)."""
    cats = mapping(tco.get("capex_by_category_usd"))
    if not cats:  # a blueprint before 1.2: the TCO's own breakdown
        cb = mapping(tco.get("capex_breakdown_usd"))
        cats = {"servers": cb.get("servers"), "network": cb.get("network"),
                "storage": cb.get("storage"),
                "racks_and_power": (num(cb.get("racks")) or 0.0) + (num(cb.get("cooling"))
                                                                   or 0.0)}
    total = sum(num(v) or 0.0 for v in cats.values())
    return [{"label": label, "usd": usd(cats.get(k)), "value": num(cats.get(k)),
             "share": (num(cats.get(k)) or 0.0) / total if total else 0.0,
             "share_text": pct((num(cats.get(k)) or 0.0) / total, 0) if total else DASH}
            for k, label in CAPEX if k in cats]


def opex_rows(tco: Mapping[str, Any]) -> list[dict[str, Any]]:
    ob = mapping(tco.get("opex_breakdown_usd"))
    total = sum(num(v) or 0.0 for v in ob.values())
    return [{"label": label, "usd": usd(ob.get(k)), "value": num(ob.get(k)),
             "share": (num(ob.get(k)) or 0.0) / total if total else 0.0,
             "share_text": pct((num(ob.get(k)) or 0.0) / total, 0) if total else DASH}
            for k, label in OPEX if k in ob]


def _training_line(w: Mapping[str, Any]) -> dict[str, str]:
    days = num(w.get("time_to_train_days"))
    conf = mapping(w.get("confidence"))
    band = num(conf.get("band"))
    if days is not None and band is not None:
        rng = f"{fmt(days * (1 - band))}–{fmt(days * (1 + band))} days"
        why = (f"±{pct(band)} step-time band of {fmt(conf.get('rows'))} published runs "
               + ("in this regime" if conf.get("validated") else "of the nearest regime"))
    elif conf:
        rng, why = "", "outside every validated regime: no error band"
    else:
        rng, why = "", ""
    p10, p90 = num(w.get("time_to_train_days_p10")), num(w.get("time_to_train_days_p90"))
    mc = (f"with failures p10–p90 {fmt(p10)}–{fmt(p90)} days" if p10 is not None
          and p90 is not None else "")
    dl = num(w.get("deadline_days"))
    # An estimate above every published MFU is the optimistic edge of the model: said on the
    # headline, beside the number it qualifies, not only in the step-time table.
    warn = ""
    if w.get("mfu_above_published"):
        top = pct(w.get("mfu_highest_published"))
        warn = (f"MFU {pct(w.get('mfu'))} is above every published run on this GPU and "
                f"precision in validation/training.csv (highest {top}): optimistic until a "
                "measurement confirms it")
    if conf and not conf.get("validated"):
        notes = [str(n) for n in conf.get("notes") or []]
        why_not = ("no published run on this GPU" if any(n.startswith("unvalidated on ")
                                                          for n in notes)
                   else "layout family not validated on this stack")
        warn = "; ".join(x for x in (warn, why_not) if x)
    return {"name": text(w.get("name")), "warn": warn,
            "value": unit(days, "days"), "range": rng, "why": why, "mc": mc,
            "target": f"deadline {fmt(dl)} days" if dl is not None else "no deadline",
            "ok": "yes" if dl is None or (days is not None and days <= dl) else "no"}


def _engine_regime(conf: Mapping[str, Any], lean: Mapping[str, Any]) -> str:
    """How the engine's model did on the measured rows of the choice's GPU, mode and
    layout: TTFT MAPE and the range 8 rows in 10 measured in against the model, and whether
    the choice's p99s hold at the ratios one row in ten exceeds; or that no row was
    measured there."""
    if conf.get("validated") is False:
        return f"; not validated: {text(conf.get('note'))}"
    mape = num(conf.get("ttft_mape"))
    if mape is None:
        return ""
    held = ", held out: no constant fitted on them" if conf.get("held_out") else ""
    out = (f"; its {fmt(conf.get('rows'))} measured rows on {text(conf.get('gpu'))} "
           f"({text(conf.get('mode'))}{held}): TTFT MAPE {pct(mape, 0)}")
    lo, hi = num(conf.get("ttft_error_p10")), num(conf.get("ttft_error_p90"))
    if lo is not None and hi is not None and lo > -1 and hi > -1:
        out += f", 8 in 10 measured {1 / (1 + hi):.2f}–{1 / (1 + lo):.2f}× the model"
    tail = mapping(lean.get("p90"))
    if tail:
        out += ("; the p99s " + ("still meet" if tail.get("meets_slo") else "miss")
                + " the SLOs at the ratios one row in ten exceeds")
    return out


def _serving_line(w: Mapping[str, Any]) -> dict[str, str]:
    reps, per = num(w.get("replicas")), num(w.get("qps_per_replica"))
    peak = num(w.get("peak_qps"))
    cap = reps * per if reps is not None and per is not None else None
    head = (f"{(cap / peak - 1) * 100:+.0f} % headroom" if cap is not None and peak else "")
    conf = mapping(w.get("confidence"))
    if not conf:
        why = ""
    elif conf.get("stack") is None:  # engine-sized: the engine's calibration and table
        why = (f"{text(conf.get('engine'))}'s calibration; its error per row: validate "
               f"--table {text(conf.get('validation_table') or 'serving-silicon')}")
        why += _engine_regime(conf, mapping(w.get("measured_lean")))
        m = mapping(w.get("margin"))
        if m.get("kind") in ("median", "p90"):
            why += (f"; sized with the measured rows' {text(m.get('kind'))} margin (p99s x "
                    f"TTFT {fmt(m.get('ttft_ratio'))}, TPOT {fmt(m.get('tpot_ratio'))})")
    else:
        why = (f"serving calibration {conf.get('stack')} ({conf.get('engine')}); its error "
               "per row: validate --table serving")
    sp = mapping(w.get("shared_prefix"))
    if sp:
        # The capacity rests on the prefix cache's reuse, which no measured row checks
        reuse = (f", {pct(sp.get('hit_rate'))} of prompt tokens reused (simulated, not "
                 "validated)" if sp.get("hit_rate") is not None else "")
        n = sp.get("groups")
        groups = f"{fmt(n)} group{'' if n == 1 else 's'}"
        why = "; ".join(x for x in (why, f"prompts share {fmt(sp.get('tokens'))}-token "
                                    f"prefixes ({groups}){reuse}") if x)
    return {"name": text(w.get("name")),
            "value": f"{fmt(cap)} req/s" if cap is not None else DASH,
            "range": (f"{fmt(reps)} × {text(w.get('deployment'))} under "
                      f"{text(w.get('engine'))}, {head}" if w.get("engine") else
                      f"{fmt(reps)} × TP{text(w.get('tp'))} replicas, {head}").strip(", "),
            "why": why,
            "mc": (f"p99 TTFT {duration(w.get('ttft_p99_s'))} / TPOT "
                   f"{duration(w.get('tpot_p99_s'))}"),
            "target": (f"peak {fmt(peak)} req/s; SLO {duration(get(w, 'slo', 'ttft_p99_s'))} / "
                       f"{duration(get(w, 'slo', 'tpot_p99_s'))}"),
            "ok": "yes" if cap is not None and peak is not None and cap >= peak else "no"}


def headline(bp: Mapping[str, Any], training: list[Mapping[str, Any]],
             inference: list[Mapping[str, Any]]) -> dict[str, Any]:
    """The one-screen summary: what to buy, what it costs (capex and opex by category),
    how fast it trains or how much it serves with the error band, what binds."""
    rec, tco, fab = mapping(bp.get("recommendation")), mapping(bp.get("tco")), mapping(
        bp.get("fabric"))
    what = DASH
    if rec:
        what = (f"{fmt(rec.get('nodes'))} × {text(rec.get('server'))} "
                f"({fmt(rec.get('gpus'))} {text(rec.get('gpu'))} GPUs)")
    net = ""
    if fab and fab.get("backend") != "none":
        net = (f"{fmt(fab.get('tiers'))}-tier rail-optimized {protocol_name(fab)}, "
               f"{text(fab.get('switch'))}: {fmt(fab.get('leaf_switches'))} leaf / "
               f"{fmt(fab.get('spine_switches'))} spine"
               + (f" / {fmt(fab.get('core_switches'))} core" if num(fab.get("core_switches"))
                  else "") + " switches")
    elif fab:
        net = "no backend fabric (every job fits one NVLink domain)"
    binding = [str(b.get("message") or b.get("constraint")) for b in
               records(bp.get("binding_constraints"))]
    order = {"high": 0, "medium": 1}
    risks = [f"{r.get('severity')}: {r.get('title')}" for r in sorted(
        (r for r in records(bp.get("risks")) if r.get("severity") in order),
        key=lambda r: order[str(r.get("severity"))])][:4]
    money = [
        ("total cost", usd(rec.get("total_cost_usd"))),
        ("capex", usd(rec.get("capex_usd"))),
        ("opex per year", usd(rec.get("annual_opex_usd"))),
        ("cloud per year", usd(rec.get("cloud_annual_cost_usd"))),
        ("breakeven vs cloud", unit(rec.get("breakeven_months"), "months")),
        ("cost per used GPU-hour", usd(rec.get("cost_per_gpu_hour_usd"))),
    ]
    return {
        "footprint": footprint(bp),
        "feasible": bp.get("feasible"), "what": what, "network": net,
        "basis": str(rec.get("cost_basis") or ""),
        "deployment": text(rec.get("deployment")),
        "money": [(k, v) for k, v in money if v != DASH],
        "capex": capex_rows(tco) if tco else [], "opex": opex_rows(tco) if tco else [],
        "capex_total": usd(tco.get("capex_usd")), "opex_total": usd(tco.get("annual_opex_usd")),
        "perf": [_training_line(w) for w in training] + [_serving_line(w) for w in inference],
        "binding": binding, "risks": risks,
    }


def footprint(bp: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Energy and carbon in three lines: per year, per training run, the grid they assume."""
    en = mapping(bp.get("energy"))
    if not en:
        return []
    yr, g = mapping(en.get("per_year")), mapping(en.get("grid"))
    runs = records(en.get("runs"))
    lines = [
        ("energy per year (at the cost model's utilization)",
         energy_kwh(yr.get("facility_kwh"))),
        ("CO2e per year (operational + embodied)",
         unit(yr.get("total_location_based_t"), "t")),
        *((f"CO2e of {text(r.get('workload'))}",
           unit(get(r, "carbon", "total_location_based_t"), "t")) for r in runs[:2]),
        ("grid", f"{text(g.get('name'))} {text(g.get('year'))}, "
                 f"{fmt(g.get('gco2_per_kwh'))} gCO2e/kWh" if g else DASH),
    ]
    return [(k, v) for k, v in lines if v != DASH]


def bom(bp: Mapping[str, Any], refs: Refs) -> dict[str, Any]:
    """The BOM by category (quantity, total, share of capex) and line by line with unit
    price and a reference to its price source."""
    lines = records(bp.get("bom"))
    kinds = {"server": "servers", "switch": "switches", "transceiver": "transceivers",
             "cable": "cables", "storage": "storage_systems"}
    rows = []
    for b in lines:
        length = num(b.get("length_m"))
        rows.append({
            "category": text(b.get("category")), "part": text(b.get("part")),
            "name": text(b.get("name")),
            "where": " ".join(x for x in (str(b.get("network") or ""), str(b.get("role") or ""))
                              if x and x != "all"),
            "length": f"{fmt(length)} m" if length is not None else "",
            "quantity": fmt(b.get("quantity")), "unit": usd(b.get("unit_price_usd")),
            "total": usd(b.get("total_usd")),
            "estimate": b.get("price_estimate") is True,
            "ref": refs.ref(kinds.get(str(b.get("category")), ""), b.get("part")),
        })
    summary = []
    for cat, label in BOM_CATEGORIES:
        sel = [b for b in lines if b.get("category") == cat]
        if not sel:
            continue
        priced = [num(b.get("total_usd")) for b in sel if num(b.get("total_usd")) is not None]
        # A category with no priced line has no total (not $0.00); a partly priced one says so.
        cost = (DASH if not priced else usd(sum(priced))
                + (f" (+{len(sel) - len(priced)} unpriced)" if len(priced) < len(sel) else ""))
        summary.append([label, fmt(sum(num(b.get("quantity")) or 0 for b in sel)),
                        str(len(sel)), cost,
                        str(sum(1 for b in sel if b.get("price_estimate") is True))])
    total = sum(num(b.get("total_usd")) or 0.0 for b in lines)
    return {"rows": rows, "summary": summary, "total": usd(total) if lines else DASH,
            "unpriced": [r["part"] for r in rows if r["unit"] == DASH]}


def cabling(bp: Mapping[str, Any]) -> dict[str, Any]:
    """Cabling per tier: links, speed, media, cable parts, optics and length bins."""
    rows = records(get(bp, "fabric", "cabling"))
    bins: list[str] = []
    for r in rows:
        for k in mapping(r.get("length_bins")):
            if k not in bins:
                bins.append(str(k))
    out = []
    for r in rows:
        media = ", ".join(f"{k} {fmt(v)}" for k, v in mapping(r.get("media")).items())
        parts = ", ".join(f"{k} × {fmt(v)}" for k, v in mapping(r.get("cable_parts")).items())
        optics = ", ".join(f"{k} × {fmt(v)}"
                           for k, v in mapping(r.get("transceiver_parts")).items())
        lb = mapping(r.get("length_bins"))
        out.append([f"{text(r.get('tier'))} ({text(r.get('network'))})",
                    f"{fmt(r.get('links'))} × {fmt(r.get('speed_gbps'))}G", media,
                    parts or DASH, optics or DASH, *(fmt(lb.get(b, 0)) for b in bins),
                    f"{fmt(r.get('length_m_min'))}–{fmt(r.get('length_m_max'))}"])
    return {"rows": out, "bins": bins}


def sources(bp: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The sources section: each cited catalog entry, its source and price source, any
    address they hold as a link."""
    out = []
    for i, s in enumerate(records(bp.get("sources"))):
        texts = [("source", str(s.get("source") or "")),
                 ("price", str(s.get("price_source") or ""))]
        out.append({
            "n": i + 1, "kind": text(s.get("kind")), "id": text(s.get("id")),
            "name": text(s.get("name")),
            "value": fmt(s.get("value")) if num(s.get("value")) is not None else "",
            "texts": [(label, t, _URL.findall(t)) for label, t in texts if t],
        })
    return out


# Multi-site training methods in the order plan/multisite reports them, with display names.
METHODS = (("sync", "synchronous DP"), ("diloco", "DiLoCo"), ("streaming", "Streaming DiLoCo"))


def _gbps(x: Any) -> str:
    """A link rate in Gb/s, or a dash."""
    v = num(x)
    return DASH if v is None else f"{fmt(v)} Gb/s"


def _needed(need: Mapping[str, Any], target: str) -> str:
    """WAN Gb/s a site needs for ``target`` % utilization. plan/multisite gives infinity when
    latency alone rules the target out, which the blueprint's JSON carries as null."""
    if target not in need:
        return DASH
    v = num(need[target])
    return "unreachable" if v is None or v == float("inf") else f"{fmt(v)} Gb/s"


def multisite(bp: Mapping[str, Any]) -> dict[str, Any] | None:
    """The blueprint's optional ``multisite`` section (plan/scenario.py) for the report: the
    sites and their WAN links, how each training workload is split over them, and per method
    the compute utilization and the WAN Gb/s each site needs for 90/95/99 %. None when the
    blueprint has no such section (one site)."""
    ms = mapping(bp.get("multisite"))
    if not ms:
        return None
    policy = mapping(ms.get("policy"))
    chosen = str(policy.get("method") or "")
    names = dict(METHODS)
    sites = [[text(s.get("name")), power_mw(s.get("power_mw")), _gbps(s.get("wan_gbps")),
              unit(s.get("latency_ms"), "ms"), pct(s.get("loss")),
              usd(s.get("usd_per_gbps_month"))]
             for s in records(ms.get("sites"))]
    workloads = []
    for w in records(ms.get("workloads")):
        lay = mapping(w.get("layout"))
        layout = " ".join(f"{k}{lay[k]}" for k in ("tp", "pp", "dp", "cp", "ep") if k in lay)
        split = (f"{fmt(w.get('sites'))} sites x {fmt(w.get('gpus_per_site'))} "
                 f"{text(w.get('gpu'))} = {fmt(w.get('gpus'))} GPUs")
        wan = mapping(w.get("wan"))
        methods = []
        for key, name in METHODS:
            m = mapping(mapping(w.get("methods")).get(key))
            if not m:
                continue
            need = mapping(m.get("wan_gbps_needed"))
            label = name + (" (chosen)" if key == (w.get("method") or chosen) else "")
            methods.append([label, fmt(m.get("inner_steps")), fmt(m.get("bits")),
                            pct(m.get("utilization")), _needed(need, "90"),
                            _needed(need, "95"), _needed(need, "99"),
                            unit(m.get("time_to_train_days"), "days"),
                            usd(m.get("wan_cost_usd"))])
        facts = [("split", split),
                 ("GPUs per site the power allows",
                  ", ".join(fmt(x) for x in (w.get("site_capacity_gpus") or [])) or DASH),
                 ("power per site", power_mw(w.get("mw_per_site"))),
                 ("layout per site", layout or DASH),
                 ("step time", duration(w.get("step_time_s"))),
                 ("WAN link", f"{_gbps(wan.get('gbps'))}, {unit(wan.get('latency_ms'), 'ms')} "
                              f"one way; slowest site {text(wan.get('slowest_site'))}"),
                 ("method chosen", f"{names.get(str(w.get('method')), text(w.get('method')))}"
                                   f": {pct(w.get('utilization'))} compute utilization")]
        workloads.append({"name": text(w.get("name")), "model": text(w.get("model")),
                          "facts": facts, "methods": methods,
                          "validated": str(w.get("validated") or ""),
                          "notes": [str(n) for n in (w.get("notes") or [])]})
    phys = mapping(ms.get("physical"))
    physical = []
    for e in records(phys.get("sites")):
        if e.get("error"):
            physical.append([text(e.get("site")), fmt(e.get("nodes")), text(e.get("error")),
                             DASH, DASH, DASH, DASH, DASH])
            continue
        f, r, st = mapping(e.get("fabric")), mapping(e.get("racks")), mapping(e.get("storage"))
        mw = num(mapping(e.get("facility_power_kw")).get("nameplate"))
        physical.append([
            text(e.get("site")), f"{fmt(e.get('nodes'))} ({fmt(e.get('gpus'))} GPUs)",
            f"{fmt(f.get('tiers'))} tier(s), {fmt(f.get('switches_total'))} switches",
            usd(f.get("cost_usd")),
            f"{fmt(r.get('compute'))} + {fmt(r.get('network'))}",
            f"{fmt(st.get('units'))} x {text(st.get('system'))}" if st else DASH,
            power_mw(None if mw is None else mw / 1e3) + " of " + power_mw(e.get("site_power_mw")),
            "yes" if e.get("fits_site_power") else "no"])
    return {"chosen": names.get(chosen, chosen), "sites": sites,
            "workloads": workloads, "physical": physical,
            "physical_notes": [str(n) for n in (phys.get("notes") or [])],
            "policy": [("method", names.get(chosen, chosen or DASH)),
                       ("inner steps", fmt(policy.get("inner_steps"))),
                       ("bits per parameter", fmt(policy.get("bits"))),
                       ("fragments", fmt(policy.get("fragments"))),
                       ("overlap steps", fmt(policy.get("overlap_steps")))]}
