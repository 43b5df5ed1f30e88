"""The state one scenario plan carries through its stages: the scenario, the catalog, the resolved
models, progress reporting, stage timings and notes."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from clusterwright.catalog.registry import Catalog
from clusterwright.catalog.schema import ModelArch
from clusterwright.spec.scenario import (
    Scenario,
)

Progress = Callable[[str, int, int], None]


TIMELINE_DAYS = 7.0


MAX_TIMELINE_EVENTS = 1000


MAX_CHECKPOINT_EVENTS = 300


CURVE_LOADS = (0.25, 0.5, 0.75, 0.9, 1.0, 1.15)  # fractions of one replica's SLO capacity


def no_progress(stage: str, done: int, total: int) -> None:
    return None


@dataclass
class PlanRun:
    scenario: Scenario
    cat: Catalog
    models: dict[str, ModelArch]
    quick: bool
    progress: Progress
    timings: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    # Layout searches already run, by (workload, GPU, GPU count): the decisions stage reads
    # the runners-up from them instead of searching again.
    searches: dict[tuple[str, str, int], Any] = field(default_factory=dict)
    # Engine-sized inference workloads' chosen deployments, by (workload, GPU): the latency
    # curves simulate them again at other loads.
    deployments: dict[tuple[str, str], Any] = field(default_factory=dict)

    @contextmanager
    def timed(self, stage: str) -> Iterator[None]:
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.timings[stage] = self.timings.get(stage, 0.0) + time.perf_counter() - t0
