"""KV-cache host tier validation table (``validation/kv_offload.csv``): vLLM's measured loads
of cached prompts from CPU memory on H100 (the vLLM blog of 2026-01-08 on its offloading
connector; values read from its figures).

Each row runs the request-level simulator on the catalog's vLLM engine (one H100, BF16, the
row's model) with a host tier large enough for every prompt and HBM prefix caching off, as
the benchmark ran it:

- ``ttft_compute``: one request of the row's prompt on an idle GPU (the blue curve: the
  prefill, chunked at the engine's token budget);
- ``ttft_load``: the same prompt sent again, its blocks loaded from the host tier (all but
  the last block's tokens, which vLLM always computes);
- ``throughput``: prompts of 512 tokens sent at once, a ``cpu_hit_rate`` share of them
  cached in the host tier beforehand (the warm-up is not timed, as in the benchmark):
  prompt tokens a second from the first arrival to the last first token.

The host link's constants come from the same blog's copy benchmark (its Figure 4, fitted by
``scripts/fit_host_dma.py``), not from these rows.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np

from clusterwright.catalog.registry import Catalog, load_catalog
from clusterwright.catalog.stacks import ServingEngine
from clusterwright.plan.serving_deployment import Role
from clusterwright.plan.serving_engine import deployment, layout, simulate_deployment
from clusterwright.sim.serving_trace import Lengths, Requests, Workload
from clusterwright.validation.rows import (
    CsvRow,
    NotCoveredError,
    Row,
    TableResult,
    choice,
    integer,
    number,
    predict_each,
    read_csv,
    text,
)

FILE = "kv_offload.csv"
QUANTITIES = {"ttft_compute": "ms", "ttft_load": "ms", "throughput": "tokens/s"}
# Host memory a GPU gives the tier: the benchmark's host has 500 GB of DRAM; every row's
# prompts fit in far less (100,000 tokens of Llama-3.1-8B: 12.2 GiB)
HOST_GIB = 200.0
# Prompts a throughput row sends (the benchmark sends 10,000; 1,000 keep the run short and
# the measured window far longer than one iteration)
THROUGHPUT_PROMPTS = 1000
LATER_S = 1e5  # seconds between the warm-up and the timed requests (the GPU is idle by then)


def _requests(rows: list[tuple[float, int]], prompt: int) -> Requests:
    """Requests of ``prompt`` tokens and one output token from (arrival s, prefix id) rows,
    each sharing its whole prompt under its prefix id (-1: none)."""
    n = len(rows)
    a = np.array([r[0] for r in rows], dtype=np.float64)
    pid = np.array([r[1] for r in rows], dtype=np.int64)
    share = np.where(pid >= 0, prompt, 0).astype(np.int64)
    return Requests(a, np.full(n, prompt, dtype=np.int64), np.ones(n, dtype=np.int64), pid,
                    share)


def predict_row(cat: Catalog, r: Mapping[str, str], engine: ServingEngine | None = None
                ) -> tuple[float, str]:
    """The row's quantity in its unit, and a detail line. ``engine``: an entry to predict
    with instead of the row's (a calibration trying constants)."""
    q = choice(r, "quantity", QUANTITIES)
    prompt = integer(r, "prompt_tokens", low=1)
    if integer(r, "output_tokens", low=1) != 1:
        raise NotCoveredError("the table predicts prefill-only requests (one output token)")
    hit = number(r, "cpu_hit_rate")
    if not 0.0 <= hit <= 1.0:
        raise NotCoveredError(f"cpu_hit_rate {hit:g}: must be within 0-1")
    arch = cat.model(text(r, "model"))
    gpu = cat.gpu(text(r, "gpu"))
    engine = engine or cat.serving_engine(text(r, "engine"), text(r, "engine_version"))
    dep = deployment(cat, arch, gpu, engine, precision="bf16", agg=Role(layout(arch, tp=1)),
                     kv_offload_gb=HOST_GIB)
    w = Workload(num_requests=1, arrival="trace", input_len=Lengths("fixed", float(prompt)),
                 output_len=Lengths("fixed", 1.0))
    if q == "ttft_compute":
        res = simulate_deployment(cat, dep, w, prompt, 1, requests=_requests([(0.0, -1)],
                                                                           prompt),
                                  gpu_prefix_cache=False)
        return 1e3 * float(res.per_request["ttft_s"][0]), f"{prompt:,} tokens computed"
    if q == "ttft_load":
        res = simulate_deployment(cat, dep, w, prompt, 1,
                                  requests=_requests([(0.0, 0), (LATER_S, 0)], prompt),
                                  gpu_prefix_cache=False)
        return (1e3 * float(res.per_request["ttft_s"][1]),
                f"{prompt:,} tokens, {res.host_hit_rate * 2:.1%} of them loaded")
    n = THROUGHPUT_PROMPTS
    hits = round(hit * n)
    # Warm-up: the prompts to be hit, computed once (prefix ids 0..hits-1); then every
    # timed prompt at once: the hits first in the queue order the benchmark's mix takes
    # (evenly spread), the rest fresh
    order = np.zeros(n, dtype=bool)
    order[np.linspace(0, n - 1, hits).round().astype(int) if hits else []] = True
    warm = [(0.0, i) for i in range(hits)]
    timed, k = [], 0
    for is_hit in order:
        if is_hit:
            timed.append((LATER_S, k))
            k += 1
        else:
            timed.append((LATER_S, -1))
    res = simulate_deployment(cat, dep, w, prompt, 1, requests=_requests(warm + timed, prompt),
                              gpu_prefix_cache=False)
    first = res.per_request["ttft_s"][hits:] + LATER_S
    tokens_per_s = n * prompt / float(first.max() - LATER_S)
    return tokens_per_s, f"{n} prompts of {prompt}, {hits} cached in the host tier"


def kv_offload_table(cat: Catalog | None = None, path: str | Path = FILE) -> TableResult:
    """Predict every row of ``validation/kv_offload.csv`` (``path``: another file in its
    format). A row the model cannot predict is not covered, with the reason."""
    cat = cat or load_catalog(env={})

    def one(r: CsvRow, set_: str) -> list[Row]:
        q = r["quantity"]
        value, detail = predict_row(cat, r)
        measured = number(r, "measured", positive=True)
        tags = (("quantity", q), ("model", f"{r['model']} {q}"))
        return [Row(id=r["id"], quantity=q, measured=measured, predicted=value,
                    unit=QUANTITIES[q], source=r["source"], set=set_, detail=detail,
                    group=f"{q} {r['model']}", tags=tags)]

    rows, not_covered = predict_each(read_csv(path), one)
    return TableResult(name="kv_offload", file=str(path), rows=rows, tolerance=0.20,
                       not_covered=not_covered)
