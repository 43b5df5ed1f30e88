"""scripts/aic_tables.py: release order and the choice of a table's fullest version."""

from __future__ import annotations

from pathlib import Path

from tests import scripts


def test_releases_sort_by_number_and_release_candidate() -> None:
    mod = scripts.load("aic_tables")
    got = sorted(["1.3.0rc20", "1.3.0rc3", "0.5.14", "0.5.9", "1.3.0"], key=mod.version_key)
    assert got[:2] == ["0.5.9", "0.5.14"]
    assert got.index("1.3.0rc3") < got.index("1.3.0rc20")


def test_the_fullest_version_wins_and_the_newest_breaks_a_tie(tmp_path: Path) -> None:
    mod = scripts.load("aic_tables")
    sizes = {"1.3.0rc20": 6, "1.3.0rc23": 2, "1.2.0": 6, "0.9": 0}
    for v in sizes:
        (tmp_path / v).mkdir()
        (tmp_path / v / "moe_perf.parquet").write_bytes(b"")
    (tmp_path / "2.0").mkdir()  # a version without the table
    rows, version = mod.fullest_table(tmp_path, "moe_perf",
                                      lambda p: list(range(sizes[p.parent.name])))
    assert (len(rows), version) == (6, "1.3.0rc20")
    assert mod.fullest_table(tmp_path, "gemm_perf", lambda p: [1]) is None
