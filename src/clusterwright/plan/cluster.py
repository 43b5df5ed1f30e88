"""The scenario's ``cluster:`` section at plan time: a fixed size the workloads are fitted into,
spare servers and serving headroom, and whether the spares cover the failures expected.

- Headroom adds replicas to each inference workload: ``ceil(replicas x headroom)``, at least
  one when headroom is positive (N+1), kept at every hour of the diurnal curve.
- Spares are whole servers added to the servers the workloads need; they are designed into
  the fabric, racked, powered and priced like the rest. Left unset, a cluster sized for a
  training job whose deadline waiting for repairs would miss gets the fewest that cover the
  job's repair windows 99 % of the time: the time to train (and so the deadline check)
  assumes a failed node is replaced at once, which only spares make true; without them the
  job waits for repairs (``plan/reliability``).
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
from clusterwright.design.fabric import Fabric, shape_without
from clusterwright.errors import InfeasibleError, InputError
from clusterwright.model import reliability as rel
from clusterwright.model.sizing import size_inference as memory_for_serving
from clusterwright.model.sizing import size_training as memory_for_training
from clusterwright.plan.candidates import server_among
from clusterwright.plan.context import PlanRun
from clusterwright.plan.reliability import (
    FailureModel,
    failure_model,
    largest_training,
    layout_estimate,
)
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


def size_cluster(run: PlanRun, cand: Candidate, server: Server, work_gpus: int,
                 spares: int | None = None) -> None:
    """Set the candidate's servers and GPUs: those the workloads need plus the spares, or the
    fixed ``cluster.gpus``, with a ``gpus`` violation when the work and spares do not fit.
    ``spares``: the planner's count from the designed layout (a second pass), replacing its
    estimate before the design."""
    cl = run.scenario.cluster
    per = server.gpus
    work_nodes = math.ceil(work_gpus / per)
    spares, basis = (spares, "planner") if spares is not None else planned_spares(
        run, cand, server)
    need = work_nodes + spares
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
                f"{server.id}) and {spares} spare servers on {cand.gpu} need"))
    cand.nodes = nodes
    cand.gpus = nodes * per
    cand.detail["cluster"] = {
        "fixed_gpus": cl.gpus,
        "work_gpus": work_gpus,
        "work_nodes": work_nodes,
        "spare_nodes": spares,
        "spare_gpus": spares * per,
        "spares_basis": basis,
        # The training job the planner sized them for (None when the scenario set them).
        "spares_for": _largest_training(cand)[0] if basis == "planner" else None,
        "idle_nodes": max(0, nodes - need),
        "idle_gpus": max(0, nodes - need) * per,
        "headroom": cl.headroom,
    }


def planned_spares(run: PlanRun, cand: Candidate, server: Server) -> tuple[int, str]:
    """The spare servers of a candidate and who chose them: ``scenario``, ``planner``, or
    ``none``. With ``cluster.spares`` unset, a training job with a deadline on a cluster the
    planner sizes gets the fewest servers that hold its hosts out for repair 99 % of the time
    (the fleet model's repair queue, as the reliability Monte Carlo's recommendation) when
    waiting for repairs would take it past the deadline: its production time assumes a failed
    node is replaced at once. None for a fixed ``cluster.gpus`` (its idle servers stand in),
    a job that meets its deadline even waiting for repairs, or a cluster without training."""
    cl = run.scenario.cluster
    if cl.spares is not None:
        return cl.spares, "scenario"
    row = largest_training(cand)
    if cl.gpus is not None or row is None or not row.get("deadline_days") \
            or row.get("time_to_train_days") is None:
        return 0, "none"
    fm = _job_failure_model(run, cand.gpu, int(row["gpus"]), server)
    if fm is None:
        return 0, "none"
    # Each failure of a compute hour stops the job for the mean wait for a node back from
    # repair: the wall time stretches by that wait over the job's MTBF.
    days = float(row["time_to_train_days"]) * (1.0 + fm.mean_wait_s(0) / fm.mtbf_s)
    if days <= float(row["deadline_days"]):
        return 0, "none"
    cand.detail["days_waiting_for_repairs"] = days
    return spares_for_hosts(fm.nodes_in_repair(), server), "planner"


def _largest_training(cand: Candidate) -> tuple[str, int]:
    """The name and GPUs of the candidate's largest training job ("", 0 without one)."""
    row = largest_training(cand)
    return ("", 0) if row is None else (str(row["name"]), int(row["gpus"]))


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
            floors.append((g.id, n, size - sc.cluster.fixed_spares
                           * (server.gpus if server else 1)))
        if not floors or any(n <= usable for _, n, usable in floors):
            continue
        gid, n, usable = min(floors, key=lambda f: f[1])
        spare = f" ({usable:,} beside the spares)" if sc.cluster.fixed_spares else ""
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


