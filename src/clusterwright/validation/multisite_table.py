"""The multisite table: published cross-site training (``validation/multisite.csv``: INTELLECT-1's
compute utilization across the United States, the US and Europe, and three continents),
predicted by ``model/multisite`` with the inner steps' time from the training step model.

A utilization row takes the report's median outer all-reduce time as an input (so it checks
the compute period and the utilization accounting, not the WAN rate, which the report does not
give per link) and predicts ``period / (period + all-reduce)`` for DiLoCo's blocking outer
step. The bandwidth row checks the communication volumes against the report's "400x".
Nothing in ``model/multisite`` is fitted."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from clusterwright.catalog.registry import load_catalog
from clusterwright.catalog.schema import ModelArch
from clusterwright.design.train import estimate_layout, job_for
from clusterwright.model.multisite import METHODS, Method, WanLink, multisite_step
from clusterwright.model.params import param_counts
from clusterwright.model.recompute import parse_recompute
from clusterwright.validation.rows import (
    CsvRow,
    Row,
    TableResult,
    bad,
    choice,
    integer,
    number,
    predict_each,
    read_csv,
    required,
    text,
    unit_scale,
)

# Metric -> the unit it is predicted in.
METRICS = {"compute_utilization": "%", "wan_reduction_vs_dp": "x"}


def _arch(r: Mapping[str, str]) -> ModelArch:
    def n(col: str) -> int:
        return integer(r, col, low=1)

    return ModelArch(id=required(r, "model"), name=r["model"],
                     source="validation row (multisite.csv)", layers=n("layers"),
                     hidden=n("hidden"), heads=n("heads"), kv_heads=n("kv_heads"),
                     ffn_hidden=n("ffn_hidden"), vocab=n("vocab"), max_seq_len=n("seq_len"),
                     activation="swiglu", norm="rmsnorm")


def multisite_table(data: str | Path = "multisite.csv") -> TableResult:
    """Cross-site training rows (``data``: a file name in ``validation/`` or a path, in
    multisite.csv's format). A row the model cannot predict (a GPU or stack the catalog lacks,
    a model that does not fit its sites) is not covered, with the reason."""
    cat = load_catalog(env={})

    def one(r: CsvRow, set_: str) -> list[Row]:
        metric = choice(r, "metric", METRICS)
        scale = unit_scale(r, METRICS[metric], metric)
        measured = number(r, "value", positive=True)
        method = choice(r, "method", METHODS)
        inner, bits = integer(r, "inner_steps", low=1), number(r, "bits", positive=True)
        sites = integer(r, "sites", low=1)
        n = integer(r, "gpus_per_site", low=1)
        zero = integer(r, "zero", low=0)
        try:
            recompute = parse_recompute(text(r, "recompute") or "none")
        except ValueError as exc:
            raise bad(r, "recompute", str(exc)) from None
        t_ar = number(r, "wan_allreduce_s", positive=True) if (
            metric == "compute_utilization") else 0.0
        arch = _arch(r)
        job = job_for(cat, arch, required(r, "gpu"), integer(r, "seq_len", low=1),
                      integer(r, "global_batch", low=1), "bf16",
                      stack_id=text(r, "stack") or None)
        res = estimate_layout(job, {"tp": 1, "pp": 1, "dp": n, "cp": 1, "ep": 1,
                                    "zero": zero, "interleave": 1, "sp": 0,
                                    "recompute": recompute},
                              ("micro_batch",))
        step = res.step_time_s
        params = float(param_counts(arch).total)
        m = Method(method, inner, bits)
        if metric == "compute_utilization":
            compute = m.inner_steps * step
            pred = 100.0 * compute / (compute + t_ar)
            # the WAN rate the measured all-reduce implies, per site, for the reader
            implied = 2.0 * (sites - 1) / sites * params * m.bits / 8.0 * 8.0 / t_ar / 1e9
            detail = (f"inner step {step:.1f} s x {m.inner_steps} = {compute:.0f} s, all-reduce "
                      f"{t_ar:.0f} s (input; implies {implied:.2f} Gb/s per node); "
                      f"{pred - measured:+.1f} points")
        else:
            link = WanLink(1e9)
            sync = multisite_step(params, step, sites, link, Method("sync", 1, 32.0))
            dil = multisite_step(params, step, sites, link, m)
            pred = sync.wan_bytes_per_site * m.inner_steps / dil.wan_bytes_per_site
            detail = "fp32 gradients every step over int8 pseudo-gradients every 100 steps"
        return [Row(r["id"], metric, measured, pred / scale, r["unit"], r["source"], set_,
                    detail, group=r["method"], tags=(("stack", r["stack"]), ("gpu", r["gpu"])))]

    rows, not_covered = predict_each(read_csv(data), one, default_set=None)
    return TableResult("multisite", str(data), rows, tolerance=0.06, not_covered=not_covered)
