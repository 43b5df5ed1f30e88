"""``clusterwright train estimate`` and ``train plan``."""

from __future__ import annotations

from dataclasses import asdict, replace
from typing import Any

import typer
from rich.table import Table

from clusterwright.catalog.registry import Catalog, resolve_model
from clusterwright.catalog.schema import Gpu, ModelArch
from clusterwright.cli import limits as lim
from clusterwright.cli.common import (
    console,
    emit_json,
    fail,
    field_flag_message,
    gb,
    state,
    user_errors,
)
from clusterwright.design.train import (
    LayoutResult,
    SizedPlan,
    WallTime,
    confidence,
    default_global_batch,
    estimate_layout,
    job_for,
    mfu_record,
    pareto_front,
    plan,
    sized,
    smallest_for_deadline,
)
from clusterwright.design.train_goodput import production_time
from clusterwright.errors import ClusterwrightError, InputError, UnknownIdError
from clusterwright.model.memory import parse_recompute
from clusterwright.model.precision import Precision, training_dtype
from clusterwright.model.train_compute import FULL
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
    stack: str | None = None,
    options: dict[str, Any] | None = None,
) -> Job:
    try:
        return job_for(cat, arch, gpu.id, seq_len, global_batch, precision, server_id=server,
                       stack_id=stack, options=options)
    except UnknownIdError as exc:
        flag = {"stack": "--stack", "server": "--server"}.get(exc.kind)
        fail(f"{flag}: {exc}" if flag else str(exc))
    except InputError as exc:
        fail(field_flag_message(exc))
    except ClusterwrightError as exc:
        msg = str(exc)
        if stack and "stack" in msg:
            fail(f"--stack: {msg}")
        fail(msg if msg.startswith("--") else f"--server: {msg}" if "server" in msg else msg)


# How the framework runs the step: each None keeps the stack's default (catalog stacks.yaml
# `features`, the first entry of a list); one the stack cannot do is an input error.
STACK_OPT = typer.Option(None, "--stack", help="Software stack (catalog id; default: the "
                         "GPU's first stack).")
SCHEDULE_OPT = typer.Option(None, "--schedule", help="Pipeline schedule: 1f1b, zb, dualpipe.")
EP_OVERLAP_OPT = typer.Option(None, "--ep-overlap",
                              help="MoE all-to-all overlap: none, 1f1b, dualpipe.")
EP_DISPATCHER_OPT = typer.Option(None, "--ep-dispatcher",
                                 help="MoE dispatcher: alltoall, or deepep (one network send "
                                 "per destination node).")
CP_COMM_OPT = typer.Option(None, "--cp-comm", help="Context parallelism: p2p (ring), "
                           "allgather (Llama 3), a2a (Ulysses).")
FP8_RECIPE_OPT = typer.Option(None, "--fp8-recipe",
                              help="FP8 scaling: delayed, current, blockwise, mx.")
TP_OVERLAP_OPT = typer.Option(None, "--tp-overlap/--no-tp-overlap",
                              help="TP collectives pipelined with their GEMMs (needs SP).")
GRAD_OVERLAP_OPT = typer.Option(None, "--grad-overlap/--no-grad-overlap",
                                help="Gradient buckets reduced during backward.")
PARAM_OVERLAP_OPT = typer.Option(None, "--param-overlap/--no-param-overlap",
                                 help="Parameter all-gather under the next forward.")
P2P_OVERLAP_OPT = typer.Option(None, "--p2p-overlap/--no-p2p-overlap",
                               help="Pipeline sends hidden in the steady state.")


def _options(**given: Any) -> dict[str, Any]:
    return {k: v for k, v in given.items() if v is not None}


