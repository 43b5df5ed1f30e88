"""BGP state of routed switches: FRR's ``show bgp summary json`` (``vtysh -c``).

Format (FRR user guide, "show bgp summary [json]"; captured from FRR 8.4 in the lab, see
tests/lab/data/show_bgp_summary_spine.json): one object per address family
(``ipv4Unicast``, ``l2VpnEvpn``, ...), each with the local ``routerId`` and ``as`` and a
``peers`` object keyed by neighbour address whose values hold ``remoteAs``, ``localAs``,
``state`` (``Established``, ``Active``, ``Connect``, ...) and ``desc``. A switch with no
sessions prints ``{}``.

The output does not name the switch: one file per switch named after it, an object of
outputs keyed by switch name, or ``==> switch <==`` sections (``ingest/common.py``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from clusterwright.ingest.common import IngestError, dump_files, read_dump, split_chunks
from clusterwright.ingest.model import BgpPeer, BgpState, Observations

FIELD = "bgp"
_AFI_HINTS = ("ipv4Unicast", "ipv6Unicast", "l2VpnEvpn", "ipv4Multicast")


def _is_summary(doc: Any) -> bool:
    return isinstance(doc, dict) and (doc == {} or any(
        isinstance(v, dict) and ("peers" in v or "routerId" in v) for v in doc.values()))


def _load(text: str, src: str, base: int = 1) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        what = "truncated" if exc.pos >= len(text.rstrip()) else "malformed"
        raise IngestError(src, base + exc.lineno - 1, f"{what} JSON ({exc.msg}); expected "
                          "`show bgp summary json`", field=FIELD) from None
    except RecursionError:
        raise IngestError(src, base, "JSON nested too deeply", field=FIELD) from None


def parse_bgp(path: str | Path) -> Observations:
    obs = Observations()
    for f in dump_files(path, FIELD):
        text = read_dump(f, "BGP summary", FIELD)
        src = str(f)
        if text.lstrip()[:1] == "{":
            doc = _load(text, src)
            if _is_summary(doc) and (doc == {} or any(k in doc for k in _AFI_HINTS)):
                _one(obs, f.stem, doc, src, 1)
            elif isinstance(doc, dict) and doc and all(_is_summary(v) for v in doc.values()):
                pos, line = 0, 1
                for dev, sub in doc.items():
                    at = text.find(json.dumps(dev), pos)
                    if at >= 0:
                        line += text.count("\n", pos, at)
                        pos = at
                    _one(obs, str(dev), sub, src, line)
            else:
                raise IngestError(src, 1, "not `show bgp summary json` output (no address "
                                  "family with \"peers\")", field=FIELD)
            continue
        chunks = split_chunks(text, f)
        if not chunks:
            raise IngestError(src, 1, "empty BGP summary", field=FIELD)
        for c in chunks:
            doc = _load(c.text(), src, c.first_line)
            if not _is_summary(doc):
                raise IngestError(src, c.first_line, "not `show bgp summary json` output",
                                  field=FIELD)
            _one(obs, c.device or f.stem, doc, src, c.first_line)
    return obs


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else None


def _one(obs: Observations, device: str, doc: dict[str, Any], src: str, line: int) -> None:
    asn: int | None = None
    router_id = ""
    peers: dict[str, BgpPeer] = {}
    for afi in doc.values():
        if not isinstance(afi, dict):
            continue
        asn = asn or _int(afi.get("as"))
        router_id = router_id or str(afi.get("routerId", ""))
        raw = afi.get("peers", {})
        if not isinstance(raw, dict):
            raise IngestError(src, line, f"{device}: \"peers\" is not an object", field=FIELD)
        for addr, p in raw.items():
            if addr in peers or not isinstance(p, dict):
                continue
            peers[addr] = BgpPeer(address=addr, remote_as=_int(p.get("remoteAs")),
                                  state=str(p.get("state", "unknown")),
                                  description=str(p.get("desc", "")))
    obs.bgp.append(BgpState(device=device, asn=asn, router_id=router_id,
                            peers=tuple(peers.values()), source=src, line=line))
    obs.report("bgp", src, device, line)
