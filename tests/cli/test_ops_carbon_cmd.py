"""``clusterwright ops carbon``: energy and carbon, bad input exits 2 naming the flag."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from clusterwright.cli.main import app


def cw(*args: str) -> object:
    return CliRunner().invoke(app, ["ops", "carbon", *args])


def test_json_energy_carbon_and_the_card_convention() -> None:
    r = cw("--gpu-hours", "30840000", "--region", "us", "--year", "2022", "--pue", "1.08",
           "--renewable-share", "1", "--json")
    assert r.exit_code == 0, r.output  # type: ignore[attr-defined]
    d = json.loads(r.stdout)  # type: ignore[attr-defined]
    assert d["model_card_convention"]["location_based_t"] == pytest.approx(8703.5, rel=1e-3)
    assert d["carbon"]["market_based_t"] == 0.0
    # Full system (server sustained draw) uses more than the GPU-TDP convention.
    assert d["energy"]["facility_kwh"] > d["model_card_convention"]["kwh"]


@pytest.mark.parametrize(("args", "flag"), [
    (("--gpu-hours", "10", "--region", "mars"), "--region"),
    (("--gpu-hours", "10", "--region", "us", "--year", "2030"), "--year"),
    (("--gpu-hours", "10", "--renewable-share", "2"), "--renewable-share"),
    (("--gpu-hours", "-1",), "--gpu-hours"),
    (("--gpu-hours", "10", "--server", "nope"), "--server"),
])
def test_bad_input_exits_2_naming_the_flag(args: tuple[str, ...], flag: str) -> None:
    r = cw(*args)
    assert r.exit_code == 2, r.output  # type: ignore[attr-defined]
    assert flag in r.output  # type: ignore[attr-defined]


def test_serving_energy_uses_the_serving_power_model_and_says_it_is_an_estimate() -> None:
    base = ("--gpu-hours", "10", "--tokens-per-s-per-gpu", "1000", "--json")
    floor = json.loads(cw(*base).stdout)["serving"]  # type: ignore[attr-defined]
    busy = json.loads(cw(*base, "--tensor-busy", "1").stdout)[  # type: ignore[attr-defined]
        "serving"]
    assert floor["estimate"] is True and "ML.ENERGY" in floor["basis"]
    # Floor: idle + (TDP - idle) x active floor; tensor cores saturated: capped at TDP.
    lo = floor["gpu_idle_w"] + (floor["gpu_tdp_w"] - floor["gpu_idle_w"]) * floor[
        "serving_power_active_floor"]
    assert floor["gpu_power_w"] == pytest.approx(lo)
    assert busy["gpu_power_w"] == pytest.approx(busy["gpu_tdp_w"])
    assert floor["decode_gpu_power_fraction"] == pytest.approx(lo / floor["gpu_tdp_w"])
    # At TDP the server draws its sustained training power; below, less.
    assert busy["kw_per_gpu"] == pytest.approx(busy["training_kw_per_gpu"])
    assert floor["kw_per_gpu"] < floor["training_kw_per_gpu"]
    # kWh per million tokens = kW x PUE / (tokens/s x 3600) x 1e6.
    d = json.loads(cw(*base).stdout)  # type: ignore[attr-defined]
    assert floor["kwh_per_million_tokens"] == pytest.approx(
        floor["kw_per_gpu"] * d["pue"] / 3600.0 * 1e3)


def test_prefill_time_share_is_deprecated_and_ignored() -> None:
    base = ("--gpu-hours", "10", "--tokens-per-s-per-gpu", "1000", "--json")
    r = cw(*base, "--prefill-time-share", "1")
    assert r.exit_code == 0, r.output  # type: ignore[attr-defined]
    assert "deprecated" in r.stderr  # type: ignore[attr-defined]
    old = json.loads(r.stdout)["serving"]  # type: ignore[attr-defined]
    new = json.loads(cw(*base).stdout)["serving"]  # type: ignore[attr-defined]
    assert old["kw_per_gpu"] == new["kw_per_gpu"]


def test_bad_tensor_busy_exits_2_naming_the_flag() -> None:
    r = cw("--gpu-hours", "10", "--tokens-per-s-per-gpu", "1000", "--tensor-busy", "2")
    assert r.exit_code == 2, r.output  # type: ignore[attr-defined]
    assert "--tensor-busy" in r.output  # type: ignore[attr-defined]


def test_bad_prefill_time_share_exits_2_naming_the_flag() -> None:
    r = cw("--gpu-hours", "10", "--tokens-per-s-per-gpu", "1000", "--prefill-time-share", "2")
    assert r.exit_code == 2, r.output  # type: ignore[attr-defined]
    assert "--prefill-time-share" in r.output  # type: ignore[attr-defined]
