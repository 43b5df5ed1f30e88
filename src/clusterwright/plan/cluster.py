"""The scenario's ``cluster:`` section at plan time: a fixed size the workloads are fitted into,
spare servers and serving headroom, and whether the spares cover the failures expected.

- Headroom adds replicas to each inference workload: ``ceil(replicas x headroom)``, at least
  one when headroom is positive (N+1), kept at every hour of the diurnal curve.
- Spares are whole servers added to the servers the workloads need; they are designed into
  the fabric, racked, powered and priced like the rest.
- A fixed ``cluster.gpus`` sets the servers; workloads and spares that need more are a
  ``gpus`` violation saying by how much, and what they leave unused is reported as idle.
- Coverage of the spares: node failures that need a repair arrive as a Poisson process
  (``model/reliability``: the catalog's failure modes with ``needs_repair``); with a repair
  time T, the servers out for repair at once are Poisson(lambda T) (M/G/inf), so S spares
  cover every failure of a repair window with probability P(Poisson(lambda T) <= S).
"""

from __future__ import annotations

import math
from typing import Any

from clusterwright.catalog.schema import Gpu, Server
from clusterwright.design.blueprint import Candidate, Risk, violation
from clusterwright.design.decision import Alternative, Decision
from clusterwright.errors import InfeasibleError, InputError
from clusterwright.model import reliability as rel
from clusterwright.model.sizing import size_inference as memory_for_serving
from clusterwright.model.sizing import size_training as memory_for_training
from clusterwright.plan.candidates import server_among
from clusterwright.plan.context import PlanRun
from clusterwright.plan.reliability import failure_model, layout_estimate
from clusterwright.report.fmt import usd
from clusterwright.spec.parallel import ParallelConfig
from clusterwright.spec.scenario import InferenceWorkload, TrainingWorkload

# Spares are judged by how often they cover a repair window; 99 % is the level the note
# recommends (the availability an architect signs for one pool; an assumption, not a source).
TARGET_COVERAGE = 0.99
RISKY_COVERAGE = 0.9  # below this, running out of spares is a medium risk


def add_headroom(run: PlanRun, row: dict[str, Any]) -> None:
    """Add ``cluster.headroom`` replicas to an inference row (GPUs, diurnal GPUs)."""
    h = run.scenario.cluster.headroom
    if h <= 0:
        return
    need = int(row["replicas"])
    extra = max(1, math.ceil(need * h - 1e-9))
    tp = int(row["gpus"]) // need
    row["replicas_for_slo"] = need
    row["headroom_replicas"] = extra
    row["replicas"] = need + extra
    row["gpus"] = (need + extra) * tp
    if row.get("diurnal_gpus"):
        row["diurnal_gpus"] = [min(row["gpus"], g + extra * tp) for g in row["diurnal_gpus"]]


