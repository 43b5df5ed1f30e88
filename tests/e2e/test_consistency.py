"""No plan output contradicts another command's output for the same inputs: what `plan` decides
for a scenario, `train plan`, `serve plan`, `fabric design` and `ops power` decide for the same
model, GPUs and load. (Pricing agreement across commands is tested with the pricing policy.)"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from clusterwright.cli.main import app

runner = CliRunner()

TRAIN = """\
name: c
workloads:
  - {kind: training, name: tr, model: "llama-3.1-8b", tokens: 1.0e11, seq_len: 4096, gpus: 64}
constraints: {gpus: ["h100-sxm"], servers: ["dgx-h100"], deployment: "on-prem", pue: 1.3}
"""

SERVE = """\
name: ci
workloads:
  - kind: inference
    name: chat
    model: "llama-3.1-8b"
    qps: 40
    input_len: {mean: 1000}
    output_len: {mean: 200}
    slo: {ttft_p99_s: 1.0, tpot_p99_s: 0.05}
constraints: {gpus: ["h100-sxm"], deployment: "on-prem"}
"""


def cw(*args: str) -> dict[str, Any]:
    r = runner.invoke(app, list(args), env={"CLUSTERWRIGHT_CATALOG": None})
    assert r.exit_code == 0, r.output
    out: dict[str, Any] = json.loads(r.stdout)
    return out


def planned(tmp_path: Path, text: str) -> dict[str, Any]:
    s = tmp_path / "s.yaml"
    s.write_text(text)
    cw("plan", str(s), "--out", str(tmp_path / "out"), "--json")
    bp: dict[str, Any] = json.loads((tmp_path / "out" / "blueprint.json").read_text())
    return bp


@pytest.fixture(scope="module")
def training(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return planned(tmp_path_factory.mktemp("train"), TRAIN)


def test_plan_and_train_plan_choose_the_same_layout_and_time(training: dict[str, Any]) -> None:
    w = training["workloads"][0]
    t = cw("train", "plan", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--gpus", "64",
           "--tokens", "1e11", "--server", "dgx-h100", "--json")
    best = t["best"]
    for k in ("tp", "pp", "dp", "cp", "ep", "micro_batch", "interleave", "zero", "recompute"):
        assert best[k] == w["layout"][k], k
    assert best["step_time_s"] == pytest.approx(w["step_time_s"], rel=1e-9)
    assert t["time_to_train_days"] == pytest.approx(w["time_to_train_days"], rel=1e-9)


def test_plan_and_fabric_design_build_the_same_fabric(training: dict[str, Any]) -> None:
    fab = training["fabric"]
    st = training["storage"]
    f = cw("fabric", "design", "--server", "dgx-h100", "--nodes",
           str(training["cluster"]["nodes"]), "--storage-system", st["system"],
           "--storage-units", str(st["units"]), "--json")
    for k in ("tiers", "switch", "leaf_switches", "spine_switches", "core_switches",
              "transceivers", "links_by_tier"):
        assert f[k] == fab[k], k
    for k in ("switch", "link_speed_gbps", "leaf_switches", "spine_switches", "storage_ports"):
        assert f["frontend"][k] == fab["frontend"][k], k
    # The storage units the plan bought are the ones the frontend wires.
    assert fab["frontend"]["storage_ports"] == st["ports"]


def test_plan_and_ops_power_draw_the_same_power(training: dict[str, Any]) -> None:
    st = training["storage"]
    p = cw("ops", "power", "--server", "dgx-h100", "--nodes",
           str(training["cluster"]["nodes"]), "--pue", "1.3", "--storage-system", st["system"],
           "--storage-units", str(st["units"]), "--json")
    power = training["power"]
    # Both carry the storage tier the plan designed (blueprint 1.3): its units' draw.
    storage_kw = power["it_power_breakdown_kw"]["storage"]
    assert storage_kw == pytest.approx(st["power_kw"], rel=1e-12)
    assert p["it_power_breakdown_kw"]["storage"] == pytest.approx(storage_kw, rel=1e-12)
    for k in ("typical", "nameplate", "idle"):
        assert p["it_power_kw"][k] == pytest.approx(power["it_power_kw"][k], rel=1e-9), k
    for k in ("typical", "nameplate"):
        assert p["facility_power_kw"][k] == pytest.approx(power["facility_power_kw"][k],
                                                          rel=1e-9), k


@pytest.mark.slow
def test_plan_and_serve_plan_size_the_same_fleet(tmp_path: Path) -> None:
    w = planned(tmp_path, SERVE)["workloads"][0]
    s = cw("serve", "plan", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--qps", "40",
           "--input-len", "1000", "--output-len", "200", "--ttft-p99", "1.0",
           "--tpot-p99", "0.05", "--json")["best"]
    assert (s["tp"], s["ep"], s["replicas"], s["gpus"]) == (w["tp"], w["ep"], w["replicas"],
                                                             w["gpus"])
    # The two simulate different request counts (plan: 1,500; serve plan: 2,000): the
    # capacity each finds agrees within the search tolerance (5 %).
    assert s["qps_per_replica"] == pytest.approx(w["qps_per_replica"], rel=0.05)
