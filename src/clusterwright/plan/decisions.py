"""Why the recommendation is what it is: one :class:`Decision` per choice the planner made for
the GPU, the server, each training job's size and layout and each inference workload's replicas,
each naming the constraint or comparison that decided it and the alternatives it beat by how
much. (The fabric and pricing decisions are made, and explained, where those choices are made:
``plan/design.py`` and ``plan/pricing.py``.)

Everything here reads what the sizing stages already computed, except the runner-up layouts and
the next smaller GPU count of a training job, which are searched again for the chosen GPU only
(one layout search each: milliseconds).
"""

from __future__ import annotations

from typing import Any

from clusterwright.catalog.schema import Gpu, Server
from clusterwright.design.blueprint import Candidate
from clusterwright.design.decision import Alternative, Decision
from clusterwright.design.train_goodput import production_time
from clusterwright.model.train_job import Job
from clusterwright.plan.context import PlanRun
from clusterwright.plan.layouts import WallTime, gpu_counts, plan, sized
from clusterwright.plan.training import RUNNERS_UP, training_job
from clusterwright.report.fmt import signed_pct, usd
from clusterwright.spec.scenario import TrainingWorkload

MAX_ALTERNATIVES = RUNNERS_UP  # runner-ups shown per decision: enough to see the margin


def layout_text(layout: dict[str, Any]) -> str:
    """A training layout as an architect writes it: "TP8 PP4 DP32, ZeRO-1, selective recompute"."""
    par = " ".join(f"{k.upper()}{layout[k]}" for k in ("tp", "pp", "cp", "ep", "dp")
                   if k in layout and (layout[k] != 1 or k in ("tp", "dp")))
    parts = [par]
    if layout.get("interleave", 1) not in (None, 1):
        parts.append(f"{layout['interleave']} virtual stages")
    if layout.get("zero") is not None:
        parts.append(f"ZeRO-{layout['zero']}")
    if layout.get("micro_batch") is not None:
        parts.append(f"micro-batch {layout['micro_batch']}")
    rec = layout.get("recompute")
    names = {0: "none", 1: "selective", 2: "full"}
    if rec is not None:
        rec = names.get(rec, str(rec)) if isinstance(rec, int) else str(rec)
        parts.append("no recompute" if rec == "none" else f"{rec} recompute")
    return ", ".join(parts)


def _rel(fraction: float) -> str:
    """A signed relative difference, with a decimal when it is small: '+0.3 %', '+17 %'."""
    return signed_pct(fraction, 1 if abs(fraction) < 0.1 else 0)


def _n(count: int, noun: str) -> str:
    return f"{count:,} {noun}" + ("" if count == 1 else "s")


def gpu_decision(chosen: Candidate, feasible: bool,
                 alternatives: list[dict[str, Any]]) -> Decision:
    """Why this GPU: the cheapest candidate meeting every constraint (or the nearest miss)."""
    n = len(alternatives) + 1
    if feasible and n == 1:
        why = ("the only candidate GPU (constraints.gpus); it meets every constraint"
               + (f": {usd(chosen.total_cost_usd)} ({chosen.cost_basis})"
                  if chosen.total_cost_usd is not None else ""))
    elif feasible:
        why = (f"the cheapest of {n} candidate GPUs that meets every constraint"
               + (f": {usd(chosen.total_cost_usd)} ({chosen.cost_basis})"
                  if chosen.total_cost_usd is not None else ""))
    else:
        why = (f"no candidate meets every constraint; {chosen.gpu} misses by the least "
               f"(fewest broken constraints, then the smallest excess) of {n}")
    alts = tuple(Alternative(a["gpu"], a["why_not"]) for a in alternatives)
    return Decision("gpu", chosen.gpu, why, None, alts)


