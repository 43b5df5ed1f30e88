"""The shipped ``clusterwright netsim`` experiments: run them, print a table, draw the plots.

Five experiments on DGX H100 fabrics built from QM9700 (radix 64, 400G) switches
(docs/netsim.md explains each; examples/netsim/README.md has them as shell commands):

1. routing      ECMP (several seeds, 1/4/8 QPs) vs adaptive vs spraying, 2 and 3 tiers
                (tree all-reduce on both; all-to-all on a 2-tier and on a 2-pod 3-tier fabric)
2. oversub      1:1 vs 1:3 leaf oversubscription on the same jobs
3. interference two jobs sharing the fabric, contiguous vs interleaved placement
4. failure      one or two spines down from the start, and a spine failing mid-run
5. placement    one job on a quarter of the fabric: contiguous, spread or random servers

Runs in-process (``run_netsim``), about 1.5 minutes on 2 cores. ``--quick`` runs the same
definitions on small fabrics in a few seconds (the test uses it).

    .venv/bin/python scripts/netsim_experiments.py            # table + docs/img/netsim-*.svg
    .venv/bin/python scripts/netsim_experiments.py --commands # the equivalent CLI commands
"""

from __future__ import annotations

import argparse
import json
import math
import shlex
import statistics
import sys
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

from clusterwright.catalog.registry import Catalog, load_catalog
from clusterwright.sim.netsim import NetsimRequest, run_netsim
from clusterwright.spec.fabric import FabricRequest

ROOT = Path(__file__).resolve().parents[1]
GB = 1e9


# --------------------------------------------------------------------------- definitions
@dataclass(frozen=True)
class Fabric:
    """The fabric flags of one case (``clusterwright fabric design`` inputs)."""

    nodes: int
    server: str = "dgx-h100"
    switch: str = "qm9700"
    oversubscription: float = 1.0
    tiers: int | None = None
    su_hosts: int | None = None


def _num(x: float) -> str:
    """``4e9`` rather than ``4e+09``."""
    return f"{x:g}".replace("e+0", "e").replace("e+", "e").replace("e-0", "e-")


@dataclass(frozen=True)
class Case:
    """One ``netsim`` run. ``category`` and ``series`` place it on its experiment's plot;
    runs that differ only in ``seed`` are aggregated (mean, min, max)."""

    experiment: str
    category: str
    series: str
    fabric: Fabric
    collective: str
    size_bytes: float
    routing: str = "ecmp"
    algorithm: str = "auto"
    seed: int = 0
    qps: int = 1
    ranks: int | None = None
    jobs: int = 1
    placement: str = "contiguous"
    pxn: bool = True
    failures: tuple[str, ...] = ()
    fail_at_s: float = 0.0

    def request(self) -> NetsimRequest:
        f = self.fabric
        return NetsimRequest(
            fabric=FabricRequest(server=f.server, nodes=f.nodes, switch=f.switch,
                                 oversubscription=f.oversubscription, tiers=f.tiers,
                                 su_hosts=f.su_hosts),
            collective=self.collective, size_bytes=self.size_bytes, routing=self.routing,
            algorithm=self.algorithm, seed=self.seed, qps=self.qps, ranks=self.ranks,
            jobs=self.jobs, placement=self.placement, pxn=self.pxn,
            failures=list(self.failures), fail_at_s=self.fail_at_s,
        )

    def argv(self) -> list[str]:
        """The same run as ``clusterwright netsim`` arguments (defaults left out)."""
        f = self.fabric
        a = ["netsim", "--server", f.server, "--nodes", str(f.nodes), "--switch", f.switch]
        if f.oversubscription != 1.0:
            a += ["--oversubscription", f"{f.oversubscription:g}"]
        if f.tiers is not None:
            a += ["--tiers", str(f.tiers)]
        if f.su_hosts is not None:
            a += ["--su-hosts", str(f.su_hosts)]
        a += ["--collective", self.collective, "--size-bytes", _num(self.size_bytes)]
        if self.algorithm != "auto":
            a += ["--algorithm", self.algorithm]
        if self.ranks is not None:
            a += ["--ranks", str(self.ranks)]
        if self.jobs != 1:
            a += ["--jobs", str(self.jobs)]
        if self.placement != "contiguous" or self.jobs > 1:
            a += ["--placement", self.placement]
        if not self.pxn:
            a += ["--no-pxn"]
        a += ["--routing", self.routing]
        if self.qps != 1:
            a += ["--qps", str(self.qps)]
        if self.seed != 0:
            a += ["--seed", str(self.seed)]
        for name in self.failures:
            a += ["--fail", name]
        if self.fail_at_s:
            a += ["--fail-at", _num(self.fail_at_s)]
        return a

    def command(self) -> str:
        return "clusterwright " + shlex.join(self.argv())


