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

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    protocol: Literal["infiniband", "ethernet"] | None = None
    """Backend protocol: infiniband or ethernet (RoCE). Unset: the chosen switch's."""
    switch: Annotated[StrictStr, Field(min_length=1, max_length=MAX_SWITCH_ID_CHARS)] | None \
        = None
    """Backend switch (catalog id). Unset: the catalog switch with the most ports at the NIC
    speed (of the protocol, when given)."""
    su_hosts: Annotated[int, INTEGER, Field(gt=0, le=MAX_PORTS)] | None = None
    """Hosts (servers, or trays of a rack-scale system) per scalable unit. Unset: what one
    leaf per rail holds (32 DGX H100, as the SuperPOD RA)."""
    oversubscription: Ratio | None = None
    """Leaf down:up bandwidth of the backend (1 = non-blocking). Unset: 1, as the SuperPOD
    RA."""
