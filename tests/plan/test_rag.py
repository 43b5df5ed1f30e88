"""A scenario's retrieval workload (rag:): its vector index sized next to the cluster from the
memory formulas ops vector uses, the index servers' power and price carried with the storage
tier, and bad input exiting 2 with the field and its line (examples/serve-rag-70b.yaml)."""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path

import pytest
from typer.testing import CliRunner

from clusterwright.catalog.registry import Catalog, load_catalog
from clusterwright.cli.main import app
from clusterwright.design.blueprint import Blueprint
from clusterwright.plan.rag import plan_rag
from clusterwright.plan.scenario import plan_scenario
from clusterwright.spec.scenario import loads_scenario
from clusterwright.spec.scenario_rag import RagSection

ROOT = Path(__file__).resolve().parents[2]
TEXT = (ROOT / "examples" / "serve-rag-70b.yaml").read_text()


@functools.cache
def _catalog() -> Catalog:
    return load_catalog()


@functools.cache
def _example() -> Blueprint:
    sc, _ = loads_scenario(TEXT)
    return plan_scenario(sc, _catalog(), quick=True)


def test_the_index_is_sized_by_memory_at_the_high_end_of_the_formulas() -> None:
    # 2e11 tokens / 512 = 390.6 M vectors of 1,024 fp32 dims: 1.6 TB raw; HNSW M=16 needs
    # 1,650 GB (FAISS) to 2,400 GB (Qdrant x1.5) per replica; two replicas at the high end on
    # 768 GB servers: ceil(4,800 / 768) = 7.
    p = plan_rag(_catalog(), RagSection(corpus_tokens=2e11, dim=1024, replicas=2), "h100-sxm",
                 16)
    assert p.index["vectors"] == pytest.approx(2e11 / 512)
    assert p.index["memory_gb"]["low"] == pytest.approx(1650.0)
    assert p.index["memory_gb"]["high"] == pytest.approx(2400.0)
    assert p.servers == 7
    assert p.power_kw == pytest.approx(7 * 0.7) and p.price_usd == pytest.approx(7 * 35_000)
    # A tiny index still gets one server per replica.
    small = plan_rag(_catalog(), RagSection(vectors=1e6, dim=384, replicas=3), "h100-sxm", 8)
    assert small.servers == 3 and "one server per replica" in small.why


def test_the_blueprint_carries_the_index_and_its_cost_and_power() -> None:
    bp = _example()
    rag = bp.rag
    assert rag is not None and rag["servers"] == 7
    assert rag["servers_by_memory"] == {"node_memory_gb": 768.0, "low": 5, "high": 7}
    assert rag["embedding"]["hours"] > 0 and "not sized for" in rag["qps_note"]
    assert bp.to_dict()["rag"] == rag and bp.scenario["rag"]["dim"] == 1024
    # The index servers are priced and powered with the storage tier.
    st = bp.storage
    assert st is not None and bp.tco is not None
    assert bp.tco["capex_by_category_usd"]["storage"] == pytest.approx(
        st["price_usd"] + rag["price_usd"])
    assert any(d["area"] == "rag" for d in bp.decisions)


def test_without_rag_the_blueprint_has_no_rag_key() -> None:
    sc, _ = loads_scenario(TEXT.split("rag:")[0])
    assert sc.rag is None
    bare = dataclasses.replace(_example(), rag=None)
    assert "rag" not in bare.to_dict()
    assert Blueprint.from_dict(bare.to_dict()).rag is None


@pytest.mark.parametrize(("old", "new", "field"), [
    ("  dim: 1024", "  dim: 40000", "rag.dim"),
    ("  corpus_tokens: 2.0e11", "  corpus_tokens: 2.0e11\n  vectors: 1.0e6", "rag.vectors"),
    ('  index: "hnsw"', '  index: "flat"', "rag.index"),
    ("  replicas: 2", "  replicas: 0", "rag.replicas"),
    ("  qps: 20\n  embed", "  qps: -1\n  embed", "rag.qps"),
])
def test_bad_rag_input_exits_2_naming_the_field(old: str, new: str, field: str,
                                                tmp_path: Path) -> None:
    path = tmp_path / "rag.yaml"
    assert old in TEXT
    path.write_text(TEXT.replace(old, new))
    r = CliRunner().invoke(app, ["check", str(path)])
    assert r.exit_code == 2, r.output
    assert field in r.output and "line" in r.output
