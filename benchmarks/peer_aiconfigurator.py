"""Clusterwright vs AIConfigurator 0.12.0 on measured serving configurations, side by side.

For the rows of serving_silicon.csv (3,130 measured TTFT / TPOT points from NVIDIA's
AIConfigurator project: vLLM, SGLang and TensorRT-LLM on H100, B200 and GB200, aggregated and
disaggregated serving) this script predicts TTFT and TPOT twice:

- AIConfigurator (PyPI ``aiconfigurator==0.12.0``) the way its authors predict these rows
  (``tools/accuracy_regression_testing/predict_silicon_sample.py`` in ai-dynamo/aiconfigurator):
  ``aiconfigurator.cli.api.cli_estimate(...)`` with the row's model, system, backend, backend
  version, isl/osl, quantisation modes, batch size and parallel sizes (per role for
  disaggregated rows), retrying once with its current database version when the row's version
  has no database. Its per-GPU kernel database ships in the package (aiconfigurator-core);
  model configs come from the package's ``model_configs/`` only (see CONFIG_ALIAS), so nothing
  is fetched from a model hub;
- Clusterwright: ``clusterwright.validation.serving_silicon.predict_rows(rows)``. When that
  module is missing the report says so and keeps AIConfigurator's side.

It reports coverage (rows each tool predicts, reasons for the rest), TTFT and TPOT MAPE on the
rows each tool predicts and on the rows both predict, per partition (system x backend x mode)
and overall, and the wall time per configuration (one-time import and database loads apart),
and writes benchmarks/results/peer_aiconfigurator.md.

AIConfigurator is a benchmark-only peer: ``bash benchmarks/run.sh`` installs it into
benchmarks/.venv-peers and runs this script there with AIC_ALLOW_UNLISTED_VERSIONS=1 (the
file's backend versions are outside its "queryable slots") and HF_HUB_OFFLINE=1.

    python benchmarks/peer_aiconfigurator.py [--rows 1000] [--data FILE] [--seed 0] [--csv FILE]
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import io
import json
import logging
import math
import os
import random
import re
import statistics
import time
import traceback
import warnings
from collections import Counter, defaultdict
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

from _bench import machine_lines, table, write

PEER = "AIConfigurator"
PEER_VERSION = "0.12.0"
REPO = Path(__file__).resolve().parents[1]
LOCAL_DATA = REPO / "validation" / "serving_silicon.csv"
SHARED_DATA = Path("/work/shared/data/serving_silicon.csv")
NOT_AVAILABLE = "Clusterwright: not available in this checkout"

# Model paths of the file whose config.json AIConfigurator 0.12.0 does not ship (it would
# download them from huggingface.co), mapped to a shipped config of the same network.
CONFIG_ALIAS: dict[str, tuple[str, str]] = {
    "meta-llama/Llama-3.1-70B": (
        "meta-llama/Meta-Llama-3.1-70B",
        "the same Hugging Face repository under its earlier name",
    ),
    "meta-llama/Llama-3.1-8B-Instruct": (
        "meta-llama/Meta-Llama-3.1-8B",
        "the instruct tune of the same network",
    ),
    "nvidia/DeepSeek-R1-NVFP4": (
        "deepseek-ai/DeepSeek-R1",
        "the NVFP4 checkpoint of that model; the row's gemm/moe quant modes (nvfp4) are passed",
    ),
    "nvidia/Qwen3-32B-NVFP4": (
        "Qwen/Qwen3-32B",
        "the NVFP4 checkpoint of that model; the row's gemm/moe quant modes (nvfp4) are passed",
    ),
}

# As in predict_silicon_sample.py.
PARALLEL_FIELDS = ("tp_size", "pp_size", "attention_dp_size", "moe_tp_size", "moe_ep_size")
AGG_FIELDS = ("batch_size", *PARALLEL_FIELDS)
DISAGG_FIELDS = tuple(
    f"{stage}_{field}"
    for stage in ("prefill", "decode")
    for field in (*PARALLEL_FIELDS, "batch_size", "num_workers")
)

# Failure messages -> short reasons (first match wins); anything else is shown as raised.
REASONS: tuple[tuple[str, str], ...] = (
    (
        "is required for disagg mode",
        "disaggregated row without per-role batch sizes and worker counts (empty in the file; "
        "cli_estimate requires them)",
    ),
    ("MoE data missing", "no MoE kernel data for the row's quantisation / experts / parallelism"),
    ("GEMM perf data missing for quant", "no GEMM kernel data for the row's quantisation"),
    ("Cross-node EP requires DeepEP", "cross-node expert parallelism: no DeepEP all-to-all data"),
    ("should be divisible by tp_size", "attention heads not divisible by the row's TP size"),
    ("does not fit in GPU memory", "OOM: its memory model says the row's parallelism does not fit"),
    (
        "moe_tp_size must be positive",
        "MoE TP / EP size 0 in the row (passed as given, as its authors' script does)",
    ),
)


def partition(row: dict[str, str]) -> str:
    return f"{row['system']} / {row['backend']} / {row['mode']}"


# --------------------------------------------------------------------------- data


def load_rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def stratified_sample(
    rows: list[dict[str, str]], n: int, seed: int, floor: int = 20
) -> list[dict[str, str]]:
    """About ``n`` rows: each partition in proportion to its size, at least ``min(size,
    floor)``; rows drawn with ``random.Random(seed)``, returned in file order."""
    if n <= 0 or n >= len(rows):
        return list(rows)
    groups: dict[str, list[int]] = defaultdict(list)
    for i, r in enumerate(rows):
        groups[partition(r)].append(i)
    rng = random.Random(seed)
    keep: list[int] = []
    for key in sorted(groups):
        idx = groups[key]
        k = min(len(idx), max(floor, round(n * len(idx) / len(rows))))
        keep += rng.sample(idx, k)
    return [rows[i] for i in sorted(keep)]


# --------------------------------------------------------------------------- AIConfigurator


def short_error(exc: BaseException) -> str:
    msg = str(exc)
    for needle, reason in REASONS:
        if needle in msg:
            return reason
    first = msg.strip().splitlines()[0] if msg.strip() else ""
    first = re.sub(r"(/[\w.+-]+)+", "<path>", first)
    return f"{type(exc).__name__}: {first[:140]}"


MISSING_DB = "no database for the row's version"
PARTIAL_DB = "the row's version has only some tables"


def fallback_reason(exc: BaseException) -> str | None:
    """Why to retry with the current database, or None (re-raise). As the authors' script:
    the row's version has no database. Beyond it: the version's directory lacks a whole
    table ("no GEMM rows loaded from ..."): data kept only for backward fill of some
    operations, which the current version would otherwise answer."""
    msg = str(exc)
    if isinstance(exc, ValueError) and "Failed to load perf database" in msg:
        return MISSING_DB
    if re.search(r"no [\w-]+ rows loaded from", msg):
        return PARTIAL_DB
    return None


class Aic:
    """AIConfigurator's cli_estimate, called as predict_silicon_sample.py calls it."""

    def __init__(self, strict: bool = False) -> None:
        self.strict = strict
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("AIC_ALLOW_UNLISTED_VERSIONS", "1")
        t0 = time.perf_counter()
        from aiconfigurator.cli.api import cli_estimate
        from aiconfigurator_core.sdk.common import DefaultHFModels

        self.import_s = time.perf_counter() - t0
        self.cli_estimate = cli_estimate
        self.shipped = set(DefaultHFModels)
        for name in ("aiconfigurator", "aiconfigurator_core"):
            logging.getLogger(name).setLevel(logging.CRITICAL)
        # (system, backend, version) -> why the current database answers instead
        self.fallback: dict[tuple[str, str, str], str] = {}

    def args(self, row: dict[str, str]) -> tuple[dict[str, Any], str | None]:
        model = row["model_path"]
        alias = None
        if model in CONFIG_ALIAS:
            model, alias = CONFIG_ALIAS[model][0], model
        fields = AGG_FIELDS if row["mode"] == "agg" else DISAGG_FIELDS
        args: dict[str, Any] = dict(
            model_path=model,
            system_name=row["system"],
            mode=row["mode"],
            backend_name=row["backend"],
            backend_version=row["backend_version"] or None,
            isl=int(row["isl"]),
            osl=int(row["osl"]),
            gemm_quant_mode=row["gemm_quant_mode"] or None,
            moe_quant_mode=row["moe_quant_mode"] or None,
            **{f: int(row[f]) for f in fields if row.get(f)},
        )
        return args, alias

    def predict(self, row: dict[str, str]) -> dict[str, Any]:
        """One row: ttft / tpot (ms), or skipped with a reason; which database answered."""
        args, alias = self.args(row)
        out: dict[str, Any] = {"id": row["id"], "alias": alias, "skipped": None}
        if args["model_path"] not in self.shipped:
            out["skipped"] = (
                "model config not shipped in the package (AIConfigurator would download "
                "config.json from huggingface.co)"
            )
            out["db"] = ""
            return out
        requested = args["backend_version"]
        key = (row["system"], row["backend"], str(requested))
        if requested is not None and key in self.fallback:
            args["backend_version"] = None
        try:
            try:
                res = self._call(args)
            except Exception as e:
                why = fallback_reason(e)
                if why == PARTIAL_DB and self.strict:
                    why = None
                if args["backend_version"] is None or why is None:
                    raise
                self.fallback[key] = why
                args["backend_version"] = None
                res = self._call(args)
        except KeyboardInterrupt:
            raise
        except BaseException as e:  # SystemExit too: its version checks exit
            out["skipped"] = short_error(e)
        else:
            ttft, tpot = float(res.ttft), float(res.tpot)
            if not (math.isfinite(ttft) and math.isfinite(tpot) and ttft > 0 and tpot > 0):
                out["skipped"] = f"non-finite or non-positive prediction ({ttft}, {tpot})"
            else:
                out["pred_ttft_ms"], out["pred_tpot_ms"] = ttft, tpot
        if requested is None:
            out["db"] = "current (row gives no version)"
        elif args["backend_version"] is None:
            out["db"] = f"current ({self.fallback[key]})"
        else:
            out["db"] = "row's version"
        return out

    def _call(self, args: dict[str, Any]) -> Any:
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return self.cli_estimate(**dict(args))


