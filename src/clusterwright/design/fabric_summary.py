"""The summary numbers of a fabric design, typed and built once from the materialized design
(``FabricSummary``); ``as_dict`` is the ``fabric design`` contract and ``blueprint_dict`` the
blueprint's ``fabric`` section. Readers (power plan, reliability, views) use the fields."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Any

from clusterwright.design.bom_line import BomLine
from clusterwright.design.fabric_model import Fabric

BACKEND_TIERS = ("node-leaf", "leaf-spine", "spine-core")


@dataclass(frozen=True)
class FrontendSummary:
    switch: str
    link_speed_gbps: float
    leaf_switches: int
    spine_switches: int
    core_switches: int
    tiers: int | None
    storage_ports: int
    storage_read_gbps_per_gpu: float  # GB/s per GPU
    tenants: int
    # The storage tier's units wired (request.storage_system; None: targets sized from
    # bandwidth), their ports' rate (Gb/s) and the links no catalog part joins to the leaves.
    storage_system: str | None = None
    storage_units: int = 0
    storage_link_gbps: float | None = None
    storage_links_unresolved: int = 0


@dataclass(frozen=True)
class OobSummary:
    switch: str
    leaf_switches: int
    aggregation_switches: int
    ports: int


@dataclass(frozen=True)
class FabricSummary:
    """Counts, power (W) and cost (USD) of one fabric design. ``tiers`` is 0 and the backend
    counts are 0 when no backend is built (``backend`` is False)."""

    server: str
    nodes: int
    hosts: int
    gpus: int
    backend: bool
    tiers: int
    planes: int
    protocol: str
    switch: str
    link_speed_gbps: float
    radix: int
    su_hosts: int
    nodes_per_su: int
    scalable_units: int
    pods: int
    leaf_oversubscription: float  # down:up, 1.0 on one tier (every host one hop apart)
    spine_oversubscription: float | None  # three tiers only
    max_nodes_at_these_tiers: int
    leaf_switches: int
    spine_switches: int
    core_switches: int
    links_by_tier: dict[str, int]  # backend tiers only
    frontend: FrontendSummary
    oob: OobSummary
    links_total: int
    switches_total: int
    transceivers: int
    cables: int
    racks_compute: int
    racks_network: int
    rows: int
    power_w: float  # network, typical
    power_max_w: float  # network, nameplate
    cost_usd: float  # network, priced parts
    unpriced: tuple[str, ...]
    servers_cost_usd: float | None
    choices: dict[str, str]
    notes: tuple[str, ...]
    pfc: dict[str, Any] | None = None  # design.pfc.PfcPlan.as_dict(); None before placement

    @property
    def backend_switches(self) -> int:
        return self.leaf_switches + self.spine_switches + self.core_switches

    @property
    def backend_links(self) -> int:
        return sum(self.links_by_tier.values())

    @property
    def typical_power_ratio(self) -> float:
        """Network typical over nameplate power (1.0 with no network power)."""
        return self.power_w / self.power_max_w if self.power_max_w else 1.0

    def as_dict(self) -> dict[str, Any]:
        """The ``fabric design`` contract keys and the decisions behind them."""
        return {
            "server": self.server, "nodes": self.nodes, "hosts": self.hosts, "gpus": self.gpus,
            "backend": "rail" if self.backend else "none",
            "tiers": self.tiers, "planes": self.planes, "protocol": self.protocol,
            "switch": self.switch, "link_speed_gbps": self.link_speed_gbps, "radix": self.radix,
            "su_hosts": self.su_hosts, "scalable_units": self.scalable_units, "pods": self.pods,
            "oversubscription": {"leaf": self.leaf_oversubscription,
                                 "spine": self.spine_oversubscription},
            "max_nodes_at_these_tiers": self.max_nodes_at_these_tiers,
            "leaf_switches": self.leaf_switches, "spine_switches": self.spine_switches,
            "core_switches": self.core_switches, "links_by_tier": dict(self.links_by_tier),
            "frontend": {
                "switch": self.frontend.switch,
                "link_speed_gbps": self.frontend.link_speed_gbps,
                "leaf_switches": self.frontend.leaf_switches,
                "spine_switches": self.frontend.spine_switches,
                "core_switches": self.frontend.core_switches,
                "tiers": self.frontend.tiers,
                "storage_ports": self.frontend.storage_ports,
                "storage_read_gbps_per_gpu": self.frontend.storage_read_gbps_per_gpu,
                "tenants": self.frontend.tenants,
                "storage_system": self.frontend.storage_system,
                "storage_units": self.frontend.storage_units,
                "storage_link_gbps": self.frontend.storage_link_gbps,
                "storage_links_unresolved": self.frontend.storage_links_unresolved,
            },
            "oob": {
                "switch": self.oob.switch, "leaf_switches": self.oob.leaf_switches,
                "aggregation_switches": self.oob.aggregation_switches, "ports": self.oob.ports,
            },
            "links_total": self.links_total, "switches_total": self.switches_total,
            "transceivers": self.transceivers, "cables": self.cables,
            "racks": {"compute": self.racks_compute, "network": self.racks_network,
                      "rows": self.rows},
            "power_w": self.power_w, "power_max_w": self.power_max_w, "cost_usd": self.cost_usd,
            "unpriced": list(self.unpriced), "servers_cost_usd": self.servers_cost_usd,
            "choices": dict(self.choices), "notes": list(self.notes),
            "pfc": self.pfc,
        }

    def blueprint_dict(self) -> dict[str, Any]:
        """The blueprint's ``fabric`` section: the contract keys with the leaf figure as
        ``oversubscription`` and both tiers under ``oversubscription_by_tier``."""
        out = self.as_dict()
        out["oversubscription_by_tier"] = out["oversubscription"]
        out["oversubscription"] = self.leaf_oversubscription
        out["nodes_per_su"] = self.nodes_per_su
        return out


def fabric_summary(fab: Fabric) -> FabricSummary:
    """Summarize a planned fabric (after ``plan_fabric``: racks and BOM are in place)."""
    sh = fab.shape
    bom: list[BomLine] = [b for b in fab.bom if isinstance(b, BomLine)]
    # The network's parts: not the servers, nor the storage units (the TCO's storage line).
    network = [b for b in bom if b.category not in ("server", "storage")]
    tiers = Counter(lk.tier for lk in fab.links)
    fsh = fab.frontend_shape
    built = fab.has_backend

    def roles(role: str) -> int:
        return sum(1 for d in fab.devices if d.role == role)

    storage_links = fab.links_in("fe-storage-leaf")

    leaf_osub = (round(min(sh.su_hosts / sh.leaves_per_rail_su, sh.leaf.down) / sh.leaf.up, 3)
                 if sh.leaf.up else 1.0)
    choices = {"frontend_switch": fab.frontend.why, "oob_switch": fab.oob.why,
               "oob_uplink_switch": fab.oob_uplink.why}
    if built:
        choices = {"backend_switch": fab.backend.why} | choices
    return FabricSummary(
        server=fab.server.id, nodes=fab.request.nodes, hosts=sh.hosts,
        gpus=fab.request.nodes * fab.server.gpus, backend=built,
        tiers=sh.tiers if built else 0, planes=sh.planes, protocol=fab.backend.protocol,
        switch=fab.backend.switch.id, link_speed_gbps=fab.backend.speed_gbps, radix=sh.radix,
        su_hosts=sh.su_hosts, nodes_per_su=math.ceil(sh.su_hosts / fab.server.hosts),
        scalable_units=sh.sus, pods=sh.pods,
        leaf_oversubscription=leaf_osub,
        spine_oversubscription=round(sh.spine.oversubscription, 3) if sh.tiers == 3 else None,
        max_nodes_at_these_tiers=sh.max_hosts // fab.server.hosts,
        leaf_switches=sh.leaf_switches if built else 0,
        spine_switches=sh.spine_switches if built else 0,
        core_switches=sh.core_switches if built else 0,
        links_by_tier={t: tiers.get(t, 0) for t in BACKEND_TIERS},
        frontend=FrontendSummary(
            switch=fab.frontend.switch.id, link_speed_gbps=fab.frontend.speed_gbps,
            leaf_switches=roles("fe-leaf"), spine_switches=roles("fe-spine"),
            core_switches=roles("fe-core"), tiers=fsh.tiers if fsh else None,
            storage_ports=tiers.get("fe-storage-leaf", 0),
            storage_read_gbps_per_gpu=fab.storage_read_gbps_per_gpu, tenants=len(fab.tenants),
            storage_system=fab.storage.id if fab.storage is not None else None,
            storage_units=roles("storage"),
            storage_link_gbps=next((lk.speed_gbps for lk in storage_links), None),
            storage_links_unresolved=sum(1 for lk in storage_links if not lk.cable)),
        oob=OobSummary(switch=fab.oob.switch.id, leaf_switches=roles("oob-leaf"),
                       aggregation_switches=roles("oob-spine"),
                       ports=tiers.get("oob-node-leaf", 0)),
        links_total=len(fab.links),
        switches_total=sum(b.quantity for b in bom if b.category == "switch"),
        transceivers=sum(b.quantity for b in bom if b.category == "transceiver"),
        cables=sum(b.quantity for b in bom if b.category == "cable"),
        racks_compute=sum(1 for r in fab.racks if r.kind == "compute"),
        racks_network=sum(1 for r in fab.racks if r.kind == "network"),
        rows=len({r.row for r in fab.racks}),
        power_w=round(sum(b.total_power_w for b in network), 1),
        power_max_w=round(sum(b.total_max_power_w for b in network), 1),
        cost_usd=round(sum(b.total_usd or 0.0 for b in network if b.total_usd is not None), 2),
        unpriced=tuple(sorted({b.part for b in network if b.total_usd is None})),
        servers_cost_usd=next((b.total_usd for b in bom if b.category == "server"), None),
        choices=choices, notes=tuple(fab.notes),
        pfc=fab.pfc.as_dict() if fab.pfc is not None else None,
    )
