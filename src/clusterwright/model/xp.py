"""Two backends for the same formulas: numpy arrays (many layouts at once) and Python floats.

The training step model is written once against the small set of operations below. The
planner passes numpy arrays and evaluates 10^6 layouts per second; a single ``train
estimate`` passes floats and skips numpy's per-call overhead (about 1 us per ufunc on a
one-element array, which a few hundred operations turn into most of a call's time). A test
holds the two backends equal on random layouts.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

Num = Any  # a float or a numpy array: the formulas do not care which


class ArrayOps:
    """numpy: elementwise over arrays of layouts."""

    maximum = staticmethod(np.maximum)
    minimum = staticmethod(np.minimum)
    where = staticmethod(np.where)
    ceil = staticmethod(np.ceil)
    floor = staticmethod(np.floor)
    log2 = staticmethod(np.log2)
    log = staticmethod(np.log)
    sqrt = staticmethod(np.sqrt)

    @staticmethod
    def interp(x: Num, xs: Sequence[float], ys: Sequence[float]) -> Num:
        """Piecewise-linear ``ys(xs)`` at ``x``, flat outside the points."""
        return np.interp(x, xs, ys)

    @staticmethod
    def log10(x: Num) -> Num:
        return np.log10(x)

    @staticmethod
    def full(like: Num, value: float) -> Num:
        return np.full(np.shape(like), value, dtype=float)


def _interp(x: float, xs: Sequence[float], ys: Sequence[float]) -> float:
    if x <= xs[0]:
        return float(ys[0])
    if x >= xs[-1]:
        return float(ys[-1])
    i = bisect.bisect_right(xs, x)
    x0, x1 = xs[i - 1], xs[i]
    return float(ys[i - 1] + (ys[i] - ys[i - 1]) * (x - x0) / (x1 - x0))


class ScalarOps:
    """Python floats: one layout, no numpy in the loop."""

    @staticmethod
    def maximum(a: float, b: float) -> float:
        return a if a > b else b

    @staticmethod
    def minimum(a: float, b: float) -> float:
        return a if a < b else b

    @staticmethod
    def where(c: bool, a: float, b: float) -> float:
        return a if c else b

    ceil = staticmethod(math.ceil)
    floor = staticmethod(math.floor)
    log2 = staticmethod(math.log2)
    log = staticmethod(math.log)
    sqrt = staticmethod(math.sqrt)
    interp = staticmethod(_interp)
    log10 = staticmethod(math.log10)

    @staticmethod
    def full(like: float, value: float) -> float:
        return value


# The backend a formula runs on: ArrayOps or ScalarOps (the class itself). Typed as Any: the
# two share one surface with different element types, which the formulas do not care about.
Ops = Any
