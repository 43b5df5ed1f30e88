"""The fleet failure model a plan builds: the GPU generation's fleet, the layout's domains,
the spares it recommends."""

from __future__ import annotations

import pytest

from clusterwright.catalog.registry import Catalog
from clusterwright.design.bom import plan_fabric
from clusterwright.model import reliability as rel
from clusterwright.plan.reliability import (
    RunInputs,
    failure_model,
    fleet_assumptions,
    forecast_run,
    interruptions,
    layout_estimate,
    layout_of,
)
from clusterwright.spec.fabric import FabricRequest


def test_each_gpu_generation_uses_its_fleet(catalog: Catalog) -> None:
    modes = catalog.all("failure_modes")
    a100 = rel.modes_for_gpu(modes, "a100-80gb-sxm")
    h100 = rel.modes_for_gpu(modes, "h100-sxm")
    b200 = rel.modes_for_gpu(modes, "b200")
    assert rel.fleets(a100) == ["Alibaba Cloud AI training service, A100 (Aegis, NSDI 2025)"]
    assert rel.fleets(h100) == rel.fleets(b200) == [
        "Meta Llama 3 405B pre-training, 16,384 H100 (2024)"]
    # Aegis: A100 MTTF ~400 days per GPU -> 8 GPUs fail once in 50 days.
    units = rel.fleet_units(8, 8)
    assert rel.job_mtbf_hours(a100, units) == pytest.approx(400 * 24 / 8, rel=1e-3)


def test_layout_estimate_follows_racks_and_scalable_units(catalog: Catalog) -> None:
    lay = layout_estimate(catalog, catalog.server("dgx-h100"), 1024)
    # 42.9 kW air racks hold four 10.2 kW DGX H100; SUs of 32 hosts at radix 64; 8 rails.
    assert (lay.nodes_per_rack, lay.nodes_per_leaf, lay.nodes_per_row) == (4, 32, 32)
    assert lay.leaves == 4 * 8
    nvl = layout_estimate(catalog, catalog.server("gb200-nvl72"), 1152)
    assert nvl.nodes_per_rack == 18  # one rack-scale system: 18 compute trays


def test_layout_of_a_designed_fabric(catalog: Catalog) -> None:
    fab = plan_fabric(FabricRequest(server="dgx-h100", nodes=128), catalog)
    lay = layout_of(fab)
    assert lay.nodes_per_rack == 3  # 40 kW racks (the request's default) hold three 10.2 kW
    assert lay.nodes_per_leaf == fab.shape.su_hosts
    assert lay.leaves == fab.shape.leaf_switches


def test_the_model_recommends_spares_and_they_remove_most_of_the_wait(
        catalog: Catalog) -> None:
    modes = rel.modes_for_gpu(catalog.all("failure_modes"), "h100-sxm")
    units = rel.fleet_units(1024, 8)
    fm = failure_model(catalog, modes, units,
                       layout_estimate(catalog, catalog.server("dgx-h100"), 1024))
    kinds = {x.kind for x in fm.losses}
    assert {"node", "rack", "power-domain", "leaf-switch"} <= kinds
    assert fm.fail_slow_stretch > 1.0 and fm.lemon_share > 0.5
    need = fm.spares_for(0.99)
    assert 1 <= need <= 8
    inter = interruptions(modes, units, 24.0)
    base = RunInputs(work_s=20 * rel.DAY, checkpoint_write_s=20.0, restart_s=600.0,
                     repair_hours=72.0, trials=200, seed=1, model=fm)
    none = forecast_run(inter, RunInputs(**{**base.__dict__, "hot_spares": 0}))
    some = forecast_run(inter, RunInputs(**{**base.__dict__, "hot_spares": need}))
    wait_none = none.summary["spare_wait_hours"]["mean"]
    wait_some = some.summary["spare_wait_hours"]["mean"]
    assert wait_none > 100 and wait_some < 0.1 * wait_none
    assert set(fm.as_dict()) >= {"fleets", "node_losses", "lemons", "fail_slow", "layout"}
    names = [a["name"] for a in fleet_assumptions(catalog)]
    assert "lemon_rate_multiplier" in names and all(len(a["source"]) > 20
                                                    for a in fleet_assumptions(catalog))