@dataclass(frozen=True)
class Scale:
    """Fabric sizes and repetitions; ``FULL`` for the docs, ``QUICK`` for the test."""

    two_tier: Fabric  # the main 2-tier fabric (two SUs, so rail traffic crosses spines)
    big_two_tier: Fabric  # a 2-tier fabric where a job can take part of it
    three_tier: Fabric
    three_tier_a2a: Fabric  # a small 3-tier fabric whose all-to-all crosses pods (cores)
    a2a_ranks: int  # the all-to-all's GPUs (a few hundred)
    part_ranks: int  # one job on part of big_two_tier
    seeds: tuple[int, ...]
    qp_seeds: tuple[int, ...]
    mid_run_s: float  # when the mid-run failure happens
    spines_to_fail: tuple[tuple[str, ...], ...] = field(default=())


FULL = Scale(
    two_tier=Fabric(64),  # 2 SUs of 32 servers, 8 spines
    big_two_tier=Fabric(128),  # 4 SUs
    three_tier=Fabric(512),  # 4 pods of 4 SUs
    # 8 SUs of 4 servers in 2 pods: all 256 GPUs' all-to-all sends half its bytes via cores.
    # (On the 512-server fabric an all-to-all crossing pods needs >1,024 GPUs, ~1M flows.)
    three_tier_a2a=Fabric(32, tiers=3, su_hosts=4),
    a2a_ranks=256,
    part_ranks=256,
    seeds=(0, 1, 2, 3, 4),
    qp_seeds=(0, 1, 2),
    mid_run_s=0.01,
    spines_to_fail=(("spine-001",), ("spine-001", "spine-002")),
)
QUICK = Scale(
    two_tier=Fabric(16, su_hosts=8),
    big_two_tier=Fabric(32, su_hosts=8),
    three_tier=Fabric(32, su_hosts=4, tiers=3),
    three_tier_a2a=Fabric(16, tiers=3, su_hosts=2),  # 8 SUs of 2 servers, 2 pods
    a2a_ranks=64,
    part_ranks=64,
    seeds=(0,),
    qp_seeds=(0,),
    mid_run_s=0.002,
    spines_to_fail=(("spine-001",),),
)

ALLREDUCE_BYTES = 4 * GB  # tree all-reduce: per-rail binary trees cross leaves and spines
A2A_BYTES = 1 * GB


def _routing_variants(base: Case, s: Scale) -> list[Case]:
    out = [replace(base, series="ECMP", seed=k) for k in s.seeds]
    for q in (4, 8):
        out += [replace(base, series=f"ECMP {q} QPs", qps=q, seed=k) for k in s.qp_seeds]
    out.append(replace(base, series="adaptive", routing="adaptive"))
    out.append(replace(base, series="spray", routing="spray"))
    return out


def exp_routing(s: Scale) -> list[Case]:
    """ECMP vs adaptive vs spraying: tree all-reduce and all-to-all, on 2 and 3 tiers."""
    cases: list[Case] = []
    for fab, name in ((s.two_tier, "2-tier"), (s.three_tier, "3-tier")):
        base = Case("routing", f"tree all-reduce, {name}", "", fab, "allreduce",
                    ALLREDUCE_BYTES, algorithm="tree")
        cases += _routing_variants(base, s)
    # Without PXN, 7/8 of an all-to-all changes rails, so it crosses the spines.
    base = Case("routing", "all-to-all no PXN, 2-tier", "", s.two_tier, "alltoall", A2A_BYTES,
                ranks=s.a2a_ranks, pxn=False)
    cases += _routing_variants(base, s)
    # The same all-to-all (every GPU of a 3-tier fabric in two pods): half the pairs cross
    # leaf, pod spine, core, pod spine, leaf.
    base = Case("routing", "all-to-all no PXN, 3-tier", "", s.three_tier_a2a, "alltoall",
                A2A_BYTES, pxn=False)
    cases += _routing_variants(base, s)
    return cases


