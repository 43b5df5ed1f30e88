"""Switch and link counts of a rail-optimized fat tree (``design.fabric_shape``).

Reference numbers: validation/fabric.csv, the repository's copy of shared/data/fabric_designs.csv
(NVIDIA DGX SuperPOD B200 RA Table 3, the two-tier R^2/2 and Al-Fares k^3/4 maxima) and
shared/reference/network.md section 1.
"""

from __future__ import annotations

import csv
import itertools
from typing import Any

import pytest

from clusterwright.design.fabric_shape import (
    FabricError,
    FabricShape,
    fabric_shape,
    smallest_divisor_at_least,
    split_ports,
)
from clusterwright.errors import InputError
from tests.conftest import ROOT

DESIGNS = ROOT / "validation" / "fabric.csv"


def _rows(prefix: str) -> list[dict[str, str]]:
    with DESIGNS.open(newline="") as f:
        return [r for r in csv.DictReader(f) if r["id"].startswith(prefix)]


def _int(v: str) -> int:
    return int(v) if v else 0


def _counts(s: FabricShape) -> dict[str, int]:
    return {
        "leaf": s.leaf_switches, "spine": s.spine_switches, "core": s.core_switches,
        "node_leaf_links": s.node_leaf_links, "leaf_spine_links": s.leaf_spine_links,
        "spine_core_links": s.spine_core_links,
    }


def _expected(row: dict[str, str]) -> dict[str, int]:
    return {k: _int(row[k]) for k in (
        "leaf", "spine", "core", "node_leaf_links", "leaf_spine_links", "spine_core_links"
    )}


# ------------------------------------------------------------------ published designs


def test_reference_table_has_the_rows_these_tests_read() -> None:
    assert len(_rows("superpod_b200_")) == 6
    assert len(_rows("fattree_")) == 6


@pytest.mark.parametrize("su", [2, 4, 8, 16, 32, 64])
def test_superpod_b200_table_matches_exactly(su: int) -> None:
    (row,) = [r for r in _rows("superpod_b200_") if r["id"] == f"superpod_b200_{su}su"]
    nodes = int(row["nodes"])
    s = fabric_shape(hosts=nodes, rails=8, radix=int(row["radix"]), su_hosts=32)
    assert _counts(s) == _expected(row), row["id"]
    assert s.tiers == (3 if _int(row["core"]) else 2)
    assert s.sus == su
    # 1:1 everywhere: every tier carries as many links as there are GPUs.
    assert s.node_leaf_links == int(row["gpus"])


