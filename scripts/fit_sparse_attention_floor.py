"""Fit each serving engine's sparse-attention floor per GPU from NVIDIA AIConfigurator's
measured attention modules (``sparse_layer_floor_us`` in catalog/data/serving_engines.yaml).

AIConfigurator (Apache-2.0) ships a per-operator database measured on each GPU under each
engine. Two of its tables time one whole attention layer at decode (projections, the
attention kernel, and for DeepSeek Sparse Attention the lightning indexer with its FP8
scoring and top-k), per heads a GPU holds, batch, context and KV format:
``<system>/mla/<engine>/<version>/mla_generation_module_perf.parquet`` for DeepSeek-V3's
plain MLA, and ``<system>/sparse_attention/<engine>/<version>/dsa_generation_module_perf
.parquet`` for DeepSeek-V3.2's sparse layer. V3.2 differs from V3 only by that indexer
(DeepSeek-V3.2-Exp report, section 1). For each engine and GPU this pairs the two tables'
rows (same heads, batch, context, FP8 cache) at small batches and contexts (``--max-batch``
16, 512-``--max-context`` 2,048 tokens), where the indexer's work (its FP8 scoring of the
context, which the step model counts) is small next to its launches and tails. The median
difference is the floor: what a sparse layer takes beyond a plain one whatever its work.

SGLang times the plain module in its wide-EP table (``wideep_generation_mla_perf``, 0.5.10)
and the sparse one at 0.5.14: a difference across versions, said so in the output. Elsewhere
both tables come from the newest version that holds both. A GPU is
kept with ``--min-pairs`` (40) pairs or more; a GPU not kept takes the engine's median.

Needs pandas and pyarrow (the peers' venv: benchmarks/run.sh installs aiconfigurator==0.12.0
with them). Run:

    benchmarks/.venv-peers/bin/python scripts/fit_sparse_attention_floor.py [--data DIR]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from aic_tables import default_data, version_key  # noqa: E402

from clusterwright.catalog.registry import load_catalog  # noqa: E402

# (engine, plain module table, its context column); the newest version holding both tables
PLAIN = {"trtllm": ("mla_generation_module_perf", "step"),
         "vllm": ("mla_generation_module_perf", "step"),
         "sglang": ("wideep_generation_mla_perf", "isl")}
SPARSE = "dsa_generation_module_perf"
PLAIN_MODEL, SPARSE_MODEL = "DeepSeek-V3", "DeepSeek-V3.2"


def _newest(folder: Path, table: str) -> Path | None:
    found = sorted((p for p in folder.glob(f"*/{table}.parquet")),
                   key=lambda p: version_key(p.parent.name))
    return found[-1] if found else None


def _tables(system: Path, eng: str, table: str) -> tuple[Path | None, Path | None]:
    """The plain and sparse module tables of one engine on one system: of the newest version
    holding both, else each one's newest (SGLang times them at different versions)."""
    plain_dir, sparse_dir = system / "mla" / eng, system / "sparse_attention" / eng
    both = sorted({p.parent.name for p in plain_dir.glob(f"*/{table}.parquet")}
                  & {p.parent.name for p in sparse_dir.glob(f"*/{SPARSE}.parquet")},
                  key=version_key)
    if both:
        return (plain_dir / both[-1] / f"{table}.parquet",
                sparse_dir / both[-1] / f"{SPARSE}.parquet")
    return _newest(plain_dir, table), _newest(sparse_dir, SPARSE)


# A timed module: (heads a GPU holds, batch, tokens of context, latency in ms)
Timing = tuple[int, int, int, float]


def differences(plain: Iterable[Timing], sparse: Iterable[Timing], max_batch: int,
                max_context: int) -> list[float]:
    """Sparse minus plain module latency (seconds) for each (heads, batch, context) both
    time, the fastest kernel of each, at ``max_batch`` or fewer sequences and 512 to
    ``max_context`` tokens of context."""
    def fastest(rows: Iterable[Timing]) -> dict[tuple[int, int, int], float]:
        out: dict[tuple[int, int, int], float] = {}
        for heads, batch, ctx, ms in rows:
            key = (heads, batch, ctx)
            out[key] = min(ms, out.get(key, ms))
        return out

    p, s = fastest(plain), fastest(sparse)
    return [(ms - p[key]) * 1e-3 for key, ms in sorted(s.items())
            if key in p and key[1] <= max_batch and 512 <= key[2] <= max_context]


def read_timings(path: Path, model: str, ctx_col: str) -> list[Timing]:
    """The FP8-cache rows of one module table for ``model`` (a table without a model column
    times one model)."""
    import pandas as pd  # the peers' venv only

    d = pd.read_parquet(path)
    d = d[d.kv_cache_dtype.astype(str).str.contains("fp8")]
    if "model" in d.columns:
        d = d[d.model.astype(str).str.endswith(model)]
    return [(int(r.num_heads), int(r.batch_size), int(getattr(r, ctx_col)), float(r.latency))
            for r in d.itertuples()]


def main(argv: Iterable[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=None, help="AIConfigurator's systems/data")
    ap.add_argument("--max-batch", type=int, default=16)
    ap.add_argument("--max-context", type=int, default=2048)
    ap.add_argument("--min-pairs", type=int, default=40)
    a = ap.parse_args(list(argv) if argv is not None else None)
    data = a.data or default_data()
    cat = load_catalog()
    gpus = {name: g for g in cat.all("gpus") for name in (g.system_names or [])}
    for eng, (table, ctx_col) in PLAIN.items():
        kept: dict[str, float] = {}
        for system in sorted(p.name for p in data.iterdir() if p.is_dir()):
            g = gpus.get(system)
            plain, sparse = _tables(data / system, eng, table)
            if g is None or plain is None or sparse is None:
                continue
            diffs = differences(read_timings(plain, PLAIN_MODEL, ctx_col),
                                read_timings(sparse, SPARSE_MODEL, "step"),
                                a.max_batch, a.max_context)
            if not diffs:
                continue
            med = statistics.median(diffs)
            q = statistics.quantiles(diffs, n=4) if len(diffs) > 1 else [med, med, med]
            ok = len(diffs) >= a.min_pairs and med >= 0
            print(f"{eng} plain {plain.parent.name:>9} sparse {sparse.parent.name:>9} "
                  f"{g.id:22s} pairs {len(diffs):4d} floor {med * 1e6:6.1f} us "
                  f"(quartiles {q[0] * 1e6:.1f}-{q[2] * 1e6:.1f})"
                  + ("" if ok else "  (left out)"))
            if ok:
                kept[g.id] = round(med * 1e6, 1)
        body = ", ".join(f'"{k}": {v}' for k, v in kept.items())
        print(f"  {eng}: sparse_layer_floor_us: {{{body}}}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
