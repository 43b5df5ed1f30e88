"""Hostile values in a user catalog's per-part rate constants: a GPU's power-limited
``matrix_rate``, a server's (the cap it puts on its GPU modules) and a stack's ZeRO-3
``features.zero3_fetch_s``. ``train estimate --catalog
FILE`` must refuse what the schema does not take, naming the field, and run the largest value
it takes without a traceback or an impossible number."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from clusterwright.catalog.registry import load_catalog
from tests.fuzz.harness import invoke, problems

RAW = (".inf", "-.inf", ".nan", "1e400")
HOSTILE: list[object] = [-1, -1e-9, 2, 10**12, *RAW, "fast", True, [0.9], {"a": 1}, None]


def _estimate(gpu: str, server: str | None = None) -> list[str]:
    return ["train", "estimate", "--model", "llama-2-7b", "--gpu", gpu, "--gpus", "8",
            "--seq-len", "2048", "--global-batch", "64", "--zero", "3", "--json",
            *(["--server", server] if server else [])]


def _file(tmp: Path, kind: str, entry: dict[str, Any], path: list[str], value: object) -> Path:
    node = entry
    for key in path[:-1]:
        node = node[key]
    raw = isinstance(value, str) and value in RAW
    node[path[-1]] = "RAW" if raw else value
    text = yaml.safe_dump({kind: [entry | {"override": True}]}, sort_keys=False)
    if raw:  # as a user writes the scalar, not a quoted string
        text = text.replace(f"{path[-1]}: RAW", f"{path[-1]}: {value}")
    f = tmp / f"{kind}.yaml"
    f.write_text(text, encoding="utf-8")
    return f


# (catalog kind, entry id, path to the field, GPU to estimate on, server (None: the GPU's
# own), largest legal value, values refused besides HOSTILE: a matrix rate of 0 is no part; a
# fetch cost of 0 is the default). A server's rate may be null: the GPU's own.
CASES = [
    ("gpus", "mi300x", ["matrix_rate"], "mi300x", None, 1.5, [0]),
    ("servers", "hpe-ex254n-gh200", ["matrix_rate"], "gh200-96gb", "hpe-ex254n-gh200", 1.5,
     [0]),
    ("stacks", "gaudi-2024", ["features", "zero3_fetch_s"], "gaudi3", None, 1.0, []),
]


def test_hostile_rate_constants_are_refused_by_name(tmp_path: Path) -> None:
    cat = load_catalog()
    found = []
    for kind, entry_id, path, gpu, server, _, extra in CASES:
        optional = kind == "servers"
        for bad in [v for v in (*HOSTILE, *extra) if not (optional and v is None)]:
            entry = cat.get(kind, entry_id).model_dump(mode="json")
            o = invoke(["--catalog", str(_file(tmp_path, kind, entry, path, bad)),
                        *_estimate(gpu, server)])
            found += [f"{path[-1]}={bad!r}: {p}" for p in problems(o, must_refuse=True)]
            if o.exit_code == 2 and path[-1] not in o.stderr + o.stdout:
                found.append(f"{path[-1]}={bad!r}: the message does not name the field")
    assert not found, "\n".join(found)


def test_the_largest_legal_rate_constants_run_cleanly(tmp_path: Path) -> None:
    cat = load_catalog()
    for kind, entry_id, path, gpu, server, top, _ in CASES:
        entry = cat.get(kind, entry_id).model_dump(mode="json")
        o = invoke(["--catalog", str(_file(tmp_path, kind, entry, path, top)),
                    *_estimate(gpu, server)])
        assert o.exit_code == 0 and not problems(o), (path, o.stderr[:500])
