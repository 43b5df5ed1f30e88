"""catalog/references.py: a scenario's priced servers and cloud provider, offer and term are
checked against the catalog, the error naming the field path and its YAML line."""

from __future__ import annotations

import pytest

from clusterwright.catalog.references import matching_offers, provider_key, resolve
from clusterwright.catalog.registry import Catalog
from clusterwright.errors import ScenarioError
from clusterwright.spec.pricing import CloudPolicy
from clusterwright.spec.scenario import loads_scenario

BASE = """name: s
workloads:
  - {kind: training, name: tr, model: "llama-3.1-8b", tokens: 1.0e11, gpus: 8}
constraints: {gpus: ["h100-sxm", "mi300x"]}
"""


def check(cat: Catalog, extra: str) -> None:
    sc, doc = loads_scenario(BASE + extra, "s.yaml")
    resolve(sc, cat, doc)


def test_known_ids_pass(catalog: Catalog) -> None:
    check(catalog, "prices:\n  server_usd: {dgx-h200: 400000}\ncloud: {provider: Google Cloud}\n")
    check(catalog, "cloud: {offer: lambda-8x-h100-sxm, term: committed}\n")


@pytest.mark.parametrize(("extra", "where", "line", "says"), [
    ("prices:\n  server_usd:\n    dgx-h900: 1\n", "prices.server_usd.dgx-h900", 7,
     "unknown server id"),
    ("cloud:\n  provider: oracle\n", "cloud.provider", 6, "providers: aws, coreweave"),
    ("cloud:\n  offer: aws-p9\n", "cloud.offer", 6, "unknown cloud"),
    # no offer for H100 or MI300X carries a cited 1-year price
    ("cloud:\n  term: 1y\n", "cloud.term", 6, "term: committed"),
])
def test_unknown_ids_and_terms_name_field_and_line(catalog: Catalog, extra: str, where: str,
                                                   line: int, says: str) -> None:
    with pytest.raises(ScenarioError) as err:
        check(catalog, extra)
    msg = str(err.value)
    assert f"s.yaml: {where} (line {line})" in msg and says in msg, msg


def test_provider_renting_none_of_the_candidate_gpus(catalog: Catalog) -> None:
    sc, doc = loads_scenario(BASE.replace('["h100-sxm", "mi300x"]', '["mi300x"]')
                             + "cloud:\n  provider: lambda\n", "s.yaml")
    with pytest.raises(ScenarioError) as err:
        resolve(sc, catalog, doc)
    assert "cloud.provider (line 6)" in str(err.value) and "mi300x" in str(err.value)


def test_matching_offers_follow_the_policy(catalog: Catalog) -> None:
    assert provider_key("Google Cloud") == "google-cloud" == provider_key("google  CLOUD")
    assert [o.id for o in matching_offers(catalog, "h100-sxm", CloudPolicy(provider="aws"))] \
        == ["aws-p5.48xlarge"]
    committed = matching_offers(catalog, "h100-sxm", CloudPolicy(term="committed"))
    assert {o.id for o in committed} == {"aws-p5.48xlarge", "lambda-8x-h100-sxm"}
    assert matching_offers(catalog, "h100-sxm", CloudPolicy(term="3y")) == []
