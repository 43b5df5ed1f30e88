"""Tolerant readers and number formatting: the one money and percent formatter.

Every layer that writes text for people (design's violation messages, plan's why lines, the
CLI, the report) formats dollars and percentages here, so "$41.0M" reads the same
everywhere. This module imports nothing from clusterwright: it is a leaf the layer rule
lets design/ and plan/ import (tests/test_layers.py).

The report reads a blueprint dict written by another layer (or loaded from a JSON file a person
may have edited), so every reader here accepts a missing key, ``None`` or a wrong type and
answers ``None`` rather than raising: a section without data says "not applicable".
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

DASH = "—"


def get(d: Any, *path: str) -> Any:
    """``d[path[0]][path[1]]...`` or ``None`` when any step is missing or not a mapping."""
    cur = d
    for key in path:
        if not isinstance(cur, Mapping):
            return None
        cur = cur.get(key)
    return cur


def num(x: Any) -> float | None:
    """``x`` as a finite float, or ``None`` (booleans, strings, NaN and inf are not numbers)."""
    if isinstance(x, bool) or not isinstance(x, int | float):
        return None
    v = float(x)
    return v if math.isfinite(v) else None


def first_num(d: Any, *paths: str | tuple[str, ...]) -> float | None:
    """The first of several spellings of a number that is present, e.g. a flat
    ``it_power_kw_typical`` or the nested ``it_power_kw.typical`` of ``ops power``."""
    for p in paths:
        v = num(get(d, *((p,) if isinstance(p, str) else p)))
        if v is not None:
            return v
    return None


def mapping(x: Any) -> Mapping[str, Any]:
    """``x`` if it is a mapping, else an empty one."""
    return x if isinstance(x, Mapping) else {}


def records(x: Any) -> list[Mapping[str, Any]]:
    """The mappings in the list ``x`` (anything else is skipped)."""
    if isinstance(x, Sequence) and not isinstance(x, str | bytes):
        return [r for r in x if isinstance(r, Mapping)]
    return []


def text(x: Any) -> str:
    """A value as display text; ``None`` becomes a dash."""
    if x is None:
        return DASH
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, float):
        return fmt(x)
    return str(x)


def fmt(x: Any, digits: int = 3) -> str:
    """A number with ``digits`` significant digits and thousands separators (1,024; 0.0412)."""
    v = num(x)
    if v is None:
        return DASH if x is None else str(x)
    if v == int(v) and abs(v) < 1e15:
        return f"{int(v):,}"
    if abs(v) >= 10 ** (digits - 1):
        return f"{v:,.0f}"
    return f"{v:,.{digits}g}" if abs(v) >= 1 else f"{v:.{digits}g}"


def usd(x: Any) -> str:
    """US dollars as an architect writes them: $1.23B, $41.0M, $630k, $2,500, $2.21."""
    v = num(x)
    if v is None:
        return DASH
    a = abs(v)
    if a >= 1e9:
        return f"${v / 1e9:,.2f}B"
    if a >= 1e6:
        return f"${v / 1e6:,.1f}M"
    if a >= 1e4:
        return f"${v / 1e3:,.0f}k"
    if a >= 100:
        return f"${v:,.0f}"
    return f"${v:,.2f}"


def pct(x: Any, digits: int = 1) -> str:
    """A fraction as a percentage: 0.128 -> 12.8 %."""
    v = num(x)
    return DASH if v is None else f"{v * 100:.{digits}f} %"


def signed_pct(x: Any, digits: int = 0) -> str:
    """A change as a signed percentage: 0.372 -> +37 %, -0.05 -> -5 %."""
    v = num(x)
    return DASH if v is None else f"{v * 100:+.{digits}f} %"


def unit(x: Any, u: str, digits: int = 3) -> str:
    """A number followed by its unit, or a dash."""
    v = num(x)
    return DASH if v is None else f"{fmt(v, digits)} {u}"


def duration(seconds: Any) -> str:
    """Seconds in the unit a person reads: 850 ms, 12.4 s, 31 min, 5.2 h."""
    v = num(seconds)
    if v is None:
        return DASH
    a = abs(v)
    if a < 1:
        return f"{v * 1e3:.3g} ms"
    if a < 120:
        return f"{v:.3g} s"
    if a < 2 * 3600:
        return f"{v / 60:.3g} min"
    return f"{v / 3600:.3g} h"


def energy_kwh(kwh: Any) -> str:
    """Energy given in kWh, in the unit a person reads: 950 kWh, 12.1 GWh."""
    v = num(kwh)
    if v is None:
        return DASH
    for scale, u in ((1e6, "GWh"), (1e3, "MWh")):
        if abs(v) >= scale:
            return f"{v / scale:,.3g} {u}"
    return f"{fmt(v)} kWh"


def power_mw(mw: Any) -> str:
    """Power given in MW, in kW below 1 MW: 0.631 MW -> 631 kW, 12.4 MW."""
    v = num(mw)
    if v is None:
        return DASH
    return f"{fmt(v)} MW" if abs(v) >= 1 else f"{fmt(v * 1e3)} kW"
