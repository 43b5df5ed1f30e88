"""Fail-slow GPUs and nodes, from per-rank step times and DCGM metrics.

A GPU, NIC or link that is slow without failing ("fail-slow", Gunawi et al., "Fail-Slow at
Scale: Evidence of Hardware Performance Faults in Large Production Systems", FAST 2018)
stretches every iteration of a synchronous job, which runs at the pace of its slowest rank.

Method. Per iteration, each rank's own time is compared with the median of all ranks in
that iteration, using the modified z-score of Iglewicz and Hoaglin ("How to Detect and
Handle Outliers", ASQC 1993): ``M = 0.6745 (x - median) / MAD``, an outlier when
``M > 3.5``; the median absolute deviation is the robust scale Leys et al. recommend over the
standard deviation ("Detecting outliers: Do not use standard deviation around the mean,
use absolute deviation around the median", J. Exp. Soc. Psych. 49, 2013). A rank is
fail-slow when it is an outlier in at least half the iterations it appears in (persistence:
one slow iteration is noise, a garbage collection, a checkpoint) and its median ratio to
the iteration median is at least ``MIN_SLOWDOWN`` above 1 (a robust z-score alone flags
differences too small to matter when every rank is very close). A node is slow when one of
its ranks is; when most of its ranks are, the cause is the node (host, NIC, power,
cooling), otherwise the named GPUs.

Job slowdown. With the slow ranks, an iteration takes the maximum over all ranks; without
them, the maximum over the others. Each slow node's own effect is the job slowdown with
only it slow (the others fixed): ``median_i max(H_i, t_node,i) / median_i H_i`` where
``H_i`` is the healthy ranks' maximum. Fixing one of two equally slow nodes buys nothing,
so the per-node figures do not add; the job's is reported separately.

DCGM metrics (no step times needed): a GPU whose SM clock is an outlier below its peers'
(same M > 3.5 test, and at least ``MIN_SLOWDOWN`` below the median) is slow by
``median clock / its clock`` (a compute-bound kernel's time scales with the SM clock); the
clock-throttle reasons (NVML ``nvmlClocksEventReasons``: 0x8 HW slowdown, 0x20 SW thermal,
0x40 HW thermal, 0x80 HW power brake, 0x4 SW power cap) and violation counters say why.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from clusterwright.ingest.model import Sample, StepTime
from clusterwright.twin.model import Finding

Z_OUTLIER = 3.5  # Iglewicz and Hoaglin's threshold for the modified z-score
MIN_SLOWDOWN = 0.03  # a rank at least 3 % slower than the iteration's median
PERSISTENCE = 0.5  # ... in at least half of its iterations
MIN_RANKS = 4  # iterations with fewer ranks are not judged (no median to speak of)
THROTTLE = {0x4: "software power cap", 0x8: "hardware slowdown", 0x20: "software thermal "
            "slowdown", 0x40: "hardware thermal slowdown", 0x80: "hardware power brake"}


def modified_z(x: float, med: float, mad: float) -> float:
    """Iglewicz-Hoaglin modified z-score; a zero MAD (all others equal) gives +-inf for any
    departure and 0 for none."""
    if mad == 0:
        return 0.0 if x == med else (float("inf") if x > med else float("-inf"))
    return 0.6745 * (x - med) / mad


@dataclass
class SlowResult:
    """Slow-node findings and the job's estimated slowdown."""

    findings: list[Finding] = field(default_factory=list)
    job: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def detect(steps: list[StepTime], samples: list[Sample], resolve: Callable[[str], str | None],
           gpus_per_host: int) -> SlowResult:
    """Fail-slow findings from step times and GPU metrics (names resolved to planned
    hosts with ``resolve``; unknown names are skipped)."""
    out = SlowResult()
    by_node: dict[str, Finding] = {}
    if steps:
        _from_steps(steps, resolve, gpus_per_host, out, by_node)
    _from_dcgm(samples, resolve, out, by_node)
    out.findings = list(by_node.values())
    return out


