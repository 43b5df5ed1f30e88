"""Collective communication time, from 8 bytes to 8 GiB: NCCL's own cost model.

NCCL picks, for every call, the algorithm and protocol its tuner predicts fastest
(NVIDIA/nccl ``src/graph/tuning.cc``, ``src/enqueue.cc``); this module runs the same
formulas with the library's constants (``catalog/data/collective_libs.yaml``):

    time = launch + latency(algorithm, protocol, ranks, nodes) + bytes / bandwidth

- **Latency**: a base per call plus a per-hop cost on each tier. A ring all-reduce takes
  2(n-1) hops (all-gather and reduce-scatter n-1), of which 2(nodes-1) cross the network, so
  ring latency grows linearly with the rank count; the double binary tree pays
  2((ppn-1) intra + log2(nodes) inter); NVLS a flat 25 us inside a domain; PAT (all-gather and
  reduce-scatter with one GPU per node) log2(nodes) plus 2.8 us per rank.
- **Bandwidth**: the tier's Simple-protocol bus bandwidth (the stack's achieved fractions of
  link and NIC rates, anchored on nccl-tests, shared/data/collectives.csv), derated per
  protocol as NCCL does: LL moves 4 data bytes per 8-byte line (x0.5, capped by llMaxBw), LL128
  120 of 128 (x0.92, capped per channel); the tree x0.92 with its per-channel cap and NCCL's
  size correction table. Small calls use fewer channels (enqueue.cc): below channels x threads
  x threshold bytes the bandwidth falls with the channel count.
- **Choice**: the minimum over every algorithm and protocol the collective allows (all-reduce:
  ring, tree, NVLS, NVLS-tree; all-gather/reduce-scatter: ring, PAT), as NCCL's argmin does.
- **All-to-all** is not in NCCL's tuner (it runs grouped send/recv): a launch, a per-peer cost
  on each tier (fitted, see the catalog), and the bytes leaving the domain at network speed
  in parallel with the bytes staying on NVLink.

Bus bandwidth follows nccl-tests (doc/PERFORMANCE.md): all-reduce moves 2(n-1)/n of the buffer
per rank, all-gather and reduce-scatter (n-1)/n. Every function broadcasts over numpy arrays,
or takes floats with ``ops=ScalarOps`` (see ``model/xp``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from clusterwright.catalog.schema import Gpu, Server
from clusterwright.catalog.stacks import CollectiveLib, Stack
from clusterwright.model import torus as tz
from clusterwright.model.torus import TorusNet
from clusterwright.model.xp import ArrayOps, Num, Ops

F = np.ndarray
US = 1e-6
GB = 1e9
INF = math.inf
LL, LL128, SIMPLE = 0, 1, 2
# GPUs of the nccl-tests NVLS anchor (shared/data/collectives.csv: 8x H100, ~480 GB/s busbw)
NVLS_ANCHOR_GPUS = 8.0
PROTOS = ("LL", "LL128", "Simple")


@dataclass(frozen=True)
class Interconnect:
    """Achieved bandwidths (bytes/s) one GPU sees on each tier, and the collective library's
    cost model (seconds, bytes/s) as ``model/collectives`` uses it."""

    domain_gpus: int  # GPUs in one scale-up (NVLink) domain
    scale_up_busbw: float  # bytes/s per GPU inside the domain (Simple protocol, ring)
    nvls_busbw: float  # bytes/s all-reduce busbw with NVLink SHARP (0 if none)
    net_busbw: float  # bytes/s per GPU across domains (its share of the node's NICs)
    lib: CollectiveLib | None = None
    # Extra latency per network hop beyond the library's (NCCL's graph->latencyInter): more
    # switch tiers between the ranks, as the scheduling twin's placement penalty adds.
    latency_inter_s: float = 0.0
    # A torus scale-up domain (TPU ICI, Trainium NeuronLink): collectives inside it run as
    # bidirectional rings per axis (model/torus), across domains over the DCN (net_busbw).
    torus: TorusNet | None = None

    # Legacy per-hop constants (Simple protocol), kept for the flow simulator's latencies.
    @property
    def base_s(self) -> float:
        return self._lat("base", "ring")[SIMPLE] + self.launch_s

    @property
    def intra_step_s(self) -> float:
        return self._lat("nvlink", "ring")[SIMPLE]

    @property
    def inter_step_s(self) -> float:
        return self._lat("net", "ring")[SIMPLE]

    @property
    def tree_inter_step_s(self) -> float:
        return self._lat("net", "tree")[SIMPLE]

    @property
    def launch_s(self) -> float:
        return self.lib.launch_us * US if self.lib else 0.0

    def __post_init__(self) -> None:
        # The library's tables in seconds, looked up once (the scalar path calls _lat often).
        tables: dict[tuple[str, str], tuple[float, float, float]] = {}
        if self.lib is not None:
            for name, t in (("base", self.lib.base_lat_us), ("nvlink", self.lib.nvlink_lat_us),
                            ("net", self.lib.net_lat_us)):
                extra = (self.latency_inter_s + self.lib.net_hop_us * US) if name == "net" else 0.0
                for algo, row in t.items():
                    # NCCL adds latencyInter once per hop, and again for Simple (the flush).
                    tables[(name, algo)] = (row[0] * US + extra, row[1] * US + extra,
                                            row[2] * US + 2.0 * extra)
        object.__setattr__(self, "_tables", tables)
        # What the ring's protocol loop reads on every call, looked up once (scalar path).
        zero3 = (0.0, 0.0, 0.0)
        object.__setattr__(self, "_ring_lat", tuple(
            tables.get(k, zero3) for k in (("base", "ring"), ("nvlink", "ring"),
                                           ("net", "ring"), ("net", "tree"))))
        if self.lib is not None:
            lib = self.lib
            object.__setattr__(self, "_per_channel", tuple(
                lib.max_threads[p] * lib.thread_threshold[p] for p in range(3)))

    def _lat(self, table: str, algo: str) -> tuple[float, float, float]:
        """(LL, LL128, Simple) latency of ``algo`` on ``table`` (base, nvlink, net), seconds."""
        got: tuple[float, float, float] = self._tables.get(  # type: ignore[attr-defined]
            (table, algo), (0.0, 0.0, 0.0))
        return got


def interconnect(gpu: Gpu, server: Server, stack: Stack, lib: CollectiveLib) -> Interconnect:
    """Tier bandwidths from the catalog: link rates times the stack's achieved fractions."""
    up = gpu.scale_up.bandwidth_gbps_per_direction * GB
    nic_bytes = server.backend_nics.count * server.backend_nics.speed_gbps * GB / 8
    tor = None
    if server.torus is not None:
        t = server.torus
        tor = TorusNet(tuple(t.dims), t.wraparound,
                       t.link_gbps_per_direction * GB * stack.scale_up_busbw_fraction,
                       t.hop_latency_us * US)
    return Interconnect(
        domain_gpus=server.nvlink_domain_gpus,
        scale_up_busbw=up * stack.scale_up_busbw_fraction,
        nvls_busbw=up * stack.nvls_busbw_fraction,
        net_busbw=nic_bytes / server.gpus * stack.nic_busbw_fraction,
        lib=lib,
        torus=tor,
    )


