"""One pricing policy (issue 16): `plan`, `train plan`, `serve plan` and `ops tco` price the same
GPUs at the same cloud offer and $/GPU-hour, and for the same cluster `plan` and `ops tco`
print the same cloud cost and breakeven."""

from __future__ import annotations

from typing import Any

import pytest
from typer.testing import CliRunner

from clusterwright.catalog.registry import Catalog
from clusterwright.cli.main import app
from clusterwright.plan.scenario import plan_scenario
from clusterwright.spec.scenario import loads_scenario
from tests.cli.helpers import json_ok

runner = CliRunner()

# 64 H100 = 8 DGX H100, racks at the air-cooled limit ops tco plans with (42.9 kW), and the
# same life, PUE and electricity price given to ops tco below.
SCENARIO = """
name: same-cluster
workloads:
  - {kind: training, name: tr, model: "llama-3.1-8b", tokens: 1.0e11, gpus: 64}
constraints: {gpus: ["h100-sxm"], deployment: "compare", power_per_rack_kw: 42.9,
              years: 4, pue: 1.3, electricity_usd_per_kwh: 0.1}
"""


def cli(*args: str) -> dict[str, Any]:
    return json_ok(runner.invoke(app, [*args, "--json"], env={"CLUSTERWRIGHT_CATALOG": None}))


def test_plan_train_serve_and_tco_agree_on_the_cloud_price(catalog: Catalog) -> None:
    sc, _ = loads_scenario(SCENARIO)
    bp = plan_scenario(sc, catalog, quick=True)
    rec, tco = bp.recommendation, bp.tco
    assert tco is not None and rec["nodes"] == 8
    # plan designs the storage tier from the workload (ops storage); ops tco is given it.
    tier = bp.storage
    assert tier is not None and tier["price_usd"] > 0
    tco_cli = cli("ops", "tco", "--server", "dgx-h100", "--nodes", "8", "--years", "4",
                  "--pue", "1.3", "--electricity-usd-per-kwh", "0.1", "--cooling", "air",
                  "--storage-system", tier["system"], "--storage-units", str(tier["units"]))
    # --storage-system prices and powers the units from the catalog, as the plan does.
    assert tco_cli["capex_breakdown_usd"]["storage"] == pytest.approx(tier["price_usd"], rel=1e-12)
    train = cli("train", "plan", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--gpus", "64",
                "--tokens", "1e11", "--fidelity", "analytical")
    serve = cli("serve", "plan", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--qps", "5",
                "--input-len", "256", "--output-len", "64", "--ttft-p99", "2",
                "--tpot-p99", "0.1", "--num-requests", "200")

    offers = {tco["cloud"]["offer"], tco_cli["cloud"]["offer"], train["price_offer"],
              serve["best"]["price_offer"]}
    assert offers == {"lambda-8x-h100-sxm"}  # the cheapest, in all four
    rates = [tco["cloud"]["on_demand_usd_per_gpu_hour"], tco_cli["pricing"]["usd_per_gpu_hour"],
             train["usd_per_gpu_hour"], serve["best"]["usd_per_gpu_hour"]]
    assert rates == pytest.approx([23.92 / 8] * 4, rel=1e-12)
    # every face says the price is an estimate (weak source)
    assert tco_cli["pricing"]["estimate"] and train["pricing"]["estimate"] \
        and serve["pricing"]["estimate"]
    # same cluster, same cloud cost and breakeven in plan and ops tco
    assert rec["capex_usd"] == pytest.approx(tco_cli["capex_usd"], rel=1e-9)
    assert rec["cloud_annual_cost_usd"] == pytest.approx(tco_cli["cloud_annual_cost_usd"],
                                                         rel=1e-9)
    assert rec["breakeven_months"] == pytest.approx(tco_cli["breakeven_months"], rel=1e-9)
    assert train["cost_usd"] == pytest.approx(train["gpu_hours"] * 23.92 / 8)
