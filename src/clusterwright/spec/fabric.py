"""What a user asks of the fabric designer: how many servers of which kind, and the knobs.

Catalog ids are not resolved here (this layer does not know the catalog); the designer does
that and names the flag when an id is unknown. Numbers are strict (no booleans or strings),
finite, and bounded by the ``MAX_*`` constants below.
"""

from __future__ import annotations

import ipaddress
from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictStr,
    field_validator,
    model_validator,
)

from clusterwright.spec.numbers import (
    INTEGER,
    FiniteFloat,
    NonNegativeFloat,
    PositiveFloat,
)

# Bounds of a fabric request, far past any built cluster, so a typo cannot make the designer
# build millions of switches.
MAX_NODES = 131_072  # servers or racks: as many as the scenario planner's GPU limit
MAX_PORTS = 100_000  # hosts per unit, rails, uplinks
MAX_RACK_KW = 1_000.0
MAX_STORAGE_GBPS = 1_000.0  # GB/s read per GPU
MAX_STORAGE_UNITS = 100_000  # storage units: the storage planner's own bound (MAX_UNITS)
MIN_MTU, MAX_MTU = 1_500, 9_216  # Ethernet MTU, bytes: standard frames to jumbo frames

Ratio = Annotated[FiniteFloat, Field(ge=1.0, le=64.0)]
PositiveInt = Annotated[int, INTEGER, Field(gt=0, le=MAX_PORTS)]


class AddressPools(BaseModel):
    """IPv4 pools the addressing plan draws from. Each must be large enough for the design."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    loopbacks: StrictStr = "10.0.0.0/16"
    fabric_links: StrictStr = "10.64.0.0/10"  # backend /31s: leaf-spine then spine-core halves
    hosts: StrictStr = "10.128.0.0/9"  # backend NIC /31s, one block per leaf
    frontend_loopbacks: StrictStr = "172.16.0.0/19"
    frontend_links: StrictStr = "172.18.0.0/15"
    tenants: StrictStr = "172.20.0.0/14"
    oob: StrictStr = "172.24.0.0/13"

    @field_validator("*")
    @classmethod
    def _network(cls, v: str) -> str:
        try:
            net = ipaddress.IPv4Network(v, strict=True)
        except ValueError as e:
            raise ValueError(f"{v!r} is not an IPv4 network with its host bits zero ({e})") from e
        return str(net)


class FabricRequest(BaseModel):
    """Inputs of ``fabric design``. Oversubscription is down:up bandwidth at a tier (1 = 1:1)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    server: StrictStr
    # servers (or racks, for rack-scale systems such as GB200 NVL72)
    nodes: Annotated[int, INTEGER, Field(gt=0, le=MAX_NODES)]
    switch: StrictStr | None = None  # backend switch id; None = choose
    # "none": no backend fabric (every job fits one NVLink domain, so no GPU traffic leaves a
    # server); the backend is still sized, for the growth plan, but not built or bought.
    backend: Literal["rail", "none"] = "rail"
    protocol: Literal["infiniband", "ethernet"] | None = None  # None = what the switch speaks
    oversubscription: Ratio = 1.0  # leaf tier (down:up)
    spine_oversubscription: Ratio = 1.0  # spine tier towards the core (three tiers only)
    su_hosts: PositiveInt | None = None  # hosts per scalable unit; None = leaf down ports
    rails: PositiveInt | None = None  # use the first N backend rails per host (labs, partial)
    leaf_uplinks: PositiveInt | None = None  # uplinks per leaf; None = from oversubscription
    spine_uplinks: PositiveInt | None = None  # three tiers: pod spine uplinks (labs)
    pod_sus: PositiveInt | None = None  # three tiers: SUs per pod; None = as many as fit
    tiers: Annotated[Literal[1, 2, 3], INTEGER] | None = None  # None = fewest that fit
    dual_plane: StrictBool = False  # each NIC's two ports (or halves) to leaves in different planes
    frontend_switch: StrictStr | None = None
    oob_switch: StrictStr | None = None
    # GB/s; None = catalog assumption
    storage_read_gbps_per_gpu: Annotated[NonNegativeFloat, Field(le=MAX_STORAGE_GBPS)] | None = None
    # GB/s of the designed storage tier (design/storage_plan.py), read or write whichever is
    # larger; sizes the storage targets and frontend uplinks instead of the per-GPU figures.
    storage_tier_gbps: Annotated[NonNegativeFloat, Field(le=1e7)] | None = None
    # The designed storage tier's units (a catalog storage system, design/storage_plan.py):
    # each unit is a frontend device with the system's ports, port rate, rack units and
    # power, wired, racked and on the BOM as the storage plan bought it. None: storage
    # targets sized from the bandwidth alone (the frontend's link rate, no part).
    storage_system: StrictStr | None = None
    storage_units: Annotated[int, INTEGER, Field(ge=1, le=MAX_STORAGE_UNITS)] | None = None
    # EVPN tenants on the frontend; each gets VLAN 100 + n, which must stay within 802.1Q's 4094
    tenants: Annotated[int, INTEGER, Field(ge=1, le=3994)] = 4
    rack_kw: Annotated[PositiveFloat, Field(le=MAX_RACK_KW)] = 40.0
    cooling: Literal["air", "liquid"] = "air"
    racks_per_row: PositiveInt | None = None  # None = one scalable unit per row
    pools: AddressPools = Field(default_factory=AddressPools)
    # Lossless Ethernet (PFC) headroom: the backend ports' MTU (bytes) and how many priorities
    # are lossless (SONiC's default enables PFC on priorities 3 and 4). RoCE fabrics only.
    mtu: Annotated[int, INTEGER, Field(ge=MIN_MTU, le=MAX_MTU)] = MAX_MTU
    lossless_priorities: Annotated[int, INTEGER, Field(ge=0, le=8)] = 2

    @model_validator(mode="after")
    def _oversubscribed_two_tier(self) -> FabricRequest:
        if self.tiers == 2 and self.spine_oversubscription != 1.0:
            raise ValueError("spine_oversubscription applies to three tiers; tiers is 2")
        if self.leaf_uplinks is not None and self.oversubscription != 1.0:
            raise ValueError("give leaf_uplinks or oversubscription, not both")
        if (self.storage_system is None) != (self.storage_units is None):
            raise ValueError("give storage_system and storage_units together (the units of one "
                             "catalog storage system)")
        return self
