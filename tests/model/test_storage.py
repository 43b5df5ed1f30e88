"""Storage formulas: MLPerf Storage's per-accelerator demand, checkpoint stall, persist and
restore, the write rate a checkpoint budget asks for."""

from __future__ import annotations

import math

import pytest

from clusterwright.errors import InputError
from clusterwright.model import storage as st


def test_unet3d_h100_reads_what_mlperf_storage_configures() -> None:
    wl = st.MLPERF_WORKLOADS[("unet3d", "h100")]
    # 7 x 146,600,628 B every 0.323 s = 3.18 GB/s at AU 1; the 90 % threshold: 2.86 GB/s.
    assert wl.full_rate_gbps == pytest.approx(7 * 146_600_628 / 0.323 / 1e9)
    assert wl.gbps_at_threshold == pytest.approx(0.9 * wl.full_rate_gbps)
    # DDN's 110 GB/s keeps 38 such accelerators at 90 %.
    assert st.accelerators_supported(110, wl) == 38
    cosmo = st.MLPERF_WORKLOADS[("cosmoflow", "a100")]
    assert cosmo.au == 0.70


def test_async_checkpoint_stalls_only_for_the_snapshot() -> None:
    io = st.checkpoint_io(1e12, 1000, write_gbps=10, read_gbps=20, mode="async",
                          host_copy_gbps_per_gpu=25)
    assert io.stall_s == pytest.approx(1e12 / 1000 / 25e9)
    assert io.persist_s == pytest.approx(100.0) and io.restore_s == pytest.approx(50.0)
    assert io.extra_lost_work_s == io.persist_s
    sync = st.checkpoint_io(1e12, 1000, 10, 20, mode="sync")
    assert sync.stall_s == sync.persist_s == pytest.approx(100.0)
    assert sync.extra_lost_work_s == 0.0
    # The clients cap the rate: 4 GPUs at 1 GB/s each write 4 GB/s whatever the tier does.
    capped = st.checkpoint_io(1e12, 4, 100, 100, "sync", client_write_gbps_per_gpu=1.0)
    assert capped.write_gbps == 4.0
    with pytest.raises(InputError, match="checkpoint mode"):
        st.checkpoint_io(1e12, 8, 1, 1, mode="lazy")


def test_the_write_rate_keeps_checkpointing_within_its_budget() -> None:
    size, m, b = 5.68e12, 3 * 3600.0, 0.02
    w = st.sync_write_need_gbps(size, m, b)
    delta = size / (w * 1e9)
    assert st.sync_overhead(delta, m) == pytest.approx(b)
    a = st.async_write_need_gbps(size, m, b)
    persist = size / (a * 1e9)
    # At tau = P: stall/tau is negligible, (P/2 + P)/M is the budget.
    assert st.async_overhead(persist, 0.0, persist, m) == pytest.approx(b)
    # Asynchronous checkpoints ask ~60x less bandwidth of the tier at Llama 3's scale.
    assert w / a > 50


def test_units_needed_and_loads() -> None:
    need = st.TierNeed(read_gbps=100, write_gbps=10, capacity_bytes=300e12)
    assert st.units_needed(need, 110, 55, 295) == {"read": 1, "write": 1, "capacity": 2}
    assert st.model_load_s(140e9, 2, 10) == pytest.approx(28.0)
    assert math.isclose(st.token_read_gbps(1024, 1.1e6, 4), 1.1e6 * 4 / 1e9)


def test_mlperf_files_and_requests_follow_the_dlio_configs() -> None:
    rn = st.MLPERF_WORKLOADS[("resnet50", "h100")]
    cf = st.MLPERF_WORKLOADS[("cosmoflow", "a100")]
    un = st.MLPERF_WORKLOADS[("unet3d", "h100")]
    # ResNet-50: 1,251 samples per TFRecord file, read in 256 KiB buffers; CosmoFlow one
    # 2.8 MB sample per file; 3D U-Net npz files read whole.
    assert rn.file_bytes == pytest.approx(1251 * 114_660.07)
    assert rn.read_request_bytes == 262_144 and cf.read_request_bytes == 262_144
    assert cf.file_bytes == 2_828_486
    assert un.read_request_bytes == un.file_bytes == 146_600_628


def test_large_files_are_bandwidth_bound() -> None:
    c = st.read_ceiling(110.0, 146.6e6, None, read_iops=3e6, file_opens_per_s=50_000)
    assert c.bound == "bandwidth" and c.gbps == 110.0 and c.unknown == ()


def test_small_requests_are_iops_bound_and_small_files_metadata_bound() -> None:
    # 5,500 GET/s x 256 KiB = 1.44 GB/s, far below 92 GB/s of bandwidth.
    c = st.read_ceiling(92.0, 2.83e6, 262_144, read_iops=5500, file_opens_per_s=None)
    assert c.bound == "requests" and c.gbps == pytest.approx(5500 * 262_144 / 1e9)
    assert c.unknown == ("metadata",)
    # 20,000 opens/s of 2.83 MB files = 56.6 GB/s < 110 GB/s.
    m = st.read_ceiling(110.0, 2.83e6, None, read_iops=None, file_opens_per_s=20_000)
    assert m.bound == "metadata" and m.gbps == pytest.approx(56.6)
    assert m.files_per_s == pytest.approx(20_000)
    # A request never carries more than its file.
    assert st.read_ceiling(10.0, 4096, 1 << 20, read_iops=1000).request_bytes == 4096


def test_read_ceiling_rejects_bad_rates() -> None:
    with pytest.raises(InputError):
        st.read_ceiling(10.0, 0.0)
    with pytest.raises(InputError):
        st.read_ceiling(10.0, 1e6, None, read_iops=-1)


def test_clients_network_caps_what_reaches_the_accelerators() -> None:
    # One host with one 400 Gb/s port pulls at most 50 GB/s, whatever the tier behind it.
    assert st.client_network_gbps(1, 400) == pytest.approx(50.0)
    tier = st.read_ceiling(390.0, 146_600_628)
    assert st.supplied_gbps(tier, st.client_network_gbps(1, 400)) == (50.0, "client-network")
    # Ten such hosts pull 500 GB/s: the tier's 390 GB/s binds again.
    assert st.supplied_gbps(tier, st.client_network_gbps(10, 400)) == (390.0, "bandwidth")
    assert st.supplied_gbps(tier) == (390.0, "bandwidth")
    wl = st.MLPERF_WORKLOADS[("unet3d", "h100")]
    assert st.accelerators_supported(50.0, wl) == 17  # 50 / 2.859 GB/s per H100 at AU 0.9
    with pytest.raises(InputError):
        st.client_network_gbps(0, 400)
    with pytest.raises(InputError):
        st.client_network_gbps(4, 0)


def test_client_file_rate_scales_with_hosts_and_the_sample_size() -> None:
    wl = st.MLPERF_WORKLOADS[("cosmoflow", "h100")]
    lo, hi = st.client_file_rate_gbps(10, wl)
    assert lo == pytest.approx(10 * 619 * 2_828_486 / 1e9)
    assert hi == pytest.approx(10 * 11_971 * 2_828_486 / 1e9)
    assert st.client_file_rate_gbps(20, wl)[0] == pytest.approx(2 * lo)
    with pytest.raises(InputError):
        st.client_file_rate_gbps(0, wl)
