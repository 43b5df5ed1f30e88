"""Numeric field types for everything read from a file: strict, finite and bounded.

Pydantic's lax mode turns the YAML boolean ``true`` into 1 and the quoted string ``"8"`` into
8; a scenario that says ``qps: true`` would plan for one request per second. These types
refuse both (a number must be written as a number) and refuse ``.inf`` and ``.nan``, so no
value reaches a planner that ``math.ceil`` or ``int()`` cannot take. A float with no
fractional part still passes as an integer (``gpus: 1.6e4`` is 16,000 GPUs).

Integers are capped at ``MAX_INT`` so that every count converts to a float exactly.
"""

from __future__ import annotations

import math
from typing import Annotated, Any

from pydantic import BeforeValidator, Field

from clusterwright.spec.yamlio import short_repr

# 2**53: the largest integer an IEEE 754 double holds exactly (53-bit significand), so a
# count converted to a float for a formula keeps its value and products of a few never
# overflow.
MAX_INT = 2**53


def _number(v: Any) -> Any:
    """Refuse what lax validation would coerce into a number: booleans and strings."""
    if isinstance(v, bool):
        raise ValueError(f"must be a number, not the boolean {str(v).lower()}")
    if isinstance(v, str):
        raise ValueError(f"must be a number, not the string {short_repr(v)}; write it without "
                         "quotes")
    return v


def _integer(v: Any) -> Any:
    """As ``_number``; a float must be whole and within ``MAX_INT`` (pydantic's own message
    for ``1e300`` speaks of parsing strings)."""
    v = _number(v)
    if isinstance(v, float):
        if not math.isfinite(v) or abs(v) > MAX_INT:
            raise ValueError(f"must be an integer of at most {MAX_INT:,}, got {v:g}")
        if not v.is_integer():
            raise ValueError(f"must be a whole number, got {v:g}")
        return int(v)
    return v


NUMBER = BeforeValidator(_number)
INTEGER = BeforeValidator(_integer)

FiniteFloat = Annotated[float, NUMBER, Field(allow_inf_nan=False)]
PositiveFloat = Annotated[float, NUMBER, Field(gt=0, allow_inf_nan=False)]
NonNegativeFloat = Annotated[float, NUMBER, Field(ge=0, allow_inf_nan=False)]
Fraction = Annotated[float, NUMBER, Field(ge=0, le=1, allow_inf_nan=False)]  # 0..1 inclusive

# A field with a tighter documented maximum writes ``Annotated[int, INTEGER, Field(gt=0,
# le=...)]`` rather than narrowing these (pydantic would then report the wider bound first).
Int = Annotated[int, INTEGER, Field(ge=-MAX_INT, le=MAX_INT)]
PositiveInt = Annotated[int, INTEGER, Field(gt=0, le=MAX_INT)]
NonNegativeInt = Annotated[int, INTEGER, Field(ge=0, le=MAX_INT)]

__all__ = [
    "INTEGER",
    "MAX_INT",
    "NUMBER",
    "FiniteFloat",
    "Fraction",
    "Int",
    "NonNegativeFloat",
    "NonNegativeInt",
    "PositiveFloat",
    "PositiveInt",
]
