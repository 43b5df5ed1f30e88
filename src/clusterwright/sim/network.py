"""Flow-level network simulator: collectives as flows on the designed fabric.

Model (shared/reference/network.md 3.7: what a flow-level simulator can credibly show):

- The network is the fabric's directed links (each cable is two, full duplex) plus the links
  inside a server: every GPU to its NVLink domain's switch and to its NIC over PCIe. Capacities
  are line rates times the stack's achieved fractions (NCCL busbw / link rate), so an
  uncontended collective reproduces the closed-form alpha-beta cost.
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
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from clusterwright.catalog.registry import Catalog
from clusterwright.design.fabric import Fabric
from clusterwright.errors import InputError
from clusterwright.sim.engine import Engine, Event

Routing = Literal["ecmp", "adaptive", "spray"]
ROUTINGS: tuple[str, ...] = ("ecmp", "adaptive", "spray")
_MASK = (1 << 64) - 1
# Queue pairs per connection: NCCL_IB_QPS_PER_CONNECTION's maximum (NCCL_IB_MAX_QPS, 128);
# each QP is routed as its own sub-flow, so they multiply the simulator's work.
MAX_QPS_PER_CONNECTION = 128
# GPUs of a simulated fabric: a ring all-reduce over 65,536 GPUs takes about 20 s on two
# cores (netsim and the training re-check refuse larger fabrics).
MAX_SIM_GPUS = 65_536


class SimError(InputError):
    """A simulation that cannot run as asked (unknown rank, disconnected fabric, ...)."""


def mix64(x: int) -> int:
    """SplitMix64 finalizer: a fast, well-spread 64-bit hash (stable across runs)."""
    x = (x + 0x9E3779B97F4A7C15) & _MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK
    return x ^ (x >> 31)


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


class FabricNet:
    """The directed-link network of a designed fabric (backend) and its servers' insides,
    with structured (valley-free, equal-cost) routing."""

    def __init__(self, fab: Fabric, cat: Catalog, efficiency: bool = True) -> None:
        self.fab = fab
        srv = fab.server
        gpu = cat.gpu(srv.gpu)
        stack = cat.stack_for_gpu(gpu.id)
        self.stack = stack
        self.gpus_per_host = srv.gpus // srv.hosts
        self.hosts = [d for d in fab.devices if d.role == "host"]
        self.n_gpus = len(self.hosts) * self.gpus_per_host
        self.domain_gpus = srv.nvlink_domain_gpus
        up_eff = stack.scale_up_busbw_fraction if efficiency else 1.0
        net_eff = stack.nic_busbw_fraction if efficiency else 1.0
        self.nvlink_bps = gpu.scale_up.bandwidth_gbps_per_direction * 1e9 * up_eff  # bytes/s
        self.nvls_bps = gpu.scale_up.bandwidth_gbps_per_direction * 1e9 * (
            stack.nvls_busbw_fraction if efficiency else 1.0
        )
        pcie = {3: 16e9, 4: 32e9, 5: 64e9, 6: 128e9}.get(gpu.pcie_gen, 64e9)  # x16, one way
        self.names: list[str] = []
        self.tiers: list[str] = []
        caps: list[float] = []
        self.node_links: dict[str, list[int]] = defaultdict(list)  # device -> its link ids

        def add(a: str, b: str, cap: float, tier: str) -> int:
            i = len(caps)
            caps.append(cap)
            self.names.append(f"{a}->{b}")
            self.tiers.append(tier)
            self.node_links[a].append(i)
            self.node_links[b].append(i)
            return i

        # GPU <-> NVLink domain switch, GPU <-> NIC (PCIe).
        self.gpu_up: list[int] = []
        self.gpu_down: list[int] = []
        self.gpu_to_nic: list[int] = []
        self.nic_to_gpu: list[int] = []
        self.gpu_domain: list[int] = []
        self.gpu_host: list[int] = []
        self.gpu_nic: list[str] = []
        # GPU k uses its own rail's NIC; a partial build (--rails) shares the cabled ones.
        rails = fab.shape.rails
        for hi, h in enumerate(self.hosts):
            for k in range(self.gpus_per_host):
                gi = hi * self.gpus_per_host + k
                g = f"{h.name}/gpu{k}"
                dom = gi // self.domain_gpus
                nvl = f"nvl{dom:05d}"
                self.gpu_up.append(add(g, nvl, self.nvlink_bps, "nvlink"))
                self.gpu_down.append(add(nvl, g, self.nvlink_bps, "nvlink"))
                nic = f"{h.name}/nic{k % rails}"
                self.gpu_to_nic.append(add(g, nic, pcie, "pcie"))
                self.nic_to_gpu.append(add(nic, g, pcie, "pcie"))
                self.gpu_domain.append(dom)
                self.gpu_host.append(hi)
                self.gpu_nic.append(nic)
        # The backend fabric: node-leaf, leaf-spine, spine-core, both directions.
        by = fab.by_name
        self.nic_up: dict[str, list[tuple[int, int, str]]] = defaultdict(list)  # (plane, up, leaf)
        self.leaf_down: dict[tuple[str, str], int] = {}  # (leaf, nic) -> link
        self.up: dict[str, list[tuple[int, str]]] = defaultdict(list)  # switch -> (link, upper)
        self.down: dict[tuple[str, str], list[int]] = defaultdict(list)  # (sw, lower) -> links
        self.pod: dict[str, int] = {}
        self.role: dict[str, str] = {}
        self.leaf_of_nic: dict[tuple[str, int], str] = {}
        for lk in fab.links:
            if lk.network != "backend":
                continue
            cap = lk.speed_gbps * 1e9 / 8 * net_eff
            if lk.tier == "node-leaf":
                nic = f"{lk.a}/nic{lk.rail}"
                u = add(nic, lk.b, cap, "node-leaf")
                d = add(lk.b, nic, cap, "node-leaf")
                self.nic_up[nic].append((lk.plane, u, lk.b))
                self.leaf_down[(lk.b, nic)] = d
                self.leaf_of_nic[(nic, lk.plane)] = lk.b
            else:
                u = add(lk.a, lk.b, cap, lk.tier)
                d = add(lk.b, lk.a, cap, lk.tier)
                self.up[lk.a].append((u, lk.b))
                self.down[(lk.b, lk.a)].append(d)
            for name in (lk.a, lk.b):
                dev = by[name]
                self.role[name] = dev.role
                if dev.role in ("leaf", "spine"):
                    self.pod[name] = dev.pod
        self.three_tier = fab.shape.tiers == 3
        # core -> pod -> (link down to that pod's spine, spine)
        self.core_down: dict[str, dict[int, list[tuple[int, str]]]] = defaultdict(
            lambda: defaultdict(list)
        )
        for (upper, lower), ids in self.down.items():
            if self.role.get(upper) == "core":
                for i in ids:
                    self.core_down[upper][self.pod[lower]].append((i, lower))
        self._reach_cache: dict[tuple[str, str], bool] = {}
        self._hops_cache: dict[tuple[str, str], list[int]] = {}
        self._up_cache: dict[tuple[str, bool], tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self._down_cache: dict[tuple[str, bool], tuple[np.ndarray, np.ndarray]] = {}
        self._switches: list[str] = []
        self._switch_idx: dict[str, int] = {}
        for name, role in self.role.items():
            if role in ("spine", "core"):
                self._switch_index(name)
        self.cap0 = np.asarray(caps, dtype=float)
        self.cap = self.cap0.copy()
        self.alive = np.ones(len(caps), dtype=bool)
        self.n_links = len(caps)
        self._spray_cache: dict[tuple[str, str], tuple[np.ndarray, np.ndarray]] = {}
        self.index = {n: i for i, n in enumerate(self.names)}

    def gpu_name(self, gpu: int) -> str:
        """``host/gpuK`` of a global GPU index."""
        return f"{self.hosts[gpu // self.gpus_per_host].name}/gpu{gpu % self.gpus_per_host}"

    # ------------------------------------------------------------------ failures
    def set_capacity(self, link_ids: list[int], factor: float) -> None:
        """Scale links to ``factor`` of their line rate (0 = failed)."""
        for i in link_ids:
            self.cap[i] = self.cap0[i] * factor
            self.alive[i] = factor > 0
        self._spray_cache.clear()
        self._reach_cache.clear()
        self._hops_cache.clear()
        self._up_cache.clear()
        self._down_cache.clear()

    def links_of(self, name: str) -> list[int]:
        """Link ids of a device (both directions of all its cables) or of one cable
        ("a->b" either way round)."""
        if name in self.node_links:
            return list(self.node_links[name])
        for n in (name, "->".join(reversed(name.split("->")))):
            if n in self.index:
                i = self.index[n]
                a, b = self.names[i].split("->")
                return [i, self.index[f"{b}->{a}"]]
        raise SimError(f"no device or link named {name!r} in this fabric")

    # ------------------------------------------------------------------ routing
    def _reach(self, sw: str, leaf: str) -> bool:
        """Whether switch ``sw`` still has a live way down to ``leaf`` (memoized until the
        next capacity change)."""
        key = (sw, leaf)
        hit = self._reach_cache.get(key)
        if hit is None:
            hit = bool(self._down_hops(sw, leaf))
            self._reach_cache[key] = hit
        return hit

    def _down_hops(self, sw: str, leaf: str) -> list[int]:
        if sw == leaf:
            return [-1]
        direct = self.down.get((sw, leaf))
        if direct is not None:
            return [i for i in direct if self.alive[i]]
        role = self.role[sw]
        if role == "spine":
            if not self.three_tier or self.pod[sw] == self.pod[leaf]:
                return []
            return [u for u, core in self.up[sw] if self.alive[u] and self._reach(core, leaf)]
        if role == "core":
            return [
                i for i, spine in self.core_down[sw].get(self.pod[leaf], [])
                if self.alive[i] and self._reach(spine, leaf)
            ]
        return []

    def _next_hops(self, sw: str, dst_leaf: str) -> list[int]:
        """Live links from ``sw`` one hop closer to ``dst_leaf`` (equal cost), memoized."""
        key = (sw, dst_leaf)
        hit = self._hops_cache.get(key)
        if hit is not None:
            return hit
        if self.role[sw] == "leaf":
            hops = [u for u, spine in self.up[sw] if self.alive[u] and self._reach(spine, dst_leaf)]
        else:
            hops = self._down_hops(sw, dst_leaf)
        self._hops_cache[key] = hops
        return hops

    def _dst(self, link: int) -> str:
        return self.names[link].split("->", 1)[1]

    def transit(self, src_leaf: str, dst_leaf: str, pick: Callable[[int, list[int]], int]
                ) -> list[int]:
        """Switch-to-switch links from ``src_leaf`` to ``dst_leaf``; ``pick(tier, hops)``
        chooses among equal-cost next hops at each tier."""
        path: list[int] = []
        here = src_leaf
        tier = 0
        while here != dst_leaf:
            hops = self._next_hops(here, dst_leaf)
            if not hops:
                raise SimError(f"{dst_leaf} is cut off from {src_leaf}: no live path")
            link = hops[pick(tier, hops)] if len(hops) > 1 else hops[0]
            path.append(link)
            here = self._dst(link)
            tier += 1
            if tier > 8:  # pragma: no cover - the fabric is a tree of depth 3
                raise AssertionError("routing loop")
        return path

    # -------------------------------------------------- equal-cost paths, vectorized
    # Between two leaves every equal-cost path is (leaf uplink, [spine uplink, core downlink],
    # spine downlink). The halves are cached per source leaf and per destination leaf, so
    # adaptive routing and spraying cost numpy work per flow, not a walk of the fabric.
    def _cross(self, la: str, lb: str) -> bool:
        return self.three_tier and self.pod[la] != self.pod[lb]

    def _up_half(self, la: str, cross: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(leaf uplinks, spine uplinks or -1, index of the spine/core they reach)."""
        key = (la, cross)
        hit = self._up_cache.get(key)
        if hit is not None:
            return hit
        u_ids: list[int] = []
        c_ids: list[int] = []
        reach: list[int] = []
        for u, spine in self.up[la]:
            if not self.alive[u]:
                continue
            if not cross:
                u_ids.append(u)
                c_ids.append(-1)
                reach.append(self._switch_index(spine))
                continue
            for cu, core in self.up[spine]:
                if self.alive[cu]:
                    u_ids.append(u)
                    c_ids.append(cu)
                    reach.append(self._switch_index(core))
        out = (np.asarray(u_ids, dtype=np.int64), np.asarray(c_ids, dtype=np.int64),
               np.asarray(reach, dtype=np.int64))
        self._up_cache[key] = out
        return out

    def _down_half(self, lb: str, cross: bool) -> tuple[np.ndarray, np.ndarray]:
        """Per spine (or core) index: its live links one and two hops down towards ``lb``,
        as (first hop [n_switch x m1], second hop [n_switch x m2]) padded with -1."""
        key = (lb, cross)
        hit = self._down_cache.get(key)
        if hit is not None:
            return hit
        n = len(self._switches)
        first: list[list[int]] = [[] for _ in range(n)]
        second: list[list[int]] = [[] for _ in range(n)]
        pod = self.pod[lb]
        for i, sw in enumerate(self._switches):
            if not cross and self.role[sw] == "spine":
                first[i] = [x for x in self.down.get((sw, lb), []) if self.alive[x]]
            elif cross and self.role[sw] == "core":
                for link, spine in self.core_down[sw].get(pod, []):
                    if self.alive[link]:
                        down = [x for x in self.down.get((spine, lb), []) if self.alive[x]]
                        if down:
                            first[i].append(link)
                            second[i] = down
        m1 = max((len(x) for x in first), default=1) or 1
        m2 = max((len(x) for x in second), default=1) or 1
        a1 = np.full((n, m1), -1, dtype=np.int64)
        a2 = np.full((n, m2), -1, dtype=np.int64)
        for i in range(n):
            a1[i, :len(first[i])] = first[i]
            a2[i, :len(second[i])] = second[i]
        self._down_cache[key] = (a1, a2)
        return a1, a2

    def _switch_index(self, name: str) -> int:
        idx = self._switch_idx.get(name)
        if idx is None:
            idx = len(self._switches)
            self._switches.append(name)
            self._switch_idx[name] = idx
            self._down_cache.clear()  # arrays are sized by the switch count
        return idx

    def least_loaded_path(self, src_leaf: str, dst_leaf: str, load: np.ndarray, key: int
                          ) -> list[int]:
        """Adaptive routing at flow start: of every equal-cost path, the one whose most
        loaded link is least loaded (the whole path, as adaptive routing with congestion
        feedback sees it), ties broken by the flow's hash."""
        if src_leaf == dst_leaf:
            return []  # one hop: the leaf switches it
        cross = self._cross(src_leaf, dst_leaf)
        u, cu, reach = self._up_half(src_leaf, cross)
        d1, d2 = self._down_half(dst_leaf, cross)
        big = np.inf
        lpad = np.append(load, big)  # index -1 reads +inf: missing or dead links
        f1 = lpad[d1[reach]]
        best1 = f1.argmin(axis=1)
        cost = np.maximum(lpad[u], f1[np.arange(len(u)), best1])
        if cross:
            cost = np.maximum(cost, lpad[cu])
            f2 = lpad[d2[reach]]
            best2 = f2.argmin(axis=1)
            cost = np.maximum(cost, f2[np.arange(len(u)), best2])
        if not len(cost) or not np.isfinite(cost.min()):
            raise SimError(f"{dst_leaf} is cut off from {src_leaf}: no live path")
        ties = np.flatnonzero(cost == cost.min())
        i = int(ties[mix64(key) % len(ties)])
        path = [int(u[i])]
        if cross:
            path += [int(cu[i]), int(d1[reach[i], best1[i]]), int(d2[reach[i], best2[i]])]
        else:
            path.append(int(d1[reach[i], best1[i]]))
        return path

    def spray_halves(self, src_leaf: str, dst_leaf: str) -> tuple[
            tuple[str, bool], tuple[str, bool]] | None:
        """Keys of the cached up and down halves of a spray between two leaves, when the
        spray factorizes (no failed link: every path is equally live); else None."""
        if not self.alive.all():
            return None
        cross = self._cross(src_leaf, dst_leaf)
        return (src_leaf, cross), (dst_leaf, cross)

    def spray_up(self, la: str, cross: bool) -> tuple[np.ndarray, np.ndarray]:
        """Fractions on the links of the upper half of a spray from ``la``."""
        u, cu, _ = self._up_half(la, cross)
        n = len(u)
        if not cross:
            return u, np.full(n, 1.0 / n)
        ids = np.concatenate([u, cu])
        uniq, inv = np.unique(ids, return_inverse=True)
        return uniq, np.bincount(inv, weights=np.full(len(ids), 1.0 / n))

    def spray_down(self, lb: str, cross: bool) -> tuple[np.ndarray, np.ndarray]:
        """Fractions on the links of the lower half of a spray into ``lb``: the mass that
        reaches each spine (or core) arrives evenly, then splits over its live links down."""
        d1, d2 = self._down_half(lb, cross)
        live = (d1 >= 0).any(axis=1)
        tops = np.flatnonzero(live)
        if not len(tops):
            raise SimError(f"{lb} is cut off: no live path down")
        per_top = 1.0 / len(tops)
        ids: list[np.ndarray] = []
        ws: list[np.ndarray] = []
        for arr in ([d1] if not cross else [d1, d2]):
            rows = arr[tops]
            cnt = (rows >= 0).sum(axis=1)
            w = np.repeat(per_top / np.maximum(cnt, 1), rows.shape[1]).reshape(rows.shape)
            mask = rows >= 0
            ids.append(rows[mask])
            ws.append(w[mask])
        all_ids = np.concatenate(ids)
        uniq, inv = np.unique(all_ids, return_inverse=True)
        return uniq, np.bincount(inv, weights=np.concatenate(ws))

    def spray(self, src_leaf: str, dst_leaf: str) -> tuple[np.ndarray, np.ndarray]:
        """Per-link fractions of a flow split evenly over every equal-cost next hop."""
        key = (src_leaf, dst_leaf)
        hit = self._spray_cache.get(key)
        if hit is not None:
            return hit
        weights: dict[int, float] = defaultdict(float)
        frontier = {src_leaf: 1.0}
        depth = 0
        while frontier:
            nxt: dict[str, float] = defaultdict(float)
            for sw, w in frontier.items():
                if sw == dst_leaf:
                    continue
                hops = self._next_hops(sw, dst_leaf)
                if not hops:
                    raise SimError(f"{dst_leaf} is cut off from {src_leaf}: no live path")
                share = w / len(hops)
                for link in hops:
                    weights[link] += share
                    nxt[self._dst(link)] += share
            frontier = {k: v for k, v in nxt.items() if k != dst_leaf}
            depth += 1
            if depth > 8:  # pragma: no cover
                raise AssertionError("routing loop")
        out = (np.fromiter(weights.keys(), dtype=np.int64, count=len(weights)),
               np.fromiter(weights.values(), dtype=float, count=len(weights)))
        self._spray_cache[key] = out
        return out

    def nic_leaf(self, nic: str, plane: int) -> tuple[int, str]:
        for p, up, leaf in self.nic_up[nic]:
            if p == plane:
                return up, leaf
        raise SimError(f"{nic} has no link in plane {plane}")


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
            raise SimError(f"--routing: unknown policy {routing!r} (one of {', '.join(ROUTINGS)})")
        if qps < 1:
            raise SimError(f"--qps must be at least 1, got {qps}")
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
