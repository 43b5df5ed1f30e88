"""Re-run the serving calibration of one stack: a grid over its ``serving`` efficiencies,
scored by the MAPE of the development rows of ``validation/serving.csv`` on the stack's GPUs.

    python scripts/calibrate_serving.py megatron-core-h100-2024

Prints every grid point, best last. The catalog is not changed: copy the chosen point into
``stacks.yaml`` with the calibration note. Held-out rows are never scored.
"""

from __future__ import annotations

import itertools
import sys

from clusterwright.catalog.registry import load_catalog
from clusterwright.validation.rows import read_csv
from clusterwright.validation.serving_table import predict

GRID = {
    "decode_bandwidth_efficiency": (0.85, 0.90, 0.95),
    "layer_overhead_s": (0.0, 20e-6, 35e-6, 50e-6, 65e-6),
    "gemm_scale": (0.7, 0.8, 0.9),
}


def main(stack_id: str) -> None:
    cat = load_catalog()
    stack = cat.stack(stack_id)
    assert stack.serving is not None, f"{stack_id} has no serving block"
    rows = [r for r in read_csv("serving.csv")
            if r["gpu"] in stack.gpus and (r["set"] or "dev") == "dev"]
    results = []
    for values in itertools.product(*GRID.values()):
        point = dict(zip(GRID, values, strict=True))
        sv = stack.serving.model_copy(update=point)
        cat.entries["stacks"][stack_id] = stack.model_copy(update={"serving": sv})
        errs = [abs(predict(cat, r)[0] / float(r["value"]) - 1.0) for r in rows]
        mape = sum(errs) / len(errs)
        results.append((mape, max(errs), point))
        print(f"{mape:7.2%} max {max(errs):7.2%}  {point}", flush=True)
    results.sort(key=lambda x: x[0])
    print(f"best of {len(results)} on {len(rows)} rows: {results[0]}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "megatron-core-h100-2024")
