"""plan/cluster.py: a fixed size the workloads are fitted into, spares that are racked and
priced, serving headroom, whether the spares cover the failures expected, and the memory
minimum of a fixed size refused with both field paths and lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterwright.catalog.registry import Catalog
from clusterwright.design.blueprint import Blueprint
from clusterwright.errors import InputError
from clusterwright.model import reliability as rel
from clusterwright.plan.cluster import add_headroom, node_repair_rate, spares_for
from clusterwright.plan.context import PlanRun, no_progress
from clusterwright.plan.run import at_line
from clusterwright.plan.scenario import plan_scenario
from clusterwright.spec.scenario import loads_scenario

TRAIN = """\
name: "t"
workloads:
  - kind: "training"
    name: "tr"
    model: "llama-3.1-8b"
    tokens: 1.0e11
    gpus: 64
constraints:
  gpus: ["h100-sxm"]
  servers: ["dgx-h100"]
cluster:
{cluster}
"""


def planned(cat: Catalog, text: str) -> Blueprint:
    sc, _ = loads_scenario(text)
    return plan_scenario(sc, cat, quick=True)


def train(cat: Catalog, cluster: str) -> Blueprint:
    return planned(cat, TRAIN.format(cluster=cluster))


def test_spares_are_added_racked_and_priced(catalog: Catalog) -> None:
    bare = train(catalog, "  spares: 0")
    spared = train(catalog, "  spares: 2")
    assert bare.cluster is not None and spared.cluster is not None
    assert bare.cluster["nodes"] == 8 and spared.cluster["nodes"] == 10
    assert spared.cluster["spare_nodes"] == 2 and spared.cluster["work_nodes"] == 8
    # Two more servers in the fabric, the racks and the price.
    assert spared.fabric is not None and bare.fabric is not None
    assert spared.fabric["links_by_tier"]["node-leaf"] == 80
    assert bare.fabric["links_by_tier"]["node-leaf"] == 64
    assert spared.tco is not None and bare.tco is not None
    per_server = bare.tco["capex_breakdown_usd"]["servers"] / 8
    assert spared.tco["capex_breakdown_usd"]["servers"] == pytest.approx(10 * per_server)
    assert spared.cluster["spare_servers_usd"] == pytest.approx(2 * per_server)
    assert sum(r["kw_nameplate"] for r in spared.racks) > sum(
        r["kw_nameplate"] for r in bare.racks)
    # The spares are reported, with their coverage, as a note and a decision.
    note = next(n for n in spared.notes if n.startswith("cluster.spares"))
    assert "2 spares" in note and "repair" in note
    dec = next(d for d in spared.decisions if d["area"] == "spares")
    assert dec["choice"].startswith("2 spares") and "cluster.spares" in dec["why"]
    assert {a["option"] for a in dec["alternatives"]} >= {"1 spare", "3 spares"}


def test_fixed_size_reports_what_is_left_over(catalog: Catalog) -> None:
    bp = train(catalog, "  gpus: 96\n  spares: 1")
    c = bp.cluster
    assert c is not None and bp.feasible
    assert (c["nodes"], c["gpus"], c["work_gpus"], c["spare_nodes"]) == (12, 96, 64, 1)
    assert (c["idle_nodes"], c["idle_gpus"]) == (3, 24)
    assert any("24 of 96 GPUs" in n for n in bp.notes), bp.notes
    dec = next(d for d in bp.decisions if d["area"] == "cluster_size" and d["subject"] is None)
    assert "cluster.gpus" in dec["why"] and "24 GPUs" in dec["why"]


def test_workloads_that_do_not_fit_a_fixed_size_bind_with_the_excess(catalog: Catalog) -> None:
    # 64 GPUs of work and 2 eight-GPU spares need 80 of the 72 GPUs.
    bp = train(catalog, "  gpus: 72\n  spares: 2")
    assert not bp.feasible
    b = bp.binding_constraints[0]
    assert b["constraint"] == "gpus" and (b["limit"], b["needed"]) == (72, 80)
    assert "cluster.gpus" in b["message"] and "+11 %" in b["message"], b["message"]


def test_headroom_adds_at_least_one_replica_at_every_hour() -> None:
    row = {"replicas": 12, "gpus": 24, "diurnal_gpus": [4, 24, 10]}
    sc, _ = loads_scenario(TRAIN.format(cluster="  headroom: 0.01"))
    run = PlanRun(sc, None, {}, True, no_progress)  # type: ignore[arg-type]
    add_headroom(run, row)
    assert (row["replicas"], row["gpus"], row["headroom_replicas"]) == (13, 26, 1)
    assert row["replicas_for_slo"] == 12
    assert row["diurnal_gpus"] == [6, 26, 12]
    sc, _ = loads_scenario(TRAIN.format(cluster="  headroom: 0.25"))
    row = {"replicas": 10, "gpus": 10, "diurnal_gpus": None}
    add_headroom(PlanRun(sc, None, {}, True, no_progress), row)  # type: ignore[arg-type]
    assert (row["replicas"], row["gpus"]) == (13, 13)  # ceil(10 x 0.25) = 3


def test_spares_for_reaches_the_coverage_and_one_fewer_does_not() -> None:
    lam, repair_h = 0.05, 72.0  # 3.6 servers out on average
    k = spares_for(lam, repair_h, 0.99)
    assert rel.spare_coverage_probability(lam, repair_h, k) >= 0.99
    assert rel.spare_coverage_probability(lam, repair_h, k - 1) < 0.99
    assert spares_for(0.0, repair_h, 0.99) == 0


def test_node_repair_rate_grows_with_the_fleet(catalog: Catalog) -> None:
    sc, _ = loads_scenario(TRAIN.format(cluster="  spares: 1"))
    run = PlanRun(sc, catalog, {}, True, no_progress)
    small, h = node_repair_rate(run, "h100-sxm", 64, 8)
    big, _ = node_repair_rate(run, "h100-sxm", 640, 80)
    assert h == catalog.assumption("reliability_node_repair_hours")
    assert small > 0 and big == pytest.approx(10 * small)


def test_too_few_spares_for_a_large_fleet_is_a_risk(catalog: Catalog) -> None:
    text = TRAIN.replace("gpus: 64\n", "gpus: 8192\n").format(cluster="  spares: 1")
    bp = planned(catalog, text)
    risk = next(r for r in bp.risks if r["title"] == "Spares run out")
    assert risk["area"] == "reliability" and "would cover 99 %" in risk["detail"]


MEMORY = """\
name: "m"
workloads:
  - kind: "training"
    name: "big"
    model: "llama-3.1-405b"
    tokens: 1.0e11
    deadline_days: 30
