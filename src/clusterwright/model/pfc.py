"""PFC headroom: the buffer a lossless port needs to absorb what is in flight after it sends
PAUSE, from the cable length, the link speed and the MTU (vendor formulas, quoted).

Two formulas, each as its source computes it (integer and rounding steps included), so a
number here equals the one the driver or the NOS would configure for the same inputs:

**NIC side: the Linux mlx5 driver** (``drivers/net/ethernet/mellanox/mlx5/core/en/
port_buffer.c``, ``calculate_xoff``, torvalds/linux, read 2026)::

    /* xoff = ((301+2.16 * len [m]) * speed [Gbps] + 2.72 MTU [B])
     * minimum speed value is 40Gbps
     */
    xoff = (301 + 216 * priv->dcbx.cable_len / 100) * speed / 1000 + 272 * mtu / 100;

with ``speed`` in Mb/s (``max(speed, SPEED_40000)``), the cable length in whole metres
(``MLX5E_DEFAULT_CABLE_LEN`` is 7) and C integer division. A lossless receive buffer must be
at least ``xoff + max_mtu + cell`` (``update_xoff_threshold``; ``max_mtu`` is at least
``MINIMUM_MAX_MTU`` 9216). Worked numbers (computed by hand from the formula, checked in
``tests/model/test_pfc.py``):

- 100 Gb/s, 7 m (the default), MTU 1500: 216 * 7 / 100 = 15; (301 + 15) * 100000 / 1000 =
  31600; 272 * 1500 / 100 = 4080; **xoff = 35680 B**.
- 400 Gb/s, 3 m, MTU 4096: 216 * 3 / 100 = 6; 307 * 400 = 122800; 272 * 4096 / 100 = 11141;
  **xoff = 133941 B**; lossless buffer >= 133941 + 9216 + 128 = **143285 B**.
- 25 Gb/s, 2 m, MTU 9000 (speed raised to 40): (301 + 4) * 40 = 12200; 24480;
  **xoff = 36680 B**.

**Switch side: SONiC's dynamic buffer calculation for NVIDIA Spectrum**
(``cfgmgr/buffer_headroom_mellanox.lua``, sonic-net/sonic-swss, read 2026), headroom of one
lossless priority group::

    bytes_on_cable = 2 * cable_length * port_speed * 1000000000 / speed_of_light / (8 * 1024)
    propagation_delay = port_mtu + bytes_on_cable + 2 * bytes_on_gearbox + mac_phy_delay
                        + peer_response_time
    xoff_value = lossless_mtu + propagation_delay * cell_occupancy   (rounded up to 1024)
    xon_value = pipeline_latency                                      (rounded up to 1024)
    headroom_size = xoff_value + xon_value + speed_overhead           (rounded up to 1024)

with ``port_speed`` in Mb/s, ``speed_of_light`` = 198,000,000 m/s, ``peer_response_time`` =
pause quanta x 512 / 8 (IEEE 802.3 Annex 31B.3.7: 905 quanta at 400G and 800G, 453 at 200G,
394 at 100G), ``cell_occupancy`` = (100 - small_packet_percentage + small_packet_percentage *
worst_case_factor) / 100 with ``worst_case_factor`` = cell_size / 64 for cells over 128 bytes,
and, on an 8-lane port, ``pipeline_latency`` doubled less 1024 and ``speed_overhead`` = the
port MTU. The ASIC constants are SONiC's ``ASIC_TABLE`` for Spectrum-2 and Spectrum-3
(sonic-buildimage ``files/build_templates/asic_table.j2``: cell 144 B, pipeline latency 18 KB,
MAC/PHY delay 0.8 KB, peer response 3.8 KB); no Spectrum-4 entry was found in a source read,
so Spectrum-4 switches use them too (flagged where reported). ``LOSSLESS_TRAFFIC_PATTERN``
defaults from SONiC's configuration reference: MTU 1024, small-packet percentage 100. Worked
numbers (by hand from the script, checked in the tests):

- 400 Gb/s, 4 lanes, 5 m, port MTU 9100: bytes_on_cable = 2 * 5 * 400000e9 / 198e6 / 8192 =
  2466.07; peer response 905 * 64 = 57920; propagation = 9100 + 2466.07 + 819.2 + 57920 =
  70305.27; xoff = ceil((1024 + 70305.27 * 2.25) / 1024) * 1024 = ceil(155.48) * 1024 =
  **159744 B**; xon = 18432; **headroom = 178176 B**.
- 800 Gb/s, 8 lanes, 30 m, port MTU 9216: bytes_on_cable = 29592.80; propagation = 97548.00;
  xoff = ceil((1024 + 97548.00 * 2.25) / 1024) * 1024 = **221184 B**; xon = 2 * 18432 - 1024
  = 35840 (8 lanes); headroom = 221184 + 35840 + 9216 = **266240 B**.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# IEEE 802.3 Annex 31B.3.7 pause quanta a port must wait out per operating speed (Mb/s), as
# buffer_headroom_mellanox.lua tabulates them.
PAUSE_QUANTA = {800000: 905, 400000: 905, 200000: 453, 100000: 394, 50000: 147, 40000: 118,
                25000: 80, 10000: 67, 1000: 2, 100: 1}
SPEED_OF_LIGHT_M_S = 198_000_000  # in the cable, as the SONiC script takes it
MLX5_DEFAULT_CABLE_M = 7  # MLX5E_DEFAULT_CABLE_LEN
MLX5_MIN_MAX_MTU = 9216  # MINIMUM_MAX_MTU in port_buffer.c
MLX5_CELL_BYTES = 128  # 1 << MLX5E_BUFFER_CELL_SHIFT in older drivers; newer ones query it


@dataclass(frozen=True)
class AsicBuffer:
    """A switch ASIC's constants in SONiC's ``ASIC_TABLE`` (sizes in bytes)."""

    name: str
    cell_bytes: int
    pipeline_latency_kb: float
    mac_phy_delay_kb: float
    peer_response_time_kb: float


# sonic-buildimage files/build_templates/asic_table.j2 (MELLANOX-SPECTRUM-2 / -3).
SPECTRUM = AsicBuffer("spectrum-2/3", 144, 18.0, 0.8, 3.8)


@dataclass(frozen=True)
class Headroom:
    """One lossless priority group's headroom on one port (bytes)."""

    xoff: int  # bytes that may still arrive after PAUSE is sent
    xon: int
    size: int  # buffer reserved for the priority group
    formula: str


