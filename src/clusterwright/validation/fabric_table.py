"""Fabric validation table: switch and link counts of published rail-optimized fat trees.

Every row of ``validation/fabric.csv`` is one published design; every published quantity of it
(leaf, spine and core switches, cables per tier, total switches) becomes one ``Row``. Designs
whose server and switch are in the catalog go through ``plan_fabric`` and ``summary`` (the
``fabric design`` path, links counted from the built link list): the DGX SuperPOD B200 rows, the
DGX B300 Spectrum-X twin-plane rows (``dual_plane``: each ConnectX-8 800G port halved into two
400G planes) and the DGX B300 XDR rows (Q3400, one 800G link per ConnectX-8). The fat-tree
maxima go through ``fabric_shape`` with the published radix, rails, planes and scalable-unit
size. Counts are integers, so the table expects exact matches.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from clusterwright.validation.rows import (
    CsvRow,
    Row,
    TableResult,
    bad,
    optional_integer,
    predict_each,
    read_csv,
    text,
)

FILE = "fabric.csv"
# Quantity -> (CSV column, unit). Columns left empty in the CSV were not published.
QUANTITIES: dict[str, tuple[str, str]] = {
    "leaf_switches": ("leaf", "switches"),
    "spine_switches": ("spine", "switches"),
    "core_switches": ("core", "switches"),
    "node_leaf_links": ("node_leaf_links", "links"),
    "leaf_spine_links": ("leaf_spine_links", "links"),
    "spine_core_links": ("spine_core_links", "links"),
    "switches_total": ("switches_total", "switches"),
}


class CountRow(Row):
    """A count that may be published as 0 (no core tier): 0 predicted for 0 is exact, anything
    else is an infinite relative error rather than a division by zero."""

    @property
    def error(self) -> float:
        if self.measured == 0:
            return 0.0 if self.predicted == 0 else float("inf")
        return super().error


def _ratio(r: Mapping[str, str]) -> float:
    """The row's ``oversubscription``, ``"1:1"`` or ``"2"``, as down:up (empty: 1)."""
    t = text(r, "oversubscription")
    try:
        if ":" in t:
            down, up = t.split(":")
            x = float(down) / float(up)
        else:
            x = float(t or 1)
    except (ValueError, ZeroDivisionError):
        x = float("nan")
    if not 0.0 < x < float("inf"):
        raise bad(r, "oversubscription", f"{t!r} is not 'down:up' (e.g. 1:1)")
    return x


def _int(r: Mapping[str, str], col: str) -> int | None:
    return optional_integer(r, col, low=0)


def _count(value: object, what: str) -> int:
    if not isinstance(value, int):
        raise TypeError(f"summary()[{what!r}] is {value!r}, expected a count")
    return value


def _planned(r: dict[str, str]) -> tuple[dict[str, int], int, str]:
    """Counts of a catalog design through ``plan_fabric`` + ``summary``."""
    from clusterwright.catalog.registry import load_catalog
    from clusterwright.design.bom import plan_fabric, summary
    from clusterwright.spec.fabric import FabricRequest

    nodes = optional_integer(r, "nodes", low=1)
    if nodes is None:
        raise bad(r, "nodes", "is required with a server_id")
    req = FabricRequest(
        server=text(r, "server_id"),
        nodes=nodes,
        switch=text(r, "switch_id") or None,
        oversubscription=_ratio(r),
        su_hosts=optional_integer(r, "su_hosts", low=1),
        dual_plane=_planes(r) == 2,
    )
    s = summary(plan_fabric(req, load_catalog(env={})))
    links = s["links_by_tier"]
    if not isinstance(links, dict):
        raise TypeError(f"summary()['links_by_tier'] is {links!r}, expected a dict")
    counts = {q: _count(s[q], q) for q in ("leaf_switches", "spine_switches", "core_switches")}
    for q, tier in (
        ("node_leaf_links", "node-leaf"),
        ("leaf_spine_links", "leaf-spine"),
        ("spine_core_links", "spine-core"),
    ):
        counts[q] = _count(links[tier], f"links_by_tier.{tier}")
    counts["switches_total"] = sum(v for k, v in counts.items() if k.endswith("_switches"))
    detail = (
        f"plan_fabric {s['server']} x{nodes}, {s['switch']} r{s['radix']}: "
        f"{s['tiers']} tiers, SU {s['su_hosts']}"
        + (f", {s['planes']} planes" if s["planes"] != 1 else "")
    )
    return counts, _count(s["tiers"], "tiers"), detail


