"""A scenario's training workloads sized on one GPU: the fewest GPUs meeting the deadline, or the
best layout at the given count (the layout search is ``plan/layouts.py``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from clusterwright.catalog.schema import Gpu, Server
from clusterwright.design.blueprint import (
    Violation,
    violation,
)
from clusterwright.design.train import (
    confidence,
    default_global_batch,
    estimate_layout,
    job_for,
    mfu_record,
)
from clusterwright.design.train_goodput import production_time, production_wall
from clusterwright.errors import InputError
from clusterwright.model.precision import training_dtype
from clusterwright.model.recompute import parse_recompute
from clusterwright.model.train_job import Job
from clusterwright.model.training import BREAKDOWN_FIELDS, estimate
from clusterwright.plan.context import PlanRun
from clusterwright.plan.layouts import (
    enumerate_layouts,
    gpu_counts,
    pareto_front,
    plan,
    sized,
    slice_ladder,
    smallest_for_deadline,
)
from clusterwright.spec.scenario import (
    FinetuneWorkload,
    TrainingWorkload,
)

RUNNERS_UP = 3  # layouts kept behind the best, for the parallelism decision


def global_batch(w: TrainingWorkload | FinetuneWorkload) -> int:
    if isinstance(w, TrainingWorkload):
        if w.global_batch is not None:
            return w.global_batch
        if w.global_batch_tokens is not None:
            return max(1, round(w.global_batch_tokens / w.seq_len))
    return default_global_batch(w.seq_len)


def min_memory_gb(job: Job, gpus: int) -> float | None:
    lay, _ = enumerate_layouts(job, gpus)
    if len(lay) == 0:
        return None
    return float(np.min(estimate(job, lay).memory_bytes)) / 1e9


OPTION_FIELDS = ("schedule", "cp_comm", "ep_overlap", "ep_dispatcher", "fp8_recipe",
                 "tp_overlap")


def training_job(run: PlanRun, i: int, w: TrainingWorkload, gpu: Gpu,
                 server: Server) -> Job | Violation:
    """The workload's job on ``gpu``; a violation if the GPU cannot train it; InputError with
    the field path if the scenario asks what its stack cannot do."""
    arch = run.models[w.name]
    opts = w.options.model_dump(exclude_none=True) if w.options is not None else {}
    try:
        return job_for(run.cat, arch, gpu.id, w.seq_len, global_batch(w), w.precision,
                       server_id=server.id, stack_id=w.stack, options=opts)
    except InputError as exc:
        if exc.field == "stack" or exc.field in OPTION_FIELDS:
            path = f"workloads[{i}].{'stack' if exc.field == 'stack' else 'options.' + exc.field}"
            raise InputError(f"{path}: {exc}", field=path) from None
        return violation("gpus", None, None, "", f"{gpu.id} cannot train it ({exc})", w.name)


def fixed_layout(i: int, w: TrainingWorkload, job: Job) -> tuple[dict[str, Any], tuple[str, ...]]:
    """The scenario's fixed layout as ``estimate_layout`` takes it (the rest searched)."""
    lay = w.layout
    assert lay is not None and w.gpus is not None
    n = w.gpus
    path = f"workloads[{i}].layout"
    if n % (lay.tp * lay.pp * lay.cp):
        raise InputError(f"{path}: gpus {n} is not a multiple of tp*pp*cp = "
                         f"{lay.tp * lay.pp * lay.cp}", field=f"{path}.tp")
    dp = n // (lay.tp * lay.pp * lay.cp)
    if (lay.tp * dp * lay.cp) % lay.ep:
        raise InputError(f"{path}.ep: {lay.ep} does not divide tp*dp*cp = "
                         f"{lay.tp * dp * lay.cp}", field=f"{path}.ep")
    if job.global_batch % dp:
        raise InputError(f"{path}: the global batch ({job.global_batch} sequences) is not a "
                         f"multiple of dp = {dp}", field=f"{path}.tp")
    fixed: dict[str, Any] = {"tp": lay.tp, "pp": lay.pp, "dp": dp, "cp": lay.cp, "ep": lay.ep}
    search: list[str] = []
    for name, value in (("interleave", lay.interleave), ("zero", lay.zero),
                        ("micro_batch", lay.micro_batch)):
        if value is None:
            search.append(name)
        else:
            fixed[name] = value
    if lay.recompute is None:
        search.append("recompute")
    else:
        fixed["recompute"] = parse_recompute(lay.recompute)
    if lay.sequence_parallel is None:
        search.append("sp")
    else:
        fixed["sp"] = int(lay.sequence_parallel)
    return fixed, tuple(search)


