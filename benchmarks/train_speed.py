"""Speed of the training planner.

Measures, on this machine:
  (a) configurations evaluated per second by ``clusterwright.model.training.estimate`` on the
      layout batches that ``enumerate_layouts`` produces (vectorized path), and single-layout
      calls per second (one layout per call, the non-vectorized path);
  (b) wall time of ``plan()`` for llama-3.1-405b on 16,384 h100-sxm (seq 8192, global batch
      2048), in process, and of ``clusterwright train plan ... --json`` as a subprocess
      (interpreter start, imports, the plan and the GPUs-vs-time front it adds);
  (c) a markdown table on stdout and in benchmarks/results/train_speed.md.

Targets (reported, not asserted): >= 1,000,000 configurations/s vectorized on 2 cores (issue
14); one layout per call at least llm-analysis's per-configuration rate (measured side by
side in peer_llm_analysis.py); ``train plan`` for llama-3.1-405b on 16,384 h100-sxm in under
5 s, with its default re-check of the best layout on the simulated fabric; ``train plan --gpu
choose --deadline-days`` over every catalog accelerator, reported.

    python benchmarks/train_speed.py [--repeats 7]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

import numpy as np
from _bench import best_of, machine_lines, si, table, timings, write

from clusterwright.catalog.registry import load_catalog
from clusterwright.design.train import job_for
from clusterwright.model.layouts import Layouts
from clusterwright.model.train_job import Job
from clusterwright.model.training import estimate
from clusterwright.plan.layouts import enumerate_layouts, plan

# model, gpu, gpus, seq_len, global_batch
CASES = [
    ("llama-3.1-405b", "h100-sxm", 16384, 8192, 2048),
    ("gpt3-175b", "a100-80gb-sxm", 1024, 2048, 1536),
]
PLAN_CASE = CASES[0]
SINGLE_CALLS = 400  # layouts evaluated one per call for the non-vectorized rate
CLI_RUNS = 5


def _job(model: str, gpu: str, seq: int, batch: int) -> Job:
    cat = load_catalog(env={})
    return job_for(cat, cat.model(model), gpu, seq, batch)


def _single_layout_rate(job: Job, lay: Layouts, repeats: int) -> float:
    """Calls/s of ``estimate`` with one layout per call, over evenly spaced layouts."""
    idx = np.linspace(0, len(lay) - 1, min(SINGLE_CALLS, len(lay))).astype(int)
    singles = [lay.take([i]) for i in idx]

    def run() -> None:
        for one in singles:
            estimate(job, one)

    t, _ = best_of(run, repeats)
    return len(singles) / t


def _cli_plan_s(model: str, gpu: str, gpus: int, seq: int, batch: int) -> tuple[list[float], int]:
    """Wall times of the CLI as a subprocess, and the candidates it reports."""
    cmd = [
        sys.executable,
        "-m",
        "clusterwright",
        "train",
        "plan",
        "--model",
        model,
        "--gpu",
        gpu,
        "--gpus",
        str(gpus),
        "--seq-len",
        str(seq),
        "--global-batch",
        str(batch),
        "--json",
    ]
    times = []
    candidates = 0
    for _ in range(CLI_RUNS):
        t0 = time.perf_counter()
        out = subprocess.run(cmd, check=True, capture_output=True, text=True)
        times.append(time.perf_counter() - t0)
        candidates = int(json.loads(out.stdout)["candidates_evaluated"])
    return times, candidates


# --gpu choose with a deadline: every catalog accelerator sized to the deadline (issue 22's
# parts made this the slowest interactive command, ~40 s of CPU before the compute floor)
CHOOSE_CMD = ["train", "plan", "--model", "llama-3.1-70b", "--gpu", "choose", "--tokens",
              "1e12", "--deadline-days", "30", "--json"]
CHOOSE_RUNS = 3


def _cli_choose_s() -> tuple[list[float], int]:
    """Wall times of ``train plan --gpu choose --deadline-days`` as a subprocess, and the
    accelerator types it sized."""
    times, types = [], 0
    for _ in range(CHOOSE_RUNS):
        t0 = time.perf_counter()
        out = subprocess.run([sys.executable, "-m", "clusterwright", *CHOOSE_CMD], check=True,
                             capture_output=True, text=True)
        times.append(time.perf_counter() - t0)
        types = len(json.loads(out.stdout)["by_gpu"])
    return times, types


def _import_s() -> list[float]:
    """Interpreter start plus ``import clusterwright.cli.main``: the CLI's fixed cost."""
    times = []
    for _ in range(CLI_RUNS):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import clusterwright.cli.main"], check=True)
        times.append(time.perf_counter() - t0)
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7, help="best of this many runs")
    args = ap.parse_args()
    R = args.repeats

    rows: list[list[str]] = []
    vector_rates = []
    for model, gpu, gpus, seq, batch in CASES:
        job = _job(model, gpu, seq, batch)
        t_enum, (lay, _) = best_of(lambda job=job, gpus=gpus: enumerate_layouts(job, gpus), R)
        n = len(lay)
        t_all, _ = timings(lambda job=job, lay=lay: estimate(job, lay), R)
        t_est, t_med = min(t_all), statistics.median(t_all)
        rate = n / t_est
        vector_rates.append(rate)
        single = _single_layout_rate(job, lay, max(3, R // 2))
        case = f"{model}, {gpus:,} {gpu}, seq {seq}, batch {batch}"
        rows += [
            [
                f"`estimate`, one call on all {n:,} layouts ({case})",
                f"{t_est * 1e3:.1f} ms best, {t_med * 1e3:.1f} ms median",
                f"**{si(rate)} configs/s** (median {si(n / t_med)})",
                ">= 1,000,000 configs/s",
            ],
            [
                f"`estimate`, one layout per call ({case})",
                f"{1e3 / single:.2f} ms/call",
                f"{si(single)} configs/s",
                ">= llm-analysis per config (peer_llm_analysis.md)",
            ],
            [
                f"`enumerate_layouts` ({case})",
                f"{t_enum * 1e3:.1f} ms",
                f"{si(n / t_enum)} layouts/s",
                "",
            ],
        ]

    model, gpu, gpus, seq, batch = PLAN_CASE
    job = _job(model, gpu, seq, batch)
    t0 = time.perf_counter()
    res = plan(job, gpus)
    t_first = time.perf_counter() - t0
    t_plans, res = timings(lambda: plan(job, gpus), R)
    t_plan = min(t_plans)
    assert res.best is not None  # a benchmark precondition, not a timing assertion
    b = res.best
    layout = b.layout
    best_desc = (
        f"tp{layout['tp']} pp{layout['pp']} dp{layout['dp']} cp{layout['cp']} "
        f"v{layout['interleave']} mb{layout['micro_batch']} {layout['recompute']} "
        f"zero{layout['zero']}, {b.step_time_s:.2f} s/step"
    )
    cli, cli_candidates = _cli_plan_s(model, gpu, gpus, seq, batch)
    imp = _import_s()
    choose, types = _cli_choose_s()
    case = f"{model} on {gpus:,} {gpu}, seq {seq}, batch {batch}"
    rows += [
        [
            f"`plan()` in process, best of {R} ({case}; {res.candidates_evaluated:,} candidates)",
            f"**{t_plan:.3f} s** best, {statistics.median(t_plans):.3f} s median, "
            f"{t_first:.3f} s first call",
            f"{si(res.candidates_evaluated / t_plan)} configs/s",
            "< 5 s",
        ],
        [
            f"`clusterwright train plan ... --json` subprocess, {CLI_RUNS} runs "
            f"({cli_candidates:,} candidates, plus the Pareto front: 3 more `plan` calls (its "
            "own count reused), and the network simulator's re-check of the best layout on the "
            "16K-GPU fabric)",
            f"**{min(cli):.2f} s** best, {statistics.median(cli):.2f} s median",
            "",
            "< 5 s",
        ],
        [
            f"`clusterwright {' '.join(CHOOSE_CMD)}` subprocess, {CHOOSE_RUNS} runs ({types} "
            "accelerator types, each sized to the deadline; the chosen one re-checked on the "
            "simulated fabric)",
            f"**{min(choose):.2f} s** best, {statistics.median(choose):.2f} s median",
            "",
            "interactive",
        ],
        [
            "of which: interpreter start + `import clusterwright.cli.main`",
            f"{min(imp):.2f} s best, {statistics.median(imp):.2f} s median",
            "",
            "",
        ],
    ]

    lines = ["# Training planner speed", "", *machine_lines(), ""]
    lines += table(["measurement", "time", "rate", "target (issue)"], rows)
    lines += [
        "",
        f"Best layout found by `plan()`: {best_desc}.",
        "",
        "Vectorized rate: one `estimate(job, layouts)` call on every layout the planner "
        f"enumerates, {R} runs timed with time.perf_counter (best and median shown), in one "
        "process: numpy's elementwise code runs on one core, so the second core is idle. "
        f"Slowest vectorized case (best): {si(min(vector_rates))} configs/s. "
        "The machine may be shared with other jobs; the median shows how much that moved "
        "the numbers.",
    ]
    write("train_speed.md", lines)


if __name__ == "__main__":
    main()
