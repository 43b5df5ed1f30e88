"""scripts/fit_moe_kernel_floor.py: the floor and efficiency it fits from measured MoE
kernels, and the bytes it charges them (the step model's own)."""

from __future__ import annotations

import pytest

from tests import scripts


def test_the_fit_recovers_a_floor_and_an_efficiency() -> None:
    mod = scripts.load("fit_moe_kernel_floor")
    hbm = 3.35e12
    rows = [(b, hbm, 25e-6 + b / (hbm * 0.8)) for b in (1e6, 1e7, 5e7, 2e8, 8e8)]
    floor, eff, mape = mod.fit_floor(rows)
    assert floor == pytest.approx(25e-6, rel=1e-6)
    assert eff == pytest.approx(0.8, rel=1e-6)
    assert mape == pytest.approx(0.0, abs=1e-9)
    with pytest.raises(ValueError, match="degenerate"):
        mod.fit_floor([(1e6, hbm, 1e-5)] * 3)


def test_the_bytes_are_the_touched_experts_slices() -> None:
    mod = scripts.load("fit_moe_kernel_floor")
    # Enough tokens to touch every one of 8 experts: all of them, a quarter each on MoE TP 4
    every = mod.layer_bytes(4096, 1024, 8, 2, 4, 1, 4096, "fp8")
    assert every == pytest.approx(8 * 3 * 4096 * 1024 / 4)
    # One token on EP 1: its top-k experts, at 16-bit in AIConfigurator's spelling
    one = mod.layer_bytes(4096, 1024, 256, 8, 1, 1, 1, "bfloat16")
    assert one == pytest.approx(8 * 3 * 4096 * 1024 * 2, rel=0.01)
    assert mod.layer_bytes(4096, 1024, 8, 2, 1, 1, 1, "fp3_exotic") is None
