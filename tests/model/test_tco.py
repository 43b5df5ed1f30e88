"""model/tco.py: the worked own-vs-rent table of operations.md 4.4, cloud pricing models,
breakeven and per-unit costs, checked by hand."""

from __future__ import annotations

import pytest

from clusterwright.model.power import annual_energy_kwh
from clusterwright.model.tco import (
    HOURS_PER_YEAR,
    Capex,
    annual_colocation_usd,
    annual_energy_cost_usd,
    annual_opex,
    breakeven_months,
    breakeven_utilization,
    cloud_committed_annual_usd,
    cloud_on_demand_annual_usd,
    cost_per_gpu_hour,
    cost_per_million_tokens,
    instances_for,
    rack_capex_usd,
    staff_fte,
    storage_capex_usd,
)

# operations.md 4.4 inputs: $50k/GPU all-in, 1.275 kW/GPU, PUE 1.3, $0.08/kWh, colo $184.06/kW/mo
KW_PER_GPU = 1.275


def _per_gpu_hour(capex_per_gpu: float, years: float) -> float:
    depreciation = cost_per_gpu_hour(capex_per_gpu, years, 0.0, 1, 1.0)
    energy = annual_energy_cost_usd(annual_energy_kwh(KW_PER_GPU, 1.3), 0.08) / HOURS_PER_YEAR
    colo = annual_colocation_usd(KW_PER_GPU, 184.06) / HOURS_PER_YEAR
    return (depreciation + energy + colo) * 1.10  # +10 % ops/support, as the table does


def test_operations_4_4_components() -> None:
    # depreciation 50,000 / (3 x 8,760) = 1.9026 $/h; energy 1.275 x 1.3 x 0.08 = 0.1326 $/h;
    # colo 1.275 x 184.06 x 12 / 8,760 = 0.3215 $/h (the table's 0.321, 730 h per month)
    assert cost_per_gpu_hour(50_000, 3, 0.0, 1, 1.0) == pytest.approx(1.9026, abs=1e-4)
    energy = annual_energy_cost_usd(annual_energy_kwh(KW_PER_GPU, 1.3), 0.08) / HOURS_PER_YEAR
    assert energy == pytest.approx(0.1326, abs=1e-4)
    assert annual_colocation_usd(KW_PER_GPU, 184.06) / HOURS_PER_YEAR == pytest.approx(
        184.06 * KW_PER_GPU / 730
    )


@pytest.mark.parametrize(
    ("capex", "years", "total", "vs_299", "vs_4916"),
    [
        (50_000, 3, 2.59, 0.87, 0.53),
        (50_000, 4, 2.07, 0.69, 0.42),
        (50_000, 5, 1.76, 0.59, 0.36),
        (45_000, 6, 1.44, 0.48, 0.29),
    ],
)
def test_operations_4_4_table(
    capex: float, years: float, total: float, vs_299: float, vs_4916: float
) -> None:
    # e.g. 3 yr: (1.9026 + 0.1326 + 0.3215) x 1.1 = 2.592; 2.592 / 2.99 = 0.867; / 4.916 = 0.527
    per_h = _per_gpu_hour(capex, years)
    assert per_h == pytest.approx(total, abs=0.006)
    assert breakeven_utilization(per_h, 2.99) == pytest.approx(vs_299, abs=0.006)
    assert breakeven_utilization(per_h, 4.916) == pytest.approx(vs_4916, abs=0.006)


def test_cloud_on_demand_pays_used_hours_committed_pays_all() -> None:
    # 16 x p5.48xlarge on-demand $55.04/h at 50 %: 16 x 55.04 x 8,760 x 0.5 = 3,857,203.2
    assert cloud_on_demand_annual_usd(16, 55.04, 0.5) == pytest.approx(3_857_203.2)
    # committed $39.33/h, every hour: 16 x 39.33 x 8,760 = 5,512,492.8, whatever the use
    assert cloud_committed_annual_usd(16, 39.33) == pytest.approx(5_512_492.8)
    assert instances_for(1024, 8) == 128
    assert instances_for(288, 8) == 36
    assert instances_for(100, 8) == 13


def test_breakeven_months() -> None:
    # capex 1.2M; cloud 400k/yr - opex 100k/yr = 25k/month saved -> 48 months
    assert breakeven_months(1_200_000, 100_000, 400_000) == pytest.approx(48.0)
    assert breakeven_months(1_200_000, 400_000, 400_000) is None
    assert breakeven_months(1_200_000, 500_000, 400_000) is None


def test_breakeven_falls_as_utilization_rises_on_demand() -> None:
    months = [
        breakeven_months(40e6, 7e6, cloud_on_demand_annual_usd(128, 55.04, u))
        for u in (0.2, 0.4, 0.6, 0.8, 1.0)
    ]
    # at 20 %: 128 x 55.04 x 8,760 x 0.2 = 12.34M/yr vs 7M opex -> 40M / (5.34M/12) = 89.8 months
    assert months[0] == pytest.approx(40e6 / ((128 * 55.04 * 8760 * 0.2 - 7e6) / 12))
    assert all(m is not None for m in months)
    assert months == sorted(months, reverse=True)
    assert len(set(months)) == len(months)


def test_cost_per_gpu_hour_and_per_token() -> None:
    # (10M / 5 + 1M) / (100 x 8,760 x 0.5) = 3M / 438,000 = 6.849 $/GPU-h
    assert cost_per_gpu_hour(10e6, 5, 1e6, 100, 0.5) == pytest.approx(3e6 / 438_000)
    with pytest.raises(ValueError, match="utilization"):
        cost_per_gpu_hour(10e6, 5, 1e6, 100, 0.0)
    # $2/GPU-h at 1,000 tokens/s: 2 / 3.6M x 1M = 0.5556 $ per million tokens
    assert cost_per_million_tokens(2.0, 1000.0) == pytest.approx(0.5556, abs=1e-4)
    with pytest.raises(ValueError):
        cost_per_million_tokens(2.0, 0.0)


def test_capex_and_opex_parts_sum() -> None:
    # storage 1,024 GPUs x 0.16 GB/s x $10k = 1,638,400; racks 36 x (2,500 + 6,000) = 306,000
    assert storage_capex_usd(1024, 0.16, 10_000) == pytest.approx(1_638_400)
    assert rack_capex_usd(36, 2500, 6000) == pytest.approx(306_000)
    c = Capex(34.56e6, 4.36e6, 1.6384e6, 306e3, 0.0)
    assert c.total_usd == pytest.approx(34.56e6 + 4.36e6 + 1.6384e6 + 306e3)
    o = annual_opex(1e6, 3e6, c.total_usd, 0.08, 2.0, 240_000)
    assert o.support_usd == pytest.approx(0.08 * c.total_usd)
    assert o.staff_usd == pytest.approx(480_000)
    assert o.total_usd == pytest.approx(1e6 + 3e6 + 0.08 * c.total_usd + 480_000)


def test_staff_scales_with_nodes_with_a_floor() -> None:
    assert staff_fte(300, 125, 1) == pytest.approx(2.4)
    assert staff_fte(50, 125, 1) == 1
