from __future__ import annotations

import dataclasses

import pytest

from clusterwright.errors import ClusterwrightError
from clusterwright.lab import LabError, LabHost, LabLink, LabResult
from clusterwright.lab.spec import validate_spec
from tests.lab.fabric import leaf_spine_spec


def test_fixture_spec_is_valid() -> None:
    validate_spec(leaf_spine_spec())


def test_lab_error_is_a_clusterwright_error() -> None:
    assert issubclass(LabError, ClusterwrightError)


def test_duplicate_device_name_is_rejected() -> None:
    spec = leaf_spine_spec()
    hosts = [*spec.hosts, dataclasses.replace(spec.hosts[0], name="spine-1")]
    with pytest.raises(LabError, match=r"hosts\[4\]\.name: duplicate device name 'spine-1'"):
        validate_spec(dataclasses.replace(spec, hosts=hosts))


def test_interface_name_longer_than_ifnamsiz_is_rejected() -> None:
    spec = leaf_spine_spec()
    links = [LabLink("leaf-su1-r1", "a-very-long-ifname", "spine-1", "swp9"), *spec.links]
    with pytest.raises(LabError, match=r"links\[0\]\.a_if: 'a-very-long-ifname'"):
        validate_spec(dataclasses.replace(spec, links=links))


def test_link_to_unknown_device_is_rejected() -> None:
    spec = leaf_spine_spec()
    links = [*spec.links, LabLink("leaf-su1-r1", "swp40", "spine-9", "swp1")]
    with pytest.raises(LabError, match="unknown device 'spine-9'"):
        validate_spec(dataclasses.replace(spec, links=links))


def test_host_gateway_outside_its_subnet_is_rejected() -> None:
    spec = leaf_spine_spec()
    hosts = [LabHost("node-001", "eth0", "10.128.0.1/31", "10.128.0.2"), *spec.hosts[1:]]
    with pytest.raises(LabError, match=r"hosts\[0\]\.gateway: 10.128.0.2 is outside"):
        validate_spec(dataclasses.replace(spec, hosts=hosts))


def test_host_interface_must_be_cabled() -> None:
    spec = leaf_spine_spec()
    hosts = [dataclasses.replace(spec.hosts[0], interface="eth1"), *spec.hosts[1:]]
    with pytest.raises(LabError, match="node-001:eth1 is not an end of any link"):
        validate_spec(dataclasses.replace(spec, hosts=hosts))


def test_result_is_not_ok_when_any_check_failed() -> None:
    good = LabResult(8, 8, multipath_ok=True, ping_ok=True, converge_s=2.0, failures=[])
    assert good.ok()
    assert not dataclasses.replace(good, sessions_established=7).ok()
    assert not dataclasses.replace(good, multipath_ok=False).ok()
    assert not dataclasses.replace(good, ping_ok=False).ok()
    assert not dataclasses.replace(good, failures=["teardown: x"]).ok()