def result_payload(cat: Catalog, job: Job, r: LayoutResult) -> dict[str, Any]:
    """The contract keys of one evaluated layout, with its error band and how its MFU
    compares with the highest published on the GPU."""
    peak = job.gpu.peak_tflops[training_dtype(job.precision)]
    m = r.metrics(job.gpu, peak)
    rec = mfu_record(cat, job.gpu.id, job.precision)
    mfu_check: dict[str, Any] = {"highest_published": None, "above": None}
    if rec is not None:
        mfu_check = {"highest_published": rec.mfu, "model": rec.model, "gpus": rec.gpus,
                     "row": rec.row, "source": rec.source, "above": m["mfu"] > rec.mfu}
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
        "comm_s": dict(r.comm),
        "overlap": r.overlap,
        "confidence": confidence(cat, job, r.layout, r.gpus, r.step_time_s),
        "mfu_check": mfu_check,
        "stack": job.stack.id,
        "options": asdict(job.opts),
        "precision": job.precision.value,
        "seq_len": job.seq_len,
    }


def _check_positive(**values: float | None) -> None:
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
    conf = d.get("confidence") or {}
    if conf.get("band") is not None:
        lo, hi = conf["step_time_range_s"]
        console.print(
            f"error band +-{100 * conf['band']:.0f}% (step {lo:.3f}-{hi:.3f} s): "
            f"{conf['rows']} published runs of {', '.join(conf['matched'])}, "
            f"mean error {100 * conf['mape']:.1f}%"
            + ("" if conf["validated"] else " [outside the validated regime]"))
    for note in conf.get("notes") or []:
        console.print(f"[yellow]note:[/] {note}")
    if d.get("overlap"):
        console.print("hidden by the schedule: " + ", ".join(
            f"{k} {100 * v:.0f}% of {d['comm_s'][k]:.3f} s" for k, v in d["overlap"].items()))
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
    ep: int = typer.Option(1, "--ep", help="Expert parallelism, folded over tp*dp*cp."),
    interleave: int = typer.Option(1, "--interleave", help="Virtual pipeline stages."),
    zero: int = typer.Option(0, "--zero", help="ZeRO stage 0-3 (3: FSDP)."),
    shard_group: int | None = typer.Option(
        None, "--shard-group", help="With --zero 3: shard within groups of this many GPUs and "
        "replicate across them (HSDP)."),
    prefetch: int | None = typer.Option(
        None, "--prefetch", help="With --zero 3: layers gathered ahead (default 1)."),
    zeropp: bool | None = typer.Option(
        None, "--zeropp/--no-zeropp", help="With --zero 3: ZeRO++ (int8 gathers, node-local "
        "backward gather, int4 gradients)."),
    micro_batch: int | None = typer.Option(
        None, "--micro-batch", help="Default: fastest that fits."
    ),
    global_batch: int | None = typer.Option(
        None, "--global-batch", help="Sequences per step (default ~4M tokens)."
    ),
    seq_len: int = typer.Option(4096, "--seq-len"),
    recompute: str = typer.Option(
        "none", "--recompute", help="none, selective, full, or modules: core_attn, mlp, moe, "
        "moe_act, layernorm, mla_up_proj (comma-separated)."),
    recompute_share: float | None = typer.Option(
        None, "--recompute-share", help="With --recompute full: share of each chunk's layers "
        "recomputed (Megatron's block method), (0, 1]."),
    sequence_parallel: bool = typer.Option(False, "--sequence-parallel"),
    precision: Precision = typer.Option(Precision.bf16, "--precision"),
    server: str | None = typer.Option(
        None, "--server", help="Server catalog id (default: the GPU's)."
    ),
    stack: str | None = STACK_OPT,
    schedule: str | None = SCHEDULE_OPT,
    ep_overlap: str | None = EP_OVERLAP_OPT,
    ep_dispatcher: str | None = EP_DISPATCHER_OPT,
    cp_comm: str | None = CP_COMM_OPT,
    fp8_recipe: str | None = FP8_RECIPE_OPT,
    tp_overlap: bool | None = TP_OVERLAP_OPT,
    grad_overlap: bool | None = GRAD_OVERLAP_OPT,
    param_overlap: bool | None = PARAM_OVERLAP_OPT,
    p2p_overlap: bool | None = P2P_OVERLAP_OPT,
    dispatch_fp8: bool | None = typer.Option(
        None, "--dispatch-fp8/--no-dispatch-fp8", help="MoE dispatch in FP8 (DeepEP)."),
    expert_imbalance: float | None = typer.Option(
        None, "--expert-imbalance", help="Busiest GPU's expert load over the mean (default 1.1)."),
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
    """Step time, throughput, MFU and memory of one training layout, with a breakdown, the
    communication each parallelism moves and how much of it the schedule hid, and the error
    band of the closest validated regime."""
    from clusterwright.sim.network import ROUTINGS

    if routing not in ROUTINGS:
        fail(f"--routing: {routing!r} is not one of {', '.join(ROUTINGS)}")
    if fidelity not in ("analytical", "sim"):
        fail(f"--fidelity: {fidelity!r} is not one of analytical, sim")
    try:
        rc_code = parse_recompute(recompute)
    except ValueError as exc:
        fail(f"--recompute: {exc}")
    if recompute_share is not None:
        if not 0.0 < recompute_share <= 1.0:
            fail(f"--recompute-share: must be in (0, 1], got {recompute_share:g}")
        if rc_code != FULL:
            fail("--recompute-share: applies to --recompute full only")
    if zero not in (0, 1, 2, 3):
        fail(f"--zero: {zero} is not a ZeRO stage (0-3)")
    for flag, given in (("--shard-group", shard_group), ("--prefetch", prefetch),
                        ("--zeropp", zeropp)):
        if given is not None and zero != 3:
            fail(f"{flag}: applies to --zero 3 (ZeRO-3/FSDP) only")
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
        shard_group=shard_group,
    )
    lim.within(("--gpus", gpus, lim.GPUS), ("--tp", tp, lim.PARALLEL), ("--pp", pp, lim.PARALLEL),
               ("--cp", cp, lim.PARALLEL), ("--ep", ep, lim.PARALLEL),
               ("--interleave", interleave, lim.INTERLEAVE),
               ("--micro-batch", micro_batch, lim.SEQUENCES),
               ("--global-batch", global_batch, lim.SEQUENCES),
               ("--seq-len", seq_len, lim.SEQ_TOKENS), ("--shard-group", shard_group, lim.PARALLEL),
               ("--prefetch", prefetch, lim.PREFETCH), ("--seed", seed, lim.SEED))
    lim.nonempty(("--server", server), ("--stack", stack), ("--schedule", schedule),
                 ("--ep-overlap", ep_overlap), ("--ep-dispatcher", ep_dispatcher),
                 ("--cp-comm", cp_comm), ("--fp8-recipe", fp8_recipe))
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
    if (tp * dp * cp) % ep:
        # Megatron-Core's MoE parallel folding: the expert group spans TP, CP and DP ranks.
        fail(f"--ep: {ep} does not divide tp*dp*cp = {tp * dp * cp}")
    if shard_group is not None and (dp * cp) % shard_group:
        fail(f"--shard-group: {shard_group} does not divide dp*cp = {dp * cp}")
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
    opts = _options(schedule=schedule, ep_overlap=ep_overlap, ep_dispatcher=ep_dispatcher,
                    cp_comm=cp_comm, fp8_recipe=fp8_recipe, tp_overlap=tp_overlap,
                    grad_overlap=grad_overlap, param_overlap=param_overlap,
                    p2p_overlap=p2p_overlap, dispatch_fp8=dispatch_fp8,
                    expert_imbalance=expert_imbalance, prefetch=prefetch, zeropp=zeropp)
    job = _job(cat, arch, g, seq_len, gbatch, precision, server, stack, opts)
    f = job.stack.features
    if zero == 3 and not f.zero3:
        fail(f"--zero: stack {job.stack.id} has no ZeRO-3/FSDP")
    if zero == 3 and pp > 1 and not f.zero3_with_pp:
        fail(f"--zero: stack {job.stack.id} runs ZeRO-3/FSDP without pipelining (--pp 1)")
    if zero in (1, 2) and not f.distributed_optimizer:
        fail(f"--zero: stack {job.stack.id} has no distributed optimizer (ZeRO-1/2)")
    if shard_group is not None and not f.hsdp:
        fail(f"--shard-group: stack {job.stack.id} has no hybrid sharding (HSDP)")
    if interleave > 1 and not f.interleaved:
        fail(f"--interleave: stack {job.stack.id} has no interleaved pipeline schedule")
    if cp > 1 and not f.context_parallel:
        fail(f"--cp: stack {job.stack.id} has no context parallelism")
    if job.opts.schedule == "dualpipe" and pp > 1 and pp % 2:
        fail(f"--pp: DualPipe pairs stages: {pp} is odd")
    fixed: dict[str, Any] = {
        "tp": tp,
        "pp": pp,
        "dp": dp,
        "cp": cp,
        "ep": ep,
        "interleave": interleave,
        "zero": zero,
        "recompute": rc_code,
        "sp": int(sequence_parallel),
        "shard": shard_group or 0,
    }
    if recompute_share is not None:
        fixed["rc_frac"] = recompute_share
    if micro_batch:
        fixed["micro_batch"] = micro_batch
    res = estimate_layout(job, fixed, () if micro_batch else ("micro_batch",))
    payload = result_payload(cat, job, res)
    if not res.fits:
        _explain_misfit(job, fixed, payload)
    if fidelity == "sim":
        payload = _simulated(cat, job, res, payload, server, routing, seed)
    if as_json:
        emit_json(payload)
    else:
        _render_estimate(payload)


