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