def run_aic(
    rows: list[dict[str, str]], strict: bool = False
) -> tuple[dict[str, dict], dict[str, Any]]:
    """Predict every row. One untimed warm-up prediction per (system, backend, version,
    model) group first: that, the import and the database loads are the one-time cost."""
    aic = Aic(strict)
    groups: dict[tuple[str, ...], dict[str, str]] = {}
    for r in rows:
        groups.setdefault((r["system"], r["backend"], r["backend_version"], r["model_path"]), r)
    t0 = time.perf_counter()
    for r in groups.values():
        aic.predict(r)
    warm_s = time.perf_counter() - t0
    preds: dict[str, dict] = {}
    for i, r in enumerate(rows):
        t = time.perf_counter()
        p = aic.predict(r)
        p["wall_s"] = time.perf_counter() - t
        preds[r["id"]] = p
        if (i + 1) % 100 == 0:
            print(f"  {PEER}: {i + 1}/{len(rows)} rows", flush=True)
    info = {"import_s": aic.import_s, "warm_s": warm_s, "groups": len(groups)}
    return preds, info


# --------------------------------------------------------------------------- Clusterwright


def import_ours() -> tuple[Callable[[list[dict[str, str]]], list[dict]] | None, str]:
    try:
        from clusterwright.validation.serving_silicon import predict_rows
    except Exception as e:
        return None, f"{type(e).__name__}: {e}"
    return predict_rows, ""


