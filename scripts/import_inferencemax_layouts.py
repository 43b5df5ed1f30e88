"""Import InferenceMAX's disaggregated deployments into ``validation/inferencemax_layouts.csv``.

    python scripts/import_inferencemax_layouts.py [--repo DIR]  (a clone of InferenceX)

Source: github.com/SemiAnalysisAI/InferenceX (Apache-2.0), every commit that changed
``.github/configs/nvidia-master.yaml``, or after it moved (2026-07-02)
``configs/nvidia-master.yaml`` and ``configs/deprecated/nvidia-*-master.yaml``. Each
disaggregated benchmark there lists, per input and output length, search-space entries:
the client counts it runs (``conc-list``), the prefill and decode worker counts with each
worker's TP, EP and attention data parallelism, and speculative decoding. AIConfigurator's
``silicon_sample.csv`` holds hundreds of these runs (``source_file=2026-...csv`` dumps)
with the layout columns only partly filled: no worker counts, and TP columns that do not
say whether attention was data parallel. The benchmark's own configuration in effect on
the day a row was measured says it; the validation reads it from this file
(``serving_silicon.complete_from_layouts``), keyed on what the row does record (system,
engine, model, precision, lengths, concurrency, the prefill and decode TP).

Before the configuration file held them (until 2025-12-05), GB200's disaggregated runs
were hard-coded in ``runners/launch_gb200-nv.sh``, and those versions are read too
(``launch_entries``):

- TensorRT-LLM: ``./submit_disagg.sh "mtp=on|off" "tep|dep" ctx gen gen_tp gen_batch
  gen_max_tokens mem_fraction mtp eplb "concurrencies"``, the arguments of Dynamo's
  ``components/backends/trtllm/performance_sweeps/submit_disagg.sh`` (ai-dynamo/dynamo,
  Apache-2.0, the version whose ``run_single`` takes these ten values). Each context server
  runs on one 4-GPU node at TP 4. When the configuration file took these runs over
  (nvidia-master.yaml at 93e1b3ca1, 2025-12-05), it transcribed them: "ctx_tp_size is
  hardcoded to 4", attention data parallelism as the generation servers', and a context
  max batch of 4 at 1k/1k and 1 at 8k/1k (``CTX_BATCH``). Generation servers run TP
  ``gen_tp`` with EP equal to it; ``tep`` means no attention data parallelism and ``dep``
  means attention data parallelism. Their max batch is ``gen_batch``.
- Concurrency: Dynamo's client (``scripts/bench.sh``) runs each listed concurrency times the
  number of generation servers (``concurrency=$((concurrency * num_gen_servers))``), so the
  entries list the products. The configuration's entries whose benchmark script still calls
  those performance sweeps (GB200 TensorRT-LLM until 2026-01-30) are multiplied the same
  way. Their ``PREFILL_MAX_BATCH_SIZE`` / ``DECODE_MAX_BATCH_SIZE`` settings fill the
  max-batch columns.
- SGLang: ``bash ./submit_disagg.sh prefill_nodes prefill_workers decode_nodes
  decode_workers ...`` on 4-GPU GB200 nodes. Each worker spans its role's nodes / workers
  x 4 GPUs with attention data parallelism and EP over them. The 2025-12-01 version says
  so in its comments: "6 3 12 1" is "3 prefill workers each at DEP8 and 1 decode worker at
  DEP48".
- Precision: from the model each framework serves there. TensorRT-LLM serves
  ``deepseek-r1-0528-fp4-v2`` (FP4) and SGLang serves ``deepseek-r1-0528`` (FP8).

An entry is written once per stretch of commits that hold it unchanged: ``valid_from`` is
the date of the first commit holding it, ``valid_to`` the date of the first later commit
that no longer does (empty: still held at the last commit read).
"""

from __future__ import annotations