def _resimulate(cat: Catalog, job: Job, res: LayoutResult, server: str | None, routing: str,
                seed: int) -> tuple[Job, LayoutResult, Any, str]:
    """``res`` re-estimated with its DP/PP/EP collectives simulated as flows on the job's
    fabric: (job with the simulated slow-downs, result, the simulation's detail, server)."""
    from clusterwright.design.train import server_for
    from clusterwright.sim.training import simulate_step_comm

    srv = cat.server(server) if server else server_for(cat, job.gpu)
    if srv is None:
        fail(f"--fidelity sim: no catalog server holds {job.gpu.id}; give --server")
    layout = {k: int(v) for k, v in res.layout.items()
              if isinstance(v, int | float) and k != "recompute_share"}
    with user_errors({"gpus": "--gpus", "seed": "--seed"}, name_flags=True):
        comm = simulate_step_comm(job, layout, srv.id, cat, routing=routing, seed=seed)
    job2 = replace(job, dp_comm_factor=comm.dp_factor, pp_comm_factor=comm.pp_factor,
                   ep_comm_factor=comm.ep_factor)
    lay = res.layout
    fixed = {"tp": lay["tp"], "pp": lay["pp"], "dp": lay["dp"], "cp": lay["cp"],
             "ep": lay["ep"], "micro_batch": lay["micro_batch"], "interleave": lay["interleave"],
             "zero": lay["zero"], "recompute": parse_recompute(str(lay["recompute"])),
             "sp": int(bool(lay["sequence_parallel"])), "shard": lay["shard"],
             "rc_frac": float(str(lay["recompute_share"])) or 1.0}
    return job2, estimate_layout(job2, fixed, ()), comm, srv.id


