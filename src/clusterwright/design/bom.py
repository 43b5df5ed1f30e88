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

__all__ = ["BomLine", "bill_of_materials", "fabric_summary", "plan_fabric", "summary"]

from clusterwright.catalog.registry import Catalog
from clusterwright.design.addressing import assign
from clusterwright.design.bom_line import BomLine
from clusterwright.design.fabric import SWITCH_ROLES, Fabric, design_fabric
from clusterwright.design.fabric_summary import fabric_summary
from clusterwright.design.pfc import pfc_plan
from clusterwright.design.physical import cable_counts, choose_media, place, transceiver_counts
from clusterwright.spec.fabric import FabricRequest

_NETWORK_OF_ROLE = {
    "leaf": "backend", "spine": "backend", "core": "backend", "fe-leaf": "frontend",
    "fe-spine": "frontend", "fe-core": "frontend", "oob-leaf": "oob", "oob-spine": "oob",
}


def bill_of_materials(fab: Fabric, cat: Catalog) -> list[BomLine]:
    """BOM lines, servers first, then the storage tier's units, switches by role,
    transceivers and cables."""
    lines: list[BomLine] = []
    srv = fab.server
    lines.append(BomLine(
        category="server", part=srv.id, name=srv.name, network="compute", role="host",
        quantity=fab.request.nodes, length_m=None, unit_price_usd=srv.price_usd,
        unit_power_w=srv.max_power_kw * 1e3, unit_max_power_w=srv.max_power_kw * 1e3,
        price_source=srv.price_source or "",
    ))
    st = fab.storage
    if st is not None and fab.request.storage_units:
        # The storage tier the plan bought: priced and powered with the TCO's storage, listed
        # here so the order and the cabling plan name the same units.
        lines.append(BomLine(
            category="storage", part=st.id, name=st.name, network="frontend", role="storage",
            quantity=fab.request.storage_units, length_m=None, unit_price_usd=st.price_usd,
            unit_power_w=st.power_w, unit_max_power_w=st.power_w,
            price_source=st.price_source or "",
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
    fab.pfc = pfc_plan(fab, cat, req.mtu, req.lossless_priorities)
    if fab.pfc.protocol == "ethernet":
        fab.notes.append(fab.pfc.note)
    assign(fab)
    fab.bom = list(bill_of_materials(fab, cat))
    return fab


def summary(fab: Fabric) -> dict[str, object]:
    """The ``fabric design`` contract keys and the decisions behind them (``FabricSummary``
    as a dict; typed readers call ``fabric_summary``)."""
    return fabric_summary(fab).as_dict()
