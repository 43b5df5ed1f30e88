"""ibnetdiscover topology text (ibnetdiscover(8); rdma-core's ibnetdiscover.c)."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterwright.ingest.common import IngestError
from clusterwright.ingest.ibnet import node_name, parse_ibnet, rate_gbps


def test_links_from_both_ends_with_names_ports_and_rates(data: Path) -> None:
    obs = parse_ibnet(data / "ibnetdiscover.txt")
    sw = {(a.local, a.local_port, a.remote, a.remote_port, a.speed_gbps)
          for a in obs.adjacencies if a.local == "leaf-su001-r1"}
    assert ("leaf-su001-r1", "1", "gpu00001", "mlx5_0", 400.0) in sw
    assert ("leaf-su001-r1", "2", "gpu00002", "mlx5_0", 200.0) in sw  # 4xHDR
    assert ("leaf-su001-r1", "33", "spine-001", "1", 400.0) in sw
    ca = [a for a in obs.adjacencies if a.local == "gpu00001"]
    assert [(a.local_port, a.local_port_alt, a.remote, a.remote_port) for a in ca] == [
        ("mlx5_0", "mlx5_0/1", "leaf-su001-r1", "1")]
    assert len(obs.adjacencies) == 8  # four links, each printed at both ends


def test_node_descriptions() -> None:
    assert node_name("MF0;leaf-su001-r1:MQM9700/U1", "S") == ("leaf-su001-r1", "")
    assert node_name("spine-7", "S") == ("spine-7", "")
    assert node_name("gpu00001 mlx5_11", "H") == ("gpu00001", "mlx5_11")
    assert rate_gbps("4", "NDR") == 400.0 and rate_gbps("2", "XDR") == 400.0
    assert rate_gbps("4", "???") is None


def test_truncated_port_line_names_its_line(data: Path, tmp_path: Path) -> None:
    lines = (data / "ibnetdiscover.txt").read_text().splitlines()
    p = tmp_path / "ib.txt"
    p.write_text("\n".join(lines[:12]) + '\n[34]\t"S-fc6a1c0300e5f200"[1]\t\t# "MF0;sp\n')
    with pytest.raises(IngestError, match=r"ib\.txt:13: port comment without"):
        parse_ibnet(p)


def test_not_ibnetdiscover(tmp_path: Path) -> None:
    p = tmp_path / "x.txt"
    p.write_text("hello world\n")
    with pytest.raises(IngestError, match=r"x\.txt:1: not ibnetdiscover output"):
        parse_ibnet(p)
    p.write_text("# only comments\n")
    with pytest.raises(IngestError, match="no Switch or Ca lines"):
        parse_ibnet(p)


def test_hcas_with_their_firmware_description_are_unidentified(data: Path,
                                                              tmp_path: Path) -> None:
    """Without rdma-ndd an HCA reports "MT4129 ConnectX7 Mellanox Technologies": that names
    no host. Each such HCA becomes an unidentified device of its own GUID (before, all of
    them were one device "MT4129", and every cable read as landing on it)."""
    text = (data / "ibnetdiscover.txt").read_text().replace(
        '"gpu00001 mlx5_0"', '"MT4129 ConnectX7   Mellanox Technologies"').replace(
        '"gpu00002 mlx5_0"', '"MT4129 ConnectX7   Mellanox Technologies"')
    p = tmp_path / "ib.txt"
    p.write_text(text)
    obs = parse_ibnet(p)
    far = {a.remote for a in obs.adjacencies if a.local == "leaf-su001-r1"
           and a.remote_port != "" and a.remote.startswith("unidentified")}
    assert far == {"unidentified HCA 0002c903000a1b01", "unidentified HCA 0002c903000a1c01"}
    assert far <= obs.unidentified


def test_a_byte_order_mark_is_not_part_of_the_dump(data: Path, tmp_path: Path) -> None:
    p = tmp_path / "ib.txt"
    p.write_bytes(b"\xef\xbb\xbf" + (data / "ibnetdiscover.txt").read_bytes())
    assert len(parse_ibnet(p).adjacencies) == 8
