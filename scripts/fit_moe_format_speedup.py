"""Measure each serving engine's routed-expert GEMMs in the narrow weight formats against
BF16's, per GPU, on NVIDIA AIConfigurator's measured MoE kernels (``moe_format_speedup`` in
catalog/data/serving_engines.yaml).

The step model computes a MoE layer's routed experts at the weight format's datasheet peak:
FP8 experts 2x as fast as BF16 ones, FP4 experts 4x (6x on B300 and GB300), one fitted
``moe_gemm_scale`` per engine for every format. The engines' kernels do not keep those
ratios. AIConfigurator (Apache-2.0) ships each engine's fused MoE op measured on each GPU
(``aiconfigurator_core/systems/data/<system>/moe/<engine>/<version>/moe_perf.parquet``:
latency per model shape, format, MoE TP/EP and token count). For each engine, GPU and narrow
format (one whose step-model lane is FP8 or FP4, ``model/serving_step.FORMATS``) this takes
the table's balanced-routing rows at prefill sizes (``--min-tokens`` to ``--max-tokens``,
2,048-16,384 by default: compute-bound, where the lane's rate is what the step model reads),
the fastest kernel of each point (as the engine picks it), and prints the median over every
(shape, MoE TP, MoE EP, tokens) measured in both formats of

    BF16's latency / the format's latency

(SGLang 0.5.14 on B200: fp8_block 0.81, nvfp4 1.62; TensorRT-LLM 1.3.0rc20: 1.22 and
1.25; vLLM 0.24.0: 0.75 and 1.67). A GPU and format is kept when at least ``--min-points``
(200) points give it. The table used is the engine's fullest one on the GPU (the version with
the most rows), as ``fit_moe_kernel_floor.py`` takes it.

Needs pandas and pyarrow (the peers' venv: benchmarks/run.sh installs aiconfigurator==0.12.0
with them). Run:

    benchmarks/.venv-peers/bin/python scripts/fit_moe_format_speedup.py [--data DIR]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from aic_tables import default_data, fullest_table  # noqa: E402

from clusterwright.catalog.registry import load_catalog  # noqa: E402
from clusterwright.catalog.schema import Dtype  # noqa: E402
from clusterwright.model.serving_step import FORMAT_ALIASES, FORMATS  # noqa: E402

ENGINES = ("trtllm", "vllm", "sglang")
_KEYS = ["hidden_size", "inter_size", "topk", "num_experts", "moe_tp_size", "moe_ep_size",
         "num_tokens"]


def narrow(fmt: str) -> str | None:
    """The step model's name of ``fmt`` when it computes in the FP8 or FP4 lane, else None."""
    key = FORMAT_ALIASES.get(fmt, fmt)
    if key not in FORMATS or FORMATS[key][0] not in (Dtype.fp8, Dtype.fp4):
        return None
    return key


def speedups(rows: Iterable[tuple[tuple[int, ...], str, float]]) -> dict[str, list[float]]:
    """Per narrow format, BF16's latency over the format's at every point measured in both.
    ``rows``: (point, format as the table names it, latency) with the fastest kernel's
    latency of each point and format."""
    by_point: dict[tuple[int, ...], dict[str, float]] = {}
    for point, fmt, t in rows:
        key = "bf16" if FORMAT_ALIASES.get(fmt, fmt) == "bf16" else narrow(fmt)
        if key is not None and t > 0:
            by_point.setdefault(point, {})[key] = t
    out: dict[str, list[float]] = {}
    for fmts in by_point.values():
        base = fmts.get("bf16")
        if base is None:
            continue
        for key, t in fmts.items():
            if key != "bf16":
                out.setdefault(key, []).append(base / t)
    return out


def read_rows(path: Path, min_tokens: int, max_tokens: int
              ) -> list[tuple[tuple[int, ...], str, float]]:
    """The balanced-routing rows of one moe_perf.parquet between the token bounds: (point,
    format, the fastest kernel's latency)."""
    import pandas as pd  # the peers' venv only

    d = pd.read_parquet(path)
    d = d[(d.distribution == "balanced") & (d.num_tokens >= min_tokens)
          & (d.num_tokens <= max_tokens)]
    best = d.groupby([*_KEYS, "moe_dtype"], as_index=False).latency.min()
    return [(tuple(int(getattr(r, k)) for k in _KEYS), str(r.moe_dtype), float(r.latency))
            for r in best.itertuples()]


def main(argv: Iterable[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=None, help="AIConfigurator's systems/data")
    ap.add_argument("--min-tokens", type=int, default=2048)
    ap.add_argument("--max-tokens", type=int, default=16384)
    ap.add_argument("--min-points", type=int, default=200)
    a = ap.parse_args(list(argv) if argv is not None else None)
    data = a.data or default_data()
    cat = load_catalog()
    gpus = {name: g for g in cat.all("gpus") for name in (g.system_names or [])}
    for eng in ENGINES:
        kept: dict[str, dict[str, float]] = {}
        for system in sorted(p.name for p in data.iterdir() if p.is_dir()):
            g = gpus.get(system)
            found = None if g is None else fullest_table(
                data / system / "moe" / eng, "moe_perf",
                lambda path: read_rows(path, a.min_tokens, a.max_tokens))
            if g is None or found is None:
                continue
            rows, version = found
            for fmt, ratios in sorted(speedups(rows).items()):
                ok = len(ratios) >= a.min_points
                med = statistics.median(ratios)
                print(f"{eng} {version:>12} {g.id:22s} {fmt:18s} points {len(ratios):5d} "
                      f"speed-up over BF16 {med:5.2f} (quartiles "
                      f"{statistics.quantiles(ratios, n=4)[0]:.2f}-"
                      f"{statistics.quantiles(ratios, n=4)[2]:.2f})"
                      + ("" if ok else "  (left out)") if len(ratios) > 1 else "")
                if ok:
                    kept.setdefault(g.id, {})[fmt] = round(med, 2)
        body = ", ".join(f'"{k}": {{{", ".join(f"{f}: {v}" for f, v in m.items())}}}'
                         for k, m in kept.items())
        print(f"  {eng}: moe_format_speedup: {{{body}}}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
