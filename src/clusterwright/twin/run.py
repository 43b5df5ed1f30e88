"""``twin diff``: read the blueprint and the as-built inputs, compare, detect slow nodes,
estimate the impact, rank. The one function every face calls (CLI, web)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from clusterwright.catalog.registry import Catalog
from clusterwright.ingest import PARSERS
from clusterwright.ingest.common import IngestError, Names, gc_paused
from clusterwright.ingest.model import Observations
from clusterwright.twin.blueprint import NETWORKS, Plan, load_plan
from clusterwright.twin.diff import compare
from clusterwright.twin.impact import Impact, rank
from clusterwright.twin.model import TwinReport
from clusterwright.twin.slow import detect


@dataclass(frozen=True)
class TwinRequest:
    """What to compare: the blueprint directory and, per input kind (``ingest.PARSERS``),
    the files or directories to read. ``impact`` False skips the simulations (the diff and
    the slow-node statistics still run)."""

    blueprint: Path
    inputs: dict[str, tuple[Path, ...]] = field(default_factory=dict)
    impact: bool = True
    routing: str = "ecmp"
    seed: int = 0
    networks: tuple[str, ...] = NETWORKS


def read(req: TwinRequest) -> Observations:
    obs = Observations()
    with gc_paused():  # every parser builds records only (ingest.common.gc_paused)
        for kind, paths in req.inputs.items():
            if kind not in PARSERS:
                raise IngestError(kind, None, f"unknown input kind {kind!r}")
            for p in paths:
                obs.extend(PARSERS[kind](p))
    return obs


def twin_diff(req: TwinRequest, cat: Catalog, plan: Plan | None = None,
              obs: Observations | None = None) -> TwinReport:
    """Compare and rank (``plan``/``obs`` when the caller already has them, as the lab)."""
    timings: dict[str, float] = {}
    t = time.perf_counter()
    plan = plan or load_plan(req.blueprint, cat)
    plan.only(req.networks)
    timings["blueprint_s"] = time.perf_counter() - t
    t = time.perf_counter()
    obs = obs if obs is not None else read(req)
    timings["parse_s"] = time.perf_counter() - t
    t = time.perf_counter()
    cmp = compare(plan, obs)
    names = Names(set(plan.devices) | set(plan.hosts))
    slow = detect(obs.steps, obs.samples, names.resolve, plan.gpus_per_host)
    findings = cmp.findings + slow.findings
    timings["diff_s"] = time.perf_counter() - t
    t = time.perf_counter()
    imp = Impact(plan, cat, routing=req.routing, seed=req.seed, simulate=req.impact)
    if obs.job_steps and plan.workload is not None:
        measured = sorted(s for _, s, _, _ in obs.job_steps)
        med = measured[len(measured) // 2]
        imp.detail["measured_step_s"] = med
        imp.detail["planned_step_s"] = plan.workload.get("step_time_s")
    detail = imp.apply(findings, slow.job) if req.impact else {
        "job": imp.job.source, "note": "impact not estimated (--no-impact)"}
    if not req.impact:
        imp._severity(findings, set(imp.drained_hosts(findings)))
    timings["impact_s"] = time.perf_counter() - t
    ranked = rank(findings)
    return TwinReport(
        blueprint=str(req.blueprint), findings=ranked, coverage=cmp.coverage,
        unseen=cmp.unseen, impact=detail,
        inputs={k: [str(p) for p in v] for k, v in req.inputs.items()},
        notes=cmp.notes + slow.notes + [f"blueprint has no {m}" for m in plan.missing],
        timings=timings)
