"""Fit each serving engine's MoE kernel floor per GPU on NVIDIA AIConfigurator's measured
MoE kernels (``moe_layer_floor_us`` in catalog/data/serving_engines.yaml).

AIConfigurator (Apache-2.0) ships a per-operator database measured on each GPU under each
engine: ``aiconfigurator_core/systems/data/<system>/moe/<engine>/<version>/moe_perf.parquet``
holds the latency of one MoE layer's routed experts (the fused MoE op: routing, permutation,
grouped GEMMs) for model shapes (hidden, intermediate, experts, top-k), formats, MoE TP/EP
and token counts. For each engine and GPU this reads its fullest table's (the version with
the most rows) balanced-routing rows at decode sizes (``--max-tokens``, 128 by default) and fits

    latency = floor + weight bytes one GPU reads / (HBM bandwidth x efficiency)

by least squares on the relative error, where the bytes are the step model's own (the
busiest GPU's touched experts, ``model/inference._busiest_touched``, x 3 matrices x hidden x
intermediate x bytes per weight / MoE TP; bytes per weight from ``model/serving_step.FORMATS``).
The floor is what the kernels take whatever their work: 18-21 us on Blackwell and 27-43 us
on Hopper, where the step model had none (its expert term was the weight stream alone and
came out 1.3-8x faster than these kernels at small batches). The efficiency is printed, not
kept: the engines' ``moe_bandwidth_efficiency`` stays an end-to-end constant fitted on the
serving rows with the floor in place. A GPU is kept when its fit is within ``--max-mape``
(40 %) over ``--min-rows`` (200) rows: L40S's kernels are not weight-bound (efficiencies
above 1, 43-49 %) and are left out.

Needs pandas and pyarrow (the peers' venv: benchmarks/run.sh installs aiconfigurator==0.12.0
with them). Run:

    benchmarks/.venv-peers/bin/python scripts/fit_moe_kernel_floor.py [--data DIR]
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from aic_tables import default_data, fullest_table  # noqa: E402

from clusterwright.catalog.registry import load_catalog  # noqa: E402
from clusterwright.model.inference import _busiest_touched  # noqa: E402
from clusterwright.model.serving_step import FORMAT_ALIASES, FORMATS  # noqa: E402

ENGINES = ("trtllm", "vllm", "sglang")
# A row: (weight bytes one GPU reads, HBM bytes/s, measured latency s)
Row = tuple[float, float, float]


def layer_bytes(hidden: int, inter: int, experts: int, top_k: int, moe_tp: int, moe_ep: int,
                tokens: int, fmt: str) -> float | None:
    """Weight bytes the busiest GPU of the MoE group reads for one layer's routed experts
    (None for a format the step model does not know)."""
    key = FORMAT_ALIASES.get(fmt, fmt)
    if key not in FORMATS:
        return None
    local = -(-experts // moe_ep)
    touched = _busiest_touched(local, moe_ep, top_k, experts, tokens)
    return touched * 3.0 * hidden * inter * FORMATS[key][1] / moe_tp


def fit_floor(rows: Sequence[Row]) -> tuple[float, float, float]:
    """(floor s, bandwidth efficiency, MAPE) of latency = floor + bytes / (hbm x eff), least
    squares on the relative error (each row's equation divided by its latency)."""
    # Normal equations of min sum ((a + b x_i) / t_i - 1)^2 with x_i = bytes / hbm
    s11 = s12 = s22 = r1 = r2 = 0.0
    for nbytes, hbm, t in rows:
        u, v = 1.0 / t, nbytes / hbm / t
        s11, s12, s22, r1, r2 = s11 + u * u, s12 + u * v, s22 + v * v, r1 + u, r2 + v
    det = s11 * s22 - s12 * s12
    if det <= 0:
        raise ValueError("degenerate rows: every row reads the same bytes")
    a = (r1 * s22 - r2 * s12) / det
    b = (s11 * r2 - s12 * r1) / det
    mape = sum(abs((a + b * n / h) / t - 1.0) for n, h, t in rows) / len(rows)
    return a, (1.0 / b if b > 0 else math.inf), mape


def read_rows(path: Path, hbm: float, max_tokens: int) -> list[Row]:
    """The balanced-routing rows of one moe_perf.parquet at ``max_tokens`` or fewer, the
    fastest kernel of each shape (as the engine picks it)."""
    import pandas as pd  # the peers' venv only

    d = pd.read_parquet(path)
    d = d[(d.distribution == "balanced") & (d.num_tokens <= max_tokens)]
    keys = ["moe_dtype", "num_tokens", "hidden_size", "inter_size", "topk", "num_experts",
            "moe_tp_size", "moe_ep_size"]
    out = []
    for r in d.groupby(keys, as_index=False).latency.min().itertuples():
        nbytes = layer_bytes(int(r.hidden_size), int(r.inter_size), int(r.num_experts),
                             int(r.topk), int(r.moe_tp_size), int(r.moe_ep_size),
                             int(r.num_tokens), str(r.moe_dtype))
        if nbytes is not None:
            out.append((nbytes, hbm, float(r.latency) * 1e-3))  # the tables are in ms
    return out


def main(argv: Iterable[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=None, help="AIConfigurator's systems/data")
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--max-mape", type=float, default=0.40)
    ap.add_argument("--min-rows", type=int, default=200)
    a = ap.parse_args(list(argv) if argv is not None else None)
    data = a.data or default_data()
    cat = load_catalog()
    gpus = {name: g for g in cat.all("gpus") for name in (g.system_names or [])}
    for eng in ENGINES:
        kept = {}
        for system in sorted(p.name for p in data.iterdir() if p.is_dir()):
            g = gpus.get(system)
            if g is None:
                continue
            # The engine's full table: the version with the most rows
            hbm = g.memory_bandwidth_gbps * 1e9
            found = fullest_table(data / system / "moe" / eng, "moe_perf",
                                  lambda path, hbm=hbm: read_rows(path, hbm, a.max_tokens))
            if found is None:
                continue
            rows, version = found
            if len(rows) < a.min_rows:
                continue
            floor, eff, mape = fit_floor(rows)
            ok = mape <= a.max_mape and floor >= 0
            print(f"{eng} {version:>12} {g.id:22s} rows {len(rows):6d} floor "
                  f"{floor * 1e6:5.1f} us  efficiency {eff:5.3f}  MAPE {mape:5.1%}"
                  + ("" if ok else "  (left out)"))
            if ok:
                kept[g.id] = round(floor * 1e6, 1)
        body = ", ".join(f'"{k}": {v}' for k, v in kept.items())
        print(f"  {eng}: moe_layer_floor_us: {{{body}}}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
