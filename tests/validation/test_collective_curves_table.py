"""Collective curves: rows a new nccl-tests log could bring (validation/collective_curves.csv's
format) are predicted, not covered with the reason, or named as malformed."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterwright.errors import InputError
from clusterwright.validation.collective_curves_table import collective_curves_table
from tests.validation import csvrows

AR = "xxr_h100_n1g8_cnode3-002_all_reduce@33554432"


@pytest.mark.parametrize("changes, reason", [
    ({"gpu": "h20"}, "unknown GPU id 'h20'"),
    ({"server": "hgx-h20"}, "unknown server id 'hgx-h20'"),
    ({"collective": "broadcast"}, "no broadcast"),
    ({"gpus_per_node": "16"}, "16 GPUs per node, but dgx-h100 has 8"),
])
def test_a_curve_the_model_cannot_predict_is_not_covered(
        tmp_path: Path, changes: dict[str, str], reason: str) -> None:
    _, rows = csvrows.shipped("collective_curves.csv")
    t = collective_curves_table(csvrows.write(tmp_path / "c.csv", "collective_curves.csv", AR,
                                              csvrows.like(rows[AR], **changes)))
    assert [r.id for r in t.rows] == [AR]
    (nc,) = t.not_covered
    assert nc.line == 3 and reason in nc.reason, nc.reason


@pytest.mark.parametrize("changes, message", [
    ({"time_us": "fast"}, "time_us 'fast' is not a number"),
    ({"time_us": "", "busbw_gbps": ""}, "time_us is empty and so is busbw_gbps"),
    ({"collective": "allreduce"}, "collective 'allreduce' is not one of"),
    ({"set": "test"}, "set 'test' is not dev or held-out"),
])
def test_a_malformed_curve_row_names_the_line_and_column(
        tmp_path: Path, changes: dict[str, str], message: str) -> None:
    _, rows = csvrows.shipped("collective_curves.csv")
    with pytest.raises(InputError) as exc:
        collective_curves_table(csvrows.write(tmp_path / "c.csv", "collective_curves.csv", AR,
                                              csvrows.like(rows[AR], **changes)))
    assert f"c.csv line 3, row {AR}_new: {message}" in str(exc.value)


def test_a_run_that_forced_an_algorithm_is_predicted_with_it() -> None:
    """NCCL_ALGO in a row's env picks the algorithm the run used (Azure forces Ring on its
    4-GPU GB200 hosts); where the system lacks it (NVLS on A100) NCCL falls back, and so does
    the prediction."""
    from clusterwright.catalog.registry import load_catalog
    from clusterwright.validation.collective_curves_table import predicted_time_s

    cat = load_catalog(env={})
    gb200 = {"collective": "all_reduce", "nodes": "1", "gpus_per_node": "4",
             "size_bytes": str(1 << 30), "gpu": "gb200", "server": "gb200-nvl72", "env": ""}
    free = predicted_time_s(cat, gb200)
    ring = predicted_time_s(cat, {**gb200, "env": "NCCL_ALGO=Ring (forced)"})
    nvls = predicted_time_s(cat, {**gb200, "env": "NCCL_ALGO=NVLS"})
    assert free == pytest.approx(nvls) and ring > nvls
    # 1 GiB over 8 B200s: NVLS (845 GB/s busbw) beats the ring (695 GB/s) by about 1.2x
    b200 = {**gb200, "gpus_per_node": "8", "gpu": "b200", "server": "dgx-b200"}
    assert predicted_time_s(cat, {**b200, "env": "NCCL_ALGO=Ring"}) == pytest.approx(
        1.2 * predicted_time_s(cat, b200), rel=0.03)
    a100 = {**gb200, "gpus_per_node": "8", "gpu": "a100-80gb-sxm", "server": "dgx-a100"}
    assert predicted_time_s(cat, {**a100, "env": "NCCL_ALGO=NVLS"}) == pytest.approx(
        predicted_time_s(cat, a100))


def test_aiconfigurator_curves_are_held_out_and_every_row_is_predicted() -> None:
    """The nccl-tests curves imported from AIConfigurator's package
    (scripts/import_aic_nccl_curves.py) are held out (nothing is fitted on them) and each
    resolves to a catalog GPU and server: none is 'not covered'. The 8 x B200 all-reduce at
    4-64 MiB measures slower than the model's NVLS (docs/models.md): the reason the rows are
    kept apart from the development set."""
    _, rows = csvrows.shipped("collective_curves.csv")
    aic = {k: r for k, r in rows.items() if k.startswith("aic012_")}
    assert len(aic) >= 900 and {r["set"] for r in aic.values()} == {"held-out"}
    assert {r["gpu"] for r in aic.values()} >= {"h100-sxm", "h200-sxm", "b200", "b300-sxm",
                                                "gb200", "gb300"}
    t = collective_curves_table()
    assert not [n for n in t.not_covered if n.id.startswith("aic012_")]
    by_id = {r.id: r for r in t.rows}
    mid = [by_id[f"aic012_b200_sxm_g8_all_reduce@{s}"] for s in (1 << 22, 1 << 24, 1 << 26)]
    assert all(r.predicted < r.measured for r in mid)
