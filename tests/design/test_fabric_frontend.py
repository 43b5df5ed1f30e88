"""Right-sized frontend below one scalable unit: the cheapest switch whose leaf pair holds every
host and storage target at a rate that still carries a host's storage reads on one port."""

from __future__ import annotations

import pytest

from clusterwright.catalog.registry import Catalog
from clusterwright.design.bom import plan_fabric
from clusterwright.design.fabric import Fabric
from clusterwright.design.fabric_frontend import host_read_gbps, storage_targets
from clusterwright.design.media import takes
from clusterwright.spec.fabric import FabricRequest


def _fab(catalog: Catalog, nodes: int, **kw: object) -> Fabric:
    return plan_fabric(FabricRequest(server="dgx-h100", nodes=nodes, **kw), catalog)


def test_small_pool_gets_a_cheaper_frontend_pair_than_the_nic_rate(catalog: Catalog) -> None:
    fab = _fab(catalog, 2)
    fe = fab.frontend
    nic = fab.server.frontend_nics.speed_gbps
    assert fe.speed_gbps < nic and fe.speed_gbps >= host_read_gbps(fab)
    assert fe.switch.price_usd is not None
    assert fe.switch.price_usd < catalog.switch("sn5600").price_usd  # type: ignore[operator]
    # The pair that the NIC rate picks is listed with what it costs more, from catalog prices.
    extra = 2 * (catalog.switch("sn5600").price_usd - fe.switch.price_usd)  # type: ignore[operator]
    assert f"sn5600 at the NIC's 400G costs ${extra:,.0f} more for the pair" in fe.why
    assert any(o == "sn5600 at 400G" for o, _ in fe.alternatives)
    # Every host and storage target still sits on both leaves of one tier.
    assert fab.frontend_shape is not None and fab.frontend_shape.tiers == 1
    assert fab.count("fe-leaf") == 2 and fab.count("fe-spine") == 0
    ends = {lk.a for lk in fab.links if lk.tier in ("fe-node-leaf", "fe-storage-leaf")}
    assert len(ends) == 2 + storage_targets(fab)


def test_a_full_su_keeps_the_nic_rate_frontend(catalog: Catalog) -> None:
    # 64 x DGX H100 on SN5600 is one full SU: the SuperPOD-like build is unchanged.
    fab = _fab(catalog, 64)
    assert fab.frontend.switch.id == "sn5600"
    assert fab.frontend.speed_gbps == fab.server.frontend_nics.speed_gbps
    assert fab.frontend.alternatives == ()


def test_an_asked_frontend_switch_is_kept(catalog: Catalog) -> None:
    fab = _fab(catalog, 2, frontend_switch="sn5600")
    assert (fab.frontend.switch.id, fab.frontend.speed_gbps) == ("sn5600", 400.0)


@pytest.mark.parametrize(("cage", "plug", "fits"), [
    ("QSFP112", "QSFP28", True), ("QSFP112", "QSFP56", True), ("QSFP56", "QSFP28", True),
    ("QSFP28", "QSFP112", False), ("QSFP28", "QSFP56", False), ("OSFP", "QSFP28", False),
    ("RJ45 + QSFP28", "QSFP28", True), ("OSFP", "OSFP", True),
])
def test_newer_qsfp_cages_take_older_plugs_only(cage: str, plug: str, fits: bool) -> None:
    assert takes(cage, plug) is fits
