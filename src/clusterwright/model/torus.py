"""Collectives on a torus (TPU ICI, Trainium NeuronLink): dimension-ordered bidirectional rings.

The JAX scaling book ("How to Scale Your Model", chapters "How to Think About TPUs" and
"Sharded Matrices") derives the cost of a collective on a TPU torus from its links:

- every chip has two links per axis (one to each neighbour), each ``W`` bytes/s per direction;
- an all-gather (or reduce-scatter) of ``V`` bytes per chip over an axis of ``N`` chips runs
  as a bidirectional ring, ``V (N-1)/N / (2 W)``; without the wraparound link (a mesh, or a
  slice that does not close the axis) it runs one way, ``V (N-1)/N / W``;
- over several axes at once (an array sharded over two or three axes) every axis's links carry
  a share, so the bandwidth adds: ``V (N-1)/N / (W * sum over axes of 2 or 1)``;
- an all-reduce is a reduce-scatter and an all-gather: twice the all-gather;
- an all-to-all sends each chip's ``V`` bytes an average quarter of the ring each way:
  ``V L / (8 W)`` on a closed axis of ``L`` chips (``V L / (6 W)`` on an open one), the
  longest axis setting the pace (dimension-ordered routing);
- latency is one hop per ring step: ``N/2`` hops per closed axis (``N - 1`` open).

A group of ``n`` ranks placed ``stride`` chips apart takes the torus axes in order (axis 0
varies fastest): ``stride`` first consumes whole and partial axes, then the group spans the
next ones. A group larger than one torus domain (a TPU slice) runs hierarchically: the ranks
inside a slice over ICI, the slices over the data-centre network (DCN) as NCCL-style rings
(``model/collectives``), as XLA's multi-slice all-reduce does (reduce-scatter in the slice,
all-reduce across slices, all-gather in the slice; MaxText multi-slice guide).

Every function takes ``ops`` (numpy arrays of layouts or Python floats, ``model/xp``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from clusterwright.model.xp import Num, Ops


@dataclass(frozen=True)
class TorusNet:
    """A torus domain: its axes, whether they close, one link's achieved bytes/s per direction
    and the latency of one hop (seconds)."""

    dims: tuple[int, ...]
    wraparound: bool
    link_bw: float  # bytes/s per link per direction, achieved (link rate x stack fraction)
    hop_s: float

    @property
    def chips(self) -> int:
        return math.prod(self.dims)


@dataclass(frozen=True)
class Span:
    """How a group lies on the torus: links it drives (in units of one link per direction),
    ring steps of latency, the longest axis it runs along, and its all-to-all link factor."""

    links: Num
    hops: Num
    longest: Num
    a2a_div: Num  # divisor of S * L for the all-to-all (8 closed, 6 open)


def span(ops: Ops, ranks: Num, stride: Num, tor: TorusNet) -> Span:
    """The axes a group of ``ranks`` chips ``stride`` apart spans inside one torus domain
    (ranks beyond the domain are the caller's: see ``inside``)."""
    consumed = ops.maximum(stride, 1.0)
    remaining = ops.maximum(ranks, 1.0)
    links = 0.0 * remaining
    hops = 0.0 * remaining
    longest = 1.0 + 0.0 * remaining
    a2a_div = 8.0 + 0.0 * remaining
    for d in tor.dims:
        dd = float(d)
        inner = ops.minimum(consumed, dd)
        consumed = consumed / inner
        avail = ops.maximum(dd / inner, 1.0)
        take = ops.minimum(remaining, avail)
        used = take > 1.0
        # The axis closes only when the group takes all of it (and the torus wraps).
        closed = ((take * inner >= dd) & used) if tor.wraparound else (used & False)
        factor = ops.where(closed, 2.0, 1.0)
        links = links + ops.where(used, factor, 0.0)
        # Ring steps: N/2 on a closed axis (both ways), N-1 on an open one; a strided ring
        # crosses ``inner`` links per step.
        step_hops = ops.where(closed, take / 2.0, take - 1.0) * inner
        hops = hops + ops.where(used, step_hops, 0.0)
        longest = ops.where(used & (take > longest), take, longest)
        a2a_div = ops.where(used & (take >= longest), ops.where(closed, 8.0, 6.0), a2a_div)
        remaining = remaining / take
    return Span(links, hops, longest, a2a_div)


def inside(ops: Ops, ranks: Num, stride: Num, domain: float) -> Num:
    """Ranks of the group inside one torus domain (the rest are in other slices)."""
    per = ops.maximum(ops.floor(domain / ops.maximum(stride, 1.0)), 1.0)
    return ops.minimum(ranks, per)


def allgather_s(ops: Ops, size_bytes: Num, ranks: Num, stride: Num, tor: TorusNet) -> Num:
    """All-gather producing ``size_bytes`` per chip (or a reduce-scatter consuming it) over
    ``ranks`` chips of one torus domain: ``S (n-1)/n / (W * links) + hops * hop`` (s)."""
    sp = span(ops, ranks, stride, tor)
    n = ops.maximum(ranks, 1.0)
    bw = tor.link_bw * ops.maximum(sp.links, 1.0)
    t = size_bytes * (n - 1.0) / n / bw + sp.hops * tor.hop_s
    return ops.where(ranks > 1.0, t, 0.0)


def allreduce_s(ops: Ops, size_bytes: Num, ranks: Num, stride: Num, tor: TorusNet) -> Num:
    """All-reduce of ``size_bytes`` per chip: a reduce-scatter then an all-gather (s)."""
    return 2.0 * allgather_s(ops, size_bytes, ranks, stride, tor)


def alltoall_s(ops: Ops, size_bytes: Num, ranks: Num, stride: Num, tor: TorusNet) -> Num:
    """All-to-all of ``size_bytes`` per chip over ``ranks`` chips: the longest axis's links
    carry ``S L / 8`` (closed) or ``S L / 6`` (open) bytes each (s)."""
    sp = span(ops, ranks, stride, tor)
    n = ops.maximum(ranks, 1.0)
    t = (size_bytes * (n - 1.0) / n * sp.longest / (sp.a2a_div * tor.link_bw)
         + sp.hops * tor.hop_s)
    return ops.where(ranks > 1.0, t, 0.0)


def p2p_s(ops: Ops, size_bytes: Num, tor: TorusNet) -> Num:
    """A send to a neighbouring chip (pipeline stages): one link, one hop (s)."""
    return size_bytes / tor.link_bw + tor.hop_s


def torus_shape_error(shape: list[int], dims: list[int], slices: list[list[int]]) -> str | None:
    """Why ``shape`` is not a slice the pod can form (None if it is): a listed slice shape
    (in any axis order) or, without a list, a shape whose sides divide the pod's axes."""
    if len(shape) != len(dims):
        axes = "x".join(map(str, dims))
        return f"{len(shape)} axes, but the pod's torus has {len(dims)} ({axes})"
    if any(s < 1 for s in shape):
        return "every side must be at least 1"
    chips = 1
    for s in shape:
        chips *= s
    pod = 1
    for d in dims:
        pod *= d
    if chips > pod:
        return f"{chips} chips is larger than the pod's largest slice ({pod} chips)"
    if slices:
        if sorted(shape) not in [sorted(s) for s in slices]:
            known = ", ".join("x".join(map(str, s)) for s in slices)
            return f"not a slice shape the pod forms (shapes: {known})"
        return None
    if any(d % s for s, d in zip(sorted(shape), sorted(dims), strict=True)):
        return f"its sides do not divide the pod's axes {'x'.join(map(str, dims))}"
    return None
