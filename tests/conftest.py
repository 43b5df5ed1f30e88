from __future__ import annotations

from pathlib import Path

import pytest

from clusterwright.catalog.registry import Catalog, load_catalog
from clusterwright.catalog.schema import ModelArch
from clusterwright.design.train import job_for
from clusterwright.model.train_job import Job

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = ROOT.parent / "shared" / "data"


# Under pytest-xdist (`-n auto --dist loadgroup`, the README's test command) a test module
# runs on one worker, so its module-scoped fixtures (a plan, a validate run, a browser) are
# built once, not once per worker. Tests that start real components run on one worker per
# kind: FRR/lldpd labs share the host's network namespaces and FRR's run directory, Chromium
# instances compete for the same two cores, and two local Ray instances would both claim
# Ray's default ports. The modules below are many independent slow cases with cheap fixtures:
# their tests spread over the workers.
_SERIAL_GROUPS = ("netlab", "browser")
_SPREAD = {"tests/fuzz/test_files.py", "tests/fuzz/test_cli_flags.py",
           "tests/fuzz/test_scenario_fields.py"}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        module = item.nodeid.split("::", 1)[0]
        group = next((g for g in _SERIAL_GROUPS if item.get_closest_marker(g)), None)
        if group is None and "ray" in item.nodeid.lower():
            group = "ray"
        if group is None and module not in _SPREAD:
            group = module
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))


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
