"""The lab built from a generated design: its spec (always) and its run on FRR (netlab)."""

from __future__ import annotations

import ipaddress

import pytest

from clusterwright.catalog.registry import Catalog
from clusterwright.errors import ClusterwrightError
from clusterwright.export.fabric import render_frr, switch_views
from clusterwright.lab import LabError, preflight, run_lab
from clusterwright.lab.fabric_lab import build_lab, lab_request


def test_lab_design_has_asked_leaves_spines_and_one_host_each(catalog: Catalog) -> None:
    fab, spec = build_lab(catalog, leaves=4, spines=2)
    assert sum(d.role == "leaf" for d in fab.devices) == 4
    assert sum(d.role == "spine" for d in fab.devices) == 2
    assert len(spec.hosts) == 4
    assert spec.sessions_expected == 8
    # every leaf checks every other leaf's block over both spines
    assert len(spec.route_checks) == 4 * 3
    assert {c.min_nexthops for c in spec.route_checks} == {2}
    assert len(spec.pings) == 4 * 3


def test_lab_configs_are_the_generated_configs_unmodified(catalog: Catalog) -> None:
    fab, spec = build_lab(catalog, leaves=3, spines=2)
    generated = {v.name: render_frr(fab, v) for v in switch_views(fab, networks=("backend",))}
    assert {s.name: s.frr_config for s in spec.switches} == generated


def test_lab_hosts_sit_on_their_leafs_31(catalog: Catalog) -> None:
    _, spec = build_lab(catalog, leaves=3, spines=1)
    for h in spec.hosts:
        net = ipaddress.IPv4Interface(h.address).network
        assert net.prefixlen == 31
        assert ipaddress.IPv4Address(h.gateway) in net
        assert str(ipaddress.IPv4Interface(h.address).ip) != h.gateway


def test_lab_refuses_fewer_than_two_leaves() -> None:
    with pytest.raises(LabError, match="--leaves"):
        lab_request(1, 2)


def test_lab_refuses_infiniband_switch(catalog: Catalog) -> None:
    with pytest.raises(ClusterwrightError, match=r"speaks infiniband, but `protocol` is ethernet"):
        build_lab(catalog, leaves=2, spines=1, switch="qm9700")


def _lab_ready() -> str | None:
    try:
        preflight()
    except LabError as e:
        return str(e)
    return None


@pytest.mark.netlab
def test_generated_fabric_converges_on_frr(catalog: Catalog) -> None:
    reason = _lab_ready()
    if reason:
        pytest.skip(reason)
    _, spec = build_lab(catalog, leaves=4, spines=2)
    result = run_lab(spec, timeout_s=60)
    assert result.failures == []
    assert result.sessions_established == result.sessions_expected == 8
    assert result.multipath_ok and result.ping_ok and result.ok()


def test_three_tier_lab_design(catalog: Catalog) -> None:
    fab, spec = build_lab(catalog, leaves=4, spines=2, pods=2)
    roles = [d.role for d in fab.devices]
    assert fab.shape.tiers == 3
    assert roles.count("leaf") == 4 and roles.count("spine") == 4 and roles.count("core") == 2
    # leaf-spine: 4 leaves x 2 pod spines; spine-core: 4 spines x 1 uplink
    assert spec.sessions_expected == 8 + 4
    assert {c.min_nexthops for c in spec.route_checks} == {2}
    asns = {d.role: set() for d in fab.devices if d.asn is not None and d.role != "fe-leaf"}
    for d in fab.devices:
        if d.asn is not None and d.role in asns:
            asns[d.role].add(d.asn)
    assert len(asns["spine"]) == 2  # one per pod
    assert len(asns["core"]) == 1


def test_lab_pods_must_divide_leaves() -> None:
    with pytest.raises(LabError, match="--pods"):
        lab_request(4, 2, pods=3)


@pytest.mark.netlab
def test_generated_three_tier_fabric_converges_on_frr(catalog: Catalog) -> None:
    reason = _lab_ready()
    if reason:
        pytest.skip(reason)
    _, spec = build_lab(catalog, leaves=4, spines=2, pods=2)
    result = run_lab(spec, timeout_s=60)
    assert result.failures == []
    assert result.sessions_established == result.sessions_expected == 12
    assert result.ok()
