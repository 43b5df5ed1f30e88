"""``clusterwright train estimate`` and ``train plan``."""

from __future__ import annotations

from typing import Any

import typer
from rich.table import Table

from clusterwright.catalog.registry import Catalog, resolve_model
from clusterwright.catalog.schema import ModelArch
from clusterwright.cli import limits as lim
from clusterwright.cli.common import (
    console,
    emit_json,
    fail,
    state,
    user_errors,
)
from clusterwright.errors import ClusterwrightError
from clusterwright.model.lora import Lora
from clusterwright.model.precision import Precision
from clusterwright.report.fmt import usd

app = typer.Typer(
    help="Training: step time of a layout, and the best layout.", no_args_is_help=True
)


def _arch(cat: Catalog, model: str) -> ModelArch:
    try:
        return resolve_model(cat, model)
    except ClusterwrightError as exc:
        fail(f"--model: {exc}")


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
GRAD_REDUCE_OPT = typer.Option(None, "--grad-reduce", help="ZeRO-1/2 gradient collective: "
                               "reduce_scatter (default), or allreduce (DeepSpeed "
                               "reduce_scatter false: twice the bytes).")
FLASH_OPT = typer.Option(None, "--flash-attention/--no-flash-attention",
                         help="Fused attention (off: scores and probabilities through HBM, "
                         "as Hugging Face eager attention runs).")
PARAM_OVERLAP_OPT = typer.Option(None, "--param-overlap/--no-param-overlap",
                                 help="Parameter all-gather under the next forward.")
P2P_OVERLAP_OPT = typer.Option(None, "--p2p-overlap/--no-p2p-overlap",
                               help="Pipeline sends hidden in the steady state.")
OFFLOAD_OPT = typer.Option(None, "--offload", help="none, or optimizer: Adam state in the "
                           "superchip's CPU memory (gh200, gb200, gb300).")
LORA_RANK_OPT = typer.Option(None, "--lora-rank", help="LoRA fine-tuning: adapter rank (base "
                             "weights frozen, FP8 with --precision fp8). Default: full training.")
LORA_TARGETS_OPT = typer.Option("attention", "--lora-targets", help="With --lora-rank: adapted "
                                "layers, comma-separated: qkv, proj, fc1, fc2, attention, mlp, "
                                "all.")


def _lora(rank: int | None, targets: str) -> Lora | None:
    """The adapters the flags ask for (None without --lora-rank); bad values exit 2 naming
    the flag."""
    if rank is None:
        if targets != "attention":
            fail("--lora-targets: needs --lora-rank")
        return None
    with user_errors(name_flags=True):
        return Lora.of(rank, targets.split(","))


def _as_flag(name: str, value: str | None) -> str:
    """A library field and value as the flag a user types: ("zero", "2") -> "--zero 2"."""
    flag = "--" + name.replace("_", "-")
    return flag if value is None else f"{flag} {value}"