# --------------------------------------------------------------------------- torus domains


def _torus(ops: Ops, kind: str, size: Num, n: Num, st: Num, net: Interconnect) -> Num:
    """A collective on a torus domain, hierarchical across domains (TPU multi-slice): inside
    the slice on ICI (``model/torus``), across slices as NCCL-style rings over the DCN.

    - all-reduce: reduce-scatter in the slice, all-reduce of the 1/n_in shard across slices,
      all-gather in the slice;
    - all-gather (reduce-scatter): the shards across slices first (last), then in the slice;
    - all-to-all: the share bound for other slices over the DCN beside the in-slice part.
    """
    S = size
    tor = net.torus
    assert tor is not None
    n_in = tz.inside(ops, n, st, float(net.domain_gpus))
    outer = n / n_in
    multi = outer > 1.0
    if kind == "allreduce":
        t_in = tz.allreduce_s(ops, S, n_in, st, tor)
        t_out = _when_multi(ops, multi, lambda: _ring(ops, S / n_in, outer, outer, net, True))
    elif kind == "allgather":
        t_in = tz.allgather_s(ops, S, n_in, st, tor)
        t_out = _when_multi(ops, multi, lambda: _ring(ops, S / n_in, outer, outer, net, False))
    else:  # alltoall
        local = tz.alltoall_s(ops, S * n_in / ops.maximum(n, 1.0), n_in, st, tor)
        remote = S * (n - n_in) / ops.maximum(n, 1.0) / net.net_busbw
        peer_out = _peer_s(net)[1]
        return ops.where(n > 1, net.launch_s + (n - n_in) * peer_out
                         + ops.maximum(local, remote), 0.0)
    t = t_in + ops.where(multi, t_out, 0.0)
    return ops.where(n > 1, net.launch_s + t, 0.0)