def size_cluster(run: PlanRun, cand: Candidate, server: Server, work_gpus: int) -> None:
    """Set the candidate's servers and GPUs: those the workloads need plus the spares, or the
    fixed ``cluster.gpus``, with a ``gpus`` violation when the work and spares do not fit."""
    cl = run.scenario.cluster
    per = server.gpus
    work_nodes = math.ceil(work_gpus / per)
    need = work_nodes + cl.spares
    nodes = need
    if cl.gpus is not None:
        nodes = max(1, cl.gpus // per)
        if cl.gpus % per:
            cand.violations.append(violation(
                "gpus", None, None, "", f"cluster.gpus = {cl.gpus:,} is not a whole number of "
                f"{server.id} ({per} GPUs each); {nodes * per:,} are planned"))
        if need > nodes:
            cand.violations.append(violation(
                "gpus", nodes * per, need * per, "GPUs",
                f"cluster.gpus holds; the workloads ({work_gpus:,} GPUs on {work_nodes:,} "
                f"{server.id}) and {cl.spares} spare servers on {cand.gpu} need"))
    cand.nodes = nodes
    cand.gpus = nodes * per
    cand.detail["cluster"] = {
        "fixed_gpus": cl.gpus,
        "work_gpus": work_gpus,
        "work_nodes": work_nodes,
        "spare_nodes": cl.spares,
        "spare_gpus": cl.spares * per,
        "idle_nodes": max(0, nodes - need),
        "idle_gpus": max(0, nodes - need) * per,
        "headroom": cl.headroom,
    }


def check_memory_floor(run: PlanRun, gpus: list[Gpu]) -> None:
    """Refuse a fixed ``cluster.gpus`` that no candidate GPU can hold a workload's model in:
    the memory floor (every state perfectly sharded, full recompute for training; weights and
    one mean request's KV cache for serving) exceeds the GPUs left beside the spares.
    InputError with the field path ``cluster.gpus``; the message names the workload's model."""
    sc = run.scenario
    size = sc.cluster.gpus
    if size is None:
        return
    for i, w in enumerate(sc.workloads):
        if not isinstance(w, TrainingWorkload | InferenceWorkload):
            continue
        floors: list[tuple[str, int, int]] = []
        for g in gpus:
            server = server_among(run.cat, g, sc.constraints.servers)
            n = _memory_floor(run, w, g)
            if n is None:
                continue  # this GPU cannot run it at all: the planner says why
            floors.append((g.id, n, size - sc.cluster.spares * (server.gpus if server else 1)))
        if not floors or any(n <= usable for _, n, usable in floors):
            continue
        gid, n, usable = min(floors, key=lambda f: f[1])
        spare = f" ({usable:,} beside the spares)" if sc.cluster.spares else ""
        what = "training state" if w.kind == "training" else "weights and KV cache"
        raise InputError(
            f"cluster.gpus: the fixed size of {size:,} GPUs{spare} is below the memory "
            f"minimum of workloads[{i}].model = {run.models[w.name].id!r}: it needs at "
            f"least {n:,} {gid} GPUs to hold its {what} (perfectly sharded); raise the size "
            "or choose a smaller model", field="cluster.gpus")


def _memory_floor(run: PlanRun, w: TrainingWorkload | InferenceWorkload, g: Gpu) -> int | None:
    arch = run.models[w.name]
    try:
        if isinstance(w, TrainingWorkload):
            res = memory_for_training(arch, ParallelConfig(recompute="full"), w.seq_len, [g],
                                      w.precision)
        else:
            ctx = max(1, round(w.input_len.mean)) + max(1, round(w.output_len.mean))
            res = memory_for_serving(arch, 1, ctx, [g], w.precision, w.kv_precision)
    except InputError:
        return None  # the planner says why this GPU cannot run it
    fit = res.fits[0]
    return fit.min_gpus if fit.supported else None


def cluster_keys(cand: Candidate) -> dict[str, Any]:
    """The blueprint ``cluster`` keys this section adds: servers and GPUs at work, spare
    and idle, and the headroom fraction."""
    return dict(cand.detail.get("cluster") or {})


def spares_plan(run: PlanRun, cand: Candidate, servers_usd: float | None) -> list[Risk]:
    """Notes and decisions on the recommendation's spares and fixed size, and the risk of
    running out of spares; nothing when the scenario has no ``cluster`` section.
    ``servers_usd``: the priced servers of the design (capex), None when not priced."""
    cl = run.scenario.cluster
    info = cand.detail.get("cluster")
    if not cl.given or info is None or cand.server is None:
        return []
    server: Server = cand.detail["server"]
    risks: list[Risk] = []
    if cl.gpus is not None:
        cand.decisions.append(Decision(
            "cluster_size", f"{cand.gpus:,} GPUs ({cand.nodes:,} x {server.id})",
            f"fixed by cluster.gpus: the workloads use {info['work_gpus']:,} GPUs on "
            f"{info['work_nodes']:,} servers, {info['spare_nodes']} servers are spares and "
            f"{info['idle_nodes']:,} ({info['idle_gpus']:,} GPUs) are idle"))
        if info["idle_gpus"]:
            run.notes.append(
                f"cluster.gpus: {info['idle_gpus']:,} of {cand.gpus:,} GPUs "
                f"({info['idle_nodes']:,} x {server.id}) are left over after the workloads "
                "and spares: room to grow a workload or add spares")
    lam, repair_h = node_repair_rate(run, cand.gpu, info["work_gpus"],
                                     info["work_nodes"] * server.hosts)
    # Servers out at once: the fleet model's repair queue (repairs, resets, rack, power-domain
    # and leaf losses), the same the reliability Monte Carlo and its recommended spares use.
    mean = servers_in_repair(run, cand.gpu, info["work_gpus"], server)
    if mean is None:
        mean = lam * repair_h
    s = cl.spares
    cover = rel.spare_coverage_probability(1.0, mean, s)
    enough = spares_for(1.0, mean, TARGET_COVERAGE)
    spare_usd = servers_usd * s / cand.nodes if servers_usd and cand.nodes else None
    info["spare_servers_usd"] = spare_usd
    price = f", {usd(spare_usd)} of servers" if s and spare_usd else ""
    text = (f"cluster.spares: {_spares(s)} ({server.id}, {s * server.gpus:,} GPUs{price}); node "
            f"failures needing repair: {lam * 24:.2g} a day across {info['work_nodes']:,} "
            f"working servers; with a {repair_h:g} h repair (the catalog's estimate, "
            f"reliability_node_repair_hours; a share cleared by a reset in hours) and rack, "
            f"power-domain and leaf losses, {mean:.2g} servers are out at "
            f"once on average; with {_spares(s)} every failure of a repair window finds a "
            f"spare {_pct(cover)} of the time; {_spares(enough)} would cover "
            f"{100 * TARGET_COVERAGE:.0f} %")
    run.notes.append(text)
    alts = tuple(
        Alternative(_spares(k), f"covers {_pct(rel.spare_coverage_probability(1.0, mean, k))}"
                    " of repair windows")
        for k in sorted({max(0, s - 1), s + 1, enough} - {s}))
    cand.decisions.append(Decision(
        "spares", f"{_spares(s)} ({server.id})",
        f"set by cluster.spares; they cover every node failure of a {repair_h:g} h repair "
        f"window {_pct(cover)} of the time ({mean:.2g} servers out on average)",
        alternatives=alts))
    if s > 0 and cover < RISKY_COVERAGE:
        risks.append(Risk(
            "medium", "reliability", "Spares run out",
            f"with {_spares(s)} a failure finds a spare in a {repair_h:g} h repair window "
            f"only {100 * cover:.0f} % of the time ({mean:.2g} servers out on average); "
            f"{_spares(enough)} would cover {100 * TARGET_COVERAGE:.0f} %, or shorten the "
            "repair"))
    return risks


def node_repair_rate(run: PlanRun, gpu: str, gpus: int, hosts: int) -> tuple[float, float]:
    """Failures per hour that take a server out for repair, over ``gpus`` GPUs on ``hosts``
    hosts, and the repair time in hours (catalog assumption)."""
    modes = [m for m in rel.modes_for_gpu(run.cat.all("failure_modes"), gpu)
             if m.needs_repair and not m.planned]
    units = rel.FleetUnits(gpus=float(gpus), hosts=float(hosts))
    lam = sum(rel.rates_per_hour(modes, units).values())
    return lam, run.cat.assumption("reliability_node_repair_hours")


def servers_in_repair(run: PlanRun, gpu: str, gpus: int, server: Server) -> float | None:
    """Mean servers out at once under the fleet failure model of ``gpus`` GPUs of ``gpu`` on
    ``server`` (failure domains estimated from the server and its cooling), or None when
    nothing in the catalog can fail at this scale."""
    per_host = max(1, server.gpus // max(server.hosts, 1))
    units = rel.FleetUnits(gpus=float(gpus), hosts=float(math.ceil(gpus / per_host)))
    modes = rel.modes_for_gpu(run.cat.all("failure_modes"), gpu)
    try:
        fm = failure_model(run.cat, modes, units, layout_estimate(run.cat, server, gpus))
    except InfeasibleError:
        return None
    return fm.nodes_in_repair()


def _pct(p: float) -> str:
    # Coverage close to 1 is what matters; "100.0 %" would claim certainty.
    return "over 99.9 %" if p > 0.999 else f"{100 * p:.1f} %"


def _spares(k: int) -> str:
    return f"{k} spare" if k == 1 else f"{k} spares"


def spares_for(failures_per_hour: float, repair_hours: float, coverage: float) -> int:
    """The fewest spares covering every failure of a repair window with ``coverage``."""
    k = 0
    while rel.spare_coverage_probability(failures_per_hour, repair_hours, k) < coverage:
        k += 1
    return k
