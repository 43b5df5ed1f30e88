"""Reliability validation table (``validation/reliability.csv``).

Development rows (the Llama 3 54-day snapshot on 16,384 H100): the per-component counts of
Table 5, their category sums, the totals and the job MTTI are reproduced from the catalog's
per-unit rates (``catalog/data/reliability.yaml``). Those rates were derived from these same
counts, so these rows are a **consistency check** of the derivation and of the scaling by
units (GPU-, host-, link- and job-scaled causes), not an independent prediction; they must
match to rounding. The effective-training-time row is a prediction: Meta's published
"higher than 90 %" against the ETTR of Daly's model with the Llama 3 rates, a sharded
checkpoint of Llama 3.1 405B (14 B/param) at Tectonic's 2 TB/s, a 10-minute restart (FT-HSDP)
and the Daly interval (Meta's interval is not published).

Held-out rows (never used to set anything): other clusters' MTTF or failure counts, predicted
at their scale with the failure modes of their GPU generation's fleet (catalog
``reliability.yaml``: Hopper and later from Llama 3, A100 from Alibaba's Aegis; the fleet of
each generation is chosen by a written rule that excludes the sources of these rows): Kokolis
et al. RSC A100 clusters, SKT/Upstage B200, OPT-175B on cloud A100, BLOOM-176B on Jean Zay A100.
Their errors are reported as they are.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from clusterwright.catalog.registry import Catalog, load_catalog
from clusterwright.catalog.schema import FailureMode
from clusterwright.model import reliability as rel
from clusterwright.model.params import total_params
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
    unit_scale,
)

FILE = "reliability.csv"
# The job's share of Meta's RoCE fabric in 400G-equivalent links (shared/reference/network.md
# 1.3): 16,384 GPU-ToR + 16,384 ToR-CTSW (non-blocking AI zones) + 16,384 / 7 CTSW-ATSW (1:7).
# The network failure rate in reliability.yaml was derived on this count.
LLAMA3_FABRIC_LINKS = 16384 * 15 / 7
CATEGORY = {
    "GPU": "gpu",
    "Dependency": "dependency",
    "Network": "network",
    "Unplanned maintenance": "unplanned-maintenance",
    "Host": "host",
    "Unknown": "unknown",
}


# Quantity -> the unit it is predicted in (a time may be in another time unit, a fraction in %).
QUANTITIES = {
    "interruptions": "interruptions", "interruptions_by_category": "interruptions",
    "interruptions_gpu_category": "interruptions", "interruptions_total": "interruptions",
    "interruptions_total_with_planned": "interruptions", "job_mtti_hours": "h",
    "job_mttf_hours": "h", "node_failures_per_day": "nodes/day", "ettr_lower_bound": "fraction",
}


def _num(r: Mapping[str, str], col: str) -> float:
    return number(r, col, positive=True)


def _units(r: Mapping[str, str]) -> rel.FleetUnits:
    n, per_host = integer(r, "n_gpus", low=1), integer(r, "gpus_per_host", low=1)
    if r["id"].startswith("llama3_"):
        return rel.FleetUnits(gpus=n, hosts=n / per_host, links=LLAMA3_FABRIC_LINKS)
    return rel.fleet_units(n, per_host)


def _ettr_row(cat: Catalog, r: Mapping[str, str], modes: list[FailureMode]
              ) -> tuple[float, str]:
    units = _units(r)
    n = int(units.gpus)
    mtbf_s = rel.job_mtbf_hours(modes, units) * rel.HOUR
    arch = cat.model(text(r, "model"))
    size = rel.checkpoint_bytes(total_params(arch), "bf16", "adam")
    cap = _num(r, "storage_gbps")
    write_s = rel.transfer_s(size, n, cat.assumption("storage_write_gbps_per_gpu"), cap)
    read_s = rel.transfer_s(size, n, cat.assumption("storage_read_gbps_per_gpu"), cap)
    # The restart at this scale (its NCCL-init part grows with log2 of the ranks), plus restore.
    init = cat.assumption("reliability_nccl_init_s_at_4k_gpus")
    restart_s = rel.restart_s(n, _num(r, "restart_s"), init, read_s)
    tau = rel.daly_interval_s(write_s, mtbf_s)
    planned = sum(rel.rates_per_hour([m for m in modes if m.planned], units, True).values())
    value = rel.ettr(tau, write_s, mtbf_s, restart_s) * rel.planned_ettr_factor(planned, restart_s)
    # Sensitivity: every GPU writing the largest checkpoint Meta reports (4 GB per GPU).
    big_write = rel.transfer_s(4e9 * n, n, cat.assumption("storage_write_gbps_per_gpu"), cap)
    big_read = rel.transfer_s(4e9 * n, n, cat.assumption("storage_read_gbps_per_gpu"), cap)
    big_restart = rel.restart_s(n, _num(r, "restart_s"), init, big_read)
    big_tau = rel.daly_interval_s(big_write, mtbf_s)
    big = rel.ettr(big_tau, big_write, mtbf_s, big_restart) * rel.planned_ettr_factor(
        planned, big_restart
    )
    detail = (
        f"M {mtbf_s / 3600:.2f} h; checkpoint {size / 1e12:.2f} TB ({size / n / 1e6:.0f} MB/GPU) "
        f"written in {write_s:.1f} s; restart {restart_s:.0f} s; Daly interval {tau:.0f} s; "
        f"planned stops x{rel.planned_ettr_factor(planned, restart_s):.4f}. "
        f"With 4 GB per GPU ({big_write:.0f} s per write): {big:.3f}"
    )
    return value, detail


def _predict(
    cat: Catalog, r: Mapping[str, str], all_modes: list[FailureMode]
) -> tuple[float, str]:
    q = choice(r, "quantity", QUANTITIES)
    gpu = cat.gpu(text(r, "gpu")).id
    modes = rel.modes_for_gpu(all_modes, gpu)
    units = _units(r)
    fleet = "; ".join(rel.fleets(modes))
    basis = (f" ({fleet} rates)" if any(gpu in m.gpus for m in all_modes)
             else f" (H100-derived rates: {fleet})")
    if q in ("interruptions", "interruptions_by_category", "interruptions_total",
             "interruptions_total_with_planned", "interruptions_gpu_category"):
        hours = _num(r, "window_days") * 24
        exp = rel.expected_interruptions(
            modes, units, hours, include_planned=q == "interruptions_total_with_planned"
        )
        if q == "interruptions":
            mode = text(r, "failure_mode")
            if mode not in exp:
                raise NotCoveredError(f"no failure mode {mode!r} in the catalog's {fleet} "
                                      "rates")
            return exp[mode], f"rate x units x {hours:.0f} h"
        if q in ("interruptions_by_category", "interruptions_gpu_category"):
            category = text(r, "category")
            if category not in CATEGORY:
                raise NotCoveredError(f"category {category!r} is none of the catalog's "
                                      f"({', '.join(CATEGORY)})")
            cats = rel.by_category(modes, exp)
            value = cats.get(CATEGORY[category], 0.0)
            return value, f"{CATEGORY[category]} modes x {hours:.0f} h{basis}"
        return sum(exp.values()), f"all modes x {hours:.0f} h"
    if q == "job_mtti_hours":
        return rel.job_mtbf_hours(modes, units, include_planned=True), "planned included"
    if q == "job_mttf_hours":
        detail = (f"{int(units.gpus)} GPUs, {int(units.hosts)} hosts, {int(units.links)} links "
                  f"(fat tree r64){basis}")
        return rel.job_mtbf_hours(modes, units), detail
    if q == "node_failures_per_day":
        repair = [m for m in modes if m.needs_repair]
        per_day = sum(rel.expected_interruptions(repair, units, 24.0).values())
        return per_day, f"needs_repair modes on {int(units.hosts)} hosts{basis}"
    return _ettr_row(cat, r, modes)  # ettr_lower_bound


def reliability_table(cat: Catalog | None = None, path: str | Path = FILE) -> TableResult:
    """Predict every row of ``validation/reliability.csv`` from the catalog's failure modes
    (``path``: another file in its format). A row the model cannot predict (a GPU or model
    the catalog lacks, a failure mode or category it has no rate for) is not covered, with
    the reason."""
    cat = cat or load_catalog(env={})
    all_modes: list[FailureMode] = cat.all("failure_modes")

    def one(r: CsvRow, set_: str) -> list[Row]:
        q = choice(r, "quantity", QUANTITIES)
        scale = unit_scale(r, QUANTITIES[q], q)
        measured = _num(r, "value")
        value, detail = _predict(cat, r, all_modes)
        return [Row(id=r["id"], quantity=q, measured=measured, predicted=value / scale,
                    unit=r["unit"], source=r["source"], set=set_, detail=detail)]

    rows, not_covered = predict_each(read_csv(path), one)
    return TableResult(name="reliability", file=str(path), rows=rows, tolerance=0.05,
                       not_covered=not_covered)
