"""design/blueprint.py: the choice among candidates, binding constraints, risks, the record."""

from __future__ import annotations

import json

import pytest

from clusterwright.design.blueprint import (
    SCHEMA_VERSION,
    Blueprint,
    Candidate,
    DesignFacts,
    InferenceFacts,
    assess_risks,
    budget_violation,
    choose,
    violation,
)
from clusterwright.errors import InputError


def cand(gpu: str, cost: float | None, *violations: object) -> Candidate:
    return Candidate(gpu, f"srv-{gpu}", 4, 32, cost, list(violations))  # type: ignore[arg-type]


def test_violation_states_limit_need_and_excess() -> None:
    # budget $30M, needed $41M: 41/30 - 1 = 0.3667 -> "+37 %".
    v = violation("budget_usd", 30e6, 41e6, "usd", "capex on h100-sxm")
    assert v.excess_fraction == pytest.approx(11 / 30)
    assert v.message == "budget_usd $30.0M, capex on h100-sxm $41.0M: +37 %"
    d = v.as_dict()
    assert d["constraint"] == "budget_usd" and d["limit"] == 30e6 and d["needed"] == 41e6


def test_violation_without_numbers_is_the_text_alone() -> None:
    v = violation("gpus", None, None, "", "no catalog server carries l40s", "chat")
    assert v.message == "chat: no catalog server carries l40s"
    assert v.excess_fraction is None


def test_budget_violation_only_above_the_budget() -> None:
    assert budget_violation(29e6, 30e6, "capex") is None
    assert budget_violation(31e6, None, "capex") is None
    v = budget_violation(31e6, 30e6, "capex")
    assert v is not None and v.excess_fraction == pytest.approx(1 / 30)


def test_choose_takes_the_cheapest_feasible_and_explains_the_rest() -> None:
    slow = violation("deadline_days", 90, 120, "days", "fastest on a100")
    c = choose([cand("a100", 5e6, slow), cand("h100", 12e6), cand("h200", 10e6)])
    assert c.feasible and c.chosen.gpu == "h200" and c.binding == []
    why = {a["gpu"]: a["why_not"] for a in c.alternatives}
    # h100 costs 12/10 - 1 = +20 % more than h200.
    assert why["h100"] == "cost +20 % ($12.0M vs $10.0M)"
    # The cheaper a100 loses on its deadline, not on cost.
    assert why["a100"] == "deadline_days 90 days, fastest on a100 120 days: +33 %"
    assert {a["gpu"]: a["feasible"] for a in c.alternatives} == {"a100": False, "h100": True}


def test_choose_with_nothing_feasible_returns_the_nearest_miss_as_binding() -> None:
    over = violation("budget_usd", 30e6, 41e6, "usd", "capex on h100")
    far = violation("budget_usd", 30e6, 60e6, "usd", "capex on b200")
    two = [violation("budget_usd", 30e6, 31e6, "usd", "capex on a100"),
           violation("slo", 0.05, 0.08, "s", "best p99 TPOT on a100")]
    c = choose([cand("a100", 31e6, *two), cand("b200", 60e6, far), cand("h100", 41e6, over)])
    # Fewest broken constraints first (one), then the smallest excess: h100 +37 % < b200 +100 %.
    assert not c.feasible and c.chosen.gpu == "h100"
    assert [v.constraint for v in c.binding] == ["budget_usd"]
    assert c.binding[0].excess_fraction == pytest.approx(11 / 30)


def test_choose_ranks_unsized_candidates_last_and_refuses_none() -> None:
    unsized = cand("l40s", None, violation("gpus", None, None, "", "no server"))
    sized = cand("h100", 9e6, violation("power_per_rack_kw", 10, 10.2, "kW", "one dgx draws"))
    assert choose([unsized, sized]).chosen.gpu == "h100"
    with pytest.raises(InputError, match=r"constraints\.gpus"):
        choose([])


def facts(**kw: object) -> DesignFacts:
    return DesignFacts(gpus=1024, **kw)  # type: ignore[arg-type]


def titles(f: DesignFacts) -> dict[str, str]:
    return {r.title: r.severity for r in assess_risks(f)}


def test_risks_flag_failure_rate_by_scale() -> None:
    assert titles(facts(interruptions_per_day=8.0, job_mtbf_hours=3.0)) == {
        "8.00 job interruptions per day": "high"}
    assert titles(facts(interruptions_per_day=0.5)) == {"0.50 job interruptions per day": "medium"}
    assert titles(facts(interruptions_per_day=0.05)) == {"0.05 job interruptions per day": "low"}


def test_risks_flag_power_density_and_cooling() -> None:
    # 39.7 kW of a 40 kW limit is 99 % (> 90 %): no headroom.
    assert titles(facts(densest_rack_kw=39.7, rack_limit_kw=40)) == {
        "racks at the power limit": "medium"}
    assert titles(facts(densest_rack_kw=30, rack_limit_kw=40)) == {}
    hot = titles(facts(densest_rack_kw=57, rack_limit_kw=60, cooling="air", cooling_cap_kw=42.9))
    assert hot == {"57 kW air-cooled racks": "high",
                   "rack limit above what the cooling carries": "medium"}


