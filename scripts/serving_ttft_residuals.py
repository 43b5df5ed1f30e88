"""Where the serving-silicon TTFT error sits: between sweeps or along them.

A sweep is one configuration measured at several client counts: the same engine release,
system, mode, model, precision, layout (TP, attention-DP, MoE EP; each role's for a
disaggregated row, and its worker counts) and prompt and output lengths. The script predicts
every covered row as ``validate --table serving-silicon`` does and prints the TTFT MAPE of:

- the model as it is;
- the model with each group's own median log-error taken out, an oracle that reads the
  measurements: per (engine, system, mode, model), then per sweep. What it leaves is error
  no constant per group or per sweep can remove: how TTFT moves with the clients;
- each sweep's measured TTFT against its own best curve that does not fall as clients are
  added (least squares on log TTFT, pool-adjacent-violators), the floor for any model whose
  TTFT grows with load;
- per family of aggregated rows at eight clients or fewer, how far measured TTFT sits above
  the model in completion intervals (output length x TPOT / clients): a family near 1 waits
  for one more request to end than the model has it wait for.

With scikit-learn importable (not a dependency; ``pip install scikit-learn``) it also fits a
gradient-boosted correction of the model's log-error from what a row records and what the
model computes (engine, GPU generation, mode, precision, lengths, clients, layout, TTFT's
parts as shares, the predicted TTFT and TPOT) and prints its MAPE out of group: trained on
four fifths of the (model, system) groups and scored on the fifth, and trained on one file
and scored on the other. A correction that does not carry across groups says the error is
not a function of those features. docs/serving.md ("What is left of TTFT's error") quotes
the output. Run:

    python scripts/serving_ttft_residuals.py [--data FILE ...]
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from clusterwright.catalog import load_catalog
from clusterwright.validation import serving_silicon as ss

_ROOT = Path(__file__).resolve().parent.parent / "validation"
_FILES = (_ROOT / "serving_silicon.csv", _ROOT / "serving_silicon_aic012.csv")
_LAYOUT = ("tp_size", "attention_dp_size", "moe_ep_size", "prefill_num_workers",
           "prefill_tp_size", "prefill_attention_dp_size", "prefill_moe_ep_size",
           "decode_num_workers", "decode_tp_size", "decode_attention_dp_size",
           "decode_moe_ep_size")


def rows_of(path: Path) -> list[dict[str, Any]]:
    """Each covered row: its columns, clients, measured and predicted TTFT (ms) and the
    prediction's TTFT parts as shares of it."""
    cat = load_catalog()
    lookup = ss._lookup(cat)
    out = []
    for r in ss.read_rows(path):
        try:
            cfg = ss.resolve(cat, r, lookup)
            st, _ = ss.predict(cat, cfg)
        except ss.NotCoveredError:
            continue
        pred = st.ttft_s * 1e3
        parts = {"prefill": st.prefill_s, "queue": st.queue_wait_s, "slot": st.slot_wait_s,
                 "handoff": st.handoff_s, "first_chunk": st.first_chunk_s}
        out.append({"row": r, "clients": cfg.clients, "meas": float(r["silicon_ttft_ms"]),
                    "pred": pred, "pred_tpot": st.tpot_s * 1e3,
                    "shares": {k: v * 1e3 / pred for k, v in parts.items()},
                    "y": math.log(float(r["silicon_ttft_ms"]) / pred)})
    return out


def sweep_key(r: dict[str, str]) -> tuple[str, ...]:
    return (r["backend"], r["backend_version"], r["system"], r["mode"], r["model_path"],
            r["precision"], r["isl"], r["osl"], *(r.get(c) or "" for c in _LAYOUT))


def group_key(r: dict[str, str]) -> tuple[str, ...]:
    return (r["backend"], r["system"], r["mode"], r["model_path"])


def mape(meas: list[float], pred: list[float]) -> float:
    return 100.0 * statistics.fmean(abs(p - m) / m for m, p in zip(meas, pred, strict=True))


def with_offsets(rows: list[dict[str, Any]], key: Any) -> float:
    """MAPE once each group's median log-error is taken out (an oracle)."""
    groups: dict[tuple[str, ...], list[float]] = defaultdict(list)
    for x in rows:
        groups[key(x["row"])].append(x["y"])
    med = {k: statistics.median(v) for k, v in groups.items()}
    return mape([x["meas"] for x in rows],
                [x["pred"] * math.exp(med[key(x["row"])]) for x in rows])


def _pava(values: list[float], weights: list[float]) -> list[float]:
    """The non-decreasing least-squares fit of ``values`` (pool-adjacent-violators)."""
    blocks: list[list[float]] = []  # [mean, weight, count]
    for v, w in zip(values, weights, strict=True):
        blocks.append([v, w, 1.0])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            m2, w2, n2 = blocks.pop()
            m1, w1, n1 = blocks.pop()
            blocks.append([(m1 * w1 + m2 * w2) / (w1 + w2), w1 + w2, n1 + n2])
    out: list[float] = []
    for m, _, n in blocks:
        out.extend([m] * int(n))
    return out


