"""kubectl get nodes -o json."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterwright.ingest.common import IngestError
from clusterwright.ingest.kube import parse_kube


def test_labels_become_memberships_and_gpus_and_readiness_are_read(data: Path) -> None:
    obs = parse_kube(data / "nodes.json")
    labels = {(m.node, m.level): m.group for m in obs.memberships}
    assert labels[("gpu00001", "label:clusterwright.io/su")] == "su001"
    assert labels[("gpu00002", "label:network.topology.nvidia.com/block")] == "s2"
    st = {s.node: s for s in obs.node_states}
    assert st["gpu00001"].available and st["gpu00001"].gpus == 8
    assert not st["gpu00002"].available and st["gpu00002"].gpus == 7
    assert "SchedulingDisabled" in st["gpu00002"].state
    assert st["gpu00002"].line > st["gpu00001"].line


def test_bad_kubectl_output(tmp_path: Path) -> None:
    p = tmp_path / "n.json"
    p.write_text('{"items": [{"metadata": {"name": "a"}}, {"metadata": {}}]}')
    with pytest.raises(IngestError, match=r"items\[1\] has no metadata.name"):
        parse_kube(p)
    p.write_text('{"items": [')
    with pytest.raises(IngestError, match=r"n\.json:1: truncated JSON"):
        parse_kube(p)
    p.write_text('{"kind": "Pod"}')
    with pytest.raises(IngestError, match="not `kubectl get nodes -o json`"):
        parse_kube(p)
