"""Number formatting of the report: people check these numbers, so the rounding is pinned."""

from __future__ import annotations

import math

import pytest

from clusterwright.report import fmt


@pytest.mark.parametrize(("value", "shown"), [
    (1024, "1,024"), (1024.0, "1,024"), (0.0412, "0.0412"), (12.345, "12.3"),
    (1659.586, "1,660"), (None, "—"), (math.nan, "nan"), (True, "True"),
])
def test_fmt_three_significant_digits_with_separators(value: object, shown: str) -> None:
    assert fmt.fmt(value) == shown


@pytest.mark.parametrize(("value", "shown"), [
    (40866810.0, "$40.9M"), (4.1e7, "$41.0M"), (2.2069, "$2.21"), (630_000.0, "$630k"),
    (1.2e9, "$1.20B"), (1.234e9, "$1.23B"), (2500.0, "$2,500"), (12.0, "$12.00"),
    (-860_000.0, "$-860k"), (None, "—"), ("12", "—"),
])
def test_usd_scales(value: object, shown: str) -> None:
    assert fmt.usd(value) == shown


def test_percentages_plain_and_signed() -> None:
    assert fmt.pct(0.128) == "12.8 %"
    assert fmt.signed_pct(0.3667) == "+37 %"
    assert fmt.signed_pct(-0.05) == "-5 %"
    assert fmt.signed_pct(None) == "—"


@pytest.mark.parametrize(("seconds", "shown"), [
    (0.0349, "34.9 ms"), (9.87, "9.87 s"), (2024.9, "33.7 min"), (7200.0, "2 h"),
])
def test_duration_picks_the_readable_unit(seconds: float, shown: str) -> None:
    assert fmt.duration(seconds) == shown


def test_energy_and_power_units() -> None:
    assert fmt.energy_kwh(12_114_984.9) == "12.1 GWh"
    assert fmt.energy_kwh(529_000.0) == "529 MWh"
    assert fmt.power_mw(0.630784) == "631 kW"
    assert fmt.power_mw(12.4) == "12.4 MW"


def test_readers_tolerate_missing_and_mistyped_values() -> None:
    d = {"a": {"b": 2}, "flat": 1.5, "s": "x"}
    assert fmt.get(d, "a", "b") == 2
    assert fmt.get(d, "s", "b") is None and fmt.get(None, "a") is None
    assert fmt.first_num(d, "s", ("a", "b")) == 2.0
    assert fmt.num(True) is None and fmt.num(math.inf) is None
    assert fmt.records([{"a": 1}, 3, None, "x"]) == [{"a": 1}]
    assert fmt.records("abc") == []
    assert fmt.pct(0.412) == "41.2 %"
