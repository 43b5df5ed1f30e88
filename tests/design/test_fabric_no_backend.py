"""No backend fabric (``backend="none"``): nothing of the backend is built or bought, the
frontend and management networks still are, and the notes say what growth would need."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterwright.catalog.registry import Catalog
from clusterwright.design.bom import plan_fabric
from clusterwright.design.fabric import Fabric
from clusterwright.design.fabric_summary import fabric_summary
from clusterwright.export.fabric import write_fabric
from clusterwright.spec.fabric import FabricRequest


def _fab(catalog: Catalog, nodes: int, **kw: object) -> Fabric:
    return plan_fabric(FabricRequest(server="dgx-h100", nodes=nodes, **kw), catalog)


def test_no_backend_builds_no_backend_switch_link_or_optic(catalog: Catalog) -> None:
    rail = _fab(catalog, 2)
    none = _fab(catalog, 2, backend="none")
    assert not none.has_backend and rail.has_backend
    assert none.switches("leaf", "spine", "core") == []
    assert [lk for lk in none.links if lk.network == "backend"] == []
    assert all(b.network != "backend" for b in none.bom if getattr(b, "category", "") == "switch")
    s, r = fabric_summary(none), fabric_summary(rail)
    assert (s.tiers, s.leaf_switches, s.spine_switches, s.backend_links) == (0, 0, 0, 0)
    assert s.as_dict()["backend"] == "none" and r.as_dict()["backend"] == "rail"
    # The rail backend of 2 x DGX H100 is one SN5600 and 16 host links with their optics.
    assert r.cost_usd - s.cost_usd >= 55_000
    assert s.transceivers < r.transceivers
    # Hosts still reach storage and management.
    assert len(none.links_in("fe-node-leaf")) == 2 * 2
    assert sum(1 for lk in none.links if lk.tier == "oob-node-leaf") == 2 + none.count(
        "fe-leaf") + none.count("oob-spine")


def test_no_backend_note_names_the_growth_backend(catalog: Catalog) -> None:
    fab = _fab(catalog, 2, backend="none")
    note = next(n for n in fab.notes if n.startswith("no backend fabric"))
    assert "1 x sn5600" in note and "scalable unit of 64 hosts" in note
    assert not any(n.startswith("backend right-sized") for n in fab.notes)
    assert not any("RoCE" in n for n in fab.notes)  # nothing of a backend to describe


def test_no_backend_above_one_su_keeps_a_one_tier_frontend_when_it_fits(
        catalog: Catalog) -> None:
    # 40 hosts on QM9700 are more than one SU of 32: a rail backend would be two tiers,
    # but with none the frontend pair still holds every host.
    fab = _fab(catalog, 40, backend="none", switch="qm9700")
    assert fab.shape.tiers == 2 and fab.frontend_shape is not None
    assert fab.frontend_shape.tiers == 1 and fab.count("fe-spine") == 0


def test_no_backend_exports_say_so(catalog: Catalog, tmp_path: Path) -> None:
    fab = _fab(catalog, 2, backend="none")
    write_fabric(fab, tmp_path / "out")
    conf = (tmp_path / "out" / "slurm" / "topology.conf").read_text()
    assert "No backend fabric" in conf and "rail-optimized" not in conf
    assert f"LinkSpeed={round(fab.frontend.speed_gbps)}\n" in conf
    cabling = (tmp_path / "out" / "cabling.csv").read_text()
    assert ",backend," not in cabling and ",frontend," in cabling
    assert not list((tmp_path / "out" / "frr").glob("leaf-*"))


@pytest.mark.parametrize("backend", ["rail", "none"])
def test_backend_option_is_validated(backend: str) -> None:
    assert FabricRequest(server="dgx-h100", nodes=1, backend=backend).backend == backend  # type: ignore[arg-type]


def test_unknown_backend_option_is_refused() -> None:
    with pytest.raises(ValueError, match="backend"):
        FabricRequest(server="dgx-h100", nodes=1, backend="star")  # type: ignore[arg-type]
