"""``clusterwright ops power``: IT and facility power, racks and cooling, energy, training swing."""

from __future__ import annotations

from typing import Any

import typer
from rich.table import Table

from clusterwright.catalog.registry import Catalog
from clusterwright.catalog.schema import StorageSystem
from clusterwright.cli import limits as lim
from clusterwright.cli.common import console, emit_json, fail, state, user_errors
from clusterwright.errors import ClusterwrightError

# The fabric's own options, which these commands leave at their defaults: a refusal that
# names one points to the command that takes it.
FABRIC_ONLY = {f: f"`fabric design --{f.replace('_', '-')}`" for f in (
    "switch", "oversubscription", "spine_oversubscription", "dual_plane", "su_hosts", "tiers",
    "protocol", "racks_per_row")}

FLAGS = {
    **FABRIC_ONLY,
    "server": "--server", "nodes": "--nodes", "cooling": "--cooling", "rack_kw": "--rack-kw",
    "pue": "--pue", "storage_system": "--storage-system", "storage_units": "--storage-units",
}

STORAGE_SYSTEM_HELP = ("Catalog storage system of the tier (`ops storage` or a plan's blueprint "
                       "names it): its units are wired, racked and powered with the cluster "
                       "(with --storage-units).")


def storage_tier(cat: Catalog, system: str | None, units: int | None) -> StorageSystem | None:
    """The catalog storage system of --storage-system (with --storage-units), or None."""
    if (system is None) != (units is None):
        fail("--storage-system: give --storage-system and --storage-units together")
    if system is None:
        return None
    lim.within(("--storage-units", units, lim.STORAGE_UNITS))
    try:
        found = cat.get("storage_systems", system)
    except ClusterwrightError as exc:
        fail(f"--storage-system: {exc}")
    assert isinstance(found, StorageSystem)
    return found


def power(
    ctx: typer.Context,
    server: str = typer.Option(..., "--server", help="Server (or rack system) catalog id."),
    nodes: int = typer.Option(..., "--nodes", help="Servers (racks for rack-scale systems)."),
    pue: float | None = typer.Option(
        None, "--pue", help="Facility / IT power, >= 1 (default: catalog pue_air or pue_liquid)."
    ),
    cooling: str | None = typer.Option(
        None, "--cooling", help="air or liquid (default: the server's own cooling)."
    ),
    rack_kw: float | None = typer.Option(
        None, "--rack-kw", help="Power limit per rack, kW (default: the cooling mode's limit)."
    ),
    storage_system: str | None = typer.Option(None, "--storage-system",
                                              help=STORAGE_SYSTEM_HELP),
    storage_units: int | None = typer.Option(None, "--storage-units",
                                             help="Units of --storage-system."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Per-rack kW and cooling feasibility, IT power (typical and nameplate), facility power
    with PUE, energy per year and the power swing of synchronous training."""
    from clusterwright.design.power_plan import PowerRequest, power_plan

    if nodes < 1:
        fail(f"--nodes must be at least 1, got {nodes}")
    if cooling is not None and cooling not in ("air", "liquid"):
        fail(f"--cooling: {cooling!r} is not one of air, liquid")
    if pue is not None and not pue >= 1.0:
        fail(f"--pue must be at least 1.0 (facility power / IT power), got {pue:g}")
    if rack_kw is not None and not rack_kw > 0:
        fail(f"--rack-kw must be positive, got {rack_kw:g}")
    lim.within(("--nodes", nodes, lim.NODES), ("--pue", pue, lim.PUE),
               ("--rack-kw", rack_kw, lim.RACK_KW))
    with user_errors(FLAGS, name_flags=True):
        cat = state(ctx).catalog()
        tier = storage_tier(cat, storage_system, storage_units)
        req = PowerRequest(
            server=server, nodes=nodes, cooling=cooling, rack_kw=rack_kw, pue=pue,
            storage_system=storage_system, storage_units=storage_units,
            storage_kw=(storage_units or 0) * tier.power_w / 1e3 if tier is not None else 0.0)
        try:
            cat.server(server)
        except ClusterwrightError as exc:
            fail(f"--server: {exc}")
        data = power_plan(req, cat).as_dict()
    if as_json:
        emit_json(data)
    else:
        _render(data)


def _render(d: dict[str, Any]) -> None:
    it, fac, r, pr = d["it_power_kw"], d["facility_power_kw"], d["racks"], d["per_rack_kw"]
    console.print(
        f"[bold]{d['nodes']} x {d['server']}[/] = {d['gpus']} GPUs, {d['cooling']}-cooled, "
        f"PUE {d['pue']:g}"
    )
    t = Table(show_edge=False)
    for col in ("power", "typical kW", "nameplate kW"):
        t.add_column(col, justify="left" if col == "power" else "right")
    b = d["it_power_breakdown_kw"]
    t.add_row("servers", f"{b['servers_typical']:,.1f}", f"{b['servers_nameplate']:,.1f}")
    t.add_row("network", f"{b['network_typical']:,.1f}", f"{b['network_nameplate']:,.1f}")
    t.add_row("IT total", f"{it['typical']:,.1f}", f"{it['nameplate']:,.1f}")
    t.add_row("facility (x PUE)", f"{fac['typical']:,.1f}", f"{fac['nameplate']:,.1f}")
    console.print(t)
    held = (f"one {d['server']} over {r['racks_per_system']} racks"
            if r["racks_per_system"] > 1 else f"{r['servers_per_rack']} servers")
    console.print(
        f"Racks: {r['compute']} compute ({held}, up to "
        f"{pr['compute_nameplate_max']:.1f} kW nameplate, {pr['compute_typical_max']:.1f} kW "
        f"typical) + {r['network']} network (up to {pr['network_nameplate_max']:.1f} kW); "
        f"limit {r['limit_kw']:g} kW"
    )
    for mode, c in d["cooling_feasibility"].items():
        ok = "[green]fits[/]" if c["feasible"] else "[red]does not fit[/]"
        console.print(
            f"  {mode}: {ok} (limit {c['limit_kw']:g} kW per rack, densest rack "
            f"{c['densest_rack_kw']:.1f} kW; {c['servers_per_rack']} servers per rack)"
        )
    console.print(f"Energy per year: {d['annual_energy_kwh'] / 1e6:,.2f} GWh "
                  f"({d['annual_energy_basis']})")
    s = d["training_swing"]
    console.print(
        f"Training power swing: {s['swing_mw']:.2f} MW ({100 * s['swing_fraction']:.0f}% of "
        f"{s['high_mw']:.2f} MW) within {s['ramp_s']:g} s = {s['ramp_mw_per_s']:.2f} MW/s "
        f"(GPU {s['gpu_tdp_w']:g} W -> {s['gpu_idle_w']:g} W idle)"
    )
    for note in d["notes"]:
        console.print(f"  [yellow]note:[/] {note}")
