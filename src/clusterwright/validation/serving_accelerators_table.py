"""Serving on the accelerators of issue 22 (``validation/serving_accelerators.csv``): published
measurements on TPU v6e, MI300X and Gaudi 3 with their stated configuration, predicted the way
``serve estimate --engine`` predicts them: the catalog engine entry (``serving_engines.yaml``)
the row names, the step model of ``model/serving_step.py`` and the closed-loop steady state of
``sim/serving_steady.py`` (``plan/serving_engine.deployment`` and ``steady``). Nothing is fitted
here: the engine constants are the ones validated on H100, B200 and GB200, so every row is held
out and the table measures how far they carry to other silicon.

Modes (each row says which, and how the source measured it):

- ``closed_loop``: ``concurrency`` clients, each sending its next request when the last one
  finishes (``vllm bench serve --max-concurrency``); mean TTFT, mean TPOT, output tokens/s. A
  source that reports the throughput of a fixed batch generating together is read as that many
  closed-loop clients (its note says so).
- ``batch_latency``: one batch of ``concurrency`` prompts generated together (vLLM's latency
  benchmark); the end-to-end time of the batch, predicted as the clients' TTFT plus
  ``output_len - 1`` decode steps at the steady state's TPOT.

``max_num_seqs`` and ``max_num_batched_tokens``, when a row gives them, are the engine flags the
source ran with (they replace the engine entry's defaults for that row only).
"""

from __future__ import annotations

from clusterwright.catalog.registry import Catalog, load_catalog
from clusterwright.errors import ClusterwrightError, InputError
from clusterwright.plan.serving_deployment import Role, steady
from clusterwright.plan.serving_engine import deployment, engine_of, layout
from clusterwright.validation.rows import Row, TableResult, read_csv

FILE = "serving_accelerators.csv"
# Accelerators of issue 22 this table looks for (catalog ids); it reports which have rows.
ACCELERATORS = ("tpu-v5e", "tpu-v5p", "tpu-v6e", "tpu-v7", "trn2", "trn3", "mi300x", "mi325x",
                "mi355x", "gaudi3", "gh200", "gb300")


def _int(r: dict[str, str], col: str) -> int:
    try:
        return int(r[col])
    except ValueError:
        raise InputError(f"{FILE} row {r['id']}: {col} {r[col]!r} is not an integer") from None


def predict(cat: Catalog, r: dict[str, str]) -> tuple[float, str]:
    """(predicted value in the row's unit, detail) for one row."""
    arch = cat.model(r["model"])
    gpu = cat.gpu(r["gpu"])
    engine = engine_of(cat, r["engine"])
    flags: dict[str, int] = {}
    if r.get("max_num_seqs"):
        flags["max_batch"] = _int(r, "max_num_seqs")
    if r.get("max_num_batched_tokens"):
        flags["max_num_batched_tokens"] = _int(r, "max_num_batched_tokens")
    if flags:
        engine = engine.model_copy(update=flags)
    dep = deployment(cat, arch, gpu, engine, precision=r["precision"],
                     agg=Role(layout(arch, tp=_int(r, "tp")), 1))
    clients, isl, osl = _int(r, "concurrency"), _int(r, "input_len"), _int(r, "output_len")
    st, dep = steady(cat, dep, clients, isl, osl)
    detail = (f"{engine.id} tp{_int(r, 'tp')} {dep.dense.name} weights, {dep.kv_format} KV, "
              f"{clients} clients: TTFT {st.ttft_s * 1e3:.0f} ms, TPOT {st.tpot_s * 1e3:.1f} ms")
    metric = r["metric"]
    if metric == "ttft_ms":
        return st.ttft_s * 1e3, detail
    if metric == "tpot_ms":
        return st.tpot_s * 1e3, detail
    if metric == "output_throughput":
        return st.requests_per_s * osl, detail
    if metric == "batch_latency_s":
        return st.ttft_s + (osl - 1) * st.tpot_s, detail + f"; TTFT + {osl - 1} x TPOT"
    raise InputError(f"{FILE} row {r['id']}: metric {metric!r} is not ttft_ms, tpot_ms, "
                     "output_throughput or batch_latency_s")


def serving_accelerators_table(cat: Catalog | None = None) -> TableResult:
    """Predict every row of ``validation/serving_accelerators.csv``."""
    cat = cat or load_catalog(env={})
    rows = []
    for r in read_csv(FILE):
        try:
            value, detail = predict(cat, r)
        except ClusterwrightError as exc:
            raise InputError(f"{FILE} row {r['id']}: {exc}") from None
        rows.append(Row(
            id=r["id"], quantity=r["metric"], measured=float(r["value"]), predicted=value,
            unit=r["unit"], source=r["source"], set=r["set"] or "held-out", detail=detail,
            group=r["gpu"], tags=(("gpu", r["gpu"]), ("engine", r["engine"]),
                                  ("metric", r["metric"])),
        ))
    return TableResult(name="serving_accelerators", file=FILE, rows=rows, tolerance=0.15)


def coverage(table: TableResult) -> dict[str, int]:
    """Rows per accelerator of ``ACCELERATORS``."""
    out = {g: 0 for g in ACCELERATORS}
    for r in table.rows:
        if r.group in out:
            out[r.group] += 1
    return out
