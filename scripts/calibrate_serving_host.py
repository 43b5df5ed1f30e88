"""Fit a synchronously scheduling engine's host cost per running sequence on the
development rows of ``validation/serving_energy.csv`` (ML.ENERGY Leaderboard v3: vLLM
0.11.1, dense 16-bit models on H100).

    PYTHONPATH=src python scripts/calibrate_serving_host.py [ENGINE_ID]

ENGINE_ID (default ``vllm-sync``) is the catalog engine the table's rows resolve to. Without
asynchronous scheduling the engine core prepares each iteration and processes the last one's
outputs while the GPU waits, so the host's work for the running sequences adds to every
iteration (``model/serving_step.DeploymentStep.step_s``). A grid over ``seq_overhead_s``
(0-150 us in steps of 1 us) minimises the mean absolute percentage error of the median
inter-token latency on the development rows; the other constants are the engine's own (for
``vllm-sync``, the ``vllm`` entry's fit on ``serving_silicon.csv``). Held-out rows are
printed for information and never scored in the fit. The catalog is not changed: copy the
value into the entry, then refit the power model (``scripts/calibrate_serving_power.py``),
whose busy fractions depend on the iteration times.
"""

from __future__ import annotations

import statistics
import sys

import numpy as np

from clusterwright.catalog.registry import Catalog, load_catalog
from clusterwright.validation.rows import read_csv
from clusterwright.validation.serving_energy_table import FILE, predict_row

GRID_S = np.round(np.arange(0.0, 150.5e-6, 1e-6), 9)


def with_engine_value(cat: Catalog, engine_id: str, **update: float) -> Catalog:
    """A copy of ``cat`` whose engine ``engine_id`` has ``update`` applied."""
    entries = {k: dict(v) for k, v in cat.entries.items()}
    engines = entries["serving_engines"]
    engines[engine_id] = engines[engine_id].model_copy(update=update)
    return Catalog(entries=entries, assumptions=dict(cat.assumptions), origin=dict(cat.origin))


def itl_mape(cat: Catalog, rows: list[dict[str, str]]) -> float:
    """Median-ITL MAPE (fraction) of ``rows`` predicted with ``cat``."""
    errs = [abs(predict_row(cat, r).point.median_itl_s * 1e3 / float(r["median_itl_ms"]) - 1)
            for r in rows]
    return statistics.fmean(errs)


def main(argv: list[str]) -> int:
    engine_id = argv[0] if argv else "vllm-sync"
    cat = load_catalog(env={})
    rows = read_csv(FILE)
    dev = [r for r in rows if (r["set"] or "dev") == "dev"]
    held = [r for r in rows if (r["set"] or "dev") != "dev"]
    scores = [(itl_mape(with_engine_value(cat, engine_id, seq_overhead_s=float(h)), dev), h)
              for h in GRID_S]
    best, h = min(scores)
    base = itl_mape(with_engine_value(cat, engine_id, seq_overhead_s=0.0), dev)
    fitted = with_engine_value(cat, engine_id, seq_overhead_s=float(h))
    print(f"{engine_id}: seq_overhead_s = {h * 1e6:.0f} us; dev ITL MAPE "
          f"{100 * base:.1f} % at 0 -> {100 * best:.1f} % on {len(dev)} rows; held out "
          f"{100 * itl_mape(with_engine_value(cat, engine_id, seq_overhead_s=0.0), held):.1f}"
          f" -> {100 * itl_mape(fitted, held):.1f} % on {len(held)} rows (not fitted)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
