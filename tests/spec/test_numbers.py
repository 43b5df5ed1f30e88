"""Strict, finite, bounded number types for file input (clusterwright.spec.numbers)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, ValidationError

from clusterwright.spec.numbers import (
    INTEGER,
    MAX_INT,
    FiniteFloat,
    Fraction,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
)


class _M(BaseModel):
    f: FiniteFloat = 0.0
    p: PositiveFloat = 1.0
    n: NonNegativeInt = 0
    i: PositiveInt = 1
    share: Fraction = 0.5
    stage: Annotated[Literal[0, 1, 2, 3], INTEGER] = 0


def _error(**kw: Any) -> str:
    with pytest.raises(ValidationError) as exc:
        _M(**kw)
    return str(exc.value)


@pytest.mark.parametrize("field", ["f", "p", "n", "i", "share", "stage"])
def test_a_boolean_is_not_a_number(field: str) -> None:
    assert "must be a number, not the boolean true" in _error(**{field: True})


@pytest.mark.parametrize("field", ["f", "p", "n", "i", "share", "stage"])
def test_a_quoted_number_is_not_a_number(field: str) -> None:
    assert "must be a number, not the string '1'; write it without quotes" in _error(
        **{field: "1"})


@pytest.mark.parametrize("value", [float("inf"), float("-inf"), float("nan")])
@pytest.mark.parametrize("field", ["f", "p", "share"])
def test_floats_are_finite(field: str, value: float) -> None:
    _error(**{field: value})


@pytest.mark.parametrize("value", [float("inf"), 1e300, float(MAX_INT) * 2])
def test_an_integer_beyond_max_int_is_refused_in_plain_words(value: float) -> None:
    assert f"must be an integer of at most {MAX_INT:,}" in _error(i=value)


def test_integers_are_capped_at_max_int() -> None:
    assert _M(i=MAX_INT).i == MAX_INT
    _error(i=MAX_INT + 1)


def test_a_whole_float_is_an_integer_and_a_fraction_is_not() -> None:
    m = _M(i=1.6e4, stage=2.0)
    assert (m.i, type(m.i), m.stage) == (16000, int, 2)
    assert "must be a whole number, got 2.5" in _error(i=2.5)


def test_ints_pass_as_floats() -> None:
    assert _M(p=3).p == 3.0
