"""`clusterwright ops power`: the JSON keys, cooling feasibility, PUE scaling, bad input."""

from __future__ import annotations

from typing import Any

import pytest
from typer.testing import CliRunner, Result

from clusterwright.cli.main import app
from tests.cli.helpers import json_ok, user_error

runner = CliRunner()


def cw(*args: str) -> Result:
    return runner.invoke(app, ["ops", "power", *args], env={"CLUSTERWRIGHT_CATALOG": None})


def power_json(*args: str) -> dict[str, Any]:
    return json_ok(cw(*args, "--json"))


def test_keys_and_worked_dgx_h100_case() -> None:
    d = power_json("--server", "dgx-h100", "--nodes", "16", "--pue", "1.5")
    for key in ("it_power_kw", "facility_power_kw", "racks", "per_rack_kw",
                "cooling_feasibility", "annual_energy_kwh", "training_swing"):
        assert key in d, key
    b = d["it_power_breakdown_kw"]
    # 16 x 10.2 = 163.2 kW nameplate, x 0.76 = 124.032 kW typical
    assert b["servers_nameplate"] == pytest.approx(163.2)
    assert b["servers_typical"] == pytest.approx(124.032)
    assert d["it_power_kw"]["nameplate"] == pytest.approx(163.2 + b["network_nameplate"])
    assert d["facility_power_kw"]["typical"] == pytest.approx(1.5 * d["it_power_kw"]["typical"])
    assert d["annual_energy_kwh"] == pytest.approx(d["it_power_kw"]["typical"] * 8760 * 1.5)
    # swing 16 x 8 x 700 W x 0.88 = 78.848 kW
    assert d["training_swing"]["swing_mw"] == pytest.approx(0.078848)
    assert d["racks"]["servers_per_rack"] == 4
    assert d["cooling_feasibility"]["air"]["feasible"] is True


def test_liquid_rack_system() -> None:
    d = power_json("--server", "gb200-nvl72", "--nodes", "2")
    assert d["cooling"] == "liquid"
    assert d["cooling_feasibility"]["air"]["feasible"] is False
    assert d["cooling_feasibility"]["liquid"]["feasible"] is True
    assert d["pue"] == pytest.approx(1.15)


def test_human_output_renders() -> None:
    r = cw("--server", "dgx-h100", "--nodes", "4")
    assert r.exit_code == 0, r.output
    assert "Training power swing" in r.stdout and "facility" in r.stdout


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (("--server", "dgx-h100", "--nodes", "4", "--pue", "0.8"), "--pue"),
        (("--server", "dgx-h100", "--nodes", "4", "--cooling", "oil"), "--cooling"),
        (("--server", "dgx-h100", "--nodes", "4", "--rack-kw", "-3"), "--rack-kw"),
        (("--server", "dgx-h100", "--nodes", "0"), "--nodes"),
        (("--server", "nope", "--nodes", "4"), "--server"),
        (("--server", "gb200-nvl72", "--nodes", "1", "--cooling", "air"), "--cooling"),
    ],
)
def test_bad_input_names_the_flag(args: tuple[str, ...], flag: str) -> None:
    assert flag in user_error(cw(*args, "--json"))


@pytest.mark.parametrize(("server", "cooling", "racks_per_system"), [
    ("tpu-v5e-256", "air", 4),  # 80 kW over four 48U racks: 20 kW each
    ("trn2-ultraserver", "air", 2),
    ("gb300-nvl72", "liquid", 1),  # up to 142 kW in one rack (NVIDIA Enterprise RA)
    ("trn3-ultraserver", "liquid", 2),
])
def test_every_rack_scale_system_plans_at_its_own_cooling(server: str, cooling: str,
                                                          racks_per_system: int) -> None:
    """These were refused at every setting: a multi-rack pod checked against one rack, and
    a 142 kW NVL72 against a 132 kW liquid limit."""
    d = power_json("--server", server, "--nodes", "2")
    assert d["cooling"] == cooling
    assert d["racks"]["racks_per_system"] == racks_per_system
    assert d["racks"]["compute"] == 2 * racks_per_system
    assert d["cooling_feasibility"][cooling]["feasible"] is True


def test_the_reported_limit_is_the_one_the_racks_were_planned_at() -> None:
    d = power_json("--server", "dgx-h100", "--nodes", "64", "--rack-kw", "100",
                   "--cooling", "air")
    assert d["racks"]["limit_kw"] == pytest.approx(42.9)


def test_a_fabric_refusal_points_to_fabric_design() -> None:
    err = user_error(cw("--server", "dgx-a100", "--nodes", "4096"))
    assert "`fabric design --switch`" in err


def test_storage_units_are_racked_and_powered_with_the_cluster() -> None:
    base = power_json("--server", "dgx-h100", "--nodes", "16")
    d = power_json("--server", "dgx-h100", "--nodes", "16", "--storage-system", "ddn-ai400x2t",
                   "--storage-units", "2")
    # 2 x 2,400 W from the catalog, on top of the same servers and (nearly) the same network.
    assert d["it_power_breakdown_kw"]["storage"] == pytest.approx(4.8)
    assert base["it_power_breakdown_kw"]["storage"] == 0
    assert d["it_power_kw"]["nameplate"] > base["it_power_kw"]["nameplate"] + 4.8 - 1.0


@pytest.mark.parametrize(("args", "flag"), [
    (("--storage-system", "ddn-ai400x2t"), "--storage-system"),
    (("--storage-units", "2"), "--storage-system"),
    (("--storage-system", "nope", "--storage-units", "1"), "--storage-system"),
    (("--storage-system", "aws-s3-standard-prefix", "--storage-units", "1"), "--storage-system"),
    (("--storage-system", "ddn-ai400x2t", "--storage-units", "0"), "--storage-units"),
])
def test_bad_storage_tier_exits_2_naming_the_flag(args: tuple[str, ...], flag: str) -> None:
    err = user_error(cw("--server", "dgx-h100", "--nodes", "16", *args))
    assert flag in err
