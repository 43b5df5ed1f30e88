"""Power of a GPU cluster: IT load (nameplate, typical, idle), facility power with PUE, energy,
rack cooling limits and the power swing of synchronous training. Pure functions, kW and MW.

Model (every constant comes from the caller, who reads it from the catalog):

- nameplate IT = servers x vendor maximum + network maximum (switches' max draw plus optics);
- typical IT = servers x maximum x typical fraction + network typical (BOM);
- idle IT = typical IT with every GPU dropped from TDP to its idle power, everything else
  (CPUs, memory, fans, NICs, switches) left at typical. The drop per server,
  gpus x TDP x (1 - idle fraction), is also the per-server swing of synchronous training;
- facility power = IT x PUE (The Green Grid, PUE: A Comprehensive Examination of the Metric,
  WP#49, 2012: PUE = total facility energy / IT equipment energy);
- annual energy = IT kW x hours x PUE (DESIGN.md: with PUE 1.0 it is the IT energy).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

HOURS_PER_YEAR = 8760.0  # 365 days; a leap year is 0.27 % longer


@dataclass(frozen=True)
class ClusterPower:
    """IT power of a cluster, kW. ``servers_*`` and ``network_*`` sum to the totals."""

    servers: int
    servers_nameplate_kw: float
    servers_typical_kw: float
    servers_idle_kw: float
    network_nameplate_kw: float
    network_typical_kw: float
    storage_kw: float = 0.0  # the storage tier, at its rated draw whatever the GPUs do

    @property
    def nameplate_kw(self) -> float:
        return self.servers_nameplate_kw + self.network_nameplate_kw + self.storage_kw

    @property
    def typical_kw(self) -> float:
        return self.servers_typical_kw + self.network_typical_kw + self.storage_kw

    @property
    def idle_kw(self) -> float:
        return self.servers_idle_kw + self.network_typical_kw + self.storage_kw


def gpu_swing_kw(gpus: int, tdp_w: float, idle_fraction: float) -> float:
    """kW one group of ``gpus`` sheds when every GPU falls from TDP to idle:
    gpus x TDP x (1 - idle fraction) / 1000."""
    _fraction("idle_fraction", idle_fraction)
    return gpus * tdp_w * (1.0 - idle_fraction) / 1e3


def cluster_power(
    servers: int,
    server_nameplate_kw: float,
    gpus_per_server: int,
    gpu_tdp_w: float,
    typical_fraction: float,
    gpu_idle_fraction: float,
    network_nameplate_kw: float,
    network_typical_kw: float,
    storage_kw: float = 0.0,
) -> ClusterPower:
    """Nameplate, typical and idle IT power of ``servers`` servers plus their network, kW.

    A server's idle draw is its typical draw less the GPU swing, floored at zero (a rack system
    whose GPUs are most of its nameplate could otherwise go negative with these fractions).
    """
    _fraction("typical_fraction", typical_fraction)
    typical = server_nameplate_kw * typical_fraction
    idle = max(typical - gpu_swing_kw(gpus_per_server, gpu_tdp_w, gpu_idle_fraction), 0.0)
    return ClusterPower(
        servers=servers,
        servers_nameplate_kw=servers * server_nameplate_kw,
        servers_typical_kw=servers * typical,
        servers_idle_kw=servers * idle,
        network_nameplate_kw=network_nameplate_kw,
        network_typical_kw=network_typical_kw,
        storage_kw=storage_kw,
    )


def average_it_kw(power: ClusterPower, utilization: float) -> float:
    """Time-averaged IT kW when a fraction ``utilization`` of GPU-hours is busy (at typical
    draw) and the rest idle: idle + u x (typical - idle)."""
    _utilization(utilization)
    return power.idle_kw + utilization * (power.typical_kw - power.idle_kw)


def facility_kw(it_kw: float, pue: float) -> float:
    """Facility power, kW: IT x PUE."""
    _pue(pue)
    return it_kw * pue


def annual_energy_kwh(it_kw: float, pue: float, hours: float = HOURS_PER_YEAR) -> float:
    """Facility energy over ``hours`` (a year by default), kWh: IT kW x hours x PUE."""
    return facility_kw(it_kw, pue) * hours


@dataclass(frozen=True)
class CoolingCheck:
    """Whether racks of a given density fit one cooling mode."""

    mode: str  # air or liquid
    limit_kw: float  # IT kW one rack of this mode carries
    max_rack_kw: float  # densest rack of the plan (nameplate)
    feasible: bool
    servers_per_rack: int  # most servers one rack of this mode holds (power and rack units)


def system_racks(server_units: int, rack_units: int) -> int:
    """Racks one rack-scale system fills: a TPU pod or an UltraServer is several racks
    (the catalog's ``rack_units`` span them), an NVL72 one."""
    return max(1, math.ceil(server_units / rack_units))


def cooling_check(
    mode: str,
    limit_kw: float,
    max_rack_kw: float,
    server_nameplate_kw: float,
    server_units: int,
    rack_units: int,
    rack_scale: bool = False,
) -> CoolingCheck:
    """Check a plan's densest rack against a cooling mode's per-rack limit, and count how many
    servers a rack of that mode holds: floor(limit / nameplate) capped by rack units
    (a rack-scale system is one per rack, or none if it exceeds the limit; one that fills
    several racks, ``server_units`` over ``rack_units``, carries its nameplate in equal
    shares)."""
    if rack_scale:
        span = system_racks(server_units, rack_units)
        per_rack = 1 if server_nameplate_kw / span <= limit_kw + 1e-9 else 0
    else:
        per_rack = min(
            math.floor(limit_kw / server_nameplate_kw + 1e-9), rack_units // server_units
        )
    return CoolingCheck(
        mode=mode,
        limit_kw=limit_kw,
        max_rack_kw=max_rack_kw,
        feasible=max_rack_kw <= limit_kw + 1e-9 and per_rack >= 1,
        servers_per_rack=per_rack,
    )


@dataclass(frozen=True)
class PowerSwing:
    """Synchronous-training power step: every GPU drops from busy to idle at once
    (checkpoint waits, exposed collectives, job start and stop; Llama 3 paper, arXiv 2407.21783:
    swings 'on the order of tens of megawatts', operations.md 1.1). IT-side MW; the cooling
    plant does not follow a one-second step, so PUE is not applied."""

    high_mw: float  # typical IT, all GPUs busy
    low_mw: float  # all GPUs idle
    ramp_s: float

    @property
    def swing_mw(self) -> float:
        return self.high_mw - self.low_mw

    @property
    def swing_fraction(self) -> float:
        """Swing / busy load."""
        return self.swing_mw / self.high_mw if self.high_mw else 0.0

    @property
    def ramp_mw_per_s(self) -> float:
        return self.swing_mw / self.ramp_s


def training_swing(power: ClusterPower, ramp_s: float) -> PowerSwing:
    """The busy-to-idle step of the whole cluster, MW, over ``ramp_s`` seconds."""
    if not (ramp_s > 0 and math.isfinite(ramp_s)):
        raise ValueError(f"ramp_s must be positive, got {ramp_s}")
    return PowerSwing(high_mw=power.typical_kw / 1e3, low_mw=power.idle_kw / 1e3, ramp_s=ramp_s)


def _fraction(name: str, v: float) -> None:
    if not 0.0 <= v <= 1.0:
        raise ValueError(f"{name} must be in [0, 1], got {v}")


def _utilization(u: float) -> None:
    if not 0.0 < u <= 1.0:
        raise ValueError(f"utilization must be in (0, 1], got {u}")


def _pue(pue: float) -> None:
    if not (pue >= 1.0 and math.isfinite(pue)):
        raise ValueError(f"pue must be at least 1.0, got {pue}")
