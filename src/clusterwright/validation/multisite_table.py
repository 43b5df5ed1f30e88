"""The multisite table: published cross-site training (``validation/multisite.csv``: INTELLECT-1's
compute utilization across the United States, the US and Europe, and three continents),
predicted by ``model/multisite`` with the inner steps' time from the training step model.

A utilization row takes the report's median outer all-reduce time as an input (so it checks
the compute period and the utilization accounting, not the WAN rate, which the report does not
give per link) and predicts ``period / (period + all-reduce)`` for DiLoCo's blocking outer
step. The bandwidth row checks the communication volumes against the report's "400x".
Nothing in ``model/multisite`` is fitted."""

from __future__ import annotations

from clusterwright.catalog.registry import load_catalog
from clusterwright.catalog.schema import ModelArch
from clusterwright.design.train import estimate_layout, job_for
from clusterwright.errors import InputError
from clusterwright.model.multisite import Method, WanLink, multisite_step
from clusterwright.model.params import param_counts
from clusterwright.model.recompute import parse_recompute
from clusterwright.validation.rows import Row, TableResult, read_csv


def _arch(r: dict[str, str]) -> ModelArch:
    return ModelArch(id=r["model"], name=r["model"], source="validation row (multisite.csv)",
                     layers=int(r["layers"]), hidden=int(r["hidden"]), heads=int(r["heads"]),
                     kv_heads=int(r["kv_heads"]), ffn_hidden=int(r["ffn_hidden"]),
                     vocab=int(r["vocab"]), max_seq_len=int(r["seq_len"]),
                     activation="swiglu", norm="rmsnorm")


def multisite_table(data: str = "multisite.csv") -> TableResult:
    cat = load_catalog(env={})
    rows = []
    for r in read_csv(data):
        arch = _arch(r)
        n = int(r["gpus_per_site"])
        job = job_for(cat, arch, r["gpu"], int(r["seq_len"]), int(r["global_batch"]), "bf16",
                      stack_id=r["stack"] or None)
        res = estimate_layout(job, {"tp": 1, "pp": 1, "dp": n, "cp": 1, "ep": 1,
                                    "zero": int(r["zero"]), "interleave": 1, "sp": 0,
                                    "recompute": parse_recompute(r["recompute"])},
                              ("micro_batch",))
        step = res.step_time_s
        params = float(param_counts(arch).total)
        m = Method(r["method"], int(r["inner_steps"]), float(r["bits"]))
        sites = int(r["sites"])
        metric = r["metric"]
        if metric == "compute_utilization":
            compute = m.inner_steps * step
            t_ar = float(r["wan_allreduce_s"])
            pred = 100.0 * compute / (compute + t_ar)
            # the WAN rate the measured all-reduce implies, per site, for the reader
            implied = 2.0 * (sites - 1) / sites * params * m.bits / 8.0 * 8.0 / t_ar / 1e9
            detail = (f"inner step {step:.1f} s x {m.inner_steps} = {compute:.0f} s, all-reduce "
                      f"{t_ar:.0f} s (input; implies {implied:.2f} Gb/s per node); "
                      f"{pred - float(r['value']):+.1f} points")
        elif metric == "wan_reduction_vs_dp":
            link = WanLink(1e9)
            sync = multisite_step(params, step, sites, link, Method("sync", 1, 32.0))
            dil = multisite_step(params, step, sites, link, m)
            pred = sync.wan_bytes_per_site * m.inner_steps / dil.wan_bytes_per_site
            detail = "fp32 gradients every step over int8 pseudo-gradients every 100 steps"
        else:
            raise InputError(f"{data} row {r['id']}: unknown metric {metric!r}")
        rows.append(Row(r["id"], metric, float(r["value"]), pred, r["unit"], r["source"],
                        r["set"], detail, group=r["method"],
                        tags=(("stack", r["stack"]), ("gpu", r["gpu"]))))
    return TableResult("multisite", data, rows, tolerance=0.06)
