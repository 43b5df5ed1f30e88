"""Flow-level network simulator: collectives as flows on the designed fabric.

Model (shared/reference/network.md 3.7: what a flow-level simulator can credibly show):

- The network is the fabric's directed links (each cable is two, full duplex) plus the links
  inside a server: every GPU to its NVLink domain's switch and to its NIC over PCIe. Capacities
  are line rates times the stack's achieved fractions (NCCL busbw / link rate), so an
  uncontended collective reproduces the closed-form alpha-beta cost (``sim/fabric_net.py``
  builds it and its equal-cost paths).
- A **flow** is one connection (a ring edge, a tree edge, one all-to-all pair); a group's flows
  are arrays (``sim/flows.py``), routed all at once (``sim/routing.py``). Flows are pinned to
  paths by the routing policy when they start: ECMP with a seeded per-flow hash at every tier
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
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from clusterwright.sim.engine import Engine, Event, SimError
from clusterwright.sim.fabric_net import TIER_NAMES, FabricNet, mix64
from clusterwright.sim.flows import Flows, FlowSpec
from clusterwright.sim.routing import Routes, coefficients, route

__all__ = ["FlowSpec", "Flows", "Group", "LinkStat", "NetworkSim", "SimResult"]

Routing = Literal["ecmp", "adaptive", "spray"]
ROUTINGS: tuple[str, ...] = ("ecmp", "adaptive", "spray")
# Queue pairs per connection: NCCL_IB_QPS_PER_CONNECTION's maximum (NCCL_IB_MAX_QPS, 128);
# each QP is routed as its own sub-flow, so they multiply the simulator's work.
MAX_QPS_PER_CONNECTION = 128
# GPUs of a simulated fabric: an all-reduce over 131,072 GPUs (a million connections) takes a
# few seconds on two cores (benchmarks/netsim_speed.py); netsim and the training re-check
# refuse larger fabrics.
MAX_SIM_GPUS = 131_072
# Adaptive routing places connections one at a time (each sees the load the earlier ones
# left): about 20 us each, so 1M connections take about 20 s on two cores.
MAX_ADAPTIVE_FLOWS = 1 << 20
# Sub-flows routed per batch: bounds the route arrays' memory (about 100 bytes a sub-flow).
# Groups up to this size sum their coefficients in one pass, bit for bit as the per-flow
# simulator did; larger ones add per-batch sums, which differ from one pass in the last bit
# only when a coefficient is a sum of terms that are not powers of two (QP counts that are
# not powers of two).
ROUTE_BATCH = 1 << 21


@dataclass
class Group:
    """Flows that advance together, each carrying ``volume`` bytes (see module docstring)."""

    gid: int
    label: str
    flows: Flows
    volume: float  # bytes per flow
    latency_s: float = 0.0
    weight: float = 1.0  # flow multiplicity on each of its paths (QPs split it)
    after: list[Group] = field(default_factory=list)
    start_at: float = 0.0
    # filled while running
    routes: Routes | None = None  # kept when a failure may move them or for adaptive release
    # An aggregated group (``sim/aggregate.py``): its per-link coefficients, recomputed after
    # a failure, instead of flows to route; ``connections`` it stands for.
    loads: Callable[[], tuple[np.ndarray, np.ndarray]] | None = None
    connections: int = 0
    links: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    coef: np.ndarray = field(default_factory=lambda: np.zeros(0))
    remaining: float = 0.0
    rate: float = 0.0
    started: float | None = None
    bytes_done_at: float | None = None
    done_at: float | None = None
    waiting: int = 0
    dependents: list[Group] = field(default_factory=list)

    @property
    def n_flows(self) -> int:
        """Connections of the group (an aggregated one counts those it stands for)."""
        return self.connections if self.loads is not None else len(self.flows)


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
        # Stable: links of equal utilization in index order, whatever numpy's sort
        order = np.argsort(-util, kind="stable")[:top]
        return [
            LinkStat(net.link_name(int(i)), TIER_NAMES[net.tier_code[i]],
                     float(self.link_bytes[i]), float(util[i]))
            for i in order if self.link_bytes[i] > 0
        ]

    def max_utilization(self, net: FabricNet, tiers: tuple[str, ...] | None = None) -> float:
        if self.end_s <= 0:
            return 0.0
        util = self.link_bytes / np.maximum(net.cap0, 1e-9) / self.end_s
        if tiers is not None:
            mask = np.isin(net.tier_code, [TIER_NAMES.index(t) for t in tiers])
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
        self._salts = [self._tier_seeds[0]] * 8 if polarized else list(self._tier_seeds)
        self._capacity_events = 0  # scheduled capacity changes: routes must be kept
        self._realloc_pending = False

    # ------------------------------------------------------------------ building
    def add_group(self, label: str, flows: Flows | Sequence[FlowSpec], volume: float,
                  latency_s: float = 0.0, after: list[Group] | None = None,
                  start_at: float = 0.0) -> Group:
        """A group of ``flows`` each carrying ``volume`` bytes; starts at ``start_at`` (s) once
        every group in ``after`` is done."""
        fl = Flows.of(flows)
        self._check_gpus(fl)
        g = Group(gid=len(self.groups), label=label, flows=fl, volume=volume,
                  latency_s=latency_s, after=list(after or []), start_at=start_at)
        g.waiting = len(g.after)
        for dep in g.after:
            dep.dependents.append(g)
        self.groups.append(g)
        if g.waiting == 0:
            self.engine.at(start_at, self._start, g)
        return g

    def add_loads(self, label: str, loads: Callable[[], tuple[np.ndarray, np.ndarray]],
                  connections: int, volume: float, latency_s: float = 0.0,
                  after: list[Group] | None = None, start_at: float = 0.0) -> Group:
        """An aggregated group: ``connections`` flows of ``volume`` bytes each, whose links
        and flows per link ``loads()`` returns (called at start and after failures)."""
        g = self.add_group(label, Flows.concat([]), volume, latency_s, after, start_at)
        g.loads = loads
        g.connections = connections
        return g

    def _check_gpus(self, fl: Flows) -> None:
        """Every GPU a flow names (source, destination, relay) is in the fabric; the first
        one that is not, in flow order, is named."""
        n = self.net.n_gpus
        bad_src = (fl.src < 0) | (fl.src >= n)
        bad_dst = (fl.dst < 0) | (fl.dst >= n)
        bad_via = (fl.via != -1) & ((fl.via < 0) | (fl.via >= n))
        bad = bad_src | bad_dst | bad_via
        if bad.any():
            i = int(np.argmax(bad))
            for gpu, b in ((fl.src[i], bad_src[i]), (fl.dst[i], bad_dst[i]),
                           (fl.via[i], bad_via[i])):
                if b:
                    raise SimError(f"rank on GPU {int(gpu)} is not in this fabric ({n} GPUs)")

    def fail(self, at: float, name: str, factor: float = 0.0) -> None:
        """At ``at`` (s), set a device's or cable's links to ``factor`` of line rate (0 fails
        them; flows re-route)."""
        ids = self.net.links_of(name)
        self._capacity_events += 1
        self.engine.at(at, self._capacity, ids, factor, name)

    # ------------------------------------------------------------------ routing
    def _route(self, fl: Flows, which: np.ndarray | None = None, generation: int = 0,
               rows: bool = True) -> Routes:
        return route(self.net, fl, self.qps, self.routing, self._salts, self.plane_spray,
                     generation, which, self.assigned, rows)

    def routes(self, g: Group) -> Routes:
        """Every route (queue pair) of a group with its links, as this simulator routes it
        (for the fluid congestion-control run, ``sim/netsim_cc.py``)."""
        return g.routes if g.routes is not None else self._route(g.flows)

    def _cut_message(self, g: Group, routes: np.ndarray, per_route: bool) -> str:
        """The error naming the flows the failures cut off (first eight)."""
        flows = routes // self.qps
        if not per_route:
            flows = np.unique(flows)
        cut = [f"{self.net.gpu_name(int(g.flows.src[f]))} -> "
               f"{self.net.gpu_name(int(g.flows.dst[f]))}" for f in flows[:9].tolist()]
        why = ("the failures cut them off" if not self.net.alive.all() else
               "no failure given: the fabric has no path between their rails, one tier of "
               "rail leaves without spines; keep PXN on, or design two tiers")
        return (f"{len(flows)} flow(s) of {g.label} have no live path ({why}): "
                + ", ".join(cut[:8]) + (" ..." if len(flows) > 8 else ""))

    def _build(self, g: Group, reroute: np.ndarray | None = None) -> None:
        """Route a group's flows (or, with ``reroute``, only those crossing those dead links)
        and aggregate them into per-link coefficients."""
        if g.loads is not None:
            links, coef = g.loads()
            g.links, g.coef = links, coef * g.weight
            return
        subs = self.qps
        keep = self.routing == "adaptive" or self._capacity_events > 0
        n = len(g.flows) * subs
        if reroute is None or g.routes is None:
            if n > ROUTE_BATCH and not keep:
                self._build_batched(g)
                return
            routes = self._route(g.flows, rows=keep)
            if routes.cut.any():
                raise SimError(self._cut_message(g, np.flatnonzero(routes.cut), False))
        else:
            routes = g.routes
            moved = np.flatnonzero(routes.touching(reroute))
            if self.routing == "adaptive":
                for i in moved.tolist():  # release, then re-place, one route at a time
                    _release(self.assigned, routes.whole_of(i), 1.0 / subs)
                    one = np.asarray([i], dtype=np.int64)
                    routes = Routes.splice(routes, self._route(g.flows, one, self._generation),
                                           one)
            elif len(moved):
                routes = Routes.splice(routes, self._route(g.flows, moved, self._generation),
                                       moved)
            if routes.cut.any():
                raise SimError(self._cut_message(g, np.flatnonzero(routes.cut), True))
        g.routes = routes if keep else None
        links, coef = coefficients(self.net, routes, subs)
        g.links, g.coef = links, coef * g.weight

    def _build_batched(self, g: Group) -> None:
        """A group too large to route in one pass: route it in batches and add their
        coefficients (``ROUTE_BATCH``)."""
        subs = self.qps
        n = len(g.flows) * subs
        total = np.zeros(self.net.n_links)
        used = np.zeros(self.net.n_links, dtype=bool)
        for lo in range(0, n, ROUTE_BATCH):
            which = np.arange(lo, min(n, lo + ROUTE_BATCH), dtype=np.int64)
            routes = self._route(g.flows, which, rows=False)
            if routes.cut.any():
                raise SimError(self._cut_message(g, which[routes.cut], False))
            links, coef = coefficients(self.net, routes, subs)
            total[links] += coef
            used[links] = True
        g.links = np.flatnonzero(used)
        g.coef = total[g.links] * g.weight

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
        self._reallocate_soon()

    def _reallocate_soon(self) -> None:
        """Recompute rates once every group starting at this instant has started: groups that
        start together (a collective's channels, every job at time 0) share one progressive
        filling instead of one each, with the same rates."""
        if not self._realloc_pending:
            self._realloc_pending = True
            self.engine.at(self.engine.now, self._reallocate_now)

    def _reallocate_now(self) -> None:
        self._realloc_pending = False
        self._advance()
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
                self.link_bytes[g.links] += g.coef * g.rate * dt  # links are distinct
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
        # Only the links some group uses take part (the others have no demand): the same
        # arithmetic per link on arrays the size of the groups' footprint, not the fabric's.
        present = np.zeros(self.net.n_links, dtype=bool)
        present[lidx] = True
        lidx = (np.cumsum(present) - 1)[lidx]
        cap = self.net.cap[present]
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
            if self.routing == "adaptive" and g.routes is not None:
                order = np.argsort(g.routes.whole_route, kind="stable")
                bounds = np.searchsorted(g.routes.whole_route[order],
                                         np.arange(len(g.routes) + 1))
                links = g.routes.whole_link[order]
                for i in range(len(g.routes)):
                    _release(self.assigned, links[bounds[i]:bounds[i + 1]], 1.0 / self.qps)
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


def _release(assigned: np.ndarray, links: np.ndarray, amount: float) -> None:
    """Take one route's flow off the adaptive-routing load counts (its whole links)."""
    assigned[links] = np.maximum(0.0, assigned[links] - amount)
