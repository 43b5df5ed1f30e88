"""``netsim --cc/--incast/--pfc``: the collective (or an N-to-1 incast) as a fluid problem on
the designed fabric, under a congestion control, with queues, ECN and PFC (``sim/fluid.py``).

The flows are routed exactly as the max-min simulator routes them (same ECMP hashes, spray
and plane fractions; ``NetworkSim.routes``), each route (queue pair) one fluid flow; a
flow's links go in up-down order (NVLink, PCIe to the NIC, NIC -> leaf -> spine -> core,
then down). Every switch egress marks ECN with DCQCN's RED thresholds for its speed
(NVIDIA's defaults, ``Dcqcn.mellanox``); a hop is ``HOP_S`` of one-way latency (the base
round trip is twice the sum). With PFC, each switch's shared buffer (its catalog
``buffer_mb``) less the PFC headroom its ports reserve (``design/pfc.py``: cable lengths
from the floor plan, the MTU, the lossless priorities) gives the dynamic pause thresholds.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from clusterwright.catalog.registry import Catalog
from clusterwright.design.fabric import Fabric
from clusterwright.design.pfc import pfc_plan
from clusterwright.design.physical import place
from clusterwright.model.congestion import Dcqcn, Timely
from clusterwright.sim.engine import SimError
from clusterwright.sim.fabric_net import FabricNet
from clusterwright.sim.flows import Flows, keys
from clusterwright.sim.fluid import (
    CCS,
    FluidConfig,
    FluidFlows,
    FluidLinks,
    FluidResult,
    SharedBuffer,
    simulate_fluid,
)
from clusterwright.sim.network import Group, NetworkSim

# One-way latency of a network hop (switch cut-through plus propagation in a data hall),
# as the HPCC simulator's topologies set their links.
HOP_S = 1e-6
# Fluid flows (queue pairs counted) of one run: each step costs about 1 us per 1,000 flow-links.
MAX_FLUID_FLOWS = 65_536
# Lossless priorities the switches reserve headroom for when the request does not say.
DEFAULT_PRIORITIES = 2
_INCAST_KEY = 0x1C_A570_0000_0000


@dataclass(frozen=True)
class CcRequest:
    """The fluid run of ``netsim``: congestion control, PFC, MTU (the packet), seed."""

    cc: str = "dcqcn"
    pfc: bool = False
    mtu: int = 9216
    lossless_priorities: int = DEFAULT_PRIORITIES
    seed: int = 0
    dt_s: float = 4e-6
    storm: tuple[str, ...] = ()


def incast_flows(net: FabricNet, senders: int) -> Flows:
    """N-to-1 incast: GPU 0 of servers 1..N to GPU 0 of server 0 (one rail: the leaf of
    that rail, and its spines once the senders span several leaves)."""
    hosts = len(net.hosts)
    if senders < 1:
        raise SimError(f"incast: at least 1 sender, got {senders}", field="incast")
    if senders > hosts - 1:
        raise SimError(f"incast: {senders:,} senders need {senders + 1:,} servers; the fabric "
                       f"has {hosts:,}", field="incast")
    gph = net.gpus_per_host
    src = np.arange(1, senders + 1, dtype=np.int64) * gph
    dst = np.zeros(senders, dtype=np.int64)
    return Flows(src, dst, keys(_INCAST_KEY, np.arange(senders)))


def _levels(net: FabricNet, links: np.ndarray) -> np.ndarray:
    """Position of each link in an up-down path (module docstring)."""
    base = 4 * net.n_gpus
    lv = np.empty(len(links), dtype=np.int64)
    gpu = links < base
    lv[gpu] = np.asarray([0, 1, 2, 9])[links[gpu] % 4]
    cab = ~gpu
    tier = net.tier_code[links[cab]].astype(np.int64)  # 0 node-leaf, 1 leaf-spine, 2 core
    down = (links[cab] - base) % 2 == 1
    lv[cab] = np.where(down, 8 - tier, 3 + tier)
    return lv


def _entries(net: FabricNet, sim: NetworkSim, g: Group, first_flow: int
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(flow, link, weight) of every route of a group, flows numbered from ``first_flow``."""
    r = sim.routes(g)
    if r.cut.any():
        raise SimError(f"{int(r.cut.sum())} flow(s) of {g.label} have no live path")
    fl = [r.whole_route]
    lk = [r.whole_link]
    w = [np.ones(len(r.whole_link))]
    if len(r.parts):
        m = r.parts >= 0
        fl.append(np.broadcast_to(r.part_route[:, None], m.shape)[m])
        lk.append(r.parts[m])
        w.append(np.broadcast_to(r.part_frac[:, None], m.shape)[m])
    if len(r.spray_route):
        names = net.sw_names
        cache: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}
        for i, a, b, f in zip(r.spray_route.tolist(), r.spray_la.tolist(),
                              r.spray_lb.tolist(), r.spray_frac.tolist(), strict=True):
            pat = cache.get((a, b))
            if pat is None:
                if net.alive.all():
                    cross = bool(net.three_tier and net.sw_pod[a] != net.sw_pod[b])
                    u, uf = net.spray_up(names[a], cross)
                    d, df = net.spray_down(names[b], cross)
                    pat = (np.concatenate([u, d]), np.concatenate([uf, df]))
                else:
                    pat = net.spray(names[a], names[b])
                cache[(a, b)] = pat
            fl.append(np.full(len(pat[0]), i, dtype=np.int64))
            lk.append(pat[0])
            w.append(pat[1] * f)
    return (np.concatenate(fl) + first_flow, np.concatenate(lk).astype(np.int64),
            np.concatenate(w))


