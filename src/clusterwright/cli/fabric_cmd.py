"""``clusterwright fabric design`` and ``fabric verify``."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from clusterwright.cli import limits as lim
from clusterwright.cli.common import console, emit_json, fail, state, user_errors
from clusterwright.design.bom import plan_fabric, summary
from clusterwright.design.physical import with_rack_defaults
from clusterwright.export.fabric import check_out_dir, write_fabric
from clusterwright.report.fmt import usd
from clusterwright.spec.fabric import FabricRequest

app = typer.Typer(
    help="Networks: design a rail-optimized fabric and its IaC; verify it on real FRR daemons.",
    no_args_is_help=True,
)

FLAGS = {
    "server": "--server", "nodes": "--nodes", "switch": "--switch", "protocol": "--protocol",
    "oversubscription": "--oversubscription",
    "spine_oversubscription": "--spine-oversubscription", "su_hosts": "--su-hosts",
    "tiers": "--tiers", "dual_plane": "--dual-plane", "frontend_switch": "--frontend-switch",
    "oob_switch": "--oob-switch", "storage_read_gbps_per_gpu": "--storage-gbps-per-gpu",
    "tenants": "--tenants", "rack_kw": "--rack-kw", "cooling": "--cooling",
    "racks_per_row": "--racks-per-row", "rails": "--rails", "leaf_uplinks": "--leaf-uplinks",
    "mtu": "--mtu", "lossless_priorities": "--lossless-priorities",
    "storage_system": "--storage-system", "storage_units": "--storage-units",
}


@contextmanager
def _writing(out: Path) -> Iterator[None]:
    """An --out the system will not let us write (a read-only place such as /proc) is a user
    error naming the flag, not a traceback."""
    try:
        yield
    except OSError as exc:
        fail(f"--out: cannot write {out}: {exc.strerror or exc}")


def _request(**kw: Any) -> FabricRequest:
    with user_errors(FLAGS):
        return FabricRequest(**kw)


@app.command("design")
def design_cmd(
    ctx: typer.Context,
    server: str = typer.Option(..., "--server", help="Server (or rack system) catalog id."),
    nodes: int = typer.Option(..., "--nodes", help="Servers (racks for rack-scale systems)."),
    oversubscription: float = typer.Option(
        1.0, "--oversubscription", help="Leaf down:up bandwidth, 1 = non-blocking (1:1)."
    ),
    spine_oversubscription: float = typer.Option(
        1.0, "--spine-oversubscription", help="Spine down:up towards the core (three tiers)."
    ),
    switch: str | None = typer.Option(
        None, "--switch", help="Backend switch id (default: most ports at the NIC speed)."
    ),
    protocol: str | None = typer.Option(
        None, "--protocol", help="infiniband or ethernet (default: the switch's)."
    ),
    tiers: int | None = typer.Option(
        None, "--tiers", help="1 (below one SU: no spines), 2 or 3 (default: fewest that fit)."),
    su_hosts: int | None = typer.Option(
        None, "--su-hosts", help="Hosts per scalable unit (default: leaf down ports)."
    ),
    dual_plane: bool = typer.Option(
        False, "--dual-plane", help="Two planes: each NIC's halves to leaves in different planes."
    ),
    frontend_switch: str | None = typer.Option(None, "--frontend-switch"),
    oob_switch: str | None = typer.Option(None, "--oob-switch"),
    storage: float | None = typer.Option(
        None, "--storage-gbps-per-gpu",
        help="Storage read GB/s per GPU for frontend links (default: catalog assumption).",
    ),
    storage_system: str | None = typer.Option(
        None, "--storage-system",
        help="Catalog storage system whose units the frontend wires, racks and lists on the "
             "BOM (with --storage-units; a plan's blueprint names them under storage)."),
    storage_units: int | None = typer.Option(
        None, "--storage-units", help="Units of --storage-system."),
    tenants: int = typer.Option(4, "--tenants", help="EVPN tenants (VRFs) on the frontend."),
    rack_kw: float | None = typer.Option(
        None, "--rack-kw",
        help="Power limit per rack, kW (default: 40 under air, the catalog's liquid-cooled "
             "rack limit under liquid)."),
    cooling: str | None = typer.Option(
        None, "--cooling", help="air or liquid (default: the server's own; air for servers "
                                "sold both ways)."),
    racks_per_row: int | None = typer.Option(None, "--racks-per-row"),
    mtu: int = typer.Option(
        9216, "--mtu", help="Backend port MTU, bytes (1,500-9,216): sets PFC headroom."),
    lossless_priorities: int = typer.Option(
        2, "--lossless-priorities", help="PFC lossless priorities (0-8) a RoCE port reserves."),
    out: Path | None = typer.Option(None, "--out", help="Write the exports to this directory."),
    force: bool = typer.Option(False, "--force", help="Replace a non-empty --out directory."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Switch, link, optic, rack, power and cost plan of a cluster's networks, and its IaC."""
    if nodes < 1:
        fail(f"--nodes must be at least 1, got {nodes}")
    if tiers is not None and tiers not in (1, 2, 3):
        fail(f"--tiers must be 1, 2 or 3, got {tiers}")
    if protocol is not None and protocol not in ("infiniband", "ethernet"):
        fail(f"--protocol: {protocol!r} is not one of infiniband, ethernet")
    if cooling is not None and cooling not in ("air", "liquid"):
        fail(f"--cooling: {cooling!r} is not one of air, liquid")
    lim.within(("--nodes", nodes, lim.NODES), ("--mtu", mtu, lim.MTU),
               ("--lossless-priorities", lossless_priorities, lim.LOSSLESS_PRIORITIES))
    req = _request(
        server=server, nodes=nodes, oversubscription=oversubscription,
        spine_oversubscription=spine_oversubscription, switch=switch, protocol=protocol,
        tiers=tiers, su_hosts=su_hosts, dual_plane=dual_plane, frontend_switch=frontend_switch,
        oob_switch=oob_switch, storage_read_gbps_per_gpu=storage, tenants=tenants,
        rack_kw=rack_kw or 40.0, cooling=cooling or "air", racks_per_row=racks_per_row,
        mtu=mtu, lossless_priorities=lossless_priorities, storage_system=storage_system,
        storage_units=storage_units,
    )
    with user_errors(FLAGS, name_flags=True):
        if out is not None:
            check_out_dir(out, force)  # refuse before any work, not after
        cat = state(ctx).catalog()
        req = with_rack_defaults(req, cat, cooling, rack_kw)
        fab = plan_fabric(req, cat)
        data = summary(fab)
        if out is not None:
            with _writing(out):
                files = write_fabric(fab, out, force=force)
            data["out"] = str(out)
            data["files"] = len(files)
    if as_json:
        emit_json(data)
    else:
        _render(data)


