"""Fit a roofline to NVIDIA AIConfigurator's measured MLA decode kernels, per engine, GPU
and KV-cache format (docs/serving.md, "Tried and not kept (2026-12-02)").

AIConfigurator (Apache-2.0) times the MLA generation kernel alone on each GPU under each
engine: ``aiconfigurator_core/systems/data/<system>/mla/<engine>/<version>/
generation_mla_perf.parquet`` (query heads per GPU, batch, context ``step``, KV format,
latency in ms). For DeepSeek's latent attention (576-wide keys, 512-wide values, absorbed
projections: DeepSeek-V2 report section 2.1; FlashMLA's deep dive, 2025-04-22) one decode
query head attends each cached token with 2 x (576 + 512) FLOPs and reads its 576 elements
once. This fits, on the relative error,

    latency = floor + max(FLOPs / R_c, KV bytes / R_m)

over grids around the compute-bound (128 heads) and bandwidth-bound (8 heads or fewer)
medians, and prints R_c (TFLOP/s), R_m (TB/s), the floor and the fit's MAPE, with R_c as a
share of the format's dense peak (the BF16 peak for a BF16 cache, FP8's for FP8) and R_m of
the HBM datasheet. The step model keeps its fitted ``attention_efficiency`` for a decode
query (docs/serving.md, "Tried and not kept (2026-12-02)"); the query rows a speculative
verification adds cost what this roofline adds for them, so each engine's line at the end
is its catalog entry's ``mla_decode_kernel`` (catalog/data/serving_engines.yaml): the
newest table of each GPU, each KV format whose fit is within ``--max-mape`` (25 %) and
streams at least ``--min-hbm`` (0.3) of the datasheet (SGLang 0.5.14's FP8 tables on
Hopper, a `flash_attention` kernel at 0.06-0.08 of it, are left out, as are L40S and RTX PRO
6000, whose fits miss by 27-40 %).

Needs pandas and pyarrow (the peers' venv: benchmarks/run.sh installs aiconfigurator==0.12.0
with them). Run:

    benchmarks/.venv-peers/bin/python scripts/fit_mla_decode_kernels.py [--data DIR]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from fit_moe_kernel_floor import _version_key, default_data  # noqa: E402  (sys.path[0])

from clusterwright.catalog.registry import load_catalog  # noqa: E402
from clusterwright.catalog.schema import Dtype  # noqa: E402

ENGINES = ("trtllm", "sglang", "vllm")
KEY, VALUE = 576, 512  # MLA latent key (512 + 64 RoPE) and value widths
KV_BYTES = {"bfloat16": 2.0, "fp8": 1.0}
# A measured shape: (FLOPs, KV bytes, latency s, query heads)
Shape = tuple[float, float, float, int]


def shapes(path: Path, kv: str) -> list[Shape]:
    """The table's shapes for one KV format."""
    import pandas as pd  # the peers' venv only

    d = pd.read_parquet(path)
    d = d[d.kv_cache_dtype == kv]
    out = []
    for r in d.itertuples():
        keys = float(r.batch_size) * float(r.step)
        out.append((2.0 * r.num_heads * keys * (KEY + VALUE), keys * KEY * KV_BYTES[kv],
                    float(r.latency) * 1e-3, int(r.num_heads)))
    return out


def fit_roofline(rows: Sequence[Shape]) -> tuple[float, float, float, float]:
    """(R_c FLOP/s, R_m bytes/s, floor s, MAPE): a grid search on the relative error around
    the compute-bound and bandwidth-bound medians of the large shapes."""
    big = [r for r in rows if r[0] / (2.0 * r[3] * (KEY + VALUE)) >= 64 * 4095]
    rc0 = statistics.median_high([f / t for f, _, t, h in big if h == 128])
    rm0 = statistics.median_high([b / t for _, b, t, h in big if h <= 8])
    fl0 = statistics.median_high([t for f, _, t, h in rows if f / (2.0 * h * (KEY + VALUE)) <= 16])
    grid = [0.6 + 0.05 * i for i in range(21)]
    best = (float("inf"), rc0, rm0, fl0)
    for a in grid:
        for b in grid:
            for c in (0.1 * i for i in range(16)):
                mape = sum(abs((c * fl0 + max(f / (a * rc0), nb / (b * rm0))) / t - 1.0)
                           for f, nb, t, _ in rows) / len(rows)
                if mape < best[0]:
                    best = (mape, a * rc0, b * rm0, c * fl0)
    mape, rc, rm, floor = best
    return rc, rm, floor, mape


def main(argv: Iterable[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=None, help="AIConfigurator's systems/data")
    ap.add_argument("--max-mape", type=float, default=0.25)
    ap.add_argument("--min-hbm", type=float, default=0.3)
    a = ap.parse_args(list(argv) if argv is not None else None)
    data = a.data or default_data()
    cat = load_catalog()
    gpus = {name: g for g in cat.all("gpus") for name in (g.system_names or [])}
    for eng in ENGINES:
        kept: dict[str, dict[str, tuple[float, float]]] = {}
        for system in sorted(p.name for p in data.iterdir() if p.is_dir()):
            g = gpus.get(system)
            if g is None:
                continue
            tables = sorted((data / system / "mla" / eng).glob("*/generation_mla_perf.parquet"),
                            key=lambda t: _version_key(t.parent.name))
            for table in tables[-1:]:
                for kv, lane, name in (("bfloat16", Dtype.bf16, "bf16"),
                                       ("fp8", Dtype.fp8, "fp8")):
                    rows = shapes(table, kv)
                    if len(rows) < 100:
                        continue
                    rc, rm, floor, mape = fit_roofline(rows)
                    peak = g.peak_tflops.get(lane)
                    share = f"{rc / (peak * 1e12):.2f}" if peak else "-"
                    hbm = rm / (g.memory_bandwidth_gbps * 1e9)
                    ok = mape <= a.max_mape and hbm >= a.min_hbm
                    print(f"{eng:7s} {table.parent.name:>10} {g.id:22s} {kv:8s} "
                          f"R_c {rc / 1e12:6.0f} TFLOP/s ({share} of peak)  "
                          f"R_m {rm / 1e12:5.2f} TB/s ({hbm:.2f})  "
                          f"floor {floor * 1e6:5.1f} us  MAPE {mape:5.1%}"
                          + ("" if ok else "  (left out)"))
                    if ok:
                        kept.setdefault(g.id, {})[name] = (round(rc / 1e12), round(rm / 1e12, 2))
        body = ", ".join(f'"{gid}": {{' + ", ".join(f'"{k}": [{v[0]}, {v[1]}]'
                                                    for k, v in fmts.items()) + "}"
                         for gid, fmts in kept.items())
        print(f"  {eng}: mla_decode_kernel: {{{body}}}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
