"""`clusterwright ops tco`: the JSON contract, exact PUE scaling, breakeven against utilization,
and bad input (exit 2, the flag named, no traceback)."""

from __future__ import annotations

from typing import Any

import pytest
from typer.testing import CliRunner, Result

from clusterwright.cli.main import app
from tests.cli.helpers import json_ok, user_error

CONTRACT_KEYS = (
    "capex_usd",
    "annual_energy_kwh",
    "annual_energy_cost_usd",
    "annual_opex_usd",
    "cloud_annual_cost_usd",
    "breakeven_months",
)
SMALL = ("--server", "dgx-h100", "--nodes", "8")

runner = CliRunner()


def cw(*args: str) -> Result:
    return runner.invoke(app, ["ops", "tco", *args], env={"CLUSTERWRIGHT_CATALOG": None})


def tco_json(*args: str) -> dict[str, Any]:
    return json_ok(cw(*args, "--json"))


def test_contract_keys_and_breakdowns_sum() -> None:
    d = tco_json(*SMALL)
    for key in CONTRACT_KEYS:
        assert key in d, key
    assert d["capex_usd"] == pytest.approx(sum(d["capex_breakdown_usd"].values()))
    assert d["annual_opex_usd"] == pytest.approx(sum(d["opex_breakdown_usd"].values()))
    assert d["annual_energy_cost_usd"] == pytest.approx(
        d["annual_energy_kwh"] * d["electricity_usd_per_kwh"]
    )
    # 8 DGX H100 at the catalog's $270,000
    assert d["capex_breakdown_usd"]["servers"] == pytest.approx(8 * 270_000)
    # The pricing policy: the cheapest on-demand $/GPU-hour renting H100 (Lambda $23.92 / 8 =
    # $2.99, below GCP's $3.00 and AWS's $6.88), flagged as an estimate (weak source).
    assert d["cloud"]["offer"] == "lambda-8x-h100-sxm"
    assert d["pricing"]["estimate"] is True and "cheapest" in d["pricing"]["why"]
    # on-demand: 8 instances x $23.92 x 8,760 h x the default utilization 0.8
    assert d["cloud_annual_cost_usd"] == pytest.approx(8 * 23.92 * 8760 * 0.8)
    assert d["cost_per_gpu_hour_usd"] > d["cost_per_gpu_hour_at_full_use_usd"]


def test_energy_is_it_power_times_hours_times_pue_exactly() -> None:
    one = tco_json(*SMALL, "--pue", "1.0")
    two = tco_json(*SMALL, "--pue", "2.0")
    # with PUE 1.0 the energy is the IT energy: average IT kW x 8,760 h
    assert one["annual_energy_kwh"] == pytest.approx(one["average_it_power_kw"] * 8760, rel=1e-12)
    assert two["annual_energy_kwh"] == pytest.approx(2 * one["annual_energy_kwh"], rel=1e-12)


def test_breakeven_sooner_at_higher_utilization() -> None:
    lo = tco_json(*SMALL, "--utilization", "0.6")["breakeven_months"]
    hi = tco_json(*SMALL, "--utilization", "1.0")["breakeven_months"]
    assert lo is not None and hi is not None and hi < lo


def test_training_run_and_token_prices() -> None:
    d = tco_json(*SMALL, "--training-gpu-hours", "100000", "--tokens-per-s-per-gpu", "2000",
                 "--cloud", "lambda-8x-h100-sxm")
    per_h = d["cost_per_gpu_hour_usd"]
    assert d["training_run_cost_usd"] == pytest.approx(100_000 * per_h)
    # Lambda $23.92 / 8 = $2.99 per GPU-hour -> 100,000 GPU-h = $299,000
    assert d["training_run_cloud_cost_usd"] == pytest.approx(299_000)
    # $/GPU-h / (2,000 x 3,600) x 10^6
    assert d["cost_per_million_tokens_usd"] == pytest.approx(per_h / 7200 * 1e6 / 1000)


