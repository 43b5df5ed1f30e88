"""The vector index of a scenario's retrieval workload (``rag:``), sized next to the cluster
with the memory formulas ``ops vector`` uses (``plan/vector.py``, ``model/vector_index.py``):
every published formula's memory and the spread between them, the index servers the replicas
need at the high end of the spread (at least one server per replica, so a server loss leaves a
replica), their power and price from the catalog's vector-node assumptions, and the time to
embed the corpus on the cluster's GPUs when the embedding model is given.

Not modelled, and said so in the output: query throughput per server (no benchmark with its
hardware was sourced, so ``qps`` does not size the servers) and the embedding model's serving
GPUs for live queries.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from clusterwright.catalog.registry import Catalog
from clusterwright.errors import InputError
from clusterwright.plan.vector import VectorRequest, vector_report
from clusterwright.spec.scenario_rag import RagSection

QPS_NOTE = ("servers are sized by index memory only: no per-server query throughput with its "
            "hardware was sourced, so qps is reported, not sized for")


@dataclass(frozen=True)
class RagPlan:
    """The vector index tier: servers, their power (kW) and price (USD), and the index."""

    servers: int
    node_memory_gb: float
    power_kw: float
    price_usd: float
    index: dict[str, Any]  # plan/vector.vector_report
    qps: float
    why: str

    def as_dict(self) -> dict[str, Any]:
        idx = dict(self.index)
        by_memory = idx.pop("servers", None)  # ops vector's {node_memory_gb, low, high}
        return {**idx, "servers": self.servers, "servers_by_memory": by_memory,
                "node_memory_gb": self.node_memory_gb, "power_kw": self.power_kw,
                "price_usd": self.price_usd, "qps": self.qps, "qps_note": QPS_NOTE,
                "why": self.why}


def plan_rag(cat: Catalog, rag: RagSection, gpu: str, gpus: int) -> RagPlan:
    """The index tier of ``rag`` with the corpus embedded on ``gpus`` GPUs of ``gpu``.
    InputError naming the ``rag.*`` field on a value the index formulas refuse."""
    a = cat.assumption
    node_gb = a("vector_node_memory_gb")
    n = rag.n_vectors
    tokens = rag.corpus_tokens if rag.corpus_tokens is not None else n * rag.chunk_tokens
    try:
        rep = vector_report(cat, VectorRequest(
            vectors=n, dim=rag.dim, index=rag.index, precision=rag.precision,
            replicas=rag.replicas, node_memory_gb=node_gb,
            corpus_tokens=tokens if rag.embed_params is not None else None,
            embed_params=rag.embed_params, gpu=gpu, gpus=gpus))
    except InputError as exc:
        name = exc.field or ""
        raise InputError(f"rag.{exc!s}" if name else str(exc),
                         field=f"rag.{name}" if name else None) from None
    need = rep["servers"]["high"]
    servers = max(need, rag.replicas)
    mem = rep["memory_gb"]
    why = (f"{servers} x vector-index server ({node_gb:g} GB for the index each): "
           f"{rag.replicas} replica(s) of a {rag.index} index of {n:,.3g} {rag.dim}-d "
           f"{rag.precision} vectors need {mem['low']:,.0f}-{mem['high']:,.0f} GB each "
           f"(published formulas, spread {mem['spread']:.2f}x); sized at the high end"
           + ("" if servers == need else ", one server per replica at least"))
    return RagPlan(servers, node_gb, servers * a("vector_node_power_w") / 1e3,
                   servers * a("vector_node_price_usd"), rep, rag.qps, why)

