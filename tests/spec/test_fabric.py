"""The fabric request (clusterwright.spec.fabric): strict, finite, bounded numbers."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from clusterwright.spec.fabric import MAX_NODES, FabricRequest


def test_a_plain_request_is_valid() -> None:
    r = FabricRequest(server="dgx-h100", nodes=4)
    assert (r.nodes, r.oversubscription, r.tiers) == (4, 1.0, None)


@pytest.mark.parametrize(("kw", "field"), [
    ({"nodes": True}, "nodes"),
    ({"nodes": "4"}, "nodes"),
    ({"nodes": MAX_NODES + 1}, "nodes"),
    ({"rack_kw": float("inf")}, "rack_kw"),
    ({"rack_kw": 1e9}, "rack_kw"),
    ({"oversubscription": float("nan")}, "oversubscription"),
    ({"tiers": True}, "tiers"),
    ({"dual_plane": 1}, "dual_plane"),
    ({"tenants": True}, "tenants"),
    ({"storage_read_gbps_per_gpu": float("inf")}, "storage_read_gbps_per_gpu"),
    ({"rails": 10**9}, "rails"),
])
def test_bad_numbers_are_refused_naming_the_field(kw: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError) as exc:
        FabricRequest(server="dgx-h100", **{"nodes": 4, **kw})
    assert [e["loc"][0] for e in exc.value.errors()] == [field]


def test_the_node_cap_matches_the_scenario_gpu_cap() -> None:
    from clusterwright.spec.scenario import MAX_GPUS

    assert MAX_NODES >= MAX_GPUS  # a scenario's GPUs never need more servers than allowed
