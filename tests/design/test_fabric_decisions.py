"""The fabric's decisions: protocol, switches, tiers, SU size and oversubscription, each with
why and, where there was a choice, what the alternatives lose."""

from __future__ import annotations

import re

from clusterwright.catalog.registry import Catalog
from clusterwright.design.bom import plan_fabric
from clusterwright.design.fabric import Fabric
from clusterwright.design.fabric_decisions import fabric_decisions
from clusterwright.spec.fabric import FabricRequest


def _fab(catalog: Catalog, nodes: int, **kw: object) -> Fabric:
    return plan_fabric(FabricRequest(server="dgx-h100", nodes=nodes, **kw), catalog)


def _by(fab: Fabric) -> dict[tuple[str, str | None], object]:
    return {(d.area, d.subject): d for d in fab.decisions}


def test_every_fabric_area_is_decided(catalog: Catalog) -> None:
    fab = _fab(catalog, 128)
    areas = {d.area for d in fab.decisions}
    assert areas == {"protocol", "switch", "tiers", "su", "oversubscription"}
    assert fab.decisions == fabric_decisions(fab)
    assert all(d.why for d in fab.decisions)


def test_backend_switch_alternatives_are_priced_from_the_catalog(catalog: Catalog) -> None:
    fab = _fab(catalog, 128)  # two tiers of SN5600
    d = next(d for d in fab.decisions if (d.area, d.subject) == ("switch", "backend"))
    assert d.choice == "sn5600"
    qm = next(a for a in d.alternatives if a.option == "qm9700")
    # 128 DGX H100 on QM9700: 4 SUs of 32, 32 leaves and 16 spines (SuperPOD RA) = 48 boxes.
    m = re.search(r"(\d+) switch\(es\), \$([\d,]+)", qm.outcome)
    assert m is not None and int(m.group(1)) == 48
    assert int(m.group(2).replace(",", "")) == 48 * catalog.switch("qm9700").price_usd  # type: ignore[operator]


def test_asked_protocol_and_su_say_so(catalog: Catalog) -> None:
    fab = _fab(catalog, 64, protocol="infiniband", su_hosts=32)
    by = {(d.area): d for d in fab.decisions if d.subject == "backend"}
    assert by["protocol"].choice == "infiniband" and "as asked (protocol)" in by["protocol"].why
    assert by["su"].choice == "32 hosts" and "as asked (su_hosts)" in by["su"].why
    assert by["tiers"].choice == "2"


def test_one_tier_beats_the_full_su_build_by_its_spines(catalog: Catalog) -> None:
    fab = _fab(catalog, 4)
    d = next(d for d in fab.decisions if d.area == "tiers")
    assert d.choice == "1" and "below one scalable unit of 64" in d.why
    assert "4 spines" in d.alternatives[0].outcome


def test_three_tiers_say_what_two_cannot_hold(catalog: Catalog) -> None:
    fab = _fab(catalog, 2048)
    d = next(d for d in fab.decisions if d.area == "tiers")
    assert d.choice == "3" and "exceed what two tiers hold" in d.why


def test_non_blocking_default_and_asked_oversubscription(catalog: Catalog) -> None:
    default = next(d for d in _fab(catalog, 128).decisions if d.area == "oversubscription")
    assert default.choice == "1:1 backend" and "SuperPOD RA" in default.why
    assert "frontend" in default.why
    asked = next(d for d in _fab(catalog, 128, oversubscription=2.0).decisions
                 if d.area == "oversubscription")
    assert asked.choice == "2:1 backend" and "as asked" in asked.why


def test_no_backend_decides_no_protocol_and_no_tiers(catalog: Catalog) -> None:
    fab = _fab(catalog, 2, backend="none")
    by = {d.area: d for d in fab.decisions if d.area != "switch"}
    assert by["protocol"].choice == "none" and by["tiers"].choice == "0 (no backend)"
    assert [d.subject for d in fab.decisions if d.area == "switch"] == ["frontend"]
