"""Slurm topology.conf / topology.yaml, scontrol show node and sinfo."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterwright.export.hostlist import expand
from clusterwright.ingest.common import IngestError
from clusterwright.ingest.slurm import detect, parse_slurm


def test_hostlist_expressions() -> None:
    assert expand("gpu[00001-00003,00007],login1") == [
        "gpu00001", "gpu00002", "gpu00003", "gpu00007", "login1"]
    assert expand("r[1-2]n[1-2]") == ["r1n1", "r1n2", "r2n1", "r2n2"]
    for bad in ("gpu[1-", "gpu[3-1]", "gpu[a-b]", "a,,b", "gpu[1-99999999]"):
        with pytest.raises(ValueError):
            expand(bad)


def test_topology_conf_tree_with_continuation_lines(data: Path) -> None:
    obs = parse_slurm(data / "topology.conf")
    groups = {m.node: m.group for m in obs.memberships if m.level == "tree"}
    assert groups == {"gpu00001": "su001", "gpu00002": "su001", "gpu00003": "su001",
                      "gpu00004": "su002", "gpu00005": "su002", "gpu00006": "su002"}
    assert next(m.line for m in obs.memberships if m.node == "gpu00006") == 3


def test_topology_yaml_tree_and_blocks(data: Path) -> None:
    obs = parse_slurm(data / "topology.yaml")
    tree = {m.node: m.group for m in obs.memberships if m.level == "tree"}
    block = {m.node: m.group for m in obs.memberships if m.level == "block"}
    assert tree["gpu00004"] == "su002" and block["gpu00004"] == "b1"
    assert block["gpu00003"] == "b2"


def test_scontrol_states_reasons_and_gres(data: Path) -> None:
    obs = parse_slurm(data / "scontrol_show_node.txt")
    st = {s.node: s for s in obs.node_states}
    assert st["gpu00001"].available and st["gpu00001"].gpus == 8
    assert not st["gpu00002"].available and st["gpu00002"].gpus == 7
    assert st["gpu00002"].reason.startswith("gpu xid 79")
    assert not st["gpu00003"].available and st["gpu00003"].state == "DOWN*"
    assert st["gpu00002"].line == 17


def test_sinfo_default_and_node_oriented(data: Path) -> None:
    obs = parse_slurm(data / "sinfo.txt")
    avail = {s.node: s.available for s in obs.node_states}
    assert avail == {"gpu00002": False, "gpu00005": False, "gpu00003": False,
                     "gpu00001": True, "gpu00004": True, "gpu00006": True}
    obs = parse_slurm(data / "sinfo_N.txt")
    assert {s.node: s.available for s in obs.node_states} == {"gpu00001": True,
                                                              "gpu00002": False}


def test_formats_are_told_apart() -> None:
    assert detect("SwitchName=s0 Nodes=a[1-2]\n") == "topology.conf"
    assert detect("- topology: t\n  flat: true\n") == "topology.yaml"
    assert detect("NodeName=a State=IDLE\n") == "scontrol"
    assert detect("NODELIST NODES PARTITION STATE\n") == "sinfo"
    assert detect("hello\n") == ""


def test_bad_input_names_file_and_line(tmp_path: Path) -> None:
    p = tmp_path / "topology.conf"
    p.write_text("SwitchName=s0 Nodes=gpu[1-2\n")
    with pytest.raises(IngestError, match=r"topology\.conf:1: hostlist .*unbalanced"):
        parse_slurm(p)
    p.write_text("hello there\n")
    with pytest.raises(IngestError, match=r"topology\.conf:1: unknown format"):
        parse_slurm(p)
    p.write_text("PARTITION AVAIL TIMELIMIT NODES STATE NODELIST\nbatch up inf 2\n")
    with pytest.raises(IngestError, match=r"topology\.conf:2: 4 columns"):
        parse_slurm(p)
    p.write_text("- topology: t\n  tree:\n    switches:\n      - nodes: a[1-2]\n")
    with pytest.raises(IngestError, match=r"topology\.conf:4: each switch needs"):
        parse_slurm(p)