def build(net: FabricNet, fab: Fabric, cat: Catalog, sim: NetworkSim,
          groups: Sequence[Group], req: CcRequest) -> tuple[FluidLinks, FluidFlows,
                                                           SharedBuffer | None, np.ndarray]:
    """The fluid problem of ``groups`` (routed as ``sim`` routes them): links (renumbered
    to those used; the last array maps them back to the fabric's link ids), flows, buffer."""
    qps = sim.qps
    ef, el, ew, size, grp = [], [], [], [], []
    gid = {g.gid: i for i, g in enumerate(groups)}
    n_f = 0
    for i, g in enumerate(groups):
        if g.loads is not None:
            raise SimError(f"{g.label}: an aggregated all-to-all ({g.connections:,} "
                           "connections) has no flows to run as a fluid; fewer ranks",
                           field="ranks")
        f, lk, w = _entries(net, sim, g, n_f)
        routes = len(g.flows) * qps
        ef.append(f)
        el.append(lk)
        ew.append(w)
        size.append(np.full(routes, g.volume * g.weight / qps))
        grp.append(np.full(routes, i, dtype=np.int64))
        n_f += routes
        if n_f > MAX_FLUID_FLOWS:
            raise SimError(f"ranks: {n_f:,}+ flows (queue pairs counted) for the fluid "
                           f"congestion-control run; at most {MAX_FLUID_FLOWS:,}",
                           field="ranks")
    e_flow = np.concatenate(ef)
    e_link_fab = np.concatenate(el)
    e_w = np.concatenate(ew)
    used, e_link = np.unique(e_link_fab, return_inverse=True)
    hop = _levels(net, e_link_fab)
    n_l = len(used)
    cap = net.cap[used].astype(float)
    gbps = net.link_gbps[used]
    base = 4 * net.n_gpus
    is_cable = used >= base
    nic_up = is_cable & (net.tier_code[used] == 0) & ((used - base) % 2 == 0)
    line = float(cap[nic_up].max()) if nic_up.any() else float(cap.max())  # a NIC's
    # Switch egress ports mark: every cable direction except a NIC's uplink.
    marks = is_cable & ~nic_up
    kmin = np.full(n_l, np.inf)
    kmax = np.full(n_l, np.inf)
    pmax = np.zeros(n_l)
    scale = gbps[marks] / 25  # Dcqcn.mellanox: thresholds per 25 Gb/s
    d0 = Dcqcn.mellanox(25)
    kmin[marks] = d0.kmin_bytes * scale
    kmax[marks] = d0.kmax_bytes * scale
    pmax[marks] = d0.pmax
    switch = net.link_sw[used]
    stuck = np.zeros(n_l, dtype=bool)
    for name in req.storm:
        ids = np.asarray(_links_into(net, name), dtype=np.int64)
        stuck |= np.isin(used, ids)
    links = FluidLinks(cap, kmin, kmax, pmax, switch, [net.link_name(int(i)) for i in used],
                       stuck=stuck)
    sizes = np.concatenate(size)
    groups_arr = np.concatenate(grp)
    # Base round trip: two ways over the flow's network hops (NVLink and PCIe count none).
    net_hops = np.bincount(e_flow, weights=(is_cable[e_link] * e_w), minlength=n_f)
    rtt = 2 * HOP_S * np.maximum(net_hops, 1) + 2 * req.mtu / line
    # A flow's own rate limit: the narrowest link it uses in full (its NIC for network
    # flows; NVLink for a flow that stays in its domain).
    limit = np.full(n_f, np.inf)
    np.minimum.at(limit, e_flow, cap[e_link] / np.maximum(e_w, 1e-12))
    flows = FluidFlows(e_flow, e_link, hop, e_w, sizes, groups_arr,
                       np.minimum(limit, np.inf), rtt)
    flows.group_start = np.asarray([g.start_at for g in groups])
    flows.group_after = [[gid[a.gid] for a in g.after if a.gid in gid] for g in groups]
    flows.group_latency = np.asarray([g.latency_s for g in groups])
    shared = _shared_buffer(net, fab, cat, req) if req.pfc else None
    return links, flows, shared, used


