"""Fit a serving engine's few constants on the measured rows of validation/serving_silicon.csv.

For one engine entry of catalog/data/serving_engines.yaml this varies the constants that
belong to the engine's kernels and scheduler, never to a row, a model or a GPU, and keeps
those that minimise the mean of the TTFT and TPOT mean absolute percentage errors over the
engine's rows (each row's error capped at 200 %, so that rows no engine constant explains,
such as unrecorded speculative decoding, do not bend the rest):

- gemm_scale, moe_gemm_scale: the GEMM efficiency curve (cuBLAS-shaped, as the training
  stacks') scaled as a whole, for dense and grouped expert GEMMs;
- attention_efficiency: prefill attention kernels, a fraction of the 16-bit peak;
- decode_bandwidth_efficiency: the share of HBM bandwidth decode kernels stream weights and
  KV at;
- step_overhead_s, graph_step_overhead_s, layer_overhead_s: the host's fixed costs of an
  eager iteration, of a decode iteration replayed from a CUDA graph, and per layer;
- collective_launch_us: a collective's fixed cost inside a graph;
- frontend_s, arrival_burst: time to first token outside the iterations, and the share of
  the other running clients' prompts a new prompt waits behind.

Rows fitted: the engine's rows whose deployment the file records in full (disaggregated rows
without worker counts are predicted for the deployment a planner would size, so they are
validated but not fitted), every GPU and model together: all of them (the default), or a
deterministic sample of at most ``--sample`` rows spread over (system, mode, model, format),
which fits in a fifth of the time but moves the constants with the sample (TensorRT-LLM's
300-row fit scores 0.2365 on all 1,612 of its rows, the fit on all of them 0.2350).
``--holdout COLUMN=VALUE`` leaves matching rows out of the fit and reports them apart (e.g.
``system=gb200``: does the engine's calibration carry to a GPU it was not fitted on?). The
search is coordinate descent over multiplicative grids, three rounds, deterministic (three
more rounds of finer steps move TensorRT-LLM's score 0.2345 -> 0.2337 and neither file's
MAPE by more than 0.1 point: the optimum is flat). It prints the values to paste into
the engine's entry. Run:

    python scripts/calibrate_serving_engines.py ENGINE_ID [--sample N] [--holdout COL=VAL]
        [--params NAME,NAME]
    python scripts/calibrate_serving_engines.py --regimes [--write]

``--regimes`` predicts the whole table and the held-out one (serving_silicon_aic012.csv)
and prints (``--write``: writes into each entry's ``validated`` list) every engine's TTFT
and TPOT MAPE per GPU and serving mode of each, which ``serve estimate --engine`` reports
as the regime an estimate was validated in (the fitted file's, else the held-out one's).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from clusterwright.catalog.registry import Catalog, load_catalog
from clusterwright.catalog.stacks import ServingEngine
from clusterwright.errors import ClusterwrightError
from clusterwright.validation import serving_silicon as ss

# (name, lower bound, upper bound). The bounds are physical: GEMMs at most ~85 % of the
# format's dense peak (the curve's 0.76 top x 1.1; cuBLAS reaches 70-80 %), attention kernels
# at most 80 % (FlashAttention-3 on H100: ~75 %), HBM streams at most 95 % of the datasheet
# (STREAM-like kernels reach 90-95 %), a cluster at most half the other clients, the first
# token at most 5 iterations late, attention-DP prompts held at most 30 iterations, a KV
# transfer at 5-95 % of the link, the disaggregated hand-off at most half a second.
PARAMS: tuple[tuple[str, float, float], ...] = (
    ("gemm_scale", 0.2, 1.1),
    ("moe_gemm_scale", 0.1, 1.1),
    ("attention_efficiency", 0.05, 0.8),
    ("decode_bandwidth_efficiency", 0.3, 0.95),
    ("step_overhead_s", 0.0, 0.05),
    ("graph_step_overhead_s", 0.0, 0.02),
    ("layer_overhead_s", 0.0, 0.0005),
    ("collective_launch_us", 0.0, 60.0),
    ("a2a_peer_us", 0.0, 8.0),
    ("moe_bandwidth_efficiency", 0.2, 0.95),
    ("frontend_s", 0.0, 0.5),
    ("arrival_burst", 0.0, 0.5),
    ("first_token_iterations", 0.0, 5.0),
    ("adp_context_wait_iterations", 0.0, 30.0),
    ("kv_transfer_efficiency", 0.05, 0.95),
    ("disagg_overhead_s", 0.0, 0.5),
)
FACTORS = ((0.5, 0.7, 0.85, 1.18, 1.4, 2.0), (0.8, 0.9, 1.1, 1.25), (0.93, 0.97, 1.03, 1.07))


def rows_of(cat: Catalog, engine_id: str) -> list[tuple[dict[str, str], ss.RowConfig]]:
    """The engine's rows that resolve, with their configurations."""
    lookup = ss._lookup(cat)
    out = []
    for r in ss.read_rows(ss.data_dir() / ss.FILE):
        try:
            cfg = ss.resolve(cat, r, lookup)
        except ss.NotCoveredError:
            continue
        if cfg.dep.engine.id == engine_id:
            out.append((r, cfg))
    return out


