"""LLDP neighbour tables: ``lldpctl -f json`` (and ``-f json0``) of lldpd 1.0.x.

Format (lldpcli(8), lldpd 1.0.16 as Debian 12 ships it; the shapes below were captured from
real lldpd instances in network namespaces, see tests/ingest/data/lldp_*.json):

- ``json``: ``{"lldp": {"interface": I}}`` where ``I`` is ``{"swp1": ENTRY}`` for one
  neighbour and a list ``[{"swp1": ENTRY}, {"swp2": ENTRY}]`` for several ("json0 is more
  verbose than json but the structure of the JSON object is not affected by the number of
  interfaces or the number of neighbors", lldpcli(8)). ``ENTRY`` has ``chassis``, keyed by
  the neighbour's system name (``{"leaf-a": {"id": {...}, ...}}``; a neighbour sending no
  system name gives ``{"id": {...}}`` directly) and ``port`` with ``id`` (``type`` ``mac``,
  ``ifname`` or ``local``, and ``value``) and ``descr``. A device without neighbours prints
  ``{"lldp": {}}``.
- ``json0``: ``{"lldp": [{"interface": [{"name": "swp1", "chassis": [{"name": [{"value":
  ...}], "id": [...]}], "port": [{"id": [{"type": ..., "value": ...}], "descr": [...]}]}]}]}``.

lldpd's default port id is the MAC address, with the interface name as the description
("By default, lldpd will use the MAC address as port identifier and the interface name as
port description", lldpcli(8) ``portidsubtype``); switch operating systems set it to the
interface name. So the remote port is the id when its type is ``ifname`` or ``local``, and
the description otherwise (kept as ``remote_port_alt`` too).

The output does not name the device it came from: a file holds one device's table and is
named after it, or several tables are collected as one JSON object keyed by device name, or
as ``==> device <==`` sections (``ingest/common.py``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from clusterwright.ingest.common import (
    MAX_DEVICES,
    IngestError,
    dump_files,
    gc_paused,
    read_dump,
    split_chunks,
)
from clusterwright.ingest.model import Adjacency, Observations

FIELD = "lldp"
_NAMED_PORT = frozenset(("ifname", "local", "ifalias"))  # port id subtypes that name the port
_PLAIN = re.compile(r"[A-Za-z0-9_.:/@+-]*")  # a name JSON writes as it is
_BLANK = " \t\r\n"  # JSON whitespace


class _Lines:
    """Line numbers of positions in a text, and of keys found in order."""

    def __init__(self, text: str, base: int = 1) -> None:
        self.text = text
        self.base = base
        self.pos = 0
        self.line = base
        self.counted = 0
        self._quoted: dict[str, str] = {}  # key -> as JSON writes it (interface names repeat)

    def of_key(self, key: str) -> int:
        """Line of the next occurrence of ``"key"`` as an object key (followed by ``:``) after
        the last one found; a value spelled like the key (a neighbour's port ``"swp2"``
        before the local interface ``"swp2"``) is skipped."""
        quoted = self._quoted.get(key)
        if quoted is None:
            quoted = f'"{key}"' if _PLAIN.fullmatch(key) else json.dumps(key)
            self._quoted[key] = quoted
        text = self.text
        find = text.find
        i = find(quoted, self.pos)
        while i >= 0:
            j = i + len(quoted)
            c = text[j:j + 1]
            while c in _BLANK and c:
                j += 1
                c = text[j:j + 1]
            if c == ":":
                break
            i = find(quoted, j)
        if i < 0:
            return self.line
        self.line += text.count("\n", self.counted, i)
        self.counted = i
        self.pos = i + 1
        return self.line


def _load(text: str, path: str, base: int = 1) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        what = "truncated" if exc.pos >= len(text.rstrip()) else "malformed"
        raise IngestError(path, base + exc.lineno - 1,
                          f"{what} JSON ({exc.msg}); expected `lldpctl -f json` output",
                          field=FIELD) from None
    except RecursionError:
        raise IngestError(path, base, "JSON nested too deeply", field=FIELD) from None


def _is_lldp(doc: Any) -> bool:
    return isinstance(doc, dict) and "lldp" in doc


def parse_lldp(path: str | Path) -> Observations:
    """Neighbour adjacencies from one file or a directory of files (see module docstring)."""
    with gc_paused():
        return _parse_lldp(path)


def _parse_lldp(path: str | Path) -> Observations:
    obs = Observations()
    for f in dump_files(path, FIELD):
        text = read_dump(f, "LLDP dump", FIELD)
        src = str(f)
        head = text.lstrip()[:1]
        if head in ("{", "["):
            doc = _load(text, src)
            lines = _Lines(text)
            if _is_lldp(doc):
                _device(obs, f.stem, doc, src, 1, lines)
            elif isinstance(doc, dict) and doc and all(_is_lldp(v) for v in doc.values()):
                if len(doc) > MAX_DEVICES:
                    raise IngestError(src, 1, f"more than {MAX_DEVICES:,} devices", field=FIELD)
                for dev, sub in doc.items():
                    line = lines.of_key(dev)
                    _device(obs, str(dev), sub, src, line, lines)
            else:
                raise IngestError(src, 1, "not `lldpctl -f json` output: no \"lldp\" object "
                                  "(a single table, or an object of tables keyed by device)",
                                  field=FIELD)
            continue
        chunks = split_chunks(text, f)
        if not chunks:
            raise IngestError(src, 1, "empty LLDP dump", field=FIELD)
        for c in chunks:
            body = c.text()
            base = c.first_line
            doc = _load(body, src, base)
            if not _is_lldp(doc):
                raise IngestError(src, base, "not `lldpctl -f json` output: no \"lldp\" "
                                  "object", field=FIELD)
            _device(obs, c.device or f.stem, doc, src, base, _Lines(body, base))
    return obs


def _interfaces(doc: Any, src: str, line: int) -> list[tuple[str, dict[str, Any]]]:
    """(local interface, entry) pairs of one table, json or json0."""
    lldp = doc.get("lldp")
    if lldp in ({}, [], None) or lldp == [{}]:
        return []
    if isinstance(lldp, list):  # json0
        out: list[tuple[str, dict[str, Any]]] = []
        for block in lldp:
            if not isinstance(block, dict):
                raise IngestError(src, line, "json0 \"lldp\" list holds a non-object",
                                  field=FIELD)
            for itf in block.get("interface", []):
                if not isinstance(itf, dict) or not isinstance(itf.get("name"), str):
                    raise IngestError(src, line, "json0 interface without a \"name\"",
                                      field=FIELD)
                out.append((itf["name"], _json0_entry(itf)))
        return out
    if not isinstance(lldp, dict):
        raise IngestError(src, line, "\"lldp\" is neither an object nor a list", field=FIELD)
    itfs = lldp.get("interface")
    if itfs is None:
        return []
    if type(itfs) is dict:
        return list(itfs.items())  # entries that are not objects: _device says where
    if type(itfs) is not list:
        raise IngestError(src, line, "\"interface\" is neither an object nor a list",
                          field=FIELD)
    pairs: list[tuple[str, Any]] = []
    extend = pairs.extend
    for item in itfs:
        if type(item) is not dict:
            raise IngestError(src, line, "\"interface\" list holds a non-object",
                              field=FIELD)
        extend(item.items())
    return pairs


def _json0_entry(itf: dict[str, Any]) -> dict[str, Any]:
    """A json0 interface rewritten in the json shape (chassis keyed by name)."""
    def first(v: Any) -> Any:
        return v[0] if isinstance(v, list) and v else v

    ch = first(itf.get("chassis")) or {}
    pt = first(itf.get("port")) or {}
    name = first(ch.get("name")) if isinstance(ch, dict) else None
    cid = first(ch.get("id")) if isinstance(ch, dict) else None
    chassis: dict[str, Any] = {}
    if isinstance(name, dict) and isinstance(name.get("value"), str):
        chassis = {name["value"]: {"id": cid}}
    elif cid is not None:
        chassis = {"id": cid}
    port: dict[str, Any] = {}
    if isinstance(pt, dict):
        port["id"] = first(pt.get("id"))
        d = first(pt.get("descr"))
        if isinstance(d, dict):
            port["descr"] = d.get("value")
    return {"chassis": chassis, "port": port}


def _device(obs: Observations, device: str, doc: Any, src: str, line: int,
            lines: _Lines) -> None:
    obs.report("lldp", src, device, line)
    append = obs.adjacencies.append
    of_key = lines.of_key
    for ifname, entry in _interfaces(doc, src, line):
        at = of_key(ifname)
        if type(entry) is not dict:
            raise IngestError(src, at, f"interface {ifname!r} is not an object", field=FIELD)
        chassis = entry.get("chassis")
        port = entry.get("port")
        if type(chassis) is not dict or type(port) is not dict:
            raise IngestError(src, at, f"interface {ifname!r}: no \"chassis\" or \"port\" "
                              "object (truncated or not lldpctl output)", field=FIELD)
        # Named: {"leaf-a": {"id": ...}}. Unnamed: {"id": {"type", "value"}, "descr": ...}.
        cid = chassis.get("id")
        if type(cid) is dict and "type" in cid:
            remote = str(cid.get("value", ""))  # no system name: the chassis id
        else:
            remote = next(iter(chassis), "")  # JSON keys are strings
        if not remote:
            raise IngestError(src, at, f"interface {ifname!r}: neighbour has no chassis name "
                              "or id", field=FIELD)
        pid = port.get("id")
        if type(pid) is dict:
            ptype, pval = pid.get("type", ""), pid.get("value", "")
            if type(pval) is not str:
                pval = str(pval)
        else:
            ptype, pval = "", ""
        descr = port.get("descr")
        if type(descr) is not str:
            descr = ""
        if ptype in _NAMED_PORT:
            rport, alt = pval, descr
        else:
            rport, alt = descr or pval, pval
        append(Adjacency(local=device, local_port=ifname, remote=remote, remote_port=rport,
                         remote_port_alt=alt, source=src, line=at, via="lldp"))
