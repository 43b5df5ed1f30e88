"""The ``cluster:`` section of a scenario: what the cluster is besides what the workloads need.

An architect states three things the workloads do not imply:

- ``gpus``: a fixed size ("we have 1,024 GPUs"). The planner fits the workloads and the spares
  into it and reports what is idle, or which workload does not fit and by how much.
- ``spares``: whole servers kept powered, wired and idle, to take over from a server that
  fails (hot spares; BLOOM-176B kept 4 spare nodes beside 48, Jean Zay, 2022). They are
  bought, racked, cabled and priced like the rest, and the plan says whether they cover the
  failures the reliability model expects during one repair time. Unset, a cluster the planner
  sizes for a training job whose deadline waiting for repairs would miss gets the spares that
  cover its node repairs 99 % of the time (the time to train assumes a failed node is
  replaced at once); ``0`` buys none.
- ``headroom``: serving capacity above the peak, as a fraction of the replicas the SLOs need,
  rounded up to whole replicas; any positive value adds at least one (N+1), ``1.0`` doubles
  the pool (2N).

Shape is checked here, the cross-section contradictions (a fixed size below a workload's
GPUs, spares filling the whole cluster) by ``check_cluster`` with both field paths and their
YAML lines; the catalog-aware ones (size not a multiple of the server's GPUs) by
``catalog.references.resolve``; the model-aware ones (below the memory minimum) by
``plan.cluster`` at plan time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from pydantic import BaseModel, ConfigDict, Field

from clusterwright.errors import ScenarioError
from clusterwright.spec.numbers import INTEGER, Fraction
from clusterwright.spec.yamlio import LoadedYaml, format_loc

if TYPE_CHECKING:
    from clusterwright.spec.scenario import Scenario

# The scenario's largest workload (spec.scenario.MAX_GPUS, the training planner's limit);
# repeated here because scenario.py imports this module.
MAX_CLUSTER_GPUS = 131_072
# Spare servers: as many as ``ops reliability --hot-spares`` takes (cli/limits.HOT_SPARES).
MAX_SPARES = 10_000


class Cluster(BaseModel):
    """The cluster as built: an optional fixed size, spare servers and serving headroom.
    ``gpus`` counts every GPU bought, spares included; ``spares`` counts servers. For a
    1,024-GPU cluster of eight-GPU servers with four hot spares and N+1 serving pools, write
    ``cluster: {gpus: 1024, spares: 4, headroom: 0.01}``: 992 GPUs are left for work."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    gpus: Annotated[int, INTEGER, Field(gt=0, le=MAX_CLUSTER_GPUS)] | None = Field(
        None, description=(
            "Fixed cluster size in GPUs, spare servers included; a whole number of the "
            "chosen server. The planner fits the workloads into it and reports idle GPUs or "
            "what does not fit. Unset: the cluster is sized to the workloads."))
    spares: Annotated[int, INTEGER, Field(ge=0, le=MAX_SPARES)] | None = Field(
        None, description=(
            "Spare servers kept idle to replace failed ones (hot spares), whole servers. "
            "Bought, racked, cabled and priced; the plan says how often they cover the node "
            "failures expected during one repair time. Unset: when waiting for repairs would "
            "take a training job past its deadline_days, a cluster the planner sizes gets the "
            "fewest spares that cover 99 % of the job's repair windows (none for a fixed "
            "cluster.gpus, a job without a deadline, or serving alone); 0 buys none."))
    headroom: Fraction = Field(
        0.0, description=(
            "Serving capacity above the peak, as a fraction of the replicas the SLOs need "
            "(0..1), rounded up to whole replicas per inference workload: any positive "
            "value adds at least one replica (N+1); 1.0 doubles the pool (2N)."))

    @property
    def given(self) -> bool:
        """Whether the scenario asks anything of the cluster beyond the workloads."""
        return self.gpus is not None or bool(self.spares) or self.headroom > 0

    @property
    def fixed_spares(self) -> int:
        """The spare servers the scenario states, 0 when it leaves them to the planner."""
        return self.spares or 0


def where(doc: LoadedYaml | None, loc: tuple[str | int, ...]) -> str:
    """``path (line N)`` for a field of the scenario, the line when ``doc`` knows it."""
    line = doc.line_of(loc) if doc is not None else None
    return format_loc(loc) + (f" (line {line})" if line else "")


def check_cluster(sc: Scenario, doc: LoadedYaml | None) -> None:
    """Refuse a ``cluster`` section that contradicts the workloads, naming both fields and
    their lines: a fixed size below one workload's GPUs or the fixed GPUs of the training
    jobs together, or spares (servers of at least one GPU) filling the fixed size."""
    size = sc.cluster.gpus
    if size is None:
        return
    src = doc.path if doc is not None else "<scenario>"
    at = where(doc, ("cluster", "gpus"))
    spares = sc.cluster.fixed_spares
    if spares >= size:
        raise ScenarioError(
            f"{src}: {where(doc, ('cluster', 'spares'))}: {spares:,} spare servers "
            f"leave no GPU for work in {at} = {size:,} GPUs; lower the spares or raise the size")
    fixed: list[tuple[int, int]] = []
    for i, w in enumerate(sc.workloads):
        n = getattr(w, "gpus", None)
        if n is None:
            continue
        if n > size:
            raise ScenarioError(
                f"{src}: {at}: the fixed size of {size:,} GPUs is below "
                f"{where(doc, ('workloads', i, 'gpus'))} = {n:,} GPUs of {w.name!r}; raise "
                "the size or lower the workload's GPUs")
        if w.kind == "training":
            fixed.append((i, n))
    if len(fixed) > 1 and sum(n for _, n in fixed) > size:
        parts = " + ".join(f"{where(doc, ('workloads', i, 'gpus'))} = {n:,}" for i, n in fixed)
        raise ScenarioError(
            f"{src}: {at}: the fixed size of {size:,} GPUs is below the training jobs that "
            f"run side by side: {parts} = {sum(n for _, n in fixed):,} GPUs")
