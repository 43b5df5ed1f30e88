"""Cable and optic choice for one link, from the catalog: what joins two cages over a length.

Copper where it reaches (DAC, then active copper), then optics with fibre (multimode before
single-mode; both modules and the fibre must share speed, media and connector polish), then
active optical cables. Discontinued parts are never chosen. A twin-port module at a twin cage
is preferred (it serves two links).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from clusterwright.catalog.registry import Catalog
from clusterwright.catalog.schema import Cable, Transceiver
from clusterwright.design.fabric_shape import FabricError


class MediaError(FabricError):
    """No catalog part joins two cages at a speed over a length."""


@dataclass(frozen=True)
class End:
    cage: str  # cage type, e.g. OSFP, QSFP112
    side: str  # switch or host
    links_per_cage: int


class MediaPicker:
    """Chooses cable and transceivers per link from the catalog, cached per kind of link."""

    def __init__(self, cat: Catalog) -> None:
        self.cables: list[Cable] = [c for c in cat.all("cables") if c.status == "active"]
        self.xcvrs: list[Transceiver] = [
            t for t in cat.all("transceivers") if t.status == "active"
        ]
        self._cache: dict[tuple[float, float, End, End, bool], tuple[str, str, str, str]] = {}

    def _xcvr(self, speed: float, media: str, length: float, end: End) -> Transceiver | None:
        ok = [
            t for t in self.xcvrs
            if t.speed_gbps == speed and t.media == media and t.reach_m >= length
            and t.side in (end.side, "any") and takes(end.cage, t.form_factor)
            and t.links <= max(1, end.links_per_cage)
        ]
        # A module spanning the whole cage (twin-port at a twin cage), then the lowest power.
        ok.sort(key=lambda t: (-t.links, t.power_w, t.price_usd or math.inf, t.id))
        return ok[0] if ok else None

    def pick(self, speed: float, length: float, a: End, b: End,
             split: bool = False) -> tuple[str, str, str, str]:
        """(media, cable id, a-end transceiver id, b-end transceiver id) for one link.
        ``split``: a cage at either end carries links to different peer cages, which a
        multi-link cable (a straight twin-port DAC: one connector per end) cannot; modules
        with a fibre per port can."""
        key = (speed, length, a, b, split)
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        result: tuple[str, str, str, str] | None = None
        def fits(c: Cable) -> bool:
            ff = c.form_factor or ""
            return takes(a.cage, ff) and takes(b.cage, ff) and not (split and c.links > 1)

        if speed <= 10:
            utp = [c for c in self.cables if c.kind == "utp" and c.reach_m >= length and fits(c)]
            if utp:
                result = ("utp", min(utp, key=lambda c: c.reach_m).id, "", "")
        if result is None:
            copper = [
                c for c in self.cables
                if c.kind in ("dac", "acc", "aec") and c.speed_gbps == speed
                and c.reach_m >= length and fits(c)
            ]
            if copper:
                order = {"dac": 0, "acc": 1, "aec": 2}
                c = min(copper, key=lambda c: (order[c.kind], c.power_w, c.id))
                result = (c.kind, c.id, "", "")
        if result is None:
            for media in ("mmf", "smf"):
                xa = self._xcvr(speed, media, length, a)
                xb = self._xcvr(speed, media, length, b)
                if xa is None or xb is None:
                    continue
                plugs = {plug(xa.connector), plug(xb.connector)}
                fibres = [
                    c for c in self.cables
                    if c.kind == "fiber" and c.fiber == media and c.speed_gbps >= speed
                    and c.reach_m >= length and {plug(c.connector or "")} == plugs
                ]
                if fibres:
                    f = min(fibres, key=lambda c: (c.reach_m, c.id))
                    result = ("optics", f.id, xa.id, xb.id)
                    break
        if result is None:
            aoc = [
                c for c in self.cables
                if c.kind == "aoc" and c.speed_gbps == speed and c.reach_m >= length and fits(c)
            ]
            if aoc:
                result = ("aoc", min(aoc, key=lambda c: (c.reach_m, c.id)).id, "", "")
        if result is None:
            raise MediaError(
                f"no cable or optic in the catalog carries a {speed:g} Gb/s link over "
                f"{length:g} m between a {a.cage} {a.side} cage and a {b.cage} {b.side} cage; "
                f"add one with --catalog"
            )
        self._cache[key] = result
        return result


# Cages that take older plugs: a QSFP112 cage takes QSFP56 and QSFP28 modules and cables at
# their own rate, a QSFP56 cage QSFP28 (QSFP112 MSA hardware specification rev 1.0, 2021:
# backward compatible with QSFP28/QSFP56; SFF-8665 family). Only used when a link runs below
# the cage's native rate, e.g. a right-sized 100G or 200G frontend on a 400G NIC.
_TAKES = {"QSFP112": ("QSFP56", "QSFP28"), "QSFP56": ("QSFP28",)}


def takes(cage: str, form_factor: str) -> bool:
    """True if a plug of ``form_factor`` fits a ``cage`` (same family or an older one)."""
    ff, c = form_factor.upper(), cage.upper()
    return ff in c or ff in _TAKES.get(c, ())


def plug(connector: str) -> str:
    """Connector type of one link's end: '2x MPO-12/APC' on a twin-port module is MPO-12/APC."""
    return connector.split("x ", 1)[-1].strip().upper()


def orderable(length_m: float) -> float:
    """Round up to the next half metre up to 5 m, then the next metre (how cables are sold)."""
    if length_m <= 5:
        return math.ceil(length_m * 2) / 2
    return float(math.ceil(length_m))


def stock_length(lengths_m: list[float], length_m: float) -> float:
    """The shortest length the part is sold in that reaches ``length_m`` (m); parts without a
    length list round up to the next half metre (to 5 m) or metre."""
    fits = [x for x in lengths_m if x >= length_m - 1e-9]
    return min(fits) if fits else orderable(length_m)


def joins(picker: MediaPicker, speed_gbps: float, a: End, b: End,
          lengths_m: tuple[float, ...] = (3.0, 30.0)) -> bool:
    """True if some catalog part joins ``a`` and ``b`` at ``speed_gbps`` over any of
    ``lengths_m`` (in-row and across-row distances)."""
    for length in lengths_m:
        try:
            picker.pick(speed_gbps, length, a, b)
        except MediaError:
            continue
        return True
    return False
