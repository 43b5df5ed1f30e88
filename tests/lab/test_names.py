from __future__ import annotations

import pytest

from clusterwright.lab.names import (
    namespace_name,
    namespace_names,
    new_run_id,
    parse_namespace,
    run_id_pid,
)
from tests.lab.fabric import leaf_spine_spec


def test_run_id_carries_pid_and_tag() -> None:
    assert new_run_id(pid=4194304, tag="qz") == "cw4194304qz"
    assert run_id_pid("cw4194304qz") == 4194304


def test_run_ids_differ_within_one_process() -> None:
    ids = {new_run_id(pid=7) for _ in range(50)}
    assert len(ids) > 1


def test_bad_tag_is_rejected() -> None:
    with pytest.raises(ValueError, match="lowercase"):
        new_run_id(pid=1, tag="A1")


def test_long_device_names_map_to_short_positional_namespaces() -> None:
    spec = leaf_spine_spec(leaves=4, spines=2)
    names = namespace_names("cw12ab", spec)
    assert names["leaf-su1-r1"] == "cw12ab-s0"
    assert names["spine-2"] == "cw12ab-s5"
    assert names["node-004"] == "cw12ab-h3"
    assert len(set(names.values())) == len(names) == 10
    # Worst case (7-digit pid, 4-digit index) stays short enough for FRR's socket paths.
    assert len(namespace_name(new_run_id(pid=4194304, tag="zz"), "s", 9999)) <= 20


def test_parse_namespace_round_trips_and_ignores_foreign_names() -> None:
    parsed = parse_namespace("cw4711qz-h12")
    assert parsed is not None
    assert (parsed.run_id, parsed.pid, parsed.kind, parsed.index) == ("cw4711qz", 4711, "h", 12)
    for foreign in ("cw", "cw4711-s0", "cw4711qz-x1", "blue", "cw4711qzs0", "xcw4711qz-s0"):
        assert parse_namespace(foreign) is None
    assert run_id_pid("red") is None