def read_as_ours(path: Path, rows: list[dict[str, str]]) -> list[dict[str, str]]:
    """The rows as `validate --table serving-silicon` reads the file: its readings that take
    a deployment from another row of the same run or from InferenceMAX's published
    configuration, and size a sweep once (`serving_silicon.read_rows` on the whole file),
    so that Clusterwright's side is the command's; the raw row where the reading fails."""
    try:
        from clusterwright.validation.serving_silicon import read_rows
        read = {r["id"]: r for r in read_rows(path)}
    except Exception as e:
        print(f"Clusterwright: the file's readings are not applied ({short_error(e)})")
        return rows
    return [read.get(r["id"], r) for r in rows]


def check_ours(row: dict[str, str], p: dict | None) -> dict[str, Any]:
    out: dict[str, Any] = {"id": row["id"], "skipped": None}
    if not isinstance(p, dict):
        out["skipped"] = f"predict_rows returned {type(p).__name__}, not a dict"
        return out
    if p.get("id") not in (None, row["id"]):
        out["skipped"] = f"predict_rows returned id {p.get('id')!r} for {row['id']!r}"
        return out
    if p.get("skipped"):
        out["skipped"] = str(p["skipped"])
        return out
    try:
        ttft, tpot = float(p["pred_ttft_ms"]), float(p["pred_tpot_ms"])
    except (KeyError, TypeError, ValueError) as e:
        out["skipped"] = f"no prediction in the result ({type(e).__name__}: {e})"
        return out
    if not (math.isfinite(ttft) and math.isfinite(tpot) and ttft > 0 and tpot > 0):
        out["skipped"] = f"non-finite or non-positive prediction ({ttft}, {tpot})"
        return out
    out["pred_ttft_ms"], out["pred_tpot_ms"] = ttft, tpot
    return out


