"""A blueprint directory read back: cables, roles, groups, port names."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from clusterwright.catalog.registry import Catalog
from clusterwright.errors import InputError
from clusterwright.twin.blueprint import load_plan


def test_fabric_design_directory(eth_bp: Path, catalog: Catalog) -> None:
    plan = load_plan(eth_bp, catalog)
    rows = (eth_bp / "cabling.csv").read_text().splitlines()
    assert len(plan.links) == len(rows) - 1
    assert plan.devices["leaf-su001-r1"].role == "leaf"
    assert plan.devices["leaf-su001-r1"].asn == 4_200_000_001
    assert plan.groups["su"]["gpu00008"] == "su001"
    assert plan.protocol == "ethernet" and plan.gpus_per_host == 8
    # the DGX H100 port map: rail 1 is OSFP3P2, RDMA device mlx5_3 (user guide Table 6)
    assert plan.rail_of[("gpu00001", "osfp3p2")] == 1
    assert plan.host_alias[("gpu00001", "mlx5_3")] == "osfp3p2"
    assert plan.addresses[("leaf-su001-r1", "lo")] == "10.0.0.1/32"
    assert plan.workload is None


def test_infiniband_ports_are_cage_and_port(ib_bp: Path, catalog: Catalog) -> None:
    plan = load_plan(ib_bp, catalog)
    assert plan.protocol == "infiniband"
    assert plan.switch_ports_per_cage("leaf-su001-r1") == 2
    assert sorted(set(plan.groups["su"].values())) == ["su001", "su002"]


def test_only_some_networks(eth_bp: Path, catalog: Catalog) -> None:
    plan = load_plan(eth_bp, catalog)
    n = len(plan.links)
    plan.only(("backend",))
    assert {lk.network for lk in plan.links} == {"backend"} and len(plan.links) < n
    assert [lk.index for lk in plan.links] == list(range(len(plan.links)))
    assert ("gpu00001", "fe0") in plan.ignored_ports


def test_not_a_blueprint(tmp_path: Path, catalog: Catalog) -> None:
    with pytest.raises(InputError, match="not a directory"):
        load_plan(tmp_path / "nope", catalog)
    with pytest.raises(InputError, match=r"no cabling\.csv"):
        load_plan(tmp_path, catalog)


def test_truncated_cabling_plan_names_its_line(eth_bp: Path, tmp_path: Path,
                                               catalog: Catalog) -> None:
    bp = tmp_path / "bp"
    shutil.copytree(eth_bp, bp)
    lines = (bp / "cabling.csv").read_text().splitlines()
    (bp / "cabling.csv").write_text("\n".join([*lines[:5], lines[5][:40]]) + "\n")
    with pytest.raises(InputError, match=r"cabling\.csv:6: \d+ fields, the header has 18"):
        load_plan(bp, catalog)
    (bp / "cabling.csv").write_text("a,b\n1,2\n")
    with pytest.raises(InputError, match=r"cabling\.csv:1: not a cabling plan"):
        load_plan(bp, catalog)