def _links_into(net: FabricNet, name: str) -> list[int]:
    """Links that deliver into a device (its receiving side: a PFC storm from it stops
    them) or the one direction of a cable named ``a->b``."""
    try:
        ids = net.links_of(name)
    except SimError as exc:
        raise SimError(f"storm: {exc}", field="storm") from exc
    if "->" in name:
        return [i for i in ids if net.link_name(i) == name] or ids[:1]
    if name in net.sw_index:
        return [i for i in ids if net.link_sw[i] == net.sw_index[name]]
    cables = 4 * net.n_gpus  # the switch ports toward it, not its PCIe or NVLink
    return [i for i in ids if i >= cables and net.link_name(i).split("->")[-1].startswith(name)]


def _shared_buffer(net: FabricNet, fab: Fabric, cat: Catalog, req: CcRequest) -> SharedBuffer:
    """Every switch's buffer less the PFC headroom its ports reserve (module docstring)."""
    if all(lk.length_m == 0 for lk in fab.links if lk.network == "backend"):
        place(fab, cat)  # cable lengths: the floor plan
    plan = pfc_plan(fab, cat, req.mtu, req.lossless_priorities)
    sw = fab.backend.switch
    if not plan.switches or sw.buffer_mb is None:
        why = "is InfiniBand (credit-based, no PFC)" if fab.backend.protocol != "ethernet" \
            else f"switch {sw.id} has no buffer size in the catalog"
        raise SimError(f"pfc: the backend fabric {why}", field="pfc")
    n_sw = len(net.sw_names)
    buf = np.full(n_sw, float(sw.buffer_mb) * 2**20)
    hdrm = np.zeros(n_sw)
    ports = np.zeros(n_sw)
    for s in plan.switches:
        i = net.sw_index.get(s.name)
        if i is not None:
            hdrm[i] = s.headroom_bytes_per_priority * req.lossless_priorities
            ports[i] = s.ports
            if s.buffer_bytes is not None:
                buf[i] = float(s.buffer_bytes)
    return SharedBuffer(buf, hdrm, ports)


