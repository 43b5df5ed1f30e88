"""The directed-link network of a designed fabric: capacities, cable names, the hash that
spreads flows. (Routing and rates under load are tested with the simulator, test_network.py.)

The fabric: three leaves of one DGX H100 each under one spine, ``rails=1`` (only NIC 0 of
each host is cabled), so every network link is a 400 Gb/s NIC or leaf-spine link.
"""

from __future__ import annotations

import pytest

from clusterwright.catalog.registry import Catalog
from clusterwright.design.fabric import design_fabric
from clusterwright.sim.engine import SimError
from clusterwright.sim.fabric_net import FabricNet, mix64
from clusterwright.spec.fabric import FabricRequest


@pytest.fixture(scope="module")
def net3(catalog: Catalog) -> FabricNet:
    fab = design_fabric(FabricRequest(server="dgx-h100", nodes=3, switch="sn5600", rails=1,
                                      su_hosts=1, leaf_uplinks=1, tiers=2), catalog)
    return FabricNet(fab, catalog)


def cap(net: FabricNet) -> float:
    """Capacity of host 0's NIC 0 towards its leaf, bytes/s."""
    return float(net.cap0[net.nic_up["gpu00001/nic0"][0][1]])


def test_capacities_are_line_rates_times_the_stacks_fractions(net3: FabricNet) -> None:
    assert cap(net3) == pytest.approx(400e9 / 8 * net3.stack.nic_busbw_fraction)
    assert net3.nvlink_bps == pytest.approx(450e9 * net3.stack.scale_up_busbw_fraction)
    assert net3.cap0[net3.gpu_to_nic[0]] > cap(net3)  # PCIe is not the bottleneck
    tiers = set(net3.tiers)
    assert tiers == {"nvlink", "pcie", "node-leaf", "leaf-spine"}
    # Every cable is two directed links.
    for name in net3.names:
        a, b = name.split("->")
        assert f"{b}->{a}" in net3.index


def test_cable_names_work_either_way_round(net3: FabricNet) -> None:
    fwd = net3.links_of("gpu00001/nic0->leaf-su001-r1")
    rev = net3.links_of("leaf-su001-r1->gpu00001/nic0")
    assert sorted(fwd) == sorted(rev)
    assert {net3.names[i] for i in fwd} == {
        "gpu00001/nic0->leaf-su001-r1", "leaf-su001-r1->gpu00001/nic0"}


def test_an_unknown_device_or_link_raises_naming_it(net3: FabricNet) -> None:
    with pytest.raises(SimError, match="nosuchswitch"):
        net3.links_of("nosuchswitch")
    with pytest.raises(SimError, match="spine-001->nowhere"):
        net3.links_of("spine-001->nowhere")




def test_mix64_is_stable_and_spreads_consecutive_keys() -> None:
    assert mix64(0) == mix64(0) == 0xE220A8397B1DCDAF  # SplitMix64 of 0 (Vigna's reference)
    buckets = [mix64(k) % 8 for k in range(8000)]
    counts = [buckets.count(b) for b in range(8)]
    assert min(counts) > 900 and max(counts) < 1100  # ECMP over 8 paths: about 1,000 each
