"""Switch and link counts of a rail-optimized fat tree, by arithmetic alone.

The construction follows the NVIDIA DGX SuperPOD reference architectures (rail-optimized scalable
units, 1:1 leaf/spine, a core tier above 2,048 endpoints at radix 64 with spine = leaf and
core = leaf / 2) and reduces to the Al-Fares k-ary fat tree at its maximum (k^3/4 hosts). The
builder in ``fabric.py`` materializes exactly these counts; keeping the arithmetic separate lets
sweeps and the fat-tree maxima be checked without building half a million links.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from clusterwright.errors import InputError


class FabricError(InputError):
    """A fabric that cannot be built as asked; the message names the flag to change."""


@dataclass(frozen=True, slots=True)
class TierPorts:
    """How a switch's ports split at one tier: ``down`` to the tier below, ``up`` above."""

    down: int
    up: int

    @property
    def oversubscription(self) -> float:
        return self.down / self.up if self.up else math.inf


@dataclass(frozen=True, slots=True)
class FabricShape:
    """Counts for one plane of a rail-optimized leaf/spine(/core) fabric, and the totals.

    ``hosts`` attach to the network separately (a DGX, or one compute tray of an NVL72 rack);
    ``rails`` is backend links per host per plane.
    """

    hosts: int
    rails: int
    planes: int
    radix: int  # logical ports per switch at the link speed
    tiers: int
    su_hosts: int
    sus: int
    leaves_per_rail_su: int  # leaves per rail per scalable unit (1 unless the SU is wider)
    leaf: TierPorts
    spine: TierPorts  # three tiers: pod spine ports; two tiers: down = ports used, up = 0
    leaves_per_plane: int
    spines_per_plane: int
    cores_per_plane: int
    pods: int  # three tiers; 1 for two tiers
    sus_per_pod: int
    leaf_spine_parallel: int  # links between one leaf and one spine
    core_group_size: int  # cores each pod spine connects to (three tiers)
    spine_core_parallel: int  # links between one pod spine and one of its cores
    # One tier: rails that share one switch (all of them when they fit its down ports, else 1,
    # a leaf per rail). Two and three tiers are rail-optimized: always 1.
    rails_per_leaf: int = 1

    @property
    def leaves_per_su(self) -> int:
        return self.rails * self.leaves_per_rail_su

    @property
    def leaves_per_pod(self) -> int:
        return self.sus_per_pod * self.leaves_per_su

    @property
    def spines_per_pod(self) -> int:
        return self.leaf.up if self.tiers == 3 else self.spines_per_plane

    @property
    def leaf_switches(self) -> int:
        return self.leaves_per_plane * self.planes

    @property
    def spine_switches(self) -> int:
        return self.spines_per_plane * self.planes

    @property
    def core_switches(self) -> int:
        return self.cores_per_plane * self.planes

    @property
    def node_leaf_links(self) -> int:
        return self.hosts * self.rails * self.planes

    @property
    def leaf_spine_links(self) -> int:
        return self.leaves_per_plane * self.leaf.up * self.planes

    @property
    def spine_core_links(self) -> int:
        return self.spines_per_plane * self.spine.up * self.planes if self.tiers == 3 else 0

    @property
    def max_hosts(self) -> int:
        """Hosts these tiers could hold at the same radix and ratios (the growth limit)."""
        if self.tiers == 1:
            # A full scalable unit is built as two tiers (SuperPOD RA), so one tier stops below it.
            return min(self.su_hosts - 1, self.leaf.down) if self.su_hosts > 1 else 1
        if self.tiers == 2:
            return self.radix // self.leaves_per_su * self.su_hosts
        return self.radix * self.sus_per_pod * self.su_hosts


def split_ports(radix: int, oversubscription: float,
                field: str = "oversubscription") -> TierPorts:
    """Down/up port split of a radix-``radix`` switch for a down:up bandwidth ratio."""
    if oversubscription < 1:
        raise FabricError(f"{field}: must be at least 1 (1:1), got {oversubscription:g}",
                          field=field)
    down = math.floor(radix * oversubscription / (1 + oversubscription) + 1e-9)
    down = min(down, radix - 1)
    return TierPorts(down=down, up=radix - down)