def sample(rows: list[tuple[dict[str, str], ss.RowConfig]], n: int
           ) -> list[tuple[dict[str, str], ss.RowConfig]]:
    """At most ``n`` rows, the same share of every (system, mode, model, format) group."""
    groups: dict[tuple[str, ...], list[tuple[dict[str, str], ss.RowConfig]]] = defaultdict(list)
    for r, c in rows:
        groups[(r["system"], r["mode"], c.dep.arch.id, c.dep.dense.name)].append((r, c))
    share = min(1.0, n / max(len(rows), 1))
    out = []
    for key in sorted(groups):
        g = sorted(groups[key], key=lambda rc: rc[0]["id"])
        k = max(1, round(len(g) * share))
        step = len(g) / k
        out.extend(g[int(i * step)] for i in range(k))
    return out


def errors(cat: Catalog, engine: ServingEngine, rows: list[tuple[dict[str, str], ss.RowConfig]]
           ) -> tuple[list[float], list[float]]:
    """Signed TTFT and TPOT errors, (predicted - measured) / measured, of the rows that
    predict."""
    et, ep = [], []
    for r, cfg in rows:
        try:
            # The candidate with the options the row's benchmark script set (batch waiting,
            # token budget), as the row was read
            eng, _ = ss.script_settings(r, engine.at_version(
                (r.get("backend_version") or "").strip()))
            st, _ = ss.predict(cat, dataclasses.replace(
                cfg, dep=dataclasses.replace(cfg.dep, engine=eng)))
        except ss.NotCoveredError:
            continue
        et.append(st.ttft_s * 1e3 / float(r["silicon_ttft_ms"]) - 1.0)
        ep.append(st.tpot_s * 1e3 / float(r["silicon_tpot_ms"]) - 1.0)
    return et, ep


def mape(e: list[float]) -> float:
    return statistics.fmean(abs(x) for x in e) if e else math.inf


CAP = 2.0  # a row counts at most 200 % off in the fit: rows no engine constant explains
# (unrecorded speculative decoding or prefix reuse, collection artifacts) should not bend
# the rest, while every row still pulls


def capped(e: list[float]) -> float:
    return statistics.fmean(min(abs(x), CAP) for x in e) if e else math.inf


def score(cat: Catalog, engine: ServingEngine, rows: list[Any],
          prefill_rows: list[dict[str, str]] | None = None) -> float:
    """The mean of the TTFT and TPOT capped MAPEs; with ``prefill_rows``, the mean of those
    two and of the isolated prefills' MAPE (``prefill_errors``)."""
    et, ep = errors(cat, engine, rows)
    if not prefill_rows:
        return 0.5 * (capped(et) + capped(ep))
    return (capped(et) + capped(ep) + capped(prefill_errors(cat, engine, prefill_rows))) / 3.0


