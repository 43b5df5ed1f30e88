"""The shipped examples (``examples/<name>/scenario.yaml``) offered as starting points.

Examples are not package data: they are found in the source tree the package runs from
(``src/clusterwright/web/`` -> the repository's ``examples/``). An installed wheel has none,
and the home page says so. A name from a request is only ever a key of this listing: no
request text is joined into a path.
"""

from __future__ import annotations

import functools
from pathlib import Path

EXAMPLES_DIR = Path(__file__).resolve().parents[3] / "examples"


@functools.cache
def shipped_examples(root: Path = EXAMPLES_DIR) -> dict[str, Path]:
    """Example name (its directory) -> its scenario.yaml, sorted by name; empty if none."""
    if not root.is_dir():
        return {}
    return {p.parent.name: p for p in sorted(root.glob("*/scenario.yaml")) if p.is_file()}


def example_text(name: str) -> str | None:
    """The YAML text of example ``name``, or None if there is no such example."""
    path = shipped_examples().get(name)
    return path.read_text(encoding="utf-8") if path is not None else None
