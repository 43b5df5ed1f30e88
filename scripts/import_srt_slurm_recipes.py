"""Import the SGLang and TensorRT-LLM settings of InferenceMAX's disaggregated recipes into
``validation/srt_slurm_recipes.csv``.

    python scripts/import_srt_slurm_recipes.py [--repo DIR]  (a clone of NVIDIA/srt-slurm)

InferenceMAX's SGLang disaggregated runs name a recipe of NVIDIA's srt-slurm
(``validation/inferencemax_layouts.csv``, column ``recipe``: a file, or a file and one of its
``zip_override_*`` variants, ``recipes/b200-fp4/1k1k.yaml:zip_override_mtp_lowlat[0]``).
InferenceMAX's configuration links them on a branch of a fork
(``ishandhanani/srt-slurm``, ``sa-submission-q1-2026``) that NVIDIA/srt-slurm (Apache-2.0)
took in with its history for most files and squashed for the rest (4a22a181, 2026-03-25).
Every version of each named recipe in NVIDIA/srt-slurm's history is read, and for each the
settings the validation needs:

- ``decode_draft_tokens``: EAGLE/MTP draft tokens of the decode workers
  (``speculative-num-steps`` with ``speculative-eagle-topk`` 1: each step drafts one token);
- ``decode_max_running`` / ``prefill_max_running``: ``max-running-requests`` of a worker,
  and its ``data-parallel-size`` with attention data parallelism (``enable-dp-attention``),
  over which SGLang divides it;
- ``prefill_chunked``: ``chunked-prefill-size``;
- TensorRT-LLM recipes (``recipes/trtllm/...``, ``backend.trtllm_config``): each role's
  ``max_batch_size`` (per attention-DP rank), the context workers' ``max_num_tokens``
  (``prefill_max_tokens``) and the generation workers' MTP drafts (``trtllm_settings``);
- ``decode_stream_interval``: SGLang recipes' ``stream-interval`` of the decode workers (the
  tokens between two streamed chunks; empty: SGLang's default, 1). Not read for TensorRT-LLM,
  whose disaggregated client gets the first token from the context worker;
- ``prefill_attention_dp`` / ``decode_attention_dp``: whether a role's attention is data
  parallel (TensorRT-LLM's ``enable_attention_dp``, SGLang's ``enable-dp-attention``; "no"
  where the recipe leaves it at the engines' default, off). InferenceMAX's configuration
  gave its H200 TensorRT-LLM entries the other layout than their recipes until 2026-03-23;
- ``prefill_ep`` / ``decode_ep``: a role's expert-parallel size where the recipe states it
  (TensorRT-LLM's ``moe_expert_parallel_size``, SGLang's ``expert-parallel-size`` or
  ``ep-size``); InferenceMAX's B200 FP8 TensorRT-LLM entries said EP 8 for context workers
  their recipes ran at EP 1 until 2026-03-23;
- ``prefill_tp`` / ``decode_tp``: a role's tensor-parallel size where the recipe states it
  (a worker's GPUs; the validation reads a recipe's attention layout and EP only where this
  is the configuration entry's, so that a recipe rewritten under the same name is not laid
  on an entry written for its earlier form);
- ``concurrencies``: the client counts the recipe's own benchmark section runs.

A ``zip_override_NAME`` section holds lists whose i-th values make variant i; other values
apply to every variant. Recipes deleted before the squash (``.../1k1k/mtp/*.yaml``) are read
at the last commit that had them. Rows: one per recipe and version (``commit``, ``date``:
the commit's author date); the validation takes the latest version dated on or before the
day a row was measured, else the earliest.
"""

from __future__ import annotations

