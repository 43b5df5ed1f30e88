"""Out-of-band management right-sized: one management switch and no aggregation layer when
its ports hold every BMC and switch port of a cluster below one scalable unit."""

from __future__ import annotations

from clusterwright.catalog.registry import Catalog
from clusterwright.design.bom import plan_fabric
from clusterwright.design.fabric import Fabric
from clusterwright.spec.fabric import FabricRequest


def _fab(catalog: Catalog, nodes: int, **kw: object) -> Fabric:
    return plan_fabric(FabricRequest(server="dgx-h100", nodes=nodes, **kw), catalog)


def test_small_cluster_has_one_oob_switch_and_no_aggregation(catalog: Catalog) -> None:
    fab = _fab(catalog, 2)
    assert (fab.count("oob-leaf"), fab.count("oob-spine")) == (1, 0)
    assert not fab.links_in("oob-leaf-spine")
    ports = fab.links_in("oob-node-leaf")
    # Every host BMC and every switch's management port is on it.
    wanted = {h.name for h in fab.hosts} | {d.name for d in fab.switches()
                                            if d.role != "oob-leaf"}
    assert {lk.a for lk in ports} == wanted
    assert any(n.startswith("out-of-band right-sized") for n in fab.notes)


def test_full_su_keeps_per_row_switches_and_the_aggregation_pair(catalog: Catalog) -> None:
    fab = _fab(catalog, 64)
    assert fab.count("oob-leaf") > 1 and fab.count("oob-spine") == 2
    assert len(fab.links_in("oob-leaf-spine")) == 2 * fab.count("oob-leaf")
