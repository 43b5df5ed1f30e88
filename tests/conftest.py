from __future__ import annotations

from pathlib import Path

import pytest

from clusterwright.catalog.registry import Catalog, load_catalog
from clusterwright.catalog.schema import ModelArch

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = ROOT.parent / "shared" / "data"


@pytest.fixture(scope="session")
def catalog() -> Catalog:
    return load_catalog(env={})


def gpt(layers: int = 48, hidden: int = 6144, heads: int = 64, bias: bool = True) -> ModelArch:
    """A Megatron GPT shape (ffn = 4h, MHA, learned positions, vocab 51,200, tied head)."""
    return ModelArch(
        id="gpt-test",
        name="GPT test shape",
        source="Megatron GPT shapes (SC21, Korthikanti 2022)",
        layers=layers,
        hidden=hidden,
        heads=heads,
        ffn_hidden=4 * hidden,
        vocab=51200,
        max_seq_len=2048,
        position="learned",
        bias=bias,
        tied_embeddings=True,
    )