def sweeps_by_clients(rows: list[dict[str, Any]]
                      ) -> list[tuple[tuple[str, ...], dict[int, list[dict[str, Any]]]]]:
    """Each sweep of three client counts or more: its key and its rows by client count,
    the counts ascending."""
    sweeps: dict[tuple[str, ...], list[dict[str, Any]]] = defaultdict(list)
    for x in rows:
        sweeps[sweep_key(x["row"])].append(x)
    out = []
    for key, xs in sweeps.items():
        by: dict[int, list[dict[str, Any]]] = defaultdict(list)
        for x in xs:
            by[x["clients"]].append(x)
        if len(by) >= 3:
            out.append((key, {c: by[c] for c in sorted(by)}))
    return out


def monotone_floor(rows: list[dict[str, Any]]) -> tuple[float, int]:
    """MAPE of each sweep's measured TTFT against its best non-decreasing curve in the
    clients (sweeps of three client counts or more), and the rows it covers."""
    errs: list[float] = []
    for _, by in sweeps_by_clients(rows):
        fit = _pava([statistics.fmean(math.log(x["meas"]) for x in xs) for xs in by.values()],
                    [float(len(xs)) for xs in by.values()])
        curve = dict(zip(by, fit, strict=True))
        errs += [abs(math.exp(curve[c]) - x["meas"]) / x["meas"]
                 for c, xs in by.items() for x in xs]
    return 100.0 * statistics.fmean(errs), len(errs)


def _slope(points: list[tuple[float, float]]) -> float:
    """Least-squares slope of y on x."""
    mx = statistics.fmean(p[0] for p in points)
    my = statistics.fmean(p[1] for p in points)
    sxx = sum((p[0] - mx) ** 2 for p in points)
    return sum((p[0] - mx) * (p[1] - my) for p in points) / sxx


def slopes(rows: list[dict[str, Any]]) -> dict[tuple[str, str], tuple[int, float, float, float]]:
    """Per (engine, mode): sweeps of 3+ client counts, the median slope of measured and of
    predicted log TTFT against log clients, and the mean |difference| of the two per sweep."""
    per: dict[tuple[str, str], list[tuple[float, float]]] = defaultdict(list)
    for key, by in sweeps_by_clients(rows):
        lc = [math.log(c) for c in by]
        meas = [statistics.fmean(math.log(x["meas"]) for x in xs) for xs in by.values()]
        pred = [statistics.fmean(math.log(x["pred"]) for x in xs) for xs in by.values()]
        per[(key[0], key[3])].append((_slope(list(zip(lc, meas, strict=True))),
                                      _slope(list(zip(lc, pred, strict=True)))))
    return {k: (len(v), statistics.median(m for m, _ in v), statistics.median(p for _, p in v),
                statistics.fmean(abs(m - p) for m, p in v)) for k, v in sorted(per.items())}


def interval_excess(rows: list[dict[str, Any]], max_clients: int = 8, min_rows: int = 8
                    ) -> dict[tuple[str, ...], tuple[int, float]]:
    """Per (engine, release, system, model, precision) of aggregated rows at ``max_clients``
    or fewer: the rows and the median of measured minus predicted TTFT in completion
    intervals, the time between two requests' ends in a closed loop (nominal output length x
    measured TPOT / clients). About 1: the row's request waited for one more completion than
    the model has it wait for; about 0: the gap, if any, is not that wait."""
    fams: dict[tuple[str, ...], list[float]] = defaultdict(list)
    for x in rows:
        r = x["row"]
        if r["mode"] != "agg" or x["clients"] > max_clients:
            continue
        interval = int(r["osl"]) * float(r["silicon_tpot_ms"]) / x["clients"]
        fams[(r["backend"], r["backend_version"], r["system"], r["model_path"],
              r["precision"])].append((x["meas"] - x["pred"]) / interval)
    return {k: (len(v), statistics.median(v)) for k, v in sorted(fams.items())
            if len(v) >= min_rows}


def _features(x: dict[str, Any]) -> dict[str, Any]:
    r = x["row"]
    tp = r.get("tp_size") or r.get("decode_tp_size") or "1"
    return {"backend": r["backend"], "gen": "hopper" if r["system"][0] == "h" else "blackwell",
            "mode": r["mode"], "precision": r["precision"] or "none",
            "lisl": math.log(float(r["isl"])), "losl": math.log(float(r["osl"])),
            "lclients": math.log(max(x["clients"], 1)), "tp": float(tp),
            "adp": float(r.get("attention_dp_size") or 1), "ep": float(r.get("moe_ep_size") or 1),
            **{f"share_{k}": v for k, v in x["shares"].items()},
            "lpred": math.log(x["pred"]), "lpred_tpot": math.log(x["pred_tpot"])}