def prefill_rows_of(engine_id: str) -> list[dict[str, str]]:
    """The engine's isolated prefills of ``validation/kv_offload.csv``: one request of
    10,000-100,000 tokens on an idle GPU (``ttft_compute``) and a batch of 512-token prompts
    with nothing cached (``throughput`` at a 0 % host hit rate), the only measurements that
    separate the prefill's GEMMs from its attention over a wide range of lengths; the
    serving-silicon rows' TTFT also holds waits behind other requests' prefills."""
    from clusterwright.validation.kv_offload_table import FILE
    from clusterwright.validation.rows import read_csv

    return [r for r in read_csv(FILE) if r["engine"] == engine_id and (
        r["quantity"] == "ttft_compute"
        or (r["quantity"] == "throughput" and float(r["cpu_hit_rate"]) == 0.0))]


def prefill_errors(cat: Catalog, engine: ServingEngine, rows: list[dict[str, str]]
                   ) -> list[float]:
    from clusterwright.validation.kv_offload_table import predict_row

    out = []
    for r in rows:
        eng = engine.at_version(r["engine_version"])
        value, _ = predict_row(cat, r, eng)
        out.append(value / float(r["measured"]) - 1.0)
    return out


def coordinate_descent(base: ServingEngine, params: list[tuple[str, float, float]],
                       score_of: Callable[[ServingEngine], float]) -> tuple[ServingEngine, float]:
    """Minimise ``score_of`` over the constants ``params`` (name, lower, upper bound) of
    ``base``, starting inside the bounds: multiplicative grids (FACTORS), three rounds."""
    cur = base.model_copy(update={n: min(hi, max(lo, float(getattr(base, n) or 0.0)))
                                  for n, lo, hi in params})
    best = score_of(cur)
    print(f"start: {best:.4f}", flush=True)
    for rnd, factors in enumerate(FACTORS):
        for name, lo, hi in params:
            x0 = float(getattr(cur, name))
            cands = {min(hi, max(lo, x0 * f)) for f in factors}
            if x0 == 0.0:
                cands |= {hi * 0.01, hi * 0.03, hi * 0.1}
            for x in sorted(cands - {x0}):
                trial = cur.model_copy(update={name: x})
                s = score_of(trial)
                if s < best - 1e-6:
                    best, cur = s, trial
            print(f"round {rnd + 1} {name} = {getattr(cur, name):.6g}: {best:.4f}", flush=True)
    return cur, best


def fit(cat: Catalog, base: ServingEngine, rows: list[Any],
        names: set[str] | None = None,
        prefill_rows: list[dict[str, str]] | None = None) -> tuple[ServingEngine, float]:
    """Coordinate descent over PARAMS (only ``names`` if given; the others keep the entry's
    values)."""
    params = [p for p in PARAMS if names is None or p[0] in names]
    return coordinate_descent(base, params, lambda e: score(cat, e, rows, prefill_rows))


def report(cat: Catalog, engine: ServingEngine, rows: list[Any], label: str) -> None:
    groups: dict[tuple[str, str], list[Any]] = defaultdict(list)
    for r, c in rows:
        groups[(r["system"], r["mode"])].append((r, c))
    et, ep = errors(cat, engine, rows)
    print(f"{label}: {len(et)} rows, TTFT MAPE {mape(et):.1%}, TPOT MAPE {mape(ep):.1%}")
    for key in sorted(groups):
        a, b = errors(cat, engine, groups[key])
        print(f"  {key[0]:9s} {key[1]:6s} n={len(a):4d}  TTFT {mape(a):6.1%}  TPOT {mape(b):6.1%}")


# An aggregated layout (TP x attention-DP) gets a regime of its own from this many rows: the
# issue's floor for a partition it scores.
MIN_LAYOUT_ROWS = 10


# The measured file no constant was fitted on (docs/serving.md, "Held out"): its regimes
# report the model's error on configurations it has not seen.
HELD_OUT_FILE = "serving_silicon_aic012.csv"