constraints:
  gpus: ["h100-sxm"]
cluster:
  gpus: 16
  spares: 1
"""


def test_size_below_the_memory_minimum_names_both_fields_and_lines(catalog: Catalog) -> None:
    sc, doc = loads_scenario(MEMORY, "m.yaml")
    with pytest.raises(InputError) as e:
        plan_scenario(sc, catalog, quick=True)
    assert e.value.field == "cluster.gpus"
    err = str(at_line(e.value, doc))
    assert err.startswith("m.yaml: cluster.gpus (line 11): "), err
    assert "workloads[0].model (line 5)" in err and "llama-3.1-405b" in err
    assert "8 beside the spares" in err


def test_plan_cli_exits_2_for_a_size_below_the_memory_minimum(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from clusterwright.cli.main import app
    from tests.cli.helpers import user_error

    p = tmp_path / "m.yaml"
    p.write_text(MEMORY)
    r = CliRunner().invoke(app, ["plan", str(p), "--out", str(tmp_path / "o")],
                           env={"CLUSTERWRIGHT_CATALOG": None})
    err = user_error(r)
    assert "cluster.gpus (line 11)" in err and "workloads[0].model (line 5)" in err, err


SERVE = """\
name: "s"
workloads:
  - kind: "inference"
    name: "chat"
    model: "llama-3.1-8b"
    qps: 60
    input_len: 800
    output_len: 200
    slo: {ttft_p99_s: 1.0, tpot_p99_s: 0.04}
constraints:
  gpus: ["h100-sxm"]
  servers: ["dgx-h100"]
cluster:
  headroom: HEADROOM
"""


def test_headroom_adds_replicas_to_a_planned_pool(catalog: Catalog) -> None:
    base = planned(catalog, SERVE.replace("HEADROOM", "0"))
    more = planned(catalog, SERVE.replace("HEADROOM", "0.5"))
    (b,), (m,) = base.workloads, more.workloads
    assert "headroom_replicas" not in b
    assert m["replicas_for_slo"] == b["replicas"]
    assert m["replicas"] == b["replicas"] + -(-b["replicas"] // 2)  # + ceil(n / 2)
    assert m["gpus"] == m["replicas"] * m["tp"]
    assert more.cluster is not None and more.cluster["work_gpus"] == m["gpus"]


DEADLINE = """\
name: "d"
workloads:
  - kind: "training"
    name: "pretrain"
    model: "llama-3.1-70b"
    tokens: 4.0e12
    seq_len: 8192
    global_batch_tokens: 16777216
    gpus: 1024
    deadline_days: {days}
