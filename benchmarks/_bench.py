"""Helpers shared by the benchmark scripts: timing, machine description, markdown output."""

from __future__ import annotations

import datetime as dt
import os
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def timings(fn: Callable[[], object], repeats: int) -> tuple[list[float], object]:
    """Wall times (s, time.perf_counter) of ``repeats`` calls, and the last result."""
    times = []
    out: object = None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return times, out


def best_of(fn: Callable[[], object], repeats: int) -> tuple[float, object]:
    """Fastest wall time of ``repeats`` calls, and the last result."""
    times, out = timings(fn, repeats)
    return min(times), out


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine() -> dict[str, str]:
    """What the numbers were measured on."""
    import numpy as np

    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "nproc": str(usable),
        "cpu": cpu_model(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "platform": platform.platform(),
        "interpreter": sys.executable,
    }


def commit() -> str:
    """The repository's commit, marked when src/ has uncommitted changes."""
    import subprocess

    repo = Path(__file__).resolve().parents[1]
    try:
        head = subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(repo), "status", "--porcelain", "--", "src"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + (" with uncommitted changes in src/" if dirty else "")


def machine_lines() -> list[str]:
    m = machine()
    return [
        f"- date: {m['date']}; clusterwright commit {commit()}",
        f"- machine: {m['nproc']} cores usable (nproc), {m['cpu']}, {m['platform']}",
        f"- python {m['python']}, numpy {m['numpy']} ({m['interpreter']})",
    ]


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    """A GitHub markdown table."""
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out


def write(name: str, lines: list[str]) -> Path:
    """Print ``lines`` and write them to benchmarks/results/``name``."""
    text = "\n".join(lines) + "\n"
    print(text)
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / name
    path.write_text(text, encoding="utf-8")
    print(f"wrote {path}")
    return path


def si(x: float) -> str:
    """12345.6 -> '12,346'; small numbers keep three significant digits."""
    if x >= 100:
        return f"{x:,.0f}"
    return f"{x:.3g}"
