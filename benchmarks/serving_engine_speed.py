"""Speed of the engine path of serving: the closed-loop steady state per configuration, the
whole ``validate --table serving-silicon``, ``serve estimate --engine`` and ``serve plan
--engine`` as commands.

Measures, on this machine:
  (a) one configuration's steady state (``plan.serving_deployment.steady``: the deployment's
      step models, KV capacity, the solve) for every row of validation/serving_silicon.csv,
      aggregated and disaggregated apart: median, p90, max and mean per configuration;
  (b) ``serving_silicon()`` over the whole table in process (what the command prints);
  (c) ``clusterwright serve estimate --engine ... --steady-only`` and the same with the
      request-level simulation, and ``serve plan --engine``, as subprocesses (interpreter
      start and imports included), best of three.

Targets from the issue (reported, not asserted): <= 50 ms per configuration for the steady
state, the whole table in under 3 minutes on 2 cores.

    python benchmarks/serving_engine_speed.py
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

from _bench import machine_lines, table, write

from clusterwright.catalog.registry import load_catalog
from clusterwright.plan.serving_deployment import steady
from clusterwright.validation import serving_silicon as ss

REPO = Path(__file__).resolve().parents[1]
CW = [sys.executable, "-m", "clusterwright"]

COMMANDS = [
    ("serve estimate --engine sglang, DeepSeek-V3 FP4 on 8 B200 (adp 8), 256 clients, "
     "--steady-only",
     ["serve", "estimate", "--model", "deepseek-v3", "--gpu", "b200", "--engine", "sglang",
      "--tp", "1", "--adp", "8", "--precision", "fp4", "--concurrency", "256",
      "--input-len", "1024", "--output-len", "1024", "--steady-only", "--json"]),
    ("the same with the request-level simulation (1,000 requests)",
     ["serve", "estimate", "--model", "deepseek-v3", "--gpu", "b200", "--engine", "sglang",
      "--tp", "1", "--adp", "8", "--precision", "fp4", "--concurrency", "256",
      "--input-len", "1024", "--output-len", "1024", "--json"]),
    ("serve estimate --engine trtllm, DeepSeek-V3 FP4 on GB200, disaggregated (auto decode "
     "workers), 2,048 clients, --steady-only",
     ["serve", "estimate", "--model", "deepseek-v3", "--gpu", "gb200", "--engine", "trtllm",
      "--precision", "fp4", "--concurrency", "2048", "--input-len", "1024", "--output-len",
      "1024", "--prefill", "workers=1,tp=4", "--decode", "workers=auto,tp=1,adp=8",
      "--steady-only", "--json"]),
    ("serve plan --engine vllm, Llama-3.1-8B on H100, 20 req/s",
     ["serve", "plan", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--engine", "vllm",
      "--qps", "20", "--input-len", "1024", "--output-len", "256", "--ttft-p99", "2",
      "--tpot-p99", "0.05", "--json"]),
    ("serve plan --engine trtllm, Llama-3.1-70B FP8 on B200, 20 req/s",
     ["serve", "plan", "--model", "llama-3.1-70b", "--gpu", "b200", "--engine", "trtllm",
      "--precision", "fp8", "--qps", "20", "--input-len", "2048", "--output-len", "512",
      "--ttft-p99", "2", "--tpot-p99", "0.04", "--json"]),
    ("serve plan --engine sglang, DeepSeek-V3 FP4 on B200, 5 req/s, 8k in",
     ["serve", "plan", "--model", "deepseek-v3", "--gpu", "b200", "--engine", "sglang",
      "--precision", "fp4", "--qps", "5", "--input-len", "8192", "--output-len", "1024",
      "--ttft-p99", "3", "--tpot-p99", "0.05", "--json"]),
    ("serve plan --engine sglang, DeepSeek-V4-Flash FP4 on B200, 5 req/s, 8k in",
     ["serve", "plan", "--model", "deepseek-v4-flash", "--gpu", "b200", "--engine", "sglang",
      "--precision", "fp4", "--qps", "5", "--input-len", "8192", "--output-len", "1024",
      "--ttft-p99", "3", "--tpot-p99", "0.05", "--json"]),
    ("serve plan --engine trtllm, Nemotron 3 Super FP4 on B200, 20 req/s, 4k in",
     ["serve", "plan", "--model", "nemotron-3-super-120b-a12b", "--gpu", "b200", "--engine",
      "trtllm", "--precision", "fp4", "--qps", "20", "--input-len", "4000", "--output-len",
      "500", "--ttft-p99", "2", "--tpot-p99", "0.05", "--json"]),
    ("serve plan --engine trtllm, Qwen3-235B-A22B FP8 on H200, 30 req/s, 8k in",
     ["serve", "plan", "--model", "qwen3-235b-a22b", "--gpu", "h200-sxm", "--engine",
      "trtllm", "--precision", "fp8", "--qps", "30", "--input-len", "8000", "--output-len",
      "1000", "--ttft-p99", "3", "--tpot-p99", "0.05", "--json"]),
    ("serve plan --engine vllm, Llama-3.1-70B on GH200, 30 GiB of weights a GPU offloaded "
     "(and the same search without)",
     ["serve", "plan", "--model", "llama-3.1-70b", "--gpu", "gh200", "--engine", "vllm",
      "--qps", "1", "--input-len", "1024", "--output-len", "512", "--ttft-p99", "10",
      "--tpot-p99", "0.3", "--cpu-offload-gb", "30", "--json"]),
    ("serve plan --engine vllm, Llama-3.1-8B on H100, 20 req/s, 8k in, no shared prefix",
     ["serve", "plan", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--engine", "vllm",
      "--qps", "20", "--input-len", "8000", "--output-len", "200", "--ttft-p99", "2",
      "--tpot-p99", "0.05", "--json"]),
    ("the same, 7,000 tokens of each prompt one of 20 documents (--prefix-len; and the "
     "search without the reuse)",
     ["serve", "plan", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--engine", "vllm",
      "--qps", "20", "--input-len", "8000", "--output-len", "200", "--ttft-p99", "2",
      "--tpot-p99", "0.05", "--prefix-len", "7000", "--prefix-groups", "20", "--json"]),
    ("the same, one of 200 documents, 100 GiB a GPU of KV host tier (three searches)",
     ["serve", "plan", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--engine", "vllm",
      "--qps", "20", "--input-len", "8000", "--output-len", "200", "--ttft-p99", "2",
      "--tpot-p99", "0.05", "--prefix-len", "7000", "--prefix-groups", "200",
      "--kv-offload-gb", "100", "--json"]),
    ("the same, one of 200 documents, behind a cache-aware router (no host tier)",
     ["serve", "plan", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--engine", "vllm",
      "--qps", "20", "--input-len", "8000", "--output-len", "200", "--ttft-p99", "2",
      "--tpot-p99", "0.05", "--prefix-len", "7000", "--prefix-groups", "200",
      "--router", "cache_aware", "--json"]),
]


def per_config() -> list[list[str]]:
    cat = load_catalog()
    lookup = ss._lookup(cat)
    times: dict[str, list[float]] = {"agg": [], "disagg": []}
    for r in ss.read_rows(ss.data_dir() / ss.FILE):
        try:
            cfg = ss.resolve(cat, r, lookup)
        except ss.NotCoveredError:
            continue
        t = time.perf_counter()
        try:
            steady(cat, cfg.dep, cfg.clients, cfg.isl, cfg.osl)
        except ss.InputError:
            continue
        times[r["mode"]].append(time.perf_counter() - t)
    rows = []
    for mode, ts in times.items():
        ts.sort()
        rows.append([mode, f"{len(ts):,}", f"{1e3 * statistics.median(ts):.2f}",
                     f"{1e3 * ts[int(0.9 * len(ts))]:.2f}", f"{1e3 * ts[-1]:.1f}",
                     f"{1e3 * statistics.fmean(ts):.2f}"])
    return rows


def whole_table() -> tuple[float, dict[str, object]]:
    t = time.perf_counter()
    res = ss.serving_silicon()
    return time.perf_counter() - t, res.payload()


def command(args: list[str]) -> float:
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        subprocess.run([*CW, *args], check=True, capture_output=True, cwd=REPO)
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    lines = ["### Serving engine path: speed", "", *machine_lines(), ""]
    lines += ["#### One configuration's steady state (every row of serving_silicon.csv)", ""]
    lines += table(["mode", "configurations", "median (ms)", "p90 (ms)", "max (ms)",
                    "mean (ms)"], per_config())
    wall, p = whole_table()
    lines += ["", f"`validate --table serving-silicon` in process: {wall:.1f} s for "
              f"{p['total']:,} rows ({p['covered']:,} predicted), "
              f"{1e3 * wall / float(str(p['total'])):.1f} ms a row. Target: under 3 minutes.",
              "", "#### Commands (subprocess, best of 3, interpreter start included)", ""]
    rows = [[label, f"{command(args):.2f}"] for label, args in COMMANDS]
    lines += table(["command", "wall (s)"], rows)
    lines += ["", "Target: <= 50 ms per configuration for the steady state (reported, not "
              "asserted)."]
    write("serving_engine_speed.md", lines)


if __name__ == "__main__":
    main()
