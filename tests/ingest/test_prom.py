"""Prometheus text exposition: DCGM exporter and port counters."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterwright.ingest.common import IngestError
from clusterwright.ingest.prom import parse_prom


def test_dcgm_samples_by_host_and_gpu(data: Path) -> None:
    obs = parse_prom(data / "dcgm.prom")
    clocks = {(s.device, s.item): s.value for s in obs.samples
              if s.metric == "gpu_sm_clock_mhz"}
    assert clocks == {("gpu00001", "0"): 1980.0, ("gpu00001", "1"): 1410.0}
    thr = [s for s in obs.samples if s.metric == "gpu_throttle_reasons"]
    assert thr[0].value == 64 and thr[0].line == 10
    assert not any(s.metric == "gpu_power_w" for s in obs.samples)  # NaN is no sample


def test_port_counters_instance_label_and_units(data: Path) -> None:
    obs = parse_prom(data / "ports.prom")
    speed = {(s.device, s.item): s.value for s in obs.samples if s.metric == "port_speed_gbps"}
    assert speed[("gpu00001", "mlx5_0")] == 400.0  # 5e10 B/s, DNS domain and :port dropped
    assert speed[("leaf1", "swp1")] == 400.0
    assert speed[("sonic-leaf2", "Ethernet0")] == 400.0  # ifHighSpeed in Mb/s
    kinds = {s.metric for s in obs.samples}
    assert {"port_errors", "port_up", "port_pfc_pause", "port_oper_status"} <= kinds
    assert any("not used by the twin" in n for n in obs.notes)


def test_malformed_lines(tmp_path: Path) -> None:
    p = tmp_path / "m.prom"
    p.write_text('DCGM_FI_DEV_SM_CLOCK{gpu="0",Hostname="a"} 1980\nDCGM_FI_DEV_SM_CLOCK{gpu="0"\n')
    with pytest.raises(IngestError, match=r"m\.prom:2: not a Prometheus sample line"):
        parse_prom(p)
    p.write_text('DCGM_FI_DEV_SM_CLOCK{gpu="0",Hostname="a"} fast\n')
    with pytest.raises(IngestError, match=r"m\.prom:1: sample value 'fast'"):
        parse_prom(p)
    p.write_text("# TYPE x bogus\n")
    with pytest.raises(IngestError, match=r"m\.prom:1: bad TYPE"):
        parse_prom(p)
    p.write_text("# nothing\n")
    with pytest.raises(IngestError, match="no samples"):
        parse_prom(p)


def test_an_empty_metrics_file_is_refused(tmp_path: Path) -> None:
    """An empty dump means the collection failed: not "no input"."""
    p = tmp_path / "m.prom"
    p.write_text("\n")
    with pytest.raises(IngestError, match=r"m\.prom:1: empty metrics file"):
        parse_prom(p)
