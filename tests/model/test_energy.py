"""Energy, carbon and the power trace of a synchronous training job."""

from __future__ import annotations

import pytest

from clusterwright.errors import InputError
from clusterwright.model import energy as en


def test_energy_sums_components_and_pue() -> None:
    e = en.energy(100.0, servers_kw=10.0, network_kw=1.0, storage_kw=0.5, pue=1.2)
    assert e.it_kwh == pytest.approx(1150.0)
    assert e.facility_kwh == pytest.approx(1380.0)
    assert e.cooling_and_losses_kwh == pytest.approx(230.0)
    with pytest.raises(InputError, match="pue"):
        en.energy(1.0, 1.0, pue=0.9)


def test_model_card_convention_reproduces_the_llama_3_1_405b_card() -> None:
    # 30.84M H100-hours x 700 W x PUE 1.08 x 373.3 g/kWh (eGRID2022) = 8,704 t; card: 8,930.
    kwh = en.model_card_kwh(30.84e6, 700, 1.08)
    c = en.carbon(kwh, 373.3)
    assert c.location_t == pytest.approx(8703.5, rel=1e-4)
    assert abs(c.location_t / 8930 - 1) < 0.05


def test_market_based_counts_only_the_uncovered_share() -> None:
    c = en.carbon(1e6, 400, renewable_share=0.75, embodied_t=10)
    assert c.location_t == pytest.approx(400.0)
    assert c.market_t == pytest.approx(100.0)
    assert c.total_location_t == pytest.approx(410.0)
    with pytest.raises(InputError, match="renewable share"):
        en.carbon(1.0, 1.0, renewable_share=1.5)


def test_embodied_is_amortised_per_gpu_hour() -> None:
    # A whole life of use charges the whole hardware: 8 GPUs x 6 years x 8,760 h x 0.8.
    hours = 8 * 6 * 8760 * 0.8
    assert en.embodied_t(hours, 8, 2500, 150, 6, 0.8) == pytest.approx((2500 + 8 * 150) / 1e3)


def test_power_trace_swings_between_computing_and_waiting() -> None:
    tr = en.power_trace(10.0, 4.0, step_s=10.0, low_s_per_step=2.0, ramp_s=0.5, restart_s=600,
                        limit_mw_per_s=5.0)
    assert tr.swing_mw == 6.0 and tr.ramp_mw_per_s == 12.0 and tr.exceeds_limit
    assert tr.low_fraction == pytest.approx(0.2)
    assert tr.average_mw == pytest.approx(10.0 - 6.0 * 0.2)
    assert min(tr.mw) == 4.0 and max(tr.mw) == 10.0
    assert list(tr.t_s) == sorted(tr.t_s)
    mits = {m.name: m for m in en.mitigations(tr, 8760, 0.1, 400, 0.9, 1000.0)}
    assert mits["battery"].swing_mw == 0.0
    # 6 MW for 600 s = 1,000 kWh at $400/kWh.
    assert mits["battery"].capex_usd == pytest.approx(400_000)
    assert mits["power cap"].swing_mw == pytest.approx(10 * 0.9 - 4)
    # The dummy load burns the low phases: 6 MW x 20 % x 8,760 h.
    assert mits["dummy load"].annual_usd == pytest.approx(6e3 * 0.2 * 8760 * 0.1)


def test_serving_swaps_the_gpus_training_draw_for_their_serving_power() -> None:
    # DGX H100: 10.2 kW x 0.76 sustained, 8 x 700 W GPUs, serving GPUs at 473 W.
    sustained = 10.2 * 0.76
    serving = en.serving_server_kw(sustained, 8, 700.0, 473.0)
    assert serving == pytest.approx(sustained - 8 * (700.0 - 473.0) / 1e3)
    # GPUs at TDP: the training draw; never below zero.
    assert en.serving_server_kw(sustained, 8, 700.0, 700.0) == sustained
    assert en.serving_server_kw(1.0, 8, 700.0, 0.0) == 0.0


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"gpu_w": 800.0}, "GPU serving power"),
    ({"gpu_w": -1.0}, "GPU serving power"),
    ({"gpus": 0}, "GPUs per server"),
])
def test_serving_power_rejects_bad_input_naming_it(kwargs: dict[str, float], field: str
                                                   ) -> None:
    args: dict[str, float] = {"sustained_kw": 7.0, "gpus": 8, "tdp_w": 700.0,
                              "gpu_w": 473.0, **kwargs}
    with pytest.raises(InputError, match=field):
        en.serving_server_kw(**args)  # type: ignore[arg-type]
