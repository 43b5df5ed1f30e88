"""InfiniBand topology: the text that ``ibnetdiscover`` prints (infiniband-diags, rdma-core).

Format (ibnetdiscover(8), "TOPOLOGY FILE FORMAT", and rdma-core's
infiniband-diags/ibnetdiscover.c, which prints it): a header of ``#`` comments, then one
block per node: ``vendid=``/``devid=``/``sysimgguid=`` lines, ``switchguid=`` or
``caguid=``/``rtguid=``, the node line, then one line per connected port::

    Switch  64 "S-0002c90300000001"     # "leaf-su001-r1" enhanced port 0 lid 1 lmc 0
    [1]     "H-0002c90300001000"[1](2c90300001001)      # "gpu00001 mlx5_0" lid 12 4xNDR
    [33]    "S-0002c903000000ff"[1]     # "spine-001" lid 5 4xNDR

    Ca      1 "H-0002c90300001000"      # "gpu00001 mlx5_0"
    [1](2c90300001001)      "S-0002c90300000001"[1]     # lid 12 lmc 0 "leaf-su001-r1" lid 1 4xNDR

A port line is ``[local port](port guid)`` (the guid only on a CA), a tab, the remote node
``"S-<guid>"``/``"H-<guid>"``/``"R-<guid>"``, ``[remote port]``, optionally ``[ext N]``
and, for a CA remote, its port guid; the comment gives the remote node description, its
LID, and the active width and speed (``4xNDR``; ``-f`` adds ``s= w= v=``).

Names: a switch's NodeDescription is its name, or NVIDIA's ``MF0;<hostname>:<model>/U1``
(the hostname is taken); a CA's is ``<hostname> <device>`` (rdma-core sets it so), so a host
port is named by its HCA (``mlx5_0``) and mapped to a cabling port by the twin.

Rate = lanes x per-lane signalling of the speed name (IBTA: SDR 2.5, DDR 5, QDR 10, FDR10 10,
FDR 14, EDR 25, HDR 50, NDR 100, XDR 200 Gb/s per lane): 4xNDR = 400 Gb/s.
"""

from __future__ import annotations

import re
from pathlib import Path

from clusterwright.ingest.common import IngestError, dump_files, gc_paused, read_dump
from clusterwright.ingest.model import Adjacency, Observations

FIELD = "ibnet"

LANE_GBPS = {"SDR": 2.5, "DDR": 5.0, "QDR": 10.0, "FDR10": 10.0, "FDR": 14.0, "EDR": 25.0,
             "HDR": 50.0, "NDR": 100.0, "XDR": 200.0}
_NODE = re.compile(r'^(Switch|Ca|Rt)\s+(\d+)\s+"([SHR])-([0-9a-fA-F]+)"\s*(?:#\s*"(.*?)")?')
_PORT = re.compile(
    r'^\[(\d+)\](?:\[ext \d+\])?(?:\(([0-9a-fA-F]+)\))?\s+"([SHR])-([0-9a-fA-F]+)"\[(\d+)\]'
    r'(?:\[ext \d+\])?\s*(?:\(([0-9a-fA-F]+)\))?\s*#\s*(.*)$')
_COMMENT_SW = re.compile(r'^"(.*?)"\s+lid\s+(\d+)\s+(\d+)x(\w+)')
_COMMENT_CA = re.compile(r'^lid\s+\d+\s+lmc\s+\d+\s+"(.*?)"\s+lid\s+(\d+)\s+(\d+)x(\w+)')
_MF0 = re.compile(r"^MF0;([^:]+):")
_HEADER_KEYS = ("vendid=", "devid=", "sysimgguid=", "switchguid=", "caguid=", "rtguid=",
                "Chassis", "Hostname:")


# What an HCA reports until rdma-ndd (or the driver's node_desc) sets "<host> <hca>": the
# firmware's default, "MT4129 ConnectX7   Mellanox Technologies" (the PCI device id first).
_DEFAULT_DESC = re.compile(r"^MT\d+\b|Mellanox Technologies|NVIDIA Technologies")
UNIDENTIFIED = "unidentified HCA "


