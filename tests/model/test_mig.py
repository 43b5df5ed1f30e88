"""MIG placement geometry against layouts the driver accepts or refuses.

Cases come from the profile data (validation/mig_profiles.csv, the catalog's A100-80GB and
H100-80GB rows): 8 memory slices, instances occupy ``memory_slices`` from an allowed start slot.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from clusterwright.catalog.registry import Catalog
from clusterwright.catalog.schema import MigProfile
from clusterwright.model import mig

CSV = Path(__file__).resolve().parents[2] / "validation" / "mig_profiles.csv"


@pytest.fixture(scope="module", params=["a100-80gb-sxm", "h100-sxm"])
def profiles(request: pytest.FixtureRequest, catalog: Catalog) -> dict[str, MigProfile]:
    return mig.profiles_by_name(catalog.gpu(request.param).mig_profiles)


def test_catalog_profiles_match_the_csv(catalog: Catalog) -> None:
    rows = list(csv.DictReader(CSV.open(encoding="utf-8")))
    for gpu_id, label in (("a100-80gb-sxm", "A100-80GB"), ("h100-sxm", "H100-80GB")):
        profs = mig.profiles_by_name(catalog.gpu(gpu_id).mig_profiles)
        mine = [r for r in rows if r["gpu"] == label]
        assert len(mine) == len(profs) == 7
        for r in mine:
            p = profs[r["profile"]]
            assert p.memory_slices == int(r["memory_slices"])
            assert p.compute_slices == int(r["compute_slices"])
            assert p.max_instances == int(r["max_instances"])
            assert p.start_slots == [int(x) for x in r["allowed_start_slots"].split(";")]


def test_two_3g_fill_the_memory_axis(profiles: dict[str, MigProfile]) -> None:
    # 3g.40gb: 4 slices at {0, 4} -> slices 0-3 and 4-7; 6 of 7 compute slices.
    lay = mig.build(profiles, [("3g.40gb", 0), ("3g.40gb", 4)])
    assert lay.memory_mask == 0xFF and lay.compute_used == 6
    assert mig.best_start(lay, profiles["1g.10gb"]) is None


def test_4g_plus_3g_uses_the_start_slots(profiles: dict[str, MigProfile]) -> None:
    # 4g.40gb only at slot 0 (slices 0-3), 3g.40gb then at slot 4 (slices 4-7): 7 compute slices.
    lay = mig.build(profiles, [("4g.40gb", 0), ("3g.40gb", 4)])
    assert lay.compute_used == mig.COMPUTE_SLICES
    # The other order works only if the 3g took slot 4: at slot 0 it blocks the 4g.
    mig.build(profiles, [("3g.40gb", 4), ("4g.40gb", 0)])
    with pytest.raises(mig.MigPlacementError, match="overlaps"):
        mig.build(profiles, [("3g.40gb", 0), ("4g.40gb", 0)])


def test_seven_1g_fit_and_an_eighth_does_not(profiles: dict[str, MigProfile]) -> None:
    lay = mig.build(profiles, [("1g.10gb", s) for s in range(7)])
    assert lay.compute_used == 7 and lay.memory_mask == 0x7F  # slice 7 stays unused
    with pytest.raises(mig.MigPlacementError, match="at most 7"):
        mig.create(lay, profiles["1g.10gb"], 6)
    with pytest.raises(mig.MigPlacementError, match="cannot start at slot 7"):
        mig.create(mig.Layout(), profiles["1g.10gb"], 7)


def test_1g_at_slot_6_blocks_7g_but_not_4g(profiles: dict[str, MigProfile]) -> None:
    # 1g.10gb at slot 6 takes slice 6; 4g.40gb at 0 needs 0-3 (free), 7g.80gb needs 0-7.
    lay = mig.build(profiles, [("1g.10gb", 6)])
    assert mig.create(lay, profiles["4g.40gb"], 0).compute_used == 5
    with pytest.raises(mig.MigPlacementError, match="overlaps"):
        mig.create(lay, profiles["7g.80gb"], 0)


def test_1g_in_the_lower_half_blocks_4g(profiles: dict[str, MigProfile]) -> None:
    # 1g.10gb at slot 3 sits inside 4g.40gb's only range (0-3).
    lay = mig.build(profiles, [("1g.10gb", 3)])
    assert mig.best_start(lay, profiles["4g.40gb"]) is None
    assert mig.best_start(lay, profiles["3g.40gb"]) == 4


def test_invalid_start_slots_are_refused(profiles: dict[str, MigProfile]) -> None:
    for name, bad in (("2g.20gb", 1), ("2g.20gb", 6), ("3g.40gb", 2), ("4g.40gb", 4),
                      ("1g.20gb", 3), ("7g.80gb", 1)):
        with pytest.raises(mig.MigPlacementError, match="cannot start"):
            mig.create(mig.Layout(), profiles[name], bad)


def test_media_extension_profile_allows_one_instance(profiles: dict[str, MigProfile]) -> None:
    lay = mig.build(profiles, [("1g.10gb+me", 0)])
    with pytest.raises(mig.MigPlacementError, match="at most 1"):
        mig.create(lay, profiles["1g.10gb+me"], 1)


def test_capacity_of_an_empty_gpu_is_max_instances(profiles: dict[str, MigProfile]) -> None:
    for p in profiles.values():
        assert mig.capacity(mig.Layout(), p) == p.max_instances, p.name


def test_one_3g_at_slot_0_leaves_three_1g(profiles: dict[str, MigProfile]) -> None:
    # operations.md 2.2: "one 3g.40gb takes 1g.10gb availability from 7/7 to 3/7" (slots 4-6).
    lay = mig.build(profiles, [("3g.40gb", 0)])
    assert mig.capacity(lay, profiles["1g.10gb"]) == 3


def test_all_balanced_layout_fits(profiles: dict[str, MigProfile]) -> None:
    # mig-parted "all-balanced" H100/A100-80GB: 2 x 1g.10gb + 1 x 2g.20gb + 1 x 3g.40gb.
    lay = mig.Layout()
    for name in ("3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"):
        start = mig.best_start(lay, profiles[name])
        assert start is not None, name
        lay = mig.create(lay, profiles[name], start)
    assert lay.compute_used == 7 and lay.memory_mask == 0xFF


def test_packer_keeps_slot_0_for_large_profiles(profiles: dict[str, MigProfile]) -> None:
    lay = mig.create(mig.Layout(), profiles["3g.40gb"],
                     mig.best_start(mig.Layout(), profiles["3g.40gb"]) or 0)
    assert lay.instances[0].start == 4
    assert mig.best_start(lay, profiles["4g.40gb"]) == 0


def test_destroy_frees_the_slices(profiles: dict[str, MigProfile]) -> None:
    lay = mig.build(profiles, [("4g.40gb", 0), ("2g.20gb", 4)])
    lay = mig.destroy(lay, profiles["4g.40gb"], 0)
    assert lay.memory_mask == 0b00110000 and lay.compute_used == 2
    with pytest.raises(mig.MigPlacementError, match=r"no 4g\.40gb"):
        mig.destroy(lay, profiles["4g.40gb"], 0)


def test_unknown_profile_is_named(profiles: dict[str, MigProfile]) -> None:
    with pytest.raises(mig.MigPlacementError, match=r"unknown MIG profile '5g\.50gb'"):
        mig.build(profiles, [("5g.50gb", 0)])
