"""Argument checks the pure models share: a quantity must be a finite positive number (or zero
where that means "none"), else an InputError naming it."""

from __future__ import annotations

import math

from clusterwright.errors import InputError


def positive(name: str, value: float) -> None:
    """Refuse ``value`` unless it is finite and above zero (NaN is refused too)."""
    if not value > 0 or math.isinf(value):
        raise InputError(f"{name}: must be a positive number, got {value}")


def non_negative(name: str, value: float) -> None:
    """Refuse ``value`` unless it is finite and zero or more (NaN is refused too)."""
    if not value >= 0 or math.isinf(value):
        raise InputError(f"{name}: must be zero or a positive number, got {value}")
