"""Import the ML.ENERGY Leaderboard v3 LLM measurements into ``validation/serving_energy.csv``.

    python scripts/import_mlenergy.py [--repo /work/.mirror/ml-energy+leaderboard/repo]

Source: github.com/ml-energy/leaderboard at commit 0cd52da (``public/data/models/*.json``,
built from the ML.ENERGY Benchmark v3 runs by ``scripts/build_data.py`` of that repository;
no LICENSE file in the repository at that commit, so the rows are cited, not redistributed
beyond the numbers). The benchmark (github.com/ml-energy/benchmark, docs/overview.md) serves
LLMs with vLLM 0.11.1 in its OpenAI-compatible server, sends every request at once
(request_rate inf) and caps ``max_num_seqs``; GPU energy is read with Zeus (NVML) in the
steady state, so ``avg_power_watts`` is the board power summed over the run's GPUs.

Kept: the text-LLM tasks (lm-arena-chat, gpqa) of models whose Hugging Face id a catalog
model lists in ``hf_ids``, on H100 SXM and B200, in layouts the serving step model runs
(tensor parallel; MoE expert parallel inside the TP group, as vLLM runs
``--enable-expert-parallel`` with one data-parallel rank). Dropped: attention data
parallelism (data_parallel > 1) and the code-completion task (no catalog model).

Input lengths are not in the leaderboard's data (the task files list configurations only,
and the benchmark tokenizes its prompts at run time): ``INPUT_LEN`` below is an estimate per
task, and the ``input_len_basis`` column says so. Output lengths are the measured means.

Split, fixed before any prediction was looked at: development = dense 16-bit models on H100
(Llama 3.1 8B and 70B, Qwen3 32B), the rows the serving power constants are fitted on
(``scripts/calibrate_serving_power.py``); held out = everything else (every B200 row, MoE,
FP8 and MXFP4 checkpoints, Llama 3.3 70B and 3.1 405B).
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
from pathlib import Path

from clusterwright.catalog.registry import load_catalog

ROOT = Path(__file__).resolve().parents[1]
REPO = Path("/work/.mirror/ml-energy+leaderboard/repo")
COMMIT = "0cd52da"
TASKS = ("lm-arena-chat", "gpqa")
GPUS = {"H100": "h100-sxm", "B200": "b200"}
PRECISIONS = {"bfloat16": "bf16", "fp8": "fp8", "mxfp4": "mxfp4"}
# [estimate] Mean prompt tokens per task, chat template included. lm-arena-chat: first user
# turns of LMArena conversations (arena-human-preference-100k); LMSYS-Chat-1M (Zheng et al.,
# ICLR 2024, Table 1) reports about 70 tokens per user prompt [M: recollection], plus a chat
# template of ~30. gpqa: a GPQA Diamond question with four options and the instruction,
# ~250 tokens [estimate from the dataset's typical question length]. Decode power and
# inter-token latency depend on it only through the KV cache read and the prefill share.
INPUT_LEN = {"lm-arena-chat": 100, "gpqa": 250}
DEV_MODELS = {"meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Llama-3.1-70B-Instruct",
              "Qwen/Qwen3-32B"}
COLUMNS = ("id", "model", "hf_id", "task", "gpu", "num_gpus", "tp", "ep", "dp", "precision",
           "max_num_seqs", "avg_batch_size", "input_len", "input_len_basis", "avg_output_len",
           "power_w_per_gpu", "energy_per_token_j", "median_itl_ms", "p90_itl_ms",
           "output_tokens_per_s", "set", "source")


def _show(repo: Path, path: str) -> dict:
    out = subprocess.check_output(["git", "-C", str(repo), "show", f"{COMMIT}:{path}"])
    return json.loads(out)  # type: ignore[no-any-return]


def rows(repo: Path) -> list[dict[str, object]]:
    cat = load_catalog(env={})
    by_hf = {h: m.id for m in cat.all("models") for h in m.hf_ids}
    names = subprocess.check_output(
        ["git", "-C", str(repo), "ls-tree", "--name-only", COMMIT, "public/data/models/"]
    ).decode().split()
    out: list[dict[str, object]] = []
    for path in sorted(names):
        m = _show(repo, path)
        hf, task = m["model_id"], m["task"]
        if task not in TASKS or hf not in by_hf:
            continue
        model = by_hf[hf]
        dense = not cat.model(model).is_moe
        prec = PRECISIONS[m["weight_precision"]]
        for c in m["configurations"]:
            gpu = GPUS.get(c["gpu_model"])
            par = c["parallelization"]
            tp, ep, dp = (int(par["tensor_parallel"]), int(par["expert_parallel"]),
                          int(par["data_parallel"]))
            n = int(c["num_gpus"])
            if gpu is None or dp > 1:
                continue
            # vLLM's expert parallelism with one DP rank runs attention TP over all GPUs
            # (the leaderboard records it as tensor_parallel 1, expert_parallel n).
            tp_run = n
            ep_run = ep if ep > 1 else 1
            dev = (dense and gpu == "h100-sxm" and prec == "bf16" and hf in DEV_MODELS)
            seqs = int(c["max_num_seqs"])
            out.append({
                "id": f"{hf.split('/')[-1]}@{task}@{gpu}x{n}@seqs{seqs}",
                "model": model, "hf_id": hf, "task": task, "gpu": gpu, "num_gpus": n,
                "tp": tp_run, "ep": ep_run, "dp": dp, "precision": prec,
                "max_num_seqs": seqs,
                "avg_batch_size": round(float(c["avg_batch_size"]), 3),
                "input_len": INPUT_LEN[task], "input_len_basis": "estimate per task",
                "avg_output_len": round(float(c["avg_output_len"]), 1),
                "power_w_per_gpu": round(float(c["avg_power_watts"]) / n, 1),
                "energy_per_token_j": round(float(c["energy_per_token_joules"]), 5),
                "median_itl_ms": round(float(c["median_itl_ms"]), 3),
                "p90_itl_ms": round(float(c["p90_itl_ms"]), 3),
                "output_tokens_per_s": round(float(c["output_throughput_tokens_per_sec"]), 1),
                "set": "dev" if dev else "held-out",
                "source": (f"ML.ENERGY Leaderboard v3, github.com/ml-energy/leaderboard@{COMMIT} "
                           f"{path} (vLLM 0.11.1, Zeus/NVML GPU power)"),
            })
            assert tp in (1, n), f"{path}: tp {tp} on {n} GPUs"
    # A task file may hold the same configuration measured twice (Qwen3-30B-A3B on 2 x H100):
    # the second measurement gets its own id, in the file's order.
    seen: dict[object, int] = {}
    for r in out:
        seen[r["id"]] = seen.get(r["id"], 0) + 1
        if seen[r["id"]] > 1:
            r["id"] = f"{r['id']}@run{seen[r['id']]}"
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repo", type=Path, default=REPO)
    ap.add_argument("--out", type=Path, default=ROOT / "validation" / "serving_energy.csv")
    args = ap.parse_args()
    data = rows(args.repo)
    with open(args.out, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=COLUMNS, lineterminator="\n")
        w.writeheader()
        w.writerows(data)
    dev = sum(1 for r in data if r["set"] == "dev")
    print(f"{len(data)} rows ({dev} dev, {len(data) - dev} held out) -> {args.out}")


if __name__ == "__main__":
    main()
