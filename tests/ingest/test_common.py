"""Reading dumps: chunks per device, bounded files, special files refused."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from clusterwright.ingest.common import IngestError, Names, read_dump, split_chunks


def test_pdsh_and_head_sections() -> None:
    chunks = split_chunks("a1: x\nb2: y\na1: z\n", "f")
    assert [(c.device, [t for _, t in c.lines]) for c in chunks] == [
        ("a1", ["x", "z"]), ("b2", ["y"])]
    chunks = split_chunks("==> d/h1.json <==\n{}\n==> d/h2.json <==\n{}\n", "f")
    assert [(c.device, c.first_line) for c in chunks] == [("h1", 2), ("h2", 4)]
    [one] = split_chunks("plain\ntext: with colon\n", "f")
    assert one.device is None


def test_special_files_are_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(IngestError, match="not a regular file"):
        read_dump(fifo, "LLDP dump")
    with pytest.raises(IngestError, match="a directory"):
        read_dump(tmp_path, "LLDP dump")
    with pytest.raises(IngestError, match="no such file"):
        read_dump(tmp_path / "nope", "LLDP dump")


def test_names_resolve_case_and_domain() -> None:
    n = Names({"leaf-su001-r1", "gpu00001"})
    assert n.resolve("LEAF-SU001-R1") == "leaf-su001-r1"
    assert n.resolve("gpu00001.dc1.example.com") == "gpu00001"
    assert n.resolve("other") is None
