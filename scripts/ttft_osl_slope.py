"""How a measured TTFT moves with the output length, per source file and client count.

In a closed loop with a fixed number of clients, a request's first token should not depend
on how many tokens it will go on to generate. A configuration measured at several output
lengths (AIConfigurator's collections run 128, 256 and 512 for each layout) shows whether
it does. For each configuration (source file, layout, prompt length, clients) with two or
more output lengths, the TTFT slope between the shortest and the longest is compared with
TPOT / clients, the mean gap between two completions. A ratio near 1 says each request
waits about one other request's completion before its prompt runs; near 0, no dependence.

Only measured columns are read; nothing is predicted. docs/serving.md ("Read from the
rows, not modelled", fifth session) quotes the output for the shipped file. Run:

    python scripts/ttft_osl_slope.py [--data validation/serving_silicon.csv] [--detail TEXT]

``--detail`` prints every configuration whose source names TEXT.
"""

from __future__ import annotations

import argparse
import csv
import re
import statistics
from collections import defaultdict
from pathlib import Path

_DEFAULT = Path(__file__).resolve().parent.parent / "validation" / "serving_silicon.csv"


def _clients(row: dict[str, str]) -> int:
    """The client count: the source's `silicon_concurrency`, else the batch columns."""
    m = re.search(r"silicon_concurrency=(\d+)", row["silicon_data_source"])
    if m:
        return int(m.group(1))
    return int(row["batch_size"] or 0) * int(row["attention_dp_size"] or 1)


def slope_ratios(path: Path, detail: str = "") -> dict[tuple[str, int], list[float]]:
    """Per (source file, clients): each aggregated configuration's TTFT slope against the
    output length over TPOT / clients (dimensionless). ``detail``: print the configurations
    whose source names it."""
    groups: dict[tuple[str, ...], list[tuple[int, float, float]]] = defaultdict(list)
    with path.open(newline="") as f:
        for row in csv.DictReader(f):
            if row["mode"] != "agg":
                continue
            m = re.search(r"source_file=([^;]+)", row["silicon_data_source"])
            source = m.group(1) if m else row["silicon_data_source"][:40]
            key = (source, row["backend_version"], row["model_path"], row["precision"],
                   row["tp_size"], row["attention_dp_size"], row["moe_ep_size"], row["isl"],
                   str(_clients(row)))
            groups[key].append((int(row["osl"]), float(row["silicon_ttft_ms"]),
                                float(row["silicon_tpot_ms"])))

    ratios: dict[tuple[str, int], list[float]] = defaultdict(list)
    for key, points in sorted(groups.items()):
        points.sort()
        (o1, t1, _), (o2, t2, _) = points[0], points[-1]
        clients = int(key[-1])
        if o2 == o1 or clients < 2:
            continue
        slope = (t2 - t1) / (o2 - o1)  # ms of TTFT per output token
        gap = statistics.mean(p[2] for p in points) / clients  # ms per output token
        ratios[(key[0], clients)].append(slope / gap)
        if detail and detail in key[0]:
            print(f"{key[2]} tp {key[4]} isl {key[7]} clients {clients}: TTFT "
                  f"{[round(p[1]) for p in points]} ms at osl {[p[0] for p in points]}; "
                  f"slope {slope:.3f} ms/token, TPOT/clients {gap:.3f}, ratio {slope / gap:.2f}")
    return ratios


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=_DEFAULT)
    ap.add_argument("--detail", default="")
    args = ap.parse_args()
    ratios = slope_ratios(args.data, args.detail)
    print("source file | clients | configurations | slope / (TPOT / clients): median [p25, p75]")
    for (source, clients), rs in sorted(ratios.items()):
        q = statistics.quantiles(rs, n=4) if len(rs) > 1 else [rs[0]] * 3
        print(f"{source} | {clients} | {len(rs)} | {statistics.median(rs):.2f} "
              f"[{q[0]:.2f}, {q[2]:.2f}]")


if __name__ == "__main__":
    main()
