"""``clusterwright twin diff`` / ``twin lab``: the JSON contract, the shipped example, and
bad input (exit 2 naming the flag, the file and the line; never a traceback)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from clusterwright.cli.main import app
from tests.cli.helpers import json_ok, user_error

runner = CliRunner()
EX = Path(__file__).resolve().parents[2] / "examples" / "twin"
AS_BUILT = EX / "as-built"
ALL = ["--ibnet", str(AS_BUILT / "ibnetdiscover.txt"), "--lldp", str(AS_BUILT / "lldp.json"),
       "--bgp", str(AS_BUILT / "bgp.json"), "--slurm", str(AS_BUILT / "topology.conf"),
       "--k8s", str(AS_BUILT / "nodes.json"), "--gpu-topo", str(AS_BUILT / "topo.txt"),
       "--metrics", str(AS_BUILT / "metrics.prom"), "--steps", str(AS_BUILT / "steps.csv")]


def _diff(*args: str) -> list[str]:
    return ["twin", "diff", "--blueprint", str(EX / "blueprint"), *args]


def test_example_finds_exactly_its_faults_with_repairs() -> None:
    data = json_ok(runner.invoke(app, _diff(*ALL, "--no-impact", "--json")))
    want = {tuple(k) for k in json.loads((EX / "faults.json").read_text())["expected_findings"]}
    keys = set()
    for f in data["findings"]:
        for k in ("id", "kind", "severity", "gpu_hours_lost_per_day", "subject", "summary",
                  "expected", "observed", "repair", "moves", "evidence"):
            assert k in f
        keys.add(f["kind"])
    assert data["findings_total"] == len(want)
    assert keys == {k[0] for k in want}
    assert sum(data["by_kind"].values()) == len(want)
    assert [f["id"] for f in data["findings"]] == [f"F{i:03d}" for i in
                                                    range(1, len(want) + 1)]


def test_impact_ranks_by_gpu_hours_lost() -> None:
    data = json_ok(runner.invoke(app, _diff(*ALL, "--json")))
    lost = [f["gpu_hours_lost_per_day"] for f in data["findings"]]
    assert lost == sorted(lost, reverse=True) and lost[0] > 0
    assert data["impact"]["network"]["faults_simulated"] > 0
    assert data["gpu_hours_lost_per_day"] > 0


def test_any_subset_of_inputs_and_text_output() -> None:
    r = runner.invoke(app, _diff("--ibnet", str(AS_BUILT / "ibnetdiscover.txt"),
                                 "--no-impact"))
    assert r.exit_code == 0, r.output
    assert "finding(s) against" in r.stdout and "could not see" in r.stdout
    data = json_ok(runner.invoke(app, _diff("--steps", str(AS_BUILT / "steps.csv"),
                                            "--no-impact", "--json")))
    assert {f["kind"] for f in data["findings"]} == {"slow_gpu"}


def test_truncated_dump_exits_2_naming_flag_file_and_line(tmp_path: Path) -> None:
    p = tmp_path / "lldp.json"
    text = (AS_BUILT / "lldp.json").read_text()
    p.write_text(text[: len(text) // 3])
    err = user_error(runner.invoke(app, _diff("--lldp", str(p))))
    assert "--lldp" in err and "lldp.json:" in err and "truncated JSON" in err


def test_unknown_format_and_another_cluster(tmp_path: Path) -> None:
    p = tmp_path / "topo.conf"
    p.write_text("this is not slurm\n")
    err = user_error(runner.invoke(app, _diff("--slurm", str(p))))
    assert "--slurm" in err and "topo.conf:1: unknown format" in err
    p.write_text("SwitchName=x Nodes=node[1-4]\n")
    err = user_error(runner.invoke(app, _diff("--slurm", str(p))))
    assert "none of the 4 device(s)" in err and "topo.conf:1" in err


def test_flags_are_checked(tmp_path: Path) -> None:
    assert "at least one" in user_error(runner.invoke(app, _diff()))
    assert "--network" in user_error(runner.invoke(
        app, _diff("--steps", str(AS_BUILT / "steps.csv"), "--network", "storage")))
    assert "--routing" in user_error(runner.invoke(
        app, _diff("--steps", str(AS_BUILT / "steps.csv"), "--routing", "magic")))
    bp = tmp_path / "bp"
    bp.mkdir()
    err = user_error(runner.invoke(app, ["twin", "diff", "--blueprint", str(bp), "--steps",
                                         str(AS_BUILT / "steps.csv")]))
    assert "--blueprint" in err and "no cabling.csv" in err
    shutil.copytree(EX / "blueprint", bp, dirs_exist_ok=True)
    (bp / "cabling.csv").write_text("cable_id,network\nC1,backend,x\n")
    err = user_error(runner.invoke(app, ["twin", "diff", "--blueprint", str(bp), "--steps",
                                         str(AS_BUILT / "steps.csv")]))
    assert "cabling.csv:1: not a cabling plan" in err


@pytest.mark.parametrize("args, flag", [
    (["--leaves", "1"], "--leaves"), (["--spines", "99"], "--spines"),
    (["--miswires", "-1"], "--miswires"), (["--down", "1000"], "--down"),
    (["--timeout", "0"], "--timeout"), (["--server", "no-such"], "server"),
])
def test_lab_flags_are_checked_before_anything_runs(args: list[str], flag: str) -> None:
    assert flag in user_error(runner.invoke(app, ["twin", "lab", *args]))


@pytest.mark.netlab
def test_lab_json_contract() -> None:
    from clusterwright.lab import LabError
    from clusterwright.twin.lab import preflight

    try:
        preflight()
    except LabError as exc:
        pytest.skip(str(exc))
    r = runner.invoke(app, ["twin", "lab", "--json"])
    data = json_ok(r)
    for key in ("injected", "found", "false_findings", "findings"):
        assert key in data
    assert data["ok"] is True and data["false_findings"] == []
    assert len(data["found"]) == len(data["injected"]) == 3


def test_one_network_only_ignores_the_others_ports() -> None:
    data = json_ok(runner.invoke(app, _diff("--ibnet", str(AS_BUILT / "ibnetdiscover.txt"),
                                            "--lldp", str(AS_BUILT / "lldp.json"),
                                            "--network", "frontend", "--no-impact", "--json")))
    assert data["findings"]
    assert all("leaf-su" not in f["subject"] or f["subject"].startswith("fe-")
               for f in data["findings"] if f["kind"] != "slow_gpu")


def test_square_brackets_in_a_dump_are_text(tmp_path: Path) -> None:
    """A device a dump names "[/x]" raised rich's MarkupError (a traceback) in the text
    report; user text is escaped, and shown as written."""
    lldp = tmp_path / "lldp.json"
    lldp.write_text((AS_BUILT / "lldp.json").read_text().replace(
        '"leaf-su001-r1"', '"[/x]"', 3))
    r = runner.invoke(app, _diff("--lldp", str(lldp), "--no-impact"))
    assert r.exit_code == 0, r.output
    assert "[/x]" in r.stdout
    bad = runner.invoke(app, ["train", "estimate", "--model", "llama-3.1-8b", "--gpu", "[/x]",
                              "--gpus", "8"])
    assert bad.exit_code == 2 and "'[/x]'" in bad.stderr
