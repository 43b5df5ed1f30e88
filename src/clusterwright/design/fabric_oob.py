"""Out-of-band management: one 1 GbE port per BMC and per switch management port, on
management switches per row."""

from __future__ import annotations

import math
from dataclasses import dataclass

from clusterwright.design.fabric_model import SWITCH_ROLES, Device, Fabric, Link, port_name


@dataclass
class OobGroup:
    """Devices of one row for the management network. ``label`` names its switches
    (oob-<label>-<k>); ``uid_base`` keeps their ids stable; ``su_slots`` reserves one block of
    ports per host position of a whole scalable unit (0 for network rows)."""

    label: str
    uid_base: int
    devices: list[Device]
    su_slots: int = 0


_OOB_RANK = {r: i for i, r in enumerate(("leaf", "fe-leaf", "spine", "core", "fe-spine",
                                           "fe-core", "oob-spine"))}


def build_oob(fab: Fabric, groups: list[OobGroup], mgmt: int) -> list[list[Device]]:
    """Out-of-band management: one 1 GbE port per BMC and ``mgmt`` per switch, on management
    switches per row (the physical plan passes one group per row, so copper stays in it),
    each uplinked twice to an aggregation pair; a single management switch has no pair (its
    uplinks go to the site network). Returns the management switches per group.

    Ports are stable under growth: a host's BMC port follows its slot in its scalable unit
    (the unit's positions are reserved, as its leaves are built in full), and switches follow
    in (role, id) order after them."""
    op = fab.oob
    up_speed = fab.oob_uplink.speed_gbps
    per_switch = op.radix
    pname = {i: port_name("ethernet", i, 1) for i in range(1, per_switch + 1)}
    per_host = max(1, fab.server.oob_ports // fab.server.hosts)
    out: list[list[Device]] = []
    leaves: list[Device] = []
    for g in groups:
        slots: list[tuple[int, str, str]] = []
        hosts = [d for d in g.devices if d.role == "host"]
        if g.su_slots:
            for d in hosts:
                base = (d.uid % fab.shape.su_hosts) * per_host
                slots += [(base + i, d.name, f"bmc{i}" if i else "bmc") for i in range(per_host)]
            nxt = g.su_slots * per_host
        else:
            nxt = 0
            for d in hosts:
                slots += [(nxt + i, d.name, f"bmc{i}" if i else "bmc") for i in range(per_host)]
                nxt += per_host
        switches = sorted(
            (d for d in g.devices if d.role in SWITCH_ROLES and d.role != "oob-leaf"),
            key=lambda d: (_OOB_RANK.get(d.role, 99), d.uid, d.name),
        )
        for d in switches:
            slots += [(nxt + i, d.name, f"mgmt{i}") for i in range(mgmt)]
            nxt += mgmt
        if not slots:
            out.append([])
            continue
        n = math.ceil((max(s for s, _, _ in slots) + 1) / per_switch)
        mine = [
            fab.add(Device(name=f"oob-{g.label}-{k + 1}", role="oob-leaf", part=op.switch.id,
                           uid=g.uid_base + k, ports=per_switch))
            for k in range(n)
        ]
        leaves += mine
        out.append(mine)
        for slot, dev, port in slots:
            leaf = mine[slot // per_switch]
            fab.links.append(Link(
                network="oob", tier="oob-node-leaf", a=dev, a_port=port, b=leaf.name,
                b_port=pname[slot % per_switch + 1][0], speed_gbps=op.speed_gbps,
            ))
    leaves.sort(key=lambda d: d.uid)
    agg = fab.oob_uplink
    if len(leaves) == 1:
        # One management switch needs no aggregation pair: its uplink ports go to the site's
        # management network (the SuperPOD RA's OOB aggregation joins many row switches).
        fab.notes.append(
            f"out-of-band right-sized: one {op.switch.id} holds all "
            f"{sum(1 for lk in fab.links if lk.tier == 'oob-node-leaf')} management ports, so "
            f"there is no aggregation layer; its {up_speed:g}G uplink ports connect to the site "
            f"management network. A second management switch (past {per_switch} ports) brings "
            f"the aggregation pair of {agg.switch.id}")
        return out
    n_spines = max(2, math.ceil(2 * len(leaves) / agg.radix))
    spines = [
        fab.add(Device(name=f"oob-spine-{j + 1:02d}", role="oob-spine", part=agg.switch.id,
                       uid=j, ports=agg.radix))
        for j in range(n_spines)
    ]
    used = dict.fromkeys((s.name for s in spines), 0)
    for i, leaf in enumerate(leaves):
        for j in range(2):
            spine = spines[(2 * i + j) % n_spines]
            used[spine.name] += 1
            fab.links.append(Link(
                network="oob", tier="oob-leaf-spine", a=leaf.name,
                a_port=f"swp{per_switch + j + 1}",
                b=spine.name, b_port=port_name("ethernet", used[spine.name], 1)[0],
                speed_gbps=up_speed,
            ))
    return out
