"""``clusterwright twin diff`` and ``twin lab``: the live twin."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.markup import escape

from clusterwright.cli import limits as lim
from clusterwright.cli.common import console, emit_json, fail, state, user_errors

app = typer.Typer(
    help="Live twin: compare the cluster as built with its blueprint; prove it on real "
         "lldpd and FRR daemons.",
    no_args_is_help=True,
)

# Request fields and input kinds the library blames, and the flags users typed for them.
FLAGS = {"blueprint": "--blueprint", "lldp": "--lldp", "ibnet": "--ibnet", "slurm": "--slurm",
         "k8s": "--k8s", "gpu_topo": "--gpu-topo", "metrics": "--metrics", "bgp": "--bgp",
         "steps": "--steps", "miswires": "--miswires", "down": "--down", "seed": "--seed",
         "leaves": "--leaves", "spines": "--spines", "server": "--server",
         "switch": "--switch"}
NETWORKS = ("backend", "frontend", "oob")
ROUTINGS = ("ecmp", "adaptive", "spray")
MAX_INPUT_FILES = 64  # of one kind on one command line
MAX_LAB_FAULTS = 64


@app.command("diff")
def diff_cmd(
    ctx: typer.Context,
    blueprint: Path = typer.Option(
        ..., "--blueprint", help="Directory `plan --out` or `fabric design --out` wrote."),
    lldp: list[Path] = typer.Option(
        [], "--lldp", help="lldpctl -f json output: a file, a directory of files named after "
                           "their device, or an object keyed by device (repeatable)."),
    ibnet: list[Path] = typer.Option([], "--ibnet", help="ibnetdiscover output (repeatable)."),
    slurm: list[Path] = typer.Option(
        [], "--slurm", help="Slurm topology.conf, topology.yaml, `scontrol show node` or "
                            "`sinfo` output (repeatable)."),
    k8s: list[Path] = typer.Option([], "--k8s", help="kubectl get nodes -o json (repeatable)."),
    gpu_topo: list[Path] = typer.Option(
        [], "--gpu-topo", help="nvidia-smi topo -m or -q per host (repeatable)."),
    metrics: list[Path] = typer.Option(
        [], "--metrics", help="Prometheus text: DCGM exporter, port counters (repeatable)."),
    bgp: list[Path] = typer.Option(
        [], "--bgp", help="FRR `show bgp summary json` per switch (repeatable)."),
    steps: list[Path] = typer.Option(
        [], "--steps", help="Per-rank step times of a training job (repeatable)."),
    network: list[str] = typer.Option(
        [], "--network", help="Compare only these networks: backend, frontend, oob "
                              "(repeatable; default all)."),
    no_impact: bool = typer.Option(
        False, "--no-impact", help="Skip the simulations (network, step time, scheduling)."),
    routing: str = typer.Option("ecmp", "--routing", help="Routing for the network "
                                "simulation: ecmp, adaptive or spray."),
    seed: int = typer.Option(0, "--seed", help="Seed of the simulations."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Compare the cluster as built (LLDP, ibnetdiscover, Slurm, Kubernetes, nvidia-smi,
    metrics, BGP, step times: any subset) with its blueprint; rank what differs by GPU-hours
    lost per day, each with a repair."""
    from clusterwright.twin.run import TwinRequest, twin_diff

    lim.within(("--seed", seed, lim.SEED))
    inputs = {"lldp": lldp, "ibnet": ibnet, "slurm": slurm, "k8s": k8s, "gpu_topo": gpu_topo,
              "metrics": metrics, "bgp": bgp, "steps": steps}
    for kind, paths in inputs.items():
        if len(paths) > MAX_INPUT_FILES:
            fail(f"{FLAGS[kind]}: {len(paths)} files; at most {MAX_INPUT_FILES} (give a "
                 "directory)")
        for p in paths:
            if not str(p).strip():
                fail(f"{FLAGS[kind]}: empty path")
    given = {k: tuple(v) for k, v in inputs.items() if v}
    if not given:
        fail("give at least one as-built input: --lldp, --ibnet, --slurm, --k8s, --gpu-topo, "
             "--metrics, --bgp or --steps")
    for n in network:
        if n not in NETWORKS:
            fail(f"--network: {n!r} is not one of {', '.join(NETWORKS)}")
    if routing not in ROUTINGS:
        fail(f"--routing: {routing!r} is not one of {', '.join(ROUTINGS)}")
    with user_errors(FLAGS, name_flags=True):
        req = TwinRequest(blueprint=blueprint, inputs=given, impact=not no_impact,
                          routing=routing, seed=seed,
                          networks=tuple(dict.fromkeys(network)) or NETWORKS)
        report = twin_diff(req, state(ctx).catalog())
    data = report.as_dict()
    if as_json:
        emit_json(data)
    else:
        _render(data)


