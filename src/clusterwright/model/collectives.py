"""Collective communication time: alpha-beta costs with NCCL-like algorithm choice.

Bandwidth terms use achieved bus bandwidth (nccl-tests definition, NVIDIA/nccl-tests
doc/PERFORMANCE.md): all-reduce moves 2(n-1)/n of the buffer per rank, reduce-scatter and
all-gather (n-1)/n. Latency terms follow NCCL's tuner (NVIDIA/nccl src/graph/tuning.cc):
ring latency grows with 2(n-1) steps, tree latency with log2(nodes). NCCL picks the faster of
ring, tree and (inside one NVLink-SHARP domain) NVLS; so does this module. All functions take
numpy arrays and broadcast.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from clusterwright.catalog.schema import Gpu, Server, Stack

F = np.ndarray


@dataclass(frozen=True)
class Interconnect:
    """Achieved bandwidths (bytes/s) and latencies (s) one GPU sees on each tier."""

    domain_gpus: int  # GPUs in one scale-up (NVLink) domain
    scale_up_busbw: float  # bytes/s per GPU inside the domain
    nvls_busbw: float  # bytes/s all-reduce busbw with NVLink SHARP (0 if none)
    net_busbw: float  # bytes/s per GPU across domains (its share of the node's NICs)
    base_s: float
    intra_step_s: float
    inter_step_s: float
    tree_inter_step_s: float


def interconnect(gpu: Gpu, server: Server, stack: Stack) -> Interconnect:
    """Tier bandwidths from the catalog: link rates times the stack's achieved fractions."""
    up = gpu.scale_up.bandwidth_gbps_per_direction * 1e9
    nic_bytes = server.backend_nics.count * server.backend_nics.speed_gbps * 1e9 / 8
    return Interconnect(
        domain_gpus=server.nvlink_domain_gpus,
        scale_up_busbw=up * stack.scale_up_busbw_fraction,
        nvls_busbw=up * stack.nvls_busbw_fraction,
        net_busbw=nic_bytes / server.gpus * stack.nic_busbw_fraction,
        base_s=stack.nccl.base_s,
        intra_step_s=stack.nccl.intra_step_s,
        inter_step_s=stack.nccl.inter_step_s,
        tree_inter_step_s=stack.nccl.tree_inter_step_s,
    )


def _nodes(ranks: F, stride: F, net: Interconnect) -> F:
    """Domains a group of ``ranks`` spans when consecutive ranks are ``stride`` GPUs apart."""
    span = ranks * stride
    per_domain = np.maximum(1.0, np.floor(net.domain_gpus / np.maximum(stride, 1.0)))
    return np.where(span <= net.domain_gpus, 1.0, np.ceil(ranks / np.minimum(per_domain, ranks)))


def _busbw(ranks: F, nodes: F, net: Interconnect) -> F:
    """Bus bandwidth of a group. Across domains NCCL's hierarchical algorithm reduces inside
    each domain first, so the k ranks of a domain share k NICs' worth of network: busbw =
    min(NVLink, k x NIC) (8 x 400G nodes give ~370 GB/s, shared/data/collectives.csv)."""
    local = ranks / np.maximum(nodes, 1.0)
    return np.where(
        nodes > 1, np.minimum(net.scale_up_busbw, local * net.net_busbw), net.scale_up_busbw
    )


def _ring_latency(ranks: F, nodes: F, steps_per_rank: float, net: Interconnect) -> F:
    steps = steps_per_rank * (ranks - 1)
    inter = steps_per_rank * (nodes - 1)
    return net.base_s + (steps - inter) * net.intra_step_s + inter * net.inter_step_s


def allreduce_s(size_bytes: ArrayLike, ranks: ArrayLike, stride: ArrayLike, net: Interconnect) -> F:
    """All-reduce of ``size_bytes`` per rank over ``ranks`` GPUs spaced ``stride`` apart:
    min over ring (2(n-1)alpha + 2(n-1)/n S/B), double binary tree (log2 latency across
    nodes, same bandwidth term) and NVLS inside one domain."""
    S = np.asarray(size_bytes, dtype=float)
    n = np.asarray(ranks, dtype=float)
    nodes = _nodes(n, np.asarray(stride, dtype=float), net)
    bw = _busbw(n, nodes, net)
    volume = 2.0 * (n - 1.0) / np.maximum(n, 1.0) * S
    ring = _ring_latency(n, nodes, 2.0, net) + volume / bw
    ppn = n / nodes
    tree_lat = net.base_s + 2.0 * (
        (ppn - 1.0) * net.intra_step_s + np.log2(np.maximum(nodes, 1.0)) * net.tree_inter_step_s
    )
    tree = np.where(nodes > 1, tree_lat + volume / bw, np.inf)
    if net.nvls_busbw > 0:
        nvls = np.where(
            nodes == 1, net.base_s + 2 * net.intra_step_s + volume / net.nvls_busbw, np.inf
        )
    else:
        nvls = np.full_like(ring, np.inf)
    best = np.minimum(np.minimum(ring, tree), nvls)
    return np.where(n > 1, best, 0.0)