def _simulated(cat: Catalog, job: Job, res: LayoutResult, analytical: dict[str, Any],
               server: str | None, routing: str, seed: int) -> dict[str, Any]:
    """Re-estimate with the DP/PP/EP collectives simulated on the job's fabric."""
    job2, res2, comm, srv = _resimulate(cat, job, res, server, routing, seed)
    payload = result_payload(cat, job2, res2)
    payload["fidelity"] = "sim"
    payload["sim"] = {
        "routing": routing,
        "seed": seed,
        "server": srv,
        "comm_factors": {"dp": comm.dp_factor, "pp": comm.pp_factor, "ep": comm.ep_factor},
        "analytical_step_time_s": analytical["step_time_s"],
        **comm.detail,
    }
    # Wall-clock only, under one key: the rest is a function of the inputs and the seed.
    payload["timings"] = {"sim_wall_s": comm.wall_s}
    return payload


def _explain_misfit(job: Job, fixed: dict[str, Any], payload: dict[str, Any]) -> None:
    """Exit 2 with the memory breakdown and the changes that would make the layout fit."""
    parts = ", ".join(f"{k} {v:.1f}" for k, v in payload["memory_gb"].items() if v)
    f = job.stack.features
    tries: list[tuple[str, dict[str, Any]]] = []
    if fixed["tp"] > 1 and not fixed["sp"]:
        tries.append(("--sequence-parallel", {"sp": 1}))
    if fixed["recompute"] == 0:
        tries.append(("--recompute selective", {"recompute": 1}))
    if fixed["recompute"] != FULL:
        tries.append(("--recompute full", {"recompute": FULL, "rc_frac": 1.0}))
    if fixed["zero"] < 1 and fixed["dp"] * fixed["cp"] > 1:
        tries.append(("--zero 1", {"zero": 1}))
    if fixed["zero"] < 2 and fixed["dp"] * fixed["cp"] > 1:
        tries.append(("--zero 2", {"zero": 2}))
    if fixed["zero"] < 3 and fixed["pp"] == 1 and fixed["dp"] > 1 and f.zero3:
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
    """$/GPU-hour and offer id for ``gpu_id`` by the one pricing policy (plan/pricing.py)."""
    from clusterwright.plan.pricing import cloud_price

    c = cloud_price(cat, gpu_id)
    return (c.usd_per_gpu_hour, c.offer_id) if c is not None else None