def test_estimates_listed_and_human_output_renders() -> None:
    d = tco_json(*SMALL)
    assert any(e["input"] == "storage_usd_per_gbps" for e in d["estimates"])
    r = cw(*SMALL)
    assert r.exit_code == 0, r.output
    assert "breakeven" in r.stdout and "Estimates used" in r.stdout


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (("--utilization", "0"), "--utilization"),
        (("--utilization", "1.5"), "--utilization"),
        (("--pue", "0.9"), "--pue"),
        (("--electricity-usd-per-kwh", "-0.1"), "--electricity-usd-per-kwh"),
        (("--colocation-usd-per-kw-month", "-5"), "--colocation-usd-per-kw-month"),
        (("--years", "0"), "--years"),
        (("--cloud", "aws-p9"), "--cloud"),
        (("--server-price-usd", "-1"), "--server-price-usd"),
        (("--cooling", "water"), "--cooling"),
        (("--storage-usd", "-1"), "--storage-usd"),
        (("--storage-usd", "1e6", "--storage-kw", "nan"), "--storage-kw"),
        (("--storage-kw", "5"), "--storage-kw"),  # power without the tier's price
    ],
)
def test_bad_input_names_the_flag(args: tuple[str, ...], flag: str) -> None:
    assert flag in user_error(cw(*SMALL, *args, "--json"))


def test_unknown_server_and_unpriced_server() -> None:
    assert "--server" in user_error(cw("--server", "dgx-h1000", "--nodes", "2"))
    err = user_error(cw("--server", "dgx-h200", "--nodes", "2", "--json"))
    assert err.startswith("error: --server-price-usd:") or "--server-price-usd:" in err
    assert "prices.server_usd" not in err  # the field path is worded as this command's flag
    d = tco_json("--server", "dgx-h200", "--nodes", "2", "--server-price-usd", "500000")
    assert d["capex_breakdown_usd"]["servers"] == pytest.approx(1_000_000)


def test_a_designed_storage_tier_replaces_the_per_gpu_assumption() -> None:
    base = tco_json(*SMALL)
    tier = tco_json(*SMALL, "--storage-usd", "180000", "--storage-kw", "3.2")
    got, was = tier["capex_breakdown_usd"], base["capex_breakdown_usd"]
    assert got["storage"] == 180000 != was["storage"]
    assert {k: v for k, v in got.items() if k != "storage"} == \
        {k: v for k, v in was.items() if k != "storage"}
    # 3.2 kW more IT power all year, at the same PUE and price
    assert tier["annual_energy_kwh"] > base["annual_energy_kwh"]


def test_cost_at_full_use_does_not_depend_on_the_utilization() -> None:
    """It kept the energy bill of the utilization asked for ($1.90 at 5 %, $1.97 at 100 %)."""
    full = {u: tco_json("--server", "dgx-h100", "--nodes", "18", "--utilization", u)[
        "cost_per_gpu_hour_at_full_use_usd"] for u in ("0.05", "0.5", "1")}
    assert full["0.05"] == pytest.approx(full["1"]) and full["0.5"] == pytest.approx(full["1"])
    at_one = tco_json("--server", "dgx-h100", "--nodes", "18", "--utilization", "1")
    assert at_one["cost_per_gpu_hour_usd"] == pytest.approx(full["1"])


def test_storage_units_are_priced_from_the_catalog_unless_given() -> None:
    args = ("--server", "dgx-h100", "--nodes", "16")
    d = tco_json(*args, "--storage-system", "ddn-ai400x2t", "--storage-units", "2")
    assert d["capex_breakdown_usd"]["storage"] == pytest.approx(2 * 1_100_000)
    given = tco_json(*args, "--storage-system", "ddn-ai400x2t", "--storage-units", "2",
                     "--storage-usd", "1500000")
    assert given["capex_breakdown_usd"]["storage"] == pytest.approx(1_500_000)
    # The same network either way: the units are wired, then priced on their own line.
    assert given["capex_breakdown_usd"]["network"] == d["capex_breakdown_usd"]["network"]
    err = user_error(cw(*args, "--storage-units", "2"))
    assert "--storage-system" in err
