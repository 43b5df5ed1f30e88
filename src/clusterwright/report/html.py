"""The human report: one self-contained, offline HTML page rendered from a blueprint dict.

The page reads top to bottom: recommendation and cost (or which constraint binds), the
alternatives and why they lost, topology, racks, step time, latency against load, cost over
time, failures and checkpoints, power, risks. Plotly's JavaScript comes from the installed
``plotly`` package and is embedded once; the SVGs are drawn here. Nothing is recomputed: every
number shown is a number of the blueprint (layer 6 reads, it does not model). Every value from
the user is escaped by Jinja2's autoescape.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from clusterwright.report import drawings, figures, sections, svg
from clusterwright.report.files import atomic_file
from clusterwright.report.fmt import (
    DASH,
    duration,
    energy_kwh,
    first_num,
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

_END_SCRIPT = re.compile(r"</(script)", re.IGNORECASE)
SEVERITY_ORDER = {"high": 0, "medium": 1, "low": 2}
BY_ROW_ABOVE = 60  # racks: more get a per-row summary above the full list
Row = list[Any]


@functools.cache
def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("clusterwright.report", "templates"),
        undefined=jinja2.StrictUndefined,
        autoescape=True,  # scenario and workload names are user input
        trim_blocks=True,
        lstrip_blocks=True,
    )


@functools.cache
def _plotly_js() -> Markup:
    from plotly.offline import get_plotlyjs  # type: ignore[import-untyped]

    js: str = get_plotlyjs()
    # A "</script" inside the bundle would end the script element early (none in plotly 5-7;
    # a regex, as str.lower() of the 4.8 MB non-ASCII bundle costs ten times more).
    return Markup(_END_SCRIPT.sub(r"<\\/\1", js))


def render_report(blueprint: dict[str, Any], path: Path) -> None:
    """Write the report of ``blueprint`` (the ``blueprint.json`` dict) to ``path`` (HTML).

    The file is written next to ``path`` and moved into place, so a reader never sees half a
    page. Sections without data say "not applicable" instead of failing."""
    page = render_html(blueprint)
    with atomic_file(Path(path), ".html") as tmp:
        Path(tmp).write_text(page, encoding="utf-8")


def render_html(blueprint: Mapping[str, Any]) -> str:
    """The report page of ``blueprint`` as a string (UTF-8 HTML, about 5 MB with plotly.js)."""
    bp = mapping(blueprint)
    workloads = records(bp.get("workloads"))
    training = [w for w in workloads if w.get("kind") == "training"]
    inference = [w for w in workloads if w.get("kind") == "inference"]
    racks = records(bp.get("racks"))
    limit_kw = _rack_limit(bp)
    refs = sections.source_refs(bp)
    ctx: dict[str, Any] = {
        "scenario": _scenario(bp),
        "plotly_js": _plotly_js(),
        "head": sections.headline(bp, training, inference),
        "s1": _recommendation(bp, workloads),
        "s2": _alternatives(bp),
        "s3": _topology(bp),
        "bom": sections.bom(bp, refs),
        "cabling": sections.cabling(bp),
        "sources": sections.sources(bp),
        "s4": _racks(racks, limit_kw),
        "s5": _training(training),
        "multisite": sections.multisite(bp),
        "s6": _inference(inference),
        "s7": _cost(bp),
        "s8": _reliability(bp, training),
        "s9": _power(bp, racks, limit_kw),
        "storage": _storage(bp),
        "energy": _energy(bp),
        "s10": _risks(bp),
        "footer": _footer(bp),
    }
    return _environment().get_template("report.html.j2").render(**ctx)


# ------------------------------------------------------------------ header and section 1


def _scenario(bp: Mapping[str, Any]) -> dict[str, Any]:
    sc = mapping(bp.get("scenario"))
    return {
        "name": str(sc.get("name") or "unnamed scenario"),
        "description": str(sc.get("description") or ""),
        "seed": sc.get("seed"),
        "source": sc.get("source"),
        "feasible": bp.get("feasible"),
    }


def _binding_rows(bp: Mapping[str, Any]) -> list[dict[str, str]]:
    rows = []
    for b in records(bp.get("binding_constraints")):
        u = str(b.get("unit") or "")
        excess = num(b.get("excess_fraction"))
        limit, needed = num(b.get("limit")), num(b.get("needed"))
        if excess is None and limit and needed is not None:
            excess = needed / limit - 1.0  # display only: how far over the limit
        rows.append({
            "constraint": text(b.get("constraint")),
            "workload": text(b.get("workload")) if b.get("workload") else "all",
            "limit": f"{fmt(limit)} {u}".strip() if limit is not None else DASH,
            "needed": f"{fmt(needed)} {u}".strip() if needed is not None else DASH,
            "excess": f"{excess * 100:+.0f} %" if excess is not None else DASH,
            "message": str(b.get("message") or ""),
        })
    return rows


def _recommendation(bp: Mapping[str, Any], workloads: list[Mapping[str, Any]]) -> dict[str, Any]:
    rec = mapping(bp.get("recommendation"))
    binding = _binding_rows(bp)
    facts: list[tuple[str, str]] = []
    if rec:
        facts = [
            ("GPU", text(rec.get("gpu"))), ("server", text(rec.get("server"))),
            ("nodes", fmt(rec.get("nodes"))), ("GPUs", fmt(rec.get("gpus"))),
            ("deployment", text(rec.get("deployment"))),
            ("total cost", usd(rec.get("total_cost_usd"))),
            ("capex", usd(rec.get("capex_usd"))),
            ("annual opex", usd(rec.get("annual_opex_usd"))),
            ("cloud, per year", usd(rec.get("cloud_annual_cost_usd"))),
            ("breakeven vs cloud", unit(rec.get("breakeven_months"), "months")),
            ("cost per GPU-hour", usd(rec.get("cost_per_gpu_hour_usd"))),
        ]
        facts = [(k, v) for k, v in facts if v != DASH]
    return {
        "feasible": bp.get("feasible"),
        "binding": binding,
        "binding_table": [[b["constraint"], b["workload"], b["limit"], b["needed"], b["excess"]]
                          for b in binding],
        "summary": str(rec.get("summary") or ""),
        "cost_basis": str(rec.get("cost_basis") or ""),
        "facts": facts,
        "workloads": [_workload_row(w) for w in workloads],
    }


def _workload_row(w: Mapping[str, Any]) -> Row:
    kind = str(w.get("kind") or "")
    if kind == "training":
        result = f"time to train {unit(w.get('time_to_train_days'), 'days')}"
        if num(w.get("time_to_train_days_p50")) is not None:
            result += f" (p50 with failures {fmt(w.get('time_to_train_days_p50'))})"
        target = f"deadline {unit(w.get('deadline_days'), 'days')}"
    elif kind == "inference":
        result = (f"TTFT p99 {duration(w.get('ttft_p99_s'))}, "
                  f"TPOT p99 {duration(w.get('tpot_p99_s'))}")
        target = (f"SLO {duration(get(w, 'slo', 'ttft_p99_s'))} / "
                  f"{duration(get(w, 'slo', 'tpot_p99_s'))} at {fmt(w.get('peak_qps'))} QPS")
    elif kind == "finetune":
        result = f"{fmt(w.get('gpu_hours'))} GPU-hours, {unit(w.get('hours'), 'h')}"
        target = (f"windows: {fmt(w.get('windows'))}"
                  + (f" of {fmt(w.get('deadline_days'))} days" if w.get("deadline_days") else "")
                  + f"; runs on {text(w.get('runs_on'))}"
                  if w.get("windows") is not None else
                  f"fits window: {text(w.get('fits_window'))}; runs on {text(w.get('runs_on'))}")
    else:
        result, target = DASH, DASH
    return [text(w.get("name")), kind or DASH, text(w.get("gpu")), fmt(w.get("gpus")), result,
            target]


# ------------------------------------------------------------------ sections 2-4


def _alternatives(bp: Mapping[str, Any]) -> dict[str, Any]:
    rows = [[text(a.get("gpu")), text(a.get("server")), fmt(a.get("nodes")), fmt(a.get("gpus")),
             usd(a.get("total_cost_usd")), text(a.get("feasible")), text(a.get("why_not"))]
            for a in records(bp.get("alternatives"))]
    decisions = [{
        "area": text(d.get("area")).replace("_", " "),
        "subject": text(d.get("subject")) if d.get("subject") else "cluster",
        "choice": text(d.get("choice")), "why": text(d.get("why")),
        "alternatives": [f"{text(x.get('option'))}: {text(x.get('outcome'))}"
                         for x in records(d.get("alternatives"))],
    } for d in records(bp.get("decisions"))]
    return {"rows": rows, "decisions": decisions}


def _topology(bp: Mapping[str, Any]) -> dict[str, Any]:
    fab = mapping(bp.get("fabric"))
    drawing = svg.topology_svg(fab, mapping(bp.get("cluster"))) if fab else None
    su = drawings.su_svg(fab) if fab else None
    nets = drawings.networks_svg(fab) if fab else None
    facts: list[tuple[str, str]] = []
    if fab:
        links = mapping(fab.get("links_by_tier"))
        speed = num(fab.get("link_speed_gbps"))
        none = fab.get("backend") == "none"  # every job fits one NVLink domain
        facts = [
            ("tiers", "no backend fabric" if none else fmt(fab.get("tiers"))),
            ("switch", f"none (growth: {text(fab.get('switch'))})" if none
             else text(fab.get("switch"))),
            ("link speed", unit(speed, "Gb/s")),
            ("leaf / spine / core switches", " / ".join(
                fmt(fab.get(k)) for k in ("leaf_switches", "spine_switches", "core_switches"))),
            ("scalable units", fmt(fab.get("scalable_units"))),
            ("nodes per SU", fmt(fab.get("nodes_per_su") or fab.get("su_hosts"))),
            *((f"{k} links", fmt(v)) for k, v in links.items()),
            ("transceivers", fmt(fab.get("transceivers"))), ("cables", fmt(fab.get("cables"))),
            ("network power", unit(_kw(fab.get("power_w")), "kW")),
            ("network cost", usd(fab.get("cost_usd"))),
        ]
        fe, oob = mapping(fab.get("frontend")), mapping(fab.get("oob"))
        if fe:
            facts.append(("frontend network", f"{fmt(fe.get('leaf_switches'))} leaf + "
                          f"{fmt(fe.get('spine_switches'))} spine {text(fe.get('switch'))}"))
        if oob:
            facts.append(("out-of-band network", f"{fmt(oob.get('leaf_switches'))} leaf + "
                          f"{fmt(oob.get('aggregation_switches'))} aggregation "
                          f"{text(oob.get('switch'))}"))
        facts = [(k, v) for k, v in facts if v not in (DASH, f"{DASH} / {DASH} / {DASH}")]
    title = "Backend fabric"
    if fab and fab.get("backend") != "none":
        title = (f"Backend fabric: {drawings.protocol_name(fab)}, {fmt(fab.get('tiers'))} "
                 f"tier{'s' if num(fab.get('tiers')) != 1 else ''}, {text(fab.get('switch'))}")
    elif fab:
        title = "Backend fabric: none built (every job fits one NVLink domain)"
    return {"svg": Markup(drawing) if drawing else None, "facts": facts, "title": title,
            "su": Markup(su) if su else None, "networks": Markup(nets) if nets else None,
            "protocol": drawings.protocol_name(fab) if fab else None}


def _kw(watts: Any) -> float | None:
    w = num(watts)
    return None if w is None else w / 1e3


def _rack_limit(bp: Mapping[str, Any]) -> float | None:
    return first_num(bp, ("power", "rack_limit_kw"), ("power", "racks", "limit_kw"),
                     ("scenario", "constraints", "power_per_rack_kw"))


def _racks(racks: list[Mapping[str, Any]], limit_kw: float | None) -> dict[str, Any]:
    drawings = [Markup(svg.rack_svg(r, limit_kw)) for r in svg.representative_racks(racks)]
    rows = [[text(r.get("name")), text(r.get("row")), text(r.get("role")),
             f"{fmt(svg.used_units(r))} / {fmt(r.get('units'))}",
             fmt(r.get("kw_typical")), fmt(r.get("kw_nameplate")),
             svg.rack_devices_summary(r)] for r in racks]
    over = sum(1 for r in racks if limit_kw is not None
               and (num(r.get("kw_nameplate")) or 0.0) > limit_kw)
    # Past a screenful, one line per row of racks first; every rack stays listed below it.
    by_row: list[Row] = []
    if len(racks) > BY_ROW_ABOVE:
        rows_of: dict[str, list[Mapping[str, Any]]] = {}
        for r in racks:
            rows_of.setdefault(text(r.get("row")), []).append(r)
        for name, rs in rows_of.items():
            roles = sorted({str(r.get("role") or "") for r in rs})
            by_row.append([name, fmt(len(rs)), ", ".join(roles),
                           fmt(sum(num(r.get("kw_typical")) or 0.0 for r in rs)),
                           fmt(sum(num(r.get("kw_nameplate")) or 0.0 for r in rs)),
                           fmt(max(num(r.get("kw_nameplate")) or 0.0 for r in rs))])
    return {"svgs": drawings, "rows": rows, "count": len(racks), "over": over,
            "by_row": by_row,
            "limit": fmt(limit_kw) if limit_kw is not None else None}


# ------------------------------------------------------------------ sections 5-6


def _layout_text(layout: Any) -> str:
    lay = mapping(layout)
    if not lay:
        return DASH
    names = {"tp": "TP", "pp": "PP", "dp": "DP", "cp": "CP", "ep": "EP", "zero": "ZeRO-",
             "micro_batch": "micro-batch ", "global_batch": "global batch ",
             "interleave": "interleave ", "recompute": "recompute "}
    parts = []
    for k, v in lay.items():
        if v is None or v is False:
            continue
        if v is True:  # a switch that is on, e.g. sequence_parallel
            parts.append(str(k).replace("_", " "))
        else:
            parts.append(f"{names.get(k, str(k).replace('_', ' ') + ' ')}{text(v)}")
    return " · ".join(parts)


def _band(w: Mapping[str, Any]) -> str:
    """The estimate's error band, or why there is none."""
    conf = mapping(w.get("confidence"))
    if not conf:
        return DASH
    if conf.get("band") is None:
        return "unvalidated"
    mark = "" if conf.get("validated") else " (nearest regime)"
    return f"±{pct(conf.get('band'))}{mark}"


