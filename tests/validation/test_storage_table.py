"""The storage validation table: MLPerf Storage v1.0 results and published checkpoint sizes."""

from __future__ import annotations

import pytest

from clusterwright.validation.rows import TableResult
from clusterwright.validation.storage_table import storage_table
from clusterwright.validation.tables import TABLES


@pytest.fixture(scope="module")
def table() -> TableResult:
    return storage_table()


def test_registered_and_the_workload_model_reproduces_mlperf(table: TableResult) -> None:
    assert "storage" in TABLES
    # 130 Closed training results: the accelerators their measured rates keep at the AU
    # threshold. Measured 2026-11-28: 2.7 % MAPE (max 25 %: 3 vs 4 accelerators).
    assert len(table.dev_rows) == 130
    assert table.mape <= table.tolerance


def test_held_out_rows_are_reported(table: TableResult) -> None:
    held = {r.id: r for r in table.held_out_rows}
    # Bandwidth-bound 3D U-Net from DDN's datasheet read rate lands within 10 %; checkpoint
    # sizes of the MLPerf Storage v2.0 Llama 3 workloads and BLOOM within 3 %.
    for rid in ("mlps10_ddn_ai400x2t_datasheet_unet3d_h100",
                "mlps10_ddn_ai400x2t_datasheet_unet3d_a100", "mlps20_ckpt_llama3_8b",
                "mlps20_ckpt_llama3_70b", "mlps20_ckpt_llama3_405b",
                "bloom176b_checkpoint_with_optimizer"):
        assert abs(held[rid].error) < 0.10, rid
    # Small-sample workloads are client-bound, not bandwidth-bound: bandwidth alone
    # over-predicts (documented); OPT kept less optimizer state than 14 B/param.
    assert held["mlps10_ddn_ai400x2t_datasheet_cosmoflow_h100"].error > 0.5
    assert held["opt175b_checkpoint"].error > 0.3
    assert all(len(r.source) > 30 for r in table.rows)
