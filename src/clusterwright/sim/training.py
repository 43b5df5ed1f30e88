"""One training step's network collectives on the designed fabric (``--fidelity sim``).

The layout's ranks are placed on the fabric in Megatron-LM's order (tensor-parallel fastest,
then context, data (expert groups inside it), pipeline slowest), contiguously on the servers.
Every data-parallel gradient all-reduce of the step runs at once, as it does at the end of a
step; every pipeline send between adjacent stages runs at once; every expert-parallel
all-to-all runs at once. Each simulated time is divided by the closed form's time for the same
collective, and the training model scales that communication by the ratio, so contention
(ECMP collisions, oversubscription, concurrent groups sharing NICs and spines) reaches the step
time while everything else keeps its calibrated closed form.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

from clusterwright.catalog.registry import Catalog
from clusterwright.design.fabric import design_fabric
from clusterwright.model.collectives import allreduce_s, alltoall_s, p2p_s
from clusterwright.model.memory import ACT_BYTES
from clusterwright.model.params import param_counts
from clusterwright.model.precision import bytes_per
from clusterwright.model.train_job import Job
from clusterwright.sim.collectives import CollectiveBuilder
from clusterwright.sim.engine import SimError
from clusterwright.sim.fabric_net import FabricNet, mix64
from clusterwright.sim.network import FlowSpec, NetworkSim
from clusterwright.spec.fabric import FabricRequest

# GPUs of a training step re-checked on the simulated fabric (``--fidelity sim`` and
# ``train plan``'s re-check): the step simulates every DP, PP and EP collective at once, so
# it stops below the network simulator's own limit (netsim takes 131,072).
MAX_SIM_GPUS = 65_536
# Expert-parallel all-to-alls simulated per step: every ``sampled``-th group, so that at most
# this many connections are routed (the step re-check stays within a second or two).
EP_SAMPLE_FLOWS = 500_000


@dataclass
class StepComm:
    """Simulated vs closed-form times of one step's collectives, and the ratios (factors)."""

    dp_factor: float = 1.0
    pp_factor: float = 1.0
    ep_factor: float = 1.0
    detail: dict[str, Any] = field(default_factory=dict)
    wall_s: float = 0.0  # wall-clock time the simulations took (not part of the result)


def rank_of(tp_i: int, cp_i: int, dp_i: int, pp_i: int, t: int, c: int, d: int) -> int:
    """Global rank (= GPU index, contiguous placement) in Megatron's tp-cp-dp-pp order."""
    return tp_i + t * (cp_i + c * (dp_i + d * pp_i))


