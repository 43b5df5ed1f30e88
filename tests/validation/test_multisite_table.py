"""Cross-site training rows a new report could bring (validation/multisite.csv's format):
predicted, not covered with the reason, or named as malformed."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterwright.errors import InputError
from clusterwright.validation.multisite_table import multisite_table
from tests.validation import csvrows

USA = "intellect1_usa"


def test_a_multisite_row_the_catalog_lacks_is_not_covered(tmp_path: Path) -> None:
    _, rows = csvrows.shipped("multisite.csv")
    t = multisite_table(csvrows.write(tmp_path / "m.csv", "multisite.csv", USA,
                                      csvrows.like(rows[USA], gpu="h20")))
    assert [r.id for r in t.rows] == [USA]
    (nc,) = t.not_covered
    assert nc.line == 3 and "unknown GPU id 'h20'" in nc.reason


@pytest.mark.parametrize("changes, message", [
    ({"method": "streaming-diloco"}, "method 'streaming-diloco' is not one of"),
    ({"wan_allreduce_s": "~103"}, "wan_allreduce_s '~103' is not a number"),
    ({"wan_allreduce_s": ""}, "wan_allreduce_s is empty (required)"),
])
def test_a_malformed_multisite_row_names_the_line_and_column(
        tmp_path: Path, changes: dict[str, str], message: str) -> None:
    _, rows = csvrows.shipped("multisite.csv")
    with pytest.raises(InputError) as exc:
        multisite_table(csvrows.write(tmp_path / "m.csv", "multisite.csv", USA,
                                      csvrows.like(rows[USA], **changes)))
    assert f"m.csv line 3, row {USA}_new: {message}" in str(exc.value)
