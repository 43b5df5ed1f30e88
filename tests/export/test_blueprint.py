"""export/blueprint.py: every artifact in one directory, written atomically, never over a
non-empty directory without force."""

from __future__ import annotations

import csv
import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from clusterwright.catalog.registry import Catalog
from clusterwright.design.blueprint import Blueprint
from clusterwright.errors import InputError
from clusterwright.export import blueprint as export
from clusterwright.plan.scenario import plan_scenario
from clusterwright.spec.scenario import loads_scenario

SCENARIO = """
name: small
workloads:
  - {kind: training, name: tr, model: "llama-3.1-8b", tokens: 1.0e11, gpus: 32}
constraints: {gpus: ["h100-sxm"]}
"""
HAS_REPORT = importlib.util.find_spec("clusterwright.report.html") is not None


@pytest.fixture(scope="module")
def bp(catalog: Catalog) -> Blueprint:
    sc, _ = loads_scenario(SCENARIO)
    return plan_scenario(sc, catalog, quick=True)


def test_writes_blueprint_bom_cabling_and_configs(bp: Blueprint, tmp_path: Path) -> None:
    out = tmp_path / "bp"
    files = export.write_blueprint(bp, bp.fabric_design, out)
    assert {"blueprint.json", "bom.csv", "cabling.csv"} <= set(files)
    assert (out / "configs" / "slurm" / "topology.conf").is_file()
    assert any(f.startswith("configs/frr/") for f in files)
    data = json.loads((out / "blueprint.json").read_text())
    assert Blueprint.from_dict(data).recommendation["nodes"] == 4  # 32 GPUs / 8 per DGX
    assert data["artifacts"]["bom"] == "bom.csv" and data["artifacts"]["configs"] == "configs/"
    bom = list(csv.reader((out / "bom.csv").open()))
    servers = [r for r in bom if "dgx-h100" in r]
    assert servers and "4" in servers[0]  # 4 servers on the BOM
    assert (out / "bom.csv").read_text() == (out / "configs" / "bom.csv").read_text()
    if HAS_REPORT:
        assert (out / "report.html").is_file() and data["artifacts"]["report"] == "report.html"


def test_json_has_no_nan(bp: Blueprint) -> None:
    text = export.blueprint_json({**bp.to_dict(), "notes": [float("nan"), float("inf")]})
    assert json.loads(text)["notes"] == [None, None]


def test_refuses_a_non_empty_directory_without_force(bp: Blueprint, tmp_path: Path) -> None:
    out = tmp_path / "bp"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    with pytest.raises(InputError, match=r"out: \S+ exists and is not empty; set `force`"):
        export.write_blueprint(bp, bp.fabric_design, out)
    assert (out / "keep.txt").read_text() == "mine"
    export.write_blueprint(bp, bp.fabric_design, out, force=True)
    assert not (out / "keep.txt").exists() and (out / "blueprint.json").is_file()


def test_a_failure_leaves_nothing_behind(bp: Blueprint, tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(data: dict[str, Any], path: Path) -> None:
        raise RuntimeError("renderer failed")

    monkeypatch.setattr(export, "_report_renderer", lambda: boom)
    out = tmp_path / "bp"
    with pytest.raises(RuntimeError):
        export.write_blueprint(bp, bp.fabric_design, out)
    assert list(tmp_path.iterdir()) == []  # no out dir, no temporary sibling
    # An existing directory survives a failed --force replace untouched.
    out.mkdir()
    (out / "old.txt").write_text("old")
    with pytest.raises(RuntimeError):
        export.write_blueprint(bp, bp.fabric_design, out, force=True)
    assert [p.name for p in tmp_path.iterdir()] == ["bp"]
    assert (out / "old.txt").read_text() == "old"


def test_without_a_fabric_writes_only_the_blueprint(bp: Blueprint, tmp_path: Path) -> None:
    files = export.write_blueprint(bp, None, tmp_path / "bp", report=False)
    assert files == ["blueprint.json"]