def spares_for_hosts(mean_hosts: float, server: Server) -> int:
    """The fewest spare servers holding every host out for repair (Poisson, mean
    ``mean_hosts``) with ``TARGET_COVERAGE``."""
    return math.ceil(spares_for(1.0, mean_hosts, TARGET_COVERAGE) / max(server.hosts, 1))


def fabric_growth(fab: Fabric | None, spares: int) -> str:
    """What ``spares`` servers add to ``fab``'s backend switches beyond what the other servers
    need ("" when nothing): a partial scalable unit's leaves, and the spines the even split
    of every leaf's uplinks then asks for."""
    if fab is None or spares <= 0 or not fab.has_backend:
        return ""
    hosts = fab.shape.hosts - spares * fab.server.hosts
    if hosts < 1:
        return ""
    w, sh = shape_without(fab, hosts), fab.shape
    parts = [(name, a, b) for name, a, b in (
        ("leaves", w.leaf_switches, sh.leaf_switches),
        ("spines", w.spine_switches, sh.spine_switches),
        ("cores", w.core_switches, sh.core_switches)) if b > a]
    if not parts:
        return ""
    grown = ", ".join(f"{name} {a:,} -> {b:,}" for name, a, b in parts)
    unit = (f" (scalable unit {sh.sus} holds only the spares and what spills over)"
            if sh.sus > w.sus else "")
    return f"they grow the backend fabric: {grown}{unit}"