def run_cc(net: FabricNet, fab: Fabric, cat: Catalog, sim: NetworkSim, groups: list[Group],
           req: CcRequest, ideal_s: float) -> dict[str, Any]:
    """Run the fluid model on ``groups`` and report (the ``congestion_control`` JSON key);
    ``ideal_s``: the max-min simulator's completion of the same traffic."""
    if req.cc not in CCS:
        raise SimError(f"cc: unknown congestion control {req.cc!r} (one of {', '.join(CCS)})",
                       field="cc")
    t0 = time.perf_counter()
    links, flows, shared, used = build(net, fab, cat, sim, groups, req)
    nic = used[(used >= 4 * net.n_gpus) & (net.tier_code[used] == 0)]
    dcqcn = Dcqcn.mellanox(float(net.link_gbps[nic].max()) if len(nic) else 400.0)
    horizon = max(20 * ideal_s, 0.05)
    nic_gbps = float(net.link_gbps[nic].max()) if len(nic) else 400.0
    cfg = FluidConfig(cc=req.cc, dcqcn=dcqcn, timely=Timely.for_link(nic_gbps),
                      packet_bytes=float(req.mtu), dt=req.dt_s,
                      pfc=req.pfc, shared=shared, until_s=horizon, seed=req.seed,
                      expect_s=ideal_s)
    try:
        res = simulate_fluid(links, flows, cfg)
    except ValueError as exc:
        raise SimError(f"size_bytes: {exc}", field="size_bytes") from exc
    wall = time.perf_counter() - t0
    return report(res, links, flows, net, used, req, ideal_s, wall, shared)


def report(res: FluidResult, links: FluidLinks, flows: FluidFlows, net: FabricNet,
           used: np.ndarray, req: CcRequest, ideal_s: float, wall: float,
           shared: SharedBuffer | None) -> dict[str, Any]:
    done = np.isfinite(res.fct_s)
    fct = res.fct_s[done]
    tiers = net.tier_code[used]
    # Queues at switch egress ports (the marking ones): a GPU's or NIC's backlog of its own
    # flows is not a network queue.
    sw_q = np.where(np.isfinite(links.kmin), res.queue_max_bytes, 0.0)
    order = np.argsort(-sw_q, kind="stable")[:10]
    paused = np.flatnonzero(res.pause_s > 0)
    p_order = paused[np.argsort(-res.pause_s[paused], kind="stable")][:10]
    over = None
    if shared is None:
        sw = links.switch
        per_sw = np.bincount(sw[sw >= 0], weights=res.queue_max_bytes[sw >= 0],
                             minlength=len(net.sw_names))
        over = int(np.count_nonzero(per_sw > _buffer_bytes(net)))
    conv = res.convergence_s()
    return {
        "cc": req.cc,
        "pfc": req.pfc,
        "mtu": req.mtu,
        "completed": bool(done.all()),
        "flows": len(flows),
        "completion_time_s": float(res.end_s) if done.all() else None,
        "slowdown_vs_ideal": float(res.end_s / ideal_s) if done.all() and ideal_s > 0
        else None,
        "flow_completion_s": {
            "mean": float(fct.mean()) if len(fct) else None,
            "p50": float(np.percentile(fct, 50)) if len(fct) else None,
            "p99": float(np.percentile(fct, 99)) if len(fct) else None,
            "max": float(fct.max()) if len(fct) else None},
        "jain_fairness": res.jain_fairness(flows.size) if done.any() else None,
        "convergence_s": conv,
        "max_queue_bytes": float(sw_q.max(initial=0.0)),
        "queues": [
            {"link": links.names[i], "tier": _tier_name(int(tiers[i])),
             "mean_bytes": float(res.queue_mean_bytes[i]),
             "max_bytes": float(res.queue_max_bytes[i])}
            for i in order.tolist() if sw_q[i] > 0],
        "marked_fraction": res.marked_fraction,
        "cnps": res.cnps,
        "paused_links": len(paused),
        "pauses": [{"link": links.names[i], "paused_s": float(res.pause_s[i])}
                   for i in p_order.tolist()],
        "switches_over_buffer": over,
        "storm": list(req.storm),
        "steps": res.steps,
        "dt_s": res.dt,
        "wall_s": wall,
    }


def _buffer_bytes(net: FabricNet) -> float:
    mb = net.fab.backend.switch.buffer_mb
    return float(mb) * 2**20 if mb is not None else math.inf


def _tier_name(code: int) -> str:
    from clusterwright.sim.fabric_net import TIER_NAMES
    return TIER_NAMES[code]
