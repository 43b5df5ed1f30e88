"""nvidia-smi topo -m and nvidia-smi -q (Fabric)."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterwright.ingest.common import IngestError
from clusterwright.ingest.gpu import parse_gpu


def test_topo_matrix_nvlink_counts(data: Path) -> None:
    obs = parse_gpu(data / "topo_m_gpu00001.txt")
    [g] = obs.gpu_links
    assert g.host == "topo_m_gpu00001" and g.gpus == 4
    assert g.nvlinks[(0, 1)] == 18 and g.nvlinks[(2, 3)] == 12


def test_topo_from_pdsh(data: Path, tmp_path: Path) -> None:
    text = (data / "topo_m_gpu00001.txt").read_text().splitlines()
    p = tmp_path / "pdsh.txt"
    p.write_text("\n".join([f"gpu00001: {t}" for t in text] + [f"gpu00002: {t}" for t in text]))
    assert sorted(g.host for g in parse_gpu(p).gpu_links) == ["gpu00001", "gpu00002"]


def test_fabric_cliques_per_gpu(data: Path) -> None:
    obs = parse_gpu(data / "nvsmi_q.txt")
    by = {(f.host, f.gpu): f for f in obs.gpu_fabric}
    assert by[("gb-tray01", 1)].clique_id == "32766"
    assert by[("gb-tray01", 0)].cluster_uuid.startswith("6b0b7f3c")
    assert by[("gb-tray02", 0)].state == "In Progress"


def test_truncated_matrix(data: Path, tmp_path: Path) -> None:
    lines = (data / "topo_m_gpu00001.txt").read_text().splitlines()
    p = tmp_path / "gpu00009.txt"
    p.write_text("\n".join(lines[:3]) + "\n")
    with pytest.raises(IngestError, match=r"gpu00009\.txt:1: header names 4 GPUs but rows"):
        parse_gpu(p)
    p.write_text("nothing\n")
    with pytest.raises(IngestError, match="unknown format"):
        parse_gpu(p)