def _options(**given: Any) -> dict[str, Any]:
    return {k: v for k, v in given.items() if v is not None}


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
    grad_reduce: str | None = GRAD_REDUCE_OPT,
    flash_attention: bool | None = FLASH_OPT,
    param_overlap: bool | None = PARAM_OVERLAP_OPT,
    p2p_overlap: bool | None = P2P_OVERLAP_OPT,
    offload: str | None = OFFLOAD_OPT,
    lora_rank: int | None = LORA_RANK_OPT,
    lora_targets: str = LORA_TARGETS_OPT,
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
    from clusterwright.plan.train_request import (
        LayoutMisfitError,
        TrainEstimateRequest,
        estimate_training,
    )

    _check_positive(
        gpus=gpus, tp=tp, pp=pp, cp=cp, ep=ep, interleave=interleave, micro_batch=micro_batch,
        global_batch=global_batch, seq_len=seq_len, shard_group=shard_group,
    )
    lim.within(("--gpus", gpus, lim.GPUS), ("--tp", tp, lim.PARALLEL), ("--pp", pp, lim.PARALLEL),
               ("--cp", cp, lim.PARALLEL), ("--ep", ep, lim.PARALLEL),
               ("--interleave", interleave, lim.INTERLEAVE),
               ("--micro-batch", micro_batch, lim.SEQUENCES),
               ("--global-batch", global_batch, lim.SEQUENCES),
               ("--seq-len", seq_len, lim.SEQ_TOKENS), ("--shard-group", shard_group, lim.PARALLEL),
               ("--prefetch", prefetch, lim.PREFETCH), ("--seed", seed, lim.SEED))
    lim.nonempty(("--offload", offload))
    lim.nonempty(("--server", server), ("--stack", stack), ("--schedule", schedule),
                 ("--ep-overlap", ep_overlap), ("--ep-dispatcher", ep_dispatcher),
                 ("--cp-comm", cp_comm), ("--fp8-recipe", fp8_recipe),
                 ("--grad-reduce", grad_reduce))
    with user_errors():
        cat = state(ctx).catalog()
    req = TrainEstimateRequest(
        model=_arch(cat, model), gpu=gpu, gpus=gpus, tp=tp, pp=pp, cp=cp, ep=ep,
        interleave=interleave, zero=zero, shard_group=shard_group, micro_batch=micro_batch,
        global_batch=global_batch, seq_len=seq_len, recompute=recompute,
        recompute_share=recompute_share, sequence_parallel=sequence_parallel,
        precision=precision, server=server, stack=stack, fidelity=fidelity, routing=routing,
        seed=seed, lora=_lora(lora_rank, lora_targets),
        options=_options(schedule=schedule, ep_overlap=ep_overlap, ep_dispatcher=ep_dispatcher,
                         cp_comm=cp_comm, fp8_recipe=fp8_recipe, tp_overlap=tp_overlap,
                         grad_overlap=grad_overlap, grad_reduce=grad_reduce,
                         flash_attention=flash_attention,
                         param_overlap=param_overlap,
                         p2p_overlap=p2p_overlap, dispatch_fp8=dispatch_fp8,
                         expert_imbalance=expert_imbalance, prefetch=prefetch, zeropp=zeropp,
                         offload=offload),
    )
    with user_errors(name_flags=True):
        try:
            payload = estimate_training(cat, req).as_dict()
        except LayoutMisfitError as exc:
            fail(exc.worded(_as_flag))
    if as_json:
        emit_json(payload)
    else:
        _render_estimate(payload)


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
    grad_reduce: str | None = GRAD_REDUCE_OPT,
    flash_attention: bool | None = FLASH_OPT,
    param_overlap: bool | None = PARAM_OVERLAP_OPT,
    p2p_overlap: bool | None = P2P_OVERLAP_OPT,
    offload: str | None = OFFLOAD_OPT,
    lora_rank: int | None = LORA_RANK_OPT,
    lora_targets: str = LORA_TARGETS_OPT,
    slice_shape: str | None = typer.Option(
        None, "--slice", help="TPU slice shape, e.g. 16x16x24 (a shape the pod forms)."),
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
    from clusterwright.plan.train_request import TrainPlanRequest, plan_training

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
    lim.nonempty(("--offload", offload), ("--slice", slice_shape))
    lim.nonempty(("--server", server), ("--stack", stack), ("--schedule", schedule),
                 ("--ep-overlap", ep_overlap), ("--ep-dispatcher", ep_dispatcher),
                 ("--cp-comm", cp_comm), ("--fp8-recipe", fp8_recipe),
                 ("--grad-reduce", grad_reduce))
    with user_errors():
        cat = state(ctx).catalog()
    req = TrainPlanRequest(
        model=_arch(cat, model), gpu=gpu, gpus=gpus, seq_len=seq_len, global_batch=global_batch,
        tokens=tokens, deadline_days=deadline_days, precision=precision, server=server,
        stack=stack, fidelity=fidelity, recheck=recheck, recheck_budget_s=recheck_budget_s,
        routing=routing, slice=slice_shape, lora=_lora(lora_rank, lora_targets),
        options=_options(schedule=schedule, ep_overlap=ep_overlap, ep_dispatcher=ep_dispatcher,
                         cp_comm=cp_comm, fp8_recipe=fp8_recipe, tp_overlap=tp_overlap,
                         grad_overlap=grad_overlap, grad_reduce=grad_reduce,
                         flash_attention=flash_attention,
                         param_overlap=param_overlap,
                         p2p_overlap=p2p_overlap, offload=offload),
    )
    with user_errors(name_flags=True):
        payload = plan_training(cat, req).as_dict()
    if as_json:
        emit_json(payload)
    else:
        _render_plan(payload)


def _render_plan(d: dict[str, Any]) -> None:
    b = d["best"]
    console.print(
        f"[bold]best for {d['model']}[/] (global batch {d['global_batch']} x {d['seq_len']})"
        + (f" on a {d['slice']} slice" if d.get("slice") else "") + ":"
    )
    _render_estimate(b)
    if d.get("time_to_train_days") is not None:
        cost = (
            f", {usd(d['cost_usd'])} at {usd(d['usd_per_gpu_hour'])}/GPU-h ({d['price_offer']}"
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
                usd(r.get("cost_usd")),
            )
        console.print(g)


