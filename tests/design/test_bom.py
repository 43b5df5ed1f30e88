"""Bill of materials, ``plan_fabric`` and the ``fabric design`` summary (``design.bom``)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
import yaml

from clusterwright.catalog.registry import Catalog, load_catalog
from clusterwright.design.bom import BomLine, bill_of_materials, plan_fabric, summary
from clusterwright.design.fabric import SWITCH_ROLES, Fabric
from clusterwright.design.physical import cable_counts, transceiver_counts
from clusterwright.spec.fabric import FabricRequest

CONTRACT = {
    "nodes", "gpus", "tiers", "leaf_switches", "spine_switches", "core_switches",
    "links_by_tier", "transceivers", "cables", "power_w", "cost_usd",
}
SWITCH_PACKAGED = Path(__file__).resolve().parents[2] / (
    "src/clusterwright/catalog/data/switches.yaml"
)


def _plan(cat: Catalog, **kw: object) -> Fabric:
    return plan_fabric(FabricRequest(**kw), cat)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def h100_64(catalog: Catalog) -> Fabric:
    return _plan(catalog, server="dgx-h100", nodes=64, switch="qm9700")


@pytest.fixture(scope="module")
def h100_512(catalog: Catalog) -> Fabric:
    return _plan(catalog, server="dgx-h100", nodes=512, switch="qm9700")


@pytest.fixture(scope="module")
def gb200(catalog: Catalog) -> Fabric:
    return _plan(catalog, server="gb200-nvl72", nodes=4, cooling="liquid", rack_kw=130)


@pytest.fixture(params=["h100_64", "h100_512", "gb200"])
def fab(request: pytest.FixtureRequest) -> Fabric:
    f: Fabric = request.getfixturevalue(request.param)
    return f


def _lines(fab: Fabric) -> list[BomLine]:
    return [b for b in fab.bom if isinstance(b, BomLine)]


# ------------------------------------------------------------------ summary contract


def test_summary_has_the_contract_keys(fab: Fabric) -> None:
    s = summary(fab)
    assert set(s) >= CONTRACT
    assert set(s["links_by_tier"]) == {"node-leaf", "leaf-spine", "spine-core"}  # type: ignore[arg-type]
    json.dumps(s)  # the CLI prints it as JSON


@pytest.mark.parametrize(("fixture", "want"), [
    ("h100_64", dict(nodes=64, gpus=512, tiers=2, leaf_switches=16, spine_switches=8,
                     core_switches=0,
                     links_by_tier={"node-leaf": 512, "leaf-spine": 512, "spine-core": 0})),
    ("h100_512", dict(nodes=512, gpus=4096, tiers=3, leaf_switches=128, spine_switches=128,
                      core_switches=64,
                      links_by_tier={"node-leaf": 4096, "leaf-spine": 4096,
                                     "spine-core": 4096})),
    ("gb200", dict(nodes=4, gpus=288, hosts=72)),
])
def test_summary_numbers(request: pytest.FixtureRequest, fixture: str,
                         want: dict[str, object]) -> None:
    s = summary(request.getfixturevalue(fixture))
    assert {k: s[k] for k in want} == want


def test_summary_counts_are_the_materialized_design(fab: Fabric) -> None:
    s = summary(fab)
    assert s["leaf_switches"] == fab.count("leaf")
    assert s["spine_switches"] == fab.count("spine")
    assert s["core_switches"] == fab.count("core")
    assert s["links_total"] == len(fab.links)
    assert s["switches_total"] == len(fab.switches())
    assert s["hosts"] == fab.count("host")


def test_max_nodes_grows_to_the_next_tier(h100_64: Fabric, h100_512: Fabric) -> None:
    assert summary(h100_64)["max_nodes_at_these_tiers"] == 256  # 8 SUs at radix 64
    assert summary(h100_512)["max_nodes_at_these_tiers"] == 8192  # 64 pods of 4 SUs


def test_oversubscription_reported(catalog: Catalog) -> None:
    s = summary(_plan(catalog, server="dgx-h100", nodes=48, switch="qm9700",
                      oversubscription=3))
    assert s["oversubscription"] == {"leaf": 3.0, "spine": None}


# ------------------------------------------------------------------ BOM


def test_cost_is_the_sum_of_priced_network_lines(fab: Fabric) -> None:
    lines = _lines(fab)
    network = [b for b in lines if b.category != "server"]
    priced = sum(b.total_usd for b in network if b.total_usd is not None)
    assert summary(fab)["cost_usd"] == pytest.approx(priced, abs=0.01)
    assert priced > 0


def test_cost_recomputed_from_the_catalog(h100_64: Fabric, catalog: Catalog) -> None:
    switches = sum(catalog.switch(d.part).price_usd or 0 for d in h100_64.switches())
    xcvrs = sum(catalog.transceiver(p).price_usd * n  # type: ignore[operator]
                for p, n in transceiver_counts(h100_64, catalog).items())
    cables = sum(catalog.cable(p).price_usd * n  # type: ignore[operator]
                 for (p, _), n in cable_counts(h100_64, catalog).items())
    assert summary(h100_64)["cost_usd"] == pytest.approx(switches + xcvrs + cables, abs=0.01)


def test_transceivers_and_cables_match_the_bom(fab: Fabric, catalog: Catalog) -> None:
    s = summary(fab)
    lines = _lines(fab)
    assert s["transceivers"] == sum(b.quantity for b in lines if b.category == "transceiver")
    assert s["transceivers"] == sum(transceiver_counts(fab, catalog).values())
    assert s["cables"] == sum(b.quantity for b in lines if b.category == "cable")
    assert s["cables"] == sum(cable_counts(fab, catalog).values())


def test_switch_lines_match_devices_per_role(fab: Fabric) -> None:
    lines = [b for b in _lines(fab) if b.category == "switch"]
    got = Counter({(b.role, b.part): b.quantity for b in lines})
    want = Counter((d.role, d.part) for d in fab.devices if d.role in SWITCH_ROLES)
    assert got == want
    assert len(lines) == len(want)  # one line per role and part


def test_server_line(fab: Fabric) -> None:
    (line,) = [b for b in _lines(fab) if b.category == "server"]
    assert line.quantity == fab.request.nodes
    assert line.part == fab.server.id
    assert summary(fab)["servers_cost_usd"] == pytest.approx(
        fab.request.nodes * (fab.server.price_usd or 0)
    )
    # Servers are not network cost.
    assert summary(fab)["cost_usd"] < line.total_usd  # type: ignore[operator]


def test_power_is_typical_network_power(h100_64: Fabric, catalog: Catalog) -> None:
    s = summary(h100_64)
    typical = sum(catalog.switch(d.part).typical_power_w or catalog.switch(d.part).max_power_w
                  for d in h100_64.switches())
    optics = sum(catalog.transceiver(p).power_w * n
                 for p, n in transceiver_counts(h100_64, catalog).items())
    cables = sum(catalog.cable(p).power_w * n
                 for (p, _), n in cable_counts(h100_64, catalog).items())
    assert s["power_w"] == pytest.approx(typical + optics + cables, abs=0.1)
    assert s["power_max_w"] >= s["power_w"]  # type: ignore[operator]


def test_bom_is_deterministic(catalog: Catalog, h100_64: Fabric) -> None:
    again = _plan(catalog, server="dgx-h100", nodes=64, switch="qm9700")
    assert _lines(again) == _lines(h100_64)
    assert summary(again) == summary(h100_64)


def test_bom_quantities_are_positive(fab: Fabric) -> None:
    assert all(b.quantity > 0 for b in _lines(fab))
    keys = [(b.category, b.part, b.role, b.length_m) for b in _lines(fab)]
    assert len(keys) == len(set(keys))


# ------------------------------------------------------------------ unpriced parts


def _qm9700_without_price() -> str:
    doc = yaml.safe_load(SWITCH_PACKAGED.read_text())
    (entry,) = [s for s in doc["switches"] if s["id"] == "qm9700"]
    entry = {k: v for k, v in entry.items() if k not in ("price_usd", "price_source")}
    entry["override"] = True
    return yaml.safe_dump({"switches": [entry]}, sort_keys=False)


def test_a_part_without_a_price_is_listed_not_priced_at_zero(
    tmp_path: Path, catalog: Catalog, h100_64: Fabric
) -> None:
    f = tmp_path / "noprice.yaml"
    f.write_text(_qm9700_without_price())
    cat = load_catalog([f], env={})
    assert cat.switch("qm9700").price_usd is None
    fab = _plan(cat, server="dgx-h100", nodes=64, switch="qm9700")
    s = summary(fab)
    assert s["unpriced"] == ["qm9700"]
    assert summary(h100_64)["unpriced"] == []
    lines = [b for b in _lines(fab) if b.part == "qm9700"]
    assert lines and all(b.unit_price_usd is None and b.total_usd is None for b in lines)
    # The cost drops by exactly the 24 QM9700 (16 leaf + 8 spine) at the packaged price.
    dropped = summary(h100_64)["cost_usd"] - s["cost_usd"]  # type: ignore[operator]
    assert dropped == pytest.approx(24 * catalog.switch("qm9700").price_usd)  # type: ignore[operator]


def test_a_new_unpriced_switch_is_listed(tmp_path: Path) -> None:
    doc = yaml.safe_load(_qm9700_without_price())
    entry = doc["switches"][0]
    entry.pop("override")
    entry["id"] = "test-ib-64"
    entry["name"] = "test 64-port NDR switch without a price"
    f = tmp_path / "new.yaml"
    f.write_text(yaml.safe_dump({"switches": [entry]}, sort_keys=False))
    cat = load_catalog([f], env={})
    fab = _plan(cat, server="dgx-h100", nodes=32, switch="test-ib-64")
    s = summary(fab)
    assert s["switch"] == "test-ib-64"
    assert s["unpriced"] == ["test-ib-64"]
    assert bill_of_materials(fab, cat) == _lines(fab)
