"""Serving on the accelerators of issue 22 (``validation/serving_accelerators.csv``): published
measurements on TPU v6e, MI300X and Gaudi 3 with their stated configuration, predicted the way
``serve estimate --engine`` predicts them: the catalog engine entry (``serving_engines.yaml``)
the row names, the step model of ``model/serving_step.py`` and the closed-loop steady state of
``sim/serving_steady.py`` (``plan/serving_engine.deployment`` and ``steady``). Nothing is fitted
here: the engine constants are the ones validated on NVIDIA GPUs (with GEMMs at the part's own
training-stack efficiency relative to Hopper's, ``plan.serving_deployment.silicon_gemm``), so
every row is held out and the table measures how far they carry to other silicon.

Modes (each row says which, and how the source measured it):

- ``closed_loop``: ``concurrency`` clients, each sending its next request when the last one
  finishes (``vllm bench serve --max-concurrency``); mean TTFT, mean TPOT, output tokens/s. A
  source that reports the throughput of a fixed batch generating together is read as that many
  closed-loop clients (its note says so).
- ``batch_latency``: one batch of ``concurrency`` prompts generated together (vLLM's latency
  benchmark); the end-to-end time of the batch, predicted as the clients' TTFT plus
  ``output_len - 1`` decode steps at the steady state's TPOT.

``max_num_seqs`` and ``max_num_batched_tokens``, when a row gives them, are the engine flags the
source ran with (they replace the engine entry's defaults for that row only). ``buckets``
(optional), for a static-shape engine (AWS Neuron): the context-encoding and
token-generation buckets the source compiled, ``prefill 2048/4096; decode 4096/8192``;
empty: the engine's automatic ones for the row's lengths.

AWS Neuron's engines (``neuron@tnx-*``, ``neuron@nxdi-*``) are fitted here, on the rows marked
``dev`` (``scripts/calibrate_serving_accelerators.py``); every other row is held out.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from clusterwright.catalog.registry import Catalog, load_catalog
from clusterwright.catalog.stacks import ServingEngine
from clusterwright.model.serving_step import Buckets
from clusterwright.plan.serving_deployment import Role, steady
from clusterwright.plan.serving_engine import PRECISION_FORMATS, deployment, engine_of, layout
from clusterwright.validation.accelerators_table import ACCELERATORS
from clusterwright.validation.rows import (
    BadRowError,
    CsvRow,
    Row,
    TableResult,
    choice,
    integer,
    number,
    optional_integer,
    predict_each,
    read_csv,
    text,
    unit_scale,
)

FILE = "serving_accelerators.csv"
# Mode -> metric -> the unit it is predicted in (a time may be in another time unit).
MODES: dict[str, dict[str, str]] = {
    "closed_loop": {"ttft_ms": "ms", "tpot_ms": "ms", "output_throughput": "tok/s"},
    "batch_latency": {"batch_latency_s": "s"},
}


def _int(r: Mapping[str, str], col: str) -> int:
    return integer(r, col, low=1)


_BUCKETS = re.compile(r"^\s*prefill\s+([\d/ ]+);\s*decode\s+([\d/ ]+)\s*$")
# The longest bucket a row may name, tokens: far beyond any compiled context (16,384 in the
# rows), short of a float's range.
MAX_BUCKET = 10_000_000


def buckets(r: Mapping[str, str]) -> Buckets | None:
    """The row's ``buckets`` column (None when empty or absent); BadRowError naming the
    column when it is not ``prefill A/B/...; decode C/D/...`` with ascending positive sizes."""
    raw = (r.get("buckets") or "").strip()
    if not raw:
        return None
    m = _BUCKETS.match(raw)
    sizes: list[tuple[int, ...]] = []
    if m:
        for g in m.groups():
            parts = [x.strip() for x in g.split("/")]
            if not all(x.isascii() and x.isdigit() and len(x) <= 8
                       and 0 < int(x) <= MAX_BUCKET for x in parts):
                break
            sizes.append(tuple(int(x) for x in parts))
    if len(sizes) != 2 or any(list(t) != sorted(set(t)) for t in sizes):
        line = getattr(r, "line", "?")
        shown = raw if len(raw) <= 80 else raw[:77] + "..."
        raise BadRowError(f"{FILE} line {line}: buckets: {shown!r} is not 'prefill A/B/...; "
                          f"decode C/D/...' with ascending token counts of 1 to "
                          f"{MAX_BUCKET:,}", field="buckets")
    return Buckets(sizes[0], sizes[1])


def predict(cat: Catalog, r: Mapping[str, str],
            engines: Mapping[str, ServingEngine] | None = None) -> tuple[float, str]:
    """(predicted value in the row's unit, detail) for one row. ``engines``: catalog engine
    entries by id to use in place of the catalog's (a calibration's trial values)."""
    mode = choice(r, "mode", MODES)
    metric = choice(r, "metric", MODES[mode])
    scale = unit_scale(r, MODES[mode][metric], metric,
                       ("tokens/s",) if metric == "output_throughput" else ())
    precision = choice(r, "precision", PRECISION_FORMATS)
    tp = _int(r, "tp")
    clients, isl, osl = _int(r, "concurrency"), _int(r, "input_len"), _int(r, "output_len")
    flags: dict[str, int] = {}
    seqs = optional_integer(r, "max_num_seqs", low=1)
    if seqs is not None:
        flags["max_batch"] = seqs
    tokens = optional_integer(r, "max_num_batched_tokens", low=1)
    if tokens is not None:
        flags["max_num_batched_tokens"] = tokens
    arch = cat.model(text(r, "model"))
    gpu = cat.gpu(text(r, "gpu"))
    engine = engine_of(cat, text(r, "engine"))
    if engines and engine.id in engines:
        # A candidate's constants, as the row's version runs them
        engine = engines[engine.id].at_version(text(r, "engine").partition("@")[2])
    if flags:
        engine = engine.model_copy(update=flags)
    compiled = buckets(r)
    dep = deployment(cat, arch, gpu, engine, precision=precision,
                     agg=Role(layout(arch, tp=tp, pads_heads=engine.pads_heads), 1))
    if compiled is not None:
        dep = replace(dep, buckets=compiled)
    st, dep = steady(cat, dep, clients, isl, osl)
    detail = (f"{engine.id} tp{tp} {dep.dense.name} weights, {dep.kv_format} KV, "
              f"{clients} clients: TTFT {st.ttft_s * 1e3:.0f} ms, TPOT {st.tpot_s * 1e3:.1f} ms")
    if metric == "ttft_ms":
        return st.ttft_s * 1e3 / scale, detail
    if metric == "tpot_ms":
        return st.tpot_s * 1e3 / scale, detail
    if metric == "output_throughput":
        return st.requests_per_s * osl / scale, detail
    return (st.ttft_s + (osl - 1) * st.tpot_s) / scale, detail + f"; TTFT + {osl - 1} x TPOT"


def serving_accelerators_table(cat: Catalog | None = None, path: str | Path = FILE,
                               engines: Mapping[str, ServingEngine] | None = None
                               ) -> TableResult:
    """Predict every row of ``validation/serving_accelerators.csv`` (``path``: another file in
    its format; ``engines``: as ``predict``'s). A row the model cannot predict (a model,
    accelerator or engine the catalog lacks, a layout that does not fit) is not covered, with
    the reason."""
    cat = cat or load_catalog(env={})

    def one(r: CsvRow, set_: str) -> list[Row]:
        value, detail = predict(cat, r, engines)
        family = "moe" if cat.model(text(r, "model")).experts else "dense"
        return [Row(
            id=r["id"], quantity=r["metric"], measured=number(r, "value", positive=True),
            predicted=value, unit=r["unit"], source=r["source"], set=set_, detail=detail,
            group=r["gpu"], tags=(("gpu", r["gpu"]), ("engine", r["engine"]),
                                  ("metric", r["metric"]), ("family", family)),
        )]

    rows, not_covered = predict_each(read_csv(path), one, default_set="held-out")
    return TableResult(name="serving_accelerators", file=str(path), rows=rows, tolerance=0.15,
                       not_covered=not_covered)


def coverage(table: TableResult) -> dict[str, int]:
    """Rows per accelerator of ``ACCELERATORS``."""
    out = {g: 0 for g in ACCELERATORS}
    for r in table.rows:
        if r.group in out:
            out[r.group] += 1
    return out