def allreduce_choice(size_bytes: float, ranks: int, nodes: int, net: Interconnect) -> str:
    """The algorithm ``allreduce_s`` takes as fastest for one group: ring, tree or nvls."""
    n, S, nd = float(ranks), float(size_bytes), float(max(nodes, 1))
    if n <= 1:
        return "ring"
    bw = float(_busbw(np.asarray(n), np.asarray(nd), net))
    volume = 2.0 * (n - 1.0) / n * S
    times = {"ring": float(_ring_latency(np.asarray(n), np.asarray(nd), 2.0, net)) + volume / bw}
    if nd > 1:
        ppn = n / nd
        times["tree"] = net.base_s + 2.0 * (
            (ppn - 1.0) * net.intra_step_s + np.log2(nd) * net.tree_inter_step_s
        ) + volume / bw
    elif net.nvls_busbw > 0:
        times["nvls"] = net.base_s + 2 * net.intra_step_s + volume / net.nvls_busbw
    return min(times, key=lambda k: times[k])


def ring_latency_s(ranks: int, nodes: int, steps_per_rank: float, net: Interconnect) -> float:
    """NCCL's ring latency for ``ranks`` over ``nodes`` domains (s)."""
    return float(_ring_latency(np.asarray(float(ranks)), np.asarray(float(nodes)), steps_per_rank,
                               net))


def tree_latency_s(ranks: int, nodes: int, net: Interconnect) -> float:
    """NCCL's double-binary-tree latency (s)."""
    ppn = ranks / max(nodes, 1)
    return float(net.base_s + 2.0 * ((ppn - 1.0) * net.intra_step_s
                                     + np.log2(max(nodes, 1)) * net.tree_inter_step_s))


def allgather_s(size_bytes: ArrayLike, ranks: ArrayLike, stride: ArrayLike, net: Interconnect) -> F:
    """All-gather (or reduce-scatter) producing ``size_bytes`` per rank: ring, (n-1)/n S/B."""
    S = np.asarray(size_bytes, dtype=float)
    n = np.asarray(ranks, dtype=float)
    nodes = _nodes(n, np.asarray(stride, dtype=float), net)
    t = _ring_latency(n, nodes, 1.0, net) + (n - 1.0) / np.maximum(n, 1.0) * S / _busbw(
        n, nodes, net
    )
    return np.where(n > 1, t, 0.0)


reducescatter_s = allgather_s


def alltoall_s(size_bytes: ArrayLike, ranks: ArrayLike, stride: ArrayLike, net: Interconnect) -> F:
    """All-to-all of ``size_bytes`` per rank: each rank keeps 1/n and sends the rest; the part
    leaving the domain goes at network speed, the rest over NVLink, in parallel."""
    S = np.asarray(size_bytes, dtype=float)
    n = np.asarray(ranks, dtype=float)
    st = np.asarray(stride, dtype=float)
    nodes = _nodes(n, st, net)
    local = np.minimum(n, n / nodes)  # ranks sharing my domain
    inter = S * (n - local) / np.maximum(n, 1.0) / net.net_busbw
    intra = S * (local - 1.0) / np.maximum(n, 1.0) / net.scale_up_busbw
    t = net.base_s + (n - 1.0) * np.where(nodes > 1, net.inter_step_s, net.intra_step_s)
    return np.where(n > 1, t + np.maximum(inter, intra), 0.0)


def p2p_s(size_bytes: ArrayLike, crosses_domain: ArrayLike, net: Interconnect) -> F:
    """One point-to-point send between pipeline stages."""
    S = np.asarray(size_bytes, dtype=float)
    cross = np.asarray(crosses_domain, dtype=bool)
    bw = np.where(cross, net.net_busbw, net.scale_up_busbw)
    lat = net.base_s + np.where(cross, net.inter_step_s, net.intra_step_s)
    return lat + S / bw


def busbw_gbps(collective: str, size_bytes: float, ranks: int, time_s: float) -> float:
    """nccl-tests bus bandwidth, GB/s, of a measured or predicted collective."""
    factor = {"allreduce": 2.0 * (ranks - 1) / ranks}.get(collective, (ranks - 1) / ranks)
    return size_bytes / time_s * factor / 1e9
