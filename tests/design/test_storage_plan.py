"""The storage tier planner: sized by the workloads, the cheapest system that fits, and a tier
fixed too small is a binding constraint with its numbers, not an error."""

from __future__ import annotations

import pytest

from clusterwright.catalog.registry import Catalog
from clusterwright.design.storage_plan import StorageRequest, client_gbps_per_gpu, plan_storage
from clusterwright.errors import InputError

CK_405B = 405.85e9 * 14


def test_client_share_of_the_frontend(catalog: Catalog) -> None:
    # DGX H100: 2 x 400 Gb/s frontend ports for 8 GPUs = 12.5 GB/s per GPU.
    assert client_gbps_per_gpu(catalog, "dgx-h100") == pytest.approx(12.5)


def test_llama3_scale_checkpoints_size_the_write_rate(catalog: Catalog) -> None:
    p = plan_storage(StorageRequest(gpus=16384, checkpoint_bytes=CK_405B, mtbf_s=3 * 3600.0),
                     catalog)
    assert p.feasible and p.checkpoint is not None and p.checkpoint.mode == "async"
    assert p.units_by_need["write"] == p.units >= p.units_by_need["capacity"]
    # Written within the budget: 1.5 x persist / MTBF <= 2 %.
    assert 1.5 * p.checkpoint.persist_s / (3 * 3600) <= 0.02 + 1e-9
    assert p.interval_s == pytest.approx(p.checkpoint.persist_s)
    assert p.alternatives and p.price_usd is not None and p.power_kw > 0
    d = p.as_dict()
    assert d["units"] == p.units and d["checkpoint"]["restore_s"] > 0


def test_synchronous_checkpoints_need_a_tectonic_class_tier(catalog: Catalog) -> None:
    p = plan_storage(StorageRequest(gpus=16384, checkpoint_bytes=CK_405B, mtbf_s=3 * 3600.0,
                                    checkpoint_mode="sync", system="ddn-ai400x2t"), catalog)
    # 2 % of the run at Young's interval: a ~2 s write of 5.68 TB, ~2.6 TB/s (Meta's Tectonic
    # sustains 2 TB/s for Llama 3).
    assert 2000 < p.write_gbps < 3500
    assert p.checkpoint is not None and p.checkpoint.stall_s < 3


def test_a_fixed_tier_too_slow_binds_with_its_numbers(catalog: Catalog) -> None:
    p = plan_storage(StorageRequest(gpus=16384, checkpoint_bytes=CK_405B, mtbf_s=3 * 3600.0,
                                    checkpoint_mode="sync", system="ddn-ai400x2t", units=1),
                     catalog)
    assert not p.feasible
    b = p.binding[0]
    assert b.constraint == "checkpoint_interval" and b.needed > b.available
    assert "48 x ddn-ai400x2t) would meet it" in b.message


def test_data_reads_and_capacity_size_the_tier(catalog: Catalog) -> None:
    p = plan_storage(StorageRequest(gpus=64, data_read_gbps=183.0, dataset_bytes=500e12,
                                    system="ddn-ai400x2t"), catalog)
    assert p.units_by_need["read"] == 2 and p.units_by_need["capacity"] == 2
    fixed = plan_storage(StorageRequest(gpus=64, data_read_gbps=183.0, system="ddn-ai400x2t",
                                        units=1), catalog)
    assert {b.constraint for b in fixed.binding} == {"data_read"}


def test_unknown_system_names_the_field(catalog: Catalog) -> None:
    with pytest.raises(InputError) as err:
        plan_storage(StorageRequest(gpus=8, system="no-such"), catalog)
    assert err.value.field == "system"


COSMO_FILE = 2_828_486.0


def test_small_files_size_the_tier_at_what_it_delivers_to_them(catalog: Catalog) -> None:
    # 100 GB/s of 2.8 MB files read in 256 KiB requests from S3 prefixes: each prefix serves
    # 5,500 GET/s = 1.44 GB/s, not its 92 GB/s, so 70 prefixes, not 2.
    big = plan_storage(StorageRequest(gpus=64, data_read_gbps=100.0,
                                      system="aws-s3-standard-prefix"), catalog)
    small = plan_storage(StorageRequest(gpus=64, data_read_gbps=100.0,
                                        system="aws-s3-standard-prefix",
                                        data_file_bytes=COSMO_FILE, data_request_bytes=262_144),
                         catalog)
    assert big.units_by_need["read"] == 2
    assert small.units_by_need["read"] == 70
    assert small.data_read is not None and small.data_read.bound == "requests"
    assert any("requests-bound" in n for n in small.notes)
    fixed = plan_storage(StorageRequest(gpus=64, data_read_gbps=100.0,
                                        system="aws-s3-standard-prefix", units=2,
                                        data_file_bytes=COSMO_FILE,
                                        data_request_bytes=262_144), catalog)
    (b,) = fixed.binding
    assert b.constraint == "data_read" and "requests-bound" in b.message


def test_a_system_without_small_file_rates_says_so(catalog: Catalog) -> None:
    p = plan_storage(StorageRequest(gpus=64, data_read_gbps=100.0, system="ddn-ai400x2t",
                                    data_file_bytes=COSMO_FILE), catalog)
    assert p.data_read is not None and p.data_read.unknown == ("requests", "metadata")
    assert any("upper bound, not validated" in n for n in p.notes)
    assert p.as_dict()["data_read_per_unit"]["not_checked"] == ["requests", "metadata"]


def test_local_nvme_is_staging_never_the_shared_tier(catalog: Catalog) -> None:
    p = plan_storage(StorageRequest(gpus=1024, checkpoint_bytes=70.55e9 * 14,
                                    mtbf_s=30 * 3600.0, checkpoint_mode="sync",
                                    local_nvme="dgx-8x3.84tb-u2-gen4", servers=128), catalog)
    assert p.system.kind != "local-nvme"
    assert all("dgx-8x3.84tb" not in a for a, _ in p.alternatives)
    s = p.staging
    assert s is not None and s.servers == 128 and s.fits
    # One server's share, 7.7 GB, at the 8 drives' 30.4 GB/s: 0.25 s against the sync stall.
    assert s.shard_bytes == pytest.approx(70.55e9 * 14 / 128)
    assert s.stage_s == pytest.approx(s.shard_bytes / 30.4e9)
    assert p.checkpoint is not None and s.shared_stall_s == p.checkpoint.stall_s > s.stage_s
    assert p.as_dict()["local_staging"]["system"] == "dgx-8x3.84tb-u2-gen4"
    with pytest.raises(InputError) as err:
        plan_storage(StorageRequest(gpus=8, system="dgx-8x3.84tb-u2-gen4"), catalog)
    assert err.value.field == "system"
    with pytest.raises(InputError) as err:
        plan_storage(StorageRequest(gpus=8, local_nvme="minio-nvme-node"), catalog)
    assert err.value.field == "local_nvme" and "not local-nvme" in str(err.value)