def smallest_divisor_at_least(n: int, low: int) -> int | None:
    """Smallest divisor of ``n`` that is >= ``low`` (None if ``low`` > ``n``)."""
    for d in range(max(1, low), n + 1):
        if n % d == 0:
            return d
    return None


def fabric_shape(
    *,
    hosts: int,
    rails: int,
    radix: int,
    planes: int = 1,
    oversubscription: float = 1.0,
    spine_oversubscription: float = 1.0,
    su_hosts: int | None = None,
    tiers: int | None = None,
    min_spines: int = 1,
    leaf_uplinks: int | None = None,
    spine_uplinks: int | None = None,
    pod_sus: int | None = None,
) -> FabricShape:
    """Counts of a rail-optimized fabric for ``hosts`` hosts with ``rails`` backend links each.

    ``tiers=1`` (a cluster below one scalable unit, all under one leaf per rail): one tier, a
    leaf per rail or one switch for every rail when they fit its down ports, and no spines; the
    leaves keep their uplink ports free so a full SU grows into two tiers by adding spines (see
    ``one_tier``). Otherwise leaves: one per rail per SU,
    built in full even when the last SU is partly empty ("design the full SU", SuperPOD RA).
    Two tiers while every spine
    can reach every leaf (leaves <= radix); spines are the smallest divisor of the leaf uplink
    count that carries all uplinks. Three tiers: pods of whole SUs under ``leaf.up`` pod spines;
    pod spine j connects to core group j, sized the same way.
    """
    if hosts < 1:
        raise FabricError(f"nodes: must be at least 1, got {hosts}", field="nodes")
    if radix < 4:
        raise FabricError(f"switch radix {radix} is too small for a leaf/spine fabric")
    if leaf_uplinks is not None:
        if not 1 <= leaf_uplinks < radix:
            raise FabricError(f"leaf_uplinks: must be in 1..{radix - 1}, got {leaf_uplinks}",
                              field="leaf_uplinks")
        leaf = TierPorts(down=radix - leaf_uplinks, up=leaf_uplinks)
    else:
        leaf = split_ports(radix, oversubscription)
    su = su_hosts if su_hosts is not None else leaf.down
    if su < 1:
        raise FabricError(f"su_hosts: must be at least 1, got {su}", field="su_hosts")
    # A unit is built in full, so one larger than the cluster rounded up to whole leaves
    # would add leaves (and their spines and cables) that no host can ever reach.
    most = max(leaf.down, math.ceil(hosts / leaf.down) * leaf.down)
    if su > most:
        raise FabricError(
            f"su_hosts: {su:,} hosts per scalable unit for {hosts:,} hosts would build leaves "
            f"with no host on them; at most {most:,} (the hosts rounded up to whole leaves of "
            f"{leaf.down} down ports)", field="su_hosts")
    lpr = math.ceil(su / leaf.down)
    if su_hosts is not None and leaf_uplinks is None and su < leaf.down:
        # A unit smaller than the leaf: uplinks for the hosts a leaf carries at the asked
        # ratio, rounded up to a power of two so spine counts divide them.
        need = math.ceil(math.ceil(su / lpr) / oversubscription)
        leaf = TierPorts(down=leaf.down, up=min(leaf.up, 1 << max(0, math.ceil(math.log2(need)))))
    if tiers == 1:
        if su_hosts is not None and su < hosts:
            raise FabricError(
                f"su_hosts: one tier is one scalable unit, so it holds every host; {su:,} hosts "
                f"per unit for {hosts:,} hosts need `tiers` 2 (or leave `su_hosts` unset)",
                field="su_hosts")
        return one_tier(hosts=hosts, rails=rails, radix=radix, planes=planes, leaf=leaf, su=su)
    sus = math.ceil(hosts / su)
    leaves = sus * rails * lpr

    fits_two = leaves <= radix
    if tiers is None:
        tiers = 2 if fits_two else 3
    if tiers == 2:
        if not fits_two:
            per_leaf_hosts = su // lpr
            limit = radix // (rails * lpr) * su
            raise FabricError(
                f"two tiers hold at most {limit} hosts ({radix} leaves of {per_leaf_hosts} hosts) "
                f"at radix {radix}; {hosts} hosts need `tiers` 3 (or leave `tiers` unset)",
                field="tiers")
        low = math.ceil(leaves * leaf.up / radix)
        spines = smallest_divisor_at_least(leaf.up, max(low, min(min_spines, leaf.up)))
        assert spines is not None  # leaves <= radix guarantees low <= leaf.up
        parallel = leaf.up // spines
        return FabricShape(
            hosts=hosts, rails=rails, planes=planes, radix=radix, tiers=2, su_hosts=su, sus=sus,
            leaves_per_rail_su=lpr, leaf=leaf, spine=TierPorts(down=leaves * parallel, up=0),
            leaves_per_plane=leaves, spines_per_plane=spines, cores_per_plane=0, pods=1,
            sus_per_pod=sus, leaf_spine_parallel=parallel, core_group_size=0,
            spine_core_parallel=0,
        )

    if spine_uplinks is not None:
        if not 1 <= spine_uplinks < radix:
            raise FabricError(f"spine_uplinks: must be in 1..{radix - 1}, got {spine_uplinks}",
                              field="spine_uplinks")
        spine = TierPorts(down=radix - spine_uplinks, up=spine_uplinks)
    else:
        spine = split_ports(radix, spine_oversubscription, "spine_oversubscription")
    sus_per_pod = spine.down // (rails * lpr)
    if pod_sus is not None:
        if pod_sus > sus_per_pod:
            raise FabricError(
                f"pod_sus: {pod_sus}, but a pod spine's {spine.down} down ports hold "
                f"{sus_per_pod} SUs", field="pod_sus")
        sus_per_pod = pod_sus
    if sus_per_pod < 1:
        raise FabricError(
            f"a pod spine has {spine.down} down ports but one scalable unit needs {rails * lpr} "
            f"leaves; lower `su_hosts` or `spine_oversubscription`, or pick a higher-radix switch",
            field="su_hosts")
    pods = math.ceil(sus / sus_per_pod)
    if pods > radix:
        max_hosts = radix * sus_per_pod * su
        raise FabricError(
            f"{hosts} hosts need {pods} pods but three tiers at radix {radix} hold at most {radix} "
            f"pods ({max_hosts} hosts); use a higher-radix `switch`, more `oversubscription`, "
            f"or `dual_plane`", field="nodes")
    group = smallest_divisor_at_least(spine.up, math.ceil(pods * spine.up / radix))
    assert group is not None  # pods <= radix
    return FabricShape(
        hosts=hosts, rails=rails, planes=planes, radix=radix, tiers=3, su_hosts=su, sus=sus,
        leaves_per_rail_su=lpr, leaf=leaf, spine=spine, leaves_per_plane=leaves,
        spines_per_plane=pods * leaf.up, cores_per_plane=leaf.up * group, pods=pods,
        sus_per_pod=sus_per_pod, leaf_spine_parallel=1, core_group_size=group,
        spine_core_parallel=spine.up // group,
    )


