"""Import InferenceMAX's disaggregated deployments into ``validation/inferencemax_layouts.csv``.

    python scripts/import_inferencemax_layouts.py [--repo DIR]  (a clone of InferenceX)

Source: github.com/SemiAnalysisAI/InferenceX (Apache-2.0), every commit that changed
``.github/configs/nvidia-master.yaml``. Each disaggregated benchmark there lists, per input
and output length, search-space entries: the client counts it runs (``conc-list``), the
prefill and decode worker counts with each worker's TP, EP and attention data parallelism,
and speculative decoding. AIConfigurator's ``silicon_sample.csv`` holds hundreds of these
runs (``source_file=2026-...csv`` dumps) with the layout columns only partly filled: no
worker counts, and TP columns that do not say whether attention was data parallel. The
benchmark's own configuration in effect on the day a row was measured says it; the
validation reads it from this file (``serving_silicon.complete_from_layouts``), keyed on
what the row does record (system, engine, model, precision, lengths, concurrency, the
prefill and decode TP).

An entry is written once per stretch of commits that hold it unchanged: ``valid_from`` is
the date of the first commit holding it, ``valid_to`` the date of the first later commit
that no longer does (empty: still held at the last commit read).
"""

from __future__ import annotations

import argparse
import csv
import subprocess
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
REPO = Path("/work/.mirror/SemiAnalysisAI+InferenceX/repo")
CONFIG = ".github/configs/nvidia-master.yaml"
OUT = ROOT / "validation" / "inferencemax_layouts.csv"

# The runner names of the configs, as AIConfigurator's file names the systems.
RUNNERS = (("gb200", "gb200"), ("gb300", "gb300"), ("b200", "b200_sxm"), ("b300", "b300_sxm"),
           ("h100", "h100_sxm"), ("h200", "h200_sxm"))
FRAMEWORKS = (("trt", "trtllm"), ("sglang", "sglang"), ("vllm", "vllm"))
# The configs' model prefixes as the Hugging Face ids AIConfigurator's file uses. dsr1 runs
# DeepSeek-R1-0528 checkpoints; the file names some of its dsr1 rows deepseek-ai/DeepSeek-V3
# (ids ``dsr1_...``), the same architecture.
MODELS = {
    "dsr1": "deepseek-ai/DeepSeek-R1 deepseek-ai/DeepSeek-R1-0528 deepseek-ai/DeepSeek-V3",
    "gptoss": "openai/gpt-oss-120b",
    "glm5": "zai-org/GLM-5",
    "kimik2.5": "moonshotai/Kimi-K2.5",
    "qwen3.5": "Qwen/Qwen3.5-397B-A17B",
}
FIELDS = ("config", "commit", "valid_from", "valid_to", "system", "backend", "model_paths",
          "precision", "isl", "osl", "concurrencies",
          "prefill_workers", "prefill_tp", "prefill_ep", "prefill_dp_attn",
          "decode_workers", "decode_tp", "decode_ep", "decode_dp_attn",
          "spec_decoding", "recipe")


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          check=True).stdout


def _mapped(value: str, table: tuple[tuple[str, str], ...]) -> str | None:
    return next((out for key, out in table if key in value), None)


def _role(x: dict[str, Any]) -> tuple[str, str, str, str]:
    return (str(int(x["num-worker"])), str(int(x["tp"])), str(int(x.get("ep") or 1)),
            "yes" if x.get("dp-attn") else "no")


def _recipe(e: dict[str, Any]) -> str:
    """The srt-slurm recipe a search-space entry names (its file name says MTP depth)."""
    for role in ("prefill", "decode"):
        for s in (e.get(role) or {}).get("additional-settings") or []:
            if isinstance(s, str) and s.startswith("CONFIG_FILE="):
                return s.split("=", 1)[1]
    return ""


def entries(doc: dict[str, Any]) -> list[tuple[str, ...]]:
    """The disaggregated search-space entries of one version of the config, as rows (without
    the commit columns)."""
    out: list[tuple[str, ...]] = []
    for name, v in doc.items():
        if not (isinstance(v, dict) and v.get("disagg")):
            continue
        system = _mapped(str(v.get("runner", "")), RUNNERS)
        backend = _mapped(str(v.get("framework", "")), FRAMEWORKS)
        models = MODELS.get(str(v.get("model-prefix", "")))
        if system is None or backend is None or models is None:
            continue
        for s in v.get("seq-len-configs") or []:
            for e in s.get("search-space") or []:
                try:
                    conc = " ".join(str(int(c)) for c in e["conc-list"])
                    pre, dec = _role(e["prefill"]), _role(e["decode"])
                except (KeyError, TypeError, ValueError):
                    continue
                if pre[0] == "0" or dec[0] == "0":
                    continue  # a role without workers: not a deployment
                out.append((name, system, backend, models, str(v.get("precision", "")),
                            str(int(s["isl"])), str(int(s["osl"])), conc, *pre, *dec,
                            str(e.get("spec-decoding") or "none"), _recipe(e)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repo", type=Path, default=REPO)
    repo = ap.parse_args().repo
    log = [ln.split() for ln in _git(repo, "log", "--reverse", "--format=%H %cI", "--",
                                      CONFIG).splitlines() if ln.strip()]
    open_: dict[tuple[str, ...], tuple[str, str]] = {}  # entry -> (commit, date first held)
    rows: list[tuple[str, ...]] = []
    for commit, date in log:
        try:
            doc = yaml.load(_git(repo, "show", f"{commit}:{CONFIG}"), Loader=yaml.CSafeLoader)
        except (subprocess.CalledProcessError, yaml.YAMLError):
            continue  # a deleting commit, or a broken version: its entries stay open
        if not isinstance(doc, dict):
            continue
        now = set(entries(doc))
        for e in [e for e in open_ if e not in now]:
            c, since = open_.pop(e)
            rows.append((e[0], c[:12], since[:10], date[:10], *e[1:]))
        for e in now:
            open_.setdefault(e, (commit, date))
    for e, (c, since) in open_.items():
        rows.append((e[0], c[:12], since[:10], "", *e[1:]))
    rows.sort(key=lambda r: (r[4], r[5], r[0], r[2], r[8], r[9], r[10]))
    with OUT.open("w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(FIELDS)
        w.writerows(rows)
    print(f"{len(rows)} entries from {len(log)} commits -> {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
