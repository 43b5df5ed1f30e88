"""The storage tier's units on the frontend (``FabricRequest.storage_system``): each unit is a
device with its catalog ports, port rate, rack units and power, cabled, racked and on the
BOM as the storage plan bought it; a port no catalog part joins to the leaf is kept in the
cabling plan with no part and said so, never cabled as something else."""

from __future__ import annotations

from collections import Counter

import pytest
from pydantic import ValidationError

from clusterwright.catalog.registry import Catalog
from clusterwright.design.bom import plan_fabric
from clusterwright.design.fabric import Fabric, FabricError
from clusterwright.design.fabric_summary import fabric_summary
from clusterwright.design.fabric_tables import bom_rows, cabling_rows
from clusterwright.spec.fabric import FabricRequest


def _fab(catalog: Catalog, nodes: int, **kw: object) -> Fabric:
    return plan_fabric(FabricRequest(server="dgx-h100", nodes=nodes, **kw), catalog)


def _storage_links(fab: Fabric) -> list:  # type: ignore[type-arg]
    return fab.links_in("fe-storage-leaf")


def test_each_unit_is_wired_with_its_catalog_ports(catalog: Catalog) -> None:
    ddn = catalog.get("storage_systems", "ddn-ai400x2t")
    fab = _fab(catalog, 8, storage_system="ddn-ai400x2t", storage_units=2)
    units = [d for d in fab.devices if d.role == "storage"]
    assert [(d.name, d.part) for d in units] == [("storage-001", "ddn-ai400x2t"),
                                                  ("storage-002", "ddn-ai400x2t")]
    links = _storage_links(fab)
    assert len(links) == 2 * ddn.ports
    # Each unit's ports alternate between the pair's two leaves: half on each.
    per_leaf = Counter((lk.a, lk.b) for lk in links)
    assert sorted(per_leaf.values()) == [ddn.ports // 2] * 4
    assert {lk.speed_gbps for lk in links} == {min(ddn.port_gbps, fab.frontend.speed_gbps)}
    assert all(lk.cable for lk in links)  # every port cabled with a catalog part
    assert fabric_summary(fab).frontend.storage_ports == 2 * ddn.ports


def test_units_are_racked_powered_and_on_the_bom(catalog: Catalog) -> None:
    ddn = catalog.get("storage_systems", "ddn-ai400x2t")
    fab = _fab(catalog, 8, storage_system="ddn-ai400x2t", storage_units=2)
    for d in (d for d in fab.devices if d.role == "storage"):
        assert d.units == ddn.rack_units and d.rack
    rack = next(r for r in fab.racks if "storage-001" in r.devices)
    others = sum(catalog.switch(fab.by_name[n].part).max_power_w for n in rack.devices
                 if fab.by_name[n].role != "storage")
    stored = sum(1 for n in rack.devices if fab.by_name[n].role == "storage")
    assert rack.power_w == pytest.approx(others + stored * ddn.power_w)
    lines = [b for b in bom_rows(fab) if b["category"] == "storage"]
    assert lines == [pytest.approx({**lines[0], "part": "ddn-ai400x2t", "quantity": 2,
                                    "total_usd": 2 * ddn.price_usd})]
    # The fabric's own cost and power are the network's: the units are priced on their line.
    s = fabric_summary(fab)
    network = [b for b in bom_rows(fab) if b["category"] in ("switch", "transceiver", "cable")]
    assert s.cost_usd == pytest.approx(sum(b["total_usd"] or 0 for b in network))
    without = _fab(catalog, 8)
    assert all(b["category"] != "storage" for b in bom_rows(without))


def test_single_port_units_alternate_leaves(catalog: Catalog) -> None:
    fab = _fab(catalog, 8, storage_system="minio-nvme-node", storage_units=4)
    leaves = [lk.b for lk in sorted(_storage_links(fab), key=lambda lk: lk.a)]
    assert len(leaves) == 4 and len(set(leaves)) == 2
    assert leaves[0] != leaves[1] and leaves[0] == leaves[2]  # a, b, a, b
    assert any("single-homed" in n and "a leaf loss takes its share" in n for n in fab.notes)


def test_a_port_no_part_joins_is_kept_unpriced_and_said(catalog: Catalog) -> None:
    # 64 x DGX H100: a full SU keeps the SN5600 frontend at 400G, which the catalog has no
    # part to join to a 100 GbE (QSFP28) port.
    fab = _fab(catalog, 64, storage_system="minio-nvme-node", storage_units=4)
    assert fab.frontend.switch.id == "sn5600"
    links = _storage_links(fab)
    assert len(links) == 4 and all(lk.media == "none" and not lk.cable for lk in links)
    assert {lk.speed_gbps for lk in links} == {100.0}
    note = next(n for n in fab.notes if n.startswith("storage cabling not resolved"))
    assert "4 link(s)" in note and "sn5600" in note and "QSFP28" in note
    s = fabric_summary(fab)
    assert (s.frontend.storage_links_unresolved, s.frontend.storage_link_gbps) == (4, 100.0)
    row = next(r for r in cabling_rows(fab, catalog) if r["tier"] == "fe-storage-leaf")
    assert row["links"] == 4 and row["cables"] == 0 and row["media"] == {"none": 4}


def test_a_faster_port_runs_at_the_leaf_rate(catalog: Catalog) -> None:
    # 8 x DGX H100: the right-sized frontend pair runs below the NIC's 400G.
    fab = _fab(catalog, 8, storage_system="ieit-as13000-g7", storage_units=3)
    assert fab.frontend.speed_gbps < 400
    assert {lk.speed_gbps for lk in _storage_links(fab)} == {fab.frontend.speed_gbps}
    assert any(f"400 Gb/s ports run at the frontend leaves' {fab.frontend.speed_gbps:g}" in n
               for n in fab.notes)


def test_storage_request_errors_name_the_field(catalog: Catalog) -> None:
    with pytest.raises(ValidationError, match="together"):
        FabricRequest(server="dgx-h100", nodes=8, storage_system="ddn-ai400x2t")
    with pytest.raises(ValidationError, match="together"):
        FabricRequest(server="dgx-h100", nodes=8, storage_units=2)
    for system, words in (("nope", "unknown"), ("aws-s3-standard-prefix", "no network ports")):
        with pytest.raises(FabricError, match=words) as e:
            _fab(catalog, 8, storage_system=system, storage_units=1)
        assert e.value.field == "storage_system"


def test_more_storage_than_the_frontend_holds_names_the_units(catalog: Catalog) -> None:
    with pytest.raises(FabricError, match="frontend leaf positions") as e:
        _fab(catalog, 4, storage_system="ddn-ai400x2t", storage_units=100_000)
    assert e.value.field == "storage_units"


def test_hosts_read_a_large_tier_at_most_at_their_nics_rate(catalog: Catalog) -> None:
    # 10 TB/s of storage for 8 DGX H100: each GPU's share (156 GB/s) is more than its
    # frontend NICs carry (2 x 400G for 8 GPUs: 12.5 GB/s), so the links are sized for that.
    fab = _fab(catalog, 8, storage_tier_gbps=10_000.0)
    srv = fab.server
    nic = srv.frontend_nics.count * srv.frontend_nics.speed_gbps / 8 / srv.gpus
    assert fab.storage_read_gbps_per_gpu == pytest.approx(nic)
    assert fab.storage_aggregate_read_gbps_per_gpu == pytest.approx(10_000.0 / 64)
