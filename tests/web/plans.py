"""Plan functions for the web tests, importable by the run's child process (a run's plan
function is sent to the child by reference, so a test's monkeypatch would not reach it).

The gate file's path travels in the scenario's description: the fork server that starts
children keeps the environment it started with."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from clusterwright.design.blueprint import Blueprint
from clusterwright.plan.scenario import plan_scenario


def gated_plan(scenario: Any, cat: Any, *, progress: Any, source: str, quick: bool = False
               ) -> Blueprint:
    """Report progress, then wait until the file named by the description exists."""
    gate = Path(scenario.description)
    progress("sizing", 0, 1)
    while not gate.exists():
        time.sleep(0.02)
    return plan_scenario(scenario, cat, progress=progress, source=source, quick=quick)


def hanging_plan(scenario: Any, cat: Any, *, progress: Any, source: str,
                 quick: bool = False
               ) -> Blueprint:
    """Never finishes (the run time limit must stop it)."""
    progress("sizing", 0, 1)
    time.sleep(3600)
    raise AssertionError("unreachable")
