"""Bill of materials and the summary numbers of a fabric design, and ``plan_fabric``.

Quantities come from the materialized design: switches per part and role, transceivers per
device cage (a twin-port module serves two links), cables per part and orderable length (a
twin-port DAC carries two links). Power is typical (switches' typical draw where the datasheet
gives one, optics and active cables at their maximum) and nameplate (switch maximum). Prices
are the catalog's; an item without one is listed with no price and counted in ``unpriced``,
never priced at zero silently.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from clusterwright.catalog.registry import Catalog
from clusterwright.design.addressing import assign
from clusterwright.design.fabric import SWITCH_ROLES, Fabric, design_fabric
from clusterwright.design.physical import cable_counts, choose_media, place, transceiver_counts
from clusterwright.spec.fabric import FabricRequest


@dataclass(frozen=True)
class BomLine:
    """One line of the bill of materials. Power is per unit, W; price per unit, USD."""

    category: str  # server, switch, transceiver, cable
    part: str
    name: str
    network: str  # backend, frontend, oob, compute, all
    role: str  # leaf, spine, ... or "" for parts shared across roles
    quantity: int
    length_m: float | None
    unit_price_usd: float | None
    unit_power_w: float
    unit_max_power_w: float
    price_source: str

    @property
    def total_usd(self) -> float | None:
        return None if self.unit_price_usd is None else self.unit_price_usd * self.quantity

    @property
    def total_power_w(self) -> float:
        return self.unit_power_w * self.quantity

    @property
    def total_max_power_w(self) -> float:
        return self.unit_max_power_w * self.quantity


_NETWORK_OF_ROLE = {
    "leaf": "backend", "spine": "backend", "core": "backend", "fe-leaf": "frontend",
    "fe-spine": "frontend", "fe-core": "frontend", "oob-leaf": "oob", "oob-spine": "oob",
}


def bill_of_materials(fab: Fabric, cat: Catalog) -> list[BomLine]:
    """BOM lines, servers first, then switches by role, transceivers and cables."""
    lines: list[BomLine] = []
    srv = fab.server
    lines.append(BomLine(
        category="server", part=srv.id, name=srv.name, network="compute", role="host",
        quantity=fab.request.nodes, length_m=None, unit_price_usd=srv.price_usd,
        unit_power_w=srv.max_power_kw * 1e3, unit_max_power_w=srv.max_power_kw * 1e3,
        price_source=srv.price_source or "",
    ))
    per_role = Counter((d.role, d.part) for d in fab.devices if d.role in SWITCH_ROLES)
    for role in SWITCH_ROLES:
        for (r, part), n in sorted(per_role.items()):
            if r != role:
                continue
            sw = cat.switch(part)
            lines.append(BomLine(
                category="switch", part=part, name=sw.name, network=_NETWORK_OF_ROLE[role],
                role=role, quantity=n, length_m=None, unit_price_usd=sw.price_usd,
                unit_power_w=sw.typical_power_w or sw.max_power_w,
                unit_max_power_w=sw.max_power_w, price_source=sw.price_source or "",
            ))
    for part, n in sorted(transceiver_counts(fab, cat).items()):
        t = cat.get("transceivers", part)
        lines.append(BomLine(
            category="transceiver", part=part, name=t.name, network="all", role="", quantity=n,
            length_m=None, unit_price_usd=t.price_usd, unit_power_w=t.power_w,
            unit_max_power_w=t.power_w, price_source=t.price_source or "",
        ))
    for (part, length), n in sorted(cable_counts(fab, cat).items()):
        c = cat.get("cables", part)
        lines.append(BomLine(
            category="cable", part=part, name=c.name, network="all", role="", quantity=n,
            length_m=length, unit_price_usd=c.price_usd, unit_power_w=c.power_w,
            unit_max_power_w=c.power_w, price_source=c.price_source or "",
        ))
    return lines


def plan_fabric(req: FabricRequest, cat: Catalog) -> Fabric:
    """Design, place, cable, address and cost a fabric (every stage of ``fabric design``)."""
    fab = design_fabric(req, cat)
    place(fab, cat)
    choose_media(fab, cat)
    assign(fab)
    fab.bom = list(bill_of_materials(fab, cat))
    return fab


def summary(fab: Fabric) -> dict[str, object]:
    """The ``fabric design`` contract keys and the decisions behind them."""
    sh = fab.shape
    bom: list[BomLine] = [b for b in fab.bom if isinstance(b, BomLine)]
    network = [b for b in bom if b.category != "server"]
    tiers = Counter(lk.tier for lk in fab.links)
    priced = [b for b in network if b.total_usd is not None]
    unpriced = sorted({b.part for b in network if b.total_usd is None})
    fsh = fab.frontend_shape
    return {
        "server": fab.server.id,
        "nodes": fab.request.nodes,
        "hosts": sh.hosts,
        "gpus": fab.request.nodes * fab.server.gpus,
        "tiers": sh.tiers,
        "planes": sh.planes,
        "protocol": fab.backend.protocol,
        "switch": fab.backend.switch.id,
        "link_speed_gbps": fab.backend.speed_gbps,
        "radix": sh.radix,
        "su_hosts": sh.su_hosts,
        "scalable_units": sh.sus,
        "pods": sh.pods,
        "oversubscription": {
            "leaf": (round(min(sh.su_hosts / sh.leaves_per_rail_su, sh.leaf.down) / sh.leaf.up, 3)
                     if sh.leaf.up else 1.0),  # one tier: every host one hop apart
            "spine": round(sh.spine.oversubscription, 3) if sh.tiers == 3 else None,
        },
        "max_nodes_at_these_tiers": sh.max_hosts // fab.server.hosts,
        "leaf_switches": sh.leaf_switches,
        "spine_switches": sh.spine_switches,
        "core_switches": sh.core_switches,
        "links_by_tier": {
            "node-leaf": tiers.get("node-leaf", 0),
            "leaf-spine": tiers.get("leaf-spine", 0),
            "spine-core": tiers.get("spine-core", 0),
        },
        "frontend": {
            "switch": fab.frontend.switch.id,
            "leaf_switches": sum(1 for d in fab.devices if d.role == "fe-leaf"),
            "spine_switches": sum(1 for d in fab.devices if d.role == "fe-spine"),
            "core_switches": sum(1 for d in fab.devices if d.role == "fe-core"),
            "tiers": fsh.tiers if fsh else None,
            "storage_ports": tiers.get("fe-storage-leaf", 0),
            "storage_read_gbps_per_gpu": fab.storage_read_gbps_per_gpu,
            "tenants": len(fab.tenants),
        },
        "oob": {
            "switch": fab.oob.switch.id,
            "leaf_switches": sum(1 for d in fab.devices if d.role == "oob-leaf"),
            "aggregation_switches": sum(1 for d in fab.devices if d.role == "oob-spine"),
            "ports": tiers.get("oob-node-leaf", 0),
        },
        "links_total": len(fab.links),
        "switches_total": sum(b.quantity for b in bom if b.category == "switch"),
        "transceivers": sum(b.quantity for b in bom if b.category == "transceiver"),
        "cables": sum(b.quantity for b in bom if b.category == "cable"),
        "racks": {
            "compute": sum(1 for r in fab.racks if r.kind == "compute"),
            "network": sum(1 for r in fab.racks if r.kind == "network"),
            "rows": len({r.row for r in fab.racks}),
        },
        "power_w": round(sum(b.total_power_w for b in network), 1),
        "power_max_w": round(sum(b.total_max_power_w for b in network), 1),
        "cost_usd": round(sum(b.total_usd or 0.0 for b in priced), 2),
        "unpriced": unpriced,
        "servers_cost_usd": next(
            (b.total_usd for b in bom if b.category == "server"), None
        ),
        "choices": {
            "backend_switch": fab.backend.why,
            "frontend_switch": fab.frontend.why,
            "oob_switch": fab.oob.why,
            "oob_uplink_switch": fab.oob_uplink.why,
        },
        "notes": list(fab.notes),
    }
