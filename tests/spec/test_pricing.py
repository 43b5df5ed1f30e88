"""spec/pricing.py: the scenario's `prices:` and `cloud:` sections, shape only (ids are
resolved against the catalog by catalog/references.py)."""

from __future__ import annotations

import pytest

from clusterwright.errors import ScenarioError
from clusterwright.spec.scenario import loads_scenario

BASE = """name: s
workloads:
  - {kind: training, name: tr, model: "llama-3.1-8b", tokens: 1.0e11, gpus: 8}
"""


def test_defaults_are_no_prices_and_the_cheapest_on_demand_offer() -> None:
    sc, _ = loads_scenario(BASE)
    assert sc.prices.server_usd == {}
    assert (sc.cloud.provider, sc.cloud.offer, sc.cloud.term) == (None, None, "on_demand")


def test_prices_and_cloud_parse() -> None:
    sc, _ = loads_scenario(BASE + "prices: {server_usd: {dgx-h100: 350000}}\n"
                           "cloud: {provider: aws, term: committed}\n")
    assert sc.prices.server_usd == {"dgx-h100": 350000.0}
    assert sc.cloud.provider == "aws" and sc.cloud.term == "committed"


@pytest.mark.parametrize(("extra", "where"), [
    ("prices: {server_usd: {dgx-h100: -1}}\n", "prices.server_usd.dgx-h100"),
    ("prices: {server_usd: {dgx-h100: 1.0e12}}\n", "prices.server_usd.dgx-h100"),
    ("prices: {server_usd: {dgx-h100: true}}\n", "prices.server_usd.dgx-h100"),
    ("prices: {server: 3}\n", "prices.server"),
    ("cloud: {term: 2y}\n", "cloud.term"),
    ("cloud: {provider: aws, offer: aws-p5.48xlarge}\n", "cloud"),
    ("cloud: {provider: 3}\n", "cloud.provider"),
])
def test_bad_values_name_the_field_and_line(extra: str, where: str) -> None:
    with pytest.raises(ScenarioError) as err:
        loads_scenario(BASE + extra)
    msg = str(err.value)
    assert where in msg and "line 4" in msg, msg
