"""The directed-link network of a designed fabric, the ground the flow simulator
(``sim/network.py``) runs on.

Links: the fabric's cables, two directed links each (full duplex), plus the links inside a
server: every GPU to its NVLink domain's switch and to its NIC over PCIe. Capacities are line
rates times the stack's achieved fractions (NCCL busbw / link rate), so an uncontended
collective reproduces the closed-form alpha-beta cost. Routing is structured: valley-free,
equal-cost next hops per tier (what ECMP hashes over), the least-loaded path (adaptive routing)
and the even split over every equal-cost hop (packet spraying); failed links and switches are
left out of every choice.

Units: bytes/s for capacities, seconds.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable

import numpy as np

from clusterwright.catalog.registry import Catalog
from clusterwright.design.fabric import Fabric
from clusterwright.sim.engine import SimError

_MASK = (1 << 64) - 1


def mix64(x: int) -> int:
    """SplitMix64 finalizer: a fast, well-spread 64-bit hash (stable across runs)."""
    x = (x + 0x9E3779B97F4A7C15) & _MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK
    return x ^ (x >> 31)


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
