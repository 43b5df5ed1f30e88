"""How much communication a training step hides under compute: closed forms of small timelines.

Each function is the exact finish time of a two-stream schedule (one compute stream, one
communication stream that runs its transfers in order) under uniform work, so it stays a
formula the planner can evaluate on arrays. Communication is hidden only where compute exists
to hide it; transfers that share a link (an all-gather and a reduce-scatter on the same NIC,
gradient buckets behind each other) run one after the other, never both at full bandwidth.
All times in seconds; every argument broadcasts (numpy arrays or floats, see ``model/xp``).
"""

from __future__ import annotations

from clusterwright.model.xp import Num, Ops


def bucketed_tail(ops: Ops, comm: Num, buckets: Num, window: Num) -> Num:
    """Time a bucketed gradient reduction runs past the end of the compute that feeds it.

    ``comm`` seconds of transfers in ``buckets`` equal buckets; bucket k (k = 1..n) is ready
    at k/n of a ``window`` of compute (the backward pass its gradients come from), and the
    buckets go out one at a time. The last one finishes at max(window/n + comm, window +
    comm/n), so the exposed tail is max(comm/n, comm - window (n-1)/n). Megatron-Core's
    overlap-grad-reduce and DDP's bucketed all-reduce both behave this way.
    """
    n = ops.maximum(buckets, 1.0)
    return ops.maximum(comm / n, comm - window * (n - 1.0) / n)


def prefetched_layers(ops: Ops, compute: Num, comm: Num, layers: Num, prefetch: Num) -> Num:
    """Wall time of ``layers`` layers whose inputs arrive by a transfer each (ZeRO-3/FSDP
    parameter all-gathers): with prefetch the transfer of layer i+1 runs during the compute of
    layer i, so the first transfer is exposed and each layer then takes max(compute, comm);
    without prefetch (depth 0) every transfer waits for the previous compute."""
    overlapped = comm + (layers - 1.0) * ops.maximum(compute, comm) + compute
    serial = layers * (compute + comm)
    return ops.where(prefetch >= 1, ops.minimum(overlapped, serial), serial)


def chunked_overlap(ops: Ops, comm: Num, gemm: Num, chunks: Num) -> Num:
    """Exposed time of a collective split into ``chunks`` pieces pipelined with the GEMM that
    consumes or produces it (Transformer Engine's userbuffers TP overlap: all-gather + GEMM,
    GEMM + reduce-scatter): one chunk always shows, the rest hide while the GEMM runs."""
    k = ops.maximum(chunks, 1.0)
    return ops.maximum(comm / k, comm - gemm * (k - 1.0) / k)


def paired_overlap(ops: Ops, comm: Num, compute: Num, unpaired: Num) -> Num:
    """Exposed time of communication that hides under another micro-batch's compute (MoE
    dispatch/combine under the paired forward/backward of 1F1B-overlap or DualPipe). A share
    ``unpaired`` of the micro-batches (warm-up forwards, cool-down backwards) has no partner
    and shows all of its communication; the rest show only what exceeds the compute."""
    u = ops.minimum(ops.maximum(unpaired, 0.0), 1.0)
    return u * comm + (1.0 - u) * ops.maximum(comm - compute, 0.0)


def ring_steps(ops: Ops, transfer: Num, compute: Num, steps: Num) -> Num:
    """Exposed time of a ring exchange of ``steps`` hops (context-parallel ring attention):
    each hop's transfer runs under the block computed meanwhile, so a hop shows only what
    exceeds its block."""
    return steps * ops.maximum(transfer - compute, 0.0)