def regimes(cat: Catalog) -> dict[str, list[dict[str, Any]]]:
    """Per engine, its TTFT and TPOT MAPE on every (GPU, mode, dense or MoE) of the rows it
    predicts, and on every aggregated layout (TP x attention-DP) among them with
    ``MIN_LAYOUT_ROWS`` rows or more: the ``validated`` list of its catalog entry. The shipped
    table's rows first, then the held-out file's (``held_out``), each file's regimes its
    own."""
    lookup = ss._lookup(cat)
    Key = tuple[bool, str, str, str, str, int, int]
    groups: dict[Key, list[tuple[ss.RowResult, dict[str, str]]]] = defaultdict(list)
    for held, name in ((False, ss.FILE), (True, HELD_OUT_FILE)):
        path = ss.data_dir() / name
        # (None: the default shipped file, whose result a caller may already hold)
        res = ss.serving_silicon(path if held else None, cat=cat)
        rows = {r["id"]: r for r in ss.read_rows(path)}
        for x in res.covered:
            cfg = ss.resolve(cat, rows[x.id], lookup)
            # The deployment's own mode: a run the file mislabels counts where it ran
            mode = "agg" if cfg.dep.agg is not None else "disagg"
            family = "moe" if cfg.dep.arch.experts else "dense"
            at = (held, cfg.dep.engine.id, cfg.dep.gpu.id, mode, family)
            groups[(*at, 0, 0)].append((x, rows[x.id]))
            if cfg.dep.agg is not None:
                par = cfg.dep.agg.par
                groups[(*at, par.tp, par.adp)].append((x, rows[x.id]))
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for (held, eng, gpu, mode, family, tp, adp), pairs in sorted(groups.items()):
        if tp and len(pairs) < MIN_LAYOUT_ROWS:
            continue
        xs = [x for x, _ in pairs]
        out[eng].append({
            "gpu": gpu, "mode": mode, "family": family, "rows": len(xs),
            **({"tp": tp, "attention_dp": adp} if tp else {}),
            **({"held_out": True} if held else {}),
            "ttft_mape": round(mape([x.ttft_error or 0.0 for x in xs]), 3),
            "tpot_mape": round(mape([x.tpot_error or 0.0 for x in xs]), 3),
            "ttft_median_error": round(ss.median_error(x.ttft_error for x in xs) or 0.0, 3),
            "tpot_median_error": round(ss.median_error(x.tpot_error for x in xs) or 0.0, 3),
            "max_input_len": max(int(float(r["isl"])) for _, r in pairs),
            **spread("ttft", [x.ttft_error or 0.0 for x in xs]),
            **spread("tpot", [x.tpot_error or 0.0 for x in xs])})
    return out


def spread(metric: str, errors: list[float]) -> dict[str, float]:
    """The 10th and 90th percentiles of a regime's signed errors (``{metric}_error_p10``,
    ``..._p90``), from MIN_LAYOUT_ROWS rows up; none below: a decile of fewer rows is one
    row."""
    if len(errors) < MIN_LAYOUT_ROWS:
        return {}
    cuts = statistics.quantiles(errors, n=10, method="inclusive")
    return {f"{metric}_error_p10": round(cuts[0], 3), f"{metric}_error_p90": round(cuts[-1], 3)}


def write_regimes(path: str, regs: dict[str, list[dict[str, Any]]]) -> None:
    """Replace each engine entry's ``validated:`` block in serving_engines.yaml."""
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    for eng, items in regs.items():
        start = text.index(f'  - id: "{eng}"')
        end = text.find("\n  - id: ", start + 5)
        end = len(text) if end < 0 else end
        block = text[start:end]
        lines = [ln for ln in block.split("\n")]
        keep, skipping = [], False
        for ln in lines:
            if ln.startswith("    validated:"):
                skipping = True
                continue
            if skipping and ln.startswith("      - "):
                continue
            skipping = False
            keep.append(ln)
        new = "\n".join(keep)
        body = "".join(
            f'\n      - {{gpu: "{i["gpu"]}", mode: "{i["mode"]}", family: "{i["family"]}", '
            f'rows: {i["rows"]}, '
            f'ttft_mape: {i["ttft_mape"]}, tpot_mape: {i["tpot_mape"]}, '
            f'ttft_median_error: {i["ttft_median_error"]}, '
            f'tpot_median_error: {i["tpot_median_error"]}'
            # The longest prompt measured, where the regimes give it (the accelerators'
            # script, whose rows span few lengths, does not)
            + (f', max_input_len: {i["max_input_len"]}' if i.get("max_input_len") else "")
            + (f', tp: {i["tp"]}, attention_dp: {i["attention_dp"]}' if i.get("tp") else "")
            + (", held_out: true" if i.get("held_out") else "")
            + "".join(f', {m}_error_{q}: {i[f"{m}_error_{q}"]}' for m in ("ttft", "tpot")
                      for q in ("p10", "p90") if f"{m}_error_p10" in i)
            + "}" for i in items)
        anchor = "    calibration:"
        new = new.replace(anchor, "    validated:" + body + "\n" + anchor, 1)
        text = text[:start] + new + text[end:]
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)


