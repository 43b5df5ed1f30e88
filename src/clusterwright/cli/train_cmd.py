"""``clusterwright train estimate`` and ``train plan``."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import typer
from rich.table import Table

from clusterwright.catalog.registry import Catalog, resolve_model
from clusterwright.catalog.schema import Gpu, ModelArch
from clusterwright.cli.common import console, emit_json, fail, gb, state, user_errors
from clusterwright.design.train import (
    RECOMPUTE,
    LayoutResult,
    SizedPlan,
    default_global_batch,
    estimate_layout,
    job_for,
    pareto_front,
    plan,
    sized,
    smallest_for_deadline,
)
from clusterwright.errors import ClusterwrightError
from clusterwright.model.precision import Precision, training_dtype
from clusterwright.model.training import BREAKDOWN_FIELDS, Job

app = typer.Typer(
    help="Training: step time of a layout, and the best layout.", no_args_is_help=True
)


def _arch(cat: Catalog, model: str) -> ModelArch:
    try:
        return resolve_model(cat, model)
    except ClusterwrightError as exc:
        fail(f"--model: {exc}")


def _gpu(cat: Catalog, gpu: str) -> Gpu:
    try:
        return cat.gpu(gpu)
    except ClusterwrightError as exc:
        fail(f"--gpu: {exc}")


def _job(
    cat: Catalog,
    arch: ModelArch,
    gpu: Gpu,
    seq_len: int,
    global_batch: int,
    precision: Precision,
    server: str | None,
) -> Job:
    try:
        return job_for(cat, arch, gpu.id, seq_len, global_batch, precision, server_id=server)
    except ClusterwrightError as exc:
        msg = str(exc)
        fail(msg if msg.startswith("--") else f"--server: {msg}" if "server" in msg else msg)


def result_payload(job: Job, r: LayoutResult) -> dict[str, Any]:
    """The contract keys of one evaluated layout."""
    peak = job.gpu.peak_tflops[training_dtype(job.precision)]
    m = r.metrics(job.gpu, peak)
    return {
        "gpu": job.gpu.id,
        "gpus": r.gpus,
        **r.layout,
        "step_time_s": r.step_time_s,
        "tokens_per_s": m["tokens_per_s"],
        "tflops_per_gpu": m["tflops_per_gpu"],
        "mfu": m["mfu"],
        "hfu": m["hfu"],
        "memory_per_gpu_gb": gb(r.memory["total"]),
        "memory_gb": {k: gb(v) for k, v in r.memory.items() if k != "total"},
        "fits": r.fits,
        "breakdown": {k: r.breakdown[k] for k in BREAKDOWN_FIELDS},
        "stack": job.stack.id,
        "precision": job.precision.value,
        "seq_len": job.seq_len,
    }


def _check_positive(**values: int | None) -> None:
    for name, v in values.items():
        if v is not None and v <= 0:
            fail(f"--{name.replace('_', '-')}: must be a positive integer, got {v}")


def _render_estimate(d: dict[str, Any]) -> None:
    console.print(
        f"[bold]{d['gpus']} x {d['gpu']}[/]  tp {d['tp']} pp {d['pp']} dp {d['dp']} cp {d['cp']} "
        f"ep {d['ep']}  micro-batch {d['micro_batch']} interleave {d['interleave']} "
        f"zero {d['zero']} recompute {d['recompute']} sp {d['sequence_parallel']}"
    )
    console.print(
        f"step {d['step_time_s']:.3f} s, {d['tokens_per_s']:,.0f} tokens/s, "
        f"{d['tflops_per_gpu']:.0f} TFLOP/s/GPU, MFU {100 * d['mfu']:.1f}%, "
        f"HFU {100 * d['hfu']:.1f}%, {d['memory_per_gpu_gb']:.1f} GB/GPU"
    )
    t = Table(title="step time breakdown", title_justify="left")
    t.add_column("part")
    t.add_column("s", justify="right")
    t.add_column("share", justify="right")
    for k, v in d["breakdown"].items():
        if v > 0:
            t.add_row(
                k.removesuffix("_s").replace("_", " "),
                f"{v:.3f}",
                f"{100 * v / d['step_time_s']:.1f}%",
            )
    console.print(t)


@app.command("estimate")
def estimate_cmd(
    ctx: typer.Context,
    model: str = typer.Option(..., "--model", help="Catalog id or path to a model YAML."),
    gpu: str = typer.Option(..., "--gpu", help="GPU catalog id."),
    gpus: int = typer.Option(..., "--gpus", help="Total GPUs."),
    tp: int = typer.Option(1, "--tp"),
    pp: int = typer.Option(1, "--pp"),
    cp: int = typer.Option(1, "--cp"),
    ep: int = typer.Option(1, "--ep"),
    interleave: int = typer.Option(1, "--interleave", help="Virtual pipeline stages."),
    zero: int = typer.Option(0, "--zero", help="ZeRO stage 0-3."),
    micro_batch: int | None = typer.Option(
        None, "--micro-batch", help="Default: fastest that fits."
    ),
    global_batch: int | None = typer.Option(
        None, "--global-batch", help="Sequences per step (default ~4M tokens)."
    ),
    seq_len: int = typer.Option(4096, "--seq-len"),
    recompute: str = typer.Option("none", "--recompute", help="none, selective or full."),
    sequence_parallel: bool = typer.Option(False, "--sequence-parallel"),
    precision: Precision = typer.Option(Precision.bf16, "--precision"),
    server: str | None = typer.Option(
        None, "--server", help="Server catalog id (default: the GPU's)."
    ),
    fidelity: str = typer.Option(
        "analytical", "--fidelity",
        help="analytical, or sim: DP/PP/EP collectives simulated as flows on the fabric.",
    ),
    routing: str = typer.Option(
        "ecmp", "--routing", help="With --fidelity sim: ecmp, adaptive or spray."
    ),
    seed: int = typer.Option(0, "--seed", help="With --fidelity sim: the ECMP hash seed."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Step time, throughput, MFU and memory of one training layout, with a breakdown."""
    from clusterwright.sim.network import ROUTINGS

    if routing not in ROUTINGS:
        fail(f"--routing: {routing!r} is not one of {', '.join(ROUTINGS)}")
    if fidelity not in ("analytical", "sim"):
        fail(f"--fidelity: {fidelity!r} is not one of analytical, sim")
    if recompute not in RECOMPUTE:
        fail(f"--recompute: {recompute!r} is not one of none, selective, full")
    if zero not in (0, 1, 2, 3):
        fail(f"--zero: {zero} is not a ZeRO stage (0-3)")
    _check_positive(
        gpus=gpus,
        tp=tp,
        pp=pp,
        cp=cp,
        ep=ep,
        interleave=interleave,
        micro_batch=micro_batch,
        global_batch=global_batch,
        seq_len=seq_len,
    )
    with user_errors():
        cat = state(ctx).catalog()
    arch = _arch(cat, model)
    g = _gpu(cat, gpu)
    if gpus % (tp * pp * cp):
        fail(f"--gpus: {gpus} is not a multiple of tp*pp*cp = {tp * pp * cp}")
    dp = gpus // (tp * pp * cp)
    if arch.heads % tp or arch.n_kv_heads % tp:
        fail(
            f"--tp: {tp} does not divide the {arch.heads} heads / {arch.n_kv_heads} KV heads "
            f"of {arch.id}"
        )
    if pp > arch.layers:
        fail(f"--pp: {pp} stages exceed the {arch.layers} layers of {arch.id}")
    if interleave > 1 and (pp == 1 or pp * interleave > arch.layers):
        fail(f"--interleave: {interleave} needs --pp > 1 and pp*interleave <= {arch.layers} layers")
    if sequence_parallel and tp == 1:
        fail("--sequence-parallel: needs --tp > 1")
    if cp > 1 and seq_len % (2 * cp):
        # Megatron-Core CP splits the sequence into 2*cp chunks to balance causal attention.
        fail(f"--cp: --seq-len {seq_len} must be divisible by 2*cp = {2 * cp}")
    if arch.is_moe and arch.experts % ep:
        fail(f"--ep: {ep} does not divide the {arch.experts} experts of {arch.id}")
    if not arch.is_moe and ep > 1:
        fail(f"--ep: {arch.id} is a dense model; expert parallelism needs experts")
    if (dp * cp) % ep:
        fail(f"--ep: {ep} does not divide dp*cp = {dp * cp}")
    gbatch = global_batch or default_global_batch(seq_len, dp * (micro_batch or 1))
    if gbatch % dp:
        fail(f"--global-batch: {gbatch} is not a multiple of dp = {dp}")
    if micro_batch and (gbatch // dp) % micro_batch:
        fail(
            f"--micro-batch: {micro_batch} does not divide the {gbatch // dp} sequences per "
            "data-parallel rank"
        )
    m = gbatch // dp // (micro_batch or 1)
    if pp > 1 and m < pp:
        fail(
            f"--global-batch: {gbatch} gives {m} micro-batches per pipeline, fewer than "
            f"--pp {pp}; the pipeline would mostly idle"
        )
    if interleave > 1 and m % pp:
        fail(
            f"--interleave: the interleaved schedule needs micro-batches ({m}) divisible by "
            f"--pp {pp}"
        )
    job = _job(cat, arch, g, seq_len, gbatch, precision, server)
    fixed = {
        "tp": tp,
        "pp": pp,
        "dp": dp,
        "cp": cp,
        "ep": ep,
        "interleave": interleave,
        "zero": zero,
        "recompute": RECOMPUTE.index(recompute),
        "sp": int(sequence_parallel),
    }
    if micro_batch:
        fixed["micro_batch"] = micro_batch
    res = estimate_layout(job, fixed, () if micro_batch else ("micro_batch",))
    payload = result_payload(job, res)
    if not res.fits:
        _explain_misfit(job, fixed, payload)
    if fidelity == "sim":
        payload = _simulated(cat, job, fixed, res, payload, server, routing, seed)
    if as_json:
        emit_json(payload)
    else:
        _render_estimate(payload)


def _simulated(cat: Catalog, job: Job, fixed: dict[str, int], res: LayoutResult,
               analytical: dict[str, Any], server: str | None, routing: str, seed: int
               ) -> dict[str, Any]:
    """Re-estimate with the DP/PP/EP collectives simulated on the job's fabric."""
    from clusterwright.design.train import server_for
    from clusterwright.sim.training import simulate_step_comm

    srv = cat.server(server) if server else server_for(cat, job.gpu)
    if srv is None:
        fail(f"--fidelity sim: no catalog server holds {job.gpu.id}; give --server")
    layout = {k: int(v) for k, v in res.layout.items() if isinstance(v, int | float)}
    with user_errors():
        comm = simulate_step_comm(job, layout, srv.id, cat, routing=routing, seed=seed)
    job2 = replace(job, dp_comm_factor=comm.dp_factor, pp_comm_factor=comm.pp_factor,
                   ep_comm_factor=comm.ep_factor)
    fixed2 = {**fixed, "micro_batch": layout.get("micro_batch", fixed.get("micro_batch", 1))}
    res2 = estimate_layout(job2, fixed2, ())
    payload = result_payload(job2, res2)
    payload["fidelity"] = "sim"
    payload["sim"] = {
        "routing": routing,
        "seed": seed,
        "server": srv.id,
        "comm_factors": {"dp": comm.dp_factor, "pp": comm.pp_factor, "ep": comm.ep_factor},
        "analytical_step_time_s": analytical["step_time_s"],
        **comm.detail,
    }
    return payload


def _explain_misfit(job: Job, fixed: dict[str, int], payload: dict[str, Any]) -> None:
    """Exit 2 with the memory breakdown and the changes that would make the layout fit."""
    parts = ", ".join(f"{k} {v:.1f}" for k, v in payload["memory_gb"].items() if v)
    tries: list[tuple[str, dict[str, int]]] = []
    if fixed["tp"] > 1 and not fixed["sp"]:
        tries.append(("--sequence-parallel", {"sp": 1}))
    if fixed["recompute"] < 1:
        tries.append(("--recompute selective", {"recompute": 1}))
    if fixed["recompute"] < 2:
        tries.append(("--recompute full", {"recompute": 2}))
    if fixed["zero"] < 1 and fixed["dp"] * fixed["cp"] > 1:
        tries.append(("--zero 1", {"zero": 1}))
    if fixed["zero"] < 2 and fixed["dp"] * fixed["cp"] > 1:
        tries.append(("--zero 2", {"zero": 2}))
    if fixed["zero"] < 3 and fixed["pp"] == 1 and fixed["dp"] > 1:
        tries.append(("--zero 3", {"zero": 3}))
    fixes = []
    for flag, change in tries:
        r = estimate_layout(job, {**fixed, **change}, ("micro_batch",))
        if r.fits:
            fixes.append(f"{flag} ({gb(r.memory['total']):.1f} GB, step {r.step_time_s:.2f} s)")
    hint = (
        ("; it fits with " + " or ".join(fixes))
        if fixes
        else (
            "; no single flag makes it fit: use more GPUs, a larger --tp or --pp, or `train plan`"
        )
    )
    fail(
        f"layout does not fit: {payload['memory_per_gpu_gb']:.1f} GB per GPU > "
        f"{job.gpu.memory_gb:g} GB on {job.gpu.id} ({parts} GB){hint}"
    )


def gpu_hour_price(cat: Catalog, gpu_id: str) -> tuple[float, str] | None:
    """Cheapest on-demand $/GPU-hour among the catalog's cloud offers for ``gpu_id``."""
    offers = [
        (c.on_demand_usd_per_hour / c.gpus, c.id) for c in cat.all("clouds") if c.gpu == gpu_id
    ]
    return min(offers) if offers else None


def _plan_one(
    cat: Catalog,
    arch: ModelArch,
    g: Gpu,
    gpus: int | None,
    seq_len: int,
    global_batch: int,
    precision: Precision,
    tokens: float | None,
    deadline_days: float | None,
    server: str | None,
) -> dict[str, Any] | None:
    job = _job(cat, arch, g, seq_len, global_batch, precision, server)
    out: dict[str, Any] = {"gpu": g.id, "stack": job.stack.id}
    price = gpu_hour_price(cat, g.id)
    target: SizedPlan | None = None
    if deadline_days is not None and tokens is not None and gpus is None:
        target = smallest_for_deadline(job, tokens, deadline_days)
        if target is None:
            out["meets_deadline"] = False
            return out
        gpus = target.gpus
    assert gpus is not None
    res = plan(job, gpus)
    out.update(candidates_evaluated=res.candidates_evaluated, rejected=res.rejected)
    if res.best is None:
        out["best"] = None
        return out
    best = sized(res.best, gpus, tokens)
    out["best"] = result_payload(job, res.best)
    out["top"] = [result_payload(job, r) for r in res.top]
    out["time_to_train_days"] = best.time_to_train_days
    out["gpu_hours"] = best.gpu_hours
    if deadline_days is not None and best.time_to_train_days is not None:
        out["meets_deadline"] = best.time_to_train_days <= deadline_days
    if price is not None:
        out["usd_per_gpu_hour"] = price[0]
        out["price_offer"] = price[1]
        if best.gpu_hours is not None:
            out["cost_usd"] = best.gpu_hours * price[0]
    ladder = sorted({max(job.net.domain_gpus, gpus // k) for k in (8, 4, 2, 1)} | {gpus})
    out["pareto"] = [p.as_dict() for p in pareto_front(job, ladder, tokens)]
    return out


@app.command("plan")
def plan_cmd(
    ctx: typer.Context,
    model: str = typer.Option(..., "--model", help="Catalog id or path to a model YAML."),
    gpu: str = typer.Option(..., "--gpu", help="GPU catalog id, or 'choose' to compare all."),
    gpus: int | None = typer.Option(
        None, "--gpus", help="Total GPUs (optional with --deadline-days)."
    ),
    global_batch: int | None = typer.Option(
        None, "--global-batch", help="Sequences per step (default ~4M tokens)."
    ),
    seq_len: int = typer.Option(4096, "--seq-len"),
    tokens: float | None = typer.Option(
        None, "--tokens", help="Training tokens, for time-to-train."
    ),
    deadline_days: float | None = typer.Option(
        None, "--deadline-days", help="Find the fewest GPUs that meet it."
    ),
    precision: Precision = typer.Option(Precision.bf16, "--precision"),
    server: str | None = typer.Option(
        None, "--server", help="Server catalog id (default: the GPU's)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Search TP x PP x DP x CP x EP x interleave x ZeRO x micro-batch x recompute x SP for the
    fastest layout that fits; time-to-train, GPU-hours, cost and the GPUs-vs-time front."""
    _check_positive(gpus=gpus, global_batch=global_batch, seq_len=seq_len)
    for name, v in (("tokens", tokens), ("deadline_days", deadline_days)):
        if v is not None and v <= 0:
            fail(f"--{name.replace('_', '-')}: must be positive, got {v:g}")
    if gpus is None and deadline_days is None:
        fail("--gpus: give a GPU count, or --deadline-days with --tokens to find one")
    if deadline_days is not None and tokens is None:
        fail("--deadline-days: needs --tokens (how much to train)")
    if precision in (Precision.int8, Precision.int4):
        fail(
            f"--precision: {precision.value} is not a training precision "
            "(use fp32, bf16, fp16, fp8 or fp4)"
        )
    with user_errors():
        cat = state(ctx).catalog()
    arch = _arch(cat, model)
    if gpu == "choose":
        dtype = training_dtype(precision)
        candidates = [g for g in cat.all("gpus") if dtype in g.peak_tflops]
    else:
        candidates = [_gpu(cat, gpu)]
    gbatch = global_batch or default_global_batch(seq_len)
    per_gpu: list[dict[str, Any]] = []
    for g in candidates:
        r = _plan_one(cat, arch, g, gpus, seq_len, gbatch, precision, tokens, deadline_days, server)
        if r is not None:
            per_gpu.append(r)
    feasible = [r for r in per_gpu if r.get("best")]
    if not feasible:
        reasons = {k: v for r in per_gpu for k, v in (r.get("rejected") or {}).items()}
        why = (
            ", ".join(f"{k}: {v}" for k, v in reasons.items())
            or "no GPU count up to 131072 meets the deadline"
        )
        flag = "--gpus" if gpus is not None else "--deadline-days"
        fail(f"{flag}: no layout of {arch.id} works on {gpus or 'any count of'} {gpu} ({why})")

    # With a deadline, the cheapest priced type wins (types without a cloud price are listed
    # but cannot be compared in dollars); otherwise the fewest GPU-seconds per step.
    priced = [r for r in feasible if r.get("cost_usd") is not None]
    if deadline_days is not None and priced:
        chosen = min(priced, key=lambda r: float(r["cost_usd"]))
    else:
        chosen = min(feasible, key=lambda r: float(r["best"]["step_time_s"]) * r["best"]["gpus"])
    if gpu != "choose":
        chosen = feasible[0]
    payload: dict[str, Any] = {
        "model": arch.id,
        "global_batch": gbatch,
        "seq_len": seq_len,
        **{
            k: chosen.get(k)
            for k in (
                "best",
                "top",
                "pareto",
                "time_to_train_days",
                "gpu_hours",
                "candidates_evaluated",
                "rejected",
                "cost_usd",
                "usd_per_gpu_hour",
                "price_offer",
                "meets_deadline",
            )
        },
    }
    if gpu == "choose":
        payload["by_gpu"] = [
            {
                k: r.get(k)
                for k in ("gpu", "time_to_train_days", "gpu_hours", "cost_usd", "meets_deadline")
            }
            | {
                "gpus": r["best"]["gpus"] if r.get("best") else None,
                "step_time_s": r["best"]["step_time_s"] if r.get("best") else None,
            }
            for r in per_gpu
        ]
    if as_json:
        emit_json(payload)
    else:
        _render_plan(payload)


def _render_plan(d: dict[str, Any]) -> None:
    b = d["best"]
    console.print(
        f"[bold]best for {d['model']}[/] (global batch {d['global_batch']} x {d['seq_len']}):"
    )
    _render_estimate(b)
    if d.get("time_to_train_days") is not None:
        cost = (
            f", ${d['cost_usd']:,.0f} at ${d['usd_per_gpu_hour']:.2f}/GPU-h ({d['price_offer']})"
            if d.get("cost_usd")
            else ""
        )
        console.print(
            f"time to train {d['time_to_train_days']:.1f} days, "
            f"{d['gpu_hours']:,.0f} GPU-hours{cost}"
        )
    t = Table(title="top layouts", title_justify="left")
    for col in (
        "tp",
        "pp",
        "dp",
        "cp",
        "ep",
        "mb",
        "v",
        "zero",
        "recompute",
        "sp",
        "step s",
        "MFU",
        "GB",
    ):
        t.add_column(col)
    for r in d["top"]:
        t.add_row(
            *(
                str(r[k])
                for k in (
                    "tp",
                    "pp",
                    "dp",
                    "cp",
                    "ep",
                    "micro_batch",
                    "interleave",
                    "zero",
                    "recompute",
                )
            ),
            "y" if r["sequence_parallel"] else "n",
            f"{r['step_time_s']:.3f}",
            f"{100 * r['mfu']:.1f}%",
            f"{r['memory_per_gpu_gb']:.0f}",
        )
    console.print(t)
    console.print(
        f"{d['candidates_evaluated']:,} layouts evaluated; rejected: "
        + ", ".join(f"{k} {v:,}" for k, v in d["rejected"].items())
    )
    if d.get("by_gpu"):
        g = Table(title="by GPU type", title_justify="left")
        for col in ("GPU", "GPUs", "step s", "days", "GPU-hours", "cost $"):
            g.add_column(col)
        for r in d["by_gpu"]:
            g.add_row(
                r["gpu"],
                str(r["gpus"] or "-"),
                f"{r['step_time_s']:.3f}" if r["step_time_s"] else "-",
                f"{r['time_to_train_days']:.1f}" if r.get("time_to_train_days") else "-",
                f"{r['gpu_hours']:,.0f}" if r.get("gpu_hours") else "-",
                f"{r['cost_usd']:,.0f}" if r.get("cost_usd") else "-",
            )
        console.print(g)
