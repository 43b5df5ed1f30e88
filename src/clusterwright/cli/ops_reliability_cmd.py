"""``clusterwright ops reliability`` and ``ops checkpoint``: interruptions at a scale, job MTBF,
checkpoint intervals (Young, Daly), ETTR, hot spares, and a Monte Carlo of time to train."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, Literal

import typer
from rich.table import Table

from clusterwright.catalog.registry import Catalog, resolve_model
from clusterwright.catalog.schema import ModelArch
from clusterwright.cli import limits as lim
from clusterwright.cli.common import console, fail, run_command, state, user_errors
from clusterwright.errors import ClusterwrightError
from clusterwright.model.precision import Precision
from clusterwright.plan.ops_reliability import (
    DEFAULT_SERVER,
    CheckpointRequest,
    ReliabilityRequest,
    checkpoint_report,
    reliability_report,
)

# Fields the Monte Carlo blames, and the flags users typed for them.
MC_FLAGS = {"trials": "--trials", "spares": "--hot-spares", "seed": "--seed"}


def _check(flag: str, value: float | None, minimum: float = 0.0, strict: bool = True) -> None:
    if value is None:
        return
    bad = not math.isfinite(value) or (value <= minimum if strict else value < minimum)
    if bad:
        need = f"greater than {minimum:g}" if strict else f"at least {minimum:g}"
        fail(f"{flag}: must be {need}, got {value:g}")


def _model(cat: Catalog, model: str | None) -> ModelArch | None:
    """``--model`` resolved as soon as it is given, so a bad id or file is an error even
    where the model would not be needed."""
    if model is None:
        return None
    try:
        return resolve_model(cat, model)
    except ClusterwrightError as exc:
        fail(f"--model: {exc}")


# --------------------------------------------------------------------------- ops reliability


def _render_reliability(d: dict[str, Any]) -> None:
    mc = d.get("monte_carlo")
    console.print(
        f"[bold]{d['gpus']:,} x {d['gpu']}[/] ({d['hosts']:,} hosts, {d['links']:,.0f} fabric "
        f"links) over {d['days']:g} days: [bold]{d['expected_interruptions']:.1f}[/] unexpected "
        f"interruptions (+{d['planned_interruptions']:.1f} planned); job MTBF "
        f"{d['job_mtbf_hours']:.2f} h. {d['rate_basis']}."
    )
    t = Table(title="expected interruptions by cause", title_justify="left")
    t.add_column("cause")
    t.add_column("category")
    t.add_column("count", justify="right")
    for k, v in sorted(d["by_cause"].items(), key=lambda kv: -kv[1]):
        t.add_row(k, d["categories"][k], f"{v:.2f}")
    console.print(t)
    if mc:
        m = Table(title=f"Monte Carlo, {mc['trials']} trials (seed {mc['seed']})",
                  title_justify="left")
        for col in ("", "p10", "p50", "p90", "mean"):
            m.add_column(col, justify="right" if col else "left")
        for key, label in (("time_to_train_days", "time to train, days"),
                           ("interruptions", "interruptions"), ("ettr", "ETTR")):
            q = mc[key]
            m.add_row(label, *(f"{q[p]:.3f}" for p in ("p10", "p50", "p90", "mean")))
        console.print(m)
        console.print(
            f"analytical ETTR {mc['analytical_ettr']:.4f}, time to train "
            f"{mc['analytical_time_to_train_days']:.2f} days; checkpoint every "
            f"{mc['interval_s']:.0f} s ({mc['checkpoint_write_s']:.1f} s each), restart "
            f"{mc['restart_s']:.0f} s"
        )
        lost = mc.get("gpu_hours_lost") or {}
        if lost:
            console.print("GPU-hours lost per run (mean): " + ", ".join(
                f"{k.replace('_', ' ')} {v:,.0f}" for k, v in lost.items()))
    fm = d.get("failure_model")
    if fm and mc:
        lm, fs = fm["lemons"], fm["fail_slow"]
        losses = ", ".join(f"{x['kind']} {100 * x['probability_per_failure']:.2g} % "
                           f"({x['nodes']} node(s), {x['repair_hours']:g} h)"
                           for x in fm["node_losses"])
        console.print(
            f"fleet model: {lm['expected_in_job']:.1f} lemon nodes expected "
            f"({lm['rate_multiplier']:g}x); node losses per failure: {losses}; fail-slows "
            f"stretch compute x{fs['expected_stretch']:.3f} ({fs['slowdown']:g}x for "
            f"{fs['mean_hours']:g} h episodes); sources: catalog reliability.yaml")


def reliability(
    ctx: typer.Context,
    gpus: int = typer.Option(..., "--gpus", help="GPUs in the job."),
    days: float = typer.Option(..., "--days", help="Wall-clock days to count interruptions over."),
    gpu: str | None = typer.Option(None, "--gpu", help="GPU catalog id (default: the server's)."),
    server: str | None = typer.Option(
        None, "--server", help=f"Server catalog id; sets GPUs per host (default {DEFAULT_SERVER})."
    ),
    radix: int = typer.Option(64, "--radix", help="Switch radix of the fat-tree estimate."),
    switches: float | None = typer.Option(None, "--switches", help="Fabric switches (override)."),
    links: float | None = typer.Option(None, "--links", help="Fabric links (override)."),
    monte_carlo: bool = typer.Option(
        False, "--monte-carlo", help="Also simulate a training run (time-to-train distribution)."
    ),
    train_days: float | None = typer.Option(
        None, "--train-days", help="Failure-free compute days to train (default: --days)."
    ),
    checkpoint_write_s: float | None = typer.Option(
        None, "--checkpoint-write-s", help="Seconds per checkpoint (or give --model)."
    ),
    model: str | None = typer.Option(None, "--model", help="Model id or YAML: checkpoint size."),
    restart_s: float | None = typer.Option(
        None, "--restart-s", help="Seconds per restart (default: assumption + restore)."
    ),
    interval_s: float | None = typer.Option(
        None, "--interval-s", help="Compute seconds between checkpoints (default: Daly)."
    ),
    hot_spares: int | None = typer.Option(None, "--hot-spares", help="Spare nodes in the pool."),
    repair_hours: float | None = typer.Option(
        None, "--repair-hours", help="Hours a failed node is out (default: assumption)."
    ),
    trials: int = typer.Option(1000, "--trials", help="Monte Carlo trials."),
    seed: int = typer.Option(0, "--seed", help="Monte Carlo seed."),
    iid: bool = typer.Option(
        False, "--iid", help="Monte Carlo without the fleet model (no lemons, domain losses or "
        "fail-slows): i.i.d. failures, one node each."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Expected interruptions by cause and job MTBF for a job of --gpus GPUs over --days."""
    lim.within(("--gpus", gpus, lim.GPUS), ("--days", days, lim.RELIABILITY_DAYS),
               ("--radix", radix, lim.RADIX), ("--switches", switches, lim.FABRIC_COUNT),
               ("--links", links, lim.FABRIC_COUNT),
               ("--train-days", train_days, lim.RELIABILITY_DAYS),
               ("--checkpoint-write-s", checkpoint_write_s, lim.SECONDS),
               ("--restart-s", restart_s, lim.SECONDS_OR_ZERO),
               ("--interval-s", interval_s, lim.SECONDS),
               ("--hot-spares", hot_spares, lim.HOT_SPARES),
               ("--repair-hours", repair_hours, lim.HOURS), ("--trials", trials, lim.TRIALS),
               ("--seed", seed, lim.SEED))
    if not monte_carlo:
        for flag, given in (("--train-days", train_days),
                            ("--checkpoint-write-s", checkpoint_write_s), ("--model", model),
                            ("--restart-s", restart_s), ("--interval-s", interval_s),
                            ("--hot-spares", hot_spares), ("--repair-hours", repair_hours),
                            ("--iid", True if iid else None)):
            if given is not None:
                fail(f"{flag}: only with --monte-carlo (it sets up the simulated run)")
    _check("--gpus", gpus, 1, strict=False)
    _check("--days", days)
    _check("--radix", radix, 2, strict=False)
    _check("--switches", switches, strict=False)
    _check("--links", links, strict=False)
    _check("--train-days", train_days)
    _check("--checkpoint-write-s", checkpoint_write_s)
    _check("--restart-s", restart_s, strict=False)
    _check("--interval-s", interval_s)
    _check("--hot-spares", hot_spares, strict=False)
    _check("--repair-hours", repair_hours, strict=False)
    _check("--trials", trials, 1, strict=False)
    with user_errors():
        cat = state(ctx).catalog()
    req = ReliabilityRequest(
        gpus=gpus, days=days, gpu=gpu, server=server, radix=radix, switches=switches,
        links=links, monte_carlo=monte_carlo, train_days=train_days,
        checkpoint_write_s=checkpoint_write_s, model=_model(cat, model), restart_s=restart_s,
        interval_s=interval_s, hot_spares=hot_spares, repair_hours=repair_hours,
        trials=trials, seed=seed, fleet_model=not iid)

    def payload() -> dict[str, Any]:
        with user_errors(MC_FLAGS, name_flags=True):
            return reliability_report(cat, req)

    run_command(as_json, payload, _render_reliability)