def show_regimes(regs: dict[str, list[dict[str, Any]]], write: bool) -> None:
    """Print ``regs`` and, with ``write``, write them into serving_engines.yaml."""
    for eng, items in regs.items():
        print(eng)
        for i in items:
            print(f"  {i}")
    if write:
        path = str(Path(__file__).resolve().parents[1] / "src" / "clusterwright"
                   / "catalog" / "data" / "serving_engines.yaml")
        write_regimes(path, regs)
        print(f"written to {path}")


def main(argv: list[str] | None = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    if argv and argv[0] == "--regimes":
        show_regimes(regimes(load_catalog()), "--write" in argv)
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("engine")
    ap.add_argument("--sample", type=int, default=0,
                    help="fit on a deterministic sample of at most this many rows (default 0: "
                    "every fully recorded row)")
    ap.add_argument("--holdout", default=None, help="COLUMN=VALUE rows left out of the fit")
    ap.add_argument("--params", default=None,
                    help="comma-separated constants to fit (default: all of PARAMS); the "
                    "others keep the entry's values")
    ap.add_argument("--prefills", action="store_true",
                    help="also fit the engine's isolated prefills of validation/"
                    "kv_offload.csv (one long prompt on an idle GPU) as a third term")
    a = ap.parse_args(argv)
    names = None
    if a.params:
        names = {n.strip() for n in a.params.split(",") if n.strip()}
        unknown = names - {p[0] for p in PARAMS}
        if unknown:
            print(f"--params: not fitted constants: {', '.join(sorted(unknown))}",
                  file=sys.stderr)
            return 2
    cat = load_catalog()
    try:
        base = cat.get("serving_engines", a.engine)
    except ClusterwrightError as exc:
        print(exc, file=sys.stderr)
        return 2
    assert isinstance(base, ServingEngine)
    every = rows_of(cat, a.engine)
    held: list[Any] = []
    if a.holdout:
        col, val = a.holdout.split("=", 1)
        held = [(r, c) for r, c in every if r.get(col) == val]
        every = [(r, c) for r, c in every if r.get(col) != val]
    # ``resolve`` sizes the workers a disaggregated row leaves open: those rows are
    # validated, not fitted (a row completed from its twin records them).
    recorded = [(r, c) for r, c in every if not ss._open_workers(r)]
    fit_rows = sample(recorded, a.sample) if a.sample > 0 else recorded
    print(f"{a.engine}: {len(every)} rows, {len(recorded)} fully recorded, fitting on "
          f"{len(fit_rows)}", flush=True)
    t0 = time.perf_counter()
    pre = prefill_rows_of(a.engine) if a.prefills else None
    if a.prefills and not pre:
        print(f"--prefills: validation/kv_offload.csv has no {a.engine} prefill", file=sys.stderr)
        return 2
    eng, _ = fit(cat, base, fit_rows, names, pre)
    print(f"fitted in {time.perf_counter() - t0:.0f} s")
    for name, _, _ in PARAMS:
        print(f"    {name}: {getattr(eng, name):.4g}")
    if pre:
        e = prefill_errors(cat, eng, pre)
        print(f"isolated prefills: {len(e)} rows, TTFT MAPE {mape(e):.1%} "
              f"({', '.join(f'{x:+.0%}' for x in e)})")
    report(cat, eng, recorded, "fully recorded rows")
    report(cat, eng, every, "all rows")
    if held:
        report(cat, eng, held, f"held out ({a.holdout})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