import argparse
import csv
import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
REPO = Path("/work/.mirror/SemiAnalysisAI+InferenceX/repo")
# The configuration: .github/configs/nvidia-master.yaml until e9fc98807 (2026-07-02) moved it
# to configs/, where the benchmarks it retires go to configs/deprecated/nvidia-*-master.yaml
CONFIG = ":(glob)**/configs/**/nvidia-*master.yaml"
CONFIG_FILE = re.compile(r"(\.github/)?configs/(deprecated/)?nvidia-[\w.+-]*master\.yaml")
LAUNCH_GB200 = "runners/launch_gb200-nv.sh"
GB200_NODE_GPUS = 4  # a GB200 NVL72 compute tray: 2 Grace CPUs, 4 Blackwell GPUs
# The context servers' max batch by input length, as the configuration transcribed these runs
# when it took them over (nvidia-master.yaml at 93e1b3ca1, 2025-12-05: "For 1k/1k: prefill
# batch-size=4, max-num-tokens=4608", "For 8k/1k: prefill batch-size=1, max-num-tokens=8448").
CTX_BATCH = {"1024": "4", "8192": "1"}
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
    # AIConfigurator's file names GLM-5 by its earlier organisation (zhipuai)
    "glm5": "zai-org/GLM-5 zhipuai/GLM-5",
    "kimik2.5": "moonshotai/Kimi-K2.5",
    "qwen3.5": "Qwen/Qwen3.5-397B-A17B",
}
FIELDS = ("config", "file", "commit", "valid_from", "valid_to", "system", "backend",
          "model_paths", "precision", "isl", "osl", "concurrencies",
          "prefill_workers", "prefill_tp", "prefill_ep", "prefill_dp_attn", "prefill_max_batch",
          "decode_workers", "decode_tp", "decode_ep", "decode_dp_attn", "decode_max_batch",
          "spec_decoding", "recipe", "ep_from")


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          check=True).stdout


def _mapped(value: str, table: tuple[tuple[str, str], ...]) -> str | None:
    return next((out for key, out in table if key in value), None)


def _role(x: dict[str, Any]) -> tuple[str, str, str, str]:
    return (str(int(x["num-worker"])), str(int(x["tp"])), str(int(x.get("ep") or 1)),
            "yes" if x.get("dp-attn") else "no")


def _setting(e: dict[str, Any], key: str) -> str:
    """A value from a search-space entry's ``additional-settings`` (``KEY=value``), or ""."""
    for role in ("prefill", "decode"):
        for s in (e.get(role) or {}).get("additional-settings") or []:
            if isinstance(s, str) and s.startswith(key + "="):
                return s.split("=", 1)[1]
    return ""


def _fixed_lengths(v: dict[str, Any]) -> list[dict[str, Any]]:
    """A benchmark's fixed input/output-length sweeps: ``seq-len-configs`` until 2026-05-01,
    ``scenarios: fixed-seq-len`` from b7ae44045 on (which added agentic trace replays beside
    them, ``scenarios: agentic-coding``, whose lengths are a trace's, not a row's)."""
    scenarios = v.get("scenarios")
    fixed = scenarios.get("fixed-seq-len") if isinstance(scenarios, dict) else None
    got = v.get("seq-len-configs") or fixed or []
    return [s for s in got if isinstance(s, dict)] if isinstance(got, list) else []


def entries(doc: dict[str, Any], sweeps: frozenset[str] = frozenset()) -> list[tuple[str, ...]]:
    """The disaggregated search-space entries of one version of the config, as rows (without
    the commit columns). ``sweeps``: the benchmark scripts of that version that run Dynamo's
    TensorRT-LLM performance sweeps, whose client runs each listed concurrency times the
    generation servers (see the module docstring); their entries list the products."""
    out: list[tuple[str, ...]] = []
    for name, v in doc.items():
        if not (isinstance(v, dict) and v.get("disagg")):
            continue
        system = _mapped(str(v.get("runner", "")), RUNNERS)
        backend = _mapped(str(v.get("framework", "")), FRAMEWORKS)
        models = MODELS.get(str(v.get("model-prefix", "")))
        if system is None or backend is None or models is None:
            continue
        for s in _fixed_lengths(v):
            for e in s.get("search-space") or []:
                try:
                    conc = " ".join(str(int(c)) for c in e["conc-list"])
                    pre, dec = _role(e["prefill"]), _role(e["decode"])
                except (KeyError, TypeError, ValueError):
                    continue
                if pre[0] == "0" or dec[0] == "0":
                    continue  # a role without workers: not a deployment
                script = "_".join(str(x) for x in (v.get("model-prefix"), v.get("precision"),
                                                    system, v.get("framework")))
                if any(x.startswith(script) for x in sweeps):
                    conc = " ".join(str(int(c) * int(dec[0])) for c in conc.split())
                out.append((name, system, backend, models, str(v.get("precision", "")),
                            str(int(s["isl"])), str(int(s["osl"])), conc, *pre,
                            _setting(e, "PREFILL_MAX_BATCH_SIZE"), *dec,
                            _setting(e, "DECODE_MAX_BATCH_SIZE"),
                            str(e.get("spec-decoding") or "none"), _setting(e, "CONFIG_FILE")))
    return out