@pytest.mark.parametrize("row_id", [
    "fattree_2tier_r64", "fattree_2tier_r128", "fattree_2tier_r144",
    "fattree_3tier_r64", "fattree_3tier_r128", "fattree_3tier_r144",
])
def test_fat_tree_maximum_matches_reference(row_id: str) -> None:
    """One endpoint per host (rails=1): the two-tier maximum is R^2/2 endpoints on R leaves and
    R/2 spines; the three-tier maximum is the Al-Fares k-ary tree, k^3/4 hosts."""
    (row,) = [r for r in _rows("fattree_") if r["id"] == row_id]
    radix = int(row["radix"])
    endpoints = int(row["gpus"])
    tiers = 2 if "2tier" in row_id else 3
    assert endpoints == (radix**2 // 2 if tiers == 2 else radix**3 // 4)
    s = fabric_shape(hosts=endpoints, rails=1, radix=radix)
    assert s.tiers == tiers
    assert _counts(s) == _expected(row)
    assert s.max_hosts == endpoints  # exactly full
    if tiers == 3:
        switches = s.leaf_switches + s.spine_switches + s.core_switches
        assert switches == 5 * radix**2 // 4


@pytest.mark.parametrize("radix", [64, 128, 144])
def test_one_endpoint_over_the_two_tier_maximum_needs_three_tiers(radix: int) -> None:
    full = radix**2 // 2
    assert fabric_shape(hosts=full, rails=1, radix=radix).tiers == 2
    assert fabric_shape(hosts=full + 1, rails=1, radix=radix).tiers == 3


def test_257_dgx_nodes_leave_two_tiers_at_radix_64() -> None:
    # 8 rails x 32-node SUs: 8 SUs = 64 leaves fill a radix-64 spine; a 9th SU does not fit.
    assert fabric_shape(hosts=256, rails=8, radix=64).tiers == 2
    s = fabric_shape(hosts=257, rails=8, radix=64)
    assert s.tiers == 3
    assert s.leaf_switches == 9 * 8  # the partial SU is built in full


def test_partial_su_builds_full_leaves_and_uplinks() -> None:
    """40 nodes = one full SU and a quarter of one; leaves and leaf-spine cables are designed
    for two full SUs ("design the full SU", SuperPOD RA), host links only for real hosts."""
    s = fabric_shape(hosts=40, rails=8, radix=64)
    full = fabric_shape(hosts=64, rails=8, radix=64)
    assert (s.leaf_switches, s.spine_switches) == (full.leaf_switches, full.spine_switches)
    assert s.leaf_spine_links == full.leaf_spine_links == 512
    assert s.node_leaf_links == 40 * 8


def test_max_hosts_is_the_growth_limit_at_the_same_tiers() -> None:
    s = fabric_shape(hosts=64, rails=8, radix=64)
    assert s.max_hosts == 256
    assert fabric_shape(hosts=s.max_hosts, rails=8, radix=64).tiers == 2
    three = fabric_shape(hosts=512, rails=8, radix=64)
    # 4 SUs per pod (32 pod-spine down ports / 8 leaves per SU), at most 64 pods.
    assert three.sus_per_pod == 4
    assert three.max_hosts == 64 * 4 * 32
    assert fabric_shape(hosts=three.max_hosts, rails=8, radix=64).tiers == 3
    with pytest.raises(FabricError):
        fabric_shape(hosts=three.max_hosts + 1, rails=8, radix=64)


# ------------------------------------------------------------------ port splits


@pytest.mark.parametrize(("radix", "ratio", "down", "up"), [
    (64, 1.0, 32, 32),
    (64, 3.0, 48, 16),  # 1:3
    (64, 7.0, 56, 8),  # Meta's 1:7
    (128, 1.0, 64, 64),
    (64, 2.0, 42, 22),  # floor(64 * 2/3) = 42: never more down bandwidth than asked
    (4, 64.0, 3, 1),  # at least one uplink
])
def test_split_ports(radix: int, ratio: float, down: int, up: int) -> None:
    p = split_ports(radix, ratio)
    assert (p.down, p.up) == (down, up)
    assert p.down + p.up == radix
    assert p.oversubscription <= ratio + 1e-9


def test_one_to_three_leaves_hold_48_hosts_each() -> None:
    s = fabric_shape(hosts=48, rails=1, radix=64, oversubscription=3)
    assert (s.leaf.down, s.leaf.up) == (48, 16)
    assert s.su_hosts == 48
    # A tapered two-tier fabric holds radix leaves of 48 endpoints: 1.5x the 1:1 maximum.
    assert s.max_hosts == 64 * 48
    assert fabric_shape(hosts=64 * 48, rails=1, radix=64, oversubscription=3).tiers == 2


def test_leaf_uplinks_fix_the_split_and_the_spine_count() -> None:
    s = fabric_shape(hosts=64, rails=8, radix=64, leaf_uplinks=16, min_spines=16)
    assert (s.leaf.down, s.leaf.up) == (48, 16)
    assert s.spines_per_plane == 16
    assert s.leaf_spine_parallel == 1


@pytest.mark.parametrize(("n", "low", "want"), [
    (32, 8, 8), (32, 9, 16), (32, 33, None), (12, 5, 6), (7, 2, 7), (1, 0, 1),
])
def test_smallest_divisor_at_least(n: int, low: int, want: int | None) -> None:
    assert smallest_divisor_at_least(n, low) == want


# ------------------------------------------------------------------ errors


@pytest.mark.parametrize(("kwargs", "match"), [
    (dict(hosts=0, rails=8, radix=64), "^nodes: "),
    (dict(hosts=64, rails=8, radix=64, oversubscription=0.5), "^oversubscription: "),
    (dict(hosts=64, rails=8, radix=3), "radix 3 is too small"),
    (dict(hosts=64, rails=8, radix=64, su_hosts=0), "^su_hosts: "),
    (dict(hosts=64, rails=8, radix=64, leaf_uplinks=64), "^leaf_uplinks: must be in 1..63"),
    (dict(hosts=64, rails=8, radix=64, leaf_uplinks=0), "^leaf_uplinks: "),
    # Two tiers forced on 2,049 endpoints at radix 64.
    (dict(hosts=2049, rails=1, radix=64, tiers=2), r"at most 2048 hosts.*`tiers` 3"),
    # Three tiers over the k^3/4 maximum.
    (dict(hosts=65537, rails=1, radix=64), r"at most 64 pods \(65536 hosts\).*`dual_plane`"),
    # One SU needs 40 leaves but a pod spine has 32 down ports.
    (dict(hosts=64, rails=40, radix=64), "`su_hosts` or `spine_oversubscription`"),
])
def test_impossible_fabrics_raise_naming_the_field(kwargs: dict[str, Any], match: str) -> None:
    """Errors name FabricRequest fields (`su_hosts`), never CLI flags."""
    with pytest.raises(FabricError, match=match) as info:
        fabric_shape(**kwargs)
    assert "--" not in str(info.value)


def test_fabric_error_is_an_input_error() -> None:
    assert issubclass(FabricError, InputError)


# ------------------------------------------------------------------ planes


@pytest.mark.parametrize("hosts", [32, 64, 256, 512, 2048])
def test_dual_plane_doubles_every_switch_and_link(hosts: int) -> None:
    one = fabric_shape(hosts=hosts, rails=8, radix=64)
    two = fabric_shape(hosts=hosts, rails=8, radix=64, planes=2)
    assert _counts(two) == {k: 2 * v for k, v in _counts(one).items()}
    assert (two.tiers, two.leaves_per_plane, two.spines_per_plane) == (
        one.tiers, one.leaves_per_plane, one.spines_per_plane
    )


@pytest.mark.parametrize(("sus", "leaf", "spine"), [(1, 16, 8), (16, 256, 128)])
def test_b300_spectrum_x_twin_plane(sus: int, leaf: int, spine: int) -> None:
    """SuperPOD B300 on Spectrum-X: SU of 64 nodes, 2x400G per GPU through two planes, radix
    128 at 400G. 1 SU = 16 leaf / 8 spine; 16 SU = 256 leaf / 128 spine (network.md 1.2)."""
    s = fabric_shape(hosts=64 * sus, rails=8, radix=128, planes=2, su_hosts=64)
    assert (s.leaf_switches, s.spine_switches, s.core_switches) == (leaf, spine, 0)
    assert s.tiers == 2
    assert s.node_leaf_links == 64 * sus * 8 * 2


# ------------------------------------------------------------------ invariants over a sweep

SWEEP = list(itertools.product(
    [1, 31, 32, 33, 100, 256, 257, 1000, 2048, 2049, 4000],  # hosts
    [1, 4, 8],  # rails
    [64, 128],  # radix
    [1.0, 3.0],  # leaf oversubscription
))


@pytest.mark.parametrize(("hosts", "rails", "radix", "ratio"), SWEEP)
def test_port_budgets_hold(hosts: int, rails: int, radix: int, ratio: float) -> None:
    """No tier uses more ports than a switch has, and every uplink lands somewhere."""
    s = fabric_shape(hosts=hosts, rails=rails, radix=radix, oversubscription=ratio)
    assert s.leaf.down + s.leaf.up == radix
    assert s.sus * s.su_hosts >= hosts > (s.sus - 1) * s.su_hosts
    assert s.leaves_per_plane == s.sus * rails * s.leaves_per_rail_su
    assert s.leaves_per_rail_su * s.leaf.down >= s.su_hosts  # every host has a leaf port
    if s.tiers == 2:
        assert s.leaves_per_plane <= radix
        assert s.leaf.up == s.spines_per_plane * s.leaf_spine_parallel
        # Ports used on one spine: every leaf's parallel links.
        assert s.leaves_per_plane * s.leaf_spine_parallel <= radix
        assert s.spine_switches * s.spine.down == s.leaf_spine_links
    else:
        assert s.spines_per_pod == s.leaf.up
        assert s.sus_per_pod * rails * s.leaves_per_rail_su <= s.spine.down
        assert s.pods == -(-s.sus // s.sus_per_pod)
        assert s.pods <= radix
        assert s.spine.up == s.core_group_size * s.spine_core_parallel
        # Ports used on one core: one bundle from each pod's spine of its group.
        assert s.pods * s.spine_core_parallel <= radix
        assert s.cores_per_plane == s.spines_per_pod * s.core_group_size
        # Every spine uplink ends on a core port.
        assert s.spine_core_links <= s.core_switches * radix
    # Hosts never exceed what the tiers hold.
    assert hosts <= s.max_hosts


def test_a_unit_larger_than_the_cluster_in_whole_leaves_is_refused() -> None:
    # 16 hosts at radix 64 (32 down ports): --su-hosts 1000 built 32 leaves per rail, all
    # but one with no host on them.
    with pytest.raises(FabricError, match="at most 32") as info:
        fabric_shape(hosts=16, rails=8, radix=64, su_hosts=1000)
    assert info.value.field == "su_hosts"
    # A full unit for growth is still built: 32 hosts per unit for 16 hosts, 64 for 33.
    assert fabric_shape(hosts=16, rails=8, radix=64, su_hosts=32).leaves_per_plane == 8
    assert fabric_shape(hosts=33, rails=8, radix=64, su_hosts=64).leaves_per_rail_su == 2
