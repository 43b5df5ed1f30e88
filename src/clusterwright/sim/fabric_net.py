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
from typing import Any

import numpy as np

from clusterwright.catalog.registry import Catalog
from clusterwright.design.fabric import Fabric
from clusterwright.model.host_link import pcie_bytes_per_s
from clusterwright.sim.engine import SimError

_MASK = (1 << 64) - 1
_ROLE = {"leaf": 0, "spine": 1, "core": 2}
# Link tiers, by code (``FabricNet.tier_code``).
TIER_NAMES = ("node-leaf", "leaf-spine", "spine-core", "nvlink", "pcie")
_TIER = {name: i for i, name in enumerate(TIER_NAMES)}


def mix64(x: int) -> int:
    """SplitMix64 finalizer: a fast, well-spread 64-bit hash (stable across runs)."""
    x = (x + 0x9E3779B97F4A7C15) & _MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK
    return x ^ (x >> 31)


class FabricNet:
    """The directed-link network of a designed fabric (backend) and its servers' insides,
    with structured (valley-free, equal-cost) routing.

    Besides the named links (``names``, ``tiers``, ``cap0``) it keeps integer tables the
    array router (``sim/routing.py``) gathers from: every GPU's NVLink and PCIe links and NIC,
    every NIC's uplink, leaf and downlink per plane, every switch's uplinks in cabling order,
    the parallel links from a spine down to a leaf and from a core down to a pod, all built
    once here with array operations.
    """

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
        pcie = pcie_bytes_per_s(gpu.pcie_gen)  # x16, one way
        # GPU k uses its own rail's NIC; a partial build (--rails) shares the cabled ones.
        self.rails = rails = fab.shape.rails
        gph = self.gpus_per_host
        n = self.n_gpus
        self.host_names = [h.name for h in self.hosts]
        host_index = {name: i for i, name in enumerate(self.host_names)}
        gi = np.arange(n, dtype=np.int64)
        self.gpu_domain = gi // self.domain_gpus
        self.gpu_host = gi // gph
        self.gpu_nic_id = self.gpu_host * rails + (gi % gph) % rails
        # Four links per GPU, in this order: to its NVLink switch, back, to its NIC, back.
        self.gpu_up = 4 * gi
        self.gpu_down = 4 * gi + 1
        self.gpu_to_nic = 4 * gi + 2
        self.nic_to_gpu = 4 * gi + 3
        # The backend fabric's cables, each two directed links after the GPUs' (a->b, b->a).
        sws = [d for d in fab.devices if d.role in ("leaf", "spine", "core")]
        self.sw_names = [d.name for d in sws]
        self.sw_index = {name: i for i, name in enumerate(self.sw_names)}
        self.sw_role = np.asarray([_ROLE[d.role] for d in sws], dtype=np.int8)
        self.sw_pod = np.asarray([d.pod if d.role != "core" else 0 for d in sws],
                                 dtype=np.int64)
        self.sw_plane = np.asarray([d.plane for d in sws], dtype=np.int64)
        cables = [lk for lk in fab.links if lk.network == "backend"]
        nc = len(cables)
        tier = np.asarray([_TIER[lk.tier] for lk in cables], dtype=np.int8)
        speed = np.asarray([lk.speed_gbps for lk in cables], dtype=float)
        host_link = tier == 0
        a_id = np.asarray([host_index[lk.a] * rails + lk.rail if lk.tier == "node-leaf"
                           else self.sw_index[lk.a] for lk in cables], dtype=np.int64)
        b_id = np.asarray([self.sw_index[lk.b] for lk in cables], dtype=np.int64)
        plane = np.asarray([lk.plane for lk in cables], dtype=np.int64)
        self._cables = (cables, tier, a_id, b_id)
        base = 4 * n
        fwd = base + 2 * np.arange(nc, dtype=np.int64)
        self.n_links = base + 2 * nc
        cap = np.empty(self.n_links)
        cap[0:base:4] = cap[1:base:4] = self.nvlink_bps
        cap[2:base:4] = cap[3:base:4] = pcie
        cable_cap = speed * 1e9 / 8 * net_eff
        cap[fwd] = cable_cap
        cap[fwd + 1] = cable_cap
        # Line rate of every cable direction, Gb/s (0 for the GPUs' NVLink and PCIe links).
        self.link_gbps = np.zeros(self.n_links)
        self.link_gbps[fwd] = self.link_gbps[fwd + 1] = speed
        self.cap0 = cap
        self.cap = cap.copy()
        self.alive = np.ones(self.n_links, dtype=bool)
        # Tier of every link as a code (``TIER_NAMES``); ``tiers`` spells them out.
        self.tier_code = np.empty(self.n_links, dtype=np.int8)
        self.tier_code[0:base:4] = self.tier_code[1:base:4] = _TIER["nvlink"]
        self.tier_code[2:base:4] = self.tier_code[3:base:4] = _TIER["pcie"]
        self.tier_code[fwd] = self.tier_code[fwd + 1] = tier
        self.nic_names = [f"{h}/nic{r}" for h in self.host_names for r in range(rails)]
        nic = np.stack([a_id[host_link], plane[host_link], fwd[host_link],
                        fwd[host_link] + 1, b_id[host_link]], axis=1)
        sw_link = ~host_link
        up_rows = np.stack([a_id[sw_link], fwd[sw_link], b_id[sw_link]], axis=1)
        down_rows = np.stack([b_id[sw_link], fwd[sw_link] + 1, a_id[sw_link]], axis=1)
        self.three_tier = fab.shape.tiers == 3
        self._reach_cache: dict[tuple[str, str], bool] = {}
        self._hops_cache: dict[tuple[str, str], list[int]] = {}
        self._up_cache: dict[tuple[str, bool], tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self._down_cache: dict[tuple[str, bool], tuple[np.ndarray, np.ndarray]] = {}
        self._switches_list: list[str] | None = None
        self._switch_idx: dict[str, int] = {}
        self._spray_cache: dict[tuple[str, str], tuple[np.ndarray, np.ndarray]] = {}
        self._index: dict[str, int] | None = None
        self._node_links: dict[str, list[int]] | None = None
        self._names: list[str] | None = None
        self._views: dict[str, Any] | None = None
        self._tables(nic, up_rows, down_rows)

    def _tables(self, nic: np.ndarray, up_rows: np.ndarray, down: np.ndarray) -> None:
        """Integer routing tables (class docstring), in cabling order, so a hash picks the
        same link from them as from the per-switch lists (``up``, ``down``, ``core_down``).
        ``nic``: (NIC, plane, uplink, downlink, leaf) rows; ``up_rows``/``down``: (switch,
        link, switch it leads to) rows."""
        n_sw = len(self.sw_names)
        n_nic = len(self.nic_names)
        self.planes = sorted(set(nic[:, 1].tolist()))
        p_idx = {p: k for k, p in enumerate(self.planes)}
        width = max(1, len(self.planes))
        self.nic_plane_up = np.full((n_nic, width), -1, dtype=np.int64)
        self.nic_plane_down = np.full((n_nic, width), -1, dtype=np.int64)
        self.nic_plane_leaf = np.full((n_nic, width), -1, dtype=np.int64)
        if len(nic):
            col = np.asarray([p_idx[p] for p in nic[:, 1].tolist()], dtype=np.int64)
            # The first link of a NIC in a plane wins, as ``nic_leaf`` finds it.
            first = np.unique(nic[:, 0] * width + col, return_index=True)[1]
            rows, cols = nic[first, 0], col[first]
            self.nic_plane_up[rows, cols] = nic[first, 2]
            self.nic_plane_down[rows, cols] = nic[first, 3]
            self.nic_plane_leaf[rows, cols] = nic[first, 4]
        # Uplinks of every switch, padded with -1, in cabling order.
        self.up_tab, self.up_cnt = _padded(up_rows[:, 0], up_rows[:, 1], n_sw)
        self.link_sw = np.full(self.n_links, -1, dtype=np.int64)  # switch a link leads to
        self.link_sw[up_rows[:, 1]] = up_rows[:, 2]
        self.link_sw[down[:, 1]] = down[:, 2]
        self.link_sw[nic[:, 2]] = nic[:, 4]
        role = self.sw_role
        # Spine -> leaf: the parallel links of each (spine, leaf) pair, looked up by key.
        sl = down[(role[down[:, 0]] == 1) & (role[down[:, 2]] == 0)] if len(down) else down
        self.sl_keys, self.sl_start, self.sl_cnt, self.sl_links = _buckets(
            sl[:, 0] * n_sw + sl[:, 2], sl[:, 1])
        # Core -> pod: its links down to that pod's spines, grouped by spine in the order the
        # (core, spine) pairs were first cabled, as ``core_down`` lists them.
        cs = down[role[down[:, 0]] == 2] if len(down) else down
        self.n_pods = int(self.sw_pod.max()) + 1 if n_sw else 1
        pair = cs[:, 0] * n_sw + cs[:, 2]
        _, first_seen, inv = np.unique(pair, return_index=True, return_inverse=True)
        order = np.lexsort((np.arange(len(cs)), first_seen[inv],
                            cs[:, 0] * self.n_pods + self.sw_pod[cs[:, 2]]))
        cs = cs[order]
        self.cp_keys, self.cp_start, self.cp_cnt, self.cp_links = _buckets(
            cs[:, 0] * self.n_pods + self.sw_pod[cs[:, 2]], cs[:, 1], presorted=True)
        self.full = self._structurally_full(sl, cs)
        # Dense (spine, leaf) and (core, pod) views of the buckets for the array router:
        # start and count per pair (count 0: no link).
        self.sw_row = np.full(n_sw, -1, dtype=np.int64)  # index among its role
        for r in (0, 1, 2):
            ids = np.flatnonzero(role == r)
            self.sw_row[ids] = np.arange(len(ids))
        n_sp, n_lf, n_co = (int((role == r).sum()) for r in (1, 0, 2))
        self.sl_dense_start, self.sl_dense_cnt = _dense(
            self.sl_keys // n_sw, self.sl_keys % n_sw, self.sl_start, self.sl_cnt,
            self.sw_row, (n_sp, n_lf))
        self.cp_dense_start, self.cp_dense_cnt = _dense(
            self.cp_keys // self.n_pods, self.cp_keys % self.n_pods, self.cp_start,
            self.cp_cnt, self.sw_row, (n_co, self.n_pods), second_is_switch=False)

    def _structurally_full(self, sl: np.ndarray, cs: np.ndarray) -> bool:
        """True when every spine reaches every leaf of its plane (directly in its pod, through
        a core elsewhere): then, with every link alive, every equal-cost candidate reaches every
        destination and the array router can skip the reachability filter. The designer's
        fat trees are all full; anything else takes the filtered path."""
        if not self.three_tier and not len(sl):
            return True  # one tier: nothing to reach through
        plane = self.sw_plane
        role, pod = self.sw_role, self.sw_pod
        group = plane * self.n_pods + (pod if self.three_tier else 0)
        leaves = np.flatnonzero(role == 0)
        spines = np.flatnonzero(role == 1)
        want = np.bincount(group[leaves], minlength=group.max() + 1)
        pairs = np.unique(sl[:, 0] * len(role) + sl[:, 2]) if len(sl) else np.zeros(0, int)
        got = np.bincount(pairs // len(role), minlength=len(role))
        if np.any(got[spines] != want[group[spines]]):
            return False
        if not self.three_tier:
            return True
        if np.any(self.up_cnt[spines] == 0):
            return False
        cores = np.flatnonzero(role == 2)
        pods_of_plane = {int(p): len(set(pod[leaves][plane[leaves] == p].tolist()))
                         for p in set(plane[leaves].tolist())}
        reach = np.unique(cs[:, 0] * self.n_pods + pod[cs[:, 2]]) if len(cs) else cs[:, 0]
        n_reach = np.bincount(reach // self.n_pods, minlength=len(role))
        return all(int(n_reach[c]) == pods_of_plane.get(int(plane[c]), 0) for c in cores)

    # ------------------------------------------------------------------ named views
    # Names and per-device dicts are built on first use: the array router needs none of
    # them, and at 131,072 GPUs they are a million strings.
    @property
    def names(self) -> list[str]:
        """``a->b`` of every link id."""
        if self._names is None:
            gph, rails = self.gpus_per_host, self.rails
            out: list[str] = []
            for hi, h in enumerate(self.host_names):
                for k in range(gph):
                    g = f"{h}/gpu{k}"
                    nvl = f"nvl{(hi * gph + k) // self.domain_gpus:05d}"
                    nic = f"{h}/nic{k % rails}"
                    out += [f"{g}->{nvl}", f"{nvl}->{g}", f"{g}->{nic}", f"{nic}->{g}"]
            cables = self._cables[0]
            for lk in cables:
                a = f"{lk.a}/nic{lk.rail}" if lk.tier == "node-leaf" else lk.a
                out += [f"{a}->{lk.b}", f"{lk.b}->{a}"]
            self._names = out
        return self._names

    def link_name(self, i: int) -> str:
        """``a->b`` of one link, without building every name."""
        if self._names is not None:
            return self._names[i]
        base = 4 * self.n_gpus
        if i < base:
            gpu, kind = divmod(i, 4)
            h = self.host_names[gpu // self.gpus_per_host]
            g = f"{h}/gpu{gpu % self.gpus_per_host}"
            other = (f"nvl{gpu // self.domain_gpus:05d}" if kind < 2
                     else self.nic_names[int(self.gpu_nic_id[gpu])])
            return f"{g}->{other}" if kind % 2 == 0 else f"{other}->{g}"
        c, back = divmod(i - base, 2)
        lk = self._cables[0][c]
        a = f"{lk.a}/nic{lk.rail}" if lk.tier == "node-leaf" else lk.a
        return f"{lk.b}->{a}" if back else f"{a}->{lk.b}"

    @property
    def tiers(self) -> list[str]:
        """Tier name of every link id (``tier_code`` spelled out)."""
        return [TIER_NAMES[c] for c in self.tier_code.tolist()]

    @property
    def gpu_nic(self) -> list[str]:
        """The NIC name of every GPU."""
        return [self.nic_names[i] for i in self.gpu_nic_id.tolist()]

    def _view(self, name: str) -> Any:
        if self._views is None:
            self._views = self._build_views()
        return self._views[name]

    def _build_views(self) -> dict[str, Any]:
        """The per-device dicts the per-switch routing functions walk."""
        cables = self._cables[0]
        base = 4 * self.n_gpus
        by = self.fab.by_name
        nic_up: dict[str, list[tuple[int, int, str]]] = defaultdict(list)
        leaf_down: dict[tuple[str, str], int] = {}
        up: dict[str, list[tuple[int, str]]] = defaultdict(list)
        down: dict[tuple[str, str], list[int]] = defaultdict(list)
        pod: dict[str, int] = {}
        role: dict[str, str] = {}
        leaf_of_nic: dict[tuple[str, int], str] = {}
        for c, lk in enumerate(cables):
            i = base + 2 * c
            if lk.tier == "node-leaf":
                nic = f"{lk.a}/nic{lk.rail}"
                nic_up[nic].append((lk.plane, i, lk.b))
                leaf_down[(lk.b, nic)] = i + 1
                leaf_of_nic[(nic, lk.plane)] = lk.b
            else:
                up[lk.a].append((i, lk.b))
                down[(lk.b, lk.a)].append(i + 1)
            for name in (lk.a, lk.b):
                dev = by[name]
                role[name] = dev.role
                if dev.role in ("leaf", "spine"):
                    pod[name] = dev.pod
        core_down: dict[str, dict[int, list[tuple[int, str]]]] = defaultdict(
            lambda: defaultdict(list))
        for (upper, lower), ids in down.items():
            if role.get(upper) == "core":
                for i in ids:
                    core_down[upper][pod[lower]].append((i, lower))
        return {"nic_up": nic_up, "leaf_down": leaf_down, "up": up, "down": down, "pod": pod,
                "role": role, "leaf_of_nic": leaf_of_nic, "core_down": core_down}

    @property
    def nic_up(self) -> dict[str, list[tuple[int, int, str]]]:
        """NIC -> (plane, uplink, leaf)."""
        out: dict[str, list[tuple[int, int, str]]] = self._view("nic_up")
        return out

    @property
    def leaf_down(self) -> dict[tuple[str, str], int]:
        """(leaf, NIC) -> the leaf's link down to the NIC."""
        out: dict[tuple[str, str], int] = self._view("leaf_down")
        return out

    @property
    def up(self) -> dict[str, list[tuple[int, str]]]:
        """Switch -> (uplink, upper switch), in cabling order."""
        out: dict[str, list[tuple[int, str]]] = self._view("up")
        return out

    @property
    def down(self) -> dict[tuple[str, str], list[int]]:
        """(upper switch, lower switch) -> the parallel links down."""
        out: dict[tuple[str, str], list[int]] = self._view("down")
        return out

    @property
    def pod(self) -> dict[str, int]:
        out: dict[str, int] = self._view("pod")
        return out

    @property
    def role(self) -> dict[str, str]:
        out: dict[str, str] = self._view("role")
        return out

    @property
    def leaf_of_nic(self) -> dict[tuple[str, int], str]:
        """(NIC, plane) -> its leaf."""
        out: dict[tuple[str, int], str] = self._view("leaf_of_nic")
        return out

    @property
    def core_down(self) -> dict[str, dict[int, list[tuple[int, str]]]]:
        """Core -> pod -> (link down to that pod's spine, spine)."""
        out: dict[str, dict[int, list[tuple[int, str]]]] = self._view("core_down")
        return out

    @property
    def _switches(self) -> list[str]:
        """Spines and cores in the order the routing halves index them."""
        if self._switches_list is None:
            self._switches_list = []
            for name, role in self.role.items():
                if role in ("spine", "core"):
                    self._switch_idx[name] = len(self._switches_list)
                    self._switches_list.append(name)
        return self._switches_list

    @property
    def index(self) -> dict[str, int]:
        """Link id by name ("a->b"), built on first use."""
        if self._index is None:
            self._index = {name: i for i, name in enumerate(self.names)}
        return self._index

    @property
    def node_links(self) -> dict[str, list[int]]:
        """Link ids of every device (both directions of each of its cables), built on first
        use."""
        if self._node_links is None:
            out: dict[str, list[int]] = defaultdict(list)
            for i, name in enumerate(self.names):
                a, b = name.split("->", 1)
                out[a].append(i)
                out[b].append(i)
            self._node_links = out
        return self._node_links

    def gpu_name(self, gpu: int) -> str:
        """``host/gpuK`` of a global GPU index."""
        return f"{self.hosts[gpu // self.gpus_per_host].name}/gpu{gpu % self.gpus_per_host}"

    # ------------------------------------------------------------------ failures
    def set_capacity(self, link_ids: list[int], factor: float) -> None:
        """Scale links to ``factor`` of their line rate (0 = failed)."""
        ids = np.asarray(link_ids, dtype=np.int64)
        self.cap[ids] = self.cap0[ids] * factor
        self.alive[ids] = factor > 0
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
        switches = self._switches
        idx = self._switch_idx.get(name)
        if idx is None:
            idx = len(switches)
            switches.append(name)
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
        if not n:
            raise SimError(f"{la} has no live path up" if self.up[la] else
                           f"{la} has no uplinks: this fabric has no path between rails "
                           "(one tier of rail leaves, no spines); keep PXN on, or design two "
                           "tiers")
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


def _padded(rows: np.ndarray, values: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``values`` grouped by ``rows`` (kept in their order) as an ``n`` x width table padded
    with -1, and the count per row."""
    cnt = np.bincount(rows, minlength=n).astype(np.int64)
    width = max(1, int(cnt.max(initial=0)))
    tab = np.full((n, width), -1, dtype=np.int64)
    if len(rows):
        order = np.argsort(rows, kind="stable")
        r = rows[order]
        start = np.concatenate([[0], np.cumsum(cnt)[:-1]])
        col = np.arange(len(r)) - start[r]
        tab[r, col] = values[order]
    return tab, cnt


def _buckets(keys: np.ndarray, values: np.ndarray, presorted: bool = False
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(sorted unique keys, start and count of each key's values, values) with the values of
    one key in their original order."""
    order = np.arange(len(keys)) if presorted else np.argsort(keys, kind="stable")
    k, v = keys[order], values[order]
    uniq, start, cnt = np.unique(k, return_index=True, return_counts=True)
    return uniq, start.astype(np.int64), cnt.astype(np.int64), v


def _dense(first: np.ndarray, second: np.ndarray, start: np.ndarray, cnt: np.ndarray,
           row: np.ndarray, shape: tuple[int, int], second_is_switch: bool = True
           ) -> tuple[np.ndarray, np.ndarray]:
    """Bucket (start, count) as dense ``shape`` tables indexed by the switches' rows (and the
    second key's row, or the second key itself)."""
    st = np.zeros(shape, dtype=np.int64)
    ct = np.zeros(shape, dtype=np.int64)
    if len(first):
        a = row[first]
        b = row[second] if second_is_switch else second
        st[a, b] = start
        ct[a, b] = cnt
    return st, ct