def _when_multi(ops: Ops, multi: Num, value: Callable[[], Num]) -> Num:
    if ops is ArrayOps or multi:
        return value()
    return 0.0


# --------------------------------------------------------------------------- geometry


def nodes_spanned(ops: Ops, ranks: Num, stride: Num, net: Interconnect) -> Num:
    """Domains a group of ``ranks`` spans when consecutive ranks are ``stride`` GPUs apart."""
    span = ranks * stride
    per_domain = ops.maximum(1.0, ops.floor(net.domain_gpus / ops.maximum(stride, 1.0)))
    return ops.where(span <= net.domain_gpus, 1.0,
                   ops.ceil(ranks / ops.minimum(per_domain, ranks)))


def busbw(ops: Ops, ranks: Num, nodes: Num, net: Interconnect) -> Num:
    """Simple-protocol ring bus bandwidth of a group (bytes/s). Across domains NCCL's rings
    leave each domain through every NIC of its GPUs, so the k ranks of a domain share k NICs:
    busbw = min(NVLink, k x NIC) (8 x 400G nodes give ~370 GB/s, shared/data/collectives.csv)."""
    local = ranks / ops.maximum(nodes, 1.0)
    return ops.where(nodes > 1, ops.minimum(net.scale_up_busbw, local * net.net_busbw),
                   net.scale_up_busbw)


def _channel_share(ops: Ops, nbytes: Num, proto: int, ranks: Num, net: Interconnect,
                   ring: bool) -> Num:
    """Share of the channels a call of ``nbytes`` runs on: NCCL drops channels while bytes <
    channels x threads x threshold (the LL threshold scales with ranks on rings)."""
    lib = net.lib
    assert lib is not None
    per_channel = net._per_channel[proto] * (ranks if (ring and proto == LL) else 1.0)  # type: ignore[attr-defined]
    channels = float(lib.channels)
    nc = ops.minimum(ops.maximum(ops.floor(nbytes / per_channel), 1.0), channels)
    return nc / channels


def _tree_correction(ops: Ops, nbytes: Num, proto: int, lib: CollectiveLib) -> Num:
    row = lib.tree_correction[("ll", "ll128", "simple")[proto]]
    idx = ops.log2(ops.maximum(nbytes / 64.0, 1.0))
    return ops.interp(idx, list(range(len(row))), row)


# --------------------------------------------------------------------------- algorithms


