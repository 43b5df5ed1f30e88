"""model/vector_index.py: each source's formula by hand, DiskANN's sector layout, the spread,
embedding FLOPs, and bad sizes refused naming the field."""

from __future__ import annotations

import pytest

from clusterwright.errors import InputError
from clusterwright.model import vector_index as vi


def test_hnsw_by_faiss_scylladb_and_qdrant() -> None:
    # 1M x 1024-d fp32, M = 16: FAISS (4,096 + 128) B, ScyllaDB (4,096 + 256) x 1.2 B,
    # Qdrant 4,096 x 1.5 B per vector (Qdrant's worked example: about 5.72 GiB).
    faiss, scylla, qdrant = vi.hnsw(1e6, 1024, 16)
    assert faiss.memory_bytes == pytest.approx(1e6 * 4224)
    assert scylla.memory_bytes == pytest.approx(1e6 * 4352 * 1.2)
    assert qdrant.memory_bytes == pytest.approx(6.144e9)
    assert qdrant.memory_bytes / 2**30 == pytest.approx(5.72, abs=0.01)
    lo, hi = vi.spread([faiss, scylla, qdrant])
    assert (lo, hi) == (faiss.memory_bytes, qdrant.memory_bytes)
    # fp16 halves the vector part only
    half = vi.hnsw(1e6, 1024, 16, "fp16")[0]
    assert half.memory_bytes == pytest.approx(1e6 * (2048 + 128))


def test_ivf_pq_codes_ids_centroids_and_codebooks() -> None:
    # 1M x 768-d, 64 x 8-bit codes, 1,024 lists: FAISS 64 + 8 B per vector, Milvus 64 + 4;
    # centroids 1,024 x 768 x 4 B and codebooks 256 x 768 x 4 B for both.
    faiss, milvus = vi.ivf_pq(1e6, 768, 64, 8, 1024)
    shared = 1024 * 768 * 4 + 256 * 768 * 4
    assert faiss.memory_bytes == pytest.approx(1e6 * 72 + shared)
    assert milvus.memory_bytes == pytest.approx(1e6 * 68 + shared)
    assert faiss.disk_bytes == pytest.approx(faiss.memory_bytes + 1e6 * 768 * 4)


def test_diskann_sector_layout() -> None:
    # 128-d fp32, R = 56: a node is 57 x 4 + 512 = 740 B, 5 to a 4 KB sector;
    # 1M nodes are 200,000 sectors plus the header.
    assert vi.diskann_disk_bytes(1e6, 128, 56) == (200_000 + 1) * 4096
    # 1,536-d fp32 (6,144 B + 228 B): a node takes two whole sectors.
    assert vi.diskann_disk_bytes(1000, 1536, 56) == (2 * 1000 + 1) * 4096
    pq, cached = vi.diskann(1e6, 128, 56)
    raw = 1e6 * 128 * 4
    assert (pq.memory_bytes, cached.memory_bytes) == pytest.approx((0.125 * raw, 0.225 * raw))


def test_embedding_flops_and_time() -> None:
    flops = vi.embedding_flops(335e6, 1e9)
    assert flops == pytest.approx(6.7e17)
    # 8 GPUs at 989 TFLOP/s and half the peak: 6.7e17 / (8 x 989e12 x 0.5) s
    assert vi.embedding_seconds(flops, 8, 989.0, 0.5) == pytest.approx(6.7e17 / 3.956e15)


@pytest.mark.parametrize(("call", "field"), [
    (lambda: vi.hnsw(1e6, 0, 16), "dim"),
    (lambda: vi.hnsw(1e6, 40_000, 16), "dim"),
    (lambda: vi.hnsw(1e6, 128, 1), "m"),
    (lambda: vi.hnsw(-5, 128, 16), "vectors"),
    (lambda: vi.hnsw(1e6, 128, 16, "fp8"), "precision"),
    (lambda: vi.diskann(1e6, 128, 0), "degree"),
    (lambda: vi.diskann(1e6, 128, 513), "degree"),
    (lambda: vi.ivf_pq(1e6, 128, 7), "pq_m"),
    (lambda: vi.ivf_pq(1e6, 128, 16, 8, 0), "nlist"),
])
def test_out_of_range_is_refused_naming_the_field(call: object, field: str) -> None:
    with pytest.raises(InputError) as e:
        call()  # type: ignore[operator]
    assert e.value.field == field
