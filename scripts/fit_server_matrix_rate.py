"""Fit the matrix rate a server's module power cap leaves its GPUs (servers.yaml ``matrix_rate``).

A server can cap its GPU modules below the part's own power limit. The HPE Cray EX254n
(Isambard-AI, CSCS Alps) gives each GH200 superchip 660 W for Grace, the GPU and their memory
together (Krai's MLPerf Training v6.0 system files; CSCS's Alps documentation), where an H100
SXM board has 700 W for the GPU alone. Under back-to-back matrix work the capped GPU holds a
lower clock than the GPUs its stack was fitted on. No sustained-matmul benchmark at that cap
is published, so the rate is fitted once, on the server's development rows of
``validation/accelerators.csv`` (every stack constant as it is), and checked on the server's
held-out rows, which are printed and never fitted.

    python scripts/fit_server_matrix_rate.py SERVER_ID
"""

from __future__ import annotations

import sys

from clusterwright.catalog.registry import load_catalog
from clusterwright.errors import ClusterwrightError
from clusterwright.validation.rows import read_csv
from clusterwright.validation.training_table import _train_row

GRID = tuple(round(0.50 + 0.005 * i, 3) for i in range(101))  # 0.50 .. 1.00
TIME_METRICS = ("iteration_time", "training_time", "gpu_hours_per_1t_tokens")


def _error(cat: object, row: dict[str, str]) -> float:
    pred = _train_row(cat, row)[0]  # type: ignore[arg-type]
    return pred / float(row["value"]) - 1.0


def main(server_id: str) -> int:
    cat = load_catalog()
    try:
        base = cat.server(server_id)
    except ClusterwrightError as exc:
        print(exc, file=sys.stderr)
        return 2
    rows = [r for r in read_csv("accelerators.csv") if r.get("server") == server_id]
    dev = [r for r in rows if r["set"] == "dev"]
    held = [r for r in rows if r["set"] != "dev"]
    if not dev:
        print(f"{server_id}: no development rows in accelerators.csv", file=sys.stderr)
        return 2

    def mape(subset: list[dict[str, str]], rate: float) -> float:
        cat.entries["servers"][server_id] = base.model_copy(update={"matrix_rate": rate})
        return sum(abs(_error(cat, r)) for r in subset) / len(subset)

    best = min(GRID, key=lambda x: mape(dev, x))
    cat.entries["servers"][server_id] = base.model_copy(update={"matrix_rate": best})
    for name, subset in (("dev", dev), ("held", held)):
        for r in subset:
            print(f"    {name:4s} {r['id']:58s} {100 * _error(cat, r):+6.1f}%")
    print(f"  {server_id}: matrix_rate {best} (dev MAPE {100 * mape(dev, best):.2f}% over "
          f"{len(dev)}; held-out {100 * mape(held, best) if held else 0.0:.2f}% over {len(held)};"
          f" at 1.0: dev {100 * mape(dev, 1.0):.2f}%, held-out "
          f"{100 * mape(held, 1.0) if held else 0.0:.2f}%)")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