def exp_oversub(s: Scale) -> list[Case]:
    """1:1 vs 1:3 at the leaf, same jobs (the designer re-sizes the SU: 48 servers at 1:3)."""
    cases = []
    jobs = (
        ("tree all-reduce, 64 servers", s.two_tier, "allreduce", ALLREDUCE_BYTES, None, True),
        ("tree all-reduce, 128 servers", s.big_two_tier, "allreduce", ALLREDUCE_BYTES, None,
         True),
        ("all-to-all no PXN", s.two_tier, "alltoall", A2A_BYTES, s.a2a_ranks, False),
    )
    for cat, fab, coll, size, ranks, pxn in jobs:
        for over in (1.0, 3.0):
            for routing in ("ecmp", "spray"):
                cases.append(Case(
                    "oversub", cat, f"1:{over:g} {routing}",
                    replace(fab, oversubscription=over), coll, size, routing=routing,
                    algorithm="tree" if coll == "allreduce" else "auto", ranks=ranks, pxn=pxn,
                ))
    return cases


def exp_interference(s: Scale) -> list[Case]:
    """Two jobs of half the fabric each, side by side (contiguous) or interleaved (spread)."""
    half = s.two_tier.nodes * 8 // 2
    cases = []
    for cat, coll, size, pxn in (("tree all-reduce", "allreduce", ALLREDUCE_BYTES, True),
                                 ("all-to-all no PXN", "alltoall", A2A_BYTES, False)):
        for placement in ("contiguous", "spread"):
            for routing in ("ecmp", "spray"):
                cases.append(Case(
                    "interference", cat, f"{placement} {routing}", s.two_tier, coll, size,
                    routing=routing, algorithm="tree" if coll == "allreduce" else "auto",
                    ranks=half, jobs=2, placement=placement, pxn=pxn,
                ))
    return cases


def exp_failure(s: Scale) -> list[Case]:
    """Spines down from the start, and one spine failing mid-run."""
    states: list[tuple[str, tuple[str, ...], float]] = [("healthy", (), 0.0)]
    for names in s.spines_to_fail:
        states.append((f"{len(names)} spines down" if len(names) > 1 else
                       f"{names[0]} down", names, 0.0))
    states.append((f"spine-001 fails at {s.mid_run_s * 1e3:g} ms", ("spine-001",), s.mid_run_s))
    cases = []
    for cat, coll, size, ranks, pxn in (
        ("tree all-reduce", "allreduce", ALLREDUCE_BYTES, None, True),
        ("all-to-all no PXN", "alltoall", A2A_BYTES, s.a2a_ranks, False),
    ):
        for series, names, at in states:
            base = Case("failure", f"{cat}, ECMP", series, s.two_tier, coll, size,
                        algorithm="tree" if coll == "allreduce" else "auto", ranks=ranks,
                        pxn=pxn, failures=names, fail_at_s=at)
            cases += [replace(base, seed=k) for k in s.qp_seeds]
            cases.append(replace(base, category=f"{cat}, spray", routing="spray"))
    return cases


def exp_placement(s: Scale) -> list[Case]:
    """One job on a quarter of the fabric: whole SU, spread over every SU, random servers.
    ECMP on the 1:1 fabric, spraying on a 1:3 one."""
    cases = []
    for cat, coll, size in (("tree all-reduce", "allreduce", ALLREDUCE_BYTES),
                            ("all-to-all (PXN)", "alltoall", A2A_BYTES)):
        for fab, routing, label in ((s.big_two_tier, "ecmp", "1:1 ECMP"),
                                    (replace(s.big_two_tier, oversubscription=3.0), "spray",
                                     "1:3 spray")):
            for placement in ("contiguous", "spread", "random"):
                seeds = s.qp_seeds if placement == "random" or routing == "ecmp" else (0,)
                for k in seeds:
                    cases.append(Case(
                        "placement", f"{cat}, {label}", placement, fab, coll, size,
                        routing=routing, algorithm="tree" if coll == "allreduce" else "auto",
                        ranks=s.part_ranks, placement=placement, seed=k,
                    ))
    return cases


