"""lldpctl -f json / json0, on output captured from lldpd 1.0.16 in network namespaces."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from clusterwright.ingest.common import IngestError
from clusterwright.ingest.lldp import parse_lldp


def _copy(src: Path, dst: Path) -> Path:
    shutil.copyfile(src, dst)
    return dst


def test_switch_table_lists_every_neighbour_with_its_ifname_port(data: Path,
                                                                  tmp_path: Path) -> None:
    # a switch with several neighbours: "interface" is a list of one-key objects
    obs = parse_lldp(_copy(data / "lldp_leaf-su001-r1.json", tmp_path / "leaf-su001-r1.json"))
    seen = {(a.local_port, a.remote, a.remote_port) for a in obs.adjacencies}
    assert ("swp64s0", "spine-001", "swp1s0") in seen
    assert all(a.local == "leaf-su001-r1" for a in obs.adjacencies)
    host = next(a for a in obs.adjacencies if a.remote == "gpu00001")
    # hosts keep lldpd's default port id (the MAC): the name is the description
    assert host.remote_port == "osfp4p2" and host.remote_port_alt.count(":") == 5


def test_host_table_with_one_neighbour_is_an_object(data: Path, tmp_path: Path) -> None:
    obs = parse_lldp(_copy(data / "lldp_gpu00001.json", tmp_path / "gpu00001.json"))
    [a] = obs.adjacencies
    assert (a.local, a.local_port, a.remote, a.remote_port) == (
        "gpu00001", "osfp4p2", "leaf-su001-r1", "swp1s0")
    assert a.line == 4  # the line of the interface key


def test_json0_reads_like_json(data: Path, tmp_path: Path) -> None:
    obs = parse_lldp(_copy(data / "lldp_json0_spine-001.json", tmp_path / "spine-001.json"))
    assert {(a.local_port, a.remote, a.remote_port) for a in obs.adjacencies} == {
        ("swp1s0", "leaf-su001-r1", "swp64s0"), ("swp1s1", "leaf-su002-r1", "swp64s0")}


def test_no_neighbours_reports_the_device_and_nothing_else(data: Path, tmp_path: Path) -> None:
    obs = parse_lldp(_copy(data / "lldp_no_neighbours.json", tmp_path / "spine-009.json"))
    assert obs.adjacencies == []
    assert list(obs.reported.values()) == [{"spine-009": 1}]


def test_collection_object_keyed_by_device(data: Path, tmp_path: Path) -> None:
    doc = {"gpu00001": json.loads((data / "lldp_gpu00001.json").read_text()),
           "leaf-su001-r1": json.loads((data / "lldp_leaf-su001-r1.json").read_text())}
    p = tmp_path / "all.json"
    p.write_text(json.dumps(doc, indent=2))
    obs = parse_lldp(p)
    assert {a.local for a in obs.adjacencies} == {"gpu00001", "leaf-su001-r1"}
    leaf = [a for a in obs.adjacencies if a.local == "leaf-su001-r1"]
    assert min(a.line for a in leaf) > max(a.line for a in obs.adjacencies
                                           if a.local == "gpu00001")


def test_head_style_sections_and_a_directory_of_files(data: Path, tmp_path: Path) -> None:
    text = "".join(f"==> dumps/{n}.json <==\n" + (data / f"lldp_{n}.json").read_text()
                   for n in ("gpu00001", "leaf-su001-r1"))
    p = tmp_path / "lldp.txt"
    p.write_text(text)
    assert {a.local for a in parse_lldp(p).adjacencies} == {"gpu00001", "leaf-su001-r1"}
    d = tmp_path / "dir"
    d.mkdir()
    for n in ("gpu00001", "leaf-su001-r1"):
        _copy(data / f"lldp_{n}.json", d / f"{n}.json")
    assert {a.local for a in parse_lldp(d).adjacencies} == {"gpu00001", "leaf-su001-r1"}


def test_truncated_dump_names_file_and_line(data: Path, tmp_path: Path) -> None:
    text = (data / "lldp_leaf-su001-r1.json").read_text()
    p = tmp_path / "leaf.json"
    p.write_text(text[: len(text) // 2])
    with pytest.raises(IngestError, match=r"leaf\.json:\d+: truncated JSON"):
        parse_lldp(p)


def test_other_json_is_refused_as_unknown(tmp_path: Path) -> None:
    p = tmp_path / "x.json"
    p.write_text('{"hello": 1}\n')
    with pytest.raises(IngestError, match=r"x\.json:1: not `lldpctl -f json` output"):
        parse_lldp(p)


def test_entry_without_chassis_is_an_error_at_its_line(tmp_path: Path) -> None:
    p = tmp_path / "sw.json"
    p.write_text('{"lldp": {"interface": {\n "swp1": {"via": "LLDP"}\n}}}\n')
    with pytest.raises(IngestError, match=r"sw\.json:2: interface 'swp1'"):
        parse_lldp(p)


def test_line_is_the_interface_key_not_an_earlier_value_spelled_the_same(
        tmp_path: Path) -> None:
    # swp1's neighbour port is "swp2": swp2's line is that of the key, not of the value
    p = tmp_path / "sw.json"
    p.write_text(json.dumps({"lldp": {"interface": [
        {"swp1": {"chassis": {"leaf-a": {"id": {"type": "mac", "value": "0c:42:a1:00:00:01"}}},
                  "port": {"id": {"type": "ifname", "value": "swp2"}, "descr": "swp2"}}},
        {"swp2": {"chassis": {"leaf-b": {"id": {"type": "mac", "value": "0c:42:a1:00:00:02"}}},
                  "port": {"id": {"type": "ifname", "value": "swp1"}, "descr": "swp1"}}},
    ]}}, indent=2))
    lines = p.read_text().splitlines()
    obs = parse_lldp(p)
    assert [a.local_port for a in obs.adjacencies] == ["swp1", "swp2"]
    for a in obs.adjacencies:
        assert lines[a.line - 1].strip().startswith(f'"{a.local_port}":')


def test_interface_that_is_not_an_object_is_an_error_at_its_line(tmp_path: Path) -> None:
    p = tmp_path / "sw.json"
    p.write_text('{"lldp": {"interface": {\n "swp1": {"chassis": {"leaf-a": {}}, "port": {}},'
                 '\n "swp2": 7\n}}}\n')
    with pytest.raises(IngestError, match=r"sw\.json:3: interface 'swp2' is not an object"):
        parse_lldp(p)


def test_garbage_collection_is_back_on_after_a_parse_and_after_an_error(
        data: Path, tmp_path: Path) -> None:
    import gc

    assert gc.isenabled()
    parse_lldp(_copy(data / "lldp_gpu00001.json", tmp_path / "gpu00001.json"))
    assert gc.isenabled()
    p = tmp_path / "x.json"
    p.write_text('{"hello": 1}\n')
    with pytest.raises(IngestError):
        parse_lldp(p)
    assert gc.isenabled()
    gc.disable()
    try:  # a caller that turned it off keeps it off
        parse_lldp(_copy(data / "lldp_gpu00001.json", tmp_path / "gpu00001.json"))
        assert not gc.isenabled()
    finally:
        gc.enable()