def _ring(ops: Ops, nbytes: Num, n: Num, nodes: Num, net: Interconnect, allreduce: bool) -> Num:
    """Fastest ring protocol: time for ``nbytes`` (all-reduce: per rank; AG/RS: total)."""
    lib = net.lib
    assert lib is not None
    steps_per_rank = 2.0 if allreduce else 1.0
    nsteps = steps_per_rank * (n - 1.0)
    ninter = steps_per_rank * (nodes - 1.0)
    multi = nodes > 1
    bw = busbw(ops, n, nodes, net)
    ppn1 = (n / ops.maximum(nodes, 1.0)) <= 1.0
    base, intra, inter_ring, inter_tree = net._ring_lat  # type: ignore[attr-defined]
    ll_max = ops.where(nodes >= 3, lib.ll_max_busbw_gbps[2],
                     ops.where(nodes == 2, lib.ll_max_busbw_gbps[1], lib.ll_max_busbw_gbps[0])) * GB
    best = None
    for p in (LL, LL128, SIMPLE):
        over = ops.where(multi, lib.net_overhead_us * US * (3.0 if p == SIMPLE else 1.0), 0.0)
        inter = ops.where(ppn1, inter_tree[p], inter_ring[p])
        lat = base[p] + (nsteps - ninter) * ops.maximum(intra[p], over) + ninter * inter
        if p == LL:
            factor = lib.ll_bw_factor
            if lib.arch == "ampere" and allreduce:  # 2.18: 1/4 for multi-node all-reduce
                factor = ops.where(multi, 0.25, lib.ll_bw_factor)
            pbw = ops.minimum(ll_max, bw * factor)
        elif p == LL128:
            pbw = ops.minimum(bw * lib.ll128_bw_factor,
                              lib.channels * lib.ll128_max_channel_gbps * GB)
        else:
            pbw = bw
            if allreduce:
                plateau = multi & (nbytes / (lib.channels * n) >= 64.0)
                lat = ops.where(plateau, lat * lib.ring_simple_multinode_lat_factor, lat)
        pbw = pbw * _channel_share(ops, nbytes, p, n, net, ring=True)
        t = lat + nbytes * nsteps / ops.maximum(n, 1.0) / pbw
        best = t if best is None else ops.minimum(best, t)
    return best


def _tree(ops: Ops, nbytes: Num, n: Num, nodes: Num, net: Interconnect) -> Num:
    """Fastest double-binary-tree all-reduce (only across domains, as NCCL enables it)."""
    lib = net.lib
    assert lib is not None
    if ops is not ArrayOps and nodes <= 1:
        return INF  # one layout: skip what the where() below would discard
    ppn = n / ops.maximum(nodes, 1.0)
    bw = busbw(ops, n, nodes, net)
    idx = ops.where(nodes >= 3, 2, ops.where(nodes == 2, 1, 0))
    cap = ops.where(idx == 2, lib.tree_max_channel_gbps[2],
                  ops.where(idx == 1, lib.tree_max_channel_gbps[1], lib.tree_max_channel_gbps[0]))
    base = net._lat("base", "tree")
    intra = net._lat("nvlink", "tree")
    inter = net._lat("net", "tree")
    ll_max = ops.where(nodes >= 3, lib.ll_max_busbw_gbps[2],
                     ops.where(nodes == 2, lib.ll_max_busbw_gbps[1], lib.ll_max_busbw_gbps[0])) * GB
    tree_bw = ops.minimum(bw * lib.tree_bw_factor, lib.channels * cap * GB)
    best = None
    for p in (LL, LL128, SIMPLE):
        lat = base[p] + 2.0 * ((ppn - 1.0) * intra[p]
                               + ops.log2(ops.maximum(nodes, 1.0)) * inter[p])
        if p == LL:
            pbw = ops.minimum(tree_bw / lib.tree_ll_divisor, ll_max)
        elif p == LL128:
            pbw = ops.minimum(tree_bw * lib.tree_ll128_factor[1],
                            lib.channels * lib.ll128_max_channel_gbps * GB)
        else:
            pbw = tree_bw
        pbw = pbw * _channel_share(ops, nbytes, p, n, net, ring=False)
        algbw = 0.5 * pbw * _tree_correction(ops, nbytes, p, lib)
        t = lat + nbytes / algbw
        best = t if best is None else ops.minimum(best, t)
    return ops.where(nodes > 1, best, INF)


