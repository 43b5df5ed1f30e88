"""One line of a bill of materials (its own module so summaries can read BOMs without the
planner that builds them)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class BomLine:
    """One line of the bill of materials. Power is per unit, W; price per unit, USD."""

    category: str  # server, storage, switch, transceiver, cable
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