def _from_steps(steps: list[StepTime], resolve: Callable[[str], str | None], gph: int,
                out: SlowResult, by_node: dict[str, Finding]) -> None:
    # (node, rank) -> iteration -> seconds; iteration -> ranks' seconds
    series: dict[tuple[str, int], dict[int, float]] = defaultdict(dict)
    where: dict[tuple[str, int], str] = {}
    for s in steps:
        node = resolve(s.node)
        if node is None:
            continue
        key = (node, s.rank)
        series[key][s.iteration] = s.seconds
        where.setdefault(key, f"{s.source}:{s.line}")
    if not series:
        return
    iters: dict[int, list[tuple[tuple[str, int], float]]] = defaultdict(list)
    for key, its in series.items():
        for i, t in its.items():
            iters[i].append((key, t))
    stats: dict[int, tuple[float, float]] = {}
    for i, row in iters.items():
        if len(row) < MIN_RANKS:
            continue
        vals = [t for _, t in row]
        med = statistics.median(vals)
        mad = statistics.median(abs(v - med) for v in vals)
        stats[i] = (med, mad)
    if not stats:
        out.notes.append(f"step times: fewer than {MIN_RANKS} ranks per iteration; slow "
                         "ranks not judged")
        return
    slow: dict[tuple[str, int], tuple[float, float, int]] = {}
    for key, its in series.items():
        judged = [(i, t) for i, t in its.items() if i in stats]
        if not judged:
            continue
        ratios = [t / stats[i][0] for i, t in judged]
        flagged = sum(1 for i, t in judged
                      if modified_z(t, *stats[i]) > Z_OUTLIER
                      and t / stats[i][0] >= 1 + MIN_SLOWDOWN)
        ratio = statistics.median(ratios)
        if flagged / len(judged) >= PERSISTENCE and ratio >= 1 + MIN_SLOWDOWN:
            slow[key] = (ratio, flagged / len(judged), len(judged))
    ranks = len(series)
    per_node_ranks: dict[str, int] = defaultdict(int)
    for node, _ in series:
        per_node_ranks[node] += 1
    rank_level = any(n > 1 for n in per_node_ranks.values())
    job_gpus = ranks if rank_level else ranks * gph
    healthy_max: dict[int, float] = {}
    all_max: dict[int, float] = {}
    for i, row in iters.items():
        if i not in stats:
            continue
        all_max[i] = max(t for _, t in row)
        h = [t for k, t in row if k not in slow]
        healthy_max[i] = max(h) if h else all_max[i]
    base = statistics.median(healthy_max.values())
    job_slow = statistics.median(all_max.values()) / base if base > 0 else 1.0
    out.job = {"ranks": ranks, "gpus": job_gpus, "iterations": len(stats),
               "slow_ranks": len(slow), "slowdown": job_slow,
               "method": "per-iteration median and MAD, modified z > 3.5 in >= half the "
                         "iterations (Iglewicz-Hoaglin 1993); job time = slowest rank"}
    nodes: dict[str, list[tuple[int, float, float, int]]] = defaultdict(list)
    for (node, rank), (ratio, pers, n) in slow.items():
        nodes[node].append((rank, ratio, pers, n))
    for node, rs in sorted(nodes.items()):
        per_iter = []
        for i in stats:
            worst = max((series[(node, r)].get(i, 0.0) for r, *_ in rs), default=0.0)
            per_iter.append(max(healthy_max[i], worst) / healthy_max[i] if healthy_max[i] else 1)
        standalone = statistics.median(per_iter) if per_iter else 1.0
        ratio = max(r for _, r, _, _ in rs)
        node_level = per_node_ranks[node] > 1 and len(rs) >= 0.75 * per_node_ranks[node]
        what = ("the whole node (most of its ranks)" if node_level or not rank_level else
                f"rank(s) {', '.join(str(r) for r, *_ in sorted(rs))}")
        evidence = [f"{where[(node, r)]}: {node} rank {r} median {ratio_:.3f}x the iteration "
                    f"median, an outlier in {pers:.0%} of {n} iterations"
                    for r, ratio_, pers, n in sorted(rs)]
        lost = job_gpus * 24.0 * (1 - 1 / standalone) if standalone > 1 else 0.0
        by_node[node] = Finding(
            kind="slow_gpu", subject=node,
            summary=f"{node} is fail-slow: {what} {ratio:.2f}x the median step; the job "
                    f"runs {standalone:.3f}x slower because of it",
            expected="each rank within noise of the iteration median",
            observed=f"{ratio:.3f}x the median in {max(p for _, _, p, _ in rs):.0%} of "
                     "iterations",
            repair=f"{node}: drain it from the job (exclude it and restart from the last "
                   "checkpoint, a hot spare takes its place), then check its GPUs' clocks "
                   "and throttle reasons, thermals and power (DCGM diag -r 3), and its NICs "
                   "(link rate, errors)",
            key=("slow_gpu", node), evidence=evidence, devices=[node],
            gpu_hours_lost_per_day=lost,
            impact={"method": "step times: a synchronous job runs at its slowest rank",
                    "job_slowdown_from_this_node": standalone, "job_gpus": job_gpus,
                    "ratio": ratio})