import argparse
import csv
import re
import subprocess
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
LAYOUTS = ROOT / "validation" / "inferencemax_layouts.csv"
OUT = ROOT / "validation" / "srt_slurm_recipes.csv"
REPO = Path("/work/.mirror/NVIDIA+srt-slurm/repo")
FIELDS = ("recipe", "commit", "date", "decode_draft_tokens", "decode_max_running",
          "decode_dp", "prefill_max_running", "prefill_dp", "prefill_chunked",
          "prefill_max_tokens", "decode_stream_interval", "prefill_attention_dp",
          "decode_attention_dp", "prefill_ep", "decode_ep", "prefill_tp", "decode_tp",
          "concurrencies")
_VARIANT = re.compile(r"^(?P<path>[^:]+):(?P<section>zip_override_\w+)\[(?P<i>\d+)\]$")


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True).stdout


def _merge(base: Any, over: Any, i: int) -> Any:
    """``base`` with ``over`` laid on it; a list in ``over`` gives its i-th value."""
    if isinstance(over, dict):
        out = dict(base) if isinstance(base, dict) else {}
        for k, v in over.items():
            out[k] = _merge(out.get(k), v, i)
        return out
    if isinstance(over, list):
        return over[i] if i < len(over) else over[-1]
    return over


def config(text: str, section: str | None, i: int) -> dict[str, Any]:
    """The recipe's configuration (a variant of its ``base`` where ``section`` names one)."""
    doc = yaml.safe_load(text) or {}
    if section is None:
        return dict(doc.get("base", doc))
    return dict(_merge(doc.get("base", {}), doc.get(section, {}), i))


def _role(cfg: dict[str, Any], role: str) -> dict[str, Any]:
    sg = (cfg.get("backend") or {}).get("sglang_config") or {}
    return dict(sg.get(role) or {})


def _dp(r: dict[str, Any]) -> str:
    """Ranks SGLang divides max-running-requests over: the data-parallel size where
    attention is data parallel."""
    dp = r.get("data-parallel-size", r.get("dp-size", 1))
    return str(int(dp)) if r.get("enable-dp-attention") and dp else "1"


def _yes(flag: Any) -> str:
    return "yes" if flag else "no"


def _stated(n: Any) -> str:
    """A size the recipe states ("" where it leaves the engine's default)."""
    return str(int(n)) if isinstance(n, int | float) and not isinstance(n, bool) and n >= 1 \
        else ""


def trtllm_settings(cfg: dict[str, Any]) -> dict[str, str]:
    """A TensorRT-LLM recipe's workers (``backend.trtllm_config``): ``max_batch_size`` binds
    each attention-DP rank (each schedules its own requests), so ``*_dp`` is 1;
    ``max_num_tokens`` of the context workers; MTP drafts of the generation workers
    (``speculative_config``, ``decoding_type: MTP``, ``max_draft_len`` or
    ``num_nextn_predict_layers``)."""
    tc = (cfg.get("backend") or {}).get("trtllm_config") or {}
    d, p = dict(tc.get("decode") or {}), dict(tc.get("prefill") or {})
    spec = d.get("speculative_config") or {}
    draft = spec.get("max_draft_len", spec.get("num_nextn_predict_layers"))
    mtp = str(spec.get("decoding_type", "")).upper() == "MTP" and draft
    return {
        "decode_draft_tokens": str(int(draft)) if mtp else "",
        "decode_max_running": str(d.get("max_batch_size", "") or ""),
        "decode_dp": "1",
        "prefill_max_running": str(p.get("max_batch_size", "") or ""),
        "prefill_dp": "1",
        "prefill_chunked": "",
        "prefill_max_tokens": str(p.get("max_num_tokens", "") or ""),
        "decode_stream_interval": "",
        "prefill_attention_dp": _yes(p.get("enable_attention_dp")),
        "decode_attention_dp": _yes(d.get("enable_attention_dp")),
        "prefill_ep": _stated(p.get("moe_expert_parallel_size")),
        "decode_ep": _stated(d.get("moe_expert_parallel_size")),
        "prefill_tp": _stated(p.get("tensor_parallel_size")),
        "decode_tp": _stated(d.get("tensor_parallel_size")),
    }


