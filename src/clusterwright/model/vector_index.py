"""Vector indexes for retrieval (RAG): the memory and disk an index of N vectors takes, by the
formulas the libraries and databases publish, with the spread between them shown, and the
compute to embed a corpus. Pure functions; bytes, FLOPs.

Each estimate names its source; where two sources give different formulas for one index, both
are returned so a reader sees the spread instead of one number:

- **HNSW** (in memory):
  - FAISS wiki, "Guidelines to choose an index": "(d * 4 + M * 2 * 4) bytes per vector" for
    float32 vectors (the vector, and 2M neighbour ids of 4 bytes on layer 0); here d x the
    precision's bytes + 8M;
  - ScyllaDB vector-search sizing: N x (D x B + m x 16) x 1.2 (16 bytes per edge with its
    metadata, 20 % operational headroom);
  - Qdrant capacity planning: number_of_vectors x vector_dimension x 4 bytes x 1.5 ("the extra
    50 % accounts for metadata (such as indexes and point versions) and temporary segments
    created during optimization"); here x the precision's bytes.
- **IVF-PQ** (in memory): per vector the PQ code of m sub-quantizers x nbits and its id, plus
  nlist coarse centroids (d float32 each) and the PQ codebooks (2^nbits centroids of d/m floats
  per sub-quantizer = 2^nbits x d floats):
  - FAISS (``IndexIVFPQ``; ids are ``idx_t`` = int64, 8 bytes; wiki "Lower memory footprint");
  - Milvus (its reference on index overhead counts 4-byte vector ids in the inverted lists).
  The raw vectors stay on disk for re-ranking (cuVS IVF-PQ documentation: refinement needs the
  unquantized vectors).
- **DiskANN** (graph on SSD, compressed vectors in memory):
  - memory, Milvus/Knowhere defaults: PQ codes within ``pq_code_budget_gb_ratio`` = 0.125 of
    the raw data, plus a node cache of ``search_cache_budget_gb_ratio`` = 0.1 of it (Milvus
    "knowhere-related configurations"); the spread is with and without the cache;
  - disk, microsoft/DiskANN's disk layout (``create_disk_layout``): each node is its full
    vector and (R + 1) 4-byte words (degree and R neighbour ids), packed into 4,096-byte
    sectors, floor(4096 / node bytes) nodes per sector (a node larger than a sector takes
    whole sectors), plus one header sector. Milvus's default R (``max_degree``) is 56.
- **Embedding** a corpus: an encoder's forward pass is about 2 x parameters FLOPs per token
  (Kaplan et al. 2020, the forward half of 6N).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from clusterwright.errors import InputError

PRECISION_BYTES = {"fp32": 4.0, "fp16": 2.0, "bf16": 2.0, "int8": 1.0}
MAX_DIM = 32_768  # Milvus's maximum dimension of a float vector field
MAX_HNSW_M = 2_048  # Milvus's HNSW M range [2, 2048]
MAX_DEGREE = 512  # Milvus's DiskANN max_degree range [1, 512]
MAX_NLIST = 65_536  # Milvus's IVF nlist range [1, 65536]
MAX_VECTORS = 1e13  # ten trillion: past any published index
SECTOR = 4_096  # DiskANN's SECTOR_LEN
ID_BYTES_FAISS = 8  # faiss idx_t (int64)
ID_BYTES_MILVUS = 4
HNSW_EDGE_BYTES_SCYLLA = 16
HEADROOM_SCYLLA = 1.2
QDRANT_FACTOR = 1.5
DISKANN_PQ_RATIO = 0.125  # knowhere.DISKANN.build.pq_code_budget_gb_ratio
DISKANN_CACHE_RATIO = 0.1  # knowhere.DISKANN.build.search_cache_budget_gb_ratio
INDEXES = ("hnsw", "ivf-pq", "diskann")


def _check_int(name: str, value: int, lo: int, hi: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise InputError(f"{name}: must be a whole number in [{lo:,}, {hi:,}], got {value}",
                         field=name)


def _bytes_per_dim(precision: str) -> float:
    try:
        return PRECISION_BYTES[precision]
    except KeyError:
        raise InputError(f"precision: one of {', '.join(PRECISION_BYTES)}, got {precision!r}",
                         field="precision") from None


def _vectors(n: float) -> None:
    if not (isinstance(n, int | float) and not isinstance(n, bool) and 0 < n <= MAX_VECTORS):
        raise InputError(f"vectors: must be in (0, {MAX_VECTORS:.0e}], got {n}", field="vectors")


@dataclass(frozen=True)
class IndexEstimate:
    """One source's estimate of an index: bytes in memory and on disk, and the formula."""

    source: str
    memory_bytes: float
    disk_bytes: float
    formula: str

    def as_dict(self) -> dict[str, object]:
        return {"source": self.source, "memory_bytes": self.memory_bytes,
                "disk_bytes": self.disk_bytes, "formula": self.formula}


def raw_bytes(n: float, dim: int, precision: str = "fp32") -> float:
    """The vectors themselves: N x d x bytes per dimension."""
    _vectors(n)
    _check_int("dim", dim, 1, MAX_DIM)
    return n * dim * _bytes_per_dim(precision)


