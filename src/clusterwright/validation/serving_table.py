"""Serving validation table: published TensorRT-LLM throughputs and latencies, predicted by the
step-time model (``model/inference.py``) and the request-level simulator (``sim/serving.py``).

Each row is run the way it was measured:

- ``max_throughput`` (trtllm-bench, perf-overview.md): every request submitted at once, fixed
  lengths, TensorRT-LLM's build defaults (2,048 sequences, 8,192 tokens per iteration) and its
  default capacity scheduler (GUARANTEED_NO_EVICT: a request is admitted only when the KV blocks
  of its whole prompt and output can be reserved); output tokens per second.
- ``fixed_batch`` (the A100 performance page): batches of exactly ``batch`` requests, the whole
  batch's prompts prefilled together; output tokens per second.
- ``single_prompt``: one prompt alone; its time to first token.
- ``closed_loop`` (NVIDIA NIM benchmarking pages, AIPerf): ``batch`` clients, each sending its
  next request when the last one finishes; mean TTFT, mean inter-token latency (ITL: (e2e -
  TTFT) / (output - 1) per request, averaged) and output tokens per second.

The KV cache is the serving memory plan's (``plan/serving.py``): nothing here is tuned per row.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path

import numpy as np
from pydantic import ValidationError

from clusterwright.catalog.registry import Catalog, load_catalog
from clusterwright.plan.serving_replica import Replica, replica, serving_stack
from clusterwright.sim.serving import ClusterConfig, Lengths, Workload, simulate
from clusterwright.validation.rows import (
    CsvRow,
    NotCoveredError,
    Row,
    TableResult,
    bad,
    choice,
    number,
    optional_integer,
    predict_each,
    read_csv,
    text,
    unit_scale,
)

FILE = "serving.csv"
TRTLLM_MAX_SEQS = 2048  # trtllm-build --max_batch_size default
TRTLLM_MAX_TOKENS = 8192  # trtllm-build --max_num_tokens default
REQUESTS = 600  # per max-throughput row (1/4 of that for 20k-token prompts)


# Mode -> the metrics a row of that mode may give.
MODES: dict[str, tuple[str, ...]] = {
    "max_throughput": ("output_throughput",),
    "fixed_batch": ("output_throughput",),
    "single_prompt": ("ttft",),
    "closed_loop": ("ttft", "itl", "output_throughput"),
}
PRECISIONS = ("bf16", "fp16", "fp8", "fp4", "int8", "int4")
THROUGHPUT_UNITS = {"tok/s": False, "tokens/s": False, "tok/s/GPU": True, "tokens/s/GPU": True}


def _int(r: Mapping[str, str], col: str) -> int:
    return optional_integer(r, col, low=0) or 0


def _engine_options(r: Mapping[str, str]) -> dict[str, object]:
    """``key=value;...`` from the ``engine_options`` column: facts about the measured engine
    version (e.g. a kernel it lacked), applied to the stack's serving block for that row."""
    out: dict[str, object] = {}
    for item in filter(None, (t.strip() for t in (r.get("engine_options") or "").split(";"))):
        key, eq, value = item.partition("=")
        low = value.strip().lower()
        if not eq or not key.strip():
            raise bad(r, "engine_options", f"{item!r} is not key=value")
        if low in ("true", "false"):
            out[key.strip()] = low == "true"
            continue
        try:
            out[key.strip()] = float(value)
        except ValueError:
            raise bad(r, "engine_options", f"{item!r}: {value.strip()!r} is not true, false "
                      "or a number") from None
    return out


def _per_gpu(r: Mapping[str, str], metric: str) -> tuple[bool, float]:
    """Whether the row's throughput is per GPU, and the scale of its unit (time metrics: ms,
    or another time unit)."""
    if metric != "output_throughput":
        return False, unit_scale(r, "ms", metric)
    unit = text(r, "unit")
    if unit not in THROUGHPUT_UNITS:
        raise bad(r, "unit", f"{unit!r} is not a unit of output_throughput "
                  f"({', '.join(THROUGHPUT_UNITS)})")
    return THROUGHPUT_UNITS[unit], 1.0


def predict(cat: Catalog, r: Mapping[str, str]) -> tuple[float, str]:
    """(predicted value in the row's unit, detail) for one row."""
    options = _engine_options(r)
    if not options:
        return _predict(cat, r)
    stack = serving_stack(cat, text(r, "gpu"))
    if stack is None or stack.serving is None:
        raise NotCoveredError(f"no serving stack for {r['gpu']}")
    try:
        sv = stack.serving.model_validate({**stack.serving.model_dump(), **options})
    except ValidationError as e:
        why = "; ".join(f"{'.'.join(str(x) for x in err['loc'])}: {err['msg']}"
                        for err in e.errors())
        raise bad(r, "engine_options", f"{r['engine_options']!r} is rejected ({why})") from None
    cat.entries["stacks"][stack.id] = stack.model_copy(update={"serving": sv})
    try:
        value, detail = _predict(cat, r)
    finally:
        cat.entries["stacks"][stack.id] = stack
    return value, f"{detail}; engine: {r['engine_options']}"


