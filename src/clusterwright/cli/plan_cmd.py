"""``clusterwright plan SCENARIO.yaml --out DIR``: from a scenario to a reference architecture."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.markup import escape
from rich.table import Table

from clusterwright.cli.common import console, emit_json, err_console, state, user_errors
from clusterwright.report.fmt import usd

STAGES = {
    "sizing": "sizing workloads per GPU",
    "design": "fabric, racks, power, TCO",
    "reliability": "failures and checkpoints",
    "curves": "latency under load",
}


def plan(
    ctx: typer.Context,
    scenario: Path = typer.Argument(..., metavar="SCENARIO.yaml", help="Scenario file."),
    out: Path = typer.Option(..., "--out", help="Directory to write the blueprint into."),
    force: bool = typer.Option(False, "--force", help="Replace a non-empty --out directory."),
    as_json: bool = typer.Option(False, "--json", help="Print the metrics and paths as JSON."),
    formats: str = typer.Option(
        "html", "--formats", help="Report formats, comma-separated: html, xlsx (spreadsheet), "
        "pdf (printed by Chromium)."),
) -> None:
    """Size, design, price and stress a cluster for a scenario; write blueprint.json, bom.csv,
    cabling.csv, configs/ and the report (report.html; --formats adds report.xlsx and
    report.pdf) to --out."""
    from clusterwright.catalog.references import resolve
    from clusterwright.export.blueprint import parse_formats, write_blueprint
    from clusterwright.export.fabric import check_out_dir
    from clusterwright.plan.run import plan_to_dir
    from clusterwright.spec.scenario import load_scenario

    with user_errors(name_flags=True):
        kinds = parse_formats(formats)  # a bad name or no browser for pdf: before any work
    with user_errors():
        sc, doc = load_scenario(scenario)
        cat = state(ctx).catalog()
        resolve(sc, cat, doc)  # unknown ids are named with their line before any work
        with user_errors(name_flags=True):  # out, force -> --out, --force
            check_out_dir(out, force)  # refuse before the work, not after

        def write(bp: Any, fab: Any, out: Path, force: bool = False) -> list[str]:
            return write_blueprint(bp, fab, out, force=force, formats=kinds)

        def run(progress: Any = None) -> Any:
            return plan_to_dir(sc, cat, out, progress, write=write,
                               source=str(scenario), doc=doc, force=force)

        res = _with_progress(run) if err_console.is_terminal else run()
    data = res.data
    if as_json:
        emit_json({
            **res.metrics,
            "out": str(out),
            "files": len(res.files),
            "artifacts": {k: str(out / v) if isinstance(v, str) else v
                          for k, v in data["artifacts"].items()},
            "binding_constraints": data["binding_constraints"],
        })
        return
    _render(data, out, len(res.files))


def _with_progress(run: Any) -> Any:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=err_console, transient=True) as bar:
        tasks: dict[str, Any] = {}

        def progress(stage: str, done: int, total: int) -> None:
            if stage not in tasks:
                tasks[stage] = bar.add_task(STAGES.get(stage, stage), total=max(total, 1))
            bar.update(tasks[stage], completed=done, total=max(total, 1))

        return run(progress)


def _render(d: dict[str, Any], out: Path, files: int) -> None:
    r = d["recommendation"]
    ok = d["feasible"]
    mark = "[green]feasible[/]" if ok else "[red]not feasible[/]"
    console.print(f"[bold]{d['scenario']['name']}[/]: {mark}")
    console.print(r["summary"], highlight=False)
    t = Table(title="cost", title_justify="left", show_header=False)
    t.add_column("item")
    t.add_column("value", justify="right")
    for label, key in (("total (" + r["deployment"] + ")", "total_cost_usd"),
                       ("capex", "capex_usd"), ("opex per year", "annual_opex_usd"),
                       ("cloud per year", "cloud_annual_cost_usd")):
        if r.get(key) is not None:
            t.add_row(label, usd(r[key]))
    if r.get("breakeven_months") is not None:
        t.add_row("breakeven vs cloud", f"{r['breakeven_months']:.0f} months")
    if r.get("cost_per_gpu_hour_usd") is not None:
        t.add_row("per GPU-hour", usd(r['cost_per_gpu_hour_usd']))
    if t.row_count:
        console.print(t)
        console.print(f"[dim]cost basis: {r['cost_basis']}[/]", highlight=False)
        cloud_basis = (d.get("tco") or {}).get("cloud_cost_basis")
        if cloud_basis and cloud_basis != r["cost_basis"]:
            console.print(f"cloud basis: {cloud_basis}", highlight=False, markup=False)
    for x in d.get("decisions") or []:
        if x.get("area") == "pricing":
            console.print(f"cloud price: {x['choice']} ({x['why']})", highlight=False,
                          markup=False)
    est = (d.get("tco") or {}).get("estimates") or []
    if est:
        console.print("[yellow]estimated prices[/] (no primary source; sources in blueprint.json "
                      "tco.estimates): " + ", ".join(f"{e['input']} {e['value']:,.6g}"
                                                     for e in est), highlight=False)
    unpriced = sorted({str(b["part"]) for b in d.get("bom") or []
                       if b.get("unit_price_usd") is None})
    if unpriced and r.get("deployment") != "cloud":
        # Counted at $0 in capex and the comparison: the totals above are lower bounds.
        console.print(f"[yellow]unpriced parts[/] (no catalog price, counted at $0; the costs "
                      f"above are lower bounds): {escape(', '.join(unpriced))}", highlight=False)
    if d["alternatives"]:
        a = Table(title="alternatives", title_justify="left")
        for col in ("GPU", "server", "GPUs", "cost", "why not"):
            a.add_column(col)
        for x in d["alternatives"]:
            a.add_row(x["gpu"], x["server"] or "-", f"{x['gpus']:,}" if x["gpus"] else "-",
                      usd(x["total_cost_usd"]), x["why_not"])
        console.print(a)
    if d.get("decisions"):
        console.print("[bold]why[/]")
        for x in d["decisions"]:
            who = f" ({x['subject']})" if x.get("subject") else ""
            console.print(f"  {x['area']}{who}: [bold]{x['choice']}[/]: {x['why']}",
                          highlight=False)
            # The GPUs compared are the alternatives table above.
            for alt in x["alternatives"] if x["area"] != "gpu" else ():
                console.print(f"    [dim]vs {alt['option']}: {alt['outcome']}[/]", highlight=False)
    if d["binding_constraints"]:
        console.print("[bold red]binding constraints[/]")
        for b in d["binding_constraints"]:
            console.print(f"  - {b['message']}", highlight=False)
    fab = d.get("fabric")
    if fab:
        console.print(
            f"fabric: {fab['tiers']}-tier {fab['protocol']} {fab['switch']}, "
            f"{fab['leaf_switches']} leaf / {fab['spine_switches']} spine / "
            f"{fab['core_switches']} core switches; {len(d['racks'])} racks", highlight=False)
    if d["risks"]:
        k = Table(title="risks", title_justify="left")
        for col in ("severity", "area", "risk"):
            k.add_column(col)
        colors = {"high": "red", "medium": "yellow", "low": "dim"}
        for x in d["risks"]:
            k.add_row(f"[{colors[x['severity']]}]{x['severity']}[/]", x["area"], x["title"])
        console.print(k)
    for w in ((d.get("multisite") or {}).get("workloads") or []):
        if w.get("error"):
            # The single-site plan stands; the split over the sites could not be made
            console.print(f"[yellow]multi-site: {w['name']} not split over the sites:[/] "
                          f"{w['error']}", highlight=False)
    phys = (d.get("multisite") or {}).get("physical") or {}
    for e in phys.get("sites") or []:
        if e.get("error"):
            console.print(f"[yellow]site {e['site']}:[/] {e['error']}", highlight=False)
            continue
        f = e["fabric"]
        mw = e["facility_power_kw"]["nameplate"] / 1e3
        console.print(
            f"site {e['site']}: {e['nodes']:,} x {d['cluster']['server']}, {f['tiers']}-tier "
            f"fabric ({f['switches_total']:,} switches, ${f['cost_usd']:,.0f}), "
            f"{e['racks']['compute'] + e['racks']['network']:,} racks, {mw:.3g} of "
            f"{e['site_power_mw']:g} MW" + ("" if e["fits_site_power"] else " [red](over)[/]")
            + f"; IaC in {e['configs']}", highlight=False)
    cap = phys.get("capex")
    if cap:
        console.print(f"capex with each site built on its own: ${cap['sites_usd']:,.0f} "
                      f"(one site, as the TCO prices it: ${cap['one_site_usd']:,.0f})",
                      highlight=False)
    for n in d["notes"]:
        console.print(f"  [yellow]note:[/] {n}", highlight=False)
    reports = [d["artifacts"][k] for k in ("report", "report_xlsx", "report_pdf")
               if k in d["artifacts"]]
    console.print(f"Wrote {files} files to {out}"
                  + (f" ({', '.join(reports)})" if reports else ""))
