"""SVG drawings of a designed fabric, drawn from the blueprint's ``fabric`` section (the
designer's ``Fabric`` summarized once by ``design/fabric_tables.py``), never by hand:

- ``su_svg``: one scalable unit in detail, as the DGX SuperPOD reference architectures draw
  it: its nodes with one NIC per rail, the rail leaves, the spines of its pod (and the core
  above them on three tiers), with link, cable and optic counts per tier;
- ``networks_svg``: the frontend (storage, in-band) and out-of-band networks, tier by tier,
  with the switch counts and the links, media and optics between tiers.

Labels are laid out, not hoped for: every text is fitted to the width it is given (shortened
with an ellipsis rather than drawn past its box), and the right-hand column wraps its lines.
The browser test checks that no two text boxes intersect and none leaves its SVG.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from typing import Any

from clusterwright.report.fmt import fmt, mapping, num, records
from clusterwright.report.svg import (
    RAIL_COLORS,
    TIER_FILL,
    _line,
    _rect,
    _svg,
    _text,
    _to_str,
)

# Advance widths of the fonts the pages use (DejaVu Sans, the widest of the system-ui fallbacks
# on Linux): about 0.62 em per character, 0.70 em bold. Fitting to these never overflows.
EM, EM_BOLD = 0.62, 0.70
PROTOCOL_NAMES = {"infiniband": "InfiniBand", "ethernet": "Ethernet (RoCE)"}


def text_width(s: str, size: float, bold: bool = False) -> float:
    """Upper estimate of the drawn width of ``s`` at ``size`` px."""
    return len(s) * size * (EM_BOLD if bold else EM)


def fit(s: str, width: float, size: float, bold: bool = False) -> str:
    """``s`` shortened with an ellipsis so that it fits ``width`` px ("" if nothing fits)."""
    if text_width(s, size, bold) <= width:
        return s
    n = int(width / (size * (EM_BOLD if bold else EM))) - 1
    return s[:n].rstrip() + "…" if n >= 2 else ""


def wrap(s: str, width: float, size: float, bold: bool = False) -> list[str]:
    """``s`` broken at spaces into lines that fit ``width`` px (a word too long is fitted)."""
    lines: list[str] = []
    cur = ""
    for word in s.split():
        trial = f"{cur} {word}".strip()
        if text_width(trial, size, bold) <= width or not cur:
            cur = trial
        else:
            lines.append(cur)
            cur = word
    if cur:
        lines.append(cur)
    return [fit(line, width, size, bold) for line in lines]


def protocol_name(fabric: Mapping[str, Any]) -> str:
    """The backend's protocol as an architect names it: InfiniBand or Ethernet (RoCE)."""
    p = str(fabric.get("protocol") or "")
    return PROTOCOL_NAMES.get(p, p or "unknown protocol")


def _tier(fabric: Mapping[str, Any], tier: str) -> Mapping[str, Any]:
    return next((r for r in records(fabric.get("cabling")) if r.get("tier") == tier), {})


def _media_text(row: Mapping[str, Any]) -> str:
    """"1,024 cables (optics), 1,024 optics" for one tier of the cabling table."""
    if not row:
        return ""
    media = mapping(row.get("media"))
    kinds = ", ".join(f"{fmt(v)} {k}" for k, v in media.items()) if len(media) > 1 else \
        next(iter(media), "")
    out = f"{fmt(row.get('cables'))} cables ({kinds})"
    if num(row.get("transceivers")):
        out += f", {fmt(row.get('transceivers'))} optics"
    return out


def _shown(n: int, most: int) -> list[int | None]:
    if n <= most:
        return list(range(n))
    return [*range(most - 2), None, n - 1]


class _Column:
    """The right-hand column: per row a bold title and wrapped detail lines, centred on the
    row's y and kept clear of the row above."""

    def __init__(self, g: ET.Element, x: float, width: float) -> None:
        self.g, self.x, self.width = g, x, width
        self.bottom = 0.0

    def add(self, cy: float, title: str, details: Sequence[str]) -> float:
        lines = [(t, 12.0, True) for t in wrap(title, self.width, 12, True)]
        for d in details:
            if d:
                lines += [(t, 11.0, False) for t in wrap(d, self.width, 11)]
        step = 15.0
        top = max(cy - step * len(lines) / 2 + 11, self.bottom + 13)
        y = top
        for t, size, bold in lines:
            _text(self.g, self.x, y, t, anchor="start", size=size,
                  weight="bold" if bold else "normal", fill="#222" if bold else "#444")
            y += step
        self.bottom = y - step + 4
        return self.bottom


