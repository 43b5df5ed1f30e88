"""Collectives decomposed into groups of flows, as NCCL runs them.

- **ring** (all-reduce, all-gather, reduce-scatter): one ring per channel through every rank.
  Inside a server the ring goes over NVLink; between servers it leaves and enters on the same
  rail (channel c enters server i on local GPU (c - i) mod k and leaves from the GPU before it),
  so each channel uses one NIC per server each way and all k NICs carry one channel. Each ring
  edge carries 2(n-1)/n S / k (all-reduce) or (n-1)/n S / k; a channel is one group (it moves at
  the pace of its slowest edge, as a pipelined ring does).
- **hierarchical**: reduce-scatter inside each server over NVLink, an all-reduce ring per rail
  across servers on S/k, all-gather inside each server; pipelined, so the phases run at once.
- **tree**: the same, with NCCL's double binary tree across servers per rail (two
  complementary trees, each carrying half, reduce and broadcast pipelined).
- **nvls**: NVLink SHARP inside one domain (each GPU streams to the switch and back).
- **alltoall**: every rank sends S/n to every other; with PXN the data for a remote GPU first
  crosses NVLink to the local GPU on the destination's rail. One group (the exchange finishes
  with its slowest pair).

Latency terms are NCCL's (the closed-form model's), added when a group's bytes are done, so an
uncontended collective reproduces the alpha-beta cost.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from clusterwright.model.collectives import (
    Interconnect,
    allgather_s,
    allreduce_algorithm_s,
    allreduce_choice,
    allreduce_s,
    alltoall_latency_s,
    alltoall_s,
    nvls_latency_s,
    ring_latency_s,
    tree_latency_s,
)
from clusterwright.sim.aggregate import alltoall_loads
from clusterwright.sim.engine import SimError
from clusterwright.sim.flows import Flows, keys, mix64_array
from clusterwright.sim.network import Group, NetworkSim

COLLECTIVES = ("allreduce", "allgather", "reducescatter", "alltoall")
ALGORITHMS = ("auto", "ring", "hierarchical", "tree", "nvls")
# All-to-all connections routed one by one at most: 4,096 ranks (16.8M connections, about
# 1 GB of arrays). Larger all-to-alls are aggregated per leaf pair (``sim/aggregate.py``).
MAX_FLOWS = 1 << 24
# Above this many (2,048 ranks), an all-to-all is aggregated unless flow-by-flow routing is
# asked for: 4,096 Trainium2 ranks took 29 s routed one by one against 0.2 s aggregated, the
# same completion time (the per-leaf-pair split drops only ECMP's hashing imbalance, a few
# per cent at these flow counts: tests/sim/test_aggregate.py).
AUTO_AGGREGATE_FLOWS = 1 << 22


@dataclass
class Collective:
    """A collective scheduled on a simulator: its groups and what the closed form says."""

    name: str
    collective: str
    algorithm: str
    ranks: list[int]
    size_bytes: float
    groups: list[Group]
    closed_form_s: float  # the closed form's best algorithm (what NCCL would pick)
    start_s: float
    algorithm_closed_form_s: float = math.nan  # the closed form of the simulated algorithm
    aggregated: bool = False  # an all-to-all counted per leaf pair (sim/aggregate.py)

    @property
    def time_s(self) -> float:
        done = [g.done_at for g in self.groups if g.done_at is not None]
        if len(done) < len(self.groups):
            return math.nan
        return max(done, default=self.start_s) - self.start_s

    def algbw(self) -> float:
        """Algorithm bandwidth, bytes/s (nccl-tests: size / time)."""
        t = self.time_s
        return self.size_bytes / t if t > 0 else math.inf

    def busbw(self) -> float:
        """Bus bandwidth, bytes/s (nccl-tests factors)."""
        n = len(self.ranks)
        factor = 2.0 * (n - 1) / n if self.collective == "allreduce" else (n - 1) / n
        return self.algbw() * factor


def _by_host(ranks: list[int], gph: int) -> list[list[int]]:
    hosts: dict[int, list[int]] = defaultdict(list)
    order: list[int] = []
    for r in ranks:
        h = r // gph
        if h not in hosts:
            order.append(h)
        hosts[h].append(r)
    return [sorted(hosts[h]) for h in order]


def host_matrix(ranks: np.ndarray, gph: int) -> np.ndarray | None:
    """The ranks as a servers x ranks-per-server matrix (servers in order of first
    appearance, ranks sorted within each), or None when servers hold different counts."""
    hosts = ranks // gph
    uniq, first, inv, counts = np.unique(hosts, return_index=True, return_inverse=True,
                                         return_counts=True)
    if len(counts) and counts.min() != counts.max():
        return None
    rank_of_host = np.empty(len(uniq), dtype=np.int64)
    rank_of_host[np.argsort(first, kind="stable")] = np.arange(len(uniq))
    order = np.lexsort((ranks, rank_of_host[inv]))
    return ranks[order].reshape(len(uniq), int(counts[0]) if len(counts) else 0)


def _domains(ranks: list[int], domain: int) -> int:
    return len({r // domain for r in ranks})


def ring_order_matrix(ranks: np.ndarray, gph: int) -> np.ndarray:
    """One rank order per channel (rows), rail-aligned between servers (module docstring)."""
    local = host_matrix(ranks, gph)
    if local is None:
        # Uneven placements (a fragmented job) get a single ring in rank order per channel.
        return ranks[None, :]
    n_hosts, k = local.shape
    last = n_hosts - 1
    rows = []
    i = np.arange(n_hosts)
    for c in range(k):
        start = (c - i) % k
        part = local[i[:, None], (start[:, None] + np.arange(k)) % k]
        if last > 0 and k > 1 and start[last] != c % k:
            # Close the ring on rail c (where server 0 is entered), so the wrap-around edge
            # stays on one rail leaf like the others.
            _exit_on(part, local, last, c % k)
        elif last > 0 and k > 2:
            # n_hosts = 1 (mod k): the last server is entered on rail c, which it must also
            # leave by. The server before it leaves by rail c + 2 instead, where the last
            # server is then entered, so every edge between servers stays on one rail.
            via = (c + 2) % k
            _exit_on(part, local, last - 1, via)
            part[last] = local[last, (via + np.arange(k)) % k]
            _exit_on(part, local, last, c % k)
        rows.append(part.ravel())
    return np.stack(rows)


def _exit_on(part: np.ndarray, local: np.ndarray, row: int, rail: int) -> None:
    """Reorder server ``row`` of ``part`` so it is left by its GPU on ``rail`` (moved last)."""
    order = part[row]
    moved = local[row, rail]
    part[row] = np.concatenate([order[order != moved], [moved]])


def ring_orders(ranks: list[int], gph: int) -> list[list[int]]:
    """One rank order per channel, rail-aligned between servers (module docstring)."""
    orders: list[list[int]] = ring_order_matrix(np.asarray(ranks, dtype=np.int64),
                                                gph).tolist()
    return orders


def _ring_flows(order: np.ndarray, cid: int, channel: int) -> Flows:
    n = len(order)
    return Flows(order, np.roll(order, -1), keys((cid << 40) | (channel << 24), np.arange(n)))


def _rings(local: np.ndarray, cid: int, channel0: int) -> Flows:
    """A ring inside each row of ``local`` (one per server), channel ``channel0 + row``."""
    n_rows, k = local.shape
    j = np.tile(np.arange(k, dtype=np.uint64), n_rows)
    ch = np.repeat(np.arange(n_rows, dtype=np.uint64) + np.uint64(channel0), k)
    prefix = (np.uint64(cid) << np.uint64(40)) | (ch << np.uint64(24))
    return Flows(local.ravel(), np.roll(local, -1, axis=1).ravel(), mix64_array(prefix | j))


class CollectiveBuilder:
    """Adds collectives to a ``NetworkSim``."""

    def __init__(self, sim: NetworkSim, net_model: Interconnect) -> None:
        self.sim = sim
        self.model = net_model
        self.gph = sim.net.gpus_per_host
        # Rings and the hierarchical phases group the GPUs one NVLink reaches: a host, or a
        # rack-scale domain of many hosts (an NVL72's 72 GPUs over 18 trays), inside which
        # the routing keeps traffic on NVLink, as the closed form does.
        dom = sim.net.domain_gpus
        self.group = dom if dom > self.gph and dom % self.gph == 0 else self.gph
        self._cid = 0

    def _check(self, ranks: list[int], size_bytes: float, collective: str) -> None:
        if collective not in COLLECTIVES:
            raise SimError(
                f"collective: unknown {collective!r} (one of {', '.join(COLLECTIVES)})",
                field="collective")
        if not (math.isfinite(size_bytes) and size_bytes > 0):
            raise SimError(f"size_bytes: must be a positive finite number, got {size_bytes:g}",
                           field="size_bytes")
        if len(ranks) < 2:
            raise SimError(f"a collective needs at least 2 ranks, got {len(ranks)}")
        if len(set(ranks)) != len(ranks):
            raise SimError("a GPU appears twice among the ranks")
        bad = [r for r in ranks if not 0 <= r < self.sim.net.n_gpus]
        if bad:
            raise SimError(
                f"ranks on GPUs {bad[:5]} are not in the fabric ({self.sim.net.n_gpus} GPUs)"
            )

    def add(self, collective: str, ranks: list[int], size_bytes: float,
            algorithm: str = "auto", start_s: float = 0.0, pxn: bool = True,
            after: list[Group] | None = None, label: str = "", cid: int | None = None,
            aggregate: bool | None = None) -> Collective:
        """Schedule one collective over ``ranks`` (global GPU indices) of ``size_bytes``.
        An all-to-all is aggregated per leaf pair (``sim/aggregate.py``) when ``aggregate``
        says so, or, by default, above ``AUTO_AGGREGATE_FLOWS`` connections."""
        self._check(ranks, size_bytes, collective)
        if algorithm not in ALGORITHMS:
            raise SimError(f"algorithm: unknown {algorithm!r} (one of {', '.join(ALGORITHMS)})",
                           field="algorithm")
        # ``cid`` seeds the flows' hash keys: the same collective rebuilt alone keeps its paths.
        self._cid = cid if cid is not None else self._cid + 1
        cid = self._cid
        n = len(ranks)
        domain = self.sim.net.domain_gpus
        nodes = _domains(ranks, domain)
        stride = 1.0
        m = self.model
        name = label or f"{collective}#{cid}"
        algo = algorithm
        if collective == "allreduce" and algo == "auto":
            algo = allreduce_choice(size_bytes, n, nodes, m)
            if algo == "nvls" and nodes > 1:
                # NVLS-tree: NVLS inside each domain, trees across; the flow-level tree pairs
                # NVLink phases with two trees per rail, the same traffic.
                algo = "tree"
        elif collective == "alltoall":
            algo = "pxn" if pxn else "direct"
        elif algo == "auto":
            algo = "ring"
        if algo == "nvls" and (collective != "allreduce" or nodes > 1 or m.nvls_busbw <= 0):
            raise SimError("algorithm: nvls is an NVLink SHARP all-reduce inside one domain only",
                           field="algorithm")
        if algo in ("tree",) and collective != "allreduce":
            raise SimError("algorithm: tree applies to allreduce only", field="algorithm")
        if collective == "allreduce":
            closed = float(allreduce_s(size_bytes, n, stride, m))
            algo_closed = closed_form_allreduce(algo, size_bytes, n, nodes, m)
        elif collective == "alltoall":
            closed = algo_closed = float(alltoall_s(size_bytes, n, stride, m))
        else:
            closed = float(allgather_s(size_bytes, n, stride, m))
            algo_closed = closed_form_gather(algo, size_bytes, n, nodes, m)
        aggregated = collective == "alltoall" and (
            aggregate if aggregate is not None else n * (n - 1) > AUTO_AGGREGATE_FLOWS)
        if aggregated:
            groups = self._alltoall_aggregated(name, ranks, size_bytes, pxn, after, start_s)
        elif collective == "alltoall":
            groups = self._alltoall(name, cid, ranks, size_bytes, pxn, after, start_s)
        elif algo == "ring":
            groups = self._ring(name, cid, collective, ranks, size_bytes, nodes, after, start_s)
        elif algo == "nvls":
            groups = self._nvls(name, cid, ranks, size_bytes, after, start_s)
        else:
            groups = self._hier(name, cid, collective, ranks, size_bytes, algo, after, start_s)
        return Collective(name, collective, algo, ranks, size_bytes, groups, closed, start_s,
                          algo_closed, aggregated)

    # ------------------------------------------------------------------ algorithms
    def _ring(self, name: str, cid: int, collective: str, ranks: list[int], size: float,
              nodes: int, after: list[Group] | None, start: float) -> list[Group]:
        n = len(ranks)
        factor = 2.0 * (n - 1) / n if collective == "allreduce" else (n - 1) / n
        steps = 2.0 if collective == "allreduce" else 1.0
        orders = ring_order_matrix(np.asarray(ranks, dtype=np.int64), self.group)
        lat = ring_latency_s(n, nodes, steps, self.model)
        return [
            self.sim.add_group(f"{name}/ring{c}", _ring_flows(o, cid, c),
                               factor * size / len(orders), latency_s=lat, after=after,
                               start_at=start)
            for c, o in enumerate(orders)
        ]

    def _nvls(self, name: str, cid: int, ranks: list[int], size: float,
              after: list[Group] | None, start: float) -> list[Group]:
        n = len(ranks)
        net = self.sim.net
        # Each GPU's NVLink carries the NVLS stream up and down at once; scaled so the time is
        # 2(n-1)/n size / nvls_busbw on links rated at the NVLink-ring busbw.
        volume = 2.0 * (n - 1) / n * size * net.nvlink_bps / max(self.model.nvls_busbw, 1.0)
        r = np.asarray(ranks, dtype=np.int64)
        flows = Flows(r, r, keys(cid << 40, np.arange(n)), nvls=np.ones(n, dtype=bool))
        lat = nvls_latency_s(self.model)
        return [self.sim.add_group(f"{name}/nvls", flows, volume, latency_s=lat, after=after,
                                   start_at=start)]

    def _hier(self, name: str, cid: int, collective: str, ranks: list[int], size: float,
              algo: str, after: list[Group] | None, start: float) -> list[Group]:
        nodes = host_matrix(np.asarray(ranks, dtype=np.int64), self.group)
        if nodes is None:
            where = "server" if self.group == self.gph else "NVLink domain"
            raise SimError(f"algorithm: {algo} needs the same number of ranks on every {where}",
                           field="algorithm")
        m = self.model
        N, k = nodes.shape
        steps = 2.0 if collective == "allreduce" else 1.0
        # A pipeline's latency is the sum of its stages'; every phase ends with all of it.
        lat_total = (ring_latency_s(k, 1, 1.0, m) if k > 1 else 0.0) + (
            (tree_latency_s(N, N, m) if algo == "tree" else ring_latency_s(N, N, steps, m))
            if N > 1 else 0.0
        )
        groups: list[Group] = []
        # NCCL pipelines the phases chunk by chunk: intra-server and inter-server traffic
        # flow at the same time, so the phases run concurrently and the slowest sets the pace.
        prev = after
        shard = size / k
        intra_factor = (k - 1) / k
        # phase 1: reduce-scatter (or nothing for all-gather) inside each server
        if k > 1 and collective in ("allreduce", "reducescatter"):
            g = self.sim.add_group(f"{name}/intra-rs", _rings(nodes, cid, 100),
                                   intra_factor * size, latency_s=lat_total, after=prev,
                                   start_at=start)
            groups.append(g)
        # phase 2: across servers, per rail, on 1/k of the data
        phase2: list[Group] = []
        if N > 1:
            for r in range(k):
                rail = nodes[:, r]
                if algo == "tree" and collective == "allreduce":
                    flows = _double_tree(rail, cid, r)
                    vol = shard / 2.0  # each tree carries half, reduce and broadcast pipelined
                else:
                    c_factor = 2.0 * (N - 1) / N if collective == "allreduce" else (N - 1) / N
                    flows = _ring_flows(rail, cid, 200 + r)
                    vol = c_factor * shard
                phase2.append(self.sim.add_group(f"{name}/inter-rail{r}", flows, vol,
                                                 latency_s=lat_total, after=prev,
                                                 start_at=start))
            groups += phase2
        # phase 3: all-gather inside each server
        if k > 1 and collective in ("allreduce", "allgather"):
            groups.append(self.sim.add_group(f"{name}/intra-ag", _rings(nodes, cid, 300),
                                             intra_factor * size, latency_s=lat_total,
                                             after=prev, start_at=start))
        return groups

    def _alltoall(self, name: str, cid: int, ranks: list[int], size: float, pxn: bool,
                  after: list[Group] | None, start: float) -> list[Group]:
        n = len(ranks)
        if n * (n - 1) > MAX_FLOWS:
            raise SimError(
                f"an all-to-all over {n} ranks is {n * (n - 1):,} flows, above the simulator's "
                f"{MAX_FLOWS:,} routed one by one; aggregate it per leaf pair or simulate a "
                "smaller expert-parallel group"
            )
        net = self.sim.net
        flows = alltoall_flows(np.asarray(ranks, dtype=np.int64), cid, self.gph,
                               net.gpu_domain, pxn)
        nodes = _domains(ranks, net.domain_gpus)
        lat = alltoall_latency_s(n, nodes, self.model)
        return [self.sim.add_group(f"{name}/a2a", flows, size / n, latency_s=lat, after=after,
                                   start_at=start)]


    def _alltoall_aggregated(self, name: str, ranks: list[int], size: float, pxn: bool,
                             after: list[Group] | None, start: float) -> list[Group]:
        n = len(ranks)
        net = self.sim.net
        r = np.asarray(ranks, dtype=np.int64)
        lat = alltoall_latency_s(n, _domains(ranks, net.domain_gpus), self.model)
        return [self.sim.add_loads(f"{name}/a2a", lambda: alltoall_loads(net, r, pxn),
                                   n * (n - 1), size / n, latency_s=lat, after=after,
                                   start_at=start)]


def alltoall_flows(ranks: np.ndarray, cid: int, gph: int, domain: np.ndarray,
                   pxn: bool) -> Flows:
    """Every ordered pair of distinct ranks, in rank order (the j-th pair's key is
    ``mix64(cid << 40 | j)``); with PXN, data for a GPU in another NVLink domain relays
    through the source server's GPU on the destination's rail."""
    n = len(ranks)
    a = np.repeat(ranks, n)
    b = np.tile(ranks, n)
    keep = a != b
    a, b = a[keep], b[keep]
    via = np.full(len(a), -1, dtype=np.int64)
    if pxn:
        relay = (a // gph) * gph + b % gph
        use = (domain[a] != domain[b]) & (relay != a)
        via[use] = relay[use]
    return Flows(a, b, keys(cid << 40, np.arange(len(a))), via)


def closed_form_gather(algo: str, size: float, ranks: int, nodes: int,
                       m: Interconnect) -> float:
    """Alpha-beta time of an all-gather or reduce-scatter: the ring's closed form, or the
    hierarchical one (one NVLink phase pipelined with a ring per rail on 1/k)."""
    if algo == "hierarchical" and nodes > 1:
        k = max(1, round(ranks / nodes))
        intra = (k - 1) / k * size / m.scale_up_busbw if k > 1 else 0.0
        inter = (nodes - 1) / nodes * size / k / m.net_busbw
        lat = ring_latency_s(nodes, nodes, 1.0, m) + (
            ring_latency_s(k, 1, 1.0, m) if k > 1 else 0.0)
        return lat + max(intra, inter)
    return float(allgather_s(size, ranks, 1.0, m))


def closed_form_allreduce(algo: str, size: float, ranks: int, nodes: int,
                          m: Interconnect) -> float:
    """Alpha-beta time of one all-reduce algorithm: ring, tree and nvls are the terms the
    closed form ``allreduce_s`` takes the minimum over; hierarchical (not an NCCL algorithm)
    and the flow-level tree across servers pair NVLink phases with rail traffic."""
    if algo in ("ring", "nvls") or (algo == "tree" and nodes <= 1):
        return allreduce_algorithm_s(algo, size, ranks, nodes, m)
    n = float(ranks)
    local = n / max(nodes, 1)
    bw = min(m.scale_up_busbw, local * m.net_busbw) if nodes > 1 else m.scale_up_busbw
    volume = 2.0 * (n - 1.0) / n * size
    if algo in ("tree", "hierarchical") and nodes > 1:
        # Pipelined phases: NVLink reduce-scatter + all-gather inside servers while 1/k of the
        # data crosses servers per rail (a ring, or two trees each carrying half).
        k = max(1, round(n / nodes))
        intra = 2.0 * (k - 1) / k * size / m.scale_up_busbw if k > 1 else 0.0
        if algo == "tree":
            # The busiest server sends on max_out tree edges, half the rail's data each.
            inter = double_tree_max_out(nodes) * size / (2.0 * k) / m.net_busbw
        else:
            inter = 2.0 * (nodes - 1) / nodes * size / k / m.net_busbw
        intra_lat = ring_latency_s(k, 1, 1.0, m) if k > 1 else 0.0
        lat = tree_latency_s(nodes, nodes, m) if algo == "tree" else ring_latency_s(
            nodes, nodes, 2.0, m)
        return lat + intra_lat + max(intra, inter)
    return ring_latency_s(ranks, nodes, 2.0, m) + volume / bw


def double_tree_max_out(servers: int) -> int:
    """Most tree edges one server sends on in the double binary tree (both trees, reduce
    and broadcast): 2 at 2 servers, 3 at 4, 4 from about 8 on (an interior node of one tree
    is a leaf of the other)."""
    flows = _double_tree(np.arange(servers, dtype=np.int64), 0, 0)
    return int(np.bincount(flows.src, minlength=servers).max(initial=0))


def _double_tree(rail: np.ndarray, cid: int, r: int) -> Flows:
    """Edges of NCCL's two complementary binary trees over ``rail`` (one rank per server),
    both directions (reduce up, broadcast down)."""
    N = len(rail)
    i = np.arange(1, N, dtype=np.int64)
    parts = []
    for t in range(2):
        # The second tree mirrors the first, so the servers inside one tree are leaves of the
        # other and no NIC carries two trees' interior traffic (NCCL's double binary tree).
        order = rail if t == 0 else rail[::-1]
        parent, child = order[(i - 1) // 2], order[i]
        key = (np.uint64((cid << 40) | ((400 + 2 * r + t) << 24))
               | i.astype(np.uint64))
        src = np.stack([child, parent], axis=1).ravel()  # up then down, edge by edge
        dst = np.stack([parent, child], axis=1).ravel()
        k = np.stack([mix64_array(key), mix64_array(key ^ np.uint64(1))], axis=1).ravel()
        parts.append(Flows(src, dst, k))
    return Flows.concat(parts)
