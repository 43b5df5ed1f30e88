"""The scheduling twin behind ``ops schedule``: one call from a request to a report."""

from __future__ import annotations

import pytest

from clusterwright.catalog.registry import Catalog
from clusterwright.plan.schedule import (
    ScheduleRequest,
    catalog_node_failure_rate,
    schedule_cluster,
)


def _req(**kw: object) -> ScheduleRequest:
    base: dict[str, object] = dict(
        server="dgx-h100", nodes=16, oversubscription=1.0, policy="backfill",
        topology_aware=False, days=1.0, seed=3, trace=None, jobs=40,
        mix=(0.05, 0.35, 0.02, 0.58), failure_rate_per_node_hour=None, repair_h=4.0,
        restart_min=10.0)
    base.update(kw)
    return ScheduleRequest(**base)  # type: ignore[arg-type]


def test_the_catalog_failure_rate_is_used_when_none_is_given(catalog: Catalog) -> None:
    d = schedule_cluster(catalog, _req())
    assert d["source"] == "synthetic"
    assert d["failure_rate_per_node_hour"] == pytest.approx(
        catalog_node_failure_rate(catalog, "h100-sxm", 16, 8))
    # Llama 3 Table 5: 419 interruptions in 54 days on 16,384 GPUs (2,048 nodes): 1.6e-4 per
    # node-hour; this small cluster has fewer switches per node, so the same order.
    assert 1e-4 < d["failure_rate_per_node_hour"] < 1e-3


def test_a_given_rate_and_seed_reproduce_the_same_report(catalog: Catalog) -> None:
    a = schedule_cluster(catalog, _req(failure_rate_per_node_hour=0.0))
    b = schedule_cluster(catalog, _req(failure_rate_per_node_hour=0.0))
    a.pop("timings"), b.pop("timings")  # wall-clock speed of the simulator itself
    assert a == b and a["failure_rate_per_node_hour"] == 0.0