EXPERIMENTS = {
    "routing": exp_routing,
    "oversub": exp_oversub,
    "interference": exp_interference,
    "failure": exp_failure,
    "placement": exp_placement,
}


def cases(scale: Scale, only: Iterable[str] | None = None) -> list[Case]:
    """Every case of the chosen experiments (all by default), in a stable order."""
    names = list(only) if only else list(EXPERIMENTS)
    unknown = [n for n in names if n not in EXPERIMENTS]
    if unknown:
        raise ValueError(f"unknown experiment(s) {unknown}; choose from {list(EXPERIMENTS)}")
    return [c for n in names for c in EXPERIMENTS[n](scale)]


# --------------------------------------------------------------------------- running
_CATALOG: Catalog | None = None


def _catalog() -> Catalog:
    global _CATALOG
    if _CATALOG is None:
        _CATALOG = load_catalog(env={})
    return _CATALOG


def run_case(case: Case) -> dict[str, Any]:
    """Simulate one case; the row keeps what the table and plots need."""
    d = run_netsim(case.request(), _catalog())
    t = d["completion_time_s"]
    return {
        "time_ms": t * 1e3,
        "busbw_gbps": d["busbw_gbps"],
        "closed_form_ms": d["closed_form_time_s"] * 1e3,
        # The uncontended alpha-beta time over the simulated time: 100% = no network loss.
        "pct_of_closed_form": 100.0 * d["closed_form_time_s"] / t,
        "slowdown_vs_solo": max(d.get("slowdown_vs_solo", [1.0])),
        "max_link_utilization": d["max_link_utilization"],
        "flows": d["flows"],
        "wall_s": d["timings"]["sim_wall_s"] + d["timings"]["build_wall_s"],
    }


def run_all(todo: Sequence[Case], workers: int = 1) -> list[dict[str, Any]]:
    """Run every case (in ``workers`` processes) and return one row per case."""
    if workers <= 1:
        results = [run_case(c) for c in todo]
    else:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            results = list(pool.map(run_case, todo, chunksize=1))
    return [{**asdict(c), "command": c.command(), **r} for c, r in zip(todo, results,
                                                                       strict=True)]


@dataclass
class Point:
    """Runs of one (category, series), aggregated over seeds."""

    experiment: str
    category: str
    series: str
    runs: list[dict[str, Any]]

    def stat(self, key: str) -> tuple[float, float, float]:
        v = [r[key] for r in self.runs]
        return statistics.fmean(v), min(v), max(v)


def aggregate(rows: Sequence[dict[str, Any]]) -> list[Point]:
    points: dict[tuple[str, str, str], Point] = {}
    for r in rows:
        key = (r["experiment"], r["category"], r["series"])
        points.setdefault(key, Point(*key, runs=[])).runs.append(r)
    return list(points.values())


def table(points: Sequence[Point]) -> str:
    """A Markdown table: one row per (experiment, category, series)."""
    head = ("| experiment | job | variant | runs | time ms (min-max) | busbw GB/s | "
            "% of closed form | slowdown vs solo |")
    lines = [head, "|---|---|---|---:|---:|---:|---:|---:|"]
    for p in points:
        t, tlo, thi = p.stat("time_ms")
        span = f"{t:.2f}" if len(p.runs) == 1 or thi - tlo < 0.005 else (
            f"{t:.2f} ({tlo:.2f}-{thi:.2f})")
        bus = p.stat("busbw_gbps")[0]
        pct = p.stat("pct_of_closed_form")[0]
        slow = p.stat("slowdown_vs_solo")
        slow_s = f"{slow[0]:.2f}" if p.runs[0]["jobs"] > 1 else ""
        lines.append(f"| {p.experiment} | {p.category} | {p.series} | {len(p.runs)} | {span} | "
                     f"{bus:.1f} | {pct:.0f}% | {slow_s} |")
    return "\n".join(lines)


# --------------------------------------------------------------------------- SVG
PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#b07aa1", "#9c755f",
           "#edc948", "#bab0ac", "#ff9da7")


def _axis(peak: float, ticks: int = 5) -> tuple[float, float]:
    """A round axis top at or above ``peak`` and its tick step (1, 2, 2.5 or 5 x 10^k)."""
    if peak <= 0:
        return 1.0, 0.2
    raw = peak / ticks
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    return math.ceil(peak / step - 1e-9) * step, step


