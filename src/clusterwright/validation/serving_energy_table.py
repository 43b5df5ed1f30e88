"""Serving energy validation table (``validation/serving_energy.csv``): the ML.ENERGY
Leaderboard v3 measurements of vLLM 0.11.1 on H100 SXM and B200 (Zeus/NVML GPU power in the
steady state; ``scripts/import_mlenergy.py`` says what was kept and how).

Each row is predicted at its measured average batch, the task's input length (an estimate:
see the CSV's ``input_len_basis``) and its measured mean output length, with the catalog's
vLLM engine (``serving_engines.yaml``) on the row's layout:

- ``itl``: the median inter-token latency, the iteration most tokens wait for in the
  steady-state mix of decode-only and prompt-carrying iterations (``model/serving_power``);
- ``power``: mean board power per GPU, ``P_idle + (TDP - P_idle) x min(1, c_t u_tensor +
  c_m u_hbm)`` averaged over the iterations by time;
- ``energy``: GPU joules per output token, GPUs x power / (batch / mean iteration time).

Development rows (dense 16-bit models on H100) are the ones ``scripts/calibrate_serving_
power.py`` fits the two weights on; every other row is held out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from clusterwright.catalog.registry import Catalog, load_catalog
from clusterwright.model.serving_power import ServingPower, serving_power
from clusterwright.plan.energy import power_params
from clusterwright.plan.serving_deployment import Role, kv_capacity, step_model
from clusterwright.plan.serving_engine import deployment, layout
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

FILE = "serving_energy.csv"
ENGINE = ("vllm", "0.11.1")  # the benchmark's vLLM (ml-energy/benchmark docs/overview.md)
# Row precision -> (deployment precision, routed-expert format): gpt-oss ships MXFP4 experts
# and 16-bit attention.
FORMATS = {"bf16": ("bf16", None), "fp8": ("fp8", None), "mxfp4": ("bf16", "mxfp4")}
QUANTITIES = (("itl", "median_itl_ms", "ms"), ("power", "power_w_per_gpu", "W/GPU"),
              ("energy", "energy_per_token_j", "J/token"))


@dataclass(frozen=True)
class Predicted:
    point: ServingPower
    gpus: int
    detail: str


def _num(r: Mapping[str, str], col: str) -> float:
    return number(r, col, positive=True)


def predict_row(cat: Catalog, r: Mapping[str, str]) -> Predicted:
    """The steady state of one measured configuration."""
    prec, moe_quant = FORMATS[choice(r, "precision", FORMATS)]
    tp, ep = integer(r, "tp", low=1), integer(r, "ep", low=1)
    gpus = integer(r, "num_gpus", low=1)
    dp = integer(r, "dp", low=1) if (r.get("dp") or "").strip() else 1
    batch, isl, osl = _num(r, "avg_batch_size"), _num(r, "input_len"), _num(r, "avg_output_len")
    if dp > 1:
        raise NotCoveredError(f"dp {dp}: attention data parallelism is not modelled here "
                              "(the importer leaves such rows out)")
    if gpus != tp:
        raise NotCoveredError(f"num_gpus {gpus} with tp {tp}: the table predicts one replica "
                              "with attention TP over all its GPUs")
    arch = cat.model(text(r, "model"))
    gpu = cat.gpu(text(r, "gpu"))
    engine = cat.serving_engine(*ENGINE)
    par = layout(arch, tp=tp, moe_ep=ep if arch.is_moe else None)
    dep = deployment(cat, arch, gpu, engine, precision=prec, moe_quant=moe_quant,
                     agg=Role(par))
    step = step_model(cat, dep, par)
    if kv_capacity(cat, dep, par, int(isl), int(osl)) < isl + 1:
        raise NotCoveredError(f"the weights leave no room for one request's KV cache on tp {tp} "
                              f"{gpu.id} ({prec} weights)")
    pt = serving_power(step, power_params(cat, gpu.id), batch, isl, osl)
    detail = (f"batch {batch:.0f}, {isl:.0f}+{osl:.0f} tokens, tp {tp} ep {ep}, {prec}"
              f"{'/' + moe_quant if moe_quant else ''}; tensor {100 * pt.tensor_busy:.0f} %, "
              f"HBM {100 * pt.hbm_busy:.0f} %, prompt iterations {100 * pt.prefill_time_share:.0f}"
              " % of the time")
    return Predicted(pt, gpus, detail)


def serving_energy_table(cat: Catalog | None = None, path: str | Path = FILE) -> TableResult:
    """Predict every row of ``validation/serving_energy.csv`` (``path``: another file in its
    format): ITL, power per GPU, J/token. A row the model cannot predict (a model or GPU the
    catalog lacks, a layout that does not fit) is not covered, with the reason."""
    cat = cat or load_catalog(env={})

    def one(r: CsvRow, set_: str) -> list[Row]:
        measured = {q: _num(r, col) for q, col, _ in QUANTITIES}
        p = predict_row(cat, r)
        values = {"itl": p.point.median_itl_s * 1e3, "power": p.point.power_w,
                  "energy": p.point.energy_per_token_j(p.gpus)}
        out = []
        for q, _, unit in QUANTITIES:
            # Each regime tag carries the quantity, so a MAPE by GPU or model never mixes
            # latency, power and energy.
            tags = (("gpu", f"{r['gpu']} {q}"), ("model", f"{r['model']} {q}"),
                    ("precision", f"{r['precision']} {q}"), ("quantity", q))
            out.append(Row(id=f"{r['id']}:{q}", quantity=q, measured=measured[q],
                           predicted=values[q], unit=unit, source=r["source"], set=set_,
                           detail=p.detail, group=f"{q} {r['gpu']}", tags=tags))
        return out

    rows, not_covered = predict_each(read_csv(path), one)
    return TableResult(name="serving_energy", file=str(path), rows=rows, tolerance=0.25,
                       not_covered=not_covered)