def su_svg(fabric: Mapping[str, Any]) -> str | None:
    """One scalable unit of the backend: nodes, NICs per rail, rail leaves, its pod's spines
    (and cores), with the counts per tier. None without a backend fabric."""
    sh = mapping(fabric.get("shape"))
    # One tier small enough for the rails to share a switch has fewer leaves than rails.
    shared = max(1, int(num(sh.get("rails_per_leaf")) or 1))
    leaves_su = int(num(sh.get("leaves_per_su")) or 0) // shared
    if fabric.get("backend") == "none" or not sh or leaves_su <= 0:
        return None
    tiers = int(num(fabric.get("tiers")) or 0)
    rails = int(num(sh.get("rails")) or 1)
    planes = int(num(sh.get("planes")) or 1)
    nodes_su = int(num(sh.get("nodes_per_su")) or 0)
    hosts_node = int(num(sh.get("hosts_per_node")) or 1)
    gpus_host = int(num(sh.get("gpus_per_host")) or 0)
    spines_pod = int(num(sh.get("spines_per_pod")) or 0)
    sus = int(num(sh.get("sus")) or 1)
    switch = str(fabric.get("switch") or "switch")
    speed = num(fabric.get("link_speed_gbps"))
    speed_s = f"{fmt(speed)} Gb/s" if speed is not None else ""
    leaf_up = int(num(sh.get("leaf_up_ports")) or 0)
    leaf_down = int(num(sh.get("leaf_down_ports")) or 0)
    par = int(num(sh.get("leaf_spine_parallel")) or 1)

    left_w, col_x, col_w, pad = 640.0, 670.0, 320.0, 12.0
    width = col_x + col_w + pad
    svg = _svg(width, 10, f"one scalable unit of the {protocol_name(fabric)} backend")
    g = ET.SubElement(svg, "g")
    col = _Column(g, col_x, col_w)
    y = pad
    box_h = 24.0

    def row_boxes(n: int, most: int, y0: float, fill: str, label: str,
                  colors: Sequence[str] | None = None) -> list[float]:
        """Draw up to ``most`` boxes across the drawing; centres of the drawn boxes."""
        idx = _shown(n, most)
        gap = 6.0
        bw = (left_w - gap * (len(idx) - 1)) / len(idx)
        xs = []
        for j, i in enumerate(idx):
            x = pad + j * (bw + gap)
            if i is None:
                _text(g, x + bw / 2, y0 + box_h / 2 + 5, "…", size=14, weight="bold")
                xs.append(-1.0)
                continue
            stroke = colors[i % len(colors)] if colors else "#555"
            _rect(g, x, y0, bw, box_h, fill, stroke=stroke, title=f"{label} {i + 1}")
            short = fit(f"{label[0].upper()}{i + 1}", bw - 4, 10, True)
            if short:
                _text(g, x + bw / 2, y0 + box_h / 2 + 4, short, size=10, weight="bold")
            xs.append(x + bw / 2)
        return xs

    core_xs: list[float] = []
    if tiers == 3:
        cores = int(num(fabric.get("core_switches")) or 0)
        group = int(num(sh.get("core_group_size")) or 0)
        core_xs = row_boxes(cores, 16, y, TIER_FILL["core"], "core")
        col.add(y + box_h / 2, f"Core: {fmt(cores)} × {switch}",
                [f"each pod spine to {fmt(group)} cores, "
                 f"{fmt(num(sh.get('spine_core_parallel')))} link(s) each",
                 f"spine–core: {fmt(get_links(fabric, 'spine-core'))} links × {speed_s}; "
                 + _media_text(_tier(fabric, "spine-core"))])
        y += box_h + 70
    spine_xs: list[float] = []
    if tiers >= 2 and spines_pod:
        spine_y = y
        spine_xs = row_boxes(spines_pod * planes, 16, y, TIER_FILL["spine"], "spine")
        for cx in core_xs:
            for sx in spine_xs[:: max(len(spine_xs) // 4, 1)]:
                if cx > 0 and sx > 0:
                    _line(g, sx, spine_y, cx, spine_y - 70 + box_h, stroke="#bbb", width=0.6)
        where = "per pod" if tiers == 3 else "in the fabric"
        col.add(y + box_h / 2, f"Spines: {fmt(spines_pod * planes)} × {switch} {where}",
                [f"each leaf to every spine of its pod, {fmt(par)} link(s) per pair",
                 f"leaf–spine, all {fmt(sus)} SUs: {fmt(get_links(fabric, 'leaf-spine'))} links "
                 f"× {speed_s}; " + _media_text(_tier(fabric, "leaf-spine"))])
        y += box_h + 80
    leaf_y = y
    rail_colors = [RAIL_COLORS[r % len(RAIL_COLORS)] for r in range(rails)]
    leaf_xs = row_boxes(leaves_su * planes, 16, y, TIER_FILL["leaf"], "leaf", rail_colors)
    for lx in leaf_xs:
        for sx in spine_xs:
            if lx > 0 and sx > 0:
                _line(g, lx, leaf_y, sx, leaf_y - 80 + box_h, stroke="#ccc", width=0.5)
    per_rail = int(num(sh.get("leaves_per_rail_su")) or 1)
    col.add(y + box_h / 2,
            f"Leaves: {fmt(leaves_su * planes)} × {switch} per SU"
            + (f" (shared by all {rails} rails)" if shared > 1 else
               " (one per rail)" if per_rail == 1 and planes == 1 else ""),
            [f"{fmt(leaf_down)} ports down, {fmt(leaf_up)} up at {speed_s}"
             + (f"; {planes} planes" if planes > 1 else ""),
             f"{fmt(num(fabric.get('leaf_switches')))} leaves in {fmt(sus)} SUs"])
    y += box_h + 80
    node_y = y
    idx = _shown(nodes_su, 8)
    gap = 8.0
    nw = (left_w - gap * (len(idx) - 1)) / len(idx)
    node_h = 46.0
    for j, i in enumerate(idx):
        x = pad + j * (nw + gap)
        if i is None:
            _text(g, x + nw / 2, node_y + node_h / 2 + 5, "…", size=14, weight="bold")
            continue
        _rect(g, x, node_y, nw, node_h, TIER_FILL["node"],
              title=f"node {i + 1} of {nodes_su} in the SU")
        nics = rails
        nic_w = min((nw - 8) / max(nics, 1), 14.0)
        for r in range(nics):
            nx = x + 4 + r * nic_w
            _rect(g, nx, node_y + 4, nic_w - 2, 8, rail_colors[r], stroke=rail_colors[r], rx=1,
                  title=f"NIC rail {r + 1}")
            lx = leaf_xs[min(r * per_rail, len(leaf_xs) - 1)] if leaf_xs else -1
            if lx > 0:
                _line(g, nx + (nic_w - 2) / 2, node_y + 4, lx, leaf_y + box_h,
                      stroke=rail_colors[r], width=0.7)
        label = fit(f"node {i + 1}", nw - 6, 10, True)
        if label:
            _text(g, x + nw / 2, node_y + 26, label, size=10, weight="bold")
        sub = fit(f"{gpus_host} GPUs", nw - 6, 9)
        if sub:
            _text(g, x + nw / 2, node_y + 39, sub, size=9, fill="#444")
    col.add(node_y + node_h / 2,
            f"Nodes: {fmt(nodes_su)} per SU"
            + (f" ({fmt(nodes_su * hosts_node)} hosts)" if hosts_node > 1 else ""),
            [f"{fmt(rails)} backend NICs per host, NIC i to the rail-i leaf",
             f"node–leaf, all SUs: {fmt(get_links(fabric, 'node-leaf'))} links × {speed_s}; "
             + _media_text(_tier(fabric, "node-leaf"))])
    y = max(node_y + node_h, col.bottom) + 22
    caption = (f"One of {fmt(sus)} scalable units, {protocol_name(fabric)} at {speed_s}. "
               f"Rail-optimized: NIC i of every node cables to the rail-i leaf of its SU "
               f"(colours are rails).")
    for line in wrap(caption, width - 2 * pad, 11):
        _text(g, pad, y, line, anchor="start", size=11, fill="#444")
        y += 15
    height = y
    svg.set("height", f"{height:g}")
    svg.set("viewBox", f"0 0 {width:g} {height:g}")
    return _to_str(svg)


def get_links(fabric: Mapping[str, Any], tier: str) -> float | None:
    return num(mapping(fabric.get("links_by_tier")).get(tier)) or num(
        _tier(fabric, tier).get("links"))


def networks_svg(fabric: Mapping[str, Any]) -> str | None:
    """The frontend (storage, in-band) and out-of-band networks, tier by tier: switch
    counts per tier, and the links, media and optics between tiers."""
    fe, oob = mapping(fabric.get("frontend")), mapping(fabric.get("oob"))
    if not fe and not oob:
        return None
    nodes = num(fabric.get("nodes"))
    panels: list[tuple[str, list[tuple[str, float, str, str]], list[str]]] = []
    if fe:
        sw = str(fe.get("switch") or "switch")
        levels = [("frontend core", num(fe.get("core_switches")) or 0, sw, "fe-spine-core"),
                  ("frontend spines", num(fe.get("spine_switches")) or 0, sw, "fe-leaf-spine"),
                  ("frontend leaves", num(fe.get("leaf_switches")) or 0, sw, "fe-node-leaf")]
        ends = [f"{fmt(nodes)} nodes (dual-homed)",
                f"storage: {fmt(fe.get('storage_ports'))} ports"]
        panels.append((f"Frontend and storage network ({fmt(fe.get('link_speed_gbps'))} Gb/s "
                       f"Ethernet, EVPN-VXLAN, {fmt(fe.get('tenants'))} tenants)",
                       [lv for lv in levels if lv[1] > 0], ends))
    if oob:
        sw = str(oob.get("switch") or "switch")
        up = mapping(fabric.get("shape")).get("oob_uplink_switch") or sw
        levels = [("OOB aggregation", num(oob.get("aggregation_switches")) or 0, str(up),
                   "oob-leaf-spine"),
                  ("OOB leaves", num(oob.get("leaf_switches")) or 0, sw, "oob-node-leaf")]
        panels.append(("Out-of-band management network (1 GbE to every BMC and switch)",
                       [lv for lv in levels if lv[1] > 0],
                       [f"{fmt(oob.get('ports'))} management ports"]))
    pad, left_w, col_x, col_w = 12.0, 560.0, 600.0, 390.0
    width = col_x + col_w + pad
    svg = _svg(width, 10, "frontend, storage and out-of-band networks")
    g = ET.SubElement(svg, "g")
    y = pad + 12
    box_h = 24.0
    for title, levels, ends in panels:
        for line in wrap(title, width - 2 * pad, 13, True):
            _text(g, pad, y, line, anchor="start", size=13, weight="bold")
            y += 17
        y += 8
        col = _Column(g, col_x, col_w)
        for name, n, part, tier in levels:
            count = int(n)
            idx = _shown(count, 12)
            gap = 6.0
            bw = min((left_w - gap * (len(idx) - 1)) / len(idx), 60.0)
            total = bw * len(idx) + gap * (len(idx) - 1)
            x0 = pad + (left_w - total) / 2
            for j, i in enumerate(idx):
                x = x0 + j * (bw + gap)
                if i is None:
                    _text(g, x + bw / 2, y + box_h / 2 + 5, "…", size=14, weight="bold")
                    continue
                fill = "#d8f0d2" if name.startswith("frontend") else "#e8e8e8"
                _rect(g, x, y, bw, box_h, fill, title=f"{name} {i + 1} ({part})")
            row = _tier(fabric, tier)
            down = (f"down: {fmt(row.get('links'))} links × {fmt(row.get('speed_gbps'))} Gb/s, "
                    + _media_text(row)) if row else ""
            col.add(y + box_h / 2, f"{fmt(count)} × {part} ({name})", [down])
            y = max(y + box_h + 44, col.bottom + 14)
        # The endpoints under the lowest tier: nodes, storage, BMCs.
        ew = (left_w - 10 * (len(ends) - 1)) / len(ends)
        for j, e in enumerate(ends):
            x = pad + j * (ew + 10)
            _rect(g, x, y, ew, 30, TIER_FILL["node"] if j == 0 else "#e6d5f2")
            label = fit(e, ew - 8, 11, True)
            if label:
                _text(g, x + ew / 2, y + 19, label, size=11, weight="bold")
        storage = _tier(fabric, "fe-storage-leaf")
        if storage and title.startswith("Frontend"):
            col.add(y + 15, "storage attach",
                    [f"{fmt(storage.get('links'))} links × {fmt(storage.get('speed_gbps'))} "
                     f"Gb/s, " + _media_text(storage)])
        y = max(y + 30, col.bottom) + 34
    height = y - 14
    svg.set("height", f"{height:g}")
    svg.set("viewBox", f"0 0 {width:g} {height:g}")
    return _to_str(svg)
