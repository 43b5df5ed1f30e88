"""plan/pricing.py: the one pricing policy (cheapest matching offer, a provider, an offer, a
term), its pricing decision, hour-by-hour cloud inference and every offer over time."""

from __future__ import annotations

import math

import pytest

from clusterwright.catalog.registry import Catalog
from clusterwright.design.tco_plan import TcoRequest
from clusterwright.plan.pricing import annual_usd, cloud_price, price_tco, tco_dict
from clusterwright.plan.scenario import plan_scenario
from clusterwright.spec.pricing import CloudPolicy
from clusterwright.spec.scenario import loads_scenario


def test_default_is_the_cheapest_on_demand_offer_and_every_offer_is_kept(
        catalog: Catalog) -> None:
    c = cloud_price(catalog, "h100-sxm")
    assert c is not None
    # Lambda $23.92 / 8 = $2.99 beats GCP $24.00 / 8 = $3.00, CoreWeave, AWS and Azure.
    assert c.offer_id == "lambda-8x-h100-sxm"
    assert c.usd_per_gpu_hour == pytest.approx(23.92 / 8)
    rates = [p.usd_per_gpu_hour for p in c.considered]
    assert rates == sorted(rates)
    on_demand = {p.offer.id for p in c.considered if p.term == "on_demand"}
    assert on_demand == {o.id for o in catalog.all("clouds") if o.gpu == "h100-sxm"}
    # the committed rates the catalog has (AWS Capacity Block, Lambda reserved) are there too
    assert {p.offer.id for p in c.considered if p.term == "committed"} == {
        "aws-p5.48xlarge", "lambda-8x-h100-sxm"}
    assert "cheapest on demand" in c.why and "+0.3 %" in c.why  # GCP's $3.00 next
    assert c.chosen.estimate and "estimate" in c.why


def test_a_provider_a_term_and_an_offer(catalog: Catalog) -> None:
    aws = cloud_price(catalog, "h200-sxm", CloudPolicy(provider="AWS"))
    # two AWS H200 offers: p5e $43.26 / 8 = $5.41 (Capacity Block rate) < p5en $63.296 / 8
    assert aws is not None and aws.offer_id == "aws-p5e.48xlarge"
    assert "aws's offers" in aws.why
    committed = cloud_price(catalog, "h100-sxm", CloudPolicy(term="committed"))
    # Lambda reserved $14.80 / 8 = $1.85 < AWS Capacity Block $39.33 / 8 = $4.92
    assert committed is not None and committed.offer_id == "lambda-8x-h100-sxm"
    assert committed.usd_per_gpu_hour == pytest.approx(14.80 / 8)
    assert committed.committed and "paid every hour" in committed.why
    named = cloud_price(catalog, "h100-sxm", CloudPolicy(offer="azure-nd96isr-h100-v5"))
    assert named is not None and named.usd_per_gpu_hour == pytest.approx(98.32 / 8)
    assert "asked for by name" in named.why
    assert cloud_price(catalog, "h100-sxm", CloudPolicy(provider="aws", term="1y")) is None
    assert cloud_price(catalog, "mi300x", CloudPolicy(provider="aws")) is None


def test_cloud_tpus_and_mi300x_rent_as_estimates(catalog: Catalog) -> None:
    """Cloud TPU offers are one host each, priced at Google's per-chip-hour rates (a secondary
    quote, so an estimate); Ironwood has none yet; MI300X rents on Azure."""
    for gpu, on_demand, three_year in (("tpu-v5e", 1.20, 0.54), ("tpu-v5p", 4.20, 1.89),
                                       ("tpu-v6e", 2.70, 1.22)):
        c = cloud_price(catalog, gpu)
        assert c is not None and c.usd_per_gpu_hour == pytest.approx(on_demand)
        assert c.chosen.estimate and "estimate" in c.why
        committed = cloud_price(catalog, gpu, CloudPolicy(term="3y"))
        assert committed is not None and committed.usd_per_gpu_hour == pytest.approx(three_year)
    assert cloud_price(catalog, "tpu-v7") is None
    # MI300X rents on Azure at a rate quoted second-hand: an estimate too
    mi = cloud_price(catalog, "mi300x")
    assert mi is not None and mi.usd_per_gpu_hour == pytest.approx(6.0) and mi.chosen.estimate


def test_pricing_decision_names_every_other_offer_by_how_much(catalog: Catalog) -> None:
    c = cloud_price(catalog, "h100-sxm")
    assert c is not None
    d = c.decision(gpus=64, gpu_hours=None, utilization=0.8).as_dict()
    assert d["area"] == "pricing" and d["choice"].startswith("lambda-8x-h100-sxm on demand")
    assert "[estimate:" in d["choice"]
    alts = {a["option"]: a["outcome"] for a in d["alternatives"]}
    assert len(alts) == len(c.considered) - 1
    # AWS on demand: 64 GPUs x 8,760 h x 0.8 x ($6.88 - $2.99) a year more
    more = 64 * 8760 * 0.8 * (55.04 - 23.92) / 8
    assert f"${more:,.0f} a year more" in alts["aws-p5.48xlarge on demand"]
    # a committed rate is outside an on-demand scenario, and paid every hour of 8 instances:
    # $1,037,184 a year against $1,341,051 on demand at 80 %
    assert "outside the scenario's cloud" in alts["lambda-8x-h100-sxm committed"]
    committed_year = 8 * 14.80 * 8760
    mine = 64 * 8760 * 0.8 * 23.92 / 8
    assert f"${mine - committed_year:,.0f} a year less" in alts["lambda-8x-h100-sxm committed"]