def _recheck(cat: Catalog, chosen: dict[str, Any], server: str | None, routing: str,
             count: int, budget_s: float) -> None:
    """The network simulator's second opinion on the leading ``count`` layouts (their DP, PP
    and EP collectives as flows on the fabric), added beside the analytical numbers; the
    ranking stays the analytical one. The best is always re-checked; the next ones while the
    simulations have taken less than ``budget_s`` (a 16K-GPU fabric takes seconds each)."""
    import time

    from clusterwright.sim.network import MAX_SIM_GPUS

    job, top = chosen["_recheck"]
    start = time.perf_counter()
    for i, (entry, r) in enumerate(list(zip(chosen["top"], top, strict=True))[:count]):
        if r.gpus > MAX_SIM_GPUS:
            # Past the simulator's size the analytical estimate stands alone, said in notes.
            chosen["recheck_skipped"] = (f"{r.gpus:,} GPUs are more than the network "
                                         f"simulator's {MAX_SIM_GPUS:,}: the layouts were not "
                                         "re-checked on the simulated fabric")
            break
        if i and time.perf_counter() - start > budget_s:
            break
        _, r2, comm, srv = _resimulate(cat, job, r, server, routing, 0)
        entry["sim"] = {"step_time_s": r2.step_time_s, "routing": routing, "server": srv,
                        "comm_factors": {"dp": comm.dp_factor, "pp": comm.pp_factor,
                                         "ep": comm.ep_factor}}
    if count:
        chosen["best"]["sim"] = chosen["top"][0].get("sim")