def node_name(desc: str, kind: str, guid: str = "") -> tuple[str, str]:
    """(device, port prefix) of a NodeDescription: a switch's name, or a CA's host and HCA.
    A CA still carrying its firmware's default description names no host: it is given
    ``UNIDENTIFIED`` and its GUID."""
    d = desc.strip()
    if kind == "S":
        m = _MF0.match(d)
        return (m.group(1) if m else d), ""
    if _DEFAULT_DESC.search(d):
        return f"{UNIDENTIFIED}{guid.lower()}", ""
    host, _, hca = d.partition(" ")
    return host, hca.strip()


def rate_gbps(width: str, speed: str) -> float | None:
    lane = LANE_GBPS.get(speed.upper())
    return None if lane is None else int(width) * lane


def parse_ibnet(path: str | Path) -> Observations:
    """Adjacencies (each link once per end that was printed) with their active rate."""
    obs = Observations()
    with gc_paused():
        for f in dump_files(path, FIELD):
            text = read_dump(f, "ibnetdiscover dump", FIELD)
            _parse(text, str(f), obs)
    return obs


def _parse(text: str, src: str, obs: Observations) -> None:
    # (kind S/H/R, device, HCA) of the node being read
    cur: tuple[str, str, str] | None = None
    # (kind, description, guid) -> name
    names: dict[tuple[str, str, str], tuple[str, str]] = {}
    n = 0
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line[0] == "#":
            continue
        if line[0] == "[":
            if cur is None:
                raise IngestError(src, n, "a port line before any Switch/Ca line",
                                  field=FIELD)
            _port(obs, src, n, line, cur, names)
            continue
        m = _NODE.match(line)
        if m:
            kind, desc = m.group(3), m.group(5)
            if desc is None:
                raise IngestError(src, n, "node line without its \"description\" comment "
                                  "(truncated?)", field=FIELD)
            dev, hca = node_name(desc, kind, m.group(4))
            cur = (kind, dev, hca)
            if dev.startswith(UNIDENTIFIED):
                obs.unidentified.add(dev)
            else:
                obs.report("ibnet", src, dev, n)
            continue
        if line.startswith(_HEADER_KEYS):
            continue
        raise IngestError(src, n, f"not ibnetdiscover output: {line[:80]!r}", field=FIELD)
    if cur is None:
        raise IngestError(src, n or 1, "no Switch or Ca lines: not ibnetdiscover output, or "
                          "empty", field=FIELD)


def _port(obs: Observations, src: str, n: int, line: str, cur: tuple[str, str, str],
          names: dict[tuple[str, str, str], tuple[str, str]]) -> None:
    p = _PORT.match(line)
    if p is None:
        raise IngestError(src, n, f"not an ibnetdiscover port line: {line[:80]!r}",
                          field=FIELD)
    lport, rkind, rport, comment = p.group(1), p.group(3), p.group(5), p.group(7).strip()
    kind, local, lhca = cur
    # a switch's port comment starts with the remote's name, a CA's with its own lid
    first, second = (_COMMENT_SW, _COMMENT_CA) if kind == "S" else (_COMMENT_CA, _COMMENT_SW)
    cm = first.match(comment) or second.match(comment)
    if cm is None:
        raise IngestError(src, n, f"port comment without the remote name, lid and rate "
                          f"(truncated?): {comment[:80]!r}", field=FIELD)
    guid = p.group(4)
    key = (rkind, cm.group(1), guid)
    hit = names.get(key)
    if hit is None:
        hit = names[key] = node_name(cm.group(1), rkind, guid)
    remote, rhca = hit
    if remote.startswith(UNIDENTIFIED):
        obs.unidentified.add(remote)
    obs.adjacencies.append(Adjacency(
        local=local, local_port=lport if kind == "S" else (lhca or lport),
        local_port_alt=f"{lhca}/{lport}" if lhca else "",
        remote=remote, remote_port=rport if rkind == "S" else (rhca or rport),
        remote_port_alt=f"{rhca}/{rport}" if rhca else "",
        source=src, line=n, via="ibnet",
        speed_gbps=rate_gbps(cm.group(3), cm.group(4))))