def size_training(run: PlanRun, w: TrainingWorkload, gpu: Gpu,
                   server: Server) -> tuple[dict[str, Any] | None, list[Violation]]:
    """The training row of the blueprint on ``gpu``, or the constraint that stops it.
    Time to train is production time: the steps, evaluation, and the checkpoints, restarts
    and lost work of the failures the reliability model expects (design/train_goodput)."""
    arch = run.models[w.name]
    i = run.scenario.workloads.index(w)
    job = training_job(run, i, w, gpu, server)
    if not isinstance(job, Job):
        return None, [job]
    cat = run.cat

    wall = production_wall(cat, arch, gpu.id, server)
    bad: list[Violation] = []
    best = None
    n = w.gpus
    if w.layout is not None:
        assert n is not None
        fixed, search = fixed_layout(i, w, job)
        best = estimate_layout(job, fixed, search)
        if not best.fits:
            return None, [violation("memory", job.gpu.memory_gb, best.memory["total"] / 1e9,
                                    "GB", f"the fixed layout on {n:,} {gpu.id}", w.name)]
    elif n is None:
        assert w.deadline_days is not None  # the scenario requires one of the two
        counts, job_at = slice_ladder(job, server.torus)
        found = smallest_for_deadline(job, w.tokens, w.deadline_days, wall=wall,
                                      counts=counts, job_at=job_at)
        if found is not None and job_at is not None:
            job = job_at(found[0].gpus)
        s = found[0] if found is not None else None
        if s is None:
            unit = job.net.domain_gpus if job.net.domain_gpus > 1 else 8
            front = pareto_front(job, gpu_counts(131072, unit), w.tokens, wall)
            if not front:
                return None, [memory_violation(job, w.name, unit)]
            s = front[-1]
            bad.append(violation(
                "deadline_days", w.deadline_days, s.time_to_train_days, "days",
                f"fastest on {gpu.id} ({s.gpus:,} GPUs)", w.name))
        n, best = s.gpus, s.best
    else:
        # The runners-up cost nothing more to keep (one enumeration): the decisions read them.
        res = plan(job, n, top_n=RUNNERS_UP + 1)
        run.searches[(w.name, gpu.id, n)] = res
        if res.best is None:
            return None, [memory_violation(job, w.name, n)]
        best = res.best
    sp = sized(best, n, w.tokens, wall)
    days = sp.time_to_train_days
    if w.gpus is not None and w.deadline_days is not None and days is not None \
            and days > w.deadline_days:
        bad.append(violation("deadline_days", w.deadline_days, days, "days",
                             f"time to train on {n:,} {gpu.id}", w.name))
    m = best.metrics(gpu, gpu.peak_tflops[training_dtype(job.precision)])
    rec = mfu_record(cat, gpu.id, job.precision)
    assert sp.compute_days is not None
    row: dict[str, Any] = {
        "name": w.name, "kind": "training", "model": arch.id, "gpu": gpu.id, "gpus": n,
        "tokens": w.tokens, "seq_len": w.seq_len, "precision": w.precision,
        "stack": job.stack.id,
        "layout": dict(best.layout),
        "layout_source": "fixed" if w.layout is not None else "planned",
        "step_time_s": best.step_time_s,
        "breakdown": {k: best.breakdown[k] for k in BREAKDOWN_FIELDS},
        "comm_s": dict(best.comm), "overlap": best.overlap,
        "mfu": m["mfu"], "tflops_per_gpu": m["tflops_per_gpu"],
        "tokens_per_s": m["tokens_per_s"],
        "memory_per_gpu_gb": best.memory["total"] / 1e9,
        "confidence": confidence(cat, job, best.layout, n, best.step_time_s),
        "mfu_highest_published": rec.mfu if rec is not None else None,
        "mfu_above_published": (m["mfu"] > rec.mfu) if rec is not None else None,
        "compute_days": sp.compute_days,
        "production": production_time(cat, arch, gpu.id, server, n,
                                      sp.compute_days * 86400.0).as_dict(),
        "time_to_train_days": days, "gpu_hours": sp.gpu_hours,
        "deadline_days": w.deadline_days,
        "checkpoint": None,
        "time_to_train_days_p10": None, "time_to_train_days_p50": None,
        "time_to_train_days_p90": None,
    }
    return row, bad


def memory_violation(job: Job, name: str, gpus: int) -> Violation:
    need = min_memory_gb(job, gpus)
    return violation("memory", job.gpu.memory_gb, need, "GB",
                     f"least memory per GPU of any layout on {gpus:,} {job.gpu.id}", name)
