"""scripts/netsim_experiments.py and examples/netsim/README.md: the shipped network experiments
run at a reduced size, draw valid SVG, and every documented command parses (two run for real
and match the script)."""

from __future__ import annotations

import json
import re
import shlex
import xml.etree.ElementTree as ET
from pathlib import Path
from types import ModuleType

import pytest
import typer
from typer.testing import CliRunner

from clusterwright.cli.main import app
from tests import scripts

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "examples" / "netsim" / "README.md"


@pytest.fixture(scope="module")
def ne() -> ModuleType:
    return scripts.load("netsim_experiments")


def readme_commands() -> list[list[str]]:
    """``clusterwright netsim`` argument lists of the README's shell blocks (continuations
    joined, loop variables set to a value)."""
    text = README.read_text().replace("\\\n", " ")
    out = []
    for line in text.splitlines():
        m = re.search(r"clusterwright (netsim .*?)(;|$)", line)
        if m:
            cmd = re.sub(r"\$\{?(\w+)\}?", "1", m.group(1))
            out.append(shlex.split(cmd))
    return out


def test_every_experiment_runs_small_and_plots_valid_svg(ne: ModuleType) -> None:
    todo = []
    for name in ne.EXPERIMENTS:
        mine = ne.cases(ne.QUICK, [name])
        assert mine, name
        todo += mine[:2]  # the first two of each keep the test fast
    rows = ne.run_all(todo, workers=1)
    assert all(r["time_ms"] > 0 and r["pct_of_closed_form"] > 0 for r in rows)
    points = ne.aggregate(rows)
    for name in ne.EXPERIMENTS:
        svg = ne.plot(name, points)
        root = ET.fromstring(svg)
        assert root.tag.endswith("svg")
        assert "http" not in svg.replace('xmlns="http://www.w3.org/2000/svg"', "")
        assert "<rect" in svg and ("%" in svg or "slowdown" in svg)
    assert "| experiment |" in ne.table(points)


def test_readme_commands_parse() -> None:
    cmds = readme_commands()
    assert len(cmds) >= 10
    group = typer.main.get_command(app)
    netsim = group.commands["netsim"]  # type: ignore[attr-defined]
    for args in cmds:
        assert args[0] == "netsim"
        netsim.make_context("netsim", list(args[1:]))  # raises on an unknown or bad option


def test_readme_commands_are_the_scripts_runs(ne: ModuleType) -> None:
    documented = {shlex.join(a) for a in readme_commands()}
    scripted = {shlex.join(c.argv()) for c in ne.cases(ne.FULL)}
    assert sorted(documented - scripted) == []


@pytest.mark.parametrize("pick", ["--algorithm tree --routing spray", "--routing ecmp --qps 8"])
def test_fastest_readme_commands_run_and_agree_with_the_script(ne: ModuleType,
                                                               pick: str) -> None:
    cands = [a for a in readme_commands()
             if pick in shlex.join(a) and "--nodes 64" in shlex.join(a)
             and "--ranks" not in a and "--fail" not in a and "--oversubscription" not in a]
    assert cands, pick
    args = cands[0]
    r = CliRunner().invoke(app, [*args, "--json"])
    assert r.exit_code == 0, r.output
    got = json.loads(r.stdout)
    case = next(c for c in ne.cases(ne.FULL) if c.argv() == args)
    want = ne.run_case(case)
    assert got["completion_time_s"] * 1e3 == pytest.approx(want["time_ms"], rel=1e-9)


def test_three_tier_alltoall_crosses_pods_and_spraying_beats_ecmp(ne: ModuleType) -> None:
    """The 3-tier all-to-all (quick size: 16 servers, 2 pods) collides under ECMP and reaches
    the uncontended time with spraying."""
    mine = {c.series: c for c in ne.cases(ne.QUICK, ["routing"])
            if c.category == "all-to-all no PXN, 3-tier"}
    assert {"ECMP", "adaptive", "spray"} <= set(mine)
    assert all(c.fabric.tiers == 3 and c.collective == "alltoall" and not c.pxn
               for c in mine.values())
    ecmp, spray = ne.run_case(mine["ECMP"]), ne.run_case(mine["spray"])
    assert spray["pct_of_closed_form"] == pytest.approx(100.0, abs=0.5)
    assert ecmp["pct_of_closed_form"] < 95.0
    full = [c for c in ne.cases(ne.FULL, ["routing"]) if c.category == mine["ECMP"].category]
    assert full and all(c.fabric.tiers == 3 for c in full)
