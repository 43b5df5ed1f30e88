"""``clusterwright netsim``: one or more jobs' collectives on a designed fabric.

Builds the fabric with the fabric designer, places each job's ranks (contiguous, spread over
the fabric, or a seeded random choice of servers), schedules the collective of every job at
time 0, applies failures, runs the flow simulator and reports nccl-tests style results with the
closed-form comparison.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from clusterwright.catalog.registry import Catalog
from clusterwright.design.fabric import Fabric, design_fabric
from clusterwright.design.train import net_for
from clusterwright.errors import ClusterwrightError
from clusterwright.sim.collectives import ALGORITHMS, COLLECTIVES, Collective, CollectiveBuilder
from clusterwright.sim.engine import SimError, check_seed
from clusterwright.sim.fabric_net import FabricNet
from clusterwright.sim.fluid import CCS
from clusterwright.sim.netsim_cc import CcRequest, incast_flows, run_cc
from clusterwright.sim.network import MAX_ADAPTIVE_FLOWS, MAX_SIM_GPUS, ROUTINGS, NetworkSim
from clusterwright.spec.fabric import FabricRequest

PLACEMENTS = ("contiguous", "spread", "random")
# Jobs at once: each is simulated again alone (slowdown_vs_solo) and sharing costs grow with
# the square of the groups; 32 jobs on a 32K-GPU fabric take about 35 s on two cores.
MAX_JOBS = 32
# Sub-flows of one run routed one by one (queue pairs counted): an all-to-all over 4,096 GPUs
# (16.8M connections) takes about 10 s with ECMP on two cores; adaptive routing stops at
# MAX_ADAPTIVE_FLOWS. An all-to-all above collectives.AUTO_AGGREGATE_FLOWS is aggregated per
# leaf pair instead (sim/aggregate.py) and counts none.
MAX_SIM_FLOWS = 1 << 24
NETWORK_TIERS = ("node-leaf", "leaf-spine", "spine-core")


@dataclass
class NetsimRequest:
    """What to simulate. ``ranks`` per job (default: every GPU of the fabric, one job)."""

    fabric: FabricRequest
    collective: str | None
    size_bytes: float
    routing: str = "ecmp"
    algorithm: str = "auto"
    seed: int = 0
    qps: int = 1
    polarized: bool = False
    ranks: int | None = None
    jobs: int = 1
    placement: str = "contiguous"
    pxn: bool = True
    failures: list[str] = field(default_factory=list)
    degraded: list[tuple[str, float]] = field(default_factory=list)
    fail_at_s: float = 0.0
    # The fluid run (sim/netsim_cc.py): a congestion control (None: only if incast or pfc
    # ask for the fluid run, then dcqcn), N-to-1 incast senders, PFC, storming devices.
    cc: str | None = None
    incast: int | None = None
    pfc: bool = False
    storm: list[str] = field(default_factory=list)


def placements(fab: Fabric, gph: int, ranks: int, jobs: int, how: str, seed: int
               ) -> list[list[int]]:
    """GPU indices of each job's ranks. Jobs take whole servers when ranks fill them."""
    n_hosts = sum(1 for d in fab.devices if d.role == "host")
    total = n_hosts * gph
    if ranks * jobs > total:
        raise SimError(
            f"ranks: {ranks} ranks x {jobs} jobs = {ranks * jobs} GPUs, but the fabric has "
            f"{total}", field="ranks")
    per_job_hosts = math.ceil(ranks / gph)
    if how == "contiguous":
        host_sets = [list(range(j * per_job_hosts, (j + 1) * per_job_hosts)) for j in range(jobs)]
    elif how == "spread":
        # Interleave the jobs across the whole fabric: job j takes hosts j, j+J, j+2J, ...,
        # spread as far as the fabric allows (the fragmentation a busy scheduler leaves).
        step = max(1, n_hosts // (per_job_hosts * jobs))
        order = [h for start in range(step) for h in range(start, n_hosts, step)]
        host_sets = [order[j::jobs][:per_job_hosts] for j in range(jobs)]
    elif how == "random":
        rng = np.random.default_rng(seed)
        chosen = rng.permutation(n_hosts)[: per_job_hosts * jobs].tolist()
        host_sets = [sorted(chosen[j * per_job_hosts:(j + 1) * per_job_hosts])
                     for j in range(jobs)]
    else:
        raise SimError(f"placement: unknown {how!r} (one of {', '.join(PLACEMENTS)})",
                       field="placement")
    out = []
    for hs in host_sets:
        gpus = [h * gph + k for h in sorted(hs) for k in range(gph)]
        out.append(gpus[:ranks])
    return out


def run_netsim(req: NetsimRequest, cat: Catalog) -> dict[str, Any]:
    """Simulate and report (the ``netsim`` contract keys first)."""
    if req.collective is None and req.incast is None:
        raise SimError("collective: give a collective or an incast", field="collective")
    if req.collective is not None and req.collective not in COLLECTIVES:
        raise SimError(
            f"collective: unknown {req.collective!r} (one of {', '.join(COLLECTIVES)})",
            field="collective")
    if req.routing not in ROUTINGS:
        raise SimError(f"routing: unknown policy {req.routing!r} (one of {', '.join(ROUTINGS)})",
                       field="routing")
    if req.algorithm not in ALGORITHMS:
        raise SimError(f"algorithm: unknown {req.algorithm!r} (one of {', '.join(ALGORITHMS)})",
                       field="algorithm")
    if not (math.isfinite(req.size_bytes) and req.size_bytes > 0):
        raise SimError(f"size_bytes: must be a positive finite number, got {req.size_bytes:g}",
                       field="size_bytes")
    if req.jobs < 1:
        raise SimError(f"jobs: must be at least 1, got {req.jobs}", field="jobs")
    if req.jobs > MAX_JOBS:
        raise SimError(f"jobs: {req.jobs:,} jobs at once; at most {MAX_JOBS} (each is "
                       "simulated alone too)", field="jobs")
    check_seed(req.seed)
    fluid = req.cc is not None or req.incast is not None or req.pfc or bool(req.storm)
    cc_req = CcRequest(cc=req.cc or "dcqcn", pfc=req.pfc, mtu=req.fabric.mtu,
                       lossless_priorities=req.fabric.lossless_priorities, seed=req.seed,
                       storm=tuple(req.storm))
    if req.cc is not None and req.cc not in CCS:
        raise SimError(f"cc: unknown congestion control {req.cc!r} (one of {', '.join(CCS)})",
                       field="cc")
    try:
        per_node = cat.server(req.fabric.server).gpus
    except ClusterwrightError:
        per_node = 0  # the fabric designer names the unknown server
    if req.fabric.nodes * per_node > MAX_SIM_GPUS:
        raise SimError(f"nodes: {req.fabric.nodes:,} x {per_node} GPUs = "
                       f"{req.fabric.nodes * per_node:,} GPUs; the network simulator takes at "
                       f"most {MAX_SIM_GPUS:,}", field="nodes")
    t0 = time.perf_counter()
    fab = design_fabric(req.fabric, cat)
    net = FabricNet(fab, cat)
    srv = fab.server
    model = net_for(cat, cat.gpu(srv.gpu), net.stack, srv)
    gph = net.gpus_per_host
    ranks = req.ranks if req.ranks is not None else net.n_gpus // req.jobs
    if ranks < 2:
        raise SimError(f"ranks: must be at least 2, got {ranks}", field="ranks")
    if ranks > net.n_gpus:
        raise SimError(f"ranks: {ranks} is more than the fabric's {net.n_gpus} GPUs",
                       field="ranks")
    jobs = placements(fab, gph, ranks, req.jobs, req.placement, req.seed) \
        if req.collective is not None else []
    incast = incast_flows(net, req.incast) if req.incast is not None else None
    t_build = time.perf_counter() - t0

    def _down(sim: NetworkSim, field: str, name: str, factor: float) -> None:
        try:
            sim.fail(req.fail_at_s, name, factor)
        except SimError as exc:
            # Name the flag and show what names look like (the fabric's own devices)
            switches = sorted(n for n in net.node_links if n in net.sw_index)
            hosts = [h.name for h in net.hosts[:1]]
            example = ", ".join(switches[:2] + hosts)
            raise SimError(f"{field}: {exc} (devices are named like {example}; a cable is "
                           "'a->b')", field=field) from exc

    def simulate(job_sets: list[list[int]], first_cid: int = 1
                 ) -> tuple[NetworkSim, list[Collective], Any]:
        net.set_capacity(list(range(net.n_links)), 1.0)
        sim = NetworkSim(net, routing=req.routing, seed=req.seed, qps=req.qps,
                         polarized=req.polarized)
        for name in req.failures:
            _down(sim, "failures", name, 0.0)
        for name, factor in req.degraded:
            if not 0.0 < factor <= 1.0:
                raise SimError(f"degraded: {name}={factor:g}: the factor must be in (0, 1]",
                               field="degraded")
            _down(sim, "degraded", name, factor)
        if incast is not None and first_cid == 1:
            sim.add_group("incast", incast, req.size_bytes)
        b = CollectiveBuilder(sim, model)
        cols = [b.add(req.collective, ranks_, req.size_bytes, req.algorithm, pxn=req.pxn,
                      label=f"job{first_cid + j}", cid=first_cid + j)
                for j, ranks_ in enumerate(job_sets)] if req.collective is not None else []
        # Each queue pair is routed as its own sub-flow: refuse before running what would
        # take minutes, not after.
        subflows = sum(len(g.flows) for g in sim.groups) * req.qps
        limit = MAX_ADAPTIVE_FLOWS if req.routing == "adaptive" else MAX_SIM_FLOWS
        if subflows > limit:
            blame = "qps" if req.qps > 1 else "ranks" if req.ranks is not None else "nodes"
            why = " with adaptive routing (it places them one at a time)" \
                if req.routing == "adaptive" else ""
            raise SimError(
                f"{blame}: {subflows:,} flows (queue pairs counted) are above the simulator's "
                f"{limit:,}{why}; fewer ranks or queue pairs", field=blame)
        result = sim.run()
        return sim, cols, result

    t1 = time.perf_counter()
    sim, cols, result = simulate(jobs)
    wall = time.perf_counter() - t1
    flows = sum(g.n_flows * (1 if g.loads is not None else req.qps) for g in sim.groups)
    if cols:
        main = cols[0]
        t = main.time_s
        head: dict[str, Any] = {
            "completion_time_s": max(c.time_s for c in cols),
            "algbw_gbps": main.algbw() / 1e9, "busbw_gbps": main.busbw() / 1e9,
            "max_link_utilization": result.max_utilization(net, NETWORK_TIERS),
            "closed_form_time_s": main.algorithm_closed_form_s,
            "closed_form_best_time_s": main.closed_form_s,
            "error_vs_closed_form": t / main.algorithm_closed_form_s - 1.0,
            "collective": req.collective, "algorithm": main.algorithm}
        n_ranks = len(main.ranks)
    else:
        head, n_ranks = _incast_head(sim, net, result, req), (req.incast or 0) + 1
    data: dict[str, Any] = {
        **head,
        "routing": req.routing,
        "qps": req.qps,
        "polarized": req.polarized,
        "size_bytes": req.size_bytes,
        "ranks": n_ranks,
        "nodes": req.fabric.nodes,
        "gpus": net.n_gpus,
        "tiers": fab.shape.tiers,
        "switch": fab.backend.switch.id,
        "placement": req.placement,
        "max_nvlink_utilization": result.max_utilization(net, ("nvlink",)),
        "top_links": [
            {"link": s.name, "tier": s.tier, "utilization": s.utilization, "bytes": s.bytes}
            for s in result.stats(net, 10)
        ],
        "flows": flows,
        "aggregated": any(c.aggregated for c in cols),
        "events": result.events,
        "rate_recomputations": result.recomputes,
        "failures": list(req.failures),
        "degraded": [{"name": n, "factor": f} for n, f in req.degraded],
        "seed": req.seed,
    }
    if len(cols) > 1:
        data["jobs"] = [
            {"job": c.name, "time_s": c.time_s, "busbw_gbps": c.busbw() / 1e9,
             "hosts": sorted({r // gph for r in c.ranks})[:4]}
            for c in cols
        ]
        # Interference: each job alone on the same placement.
        alone = []
        for j, c in enumerate(cols):
            _, solo, _ = simulate([c.ranks], first_cid=j + 1)  # same flows, same hashes
            alone.append(solo[0].time_s)
        data["solo_time_s"] = alone
        data["slowdown_vs_solo"] = [c.time_s / a for c, a in zip(cols, alone, strict=True)]
    if req.incast is not None:
        data["incast"] = req.incast
    cc_wall = None
    if fluid:
        cc = run_cc(net, fab, cat, sim, sim.groups, cc_req, data["completion_time_s"])
        cc_wall = cc.pop("wall_s")
        data["congestion_control"] = cc
    # Wall-clock measurements only, under one key: everything else is a function of the
    # request and the seed, so two runs compare equal without it.
    data["timings"] = {
        "build_wall_s": t_build,
        "sim_wall_s": wall,
        "events_per_s": result.events / wall if wall > 0 else None,
    }
    if cc_wall is not None:
        data["timings"]["fluid_wall_s"] = cc_wall
    return data


def _incast_head(sim: NetworkSim, net: FabricNet, result: Any, req: NetsimRequest
                 ) -> dict[str, Any]:
    """The contract keys for an incast alone: N x size bytes into one NIC, the closed form
    that NIC's line rate."""
    g = sim.groups[0]
    t = float(g.done_at or 0.0)
    n = req.incast or 0
    total = n * req.size_bytes
    down = net.nic_plane_down[0]
    into = float(net.cap[down[down >= 0]].sum())
    pcie = float(net.cap[net.nic_to_gpu[0]])
    closed = total / min(into, pcie)
    return {
        "completion_time_s": t, "algbw_gbps": total / t / 1e9 if t > 0 else 0.0,
        "busbw_gbps": total / t / 1e9 if t > 0 else 0.0,
        "max_link_utilization": result.max_utilization(net, NETWORK_TIERS),
        "closed_form_time_s": closed, "closed_form_best_time_s": closed,
        "error_vs_closed_form": t / closed - 1.0 if closed > 0 else 0.0,
        "collective": "incast", "algorithm": "n-to-1"}