def run_ours(
    predict_rows: Callable[[list[dict[str, str]]], list[dict]], rows: list[dict[str, str]]
) -> tuple[dict[str, dict], dict[str, Any]]:
    """One row per call (timed), after one untimed warm-up call; then one call on all rows
    (its wall time amortised per row, and whether its answers match the per-row ones)."""
    t0 = time.perf_counter()
    with contextlib.suppress(Exception):  # a failure shows in the per-row calls below
        predict_rows([dict(rows[0])])
    warm_s = time.perf_counter() - t0
    preds: dict[str, dict] = {}
    for r in rows:
        t = time.perf_counter()
        try:
            res = predict_rows([dict(r)])
            p = check_ours(r, res[0] if res else None)
        except Exception as e:
            p = {"id": r["id"], "skipped": f"raised {short_error(e)}"}
        p["wall_s"] = time.perf_counter() - t
        preds[r["id"]] = p
    info: dict[str, Any] = {"warm_s": warm_s}
    t = time.perf_counter()
    try:
        batch = predict_rows([dict(r) for r in rows])
        info["batch_s"] = time.perf_counter() - t
        differ = 0
        for r, b in zip(rows, batch, strict=False):
            a, c = preds[r["id"]], check_ours(r, b)
            if (a.get("pred_ttft_ms"), a.get("pred_tpot_ms")) != (
                c.get("pred_ttft_ms"),
                c.get("pred_tpot_ms"),
            ):
                differ += 1
        info["batch_differ"] = differ + abs(len(batch) - len(rows))
    except Exception as e:
        info["batch_error"] = f"{type(e).__name__}: {e}"
        traceback.print_exc()
    return preds, info


# --------------------------------------------------------------------------- statistics


def ape(pred: float, meas: float) -> float:
    return abs(pred - meas) / meas * 100


def errors(rows: list[dict[str, str]], preds: dict[str, dict]) -> tuple[list[float], list[float]]:
    ttft = [ape(preds[r["id"]]["pred_ttft_ms"], float(r["silicon_ttft_ms"])) for r in rows]
    tpot = [ape(preds[r["id"]]["pred_tpot_ms"], float(r["silicon_tpot_ms"])) for r in rows]
    return ttft, tpot


def covered(rows: list[dict[str, str]], preds: dict[str, dict] | None) -> list[dict[str, str]]:
    if preds is None:
        return []
    return [r for r in rows if not preds[r["id"]]["skipped"]]


def pct(x: float) -> str:
    return f"{x:.1f}%"


def mape_cells(rows: list[dict[str, str]], preds: dict[str, dict] | None) -> list[str]:
    if preds is None:
        return ["n/a", "n/a"]
    if not rows:
        return ["–", "–"]
    ttft, tpot = errors(rows, preds)
    return [pct(statistics.fmean(ttft)), pct(statistics.fmean(tpot))]


