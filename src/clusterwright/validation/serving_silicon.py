"""Serving against NVIDIA AIConfigurator's measured configurations (``serving_silicon.csv``).

Each row is one deployment (engine and version, model, system, weight formats, TP/PP,
attention data parallelism, MoE TP/EP; for disaggregated rows the same per role with worker
counts) under a closed-loop benchmark: ``C`` clients, prompts of ``isl`` tokens, ``osl``
output tokens each, mean TTFT and TPOT measured. The model predicts both from datasheets and
the engine's calibrated constants: ``model/serving_step`` for an iteration,
``sim/serving_steady`` for the closed loop's steady state.

Rows name models by Hugging Face id and systems by AIConfigurator's names; the catalog
entries carry them (``hf_ids``, ``system_names``). A row the model cannot represent is counted
as not covered, with the reason; a malformed file (missing or extra columns, an unknown
engine, version or precision, an inconsistent layout) is an input error naming the column
and the CSV line.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
import statistics
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import date
from functools import lru_cache
from pathlib import Path
from typing import Any

from clusterwright.catalog.registry import Catalog, load_catalog
from clusterwright.catalog.schema import Gpu, ModelArch
from clusterwright.catalog.stacks import ServingEngine, release_number
from clusterwright.errors import InputError
from clusterwright.model.serving_step import ServingParallel, weight_format
from clusterwright.plan.serving_deployment import (
    Deployment,
    DeploymentError,
    Role,
    iteration_breakdown,
    kv_format_for,
    size_workers,
    steady,
)
from clusterwright.plan.serving_engine import roles_view
from clusterwright.sim.serving_steady import SATURATED_SENSITIVITY, SteadyState
from clusterwright.sim.serving_trace import MAX_REQUESTS
from clusterwright.spec.scenario import MAX_GPUS, MAX_SEQ_LEN
from clusterwright.spec.yamlio import YamlError, read_text
from clusterwright.validation.rows import NotCoveredError, data_dir

FILE = "serving_silicon.csv"
COLUMNS = (
    "id", "silicon_data_source", "backend", "backend_version", "model_path", "system",
    "precision", "mode", "isl", "osl", "gemm_quant_mode", "moe_quant_mode", "batch_size",
    "tp_size", "pp_size", "attention_dp_size", "moe_tp_size", "moe_ep_size",
    "prefill_batch_size", "prefill_num_workers", "prefill_tp_size", "prefill_pp_size",
    "prefill_attention_dp_size", "prefill_moe_tp_size", "prefill_moe_ep_size",
    "decode_batch_size", "decode_num_workers", "decode_tp_size", "decode_pp_size",
    "decode_attention_dp_size", "decode_moe_tp_size", "decode_moe_ep_size",
    "silicon_ttft_ms", "silicon_tpot_ms",
)
BACKENDS = ("trtllm", "vllm", "sglang")
# The precision column, and the weight format a row without quant-mode columns is read in
# (INT8/INT4 without a stated mode: weight-only, AIConfigurator's int8_wo / int4_wo).
# AIConfigurator's quant-mode spellings of the 16-bit formats ("bfloat16", "float16") are
# taken here too.
PRECISION_DEFAULT_FORMAT = {"": "bf16", "bf16": "bf16", "fp16": "fp16", "bfloat16": "bf16",
                            "float16": "fp16", "fp8": "fp8", "fp4": "nvfp4", "nvfp4": "nvfp4",
                            "mxfp4": "mxfp4", "int8": "int8_wo", "int4": "int4"}
PRECISIONS = tuple(PRECISION_DEFAULT_FORMAT)
MODES = ("agg", "disagg")
# A measurement table is read whole; 60x the shipped 3,130-row file.
MAX_DATA_BYTES = 64 << 20
PARTITION_MIN = 10  # partitions held to the target
TARGET = 0.20


# --------------------------------------------------------------------------- reading


def read_rows(path: str | Path) -> list[dict[str, str]]:
    """The rows of a CSV in ``serving_silicon.csv``'s exact column format, each with its
    line number under ``_line``. InputError names missing or extra columns."""
    p = Path(path)
    try:
        text = read_text(p, MAX_DATA_BYTES)
    except YamlError as exc:
        raise InputError(f"--data: {exc}", field="data") from None
    # A spreadsheet's UTF-8 byte-order mark is not part of the first column's name
    text = text.removeprefix("\ufeff")
    try:
        return _rows(p, csv.DictReader(io.StringIO(text, newline="")))
    except csv.Error as exc:
        raise InputError(f"--data: {p}: not a CSV file: {exc}", field="data") from None


def _rows(p: Path, reader: csv.DictReader[str]) -> list[dict[str, str]]:
    header = list(reader.fieldnames or [])
    missing = [c for c in COLUMNS if c not in header]
    extra = [c for c in header if c not in COLUMNS]
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"missing column(s) {', '.join(missing)}")
        if extra:
            parts.append(f"unexpected column(s) {', '.join(extra)}")
        raise InputError(f"{p}: line 1: {'; '.join(parts)} (expected the columns of "
                         f"serving_silicon.csv)", field=(missing or extra)[0])
    rows = []
    for i, r in enumerate(reader, start=2):
        if None in r:
            raise InputError(f"{p}: line {i}: more values than columns", field="id")
        short = [c for c, v in r.items() if v is None]
        if short:
            raise InputError(f"{p}: line {i}: fewer values than columns ({short[0]} and on "
                             "are missing; a quoted value broken over lines?)", field=short[0])
        r = dict(r)
        rid = (r.get("id") or "").strip()
        if not rid:
            raise InputError(f"{p}: line {i}: id: empty (each row's results are keyed by it)",
                             field="id")
        r["_line"] = str(i)
        rows.append(r)
    if not rows:
        raise InputError(f"{p}: no rows after the header: nothing to validate", field="data")
    try:
        return mark_sweeps(complete_from_layouts(complete_from_twins(inferencemax_runs(rows))))
    except InputError as exc:
        raise InputError(f"{p}: {exc}", field=exc.field) from None


def _run_note(r: dict[str, str]) -> str:
    """The note of a row read as the InferenceMAX run it repeats (``inferencemax_runs``)."""
    return (f"the same measurement as InferenceMAX's {r['_run']} ({r['_source'].split(';')[0]} "
            "copies it): read as that run" if r.get("_run") else "")


def _printed(value: str) -> tuple[float, int]:
    """A measurement as printed: its value and its decimal places."""
    v = value.strip()
    return float(v), len(v.partition(".")[2])


def _same_printed(run: dict[str, str], ttft: float, td: int, tpot: float, pd: int) -> bool:
    """Whether ``run``'s TTFT and TPOT, rounded to a copy's decimals, are the copy's. A run
    whose measurement does not parse is no match here; its own line's check names it."""
    try:
        return (round(float(run["silicon_ttft_ms"]), td) == round(ttft, td)
                and round(float(run["silicon_tpot_ms"]), pd) == round(tpot, pd))
    except (KeyError, TypeError, ValueError):
        return False


def inferencemax_runs(rows: list[dict[str, str]]) -> list[dict[str, str]]:
    """Rows that repeat an InferenceMAX measurement, read as that run.

    AIConfigurator's gap analyses (``source_file=kimi-k2.5-gap-analysis.csv``) copy
    InferenceMAX's results with two decimals and without the run's date or workflow: each of
    the 123 such rows of the held-out file has an InferenceMAX row of the same system, engine,
    mode and lengths whose TTFT and TPOT, rounded as the copy prints them, are the copy's.
    Two runs do not agree in both to a hundredth of a millisecond by chance. Such a row takes
    the run's source (its client, its date and so its script's options), keeps its own
    columns and concurrency, and ``_run`` names the run for the row's note."""
    def key(r: dict[str, str]) -> tuple[str, ...]:
        return tuple((r.get(c) or "").strip() for c in ("system", "backend", "mode", "isl",
                                                        "osl"))
    runs: dict[tuple[str, ...], list[dict[str, str]]] = {}
    for r in rows:
        if _INFERENCEMAX.search((r.get("silicon_data_source") or "").strip()):
            runs.setdefault(key(r), []).append(r)
    if not runs:
        return rows
    out = []
    for r in rows:
        src = (r.get("silicon_data_source") or "").strip()
        run = None
        if not _INFERENCEMAX.search(src):
            try:
                (t, td), (p, pd) = (_printed(r.get("silicon_ttft_ms") or ""),
                                    _printed(r.get("silicon_tpot_ms") or ""))
            except ValueError:
                out.append(r)
                continue
            same = [x for x in runs.get(key(r), []) if _same_printed(x, t, td, p, pd)]
            run = same[0] if same and (td or pd) else None
        if run is None:
            out.append(r)
            continue
        m = re.search(r"silicon_concurrency=(\d+)", src)
        theirs = run["silicon_data_source"]
        if m:
            theirs = re.sub(r"silicon_concurrency=\d+", f"silicon_concurrency={m.group(1)}",
                            theirs)
        out.append({**r, "silicon_data_source": theirs, "_source": src,
                    "_run": f"{run['id']} (line {run.get('_line', '?')})"})
    return out


# A disaggregated role's columns, copied from a twin row that records them.
ROLE_COLUMNS = tuple(f"{role}_{c}" for role in ("prefill", "decode") for c in (
    "batch_size", "num_workers", "tp_size", "pp_size", "attention_dp_size", "moe_tp_size",
    "moe_ep_size"))


def _measurement(r: dict[str, str]) -> tuple[str, ...]:
    return tuple((r.get(c) or "").strip() for c in (
        "system", "backend", "mode", "isl", "osl", "silicon_ttft_ms", "silicon_tpot_ms"))


def complete_from_twins(rows: list[dict[str, str]]) -> list[dict[str, str]]:
    """Rows whose disaggregated deployment lacks worker counts, completed from a twin.

    A collection exported twice (AIConfigurator's file holds a database dump and the CSV
    dumps of the same benchmark runs) repeats a measurement: the same system, engine, mode,
    lengths and the same mean TTFT and TPOT to the last digit. Two runs do not agree to 16
    significant digits by chance, so such a row is the same run as its twin, and where the
    twin records the deployment (both roles' worker counts and layouts) the row takes it.
    The row keeps its own model, precision and concurrency; ``_twin`` names the twin's id
    and line for the row's note."""
    recorded: dict[tuple[str, ...], dict[str, str]] = {}
    for r in rows:
        if ((r.get("mode") or "").strip() == "disagg"
                and (r.get("prefill_num_workers") or "").strip()
                and (r.get("decode_num_workers") or "").strip()):
            recorded.setdefault(_measurement(r), r)
    if not recorded:
        return rows
    out = []
    for r in rows:
        twin = None
        if ((r.get("mode") or "").strip() == "disagg"
                and not ((r.get("prefill_num_workers") or "").strip()
                         and (r.get("decode_num_workers") or "").strip())):
            twin = recorded.get(_measurement(r))
        if twin is None:
            out.append(r)
            continue
        r = dict(r)
        for c in ROLE_COLUMNS:
            r[c] = twin.get(c, "")
        r["_twin"] = f"{twin['id']} (line {twin['_line']})"
        out.append(r)
    return out


LAYOUTS_FILE = "inferencemax_layouts.csv"
SETTINGS_FILE = "inferencemax_engine_settings.csv"


