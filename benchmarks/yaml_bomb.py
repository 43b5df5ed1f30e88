"""What a YAML bomb posted to the web workbench's /validate costs: CPU seconds, wall seconds and
peak memory per bomb, against the targets of 1 s of CPU and 100 MB.

The bombs and the measuring child are the test's (tests/web/test_yaml_bomb.py: billion
laughs, a megabyte of aliases, deep nesting, ~100,000 workloads, an echoed input); the test
holds a loose guard against an unbounded expansion and this script measures the target, best
of ``--repeats`` child runs (CPU time too rises on a loaded machine).

    python benchmarks/yaml_bomb.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from _bench import machine_lines, table, write

REPO = Path(__file__).resolve().parents[1]
CPU_TARGET_S = 1.0
PEAK_TARGET_BYTES = 100e6


def measure() -> dict[str, dict[str, float]]:
    sys.path.insert(0, str(REPO))
    from tests.web.test_yaml_bomb import CHILD  # the test's own measuring child

    done = subprocess.run([sys.executable, "-c", CHILD], cwd=REPO, capture_output=True,
                          text=True, timeout=600, check=True)
    out: dict[str, dict[str, float]] = json.loads(done.stdout.strip().splitlines()[-1])
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    runs = [measure() for _ in range(a.repeats)]
    rows = []
    for name in runs[0]:
        cpu = min(r[name]["cpu_s"] for r in runs)
        wall = min(r[name]["seconds"] for r in runs)
        peak = max(r[name]["peak_bytes"] for r in runs)
        rows.append([name, f"{runs[0][name]['bytes']:,}", f"{cpu * 1e3:.0f}", f"{wall * 1e3:.0f}",
                     f"{peak / 1e6:.1f}",
                     "yes" if cpu < CPU_TARGET_S and peak < PEAK_TARGET_BYTES else "no"])
    lines = ["# YAML bombs posted to /validate", "", *machine_lines(), "",
             f"Best of {a.repeats} runs of the measuring child of tests/web/test_yaml_bomb.py "
             "(CPU of the whole process, server threads and client); peak is tracemalloc's "
             "of the second post.", "",
             *table(["bomb", "bytes posted", "CPU ms", "wall ms", "peak MB",
                     "within 1 s CPU and 100 MB"], rows)]
    write("yaml_bomb.md", lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
