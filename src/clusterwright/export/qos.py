"""Lossless RoCE QoS per backend Ethernet switch: NVIDIA Cumulus Linux NVUE commands with the
PFC headroom the design computed for every port from its cable (``design/pfc.py``).

One file per leaf, spine and core switch of a RoCE backend (``qos/<switch>.nvue``), written
next to its FRR config; none for an InfiniBand backend (credit-based flow control, no PFC)
and none when the request asks for no lossless priority. The exported port names are Cumulus
``swpN``/``swpNsM`` names, so NVUE is the native format: Cumulus Linux configures RoCE only
through NVUE ("RoCE is a complex configuration; you can only configure RoCE with NVUE
commands", RoCE page, note at the top).

Every command and its syntax, with where it is documented (NVIDIA Cumulus Linux 5.12 user
guide, docs.nvidia.com/networking-ethernet-software/cumulus-linux-512/, and the NVUE command
reference, .../nvue-reference/Set-and-Unset-Commands/QoS/ and .../Interface/; read in the
CumulusNetworks/docs sources, 2026):

- ``nv set qos roce mode lossless``: RoCE page, "RoCE lossless (with PFC and ECN)" (the note:
  ``nv set qos roce`` and ``nv set qos roce mode lossless`` are equivalent); NVUE reference,
  ``nv set qos roce mode``. The "Default RoCE Configuration" table gives what it sets: trust
  PCP and DSCP, switch priority 3 to traffic class 3 (RoCE), 6 to 6 (CNP), others to 0; ETS
  CNP strict, RoCE and other traffic WRR 50 % each; ECN on traffic class 3; PFC on switch
  priority 3, which is in the RoCE lossless traffic pool. Hence lossless priority 3 first.
- ``nv set qos pfc <profile> switch-priority|tx|rx|cable-length|port-buffer|xoff-threshold|
  xon-threshold`` and ``nv set interface <swp> qos pfc profile <profile>``: Quality of Service
  page, "Port Groups" > "PFC" (the ``my_pfc_ports2`` example and the "All PFC commands"
  table); NVUE reference, ``nv set qos pfc <profile-id> ...`` and ``nv set interface
  <interface-id> qos pfc profile <profile-name>``. ``cable-length`` takes whole metres (1 to
  100000), so the planned length is rounded up.
- ``nv set qos traffic-pool <pool> switch-priority``, ``nv set qos egress-queue-mapping
  default-global switch-priority <sp> traffic-class <tc>``: RoCE page, "Change RoCE
  Configuration" (pools ``default-lossy``, ``roce-lossless``; the remapping examples); NVUE
  reference, ``nv set qos traffic-pool <traffic-pool-id> switch-priority <qos-sp-id>``.
- ``nv set qos egress-scheduler default-global traffic-class <tcs> mode dwrr|bw-percent``:
  Quality of Service page, "Egress Scheduler"; NVUE reference, same commands.
- ``nv set qos congestion-control default-global traffic-class <tcs> min-threshold|
  max-threshold|probability``: Quality of Service page, "Congestion Control (ECN)"; NVUE
  reference, same commands. Values 150000 B, 1500000 B, 100 %: the default-global profile's
  defaults on that page, which are also what ``nv show qos roce`` prints for the RoCE class
  (RoCE page, "Verify RoCE Configuration": 146.48 KB, 1.43 MB, 100).
- ``nv set interface <swp> link mtu 552-9216``: NVUE reference, Interface page.
- ``nv config apply``: every example of both pages.

The numbers. A port's headroom is SONiC's ``buffer_headroom_mellanox.lua`` for its cable
(``model/pfc.py``: speed, lanes, planned length, MTU), exactly as ``fabric design`` reports it
(``PfcPlan.switch_port``; nothing is recomputed here). NVUE's three buffer values are defined
in the "All PFC commands" table: ``port-buffer`` is the reserved buffer, ``xoff-threshold``
the reserved bytes consumed before PAUSE is sent, ``xon-threshold`` the bytes below the xoff
threshold the buffer must drain before PAUSE stops (``xon_delta`` in the Linux-file tab). So
``port-buffer`` = the headroom size, ``xoff-threshold`` = size - xoff (the computed xoff is
what still arrives after PAUSE), ``xon-threshold`` = one MTU, the step the mlx5 driver takes
between its two thresholds ("xon_threshold = xoff_threshold - MTU", Linux commit 0696d60853d5
"net/mlx5e: Receive buffer configuration"). The user guide recommends leaving these three to
switchd, which derives them from ``cable-length``; the file says how (delete the three lines).

Lossless priorities: the request's count, 3 first (NVIDIA's RoCE default, above), then 4, 5,
7, 2, 1, 0 and 6 last (6 is RoCE mode's CNP priority). Beyond the first, each is mapped to
its own traffic class and moved from the lossy into the RoCE lossless pool, and the lossless
classes share RoCE mode's 50 % (integer percent each; Clusterwright's choice, not NVIDIA's).
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from operator import itemgetter
from typing import NamedTuple

import jinja2

from clusterwright.design.fabric_model import Fabric
from clusterwright.model.pfc import Headroom

# NVIDIA's RoCE lossless priority first (module docstring), CNP's priority 6 last.
PRIORITY_ORDER = (3, 4, 5, 7, 2, 1, 0, 6)
ROCE_SHARE_PERCENT = 50  # RoCE mode's WRR share of the RoCE class (RoCE page, defaults)
ECN_MIN_BYTES = 150_000  # default-global ECN profile (Quality of Service page)
ECN_MAX_BYTES = 1_500_000
ECN_PROBABILITY = 100
ROLES = ("leaf", "spine", "core")


@dataclass(frozen=True)
class PfcProfile:
    """One NVUE PFC profile: the ports with the same speed and cable length."""

    name: str
    speed_gbps: float
    cable_m: float  # planned length
    cable_length_m: int  # NVUE's whole metres, rounded up
    port_buffer: int
    xoff_threshold: int
    xon_threshold: int
    headroom: Headroom


class QosPort(NamedTuple):
    """One backend port (a tuple: the template unpacks it, several times faster than
    attribute look-ups over the 10^5-10^6 ports of a large fabric)."""

    name: str
    profile: str
    peer: str  # "device port" at the far end
    length: str  # planned cable length, m


@dataclass
class QosView:
    """What one switch's QoS file needs, formatted."""

    name: str
    role: str
    part: str
    mtu: int
    priorities: list[int]
    profiles: list[PfcProfile] = field(default_factory=list)
    ports: list[QosPort] = field(default_factory=list)

    @property
    def extra_priorities(self) -> list[int]:
        return self.priorities[1:]

    @property
    def lossy_priorities(self) -> list[int]:
        return [p for p in range(8) if p not in self.priorities]

    @property
    def share_percent(self) -> int:
        return max(1, ROCE_SHARE_PERCENT // len(self.priorities))


def lossless_priorities(count: int) -> list[int]:
    """The switch priorities made lossless, in order (module docstring)."""
    return list(PRIORITY_ORDER[:count])


def _profile_name(speed_gbps: float, cable_m: float) -> str:
    return f"pfc-{speed_gbps:g}g-{cable_m:g}m".replace(".", "p")


def qos_views(fab: Fabric) -> list[QosView]:
    """QoS views of every backend Ethernet switch, name order; empty for InfiniBand, before
    the cables are placed, or with no lossless priority."""
    plan = fab.pfc
    if (plan is None or plan.protocol != "ethernet" or plan.lossless_priorities <= 0
            or not plan.switch_port):
        return []
    prios = lossless_priorities(plan.lossless_priorities)
    views: dict[str, QosView] = {
        d.name: QosView(d.name, d.role, d.part, plan.mtu, prios)
        for d in fab.devices if d.role in ROLES
    }
    profiles: dict[str, dict[tuple[float, float], PfcProfile]] = defaultdict(dict)
    # (logical port number, port): the numbers follow the swpN[sM] order and sort faster
    ports: dict[str, list[tuple[int, QosPort]]] = defaultdict(list)
    # A large fabric has 10^5-10^6 switch ports but few distinct (speed, length) pairs: their
    # profile name and length text are formatted once.
    names: dict[tuple[float, float], tuple[str, str]] = {}

    def add(name: str, port: str, idx: int, peer: str, key: tuple[float, float]) -> None:
        prof = profiles[name].get(key)
        if prof is None:
            h = plan.switch_port[key]
            prof = profiles[name][key] = PfcProfile(
                name=_profile_name(*key), speed_gbps=key[0], cable_m=key[1],
                cable_length_m=max(1, math.ceil(key[1] - 1e-9)),
                port_buffer=h.size, xoff_threshold=h.size - h.xoff,
                xon_threshold=plan.mtu, headroom=h)
        text = names.get(key)
        if text is None:
            text = names[key] = (prof.name, f"{key[1]:g}")
        ports[name].append((idx, QosPort(port, text[0], peer, text[1])))

    for lk in fab.links:
        if lk.network != "backend":
            continue
        key = (lk.speed_gbps, lk.length_m)
        if lk.a in views:
            add(lk.a, lk.a_port, lk.a_idx, f"{lk.b} {lk.b_port}", key)
        if lk.b in views:
            add(lk.b, lk.b_port, lk.b_idx, f"{lk.a} {lk.a_port}", key)
    out = []
    for name in sorted(views):
        v = views[name]
        if name not in ports:
            continue
        v.profiles = sorted(profiles[name].values(), key=lambda p: (p.speed_gbps, p.cable_m))
        ports[name].sort(key=itemgetter(0))
        v.ports = [p for _, p in ports[name]]
        out.append(v)
    return out


def render_qos(view: QosView, env: jinja2.Environment, version: str) -> str:
    """One switch's NVUE QoS command file."""
    return env.get_template("qos.nvue.j2").render(
        sw=view, mtu=view.mtu, version=version, ecn_min=ECN_MIN_BYTES, ecn_max=ECN_MAX_BYTES,
        ecn_probability=ECN_PROBABILITY)