def ms(x: float) -> str:
    return f"{x * 1e3:.2f} ms" if x < 1 else f"{x:.2f} s"


# --------------------------------------------------------------------------- report


def summary_rows(
    rows: list[dict[str, str]], tools: list[tuple[str, dict[str, dict] | None]]
) -> list[list[str]]:
    both = [r for r in rows if all(p is not None and not p[r["id"]]["skipped"] for _, p in tools)]
    if any(p is None for _, p in tools):
        both = []
    out = []
    for name, preds in tools:
        if preds is None:
            out.append([name, NOT_AVAILABLE, "", "", "", "", "", ""])
            continue
        cov = covered(rows, preds)
        line = [name, f"{len(cov):,} / {len(rows):,} ({len(cov) / len(rows):.0%})"]
        if cov:
            ttft, tpot = errors(cov, preds)
            line += [
                pct(statistics.fmean(ttft)),
                pct(statistics.fmean(tpot)),
                pct(statistics.median(ttft)),
                pct(statistics.median(tpot)),
            ]
        else:
            line += ["–"] * 4
        if any(p is None for _, p in tools):
            line += ["n/a", "n/a"]
        else:
            line += mape_cells(both, preds)
        out.append(line)
    return out


def partition_tables(
    rows: list[dict[str, str]], aic: dict[str, dict], ours: dict[str, dict] | None
) -> tuple[list[list[str]], list[list[str]]]:
    parts: dict[str, list[dict[str, str]]] = defaultdict(list)
    for r in rows:
        parts[partition(r)].append(r)
    own, both_t = [], []
    for key in [*sorted(parts), "all"]:
        pr = rows if key == "all" else parts[key]
        a = covered(pr, aic)
        label = f"**{key}**" if key == "all" else key
        line = [label, f"{len(pr):,}", f"{len(a):,}", *mape_cells(a, aic)]
        if ours is None:
            line += [NOT_AVAILABLE, "", ""]
            both_t.append([label, NOT_AVAILABLE, "", "", "", ""])
        else:
            o = covered(pr, ours)
            line += [f"{len(o):,}", *mape_cells(o, ours)]
            ids = {r["id"] for r in o}
            b = [r for r in a if r["id"] in ids]
            both_t.append([label, f"{len(b):,}", *mape_cells(b, aic), *mape_cells(b, ours)])
        own.append(line)
    return own, both_t


def reason_rows(
    rows: list[dict[str, str]], tools: list[tuple[str, dict[str, dict] | None]]
) -> list[list[str]]:
    out = []
    for name, preds in tools:
        if preds is None:
            out.append([name, NOT_AVAILABLE, "", ""])
            continue
        by: dict[str, list[dict[str, str]]] = defaultdict(list)
        for r in rows:
            if preds[r["id"]]["skipped"]:
                by[preds[r["id"]]["skipped"]].append(r)
        for reason, rs in sorted(by.items(), key=lambda kv: -len(kv[1])):
            parts = Counter(partition(r) for r in rs)
            where = ", ".join(f"{k} ({v})" for k, v in parts.most_common(4))
            if len(parts) > 4:
                where += f", {len(parts) - 4} more"
            out.append([name, reason.replace("|", "/"), f"{len(rs):,}", where])
        if not by:
            out.append([name, "(none)", "0", ""])
    return out


def time_row(name: str, rows: list[dict[str, str]], preds: dict[str, dict], load: str) -> list[str]:
    t_ok = [preds[r["id"]]["wall_s"] for r in covered(rows, preds)]
    t_all = [preds[r["id"]]["wall_s"] for r in rows]
    if not t_ok:
        return [name, "0", "–", "–", "–", ms(statistics.fmean(t_all)), load]
    t_ok.sort()
    p90 = t_ok[min(len(t_ok) - 1, int(0.9 * len(t_ok)))]
    return [
        name,
        f"{len(t_ok):,}",
        f"**{ms(statistics.median(t_ok))}**",
        ms(statistics.fmean(t_ok)),
        f"{ms(p90)} / {ms(t_ok[-1])}",
        ms(statistics.fmean(t_all)),
        load,
    ]


