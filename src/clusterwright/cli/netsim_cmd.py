"""``clusterwright netsim``: collectives as flows on a designed fabric."""

from __future__ import annotations

from typing import Any

import typer
from rich.table import Table

from clusterwright.cli import limits as lim
from clusterwright.cli.common import console, emit_json, fail, state, user_errors
from clusterwright.cli.fabric_cmd import FLAGS as FABRIC_FLAGS
from clusterwright.sim.collectives import ALGORITHMS, COLLECTIVES
from clusterwright.sim.fluid import CCS
from clusterwright.sim.netsim import PLACEMENTS, NetsimRequest, run_netsim
from clusterwright.sim.network import ROUTINGS
from clusterwright.spec.fabric import FabricRequest

# Fields the simulator blames, and the flags users typed for them.
FLAGS = FABRIC_FLAGS | {"degraded": "--degrade", "failures": "--fail", "jobs": "--jobs",
                        "qps": "--qps", "ranks": "--ranks", "seed": "--seed",
                        "size_bytes": "--size-bytes", "cc": "--cc", "incast": "--incast",
                        "pfc": "--pfc", "storm": "--pfc-storm", "collective": "--collective"}


def netsim(
    ctx: typer.Context,
    server: str = typer.Option(..., "--server", help="Server catalog id."),
    nodes: int = typer.Option(..., "--nodes", help="Servers in the fabric."),
    collective: str | None = typer.Option(
        None, "--collective", help=f"One of {', '.join(COLLECTIVES)} (or give --incast)."
    ),
    size_bytes: float = typer.Option(
        ..., "--size-bytes", help="Buffer per rank, bytes (nccl-tests 'size')."
    ),
    routing: str = typer.Option("ecmp", "--routing", help=f"One of {', '.join(ROUTINGS)}."),
    seed: int = typer.Option(0, "--seed", help="ECMP hash seed (and random placement)."),
    algorithm: str = typer.Option(
        "auto", "--algorithm", help=f"One of {', '.join(ALGORITHMS)} (auto: as NCCL picks)."
    ),
    qps: int = typer.Option(1, "--qps", help="Queue pairs per connection (ECMP entropy)."),
    polarized: bool = typer.Option(
        False, "--polarized", help="Same ECMP hash at every tier (hash polarization)."
    ),
    ranks: int | None = typer.Option(None, "--ranks", help="GPUs per job (default: all)."),
    jobs: int = typer.Option(1, "--jobs", help="Jobs running the collective at once."),
    placement: str = typer.Option(
        "contiguous", "--placement", help=f"One of {', '.join(PLACEMENTS)}."
    ),
    no_pxn: bool = typer.Option(False, "--no-pxn", help="All-to-all without PXN relays."),
    fail_: list[str] = typer.Option(
        [], "--fail", help="Device or cable ('a->b') that is down (repeatable)."
    ),
    degrade: list[str] = typer.Option(
        [], "--degrade", help="NAME=FACTOR: a device's or cable's links at that fraction."
    ),
    fail_at: float = typer.Option(0.0, "--fail-at", help="When failures happen, seconds."),
    switch: str | None = typer.Option(None, "--switch", help="Backend switch id."),
    oversubscription: float = typer.Option(1.0, "--oversubscription"),
    spine_oversubscription: float = typer.Option(1.0, "--spine-oversubscription"),
    tiers: int | None = typer.Option(
        None, "--tiers", help="1 (below one SU: no spines), 2 or 3 (default: fewest that fit)."),
    su_hosts: int | None = typer.Option(None, "--su-hosts"),
    dual_plane: bool = typer.Option(False, "--dual-plane", help="Two-plane backend fabric."),
    cc: str | None = typer.Option(
        None, "--cc", help=f"Congestion control of the fluid run: {', '.join(CCS)} (default "
        "dcqcn when --incast, --pfc or --pfc-storm asks for the fluid run)."),
    incast: int | None = typer.Option(
        None, "--incast", help="N-to-1 incast: N servers' GPU 0 send --size-bytes each to "
        "server 0's GPU 0 (with --collective too, both run)."),
    pfc: bool = typer.Option(
        False, "--pfc", help="Lossless Ethernet in the fluid run: PFC pauses from the "
        "switches' shared buffers less their headroom."),
    mtu: int = typer.Option(
        9216, "--mtu", help="Backend MTU, bytes (1,500-9,216): the fluid run's packet and "
        "the PFC headroom."),
    storm: list[str] = typer.Option(
        [], "--pfc-storm", help="Device or cable ('a->b') that pauses its links in for good "
        "(a PFC storm; repeatable; implies --pfc)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Simulate a collective as flows on the designed fabric (max-min fair sharing, ECMP,
    adaptive routing or spraying, failures) and compare with the closed-form cost."""
    if nodes < 1:
        fail(f"--nodes must be at least 1, got {nodes}")
    if tiers is not None and tiers not in (1, 2, 3):
        fail(f"--tiers must be 1, 2 or 3, got {tiers}")
    if fail_at < 0:
        fail(f"--fail-at must not be negative, got {fail_at:g}")
    lim.within(("--nodes", nodes, lim.NODES), ("--size-bytes", size_bytes, lim.SIZE_BYTES),
               ("--seed", seed, lim.SEED), ("--qps", qps, lim.NETSIM_QPS),
               ("--ranks", ranks, lim.PARALLEL), ("--jobs", jobs, lim.NETSIM_JOBS),
               ("--fail-at", fail_at, lim.FAIL_AT_S), ("--incast", incast, lim.INCAST),
               ("--mtu", mtu, lim.MTU))
    if collective is None and incast is None:
        fail("--collective: give a collective (or --incast N)")
    degraded: list[tuple[str, float]] = []
    for item in degrade:
        name, sep, factor = item.rpartition("=")
        try:
            value = float(factor)
        except ValueError:
            value = -1.0
        if not sep or not name or not 0.0 < value <= 1.0:
            fail(f"--degrade: {item!r} is not NAME=FACTOR with FACTOR in (0, 1]")
        degraded.append((name, value))
    with user_errors(FLAGS, name_flags=True):
        fabric = FabricRequest(
            server=server, nodes=nodes, switch=switch, oversubscription=oversubscription,
            spine_oversubscription=spine_oversubscription, tiers=tiers, su_hosts=su_hosts,
            dual_plane=dual_plane, mtu=mtu,
        )
        req = NetsimRequest(
            fabric=fabric, collective=collective, size_bytes=size_bytes, routing=routing,
            algorithm=algorithm, seed=seed, qps=qps, polarized=polarized, ranks=ranks,
            jobs=jobs, placement=placement, pxn=not no_pxn, failures=list(fail_),
            degraded=degraded, fail_at_s=fail_at, cc=cc, incast=incast,
            pfc=pfc or bool(storm), storm=list(storm),
        )
        data = run_netsim(req, state(ctx).catalog())
    if as_json:
        emit_json(data)
    else:
        _render(data)


def _render(d: dict[str, Any]) -> None:
    console.print(
        f"[bold]{d['collective']}[/] of {d['size_bytes'] / 1e6:,.1f} MB over {d['ranks']} GPUs "
        f"({d['algorithm']}, {d['routing']}"
        + (f", {d['qps']} QPs" if d["qps"] > 1 else "")
        + (", polarized" if d["polarized"] else "")
        + f") on {d['nodes']} x {d['tiers']}-tier {d['switch']}: "
        f"{d['completion_time_s'] * 1e3:,.3f} ms, algbw {d['algbw_gbps']:,.1f} GB/s, "
        f"busbw {d['busbw_gbps']:,.1f} GB/s"
    )
    console.print(
        f"closed form ({d['algorithm']}): {d['closed_form_time_s'] * 1e3:,.3f} ms "
        f"({d['error_vs_closed_form']:+.1%}); max network-link utilization "
        f"{d['max_link_utilization']:.0%}"
    )
    if "jobs" in d:
        for j, solo, slow in zip(d["jobs"], d["solo_time_s"], d["slowdown_vs_solo"],
                                 strict=True):
            console.print(f"  {j['job']}: {j['time_s'] * 1e3:,.3f} ms "
                          f"({slow:.2f}x its time alone, {solo * 1e3:,.3f} ms)")
    t = Table(title="Most loaded links", show_edge=False)
    for col in ("link", "tier", "utilization", "GB"):
        t.add_column(col, justify="left" if col in ("link", "tier") else "right")
    for row in d["top_links"][:6]:
        t.add_row(row["link"], row["tier"], f"{row['utilization']:.0%}",
                  f"{row['bytes'] / 1e9:.2f}")
    console.print(t)
    console.print(
        f"[dim]{d['flows']:,} flows, {d['events']} events, simulated in "
        f"{d['timings']['sim_wall_s']:.2f} s[/]"
    )
    if "congestion_control" in d:
        _render_cc(d["congestion_control"])


def _render_cc(c: dict[str, Any]) -> None:
    """The fluid run: completion against the max-min time, queues, marks, pauses."""
    head = f"[bold]{c['cc']}[/]" + (" with PFC" if c["pfc"] else " (lossy: queues unbounded)")
    if c["completed"]:
        console.print(
            f"{head}, MTU {c['mtu']}: {c['completion_time_s'] * 1e3:,.3f} ms "
            f"({c['slowdown_vs_ideal']:.2f}x the max-min time); flow completion mean "
            f"{c['flow_completion_s']['mean'] * 1e3:,.3f} ms, p99 "
            f"{c['flow_completion_s']['p99'] * 1e3:,.3f} ms; Jain {c['jain_fairness']:.3f}")
    else:
        console.print(f"{head}: [red]did not complete[/] (a PFC storm or deadlock holds "
                      "flows)")
    console.print(
        f"max switch queue {c['max_queue_bytes'] / 1e6:,.2f} MB; {c['marked_fraction']:.1%} "
        f"of bytes ECN-marked; {c['paused_links']} link(s) paused by PFC"
        + (f"; {c['switches_over_buffer']} switch(es) over their buffer (a lossy fabric "
           "drops there)" if c.get("switches_over_buffer") else ""))
    for p in c["pauses"][:4]:
        console.print(f"  paused {p['paused_s'] * 1e3:,.3f} ms: {p['link']}")
