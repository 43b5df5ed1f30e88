"""Speed of `train plan` on a 6,144-chip TPU v5p slice and of `train multisite` on 2 sites x
16,384 H100 (issue 22 target: under 5 s each as a command on 2 cores): in process (best of 3)
and as the whole command (a subprocess: interpreter start, catalog, imports)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from _bench import RESULTS, best_of, cpu_model

from clusterwright.catalog.registry import load_catalog
from clusterwright.plan.multisite import MultisiteRequest, Site, plan_multisite
from clusterwright.plan.train_request import TrainPlanRequest, plan_training

ROOT = Path(__file__).resolve().parents[1]
TPU_CMD = ["train", "plan", "--model", "llama-3.1-70b", "--gpu", "tpu-v5p", "--gpus", "6144",
           "--slice", "16x16x24", "--seq-len", "8192", "--tokens", "2e12", "--json"]
MS_CMD = ["train", "multisite", "--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--sites", "2",
          "--site-mw", "30", "--gpus", "32768", "--wan-gbps", "400", "--latency-ms", "20",
          "--seq-len", "8192", "--tokens", "15e12", "--json"]


def command_s(args: list[str]) -> float:
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "clusterwright", *args], check=True,
                       capture_output=True, env={"PYTHONPATH": str(ROOT / "src"), "PATH": ""})
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    cat = load_catalog(env={})
    arch = cat.model("llama-3.1-70b")
    tpu_in, _ = best_of(lambda: plan_training(cat, TrainPlanRequest(
        arch, "tpu-v5p", 6144, 8192, tokens=2e12, slice="16x16x24")), 3)
    sites = tuple(Site(f"s{i}", 30.0, 400.0, 20.0) for i in range(2))
    ms_in, _ = best_of(lambda: plan_multisite(cat, MultisiteRequest(
        arch, "h100-sxm", sites, 32768, 8192, tokens=15e12)), 3)
    tpu_cmd, ms_cmd = command_s(TPU_CMD), command_s(MS_CMD)
    lines = [
        "# train plan on TPU slices and train multisite: speed", "",
        f"- date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; machine: {cpu_model()}, "
        "2 cores shared with other work", "",
        "| case | in process s (best of 3) | command s (best of 3) | target |",
        "|---|---|---|---|",
        f"| `train plan` llama-3.1-70b on a 16x16x24 TPU v5p slice (6,144 chips) | {tpu_in:.2f} "
        f"| {tpu_cmd:.2f} | < 5 s: {'met' if tpu_cmd < 5 else 'NOT met'} |",
        f"| `train multisite` llama-3.1-70b, 2 sites x 16,384 H100 | {ms_in:.2f} | {ms_cmd:.2f} "
        f"| < 5 s: {'met' if ms_cmd < 5 else 'NOT met'} |",
    ]
    out = "\n".join(lines) + "\n"
    (RESULTS / "accel_speed.md").write_text(out, encoding="utf-8")
    print(out)


if __name__ == "__main__":
    main()
