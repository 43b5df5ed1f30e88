"""The requests behind ``ops reliability`` and ``ops checkpoint`` (plan/ops_reliability.py),
called without the CLI: one call each, errors naming the request's fields."""

from __future__ import annotations

import pytest

from clusterwright.catalog.registry import Catalog, load_catalog
from clusterwright.errors import InputError
from clusterwright.model import reliability as rel
from clusterwright.plan.ops_reliability import (
    CheckpointRequest,
    ReliabilityRequest,
    checkpoint_report,
    fleet_for,
    reliability_report,
)


@pytest.fixture(scope="module")
def cat() -> Catalog:
    return load_catalog()


def test_fleet_defaults_to_the_dgx_h100_and_names_bad_ids(cat: Catalog) -> None:
    f = fleet_for(cat, 1024)
    assert (f.gpu, f.server, f.gpus_per_host, f.units.hosts) == ("h100-sxm", "dgx-h100", 8, 128)
    with pytest.raises(InputError) as e:
        fleet_for(cat, 64, server="no-such-server")
    assert e.value.field == "server"
    with pytest.raises(InputError, match="does not match") as e:
        fleet_for(cat, 64, gpu="a100-80gb", server="dgx-h100")
    assert e.value.field == "gpu"


def test_interruptions_scale_with_the_fleet_and_the_window(cat: Catalog) -> None:
    small = reliability_report(cat, ReliabilityRequest(gpus=1024, days=10))
    big = reliability_report(cat, ReliabilityRequest(gpus=16384, days=10))
    longer = reliability_report(cat, ReliabilityRequest(gpus=1024, days=20))
    assert big["expected_interruptions"] > 10 * small["expected_interruptions"]
    assert longer["expected_interruptions"] == pytest.approx(
        2 * small["expected_interruptions"])
    assert "monte_carlo" not in small
    assert sum(small["by_cause"].values()) == pytest.approx(small["expected_interruptions"])


def test_the_monte_carlo_sizes_the_checkpoint_from_a_model(cat: Catalog) -> None:
    req = ReliabilityRequest(gpus=1024, days=10, monte_carlo=True,
                             model=cat.model("llama-3.1-70b"), trials=50, seed=1)
    out = reliability_report(cat, req)["monte_carlo"]
    assert out["checkpoint_bytes"] > 70e9 * 12  # weights, master copy and Adam moments
    assert 0 < out["ettr"]["p50"] <= 1 and out["train_days"] == 10
    with pytest.raises(InputError) as e:
        reliability_report(cat, ReliabilityRequest(gpus=1024, days=10, monte_carlo=True))
    assert e.value.field == "checkpoint_write_s" and "`model`" in str(e.value)


def test_checkpoint_interval_is_daly_of_the_catalog_mtbf(cat: Catalog) -> None:
    out = checkpoint_report(cat, CheckpointRequest(checkpoint_write_s=60.0, gpus=16384))
    mtbf_s = out["mtbf_hours"] * rel.HOUR
    plan = rel.checkpoint_plan(60.0, mtbf_s, out["restart_s"], 0.0)
    assert out["daly_interval_s"] == pytest.approx(plan.daly_interval_s)
    assert out["young_interval_s"] == pytest.approx((2 * 60.0 * mtbf_s) ** 0.5)


@pytest.mark.parametrize(("req", "field"), [
    (CheckpointRequest(mtbf_hours=10.0), "checkpoint_write_s"),
    (CheckpointRequest(checkpoint_write_s=60.0), "mtbf_hours"),
    (CheckpointRequest(checkpoint_write_s=60.0, mtbf_hours=10.0, hot_spares=2), "hot_spares"),
    (CheckpointRequest(checkpoint_write_s=60.0, gpus=8, writers=16), "writers"),
    (CheckpointRequest(checkpoint_write_s=60.0, mtbf_hours=10.0, server="dgx-h100"), "server"),
])
def test_what_a_checkpoint_request_lacks_names_its_field(cat: Catalog, req: CheckpointRequest,
                                                          field: str) -> None:
    with pytest.raises(InputError) as e:
        checkpoint_report(cat, req)
    assert e.value.field == field