def _wall(cat: Catalog, arch: ModelArch, g: Gpu, server: str | None) -> WallTime:
    """Production wall time on ``n`` GPUs: evaluation and failures added (train_goodput)."""
    from clusterwright.design.train import server_for

    srv = cat.server(server) if server else server_for(cat, g)

    def wall(n: int, compute_s: float) -> float:
        return production_time(cat, arch, g.id, srv, n, compute_s).days * 86400.0

    return wall


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
    stack: str | None = None,
    options: dict[str, Any] | None = None,
) -> dict[str, Any] | None:
    job = _job(cat, arch, g, seq_len, global_batch, precision, server, stack, options)
    out: dict[str, Any] = {"gpu": g.id, "stack": job.stack.id}
    price = gpu_hour_price(cat, g.id)
    wall = _wall(cat, arch, g, server)
    target: SizedPlan | None = None
    if deadline_days is not None and tokens is not None and gpus is None:
        target = smallest_for_deadline(job, tokens, deadline_days, wall=wall)
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
    best = sized(res.best, gpus, tokens, wall)
    out["best"] = result_payload(cat, job, res.best)
    out["top"] = [result_payload(cat, job, r) for r in res.top]
    out["_recheck"] = (job, res.top)
    out["time_to_train_days"] = best.time_to_train_days
    out["gpu_hours"] = best.gpu_hours
    out["compute_days"] = best.compute_days
    if best.compute_days is not None:
        from clusterwright.design.train import server_for

        srv = cat.server(server) if server else server_for(cat, g)
        out["production"] = production_time(cat, arch, g.id, srv, gpus,
                                            best.compute_days * 86400.0).as_dict()
    if deadline_days is not None and best.time_to_train_days is not None:
        out["meets_deadline"] = best.time_to_train_days <= deadline_days
    if price is not None:
        out["usd_per_gpu_hour"] = price[0]
        out["price_offer"] = price[1]
        if best.gpu_hours is not None:
            out["cost_usd"] = best.gpu_hours * price[0]
    ladder = sorted({max(job.net.domain_gpus, gpus // k) for k in (8, 4, 2, 1)} | {gpus})
    out["pareto"] = [p.as_dict() for p in pareto_front(job, ladder, tokens, wall)]
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
    stack: str | None = STACK_OPT,
    schedule: str | None = SCHEDULE_OPT,
    ep_overlap: str | None = EP_OVERLAP_OPT,
    ep_dispatcher: str | None = EP_DISPATCHER_OPT,
    cp_comm: str | None = CP_COMM_OPT,
    fp8_recipe: str | None = FP8_RECIPE_OPT,
    tp_overlap: bool | None = TP_OVERLAP_OPT,
    grad_overlap: bool | None = GRAD_OVERLAP_OPT,
    param_overlap: bool | None = PARAM_OVERLAP_OPT,
    p2p_overlap: bool | None = P2P_OVERLAP_OPT,
    fidelity: str = typer.Option(
        "sim", "--fidelity", help="sim (default): re-check the leading layouts with the "
        "network simulator and report both; analytical: skip it."),
    recheck: int = typer.Option(
        3, "--recheck", help="With --fidelity sim: leading layouts re-checked (the best always, "
        "the others within --recheck-budget-s)."),
    recheck_budget_s: float = typer.Option(
        2.0, "--recheck-budget-s", help="With --fidelity sim: simulator time after which no "
        "further layout is re-checked, seconds."),
    routing: str = typer.Option(
        "ecmp", "--routing", help="With --fidelity sim: ecmp, adaptive or spray."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Search TP x PP x DP x CP x EP x interleave x ZeRO x micro-batch x recompute x SP for the
    fastest layout that fits; each with its error band; the leading layouts re-checked on the
    simulated fabric; time-to-train with evaluation and failures (goodput), GPU-hours, cost
    and the GPUs-vs-time front."""
    from clusterwright.sim.network import ROUTINGS

    if fidelity not in ("analytical", "sim"):
        fail(f"--fidelity: {fidelity!r} is not one of analytical, sim")
    if routing not in ROUTINGS:
        fail(f"--routing: {routing!r} is not one of {', '.join(ROUTINGS)}")
    if recheck < 0:
        fail(f"--recheck: must be >= 0, got {recheck}")
    if recheck_budget_s < 0:
        fail(f"--recheck-budget-s: must be >= 0, got {recheck_budget_s:g}")
    _check_positive(gpus=gpus, global_batch=global_batch, seq_len=seq_len)
    for name, v in (("tokens", tokens), ("deadline_days", deadline_days)):
        if v is not None and v <= 0:
            fail(f"--{name.replace('_', '-')}: must be positive, got {v:g}")
    lim.within(("--gpus", gpus, lim.GPUS), ("--global-batch", global_batch, lim.SEQUENCES),
               ("--seq-len", seq_len, lim.SEQ_TOKENS), ("--tokens", tokens, lim.TRAIN_TOKENS),
               ("--deadline-days", deadline_days, lim.DEADLINE_DAYS),
               ("--recheck", recheck, lim.RECHECK),
               ("--recheck-budget-s", recheck_budget_s, lim.RECHECK_BUDGET_S))
    lim.nonempty(("--server", server), ("--stack", stack), ("--schedule", schedule),
                 ("--ep-overlap", ep_overlap), ("--ep-dispatcher", ep_dispatcher),
                 ("--cp-comm", cp_comm), ("--fp8-recipe", fp8_recipe))
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
        opts = _options(schedule=schedule, ep_overlap=ep_overlap, ep_dispatcher=ep_dispatcher,
                        cp_comm=cp_comm, fp8_recipe=fp8_recipe, tp_overlap=tp_overlap,
                        grad_overlap=grad_overlap, param_overlap=param_overlap,
                        p2p_overlap=p2p_overlap)
        if gpu == "choose" and stack is not None and g.id not in cat.stack(stack).gpus:
            continue
        r = _plan_one(cat, arch, g, gpus, seq_len, gbatch, precision, tokens, deadline_days,
                      server, stack, opts)
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
    if fidelity == "sim":
        _recheck(cat, chosen, server, routing, recheck, recheck_budget_s)
    notes = _plan_notes(chosen)
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
                "compute_days",
                "production",
                "stack",
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
    payload["fidelity"] = fidelity
    payload["notes"] = notes
    if payload.get("price_offer"):
        from clusterwright.plan.pricing import cloud_price

        choice = cloud_price(cat, payload["best"]["gpu"])
        payload["pricing"] = choice.as_dict() if choice is not None else None
    if as_json:
        emit_json(payload)
    else:
        _render_plan(payload)


def _plan_notes(chosen: dict[str, Any]) -> list[str]:
    """What a reader must know about the chosen plan: the band's caveats, an MFU above what
    anyone published on this GPU, and the simulator disagreeing with the estimate."""
    b = chosen["best"]
    notes = list(b["confidence"].get("notes") or [])
    if chosen.get("recheck_skipped"):
        notes.append(chosen["recheck_skipped"])
    mc = b["mfu_check"]
    if mc.get("above"):
        notes.append(
            f"MFU {100 * b['mfu']:.1f}% is above the highest published on {b['gpu']} in this "
            f"precision ({100 * mc['highest_published']:.1f}%, {mc['model']} on {mc['gpus']:,} "
            "GPUs): treat it as optimistic")
    elif mc.get("highest_published") is None:
        notes.append(f"no published MFU record for {b['gpu']} in this precision to compare with")
    sim = b.get("sim")
    if sim and sim["step_time_s"] > b["step_time_s"] * 1.05:
        notes.append(
            f"the network simulator puts the step at {sim['step_time_s']:.3f} s, "
            f"{100 * (sim['step_time_s'] / b['step_time_s'] - 1):.0f}% above the estimate "
            "(contention on the fabric)")
    return notes


def _render_plan(d: dict[str, Any]) -> None:
    b = d["best"]
    console.print(
        f"[bold]best for {d['model']}[/] (global batch {d['global_batch']} x {d['seq_len']}):"
    )
    _render_estimate(b)
    if d.get("time_to_train_days") is not None:
        cost = (
            f", ${d['cost_usd']:,.0f} at ${d['usd_per_gpu_hour']:.2f}/GPU-h ({d['price_offer']}"
            + (" [yellow]estimate[/]" if (d.get("pricing") or {}).get("estimate") else "") + ")"
            if d.get("cost_usd")
            else ""
        )
        console.print(
            f"time to train {d['time_to_train_days']:.1f} days, "
            f"{d['gpu_hours']:,.0f} GPU-hours{cost}"
        )
        prod = d.get("production")
        if prod:
            console.print(
                f"  = {d['compute_days']:.1f} days of steps, +{100 * prod['eval_fraction']:.1f}% "
                f"evaluation, at goodput (ETTR) {100 * prod['ettr']:.1f}%: "
                f"{prod['interruptions_per_day']:.1f} interruptions/day, checkpoint every "
                f"{prod['checkpoint_interval_s'] / 60:.0f} min ({prod['checkpoint_write_s']:.0f} s "
                f"to write), {prod['restart_s'] / 60:.1f} min per restart")
    sim = d["best"].get("sim")
    if sim:
        console.print(
            f"network simulator ({sim['routing']}): step {sim['step_time_s']:.3f} s vs "
            f"{d['best']['step_time_s']:.3f} s estimated")
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
        "sim s",
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
            f"{r['sim']['step_time_s']:.3f}" if r.get("sim") else "-",
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