@lru_cache(maxsize=1)
def load_engine_settings() -> tuple[dict[str, str], ...]:
    """The engine options InferenceMAX's scripts set beyond the engine's defaults, by script,
    dates and the runs they applied to (``validation/inferencemax_engine_settings.csv``,
    transcribed from the scripts with the commit that introduced them)."""
    with (data_dir() / SETTINGS_FILE).open(newline="") as f:
        return tuple(csv.DictReader(f))


@lru_cache(maxsize=64)
def _options(settings: tuple[str, ...]) -> dict[str, int | float]:
    """``NAME=VALUE`` pairs as an engine update (a value with a point is a float)."""
    out: dict[str, int | float] = {}
    for pair in settings:
        name, _, value = pair.partition("=")
        out[name] = float(value) if "." in value else int(value)
    return out


def _in_force(e: dict[str, str], day: str) -> bool:
    """An entry held on ``day`` (ISO date): from ``valid_from``, until before ``valid_to``
    (empty: still held)."""
    return e["valid_from"] <= day and (not e["valid_to"] or day < e["valid_to"])


# Settings of the file that are not engine options: the MTP draft tokens a script ran, without
# and with attention data parallelism.
SPEC_SETTINGS = ("draft_tokens", "draft_tokens_adp")
# A configuration entry that ran its EP group data-parallel (vLLM's `{tp: t, ep: t, dp-attn:
# true}`: --tensor-parallel-size 1 --data-parallel-size t --enable-expert-parallel), which
# the file records as it records `{tp: t, ep: t}` (``attention_dp=t``)
LAYOUT_SETTINGS = ("attention_dp",)
# A token budget a script computes from the run: TensorRT-LLM's DeepSeek scripts pass
# --max_num_tokens $(( ($CONC + $ISL + 64 + 63) / 64 * 64 )) (``budget_clients_isl=64``: the
# clients and the nominal prompt plus 64, rounded up to 64), from 2026-01-21 at least 8,192
# (``budget_floor``)
BUDGET_SETTINGS = ("budget_clients_isl", "budget_floor")


def _script_pairs(r: dict[str, str]) -> tuple[list[str], set[str]]:
    """The ``NAME=VALUE`` settings InferenceMAX's scripts applied to the row's run on the day
    it was measured (``load_engine_settings``), and the scripts. Those scripts start one
    aggregated server (``benchmarks/*.sh``); a disaggregated run, or one the file labels
    aggregated but the configuration shows disaggregated (``complete_from_layouts``), was
    launched from Dynamo's recipes instead and takes none of them."""
    src = (r.get("silicon_data_source") or "").strip()
    day = _MEASURED.search(src)
    if day is None or not _INFERENCEMAX.search(src) or (r.get("mode") or "").strip() != "agg":
        return [], set()
    col = {k: (r.get(k) or "").strip().lower() for k in (
        "system", "backend", "model_path", "precision", "isl", "osl", "backend_version")}
    tp = _int(r, "tp_size", 1) or 1
    clients = concurrency(r) or 1
    pairs: list[str] = []
    scripts: set[str] = set()
    for e in load_engine_settings():
        if not _in_force(e, day.group(1)):
            continue
        if (e["system"], e["backend"], e["precision"]) != (
                col["system"], col["backend"], col["precision"]):
            continue
        if col["model_path"] not in e["model_paths"].lower().split():
            continue
        if (e["isl"] and e["isl"] != col["isl"]) or (e["osl"] and e["osl"] != col["osl"]):
            continue
        if e["tp_below"] and tp >= int(e["tp_below"]):
            continue
        if e.get("tp_from") and tp < int(e["tp_from"]):
            continue
        # Options a script picks by the client count (SGLang's recv interval by CONC)
        if e.get("clients_from") and clients < int(e["clients_from"]):
            continue
        if e.get("clients_below") and clients >= int(e["clients_below"]):
            continue
        cap = _options(tuple(e["settings"].split())).get("max_batch")
        if cap is not None and clients > cap:
            # The scripts cap the server at the most clients they sweep ("as the maximum
            # concurrency", dsr1_fp8_b200.sh): a run with more clients came from elsewhere
            continue
        if e.get("versions") and col["backend_version"] not in e["versions"].lower().split():
            continue
        pairs += e["settings"].split()
        scripts.add(f"{e['script']} (InferenceX {e['commit']})")
    return pairs, scripts


