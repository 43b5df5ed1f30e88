"""Fit a serving engine that runs on non-NVIDIA silicon (AWS Neuron's, ``vendors`` in its entry)
on the rows of validation/serving_accelerators.csv marked ``dev``.

The engines of catalog/data/serving_engines.yaml that run on NVIDIA GPUs are fitted on
AIConfigurator's measured table (scripts/calibrate_serving_engines.py). AWS's engines for
Trainium (Transformers NeuronX, NxD Inference) have no such table: their published batch-1
latencies (Neuron SDK performance pages and tutorials) are in serving_accelerators.csv, a
few of them marked ``dev`` for fitting and the rest held out. This varies the constants named
by ``--params`` (the same kernel and overhead constants, with the same physical bounds, as
the NVIDIA engines', plus ``kv_bandwidth_efficiency``: the share of HBM bandwidth decode
attention reads the KV cache at) and keeps those that minimise the mean absolute percentage
error over the engine's dev rows, TTFT and TPOT alike. Coordinate descent over
multiplicative grids, three rounds, deterministic. It prints every row of the engine, dev and
held out, and the values to paste into the entry. Run:

    python scripts/calibrate_serving_accelerators.py ENGINE_ID [--params NAME,NAME]
    python scripts/calibrate_serving_accelerators.py --regimes [--write]

``--regimes`` prints (``--write``: writes into each such entry's ``validated`` list) every
such engine's TTFT and TPOT MAPE per accelerator over all its rows, dev and held out, which
``serve estimate --engine`` reports as the regime an estimate was validated in.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from clusterwright.catalog.registry import Catalog, load_catalog
from clusterwright.catalog.stacks import ServingEngine
from clusterwright.errors import ClusterwrightError
from clusterwright.validation.rows import Row
from clusterwright.validation.serving_accelerators_table import serving_accelerators_table

sys.path.insert(0, str(Path(__file__).resolve().parent))
from calibrate_serving_engines import PARAMS, coordinate_descent, show_regimes

BOUNDS = {n: (lo, hi) for n, lo, hi in PARAMS} | {"kv_bandwidth_efficiency": (0.02, 0.95)}
# Transformers NeuronX's batch-1 rows: the decode step's weight stream, KV read, per-layer
# and per-step costs, and the prefill's GEMMs, attention and fixed cost.
DEFAULT = ("decode_bandwidth_efficiency", "kv_bandwidth_efficiency", "layer_overhead_s",
           "graph_step_overhead_s", "gemm_scale", "attention_efficiency", "step_overhead_s")


def engine_rows(cat: Catalog, engine: ServingEngine) -> list[Row]:
    """The table's rows predicted with ``engine`` that name it (any version it covers)."""
    table = serving_accelerators_table(cat, engines={engine.id: engine})
    out = []
    for r in table.rows:
        name, _, version = dict(r.tags)["engine"].partition("@")
        try:
            if cat.serving_engine(name, version).id == engine.id:
                out.append(r)
        except ClusterwrightError:  # an engine the catalog lacks is not this one
            continue
    return out


def mape(rows: list[Row]) -> float:
    return statistics.fmean(abs(r.error) for r in rows) if rows else float("nan")


def median_error(rows: list[Row]) -> float:
    """The median signed error, (model - measured) / measured, rounded as the catalog keeps it."""
    return round(statistics.median(r.error for r in rows), 3) if rows else 0.0


def score(cat: Catalog, engine: ServingEngine) -> float:
    return mape([r for r in engine_rows(cat, engine) if r.set == "dev"])


def fit(cat: Catalog, base: ServingEngine, names: list[str]) -> tuple[ServingEngine, float]:
    return coordinate_descent(base, [(n, *BOUNDS[n]) for n in names],
                              lambda e: score(cat, e))


def regimes(cat: Catalog) -> dict[str, list[dict[str, Any]]]:
    """Per engine fitted here (one that names its ``vendors``), its TTFT and TPOT MAPE on
    every accelerator's rows, dense and MoE models apart (aggregated serving; ``rows``: the
    TTFT rows, one a measured configuration): the ``validated`` list of its catalog entry."""
    out: dict[str, list[dict[str, Any]]] = {}
    for e in cat.all("serving_engines"):
        if not e.vendors:
            continue
        by: dict[tuple[str, str, str], list[Row]] = defaultdict(list)
        for r in engine_rows(cat, e):
            by[(r.group, dict(r.tags)["family"], r.quantity)].append(r)
        out[e.id] = [{"gpu": gpu, "mode": "agg", "family": fam,
                      "rows": len(by[(gpu, fam, "ttft_ms")]),
                      "ttft_mape": round(mape(by[(gpu, fam, "ttft_ms")]), 3),
                      "tpot_mape": round(mape(by[(gpu, fam, "tpot_ms")]), 3),
                      "ttft_median_error": median_error(by[(gpu, fam, "ttft_ms")]),
                      "tpot_median_error": median_error(by[(gpu, fam, "tpot_ms")])}
                     for gpu, fam in sorted({(g, f) for g, f, _ in by})]
    return out


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--regimes":
        show_regimes(regimes(load_catalog(env={})), "--write" in argv)
        return 0
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("engine", help="engine id in serving_engines.yaml (neuron, ...)")
    ap.add_argument("--params", default=",".join(DEFAULT),
                    help="constants to fit, comma-separated (default: %(default)s)")
    args = ap.parse_args(argv)
    cat = load_catalog(env={})
    engines = {e.id: e for e in cat.all("serving_engines")}
    if args.engine not in engines:
        print(f"engine: {args.engine!r} is not one of {', '.join(engines)}", file=sys.stderr)
        return 2
    names = [n.strip() for n in args.params.split(",") if n.strip()]
    unknown = [n for n in names if n not in BOUNDS]
    if unknown:
        print(f"--params: {', '.join(unknown)} not among {', '.join(BOUNDS)}", file=sys.stderr)
        return 2
    base = engines[args.engine]
    if not [r for r in engine_rows(cat, base) if r.set == "dev"]:
        print(f"{args.engine}: no dev rows in serving_accelerators.csv", file=sys.stderr)
        return 2
    fitted, _ = fit(cat, base, names)
    rows = engine_rows(cat, fitted)
    for r in rows:
        print(f"  {r.set:8s} {r.id:62s} {r.measured:9.2f} {r.predicted:9.2f} "
              f"{r.error:+7.1%}")
    dev = [r for r in rows if r.set == "dev"]
    held = [r for r in rows if r.set != "dev"]
    print(f"dev MAPE {mape(dev):.1%} ({len(dev)} rows), held out {mape(held):.1%} "
          f"({len(held)} rows)")
    print("# paste into the entry:")
    for n in names:
        print(f"    {n}: {float(getattr(fitted, n)):.4g}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
