"""``clusterwright ops tco``: capex, opex, cost per GPU-hour and breakeven against the cloud."""

from __future__ import annotations

from typing import Any

import typer
from rich.table import Table

from clusterwright.cli import limits as lim
from clusterwright.cli.common import console, emit_json, fail, state, user_errors
from clusterwright.cli.ops_power_cmd import FABRIC_ONLY, STORAGE_SYSTEM_HELP, storage_tier
from clusterwright.errors import ClusterwrightError

# Request fields and the field paths the pricing layer blames, in this command's words.
FLAGS = {
    **FABRIC_ONLY,
    "server": "--server", "nodes": "--nodes", "years": "--years",
    "electricity_usd_per_kwh": "--electricity-usd-per-kwh", "pue": "--pue",
    "utilization": "--utilization", "cloud": "--cloud", "cooling": "--cooling",
    "colocation_usd_per_kw_month": "--colocation-usd-per-kw-month",
    "server_price_usd": "--server-price-usd", "training_gpu_hours": "--training-gpu-hours",
    "tokens_per_s_per_gpu": "--tokens-per-s-per-gpu", "storage_usd": "--storage-usd",
    "storage_kw": "--storage-kw", "storage_system": "--storage-system",
    "storage_units": "--storage-units",
    "prices.server_usd": "--server-price-usd", "cloud.offer": "--cloud",
}


