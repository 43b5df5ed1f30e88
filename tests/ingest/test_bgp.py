"""FRR show bgp summary json (captured from FRR 8.4 in the lab)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clusterwright.ingest.bgp import parse_bgp
from clusterwright.ingest.common import IngestError


def test_summary_of_one_switch(data: Path, tmp_path: Path) -> None:
    p = tmp_path / "leaf-su001-r1.json"
    p.write_text((data / "bgp_leaf-su001-r1.json").read_text())
    [st] = parse_bgp(p).bgp
    assert st.device == "leaf-su001-r1" and st.asn == 4200000001
    assert st.router_id == "10.0.0.1"
    assert {p.address for p in st.peers} == {"10.64.0.0", "10.64.0.2"}
    assert all(p.state == "Established" and p.remote_as == 4200100001 for p in st.peers)


def test_collection_keyed_by_switch(data: Path, tmp_path: Path) -> None:
    one = json.loads((data / "bgp_leaf-su001-r1.json").read_text())
    p = tmp_path / "all.json"
    p.write_text(json.dumps({"leaf-a": one, "spine-z": {}}, indent=1))
    assert {s.device for s in parse_bgp(p).bgp} == {"leaf-a", "spine-z"}


def test_bad_summaries(tmp_path: Path) -> None:
    p = tmp_path / "x.json"
    p.write_text('{"ipv4Unicast": {"peers": ')
    with pytest.raises(IngestError, match=r"x\.json:1: truncated JSON"):
        parse_bgp(p)
    p.write_text('{"a": [1]}')
    with pytest.raises(IngestError, match="not `show bgp summary json`"):
        parse_bgp(p)