def concurrencies(cfg: dict[str, Any]) -> str:
    """The client counts the recipe's own benchmark runs (``benchmark.concurrencies``,
    ``"10x15x25"``), space-separated: a run InferenceMAX launched from the recipe ran these,
    which its configuration's ``conc-list`` does not always repeat (``c4_ctx1_gen11_...``
    lists 4 there and runs 44 = 4 x 11 generation workers)."""
    raw = str((cfg.get("benchmark") or {}).get("concurrencies", "") or "")
    return " ".join(str(int(c)) for c in re.split(r"[x,\s]+", raw) if c.strip().isdigit())


def settings(cfg: dict[str, Any]) -> dict[str, str]:
    return {**_settings(cfg), "concurrencies": concurrencies(cfg)}


def _settings(cfg: dict[str, Any]) -> dict[str, str]:
    if ((cfg.get("backend") or {}).get("type") == "trtllm"
            or (cfg.get("backend") or {}).get("trtllm_config")):
        return trtllm_settings(cfg)
    d, p = _role(cfg, "decode"), _role(cfg, "prefill")
    steps = d.get("speculative-num-steps")
    topk = d.get("speculative-eagle-topk", 1)
    return {
        "decode_draft_tokens": str(int(steps)) if steps and int(topk) == 1 else "",
        "decode_max_running": str(d.get("max-running-requests", "") or ""),
        "decode_dp": _dp(d),
        "prefill_max_running": str(p.get("max-running-requests", "") or ""),
        "prefill_dp": _dp(p),
        "prefill_chunked": str(p.get("chunked-prefill-size", "") or ""),
        "prefill_max_tokens": "",
        "decode_stream_interval": str(d.get("stream-interval", d.get("stream_interval", ""))
                                      or ""),
        # a recipe without SGLang roles (another engine's) says nothing of them
        "prefill_attention_dp": _yes(p.get("enable-dp-attention")) if p else "",
        "decode_attention_dp": _yes(d.get("enable-dp-attention")) if d else "",
        "prefill_ep": _stated(p.get("expert-parallel-size", p.get("ep-size"))),
        "decode_ep": _stated(d.get("expert-parallel-size", d.get("ep-size"))),
        "prefill_tp": _stated(p.get("tensor-parallel-size", p.get("tp-size"))),
        "decode_tp": _stated(d.get("tensor-parallel-size", d.get("tp-size"))),
    }


def versions(repo: Path, path: str) -> list[tuple[str, str]]:
    """(commit, date) of every commit that changed ``path`` and left it in place."""
    out = []
    for line in _git(repo, "log", "--all", "--format=%h %ad", "--date=short", "--",
                     path).splitlines():
        commit, date = line.split()
        exists = subprocess.run(["git", "-C", str(repo), "cat-file", "-e",
                                 f"{commit}:{path}"], capture_output=True).returncode == 0
        if exists:
            out.append((commit, date))
    return sorted(set(out), key=lambda cd: (cd[1], cd[0]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repo", type=Path, default=REPO)
    args = ap.parse_args()
    with LAYOUTS.open(newline="") as f:
        recipes = sorted({e["recipe"] for e in csv.DictReader(f)
                          if e["backend"] in ("sglang", "trtllm") and e["recipe"]})
    rows = []
    for recipe in recipes:
        m = _VARIANT.match(recipe)
        path = m.group("path") if m else recipe
        section, i = (m.group("section"), int(m.group("i"))) if m else (None, 0)
        for commit, date in versions(args.repo, path):
            text = _git(args.repo, "show", f"{commit}:{path}")
            rows.append({"recipe": recipe, "commit": commit, "date": date,
                         **settings(config(text, section, i))})
    with OUT.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        w.writerows(rows)
    print(f"{len(rows)} versions of {len(recipes)} recipes -> {OUT}")


if __name__ == "__main__":
    main()
