"""``plan_to_dir``: the one pipeline from a scenario to a blueprint on disk.

``clusterwright plan``, ``clusterwright runs plan`` and the web worker all call it, so the
three cannot drift: the same resolution of catalog ids, the same plan, the same artifacts and
the same JSON (NaN/inf as null, numpy as plain numbers) stored and printed.

Writing the artifacts is the export layer's work, which sits above this one: the face hands
its writer in (``export.blueprint.write_blueprint``), and this module never imports upward.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from clusterwright.catalog.references import resolve
from clusterwright.catalog.registry import Catalog
from clusterwright.design.blueprint import Blueprint
from clusterwright.design.fabric import Fabric
from clusterwright.errors import InputError
from clusterwright.jsonsafe import jsonable
from clusterwright.plan.context import Progress
from clusterwright.plan.scenario import plan_scenario
from clusterwright.spec.scenario import Scenario
from clusterwright.spec.yamlio import LoadedYaml, parse_loc

SECTIONS = frozenset(Scenario.model_fields)  # top-level keys of a scenario file


class Writer(Protocol):
    """What writes a blueprint's artifacts (``export.blueprint.write_blueprint``)."""

    def __call__(self, bp: Blueprint, fab: Fabric | None, out: Path,
                 force: bool = ...) -> list[str]: ...


@dataclass(frozen=True)
class PlanOutput:
    """A planned scenario written to ``out``: the blueprint, the files written (relative to
    ``out``) and the JSON-ready blueprint and metrics that were written and are stored."""

    blueprint: Blueprint
    out: Path
    files: list[str]
    data: dict[str, Any]
    metrics: dict[str, Any]


# A field path of the scenario named inside a message: a top-level section's field
# (``cluster.gpus``, ``constraints.servers[0]``) or a workload's (``workloads[2].model``),
# not one already followed by its line.
_FIELD = re.compile(r"\b(?:workloads\[\d+\]|" + "|".join(sorted(SECTIONS)) + ")"
                    r"(?:\.[a-z_]+|\[\d+\])+(?![\w\[]|\.[a-z_])(?! \(line)")


def at_line(exc: InputError, doc: LoadedYaml | None) -> InputError:
    """A scenario field error with the file and YAML line of the field it names, and the
    line of every other scenario field its message names (a contradiction names two)."""
    if doc is None or not exc.field:
        return exc
    loc = parse_loc(exc.field)
    if not loc or loc[0] not in SECTIONS:
        return exc  # not a scenario field (a stack's or catalog's): nothing to point at
    line = _line(doc, loc)
    msg = str(exc).removeprefix(f"{exc.field}: ")

    def with_line(m: re.Match[str]) -> str:
        n = _line(doc, parse_loc(m.group(0)))
        return m.group(0) + (f" (line {n})" if n else "")

    msg = _FIELD.sub(with_line, msg)
    where = f"{doc.path}: {exc.field}" + (f" (line {line})" if line else "")
    return InputError(f"{where}: {msg}", field=exc.field)


def _line(doc: LoadedYaml, loc: tuple[str | int, ...]) -> int | None:
    # The deepest prefix of ``loc`` the file has; never the document's own first line.
    while loc:
        if loc in doc.lines:
            return doc.lines[loc]
        loc = loc[:-1]
    return None


def plan_to_dir(scenario: Scenario, cat: Catalog, out: Path, progress: Progress | None = None,
                *, write: Writer, source: str, doc: LoadedYaml | None = None, quick: bool = False,
                force: bool = False,
                plan: Callable[..., Blueprint] = plan_scenario) -> PlanOutput:
    """Plan ``scenario`` and write its artifacts under ``out`` with ``write``.

    Unknown catalog ids are refused first (with their YAML line when ``doc`` is given), and a
    field error raised while planning names the field's line. ``quick`` trims simulation
    sizes as in sweeps; ``plan`` is the planner (tests hand in a slow or failing one).
    Raises InputError/ScenarioError for bad input, OSError when ``out`` cannot be written.
    """
    resolve(scenario, cat, doc)
    try:
        bp = plan(scenario, cat, progress=progress, quick=quick, source=source)
    except InputError as exc:
        raise at_line(exc, doc) from None
    files = write(bp, bp.fabric_design, out, force=force)
    return PlanOutput(bp, out, files, jsonable(bp.to_dict()), jsonable(dict(bp.metrics())))