def _nvls(ops: Ops, nbytes: Num, n: Num, nodes: Num, net: Interconnect) -> Num:
    """NVLink SHARP all-reduce: inside one domain (NVLS), or NVLS inside and a tree across
    (NVLS-tree). Its bus bandwidth is the measured NVLS anchor inside the domain; across
    domains the NICs cap it, at twice their rate for two domains (NCCL's NVLS-tree on two
    nodes pipelines both directions: 2-node H100 all-reduce reaches ~480 GB/s busbw)."""
    lib = net.lib
    assert lib is not None
    if net.nvls_busbw <= 0:
        return ops.full(nbytes, INF)
    if ops is not ArrayOps and n / max(nodes, 1.0) < 2.0:
        return INF
    # NVLS's rate is the per-GPU injection into the switch: its algorithm bandwidth holds
    # steady with the group size (nccl-tests on H100: ~250-275 GB/s algbw at 4, 6 and 8 GPUs),
    # so the anchor's bus bandwidth (8 GPUs) converts to algbw once.
    algbw = net.nvls_busbw * NVLS_ANCHOR_GPUS / (2.0 * (NVLS_ANCHOR_GPUS - 1.0))
    lat_in = net._lat("nvlink", "nvls")[SIMPLE]
    hops = ops.log2(ops.maximum(nodes, 1.0))
    lat_tree = lat_in + 2.0 * hops * net._lat("net", "nvlstree")[SIMPLE]
    ppn = n / ops.maximum(nodes, 1.0)
    # Across domains the NICs cap it: NVLS-tree's bus bandwidth is k x NIC, at twice their
    # rate for two domains (both directions of the tree pipelined: 2-node H100 all-reduce
    # reaches ~480 GB/s busbw, NVIDIA/nccl issue #2409).
    volume = 2.0 * (n - 1.0) / ops.maximum(n, 1.0) * nbytes
    inter = ppn * net.net_busbw * ops.where(nodes <= 2, 2.0, 1.0)
    t_in = lat_in + nbytes / algbw
    t_tree = lat_tree + ops.maximum(nbytes / algbw, volume / inter)
    t = ops.where(nodes > 1, t_tree, t_in)
    ok = ppn >= 2.0  # NVLS needs several GPUs of the domain in the group
    return ops.where(ok, t, INF)


def _pat(ops: Ops, nbytes: Num, n: Num, nodes: Num, net: Interconnect) -> Num:
    """PAT all-gather/reduce-scatter: one GPU per node only, Simple protocol."""
    lib = net.lib
    assert lib is not None
    if ops is not ArrayOps and not (nodes > 1 and n <= nodes):
        return INF
    hops = ops.log2(ops.maximum(nodes, 1.0))
    lat = (net._lat("base", "pat")[SIMPLE]
           + hops * net._lat("net", "pat")[SIMPLE] / lib.pat_net_divisor
           + n * lib.pat_per_rank_us * US)
    bw = busbw(ops, n, nodes, net) * lib.pat_bw_factor
    ok = (nodes > 1) & (n <= nodes)
    return ops.where(ok, lat + nbytes / bw, INF)


# --------------------------------------------------------------------------- collectives


def allreduce_s(size_bytes: ArrayLike, ranks: ArrayLike, stride: ArrayLike, net: Interconnect,
                ops: Ops = ArrayOps) -> Num:
    """All-reduce of ``size_bytes`` per rank over ``ranks`` GPUs spaced ``stride`` apart:
    the fastest of NCCL's ring, tree, NVLS and NVLS-tree over its protocols (seconds)."""
    S, n, st = _args(ops, size_bytes, ranks, stride)
    if ops is not ArrayOps and n <= 1:
        return 0.0
    if net.torus is not None:
        return _torus(ops, "allreduce", S, n, st, net)
    nodes = nodes_spanned(ops, n, st, net)
    t = ops.minimum(ops.minimum(_ring(ops, S, n, nodes, net, True), _tree(ops, S, n, nodes, net)),
                  _nvls(ops, S, n, nodes, net))
    return ops.where(n > 1, net.launch_s + t, 0.0)


def allgather_s(size_bytes: ArrayLike, ranks: ArrayLike, stride: ArrayLike, net: Interconnect,
                ops: Ops = ArrayOps) -> Num:
    """All-gather producing ``size_bytes`` per rank (the whole gathered buffer), or a
    reduce-scatter consuming it: ring, or PAT with one GPU per node (seconds)."""
    S, n, st = _args(ops, size_bytes, ranks, stride)
    if ops is not ArrayOps and n <= 1:
        return 0.0
    if net.torus is not None:
        return _torus(ops, "allgather", S, n, st, net)
    nodes = nodes_spanned(ops, n, st, net)
    t = ops.minimum(_ring(ops, S, n, nodes, net, False), _pat(ops, S, n, nodes, net))
    return ops.where(n > 1, net.launch_s + t, 0.0)


