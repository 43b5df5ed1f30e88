"""plan/fabric_choice.py: the planner asks for no backend only when every job fits one NVLink
domain, and honours the scenario's ``fabric:`` section."""

from __future__ import annotations

from typing import Any

import pytest

from clusterwright.catalog.registry import Catalog
from clusterwright.design.blueprint import Blueprint
from clusterwright.plan.scenario import plan_scenario
from clusterwright.spec.scenario import loads_scenario

TRAIN = """
name: t
workloads:
  - {{kind: training, name: tr, model: "llama-3.1-8b", tokens: 1.0e10, seq_len: 4096, gpus: {gpus}}}
constraints: {{gpus: ["h100-sxm"], servers: ["dgx-h100"], deployment: "on-prem"}}
{fabric}
"""

SERVE = """
name: s
workloads:
  - kind: inference
    name: chat
    model: "llama-3.1-8b"
    qps: 20
    input_len: 512
    output_len: 128
    slo: {ttft_p99_s: 1.0, tpot_p99_s: 0.05}
constraints: {gpus: ["h100-sxm"], servers: ["dgx-h100"], deployment: "on-prem"}
"""


def planned(cat: Catalog, text: str) -> Blueprint:
    sc, _ = loads_scenario(text)
    return plan_scenario(sc, cat, quick=True)


def decision(bp: Blueprint, area: str, subject: str | None = "backend") -> dict[str, Any]:
    return next(d for d in bp.decisions if d["area"] == area and d["subject"] == subject)


def test_inference_replicas_inside_a_server_get_no_backend(catalog: Catalog) -> None:
    bp = planned(catalog, SERVE)
    f = bp.fabric
    assert f is not None and f["backend"] == "none" and f["tiers"] == 0
    assert f["leaf_switches"] == 0 and f["links_by_tier"]["node-leaf"] == 0
    d = decision(bp, "tiers")
    assert d["choice"] == "no backend fabric"
    assert "every job fits one NVLink domain of 8 GPUs" in d["why"]
    assert "chat replicas use 1 GPU(s) each" in d["why"]
    assert any(n.startswith("no backend fabric") for n in f["notes"])


def test_training_across_servers_keeps_its_rail_backend(catalog: Catalog) -> None:
    bp = planned(catalog, TRAIN.format(gpus=16, fabric=""))
    f = bp.fabric
    assert f is not None and f["backend"] == "rail" and f["tiers"] == 1
    assert f["links_by_tier"]["node-leaf"] == 2 * 8
    assert decision(bp, "tiers")["choice"] == "1"


def test_training_on_one_server_needs_no_backend(catalog: Catalog) -> None:
    bp = planned(catalog, TRAIN.format(gpus=8, fabric=""))
    assert bp.fabric is not None and bp.fabric["backend"] == "none"


def test_fabric_section_picks_an_infiniband_switch(catalog: Catalog) -> None:
    text = TRAIN.format(gpus=512, fabric='fabric: {protocol: "infiniband", su_hosts: 32}')
    bp = planned(catalog, text)
    f = bp.fabric
    assert f is not None
    # 64 x DGX H100 on QM9700 in SUs of 32: 2 SUs, 16 leaves and 8 spines (SuperPOD RA).
    assert (f["protocol"], f["switch"], f["su_hosts"]) == ("infiniband", "qm9700", 32)
    assert (f["leaf_switches"], f["spine_switches"]) == (16, 8)
    assert "as asked (protocol)" in decision(bp, "protocol")["why"]
    assert "as asked (su_hosts)" in decision(bp, "su")["why"]


def test_fabric_oversubscription_is_honoured(catalog: Catalog) -> None:
    bp = planned(catalog, TRAIN.format(gpus=1024, fabric="fabric: {oversubscription: 3}"))
    assert bp.fabric is not None and bp.fabric["oversubscription"] == pytest.approx(3.0, rel=0.1)
    assert decision(bp, "oversubscription")["choice"] == "3:1 backend"


def test_a_designer_refusal_names_the_scenario_field(catalog: Catalog) -> None:
    # 1,000 hosts per unit for 16 hosts builds leaves with no host: refused, naming the field.
    bp = planned(catalog, TRAIN.format(gpus=128, fabric="fabric: {su_hosts: 1000}"))
    assert not bp.feasible
    text = " ".join(v["message"] for v in bp.binding_constraints)
    assert "fabric.su_hosts:" in text and "--" not in text


def test_enterprise_pool_is_right_sized() -> None:
    """The shipped enterprise pool (two TP1 services and a nightly LoRA on the same GPUs): no
    backend, one frontend tier, one management switch, network below 15 % of capex."""
    import json
    from pathlib import Path

    bp = json.loads((Path(__file__).parents[2] / "examples" / "enterprise-inference-pool"
                     / "blueprint.json").read_text())
    f, capex = bp["fabric"], bp["tco"]["capex_breakdown_usd"]
    assert f["backend"] == "none" and f["frontend"]["tiers"] == 1
    assert f["oob"]["aggregation_switches"] == 0 and f["oob"]["leaf_switches"] == 1
    assert capex["network"] / bp["tco"]["capex_usd"] < 0.15
    why = next(d["why"] for d in bp["decisions"] if d["area"] == "tiers")
    # The LoRA job is 13 GPUs at peak in the plan, but its GPU-hours fit one server's window.
    assert "nightly-lora fits one server" in why
