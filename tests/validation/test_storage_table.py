"""The storage validation table: MLPerf Storage v1.0 results and published checkpoint sizes."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterwright.errors import InputError
from clusterwright.validation.rows import TableResult
from clusterwright.validation.storage_table import storage_table
from clusterwright.validation.tables import TABLES
from tests.validation import csvrows


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
    # sizes of the MLPerf Storage v2.0 Llama 3 workloads, BLOOM and OPT within 5 % (OPT at
    # 10 B/param: its paper keeps no fp32 master copy).
    for rid in ("mlps10_ddn_ai400x2t_datasheet_unet3d_h100",
                "mlps10_ddn_ai400x2t_datasheet_unet3d_a100", "mlps20_ckpt_llama3_8b",
                "mlps20_ckpt_llama3_70b", "mlps20_ckpt_llama3_405b",
                "bloom176b_checkpoint_with_optimizer", "opt175b_checkpoint"):
        assert abs(held[rid].error) < 0.10, rid
    assert "no fp32 master" in held["opt175b_checkpoint"].detail
    # Small-file CosmoFlow on the DDN appliance stays over-predicted: the catalog gives no
    # sourced IOPS or file-open rate for it, and the clients' network (16 x 100 Gb/s) is not
    # what binds either; the per-file cost on the clients is not modelled (documented).
    cf = held["mlps10_ddn_ai400x2t_datasheet_cosmoflow_h100"]
    assert cf.error > 0.5 and "no requests/metadata rate" in cf.detail
    assert "(bandwidth)" in cf.detail and "clients 16 x 100 Gb/s" in cf.detail
    assert all(len(r.source) > 30 for r in table.rows)


def test_single_clients_cap_what_a_fast_tier_delivers(table: TableResult) -> None:
    held = {r.id: r for r in table.held_out_rows}
    iei = [r for r in table.held_out_rows if r.id.startswith("mlps10_ieit_")]
    assert len(iei) == 12
    # One AMD host with one 400 Gb/s port pulls 50 GB/s of the three nodes' 390 GB/s: 3D U-Net
    # is client-network-bound and lands within 10 %; ten or twelve hosts are storage-bound.
    for rid in ("mlps10_ieit_as13000_3nodes_amdhost_1host_unet3d_h100",
                "mlps10_ieit_as13000_3nodes_amdhost_1host_unet3d_a100"):
        assert "(client-network)" in held[rid].detail and abs(held[rid].error) < 0.10, rid
    for rid in ("mlps10_ieit_as13000_3nodes_amdhost_10hosts_unet3d_h100",
                "mlps10_ieit_as13000_3nodes_amdhost_12hosts_unet3d_a100"):
        assert "(bandwidth)" in held[rid].detail and abs(held[rid].error) < 0.10, rid
    # CosmoFlow is far below both ceilings on every host (reported as is, over 100 %).
    assert all(r.error > 1.0 for r in iei if "cosmoflow" in r.id)


def test_local_drives_are_predicted_from_their_datasheets(table: TableResult) -> None:
    micron = [r for r in table.held_out_rows if r.id.startswith("mlps10_micron_")]
    # Every Micron v1.0 result (17) predicted from its drive's listed 1 MiB read rate and
    # 4 KiB IOPS (catalog local-nvme entries); IOPS never binds at DLIO's request sizes.
    assert len(micron) == 17
    assert all("micron-" in r.detail and "bandwidth-bound" in r.detail for r in micron)
    # ResNet-50 (large TFRecord files) lands within 10 % on all three drives.
    assert all(abs(r.error) < 0.10 for r in micron if "resnet50" in r.id)


CKPT = "mlps20_ckpt_llama3_8b"
THROUGHPUT = "mlps10_ddn_ai400x2t_24x14tib_nvme_8xndr200_16clients_cosmoflow_h100_64"


@pytest.mark.parametrize("base, changes, reason", [
    (CKPT, {"model": "falcon-180b"}, "unknown model id 'falcon-180b'"),
    (THROUGHPUT, {"accelerator": "b200"}, "no MLPerf Storage workload 'cosmoflow' on 'b200'"),
])
def test_a_storage_row_the_model_cannot_predict_is_not_covered(
        tmp_path: Path, base: str, changes: dict[str, str], reason: str) -> None:
    _, rows = csvrows.shipped("storage.csv")
    t = storage_table(path=csvrows.write(tmp_path / "s.csv", "storage.csv", base,
                                         csvrows.like(rows[base], **changes)))
    assert [r.id for r in t.rows] == [base]
    (nc,) = t.not_covered
    assert nc.line == 3 and reason in nc.reason, nc.reason


def test_a_malformed_storage_row_names_the_line_and_column(tmp_path: Path) -> None:
    _, rows = csvrows.shipped("storage.csv")
    for changes, message in (({"fp32_master": "No"}, "fp32_master 'No' is not one of yes, no"),
                             ({"unit": "GB/s"}, "unit 'GB/s' is not a unit of checkpoint_gib")):
        with pytest.raises(InputError) as exc:
            storage_table(path=csvrows.write(tmp_path / "s.csv", "storage.csv", CKPT,
                                             csvrows.like(rows[CKPT], **changes)))
        assert f"s.csv line 3, row {CKPT}_new: {message}" in str(exc.value)