def bar_chart(title: str, categories: Sequence[str], series: Sequence[str],
              values: Sequence[Sequence[float | None]], y_label: str,
              lows: Sequence[Sequence[float | None]] | None = None,
              highs: Sequence[Sequence[float | None]] | None = None,
              fmt: str = "{:.0f}", y_max: float | None = None,
              reference: float | None = None) -> str:
    """A self-contained grouped bar chart as SVG text.

    ``values[s][c]`` is series ``s`` in category ``c`` (None: no bar). ``lows``/``highs``
    draw a min-max whisker; ``reference`` a dashed horizontal line (e.g. 100%).
    """
    n_cat, n_ser = len(categories), len(series)
    bar_w = 24 if n_ser <= 4 else 22
    # Category labels wrap at ", "; a group is wide enough for its longest line.
    longest = max(len(part) for cat in categories for part in cat.split(", "))
    group_w = max(n_ser * bar_w + 30, 6.5 * longest + 12)
    left, right, top = 70, 20, 50
    legend_rows = math.ceil(n_ser / 3)
    bottom = 80 + 18 * legend_rows
    plot_h = 260
    width = max(left + right + n_cat * group_w, 560)
    group_w = (width - left - right) / n_cat
    height = top + plot_h + bottom
    peak = max([v for row in values for v in row if v is not None]
               + [h for row in (highs or []) for h in row if h is not None] + [reference or 0])
    y_top, step = _axis(y_max or peak * 1.08)

    def y(v: float) -> float:
        return top + plot_h * (1 - v / y_top)

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height}" '
        f'viewBox="0 0 {width:.0f} {height}" font-family="sans-serif" font-size="11">',
        f'<rect width="{width:.0f}" height="{height}" fill="white"/>',
        f'<text x="{width / 2:.0f}" y="22" text-anchor="middle" font-size="14" '
        f'font-weight="bold">{escape(title)}</text>',
    ]
    for i in range(round(y_top / step) + 1):  # gridlines and y ticks
        v = i * step
        out.append(f'<line x1="{left}" y1="{y(v):.1f}" x2="{width - right:.0f}" '
                   f'y2="{y(v):.1f}" stroke="#e0e0e0"/>')
        out.append(f'<text x="{left - 6}" y="{y(v) + 4:.1f}" text-anchor="end">'
                   f'{v:g}</text>')
    out.append(f'<text transform="translate(16,{top + plot_h / 2:.0f}) rotate(-90)" '
               f'text-anchor="middle">{escape(y_label)}</text>')
    for c, cat in enumerate(categories):
        x0 = left + c * group_w + (group_w - n_ser * bar_w) / 2
        for s in range(n_ser):
            v = values[s][c]
            if v is None:
                continue
            x = x0 + s * bar_w
            out.append(f'<rect x="{x:.1f}" y="{y(v):.1f}" width="{bar_w - 2}" '
                       f'height="{max(0.0, top + plot_h - y(v)):.1f}" '
                       f'fill="{PALETTE[s % len(PALETTE)]}"/>')
            lo = lows[s][c] if lows else None
            hi = highs[s][c] if highs else None
            label_y = y(v)
            if lo is not None and hi is not None and hi - lo > 1e-9 * max(1.0, abs(hi)):
                cx = x + (bar_w - 2) / 2
                out.append(f'<path d="M{cx:.1f},{y(lo):.1f}V{y(hi):.1f}M{cx - 4:.1f},'
                           f'{y(hi):.1f}h8M{cx - 4:.1f},{y(lo):.1f}h8" stroke="black"/>')
                label_y = min(label_y, y(hi))
            out.append(f'<text x="{x + (bar_w - 2) / 2:.1f}" y="{label_y - 4:.1f}" '
                       f'text-anchor="middle" font-size="9">{escape(fmt.format(v))}</text>')
        cx = left + (c + 0.5) * group_w
        lines = "".join(f'<tspan x="{cx:.1f}" dy="{0 if i == 0 else 13}">{escape(part)}</tspan>'
                        for i, part in enumerate(cat.split(", ")))
        out.append(f'<text x="{cx:.1f}" y="{top + plot_h + 16}" text-anchor="middle">'
                   f'{lines}</text>')
    if reference is not None:
        out.append(f'<line x1="{left}" y1="{y(reference):.1f}" x2="{width - right:.0f}" '
                   f'y2="{y(reference):.1f}" stroke="#555" stroke-dasharray="4 3"/>')
    out.append(f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_h}" stroke="black"/>')
    out.append(f'<line x1="{left}" y1="{top + plot_h}" x2="{width - right:.0f}" '
               f'y2="{top + plot_h}" stroke="black"/>')
    col_w = (width - left - right) / 3
    for s, name in enumerate(series):
        lx = left + (s % 3) * col_w
        ly = top + plot_h + 52 + 18 * (s // 3)
        out.append(f'<rect x="{lx:.1f}" y="{ly - 9}" width="12" height="12" '
                   f'fill="{PALETTE[s % len(PALETTE)]}"/>')
        out.append(f'<text x="{lx + 16:.1f}" y="{ly + 1}">{escape(name)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


PLOTS: dict[str, tuple[str, str, str, float | None]] = {
    # experiment: (title, metric, y label, reference line)
    "routing": ("ECMP vs adaptive routing vs spraying (DGX H100, QM9700)", "pct_of_closed_form",
                "% of uncontended closed form (min-max over seeds)", 100.0),
    "oversub": ("Leaf oversubscription 1:1 vs 1:3", "pct_of_closed_form",
                "% of uncontended closed form", 100.0),
    "interference": ("Two jobs sharing the fabric", "slowdown_vs_solo",
                     "slowdown vs the job alone (x)", 1.0),
    "failure": ("Spine failures (64 x DGX H100, 8 spines)", "pct_of_closed_form",
                "% of uncontended closed form (min-max over seeds)", 100.0),
    "placement": ("One job on a quarter of 128 servers: placement", "pct_of_closed_form",
                  "% of uncontended closed form (min-max over seeds)", 100.0),
}


def plot(experiment: str, points: Sequence[Point]) -> str:
    """The SVG of one experiment: categories on x, one bar per series, seed spread as
    whiskers."""
    title, metric, y_label, ref = PLOTS[experiment]
    pts = [p for p in points if p.experiment == experiment]
    cats = list(dict.fromkeys(p.category for p in pts))
    sers = list(dict.fromkeys(p.series for p in pts))
    by = {(p.category, p.series): p.stat(metric) for p in pts}
    grid = [[by.get((c, s)) for c in cats] for s in sers]
    vals = [[g[0] if g else None for g in row] for row in grid]
    lows = [[g[1] if g else None for g in row] for row in grid]
    highs = [[g[2] if g else None for g in row] for row in grid]
    fmt = "{:.2f}" if metric == "slowdown_vs_solo" else "{:.0f}"
    return bar_chart(title, cats, sers, vals, y_label, lows, highs, fmt=fmt, reference=ref)


# --------------------------------------------------------------------------- main
def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="small fabrics (seconds)")
    ap.add_argument("--only", default="", help=f"comma-separated subset of {list(EXPERIMENTS)}")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "img",
                    help="where the SVG plots go (default docs/img)")
    ap.add_argument("--no-plots", action="store_true", help="do not write SVG files")
    ap.add_argument("--json", type=Path, help="also write every run's row to this file")
    ap.add_argument("--workers", type=int, default=2, help="processes (default 2)")
    ap.add_argument("--commands", action="store_true",
                    help="print the equivalent CLI commands and exit")
    args = ap.parse_args(argv)
    only = [s for s in args.only.split(",") if s]
    todo = cases(QUICK if args.quick else FULL, only or None)
    if args.commands:
        for c in todo:
            print(f"# {c.experiment}: {c.category} / {c.series}\n{c.command()}")
        return 0
    t0 = time.perf_counter()
    rows = run_all(todo, args.workers)
    points = aggregate(rows)
    print(table(points))
    print(f"\n{len(rows)} runs in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    if not args.no_plots:
        args.out.mkdir(parents=True, exist_ok=True)
        for name in dict.fromkeys(p.experiment for p in points):
            path = args.out / f"netsim-{name}.svg"
            path.write_text(plot(name, points))
            print(f"wrote {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
