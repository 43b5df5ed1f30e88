"""Flow-level network simulator: collectives as flows on the designed fabric.

Model (shared/reference/network.md 3.7: what a flow-level simulator can credibly show):

- The network is the fabric's directed links (each cable is two, full duplex) plus the links
  inside a server: every GPU to its NVLink domain's switch and to its NIC over PCIe. Capacities
  are line rates times the stack's achieved fractions (NCCL busbw / link rate), so an
  uncontended collective reproduces the closed-form alpha-beta cost (``sim/fabric_net.py``
  builds it and its equal-cost paths).
- A **flow** is one connection (a ring edge, a tree edge, one all-to-all pair). Flows are pinned
  to paths by the routing policy when they start: ECMP with a seeded per-flow hash at every tier
  (optionally the same hash at every tier: polarization), ECMP over several queue pairs per
  connection (QP scaling), adaptive routing (the least-loaded next hop at flow start), or packet
  spraying (the flow split evenly over every equal-cost next hop).
- A **group** is a set of flows that advance together and carry the same bytes each: the
  channels of a pipelined NCCL ring move at the pace of their slowest edge, so one group per
  ring channel (one per all-to-all). Rates are max-min fair between groups (progressive filling,
  weighted by how many of a group's flows share a link), recomputed only when a group starts
  or ends or a link changes.
- Failures and degradation change capacities mid-run; flows on a failed link or switch are
  re-routed over what is left, and a destination nothing reaches is an error naming it.

Not modelled (calibrated factors or the packet-level tools cover them): PFC, incast buffers,
congestion-control dynamics, spraying's reordering cost, sub-flow adaptive routing.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from clusterwright.sim.engine import Engine, Event, SimError
from tests.sim.legacy.fabric_net import FabricNet, mix64

Routing = Literal["ecmp", "adaptive", "spray"]
ROUTINGS: tuple[str, ...] = ("ecmp", "adaptive", "spray")
# Queue pairs per connection: NCCL_IB_QPS_PER_CONNECTION's maximum (NCCL_IB_MAX_QPS, 128);
# each QP is routed as its own sub-flow, so they multiply the simulator's work.
MAX_QPS_PER_CONNECTION = 128
# GPUs of a simulated fabric: a ring all-reduce over 65,536 GPUs takes about 20 s on two
# cores (netsim and the training re-check refuse larger fabrics).
MAX_SIM_GPUS = 65_536


@dataclass(frozen=True)
class FlowSpec:
    """One connection from GPU ``src`` to GPU ``dst`` (global GPU indices). ``via`` relays
    through a GPU of the source's NVLink domain first (PXN: reach the destination's rail).
    ``key`` feeds the ECMP hash (the 5-tuple)."""

    src: int
    dst: int
    key: int
    via: int | None = None
    nvls: bool = False  # NVLink SHARP: the GPU's stream to its domain switch and back


@dataclass
class Route:
    """Where one (sub)flow goes: links used whole, split parts, spray patterns."""

    whole: list[int] = field(default_factory=list)
    parts: list[tuple[list[int], float]] = field(default_factory=list)
    sprays: list[tuple[str, str, float]] = field(default_factory=list)

    def touches(self, dead: np.ndarray) -> bool:
        return bool(dead[self.whole].any()) or any(bool(dead[p].any()) for p, _ in self.parts)

    def release(self, assigned: np.ndarray, amount: float) -> None:
        """Take this route's flow off the adaptive-routing load counts."""
        assigned[self.whole] = np.maximum(0.0, assigned[self.whole] - amount)


@dataclass
class Group:
    """Flows that advance together, each carrying ``volume`` bytes (see module docstring)."""

    gid: int
    label: str
    flows: list[FlowSpec]
    volume: float  # bytes per flow
    latency_s: float = 0.0
    weight: float = 1.0  # flow multiplicity on each of its paths (QPs split it)
    after: list[Group] = field(default_factory=list)
    start_at: float = 0.0
    # filled while running
    routes: list[Route] = field(default_factory=list)
    links: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    coef: np.ndarray = field(default_factory=lambda: np.zeros(0))
    remaining: float = 0.0
    rate: float = 0.0
    started: float | None = None
    bytes_done_at: float | None = None
    done_at: float | None = None
    waiting: int = 0
    dependents: list[Group] = field(default_factory=list)


@dataclass
class LinkStat:
    """A link's bytes carried and time-averaged utilization over the run."""

    name: str
    tier: str
    bytes: float
    utilization: float


