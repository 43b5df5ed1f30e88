"""``ops vector``: the memory and disk of a vector index by every published formula (the
spread between them shown), the servers it needs when a server's memory is given, and the
time to embed the corpus on the chosen GPUs (``model/vector_index.py`` has the formulas)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from clusterwright.catalog.registry import Catalog
from clusterwright.errors import ClusterwrightError, InputError
from clusterwright.model import vector_index as vi

GB = 1e9


@dataclass(frozen=True)
class VectorRequest:
    vectors: float
    dim: int
    index: str = "hnsw"
    precision: str = "fp32"
    m: int = 16  # HNSW neighbours per layer
    degree: int = 56  # DiskANN R
    pq_m: int | None = None  # IVF-PQ sub-quantizers (default d / 8... at most 64)
    nbits: int = 8
    nlist: int | None = None  # IVF lists (default about sqrt(N), at most 65,536)
    replicas: int = 1
    node_memory_gb: float | None = None
    corpus_tokens: float | None = None
    embed_params: float | None = None
    gpu: str = "h100-sxm"
    gpus: int = 1


def _pq_m(dim: int) -> int:
    """The largest divisor of ``dim`` up to 64 (FAISS's usual m: a 4-64 byte code)."""
    return max(k for k in range(1, min(64, dim) + 1) if dim % k == 0)


def vector_report(cat: Catalog, req: VectorRequest) -> dict[str, Any]:
    """Memory and disk of the index by source, servers for the replicas, embedding time.
    InputError naming the field on a bad value."""
    try:
        gpu = cat.gpu(req.gpu)
    except ClusterwrightError as exc:
        raise InputError(f"gpu: {exc}", field="gpu") from None
    if req.index not in vi.INDEXES:
        raise InputError(f"index: one of {', '.join(vi.INDEXES)}, got {req.index!r}",
                         field="index")
    if req.index == "hnsw":
        est = vi.hnsw(req.vectors, req.dim, req.m, req.precision)
        params: dict[str, Any] = {"m": req.m}
    elif req.index == "diskann":
        est = vi.diskann(req.vectors, req.dim, req.degree, req.precision)
        params = {"degree": req.degree}
    else:
        pq_m = req.pq_m if req.pq_m is not None else _pq_m(req.dim)
        nlist = req.nlist if req.nlist is not None else min(
            vi.MAX_NLIST, max(1, round(math.sqrt(req.vectors))))
        est = vi.ivf_pq(req.vectors, req.dim, pq_m, req.nbits, nlist, req.precision)
        params = {"pq_m": pq_m, "nbits": req.nbits, "nlist": nlist}
    lo, hi = vi.spread(est)
    raw = vi.raw_bytes(req.vectors, req.dim, req.precision)
    out: dict[str, Any] = {
        "index": req.index, "vectors": req.vectors, "dim": req.dim, "precision": req.precision,
        "params": params, "replicas": req.replicas, "raw_gb": raw / GB,
        "estimates": [e.as_dict() for e in est],
        "memory_gb": {"low": lo / GB, "high": hi / GB, "spread": hi / lo if lo else None},
        "disk_gb": max(e.disk_bytes for e in est) / GB,
        "total_memory_gb": {"low": lo * req.replicas / GB, "high": hi * req.replicas / GB},
    }
    if req.node_memory_gb is not None:
        out["servers"] = {"node_memory_gb": req.node_memory_gb,
                          "low": math.ceil(lo * req.replicas / GB / req.node_memory_gb),
                          "high": math.ceil(hi * req.replicas / GB / req.node_memory_gb)}
    if req.corpus_tokens is not None or req.embed_params is not None:
        if req.corpus_tokens is None or req.embed_params is None:
            missing = "corpus_tokens" if req.corpus_tokens is None else "embed_params"
            raise InputError(f"{missing}: the embedding time needs both the corpus tokens and "
                             "the embedding model's parameters", field=missing)
        stack = cat.stack_for_gpu(gpu.id)
        sv = stack.serving
        curve = sv.gemm_efficiency if sv and sv.gemm_efficiency else stack.gemm_efficiency
        eff = max(e for _, e in curve) * (sv.gemm_scale if sv else 1.0)
        dtype = "bf16" if "bf16" in gpu.peak_tflops else next(iter(gpu.peak_tflops))
        peak = float(gpu.peak_tflops[dtype])  # type: ignore[index]
        flops = vi.embedding_flops(req.embed_params, req.corpus_tokens)
        out["embedding"] = {
            "flops": flops, "gpu": gpu.id, "gpus": req.gpus, "dtype": dtype,
            "peak_tflops": peak, "efficiency": min(eff, 1.0), "stack": stack.id,
            "hours": vi.embedding_seconds(flops, req.gpus, peak, min(eff, 1.0)) / 3600.0,
            "basis": "2 x parameters FLOPs per token at the stack's large-GEMM efficiency: a "
                     "lower bound on the time (attention, tokenisation and I/O are not counted)"}
    return out