def _render(d: dict[str, Any]) -> None:
    console.print(
        f"[bold]{d['nodes']} x {d['server']}[/] = {d['gpus']} GPUs, {d['hosts']} hosts: "
        f"{d['tiers']}-tier {d['protocol']} {d['switch']} ({d['radix']} x "
        f"{d['link_speed_gbps']:g}G), {d['scalable_units']} SU of {d['su_hosts']} hosts"
        + (f", {d['pods']} pods" if d["tiers"] == 3 else "")
        + (f", {d['planes']} planes" if d["planes"] > 1 else "")
    )
    t = Table(title="Backend fabric", show_edge=False)
    for col in ("tier", "switches", "links"):
        t.add_column(col, justify="right" if col != "tier" else "left")
    lt = d["links_by_tier"]
    t.add_row("leaf", str(d["leaf_switches"]), f"{lt['node-leaf']} node-leaf")
    t.add_row("spine", str(d["spine_switches"]), f"{lt['leaf-spine']} leaf-spine")
    if d["tiers"] == 3:
        t.add_row("core", str(d["core_switches"]), f"{lt['spine-core']} spine-core")
    console.print(t)
    fe, oob, racks = d["frontend"], d["oob"], d["racks"]
    console.print(
        f"Frontend ({fe['switch']}): {fe['leaf_switches']} leaves, {fe['spine_switches']} spines"
        + (f", {fe['core_switches']} cores" if fe["core_switches"] else "")
        + f", {fe['storage_ports']} storage ports, {fe['tenants']} EVPN tenants"
    )
    console.print(
        f"Out-of-band ({oob['switch']}): {oob['leaf_switches']} switches, {oob['ports']} ports"
    )
    console.print(
        f"Racks: {racks['compute']} compute + {racks['network']} network in {racks['rows']} rows"
        f"; {d['transceivers']} transceivers, {d['cables']} cables"
    )
    cost = usd(d['cost_usd'])
    if d["unpriced"]:
        cost += f" (unpriced: {', '.join(d['unpriced'])})"
    console.print(
        f"Network power {d['power_w'] / 1e3:,.1f} kW typical ({d['power_max_w'] / 1e3:,.1f} kW "
        f"max); network cost {cost}"
    )
    _render_pfc(d.get("pfc"))
    for why in d["choices"].values():
        console.print(f"  [dim]{why}[/]")
    for note in d["notes"]:
        console.print(f"  [yellow]note:[/] {note}")
    if "out" in d:
        console.print(f"Wrote {d['files']} files to {d['out']}")


