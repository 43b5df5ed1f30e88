"""Which GPUs and servers a scenario plan evaluates."""

from __future__ import annotations

from clusterwright.catalog.registry import Catalog
from clusterwright.catalog.schema import Gpu, Server
from clusterwright.design.train import server_for
from clusterwright.errors import InputError
from clusterwright.plan import serving_replica
from clusterwright.spec.scenario import (
    InferenceWorkload,
    Scenario,
)


def candidate_gpus(scenario: Scenario, cat: Catalog) -> list[Gpu]:
    """The GPUs to evaluate: ``constraints.gpus``, or with "choose" every catalog GPU that a
    catalog server carries (limited to ``constraints.servers`` when given) and, when the
    scenario serves a model without naming its engine, that a serving calibration covers
    (an engine-sized workload is sized on any GPU)."""
    c = scenario.constraints
    if isinstance(c.gpus, list):
        return [cat.gpu(g) for g in c.gpus]
    allowed = {cat.server(s).gpu for s in c.servers} if c.servers else None
    serves = any(isinstance(w, InferenceWorkload) and w.engine is None
                 for w in scenario.workloads)
    out = []
    for g in cat.all("gpus"):
        if allowed is not None and g.id not in allowed:
            continue
        if server_for(cat, g) is None:
            continue
        if serves and serving_replica.serving_stack(cat, g.id) is None:
            continue
        out.append(g)
    if not out:
        raise InputError("constraints.gpus: 'choose' found no catalog GPU with a server "
                         "(and a serving calibration) among the allowed servers")
    return out


def server_among(cat: Catalog, gpu: Gpu, allowed: list[str] | None) -> Server | None:
    if allowed:
        return next((cat.server(s) for s in allowed if cat.server(s).gpu == gpu.id), None)
    return server_for(cat, gpu)
