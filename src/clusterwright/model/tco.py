"""Total cost of ownership of a GPU cluster against renting it. Pure functions, USD.

On-premises model:

- capex = servers + network (fabric BOM) + storage + racks/PDUs (+ liquid cooling per rack);
  paid at month 0, depreciated straight-line over ``years``;
- annual opex = energy (average IT kW x 8,760 h x PUE x $/kWh) + colocation ($/kW/month on
  the nameplate IT kW reserved, x 12) + support (a fraction of capex per year) + staff
  (FTE x loaded salary).

Cloud model (state it whenever a number is quoted):

- on-demand: only the used GPU-hours are paid, instances x rate x 8,760 h x utilization;
- committed: every hour of the term is paid, used or not, instances x rate x 8,760 h.

Breakeven: the month m where capex + m x opex/12 = m x cloud/12, i.e.
m = capex / ((cloud - opex) / 12); never (None) if the cloud costs no more than the opex.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

HOURS_PER_YEAR = 8760.0
MONTHS_PER_YEAR = 12.0


@dataclass(frozen=True)
class Capex:
    """One-off purchase, USD. The parts sum to ``total_usd``."""

    servers_usd: float
    network_usd: float
    storage_usd: float
    racks_usd: float
    cooling_usd: float

    @property
    def total_usd(self) -> float:
        return (
            self.servers_usd + self.network_usd + self.storage_usd + self.racks_usd
            + self.cooling_usd
        )


@dataclass(frozen=True)
class Opex:
    """Running cost per year, USD. The parts sum to ``total_usd``."""

    energy_usd: float
    colocation_usd: float
    support_usd: float
    staff_usd: float

    @property
    def total_usd(self) -> float:
        return self.energy_usd + self.colocation_usd + self.support_usd + self.staff_usd


def storage_capex_usd(gpus: int, read_gbps_per_gpu: float, usd_per_gbps: float) -> float:
    """Shared storage bought by bandwidth: gpus x GB/s per GPU x $ per GB/s."""
    return gpus * read_gbps_per_gpu * usd_per_gbps


def rack_capex_usd(racks: int, rack_usd: float, pdu_usd: float) -> float:
    """Enclosures and power distribution: racks x (rack + PDUs)."""
    return racks * (rack_usd + pdu_usd)


def annual_energy_cost_usd(energy_kwh: float, usd_per_kwh: float) -> float:
    """Energy bill of a year, USD: kWh (facility, so PUE included) x $/kWh."""
    return energy_kwh * usd_per_kwh


def annual_colocation_usd(it_kw: float, usd_per_kw_month: float) -> float:
    """Colocation rent of a year on ``it_kw`` of reserved IT capacity: kW x $/kW/month x 12."""
    return it_kw * usd_per_kw_month * MONTHS_PER_YEAR


def staff_fte(nodes: int, nodes_per_fte: float, min_fte: float) -> float:
    """Operations staff: nodes / nodes per FTE, at least ``min_fte`` (fractional FTE allowed)."""
    return max(nodes / nodes_per_fte, min_fte)


def annual_opex(
    energy_cost_usd: float,
    colocation_usd: float,
    capex_usd: float,
    support_fraction: float,
    fte: float,
    loaded_usd_per_fte: float,
) -> Opex:
    """Yearly running cost: energy + colocation + support (fraction of capex) + staff."""
    return Opex(
        energy_usd=energy_cost_usd,
        colocation_usd=colocation_usd,
        support_usd=capex_usd * support_fraction,
        staff_usd=fte * loaded_usd_per_fte,
    )


def instances_for(gpus: int, gpus_per_instance: int) -> int:
    """Cloud instances that give at least ``gpus`` GPUs."""
    return math.ceil(gpus / gpus_per_instance)


def cloud_on_demand_annual_usd(
    instances: int, usd_per_instance_hour: float, utilization: float
) -> float:
    """On-demand: only used hours are paid, instances x rate x 8,760 x utilization."""
    return instances * usd_per_instance_hour * HOURS_PER_YEAR * utilization


def cloud_committed_annual_usd(instances: int, usd_per_instance_hour: float) -> float:
    """Committed (reserved, capacity block): every hour of the term, instances x rate x 8,760."""
    return instances * usd_per_instance_hour * HOURS_PER_YEAR


def breakeven_months(
    capex_usd: float, opex_annual_usd: float, cloud_annual_usd: float
) -> float | None:
    """Months until owning costs less than renting: capex / ((cloud - opex) / 12).
    None when renting costs no more than running the owned cluster (never breaks even)."""
    saving_per_month = (cloud_annual_usd - opex_annual_usd) / MONTHS_PER_YEAR
    if saving_per_month <= 0:
        return None
    return capex_usd / saving_per_month


def cost_per_gpu_hour(
    capex_usd: float, years: float, opex_annual_usd: float, gpus: int, utilization: float
) -> float:
    """Owned cost per used GPU-hour, USD: (capex / years + opex) / (gpus x 8,760 x u)."""
    if not 0.0 < utilization <= 1.0:
        raise ValueError(f"utilization must be in (0, 1], got {utilization}")
    return (capex_usd / years + opex_annual_usd) / (gpus * HOURS_PER_YEAR * utilization)


def breakeven_utilization(
    owned_usd_per_gpu_hour_at_full: float, cloud_usd_per_gpu_hour: float
) -> float:
    """Utilization above which owning is cheaper than on-demand renting, when the owned cost
    does not change with use: owned cost at 100 % / cloud rate (operations.md 4.4)."""
    return owned_usd_per_gpu_hour_at_full / cloud_usd_per_gpu_hour


def cost_per_million_tokens(usd_per_gpu_hour: float, tokens_per_s_per_gpu: float) -> float:
    """USD per 10^6 tokens served: $/GPU-h / (tokens/s x 3,600) x 10^6."""
    if not tokens_per_s_per_gpu > 0:
        raise ValueError(f"tokens_per_s_per_gpu must be positive, got {tokens_per_s_per_gpu}")
    return usd_per_gpu_hour / (tokens_per_s_per_gpu * 3600.0) * 1e6
