"""The ``sites:`` and ``multisite:`` sections of a scenario: training one job across sites.

Each site has its IT power (MW, required: a site without power hosts nothing) and its WAN link
to the others (Gb/s each way, one-way latency, packet loss, price per Gb/s per month; required
with two sites or more). ``multisite`` says how the sites synchronise (``sync``, ``diloco``,
``streaming``; ``plan/multisite`` and ``model/multisite``). With two or more sites the planner
splits each training workload over them, as many GPUs per site as the smallest site's power
holds, and reports the WAN bandwidth each site needs for 90/95/99 % utilization.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictStr

from clusterwright.errors import ScenarioError
from clusterwright.spec.numbers import INTEGER, FiniteFloat, NonNegativeFloat, PositiveFloat
from clusterwright.spec.yamlio import LoadedYaml, format_loc

if TYPE_CHECKING:
    from clusterwright.spec.scenario import Scenario

MAX_SITES = 64
MAX_SITE_MW = 10_000.0
MAX_WAN_GBPS = 1e6


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


class SiteSpec(_Strict):
    """One site of a multi-site training job."""

    name: Annotated[StrictStr, Field(min_length=1, max_length=128)]
    """The site's name."""
    power_mw: Annotated[PositiveFloat, Field(le=MAX_SITE_MW)]
    """IT power the site can give the job, MW."""
    wan_gbps: Annotated[PositiveFloat, Field(ge=1e-3, le=MAX_WAN_GBPS)] | None = None
    """WAN bandwidth to the other sites, Gb/s each way (required with two sites or more)."""
    latency_ms: Annotated[NonNegativeFloat, Field(le=1_000.0)] = 0.0
    """One-way WAN latency, milliseconds."""
    loss: Annotated[FiniteFloat, Field(ge=0.0, le=0.5)] = 0.0
    """WAN packet loss, as a fraction."""
    usd_per_gbps_month: Annotated[NonNegativeFloat, Field(le=1e6)] = 0.0
    """WAN price, USD per Gb/s per month."""


class MultisitePolicy(_Strict):
    """How the sites synchronise a training job."""

    method: Literal["sync", "diloco", "streaming"] = "diloco"
    """sync (data parallel every step), diloco, or streaming (Streaming DiLoCo)."""
    inner_steps: Annotated[int, INTEGER, Field(gt=0, le=100_000)] = 100
    """Steps between outer synchronisations (DiLoCo's H)."""
    bits: Annotated[FiniteFloat, Field(ge=1, le=32)] = 8.0
    """Bits per parameter on the WAN."""
    fragments: Annotated[int, INTEGER, Field(gt=0, le=1_024)] = 1
    """Streaming DiLoCo's parameter fragments."""
    overlap_steps: Annotated[NonNegativeFloat, Field(le=100_000)] = 0.0
    """Inner steps one fragment's exchange overlaps (Streaming DiLoCo)."""


def check_sites(sc: Scenario, doc: LoadedYaml | None) -> None:
    """Refuse sites that cannot join a job: with two sites or more, a site without a WAN link;
    a repeated site name. Names the field and its YAML line."""
    src = doc.path if doc is not None else "<scenario>"

    def where(loc: tuple[str | int, ...]) -> str:
        line = doc.line_of(loc) if doc is not None else None
        return format_loc(loc) + (f" (line {line})" if line else "")

    seen: set[str] = set()
    for i, s in enumerate(sc.sites):
        if s.name in seen:
            raise ScenarioError(f"{src}: {where(('sites', i, 'name'))}: site name {s.name!r} is "
                                "used twice")
        seen.add(s.name)
        if len(sc.sites) > 1 and s.wan_gbps is None:
            raise ScenarioError(
                f"{src}: {where(('sites', i))}: site {s.name!r} has no WAN link to the other "
                "sites; give sites[{i}].wan_gbps (Gb/s each way)".replace("{i}", str(i)))
    if len(sc.sites) > 1:
        for i, w in enumerate(sc.workloads):
            gpus = getattr(w, "gpus", None) if w.kind == "training" else None
            if gpus is not None and gpus % len(sc.sites):
                raise ScenarioError(
                    f"{src}: {where(('workloads', i, 'gpus'))}: {gpus} GPUs do not split "
                    f"evenly over the {len(sc.sites)} sites (each site runs an equal share)")
    pol = sc.multisite
    if pol.method == "streaming" and pol.overlap_steps > pol.inner_steps / pol.fragments:
        raise ScenarioError(
            f"{src}: {where(('multisite', 'overlap_steps'))}: {pol.overlap_steps:g} inner steps "
            f"exceed the {pol.inner_steps // pol.fragments} between two fragments' exchanges")
    if pol.method != "streaming":
        for name, v, default in (("fragments", pol.fragments, 1),
                                 ("overlap_steps", pol.overlap_steps, 0.0)):
            if v != default:
                raise ScenarioError(f"{src}: {where(('multisite', name))}: Streaming DiLoCo's, "
                                    f"with method streaming only (method is {pol.method})")
    if sc.multisite.method == "streaming" and sc.multisite.inner_steps % sc.multisite.fragments:
        raise ScenarioError(
            f"{src}: {where(('multisite', 'fragments'))}: {sc.multisite.fragments} fragments do "
            f"not divide {where(('multisite', 'inner_steps'))} = {sc.multisite.inner_steps}")
