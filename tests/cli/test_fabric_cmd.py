"""`clusterwright fabric design`: the JSON contract, a SuperPOD reference design, --out, and
bad input (exit 2, the flag named, no traceback)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from clusterwright.cli.main import app
from tests.cli.helpers import json_ok, user_error

CONTRACT_KEYS = (
    "nodes",
    "gpus",
    "tiers",
    "leaf_switches",
    "spine_switches",
    "core_switches",
    "links_by_tier",
    "transceivers",
    "cables",
    "power_w",
    "cost_usd",
)
SMALL = ("--server", "dgx-h100", "--nodes", "4")

runner = CliRunner()


def cw(*args: str) -> Result:
    return runner.invoke(app, list(args), env={"CLUSTERWRIGHT_CATALOG": None})


def design_json(*args: str) -> dict[str, Any]:
    return json_ok(cw("fabric", "design", *args, "--json"))


# ---------------------------------------------------------------------------- contract


def test_json_is_one_object_with_the_contract_keys() -> None:
    d = design_json(*SMALL, "--switch", "qm9700")
    for key in CONTRACT_KEYS:
        assert key in d, key
    assert set(d["links_by_tier"]) >= {"node-leaf", "leaf-spine", "spine-core"}
    for key in (
        "nodes",
        "gpus",
        "tiers",
        "leaf_switches",
        "spine_switches",
        "core_switches",
        "transceivers",
        "cables",
    ):
        assert isinstance(d[key], int) and d[key] >= 0, key
    assert isinstance(d["power_w"], int | float) and d["power_w"] > 0
    assert isinstance(d["cost_usd"], int | float) and d["cost_usd"] > 0
    assert d["nodes"] == 4 and d["gpus"] == 32
    assert "out" not in d


def test_superpod_b200_two_scalable_units() -> None:
    """DGX SuperPOD B200 RA: 64 DGX B200 (2 SU of 32) on QM9700: 16 leaves, 8 spines,
    512 node-leaf and 512 leaf-spine links, two tiers."""
    d = design_json("--server", "dgx-b200", "--nodes", "64", "--switch", "qm9700")
    assert d["gpus"] == 512
    assert d["tiers"] == 2
    assert (d["leaf_switches"], d["spine_switches"], d["core_switches"]) == (16, 8, 0)
    assert d["links_by_tier"] == {"node-leaf": 512, "leaf-spine": 512, "spine-core": 0}


def test_human_output_renders_the_backend_table() -> None:
    r = cw("fabric", "design", *SMALL, "--switch", "qm9700")
    assert r.exit_code == 0, r.output
    assert "Backend fabric" in r.stdout
    assert "4 x dgx-h100" in r.stdout


def test_out_writes_the_exports_and_reports_them(tmp_path: Path) -> None:
    out = tmp_path / "fab"
    d = design_json(*SMALL, "--switch", "qm9700", "--out", str(out))
    assert d["out"] == str(out)
    files = [p for p in out.rglob("*") if p.is_file()]
    assert d["files"] == len(files) > 0
    assert (out / "slurm" / "topology.conf").is_file()
    assert json.loads((out / "fabric.json").read_text())["nodes"] == 4


def test_out_with_force_replaces_a_non_empty_dir(tmp_path: Path) -> None:
    out = tmp_path / "fab"
    out.mkdir()
    (out / "stale.txt").write_text("old")
    design_json(*SMALL, "--switch", "qm9700", "--out", str(out), "--force")
    assert not (out / "stale.txt").exists()
    assert (out / "cabling.csv").is_file()


# ---------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("args", "flag", "words"),
    [
        (("--server", "dgx-h100", "--nodes", "0"), "--nodes", ("at least 1",)),
        (("--server", "dgx-h100", "--nodes", "-3"), "--nodes", ("-3",)),
        ((*SMALL, "--oversubscription", "0.5"), "--oversubscription", ()),
        (("--server", "dgx-h10", "--nodes", "4"), "--server", ("dgx-h100", "did you mean")),
        ((*SMALL, "--switch", "qm970"), "--switch", ("qm9700",)),
        ((*SMALL, "--switch", "sn2201"), "--switch", ("400",)),
        ((*SMALL, "--tiers", "4"), "--tiers", ()),
        (
            ("--server", "dgx-h100", "--nodes", "2048", "--switch", "qm9700", "--tiers", "2"),
            "--tiers",
            ("2048",),
        ),
        (("--server", "gb200-nvl72", "--nodes", "2", "--cooling", "air"), "--cooling", ("liquid",)),
        ((*SMALL, "--rack-kw", "5"), "--rack-kw", ("kW",)),
        ((*SMALL, "--cooling", "water"), "--cooling", ("water",)),
        ((*SMALL, "--protocol", "myrinet"), "--protocol", ("myrinet",)),
    ],
    ids=[
        "nodes-0",
        "nodes-negative",
        "oversubscription-below-1",
        "unknown-server",
        "unknown-switch",
        "switch-without-nic-speed",
        "tiers-4",
        "two-tiers-too-small",
        "nvl72-air",
        "rack-kw-below-one-server",
        "unknown-cooling",
        "unknown-protocol",
    ],
)
def test_bad_input_exits_2_naming_the_flag(
    args: tuple[str, ...], flag: str, words: tuple[str, ...]
) -> None:
    for as_json in ((), ("--json",)):
        err = user_error(cw("fabric", "design", *args, *as_json))
        assert flag in err, err
        for w in words:
            assert w in err, (w, err)


def test_out_non_empty_without_force_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "fab"
    out.mkdir()
    (out / "mine.txt").write_text("keep")
    err = user_error(cw("fabric", "design", *SMALL, "--out", str(out), "--json"))
    assert "--out" in err and "--force" in err
    assert [p.name for p in out.iterdir()] == ["mine.txt"]
    assert (out / "mine.txt").read_text() == "keep"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fab"], "temp dirs left behind"


def test_out_that_is_a_file_is_a_user_error(tmp_path: Path) -> None:
    out = tmp_path / "fab"
    out.write_text("a file")
    err = user_error(cw("fabric", "design", *SMALL, "--out", str(out), "--force"))
    assert "--out" in err
    assert out.read_text() == "a file"


@pytest.mark.parametrize(("args", "want"), [
    (("--switch", "qm9700", "--protocol", "ethernet"),
     "--switch: qm9700 speaks infiniband, but --protocol is ethernet"),
    (("--switch", "qm9700", "--tiers", "2", "--nodes", "2048"), "need --tiers 3 (or leave --tiers"),
    (("--su-hosts", "1000",), "--su-hosts: 1,000 hosts per scalable unit"),
])
def test_designer_field_errors_are_worded_as_flags(args: tuple[str, ...], want: str) -> None:
    """The designer blames FabricRequest fields; this face names its own flags, in the lead
    and in the message body, and never a bare field name in backquotes."""
    base = ["--server", "dgx-h100"] + ([] if "--nodes" in args else ["--nodes", "4"])
    err = user_error(cw("fabric", "design", *base, *args))
    assert want in err and "`" not in err, err


def test_a_liquid_cooled_rack_system_designs_at_its_own_cooling() -> None:
    """No --cooling, no --rack-kw: the server's own cooling and the liquid-cooled rack limit
    (a GB300 NVL72 was refused under the old defaults, air and 40 kW)."""
    d = design_json("--server", "gb300-nvl72", "--nodes", "2")
    assert d["racks"]["compute"] == 2


def test_one_tier_with_a_smaller_unit_names_su_hosts() -> None:
    """It crashed with an IndexError placing the second unit's racks."""
    err = user_error(cw("fabric", "design", "--server", "dgx-h100", "--nodes", "8",
                        "--tiers", "1", "--su-hosts", "4"))
    assert err.startswith("error: --su-hosts:") and "--tiers 2" in err


def test_storage_units_are_wired_and_on_the_bom(tmp_path: Path) -> None:
    d = design_json(*SMALL, "--storage-system", "ddn-ai400x2t", "--storage-units", "1",
                    "--out", str(tmp_path / "f"))
    fe = d["frontend"]
    assert (fe["storage_system"], fe["storage_units"], fe["storage_ports"]) == (
        "ddn-ai400x2t", 1, 8)
    bom = (tmp_path / "f" / "bom.csv").read_text().splitlines()
    assert any(line.startswith("storage,ddn-ai400x2t,frontend,storage,1,") for line in bom)
    err = user_error(cw("fabric", "design", *SMALL, "--storage-units", "1"))
    assert "--storage-system" in err
