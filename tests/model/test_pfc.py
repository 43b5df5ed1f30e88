"""PFC headroom formulas (model/pfc.py) against their sources' own arithmetic: the Linux mlx5
driver's calculate_xoff and SONiC's buffer_headroom_mellanox.lua, worked by hand."""

from __future__ import annotations

import pytest

from clusterwright.model.pfc import (
    SPECTRUM,
    lanes_of,
    mlx5_lossless_buffer_bytes,
    mlx5_xoff_bytes,
    sonic_mellanox_headroom,
)


@pytest.mark.parametrize(("speed", "cable", "mtu", "xoff"), [
    # xoff = (301 + 216 * len / 100) * speed_mbps / 1000 + 272 * mtu / 100, C integers
    (100, 7, 1500, 35680),   # (301 + 15) * 100 + 4080
    (400, 3, 4096, 133941),  # (301 + 6) * 400 + 11141
    (25, 2, 9000, 36680),    # speed raised to 40 Gb/s: (301 + 4) * 40 + 24480
    (400, 2.2, 4096, 133941),  # 2.2 m counts as 3 m (whole metres, rounded up)
    (200, 100, 9216, 128467),  # (301 + 216) * 200 + 25067 (272 * 9216 / 100, truncated)
])
def test_mlx5_xoff_is_the_drivers_integer_arithmetic(speed: float, cable: float, mtu: int,
                                                    xoff: int) -> None:
    assert mlx5_xoff_bytes(speed, cable, mtu) == xoff


def test_mlx5_lossless_buffer_adds_the_largest_mtu_and_a_cell() -> None:
    assert mlx5_lossless_buffer_bytes(400, 3, 4096) == 133941 + 9216 + 128
    assert mlx5_lossless_buffer_bytes(400, 3, 4096, max_mtu=10000) == 133941 + 10000 + 128


def test_sonic_headroom_400g_four_lanes_5m() -> None:
    h = sonic_mellanox_headroom(400, 5, 9100, lanes=4)
    # bytes_on_cable = 2 * 5 * 400000e9 / 198e6 / 8192 = 2466.07; peer = 905 * 512 / 8
    # propagation = 9100 + 2466.07 + 0.8 * 1024 + 57920 = 70305.27
    # xoff = ceil((1024 + 70305.27 * 2.25) / 1024) * 1024; cell 144 -> factor 144 / 64
    assert h.xoff == 159744
    assert h.xon == 18 * 1024
    assert h.size == 159744 + 18432


def test_sonic_headroom_800g_eight_lanes_30m() -> None:
    h = sonic_mellanox_headroom(800, 30, 9216, lanes=8)
    assert h.xoff == 221184
    assert h.xon == 2 * 18 * 1024 - 1024  # an 8-lane port doubles the pipeline latency
    assert h.size == 221184 + 35840 + 9216  # ... and adds its MTU


def test_sonic_headroom_grows_with_cable_speed_and_mtu() -> None:
    base = sonic_mellanox_headroom(400, 5, 9216).size
    assert sonic_mellanox_headroom(400, 500, 9216).size > base
    assert sonic_mellanox_headroom(400, 5, 9216).size > sonic_mellanox_headroom(
        200, 5, 9216).size
    assert sonic_mellanox_headroom(400, 5, 1500).size < base
    # A shared headroom pool reserves only xon per priority group.
    assert sonic_mellanox_headroom(400, 5, 9216, shared_headroom=True).size == 18432


def test_constants_are_sonics() -> None:
    assert (SPECTRUM.cell_bytes, SPECTRUM.pipeline_latency_kb, SPECTRUM.mac_phy_delay_kb,
            SPECTRUM.peer_response_time_kb) == (144, 18.0, 0.8, 3.8)
    assert lanes_of(800) == 8 and lanes_of(400) == 4


@pytest.mark.parametrize("bad", [(0, 5, 9216), (400, -1, 9216), (400, 5, 0)])
def test_impossible_inputs_are_refused(bad: tuple[float, float, int]) -> None:
    with pytest.raises(ValueError):
        mlx5_xoff_bytes(*bad)
    with pytest.raises(ValueError):
        sonic_mellanox_headroom(*bad)
