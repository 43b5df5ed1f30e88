"""Hostile values in a user catalog's serving-engine scheduling fields (``seq_overhead_s``,
``async_scheduling``, ``sync_versions``): ``serve estimate --catalog FILE`` must refuse what
the schema does not take, naming the field, and run what it takes (the largest host cost
included) without a traceback or an impossible number; the scheduling flags take no value."""

from __future__ import annotations

from pathlib import Path

import yaml

from clusterwright.catalog.registry import load_catalog
from tests.fuzz.harness import invoke, problems

ESTIMATE = ["serve", "estimate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--engine",
            "vllm@0.11.1", "--concurrency", "64", "--input-len", "256", "--output-len", "64",
            "--steady-only", "--json"]
REFUSED: dict[str, list[object]] = {
    "seq_overhead_s": [-1e-6, ".inf", ".nan", "1e400", 0.5, "fast", [1e-5], {"a": 1}],
    "async_scheduling": ["maybe", 2, [True], {"a": 1}],
    "sync_versions": ["0.11", [0.11], [["0.11"]], {"a": 1}],
}


def _catalog(tmp: Path, field: str, value: object) -> Path:
    entry = load_catalog().serving_engine("vllm").model_dump(mode="json")
    raw = isinstance(value, str) and value in (".inf", ".nan", "1e400")
    entry |= {"override": True, field: "RAW" if raw else value}
    text = yaml.safe_dump({"serving_engines": [entry]}, sort_keys=False)
    if raw:  # YAML scalars as a user writes them, not as a quoted string
        text = text.replace(f"{field}: RAW", f"{field}: {value}")
    f = tmp / "engine.yaml"
    f.write_text(text, encoding="utf-8")
    return f


def test_hostile_scheduling_fields_are_refused_by_name(tmp_path: Path) -> None:
    found = []
    for field, values in REFUSED.items():
        for bad in values:
            o = invoke(["--catalog", str(_catalog(tmp_path, field, bad)), *ESTIMATE])
            found += [f"{field}={bad!r}: {p}" for p in problems(o, must_refuse=True)]
            if o.exit_code == 2 and field not in o.stderr + o.stdout:
                found.append(f"{field}={bad!r}: the message does not name the field")
    assert not found, "\n".join(found)


def test_the_largest_host_cost_runs_cleanly(tmp_path: Path) -> None:
    o = invoke(["--catalog", str(_catalog(tmp_path, "seq_overhead_s", 0.01)), *ESTIMATE])
    assert o.exit_code == 0 and not problems(o), o.stderr[:500]


def test_the_scheduling_flags_take_no_value() -> None:
    for flag in ("--async-scheduling=yes", "--sync-scheduling=1"):
        o = invoke([*ESTIMATE, flag])
        assert not problems(o, must_refuse=True), o.stderr[:300]
