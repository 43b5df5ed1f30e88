from __future__ import annotations

from pathlib import Path

import pytest

from clusterwright.catalog.registry import Catalog, load_catalog

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = ROOT.parent / "shared" / "data"


@pytest.fixture(scope="session")
def catalog() -> Catalog:
    return load_catalog(env={})
