"""What a scenario says about prices: the price of a server it was quoted (``prices:``) and how
it rents in the cloud (``cloud:``: a provider, a term, or one offer).

Ids are not resolved here (this layer does not know the catalog):
``catalog.references.resolve`` checks them and names the YAML line.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictStr, model_validator

from clusterwright.spec.numbers import PositiveFloat

MAX_SERVER_USD = 1e9  # one server or rack system (a GB200 NVL72 rack is ~$3M)
MAX_PRICED_SERVERS = 100
MAX_ID_CHARS = 128

# on_demand: the hourly rate for the hours used; committed: the offer's committed rate as the
# catalog names its commitment (a capacity block, a reserved contract), paid every hour;
# 1y / 3y: a committed rate the catalog tags with that term.
Term = Literal["on_demand", "committed", "1y", "3y"]
TERMS: tuple[str, ...] = ("on_demand", "committed", "1y", "3y")

_Id = Annotated[StrictStr, Field(min_length=1, max_length=MAX_ID_CHARS)]
ServerUsd = Annotated[PositiveFloat, Field(le=MAX_SERVER_USD)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


class Prices(_Strict):
    """Prices the scenario was quoted, in USD; they replace the catalog's (which may be
    estimates) and are listed in the blueprint as given, not sourced."""

    server_usd: Annotated[dict[_Id, ServerUsd], Field(max_length=MAX_PRICED_SERVERS)] = Field(
        default_factory=dict)
    """USD per server (or rack system) catalog id, e.g. {dgx-h100: 350000}: a quote replaces
    the catalog's price and is shown as given."""


class CloudPolicy(_Strict):
    """Which cloud offer prices the rental: the cheapest matching one by default, or one
    provider's cheapest, or one offer; at the on-demand rate or a committed term."""

    provider: _Id | None = None
    """Rent from this provider's cheapest matching offer (the catalog's provider name, any
    case: "aws", "lambda"). Unset: the cheapest offer of any provider."""
    offer: _Id | None = None
    """Rent this catalog cloud offer (instead of a provider)."""
    term: Term = "on_demand"
    """on_demand (hourly, for the hours used), committed (the offer's committed rate, paid
    every hour), or 1y / 3y (a committed rate the catalog tags with that term)."""

    @model_validator(mode="after")
    def _one_way(self) -> CloudPolicy:
        if self.provider is not None and self.offer is not None:
            raise ValueError("give provider or offer, not both (an offer names its provider)")
        return self
