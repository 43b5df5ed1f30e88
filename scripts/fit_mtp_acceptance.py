"""Fit the acceptance of DeepSeek-R1's MTP drafts on InferenceMAX's prompts.

InferenceMAX ran DeepSeek-R1 with multi-token prediction (TensorRT-LLM's MTP, 1-3 draft
tokens: its recipes' names and its aggregated MTP scripts) on random-token prompts in the
chat template, and no source gives the draft acceptance for such prompts. This predicts the
rows of ``validation/serving_silicon.csv`` (or ``--data``) whose deployment ran MTP, at each
acceptance of a grid, and prints TTFT and TPOT MAPE per grid point and per partition; the
acceptance with the lowest TPOT MAPE is the one to write into
``validation/serving_silicon.py`` (``MTP_ACCEPTANCE``). The grid's top, 0.90, is the
DeepSeek-V3 Technical Report's second-token acceptance on natural text (section 5.4.3).

    python scripts/fit_mtp_acceptance.py [--data CSV] [--grid 0.40:0.90:0.05]
"""

from __future__ import annotations

import argparse
import statistics
from collections import defaultdict

from clusterwright.catalog.registry import load_catalog
from clusterwright.errors import InputError
from clusterwright.validation import serving_silicon as ss
from clusterwright.validation.rows import NotCoveredError, data_dir


def mtp_rows(rows: list[dict[str, str]]) -> list[dict[str, str]]:
    """The rows whose resolved deployment runs speculative decoding."""
    cat = load_catalog()
    out = []
    for r in rows:
        try:
            if ss.resolve(cat, r).dep.speculative is not None:
                out.append(r)
        except (InputError, NotCoveredError):
            continue
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(data_dir() / ss.FILE))
    ap.add_argument("--grid", default="0.40:0.90:0.05", help="LOW:HIGH:STEP")
    args = ap.parse_args()
    lo, hi, step = (float(x) for x in args.grid.split(":"))
    rows = mtp_rows(ss.read_rows(args.data))
    cat = load_catalog()
    print(f"{len(rows)} rows ran MTP")
    best = (float("inf"), 0.0)
    a = lo
    while a <= hi + 1e-9:
        ss.MTP_ACCEPTANCE = a
        res = [x for x in ss.predict_all(rows, cat) if x.pred_tpot_ms is not None]
        ttft = statistics.mean(abs(x.ttft_error or 0.0) for x in res)
        tpot = statistics.mean(abs(x.tpot_error or 0.0) for x in res)
        parts: dict[tuple[str, str, str], list[float]] = defaultdict(list)
        for x in res:
            parts[(x.system, x.backend, x.mode)].append(abs(x.tpot_error or 0.0))
        per = ", ".join(f"{'/'.join(k)} {100 * statistics.mean(v):.0f}%"
                        for k, v in sorted(parts.items()))
        print(f"acceptance {a:.2f}: TTFT {100 * ttft:.1f}%, TPOT {100 * tpot:.1f}% ({per})")
        best = min(best, (tpot, round(a, 4)))
        a += step
    print(f"lowest TPOT MAPE at acceptance {best[1]:.2f} ({100 * best[0]:.1f}%)")


if __name__ == "__main__":
    main()