# --------------------------------------------------------------------------- ops checkpoint


def _render_checkpoint(d: dict[str, Any]) -> None:
    t = Table(title="checkpoint interval", title_justify="left", show_header=False)
    t.add_column("quantity")
    t.add_column("value", justify="right")
    rows = [
        ("checkpoint write", f"{d['checkpoint_write_s']:.2f} s"),
        ("job MTBF", f"{d['mtbf_hours']:.3f} h"),
        ("restart", f"{d['restart_s']:.1f} s"),
        ("Young interval sqrt(2 delta M)", f"{d['young_interval_s']:.1f} s"),
        ("Daly interval", f"{d['daly_interval_s']:.1f} s"),
        ("ETTR at Daly (exponential model)", f"{d['ettr']:.4f}"),
        ("ETTR first order at Young", f"{d['ettr_first_order']:.4f}"),
    ]
    if "checkpoint_bytes" in d:
        rows.insert(0, ("checkpoint size", f"{d['checkpoint_bytes'] / 1e12:.3f} TB"))
    if "ettr_at_interval" in d:
        rows.append((f"ETTR at {d['interval_s']:g} s", f"{d['ettr_at_interval']:.4f}"))
    if "spare_coverage_probability" in d:
        rows.append(("spare coverage probability", f"{d['spare_coverage_probability']:.4f}"))
        rows.append(("mean wait for a spare per failure", f"{d['expected_spare_wait_s']:.0f} s"))
    for a, b in rows:
        t.add_row(a, b)
    console.print(t)


