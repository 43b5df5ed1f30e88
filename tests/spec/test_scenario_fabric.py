"""The scenario's ``fabric:`` section: optional fields, strict types, bounded numbers."""

from __future__ import annotations

import pytest

from clusterwright.errors import ScenarioError
from clusterwright.spec.scenario import loads_scenario
from clusterwright.spec.scenario_fabric import FabricSection

BASE = """
name: t
workloads:
  - {kind: training, name: tr, model: "llama-3.1-8b", tokens: 1.0e10, gpus: 8}
"""


def test_fabric_section_is_optional_and_empty_by_default() -> None:
    sc, _ = loads_scenario(BASE)
    assert sc.fabric == FabricSection()
    assert (sc.fabric.protocol, sc.fabric.switch, sc.fabric.su_hosts,
            sc.fabric.oversubscription) == (None, None, None, None)


def test_fabric_fields_are_read() -> None:
    sc, _ = loads_scenario(BASE + 'fabric: {protocol: "infiniband", switch: "qm9700", '
                           "su_hosts: 32, oversubscription: 2}\n")
    f = sc.fabric
    assert (f.protocol, f.switch, f.su_hosts, f.oversubscription) == (
        "infiniband", "qm9700", 32, 2.0)


@pytest.mark.parametrize(("fabric", "field"), [
    ('{protocol: "omnipath"}', "fabric.protocol"),
    ("{su_hosts: 0}", "fabric.su_hosts"),
    ("{su_hosts: true}", "fabric.su_hosts"),
    ("{oversubscription: 0.5}", "fabric.oversubscription"),
    ("{oversubscription: .nan}", "fabric.oversubscription"),
    ("{switch: 9700}", "fabric.switch"),
    ('{switch: ""}', "fabric.switch"),
    ("{tiers: 2}", "fabric.tiers"),
])
def test_bad_fabric_values_name_the_field_and_line(fabric: str, field: str) -> None:
    with pytest.raises(ScenarioError, match=rf"{field}.*\(line 5\)|{field} \(line 5\)"):
        loads_scenario(BASE + f"fabric: {fabric}\n")