def spares_plan(run: PlanRun, cand: Candidate, servers_usd: float | None,
                repair_mean: float | None = None, fab: Fabric | None = None) -> list[Risk]:
    """Notes and decisions on the recommendation's spares and fixed size, and the risk of
    running out of spares; nothing when the scenario has no ``cluster`` section and the
    planner bought no spares. ``servers_usd``: the priced servers of the design (capex),
    None when not priced; ``repair_mean``: the planner's training job's hosts out for repair
    on the designed layout (``plan.reliability.designed_repair_mean``), which its spares were
    sized on; ``fab``: the designed fabric, to say which switches the spares add."""
    cl = run.scenario.cluster
    info = cand.detail.get("cluster")
    if info is None or cand.server is None or not (
            cl.given or info.get("spares_basis") == "planner"):
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
    planner = info.get("spares_basis") == "planner"
    # The planner's spares are sized for its largest training job (the one whose time to
    # train assumes them); the scenario's are judged over every working server.
    gpus = _largest_training(cand)[1] if planner else info["work_gpus"]
    per_host = max(1, server.gpus // max(server.hosts, 1))
    lam, repair_h = node_repair_rate(run, cand.gpu, gpus, math.ceil(gpus / per_host))
    # Hosts out at once: the fleet model's repair queue (repairs, resets, rack, power-domain
    # and leaf losses), the same the reliability Monte Carlo and its recommended spares use.
    mean = (repair_mean if planner and repair_mean is not None
            else servers_in_repair(run, cand.gpu, gpus, server))
    if mean is None:
        mean = lam * repair_h
    hosts = max(server.hosts, 1)
    s = int(info["spare_nodes"])

    def cover_of(k: int) -> float:
        return rel.spare_coverage_probability(1.0, mean, k * hosts)

    cover = cover_of(s)
    enough = spares_for_hosts(mean, server)
    spare_usd = servers_usd * s / cand.nodes if servers_usd and cand.nodes else None
    info["spare_servers_usd"] = spare_usd
    price = f", {usd(spare_usd)} of servers" if s and spare_usd else ""
    whose = (f"chosen by the planner for {info['spares_for']}'s {gpus:,} GPUs"
             if planner else "cluster.spares")
    text = (f"{whose}: {_spares(s)} ({server.id}, {s * server.gpus:,} GPUs{price}); node "
            f"failures needing repair: {lam * 24:.2g} a day across {gpus:,} GPUs; with a "
            f"{repair_h:g} h repair (the catalog's estimate, reliability_node_repair_hours; a "
            f"share cleared by a reset in hours) and rack, power-domain and leaf losses, "
            f"{mean:.2g} hosts are out at once on average; with {_spares(s)} every failure of "
            f"a repair window finds a spare {_pct(cover)} of the time; {_spares(enough)} "
            f"would cover {100 * TARGET_COVERAGE:.0f} %")
    grow = fabric_growth(fab, s)
    if grow:
        text += f"; {grow}"
    run.notes.append(text)
    alts = tuple(
        Alternative(_spares(k), f"covers {_pct(cover_of(k))} of repair windows")
        for k in sorted({max(0, s - 1), s + 1, enough} - {s}))
    waiting = cand.detail.get("days_waiting_for_repairs")
    past = (f" (waiting for repairs instead, about {waiting:.0f} days against its deadline)"
            if waiting else "")
    why = (f"chosen by the planner (cluster.spares unset): the fewest that cover every node "
           f"failure of {info['spares_for']}'s {repair_h:g} h repair windows "
           f"{100 * TARGET_COVERAGE:.0f} % of the time ({_pct(cover)}; {mean:.2g} hosts out "
           f"on average), since its time to train assumes a failed node is replaced at "
           f"once{past}; set cluster.spares to choose (0 buys none)" if planner else
           f"set by cluster.spares; they cover every node failure of a {repair_h:g} h repair "
           f"window {_pct(cover)} of the time ({mean:.2g} hosts out on average)")
    cand.decisions.append(Decision(
        "spares", f"{_spares(s)} ({server.id})", why + (f"; {grow}" if grow else ""),
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
    """Mean hosts out at once under the fleet failure model of ``gpus`` GPUs of ``gpu`` on
    ``server`` (failure domains estimated from the server and its cooling), or None when
    nothing in the catalog can fail at this scale."""
    fm = _job_failure_model(run, gpu, gpus, server)
    return None if fm is None else fm.nodes_in_repair()


def _job_failure_model(run: PlanRun, gpu: str, gpus: int, server: Server
                       ) -> FailureModel | None:
    """The fleet failure model of a job on ``gpus`` GPUs before the design (failure domains
    estimated from the server and its cooling); None when nothing can fail at this scale."""
    per_host = max(1, server.gpus // max(server.hosts, 1))
    units = rel.FleetUnits(gpus=float(gpus), hosts=float(math.ceil(gpus / per_host)))
    modes = rel.modes_for_gpu(run.cat.all("failure_modes"), gpu)
    try:
        return failure_model(run.cat, modes, units, layout_estimate(run.cat, server, gpus))
    except InfeasibleError:
        return None


def _pct(p: float) -> str:
    # Coverage close to 1 is what matters; "100.0 %" would claim certainty, and rounding up
    # would show 98.96 % as the 99.0 % target it misses: truncated to 0.1 %.
    return "over 99.9 %" if p > 0.999 else f"{math.floor(1000 * p + 1e-9) / 10:.1f} %"


def _spares(k: int) -> str:
    return f"{k} spare" if k == 1 else f"{k} spares"


def spares_for(failures_per_hour: float, repair_hours: float, coverage: float) -> int:
    """The fewest spares covering every failure of a repair window with ``coverage``."""
    k = 0
    while rel.spare_coverage_probability(failures_per_hour, repair_hours, k) < coverage:
        k += 1
    return k