def server_decision(run: PlanRun, chosen: Candidate) -> Decision | None:
    """Why this server: the scenario's ``constraints.servers``, else the catalog's first
    server carrying the GPU (NVIDIA's reference DGX before OEM HGX boards). Other servers with
    the same GPU are listed with their price per GPU, which the planner does not compare."""
    server: Server | None = chosen.detail.get("server")
    if server is None:
        return None
    allowed = run.scenario.constraints.servers
    if allowed:
        why = f"constraints.servers allows {', '.join(allowed)}; {server.id} carries {chosen.gpu}"
    else:
        why = (f"the catalog's reference server for {chosen.gpu} (catalog order: NVIDIA's DGX "
               "before OEM HGX); the planner does not compare servers of the same GPU")
    others = [s for s in run.cat.all("servers") if s.gpu == chosen.gpu and s.id != server.id]
    alts = []
    for s in others[:MAX_ALTERNATIVES]:
        if s.price_usd and server.price_usd:
            d = (s.price_usd / s.gpus) / (server.price_usd / server.gpus) - 1.0
            alts.append(Alternative(s.id, f"{_rel(d)} per GPU ({usd(s.price_usd)} per "
                                          f"server), {s.max_power_kw:g} kW"))
        else:
            alts.append(Alternative(s.id, "no catalog price to compare"))
    return Decision("server", server.id, why, None, tuple(alts))


def _wall(run: PlanRun, w: TrainingWorkload, gpu: Gpu, server: Server) -> WallTime:
    """Production time of ``w`` (as the sizing stage computes it), seconds."""
    arch = run.models[w.name]

    def wall(n: int, compute_s: float) -> float:
        return production_time(run.cat, arch, gpu.id, server, n, compute_s).days * 86400.0

    return wall


def training_decisions(run: PlanRun, chosen: Candidate, gpu: Gpu) -> list[Decision]:
    """Size and layout of each training workload on the chosen GPU."""
    server: Server | None = chosen.detail.get("server")
    rows = {r["name"]: r for r in chosen.detail.get("workloads", []) if r["kind"] == "training"}
    out: list[Decision] = []
    for i, w in enumerate(run.scenario.workloads):
        row = rows.get(w.name)
        if not isinstance(w, TrainingWorkload) or row is None or server is None:
            continue
        job = training_job(run, i, w, gpu, server)
        if not isinstance(job, Job):
            continue
        n = row["gpus"]
        out.append(_size_decision(run, job, w, gpu, server, row))
        if row["layout_source"] == "fixed":
            out.append(Decision("parallelism", layout_text(row["layout"]),
                                f"given by workloads[{i}].layout", w.name))
            continue
        res = run.searches.get((w.name, gpu.id, n)) or plan(job, n, top_n=MAX_ALTERNATIVES + 1)
        step = row["step_time_s"]
        alts = tuple(Alternative(layout_text(r.layout),
                                 f"step {_rel(r.step_time_s / step - 1.0)} "
                                 f"({r.step_time_s:.2f} s vs {step:.2f} s)")
                     for r in res.top[1:])
        over = res.rejected.get("does not fit in memory", 0)
        other = {k: v for k, v in res.rejected.items() if k != "does not fit in memory"}
        why = (f"the fastest step ({step:.2f} s, MFU {100 * row['mfu']:.0f} %) of the "
               f"{res.candidates_evaluated - over:,} layouts of {n:,} GPUs that fit in "
               f"{gpu.memory_gb:g} GB ({res.candidates_evaluated:,} evaluated"
               + (f", {over:,} over the memory" if over else "")
               + "".join(f"; {v:,} ruled out: {k}" for k, v in other.items()) + ")")
        out.append(Decision("parallelism", layout_text(row["layout"]), why, w.name, alts))
    return out