def _training(training: list[Mapping[str, Any]]) -> dict[str, Any]:
    rows = []
    for w in training:
        ck = mapping(w.get("checkpoint"))
        rows.append([
            text(w.get("name")), f"{fmt(w.get('gpus'))} × {text(w.get('gpu'))}",
            _layout_text(w.get("layout")), duration(w.get("step_time_s")),
            _band(w), pct(w.get("mfu")) + (" (above any published)"
                                           if w.get("mfu_above_published") else ""),
            fmt(w.get("tokens_per_s")), unit(w.get("time_to_train_days"), "days"),
            fmt(w.get("gpu_hours")),
            (f"every {duration(ck.get('interval_s'))}, write {duration(ck.get('write_s'))}, "
             f"ETTR {pct(ck.get('ettr'))}") if ck else DASH,
        ])
    fig = figures.step_time(training)
    return {"rows": rows, "fig": Markup(fig) if fig else None}


def _inference(inference: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for i, w in enumerate(inference):
        facts = [
            ("GPU", text(w.get("gpu"))),
            ("deployment", f"{text(w.get('deployment'))} under {text(w.get('engine'))}")
            if w.get("engine") else ("tensor / expert parallel",
                                     f"TP{text(w.get('tp'))} · EP{text(w.get('ep'))}"),
            ("replicas", fmt(w.get("replicas"))), ("GPUs", fmt(w.get("gpus"))),
            ("peak QPS", fmt(w.get("peak_qps"))),
            ("TTFT p99 (SLO)", f"{duration(w.get('ttft_p99_s'))} "
                               f"({duration(get(w, 'slo', 'ttft_p99_s'))})"),
            ("TPOT p99 (SLO)", f"{duration(w.get('tpot_p99_s'))} "
                               f"({duration(get(w, 'slo', 'tpot_p99_s'))})"),
            ("cost per million tokens", usd(w.get("cost_per_million_tokens_usd"))),
        ]
        fig, di = figures.latency(w, i), figures.diurnal(w, i)
        out.append({"name": text(w.get("name")), "facts": facts,
                    "fig": Markup(fig) if fig else None, "diurnal": Markup(di) if di else None})
    return out


# ------------------------------------------------------------------ sections 7-11


def _cost(bp: Mapping[str, Any]) -> dict[str, Any]:
    tco, rec = mapping(bp.get("tco")), mapping(bp.get("recommendation"))
    breakeven = first_num(tco, "breakeven_months") or first_num(rec, "breakeven_months")
    fig = figures.cost_over_time(tco, breakeven)
    facts = [
        ("capex", usd(tco.get("capex_usd"))), ("annual opex", usd(tco.get("annual_opex_usd"))),
        ("cloud, per year (on-demand)", usd(tco.get("cloud_annual_cost_usd"))),
        ("cloud offer", text(get(tco, "cloud", "offer"))
         + (" (estimate: no primary source)" if get(tco, "cloud", "estimate") is True else "")),
        ("cloud term", text(tco.get("cloud_term"))),
        ("why this offer", text(get(tco, "pricing", "why"))),
        ("cloud price date", text(get(tco, "cloud", "price_date"))),
        ("breakeven", unit(breakeven, "months")),
        ("breakeven vs committed cloud", unit(tco.get("breakeven_months_committed"), "months")),
        ("cost per GPU-hour (on-prem)", usd(tco.get("cost_per_gpu_hour_usd"))),
        ("years / utilization", f"{fmt(tco.get('years'))} / {pct(tco.get('utilization'), 0)}"),
    ]
    facts = [(k, v) for k, v in facts if v not in (DASH, f"{DASH} / {DASH}")]
    offers = [[text(o.get("offer")), text(o.get("term")), usd(o.get("usd_per_gpu_hour")),
               usd(o.get("annual_usd")), "yes" if o.get("chosen") is True else "",
               "estimate" if o.get("estimate") is True else "primary"]
              for o in records(tco.get("cloud_offers_over_time"))]
    estimates = [[text(e.get("input")), fmt(e.get("value")), text(e.get("why"))]
                 for e in records(tco.get("estimates"))]
    return {"fig": Markup(fig) if fig else None, "facts": facts, "offers": offers,
            "estimates": estimates,
            "basis": [str(tco[k]) for k in ("cloud_cost_basis", "cloud_model", "energy_model")
                      if isinstance(tco.get(k), str)]}


def _reliability(bp: Mapping[str, Any], training: list[Mapping[str, Any]]) -> dict[str, Any]:
    rel = mapping(bp.get("reliability"))
    tl = figures.timeline(records(rel.get("timeline")))
    ttt = figures.time_to_train(training)
    facts = [
        ("expected interruptions per day", fmt(rel.get("expected_interruptions_per_day"))),
        ("job MTBF", unit(rel.get("job_mtbf_hours"), "h")),
        ("ETTR (effective training time ratio)", pct(rel.get("ettr"))),
    ]
    facts = [(k, v) for k, v in facts if v != DASH]
    causes = sorted(((str(k), v) for k, v in mapping(rel.get("by_cause")).items()
                     if num(v) is not None), key=lambda kv: -float(kv[1]))
    ttt_rows = [[text(w.get("name")), fmt(w.get("time_to_train_days_p10")),
                 fmt(w.get("time_to_train_days_p50")), fmt(w.get("time_to_train_days_p90")),
                 fmt(w.get("compute_days", w.get("time_to_train_days"))),
                 fmt(w.get("deadline_days"))]
                for w in training if num(w.get("time_to_train_days_p50")) is not None]
    return {"timeline": Markup(tl) if tl else None, "ttt": Markup(ttt) if ttt else None,
            "facts": facts + _fleet_facts(rel), "causes": [[k, fmt(v)] for k, v in causes[:10]],
            "ttt_rows": ttt_rows, **_failure_model(rel)}


def _fleet_facts(rel: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Spares, the repair queue and the Monte Carlo's hours lost by cause."""
    mc, fm = mapping(rel.get("monte_carlo")), mapping(rel.get("failure_model"))
    rec = mapping(rel.get("with_recommended_spares"))
    lost = mapping(mc.get("hours_lost"))
    facts = [
        ("failure rates from", "; ".join(str(f) for f in fm.get("fleets") or [])
         if isinstance(fm.get("fleets"), list) else DASH),
        ("hot spares (scenario)", fmt(rel.get("hot_spares"))),
        ("expected wait for a repaired node per failure",
         duration(rel.get("expected_spare_wait_s_per_failure"))),
        ("nodes in repair, mean", fmt(rel.get("nodes_in_repair_mean"))),
        ("recommended hot spares", fmt(rel.get("recommended_spares"))),
        ("with the recommended spares: time to train p50 / p90",
         f"{unit(get(rec, 'time_to_train_days', 'p50'), 'days')} / "
         f"{unit(get(rec, 'time_to_train_days', 'p90'), 'days')}" if rec else DASH),
        ("with the recommended spares: ETTR", pct(rec.get("ettr")) if rec else DASH),
        ("hours lost per run (Monte Carlo mean)",
         ", ".join(f"{str(k).replace('_', ' ')} {fmt(v)} h" for k, v in lost.items()
                   if num(v) is not None) or DASH),
    ]
    return [(k, v) for k, v in facts if v not in (DASH, "")]


def _failure_model(rel: Mapping[str, Any]) -> dict[str, Any]:
    """The failure model's node losses (node, rack, power domain, leaf switch), lemons and
    fail-slow stragglers, and every assumption it used with its source."""
    fm = mapping(rel.get("failure_model"))
    losses = [[text(x.get("kind")), fmt(x.get("probability_per_failure")),
               fmt(x.get("nodes")), unit(x.get("repair_hours"), "h"),
               f"{pct(x.get('reset_share'), 0)} in {unit(x.get('reset_hours'), 'h')}"
               if num(x.get("reset_share")) else DASH]
              for x in records(fm.get("node_losses"))]
    lem, slow, lay = mapping(fm.get("lemons")), mapping(fm.get("fail_slow")), mapping(
        fm.get("layout"))
    extra = [
        ("layout (failure domains)",
         f"{fmt(lay.get('nodes_per_rack'))} nodes per rack, {fmt(lay.get('nodes_per_row'))} "
         f"per row, {fmt(lay.get('nodes_per_leaf'))} per leaf ({text(lay.get('basis'))})"
         if lay else DASH),
        ("lemon nodes",
         f"{pct(lem.get('fraction'))} of nodes fail {fmt(lem.get('rate_multiplier'))}× as "
         f"often; {fmt(lem.get('expected_in_job'))} expected in this job" if lem else DASH),
        ("fail-slow stragglers",
         f"{fmt(slow.get('episodes_per_hour'))} episodes per hour of "
         f"{unit(slow.get('mean_hours'), 'h')} at {fmt(slow.get('slowdown'))}× step time: "
         f"run stretched "
         f"{fmt(slow.get('expected_stretch'))}×" if slow else DASH),
    ]
    assumptions = [[text(a.get("name")), fmt(a.get("value")), text(a.get("unit")),
                    text(a.get("source"))] for a in records(rel.get("failure_assumptions"))]
    return {"losses": losses, "model_facts": [(k, v) for k, v in extra if v != DASH],
            "assumptions": assumptions}


def _storage(bp: Mapping[str, Any]) -> dict[str, Any]:
    """The storage tier: system and units, what sized it, the checkpoint it writes."""
    st = mapping(bp.get("storage"))
    if not st:
        return {"facts": _rag_facts(bp), "binding": [], "alternatives": [], "why": "",
                "notes": []}
    need, ck = mapping(st.get("need")), mapping(st.get("checkpoint"))
    by = mapping(st.get("units_by_need"))
    ck_bytes = num(ck.get("bytes"))
    ck_tb = ck_bytes / 1e12 if ck_bytes is not None else None
    facts = [
        ("system", f"{fmt(st.get('units'))} × {text(st.get('system'))} ({text(st.get('name'))})"),
        ("units needed by read / write / capacity",
         " / ".join(fmt(by.get(k)) for k in ("read", "write", "capacity")) if by else DASH),
        ("read: needed / delivered", f"{unit(need.get('read_gbps'), 'GB/s')} / "
                                     f"{unit(st.get('read_gbps'), 'GB/s')}"),
        ("write: needed / delivered", f"{unit(need.get('write_gbps'), 'GB/s')} / "
                                      f"{unit(st.get('write_gbps'), 'GB/s')}"),
        ("capacity: needed / delivered", f"{unit(need.get('capacity_tb'), 'TB')} / "
                                         f"{unit(st.get('capacity_tb'), 'TB')}"),
        ("ports", f"{fmt(st.get('ports'))} × {fmt(st.get('port_gbps'))} Gb/s"),
        ("power", unit(st.get("power_kw"), "kW")),
        ("price", usd(st.get("price_usd"))),
        ("checkpoint", f"{unit(ck_tb, 'TB')} "
                       f"{text(ck.get('mode'))}: stalls {duration(ck.get('stall_s'))}, "
                       f"persisted in {duration(ck.get('persist_s'))}, restored in "
                       f"{duration(ck.get('restore_s'))}, every "
                       f"{duration(ck.get('interval_s'))}" if ck else DASH),
        ("model load (serving)", duration(st.get("model_load_s"))),
    ]
    dr, ls = mapping(st.get("data_read_per_unit")), mapping(st.get("local_staging"))
    if dr:
        unchecked = list(dr.get("not_checked") or [])
        facts.append(("training data files per unit",
                      f"{unit(dr.get('gbps'), 'GB/s')}, {text(dr.get('bound'))}-bound"
                      + (f" (no {' / '.join(map(str, unchecked))} rate: an upper bound)"
                         if unchecked else "")))
    if ls:
        facts.append(("local NVMe staging",
                      f"{text(ls.get('system'))} in {fmt(ls.get('servers'))} servers: a shard "
                      f"stages in {duration(ls.get('stage_s'))} (stall without it "
                      f"{duration(ls.get('shared_stall_s'))})"))
    facts += _rag_facts(bp)
    binding = [[text(b.get("constraint")), unit(b.get("needed"), str(b.get("unit") or "")),
                unit(b.get("available"), str(b.get("unit") or "")), text(b.get("message"))]
               for b in records(st.get("binding"))]
    alts = [[text(a.get("option")), text(a.get("why_not"))]
            for a in records(st.get("alternatives"))]
    return {"facts": [(k, v) for k, v in facts if DASH not in (v, v.strip(" /"))],
            "binding": binding, "alternatives": alts, "why": str(st.get("why") or ""),
            "notes": [str(n) for n in st.get("notes") or [] if n is not None]
            if isinstance(st.get("notes"), list) else []}


def _rag_facts(bp: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The vector index tier of a retrieval workload (plan/rag), when the scenario has one."""
    rag = mapping(bp.get("rag"))
    if not rag:
        return []
    mem, emb = mapping(rag.get("memory_gb")), mapping(rag.get("embedding"))
    facts = [
        ("vector index (RAG)", f"{fmt(rag.get('servers'))} × vector-index server: "
                               f"{fmt(rag.get('replicas'))} replica(s) of a "
                               f"{text(rag.get('index'))} index of {fmt(rag.get('vectors'))} "
                               f"{fmt(rag.get('dim'))}-d vectors"),
        ("vector index memory per replica (low–high of the published formulas)",
         f"{unit(mem.get('low'), 'GB')} – {unit(mem.get('high'), 'GB')}"),
        ("vector index power / price", f"{unit(rag.get('power_kw'), 'kW')} / "
                                       f"{usd(rag.get('price_usd'))} (in the storage figures)"),
        ("vector queries", f"{fmt(rag.get('qps'))}/s: {text(rag.get('qps_note'))}"),
    ]
    if emb:
        facts.append(("embedding the corpus", f"{fmt(emb.get('hours'))} h on "
                                              f"{fmt(emb.get('gpus'))} × {text(emb.get('gpu'))} "
                                              "(a lower bound)"))
    return facts


def _energy(bp: Mapping[str, Any]) -> dict[str, Any]:
    """Energy and carbon per run, per million served tokens and per year; the power trace of
    the largest synchronous job and what smooths it."""
    en = mapping(bp.get("energy"))
    if not en:
        return {"facts": [], "runs": [], "serving": [], "trace": None, "trace_facts": [],
                "mitigations": [], "grid_source": ""}
    g, yr = mapping(en.get("grid")), mapping(en.get("per_year"))
    facts = [
        ("grid", f"{text(g.get('name'))}, {text(g.get('year'))}: "
                 f"{fmt(g.get('gco2_per_kwh'))} gCO2e/kWh (location-based)" if g else DASH),
        ("renewable share contracted (market-based)", pct(g.get("renewable_share"), 0)),
        ("PUE", fmt(en.get("pue"))),
        ("facility energy per year (at the cost model's utilization)",
         energy_kwh(yr.get("facility_kwh"))),
        ("operational CO2e per year, location / market based",
         f"{unit(yr.get('location_based_t'), 't')} / {unit(yr.get('market_based_t'), 't')}"),
        ("embodied CO2e per year (hardware amortized)", unit(yr.get("embodied_t"), "t")),
    ]
    runs = []
    for r in records(en.get("runs")):
        e, c, mc = mapping(r.get("energy")), mapping(r.get("carbon")), mapping(
            r.get("model_card_convention"))
        runs.append([text(r.get("workload")), fmt(r.get("gpu_hours")),
                     energy_kwh(e.get("it_kwh")), energy_kwh(e.get("facility_kwh")),
                     unit(c.get("location_based_t"), "t"), unit(c.get("market_based_t"), "t"),
                     unit(c.get("embodied_t"), "t"),
                     f"{energy_kwh(mc.get('kwh'))}, {unit(mc.get('location_based_t'), 't')}"
                     if mc else DASH])
    serving = [[text(s.get("workload")), unit(s.get("kwh_per_million_tokens"), "kWh"),
                unit(s.get("gco2_per_million_tokens"), "g"), text(s.get("basis"))]
               for s in records(en.get("serving"))]
    tr = mapping(en.get("power_trace"))
    fig = figures.power_trace(tr) if tr else None
    trace_facts = [
        ("workload", text(tr.get("workload"))),
        ("computing / waiting draw", f"{power_mw(tr.get('high_mw'))} / "
                                     f"{power_mw(tr.get('low_mw'))}"),
        ("swing every step", f"{power_mw(tr.get('swing_mw'))}, low for "
                             f"{duration(tr.get('low_s_per_step'))} of a "
                             f"{duration(tr.get('step_s'))} step"),
        ("restart dip", duration(tr.get("restart_s"))),
        ("ramp", f"{fmt(tr.get('ramp_mw_per_s'))} MW/s"
                 + (f" against a limit of {fmt(tr.get('ramp_limit_mw_per_s'))} MW/s"
                    if num(tr.get("ramp_limit_mw_per_s")) is not None else "")
                 + (" (exceeds it)" if tr.get("exceeds_ramp_limit") is True else "")),
    ] if tr else []
    mit = [[text(m.get("name")), power_mw(m.get("swing_mw")), usd(m.get("capex_usd")),
            usd(m.get("annual_usd")), text(m.get("note"))]
           for m in records(tr.get("mitigations"))]
    return {"facts": [(k, v) for k, v in facts if v not in (DASH, f"{DASH} / {DASH}")],
            "runs": runs, "serving": serving, "trace": Markup(fig) if fig else None,
            "trace_facts": [(k, v) for k, v in trace_facts if not v.startswith(DASH)],
            "mitigations": mit, "basis": str(tr.get("basis") or ""),
            "grid_source": str(g.get("source") or "")}


def _power(bp: Mapping[str, Any], racks: list[Mapping[str, Any]],
           limit_kw: float | None) -> dict[str, Any]:
    pw = mapping(bp.get("power"))
    fig = figures.rack_power(racks, limit_kw)
    facts = [
        ("IT power, typical", unit(first_num(pw, "it_power_kw_typical",
                                             ("it_power_kw", "typical")), "kW")),
        ("IT power, nameplate", unit(first_num(pw, "it_power_kw_nameplate",
                                               ("it_power_kw", "nameplate")), "kW")),
        ("facility power (with PUE)", unit(first_num(pw, "facility_power_kw",
                                                     "facility_power_kw_typical",
                                                     ("facility_power_kw", "typical")), "kW")),
        ("PUE", fmt(pw.get("pue"))),
        # Every hour at typical draw: the facility's sizing figure. The energy section and
        # the TCO count the cost model's utilization, so the two differ by it.
        ("energy per year at full load", energy_kwh(pw.get("annual_energy_kwh"))),
        ("training power swing", power_mw(first_num(pw, "swing_mw",
                                                     ("training_swing", "swing_mw")))),
        ("cooling", text(pw.get("cooling")) if pw.get("cooling") is not None else DASH),
        ("per-rack limit", unit(limit_kw, "kW")),
        ("densest rack", unit(first_num(pw, "densest_rack_kw",
                                        ("per_rack_kw", "compute_nameplate_max")), "kW")),
    ]
    facts = [(k, v) for k, v in facts if v != DASH]
    return {"fig": Markup(fig) if fig else None, "facts": facts}


def _risks(bp: Mapping[str, Any]) -> list[dict[str, str]]:
    risks = records(bp.get("risks"))
    ordered = sorted(risks, key=lambda r: SEVERITY_ORDER.get(str(r.get("severity")), 3))
    return [{"severity": str(r.get("severity") or "note"),
             "severity_class": str(r.get("severity")) if r.get("severity") in SEVERITY_ORDER
             else "note",
             "area": str(r.get("area") or ""), "title": str(r.get("title") or ""),
             "detail": str(r.get("detail") or "")} for r in ordered]


def _footer(bp: Mapping[str, Any]) -> dict[str, Any]:
    notes: list[str] = []
    # The blueprint's notes first, then those of the stages it carries, each once.
    for found in (bp.get("notes"), get(bp, "fabric", "notes"), get(bp, "power", "notes"),
                  get(bp, "tco", "notes")):
        for n in found if isinstance(found, list) else []:
            if n is not None and str(n) not in notes:
                notes.append(str(n))
    sources = [f"{label}: {v}" for label, v in (
        ("Failure rates", get(bp, "reliability", "rate_basis")),
        ("Energy", get(bp, "power", "annual_energy_basis")),
        ("Storage", get(bp, "storage", "source")),
        ("Grid carbon intensity", get(bp, "energy", "grid", "source"))) if isinstance(v, str)]
    basis = get(bp, "recommendation", "cost_basis")
    timings = [(str(k), duration(v)) for k, v in mapping(bp.get("timings_s")).items()
               if num(v) is not None]
    artifacts = [(str(k), str(v)) for k, v in mapping(bp.get("artifacts")).items()]
    return {
        "version": text(bp.get("clusterwright_version")),
        "schema": text(bp.get("schema_version")),
        "notes": notes + ([f"Cost basis: {basis}"] if isinstance(basis, str) and basis else []),
        "timings": timings,
        "artifacts": artifacts,
        "sources": sources,
    }
