"""Wall time of ``serve plan`` (``plan.serving.plan``) for long outputs, with and without
stopping a capacity search's failing runs early, under the catalog's KV admission
(TensorRT-LLM's reservation on h100-sxm) and under vLLM-style eviction.

A capacity search brackets and bisects the offered load; every run above capacity used to
simulate its whole queue (2,000 requests), whose length grows with the output. With
``stop_early`` (the default) such a run ends once enough requests have waited past the TTFT
SLO that its p99 must miss it; the plan is the same, which this script checks (the two plans'
JSON must be equal) before it reports the times.

Case: Llama-3.1-70B, FP8 weights and KV cache, on h100-sxm (TP 1/2/4/8), 20 requests/s,
1,024-token prompts, TTFT p99 <= 2 s, TPOT p99 <= 50 ms, 2,000 requests per run, outputs of
2,048, 8,192 and 32,768 tokens; one process per core. Writes ``results/serving_plan_long.md``.

    python benchmarks/serving_plan_long.py [--lengths 2048,8192,32768] [--workers 2]
"""

from __future__ import annotations

import argparse
import time

from _bench import machine_lines, table, write

from clusterwright.catalog.registry import Catalog, load_catalog
from clusterwright.plan.serving import ServePlan, plan


def evicting(cat: Catalog) -> Catalog:
    """``cat`` with every stack's serving calibration admitting as vLLM does (evict)."""
    entries = {kind: dict(table) for kind, table in cat.entries.items()}
    entries["stacks"] = {
        k: st.model_copy(update={"serving": st.serving.model_copy(
            update={"admission": "evict"})}) if st.serving else st
        for k, st in entries["stacks"].items()}
    return Catalog(entries=entries, assumptions=cat.assumptions, origin=cat.origin)


def one(cat: Catalog, output_len: int, workers: int, stop_early: bool) -> tuple[float, ServePlan]:
    t = time.perf_counter()
    p = plan(cat, "llama-3.1-70b", 20.0, 1024, output_len, 2.0, 0.05, gpu="h100-sxm",
             precision="fp8", kv_precision="fp8", workers=workers, stop_early=stop_early)
    return time.perf_counter() - t, p


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lengths", default="2048,8192,32768")
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    base = load_catalog()
    rows = []
    for admission, cat in (("reserve (catalog)", base), ("evict", evicting(base))):
        for n in (int(x) for x in args.lengths.split(",")):
            whole, p0 = one(cat, n, args.workers, stop_early=False)
            cut, p1 = one(cat, n, args.workers, stop_early=True)
            same = p0.as_dict() == p1.as_dict()
            best = p1.best or {}
            rows.append([admission, f"{n:,}", f"{whole:.1f}", f"**{cut:.1f}**",
                         f"{whole / cut:.1f}x", "yes" if same else "**NO**",
                         str(p1.simulations),
                         f"{best.get('gpus', '-')} ({best.get('tp', '-')}-GPU replicas)"])
            print(rows[-1], flush=True)
    lines = ["# `serve plan` with long outputs: failing runs stopped early", "",
             *machine_lines(), "",
             "Llama-3.1-70B FP8 on h100-sxm, 20 requests/s, 1,024 in, TTFT p99 <= 2 s, TPOT "
             f"p99 <= 50 ms, 2,000 requests a run, {args.workers} worker processes.", "",
             *table(["KV admission", "output tokens", "whole runs (s)", "stopped early (s)",
                     "speed-up",
                     "same plan", "simulations", "plan"], rows), "",
             "`same plan`: the two plans' JSON (`ServePlan.as_dict`) are equal: a run is "
             "stopped only once its TTFT p99 must exceed the SLO, so every pass/fail decision "
             "of the search is unchanged."]
    print(write("serving_plan_long.md", lines))


if __name__ == "__main__":
    main()
