"""The scenario's ``rag:`` section: a retrieval workload whose vector index the planner sizes
next to the cluster (``plan/rag.py``, with the memory formulas of ``model/vector_index.py``
that ``ops vector`` uses).

The corpus is given as its vectors, or as tokens cut into chunks of ``chunk_tokens`` (one
vector per chunk). Bounds follow ``ops vector``: a dimension up to 32,768 (Milvus's largest
float vector), HNSW M 2..2,048, DiskANN degree 1..512.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from clusterwright.spec.numbers import INTEGER, NonNegativeFloat, PositiveFloat

MAX_VECTORS = 1e13  # ten trillion chunks: past any published index
MAX_DIM = 32_768  # as model/vector_index.MAX_DIM (this layer does not import models)


class RagSection(BaseModel):
    """A retrieval (RAG) workload: the corpus, its embeddings and index, the query rate."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    vectors: Annotated[PositiveFloat, Field(le=MAX_VECTORS)] | None = None
    """Vectors in the index (one per chunk). Give this or corpus_tokens."""
    corpus_tokens: Annotated[PositiveFloat, Field(le=MAX_VECTORS * 1e6)] | None = None
    """Tokens of the corpus, cut into chunk_tokens chunks, one vector each. Give this or
    vectors."""
    chunk_tokens: Annotated[int, INTEGER, Field(ge=1, le=1_000_000)] = 512
    """Tokens per chunk when the corpus is given in tokens."""
    dim: Annotated[int, INTEGER, Field(ge=1, le=MAX_DIM)]
    """Embedding dimension (768 for BGE-base, 1,024 for BGE-large, 3,072 for
    text-embedding-3-large)."""
    index: Literal["hnsw", "ivf-pq", "diskann"] = "hnsw"
    """Index type: hnsw (in memory), ivf-pq (compressed codes in memory, raw vectors on disk)
    or diskann (graph on SSD, compressed vectors in memory)."""
    precision: Literal["fp32", "fp16", "bf16", "int8"] = "fp32"
    """Stored precision of the vectors."""
    replicas: Annotated[int, INTEGER, Field(ge=1, le=1000)] = 1
    """Copies of the index served (availability and query throughput)."""
    qps: Annotated[NonNegativeFloat, Field(le=1e9)] = 0.0
    """Peak queries per second. Reported with the index; the servers are sized by memory,
    because no per-node query throughput with its hardware was sourced."""
    embed_params: Annotated[PositiveFloat, Field(le=1e13)] | None = None
    """Parameters of the embedding model (335e6 for BGE-large): with it the plan gives the
    time to embed the corpus on the cluster's GPUs. Unset: not estimated."""

    @model_validator(mode="after")
    def _one_corpus(self) -> RagSection:
        if (self.vectors is None) == (self.corpus_tokens is None):
            raise ValueError("rag.vectors: give either vectors or corpus_tokens (one of them)")
        return self

    @property
    def n_vectors(self) -> float:
        """Vectors in the index."""
        if self.vectors is not None:
            return self.vectors
        assert self.corpus_tokens is not None  # the validator guarantees one of them
        return max(1.0, self.corpus_tokens / self.chunk_tokens)
