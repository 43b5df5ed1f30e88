"""One training job across sites (plan/multisite): the split by power, the methods, errors."""

from __future__ import annotations

import pytest

from clusterwright.catalog.registry import load_catalog
from clusterwright.errors import InfeasibleError, InputError
from clusterwright.plan.multisite import MultisiteRequest, Site, plan_multisite


@pytest.fixture(scope="module")
def cat():  # type: ignore[no-untyped-def]
    return load_catalog(env={})


def _req(cat, sites, **kw):  # type: ignore[no-untyped-def]
    return MultisiteRequest(cat.model("llama-3.1-8b"), "h100-sxm", sites, **kw)


def test_power_sets_the_gpus_per_site_and_diloco_beats_sync(cat) -> None:  # type: ignore[no-untyped-def]
    sites = (Site("a", 1.0, 10.0, 20.0), Site("b", 2.0, 10.0, 20.0))
    d = plan_multisite(cat, _req(cat, sites, tokens=1e11)).as_dict()
    # 1 MW at 10.2 kW per 8 GPUs x PUE 1.3: 603 GPUs fit; the ladder's largest below is 512
    assert d["gpus_per_site"] == 512 and d["site_capacity_gpus"][0] == 600
    m = d["methods"]
    assert m["diloco"]["utilization"] > m["sync"]["utilization"]
    need = m["diloco"]["wan_gbps_needed"]
    assert need["90"] < need["95"] < need["99"]
    assert m["diloco"]["time_to_train_days"] < m["sync"]["time_to_train_days"]


def test_a_site_too_small_for_its_share_names_its_power(cat) -> None:  # type: ignore[no-untyped-def]
    sites = (Site("a", 10.0, 10.0), Site("b", 0.05, 10.0))
    with pytest.raises(InfeasibleError) as err:
        plan_multisite(cat, _req(cat, sites, gpus=128))
    assert err.value.field == "sites[1].power_mw"


@pytest.mark.parametrize("sites, field", [
    ((Site("a", 1.0, 10.0), Site("b", None, 10.0)), "sites[1].power_mw"),
    ((Site("a", 1.0, 10.0), Site("b", 1.0, None)), "sites[1].wan_gbps"),
])
def test_a_site_without_power_or_wan_link_is_an_input_error(cat, sites, field) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InputError) as err:
        plan_multisite(cat, _req(cat, sites))
    assert err.value.field == field


@pytest.mark.parametrize("kw, field", [
    ({"method": "streaming", "inner_steps": 100, "fragments": 4, "overlap_steps": 30.0},
     "overlap_steps"),
    ({"method": "diloco", "fragments": 4}, "fragments"),
    ({"method": "sync", "overlap_steps": 2.0}, "overlap_steps"),
])
def test_streaming_settings_hold_together_or_name_the_field(cat, kw, field) -> None:  # type: ignore[no-untyped-def]
    """A fragment's exchange cannot overlap more inner steps than pass between two fragments'
    exchanges, and fragments and overlap belong to Streaming DiLoCo alone: given with another
    method they would be dropped silently."""
    sites = (Site("a", 2.0, 10.0), Site("b", 2.0, 10.0))
    with pytest.raises(InputError) as err:
        plan_multisite(cat, _req(cat, sites, **kw))
    assert err.value.field == field