def hnsw(n: float, dim: int, m: int = 16, precision: str = "fp32") -> list[IndexEstimate]:
    """HNSW by FAISS's, ScyllaDB's and Qdrant's formulas. The index is persisted as it sits in
    memory, so disk = memory (FAISS's form)."""
    _check_int("m", m, 2, MAX_HNSW_M)
    raw = raw_bytes(n, dim, precision)
    b = _bytes_per_dim(precision)
    faiss = n * (dim * b + 2 * m * 4)
    scylla = HEADROOM_SCYLLA * n * (dim * b + HNSW_EDGE_BYTES_SCYLLA * m)
    qdrant = QDRANT_FACTOR * raw
    return [
        IndexEstimate("FAISS wiki (Guidelines to choose an index)", faiss, faiss,
                      f"N x (d x {b:g} + M x 2 x 4)"),
        IndexEstimate("ScyllaDB vector search sizing", scylla, faiss,
                      f"N x (d x {b:g} + M x 16) x 1.2"),
        IndexEstimate("Qdrant capacity planning", qdrant, faiss, f"N x d x {b:g} x 1.5"),
    ]


def ivf_pq(n: float, dim: int, pq_m: int, nbits: int = 8, nlist: int = 1024,
           precision: str = "fp32") -> list[IndexEstimate]:
    """IVF-PQ by FAISS's (8-byte ids) and Milvus's (4-byte ids) accounting. ``pq_m`` must
    divide ``dim``. Disk holds the index and the raw vectors (kept for re-ranking)."""
    raw = raw_bytes(n, dim, precision)
    _check_int("pq_m", pq_m, 1, dim)
    if dim % pq_m:
        raise InputError(f"pq_m: must divide the dimension {dim}, got {pq_m}", field="pq_m")
    _check_int("nbits", nbits, 1, 16)
    _check_int("nlist", nlist, 1, MAX_NLIST)
    code = pq_m * nbits / 8.0
    shared = nlist * dim * 4.0 + (2 ** nbits) * dim * 4.0
    out = []
    for source, id_bytes in (("FAISS IndexIVFPQ (int64 ids)", ID_BYTES_FAISS),
                             ("Milvus index overhead reference (4-byte ids)", ID_BYTES_MILVUS)):
        mem = n * (code + id_bytes) + shared
        out.append(IndexEstimate(source, mem, mem + raw,
                                 f"N x ({pq_m} x {nbits} / 8 + {id_bytes}) + nlist x d x 4 + "
                                 f"2^{nbits} x d x 4; disk adds the raw vectors"))
    return out


def diskann_disk_bytes(n: float, dim: int, degree: int, precision: str = "fp32") -> float:
    """microsoft/DiskANN's disk layout: 4 KB sectors of nodes (vector + degree + R ids)."""
    _vectors(n)
    _check_int("dim", dim, 1, MAX_DIM)
    _check_int("degree", degree, 1, MAX_DEGREE)
    node = (degree + 1) * 4 + dim * _bytes_per_dim(precision)
    # Whole nodes per 4 KB sector, or whole sectors per node when one is larger.
    nodes = math.ceil(n)
    sectors = (math.ceil(nodes / (SECTOR // node)) if node <= SECTOR
               else nodes * math.ceil(node / SECTOR))
    return float((sectors + 1) * SECTOR)


def diskann(n: float, dim: int, degree: int = 56, precision: str = "fp32"
            ) -> list[IndexEstimate]:
    """DiskANN: memory by Milvus's PQ budget with and without its node cache; disk by
    DiskANN's sector layout (the same for both)."""
    raw = raw_bytes(n, dim, precision)
    disk = diskann_disk_bytes(n, dim, degree, precision)
    return [
        IndexEstimate("Milvus DiskANN defaults: PQ codes only", DISKANN_PQ_RATIO * raw, disk,
                      "0.125 x raw in memory; disk: 4 KB sectors of (vector + (R + 1) x 4 B)"),
        IndexEstimate("Milvus DiskANN defaults: PQ codes and node cache",
                      (DISKANN_PQ_RATIO + DISKANN_CACHE_RATIO) * raw, disk,
                      "(0.125 + 0.1) x raw in memory; disk as above"),
    ]


def spread(estimates: list[IndexEstimate]) -> tuple[float, float]:
    """(lowest, highest) memory over the sources' estimates."""
    mem = [e.memory_bytes for e in estimates]
    return min(mem), max(mem)


def embedding_flops(params: float, tokens: float) -> float:
    """FLOPs to embed ``tokens`` with an encoder of ``params`` parameters: 2 x params x tokens
    (one forward pass)."""
    for name, v in (("embedding parameters", params), ("tokens", tokens)):
        if not (v > 0 and math.isfinite(v)):
            raise InputError(f"{name}: must be a positive number, got {v}")
    return 2.0 * params * tokens


def embedding_seconds(flops: float, gpus: int, peak_tflops: float, efficiency: float) -> float:
    """Wall seconds on ``gpus`` GPUs at ``efficiency`` of the dense peak."""
    _check_int("gpus", gpus, 1, 10_000_000)
    if not (peak_tflops > 0 and 0 < efficiency <= 1):
        raise InputError(f"peak and efficiency: must be positive (efficiency at most 1), got "
                         f"{peak_tflops}, {efficiency}")
    return flops / (gpus * peak_tflops * 1e12 * efficiency)