def _size_decision(run: PlanRun, job: Job, w: TrainingWorkload, gpu: Gpu, server: Server,
                   row: dict[str, Any]) -> Decision:
    n, days = row["gpus"], row["time_to_train_days"]
    i = run.scenario.workloads.index(w)
    choice = f"{n:,} {gpu.id}"
    if w.gpus is not None:
        return Decision("cluster_size", choice, f"given by workloads[{i}].gpus"
                        + (f"; trains in {days:.1f} days" if days is not None else ""), w.name)
    assert w.deadline_days is not None
    unit = job.net.domain_gpus if job.net.domain_gpus > 1 else 8
    ladder = [k for k in gpu_counts(n, unit) if k < n]
    wall = _wall(run, w, gpu, server)
    alts: list[Alternative] = []
    for k in reversed(ladder[-2:]):
        res = plan(job, k, top_n=1)
        if res.best is None:
            alts.append(Alternative(f"{k:,} GPUs", "no layout fits in memory"))
            continue
        s = sized(res.best, k, w.tokens, wall)
        if s.time_to_train_days is not None:
            late = s.time_to_train_days - w.deadline_days
            alts.append(Alternative(f"{k:,} GPUs", f"{s.time_to_train_days:.1f} days: misses "
                                    f"the deadline by {late:.1f} days" if late > 0 else
                                    f"{s.time_to_train_days:.1f} days"))
    met = days is not None and days <= w.deadline_days
    why = (f"the fewest GPUs on the ladder ({unit} x {{1, 1.5}} x 2^k) whose production time "
           f"(steps, evaluation, checkpoints and failures) meets deadline_days "
           f"{w.deadline_days:g}: {days:.1f} days" if met else
           f"the fastest count found; it still misses deadline_days {w.deadline_days:g}"
           + (f" ({days:.1f} days)" if days is not None else ""))
    return Decision("cluster_size", choice, why, w.name, tuple(alts))


def replicas_decisions(chosen: Candidate) -> list[Decision]:
    """Tensor parallelism and replica count of each inference workload on the chosen GPU."""
    out = []
    for r in chosen.detail.get("workloads", []):
        if r["kind"] != "inference":
            continue
        slo = r["slo"]
        ep = f" EP{r['ep']}" if r.get("ep", 1) not in (None, 1) else ""
        choice = f"{r['replicas']} x TP{r['tp']}{ep} ({r['gpus']} GPUs)"
        if r.get("engine"):
            choice = (f"{r['replicas']} x {r['deployment']} under {r['engine']} "
                      f"({r['gpus']} GPUs; {r['disaggregation']})")
        why = (f"the cheapest layout meeting p99 TTFT <= {slo['ttft_p99_s']:g} s and TPOT <= "
               f"{slo['tpot_p99_s']:g} s: one replica serves {r['qps_per_replica']:.2f} req/s "
               f"at the SLOs, so {_n(r['replicas'], 'replica')} "
               f"{'covers' if r['replicas'] == 1 else 'cover'} the "
               f"{r['peak_qps']:g} req/s peak")
        alts: list[Alternative] = []
        mine = next((c for c in r.get("considered", ()) if c["tp"] == r["tp"]
                     and c["ep"] == r["ep"]), None)
        for c in r.get("considered", ()):
            if c is mine or len(alts) >= MAX_ALTERNATIVES:
                continue
            opt = f"TP{c['tp']}" + (f" EP{c['ep']}" if c["ep"] not in (None, 1) else "")
            if c["replicas"] is None:
                alts.append(Alternative(opt, "meets the SLOs at no load level"))
            elif mine and c["usd_per_hour"] and mine["usd_per_hour"]:
                more = c["usd_per_hour"] / mine["usd_per_hour"] - 1
                alts.append(Alternative(opt, f"{_n(c['replicas'], 'replica')}, "
                                             f"{_n(c['gpus'], 'GPU')}: {_rel(more)} per hour"))
            else:
                alts.append(Alternative(opt, f"{_n(c['replicas'], 'replica')}, "
                                             f"{_n(c['gpus'], 'GPU')}"))
        out.append(Decision("replicas", choice, why, r["name"], tuple(alts)))
    return out


def decisions_for(run: PlanRun, chosen: Candidate, feasible: bool,
                  alternatives: list[dict[str, Any]]) -> list[Decision]:
    """The GPU, server, training and inference decisions of the recommendation, in that order."""
    out = [gpu_decision(chosen, feasible, alternatives)]
    if (s := server_decision(run, chosen)) is not None:
        out.append(s)
    gpu = run.cat.gpu(chosen.gpu)
    out += training_decisions(run, chosen, gpu)
    out += replicas_decisions(chosen)
    return out