def test_ops_tco_and_the_policy_agree_on_annual_cost(catalog: Catalog) -> None:
    tp, choice = price_tco(TcoRequest(server="dgx-h100", nodes=8), catalog)
    assert choice is not None and tp.cloud is not None
    assert tp.cloud.offer.id == choice.offer_id
    assert tp.cloud.on_demand_annual_usd == pytest.approx(
        annual_usd(choice.chosen, 64, None, tp.utilization))
    d = tco_dict(*price_tco(TcoRequest(server="dgx-h100", nodes=8), catalog,
                            CloudPolicy(term="committed")))
    # the committed term is the one reported: every hour of 8 instances at $14.80
    assert d["cloud_term"] == "committed"
    assert d["cloud_annual_cost_usd"] == pytest.approx(8 * 14.80 * 8760)
    assert d["breakeven_months"] == d["breakeven_months_committed"]


POOL = """
name: pool
workloads:
  - kind: inference
    name: chat
    model: "llama-3.1-8b"
    qps: 300
    input_len: 512
    output_len: 128
    slo: {ttft_p99_s: 2.0, tpot_p99_s: 0.1}
    diurnal: {peak_hour: 14, trough_fraction: 0.2}
constraints: {gpus: ["h100-sxm"], deployment: "compare"}
"""


def test_cloud_inference_is_rented_hour_by_hour_on_prem_buys_the_peak(
        catalog: Catalog) -> None:
    sc, _ = loads_scenario(POOL)
    bp = plan_scenario(sc, catalog, quick=True)
    w = bp.workloads[0]
    hourly = w["diurnal_gpus"]
    assert len(hourly) == 24 and min(hourly) < max(hourly) == w["gpus"]
    rate = 23.92 / 8  # the policy's offer, an 8-GPU instance
    # only the curve's GPUs, each hour in whole instances (a cloud bills the instance, not a
    # share of it); the GPUs that whole servers add on-prem are not rented
    want = sum(math.ceil(h / 8) * 8 for h in hourly) * 365 * rate
    assert bp.recommendation["cloud_annual_cost_usd"] == pytest.approx(want)
    assert bp.tco is not None and bp.tco["cloud_annual_cost_usd"] == pytest.approx(want)
    assert "hour by hour from the diurnal curve" in bp.recommendation["cost_basis"] or \
        "GPU-hours rented per year" in bp.tco["cloud_model"]
    # on-prem buys the peak: the servers hold every GPU of the busiest hour
    assert bp.recommendation["gpus"] >= max(hourly)
    decisions = [d for d in bp.decisions if d["area"] == "pricing"]
    assert len(decisions) == 1 and "lambda-8x-h100-sxm" in decisions[0]["choice"]


def test_a_serving_fleet_without_a_curve_is_rented_every_hour(catalog: Catalog) -> None:
    """Replicas serve around the clock: the year's every hour, in whole instances (it was
    priced at the training cluster's 80 % utilization)."""
    sc, _ = loads_scenario(POOL.replace("    diurnal: {peak_hour: 14, trough_fraction: 0.2}\n",
                                        ""))
    bp = plan_scenario(sc, catalog, quick=True)
    gpus = bp.workloads[0]["gpus"]
    want = math.ceil(gpus / 8) * 8 * 8760 * 23.92 / 8
    assert bp.recommendation["cloud_annual_cost_usd"] == pytest.approx(want)


def test_every_offer_is_drawn_over_time_and_the_choice_marked(catalog: Catalog) -> None:
    sc, _ = loads_scenario(POOL.replace('deployment: "compare"',
                                        'deployment: "on-prem"') + "cloud: {provider: aws}\n")
    bp = plan_scenario(sc, catalog, quick=True)
    assert bp.tco is not None
    series = bp.tco["cloud_offers_over_time"]
    months = len(bp.tco["cost_over_time"])
    h100 = [o for o in catalog.all("clouds") if o.gpu == "h100-sxm"]
    committed = sum(o.committed_usd_per_hour is not None for o in h100)
    assert len(series) == len(h100) + committed
    chosen = [s for s in series if s["chosen"]]
    # with provider aws the only AWS H100 offer is chosen, although Lambda is cheaper
    assert [(s["offer"], s["term"]) for s in chosen] == [("aws-p5.48xlarge", "on_demand")]
    for s in series:
        assert len(s["cumulative_usd"]) == months and s["cumulative_usd"][0] == 0.0
        assert s["cumulative_usd"][12] == pytest.approx(s["annual_usd"])
    assert bp.tco["pricing"]["provider"] == "aws"
    estimated = {e["input"] for e in bp.tco["estimates"]}
    assert "cloud:aws-p5.48xlarge" in estimated and "server:dgx-h100" in estimated
