"""The scenario's ``cluster:`` section (spec/cluster.py): its shape, and contradictions with the
workloads refused with both field paths and their YAML lines."""

from __future__ import annotations

import pytest

from clusterwright.errors import ScenarioError
from clusterwright.spec.cluster import Cluster
from clusterwright.spec.scenario import loads_scenario

BASE = """\
name: "c"
workloads:
  - kind: "training"
    name: "a"
    model: "llama-3.1-8b"
    tokens: 1.0e11
    gpus: 64
  - kind: "training"
    name: "b"
    model: "llama-3.1-8b"
    tokens: 1.0e11
    gpus: 48
cluster:
{cluster}
"""


def scenario(cluster: str) -> str:
    return BASE.format(cluster=cluster)


def refusal(cluster: str) -> str:
    with pytest.raises(ScenarioError) as e:
        loads_scenario(scenario(cluster))
    return str(e.value)


def test_defaults_ask_nothing_of_the_cluster() -> None:
    c = Cluster()
    # Spares unset: the planner's to choose (a training deadline), not a silent 0.
    assert (c.gpus, c.spares, c.fixed_spares, c.headroom, c.given) == (None, None, 0, 0.0, False)
    assert not Cluster(spares=0).given and Cluster(spares=0).spares == 0
    sc, _ = loads_scenario(scenario("  spares: 2\n  headroom: 0.25\n  gpus: 128"))
    assert (sc.cluster.gpus, sc.cluster.spares, sc.cluster.headroom) == (128, 2, 0.25)
    assert sc.cluster.given


@pytest.mark.parametrize(("text", "field"), [
    ("  spares: -1", "cluster.spares"),
    ("  spares: 1.5", "cluster.spares"),
    ("  spares: true", "cluster.spares"),
    ("  headroom: 1.5", "cluster.headroom"),
    ("  headroom: '0.1'", "cluster.headroom"),
    ("  gpus: 0", "cluster.gpus"),
    ("  gpus: .inf", "cluster.gpus"),
    ("  nodes: 4", "cluster.nodes"),
])
def test_bad_shapes_name_the_field_and_line(text: str, field: str) -> None:
    err = refusal(text)
    assert f"{field} (line 14)" in err, err


def test_size_below_a_workloads_gpus_names_both_fields_and_lines() -> None:
    err = refusal("  gpus: 56")
    assert "cluster.gpus (line 14)" in err and "workloads[0].gpus (line 7)" in err, err
    assert "56" in err and "64" in err


def test_size_below_training_jobs_side_by_side_names_every_job() -> None:
    err = refusal("  gpus: 96")  # 64 + 48 = 112 > 96, each alone fits
    assert "cluster.gpus (line 14)" in err, err
    assert "workloads[0].gpus (line 7) = 64" in err and "workloads[1].gpus (line 12) = 48" in err
    assert "112" in err


def test_spares_filling_the_size_name_both_fields_and_lines() -> None:
    err = refusal("  gpus: 128\n  spares: 128")
    assert "cluster.spares (line 15)" in err and "cluster.gpus (line 14)" in err, err


def test_a_size_that_holds_the_jobs_is_accepted() -> None:
    sc, _ = loads_scenario(scenario("  gpus: 128\n  spares: 2"))
    assert sc.cluster.gpus == 128