reducescatter_s = allgather_s


def alltoall_s(size_bytes: ArrayLike, ranks: ArrayLike, stride: ArrayLike, net: Interconnect,
               ops: Ops = ArrayOps) -> Num:
    """All-to-all of ``size_bytes`` per rank: each rank keeps 1/n and sends the rest; the part
    leaving the domain goes at network speed, the rest over NVLink, in parallel; one per-peer
    cost per destination on each tier (seconds)."""
    S, n, st = _args(ops, size_bytes, ranks, stride)
    if ops is not ArrayOps and n <= 1:
        return 0.0
    if net.torus is not None:
        return _torus(ops, "alltoall", S, n, st, net)
    nodes = nodes_spanned(ops, n, st, net)
    local = ops.minimum(n, n / nodes)  # ranks sharing my domain
    inter = S * (n - local) / ops.maximum(n, 1.0) / net.net_busbw
    intra = S * (local - 1.0) / ops.maximum(n, 1.0) / net.scale_up_busbw
    peer_in, peer_out = _peer_s(net)
    lat = (net.base_s + (local - 1.0) * peer_in + (n - local) * peer_out)
    return ops.where(n > 1, lat + ops.maximum(inter, intra), 0.0)


def moe_dispatch_s(token_bytes: ArrayLike, tokens: ArrayLike, copies: float, ranks: ArrayLike,
                   stride: ArrayLike, net: Interconnect, ops: Ops = ArrayOps,
                   dedup: bool = False, remote_domains: Callable[[Num], Num] | None = None
                   ) -> Num:
    """MoE dispatch (or combine) of ``tokens`` tokens of ``token_bytes`` each, every token to
    ``copies`` experts spread evenly over ``ranks`` GPUs (seconds).

    The all-to-all dispatcher sends one copy per routed expert: the remote share crosses the
    network (``alltoall_s``). A deduplicating dispatcher (DeepEP, HybridEP; DeepSeek-V3
    report section 3.2.2) sends each token once per distinct destination domain over the
    network and forwards it over NVLink inside that domain. ``remote_domains(domains)`` gives
    the expected number of distinct remote domains a token reaches (default: copies placed
    uniformly at random)."""
    S, T, n, st = _args(ops, token_bytes, tokens, ranks, stride)
    if ops is not ArrayOps and n <= 1:
        return 0.0
    if net.torus is not None:
        # On a torus the dispatcher is an all-to-all of every routed copy (no NVLink forwarding).
        return _torus(ops, "alltoall", T * S * float(copies), n, st, net)
    nodes = nodes_spanned(ops, n, st, net)
    local = ops.minimum(n, n / nodes)
    k = float(copies)
    if dedup:
        if remote_domains is None:
            far = (nodes - 1.0) * (1.0 - (1.0 - 1.0 / nodes) ** k)
        else:
            far = remote_domains(nodes)
        # Receivers forward what arrived for their neighbours: NVLink carries the local copies
        # and the forwarded ones, beside the network.
        inter = T * S * far / net.net_busbw
        intra = T * S * k * (n - 1.0) / ops.maximum(n, 1.0) / net.scale_up_busbw
    else:
        inter = T * S * k * (n - local) / ops.maximum(n, 1.0) / net.net_busbw
        intra = T * S * k * (local - 1.0) / ops.maximum(n, 1.0) / net.scale_up_busbw
    peer_in, peer_out = _peer_s(net)
    lat = net.base_s + (local - 1.0) * peer_in + (n - local) * peer_out
    return ops.where(n > 1, lat + ops.maximum(inter, intra), 0.0)


def _peer_s(net: Interconnect) -> tuple[float, float]:
    if net.lib is None:
        return (0.0, 0.0)
    return (net.lib.alltoall_peer_us[0] * US, net.lib.alltoall_peer_us[1] * US)


