"""Power view of a designed cluster: the fabric plan's racks and network BOM, the catalog's
server and GPU power, and the pure power model (``model/power.py``).

The fabric is planned as ``fabric design`` plans it (``plan_fabric``), with the rack power
limit set to the cooling mode's per-rack maximum unless the user gives ``rack_kw``: racks,
their nameplate kW and the network's typical and maximum power all come from that plan.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictStr

from clusterwright.catalog.registry import Catalog
from clusterwright.catalog.schema import Server
from clusterwright.design.bom import plan_fabric
from clusterwright.design.fabric import Fabric
from clusterwright.design.fabric_summary import FabricSummary, fabric_summary
from clusterwright.design.physical import default_cooling
from clusterwright.model.power import (
    HOURS_PER_YEAR,
    ClusterPower,
    CoolingCheck,
    PowerSwing,
    annual_energy_kwh,
    cluster_power,
    cooling_check,
    system_racks,
    training_swing,
)
from clusterwright.spec.fabric import MAX_NODES, MAX_RACK_KW, MAX_STORAGE_UNITS, FabricRequest

Cooling = Literal["air", "liquid"]
# Facility over IT power: 1.0 is the ideal; the worst data centers surveyed run near 2.5
# (Uptime Institute Global Data Center Survey 2023: average 1.58). Scenario files use the
# same [1, 3].
MAX_PUE = 3.0
LIMIT_NAME: dict[str, str] = {
    "air": "air_cooled_rack_max_kw",
    "liquid": "liquid_cooled_rack_max_kw",
}


class PowerRequest(BaseModel):
    """Inputs of ``ops power``. None means the catalog default named in the field comment."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    server: StrictStr
    nodes: Annotated[int, Field(gt=0, le=MAX_NODES)]
    cooling: Cooling | None = None  # None: the server's own cooling (air for air-or-liquid)
    # None: the cooling mode's per-rack limit
    rack_kw: Annotated[float, Field(gt=0, le=MAX_RACK_KW, allow_inf_nan=False)] | None = None
    # None: pue_<cooling>
    pue: Annotated[float, Field(ge=1.0, le=MAX_PUE, allow_inf_nan=False)] | None = None
    # the designed storage tier's draw (design/storage_plan.py); 0: not in the plan
    storage_kw: Annotated[float, Field(ge=0, le=1e6, allow_inf_nan=False)] = 0.0
    # The storage tier's units the fabric wires and racks (FabricRequest.storage_system and
    # storage_units; both or neither); their draw is storage_kw.
    storage_system: StrictStr | None = None
    storage_units: Annotated[int, Field(ge=1, le=MAX_STORAGE_UNITS)] | None = None


@dataclass(frozen=True)
class RackPower:
    """Per-rack power of the plan, kW (nameplate is what the PDUs must carry)."""

    compute_racks: int
    network_racks: int
    servers_per_rack: int  # in the fullest compute rack
    compute_max_kw: float  # nameplate of the densest compute rack
    compute_typical_max_kw: float  # typical draw of the densest compute rack
    network_max_kw: float  # nameplate of the densest network rack
    limit_kw: float  # the rack limit the plan used
    racks_per_system: int = 1  # racks one rack-scale system fills (TPU pods, UltraServers)


@dataclass(frozen=True)
class PowerPlan:
    """Everything ``ops power`` reports, with the fabric plan it came from."""

    server: Server
    nodes: int
    cooling: str
    pue: float
    power: ClusterPower
    racks: RackPower
    checks: dict[str, CoolingCheck]
    swing: PowerSwing
    gpu_tdp_w: float
    gpu_idle_w: float
    fabric: Fabric
    fabric_summary: dict[str, Any]  # summary.as_dict(), for readers of the dict
    assumptions_used: tuple[str, ...]
    summary: FabricSummary

    @property
    def gpus(self) -> int:
        return self.nodes * self.server.gpus

    def as_dict(self) -> dict[str, Any]:
        p, r = self.power, self.racks
        energy = annual_energy_kwh(p.typical_kw, self.pue)
        return {
            "server": self.server.id,
            "nodes": self.nodes,
            "gpus": self.gpus,
            "cooling": self.cooling,
            "pue": self.pue,
            "it_power_kw": {
                "typical": p.typical_kw,
                "nameplate": p.nameplate_kw,
                "idle": p.idle_kw,
            },
            "it_power_breakdown_kw": {
                "servers_typical": p.servers_typical_kw,
                "servers_nameplate": p.servers_nameplate_kw,
                "servers_idle": p.servers_idle_kw,
                "network_typical": p.network_typical_kw,
                "network_nameplate": p.network_nameplate_kw,
                "storage": p.storage_kw,
            },
            "facility_power_kw": {
                "typical": p.typical_kw * self.pue,
                "nameplate": p.nameplate_kw * self.pue,
            },
            "annual_energy_kwh": energy,
            "annual_energy_basis": (
                f"typical IT {p.typical_kw:.1f} kW x {HOURS_PER_YEAR:.0f} h x PUE {self.pue:g}"
            ),
            "racks": {
                "compute": r.compute_racks,
                "network": r.network_racks,
                "total": r.compute_racks + r.network_racks,
                "servers_per_rack": r.servers_per_rack,
                "racks_per_system": r.racks_per_system,
                "limit_kw": r.limit_kw,
            },
            "per_rack_kw": {
                "compute_nameplate_max": r.compute_max_kw,
                "compute_typical_max": r.compute_typical_max_kw,
                "network_nameplate_max": r.network_max_kw,
            },
            "cooling_feasibility": {
                mode: {
                    "limit_kw": c.limit_kw,
                    "densest_rack_kw": c.max_rack_kw,
                    "feasible": c.feasible,
                    "servers_per_rack": c.servers_per_rack,
                }
                for mode, c in self.checks.items()
            },
            "training_swing": {
                "high_mw": self.swing.high_mw,
                "low_mw": self.swing.low_mw,
                "swing_mw": self.swing.swing_mw,
                "swing_fraction": self.swing.swing_fraction,
                "ramp_s": self.swing.ramp_s,
                "ramp_mw_per_s": self.swing.ramp_mw_per_s,
                "gpu_tdp_w": self.gpu_tdp_w,
                "gpu_idle_w": self.gpu_idle_w,
                "basis": "all GPUs from TDP to idle at once; IT side, PUE not applied",
            },
            "assumptions": list(self.assumptions_used),
            "notes": list(self.summary.notes),
        }