def _predict(cat: Catalog, r: Mapping[str, str]) -> tuple[float, str]:
    mode = choice(r, "mode", MODES)
    metric = choice(r, "metric", MODES[mode])
    per_gpu, scale = _per_gpu(r, metric)
    prec = choice(r, "precision", PRECISIONS, default="bf16")
    kv = "fp8" if prec == "fp8" else "bf16"
    i, o, bs = _int(r, "input_len"), _int(r, "output_len"), _int(r, "batch")
    if mode != "single_prompt" and (i < 1 or o < 1):
        raise bad(r, "input_len" if i < 1 else "output_len", "must be at least 1")
    if mode in ("fixed_batch", "closed_loop") and bs < 1:
        raise bad(r, "batch", f"must be at least 1 for a {mode} row")
    if mode == "single_prompt" and i < 1:
        raise bad(r, "input_len", "must be at least 1")
    seqs = bs if mode == "fixed_batch" else TRTLLM_MAX_SEQS
    rep = replica(cat, text(r, "model"), text(r, "gpu"), tp=_int(r, "tp") or 1,
                  precision="bf16" if prec == "fp16" else prec, kv_precision=kv,
                  max_num_seqs=seqs if mode == "fixed_batch" else None)
    if mode == "single_prompt":
        ttft = rep.model.step_s(i, 0, 0, i * i / 2.0)
        return ttft * 1e3 / scale, f"one {i}-token prefill iteration: {ttft * 1e3:.1f} ms"
    if mode == "closed_loop":
        value, detail = _closed_loop(rep, metric, i, o, bs)
        if per_gpu:
            return value / rep.gpus, detail + f"; per GPU of {rep.gpus}"
        return value / scale, detail
    budget = max(TRTLLM_MAX_TOKENS, bs * i) if mode == "fixed_batch" else TRTLLM_MAX_TOKENS
    engine = dataclasses.replace(rep.engine, max_num_batched_tokens=budget)
    seqs = engine.max_num_seqs
    n = REQUESTS if i * o < 1e6 else REQUESTS // 4
    if mode == "fixed_batch":
        n = 4 * bs
    w = Workload(num_requests=n, arrival="poisson", qps=1e12,
                 input_len=Lengths("fixed", i), output_len=Lengths("fixed", o))
    res = simulate(ClusterConfig(engine=engine), w, rep.model)
    detail = (f"{n} requests at once, {seqs} sequences, {budget} tokens/iteration, reserved KV "
              f"({rep.memory.kv_tokens:,} tokens); {rep.model.weights.value} weights, "
              f"{kv} KV")
    value = res.output_tokens_per_s / (rep.gpus if per_gpu else 1)
    return value, detail + (f"; per GPU of {rep.gpus}" if per_gpu and rep.gpus > 1 else "")


CLOSED_LOOP_ROUNDS = 8  # requests per client: enough to pass the start-up burst


def _closed_loop(rep: Replica, metric: str, i: int, o: int, clients: int) -> tuple[float, str]:
    """Steady state of ``clients`` closed-loop clients: the first round (all clients start at
    once, a burst a real benchmark's warm-up requests absorb) and the last round (fewer
    clients left) are left out; throughput by Little's law, clients x output / mean e2e."""
    n = max(CLOSED_LOOP_ROUNDS * clients, 40)
    w = Workload(num_requests=n, arrival="closed", concurrency=clients,
                 input_len=Lengths("fixed", i), output_len=Lengths("fixed", o))
    res = simulate(ClusterConfig(engine=rep.engine), w, rep.model)
    pr = res.per_request
    order = np.argsort(pr["arrival_s"], kind="stable")
    mid = order[clients:n - clients] if n > 3 * clients else order
    detail = (f"{clients} closed-loop clients, {n} requests (steady state: {mid.size}), "
              f"{rep.engine.max_num_seqs} sequences, KV {rep.memory.kv_tokens:,} tokens")
    if metric == "ttft":
        return float(pr["ttft_s"][mid].mean()) * 1e3, detail + ": mean TTFT"
    if metric == "itl":
        return float(pr["tpot_s"][mid].mean()) * 1e3, detail + ": mean inter-token latency"
    return clients * o / float(pr["e2e_s"][mid].mean()), detail + ": output tokens/s"


def serving_table(cat: Catalog | None = None, path: str | Path = FILE) -> TableResult:
    """Predict every row of ``validation/serving.csv`` (``path``: another file in its
    format). A row the model cannot predict (a model or GPU the catalog lacks, a GPU without
    a serving calibration, a layout that does not fit) is not covered, with the reason."""
    cat = cat or load_catalog()

    def one(r: CsvRow, set_: str) -> list[Row]:
        value, detail = predict(cat, r)
        return [Row(id=r["id"], quantity=r["metric"], measured=number(r, "value", positive=True),
                    predicted=value, unit=r["unit"], source=r["source"], set=set_,
                    detail=detail)]

    rows, not_covered = predict_each(read_csv(path), one)
    return TableResult(name="serving", file=str(path), rows=rows, tolerance=0.15,
                       not_covered=not_covered)