@dataclass
class SimResult:
    """Completion times per group and link statistics of one run."""

    end_s: float
    groups: list[Group]
    link_bytes: np.ndarray
    events: int
    recomputes: int

    def stats(self, net: FabricNet, top: int = 10) -> list[LinkStat]:
        """The ``top`` links by time-averaged utilization."""
        if self.end_s <= 0:
            return []
        util = self.link_bytes / np.maximum(net.cap0, 1e-9) / self.end_s
        order = np.argsort(-util)[:top]
        return [
            LinkStat(net.names[i], net.tiers[i], float(self.link_bytes[i]), float(util[i]))
            for i in order if self.link_bytes[i] > 0
        ]

    def max_utilization(self, net: FabricNet, tiers: tuple[str, ...] | None = None) -> float:
        if self.end_s <= 0:
            return 0.0
        util = self.link_bytes / np.maximum(net.cap0, 1e-9) / self.end_s
        if tiers is not None:
            mask = np.isin(np.asarray(net.tiers), list(tiers))
            util = np.where(mask, util, 0.0)
        return float(util.max(initial=0.0))


class NetworkSim:
    """Runs groups of flows on a ``FabricNet`` under a routing policy (event-driven)."""

    def __init__(self, net: FabricNet, routing: str = "ecmp", seed: int = 0, qps: int = 1,
                 polarized: bool = False, plane_spray: bool = True) -> None:
        if routing not in ROUTINGS:
            raise SimError(f"routing: unknown policy {routing!r} (one of {', '.join(ROUTINGS)})",
                           field="routing")
        if qps < 1:
            raise SimError(f"qps: must be at least 1, got {qps}", field="qps")
        if qps > MAX_QPS_PER_CONNECTION:
            raise SimError(f"qps: {qps:,} queue pairs per connection; at most "
                           f"{MAX_QPS_PER_CONNECTION} (NCCL's maximum)", field="qps")
        self.net = net
        self.routing = routing
        self.seed = seed
        self.qps = qps
        self.polarized = polarized
        self.plane_spray = plane_spray
        self.engine = Engine(seed)
        self.groups: list[Group] = []
        self.active: list[Group] = []
        self.link_bytes = np.zeros(net.n_links)
        self.assigned = np.zeros(net.n_links)  # flows per link, for adaptive routing
        self._last = 0.0
        self._next: Event | None = None
        self.recomputes = 0
        self._generation = 0  # failures so far: moved flows hash with it
        self._tier_seeds = [mix64(seed * 1000 + t) for t in range(8)]

    # ------------------------------------------------------------------ building
    def add_group(self, label: str, flows: list[FlowSpec], volume: float, latency_s: float = 0.0,
                  after: list[Group] | None = None, start_at: float = 0.0) -> Group:
        """A group of ``flows`` each carrying ``volume`` bytes; starts at ``start_at`` (s) once
        every group in ``after`` is done."""
        for f in flows:
            for gpu in (f.src, f.dst, f.via):
                if gpu is not None and not 0 <= gpu < self.net.n_gpus:
                    raise SimError(
                        f"rank on GPU {gpu} is not in this fabric ({self.net.n_gpus} GPUs)"
                    )
        g = Group(gid=len(self.groups), label=label, flows=flows, volume=volume,
                  latency_s=latency_s, after=list(after or []), start_at=start_at)
        g.waiting = len(g.after)
        for dep in g.after:
            dep.dependents.append(g)
        self.groups.append(g)
        if g.waiting == 0:
            self.engine.at(start_at, self._start, g)
        return g

    def fail(self, at: float, name: str, factor: float = 0.0) -> None:
        """At ``at`` (s), set a device's or cable's links to ``factor`` of line rate (0 fails
        them; flows re-route)."""
        ids = self.net.links_of(name)
        self.engine.at(at, self._capacity, ids, factor, name)

    # ------------------------------------------------------------------ routing
    def _hash(self, key: int, tier: int) -> int:
        salt = self._tier_seeds[0] if self.polarized else self._tier_seeds[tier]
        return mix64(key ^ salt)

    def _route(self, f: FlowSpec, sub: int, generation: int = 0) -> Route:
        """Links of one (sub)flow: links it uses whole, (path, fraction) parts when split over
        planes, and spray patterns as (source leaf, destination leaf, fraction)."""
        net = self.net
        route = Route()
        if f.nvls:
            route.whole += [net.gpu_up[f.src], net.gpu_down[f.src]]
            return route
        src = f.src if f.via is None else f.via
        if f.via is not None and f.via != f.src:
            route.whole += [net.gpu_up[f.src], net.gpu_down[f.via]]
        if net.gpu_domain[src] == net.gpu_domain[f.dst]:
            if src != f.dst:
                route.whole += [net.gpu_up[src], net.gpu_down[f.dst]]
            return route
        nic_a, nic_b = net.gpu_nic[src], net.gpu_nic[f.dst]
        # A flow moved by a failure hashes afresh (``generation``): resilient hashing spreads a
        # failed member's flows over every survivor, not over the few its old hash maps onto.
        key = mix64(f.key * 1_000_003 + sub + generation * 0x9E3779B1)
        planes = sorted(
            p for p, up, leaf in net.nic_up[nic_a]
            if net.alive[up] and net.alive[net.leaf_down[(net.leaf_of_nic[(nic_b, p)], nic_b)]]
        ) if all((nic_b, p) in net.leaf_of_nic for p, _, _ in net.nic_up[nic_a]) else []
        if not planes:
            raise SimError(f"no live NIC-leaf link joins GPU {src} and GPU {f.dst}")
        # NCCL treats each plane's port as its own NIC and spreads its channels over them, so a
        # connection's traffic splits evenly over the planes whatever the switches do.
        if len(planes) > 1 and self.plane_spray:
            use = [(p, 1.0 / len(planes)) for p in planes]
        else:
            use = [(planes[self._hash(key, 7) % len(planes)], 1.0)]
        route.whole += [net.gpu_to_nic[src], net.nic_to_gpu[f.dst]]
        for plane, frac in use:
            up, la = net.nic_leaf(nic_a, plane)
            _, lb = net.nic_leaf(nic_b, plane)
            down = net.leaf_down[(lb, nic_b)]
            if self.routing == "spray":
                route.parts.append(([up, down], frac))
                if la != lb:
                    route.sprays.append((la, lb, frac))
                continue
            if self.routing == "ecmp":
                path = net.transit(la, lb, lambda tier, hops: self._hash(key, tier) % len(hops))
            else:
                path = net.least_loaded_path(la, lb, self.assigned, key)
                self.assigned[path] += 1.0 / self.qps
            if frac == 1.0:
                route.whole += [up, *path, down]
            else:
                route.parts.append(([up, *path, down], frac))
        return route

    def _build(self, g: Group, reroute: np.ndarray | None = None) -> None:
        """Route a group's flows (or, with ``reroute``, only those crossing those dead links)
        and aggregate them into per-link coefficients."""
        subs = self.qps
        cut: list[str] = []
        if reroute is None or not g.routes:
            g.routes = []
            for f in g.flows:
                for s in range(subs):
                    try:
                        g.routes.append(self._route(f, s))
                    except SimError:
                        cut.append(f"{self.net.gpu_name(f.src)} -> {self.net.gpu_name(f.dst)}")
                        break
        else:
            for i, r in enumerate(g.routes):
                if r.sprays or r.touches(reroute):
                    f = g.flows[i // subs]
                    if self.routing == "adaptive":
                        r.release(self.assigned, 1.0 / subs)
                    try:
                        g.routes[i] = self._route(f, i % subs, self._generation)
                    except SimError:
                        cut.append(f"{self.net.gpu_name(f.src)} -> {self.net.gpu_name(f.dst)}")
        if cut:
            raise SimError(
                f"{len(cut)} flow(s) of {g.label} have no live path (the failures cut them off): "
                + ", ".join(cut[:8]) + (" ..." if len(cut) > 8 else "")
            )
        ids: list[np.ndarray] = []
        ws: list[np.ndarray] = []
        whole: list[int] = []
        spray_w: dict[tuple[str, str], float] = defaultdict(float)
        up_w: dict[tuple[str, bool], float] = defaultdict(float)
        down_w: dict[tuple[str, bool], float] = defaultdict(float)
        for r in g.routes:
            whole += r.whole
            for links, frac in r.parts:
                ids.append(np.asarray(links, dtype=np.int64))
                ws.append(np.full(len(links), frac / subs))
            for la, lb, frac in r.sprays:
                halves = self.net.spray_halves(la, lb)
                if halves is None:
                    spray_w[(la, lb)] += frac / subs
                else:
                    up_w[halves[0]] += frac / subs
                    down_w[halves[1]] += frac / subs
        for (leaf, cross), w in up_w.items():
            pattern, fractions = self.net.spray_up(leaf, cross)
            ids.append(pattern)
            ws.append(fractions * w)
        for (leaf, cross), w in down_w.items():
            pattern, fractions = self.net.spray_down(leaf, cross)
            ids.append(pattern)
            ws.append(fractions * w)
        if whole:
            ids.append(np.asarray(whole, dtype=np.int64))
            ws.append(np.full(len(whole), 1.0 / subs))
        for (la, lb), w in spray_w.items():
            pattern, fractions = self.net.spray(la, lb)
            ids.append(pattern)
            ws.append(fractions * w)
        if not ids:
            g.links, g.coef = np.zeros(0, dtype=np.int64), np.zeros(0)
            return
        all_ids = np.concatenate(ids)
        all_w = np.concatenate(ws)
        uniq, inv = np.unique(all_ids, return_inverse=True)
        g.links = uniq
        g.coef = np.bincount(inv, weights=all_w) * g.weight

    # ------------------------------------------------------------------ running
    def _start(self, g: Group) -> None:
        self._advance()
        g.started = self.engine.now
        g.remaining = g.volume
        self._build(g)
        if g.volume <= 0 or len(g.links) == 0:
            self._bytes_done(g)
            return
        self.active.append(g)
        self._reallocate()

    def _capacity(self, ids: list[int], factor: float, name: str) -> None:
        self._advance()
        self.net.set_capacity(ids, factor)
        if factor == 0.0:
            # Only flows on the failed links move (resilient hashing keeps the others).
            self._generation += 1
            dead = ~self.net.alive
            for g in self.active:
                if not dead[g.links].any():
                    continue
                try:
                    self._build(g, reroute=dead)
                except SimError as e:
                    raise SimError(f"after {name} fails: {e}") from e
        self._reallocate()

    def _advance(self) -> None:
        now = self.engine.now
        dt = now - self._last
        if dt > 0 and self.active:
            for g in self.active:
                g.remaining -= g.rate * dt
                np.add.at(self.link_bytes, g.links, g.coef * g.rate * dt)
        self._last = now

    def _reallocate(self) -> None:
        """Max-min fair rates by progressive filling over the active groups."""
        self.recomputes += 1
        if self._next is not None:
            self._next.cancel()
            self._next = None
        groups = [g for g in self.active if g.remaining > 1e-9 * max(1.0, g.volume)]
        for g in self.active:
            if g not in groups:
                g.rate = 0.0
        if not groups:
            for g in list(self.active):
                self._finish_bytes(g)
            return
        n = len(groups)
        gidx = np.concatenate([np.full(len(g.links), i) for i, g in enumerate(groups)])
        lidx = np.concatenate([g.links for g in groups])
        coef = np.concatenate([g.coef for g in groups])
        cap = self.net.cap
        rem = cap.astype(float).copy()
        rate = np.zeros(n)
        active = np.ones(n, dtype=bool)
        dead = np.zeros(n, dtype=bool)
        for _ in range(n + 1):
            on = active[gidx]
            if not on.any():
                break
            demand = np.bincount(lidx[on], weights=coef[on], minlength=len(cap))
            used = demand > 0
            with np.errstate(divide="ignore", invalid="ignore"):
                t = np.where(used, rem / np.where(used, demand, 1.0), np.inf)
            step = float(t.min())
            if not math.isfinite(step):
                break
            step = max(step, 0.0)
            rate[active] += step
            rem -= step * demand
            sat = used & (rem <= 1e-9 * np.maximum(cap, 1.0))
            hit = np.unique(gidx[sat[lidx] & on])
            if step == 0.0 and len(hit):
                dead[hit] = True  # stuck on a zero-capacity link
            active[hit] = False
        for g, r, d in zip(groups, rate, dead, strict=True):
            g.rate = 0.0 if d else float(r)
        stuck = [g for g in groups if g.rate <= 0]
        if stuck and all(g.rate <= 0 for g in groups):
            names = ", ".join(g.label for g in stuck[:3])
            raise SimError(f"flows of {names} have no capacity left (failed links on their path)")
        soonest = min((g.remaining / g.rate for g in groups if g.rate > 0), default=math.inf)
        if math.isfinite(soonest):
            self._next = self.engine.after(soonest, self._on_next)

    def _on_next(self) -> None:
        self._next = None
        self._advance()
        for g in list(self.active):
            if g.remaining <= 1e-9 * max(1.0, g.volume) or (
                g.rate > 0 and g.remaining / g.rate < 1e-15
            ):
                self._finish_bytes(g)
        self._reallocate()

    def _finish_bytes(self, g: Group) -> None:
        if g in self.active:
            self.active.remove(g)
            if self.routing == "adaptive":
                for r in g.routes:
                    r.release(self.assigned, 1.0 / self.qps)
        self._bytes_done(g)

    def _bytes_done(self, g: Group) -> None:
        g.remaining = 0.0
        g.rate = 0.0
        g.bytes_done_at = self.engine.now
        self.engine.after(g.latency_s, self._done, g)

    def _done(self, g: Group) -> None:
        g.done_at = self.engine.now
        for dep in g.dependents:
            dep.waiting -= 1
            if dep.waiting == 0:
                self.engine.at(max(self.engine.now, dep.start_at), self._start, dep)

    def run(self, until: float | None = None) -> SimResult:
        """Run to completion (or ``until`` s)."""
        self.engine.run(until=until)
        self._advance()
        end = max((g.done_at or 0.0) for g in self.groups) if self.groups else 0.0
        undone = [g.label for g in self.groups if g.done_at is None]
        if undone and until is None:
            raise SimError(f"groups never finished: {', '.join(undone[:5])}")
        return SimResult(end_s=end, groups=self.groups, link_bytes=self.link_bytes,
                         events=self.engine.events, recomputes=self.recomputes)