def power_plan(req: PowerRequest, cat: Catalog, fab: Fabric | None = None) -> PowerPlan:
    """Plan the fabric (unless ``fab`` is given) and compute the cluster's power view."""
    server = cat.server(req.server)
    gpu = cat.gpu(server.gpu)
    cooling = req.cooling or default_cooling(server)
    limit = cat.assumption(LIMIT_NAME[cooling])
    rack_kw = req.rack_kw or limit
    pue = req.pue if req.pue is not None else cat.assumption(f"pue_{cooling}")
    if fab is None:
        fab = plan_fabric(
            FabricRequest(server=server.id, nodes=req.nodes, rack_kw=rack_kw, cooling=cooling,
                          storage_system=req.storage_system, storage_units=req.storage_units),
            cat,
        )
    summ = fabric_summary(fab)
    typical_fraction = cat.assumption("server_typical_power_fraction")
    idle_fraction = cat.assumption("gpu_idle_power_fraction")
    power = cluster_power(
        servers=req.nodes,
        server_nameplate_kw=server.max_power_kw,
        gpus_per_server=server.gpus,
        gpu_tdp_w=gpu.tdp_w,
        typical_fraction=typical_fraction,
        gpu_idle_fraction=idle_fraction,
        network_nameplate_kw=summ.power_max_w / 1e3,
        network_typical_kw=summ.power_w / 1e3,
        storage_kw=req.storage_kw,
    )
    # The limit the racks were planned at: the asked kW, capped by the cooling mode.
    units = round(cat.assumption("rack_usable_units"))
    racks = _rack_power(fab, server, typical_fraction, min(rack_kw, limit), units)
    densest = max(racks.compute_max_kw, racks.network_max_kw)
    checks = {
        mode: cooling_check(
            mode, cat.assumption(LIMIT_NAME[mode]), densest, server.max_power_kw,
            server.rack_units, units, rack_scale=server.kind == "rack",
        )
        for mode in ("air", "liquid")
    }
    swing = training_swing(power, cat.assumption("training_power_ramp_s"))
    return PowerPlan(
        server=server, nodes=req.nodes, cooling=cooling, pue=pue, power=power, racks=racks,
        checks=checks, swing=swing, gpu_tdp_w=gpu.tdp_w, gpu_idle_w=gpu.tdp_w * idle_fraction,
        fabric=fab,
        fabric_summary=summ.as_dict(), summary=summ,
        assumptions_used=(
            "server_typical_power_fraction", "gpu_idle_power_fraction", "training_power_ramp_s",
            LIMIT_NAME["air"], LIMIT_NAME["liquid"], "rack_usable_units",
            *(() if req.pue is not None else (f"pue_{cooling}",)),
        ),
    )


def _rack_power(fab: Fabric, server: Server, typical_fraction: float, limit_kw: float,
                rack_units: int) -> RackPower:
    compute = [r for r in fab.racks if r.kind == "compute"]
    network = [r for r in fab.racks if r.kind != "compute"]
    # A rack-scale system over several racks counts as one in each of them.
    per_rack = max((-(-len(r.devices) // server.hosts) for r in compute), default=0)
    top = max((r.power_w for r in compute), default=0.0) / 1e3
    return RackPower(
        compute_racks=len(compute),
        network_racks=len(network),
        servers_per_rack=per_rack,
        compute_max_kw=top,
        compute_typical_max_kw=top * typical_fraction,
        network_max_kw=max((r.power_w for r in network), default=0.0) / 1e3,
        limit_kw=limit_kw,
        racks_per_system=(system_racks(server.rack_units, rack_units)
                          if server.kind == "rack" else 1),
    )
