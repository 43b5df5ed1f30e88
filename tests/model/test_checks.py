from __future__ import annotations

import math

import pytest

from clusterwright.errors import InputError
from clusterwright.model.checks import non_negative, positive


@pytest.mark.parametrize("bad", [0.0, -1.0, math.nan, math.inf])
def test_positive_refuses_naming_the_quantity(bad: float) -> None:
    with pytest.raises(InputError, match=r"^size_gb: must be a positive number"):
        positive("size_gb", bad)


@pytest.mark.parametrize("bad", [-1e-9, math.nan, math.inf, -math.inf])
def test_non_negative_refuses_naming_the_quantity(bad: float) -> None:
    with pytest.raises(InputError, match=r"^share: must be zero or a positive number"):
        non_negative("share", bad)


def test_finite_values_pass() -> None:
    positive("x", 1e-300)
    non_negative("x", 0.0)
