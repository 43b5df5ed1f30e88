"""The tables a reader of a fabric design checks: the bill of materials line by line (unit
price and its source), cabling per tier (links, media, cable parts, optic modules and length
bins), the fat tree's shape (what one scalable unit holds), and capex split into the
categories a TCO sheet uses. Built once from the materialized ``Fabric``; the blueprint
carries them so the report, the spreadsheet and the drawings read, never rebuild, them.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from typing import Any

from clusterwright.catalog.registry import Catalog
from clusterwright.design.bom_line import BomLine
from clusterwright.design.fabric_model import Fabric
from clusterwright.design.media import stock_length
from clusterwright.design.tco_plan import price_is_estimate

# Length bins of the cabling summary (m, upper bounds inclusive): in-rack DAC, the next rack,
# across a row, across the hall (the reaches of DAC, AOC/multimode and single-mode optics).
LENGTH_BINS: tuple[tuple[str, float], ...] = (
    ("<= 3 m", 3.0), ("3-10 m", 10.0), ("10-30 m", 30.0), ("30-100 m", 100.0),
    ("> 100 m", math.inf),
)
TIER_ORDER = ("node-leaf", "leaf-spine", "spine-core", "fe-node-leaf", "fe-storage-leaf",
              "fe-leaf-spine", "fe-spine-core", "oob-node-leaf", "oob-leaf-spine")


def bom_rows(fab: Fabric) -> list[dict[str, Any]]:
    """Every BOM line with its unit price, line total and the price's source (USD, W)."""
    out = []
    for b in fab.bom:
        if not isinstance(b, BomLine):
            continue
        out.append({
            "category": b.category, "part": b.part, "name": b.name, "network": b.network,
            "role": b.role, "quantity": b.quantity, "length_m": b.length_m,
            "unit_price_usd": b.unit_price_usd, "total_usd": b.total_usd,
            "unit_power_w": b.unit_power_w, "price_source": b.price_source or None,
            "price_estimate": price_is_estimate(b.price_source),
        })
    return out


def capex_by_category(bom: list[dict[str, Any]], servers_usd: float, storage_usd: float,
                      racks_usd: float, cooling_usd: float) -> dict[str, float]:
    """Capex in the categories of a TCO sheet (USD): servers, network (switches), optics and
    cables, storage, racks and power (enclosures, PDUs, liquid cooling). The network and
    optics parts are the priced BOM lines, so the five sum to the TCO's capex."""
    def total(*cats: str) -> float:
        return sum(r["total_usd"] or 0.0 for r in bom if r["category"] in cats)

    return {"servers": servers_usd, "network": total("switch"),
            "optics_and_cables": total("transceiver", "cable"), "storage": storage_usd,
            "racks_and_power": racks_usd + cooling_usd}


def _bin(length_m: float) -> str:
    return next(name for name, hi in LENGTH_BINS if length_m <= hi)


def cabling_rows(fab: Fabric, cat: Catalog) -> list[dict[str, Any]]:
    """Per tier: links, network, link speed, media, cable parts with counts (a twin-port DAC
    carries two links), optic modules (per device cage, as the BOM counts them) and how many
    cables fall in each length bin (stock lengths)."""
    cables = {c.id: c for c in cat.all("cables")}
    links_of = {t.id: t.links for t in cat.all("transceivers")}
    tiers: dict[str, list[Any]] = defaultdict(list)
    for lk in fab.links:
        tiers[lk.tier].append(lk)
    rows = []
    for tier in sorted(tiers, key=lambda t: (TIER_ORDER.index(t) if t in TIER_ORDER else 99, t)):
        links = tiers[tier]
        per_cable: dict[tuple[str, float, str, str, str, str], int] = defaultdict(int)
        cage: dict[tuple[str, str, str], int] = defaultdict(int)
        for lk in links:
            if not lk.cable:
                continue  # a storage link no catalog part joins (no cable to count)
            c = cables[lk.cable]
            length = stock_length(c.lengths_m, lk.length_m)
            key = ((lk.cable, length, lk.a, lk.a_cage or lk.a_port, lk.b, lk.b_cage or lk.b_port)
                   if c.links > 1 else (lk.cable, length, "", "", "", ""))
            per_cable[key] += 1
            if lk.a_xcvr:
                cage[(lk.a, lk.a_cage or lk.a_port, lk.a_xcvr)] += 1
            if lk.b_xcvr:
                cage[(lk.b, lk.b_cage or lk.b_port, lk.b_xcvr)] += 1
        parts: Counter[str] = Counter()
        bins: Counter[str] = Counter()
        for key, n in per_cable.items():
            k = math.ceil(n / cables[key[0]].links)
            parts[key[0]] += k
            bins[_bin(key[1])] += k
        optics: Counter[str] = Counter()
        for (_, _, part), n in cage.items():
            optics[part] += math.ceil(n / links_of[part])
        lengths = [lk.length_m for lk in links]
        rows.append({
            "tier": tier, "network": links[0].network, "links": len(links),
            "speed_gbps": links[0].speed_gbps,
            "media": dict(Counter(lk.media for lk in links)),
            "cables": sum(parts.values()), "cable_parts": dict(sorted(parts.items())),
            "transceivers": sum(optics.values()), "transceiver_parts": dict(sorted(optics.items())),
            "length_bins": {name: bins.get(name, 0) for name, _ in LENGTH_BINS},
            "length_m_min": min(lengths), "length_m_max": max(lengths),
            "length_m_mean": sum(lengths) / len(lengths),
        })
    return rows


def shape_dict(fab: Fabric) -> dict[str, Any]:
    """What one scalable unit and one pod hold (the SU drawing's numbers), per plane."""
    s = fab.shape
    hosts_per_node = fab.server.hosts
    return {
        "rails": s.rails, "planes": s.planes, "radix": s.radix, "tiers": s.tiers,
        "su_hosts": s.su_hosts, "nodes_per_su": math.ceil(s.su_hosts / hosts_per_node),
        "hosts_per_node": hosts_per_node, "sus": s.sus, "pods": s.pods,
        "sus_per_pod": s.sus_per_pod, "leaves_per_su": s.leaves_per_su,
        "leaves_per_rail_su": s.leaves_per_rail_su, "rails_per_leaf": s.rails_per_leaf,
        "leaf_down_ports": s.leaf.down, "leaf_up_ports": s.leaf.up,
        "spines_per_pod": s.spines_per_pod if s.tiers > 1 else 0,
        "spine_down_ports": s.spine.down, "spine_up_ports": s.spine.up,
        "leaf_spine_parallel": s.leaf_spine_parallel,
        "spine_core_parallel": s.spine_core_parallel, "core_group_size": s.core_group_size,
        "gpus_per_host": fab.server.gpus // hosts_per_node,
        "nvlink_domain_gpus": fab.server.nvlink_domain_gpus,
        "frontend_link_speed_gbps": fab.frontend.speed_gbps,
        "oob_uplink_switch": fab.oob_uplink.switch.id,
        "oob_uplink_speed_gbps": fab.oob_uplink.speed_gbps,
    }