@app.command("multisite")
def multisite_cmd(
    ctx: typer.Context,
    model: str = typer.Option(..., "--model", help="Catalog id or path to a model YAML."),
    gpu: str = typer.Option(..., "--gpu", help="GPU / accelerator catalog id."),
    sites: int = typer.Option(2, "--sites", help="Sites joined by WAN links (identical)."),
    site_mw: float = typer.Option(..., "--site-mw", help="IT power per site, MW."),
    wan_gbps: float | None = typer.Option(
        None, "--wan-gbps", help="WAN Gb/s each way per site (needed with 2+ sites)."),
    latency_ms: float = typer.Option(0.0, "--latency-ms", help="One-way WAN latency, ms."),
    loss: float = typer.Option(0.0, "--loss", help="WAN packet loss fraction."),
    usd_per_gbps_month: float = typer.Option(0.0, "--usd-per-gbps-month",
                                             help="WAN price per Gb/s per month."),
    gpus: int | None = typer.Option(None, "--gpus", help="Total GPUs over all sites (default: "
                                    "as many as the smallest site's power allows, per site)."),
    seq_len: int = typer.Option(4096, "--seq-len"),
    global_batch: int | None = typer.Option(None, "--global-batch",
                                            help="Sequences per step on each site."),
    tokens: float | None = typer.Option(None, "--tokens", help="Tokens to train."),
    method: str = typer.Option("diloco", "--method", help="sync, diloco or streaming."),
    inner_steps: int = typer.Option(100, "--inner-steps", help="Steps between outer syncs."),
    bits: float = typer.Option(8.0, "--bits", help="Bits per parameter on the WAN."),
    fragments: int = typer.Option(1, "--fragments", help="Streaming DiLoCo fragments."),
    overlap_steps: float = typer.Option(0.0, "--overlap-steps",
                                        help="Inner steps a fragment's exchange overlaps."),
    pue: float = typer.Option(1.3, "--pue", help="Facility power over IT power."),
    server: str | None = typer.Option(None, "--server", help="Server catalog id."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Train one job across sites: each site's best layout, then synchronous DP, DiLoCo and
    Streaming DiLoCo over the WAN (utilization, WAN Gb/s for 90/95/99 %, time and cost)."""
    from clusterwright.plan.multisite import MultisiteRequest, Site, plan_multisite

    lim.within(("--sites", sites, lim.SITES), ("--site-mw", site_mw, lim.SITE_MW),
               ("--wan-gbps", wan_gbps, lim.WAN_GBPS),
               ("--latency-ms", latency_ms, lim.WAN_LATENCY_MS), ("--loss", loss, lim.WAN_LOSS),
               ("--usd-per-gbps-month", usd_per_gbps_month, lim.USD_PER_GBPS_MONTH),
               ("--gpus", gpus, lim.GPUS), ("--seq-len", seq_len, lim.SEQ_TOKENS),
               ("--global-batch", global_batch, lim.SEQUENCES),
               ("--tokens", tokens, lim.TRAIN_TOKENS),
               ("--inner-steps", inner_steps, lim.INNER_STEPS), ("--bits", bits, lim.WAN_BITS),
               ("--fragments", fragments, lim.FRAGMENTS),
               ("--overlap-steps", overlap_steps, lim.OVERLAP_STEPS), ("--pue", pue, lim.PUE))
    lim.nonempty(("--server", server), ("--method", method))
    cat = state(ctx).catalog()
    arch = _arch(cat, model)
    site_list = tuple(Site(f"site-{i + 1}", site_mw, wan_gbps, latency_ms, loss,
                           usd_per_gbps_month) for i in range(sites))
    # The sites are identical on the command line: a site field is its flag.
    site_flags = {"power_mw": "--site-mw", "wan_gbps": "--wan-gbps", "loss": "--loss"}
    try:
        res = plan_multisite(cat, MultisiteRequest(
            arch, gpu, site_list, gpus, seq_len, global_batch, tokens, Precision.bf16, method,
            inner_steps, bits, fragments, overlap_steps, pue, server))
    except ClusterwrightError as exc:
        field = getattr(exc, "field", None) or ""
        leaf = field.split(".")[-1]
        name = site_flags.get(leaf) or ("--" + leaf.replace("_", "-") if leaf else "")
        msg = str(exc)
        fail(f"{name}: {msg.split(': ', 1)[1] if msg.startswith(field) else msg}"
             if name else msg)
    d = res.as_dict()
    if as_json:
        emit_json(d)
        return
    lay = d["layout"]
    console.print(
        f"[bold]{d['sites']} sites x {d['gpus_per_site']:,} {d['gpu']}[/] "
        f"({d['mw_per_site']:.1f} MW IT per site), per site tp {lay['tp']} pp {lay['pp']} "
        f"dp {lay['dp']} zero {lay['zero']}, step {d['step_time_s']:.3f} s")
    t = Table(title=f"across the WAN ({d['wan']['gbps']} Gb/s, {d['wan']['latency_ms']} ms)",
              title_justify="left")
    for col in ("method", "utilization", "Gb/s for 90%", "95%", "99%", "days", "cost"):
        t.add_column(col, justify="left" if col == "method" else "right")
    for name, m in d["methods"].items():
        need = m["wan_gbps_needed"]
        t.add_row(name, f"{100 * m['utilization']:.1f}%",
                  *("-" if need[k] is None else f"{need[k]:,.2f}" for k in ("90", "95", "99")),
                  f"{m['time_to_train_days']:.1f}" if m.get("time_to_train_days") else "-",
                  usd(m["cost_usd"]) if m.get("cost_usd") is not None else "-")
    console.print(t)
    console.print(f"validated: {d['validated']}")
    for n in d["notes"]:
        console.print(f"[yellow]note:[/] {n}")
