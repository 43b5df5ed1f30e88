"""``clusterwright ops vector``: memory and disk of a vector index (HNSW, IVF-PQ, DiskANN) by
every published formula, servers for its replicas, and the time to embed the corpus."""

from __future__ import annotations

from typing import Any

import typer

from clusterwright.cli import limits as lim
from clusterwright.cli.common import console, fail, run_command, state, user_errors

# The options each index reads (the others would be ignored)
INDEX_OPTIONS = {"hnsw": ("--m",), "diskann": ("--degree",),
                 "ivf-pq": ("--pq-m", "--nbits", "--nlist")}

FLAGS = {"index": "--index", "precision": "--precision", "m": "--m", "degree": "--degree",
         "pq_m": "--pq-m", "nbits": "--nbits", "nlist": "--nlist", "vectors": "--vectors",
         "dim": "--dim", "embed_params": "--embed-params", "gpus": "--gpus", "gpu": "--gpu"}


def _render(d: dict[str, Any]) -> None:
    mem = d["memory_gb"]
    p = ", ".join(f"{k} {v:,}" for k, v in d["params"].items())
    console.print(
        f"[bold]{d['index']}[/] index of {d['vectors']:,.0f} x {d['dim']}-d {d['precision']} "
        f"vectors ({p}): raw {d['raw_gb']:,.1f} GB; memory {mem['low']:,.1f}-{mem['high']:,.1f} GB "
        f"per replica (the sources differ {mem['spread']:.2f}x); disk {d['disk_gb']:,.1f} GB")
    for e in d["estimates"]:
        console.print(f"  {e['source']}: {e['memory_bytes'] / 1e9:,.1f} GB memory, "
                      f"{e['disk_bytes'] / 1e9:,.1f} GB disk ({e['formula']})")
    s = d.get("servers")
    if s:
        console.print(f"  {d['replicas']} replica(s) on servers of {s['node_memory_gb']:g} GB: "
                      f"{s['low']}-{s['high']} servers")
    e = d.get("embedding")
    if e:
        console.print(f"  embedding: {e['flops']:.3g} FLOPs, {e['hours']:,.2f} h on {e['gpus']} x "
                      f"{e['gpu']} at {100 * e['efficiency']:.0f} % of the {e['dtype']} peak "
                      f"({e['stack']}; a lower bound)")


def vector(
    ctx: typer.Context,
    vectors: float = typer.Option(..., "--vectors", help="Vectors in the index."),
    dim: int = typer.Option(..., "--dim", help="Vector dimension."),
    index: str = typer.Option("hnsw", "--index", help="hnsw, ivf-pq or diskann."),
    precision: str = typer.Option("fp32", "--precision", help="fp32, fp16, bf16 or int8."),
    m: int | None = typer.Option(None, "--m", help="HNSW neighbours per layer (M; default "
                                 "16)."),
    degree: int | None = typer.Option(None, "--degree", help="DiskANN graph degree (R; "
                                      "default 56)."),
    pq_m: int | None = typer.Option(None, "--pq-m", help="IVF-PQ sub-quantizers (default: "
                                    "the largest divisor of --dim up to 64)."),
    nbits: int | None = typer.Option(None, "--nbits", help="IVF-PQ bits per sub-quantizer "
                                     "code (default 8)."),
    nlist: int | None = typer.Option(None, "--nlist", help="IVF lists (default: sqrt of "
                                     "--vectors)."),
    replicas: int = typer.Option(1, "--replicas", help="Copies of the index served."),
    node_memory_gb: float | None = typer.Option(
        None, "--node-memory-gb", help="Memory of one server: how many servers hold it."),
    corpus_tokens: float | None = typer.Option(
        None, "--corpus-tokens", help="Tokens of the corpus to embed."),
    embed_params: float | None = typer.Option(
        None, "--embed-params", help="Parameters of the embedding model."),
    gpu: str = typer.Option("h100-sxm", "--gpu", help="GPU catalog id that embeds."),
    gpus: int = typer.Option(1, "--gpus", help="GPUs that embed."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Memory and disk of a vector index by FAISS's, Milvus's, Qdrant's and ScyllaDB's
    formulas (the spread shown), servers for its replicas, and the time to embed a corpus."""
    from clusterwright.plan.vector import VectorRequest, vector_report

    lim.nonempty(("--index", index), ("--precision", precision), ("--gpu", gpu))
    lim.within(("--vectors", vectors, lim.VECTORS), ("--dim", dim, lim.VECTOR_DIM),
               ("--m", m, lim.HNSW_M), ("--degree", degree, lim.GRAPH_DEGREE),
               ("--pq-m", pq_m, lim.VECTOR_DIM), ("--nbits", nbits, lim.PQ_NBITS),
               ("--nlist", nlist, lim.NLIST), ("--replicas", replicas, lim.INDEX_REPLICAS),
               ("--node-memory-gb", node_memory_gb, lim.NODE_MEMORY_GB),
               ("--corpus-tokens", corpus_tokens, lim.CORPUS_TOKENS),
               ("--embed-params", embed_params, lim.EMBED_PARAMS), ("--gpus", gpus, lim.GPUS))
    # An option of another index would be ignored without a word: refuse it, naming it.
    for flag, value, owner in (("--m", m, "hnsw"), ("--degree", degree, "diskann"),
                               ("--pq-m", pq_m, "ivf-pq"), ("--nbits", nbits, "ivf-pq"),
                               ("--nlist", nlist, "ivf-pq")):
        if value is not None and index in INDEX_OPTIONS and index != owner:
            fail(f"{flag}: applies to the {owner} index, not --index {index} (its options: "
                 f"{', '.join(INDEX_OPTIONS[index])})")
    with user_errors():
        cat = state(ctx).catalog()
    req = VectorRequest(vectors=vectors, dim=dim, index=index, precision=precision,
                        m=16 if m is None else m, degree=56 if degree is None else degree,
                        pq_m=pq_m, nbits=8 if nbits is None else nbits, nlist=nlist,
                        replicas=replicas,
                        node_memory_gb=node_memory_gb, corpus_tokens=corpus_tokens,
                        embed_params=embed_params, gpu=gpu, gpus=gpus)

    def payload() -> dict[str, Any]:
        with user_errors(FLAGS, name_flags=True):
            return vector_report(cat, req)

    run_command(as_json, payload, _render)
