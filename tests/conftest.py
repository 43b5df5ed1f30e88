from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import typer.main
import typer.testing

from clusterwright.catalog.registry import Catalog, load_catalog
from clusterwright.catalog.schema import ModelArch
from clusterwright.design.train import job_for
from clusterwright.model.train_job import Job

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = ROOT.parent / "shared" / "data"


# typer's CliRunner.invoke(app, ...) rebuilds the click command tree from the Typer app on
# every call (signatures, type hints of every command: 0.1-0.25 s a call here), which was
# most of an in-process invocation's time and of the fuzz suite's. The tree is fixed at
# import, so the tests build it once per app and reuse it; each invocation still parses
# its arguments and runs its command afresh, as a `clusterwright` process does.
_COMMANDS: dict[int, tuple[typer.Typer, Any]] = {}


def _cached_command(app: typer.Typer) -> Any:
    hit = _COMMANDS.get(id(app))
    if hit is None or hit[0] is not app:
        hit = _COMMANDS[id(app)] = (app, typer.main.get_command(app))
    return hit[1]


if hasattr(typer.testing, "_get_command"):  # typer's private name; without it, just slower
    typer.testing._get_command = _cached_command


HEAVY_MARKS = ("slow", "browser", "netlab")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Files with a slow, browser or netlab test first, then the rest; within each, files with
    more tests first (xdist's own order); tests keep their order within a file. pytest-xdist
    hands out whole files in this order (``--no-loadscope-reorder``), so the long few-test
    files start early and the two workers end on small files together."""
    count = Counter(item.path for item in items)
    heavy = {item.path for item in items
             if any(item.get_closest_marker(m) for m in HEAVY_MARKS)}
    first = {path: i for i, path in enumerate(dict.fromkeys(item.path for item in items))}
    items.sort(key=lambda item: (item.path not in heavy, -count[item.path], first[item.path]))


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


# Training jobs shared by the layout-evaluation tests (tests/design/test_train.py) and the
# layout-search tests (tests/plan/test_layouts.py).


@pytest.fixture(scope="module")
def llama70(catalog: Catalog) -> Job:
    return job_for(catalog, catalog.model("llama-3-70b"), "h100-sxm", 4096, 512)


@pytest.fixture(scope="module")
def llama8(catalog: Catalog) -> Job:
    return job_for(catalog, catalog.model("llama-3-8b"), "h100-sxm", 4096, 256)


@pytest.fixture(scope="module")
def gpt3(catalog: Catalog) -> Job:
    # Multi-head attention (96 KV heads): TP may exceed the 8-GPU domain here.
    return job_for(catalog, catalog.model("gpt3-175b"), "h100-sxm", 2048, 96)


@pytest.fixture(scope="module")
def mixtral(catalog: Catalog) -> Job:
    return job_for(catalog, catalog.model("mixtral-8x7b"), "h100-sxm", 4096, 96)