def simulate_step_comm(
    job: Job, layout: dict[str, int], server_id: str, cat: Catalog, routing: str = "ecmp",
    seed: int = 0, switch: str | None = None, oversubscription: float = 1.0,
) -> StepComm:
    """Simulate the layout's DP, PP and EP collectives on a fabric of ``server_id`` servers."""
    t, p, d = layout["tp"], layout["pp"], layout["dp"]
    c, e = layout.get("cp", 1), layout.get("ep", 1)
    b = layout.get("micro_batch", 1)
    gpus = t * p * d * c
    srv = cat.server(server_id)
    nodes = math.ceil(gpus / srv.gpus)
    if gpus > MAX_SIM_GPUS:
        raise SimError(f"gpus: {gpus:,} GPUs; the network simulator takes at most "
                       f"{MAX_SIM_GPUS:,} (use the analytical estimate)", field="gpus")
    t0 = time.perf_counter()
    fab = design_fabric(
        FabricRequest(server=server_id, nodes=nodes, switch=switch,
                      oversubscription=oversubscription), cat,
    )
    net = FabricNet(fab, cat)
    model = job.net
    a = job.arch
    s = float(job.seq_len)
    tokens = b * s / c
    act_bytes = tokens * a.hidden * ACT_BYTES
    out = StepComm()
    detail: dict[str, Any] = {"nodes": nodes, "tiers": fab.shape.tiers,
                              "switch": fab.backend.switch.id, "routing": routing}

    def run(build: Any) -> tuple[float, NetworkSim]:
        sim = NetworkSim(net, routing=routing, seed=seed)
        cols = build(sim)
        sim.run()
        return max(col_time(x) for x in cols), sim

    # --- data parallel: every gradient all-reduce at once ----------------------------------
    dp_ranks = d * c
    if dp_ranks > 1:
        pc = param_counts(a)
        grad_b = bytes_per(job.grad_precision)
        size = (pc.total - pc.experts) / p / t * grad_b

        def dp_build(sim: NetworkSim) -> list[Any]:
            builder = CollectiveBuilder(sim, model)
            return [
                builder.add("allreduce", [rank_of(ti, ci, di, pi, t, c, d)
                                          for di in range(d) for ci in range(c)], size)
                for pi in range(p) for ti in range(t)
            ]

        sim_s, _ = run(dp_build)
        closed = float(allreduce_s(size, dp_ranks, t, model))
        out.dp_factor = sim_s / closed if closed > 0 else 1.0
        detail["dp"] = {"sim_s": sim_s, "closed_form_s": closed, "bytes": size,
                        "groups": p * t, "ranks_per_group": dp_ranks}
    # --- pipeline: every send between adjacent stages at once --------------------------------
    if p > 1:
        size = act_bytes / t
        crosses = t * c * d >= model.domain_gpus

        def pp_build(sim: NetworkSim) -> list[Any]:
            flows = [
                FlowSpec(rank_of(ti, ci, di, pi, t, c, d), rank_of(ti, ci, di, pi + 1, t, c, d),
                         mix64((pi << 40) | (di << 20) | (ci << 10) | ti))
                for pi in range(p - 1) for di in range(d) for ci in range(c) for ti in range(t)
            ]
            lat = model.base_s + (model.inter_step_s if crosses else model.intra_step_s)
            return [sim.add_group("pp-send", flows, size, latency_s=lat)]

        sim_s, _ = run(pp_build)
        closed = float(p2p_s(size, crosses, model))
        out.pp_factor = sim_s / closed if closed > 0 else 1.0
        detail["pp"] = {"sim_s": sim_s, "closed_form_s": closed, "bytes": size,
                        "sends": (p - 1) * d * c * t}
    # --- expert parallel: every all-to-all at once -------------------------------------------
    if e > 1 and a.is_moe:
        size = tokens * a.top_k * a.hidden * ACT_BYTES
        # Megatron-Core's expert rank order with expert TP 1 (etp-ep-dp), as the analytical
        # model places it: an EP group is ``e`` consecutive GPUs of a pipeline stage, folded
        # over its tensor-, context- and data-parallel ranks (tp x cp x dp of them).
        stage = t * c * d
        if stage % e:
            raise SimError(f"ep: {e} does not divide the {stage} GPUs of a pipeline stage "
                           f"(tp {t} x cp {c} x dp {d})", field="ep")
        groups = [
            [rank_of(0, 0, 0, pi, t, c, d) + blk * e + j for j in range(e)]
            for pi in range(p) for blk in range(stage // e)
        ]
        flows = len(groups) * e * (e - 1)
        sampled = 1
        while flows // sampled > EP_SAMPLE_FLOWS:
            sampled *= 2  # simulate every ``sampled``-th group: contention within the sample
        groups = groups[::sampled]

        def ep_build(sim: NetworkSim) -> list[Any]:
            builder = CollectiveBuilder(sim, model)
            return [builder.add("alltoall", g, size) for g in groups]

        sim_s, _ = run(ep_build)
        closed = float(alltoall_s(size, e, 1, model))
        out.ep_factor = sim_s / closed if closed > 0 else 1.0
        detail["ep"] = {"sim_s": sim_s, "closed_form_s": closed, "bytes": size,
                        "groups": len(groups), "sampled_every": sampled}
    out.wall_s = time.perf_counter() - t0
    out.detail = detail
    return out


def col_time(col: Any) -> float:
    """Time of a Collective, or of a bare Group (bytes done plus latency)."""
    if hasattr(col, "time_s"):
        value = float(col.time_s)
    else:
        value = float((col.done_at or math.nan) - (col.started or 0.0))
    if math.isnan(value):
        raise SimError("a simulated collective never finished")
    return value


__all__ = ["StepComm", "simulate_step_comm"]
