"""plan/run.py ``at_line``: a field error gets the file and the line of its field, and of every
other scenario field its message names."""

from __future__ import annotations

from clusterwright.errors import InputError
from clusterwright.plan.run import at_line
from clusterwright.spec.yamlio import loads

DOC = loads("""\
name: "x"
workloads:
  - kind: "training"
    gpus: 64
constraints:
  servers: ["dgx-h100"]
cluster:
  gpus: 96
""", "s.yaml")


def test_a_workload_field_gets_its_line() -> None:
    e = at_line(InputError("workloads[0].gpus: too many", field="workloads[0].gpus"), DOC)
    assert str(e) == "s.yaml: workloads[0].gpus (line 4): too many"
    assert e.field == "workloads[0].gpus"


def test_a_top_level_field_and_the_fields_it_names_get_their_lines() -> None:
    msg = ("cluster.gpus: 96 is below workloads[0].gpus = 64 of constraints.servers[0]; "
           "see cluster.gpus.")
    e = at_line(InputError(msg, field="cluster.gpus"), DOC)
    assert str(e) == ("s.yaml: cluster.gpus (line 8): 96 is below workloads[0].gpus (line 4) "
                      "= 64 of constraints.servers[0] (line 6); see cluster.gpus (line 8).")


def test_a_line_already_given_is_not_repeated() -> None:
    e = at_line(InputError("cluster.gpus: below workloads[0].gpus (line 4)",
                           field="cluster.gpus"), DOC)
    assert str(e).count("(line 4)") == 1


def test_a_field_that_is_not_the_scenarios_is_left_as_is() -> None:
    exc = InputError("stack: no such option", field="stack")
    assert at_line(exc, DOC) is exc
    assert at_line(InputError("cluster.gpus: x", field="cluster.gpus"), None).field == \
        "cluster.gpus"