def _from_dcgm(samples: list[Sample], resolve: Callable[[str], str | None], out: SlowResult,
               by_node: dict[str, Finding]) -> None:
    clocks: dict[tuple[str, str], list[float]] = defaultdict(list)
    extra: dict[tuple[str, str], list[str]] = defaultdict(list)
    where: dict[tuple[str, str], str] = {}
    for s in samples:
        if not s.metric.startswith("gpu_"):
            continue
        node = resolve(s.device)
        if node is None:
            continue
        key = (node, s.item)
        if s.metric == "gpu_sm_clock_mhz":
            clocks[key].append(s.value)
            where.setdefault(key, f"{s.source}:{s.line}")
        elif s.metric == "gpu_throttle_reasons" and int(s.value) & sum(THROTTLE):
            why = [v for bit, v in THROTTLE.items() if int(s.value) & bit]
            extra[key].append(f"{s.source}:{s.line}: {s.raw_name} = {int(s.value):#x} "
                              f"({', '.join(why)})")
        elif s.metric == "gpu_xid" and s.value > 0:
            extra[key].append(f"{s.source}:{s.line}: XID {int(s.value)}")
        elif s.metric in ("gpu_thermal_violation_ns", "gpu_power_violation_ns") and s.value > 0:
            extra[key].append(f"{s.source}:{s.line}: {s.raw_name} = {s.value:g} ns")
    if len(clocks) < MIN_RANKS:
        return
    per_gpu = {k: statistics.median(v) for k, v in clocks.items()}
    vals = list(per_gpu.values())
    med = statistics.median(vals)
    mad = statistics.median(abs(v - med) for v in vals)
    slow = {k: v for k, v in per_gpu.items()
            if v > 0 and modified_z(v, med, mad) < -Z_OUTLIER and v <= med * (1 - MIN_SLOWDOWN)}
    nodes: dict[str, list[tuple[str, float]]] = defaultdict(list)
    for (node, gpu), v in slow.items():
        nodes[node].append((gpu, v))
    for node, gs in sorted(nodes.items()):
        ev = [f"{where[(node, g)]}: {node} GPU {g} SM clock {v:g} MHz, median {med:g}"
              for g, v in sorted(gs)]
        ev += [e for g, _ in gs for e in extra.get((node, g), [])]
        worst = min(v for _, v in gs)
        factor = med / worst
        if node in by_node:
            f = by_node[node]
            f.evidence += ev
            f.summary += f"; DCGM: GPU {', '.join(g for g, _ in sorted(gs))} clocked " \
                         f"{worst:g} MHz vs {med:g}"
            continue
        causes = sorted({e.split("(")[-1].rstrip(")") for e in ev if "(" in e})
        by_node[node] = Finding(
            kind="slow_gpu", subject=node,
            summary=f"{node}: GPU {', '.join(g for g, _ in sorted(gs))} at {worst:g} MHz SM "
                    f"clock vs the fleet median {med:g} ({factor:.2f}x slower)"
                    + (f"; {'; '.join(causes)}" if causes else ""),
            expected=f"SM clock near {med:g} MHz", observed=f"{worst:g} MHz",
            repair=f"{node}: check the GPU's cooling (airflow, fans, inlet temperature) and "
                   "power (PSUs, power brake), run DCGM diagnostics (dcgmi diag -r 3); drain "
                   "it from large jobs until fixed",
            key=("slow_gpu", node), evidence=ev, devices=[node],
            impact={"method": "DCGM SM clock: compute time scales with 1/clock",
                    "compute_slowdown": factor})
