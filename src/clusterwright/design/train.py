"""Training building blocks: the hardware a job runs on and one layout evaluated.

``job_for`` turns catalog ids into a ``model.train_job.Job``; ``estimate_layout`` evaluates one
layout (choosing the micro-batch when asked) into a ``LayoutResult``; ``confidence`` says how
far a prediction sits from measured runs. The layout search (every layout that divides the
job and fits in memory, vectorized) is a planner: ``plan/layouts.py``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from clusterwright.catalog.registry import Catalog
from clusterwright.catalog.schema import Gpu, ModelArch, Server
from clusterwright.catalog.stacks import EXPERT_IMBALANCE_MAX, Stack
from clusterwright.errors import InputError
from clusterwright.model.collectives import Interconnect, interconnect
from clusterwright.model.layouts import Layouts
from clusterwright.model.lora import Lora
from clusterwright.model.precision import Precision, training_dtype
from clusterwright.model.recompute import (
    FULL,
    NONE,
    RECOMPUTE_MODULE_BITS,
    SELECTIVE,
    recompute_name,
)
from clusterwright.model.train_compute import FP8_CAST_BYTES
from clusterwright.model.train_job import (
    CP_COMMS,
    EP_DISPATCHERS,
    EP_OVERLAPS,
    GRAD_REDUCES,
    SCHEDULES,
    Job,
    Options,
)
from clusterwright.model.training import BREAKDOWN_FIELDS, StepEstimate, estimate


def server_for(cat: Catalog, gpu: Gpu) -> Server | None:
    """The first catalog server built from ``gpu`` (DGX before HGX: file order)."""
    for s in cat.all("servers"):
        if s.gpu == gpu.id:
            return s  # type: ignore[no-any-return]
    return None


def in_server(gpu: Gpu, server: Server | None) -> Gpu:
    """``gpu`` as ``server`` runs it: at the server's matrix rate where the server caps the
    GPU's module below the part's own power limit (catalog ``Server.matrix_rate``)."""
    if server is None or server.matrix_rate is None:
        return gpu
    return gpu.model_copy(update={"matrix_rate": server.matrix_rate})


def net_for(cat: Catalog, gpu: Gpu, stack: Stack, server: Server | None = None) -> Interconnect:
    """Interconnect of ``gpu`` in ``server`` (or its catalog server). A GPU sold without a
    catalog server gets an assumed 8-GPU box with one 400G NIC per GPU; PCIe cards get a
    scale-up domain of 2 (NVLink bridge) or 1."""
    server = server or server_for(cat, gpu)
    lib = cat.collective_lib(stack.collectives)
    if server is not None:
        return interconnect(gpu, server, stack, lib)
    # PCIe cards: an NVLink bridge joins pairs (A100/H100 PCIe datasheets); else none.
    pcie_domain = 2 if gpu.scale_up.kind == "nvlink" else 1
    domain = pcie_domain if gpu.form_factor == "pcie" else 8
    up = gpu.scale_up.bandwidth_gbps_per_direction * 1e9
    return Interconnect(
        domain_gpus=domain,
        scale_up_busbw=up * stack.scale_up_busbw_fraction,
        nvls_busbw=up * stack.nvls_busbw_fraction,
        net_busbw=400e9 / 8 * stack.nic_busbw_fraction,
        lib=lib,
    )


def options_for(stack: Stack, **given: Any) -> Options:
    """The stack's default options with ``given`` ones (None: the default), each checked
    against what the framework supports. InputError names the field."""
    f = stack.features
    chosen = {k: v for k, v in given.items() if v is not None}
    checks: dict[str, tuple[Iterable[object], str]] = {
        "schedule": (f.schedules, "schedules"),
        "ep_overlap": (f.ep_overlap, "MoE all-to-all overlap modes"),
        "ep_dispatcher": (f.ep_dispatchers, "MoE token dispatchers"),
        "cp_comm": (f.context_parallel, "context-parallel kinds"),
        "fp8_recipe": (f.fp8_recipes, "FP8 recipes"),
        "grad_reduce": (GRAD_REDUCES, "ZeRO-1/2 gradient collectives"),
    }
    known = {"schedule": SCHEDULES, "ep_overlap": EP_OVERLAPS, "cp_comm": CP_COMMS,
             "ep_dispatcher": EP_DISPATCHERS,
             "fp8_recipe": tuple(FP8_CAST_BYTES), "grad_reduce": GRAD_REDUCES}
    for name, (allowed, what) in checks.items():
        if name not in chosen:
            continue
        value = chosen[name]
        if value not in known[name]:
            raise InputError(
                f"{name}: {value!r} is not one of {', '.join(known[name])}", field=name)
        if value not in list(allowed):
            have = ", ".join(map(str, allowed)) or "none"
            raise InputError(
                f"{name}: {value!r} is not supported by stack {stack.id} ({what}: {have})",
                field=name)
    flags = {"tp_overlap": f.tp_comm_overlap, "grad_overlap": f.overlap_grad_reduce,
             "param_overlap": f.overlap_param_gather, "p2p_overlap": f.overlap_p2p,
             "zeropp": f.zeropp,
             "flash_attention": stack.flash_attention or f.fused_attention_optional}
    for name, supported in flags.items():
        if chosen.get(name) and not supported:
            raise InputError(f"{name}: stack {stack.id} cannot do it", field=name)
    if "offload" in chosen and chosen["offload"] not in OFFLOADS:
        raise InputError(f"offload: {chosen['offload']!r} is not one of {', '.join(OFFLOADS)}",
                         field="offload")
    if "prefetch" in chosen and int(chosen["prefetch"]) < 0:
        raise InputError(f"prefetch: must be >= 0, got {chosen['prefetch']}", field="prefetch")
    if "expert_imbalance" in chosen and not (
            1.0 <= float(chosen["expert_imbalance"]) <= EXPERT_IMBALANCE_MAX):
        raise InputError("expert_imbalance: the busiest expert's load over the mean is in "
                         f"[1, {EXPERT_IMBALANCE_MAX:g}], got {chosen['expert_imbalance']}",
                         field="expert_imbalance")
    return Options.for_stack(stack, **chosen)


def job_for(
    cat: Catalog,
    arch: ModelArch,
    gpu_id: str,
    seq_len: int,
    global_batch: int,
    precision: Precision | str = Precision.bf16,
    grad_precision: Precision | str | None = None,
    server_id: str | None = None,
    stack_id: str | None = None,
    dropout: bool = False,
    options: dict[str, Any] | None = None,
    lora: Lora | None = None,
) -> Job:
    """A Job from catalog ids (``lora``: LoRA fine-tuning, base weights frozen). Raises
    UnknownIdError / InputError for bad ids or dtypes."""
    gpu = cat.gpu(gpu_id)
    stack = cat.stack(stack_id) if stack_id else cat.stack_for_gpu(gpu.id)
    if stack_id and gpu.id not in stack.gpus:
        raise InputError(f"stack: {stack.id} is calibrated for {', '.join(stack.gpus)}, "
                         f"not {gpu.id}", field="stack")
    server = cat.server(server_id) if server_id else None
    if server is not None and server.gpu != gpu.id:
        raise InputError(f"server: {server.id} holds {server.gpu}, not {gpu.id}", field="server")
    gpu = in_server(gpu, server)
    p = Precision(precision)
    if p in (Precision.int8, Precision.int4):
        raise InputError(f"precision: {p.value} is not a training precision", field="precision")
    if training_dtype(p) not in gpu.peak_tflops:
        raise InputError(f"precision: {gpu.id} has no {training_dtype(p).value} tensor cores",
                         field="precision")
    opts = options_for(stack, **(options or {}))
    if opts.offload != "none" and gpu.host_memory is None:
        raise InputError(f"offload: {gpu.id} has no CPU memory behind a coherent link to offload "
                         "to (superchips: gh200, gb200, gb300)", field="offload")
    if p in (Precision.fp8, Precision.fp4) and not stack.features.fp8_recipes:
        raise InputError(f"precision: stack {stack.id} does not train in {p.value}",
                         field="precision")
    storage = Precision.bf16 if p in (Precision.fp8, Precision.fp4) else p
    return Job(
        arch=arch,
        seq_len=seq_len,
        global_batch=global_batch,
        gpu=gpu,
        stack=stack,
        net=net_for(cat, gpu, stack, server),
        precision=p,
        grad_precision=Precision(grad_precision) if grad_precision else storage,
        dropout=dropout,
        reserve_bytes=cat.assumption("training_reserve_gb") * 1e9,
        opts=opts,
        gpu_speed_cv=cat.assumption("gpu_speed_cv"),
        lora=lora,
    )


MICRO_BATCHES = (1, 2, 4, 8, 16, 32)
OFFLOADS = ("none", "optimizer")
# Shares of each chunk's layers that full recompute may cover (Megatron's block method).
RC_FRACTIONS = (0.25, 0.5, 0.75, 1.0)


@dataclass(frozen=True)
class LayoutResult:
    """One evaluated layout (scalars), as the CLI reports it."""

    layout: dict[str, object]
    step_time_s: float
    breakdown: dict[str, float]
    model_flops: float
    hardware_flops: float
    memory: dict[str, float]
    fits: bool
    gpus: int
    tokens_per_step: float
    comm: dict[str, float] = field(default_factory=dict)  # total per family, hidden or not

    @property
    def overlap(self) -> dict[str, float]:
        """Share of each family's communication the schedule hid (derived, not assumed)."""
        exposed = {"tp": "tp_comm_s", "cp": "cp_comm_s", "ep": "ep_comm_s", "pp": "pp_comm_s",
                   "dp": "dp_comm_exposed_s"}
        out = {}
        for fam, key in exposed.items():
            total = self.comm.get(fam, 0.0)
            if total > 0:
                out[fam] = max(0.0, min(1.0, 1.0 - self.breakdown[key] / total))
        return out

    def metrics(self, gpu: Gpu, dtype_peak_tflops: float) -> dict[str, float]:
        tps = self.tokens_per_step / self.step_time_s
        return {
            "tokens_per_s": tps,
            "tflops_per_gpu": self.model_flops / self.step_time_s / self.gpus / 1e12,
            "hw_tflops_per_gpu": self.hardware_flops / self.step_time_s / self.gpus / 1e12,
            "mfu": self.model_flops / self.step_time_s / self.gpus / (dtype_peak_tflops * 1e12),
            "hfu": self.hardware_flops / self.step_time_s / self.gpus / (dtype_peak_tflops * 1e12),
        }


