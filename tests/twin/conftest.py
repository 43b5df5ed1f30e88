"""Blueprint directories the twin tests compare against, written once per session."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterwright.catalog.registry import Catalog
from clusterwright.design.bom import plan_fabric
from clusterwright.export.fabric import write_fabric
from clusterwright.spec.fabric import FabricRequest
from clusterwright.twin.blueprint import Plan, load_plan


def _design(tmp: Path, cat: Catalog, **kw: object) -> Path:
    out = tmp / "bp"
    write_fabric(plan_fabric(FabricRequest(**kw), cat), out)  # type: ignore[arg-type]
    return out


@pytest.fixture(scope="session")
def eth_bp(tmp_path_factory: pytest.TempPathFactory, catalog: Catalog) -> Path:
    """8 x DGX H100 on a routed RoCE backend (SN5600, two tiers)."""
    return _design(tmp_path_factory.mktemp("eth"), catalog, server="dgx-h100", nodes=8,
                   switch="sn5600", tiers=2)


@pytest.fixture(scope="session")
def ib_bp(tmp_path_factory: pytest.TempPathFactory, catalog: Catalog) -> Path:
    """64 x DGX H100 on InfiniBand (QM9700): two scalable units of 32."""
    return _design(tmp_path_factory.mktemp("ib"), catalog, server="dgx-h100", nodes=64,
                   switch="qm9700")


@pytest.fixture
def eth_plan(eth_bp: Path, catalog: Catalog) -> Plan:
    return load_plan(eth_bp, catalog)


@pytest.fixture
def ib_plan(ib_bp: Path, catalog: Catalog) -> Plan:
    return load_plan(ib_bp, catalog)
