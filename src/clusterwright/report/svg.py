"""SVG drawings of the report: the network topology (schematic) and rack elevations.

Built with ``xml.etree.ElementTree`` so every name from the blueprint is escaped and the
output is well-formed XML. The topology is aggregated: a 2,000-node fabric is drawn as a few
pods and scalable units (SUs) with "... N more" boxes and counts, not one shape per device.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Mapping
from typing import Any

from clusterwright.report.fmt import fmt, mapping, num, records

FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif"
# Rail colours (Okabe-Ito palette, colour-blind safe), cycled for more than eight rails.
RAIL_COLORS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442",
               "#000000")
ROLE_COLORS = {
    "host": "#cfe3f5", "leaf": "#ffd9a8", "spine": "#ffc27a", "core": "#ff9f45",
    "fe-leaf": "#d8f0d2", "fe-spine": "#b7e3ab", "fe-core": "#97d689", "storage": "#e6d5f2",
    "oob-leaf": "#eeeeee", "oob-spine": "#dddddd", "patch": "#f5f5f5",
}
TIER_FILL = {"core": "#ff9f45", "spine": "#ffc27a", "leaf": "#ffd9a8", "node": "#cfe3f5"}


def _svg(width: float, height: float, label: str) -> ET.Element:
    return ET.Element("svg", {
        "width": f"{width:g}", "height": f"{height:g}", "viewBox": f"0 0 {width:g} {height:g}",
        "role": "img", "aria-label": label, "font-family": FONT, "font-size": "12",
    })


def _rect(parent: ET.Element, x: float, y: float, w: float, h: float, fill: str,
          stroke: str = "#555", rx: float = 3, title: str | None = None) -> ET.Element:
    r = ET.SubElement(parent, "rect", {
        "x": f"{x:.1f}", "y": f"{y:.1f}", "width": f"{max(w, 0.5):.1f}",
        "height": f"{max(h, 0.5):.1f}", "fill": fill, "stroke": stroke, "rx": f"{rx:g}",
    })
    if title:
        ET.SubElement(r, "title").text = title
    return r


def _text(parent: ET.Element, x: float, y: float, s: str, anchor: str = "middle",
          size: float = 12, weight: str = "normal", fill: str = "#222") -> ET.Element:
    t = ET.SubElement(parent, "text", {
        "x": f"{x:.1f}", "y": f"{y:.1f}", "text-anchor": anchor, "font-size": f"{size:g}",
        "font-weight": weight, "fill": fill,
    })
    t.text = s
    return t


def _line(parent: ET.Element, x1: float, y1: float, x2: float, y2: float,
          stroke: str = "#777", width: float = 1.0, dash: str | None = None) -> None:
    attrs = {"x1": f"{x1:.1f}", "y1": f"{y1:.1f}", "x2": f"{x2:.1f}", "y2": f"{y2:.1f}",
             "stroke": stroke, "stroke-width": f"{width:g}"}
    if dash:
        attrs["stroke-dasharray"] = dash
    ET.SubElement(parent, "line", attrs)


def _clip(s: str, chars: int) -> str:
    return s if len(s) <= chars else s[: max(chars - 1, 1)] + "…"


def _shown(n: int, most: int) -> list[int | None]:
    """Indices to draw out of ``n`` (``None`` marks an ellipsis): all when ``n <= most``, else
    the first ``most - 1`` and the last, so a reader sees both ends and the count."""
    if n <= most:
        return list(range(n))
    return [*range(most - 1), None, n - 1]


def _to_str(svg: ET.Element) -> str:
    return ET.tostring(svg, encoding="unicode", short_empty_elements=True)


# ------------------------------------------------------------------ topology


def _int(x: Any, default: int = 0) -> int:
    v = num(x)
    return default if v is None else round(v)


def topology_svg(fabric: Mapping[str, Any], cluster: Mapping[str, Any]) -> str | None:
    """A schematic of the backend fabric: core, spines per pod, leaves per SU (coloured by rail)
    and the nodes of each SU, with switch and link counts and speeds per tier on the right.

    ``None`` when the fabric has no leaf switches (nothing to draw)."""
    leaves = _int(fabric.get("leaf_switches"))
    if leaves <= 0:
        return None
    spines = _int(fabric.get("spine_switches"))
    cores = _int(fabric.get("core_switches"))
    nodes = _int(fabric.get("nodes"), _int(cluster.get("nodes")))
    gpus = _int(fabric.get("gpus"), _int(cluster.get("gpus")))
    sus = max(_int(fabric.get("scalable_units"), 1), 1)
    pods = max(_int(fabric.get("pods"), 1), 1) if cores > 0 else 1
    planes = max(_int(fabric.get("planes"), 1), 1)
    per_su_nodes = _int(fabric.get("nodes_per_su"), _int(fabric.get("su_hosts")))
    if per_su_nodes <= 0:
        per_su_nodes = -(-nodes // sus) if nodes else 0
    gpus_per_node = gpus // nodes if nodes else 0
    leaves_per_su = max(leaves // sus, 1)
    # Rail-optimised: GPU i of every node in an SU goes to the leaf of rail i.
    rails = gpus_per_node * planes if gpus_per_node and leaves_per_su % (
        gpus_per_node * planes) == 0 else leaves_per_su
    switch = str(fabric.get("switch") or "switch")
    speed = num(fabric.get("link_speed_gbps"))
    speed_s = f"{fmt(speed)} Gb/s" if speed is not None else "link speed n/a"
    links = mapping(fabric.get("links_by_tier"))
    nvl = _int(cluster.get("nvlink_domain_gpus"))

    left_w, right_w, pad = 700.0, 290.0, 10.0
    width = left_w + right_w + 2 * pad
    row_h, gap = 34.0, 46.0
    y = pad + 4
    rows: list[tuple[float, str, str]] = []  # (y centre, tier title, links below it)
    svg = _svg(width, 10, f"backend fabric: {fmt(leaves)} leaf, {fmt(spines)} spine, "
                          f"{fmt(cores)} core switches")
    g = ET.SubElement(svg, "g")

    if cores > 0:
        _rect(g, pad, y, left_w, row_h, TIER_FILL["core"],
              title=f"{fmt(cores)} core switches ({switch})")
        _text(g, pad + left_w / 2, y + row_h / 2 + 4, f"Core: {fmt(cores)} × {switch}",
              weight="bold")
        rows.append((y + row_h / 2, f"Core tier: {fmt(cores)} switches",
                     f"spine–core: {fmt(links.get('spine-core'))} links × {speed_s}"))
        core_bottom = y + row_h
        y += row_h + gap
    else:
        core_bottom = None

    pod_idx = _shown(pods, 4)
    col_gap = 14.0
    ell_w = 46.0
    n_ell = sum(1 for p in pod_idx if p is None)
    n_cols = len(pod_idx) - n_ell
    col_w = (left_w - ell_w * n_ell - col_gap * (len(pod_idx) - 1)) / max(n_cols, 1)
    spine_y = y
    su_y = spine_y + (row_h + gap if spines > 0 else 0)
    leaf_h, node_h = 26.0, 30.0
    node_y = su_y + leaf_h + 38
    sus_per_pod = max(-(-sus // pods), 1)
    spines_per_pod = spines // pods if pods > 1 else spines

    x = pad
    for p in pod_idx:
        if p is None:
            _text(g, x + ell_w / 2, su_y + leaf_h, "…", size=22, weight="bold")
            _text(g, x + ell_w / 2, su_y + leaf_h + 16, f"{fmt(pods - len(pod_idx) + 1)} more",
                  size=10)
            _text(g, x + ell_w / 2, su_y + leaf_h + 28, "pods", size=10)
            x += ell_w + col_gap
            continue
        if spines > 0:
            label = (f"Pod {p + 1} spines: {fmt(spines_per_pod)}" if pods > 1
                     else f"Spine: {fmt(spines)} × {switch}")
            _rect(g, x, spine_y, col_w, row_h, TIER_FILL["spine"],
                  title=f"{fmt(spines_per_pod)} spine switches ({switch})")
            _text(g, x + col_w / 2, spine_y + row_h / 2 + 4, _clip(label, int(col_w / 7)),
                  weight="bold")
            if core_bottom is not None:
                for k in range(3):
                    cx = x + col_w * (k + 1) / 4
                    _line(g, cx, spine_y, cx, core_bottom)
        first_su = p * sus_per_pod
        n_su = max(min(sus_per_pod, sus - first_su), 0)
        su_idx = _shown(n_su, 4 if pods == 1 else 2)
        _draw_sus(g, x, col_w, su_idx, n_su, first_su, su_y, node_y, leaf_h, node_h,
                  leaves_per_su, rails, per_su_nodes, nodes, gpus_per_node, nvl,
                  spine_bottom=spine_y + row_h if spines > 0 else None)
        x += col_w + col_gap

    if spines > 0:
        rows.append((spine_y + row_h / 2,
                     f"Spine tier: {fmt(spines)} switches" + (f" in {fmt(pods)} pods"
                                                              if pods > 1 else ""),
                     f"leaf–spine: {fmt(links.get('leaf-spine'))} links × {speed_s}"))
    per_su = (f"{fmt(leaves_per_su)} {'leaf' if leaves_per_su == 1 else 'leaves'}"
              + (f" ({min(leaves_per_su, 16)} drawn)" if leaves_per_su > 16 else ""))
    rows.append((su_y + leaf_h / 2,
                 f"Leaf tier: {fmt(leaves)} {'switch' if leaves == 1 else 'switches'}",
                 f"{fmt(sus)} SU{'s' if sus != 1 else ''} × {per_su}, {fmt(rails)} "
                 f"{'rail' if rails == 1 else 'rails'}"))
    rows.append((node_y + node_h / 2, f"Nodes: {fmt(nodes)} ({fmt(gpus)} GPUs)",
                 f"node–leaf: {fmt(links.get('node-leaf'))} links × {speed_s}"))
    over = fabric.get("oversubscription_by_tier") or fabric.get("oversubscription")
    over_s = (", ".join(f"{k} {fmt(v)}:1" for k, v in over.items() if num(v) is not None)
              if isinstance(over, Mapping) else (f"{fmt(over)}:1" if num(over) else ""))
    for cy, title, sub in rows:
        _text(g, pad + left_w + 18, cy - 2, title, anchor="start", weight="bold")
        _text(g, pad + left_w + 18, cy + 13, sub, anchor="start", size=11, fill="#444")
    bottom = node_y + node_h + 24
    legend = (f"Rail-optimised: GPU i of each node connects to the rail-i leaf of its SU. "
              f"Switches: {switch}")
    if over_s:
        legend += f"; oversubscription {over_s}"
    if planes > 1:
        legend += f"; {planes} planes"
    _text(g, pad, bottom, legend, anchor="start", size=11, fill="#444")
    height = bottom + 12
    svg.set("height", f"{height:g}")
    svg.set("viewBox", f"0 0 {width:g} {height:g}")
    return _to_str(svg)


def _draw_sus(g: ET.Element, x0: float, col_w: float, su_idx: list[int | None], n_su: int,
              first_su: int, su_y: float, node_y: float, leaf_h: float, node_h: float,
              leaves_per_su: int, rails: int, per_su_nodes: int, nodes: int,
              gpus_per_node: int, nvl: int, spine_bottom: float | None) -> None:
    gap = 8.0
    ell_w = 30.0
    n_ell = sum(1 for s in su_idx if s is None)
    n_box = len(su_idx) - n_ell
    w = (col_w - ell_w * n_ell - gap * (len(su_idx) - 1)) / max(n_box, 1)
    x = x0
    for s in su_idx:
        if s is None:
            _text(g, x + ell_w / 2, su_y + leaf_h, "…", size=18, weight="bold")
            _text(g, x + ell_w / 2, node_y + 12, f"+{fmt(n_su - len(su_idx) + 1)}", size=10)
            _text(g, x + ell_w / 2, node_y + 24, "SUs", size=10)
            x += ell_w + gap
            continue
        drawn = min(leaves_per_su, 16)
        lw = (w - 4) / drawn
        for k in range(drawn):
            color = RAIL_COLORS[(k % rails) % len(RAIL_COLORS)] if rails else "#999"
            lx = x + 2 + k * lw
            _rect(g, lx, su_y, lw - 2, leaf_h, TIER_FILL["leaf"], stroke=color, rx=2,
                  title=f"SU {first_su + s + 1} leaf {k + 1} (rail {k % max(rails, 1) + 1})")
            _line(g, lx + (lw - 2) / 2, su_y + leaf_h, lx + (lw - 2) / 2, node_y, stroke=color,
                  width=1.5)
            if spine_bottom is not None and k in (0, drawn - 1):
                _line(g, lx + (lw - 2) / 2, su_y, x + w / 2, spine_bottom, stroke="#999")
        # The last SU may be partly filled (its leaves are built in full for growth).
        here = min(per_su_nodes, nodes - (first_su + s) * per_su_nodes) if nodes else per_su_nodes
        here = max(here, 0)
        count = fmt(here) if here == per_su_nodes else f"{fmt(here)} of {fmt(per_su_nodes)}"
        _rect(g, x, node_y, w, node_h, TIER_FILL["node"],
              title=f"SU {first_su + s + 1}: {count} nodes × "
                    f"{fmt(gpus_per_node)} GPUs, {fmt(leaves_per_su)} leaves")
        _text(g, x + w / 2, node_y + 13, f"SU {first_su + s + 1}", size=11, weight="bold")
        sub = (f"{count} nodes × {fmt(gpus_per_node)} GPUs" if w > 110
               else f"{count}×{fmt(gpus_per_node)} GPUs")
        if nvl > gpus_per_node:
            sub += f", NVL{nvl}"
        _text(g, x + w / 2, node_y + 25, _clip(sub, int(w / 5.2)), size=9.5)
        x += w + gap


# ------------------------------------------------------------------ racks


def rack_svg(rack: Mapping[str, Any], limit_kw: float | None = None) -> str:
    """One rack drawn U by U (U1 at the bottom): each device a box with its name (and its kW
    when the blueprint gives one), the rack's typical and nameplate kW in the header, in red
    when the nameplate exceeds ``limit_kw``."""
    units = max(_int(rack.get("units"), 48), 1)
    uh = 11.0
    top, left, w = 44.0, 28.0, 210.0
    height = top + units * uh + 12
    name = str(rack.get("name") or "rack")
    svg = _svg(left + w + 8, height, f"rack {name} elevation")
    g = ET.SubElement(svg, "g")
    kw_n = num(rack.get("kw_nameplate"))
    kw_t = num(rack.get("kw_typical"))
    over = kw_n is not None and limit_kw is not None and kw_n > limit_kw
    _text(g, left, 14, _clip(f"{name} · {rack.get('role') or ''}"
                             + (f" · row {rack['row']}" if rack.get("row") is not None else ""),
                             34), anchor="start", weight="bold")
    kw = f"{fmt(kw_t)} kW typical · {fmt(kw_n)} kW max"
    if limit_kw is not None:
        kw += f" (limit {fmt(limit_kw)})"
    _text(g, left, 30, kw, anchor="start", size=10, fill="#b00020" if over else "#444")
    _rect(g, left, top, w, units * uh, "#fafafa", stroke="#333", rx=0)
    for u in range(1, units + 1):
        yy = top + (units - u) * uh
        _line(g, left, yy, left + w, yy, stroke="#e4e4e4", width=0.5)
        if u == 1 or u % 5 == 0:
            _text(g, left - 4, yy + uh - 2, str(u), anchor="end", size=8, fill="#777")
    for dev in records(rack.get("devices")):
        u0 = _int(dev.get("u"), 0)
        hu = max(_int(dev.get("height_u"), 1), 1)
        if u0 < 1 or u0 > units:
            continue
        hu = min(hu, units - u0 + 1)
        yy = top + (units - (u0 + hu - 1)) * uh
        role = str(dev.get("role") or "")
        dname = str(dev.get("name") or "")
        dkw = num(dev.get("kw"))
        if dkw is None and num(dev.get("power_w")) is not None:
            dkw = float(dev["power_w"]) / 1e3
        label = dname + (f" · {fmt(dkw)} kW" if dkw is not None else "")
        _rect(g, left + 1, yy + 0.5, w - 2, hu * uh - 1, ROLE_COLORS.get(role, "#e0e0e0"),
              stroke="#666", rx=1.5, title=f"{dname} ({role}) U{u0}-U{u0 + hu - 1}")
        _text(g, left + 6, yy + min(hu * uh, 22) / 2 + 4, _clip(label, 32), anchor="start",
              size=9 if hu == 1 else 10)
    return _to_str(svg)


def representative_racks(racks: list[Mapping[str, Any]], most: int = 4) -> list[Mapping[str, Any]]:
    """A few racks that together show every kind: the densest rack of each role (compute
    first), then the fullest remaining racks, up to ``most``."""
    def kw(r: Mapping[str, Any]) -> float:
        return num(r.get("kw_nameplate")) or num(r.get("kw_typical")) or 0.0

    chosen: list[Mapping[str, Any]] = []
    roles: list[str] = []
    for r in racks:
        role = str(r.get("role") or "")
        if role not in roles:
            roles.append(role)
    roles.sort(key=lambda s: (s != "compute", s))
    for role in roles:
        best = max((r for r in racks if str(r.get("role") or "") == role), key=kw)
        chosen.append(best)
    rest = sorted((r for r in racks if all(r is not c for c in chosen)),
                  key=lambda r: -len(records(r.get("devices"))))
    chosen.extend(rest[: max(most - len(chosen), 0)])
    return chosen[:most]


def rack_devices_summary(rack: Mapping[str, Any]) -> str:
    """Device count by role: "4 host, 1 leaf"."""
    counts: dict[str, int] = {}
    for d in records(rack.get("devices")):
        role = str(d.get("role") or "device")
        counts[role] = counts.get(role, 0) + 1
    return ", ".join(f"{n} {role}" for role, n in counts.items()) or "empty"


def used_units(rack: Mapping[str, Any]) -> int:
    """Rack units occupied by the rack's devices."""
    return sum(max(_int(d.get("height_u"), 1), 1) for d in records(rack.get("devices")))


__all__ = ["rack_devices_summary", "rack_svg", "representative_racks", "topology_svg",
           "used_units"]