def _render_pfc(p: dict[str, Any] | None) -> None:
    """Headroom per port type and the tightest switch (RoCE backends)."""
    if not p or p["protocol"] != "ethernet" or not p["port_types"]:
        return
    t = Table(title=f"PFC headroom per lossless priority (MTU {p['mtu']}, "
                    f"{p['lossless_priorities']} lossless priorities)", show_edge=False)
    for col in ("port", "Gb/s", "ports", "cable m", "headroom KB", "xoff KB"):
        t.add_column(col, justify="left" if col == "port" else "right")
    for r in p["port_types"]:
        cable = (f"{r['cable_m_min']:g}" if r["cable_m_min"] == r["cable_m_max"]
                 else f"{r['cable_m_min']:g}-{r['cable_m_max']:g}")
        t.add_row(r["port"], f"{r['speed_gbps']:g}", str(r["ports"]), cable,
                  f"{r['headroom_bytes'] / 1024:,.0f}", f"{r['xoff_bytes'] / 1024:,.0f}")
    console.print(t)
    w = p["worst_switch"]
    if w:
        color = "red" if p["switches_short_count"] else "green"
        console.print(
            f"  [{color}]{w['name']}: {w['headroom_bytes'] / 1e6:.1f} MB headroom of its "
            f"{w['buffer_bytes'] / 1e6:g} MB buffer; {w['priorities_that_fit']} lossless "
            f"priorities fit[/]"
            + (f"; {p['switches_short_count']} switch(es) short" if p["switches_short_count"]
               else ""))


@app.command("verify")
def verify_cmd(
    ctx: typer.Context,
    leaves: int = typer.Option(4, "--leaves", help="Leaf switches in the lab (one host each)."),
    spines: int = typer.Option(2, "--spines", help="Spine switches in the lab (per pod)."),
    pods: int = typer.Option(
        1, "--pods", help="Pods: above 1, a three-tier lab with core switches."
    ),
    server: str = typer.Option("dgx-h100", "--server", help="Server whose NIC speed sets links."),
    switch: str | None = typer.Option(
        None, "--switch", help="Ethernet backend switch id (default: most ports)."
    ),
    timeout: float = typer.Option(90.0, "--timeout", help="Seconds to wait for convergence."),
    keep: bool = typer.Option(False, "--keep", help="Leave the lab up for inspection."),
    out: Path | None = typer.Option(
        None, "--out", help="Also write the lab design's exports (configs) here."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Run a scaled-down generated Ethernet fabric on real FRR daemons (zebra, bgpd) in
    network namespaces, with the generated configs unmodified, and check it. Needs root and
    the Debian package frr. Exit 0 when every check passes, 1 when one fails."""
    from clusterwright.lab import preflight, run_lab
    from clusterwright.lab.fabric_lab import build_lab

    if leaves < 2 or leaves > 64:
        fail(f"--leaves must be in 2..64, got {leaves}")
    if spines < 1 or spines > 16:
        fail(f"--spines must be in 1..16, got {spines}")
    if timeout <= 0:
        fail(f"--timeout must be positive, got {timeout:g}")
    lim.within(("--timeout", timeout, lim.LAB_TIMEOUT_S))
    if pods < 1 or leaves % pods:
        fail(f"--pods {pods} must be at least 1 and divide --leaves {leaves}")
    with user_errors(FLAGS, name_flags=True):
        if out is not None:
            check_out_dir(out, False)
        preflight()
        cat = state(ctx).catalog()
        fab, spec = build_lab(cat, leaves, spines, server, switch, pods)
        if out is not None:
            with _writing(out):
                write_fabric(fab, out)
        result = run_lab(spec, timeout_s=timeout, keep=keep)
    data = {
        "sessions_established": result.sessions_established,
        "sessions_expected": result.sessions_expected,
        "multipath_ok": result.multipath_ok,
        "ping_ok": result.ping_ok,
        "ok": result.ok(),
        "converge_s": round(result.converge_s, 2),
        "leaves": sum(1 for d in fab.devices if d.role == "leaf"),
        "spines": sum(1 for d in fab.devices if d.role == "spine"),
        "cores": sum(1 for d in fab.devices if d.role == "core"),
        "tiers": fab.shape.tiers,
        "hosts": len(spec.hosts),
        "switch": fab.backend.switch.id,
        "route_checks": len(spec.route_checks),
        "pings": len(spec.pings),
        "failures": result.failures,
        "run_id": result.run_id,
        "kept": keep,
    }
    if as_json:
        emit_json(data)
    else:
        mark = "[green]OK[/]" if data["ok"] else "[red]FAILED[/]"
        console.print(
            f"{mark} {data['leaves']} leaves x {data['spines']} spines"
            + (f" x {data['cores']} cores" if data["cores"] else "")
            + f" ({data['switch']} "
            f"configs, FRR): {data['sessions_established']}/{data['sessions_expected']} BGP "
            f"sessions, multipath {'ok' if data['multipath_ok'] else 'FAILED'} "
            f"({data['route_checks']} routes), ping {'ok' if data['ping_ok'] else 'FAILED'} "
            f"({data['pings']} pairs), converged in {data['converge_s']:g} s"
        )
        for f in result.failures:
            console.print(f"  [red]-[/] {f}")
        if keep:
            console.print(f"  lab left up: run id {result.run_id}; enter with "
                          f"`ip netns exec <ns> vtysh -N <ns>`; namespaces: "
                          f"{', '.join(f'{k}={v}' for k, v in sorted(result.namespaces.items()))}")
    if not result.ok():
        raise typer.Exit(code=1)
