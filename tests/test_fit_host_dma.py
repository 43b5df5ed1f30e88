"""scripts/fit_host_dma.py fits the catalog's host-link constants on the shipped copy rates."""

from __future__ import annotations

import pytest

from clusterwright.catalog.registry import load_catalog
from tests.scripts import load


def test_the_catalog_holds_what_the_fit_gives() -> None:
    t0, rate, rows = load("fit_host_dma").fit()
    cat = load_catalog(env={})
    assert cat.assumption("host_copy_latency_s") == pytest.approx(t0, rel=0.01)
    assert cat.assumption("pcie_host_read_efficiency") == pytest.approx(rate / 64e9, rel=0.01)
    # The fit follows the measured curve from 4 KiB to 16 MiB
    assert max(abs(p / m - 1) for _, m, p in rows) < 0.10