def learned(files: list[list[dict[str, Any]]]) -> list[str]:
    """Out-of-group MAPE of a gradient-boosted correction (scikit-learn), or why not."""
    try:
        import pandas as pd  # type: ignore[import-untyped]
        from sklearn.ensemble import HistGradientBoostingRegressor  # type: ignore[import-untyped]
        from sklearn.model_selection import GroupKFold, KFold  # type: ignore[import-untyped]
    except ImportError:
        return ["learned correction: skipped (scikit-learn and pandas are not installed)"]

    def model() -> Any:
        return HistGradientBoostingRegressor(loss="absolute_error", max_iter=300,
                                             learning_rate=0.05, max_leaf_nodes=15,
                                             min_samples_leaf=20, random_state=0,
                                             categorical_features="from_dtype")

    frames = [pd.DataFrame([_features(x) for x in rows]) for rows in files]
    allf = pd.concat(frames, ignore_index=True)
    for c in ("backend", "gen", "mode", "precision"):
        allf[c] = allf[c].astype("category")
    out, start = [], 0
    parts = []
    for rows in files:
        parts.append(allf.iloc[start:start + len(rows)])
        start += len(rows)
    for i, rows in enumerate(files):
        X, y = parts[i], [x["y"] for x in rows]
        groups = [x["row"]["model_path"] + x["row"]["system"] for x in rows]
        cv = [0.0] * len(rows)
        for tr, te in GroupKFold(n_splits=5).split(X, y, groups):
            m = model().fit(X.iloc[tr], [y[j] for j in tr])
            for j, v in zip(te, m.predict(X.iloc[te]), strict=True):
                cv[j] = float(v)
        meas = [x["meas"] for x in rows]
        fixed = [x["pred"] * math.exp(c) for x, c in zip(rows, cv, strict=True)]
        out.append(f"file {i + 1}: learned correction out of (model, system) group "
                   f"{mape(meas, fixed):.2f} %")
        seen = [0.0] * len(rows)
        for tr, te in KFold(n_splits=5, shuffle=True, random_state=0).split(X):
            m = model().fit(X.iloc[tr], [y[j] for j in tr])
            for j, v in zip(te, m.predict(X.iloc[te]), strict=True):
                seen[j] = float(v)
        fixed = [x["pred"] * math.exp(c) for x, c in zip(rows, seen, strict=True)]
        out.append(f"file {i + 1}: learned correction on rows of groups it has seen "
                   f"{mape(meas, fixed):.2f} %")
        for k, other in enumerate(files):
            if k == i:
                continue
            m = model().fit(X, y)
            got = [float(c) for c in m.predict(parts[k])]
            fixed = [x["pred"] * math.exp(c) for x, c in zip(other, got, strict=True)]
            out.append(f"file {i + 1} -> file {k + 1}: learned correction "
                       f"{mape([x['meas'] for x in other], fixed):.2f} %")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", nargs="+", type=Path, default=list(_FILES))
    a = ap.parse_args(argv)
    files = []
    for i, path in enumerate(a.data):
        rows = rows_of(path)
        files.append(rows)
        meas, pred = [x["meas"] for x in rows], [x["pred"] for x in rows]
        floor, n = monotone_floor(rows)
        print(f"file {i + 1}: {path.name}, {len(rows)} covered rows")
        by_group, by_sweep = with_offsets(rows, group_key), with_offsets(rows, sweep_key)
        print(f"  model TTFT MAPE                                  {mape(meas, pred):6.2f} %")
        print(f"  less each (engine, system, mode, model)'s median {by_group:6.2f} %")
        print(f"  less each sweep's median                         {by_sweep:6.2f} %")
        print(f"  measured against its own non-decreasing curve    {floor:6.2f} % ({n} rows in "
              "sweeps of 3+ client counts)")
        print("  slope of log TTFT against log clients per sweep (sweeps, median measured, "
              "median model, mean |difference|):")
        for (engine, mode), (k, sm, sp, d) in slopes(rows).items():
            print(f"    {engine:7s} {mode:7s} {k:4d}  {sm:5.2f}  {sp:5.2f}  {d:5.2f}")
        print("  aggregated rows at 8 clients or fewer: measured - model TTFT in completion "
              "intervals (rows, median), per engine release, system, model and precision:")
        for (engine, release, system, model, prec), (k, med) in interval_excess(rows).items():
            print(f"    {engine:7s} {release or '-':16.16s} {system:9s} {model[-28:]:28s} "
                  f"{prec or '-':5s} {k:4d}  {med:5.2f}")
    for line in learned(files):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