def test_risks_flag_oversubscription_and_single_points_of_failure() -> None:
    t = titles(facts(leaf_oversubscription=2.0, spine_oversubscription=1.0, tiers=2,
                     spine_switches=1, storage_ports=1, frontend_spines=1,
                     inference=(InferenceFacts("chat", 1, 10.0, 10.5),)))
    assert t == {
        "2:1 oversubscribed leaf tier": "medium",
        "one spine switch": "high",
        "single storage path": "medium",
        "one frontend spine": "medium",
        "chat: one replica": "high",
        # 10.5 / 10 - 1 = 5 % headroom < 10 %.
        "chat: 5 % SLO headroom at peak": "medium",
    }
    assert titles(facts(leaf_oversubscription=1.0, tiers=2, spine_switches=8,
                        storage_ports=16, inference=(InferenceFacts("chat", 4, 10.0, 20.0),))
                  ) == {}


def test_storage_ports_no_part_joins_are_a_network_risk() -> None:
    r = [x for x in assess_risks(facts(storage_ports=4, storage_links_unresolved=4,
                                       storage_system="minio-nvme-node",
                                       frontend_switch="sn5600"))
         if x.title == "storage cabling unresolved"]
    assert len(r) == 1 and (r[0].severity, r[0].area) == ("medium", "network")
    assert "4 port(s) of the minio-nvme-node units" in r[0].detail and "sn5600" in r[0].detail
    assert "storage cabling unresolved" not in titles(facts(storage_ports=4))


def test_risks_flag_budget_deadline_and_cloud() -> None:
    t = titles(facts(total_cost_usd=28e6, budget_usd=30e6, deadline_days=90,
                     time_to_train_p90_days=95, on_prem_total_cost_usd=10e6,
                     cloud_total_cost_usd=8e6))
    assert t == {"93 % of the budget": "medium", "deadline at risk with failures": "high",
                 "renting is cheaper over the horizon": "medium"}


def test_risks_are_sorted_by_severity() -> None:
    rs = assess_risks(facts(estimated_prices=3, interruptions_per_day=2.0, swing_mw=5.0))
    assert [r.severity for r in rs] == ["high", "medium", "low"]


def bp() -> Blueprint:
    return Blueprint(
        scenario={"name": "t"}, feasible=True, binding_constraints=[],
        recommendation={"gpu": "h100-sxm", "server": "dgx-h100", "nodes": 2, "gpus": 16,
                        "total_cost_usd": 1e6, "deployment": "on-prem"},
        alternatives=[],
        workloads=[{"kind": "training", "time_to_train_days": 3.0},
                   {"kind": "inference", "ttft_p99_s": 0.2, "tpot_p99_s": 0.03},
                   {"kind": "inference", "ttft_p99_s": 0.5, "tpot_p99_s": 0.02}],
        cluster=None, fabric={"leaf_switches": 8, "spine_switches": 4, "core_switches": 0},
        racks=[], power={"it_power_kw": {"typical": 30.0}, "facility_power_kw": {"typical": 39.0}},
        reliability={"ettr": 0.97}, tco=None, risks=[],
    )


def test_round_trip_through_json() -> None:
    b = bp()
    d = json.loads(json.dumps(b.to_dict()))
    assert d["schema_version"] == SCHEMA_VERSION == "1.3"
    assert list(d) == list(Blueprint.KEYS)
    assert Blueprint.from_dict(d).to_dict() == b.to_dict()


def test_from_dict_refuses_another_major_version_and_missing_keys() -> None:
    d = bp().to_dict()
    assert Blueprint.from_dict({**d, "schema_version": "1.7"}).schema_version == "1.7"
    with pytest.raises(InputError, match=r"schema_version: blueprint has version 2\.0"):
        Blueprint.from_dict({**d, "schema_version": "2.0"})
    with pytest.raises(InputError, match="schema_version"):
        Blueprint.from_dict({k: v for k, v in d.items() if k != "schema_version"})
    with pytest.raises(InputError, match=r"missing key.*fabric"):
        Blueprint.from_dict({k: v for k, v in d.items() if k != "fabric"})


def test_metrics_is_a_flat_row_with_the_worst_inference_latency() -> None:
    m = bp().metrics()
    assert m["gpu"] == "h100-sxm" and m["gpus"] == 16 and m["feasible"] is True
    assert m["time_to_train_days"] == 3.0
    assert (m["ttft_p99_s"], m["tpot_p99_s"]) == (0.5, 0.03)  # worst of each
    assert (m["it_power_kw"], m["facility_power_kw"], m["ettr"]) == (30.0, 39.0, 0.97)
    assert (m["leaf_switches"], m["spine_switches"], m["core_switches"]) == (8, 4, 0)
    assert all(not isinstance(v, dict | list) for v in m.values())
