"""``clusterwright ops carbon``: energy and carbon of GPU-hours of work on a grid."""

from __future__ import annotations

from typing import Any

import typer

from clusterwright.cli import limits as lim
from clusterwright.cli.common import console, err_console, run_command, state, user_errors

FLAGS = {"server": "--server", "region": "--region", "year": "--year",
         "renewable_share": "--renewable-share", "tensor_busy": "--tensor-busy"}


def _render(d: dict[str, Any]) -> None:
    g, e, c, card = d["grid"], d["energy"], d["carbon"], d["model_card_convention"]
    console.print(
        f"[bold]{d['gpu_hours']:,.0f} GPU-hours[/] on {d['server']} ({d['per_gpu_kw']:.3f} kW "
        f"per GPU sustained), PUE {d['pue']:g}, grid {g['region']} {g['year']} "
        f"({g['gco2_per_kwh']:g} gCO2e/kWh, renewables {100 * g['renewable_share']:.0f} %)")
    console.print(
        f"  energy {e['facility_kwh'] / 1e3:,.1f} MWh facility ({e['it_kwh'] / 1e3:,.1f} MWh IT)"
        f"; carbon {c['location_based_t']:,.1f} t location-based, {c['market_based_t']:,.1f} t "
        f"market-based, {c['embodied_t']:,.1f} t embodied")
    console.print(
        f"  model-card convention ({card['basis']}): {card['kwh'] / 1e3:,.1f} MWh, "
        f"{card['location_based_t']:,.1f} t location-based")
    s = d.get("serving")
    if s:
        console.print(f"  serving: {s['kwh_per_million_tokens']:,.3f} kWh and "
                      f"{s['gco2_per_million_tokens']:,.0f} gCO2e per million tokens "
                      f"({s['kw_per_gpu']:.3f} kW per GPU)")
        console.print(f"    {s['basis']}")


def carbon(
    ctx: typer.Context,
    gpu_hours: float = typer.Option(..., "--gpu-hours", help="GPU-hours of the work."),
    server: str = typer.Option("dgx-h100", "--server", help="Server catalog id."),
    region: str | None = typer.Option(
        None, "--region", help="Grid region (catalog list grids; default: world)."),
    year: int | None = typer.Option(None, "--year", help="Grid year (default: latest)."),
    renewable_share: float = typer.Option(
        0.0, "--renewable-share", help="Share of energy from contracted renewables, 0..1."),
    pue: float | None = typer.Option(None, "--pue", help="Facility / IT power (default: "
                                     "the cooling's catalog PUE)."),
    tokens_per_s_per_gpu: float | None = typer.Option(
        None, "--tokens-per-s-per-gpu", help="Also energy per million served tokens."),
    tensor_busy: float = typer.Option(
        0.0, "--tensor-busy", help="Share of the serving step the tensor cores are busy at "
        "their peak, 0..1 (the serving power model; default 0: memory-bound decode at small "
        "batches, the model's floor). `plan` derives it from the workload."),
    prefill_time_share: float | None = typer.Option(
        None, "--prefill-time-share", help="Deprecated and ignored: serving power now comes "
        "from the serving power model (use --tensor-busy).", hidden=False),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Energy (full system and the model-card convention), location- and market-based carbon
    and embodied carbon of --gpu-hours on a grid region."""
    from clusterwright.plan.energy import CarbonRequest, carbon_report

    lim.nonempty(("--server", server), ("--region", region))
    lim.within(("--gpu-hours", gpu_hours, lim.GPU_HOURS), ("--year", year, lim.GRID_YEAR),
               ("--renewable-share", renewable_share, lim.RENEWABLE_SHARE),
               ("--pue", pue, lim.PUE), ("--tokens-per-s-per-gpu", tokens_per_s_per_gpu,
                                         lim.TOKENS_PER_S),
               ("--prefill-time-share", prefill_time_share, lim.PREFILL_SHARE),
               ("--tensor-busy", tensor_busy, lim.TENSOR_BUSY))
    if prefill_time_share is not None:
        err_console.print("note: --prefill-time-share is deprecated and ignored: prefill and "
                          "decode power both come from the serving power model now (pass "
                          "--tensor-busy for a busier GPU)")
    with user_errors():
        cat = state(ctx).catalog()
    req = CarbonRequest(gpu_hours=gpu_hours, server=server, region=region, year=year,
                        renewable_share=renewable_share, pue=pue,
                        tokens_per_s_per_gpu=tokens_per_s_per_gpu,
                        tensor_busy=tensor_busy,
                        prefill_time_share=prefill_time_share or 0.0)

    def payload() -> dict[str, Any]:
        with user_errors(FLAGS, name_flags=True):
            return carbon_report(cat, req)

    run_command(as_json, payload, _render)
