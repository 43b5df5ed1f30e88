from __future__ import annotations

from pathlib import Path

import pytest

from clusterwright.errors import InputError
from clusterwright.validation.training_table import memory_table
from tests.validation import csvrows


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


BASE = "fig1_22b_activations_none"


def test_a_layout_the_memory_model_rejects_is_not_covered(tmp_path: Path) -> None:
    _, rows = csvrows.shipped("memory.csv")
    t = memory_table(csvrows.write(tmp_path / "m.csv", "memory.csv", BASE,
                                   csvrows.like(rows[BASE], heads="60")))
    assert [r.id for r in t.rows] == [BASE]
    (nc,) = t.not_covered
    assert nc.line == 3 and "60" in nc.reason, nc.reason


@pytest.mark.parametrize("changes, message", [
    ({"recompute": "block"}, "recompute 'block' is not one of none, selective, full"),
    ({"layers": "forty"}, "layers 'forty' is not an integer"),
    ({"unit": "GB per GPU", "value": "63.6"}, None),
    ({"unit": "% of baseline"}, "unit '% of baseline' is not a unit of activation_memory"),
])
def test_memory_rows_read_their_values_or_name_the_line_and_column(
        tmp_path: Path, changes: dict[str, str], message: str | None) -> None:
    _, rows = csvrows.shipped("memory.csv")
    p = csvrows.write(tmp_path / "m.csv", "memory.csv", BASE, csvrows.like(rows[BASE], **changes))
    if message is None:  # GB instead of GiB: compared in GB
        gib, gb = memory_table(p).rows
        assert gb.predicted == pytest.approx(gib.predicted * 2**30 / 1e9)
        return
    with pytest.raises(InputError, match=r"m\.csv line 3, row " + BASE + "_new: "):
        memory_table(p)
    with pytest.raises(InputError) as exc:
        memory_table(p)
    assert message in str(exc.value)