_LENGTHS = re.compile(r'"\$(?:isl|ISL)" = "(\d+)" \] && \[ "\$(?:osl|OSL)" = "(\d+)"')
_TRT_RUN = re.compile(r'\./submit_disagg\.sh\s+"mtp=(on|off)"\s+"(tep|dep)"\s+(\d+)\s+(\d+)\s+'
                      r'(\d+)\s+(\d+)\s+\d+\s+"?[\d.]+"?\s+(\d+)\s+(\d+)\s+"([\d ]+)"')
_SGL_RUN = re.compile(r"submit_disagg\.sh\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+\d+\s+\$ISL\s+\$OSL\s+"
                      r"\$(\w+)")
_SGL_LIST = re.compile(r'(\w+)="([\dx]+)"')
_MODEL_PATH = re.compile(r'MODEL_PATH="([^"]+)"')


def launch_entries(text: str) -> list[tuple[str, ...]]:
    """GB200's hard-coded disaggregated runs in one version of ``runners/launch_gb200-nv.sh``
    (see the module docstring for what each argument means and where that is written)."""
    paths = _MODEL_PATH.findall(text)
    trt_prec = "fp4" if any("fp4" in p for p in paths) else "fp8"
    sgl_prec = "fp8" if any("fp4" not in p for p in paths) else "fp4"
    models = MODELS["dsr1"]
    out: list[tuple[str, ...]] = []
    lengths: tuple[str, str] | None = None
    lists: dict[str, str] = {}
    for line in text.splitlines():
        code = line.split("#", 1)[0] if line.lstrip().startswith("#") else line
        if m := _LENGTHS.search(code):
            lengths = (m.group(1), m.group(2))
        if m := _SGL_LIST.search(code):
            lists[m.group(1)] = m.group(2)
        if lengths is None:
            continue
        if m := _TRT_RUN.search(code):
            mtp_on, mode, ctx, gen, tp, batch, mtp, eplb, concs = m.groups()
            total = " ".join(str(int(c) * int(gen)) for c in concs.split())
            name = f"ctx{ctx}_gen{gen}_{mode}{tp}_batch{batch}_eplb{eplb}_mtp{mtp}"
            dp = "yes" if mode == "dep" else "no"
            out.append(("dynamo-trtllm", "gb200", "trtllm", models, trt_prec, *lengths, total,
                        ctx, "4", "4", dp, CTX_BATCH.get(lengths[0], ""), gen, tp, tp, dp,
                        batch, "mtp" if mtp_on == "on" else "none", name))
        elif (m := _SGL_RUN.search(code)) and m.group(5) in lists:
            pn, pw, dn, dw = (int(x) for x in m.groups()[:4])
            ptp, dtp = pn * GB200_NODE_GPUS // pw, dn * GB200_NODE_GPUS // dw
            out.append(("dynamo-sglang", "gb200", "sglang", models, sgl_prec,
                        *lengths, " ".join(lists[m.group(5)].split("x")), str(pw), str(ptp),
                        str(ptp), "yes", "", str(dw), str(dtp), str(dtp), "yes", "", "none",
                        ""))
    return out


def _config_reader(repo: Path) -> Callable[[str, str], list[tuple[str, ...]]]:
    def read(text: str, commit: str) -> list[tuple[str, ...]]:
        doc = yaml.load(text, Loader=yaml.CSafeLoader)
        if not isinstance(doc, dict):
            return []
        grep = subprocess.run(["git", "-C", str(repo), "grep", "-l", "performance_sweeps",
                               commit, "--", "benchmarks"], capture_output=True, text=True)
        sweeps = frozenset(Path(ln.split(":", 1)[-1]).name
                           for ln in grep.stdout.splitlines() if ln.strip())
        return entries(doc, sweeps)
    return read