def p2p_s(size_bytes: ArrayLike, crosses_domain: ArrayLike, net: Interconnect,
          ops: Ops = ArrayOps) -> Num:
    """One point-to-point send (pipeline stages, ring attention): the launch, one hop of
    Simple-protocol latency on the tier, and the bytes at the tier's rate (seconds)."""
    cross = crosses_domain
    if net.torus is not None:
        nbytes: Num = size_bytes
        inner = tz.p2p_s(ops, nbytes, net.torus)
        outer = net.base_s + net.inter_step_s + nbytes / net.net_busbw
        return ops.where(cross, outer, net.launch_s + inner)
    bw = ops.where(cross, net.net_busbw, net.scale_up_busbw)
    lat = net.base_s + ops.where(cross, net.inter_step_s, net.intra_step_s)
    return lat + size_bytes / bw


def _args(ops: Ops, *values: ArrayLike) -> tuple[Num, ...]:
    if ops is ArrayOps:
        return tuple(np.asarray(v, dtype=float) for v in values)
    return tuple(float(v) for v in values)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- reporting


def allreduce_algorithm_s(algo: str, size_bytes: float, ranks: int, nodes: int,
                          net: Interconnect) -> float:
    """One all-reduce algorithm's time (ring, tree or nvls, best protocol), with the launch:
    the terms ``allreduce_s`` takes the minimum over (seconds; inf where it cannot run)."""
    from clusterwright.model.xp import ScalarOps as S

    n, b, nd = float(ranks), float(size_bytes), float(max(nodes, 1))
    if n <= 1:
        return 0.0
    if algo == "ring":
        t = _ring(S, b, n, nd, net, True)
    elif algo == "tree":
        t = _tree(S, b, n, nd, net)
    else:
        t = _nvls(S, b, n, nd, net)
    return float(net.launch_s + t)


def allreduce_choice(size_bytes: float, ranks: int, nodes: int, net: Interconnect) -> str:
    """The algorithm ``allreduce_s`` takes as fastest for one group: ring, tree or nvls."""
    if ranks <= 1:
        return "ring"
    times = {a: allreduce_algorithm_s(a, size_bytes, ranks, nodes, net)
             for a in ("ring", "tree", "nvls")}
    return min(times, key=lambda k: times[k])


def alltoall_latency_s(ranks: int, nodes: int, net: Interconnect) -> float:
    """All-to-all latency: the base and one per-peer cost per destination on each tier, as
    ``alltoall_s`` charges it (seconds)."""
    n = float(ranks)
    local = min(n, n / max(nodes, 1))
    peer_in, peer_out = _peer_s(net)
    return float(net.base_s + (local - 1.0) * peer_in + (n - local) * peer_out)


def nvls_latency_s(net: Interconnect) -> float:
    """NVLS all-reduce latency inside one domain, with the launch (seconds)."""
    return net.launch_s + net._lat("nvlink", "nvls")[SIMPLE]


def ring_latency_s(ranks: int, nodes: int, steps_per_rank: float, net: Interconnect) -> float:
    """NCCL's Simple-protocol ring latency for ``ranks`` over ``nodes`` domains (s), with the
    launch floor."""
    steps = steps_per_rank * (ranks - 1)
    inter = steps_per_rank * (nodes - 1)
    over = (net.lib.net_overhead_us * US * 3.0) if (net.lib and nodes > 1) else 0.0
    return net.base_s + (steps - inter) * max(net.intra_step_s, over) + inter * net.inter_step_s


def tree_latency_s(ranks: int, nodes: int, net: Interconnect) -> float:
    """NCCL's Simple-protocol double-binary-tree latency (s), with the launch floor."""
    ppn = ranks / max(nodes, 1)
    tree_in = net._lat("nvlink", "tree")[SIMPLE] if net.lib else net.intra_step_s
    return float(net.launch_s + (net._lat("base", "tree")[SIMPLE] if net.lib else 0.0)
                 + 2.0 * ((ppn - 1.0) * tree_in
                          + math.log2(max(nodes, 1)) * net.tree_inter_step_s))


def busbw_gbps(collective: str, size_bytes: float, ranks: int, time_s: float) -> float:
    """nccl-tests bus bandwidth, GB/s, of a measured or predicted collective."""
    factor = {"allreduce": 2.0 * (ranks - 1) / ranks}.get(collective, (ranks - 1) / ranks)
    return size_bytes / time_s * factor / 1e9
