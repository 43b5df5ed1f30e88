"""``validate --table kv-offload``: vLLM's loads of cached prompts from CPU memory on H100 (the
vLLM blog's offloading benchmark), the prefills they replace, and throughput at a host hit
rate; the link constants come from the blog's copy benchmark, not from these rows."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterwright.validation.kv_offload_table import kv_offload_table
from clusterwright.validation.rows import mape
from clusterwright.validation.tables import TABLES
from tests.validation import csvrows
from tests.validation.shared import shipped_table


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    return shipped_table("kv_offload", tmp_path_factory)


def test_registered_so_plain_validate_runs_it() -> None:
    assert TABLES["kv_offload"] is kv_offload_table


def test_every_row_is_predicted_within_the_tolerance(table) -> None:  # type: ignore[no-untyped-def]
    assert not table.not_covered
    assert {r.quantity for r in table.rows} == {"ttft_compute", "ttft_load", "throughput"}
    assert table.mape <= table.tolerance


def test_held_out_loads_of_llama_8b_within_ten_percent(table) -> None:  # type: ignore[no-untyped-def]
    # Nothing was fitted on them: the link rate and the copy latency come from the blog's
    # Figure 4, the bytes from the model's config.
    loads = [r for r in table.held_out_rows if r.id.startswith("fig1-load")]
    assert len(loads) == 11
    assert mape(loads) < 0.10, mape(loads)


def test_a_load_is_an_order_of_magnitude_faster_than_the_prefill_it_replaces(table) -> None:  # type: ignore[no-untyped-def]
    by_id = {r.id: r for r in table.rows}
    for k in (10, 50, 100):
        load, compute = by_id[f"fig1-load-{k}k"], by_id[f"fig1-compute-{k}k"]
        assert compute.predicted > 5 * load.predicted
    # Throughput rises with the host hit rate, as measured
    hits = [by_id[f"fig2-hit-{h}"].predicted for h in range(0, 101, 10)]
    assert hits == sorted(hits)


def test_an_unknown_model_is_not_covered(tmp_path: Path) -> None:
    _, rows = csvrows.shipped("kv_offload.csv")
    p = csvrows.write(tmp_path / "k.csv", "kv_offload.csv",
                      csvrows.like(rows["fig1-load-10k"], model="llama-9-1t"))
    t = kv_offload_table(path=p)
    assert not t.rows
    assert "llama-9-1t" in t.not_covered[0].reason