def write_csv(path: Path, rows: list[dict[str, str]], aic: dict, ours: dict | None) -> None:
    cols = ["id", "partition", "model_path", "silicon_ttft_ms", "silicon_tpot_ms"]
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(
            [
                *cols,
                *("aic_ttft_ms", "aic_tpot_ms", "aic_skipped", "aic_db", "aic_wall_s"),
                *("cw_ttft_ms", "cw_tpot_ms", "cw_skipped", "cw_wall_s"),
            ]
        )
        for r in rows:
            a = aic[r["id"]]
            o = ours[r["id"]] if ours is not None else {"skipped": NOT_AVAILABLE}
            w.writerow(
                [
                    *(r["id"], partition(r), r["model_path"]),
                    *(r["silicon_ttft_ms"], r["silicon_tpot_ms"]),
                    *(a.get("pred_ttft_ms", ""), a.get("pred_tpot_ms", ""), a["skipped"] or ""),
                    *(a.get("db", ""), f"{a['wall_s']:.4f}"),
                    *(o.get("pred_ttft_ms", ""), o.get("pred_tpot_ms", ""), o["skipped"] or ""),
                    f"{o['wall_s']:.4f}" if "wall_s" in o else "",
                ]
            )
    print(f"wrote {path}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--rows",
        type=int,
        default=1000,
        help="stratified sample of about this many rows by partition (0 = all rows)",
    )
    ap.add_argument("--seed", type=int, default=0, help="seed of the stratified sample")
    ap.add_argument(
        "--data",
        type=Path,
        default=LOCAL_DATA if LOCAL_DATA.exists() else SHARED_DATA,
        help=f"serving_silicon.csv (default {LOCAL_DATA} if it exists, else {SHARED_DATA})",
    )
    ap.add_argument("--csv", type=Path, help="also write per-row predictions to this CSV")
    ap.add_argument(
        "--peer-cache",
        type=Path,
        help="JSON of AIConfigurator's predictions for the same rows: read when it matches "
        "them (its side is not rerun: Clusterwright's changes re-score in seconds), written "
        "otherwise",
    )
    ap.add_argument(
        "--strict",
        action="store_true",
        help="AIConfigurator falls back to its current database only when the row's version "
        "has none (the authors' script), not also when that version lacks whole tables",
    )
    ap.add_argument("--out", default="peer_aiconfigurator.md",
                    help="results file under benchmarks/results (another name for another "
                    "--data file, so the shipped rows' results stay)")
    args = ap.parse_args()

    all_rows = load_rows(args.data)
    rows = stratified_sample(all_rows, args.rows, args.seed)
    print(f"{len(rows):,} of {len(all_rows):,} rows from {args.data}", flush=True)

    t0 = time.perf_counter()
    strict = args.strict
    ids = [r["id"] for r in rows]
    cached = None
    if args.peer_cache and args.peer_cache.exists():
        c = json.loads(args.peer_cache.read_text(encoding="utf-8"))
        if c.get("ids") == ids and c.get("strict") == strict:
            cached = c
            print(f"{PEER}: predictions read from {args.peer_cache}", flush=True)
    if cached is not None:
        aic, aic_info, aic_total = cached["preds"], cached["info"], cached["total_s"]
    else:
        aic, aic_info = run_aic(rows, strict)
        aic_total = time.perf_counter() - t0
        if args.peer_cache:
            args.peer_cache.write_text(json.dumps(
                {"ids": ids, "strict": strict, "preds": aic, "info": aic_info,
                 "total_s": aic_total}), encoding="utf-8")
    print(f"{PEER}: {aic_total:.0f} s", flush=True)

    predict_rows, why = import_ours()
    ours: dict[str, dict] | None = None
    ours_info: dict[str, Any] = {}
    if predict_rows is None:
        print(f"{NOT_AVAILABLE} ({why})")
    else:
        ours, ours_info = run_ours(predict_rows, read_as_ours(args.data, rows))

    versions = {p: metadata.version(p) for p in ("aiconfigurator", "aiconfigurator-core")}
    if versions["aiconfigurator"] != PEER_VERSION:
        print(f"warning: {PEER} {versions['aiconfigurator']} installed, {PEER_VERSION} expected")
    tools: list[tuple[str, dict[str, dict] | None]] = [(PEER, aic), ("Clusterwright", ours)]
    own, both_t = partition_tables(rows, aic, ours)
    sample = (
        "all rows"
        if len(rows) == len(all_rows)
        else f"stratified sample (--rows {args.rows}, --seed {args.seed}): each system x "
        "backend x mode partition in proportion to its size, at least min(size, 20) rows"
    )

    a_ok = covered(rows, aic)
    db_rows = []
    for db in sorted({aic[r["id"]]["db"] for r in a_ok}):
        rs = [r for r in a_ok if aic[r["id"]]["db"] == db]
        db_rows.append([db, f"{len(rs):,}", *mape_cells(rs, aic)])
    aliased = [r for r in rows if aic[r["id"]]["alias"]]
    aliased_ok = [r for r in aliased if not aic[r["id"]]["skipped"]]

    load_aic = (
        f"{aic_info['import_s']:.1f} s import + {aic_info['warm_s']:.1f} s database loads and "
        f"one warm-up prediction for each of {aic_info['groups']} (system, backend, version, "
        "model) groups"
    )
    times = [time_row(PEER, rows, aic, load_aic)]
    if ours is None:
        times.append(["Clusterwright", NOT_AVAILABLE, "", "", "", "", ""])
        ours_lines = [f"- Clusterwright: not available in this checkout ({why})."]
    else:
        times.append(
            time_row(
                "Clusterwright", rows, ours, f"{ours_info['warm_s']:.2f} s first call (one row)"
            )
        )
        if "batch_s" in ours_info:
            batch = (
                f"one `predict_rows` call on all {len(rows):,} rows: {ours_info['batch_s']:.2f} s "
                f"({ms(ours_info['batch_s'] / len(rows))} per row); "
                f"{ours_info['batch_differ']} rows differ from the one-row calls"
            )
        else:
            batch = f"one `predict_rows` call on all rows raised {ours_info['batch_error']}"
        ours_lines = [
            "- Clusterwright: `clusterwright.validation.serving_silicon.predict_rows`, called "
            f"with one row per call (the timed numbers); {batch}. The rows are read as `validate "
            "--table serving-silicon` reads the file (`read_rows` on the whole file: deployments "
            "from a twin row of the same run or from InferenceMAX's configuration, a sweep sized "
            "once), so the errors are the command's."
        ]

    out = [
        f"# Clusterwright vs {PEER} {versions['aiconfigurator']}: measured serving configurations",
        "",
        *machine_lines(),
        f"- {PEER} {versions['aiconfigurator']} (aiconfigurator-core "
        f"{versions['aiconfigurator-core']}), AIC_ALLOW_UNLISTED_VERSIONS="
        f"{os.environ.get('AIC_ALLOW_UNLISTED_VERSIONS')}, HF_HUB_OFFLINE="
        f"{os.environ.get('HF_HUB_OFFLINE')}; model configs from the package, no hub access",
        f"- data: {args.data} ({len(all_rows):,} rows); {len(rows):,} rows evaluated: {sample}",
        *ours_lines,
        "",
        "## Summary",
        "",
        *table(
            [
                "tool",
                "rows predicted",
                "TTFT MAPE",
                "TPOT MAPE",
                "TTFT median APE",
                "TPOT median APE",
                "TTFT MAPE, rows both predict",
                "TPOT MAPE, rows both predict",
            ],
            summary_rows(rows, tools),
        ),
        "",
        "MAPE = mean of |predicted − measured| / measured over the rows a tool predicts (the "
        "definition of AIConfigurator's `compare_silicon_predictions.py`); the last two columns "
        "use only the rows both tools predict.",
        "",
        "## Per partition (system / backend / mode): rows each tool predicts",
        "",
        *table(
            [
                "partition",
                "rows",
                f"{PEER} predicts",
                f"{PEER} TTFT MAPE",
                f"{PEER} TPOT MAPE",
                "Clusterwright predicts",
                "Clusterwright TTFT MAPE",
                "Clusterwright TPOT MAPE",
            ],
            own,
        ),
        "",
        "## Per partition: rows both predict",
        "",
        *table(
            [
                "partition",
                "rows both predict",
                f"{PEER} TTFT MAPE",
                f"{PEER} TPOT MAPE",
                "Clusterwright TTFT MAPE",
                "Clusterwright TPOT MAPE",
            ],
            both_t,
        ),
        "",
        "## Rows not predicted, by reason",
        "",
        *table(["tool", "reason", "rows", "partitions (rows)"], reason_rows(rows, tools)),
        "",
        "## Wall time per configuration",
        "",
        *table(
            [
                "tool",
                "configurations predicted",
                "median",
                "mean",
                "p90 / max",
                "mean over all attempted rows",
                "one-time cost (not in the per-row times)",
            ],
            times,
        ),
        "",
        f"Per-row wall time (time.perf_counter) of one prediction, one process, one row per "
        f"call. {PEER}: `cli_estimate` for the row, including any retry with the current "
        f"database, after the warm-up; whole {PEER} pass "
        f"{aic_total:.0f} s. The machine may be shared with other jobs.",
        "",
        f"## {PEER}: which kernel database answered",
        "",
        *table(["database", "rows predicted", "TTFT MAPE", "TPOT MAPE"], db_rows),
        "",
        f"Model configs: {len(aliased):,} rows name a model whose config is not shipped and use "
        f"a shipped config of the same network ({len(aliased_ok):,} of them predicted): "
        + "; ".join(f"`{k}` -> `{v[0]}` ({v[1]})" for k, v in CONFIG_ALIAS.items())
        + ".",
        "",
        f"## How {PEER} was run",
        "",
        "- As its authors predict this file (`tools/accuracy_regression_testing/"
        "predict_silicon_sample.py`, ai-dynamo/aiconfigurator): `aiconfigurator.cli.api."
        "cli_estimate(model_path, system_name, mode, backend_name, backend_version, isl, osl, "
        "gemm_quant_mode, moe_quant_mode, ...)` with `batch_size` and the parallel sizes for "
        "agg rows and the `prefill_*` / `decode_*` sizes, batch sizes and worker counts for "
        "disagg rows; database mode SILICON (its default), no MTP, no prefix cache. When the "
        "row's backend version has no database it retries once with the current one, as that "
        "script does (and remembers the version). Unlike that script, identical "
        "configurations are not served from a cache: every row is predicted and timed.",
        (
            "- Fallback as in the authors' script only (`--strict`): a row whose version "
            "directory holds only some tables fails."
            if strict
            else "- One step beyond the authors' script (`--strict` turns it off): it also "
            "falls back to the current database when the row's version directory lacks a whole "
            "table (`no GEMM rows loaded from ...`: e.g. b200 vllm 0.19.0 and sglang 0.5.9 hold "
            "only comm / MoE data, kept for backward fill); those rows are counted under "
            f"'current ({PARTIAL_DB})' above; the authors' script does not cover them."
        ),
        "- Kernel data: the per-GPU database shipped in aiconfigurator-core (h100_sxm, "
        "b200_sxm, gb200; trtllm 1.3.0rc20, sglang 0.5.14, vllm 0.24.0 are the current "
        "versions). Most rows were measured on older backend versions: "
        "AIC_ALLOW_UNLISTED_VERSIONS=1 lets it query them, but the package keeps only a few "
        "tables of older versions, so in practice the current database answers (see the "
        "table above).",
        "- Offline: cli_estimate reads a model's config from its `model_configs/` directory "
        "when the model is in its `DefaultHFModels` list and otherwise downloads config.json "
        "from huggingface.co with urllib (HF_HUB_OFFLINE does not stop that). The script "
        "never passes a model outside that list: four model paths of the file map to shipped "
        "configs of the same network (above); any other would be reported as not covered.",
        "- Disaggregated rows: cli_estimate needs per-role batch sizes and worker counts; the "
        "file has them for some rows only (the role TP/EP sizes are there for all), so the "
        "rest are not covered, as in the authors' own runs.",
    ]
    write(args.out, out)
    if args.csv:
        write_csv(args.csv, rows, aic, ours)


if __name__ == "__main__":
    main()
