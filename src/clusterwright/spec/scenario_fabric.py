"""The scenario's ``fabric:`` section: what an architect decides about the backend network.

Every field is optional; left out, the planner decides and says why (``decisions`` in the
blueprint). Catalog ids are checked against the catalog, and contradictions between fields
(an Ethernet switch with ``protocol: infiniband``) are refused with both field paths and
their lines, in ``catalog/references.py``.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictStr

from clusterwright.spec.fabric import MAX_PORTS, Ratio
from clusterwright.spec.numbers import INTEGER

MAX_SWITCH_ID_CHARS = 128  # as scenario ids (spec.scenario.MAX_ID_CHARS)


class FabricSection(BaseModel):
    """Backend fabric choices. Oversubscription is the leaf tier's down:up bandwidth (1 = 1:1,
    non-blocking); ``su_hosts`` is hosts (servers, or trays of a rack-scale system) per
    scalable unit."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    protocol: Literal["infiniband", "ethernet"] | None = None  # None: the switch's
    switch: Annotated[StrictStr, Field(min_length=1, max_length=MAX_SWITCH_ID_CHARS)] | None \
        = None  # backend switch catalog id; None: the most ports at the NIC speed
    su_hosts: Annotated[int, INTEGER, Field(gt=0, le=MAX_PORTS)] | None = None
    oversubscription: Ratio | None = None  # None: 1 (non-blocking, as the SuperPOD RA)
