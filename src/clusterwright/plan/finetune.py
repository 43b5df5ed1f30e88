"""A scenario's fine-tuning workloads: GPU-hours at the achieved MFU of the training planner's
best layout (for LoRA, the step model with frozen base weights and the workload's adapters),
on the inference pool's free GPUs inside the window when there is a pool."""

from __future__ import annotations

import math
from typing import Any

from clusterwright.catalog.schema import Gpu, Server
from clusterwright.design.blueprint import (
    Violation,
    violation,
)
from clusterwright.design.train import job_for
from clusterwright.errors import InputError
from clusterwright.model.flops import finetune_flops_per_token
from clusterwright.model.lora import Lora
from clusterwright.model.precision import training_dtype
from clusterwright.plan.context import PlanRun
from clusterwright.plan.layouts import plan
from clusterwright.plan.training import global_batch, memory_violation
from clusterwright.spec.scenario import (
    FinetuneWorkload,
    Window,
)


def lora_of(w: FinetuneWorkload) -> Lora | None:
    """The adapters a LoRA workload trains (None for full fine-tuning)."""
    return Lora.of(w.lora_rank, w.lora_targets) if w.method == "lora" else None


def window_hours(win: Window) -> list[int]:
    end = win.end_hour if win.end_hour > win.start_hour else win.end_hour + 24
    return [h % 24 for h in range(win.start_hour, end)]


def size_finetune(run: PlanRun, w: FinetuneWorkload, gpu: Gpu, server: Server,
                   inference_rows: list[dict[str, Any]]
                   ) -> tuple[dict[str, Any] | None, list[Violation]]:
    """GPU-hours at the training planner's achieved FLOP/s; on the inference pool's free
    GPUs inside the window when there is a pool, else on dedicated GPUs."""
    arch = run.models[w.name]
    # LoRA: the step model with frozen base weights and the adapters (model/lora), so the
    # achieved rate below is fine-tuning's own, not pre-training's.
    lora = lora_of(w)
    try:
        job = job_for(run.cat, arch, gpu.id, w.seq_len, global_batch(w), w.precision,
                      server_id=server.id, lora=lora)
    except InputError as exc:
        return None, [violation("gpus", None, None, "", f"{gpu.id} cannot fine-tune ({exc})",
                                w.name)]
    best, n_min = None, 0
    for n in (server.gpus * k for k in (1, 2, 4, 8, 16)):
        res = plan(job, n, top_n=1)
        if res.best is not None:
            best, n_min = res.best, n
            break
    if best is None:
        return None, [memory_violation(job, w.name, server.gpus * 16)]
    peak = gpu.peak_tflops[training_dtype(job.precision)] * 1e12
    mfu = best.metrics(gpu, peak / 1e12)["mfu"]
    flops = float(finetune_flops_per_token(arch, w.seq_len, w.method, lora)) * w.tokens * w.epochs
    gpu_hours = flops / (mfu * peak) / 3600.0
    row: dict[str, Any] = {
        "name": w.name, "kind": "finetune", "model": arch.id, "gpu": gpu.id,
        "method": w.method, "flops": flops, "mfu": mfu, "gpu_hours": gpu_hours,
        "lora": lora.as_dict() if lora is not None else None,
        "window": ({"start_hour": w.window.start_hour, "end_hour": w.window.end_hour}
                   if w.window else None),
        "extra_gpus": 0,
    }
    pool = [r for r in inference_rows if r["gpu"] == gpu.id]
    if w.window is not None and pool:
        hours = window_hours(w.window)
        total = sum(r["gpus"] for r in pool)
        free = [total - sum((r["diurnal_gpus"] or [r["gpus"]] * 24)[h] for r in pool)
                for h in hours]
        if w.gpus is not None:
            free = [min(f, w.gpus) for f in free]
        available = float(sum(free))
        # One window a day: the job runs over as many as it takes, or, with a deadline, over
        # the deadline's windows, dedicated GPUs closing the gap (the cluster total is rounded
        # to whole servers afterwards).
        windows = None if w.deadline_days is None else max(1, math.floor(w.deadline_days))
        extra = 0
        if windows is not None and available * windows < gpu_hours:
            extra = math.ceil((gpu_hours - available * windows) / (len(hours) * windows)
                              - 1e-9)
        used = [f + extra for f in free]
        per_window = float(sum(used))
        if per_window <= 0:
            return None, [violation(
                "gpus", None, None, "",
                f"the inference pool frees no {gpu.id} GPU in {w.name}'s window, so it never "
                "runs: give gpus or deadline_days", w.name)]
        needed = math.ceil(gpu_hours / per_window - 1e-9)
        # Wall-clock hours from the first window's start: whole days for the windows before
        # the last, then the last one's share.
        last = hours_to_finish(gpu_hours - (needed - 1) * per_window, used)
        row.update(
            gpus=max(used), runs_on="inference pool at night" + (
                f" plus {extra} dedicated GPUs" if extra else ""),
            pool_gpus=total, free_gpu_hours_in_window=available,
            hours=(needed - 1) * 24.0 + last, fits_window=needed == 1,
            windows=needed, deadline_days=w.deadline_days,
            meets_deadline=None if windows is None else needed <= windows,
            extra_gpus=extra,
        )
        if windows is None and needed > 1:
            run.notes.append(
                f"{w.name}: {needed:,} nightly windows on the pool's free {gpu.id} GPUs "
                f"({needed:,} days); give deadline_days to size dedicated GPUs for a shorter run")
        if extra:
            run.notes.append(
                f"{w.name}: needs {gpu_hours:,.0f} GPU-hours on {gpu.id} in {windows} "
                f"window(s) but the inference pool frees {available:,.0f} GPU-hours a "
                f"window; {extra} dedicated GPUs added")
    else:
        n = w.gpus or n_min
        row.update(gpus=n, runs_on="dedicated", hours=gpu_hours / n,
                   fits_window=None if w.window is None else gpu_hours / n <= len(
                       window_hours(w.window)),
                   extra_gpus=n)
    return row, []


def hours_to_finish(gpu_hours: float, per_hour: list[int]) -> float:
    done = 0.0
    for i, g in enumerate(per_hour):
        if g > 0 and done + g >= gpu_hours:
            return i + (gpu_hours - done) / g
        done += g
    return float(len(per_hour))