def mlx5_xoff_bytes(speed_gbps: float, cable_m: float, mtu: int) -> int:
    """Linux mlx5 ``calculate_xoff`` (module docstring): bytes in flight after a PAUSE on
    a NIC port. ``cable_m`` is rounded up to whole metres (the driver takes integers)."""
    if speed_gbps <= 0 or mtu <= 0 or cable_m < 0:
        raise ValueError("speed, MTU and cable length must be positive")
    speed = max(round(speed_gbps * 1000), 40000)  # Mb/s, SPEED_40000 minimum
    length = math.ceil(cable_m - 1e-9)
    return (301 + 216 * length // 100) * speed // 1000 + 272 * mtu // 100


def mlx5_lossless_buffer_bytes(speed_gbps: float, cable_m: float, mtu: int,
                               max_mtu: int = MLX5_MIN_MAX_MTU,
                               cell: int = MLX5_CELL_BYTES) -> int:
    """Smallest receive buffer mlx5 accepts for a lossless priority:
    ``xoff + max(max_mtu, 9216) + cell`` (``update_xoff_threshold``)."""
    return mlx5_xoff_bytes(speed_gbps, cable_m, mtu) + max(max_mtu, MLX5_MIN_MAX_MTU) + cell


def sonic_mellanox_headroom(speed_gbps: float, cable_m: float, port_mtu: int, lanes: int = 4,
                            asic: AsicBuffer = SPECTRUM, lossless_mtu: int = 1024,
                            small_packet_percentage: float = 100.0,
                            gearbox_delay_ns: float = 0.0,
                            shared_headroom: bool = False) -> Headroom:
    """SONiC ``buffer_headroom_mellanox.lua`` (module docstring): xon, xoff and the reserved
    size of one lossless priority group on a switch port, bytes."""
    if speed_gbps <= 0 or port_mtu <= 0 or cable_m < 0:
        raise ValueError("speed, MTU and cable length must be positive")
    port_speed = round(speed_gbps * 1000)  # Mb/s
    quanta = PAUSE_QUANTA.get(port_speed)
    pipeline = asic.pipeline_latency_kb * 1024
    mac_phy = asic.mac_phy_delay_kb * 1024
    if lanes == 8:
        pipeline = pipeline * 2 - 1024
        speed_overhead = port_mtu
    else:
        speed_overhead = 0
    cell = asic.cell_bytes
    worst = cell / 64 if cell > 2 * 64 else (2 * cell) / (1 + cell)
    occupancy = (100 - small_packet_percentage + small_packet_percentage * worst) / 100
    gearbox = 0.0 if gearbox_delay_ns == 0 else port_speed * gearbox_delay_ns / (8 * 1024)
    peer = quanta * 512 / 8 if quanta is not None else asic.peer_response_time_kb * 1024
    on_cable = 2 * cable_m * port_speed * 1_000_000_000 / SPEED_OF_LIGHT_M_S / (8 * 1024)
    propagation = port_mtu + on_cable + 2 * gearbox + mac_phy + peer
    xoff = math.ceil((lossless_mtu + propagation * occupancy) / 1024) * 1024
    xon = math.ceil(pipeline / 1024) * 1024
    size = xon if shared_headroom else xoff + xon + speed_overhead
    size = math.ceil(size / 1024) * 1024
    return Headroom(xoff=xoff, xon=xon, size=size,
                    formula="SONiC buffer_headroom_mellanox.lua")


def lanes_of(speed_gbps: float) -> int:
    """Electrical lanes of a port at this speed on a 100G-SerDes switch (Spectrum-4,
    Tomahawk 5): 800G on 8, slower ports on 4 or fewer."""
    return 8 if speed_gbps >= 800 else 4