def history(repo: Path, path: str, read: Callable[[str, str], list[tuple[str, ...]]],
            match: re.Pattern[str] | None = None) -> list[tuple[str, ...]]:
    """Every entry ``read`` finds in the versions of ``path`` (a file, or a pathspec of
    several whose files ``match`` names: ``CONFIG``), with the file and commit that first held
    it and the dates of each stretch of versions that hold it. At each commit the entries of
    every such file are one version: a benchmark moved from one file to another stays open."""
    log = [ln.split() for ln in _git(repo, "log", "--reverse", "--format=%H %cI", "--",
                                      path).splitlines() if ln.strip()]
    open_: dict[tuple[str, ...], tuple[str, str, str]] = {}  # entry -> (file, commit, since)
    rows: list[tuple[str, ...]] = []
    for commit, date in log:
        tree = _git(repo, "ls-tree", "-r", "--name-only", commit, "--",
                    *([".github", "configs"] if match else [path])).splitlines()
        files = [f for f in tree if f.strip() and (match.fullmatch(f) if match else True)]
        now: dict[tuple[str, ...], str] = {}
        try:
            for f in files:
                for e in read(_git(repo, "show", f"{commit}:{f}"), commit):
                    now.setdefault(e, f)
        except (subprocess.CalledProcessError, yaml.YAMLError):
            continue  # a broken version: its entries stay open
        if not files:
            continue  # a deleting commit: its entries stay open
        for e in [e for e in open_ if e not in now]:
            f, c, since = open_.pop(e)
            rows.append((e[0], f, c[:12], since[:10], date[:10], *e[1:]))
        for e, f in now.items():
            open_.setdefault(e, (f, commit, date))
    for e, (f, c, since) in open_.items():
        rows.append((e[0], f, c[:12], since[:10], "", *e[1:]))
    return rows


def corrected_ep(rows: list[tuple[str, ...]]) -> list[tuple[str, ...]]:
    """Placeholder EP filled from the configuration's own later correction.

    Until 2026-01-19 the GB200 Dynamo SGLang entries gave their workers ``tp: 1`` and
    ``ep: 1``: no GPU count. a27b37e5c ("fix: update ep metadata in gb200 dynamo sglang
    configs to match comments") set ``EP = (NODES x 4 GPUs) / num-workers`` from the node
    counts their comments had carried all along, and changed nothing else. An entry whose
    role has TP 1 and EP 1 takes that role's EP from a later entry of
    the same benchmark that differs from it only in EP: the same lengths, client counts,
    worker counts, attention DP, speculative decoding and recipe. It is left as it was
    where no such entry exists, or where two disagree. ``ep_from`` names the commit that
    corrected it."""
    f = {name: i for i, name in enumerate(FIELDS[:-1])}
    same = [f[k] for k in ("config", "system", "backend", "precision", "isl", "osl",
                           "concurrencies", "prefill_workers", "prefill_tp",
                           "prefill_dp_attn", "decode_workers", "decode_tp", "decode_dp_attn",
                           "spec_decoding", "recipe")]
    eps = (f["prefill_ep"], f["decode_ep"])
    later: dict[tuple[str, ...], set[tuple[tuple[str, str], str]]] = {}
    for r in rows:
        if any(r[e] != "1" for e in eps):
            later.setdefault(tuple(r[i] for i in same), set()).add(
                ((r[eps[0]], r[eps[1]]), r[f["commit"]]))
    out = []
    for r in rows:
        fix = ""
        holder = [role for role in ("prefill", "decode")
                  if r[f[role + "_tp"]] == "1" and r[f[role + "_ep"]] == "1"]
        found = later.get(tuple(r[i] for i in same), set())
        if holder and len({ep for ep, _ in found}) == 1:
            (ep, commit), = sorted(found)[:1]
            r = list(r)  # type: ignore[assignment]
            for role, value in zip(("prefill", "decode"), ep, strict=True):
                if role in holder:
                    r[f[role + "_ep"]] = value  # type: ignore[index]
            r = tuple(r)
            fix = commit
        out.append((*r, fix))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repo", type=Path, default=REPO)
    repo = ap.parse_args().repo
    rows = (history(repo, CONFIG, _config_reader(repo), CONFIG_FILE)
            + history(repo, LAUNCH_GB200, lambda text, _commit: launch_entries(text)))
    rows = corrected_ep(rows)
    rows.sort(key=lambda r: (r[5], r[6], r[0], r[3], r[9], r[10], r[11], r))
    with OUT.open("w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(FIELDS)
        w.writerows(rows)
    print(f"{len(rows)} entries -> {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
