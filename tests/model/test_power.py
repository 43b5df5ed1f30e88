"""model/power.py: IT power, facility power, energy, cooling limits and the training swing,
checked against cases worked by hand."""

from __future__ import annotations

import pytest

from clusterwright.model.power import (
    HOURS_PER_YEAR,
    ClusterPower,
    annual_energy_kwh,
    average_it_kw,
    cluster_power,
    cooling_check,
    facility_kw,
    gpu_swing_kw,
    training_swing,
)


def dgx_h100(servers: int = 128, net_max: float = 0.0, net_typ: float = 0.0) -> ClusterPower:
    # DGX H100: 10.2 kW max, 8 x H100 SXM at 700 W; typical 0.76, GPU idle 12 % of TDP.
    return cluster_power(servers, 10.2, 8, 700.0, 0.76, 0.12, net_max, net_typ)


def test_128_dgx_h100_worked_case() -> None:
    p = dgx_h100()
    # nameplate 128 x 10.2 = 1,305.6 kW; typical 1,305.6 x 0.76 = 992.256 kW
    assert p.nameplate_kw == pytest.approx(1305.6)
    assert p.typical_kw == pytest.approx(992.256)
    # swing per server 8 x 700 W x (1 - 0.12) = 4,928 W; x 128 = 630.784 kW
    # idle = 992.256 - 630.784 = 361.472 kW
    assert p.typical_kw - p.idle_kw == pytest.approx(630.784)
    assert p.idle_kw == pytest.approx(361.472)


def test_network_adds_to_every_total() -> None:
    p = dgx_h100(net_max=108.4, net_typ=71.6)
    assert p.nameplate_kw == pytest.approx(1305.6 + 108.4)
    assert p.typical_kw == pytest.approx(992.256 + 71.6)
    # The network does not idle with the GPUs.
    assert p.idle_kw == pytest.approx(361.472 + 71.6)


def test_facility_power_and_energy_scale_exactly_with_pue() -> None:
    # 992.256 kW x 1.5 = 1,488.384 kW; x 8,760 h = 13,038,243.84 kWh
    assert facility_kw(992.256, 1.5) == pytest.approx(1488.384)
    assert annual_energy_kwh(992.256, 1.5) == pytest.approx(13_038_243.84)
    assert annual_energy_kwh(992.256, 1.0) == pytest.approx(992.256 * HOURS_PER_YEAR, rel=1e-15)
    for pue in (1.1, 1.3, 1.56, 2.0):
        ratio = annual_energy_kwh(500.0, pue) / annual_energy_kwh(500.0, 1.0)
        assert ratio == pytest.approx(pue, rel=1e-12)


def test_pue_below_one_is_rejected() -> None:
    with pytest.raises(ValueError, match="pue"):
        facility_kw(100.0, 0.99)


def test_average_power_between_idle_and_typical() -> None:
    p = dgx_h100()
    # u = 0.5: 361.472 + 0.5 x 630.784 = 676.864 kW
    assert average_it_kw(p, 0.5) == pytest.approx(676.864)
    assert average_it_kw(p, 1.0) == pytest.approx(p.typical_kw)
    with pytest.raises(ValueError, match="utilization"):
        average_it_kw(p, 0.0)
    with pytest.raises(ValueError, match="utilization"):
        average_it_kw(p, 1.01)


def test_idle_never_negative_for_a_gpu_heavy_rack() -> None:
    # A made-up rack whose GPUs are all of its typical draw: 72 x 1.2 kW x 0.88 = 76 kW swing
    # against 80 x 0.76 = 60.8 kW typical, so idle floors at 0.
    p = cluster_power(2, 80.0, 72, 1200.0, 0.76, 0.12, 0.0, 0.0)
    assert p.idle_kw == 0.0


def test_gpu_swing() -> None:
    assert gpu_swing_kw(8, 700.0, 0.12) == pytest.approx(4.928)
    assert gpu_swing_kw(8, 700.0, 1.0) == 0.0
    with pytest.raises(ValueError):
        gpu_swing_kw(8, 700.0, 1.2)


def test_training_swing_of_a_24k_h100_cluster_is_tens_of_megawatts() -> None:
    # 24,576 H100 = 3,072 servers x 4.928 kW = 15.139 MW; Llama 3 reports swings "on the order of
    # tens of megawatts" on 16-24K H100 (operations.md 1.1).
    s = training_swing(dgx_h100(3072), ramp_s=1.0)
    assert s.swing_mw == pytest.approx(15.138816)
    assert 10.0 < s.swing_mw < 100.0
    assert s.ramp_mw_per_s == pytest.approx(15.138816)
    # over 2 s the same step ramps at half the rate
    assert training_swing(dgx_h100(3072), ramp_s=2.0).ramp_mw_per_s == pytest.approx(7.569408)
    # swing / busy = 4.928 / 7.752 = 0.6357
    assert s.swing_fraction == pytest.approx(4.928 / 7.752)
    with pytest.raises(ValueError, match="ramp_s"):
        training_swing(dgx_h100(), ramp_s=0.0)


def test_cooling_check_air_and_liquid() -> None:
    # DGX H100 (10.2 kW, 8U) in a 48U rack: air 42.9 kW -> floor(4.2) = 4 servers (40.8 kW);
    # liquid 132 kW -> floor(12.9) = 12 by power but 48 // 8 = 6 by rack units.
    air = cooling_check("air", 42.9, 40.8, 10.2, 8, 48)
    liquid = cooling_check("liquid", 132.0, 40.8, 10.2, 8, 48)
    assert (air.feasible, air.servers_per_rack) == (True, 4)
    assert (liquid.feasible, liquid.servers_per_rack) == (True, 6)
    # A 120 kW NVL72 rack does not fit an air-cooled rack of 42.9 kW.
    nvl = cooling_check("air", 42.9, 120.0, 120.0, 48, 48, rack_scale=True)
    assert (nvl.feasible, nvl.servers_per_rack) == (False, 0)
    assert cooling_check("liquid", 132.0, 120.0, 120.0, 48, 48, rack_scale=True).feasible


def test_cooling_check_splits_a_system_over_its_racks() -> None:
    # A 256-chip TPU v5e pod: 80 kW in 192U, four 48U racks of 20 kW; air carries each.
    pod = cooling_check("air", 42.9, 20.0, 80.0, 192, 48, rack_scale=True)
    assert (pod.feasible, pod.servers_per_rack) == (True, 1)
    # Checked as one rack, it would not fit.
    assert not cooling_check("air", 42.9, 80.0, 80.0, 48, 48, rack_scale=True).feasible