def _render(d: dict[str, Any]) -> None:
    sev = d["by_severity"]
    console.print(
        f"[bold]{d['findings_total']} finding(s)[/] against {escape(str(d['blueprint']))}: "
        f"{sev['critical']} critical, {sev['major']} major, {sev['minor']} minor; "
        f"{d['gpu_hours_lost_per_day']:,.1f} GPU-hours lost per day"
        + (f" of {d['impact']['cluster_gpu_hours_per_day']:,.0f}"
           if "cluster_gpu_hours_per_day" in d["impact"] else ""))
    for f in d["findings"][:25]:
        color = {"critical": "red", "major": "yellow"}.get(f["severity"], "dim")
        console.print(f"[bold]{f['id']}[/] [{color}]{f['severity']:<8}[/] "
                      f"{f['gpu_hours_lost_per_day']:>9,.1f} GPU-h/day  {f['kind']}: "
                      f"{escape(f['summary'])}", highlight=False)
        console.print(f"      [dim]repair:[/] {escape(f['repair'])}", highlight=False)
    if len(d["findings"]) > 25:
        console.print(f"  [dim]... {len(d['findings']) - 25} more (--json for all)[/]")
    imp = d["impact"]
    if "job" in imp:
        console.print(f"[dim]impact measured on: {escape(str(imp['job']))}[/]")
    net = imp.get("network")
    if net:
        console.print(f"network as built: collective {net['collective_slowdown']:.3f}x, step "
                      f"{net['step_slowdown']:.4f}x ({net['faults_simulated']} faults "
                      "simulated together); busiest link "
                      f"{net['max_link_utilization_as_designed']:.0%} -> "
                      f"{net['max_link_utilization_as_built']:.0%} utilized")
    sched = imp.get("scheduling")
    if sched:
        a, b = sched["as_designed"], sched["as_built"]
        console.print(f"scheduling twin: utilization {a['gpu_utilization_mean']:.1%} -> "
                      f"{b['gpu_utilization_mean']:.1%} with {len(imp['drained_nodes'])} "
                      "drained node(s)")
    for u in d["could_not_see"]:
        console.print(f"  [yellow]could not see:[/] {escape(u)}")
    for n in d["notes"][:10] + list(imp.get("notes", []))[:10]:
        console.print(f"  [dim]note: {escape(n)}[/]")


@app.command("lab")
def lab_cmd(
    ctx: typer.Context,
    leaves: int = typer.Option(4, "--leaves", help="Leaf switches in the lab (one host each)."),
    spines: int = typer.Option(2, "--spines", help="Spine switches in the lab."),
    miswires: int = typer.Option(
        1, "--miswires", help="Pairs of leaf-spine cables with their spine ends swapped."),
    down: int = typer.Option(1, "--down", help="Leaf-spine cables built down."),
    seed: int = typer.Option(0, "--seed", help="Which cables get the faults."),
    server: str = typer.Option("dgx-h100", "--server", help="Server whose NIC speed sets links."),
    switch: str | None = typer.Option(None, "--switch", help="Ethernet backend switch id."),
    timeout: float = typer.Option(60.0, "--timeout", help="Seconds to wait for LLDP and BGP."),
    out: Path | None = typer.Option(
        None, "--out", help="Keep the lab's blueprint and the collected dumps here."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Build the lab fabric in network namespaces with deliberately miswired and downed
    cables, run FRR (zebra, bgpd) and lldpd on real daemons, collect LLDP and BGP state,
    and check that the twin finds exactly the injected faults. Needs root and the Debian
    packages frr and lldpd. Exit 0 when it does, 1 when not."""
    from clusterwright.export.fabric import check_out_dir
    from clusterwright.twin.lab import TwinLabRequest, preflight, run_twin_lab

    if leaves < 2 or leaves > 64:
        fail(f"--leaves must be in 2..64, got {leaves}")
    if spines < 1 or spines > 16:
        fail(f"--spines must be in 1..16, got {spines}")
    for flag, v in (("--miswires", miswires), ("--down", down)):
        if v < 0 or v > MAX_LAB_FAULTS:
            fail(f"{flag} must be in 0..{MAX_LAB_FAULTS}, got {v}")
    if timeout <= 0:
        fail(f"--timeout must be positive, got {timeout:g}")
    lim.within(("--timeout", timeout, lim.LAB_TIMEOUT_S), ("--seed", seed, lim.SEED))
    lim.nonempty(("--server", server), ("--switch", switch))
    with user_errors(FLAGS, name_flags=True):
        cat = state(ctx).catalog()
        cat.server(server)
        if switch is not None:
            cat.switch(switch)
        if out is not None:
            check_out_dir(out, False)
        preflight()
        data = run_twin_lab(TwinLabRequest(
            leaves=leaves, spines=spines, miswires=miswires, down=down, seed=seed,
            server=server, switch=switch, timeout_s=timeout, out=out), cat)
    if as_json:
        emit_json(data)
    else:
        mark = "[green]OK[/]" if data["ok"] else "[red]FAILED[/]"
        lab = data["lab"]
        console.print(
            f"{mark} {leaves} leaves x {spines} spines on FRR and lldpd "
            f"({lab['daemons']['lldpd']} lldpd, {lab['daemons']['bgpd']} bgpd): "
            f"{len(data['injected'])} fault(s) injected, {len(data['found'])} found, "
            f"{len(data['false_findings'])} false finding(s), {len(data['missed'])} missed; "
            f"LLDP {lab['lldp_ends_seen']}/{lab['lldp_ends_expected']} ends, BGP "
            f"{lab['bgp_sessions_established']}/{lab['bgp_sessions_expected']} sessions in "
            f"{lab['converge_s']:g} s")
        for f in data["findings"]:
            console.print(f"  {f['id']} {f['kind']}: {f['summary']}\n     repair: {f['repair']}")
        for f in data["false_findings"]:
            console.print(f"  [red]false finding:[/] {f['kind']} {f['summary']}")
        for f in data["missed"]:
            console.print(f"  [red]missed:[/] {f['kind']} {f['detail']}")
    if not data["ok"]:
        raise typer.Exit(code=1)
