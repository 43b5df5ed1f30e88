from __future__ import annotations

from clusterwright.validation.training_table import memory_table


def test_memory_matches_korthikanti_within_5pct_per_row() -> None:
    result = memory_table()
    assert len(result.rows) == 32
    for row in result.rows:
        print(
            f"{row.id:32s} measured {row.measured:9.3f} predicted {row.predicted:9.3f} "
            f"error {100 * row.error:+6.2f}%"
        )
        assert abs(row.error) < 0.05, row.id
    assert result.mape < result.tolerance
