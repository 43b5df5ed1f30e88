"""Lossless Ethernet (PFC) headroom of a planned backend fabric: per port, per port type and
per switch against its buffer.

Every backend cable of a RoCE (Ethernet) fabric gets the headroom each of its two ends must
reserve per lossless priority, from the cable's planned length, its speed and the port MTU
(``model/pfc.py``): switch ports by SONiC's Spectrum formula, NIC ports by the Linux mlx5
driver's. A switch reserves its ports' headroom once per lossless priority out of its shared
packet buffer (the catalog's ``buffer_mb``); the number of lossless priorities that fit in the
buffer is reported, and a switch where fewer fit than were asked for is flagged (the notes,
``fabric design``, the blueprint's risks). InfiniBand is lossless by credit-based link-level
flow control and has no PFC headroom.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from clusterwright.catalog.registry import Catalog
from clusterwright.design.fabric_model import Fabric
from clusterwright.model.pfc import (
    SPECTRUM,
    Headroom,
    lanes_of,
    mlx5_lossless_buffer_bytes,
    mlx5_xoff_bytes,
    sonic_mellanox_headroom,
)

SWITCH_FORMULA = ("SONiC buffer_headroom_mellanox.lua (Spectrum-2/3 ASIC constants, "
                  "model/pfc.py)")
NIC_FORMULA = "Linux mlx5 calculate_xoff + max MTU + cell (model/pfc.py)"
# Headroom above this share of a switch's buffer leaves little for the shared pool that
# absorbs bursts before PAUSE: reported (not flagged as not fitting).
HEADROOM_WARN_SHARE = 0.5


@dataclass(frozen=True)
class PortType:
    """Ports of one kind (tier and end) with their headroom per lossless priority."""

    port: str  # e.g. "leaf down (node-leaf)", "NIC (node-leaf)"
    speed_gbps: float
    ports: int
    cable_m_min: float
    cable_m_max: float
    headroom_bytes_max: int  # per lossless priority, longest cable of the kind
    xoff_bytes_max: int
    formula: str


@dataclass(frozen=True)
class SwitchHeadroom:
    name: str
    part: str
    role: str
    ports: int
    headroom_bytes_per_priority: int  # sum over its ports
    buffer_bytes: int | None
    priorities_that_fit: int | None  # None: buffer size unknown


@dataclass(frozen=True)
class PfcPlan:
    """Headroom per port type and per switch of one fabric (module docstring)."""

    protocol: str
    mtu: int
    lossless_priorities: int
    port_types: tuple[PortType, ...]
    port_headroom: dict[tuple[str, str], int]  # ("a:port->b:port", end "a"/"b") -> bytes
    switches: tuple[SwitchHeadroom, ...]
    note: str
    # (speed Gb/s, cable m) -> a switch port's xoff, xon and size for that cable, as
    # ``port_headroom`` counts them (the switch QoS export writes these numbers)
    switch_port: dict[tuple[float, float], Headroom] = field(default_factory=dict)

    @property
    def worst(self) -> SwitchHeadroom | None:
        """The switch whose buffer holds the fewest of the asked lossless priorities."""
        known = [s for s in self.switches if s.priorities_that_fit is not None]
        if not known:
            return None
        return min(known, key=lambda s: (s.priorities_that_fit, -s.headroom_bytes_per_priority))

    @property
    def switches_short(self) -> list[SwitchHeadroom]:
        """Switches where fewer lossless priorities fit than were asked for."""
        return [s for s in self.switches if s.priorities_that_fit is not None
                and s.priorities_that_fit < self.lossless_priorities]

    def as_dict(self) -> dict[str, Any]:
        w = self.worst
        return {
            "protocol": self.protocol,
            "mtu": self.mtu,
            "lossless_priorities": self.lossless_priorities,
            "port_types": [
                {"port": p.port, "speed_gbps": p.speed_gbps, "ports": p.ports,
                 "cable_m_min": p.cable_m_min, "cable_m_max": p.cable_m_max,
                 "headroom_bytes": p.headroom_bytes_max, "xoff_bytes": p.xoff_bytes_max,
                 "formula": p.formula}
                for p in self.port_types],
            "switches_checked": sum(1 for s in self.switches if s.buffer_bytes is not None),
            "switches_short": [s.name for s in self.switches_short][:20],
            "switches_short_count": len(self.switches_short),
            "worst_switch": None if w is None else {
                "name": w.name, "part": w.part, "role": w.role, "ports": w.ports,
                "headroom_bytes_per_priority": w.headroom_bytes_per_priority,
                "headroom_bytes": w.headroom_bytes_per_priority * self.lossless_priorities,
                "buffer_bytes": w.buffer_bytes,
                "priorities_that_fit": w.priorities_that_fit},
            "note": self.note,
        }


def _end_name(role: str, tier: str, up: bool) -> str:
    if role == "host":
        return f"NIC ({tier})"
    return f"{role} {'up' if up else 'down'} ({tier})"


def pfc_plan(fab: Fabric, cat: Catalog, mtu: int = 9216,
             lossless_priorities: int = 2) -> PfcPlan:
    """Headroom of every backend port from the cabling plan (lengths must be placed:
    ``design.physical.place``)."""
    sw = fab.backend.switch
    if fab.backend.protocol != "ethernet" or not fab.has_backend:
        return PfcPlan(fab.backend.protocol, mtu, lossless_priorities, (), {}, (),
                       "InfiniBand is lossless by credit-based link-level flow control: no "
                       "PFC headroom" if fab.backend.protocol == "infiniband"
                       else "no backend fabric")
    by = fab.by_name
    cache: dict[tuple[float, float], Headroom] = {}
    nic_cache: dict[tuple[float, float], tuple[int, int]] = {}

    def switch_end(speed: float, length: float) -> tuple[int, int]:
        h = cache.get((speed, length))
        if h is None:
            h = cache[(speed, length)] = sonic_mellanox_headroom(
                speed, length, mtu, lanes=lanes_of(speed), asic=SPECTRUM)
        return h.size, h.xoff

    def nic_end(speed: float, length: float) -> tuple[int, int]:
        key = (speed, length)
        hit = nic_cache.get(key)
        if hit is None:
            hit = nic_cache[key] = (mlx5_lossless_buffer_bytes(speed, length, mtu),
                                    mlx5_xoff_bytes(speed, length, mtu))
        return hit

    kinds: dict[tuple[str, float], list[tuple[float, int, int]]] = defaultdict(list)
    per_port: dict[tuple[str, str], int] = {}
    per_switch: dict[str, list[int]] = defaultdict(list)
    for lk in fab.links:
        if lk.network != "backend":
            continue
        for end, name, up in (("a", lk.a, True), ("b", lk.b, False)):
            role = by[name].role
            size, xoff = (nic_end if role == "host" else switch_end)(lk.speed_gbps,
                                                                      lk.length_m)
            kinds[(_end_name(role, lk.tier, up), lk.speed_gbps)].append(
                (lk.length_m, size, xoff))
            per_port[(f"{lk.a}:{lk.a_port}->{lk.b}:{lk.b_port}", end)] = size
            if role != "host":
                per_switch[name].append(size)
    port_types = tuple(
        PortType(port, speed, len(v), min(x[0] for x in v), max(x[0] for x in v),
                 max(x[1] for x in v), max(x[2] for x in v),
                 NIC_FORMULA if port.startswith("NIC") else SWITCH_FORMULA)
        for (port, speed), v in sorted(kinds.items())
    )
    switches = []
    for name, sizes in per_switch.items():
        dev = by[name]
        entry = cat.switch(dev.part)
        buf = int(entry.buffer_mb * 1e6) if entry.buffer_mb else None
        per_prio = sum(sizes)
        fit = None if buf is None else (buf // per_prio if per_prio else lossless_priorities)
        switches.append(SwitchHeadroom(name, dev.part, dev.role, len(sizes), per_prio, buf,
                                       fit))
    plan = PfcPlan("ethernet", mtu, lossless_priorities, port_types, per_port,
                   tuple(switches), "")
    return PfcPlan(plan.protocol, mtu, lossless_priorities, port_types, per_port,
                   tuple(switches), _note(plan, sw.id, sw.buffer_source), cache)


def _note(plan: PfcPlan, part: str, source: str | None) -> str:
    w = plan.worst
    if w is None:
        return (f"PFC headroom per port computed; {part} has no buffer size in the catalog, "
                "so the switches were not checked against their buffers")
    need = w.headroom_bytes_per_priority * plan.lossless_priorities
    text = (f"PFC headroom: {plan.lossless_priorities} lossless priorities at MTU {plan.mtu} "
            f"need up to {need / 1e6:.1f} MB on {w.name} ({w.ports} ports) of its "
            f"{(w.buffer_bytes or 0) / 1e6:g} MB buffer; {w.priorities_that_fit} fit")
    short = plan.switches_short
    if short:
        text += (f". {len(short)} switch(es) cannot hold {plan.lossless_priorities} lossless "
                 f"priorities ({', '.join(s.name for s in short[:3])}"
                 f"{' ...' if len(short) > 3 else ''}): fewer lossless priorities, shorter "
                 "cables, a smaller MTU or a deeper-buffered switch")
    elif need > HEADROOM_WARN_SHARE * (w.buffer_bytes or 0):
        text += (f"; headroom takes {100 * need / (w.buffer_bytes or 1):.0f} % of the buffer, "
                 "little left for the shared pool")
    return text + f" (buffer: catalog {part}, {(source or '').split(']')[0].strip('[')})"