def script_settings(r: dict[str, str], engine: ServingEngine) -> tuple[ServingEngine, str]:
    """The row's engine with the options its InferenceMAX script set on the day it was
    measured (``load_engine_settings``), and a note naming them ("" when none applies)."""
    pairs, scripts = _script_pairs(r)
    pairs = [p for p in pairs if p.partition("=")[0] not in SPEC_SETTINGS + LAYOUT_SETTINGS]
    rule = _options(tuple(p for p in pairs if p.partition("=")[0] in BUDGET_SETTINGS))
    pairs = [p for p in pairs if p.partition("=")[0] not in BUDGET_SETTINGS]
    if "budget_clients_isl" in rule:
        extra = int(rule["budget_clients_isl"])
        budget = -(-((concurrency(r) or 1) + (_int(r, "isl", 0) or 0) + extra) // 64) * 64
        pairs.append(f"max_num_batched_tokens={max(budget, int(rule.get('budget_floor', 0)))}")
    if not pairs:
        return engine, ""
    return engine.model_copy(update=_options(tuple(pairs))), (
        f"engine options InferenceMAX's script set: {', '.join(pairs)} "
        f"({', '.join(sorted(scripts))})")


def script_draft_tokens(r: dict[str, str], adp: bool) -> tuple[int, str]:
    """The MTP draft tokens the row's InferenceMAX script ran (0: none) and a note."""
    pairs, scripts = _script_pairs(r)
    found = dict(p.partition("=")[::2] for p in pairs
                 if p.partition("=")[0] in SPEC_SETTINGS)
    k = int(found.get("draft_tokens_adp" if adp else "draft_tokens") or 0)
    if not k:
        return 0, ""
    return k, (f"MTP with {k} draft token(s) as InferenceMAX's script ran it "
               f"({', '.join(sorted(scripts))}), each accepted with p = {MTP_ACCEPTANCE:g}")


def script_attention_dp(r: dict[str, str], par: ServingParallel
                        ) -> tuple[ServingParallel, str]:
    """The layout of a `{tp: t, ep: t}` row (t GPUs, TP t, EP t) whose configuration ran the
    group data-parallel on the row's day and client count (``attention_dp=t``): TP 1 x
    attention-DP t, EP t, each rank its own scheduler and batch. Other rows as given."""
    pairs, scripts = _script_pairs(r)
    k = int(_options(tuple(p for p in pairs if p.partition("=")[0] in LAYOUT_SETTINGS))
            .get("attention_dp", 0))
    if not k or (par.tp, par.adp, par.moe_tp, par.moe_ep) != (k, 1, 1, k):
        return par, ""
    return (ServingParallel(tp=1, pp=par.pp, adp=k, moe_tp=1, moe_ep=k),
            f"tp {k} x EP {k} run data-parallel: attention-DP {k}, EP {k} "
            f"({', '.join(sorted(scripts))})")


def load_layouts(path: Path | None = None) -> list[dict[str, str]]:
    """InferenceMAX's disaggregated deployments by date (``scripts/import_inferencemax_layouts.py``
    writes the file from the benchmark's own configuration history)."""
    p = path if path is not None else data_dir() / LAYOUTS_FILE
    with p.open(newline="") as f:
        return list(csv.DictReader(f))


def _layout_roles(e: dict[str, str]) -> dict[str, str]:
    """A configuration entry as the file's role columns: attention data parallel over the
    worker's GPUs (``dp-attn``) is tp 1 x attention-DP tp, as the file records such rows."""
    out = {}
    for role in ("prefill", "decode"):
        tp, ep = int(e[f"{role}_tp"]), int(e[f"{role}_ep"])
        dpa = e[f"{role}_dp_attn"] == "yes"
        if tp == 1 and ep > 1:
            # GB200's SGLang entries: the worker's GPUs given as EP, with attention DP over
            # them or TP ("EP = (NODES x 4 GPUs) / num-workers", InferenceX a27b37e5c)
            tp = ep
        out.update({f"{role}_num_workers": e[f"{role}_workers"],
                    f"{role}_tp_size": "1" if dpa else str(tp),
                    f"{role}_pp_size": "1",
                    f"{role}_attention_dp_size": str(tp) if dpa else "1",
                    f"{role}_moe_tp_size": str(max(1, tp // max(ep, 1))),
                    f"{role}_moe_ep_size": str(ep)})
    return out


def _recipe_roles(e: dict[str, str], day: str) -> dict[str, str]:
    """``_layout_roles`` with each role's attention data parallelism and expert parallelism
    as the entry's srt-slurm recipe in force on ``day`` sets them (TensorRT-LLM's
    ``enable_attention_dp`` and ``moe_expert_parallel_size``, SGLang's
    ``enable-dp-attention`` and ``expert-parallel-size``), where the two disagree: the
    recipe is what the workers ran. InferenceMAX's H200 TensorRT-LLM entries gave their
    context workers ``dp-attn: false`` while their recipes (``recipes/trtllm/h200/...``,
    from 2026-01-27) enabled it, and its B200 FP8 entries EP 8 for context workers whose
    recipes set ``moe_expert_parallel_size: 1``; the configuration was corrected to the
    recipes on 2026-03-23 (InferenceX f316a0ef6). The worker's GPUs stay the entry's."""
    out = _layout_roles(e)
    for role, (adp, ep) in _recipe_changes(e, day).items():
        gpus = int(out[f"{role}_tp_size"]) * int(out[f"{role}_attention_dp_size"])
        if adp is not None:
            out[f"{role}_tp_size"] = "1" if adp else str(gpus)
            out[f"{role}_attention_dp_size"] = str(gpus) if adp else "1"
        if ep is not None:
            out[f"{role}_moe_ep_size"] = str(ep)
            out[f"{role}_moe_tp_size"] = str(gpus // ep)
    return out


def _recipe_changes(e: dict[str, str], day: str
                    ) -> dict[str, tuple[bool | None, int | None]]:
    """Per role, what the entry's recipe (in force on ``day``) sets otherwise than the
    entry: attention data parallel or not, and the expert-parallel size (None where it
    agrees or says nothing). Read only where the recipe's worker has the entry's GPUs (its
    stated TP): a recipe rewritten under the same name (srt-slurm's GLM-5 GB300 variants
    on 2026-07-30) does not describe an entry written for its earlier form. A worker of
    one GPU has no attention layout to change; an EP that does not divide the worker's GPUs
    is not read."""
    cfg = entry_recipe(e, day)  # {} where a stated TP is not the entry's
    out: dict[str, tuple[bool | None, int | None]] = {}
    for role in ("prefill", "decode"):
        if not cfg.get(f"{role}_tp"):
            continue
        gpus = _worker_gpus(e, role)
        said = cfg.get(f"{role}_attention_dp", "")
        adp = (said == "yes" if said in ("yes", "no") and gpus > 1
               and (said == "yes") != (e[f"{role}_dp_attn"] == "yes") else None)
        raw = cfg.get(f"{role}_ep", "")
        ep = int(raw) if raw.isdigit() and int(raw) > 0 else None
        if ep is not None and (ep == int(e[f"{role}_ep"]) or gpus % ep):
            ep = None
        if adp is not None or ep is not None:
            out[role] = (adp, ep)
    return out


def _recipe_note(e: dict[str, str], day: str) -> str:
    """What of the row's layout comes from the recipe over the entry (``_recipe_changes``),
    for its note; "" where nothing does."""
    said = []
    for role, (adp, ep) in _recipe_changes(e, day).items():
        if adp is not None:
            said.append(f"{role} attention {'data' if adp else 'tensor'} parallel")
        if ep is not None:
            said.append(f"{role} experts over EP {ep}")
    if not said:
        return ""
    return f"; {'; '.join(said)} as its recipe runs it (the configuration said otherwise)"


# TensorRT-LLM recipes name the generation workers' max batch size, ``ctx1_gen4_tep8_batch8_
# eplb0_mtp3.yaml``. It binds each attention-DP rank (each runs its own scheduler): the
# configuration runs ``gen1_dep32_batch256`` at 8,192 clients = 32 x 256, ``gen4_tp8_batch32``
# at 128 = 4 x 32.
_RECIPE_BATCH = re.compile(r"_gen\d+_[a-z]+\d+_batch(\d+)_")


def _layout_index(table: list[dict[str, str]]) -> dict[tuple[str, ...], list[dict[str, str]]]:
    """The configuration's entries by what a row records of its run: system, engine, model
    (each Hugging Face id the entry covers), precision, input and output lengths."""
    index: dict[tuple[str, ...], list[dict[str, str]]] = {}
    for e in table:
        if any(e[f"{role}_dp_attn"] == "yes" and e[f"{role}_tp"] == "1"
               and e[f"{role}_ep"] == "1" for role in ("prefill", "decode")):
            # Attention data parallel over one GPU: a placeholder (early SGLang entries
            # keep the layout in the recipe they name), not a deployment. GB200's SGLang
            # entries give such workers their GPUs as EP (``ep_from``: the importer's
            # corrected_ep), and those are read.
            continue
        for m in e["model_paths"].lower().split():
            index.setdefault((e["system"], e["backend"], m, e["precision"], e["isl"],
                              e["osl"]), []).append(e)
    return index


def _gpus(e: dict[str, str]) -> int:
    """The GPUs of a configuration entry's deployment: both roles' workers x their GPUs."""
    roles = _layout_roles(e)
    return sum(int(roles[f"{role}_num_workers"]) * int(roles[f"{role}_tp_size"])
               * int(roles[f"{role}_attention_dp_size"]) for role in ("prefill", "decode"))


RECIPES_FILE = "srt_slurm_recipes.csv"


@lru_cache(maxsize=1)
def load_recipes() -> dict[str, tuple[dict[str, str], ...]]:
    """The SGLang and TensorRT-LLM settings of InferenceMAX's srt-slurm recipes, every
    version by date (``validation/srt_slurm_recipes.csv``,
    ``scripts/import_srt_slurm_recipes.py``)."""
    out: dict[str, list[dict[str, str]]] = {}
    with (data_dir() / RECIPES_FILE).open(newline="") as f:
        for r in csv.DictReader(f):
            out.setdefault(r["recipe"], []).append(r)
    return {k: tuple(sorted(v, key=lambda r: r["date"])) for k, v in out.items()}


def recipe_settings(recipe: str, day: str) -> dict[str, str]:
    """The recipe's settings in force on ``day``: its latest version dated on or before
    it, else its earliest ({} for a recipe the file does not hold)."""
    found = load_recipes().get(recipe)
    if not found:
        return {}
    before = [r for r in found if r["date"] <= day]
    return before[-1] if before else found[0]


def entry_recipe(e: dict[str, str], day: str) -> dict[str, str]:
    """The settings of a configuration entry's recipe in force on ``day`` (``{}`` without
    one), or ``{}`` where the recipe then states a worker other than the entry's (a role's
    TP, where stated, not the entry's GPUs per worker): srt-slurm rewrote its GLM-5 GB300
    variants under the same names on 2026-07-30, and an entry written for their earlier
    form takes nothing from the new one."""
    cfg = recipe_settings(e.get("recipe") or "", day)
    for role in ("prefill", "decode"):
        stated = cfg.get(f"{role}_tp", "")
        if stated and stated != str(_worker_gpus(e, role)):
            return {}
    return cfg


def _worker_gpus(e: dict[str, str], role: str) -> int:
    """GPUs of one of a configuration entry's workers in ``role`` (its TP, or its EP where
    GB200's SGLang entries give the GPUs as EP, ``_layout_roles``)."""
    return max(int(e[f"{role}_tp"]), int(e[f"{role}_ep"]))


def _max_batch(e: dict[str, str], role: str, day: str = "") -> str:
    """A role's max batch per attention-DP rank in a configuration entry: its column, else
    its srt-slurm recipe's (TensorRT-LLM's ``max_batch_size``, per rank; SGLang's
    ``max-running-requests`` over the attention-DP ranks, as its scheduler divides it:
    per_dp_max_running_requests = max_running_requests // dp_size), else (decode) the number
    a TensorRT-LLM recipe's name carries; "" where none says."""
    if e.get(f"{role}_max_batch"):
        return e[f"{role}_max_batch"]
    cfg = entry_recipe(e, day)
    if cfg.get(f"{role}_max_running"):
        return str(max(1, int(cfg[f"{role}_max_running"]) // int(cfg[f"{role}_dp"] or 1)))
    batch = _RECIPE_BATCH.search(e.get("recipe") or "") if role == "decode" else None
    if batch:
        return batch.group(1)
    return ""


def _max_tokens(e: dict[str, str], day: str = "") -> str:
    """The context workers' token budget an entry's TensorRT-LLM recipe sets
    (``max_num_tokens``); "" where none says. SGLang recipes' ``chunked-prefill-size`` is
    not taken: with it the disaggregated SGLang rows' TTFT, already short, came out shorter
    (B200 58.6 -> 60.9 %, GB200 47.0 -> 51.3 % MAPE)."""
    return entry_recipe(e, day).get("prefill_max_tokens", "")


def _mtp_depth(e: dict[str, str], day: str) -> str:
    """MTP draft tokens of an entry's decode workers: the number its TensorRT-LLM recipe's
    name carries (``_mtp3``), or its SGLang recipe's ``speculative-num-steps``; ""."""
    m = _RECIPE_MTP.search(e.get("recipe") or "")
    if m:
        return m.group(1)
    if e["backend"] == "sglang":
        return entry_recipe(e, day).get("decode_draft_tokens", "")
    return ""


def _entry_clients(e: dict[str, str], day: str) -> list[str]:
    """The client counts a configuration entry ran: its own list, and where it names an
    srt-slurm recipe, the ones the recipe's benchmark section runs (InferenceMAX's H200
    TensorRT-LLM entry lists 4 for ``c4_ctx1_gen11_...``, whose benchmark runs 44)."""
    return e["concurrencies"].split() + entry_recipe(e, day).get("concurrencies", "").split()


def _role_ints(d: dict[str, str]) -> tuple[int, ...]:
    """Both roles' workers, TP, attention-DP, MoE TP and EP (empty or 0 read as 1)."""
    return tuple(int(float(d.get(k) or 0) or 1) for k in _ROLE_LAYOUT)


def _matching(index: dict[tuple[str, ...], list[dict[str, str]]], r: dict[str, str],
              clients: int, day: str, gpus: int | None = None,
              roles: tuple[int, ...] | None = None) -> list[dict[str, str]]:
    """The configuration's entries in force on ``day`` that ran the row's client count on
    what the row records (``_layout_of``)."""
    col = {k: (r.get(k) or "").strip() for k in (
        "system", "backend", "model_path", "precision", "isl", "osl", "prefill_tp_size",
        "decode_tp_size")}
    return [e for e in index.get((col["system"], col["backend"], col["model_path"].lower(),
                                  col["precision"], col["isl"], col["osl"]), [])
            if _in_force(e, day) and str(clients) in _entry_clients(e, day)
            and (_gpus(e) == gpus if gpus is not None else
                 roles in (_role_ints(_layout_roles(e)), _role_ints(_recipe_roles(e, day)))
                 if roles is not None else
                 e["prefill_tp"] == col["prefill_tp_size"]
                 and e["decode_tp"] == col["decode_tp_size"])]


def _deployment(e: dict[str, str], day: str) -> tuple[tuple[str, str], ...]:
    """What an entry deploys: its role columns. Entries that ran one deployment with and
    without MTP give it once, its speculation taken where they agree on it
    (``_entries_overlay``): split in two, with MTP at each recipe's depth, the predictions
    of the rows they cover move away from the measurements (TTFT / TPOT MAPE 31.95 /
    15.93 -> 32.00 / 15.94 % shipped, 31.62 / 18.40 -> 32.04 / 18.53 % held out)."""
    return tuple(sorted(_recipe_roles(e, day).items()))


def _layout_of(index: dict[tuple[str, ...], list[dict[str, str]]], r: dict[str, str],
               clients: int, day: str, gpus: int | None = None,
               roles: tuple[int, ...] | None = None) -> dict[str, str]:
    """The row's role columns and notes from the configuration in force on ``day``, or {}
    where no entry, or more than one deployment, matches (``_layout_candidates`` gives
    those). ``gpus``: match on the deployment's GPU count instead of the row's prefill and
    decode TP (a disaggregated run the file records as aggregated,
    ``complete_from_layouts``); ``roles``: on the whole deployment (``_role_ints``) a row
    records."""
    found = _matching(index, r, clients, day, gpus, roles)
    if len({_deployment(e, day) for e in found}) != 1:
        return {}
    return _entries_overlay(found, r, day, gpus)


def _layout_candidates(index: dict[tuple[str, ...], list[dict[str, str]]],
                       r: dict[str, str], clients: int, day: str,
                       gpus: int | None = None) -> list[dict[str, str]]:
    """The deployments (``_deployment``) the configuration in force on ``day`` ran at the
    row's client count on what the row records, one overlay each (``_layout_of``'s), where
    there are two or more; [] otherwise."""
    groups: dict[tuple[tuple[str, str], ...], list[dict[str, str]]] = {}
    for e in _matching(index, r, clients, day, gpus):
        groups.setdefault(_deployment(e, day), []).append(e)
    if len(groups) < 2:
        return []
    return [_entries_overlay(g, r, day, gpus) for g in groups.values()]


def _entries_overlay(found: list[dict[str, str]], r: dict[str, str], day: str,
                     gpus: int | None) -> dict[str, str]:
    """The role columns and notes of configuration entries that all give one deployment
    (``_layout_of``)."""
    e = found[0]
    out = _recipe_roles(e, day)
    for role in ("prefill", "decode"):
        batches = {_max_batch(x, role, day) for x in found}
        if len(batches) == 1 and "" not in batches:
            out[f"_{role}_max_batch"] = batches.pop()
    budgets = {_max_tokens(x, day) for x in found}
    if len(budgets) == 1 and "" not in budgets:
        out["_prefill_max_tokens"] = budgets.pop()
    intervals = {entry_recipe(x, day).get("decode_stream_interval", "")
                 for x in found}
    if len(intervals) == 1 and "" not in intervals:
        out["_decode_stream_interval"] = intervals.pop()
    spec = sorted({x["spec_decoding"] for x in found})
    depths = {_mtp_depth(x, day) for x in found}
    mtp = spec == ["mtp"] and len(depths) == 1 and "" not in depths
    if mtp:
        out["_mtp"] = depths.pop()
    out["_layout"] = (f"InferenceMAX's configuration {e['config']} on {day} "
                      f"({Path(e.get('file') or 'nvidia-master.yaml').name} at {e['commit']}, "
                      f"{e['recipe'] or 'no recipe named'})"
                      + (f"; its EP as the configuration corrected it at {e['ep_from']}"
                         if e.get("ep_from") else "")
                      + _recipe_note(e, day)
                      + ("" if spec == ["none"] else
                         f"; MTP with {out['_mtp']} draft token(s) (its recipe), each accepted "
                         f"with p = {MTP_ACCEPTANCE:g}" if mtp else
                         f"; speculative decoding {' or '.join(spec)}{SPEC_OPEN_NOTE}"))
    if gpus is not None:
        mode = (r.get("mode") or "").strip()
        out.update(mode="disagg", _file_mode=mode, _layout=out["_layout"] + (
            f"; the file records this disaggregated run as aggregated, with its {gpus} GPUs "
            "as TP" if mode == "agg" else
            f"; the file records both roles' TP as the deployment's {gpus} GPUs"))
    return out


def complete_from_layouts(rows: list[dict[str, str]],
                          layouts: list[dict[str, str]] | None = None
                          ) -> list[dict[str, str]]:
    """InferenceMAX rows whose disaggregated deployment the file does not record, completed
    from the benchmark's own configuration on the day they were measured.

    A row matches an entry of ``inferencemax_layouts.csv`` on what it records: system,
    engine, model, precision, input and output lengths, its client count among the entry's,
    the measured date within the entry's validity, and

    - for a disaggregated row without worker counts, the prefill and decode TP (the file's
      TP columns hold the configuration's per-worker TP);
    - for a row the file labels aggregated, its GPUs (TP x attention-DP x PP) equal to the
      entry's whole deployment. AIConfigurator's dumps record GB200's early Dynamo runs so:
      ``tp_size`` 36 for one 4-GPU context worker and four TEP8 generation workers. No
      aggregated run of InferenceMAX used 36 GPUs, and the row becomes that disaggregated
      deployment (``_file_mode`` keeps the file's label for the table's partitions).

    Where every matching entry gives the same deployment (worker counts, TP, EP, attention
    data parallelism), the row takes it; where entries disagree, or none matches, the row is
    left as it was. ``_layout`` names the entry for the row's note; ``_decode_max_batch``
    and ``_prefill_max_batch`` the workers' max batch sizes where the entry gives them."""
    if not any(_unrecorded(r) or _recorded_disagg(r) for r in rows):
        return rows
    index = _layout_index(load_layouts() if layouts is None else layouts)
    out = []
    for r in rows:
        src = (r.get("silicon_data_source") or "").strip()
        measured = _MEASURED.search(src)
        day = None if measured is None else measured.group(1)
        if day is not None and (r.get("mode") or "").strip() == "disagg":
            # A disaggregated run measured before the configuration first named its
            # benchmark (a pull request's) reads that first version. Not a run the file
            # labels aggregated: it reads as disaggregated only where no aggregated run of
            # the configuration in force used its GPUs, which says nothing before then
            day = _first_named(index, r, day) or day
        c = (concurrency(r) if _unrecorded(r) and day is not None and _INFERENCEMAX.search(src)
             else None)
        found: dict[str, str] = {}
        if c is not None and day is not None:
            if (r.get("mode") or "").strip() == "agg":
                gpus = 1
                for k in ("tp_size", "attention_dp_size", "pp_size"):
                    gpus *= _int(r, k, 1) or 1
                found = _layout_of(index, r, c, day, gpus)
                if not found and (cands := _layout_candidates(index, r, c, day, gpus)):
                    found = {"_candidates": json.dumps(cands)}
            else:
                found = _disagg_layout(index, r, c, day)
        if not found and day is not None and _recorded_disagg(r) and _INFERENCEMAX.search(src):
            found = _recipe_limits(index, r, day)
        out.append({**r, **found} if found else r)
    return out


# How long before its configuration first named it a benchmark's run is read by that first
# version: the runs of a pull request before it is merged (InferenceMAX's Kimi-K2.5 GB200
# TensorRT-LLM runs measured on 2026-04-02, the entry merged on 2026-04-18)
PRE_MERGE_DAYS = 31


def _first_named(index: dict[tuple[str, ...], list[dict[str, str]]], r: dict[str, str],
                 day: str) -> str:
    """For a run on ``day`` whose benchmark no configuration entry in force names (system,
    engine, model, precision, lengths): the day the first entry naming it came into force,
    within PRE_MERGE_DAYS after; "" otherwise."""
    col = {k: (r.get(k) or "").strip() for k in (
        "system", "backend", "model_path", "precision", "isl", "osl")}
    entries = index.get((col["system"], col["backend"], col["model_path"].lower(),
                         col["precision"], col["isl"], col["osl"]), [])
    if any(_in_force(e, day) for e in entries):
        return ""
    later = sorted(e["valid_from"] for e in entries if e["valid_from"] > day)
    try:
        gap = (date.fromisoformat(later[0]) - date.fromisoformat(day)).days if later else None
    except ValueError:
        return ""
    return later[0] if gap is not None and gap <= PRE_MERGE_DAYS else ""


def _disagg_layout(index: dict[tuple[str, ...], list[dict[str, str]]], r: dict[str, str],
                   clients: int, day: str) -> dict[str, str]:
    """A disaggregated row's deployment from the configuration in force on ``day``: the
    entry matching its prefill and decode TP, or, where the file gives both roles' TP as
    one number, the deployment's GPUs; where several deployments match its TP, all of them
    (``_candidates``); {} where none does."""
    found = _layout_of(index, r, clients, day)
    if not found and (cands := _layout_candidates(index, r, clients, day)):
        return {"_candidates": json.dumps(cands)}
    both = (r.get("prefill_tp_size") or "").strip()
    if not found and both == (r.get("decode_tp_size") or "").strip():
        gpus = _int(r, "prefill_tp_size")
        found = _layout_of(index, r, clients, day, gpus)
        if not found and (cands := _layout_candidates(index, r, clients, day, gpus)):
            found = {"_candidates": json.dumps(cands)}
    return found


# The role columns a configuration entry gives (``_layout_roles``), as integers
_ROLE_LAYOUT = tuple(f"{role}_{c}" for role in ("prefill", "decode") for c in (
    "num_workers", "tp_size", "attention_dp_size", "moe_tp_size", "moe_ep_size"))


def _recorded_disagg(r: dict[str, str]) -> bool:
    """A disaggregated row whose worker counts the file (or a twin) records."""
    return (r.get("mode") or "").strip() == "disagg" and not _open_workers(r)


def _recipe_limits(index: dict[tuple[str, ...], list[dict[str, str]]], r: dict[str, str],
                   day: str) -> dict[str, str]:
    """For a disaggregated InferenceMAX row that records its deployment: what the recipe of
    the configuration entry in force adds (the workers' max batch sizes, MTP), where that
    entry deploys exactly the recorded workers and layouts; {} otherwise. The file records
    the GPUs but not the recipe's batch limits: TensorRT-LLM's ``ctx1_gen15_tep4_batch8`` caps
    fifteen generation workers at 120 sequences, so 135 clients queue for them."""
    c = concurrency(r)
    found = {} if c is None else _layout_of(index, r, c, day, roles=_role_ints(r))
    if not found:
        return {}
    keep = {k: v for k, v in found.items() if k.startswith("_") and k != "_layout"}
    # The recorded layout came from the configuration; where the recipe ran another
    # attention layout or expert parallelism (``_recipe_roles``), the row takes the recipe's
    keep.update({k: found[k] for k in _RECIPE_COLUMNS if int(found[k]) != (_int(r, k, 1) or 1)})
    if not keep:
        return {}
    keep["_recipe"] = found["_layout"]
    return keep


_RECIPE_COLUMNS = tuple(f"{role}_{c}" for role in ("prefill", "decode")
                        for c in ("tp_size", "attention_dp_size", "moe_tp_size", "moe_ep_size"))


def _unrecorded(r: dict[str, str]) -> bool:
    """A row whose disaggregated deployment the file may not record: disaggregated without
    worker counts, or labelled aggregated (``complete_from_layouts``); not one a twin
    completed."""
    if r.get("_twin"):
        return False
    return _open_workers(r) or (r.get("mode") or "").strip() == "agg"


def _open_workers(r: dict[str, str]) -> bool:
    """A disaggregated row that does not record both roles' worker counts."""
    return ((r.get("mode") or "").strip() == "disagg"
            and not ((r.get("prefill_num_workers") or "").strip()
                     and (r.get("decode_num_workers") or "").strip()))


def _sweep_key(r: dict[str, str]) -> tuple[str, ...]:
    """Everything that identifies a benchmark run but its client count: the source without
    its ``silicon_concurrency`` and every deployment and workload column."""
    src = re.sub(r"silicon_concurrency=\d+;?\s*", "", r.get("silicon_data_source") or "")
    return (src.strip(), *((r.get(c) or "").strip() for c in COLUMNS
                           if c not in ("id", "silicon_data_source", "silicon_ttft_ms",
                                        "silicon_tpot_ms")))


def mark_sweeps(rows: list[dict[str, str]]) -> list[dict[str, str]]:
    """Disaggregated rows without worker counts, marked with their sweep's highest client
    count (``_sweep_clients``).

    A benchmark sweeps the client count over one deployment: every configuration of the
    file that records its worker counts (``config_id`` in the source) keeps the same workers
    at every concurrency it was measured at. Rows that differ only in their client count are
    one sweep, so their unrecorded workers are sized once, for the sweep's highest
    concurrency (``resolve``), not anew for each row."""
    top: dict[tuple[str, ...], int] = {}
    for r in rows:
        if _open_workers(r) and not r.get("_twin"):
            c = concurrency(r)
            if c is not None:
                k = _sweep_key(r)
                top[k] = max(top.get(k, 0), c)
    if not top:
        return rows
    out = []
    for r in rows:
        c = top.get(_sweep_key(r)) if _open_workers(r) and not r.get("_twin") else None
        if c is not None:
            r = dict(r)
            r["_sweep_clients"] = str(c)
        out.append(r)
    return out


def _int(r: dict[str, str], col: str, default: int | None = None, low: int = 0,
         high: int | None = None) -> int | None:
    v = (r.get(col) or "").strip()
    if not v:
        return default
    try:
        x = float(v)
    except ValueError:
        raise InputError(f"line {r.get('_line', '?')}: {col}: {v!r} is not a number",
                         field=col) from None
    if not math.isfinite(x) or x != int(x) or x < low:
        raise InputError(f"line {r.get('_line', '?')}: {col}: {v!r} is not an integer >= "
                         f"{low}", field=col)
    if high is not None and x > high:
        raise InputError(f"line {r.get('_line', '?')}: {col}: {v!r} is more than {high:,}",
                         field=col)
    return int(x)


def _float(r: dict[str, str], col: str) -> float:
    v = (r.get(col) or "").strip()
    try:
        x = float(v)
    except ValueError:
        raise InputError(f"line {r.get('_line', '?')}: {col}: {v!r} is not a number",
                         field=col) from None
    if not x > 0 or not math.isfinite(x):
        raise InputError(f"line {r.get('_line', '?')}: {col}: {v!r} must be positive",
                         field=col)
    return x


def _bad(r: dict[str, str], col: str, msg: str) -> InputError:
    return InputError(f"line {r.get('_line', '?')}: {col}: {msg}", field=col)


# --------------------------------------------------------------------------- a row


@dataclass(frozen=True)
class RowConfig:
    """What a row asks for: the deployment and its closed-loop benchmark."""

    dep: Deployment
    clients: int
    isl: int  # mean prompt length the client sent
    osl: int  # mean output length
    equal_lengths: bool = True  # every request isl / osl (no random-length client)
    rounds: float = 0.0  # requests per client, all clients starting at once (0: steady state)
    # The deployments the row may have run, when its benchmark's configuration ran several
    # at its client count and the row does not say which (``complete_from_layouts``): each
    # predicted, the row's prediction their geometric mean (``predict``); () for one
    alternatives: tuple[RowConfig, ...] = ()


def _lookup(cat: Catalog) -> tuple[dict[str, ModelArch], dict[str, Gpu]]:
    models = {h.lower(): m for m in cat.all("models") for h in m.hf_ids}
    gpus = {s.lower(): g for g in cat.all("gpus") for s in g.system_names}
    return models, gpus


def _vllm_dp_unrecorded(r: dict[str, str], prefix: str) -> bool:
    """A vLLM row whose attention-DP column is empty (recorded neither as 1 nor as more)."""
    return ((r.get("backend") or "").strip().lower() == "vllm"
            and not (r.get(prefix + "attention_dp_size") or "").strip())


def _parallel(r: dict[str, str], prefix: str, arch: ModelArch) -> tuple[ServingParallel, str]:
    """The role's layout, and a note when the row's columns were read by a rule."""
    # An empty column is 1; 0 is the file's "not used" for attention-DP and the MoE split
    # only (a GPU count of 0 for TP or PP is no layout)
    tp = _int(r, prefix + "tp_size", 1, low=1, high=MAX_GPUS) or 1
    pp = _int(r, prefix + "pp_size", 1, low=1, high=MAX_GPUS) or 1
    adp = _int(r, prefix + "attention_dp_size", 1, low=0, high=MAX_GPUS) or 1
    mtp = _int(r, prefix + "moe_tp_size", 0, low=0, high=MAX_GPUS) or 0
    mep = _int(r, prefix + "moe_ep_size", 0, low=0, high=MAX_GPUS) or 0
    if tp * adp * pp > MAX_GPUS or mtp * mep > MAX_GPUS:
        col = "moe_tp_size" if mtp * mep > MAX_GPUS else "attention_dp_size"
        raise _bad(r, prefix + col, f"the layout spans more than {MAX_GPUS:,} GPUs, the "
                   "planners' limit")
    if not arch.is_moe:
        return ServingParallel(tp=tp, pp=pp, adp=adp), ""
    if mtp == 0 and mep == 0:
        mtp, mep = tp * adp, 1
    mtp, mep = mtp or 1, mep or 1
    note = ""
    if (not prefix and mtp > 1 and mep > 1 and mtp == mep and mtp * mep == tp * adp
            and _INFERENCEMAX.search((r.get("silicon_data_source") or "").strip())):
        # AIConfigurator's dumps of InferenceMAX's aggregated runs record TP x EP as the
        # GPUs, TP as moe_tp and EP as moe_ep: the configuration's `{tp: 8, ep: 8}` is
        # recorded tp 64 (or attention-DP 64), moe_tp 8, moe_ep 8. Its engines run EP over
        # the TP ranks (TensorRT-LLM "EP=TP", SGLang --ep-size), so the run had mep GPUs.
        was = f"tp {tp} x attention-DP {adp} = moe_tp {mtp} x moe_ep {mep}"
        tp, adp, mtp = max(1, tp // mep), max(1, adp // mep), 1
        note = (f"{was}: InferenceMAX's TP x EP, read as {mep} GPUs (tp {tp} x attention-DP "
                f"{adp}, EP {mep})")
    elif (not prefix and mtp == 1 and adp == tp > 1 and mep == tp * adp
          and (r.get("backend") or "").strip().lower() == "vllm"
          and _INFERENCEMAX.search((r.get("silicon_data_source") or "").strip())):
        # The dumps record InferenceMAX's vLLM `{tp: t, ep: t}` (`vllm serve
        # --tensor-parallel-size t --enable-expert-parallel`: t GPUs, the experts spread over
        # the t TP ranks; minimaxm2.5_fp8_b200.sh, kimik2.5_fp4_b200.sh) as attention-DP t and
        # moe_ep t x t, with the batch per attention-DP rank; the same runs in the dated result
        # files record tp t, moe_ep t and the whole batch.
        was = f"tp {tp} x attention-DP {adp}, moe_ep {mep}"
        adp, mep = 1, tp
        note = (f"{was}: InferenceMAX's vLLM `{{tp: {tp}, ep: {tp}}}`, read as {tp} GPUs "
                f"(tp {tp}, EP {tp})")
    if (mtp * mep > tp * adp and (mtp * mep) % tp == 0 and _vllm_dp_unrecorded(r, prefix)):
        # vLLM's data parallelism: "by default, expert layers form a tensor parallel group
        # of size DP x TP" (vLLM docs, serving/data_parallel_deployment.md, v0.12.0 on). A
        # vLLM row that leaves attention-DP empty and records a MoE group k times its TP ran
        # k data-parallel engines of TP tp each, with the experts split over all of them.
        adp = mtp * mep // tp
        note = (f"{prefix}attention-DP not recorded, moe_tp {mtp} x moe_ep {mep} = {adp} x tp "
                f"{tp}: read as vLLM data parallelism {adp} (its MoE layers span DP x TP)")
    if mep > arch.experts:
        raise _bad(r, prefix + "moe_ep_size",
                   f"{mep} exceeds the {arch.experts} experts of {arch.id}")
    if (mtp * mep) % adp:
        raise _bad(r, prefix + "attention_dp_size",
                   f"tp {tp} x attention-DP {adp} = {tp * adp} GPUs, but the MoE layers use "
                   f"moe_tp {mtp} x moe_ep {mep} = {mtp * mep}: attention-DP must divide the "
                   "MoE group's GPUs")
    if mtp * mep != tp * adp:
        # Attention-DP divides the MoE group, but the columns name two GPU counts: the row
        # does not say which one ran, so it is not guessed.
        raise NotCoveredError(f"{prefix}tp {tp} x attention-DP {adp} = {tp * adp} GPUs for "
                              f"attention, but moe_tp {mtp} x moe_ep {mep} = {mtp * mep} for "
                              "the MoE layers: the row's layout columns disagree")
    if adp == 1 and arch.heads % tp:
        # Attention cannot be split tp ways over these heads: engines run it data-parallel
        # over the group (TRT-LLM enable_attention_dp, SGLang --enable-dp-attention), which
        # some collection runs record as tp only.
        tp, adp = 1, tp
        note = (f"{prefix}tp {adp} does not divide {arch.heads} heads: read as attention-DP "
                f"{adp}")
    return ServingParallel(tp=tp, pp=pp, adp=adp, moe_tp=mtp, moe_ep=mep), note


# InferenceMAX (SemiAnalysis InferenceX) runs its sweeps with a random-length client:
# `benchmark_serving.py --dataset-name random --random-range-ratio 0.8 --num-prompts
# $((CONC * 10)) --max-concurrency $CONC --request-rate inf --ignore-eos` (its README's
# "Benchmark Client Configuration" and benchmarks/*.sh), and that client draws each prompt's
# and each output's length uniformly from [int(0.8 L), L] (kimbochen/bench_serving
# benchmark_serving.py, sample_random_requests). Its rows are recognised by their source:
# the database dump of its workflow runs or its dated result files.
INFERENCEMAX_RANGE_RATIO = 0.8
# Its runs send ten prompts per client (`--num-prompts $((CONC * 10))`), every client's first
# at the same instant (`--request-rate inf`: the client creates every request at once and its
# `--max-concurrency` semaphore lets the first CONC through; InferenceX
# utils/bench_serving/benchmark_serving.py, after `--num-warmups $((2 * CONC))` warm-up
# requests it does not measure); Dynamo TensorRT-LLM's disaggregated sweeps send
# concurrency x multi_round prompts, multi_round 10 (TensorRT-LLM
# examples/disaggregated/slurm/benchmark/run_benchmark*.sh, submit.sh).
INFERENCEMAX_ROUNDS = 10.0

# DeepSeek-R1's multi-token-prediction module run as speculative decoding on InferenceMAX's
# prompts (random tokens in the chat template, `--use-chat-template`): the probability that
# a draft token is accepted, the same for every draft of the chain (Leviathan et al.'s
# geometric yield). No source gives it for such prompts: fitted, with
# `python scripts/fit_mtp_acceptance.py`, on the TPOT of the shipped rows that ran MTP (227
# rows: B200, GB200 and H100; TensorRT-LLM aggregated and disaggregated; with SGLang's 9
# EAGLE rows of the same module since read from its recipes, 236 rows, still 0.60). The DeepSeek-V3
# Technical Report (arXiv 2412.19437, section 5.4.3) gives 85-90 % for the second token on
# natural text, which the fit's grid takes as its top. Held out (serving_silicon_aic012.csv),
# B300's and GB300's MTP rows check it.
MTP_ACCEPTANCE = 0.6
# A recipe's MTP depth: ``ctx1_gen4_tep8_batch8_eplb0_mtp3.yaml``, ``..._mtp2_1600.yaml``.
_RECIPE_MTP = re.compile(r"_mtp(\d+)(?:_\d+)?(?:\.yaml)?$")
# Its client has sent `--num-warmups $((2 * CONC))` unmeasured requests before each run since
# 2026-01-21 (InferenceX d053ae24e, "upstream kimbochen/bench_serving, adding warmup"). Runs
# measured before that met a cold server with their opening wave (kernels compiled for new
# shapes on first use), which the model does not time: the table reports those rows apart.
INFERENCEMAX_WARMUP_SINCE = "2026-01-21"
_MEASURED = re.compile(r"measured=(\d{4}-\d{2}-\d{2})")


# A benchmark script that ran its client at a fixed count against a server capped at the
# sweep's concurrency: InferenceMAX's `benchmarks/gptoss_fp4_h100_docker.sh` passed
# `--max-concurrency 512` to the client and `--max-num-seqs=$CONC` to vLLM from d22bf9ca9
# (2025-11-21) until 4e135fd3f ("fix h100 docker error", 2025-12-08 22:20 UTC, so runs of
# that day may precede it). Its rows record the client's 512; the server's cap, the sweep's
# CONC, is not recorded. Per script: (system, backend, model, first day, last day, clients).
INFERENCEMAX_FIXED_CLIENTS = (
    ("h100_sxm", "vllm", "openai/gpt-oss-120b", "2025-11-21", "2025-12-08", 512),
)


def uncapped_clients(r: dict[str, str], clients: int) -> str:
    """Why the row's client count does not say how many requests its server ran at once
    (``INFERENCEMAX_FIXED_CLIENTS``), or ""."""
    src = (r.get("silicon_data_source") or "").strip()
    day = _MEASURED.search(src)
    if day is None or not _INFERENCEMAX.search(src):
        return ""
    key = tuple((r.get(k) or "").strip().lower() for k in ("system", "backend", "model_path"))
    for system, backend, model, first, last, fixed in INFERENCEMAX_FIXED_CLIENTS:
        if key == (system, backend, model) and clients == fixed and (
                first <= day.group(1) <= last):
            return (f"InferenceMAX's script ran its client at {fixed} clients against a server "
                    "capped at the sweep's concurrency (--max-num-seqs=$CONC, "
                    f"{first} to {last}), which the row does not record")
    return ""


# How a note says the data leaves the row's deployment open (``open_deployment``)
POOLED_NOTE = "deployment not recorded, and the benchmark's configuration ran "
SPEC_OPEN_NOTE = " there, not modelled"


def open_deployment(note: str) -> bool:
    """The row's deployment is one the data leaves open: its configuration ran several at the
    row's client count (their predictions pooled), or ran speculative decoding at a depth, or
    with and without it, that no source names (predicted without). A row reading a recorded
    deployment never is."""
    return POOLED_NOTE in note or SPEC_OPEN_NOTE in note


def unwarmed(r: dict[str, str]) -> bool:
    """An InferenceMAX row measured before its client sent warm-up requests."""
    src = (r.get("silicon_data_source") or "").strip()
    m = _MEASURED.search(src)
    return bool(_INFERENCEMAX.search(src) and m and m.group(1) < INFERENCEMAX_WARMUP_SINCE)
_INFERENCEMAX = re.compile(r"workflow_run_id=|^source_file=\d{4}-\d{2}-\d{2}\.csv")


def mean_lengths(r: dict[str, str], isl: int, osl: int) -> tuple[int, int, str]:
    """The mean prompt and output lengths the row's benchmark client sent, and a note when
    they differ from the nominal ``isl`` / ``osl`` (a random-length client)."""
    if not _INFERENCEMAX.search((r.get("silicon_data_source") or "").strip()):
        return isl, osl, ""
    q = INFERENCEMAX_RANGE_RATIO
    mi = max(1, round((int(isl * q) + isl) / 2))
    mo = max(1, round((int(osl * q) + osl) / 2))
    return mi, mo, (f"InferenceMAX client: lengths uniform in [{q:g}, 1] x nominal, means "
                    f"{mi} in / {mo} out")


def concurrency(r: dict[str, str]) -> int | None:
    """The benchmark's client count: the source's ``silicon_concurrency``, else the batch
    columns (per attention-DP rank and worker)."""
    m = re.search(r"silicon_concurrency=(\d+)", r.get("silicon_data_source") or "")
    if m:
        if int(m.group(1)) < 1:
            raise _bad(r, "silicon_data_source", f"silicon_concurrency={m.group(1)}: a "
                       "benchmark runs at least one client")
        if int(m.group(1)) > MAX_REQUESTS:
            raise _bad(r, "silicon_data_source", f"silicon_concurrency={m.group(1)}: more "
                       f"than {MAX_REQUESTS:,} clients (serve estimate's --concurrency bound)")
        return int(m.group(1))
    if r["mode"] == "agg":
        col, b = "batch_size", _int(r, "batch_size", None, low=1, high=MAX_REQUESTS)
        ranks = _int(r, "attention_dp_size", 1) or 1
    else:
        col, b = "decode_batch_size", _int(r, "decode_batch_size", None, low=1,
                                           high=MAX_REQUESTS)
        ranks = (_int(r, "decode_attention_dp_size", 1) or 1) * (
            _int(r, "decode_num_workers", 1) or 1)
    if b is None:
        return None
    if b * ranks > MAX_REQUESTS:
        raise _bad(r, col, f"{b:,} a rank x {ranks:,} ranks = {b * ranks:,} clients, more than "
                   f"{MAX_REQUESTS:,} (serve estimate's --concurrency bound)")
    return b * ranks


def _workers(r: dict[str, str], arch: ModelArch, par: ServingParallel,
             clients: int) -> tuple[ServingParallel, int, str]:
    """An aggregated row whose ``silicon_concurrency`` is k times its batch columns (batch x
    attention-DP) ran k times the workers the columns record. For a MoE model with k equal to
    its TP and no attention-DP recorded, that is attention data parallelism over the TP ranks
    (TRT-LLM ``enable_attention_dp``: one batch per rank); otherwise it is k replicas behind
    one load generator, and one replica sees the batch columns' clients. Returns the layout,
    the clients of the one deployment simulated, and a note (empty if no rule applied)."""
    b = _int(r, "batch_size", None, low=1, high=MAX_REQUESTS)
    # The batch column counts per recorded attention-DP rank: where the TP x EP rule of
    # `_parallel` folded a recorded attention-DP of 64 into 8 ranks, the 64 still count.
    ranks = max(par.adp, _int(r, "attention_dp_size", 1) or 1)
    per_worker = None if b is None else b * ranks
    if per_worker is None or clients <= per_worker or clients % per_worker:
        return par, clients, ""
    k = clients // per_worker
    if arch.is_moe and par.adp == 1 and k == par.tp and par.tp > 1:
        adp = ServingParallel(tp=1, pp=par.pp, adp=par.tp, moe_tp=par.moe_tp,
                              moe_ep=par.moe_ep)
        return adp, clients, (f"silicon_concurrency {clients} = batch x tp: read as "
                              f"attention-DP {par.tp}")
    return par, per_worker, (f"silicon_concurrency {clients} = {k} x the batch columns: "
                             f"{k} replicas, one simulated with {per_worker} clients")


# A build label rather than a release number: nightly and development builds, and branch
# builds named for a model or a GPU generation (AIConfigurator 0.12.0's silicon sample names
# SGLang `nightly-dev-20260216-d3bae71e` and `glm5-hopper`, TensorRT-LLM `gpt-oss-dev`).
_DEV_BUILD = re.compile(r"(^|[-_.])(nightly|dev|main|hopper|blackwell)([-_.]|\d|$)", re.I)


# AIConfigurator's own measurements (not InferenceMAX's): the file names the collection as
# source_file=<system>/<backend>/<version>/<model>.csv
_AIC_OWN = re.compile(r"^source_file=[a-z0-9_]+/([a-z]+)/([^/;]+)/")
# AIConfigurator's generator deploys SGLang aggregated servers with --enable-mixed-chunk
# since 2026-01-19 (ai-dynamo/aiconfigurator fa895ffb1 and 07a377923, rule_plugin/sglang.rule
# "agg enable_mixed_chunk = true"); its first SGLang collected after that is 0.5.6.post2
# (the file's dated 0.5.6.post2 runs: 2026-01-23 to 01-25, Dynamo 0.8.0's runtime). The 0.5.1
# collection predates the generator's SGLang support (95ddf241a, 2025-12-04).
AIC_MIXED_CHUNK_FROM = "2026-01-19"
AIC_MIXED_CHUNK_VERSION = (0, 5, 6)


def _release(version: str) -> tuple[int, ...]:
    """The numeric release of a version string (``0.5.6.post2`` -> (0, 5, 6))."""
    out: list[int] = []
    for part in version.split("."):
        if not part.isdigit():
            break
        out.append(int(part))
    return tuple(out)


def aic_generator_settings(r: dict[str, str], engine: ServingEngine
                           ) -> tuple[ServingEngine, str]:
    """The row's engine with the options AIConfigurator's generator set on its own aggregated
    SGLang runs (``--enable-mixed-chunk``), and a note ("" when none applies)."""
    src = (r.get("silicon_data_source") or "").strip()
    own = _AIC_OWN.search(src)
    if (own is None or engine.backend != "sglang" or own.group(1) != "sglang"
            or (r.get("mode") or "").strip() != "agg"):
        return engine, ""
    day = _MEASURED.search(src)
    if day is not None:
        if day.group(1) < AIC_MIXED_CHUNK_FROM:
            return engine, ""
    elif _release(own.group(2)) < AIC_MIXED_CHUNK_VERSION:
        return engine, ""
    return engine.model_copy(update={"mixed_chunk": True}), (
        "AIConfigurator's generator ran this SGLang server with --enable-mixed-chunk (set "
        f"from {AIC_MIXED_CHUNK_FROM}; its collections from SGLang 0.5.6 on): prompt chunks "
        "mixed into the decode batch")


def _engine(cat: Catalog, r: dict[str, str], backend: str,
            version: str) -> tuple[ServingEngine, str, str]:
    """The catalog engine that covers the row's version, a note on how it was read, and why
    the row is not covered ("" when it is). A development build, and a release newer than
    every catalogued family of the backend, are read with its newest family (the one they
    are closest to), which the note says; a release older than every family is not covered
    (the engines changed their schedulers there: vLLM's V1 engine from 0.10); a version that
    names no release is an error."""
    try:
        return cat.serving_engine(backend, version), "", ""
    except InputError:
        pass
    got = release_number(version)
    if _DEV_BUILD.search(version):
        engine = cat.serving_engine(backend)
        return engine, (f"backend_version {version!r} is a development build: read with "
                        f"{engine.name}, not validated on that build"), ""
    if got is None:
        raise _bad(r, "backend_version", f"{version!r}: names no {backend} release (as "
                   "'0.5.9' or '1.2.0rc6.post1') and no development build")
    families = [e for e in cat.all("serving_engines")
                if isinstance(e, ServingEngine) and e.backend == backend]
    tops = [(top, e) for e in families if (top := e.release_ceiling()) is not None]
    if not tops:
        raise _bad(r, "backend_version", f"{version!r}: no {backend} engine in the catalog "
                   "names releases")
    top, newest = max(tops, key=lambda t: t[0])
    said = ".".join(map(str, top))
    if got >= top:
        return newest.at_version(version), (
            f"backend_version {version}: newer than every catalogued {backend} family (they "
            f"cover releases below {said}): read with {newest.name}, not validated at that "
            "release"), ""
    return newest, "", (f"backend_version {version}: older than every catalogued {backend} "
                        f"family ({', '.join(v for e in families for v in e.versions)}), "
                        "whose schedulers and kernels it predates")


def resolve(cat: Catalog, r: dict[str, str],
            lookup: tuple[dict[str, ModelArch], dict[str, Gpu]] | None = None) -> RowConfig:
    """The row's deployment. InputError for malformed values; NotCoveredError for what the
    catalog or the model lacks. A row whose benchmark ran one of several deployments
    (``_candidates``, ``complete_from_layouts``) resolves to each, as ``alternatives``;
    those the catalog cannot hold drop out, and where none is left the row is not
    covered."""
    overlays = r.get("_candidates")
    if not overlays:
        return _resolve_one(cat, r, lookup)
    base = {k: v for k, v in r.items() if k != "_candidates"}
    alts: list[RowConfig] = []
    why = ""
    for overlay in json.loads(overlays):
        try:
            alts.append(_resolve_one(cat, {**base, **overlay}, lookup))
        except NotCoveredError as exc:
            why = why or str(exc)
    if not alts:
        raise NotCoveredError(why)
    return alts[0] if len(alts) == 1 else replace(alts[0], alternatives=tuple(alts))


def _resolve_one(cat: Catalog, r: dict[str, str],
                 lookup: tuple[dict[str, ModelArch], dict[str, Gpu]] | None = None
                 ) -> RowConfig:
    backend = (r.get("backend") or "").strip().lower()
    if backend not in BACKENDS:
        raise _bad(r, "backend", f"{r.get('backend')!r} is not one of {', '.join(BACKENDS)}")
    version = (r.get("backend_version") or "").strip()
    engine, build_note, uncovered = _engine(cat, r, backend, version)
    engine, set_note = script_settings(r, engine)
    engine, aic_note = aic_generator_settings(r, engine)
    set_note = "; ".join(n for n in (set_note, aic_note) if n)
    if set_note:
        build_note = "; ".join(n for n in (build_note, set_note) if n)
    mode = (r.get("mode") or "").strip()
    if mode not in MODES:
        raise _bad(r, "mode", f"{mode!r} is not agg or disagg")
    prec = (r.get("precision") or "").strip().lower()
    if prec not in PRECISIONS:
        raise _bad(r, "precision", f"{r.get('precision')!r} is not one of "
                   f"{', '.join(p or '(empty)' for p in PRECISIONS)}")
    isl = _int(r, "isl", None, low=1, high=MAX_SEQ_LEN)
    osl = _int(r, "osl", None, low=1, high=MAX_SEQ_LEN)
    if isl is None or osl is None:
        raise _bad(r, "isl" if isl is None else "osl", "is required")
    _float(r, "silicon_ttft_ms")
    _float(r, "silicon_tpot_ms")
    # Checked even where the client count comes from the source: a batch past any benchmark's
    # clients is a broken row, not a column to pass over (0 and empty: not recorded)
    for col in ("batch_size", "prefill_batch_size", "decode_batch_size"):
        _int(r, col, None, low=0, high=MAX_REQUESTS)
    if mode == "disagg":
        for role in ("prefill_", "decode_"):
            if not (r.get(role + "tp_size") or "").strip():
                raise _bad(r, role + "tp_size", "a disaggregated row needs both the prefill "
                           "and the decode role's layout")
    elif not (r.get("tp_size") or "").strip():
        raise _bad(r, "tp_size", "an aggregated row needs its layout (tp_size)")
    if uncovered:
        raise NotCoveredError(uncovered)
    models, gpus = lookup or _lookup(cat)
    arch = models.get((r.get("model_path") or "").strip().lower())
    if arch is None:
        raise NotCoveredError(f"model {r.get('model_path')!r} is not in the catalog")
    gpu = gpus.get((r.get("system") or "").strip().lower())
    if gpu is None:
        raise NotCoveredError(f"system {r.get('system')!r} is not in the catalog")
    gemm = (r.get("gemm_quant_mode") or "").strip().lower() or PRECISION_DEFAULT_FORMAT[prec]
    moe_mode = (r.get("moe_quant_mode") or "").strip().lower() or gemm
    try:
        dense = weight_format(gemm, gpu, "gemm_quant_mode")
        moe = weight_format(moe_mode, gpu, "moe_quant_mode")
    except InputError as exc:
        raise InputError(f"line {r.get('_line', '?')}: {exc}", field=exc.field) from None
    c = concurrency(r)
    if c is None:
        raise NotCoveredError("no client concurrency: neither silicon_concurrency in the source "
                         "nor the batch columns")
    if why := uncapped_clients(r, c):
        raise NotCoveredError(why)
    kv_fmt = kv_format_for(engine, dense)
    if mode == "agg":
        par, note = _parallel(r, "", arch)
        par, c, more = _workers(r, arch, par, c)
        par, dp_note = script_attention_dp(r, par)
        mi, mo, lens = mean_lengths(r, isl, osl)
        notes = tuple(n for n in (_run_note(r), build_note, note, more, dp_note, lens) if n)
        k, spec_note = script_draft_tokens(r, par.adp > 1)
        notes = notes + ((spec_note,) if spec_note else ())
        dep = Deployment(arch, gpu, engine, dense, moe, kv_fmt, agg=Role(par, 1), notes=notes,
                         speculative=(k, MTP_ACCEPTANCE, None) if k else None)
        return RowConfig(dep, c, mi, mo, not lens, INFERENCEMAX_ROUNDS if lens else 0.0)
    pre, n1 = _parallel(r, "prefill_", arch)
    dec, n2 = _parallel(r, "decode_", arch)
    pw = _int(r, "prefill_num_workers", None, low=1, high=MAX_GPUS // pre.gpus)
    dw = _int(r, "decode_num_workers", None, low=1, high=MAX_GPUS // dec.gpus)
    notes = tuple(n for n in (_run_note(r), build_note, n1, n2) if n)
    if r.get("_recipe"):
        notes = (f"the recorded deployment is {r['_recipe']}: its limits taken", *notes)
    if r.get("_twin"):
        twin = f"the same measurement as {r['_twin']}, which records the deployment: read as that"
        notes = (twin, *notes)
    if r.get("_layout"):
        notes = (f"deployment not in the row: read from {r['_layout']}", *notes)
    mi, mo, lens = mean_lengths(r, isl, osl)
    # The generation workers' max batch where the benchmark's recipe names it
    mb = int(r["_decode_max_batch"]) if r.get("_decode_max_batch") else None
    pb = int(r["_prefill_max_batch"]) if r.get("_prefill_max_batch") else None
    ptok = int(r["_prefill_max_tokens"]) if r.get("_prefill_max_tokens") else None
    # The decode workers' --stream-interval where the recipe sets it
    si = int(r["_decode_stream_interval"]) if r.get("_decode_stream_interval") else None
    k = int(r["_mtp"]) if r.get("_mtp") else 0
    dep = Deployment(arch, gpu, engine, dense, moe, kv_fmt, prefill=Role(pre, pw, pb, ptok),
                     decode=Role(dec, dw, mb, stream_interval=si), notes=notes,
                     speculative=(k, MTP_ACCEPTANCE, None) if k else None)
    if pw is None or dw is None:
        sweep = int(r.get("_sweep_clients") or c)
        try:
            pw, dw, _ = size_workers(cat, dep, max(sweep, c), mi, mo)
        except DeploymentError as exc:
            raise NotCoveredError(str(exc)) from None
        notes += (f"worker counts not recorded: {pw} prefill and {dw} decode worker(s), "
                  f"sized once for the sweep's highest concurrency ({max(sweep, c)} clients)",)
        dep = replace(dep, prefill=Role(pre, pw, pb, ptok),
                      decode=Role(dec, dw, mb, stream_interval=si), notes=notes)
    if lens:
        dep = replace(dep, notes=(*dep.notes, lens))
    return RowConfig(dep, c, mi, mo, not lens, INFERENCEMAX_ROUNDS if lens else 0.0)


# --------------------------------------------------------------------------- prediction


def predict(cat: Catalog, cfg: RowConfig) -> tuple[SteadyState, str]:
    """TTFT and TPOT of the row's deployment under its closed loop, with a note on how the
    row was read (rules applied, worker counts sized). With ``alternatives`` (the row ran
    one of them, and which is not recorded), each under ``cfg``'s engine (they differ
    only in their roles): TTFT, TPOT and the rate are their geometric means, the one
    estimate that is as far, in ratio, from each; the note names them all. One the
    hardware cannot hold drops out; where none is left the row is not covered."""
    if not cfg.alternatives:
        return _predict_one(cat, cfg)
    outs: list[tuple[SteadyState, str]] = []
    why = ""
    for a in cfg.alternatives:
        try:
            outs.append(_predict_one(cat, replace(a, dep=replace(a.dep, engine=cfg.dep.engine))))
        except NotCoveredError as exc:  # one the hardware cannot hold drops out
            why = why or str(exc)
    if not outs:
        raise NotCoveredError(why)
    if len(outs) == 1:
        return outs[0]

    def geo(xs: list[float]) -> float:
        return math.exp(statistics.fmean(math.log(max(x, 1e-12)) for x in xs))

    states = [st for st, _ in outs]
    lines = "; ".join(
        f"({i + 1}) TTFT {st.ttft_s * 1e3:.4g} ms, TPOT {st.tpot_s * 1e3:.4g} ms: {note}"
        for i, (st, note) in enumerate(outs))
    first = states[0]
    pooled = replace(
        first, ttft_s=geo([s.ttft_s for s in states]), tpot_s=geo([s.tpot_s for s in states]),
        requests_per_s=geo([s.requests_per_s for s in states]),
        # Saturated where any of them is: its TTFT is then a queue's length
        bound=next((s.bound for s in states if s.bound), ""),
        detail=f"geometric mean of {len(states)} deployments; the first: {first.detail}")
    return pooled, (f"{POOLED_NOTE}{len(states)} at this client count: the geometric mean "
                    f"of their predictions {lines}")


def _predict_one(cat: Catalog, cfg: RowConfig) -> tuple[SteadyState, str]:
    try:
        st, solved = steady(cat, cfg.dep, cfg.clients, cfg.isl, cfg.osl,
                            equal_lengths=cfg.equal_lengths, rounds=cfg.rounds)
    except DeploymentError as exc:
        raise NotCoveredError(str(exc)) from None
    return st, "; ".join(solved.notes)


@dataclass(frozen=True)
class RowResult:
    id: str
    line: int
    system: str
    backend: str
    mode: str
    ttft_ms: float
    tpot_ms: float
    pred_ttft_ms: float | None
    pred_tpot_ms: float | None
    skipped: str | None
    detail: str = ""
    note: str = ""  # how the row was read (a rule or an inferred value)
    unwarmed: bool = False  # measured without warm-up requests (``unwarmed``)
    # Per cent of the predicted TTFT that 1 % of error in the rate moves, where the model's
    # loop is saturated (``SteadyState.ttft_sensitivity``); None where the rate follows the
    # clients
    ttft_sensitivity: float | None = None

    @property
    def ttft_error(self) -> float | None:
        return None if self.pred_ttft_ms is None else (
            self.pred_ttft_ms - self.ttft_ms) / self.ttft_ms

    @property
    def tpot_error(self) -> float | None:
        return None if self.pred_tpot_ms is None else (
            self.pred_tpot_ms - self.tpot_ms) / self.tpot_ms


def predict_all(rows: Iterable[dict[str, str]], cat: Catalog | None = None) -> list[RowResult]:
    """Predict every row; malformed rows raise InputError (with the line)."""
    cat = cat or load_catalog()
    lookup = _lookup(cat)
    out = []
    for r in rows:
        line = int(r.get("_line") or 0)
        try:
            cfg = resolve(cat, r, lookup)
            res, note = predict(cat, cfg)
            out.append(RowResult(r["id"], line, r["system"], r["backend"], _file_mode(r),
                                 float(r["silicon_ttft_ms"]), float(r["silicon_tpot_ms"]),
                                 res.ttft_s * 1e3, res.tpot_s * 1e3, None, res.detail, note,
                                 unwarmed(r), res.ttft_sensitivity(cfg.clients)))
        except NotCoveredError as exc:
            out.append(RowResult(r["id"], line, r["system"], r["backend"], _file_mode(r),
                                 float(r["silicon_ttft_ms"]), float(r["silicon_tpot_ms"]),
                                 None, None, str(exc)))
    return out


def _file_mode(r: dict[str, str]) -> str:
    """The mode the file labels the row with (its partition in the table), which
    ``complete_from_layouts`` may have corrected."""
    return r.get("_file_mode") or r["mode"]


def predict_rows(rows: list[dict[str, str]]) -> list[dict[str, Any]]:
    """For side-by-side benchmarks: each row's id, predicted TTFT and TPOT (ms), or why not."""
    return [{"id": x.id, "pred_ttft_ms": x.pred_ttft_ms, "pred_tpot_ms": x.pred_tpot_ms,
             "skipped": x.skipped} for x in predict_all(rows)]


# --------------------------------------------------------------------------- the table


def _mape(errs: list[float | None]) -> float | None:
    v = [abs(e) for e in errs if e is not None]
    return sum(v) / len(v) if v else None


def median_error(errs: Iterable[float | None]) -> float | None:
    """The median signed error, (model - measured) / measured: below 0, the model is under
    the measurement for most rows (MAPE alone does not say which way it misses)."""
    v = [e for e in errs if e is not None]
    return statistics.median(v) if v else None


def _summary(rows: list[RowResult]) -> dict[str, Any]:
    return {"n": len(rows), **_errors(rows)}


def _errors(rows: list[RowResult]) -> dict[str, float | None]:
    """TTFT and TPOT MAPE and median signed error of ``rows``."""
    return {"ttft_mape": _mape([r.ttft_error for r in rows]),
            "tpot_mape": _mape([r.tpot_error for r in rows]),
            "ttft_median_error": median_error(r.ttft_error for r in rows),
            "tpot_median_error": median_error(r.tpot_error for r in rows)}


# A configuration: every column but the row's name, source text (its concurrency aside) and
# measurement. The model path is part of it (a checkpoint's format differs by path).
_CONFIG_SKIP = frozenset({"id", "silicon_data_source", "silicon_ttft_ms", "silicon_tpot_ms",
                          "_line", "_twin", "_run", "_source"})


def _shape(arch: ModelArch) -> tuple[Any, ...]:
    """What the step model reads of an architecture (DeepSeek-R1 and -V3 share it)."""
    return tuple(v for k, v in arch.model_dump().items() if k not in (
        "id", "name", "source", "hf_ids", "published_params", "published_params_tolerance",
        "published_active_params", "override", "max_seq_len"))


def repeat_noise(rows: Iterable[dict[str, str]], cat: Catalog | None = None
                 ) -> dict[str, Any]:
    """How far the file disagrees with itself, as the MAPE of predicting each measurement by
    the median of its group, over groups measured more than once with different results:

    - ``repeats``: the same configuration in every column (engine version, model path,
      system, formats, lengths, concurrency, layout);
    - ``model_inputs``: rows the model cannot tell apart, because they differ only in what it
      does not read: the model path among architectures of one shape (DeepSeek-R1 and -V3
      checkpoints) and the version within one catalog engine. Their spread is a floor for any
      model with these inputs.

    Rows without a recorded deployment are left out (their configuration is not known)."""
    cat = cat or load_catalog()
    models, _ = _lookup(cat)
    strict: dict[tuple[Any, ...], set[tuple[float, float]]] = {}
    loose: dict[tuple[Any, ...], set[tuple[float, float]]] = {}
    for r in rows:
        if (r.get("mode") or "").strip() == "disagg" and not (
                (r.get("decode_num_workers") or "").strip()):
            continue
        try:
            c = concurrency(r)
            ttft, tpot = float(r["silicon_ttft_ms"]), float(r["silicon_tpot_ms"])
        except (InputError, ValueError, KeyError):
            continue
        if not (ttft > 0 and tpot > 0):
            continue
        cols = {k: (v or "").strip() for k, v in r.items() if k not in _CONFIG_SKIP}
        strict.setdefault((*sorted(cols.items()), ("c", c)), set()).add((ttft, tpot))
        arch = models.get(cols.get("model_path", "").lower())
        try:
            engine = cat.serving_engine(cols.get("backend", ""), cols.get("backend_version", ""))
        except InputError:
            continue
        cols["model_path"] = str(_shape(arch)) if arch else cols.get("model_path", "")
        cols["backend_version"] = engine.id
        loose.setdefault((*sorted(cols.items()), ("c", c)), set()).add((ttft, tpot))

    def spread(groups: dict[tuple[Any, ...], set[tuple[float, float]]]) -> dict[str, Any]:
        et: list[float] = []
        ep: list[float] = []
        n = 0
        for vals in groups.values():
            if len(vals) < 2:
                continue
            n += 1
            mt = statistics.median(v[0] for v in vals)
            mp = statistics.median(v[1] for v in vals)
            et += [abs(mt / v[0] - 1.0) for v in vals]
            ep += [abs(mp / v[1] - 1.0) for v in vals]
        return {"configurations": n, "measurements": len(et),
                "ttft_mape": statistics.fmean(et) if et else None,
                "tpot_mape": statistics.fmean(ep) if ep else None}

    return {"repeats": spread(strict), "model_inputs": spread(loose)}


@dataclass(frozen=True)
class SiliconResult:
    rows: list[RowResult]
    # The file's own repeat noise (``repeat_noise``); None when not computed
    noise: dict[str, Any] | None = None

    @property
    def covered(self) -> list[RowResult]:
        return [r for r in self.rows if r.skipped is None]

    def partitions(self, rows: list[RowResult] | None = None) -> list[dict[str, Any]]:
        """Per system x backend x mode: rows and errors, of ``rows`` (default: the covered)."""
        groups: dict[tuple[str, str, str], list[RowResult]] = {}
        for r in self.covered if rows is None else rows:
            groups.setdefault((r.system, r.backend, r.mode), []).append(r)
        return [{"system": s, "backend": b, "mode": m, "n": len(rs), **_errors(rs)}
                for (s, b, m), rs in sorted(groups.items())]

    def within_target(self, rows: list[RowResult] | None = None) -> dict[str, int]:
        """How many partitions of ``rows`` (default: the covered) hold PARTITION_MIN rows or
        more, and how many of those are within TARGET on TTFT and on TPOT MAPE."""
        held = [p for p in self.partitions(rows) if p["n"] >= PARTITION_MIN]
        return {"partitions": len(held),
                "ttft": sum(1 for p in held if (p["ttft_mape"] or 0) <= TARGET),
                "tpot": sum(1 for p in held if (p["tpot_mape"] or 0) <= TARGET)}

    @property
    def passed(self) -> bool:
        """Every partition with at least PARTITION_MIN rows within TARGET on both."""
        return all((p["ttft_mape"] or 0) <= TARGET and (p["tpot_mape"] or 0) <= TARGET
                   for p in self.partitions() if p["n"] >= PARTITION_MIN)

    @property
    def complete(self) -> list[RowResult]:
        """Covered rows whose run the data describes in full: a deployment it settles
        (``open_deployment`` false) on a server its client warmed up (``unwarmed`` false).
        The other rows carry what no model reads from a row: which of several deployments
        ran, or kernels compiled during the measured opening wave."""
        return [r for r in self.covered if not r.unwarmed and not open_deployment(r.note)]

    @property
    def recorded(self) -> list[RowResult]:
        """Covered rows read as the file records them: no rule applied, nothing inferred (the
        benchmark client's length distribution, which the source states, aside)."""
        return [r for r in self.covered
                if all(part.startswith("InferenceMAX client") for part in r.note.split("; ")
                       if part)]

    def payload(self) -> dict[str, Any]:
        cov, rec = self.covered, self.recorded
        return {
            "total": len(self.rows),
            "covered": len(cov),
            **_errors(cov),
            "recorded": _summary(rec),
            # InferenceMAX rows measured before its client warmed the server up, and the rest
            "unwarmed": _summary([r for r in cov if r.unwarmed]),
            "warmed": _summary([r for r in cov if not r.unwarmed]),
            # Rows whose predicted loop is saturated, its TTFT a difference of two large terms
            # (at least SATURATED_SENSITIVITY % per 1 % of rate error), and the rest
            "saturated": _summary([r for r in cov if _saturated(r)]),
            "unsaturated": _summary([r for r in cov if not _saturated(r)]),
            # Rows whose deployment the data leaves open (``open_deployment``), and the rest
            "open_deployment": _summary([r for r in cov if open_deployment(r.note)]),
            "settled_deployment": _summary([r for r in cov if not open_deployment(r.note)]),
            # Partitions of PARTITION_MIN+ rows, and those within TARGET on each metric: of
            # every covered row, and of the rows the data describes in full (``complete``)
            "within_target": self.within_target(),
            "complete": {**_summary(self.complete),
                         "within_target": self.within_target(self.complete)},
            "repeat_noise": self.noise,
            "partitions": self.partitions(),
            "rows": [{"id": r.id, "ttft_ms": r.ttft_ms, "tpot_ms": r.tpot_ms,
                      "pred_ttft_ms": r.pred_ttft_ms, "pred_tpot_ms": r.pred_tpot_ms,
                      "skipped": r.skipped, "note": r.note} for r in self.rows],
        }


def _saturated(r: RowResult) -> bool:
    return (r.ttft_sensitivity or 0.0) >= SATURATED_SENSITIVITY


def serving_silicon(path: str | Path | None = None, cat: Catalog | None = None
                    ) -> SiliconResult:
    """Predict every row of ``path`` (default: the shipped ``validation/serving_silicon.csv``)."""
    p = Path(path) if path is not None else data_dir() / FILE
    rows = read_rows(p)
    try:
        cat = cat or load_catalog()
        return SiliconResult(predict_all(rows, cat), repeat_noise(rows, cat))
    except InputError as exc:
        raise InputError(f"{p}: {exc}", field=exc.field) from None


# --------------------------------------------------------------------------- one row


def explain_row(row_id: str, path: str | Path | None = None, cat: Catalog | None = None
                ) -> dict[str, Any]:
    """One row of ``path`` (default: the shipped file) as the table predicts it, and where
    the prediction's time goes: how the row was read, the measured and predicted TTFT and
    TPOT (ms), the deployment as solved, and the steady state without an opening wave with
    TTFT's parts and the iterations' (``iteration_breakdown``; seconds, as ``serve estimate
    --engine`` prints them). A row whose benchmark ran one of several deployments is
    predicted as their geometric mean; the breakdown is the first one's. InputError (field
    ``row``) when no row has the id."""
    p = Path(path) if path is not None else data_dir() / FILE
    rows = read_rows(p)
    found = [r for r in rows if r["id"] == row_id]
    if not found:
        raise InputError(f"--row: no row has the id {row_id!r} in {p}", field="row")
    r = found[0]
    cat = cat or load_catalog()
    out: dict[str, Any] = {
        "id": row_id, "line": int(r["_line"]), "system": r["system"], "backend": r["backend"],
        "mode": _file_mode(r), "model": r["model_path"], "rows_with_this_id": len(found),
        "measured": {"ttft_ms": _float(r, "silicon_ttft_ms"),
                     "tpot_ms": _float(r, "silicon_tpot_ms")}}
    try:
        cfg = resolve(cat, r, _lookup(cat))
        st, note = predict(cat, cfg)
        one = (replace(cfg.alternatives[0], dep=replace(cfg.alternatives[0].dep,
                                                        engine=cfg.dep.engine))
               if cfg.alternatives else cfg)
        base, solved = steady(cat, one.dep, one.clients, one.isl, one.osl,
                              equal_lengths=one.equal_lengths)
    except (NotCoveredError, DeploymentError) as exc:
        out["skipped"] = str(exc)
        return out
    out.update({
        "predicted": {"ttft_ms": st.ttft_s * 1e3, "tpot_ms": st.tpot_s * 1e3},
        "note": note, "detail": st.detail, "clients": one.clients,
        "input_len": one.isl, "output_len": one.osl, "rounds": one.rounds,
        "deployments": max(len(cfg.alternatives), 1),
        "deployment": roles_view(solved),
        "steady_state": {
            "ttft_mean_s": base.ttft_s, "tpot_mean_s": base.tpot_s,
            "decode_batch_per_rank": base.decode_batch,
            "ttft_parts_s": base.ttft_parts(solved.engine.frontend_s),
            "iterations": iteration_breakdown(cat, solved, one.isl, one.osl,
                                              base.decode_batch)}})
    return out