constraints:
  gpus: ["h100-sxm"]
  servers: ["dgx-h100"]
  deployment: "on-prem"
{cluster}"""


def test_a_deadline_that_waiting_for_repairs_would_miss_buys_the_recommended_spares(
        catalog: Catalog) -> None:
    """The time to train replaces a failed node at once. Without spares the job waits 72 h
    per repaired node (about 65 days here against 45): with cluster.spares unset the planner
    buys the spares the reliability view recommends, and its Monte Carlo meets the deadline."""
    bp = planned(catalog, DEADLINE.format(days=45, cluster=""))
    cl, r = bp.cluster, bp.reliability
    assert cl is not None and r is not None
    assert cl["spares_basis"] == "planner" and cl["spares_for"] == "pretrain"
    assert cl["spare_nodes"] >= 1 and cl["spare_nodes"] == r["recommended_spares"]
    assert bp.recommendation["nodes"] == 128 + cl["spare_nodes"]
    assert r["hot_spares"] == cl["spare_nodes"]
    assert r["monte_carlo"]["time_to_train_days"]["p90"] <= 45
    assert not [x for x in bp.risks if x["title"] == "deadline at risk with failures"]
    (d,) = [x for x in bp.decisions if x["area"] == "spares"]
    assert "chosen by the planner" in d["why"] and "deadline" in d["why"]


def test_spares_zero_buys_none_and_the_deadline_risk_says_so(catalog: Catalog) -> None:
    bp = planned(catalog, DEADLINE.format(days=45, cluster="cluster:\n  spares: 0\n"))
    assert bp.cluster is not None and bp.cluster["spare_nodes"] == 0
    assert bp.recommendation["nodes"] == 128
    assert bp.reliability is not None and bp.reliability["monte_carlo"][
        "time_to_train_days"]["p50"] > 45
    assert [x for x in bp.risks if x["title"] == "deadline at risk with failures"]


@pytest.mark.parametrize("days", [None, 400])
def test_no_spares_without_a_deadline_or_when_waiting_still_meets_it(
        catalog: Catalog, days: int | None) -> None:
    """No deadline to keep, or one the job meets even waiting for every repair: nothing is
    bought the scenario did not ask for."""
    text = DEADLINE.format(days=days, cluster="")
    if days is None:
        text = text.replace("    deadline_days: None\n", "")
    bp = planned(catalog, text)
    assert bp.cluster is not None and bp.cluster["spare_nodes"] == 0
    assert bp.recommendation["nodes"] == 128
    assert not [x for x in bp.decisions if x["area"] == "spares"]


def test_a_fixed_size_keeps_its_idle_servers_as_spares(catalog: Catalog) -> None:
    bp = planned(catalog, DEADLINE.format(days=45, cluster="cluster:\n  gpus: 1056\n"))
    assert bp.cluster is not None
    assert (bp.cluster["spare_nodes"], bp.cluster["idle_nodes"]) == (0, 4)
    assert bp.reliability is not None and bp.reliability["hot_spares"] == 4


def test_spares_that_open_a_scalable_unit_say_which_switches_they_add(catalog: Catalog) -> None:
    """3 spares beside 128 DGX H100 (4 full SUs on QM9700-class radix 64) need a fifth SU's
    leaves and, for the even split of every leaf's uplinks, more spines; 3 spares beside 120
    servers fill the fourth SU's free ports and add nothing."""
    from clusterwright.design.bom import plan_fabric
    from clusterwright.plan.cluster import fabric_growth
    from clusterwright.spec.fabric import FabricRequest

    full = plan_fabric(FabricRequest(server="dgx-h100", nodes=131), catalog)
    text = fabric_growth(full, 3)
    assert text.startswith("they grow the backend fabric: leaves ")
    assert f"-> {full.shape.leaf_switches}" in text and "spines" in text
    roomy = plan_fabric(FabricRequest(server="dgx-h100", nodes=123), catalog)
    assert fabric_growth(roomy, 3) == "" and fabric_growth(full, 0) == ""
    bp = planned(catalog, DEADLINE.format(days=45, cluster=""))
    (d,) = [x for x in bp.decisions if x["area"] == "spares"]
    assert "they grow the backend fabric" in d["why"]