def tco(
    ctx: typer.Context,
    server: str = typer.Option(..., "--server", help="Server (or rack system) catalog id."),
    nodes: int = typer.Option(..., "--nodes", help="Servers (racks for rack-scale systems)."),
    years: float | None = typer.Option(
        None, "--years", help="Depreciation life (default: catalog depreciation_years)."
    ),
    electricity: float | None = typer.Option(
        None, "--electricity-usd-per-kwh", help="USD per kWh (default: catalog, US industrial)."
    ),
    pue: float | None = typer.Option(None, "--pue", help="Facility / IT power, >= 1."),
    utilization: float | None = typer.Option(
        None, "--utilization", help="Used / installed GPU-hours, in (0, 1] (default: catalog)."
    ),
    cloud: str | None = typer.Option(
        None, "--cloud", help="Cloud offer id (default: the cheapest offer renting the "
        "server's GPU, as plan, train plan and serve plan price it)."
    ),
    cooling: str | None = typer.Option(None, "--cooling", help="air or liquid."),
    colocation: float | None = typer.Option(
        None, "--colocation-usd-per-kw-month", help="Colocation USD per kW of IT per month."
    ),
    server_price: float | None = typer.Option(
        None, "--server-price-usd", help="Price of one server (required if the catalog has none)."
    ),
    training_gpu_hours: float | None = typer.Option(
        None, "--training-gpu-hours", help="GPU-hours of one training run, to price it."
    ),
    tokens_per_s: float | None = typer.Option(
        None, "--tokens-per-s-per-gpu", help="Served tokens/s per GPU, to price 1M tokens."
    ),
    storage_usd: float | None = typer.Option(
        None, "--storage-usd", help="Price of the storage tier (`ops storage` designs it; "
        "default: the catalog's per-GPU read bandwidth x USD per GB/s)."
    ),
    storage_kw: float | None = typer.Option(
        None, "--storage-kw", help="Power of that storage tier, kW (with --storage-usd; "
        "default with --storage-system: its units' catalog draw)."
    ),
    storage_system: str | None = typer.Option(None, "--storage-system",
                                              help=STORAGE_SYSTEM_HELP + " Priced at its "
                                              "catalog price unless --storage-usd is given."),
    storage_units: int | None = typer.Option(None, "--storage-units",
                                             help="Units of --storage-system."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Owning vs renting: capex (servers, network BOM, storage, racks), yearly opex (energy,
    colocation, support, staff), cost per GPU-hour and breakeven months against cloud prices."""
    from clusterwright.design.tco_plan import TcoRequest
    from clusterwright.plan.pricing import price_tco, tco_dict

    if cooling is not None and cooling not in ("air", "liquid"):
        fail(f"--cooling: {cooling!r} is not one of air, liquid")
    lim.within(("--nodes", nodes, lim.NODES), ("--pue", pue, lim.PUE),
               ("--years", years, lim.YEARS), ("--utilization", utilization, lim.UTILIZATION),
               ("--electricity-usd-per-kwh", electricity, lim.USD_PER_KWH),
               ("--colocation-usd-per-kw-month", colocation, lim.USD_PER_KW_MONTH),
               ("--server-price-usd", server_price, lim.SERVER_PRICE_USD),
               ("--training-gpu-hours", training_gpu_hours, lim.GPU_HOURS),
               ("--tokens-per-s-per-gpu", tokens_per_s, lim.TOKENS_PER_S),
               ("--storage-usd", storage_usd, lim.STORAGE_USD),
               ("--storage-kw", storage_kw, lim.STORAGE_KW))
    if storage_kw and storage_usd is None and storage_system is None:
        fail("--storage-kw: give the tier's price with --storage-usd (or its units with "
             "--storage-system) too")
    with user_errors(FLAGS, name_flags=True):
        cat = state(ctx).catalog()
        tier = storage_tier(cat, storage_system, storage_units)
        if tier is not None and storage_units is not None:
            if storage_usd is None and tier.price_usd is not None:
                storage_usd = storage_units * tier.price_usd
            if storage_kw is None:
                storage_kw = storage_units * tier.power_w / 1e3
        req = TcoRequest(
            server=server, nodes=nodes, years=years, electricity_usd_per_kwh=electricity, pue=pue,
            utilization=utilization, cloud=cloud, cooling=cooling,
            colocation_usd_per_kw_month=colocation, server_price_usd=server_price,
            training_gpu_hours=training_gpu_hours, tokens_per_s_per_gpu=tokens_per_s,
            storage_usd=storage_usd, storage_kw=storage_kw or 0.0,
            storage_system=storage_system, storage_units=storage_units,
        )
        try:
            cat.server(server)
        except ClusterwrightError as exc:
            fail(f"--server: {exc}")
        data = tco_dict(*price_tco(req, cat))
    if as_json:
        emit_json(data)
    else:
        _render(data)


def _usd(v: float | None) -> str:
    return "-" if v is None else f"${v:,.0f}"


def _months(v: float | None) -> str:
    return "never" if v is None else f"{v:.1f} months"


def _render(d: dict[str, Any]) -> None:
    console.print(
        f"[bold]{d['nodes']} x {d['server']}[/] = {d['gpus']} GPUs; {d['years']:g}-year life, "
        f"utilization {100 * d['utilization']:.0f}%, PUE {d['pue']:g}, "
        f"${d['electricity_usd_per_kwh']:g}/kWh"
    )
    t = Table(show_edge=False)
    t.add_column("capex")
    t.add_column("USD", justify="right")
    for k, v in d["capex_breakdown_usd"].items():
        t.add_row(k, _usd(v))
    t.add_row("[bold]total[/]", _usd(d["capex_usd"]))
    console.print(t)
    t = Table(show_edge=False)
    t.add_column("opex per year")
    t.add_column("USD", justify="right")
    for k, v in d["opex_breakdown_usd"].items():
        t.add_row(k, _usd(v))
    t.add_row("[bold]total[/]", _usd(d["annual_opex_usd"]))
    console.print(t)
    console.print(
        f"Energy {d['annual_energy_kwh'] / 1e6:,.2f} GWh/year at {d['average_it_power_kw']:,.0f} "
        f"kW average IT; staff {d['staff_fte']:.1f} FTE"
    )
    console.print(
        f"Owned: ${d['cost_per_gpu_hour_usd']:.2f} per used GPU-hour "
        f"(${d['cost_per_gpu_hour_at_full_use_usd']:.2f} at full use)"
    )
    c = d["cloud"]
    if c:
        console.print(
            f"Cloud {c['offer']} ({c['price_date']}): on-demand {_usd(c['on_demand_annual_usd'])}"
            f"/year for the used hours, breakeven {_months(c['breakeven_months'])}"
            + (f"; committed {_usd(c['committed_annual_usd'])}/year, breakeven "
               f"{_months(c['breakeven_months_committed'])}" if c["committed_annual_usd"] else "")
        )
    if d.get("pricing"):
        p = d["pricing"]
        console.print(f"  chosen: {p['offer']} at ${p['usd_per_gpu_hour']:.2f}/GPU-h"
                      + (" [yellow](estimate)[/]" if p["estimate"] else "") + f": {p['why']}")
    for a in d["cloud_alternatives"]:
        console.print(
            f"  also {a['offer']}: ${a['on_demand_usd_per_gpu_hour']:.2f}/GPU-h, breakeven "
            f"{_months(a['breakeven_months'])}" + (" (estimate)" if a["estimate"] else "")
        )
    if "training_run_cost_usd" in d:
        console.print(f"Training run: {_usd(d['training_run_cost_usd'])} owned, "
                      f"{_usd(d['training_run_cloud_cost_usd'])} on-demand")
    if "cost_per_million_tokens_usd" in d:
        cloud_tok = d["cloud_cost_per_million_tokens_usd"]
        console.print(
            f"Serving: ${d['cost_per_million_tokens_usd']:.3f} per million tokens owned"
            + (f", ${cloud_tok:.3f} on-demand" if cloud_tok is not None else "")
        )
    if d["estimates"]:
        console.print("[yellow]Estimates used[/] (no primary source gave them):")
        for e in d["estimates"]:
            console.print(f"  {e['input']} = {e['value']:,.6g}: {e['why']}", highlight=False)
    for note in d["notes"]:
        console.print(f"  [yellow]note:[/] {note}")
