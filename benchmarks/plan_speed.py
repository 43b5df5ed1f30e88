"""Speed of ``clusterwright plan`` (``clusterwright.plan.scenario.plan_scenario``).

Measures, on this machine, for each shipped reference architecture (examples/<name>/):
  (a) ``plan_scenario`` in process, full and ``quick`` (what a sweep point runs), best of
      ``--repeats``, with the time of each stage (training planner, serving planner, fabric,
      power, TCO, reliability Monte Carlo, latency curves) from the blueprint's ``timings_s``;
  (b) ``clusterwright plan examples/<name>/scenario.yaml --out DIR --json`` as a subprocess:
      what a user waits for, with interpreter start, catalog load, writing every artifact
      (configs/, report.html) included; files and MB written.

Targets from the issue (reported, not asserted): example (b) training-1k-h100 under 10 s and
(c) frontier-16k under 60 s on 2 cores.

    python benchmarks/plan_speed.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _bench import best_of, machine_lines, table, write

from clusterwright.catalog.registry import load_catalog
from clusterwright.design.blueprint import Blueprint
from clusterwright.plan.scenario import plan_scenario
from clusterwright.spec.scenario import load_scenario

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ("training-1k-h100", "frontier-16k", "enterprise-inference-pool", "cloud-vs-onprem")
TARGETS = {"training-1k-h100": 10.0, "frontier-16k": 60.0}
STAGES = ("training", "serving", "finetune", "fabric", "power", "tco", "reliability", "curves",
          "decisions")


def cli(name: str) -> tuple[float, int, float]:
    exe = Path(sys.executable).with_name("clusterwright")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out"
        t0 = time.perf_counter()
        subprocess.run([str(exe), "plan", str(ROOT / "examples" / name / "scenario.yaml"),
                        "--out", str(out), "--json"], check=True, capture_output=True)
        wall = time.perf_counter() - t0
        files = [p for p in out.rglob("*") if p.is_file()]
        return wall, len(files), sum(p.stat().st_size for p in files) / 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    cat = load_catalog([])
    rows, stage_rows = [], []
    for name in EXAMPLES:
        sc, _ = load_scenario(ROOT / "examples" / name / "scenario.yaml")
        full, bp = best_of(lambda sc=sc: plan_scenario(sc, cat), args.repeats)
        quick, _ = best_of(lambda sc=sc: plan_scenario(sc, cat, quick=True), args.repeats)
        assert isinstance(bp, Blueprint)
        wall, files, mb = cli(name)
        target = TARGETS.get(name)
        met = "" if target is None else (f" ({'meets' if wall < target else 'misses'} "
                                         f"< {target:g} s)")
        r = bp.recommendation
        rows.append([name, f"{r['gpus']:,} {r['gpu']}", f"{full:.2f}", f"{quick:.2f}",
                     f"**{wall:.2f}**{met}", f"{files:,}", f"{mb:.1f}"])
        stage_rows.append([name] + [f"{bp.timings_s.get(s, 0.0):.2f}" for s in STAGES])
    lines = [
        "# clusterwright plan: speed",
        "",
        *machine_lines(),
        "",
        f"plan_scenario in process (best of {args.repeats}), full and quick (a sweep point), "
        "and the whole command as a subprocess (interpreter start, catalog, every artifact "
        "written: configs/, report.html):",
        "",
        *table(["example", "cluster", "plan_scenario s", "quick s", "`clusterwright plan` s",
                "files", "MB written"], rows),
        "",
        "Stage times of the full plan_scenario (s, the blueprint's `timings_s`):",
        "",
        *table(["example", *STAGES], stage_rows),
        "",
        "Targets (issue 8): example (b) training-1k-h100 under 10 s and (c) frontier-16k under "
        "60 s on 2 cores.",
    ]
    write("plan_speed.md", lines)


if __name__ == "__main__":
    main()
