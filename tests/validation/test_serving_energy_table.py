"""``validate --table serving-energy``: ML.ENERGY v3 rows of vLLM on H100 and B200, with ITL,
power per GPU and energy per token predicted; the power constants were fitted on the dev rows
only, and the held-out power stays within a stated bound."""

from __future__ import annotations

import pytest

from clusterwright.validation.rows import mape
from clusterwright.validation.serving_energy_table import serving_energy_table
from clusterwright.validation.tables import TABLES


@pytest.fixture(scope="module")
def table():  # type: ignore[no-untyped-def]
    return serving_energy_table()


def test_registered_so_plain_validate_runs_it() -> None:
    assert TABLES["serving_energy"] is serving_energy_table


def test_every_row_has_three_quantities_and_dev_rows_are_h100_dense(table) -> None:  # type: ignore[no-untyped-def]
    qs = {r.quantity for r in table.rows}
    assert qs == {"itl", "power", "energy"}
    assert all(r.tag("gpu").startswith("h100-sxm") for r in table.dev_rows)
    assert len(table.held_out_rows) > len(table.dev_rows)


def test_power_mape_dev_and_held_out(table) -> None:  # type: ignore[no-untyped-def]
    dev = [r for r in table.dev_rows if r.quantity == "power"]
    held = [r for r in table.held_out_rows if r.quantity == "power"]
    assert mape(dev) < 0.10, mape(dev)
    # Held out (B200, MoE, FP8, MXFP4): the fitted constants transfer within 20 %.
    assert mape(held) < 0.20, mape(held)


def test_table_within_its_tolerance(table) -> None:  # type: ignore[no-untyped-def]
    assert table.mape <= table.tolerance