def layout_result(job: Job, lay: Layouts, est: StepEstimate, i: int) -> LayoutResult:
    """Layout ``i`` of ``lay`` and its estimate as scalars, recompute named."""
    layout = {
        "tp": int(lay.tp[i]),
        "pp": int(lay.pp[i]),
        "dp": int(lay.dp[i]),
        "cp": int(lay.cp[i]),
        "ep": int(lay.ep[i]),
        "micro_batch": int(lay.micro_batch[i]),
        "interleave": int(lay.interleave[i]),
        "zero": int(lay.zero[i]),
        "recompute": recompute_name(int(lay.recompute[i])),
        "sequence_parallel": bool(lay.sp[i]),
        "shard": int(lay.shard[i]),
        "recompute_share": float(lay.rc_frac[i]) if int(lay.recompute[i]) == FULL else 0.0,
        "global_batch": job.global_batch,
    }
    return LayoutResult(
        layout=layout,
        step_time_s=float(est.step_time_s[i]),
        breakdown={k: float(getattr(est, k)[i]) for k in BREAKDOWN_FIELDS},
        model_flops=float(est.model_flops[i]),
        hardware_flops=float(est.hardware_flops[i]),
        memory={k: float(v[i]) for k, v in est.memory_parts.items()},
        fits=bool(job.fits(est.memory_parts, i)),
        gpus=int(lay.tp[i] * lay.pp[i] * lay.dp[i] * lay.cp[i]),
        tokens_per_step=float(job.global_batch * job.seq_len),
        comm={k: float(v[i]) for k, v in est.comm_s.items()},
    )


