"""SVG drawings: the aggregated topology and rack elevations, parsed back as XML."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from clusterwright.report import svg
from tests.report import blueprints


def test_large_fabric_is_aggregated_not_drawn_device_by_device() -> None:
    bp = blueprints.full(2048)  # 16,384 GPUs, 3 tiers, 4 pods, 32 SUs
    drawing = svg.topology_svg(bp["fabric"], bp["cluster"])
    assert drawing is not None
    root = ET.fromstring(drawing)
    # 256 leaves and 2,048 nodes, drawn as 4 pods x 2 SUs x (8 leaves + 1 node box)
    # + 4 spine boxes + 1 core box = 77 rectangles
    assert len(root.findall(".//rect")) == 77
    texts = " ".join(t.text or "" for t in root.iter("text"))
    for s in ("Core: 128 × sn5600", "Pod 4 spines: 64", "SU 32", "+6", "2,048 (16,384 GPUs)",
              "16,384 links × 400 Gb/s", "Spine tier: 256 switches in 4 pods"):
        assert s in texts, s


def test_rack_is_drawn_unit_by_unit_from_the_bottom() -> None:
    rack = {"name": "r1", "role": "compute", "units": 48, "kw_nameplate": 45.0,
            "kw_typical": 30.0,
            "devices": [{"name": "gpu00001", "role": "host", "u": 1, "height_u": 8},
                        {"name": "leaf-a", "role": "leaf", "u": 48, "height_u": 1,
                         "power_w": 1370.0}]}
    root = ET.fromstring(svg.rack_svg(rack, limit_kw=42.9))
    rects = {(r.findtext("title") or ""): r for r in root.iter("rect")}
    host = rects["gpu00001 (host) U1-U8"]
    leaf = rects["leaf-a (leaf) U48-U48"]
    # 11 px per U, rack top at y=44: U48 starts at 44, U1-U8 ends at the bottom (44 + 48*11)
    assert float(leaf.get("y") or 0) == pytest.approx(44.5)
    assert float(host.get("y") or 0) + float(host.get("height") or 0) == pytest.approx(
        44 + 48 * 11 - 0.5)
    texts = [t.text or "" for t in root.iter("text")]
    assert "leaf-a · 1.37 kW" in texts
    # 45 kW nameplate over a 42.9 kW limit: the header is red
    header = next(t for t in root.iter("text") if (t.text or "").startswith("30 kW typical"))
    assert header.get("fill") == "#b00020"


def test_representative_racks_cover_every_role_densest_first() -> None:
    racks = blueprints.full()["racks"]
    chosen = svg.representative_racks(racks, most=4)
    assert [r["role"] for r in chosen[:2]] == ["compute", "network"]
    assert chosen[0]["kw_nameplate"] == max(r["kw_nameplate"] for r in racks
                                            if r["role"] == "compute")
    assert len(chosen) == 4


def test_partly_filled_last_su_says_how_many_nodes_it_holds() -> None:
    bp = blueprints.full(8)  # 8 nodes in one 64-node SU (nodes_per_su = min(64, 8) = 8)
    bp["fabric"]["nodes_per_su"] = 64
    root = ET.fromstring(svg.topology_svg(bp["fabric"], bp["cluster"]) or "")
    texts = [t.text or "" for t in root.iter("text")]
    assert "8 of 64 nodes × 8 GPUs" in texts
    assert "1 SU × 8 leaves, 8 rails" in texts


def test_no_leaf_switches_means_no_drawing() -> None:
    assert svg.topology_svg({"leaf_switches": 0}, {}) is None
    assert svg.topology_svg({}, {}) is None
