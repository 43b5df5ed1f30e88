"""``report.xlsx``: the blueprint as the spreadsheet a TCO review works in (openpyxl).

Sheets: Summary (the recommendation and its totals), BOM (line by line, unit price, total,
price source), Cabling (per tier: links, media, parts, optics, length bins), Racks (every
rack with its kW), Costs by year (capex in year 0, opex by category each year, cumulative
on-prem against the cloud), Assumptions (every TCO input, the estimates, the sources).

Values, not formulas: a reader of the file (or openpyxl, which does not evaluate formulas)
sees the blueprint's numbers, and the totals equal blueprint.json's
(tests/report/test_xlsx.py). Money is USD, power kW, lengths m.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from clusterwright.report.files import atomic_file
from clusterwright.report.fmt import get, mapping, num, records
from clusterwright.report.sections import CAPEX, OPEX

USD = '"$"#,##0'
USD_CENTS = '"$"#,##0.00'


def _v(x: Any) -> Any:
    """A cell value: finite numbers and text as they are; anything else as text or empty."""
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int | float):
        return x if math.isfinite(x) else None
    if x is None or isinstance(x, str):
        return x
    return str(x)


def _sheet(wb: Any, title: str, header: Sequence[str], rows: Sequence[Sequence[Any]],
           money: Sequence[int] = (), widths: Mapping[int, int] | None = None) -> Any:
    from openpyxl.styles import Font  # type: ignore[import-untyped]

    ws = wb.create_sheet(title)
    ws.append(list(header))
    for c in ws[1]:
        c.font = Font(bold=True)
    for r in rows:
        ws.append([_v(x) for x in r])
    for col in money:
        for row in ws.iter_rows(min_row=2, min_col=col, max_col=col):
            for c in row:
                c.number_format = USD
    ws.freeze_panes = "A2"
    for col, w in (widths or {}).items():
        ws.column_dimensions[chr(64 + col)].width = w
    return ws


def summary_rows(bp: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """(item, value) rows of the Summary sheet; money in USD."""
    rec, tco = mapping(bp.get("recommendation")), mapping(bp.get("tco"))
    sc = mapping(bp.get("scenario"))
    rows: list[tuple[str, Any]] = [
        ("scenario", sc.get("name")), ("feasible", bp.get("feasible")),
        ("GPU", rec.get("gpu")), ("server", rec.get("server")), ("nodes", rec.get("nodes")),
        ("GPUs", rec.get("gpus")), ("deployment", rec.get("deployment")),
        ("total cost (USD)", rec.get("total_cost_usd")), ("cost basis", rec.get("cost_basis")),
        ("capex (USD)", rec.get("capex_usd")), ("opex per year (USD)", rec.get("annual_opex_usd")),
        ("cloud per year (USD)", rec.get("cloud_annual_cost_usd")),
        ("cloud total (USD)", rec.get("cloud_total_cost_usd")),
        ("on-prem total (USD)", rec.get("on_prem_total_cost_usd")),
        ("breakeven vs cloud (months)", rec.get("breakeven_months")),
        ("cost per used GPU-hour (USD)", rec.get("cost_per_gpu_hour_usd")),
    ]
    cats = mapping(tco.get("capex_by_category_usd"))
    rows += [(f"capex: {label} (USD)", cats.get(k)) for k, label in CAPEX if k in cats]
    ob = mapping(tco.get("opex_breakdown_usd"))
    rows += [(f"opex per year: {label} (USD)", ob.get(k)) for k, label in OPEX if k in ob]
    for w in records(bp.get("workloads")):
        if w.get("kind") == "training":
            rows.append((f"{w.get('name')}: time to train (days)", w.get("time_to_train_days")))
            rows.append((f"{w.get('name')}: step-time error band (fraction)",
                         get(w, "confidence", "band")))
        elif w.get("kind") == "inference":
            rows.append((f"{w.get('name')}: replicas x TP",
                         f"{w.get('replicas')} x " + (f"{w.get('deployment')} under "
                                                      f"{w.get('engine')}" if w.get("engine")
                                                      else f"TP{w.get('tp')}")))
            rows.append((f"{w.get('name')}: p99 TTFT (s)", w.get("ttft_p99_s")))
    rows += [("binding constraint", b.get("message"))
             for b in records(bp.get("binding_constraints"))]
    return rows


def cost_years(bp: Mapping[str, Any]) -> list[list[Any]]:
    """Year 0 capex by category, then each year's opex by category, cumulative on-prem and
    cloud (USD). Rows: year, capex, energy, colocation, support, staff, opex, on-prem
    cumulative, cloud, cloud cumulative."""
    tco = mapping(bp.get("tco"))
    capex = num(tco.get("capex_usd"))
    if capex is None:
        return []
    years = num(tco.get("years")) or 0.0
    ob = mapping(tco.get("opex_breakdown_usd"))
    opex = num(tco.get("annual_opex_usd")) or 0.0
    cloud = num(tco.get("cloud_annual_cost_usd"))
    out: list[list[Any]] = [[0, capex, None, None, None, None, None, capex, None, 0.0]]
    cum, cloud_cum = capex, 0.0
    for y in range(1, math.ceil(years) + 1):
        share = min(1.0, years - (y - 1))  # a part year at the end of a fractional horizon
        cum += opex * share
        if cloud is not None:
            cloud_cum += cloud * share
        out.append([y, None, *((num(ob.get(k)) or 0.0) * share for k, _ in OPEX),
                    opex * share, cum, cloud * share if cloud is not None else None,
                    cloud_cum if cloud is not None else None])
    return out


def render_xlsx(bp: Mapping[str, Any], path: Path) -> None:
    """Write the workbook of ``bp`` (a blueprint.json dict) to ``path``, atomically."""
    from openpyxl import Workbook  # type: ignore[import-untyped]

    wb = Workbook()
    wb.remove(wb.active)
    summary = summary_rows(bp)
    ws = _sheet(wb, "Summary", ["item", "value"], summary, widths={1: 44, 2: 60})
    for row in ws.iter_rows(min_row=2):
        if "(USD)" in str(row[0].value) and isinstance(row[1].value, int | float):
            row[1].number_format = USD
    _sheet(wb, "BOM", ["category", "part", "name", "network", "role", "length m", "quantity",
                       "unit price USD", "total USD", "unit power W", "price source",
                       "price without a primary source"],
           [[b.get("category"), b.get("part"), b.get("name"), b.get("network"), b.get("role"),
             b.get("length_m"), b.get("quantity"), b.get("unit_price_usd"), b.get("total_usd"),
             b.get("unit_power_w"), b.get("price_source"), b.get("price_estimate")]
            for b in records(bp.get("bom"))], money=(8, 9), widths={3: 36, 11: 60})
    cab = records(get(bp, "fabric", "cabling"))
    bins: list[str] = []
    for r in cab:
        bins += [str(k) for k in mapping(r.get("length_bins")) if str(k) not in bins]
    _sheet(wb, "Cabling", ["tier", "network", "links", "speed Gb/s", "media", "cables",
                           "cable parts", "optics", "optic parts", *(f"cables {b}" for b in bins),
                           "shortest m", "longest m", "mean m"],
           [[r.get("tier"), r.get("network"), r.get("links"), r.get("speed_gbps"),
             ", ".join(f"{k} {v}" for k, v in mapping(r.get("media")).items()), r.get("cables"),
             ", ".join(f"{k} x {v}" for k, v in mapping(r.get("cable_parts")).items()),
             r.get("transceivers"),
             ", ".join(f"{k} x {v}" for k, v in mapping(r.get("transceiver_parts")).items()),
             *(mapping(r.get("length_bins")).get(b, 0) for b in bins),
             r.get("length_m_min"), r.get("length_m_max"), r.get("length_m_mean")]
            for r in cab])
    _sheet(wb, "Racks", ["rack", "row", "position", "role", "cooling", "units", "used units",
                         "kW typical", "kW nameplate", "devices"],
           [[r.get("name"), r.get("row"), r.get("position"), r.get("role"), r.get("cooling"),
             r.get("units"), r.get("used_units"), r.get("kw_typical"), r.get("kw_nameplate"),
             len(records(r.get("devices")))] for r in records(bp.get("racks"))])
    _sheet(wb, "Costs by year", ["year", "capex USD", *(f"{label} USD" for _, label in OPEX),
                                 "opex USD", "on-prem cumulative USD", "cloud USD",
                                 "cloud cumulative USD"],
           cost_years(bp), money=tuple(range(2, 11)))
    tco = mapping(bp.get("tco"))
    rows: list[list[Any]] = [[k, v, "TCO input"] for k, v in mapping(tco.get("inputs")).items()]
    rows += [[k, tco.get(k), "TCO"] for k in ("years", "utilization", "pue",
                                              "electricity_usd_per_kwh") if k in tco]
    rows += [[e.get("input"), e.get("value"), f"estimate: {e.get('why')}"]
             for e in records(tco.get("estimates"))]
    rows += [[s.get("key"), s.get("value"), f"source: {s.get('source') or ''}"
              + (f"; price: {s.get('price_source')}" if s.get("price_source") else "")]
             for s in records(bp.get("sources"))]
    _sheet(wb, "Assumptions", ["name", "value", "source"], rows, widths={1: 40, 3: 100})
    with atomic_file(Path(path), ".xlsx") as tmp:
        wb.save(tmp)