def one_tier(*, hosts: int, rails: int, radix: int, planes: int, leaf: TierPorts,
             su: int) -> FabricShape:
    """A single switching tier for a cluster below one scalable unit.

    Hosts only use each leaf's ``leaf.down`` ports, so the ``leaf.up`` ports stay free and a
    full SU becomes two tiers by adding spines, without moving a host cable. When every rail of
    every host fits in one switch's down ports, the rails share it: one switch instead of
    ``rails`` (any GPU reaches any other in one hop, so rail alignment buys nothing here); it
    is split into a leaf per rail when the hosts outgrow it.
    """
    if hosts > leaf.down:
        raise FabricError(
            f"one tier holds at most {leaf.down} hosts (a leaf's down ports at radix {radix}); "
            f"{hosts} hosts need `tiers` 2 (or leave `tiers` unset)", field="tiers")
    shared = rails if hosts * rails <= leaf.down else 1
    leaves = rails // shared
    return FabricShape(
        hosts=hosts, rails=rails, planes=planes, radix=radix, tiers=1, su_hosts=su, sus=1,
        leaves_per_rail_su=1, leaf=TierPorts(down=leaf.down, up=0),
        spine=TierPorts(down=0, up=0), leaves_per_plane=leaves, spines_per_plane=0,
        cores_per_plane=0, pods=1, sus_per_pod=1, leaf_spine_parallel=1, core_group_size=0,
        spine_core_parallel=0, rails_per_leaf=shared,
    )
