"""catalog/references.py: the scenario's ``fabric.switch`` is checked against the catalog, and
a switch that contradicts ``fabric.protocol`` is refused naming both fields and their lines."""

from __future__ import annotations

import pytest

from clusterwright.catalog.references import resolve
from clusterwright.catalog.registry import Catalog
from clusterwright.errors import ScenarioError
from clusterwright.spec.scenario import loads_scenario

BASE = """name: t
workloads:
  - {kind: training, name: tr, model: "llama-3.1-8b", tokens: 1.0e10, gpus: 8}
fabric:
"""


def _resolve(catalog: Catalog, fabric: str) -> None:
    sc, doc = loads_scenario(BASE + fabric, "s.yaml")
    resolve(sc, catalog, doc)


def test_an_ethernet_switch_with_protocol_infiniband_names_both_lines(
        catalog: Catalog) -> None:
    with pytest.raises(ScenarioError) as info:
        _resolve(catalog, '  protocol: "infiniband"\n  switch: "sn5600"\n')
    msg = str(info.value)
    assert msg.startswith("s.yaml: fabric.switch (line 6): sn5600 speaks ethernet")
    assert "fabric.protocol (line 5) asks for infiniband" in msg


def test_unknown_and_non_backend_switches_are_refused(catalog: Catalog) -> None:
    with pytest.raises(ScenarioError, match=r"fabric.switch \(line 5\): unknown switch id "
                                            r"'qm9999'; did you mean"):
        _resolve(catalog, '  switch: "qm9999"\n')
    with pytest.raises(ScenarioError, match=r"sn2201 is not a backend switch"):
        _resolve(catalog, '  switch: "sn2201"\n')


def test_a_matching_switch_and_protocol_resolve(catalog: Catalog) -> None:
    _resolve(catalog, '  protocol: "infiniband"\n  switch: "qm9700"\n')
    _resolve(catalog, '  protocol: "ethernet"\n')
