"""Energy and carbon of AI work, and the power trace of a synchronous training job. Pure
functions; kWh, kW, MW, seconds, tonnes CO2e where a name says ``t``.

- **Energy** of a run: each component's power (GPU servers at their sustained training draw,
  the network, the storage tier) x the hours, times the facility's PUE (The Green Grid WP#49).
  A model card's figure is a convention instead: GPU-hours x the GPU's TDP x PUE (Meta's
  Llama cards: "peak power capacity per GPU device ... adjusted for power usage efficiency";
  BLOOM's "dynamic" energy: GPU-hours x TDP, no PUE). Both are computed, never mixed.
- **Serving**: the server's sustained draw with its GPUs at the serving power model's board
  power (``model/serving_power``: idle + (TDP - idle) x activity of the modelled
  iterations, prefill and decode alike) instead of TDP (``serving_server_kw``).
- **Carbon**: location-based = energy x the grid's average intensity; market-based = the part
  not covered by contracted renewables x the same intensity (GHG Protocol Scope 2 Guidance,
  2015: the residual mix is approximated by the grid average). Embodied: the hardware's
  manufacturing carbon amortised over its life at its utilisation, charged per GPU-hour used
  (Luccioni et al., JMLR 2023, for BLOOM).
- **Power trace**: a synchronous step draws its sustained power while it computes and falls
  towards idle while every GPU waits (exposed communication, a checkpoint stall, a restart),
  the whole cluster at once (Llama 3 paper: swings of "tens of megawatts"). The trace repeats
  the step's phases, with its swing and ramp against a grid limit, and what capping, a battery
  or a dummy load cost to soften it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from clusterwright.errors import InputError
from clusterwright.model.checks import non_negative as _non_negative


def _pue(pue: float) -> None:
    if not (pue >= 1.0 and math.isfinite(pue)):
        raise InputError(f"pue: must be at least 1.0, got {pue}")


def _share(name: str, v: float) -> None:
    if not 0.0 <= v <= 1.0:
        raise InputError(f"{name}: must be in [0, 1], got {v}")


# --------------------------------------------------------------------------- energy


@dataclass(frozen=True)
class Energy:
    """Energy of one run or one year, kWh, by component; facility = IT x PUE."""

    servers_kwh: float
    network_kwh: float
    storage_kwh: float
    pue: float

    @property
    def it_kwh(self) -> float:
        return self.servers_kwh + self.network_kwh + self.storage_kwh

    @property
    def facility_kwh(self) -> float:
        return self.it_kwh * self.pue

    @property
    def cooling_and_losses_kwh(self) -> float:
        return self.facility_kwh - self.it_kwh

    def as_dict(self) -> dict[str, float]:
        return {"servers_kwh": self.servers_kwh, "network_kwh": self.network_kwh,
                "storage_kwh": self.storage_kwh,
                "cooling_and_losses_kwh": self.cooling_and_losses_kwh,
                "it_kwh": self.it_kwh, "facility_kwh": self.facility_kwh, "pue": self.pue}


def energy(hours: float, servers_kw: float, network_kw: float = 0.0, storage_kw: float = 0.0,
           pue: float = 1.0) -> Energy:
    """Energy of ``hours`` at these component draws (kW, IT side), kWh."""
    for name, v in (("hours", hours), ("server power", servers_kw),
                    ("network power", network_kw), ("storage power", storage_kw)):
        _non_negative(name, v)
    _pue(pue)
    return Energy(servers_kw * hours, network_kw * hours, storage_kw * hours, pue)


def model_card_kwh(gpu_hours: float, tdp_w: float, pue: float = 1.0) -> float:
    """The model-card convention: GPU-hours x TDP x PUE, kWh (Meta's Llama cards; BLOOM's
    dynamic energy with PUE 1)."""
    _non_negative("GPU-hours", gpu_hours)
    _non_negative("TDP", tdp_w)
    _pue(pue)
    return gpu_hours * tdp_w / 1e3 * pue


def kwh_per_million_tokens(kw: float, tokens_per_s: float, pue: float = 1.0) -> float:
    """Facility kWh per million tokens of a fleet drawing ``kw`` (IT) while producing
    ``tokens_per_s``."""
    _non_negative("power", kw)
    _pue(pue)
    if not tokens_per_s > 0:
        raise InputError(f"tokens per second: must be positive, got {tokens_per_s}")
    return kw * pue / (tokens_per_s * 3600.0) * 1e6


def serving_server_kw(sustained_kw: float, gpus: int, tdp_w: float, gpu_w: float) -> float:
    """A server's draw while serving, kW: its sustained training draw with each GPU at
    ``gpu_w`` (the serving power model, ``model/serving_power``) instead of at TDP.

    serving draw = sustained - GPUs x (TDP - gpu_w): the training draw counts the GPUs at
    TDP, so this swaps their draw and keeps the host's share (CPUs, NICs, fans) at its
    training level (an estimate: the host is not measured while serving)."""
    _non_negative("sustained power", sustained_kw)
    _non_negative("TDP", tdp_w)
    if not 0.0 <= gpu_w <= tdp_w:
        raise InputError(f"GPU serving power: must be in [0, TDP {tdp_w} W], got {gpu_w}")
    if gpus < 1:
        raise InputError(f"GPUs per server: must be at least 1, got {gpus}")
    return max(0.0, sustained_kw - gpus * (tdp_w - gpu_w) / 1e3)


# --------------------------------------------------------------------------- carbon


@dataclass(frozen=True)
class Carbon:
    """Operational (location- and market-based) and embodied tonnes CO2e."""

    location_t: float
    market_t: float
    embodied_t: float = 0.0
    gco2_per_kwh: float = 0.0
    renewable_share: float = 0.0

    @property
    def total_location_t(self) -> float:
        return self.location_t + self.embodied_t

    def as_dict(self) -> dict[str, float]:
        return {"location_based_t": self.location_t, "market_based_t": self.market_t,
                "embodied_t": self.embodied_t, "total_location_based_t": self.total_location_t,
                "gco2_per_kwh": self.gco2_per_kwh, "renewable_share": self.renewable_share}


def carbon(kwh: float, gco2_per_kwh: float, renewable_share: float = 0.0,
           embodied_t: float = 0.0) -> Carbon:
    """Tonnes CO2e of ``kwh`` at the grid's ``gco2_per_kwh``: location-based, and market-based
    with a share ``renewable_share`` of the energy contracted at zero emissions."""
    _non_negative("energy", kwh)
    _non_negative("carbon intensity", gco2_per_kwh)
    _share("renewable share", renewable_share)
    _non_negative("embodied carbon", embodied_t)
    loc = kwh * gco2_per_kwh / 1e6
    return Carbon(loc, loc * (1.0 - renewable_share), embodied_t, gco2_per_kwh, renewable_share)


def embodied_t(gpu_hours: float, gpus_per_host: float, host_kg: float, gpu_kg: float,
               lifetime_years: float, utilization: float) -> float:
    """Embodied tonnes CO2e charged to ``gpu_hours``: (host / GPUs per host + GPU) kg per GPU,
    spread over the hours it is used in its life (lifetime x 8,760 h x utilisation)."""
    for name, v in (("GPU-hours", gpu_hours), ("host carbon", host_kg), ("GPU carbon", gpu_kg)):
        _non_negative(name, v)
    if not gpus_per_host > 0 or not lifetime_years > 0 or not 0 < utilization <= 1:
        raise InputError("embodied carbon: GPUs per host and lifetime must be positive and "
                         f"utilisation in (0, 1], got {gpus_per_host}, {lifetime_years}, "
                         f"{utilization}")
    per_gpu_kg = host_kg / gpus_per_host + gpu_kg
    return gpu_hours * per_gpu_kg / (lifetime_years * 8760.0 * utilization) / 1e3


# --------------------------------------------------------------------------- power trace


@dataclass(frozen=True)
class PowerTrace:
    """The facility power of a synchronous training job over time (MW), the swing it makes
    and what softening it costs."""

    t_s: tuple[float, ...]
    mw: tuple[float, ...]
    high_mw: float  # computing
    low_mw: float  # every GPU waiting
    step_s: float
    low_s_per_step: float  # exposed communication and stalls in one step
    ramp_s: float
    restart_s: float  # a failure's dip lasts this long
    limit_mw_per_s: float | None  # the grid's ramp limit, when given

    @property
    def swing_mw(self) -> float:
        return self.high_mw - self.low_mw

    @property
    def ramp_mw_per_s(self) -> float:
        return self.swing_mw / self.ramp_s if self.ramp_s > 0 else math.inf

    @property
    def low_fraction(self) -> float:
        return self.low_s_per_step / self.step_s if self.step_s > 0 else 0.0

    @property
    def average_mw(self) -> float:
        return self.high_mw - self.swing_mw * self.low_fraction

    @property
    def exceeds_limit(self) -> bool:
        return self.limit_mw_per_s is not None and self.ramp_mw_per_s > self.limit_mw_per_s

    def as_dict(self) -> dict[str, object]:
        return {"t_s": list(self.t_s), "mw": list(self.mw), "high_mw": self.high_mw,
                "low_mw": self.low_mw, "swing_mw": self.swing_mw, "step_s": self.step_s,
                "low_s_per_step": self.low_s_per_step, "low_fraction": self.low_fraction,
                "average_mw": self.average_mw, "ramp_s": self.ramp_s,
                "ramp_mw_per_s": self.ramp_mw_per_s, "restart_s": self.restart_s,
                "ramp_limit_mw_per_s": self.limit_mw_per_s,
                "exceeds_ramp_limit": self.exceeds_limit}


def power_trace(high_mw: float, low_mw: float, step_s: float, low_s_per_step: float,
                ramp_s: float, restart_s: float = 0.0, limit_mw_per_s: float | None = None,
                steps: int = 6) -> PowerTrace:
    """``steps`` steps of a synchronous job, then one failure's restart dip: a piecewise
    linear trace (ramps of ``ramp_s``) between ``high_mw`` and ``low_mw``."""
    for name, v in (("high power", high_mw), ("low power", low_mw), ("restart", restart_s),
                    ("low time per step", low_s_per_step)):
        _non_negative(name, v)
    if not step_s > 0 or not ramp_s > 0:
        raise InputError(f"step and ramp: must be positive, got {step_s}, {ramp_s}")
    if low_mw > high_mw:
        raise InputError(f"low power {low_mw} MW is above the high {high_mw} MW")
    low = min(low_s_per_step, step_s)
    t: list[float] = [0.0]
    p: list[float] = [high_mw]
    now = 0.0
    for _ in range(steps):
        busy = step_s - low
        if low <= 0:
            now += step_s
            t.append(now)
            p.append(high_mw)
            continue
        r = min(ramp_s, low / 2, busy / 2) if busy > 0 else min(ramp_s, low / 2)
        t += [now + busy - r, now + busy, now + step_s - r, now + step_s]
        p += [high_mw, low_mw, low_mw, high_mw]
        now += step_s
    if restart_s > 0:
        t += [now + ramp_s, now + ramp_s + restart_s, now + 2 * ramp_s + restart_s]
        p += [low_mw, low_mw, high_mw]
        now += 2 * ramp_s + restart_s
        t.append(now + step_s)
        p.append(high_mw)
    return PowerTrace(tuple(t), tuple(p), high_mw, low_mw, step_s, low, ramp_s, restart_s,
                      limit_mw_per_s)


@dataclass(frozen=True)
class Mitigation:
    """One way to soften the swing, what it leaves and what it costs."""

    name: str
    swing_mw: float  # the swing the grid still sees
    capex_usd: float
    annual_usd: float  # energy burnt or throughput lost, per year
    note: str


def mitigations(trace: PowerTrace, hours_per_year: float, usd_per_kwh: float,
                battery_usd_per_kwh: float, cap_fraction: float, job_usd_per_hour: float
                ) -> list[Mitigation]:
    """Three mitigations of a training swing:

    - a dummy load (Meta's ``PYTORCH_NO_POWERPLANT_BLOWUP``: GPUs burn power while they would
      wait) flattens the step-level swing for the energy of the low phases;
    - a battery that covers the swing for one restart (the longest dip) flattens failures and
      steps; priced per kWh of capacity;
    - capping the GPUs' computing power at ``cap_fraction`` of the swing's top lowers the swing
      proportionally and slows the compute phases as much (a compute-bound step's time grows
      as its power falls: a linear estimate).
    """
    _non_negative("hours per year", hours_per_year)
    _share("cap fraction", cap_fraction)
    burn_kwh = trace.swing_mw * 1e3 * trace.low_fraction * hours_per_year
    battery_kwh = trace.swing_mw * 1e3 * max(trace.restart_s, trace.low_s_per_step) / 3600.0
    capped_swing = max(0.0, trace.high_mw * cap_fraction - trace.low_mw)
    slowdown = (1.0 / cap_fraction - 1.0) * (1.0 - trace.low_fraction) if cap_fraction > 0 \
        else math.inf
    return [
        Mitigation("dummy load", trace.swing_mw if trace.restart_s else 0.0,
                   0.0, burn_kwh * usd_per_kwh,
                   f"burns {burn_kwh / 1e3:,.0f} MWh a year to fill the step-level dips; a "
                   "restart still drops the whole swing unless the load runs through it too"),
        Mitigation("battery", 0.0, battery_kwh * battery_usd_per_kwh, 0.0,
                   f"{battery_kwh:,.0f} kWh covers the swing for the longest dip "
                   f"({max(trace.restart_s, trace.low_s_per_step):,.0f} s)"),
        Mitigation("power cap", capped_swing, 0.0, slowdown * job_usd_per_hour * hours_per_year,
                   f"GPUs capped at {100 * cap_fraction:.0f} % of their computing draw: the "
                   f"swing falls to {capped_swing:,.2f} MW and the run slows about "
                   f"{100 * slowdown:.1f} % (linear estimate)"),
    ]