def _shaped(r: dict[str, str]) -> tuple[dict[str, int], int, str]:
    """Counts of a pure fat tree (or a server not in the catalog) through ``fabric_shape``."""
    from clusterwright.design.fabric_shape import fabric_shape

    cols = ("hosts", "rails", "radix")
    hosts, rails, radix = (optional_integer(r, c, low=1) for c in cols)
    if hosts is None or rails is None or radix is None:
        missing = next(c for c, v in zip(cols, (hosts, rails, radix), strict=True) if v is None)
        raise bad(r, missing, "is required without a server_id (give hosts, rails and radix)")
    sh = fabric_shape(
        hosts=hosts,
        rails=rails,
        radix=radix,
        planes=_planes(r),
        oversubscription=_ratio(r),
        su_hosts=optional_integer(r, "su_hosts", low=1),
    )
    counts = {
        "leaf_switches": sh.leaf_switches,
        "spine_switches": sh.spine_switches,
        "core_switches": sh.core_switches,
        "node_leaf_links": sh.node_leaf_links,
        "leaf_spine_links": sh.leaf_spine_links,
        "spine_core_links": sh.spine_core_links,
        "switches_total": sh.leaf_switches + sh.spine_switches + sh.core_switches,
    }
    detail = f"fabric_shape {rails} rails x{sh.planes} planes r{radix}: {sh.tiers} tiers"
    detail += f", {sh.pods} pods" if sh.tiers == 3 else f", SU {sh.su_hosts}"
    if (r.get("server") or "").strip():
        detail += f"; {r['server'].split(' (')[0]} not in the catalog"
    return counts, sh.tiers, detail


def _planes(r: Mapping[str, str]) -> int:
    planes = optional_integer(r, "planes", low=1) or 1
    if planes > 2:
        raise bad(r, "planes", f"{planes} is not 1 or 2")
    return planes


def fabric_table(path: str | Path = FILE) -> TableResult:
    """Leaf/spine/core switch and cable counts of the DGX SuperPOD B200 (Table 3) and B300
    (Spectrum-X and XDR editions, Table 3) reference architectures and of the two- and
    three-tier fat-tree maxima at radix 64, 128 and 144 (Al-Fares et al. 2008: k^3/4 hosts on
    5k^2/4 switches). ``path``: another file in fabric.csv's format. A design the catalog or
    the fabric model cannot build (a server or switch it lacks, a size it cannot wire) is not
    covered, with the reason."""
    rows, not_covered = predict_each(read_csv(path), _design_rows)
    # Counts are exact: any mismatch is a modelling error, not noise.
    return TableResult("fabric", str(path), rows, tolerance=1e-9, not_covered=not_covered)


def _design_rows(r: CsvRow, set_: str) -> list[Row]:
    """Every published count of one design, as one Row each."""
    published = {q: _int(r, col) for q, (col, _) in QUANTITIES.items()}
    published_tiers = optional_integer(r, "tiers", low=1)
    counts, tiers, detail = _planned(r) if text(r, "server_id") else _shaped(r)
    if published_tiers is not None and published_tiers != tiers:
        detail += f" (published: {published_tiers} tiers)"
    out: list[Row] = []
    for quantity, (_, unit) in QUANTITIES.items():
        measured = published[quantity]
        if measured is None:
            continue
        out.append(CountRow(f"{r['id']}.{quantity}", quantity, float(measured),
                            float(counts[quantity]), unit, r["source"], set_, detail))
    return out