def checkpoint(
    ctx: typer.Context,
    checkpoint_write_s: float | None = typer.Option(
        None, "--checkpoint-write-s", help="Seconds per checkpoint write (or --model + --gpus)."
    ),
    mtbf_hours: float | None = typer.Option(
        None, "--mtbf-hours", help="Job MTBF, hours (or --gpus: from the catalog rates)."
    ),
    restart_s: float | None = typer.Option(
        None, "--restart-s", help="Seconds per restart, lost work excluded (default: assumption)."
    ),
    model: str | None = typer.Option(None, "--model", help="Model id or YAML: checkpoint size."),
    gpus: int | None = typer.Option(None, "--gpus", help="GPUs in the job."),
    gpu: str | None = typer.Option(None, "--gpu", help="GPU catalog id."),
    server: str | None = typer.Option(None, "--server", help="Server catalog id."),
    precision: Precision = typer.Option(Precision.bf16, "--precision", help="Weight precision."),
    optimizer: str = typer.Option("adam", "--optimizer", help="adam or sgd."),
    writers: int | None = typer.Option(
        None, "--writers", help="GPUs writing in parallel (default: all, a sharded checkpoint)."
    ),
    storage_gbps: float | None = typer.Option(
        None, "--storage-gbps", help="Storage system cap, GB/s (default: aggregate assumption)."
    ),
    interval_s: float | None = typer.Option(
        None, "--interval-s", help="Also evaluate ETTR at this checkpoint interval, s."
    ),
    hot_spares: int | None = typer.Option(None, "--hot-spares", help="Spare nodes (needs --gpus)."),
    repair_hours: float | None = typer.Option(None, "--repair-hours", help="Node repair, hours."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Young and Daly checkpoint intervals and the ETTR they give."""
    lim.within(("--checkpoint-write-s", checkpoint_write_s, lim.SECONDS),
               ("--mtbf-hours", mtbf_hours, lim.MTBF_HOURS),
               ("--restart-s", restart_s, lim.SECONDS_OR_ZERO), ("--gpus", gpus, lim.GPUS),
               ("--writers", writers, lim.GPUS), ("--storage-gbps", storage_gbps, lim.STORAGE_GBPS),
               ("--interval-s", interval_s, lim.SECONDS),
               ("--hot-spares", hot_spares, lim.HOT_SPARES),
               ("--repair-hours", repair_hours, lim.HOURS))
    _check("--checkpoint-write-s", checkpoint_write_s)
    _check("--mtbf-hours", mtbf_hours)
    _check("--restart-s", restart_s, strict=False)
    _check("--gpus", gpus, 1, strict=False)
    _check("--writers", writers, 1, strict=False)
    _check("--storage-gbps", storage_gbps)
    _check("--interval-s", interval_s)
    _check("--hot-spares", hot_spares, strict=False)
    _check("--repair-hours", repair_hours, strict=False)
    if optimizer not in ("adam", "sgd"):
        fail(f"--optimizer: {optimizer!r} is not one of adam, sgd")
    with user_errors():
        cat = state(ctx).catalog()
    opt: Literal["adam", "sgd"] = "adam" if optimizer == "adam" else "sgd"
    req = CheckpointRequest(
        checkpoint_write_s=checkpoint_write_s, mtbf_hours=mtbf_hours, restart_s=restart_s,
        gpus=gpus, gpu=gpu, server=server, precision=precision.value, optimizer=opt,
        writers=writers, storage_gbps=storage_gbps, interval_s=interval_s,
        hot_spares=hot_spares, repair_hours=repair_hours)
    with user_errors(name_flags=True):
        # What needs what, before the model is read (a model id is checked once it counts).
        req.check(model_given=model is not None)
    req = replace(req, model=_model(cat, model))

    def payload() -> dict[str, Any]:
        with user_errors(name_flags=True):
            return checkpoint_report(cat, req)

    run_command(as_json, payload, _render_checkpoint)