def recompute_choices(job: Job) -> tuple[int, ...]:
    """Recompute codes the planner tries: none, selective (core attention), full, and for MoE
    models the expert modules Megatron-Core offers (moe_act, moe)."""
    base = (NONE, SELECTIVE, FULL)
    if job.arch.is_moe:
        return (*base, RECOMPUTE_MODULE_BITS["moe_act"],
                RECOMPUTE_MODULE_BITS["moe_act"] | 1, RECOMPUTE_MODULE_BITS["moe"])
    return base



SEARCH_SPACE: dict[str, tuple[int, ...]] = {
    "micro_batch": MICRO_BATCHES,
    "interleave": (1, 2, 3, 4, 6, 8),
    "recompute": (0, 1, 2),
    "sp": (0, 1),
    "zero": (0, 1),
}


def estimate_layout(job: Job, fixed: dict[str, Any], search: tuple[str, ...] = ()
                    ) -> LayoutResult:
    """Evaluate one layout. Fields named in ``search`` (micro_batch, interleave, recompute,
    sp, zero) are not given: every value that divides the job is tried and the fastest that
    fits in memory is kept (or the least memory-hungry, if none fits, so the caller can say
    why). ``fixed`` holds tp, pp, dp, cp, ep and any field not searched."""
    t, p, d = fixed.get("tp", 1), fixed.get("pp", 1), fixed.get("dp", 1)
    per_dp = job.global_batch // d
    choices: dict[str, tuple[float, ...]] = {}
    for name in search:
        opts = SEARCH_SPACE[name]
        if name == "micro_batch":
            opts = tuple(b for b in opts if per_dp % b == 0) or (1,)
        elif name == "interleave":
            opts = tuple(
                v
                for v in opts
                if v == 1
                or (
                    p > 1
                    and p * v <= job.arch.layers
                    and (per_dp // fixed.get("micro_batch", 1)) % p == 0
                )
            )
        elif name == "sp":
            opts = (0, 1) if t > 1 else (0,)
        elif name == "recompute":
            opts = recompute_choices(job)
        elif name == "zero":
            opts = (0, 1) if job.stack.features.distributed_optimizer else (0,)
        choices[name] = opts
    if "recompute" in choices and "rc_frac" not in fixed:
        choices["rc_frac"] = RC_FRACTIONS
    names = list(choices)
    combos = list(itertools.product(*(choices[n] for n in names))) or [()]
    if "rc_frac" in choices:
        # A partial share only means something with full recompute.
        rc_i, fr_i = names.index("recompute"), names.index("rc_frac")
        combos = [c for c in combos if c[fr_i] == 1.0 or c[rc_i] == FULL]
    cols = {n: np.array([c[i] for c in combos]) for i, n in enumerate(names)}
    base = {k: v for k, v in fixed.items() if k not in cols}
    lay = Layouts.of(**base, **cols)
    est = estimate(job, lay)
    fits = job.fits(est.memory_parts)
    if fits.any():
        i = int(np.argmin(np.where(fits, est.step_time_s, np.inf)))
    else:
        i = int(np.argmin(est.memory_bytes))
    return layout_result(job, lay, est, i)


# --------------------------------------------------------------------------- confidence


@dataclass(frozen=True)
class Regime:
    """Where an estimate sits among the validated runs: stack, precision class, the
    parallelism families it uses, and its scale (GPUs)."""

    stack: str
    gpu: str
    precision: str  # bf16 (any 16-bit) or fp8 (fp8, fp4)
    families: tuple[str, ...]  # ptd-p, zero3, moe-ep, cp
    gpus: int

    @property
    def family(self) -> str:
        return "+".join(self.families)

    @property
    def scale(self) -> str:
        return "<=64" if self.gpus <= 64 else "<=1024" if self.gpus <= 1024 else ">1024"


def regime_of(job: Job, layout: dict[str, object], gpus: int) -> Regime:
    """The regime of ``layout`` (a layout dict as ``LayoutResult.layout``) on ``gpus``: the
    families are zero3, moe-ep (any MoE model), cp and ptd-p (TP or PP, or nothing else);
    lora (LoRA fine-tuning) whatever the layout."""
    prec = "fp8" if job.precision in (Precision.fp8, Precision.fp4) else "bf16"
    if job.lora is not None:
        # LoRA fine-tuning is its own regime: its step (no weight gradients, thin adapter
        # GEMMs, a larger attention share) errs differently from pre-training's.
        return Regime(job.stack.id, job.gpu.id, prec, ("lora",), gpus)
    fams = []
    if int(str(layout.get("zero", 0))) >= 3:
        fams.append("zero3")
    if job.arch.is_moe:
        # A MoE model is its own regime whatever else it uses: its errors (routing, expert
        # GEMMs, dispatch) are not a dense model's.
        fams.append("moe-ep")
    else:
        if int(str(layout.get("cp", 1))) > 1:
            fams.append("cp")
        if not fams or int(str(layout.get("tp", 1))) * int(str(layout.get("pp", 1))) > 1:
            fams.insert(0, "ptd-p")
    return Regime(job.stack.id, job.gpu.id, prec, tuple(fams), gpus)


def confidence(cat: Catalog, job: Job, layout: dict[str, object], gpus: int,
               step_time_s: float) -> dict[str, Any]:
    """The error band of an estimate: for each parallelism family the layout uses, the
    validation error of the closest validated regime (same stack; same precision class and
    family, else the stack's whole precision class, else the whole stack), the widest of
    them kept. Says so when nothing of the stack was validated, when no run of the regime was
    on this GPU (the band is then the stack's on its other GPUs, and the estimate is not
    validated), or the scale is beyond the largest validated run of the regime (more than
    twice its GPUs). Band: the regime's 90th
    percentile |error|, as a fraction and as a step-time range (seconds)."""
    reg = regime_of(job, layout, gpus)
    table = [r for r in cat.all("training_regimes") if r.stack == reg.stack]
    rate = job.gpu.matrix_rate
    # A part held below its sibling's clock by its power limit (catalog Gpu.matrix_rate).
    rate_notes = [] if rate == 1.0 else [
        f"{job.gpu.id} runs its GEMMs and attention at {rate:.3g} of stack {reg.stack}'s rate: "
        "the clock its power limit leaves it under matrix work (catalog matrix_rate of the GPU, "
        "or of the server that caps it)"]
    out: dict[str, Any] = {"regime": {"stack": reg.stack, "gpu": reg.gpu,
                                      "precision": reg.precision, "family": reg.family,
                                      "scale": reg.scale, "gpus": gpus}}
    if not table:
        out.update(validated=False, band=None, step_time_range_s=None, matched=[],
                   notes=[f"unvalidated: stack {reg.stack} has fewer than three published "
                          "runs in validation/training.csv and accelerators.csv, so no error "
                          "band; treat this estimate as a guess", *rate_notes])
        return out
    by_key = {(r.precision, r.family): r for r in table}
    matched = []
    notes: list[str] = []
    for fam in reg.families:
        keys = ((reg.precision, fam), ("any", fam), (reg.precision, "any"), ("any", "any"))
        found = [(k, by_key[k]) for k in keys if k in by_key]
        # The closest regime with runs on this GPU, else the closest on the stack's others (a
        # stack's BF16 runs may all be on a sibling part while its H100 runs are FP8).
        own = [(k, h) for k, h in found if reg.gpu in h.accelerators]
        if found:
            key, hit = (own or found)[0]
            matched.append(hit)
            where = (f"of {reg.stack} on {reg.gpu}" if own and key != found[0][0]
                     else f"on {reg.stack}")
            if key[1] != fam:
                notes.append(f"no validated {reg.precision} {fam} run {where}: "
                             f"band of its {key[0]} {key[1]} rows")
            elif key[0] != reg.precision:
                notes.append(f"no validated {reg.precision} {fam} run {where}: "
                             f"band of its {fam} rows of every precision")
    if not matched:
        # The stack's published runs are all of other families (Gaudi 3: LoRA fine-tuning
        # only), so none bands this regime.
        fams = ", ".join(sorted({r.family for r in table}))
        out.update(validated=False, band=None, step_time_range_s=None, matched=[],
                   notes=[f"unvalidated: no published run of this regime on stack {reg.stack} "
                          f"(its validated runs are of the {fams} family only), so no error "
                          "band; treat this estimate as a guess", *rate_notes])
        return out
    worst = max(matched, key=lambda r: r.band)
    biggest = max(r.max_gpus for r in matched)
    if gpus > 2 * biggest:
        notes.append(f"beyond validated scale: the largest validated run of this regime used "
                     f"{biggest:,} GPUs")
    exact = all(r.family != "any" and r.precision == reg.precision for r in matched)
    measured_on = sorted({g for r in matched for g in r.accelerators})
    if measured_on and reg.gpu not in measured_on:
        # The stack's band was measured on other silicon (a sibling part): kept, but the
        # estimate is not called validated and says so first.
        notes.insert(0, f"unvalidated on {reg.gpu}: no published run on it; the band is stack "
                        f"{reg.stack}'s on {', '.join(measured_on)}")
        exact = False
    replaced = job.gpu.overrides
    if replaced is not None:
        # A user catalog changed this GPU: the runs measured the shipped part.
        notes.insert(0, f"unvalidated: {job.gpu.id} is overridden by a user catalog (the "
                        f"published runs measured the entry at {replaced}); the band is the "
                        "shipped part's")
        exact = False
    out.update(
        validated=exact and gpus <= 2 * biggest,
        band=worst.band, mape=worst.mape, bias=worst.bias, rows=worst.rows,
        matched=[r.id for r in matched],
        step_time_range_s=[step_time_s / (1.0 + worst.band), step_time_s * (1.0 + worst.band)],
        notes=notes + rate_notes,
    )
    return out


def mfu_record(cat: Catalog, gpu_id: str, precision: Precision) -> Any:
    """The highest published MFU on ``gpu_id`` in ``precision``'s class (MfuRecord), or None."""
    prec = "fp8" if precision in (Precision.fp8, Precision.fp4) else "bf16"
    recs = [r for r in cat.all("mfu_records") if r.gpu == gpu_id and r.precision == prec]
    return max(recs, key=lambda r: r.mfu) if recs else None


def default_global_batch(seq_len: int, dp_multiple: int = 1, tokens: int = 4 * 1024 * 1024) -> int:
    """About 4M tokens per step (Llama 2: 4M; GPT-3 175B: 3.2M), rounded up to whole
    data-parallel groups."""
    seqs = max(1, round(tokens / seq_len))
    return int(math.ceil(seqs / dp_multiple) * dp_multiple)
