"""Slurm: the topology the scheduler places jobs by, and the nodes it sees.

Four formats, told apart by their content:

- ``topology.conf`` (topology.conf(5)): ``SwitchName=s0 Nodes=tux[0-3] LinkSpeed=900``,
  ``SwitchName=s3 Switches=s[0-2]`` for topology/tree, ``BlockName=b1 Nodes=...`` and
  ``BlockSizes=`` for topology/block; ``#`` comments, a trailing ``\\`` continues a line, keys
  are case-insensitive.
- ``topology.yaml`` (topology.yaml(5), Slurm 25.05): a list of topologies, each with
  ``topology: NAME`` and one of ``tree: {switches: [{switch, children | nodes}]}``,
  ``block: {block_sizes: [...], blocks: [{block, nodes}]}`` or ``flat: true``.
- ``scontrol show node`` (scontrol(1)): one block per node of ``Key=Value`` pairs, the
  first ``NodeName=``; ``State=IDLE+DRAIN``, ``Gres=gpu:h100:8(S:0-1)``, ``Reason=`` runs to
  the end of its line.
- ``sinfo`` (sinfo(1)), default (``PARTITION AVAIL TIMELIMIT NODES STATE NODELIST``) or
  node-oriented (``sinfo -N``: ``NODELIST NODES PARTITION STATE``) output; other ``-o``
  layouts work when their header names NODELIST and STATE.

Node names in the lists are Slurm hostlist expressions (``gpu[00001-00032]``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from clusterwright.export.hostlist import expand
from clusterwright.ingest.common import IngestError, dump_files, read_dump
from clusterwright.ingest.model import Membership, NodeState, Observations
from clusterwright.spec.yamlio import YamlError, loads

FIELD = "slurm"
# Node states that take a node out of service (sinfo(1) "NODE STATE CODES"): a new job
# cannot start there.
UNAVAILABLE = ("down", "drain", "drng", "drained", "draining", "fail", "failing", "maint",
               "unk", "unknown", "not_responding", "power_down", "powered_down", "inval",
               "future", "reboot")
_KV = re.compile(r"([A-Za-z][A-Za-z0-9_]*)=")
_GRES_GPU = re.compile(r"(?:^|,)gpu(?::[^:,()]+)?:(\d+)")


def parse_slurm(path: str | Path) -> Observations:
    """Memberships (topology files) or node states (scontrol, sinfo) from each file."""
    obs = Observations()
    for f in dump_files(path, FIELD):
        text = read_dump(f, "Slurm file", FIELD)
        src = str(f)
        kind = detect(text)
        if kind == "topology.conf":
            _topology_conf(text, src, obs)
        elif kind == "topology.yaml":
            _topology_yaml(text, src, obs)
        elif kind == "scontrol":
            _scontrol(text, src, obs)
        elif kind == "sinfo":
            _sinfo(text, src, obs)
        else:
            first = next((i for i, t in enumerate(text.splitlines(), 1) if t.strip()), 1)
            raise IngestError(src, first, "unknown format: not a Slurm topology.conf, "
                              "topology.yaml, `scontrol show node` or `sinfo` output",
                              field=FIELD)
    return obs


def detect(text: str) -> str:
    body = [t for t in text.splitlines() if t.strip() and not t.lstrip().startswith("#")]
    if not body:
        return ""
    low = body[0].lower()
    if re.search(r"\b(switchname|blockname|blocksizes)=", text, re.IGNORECASE):
        return "topology.conf"
    if low.lstrip().startswith("- topology:") or re.search(r"^\s*-?\s*topology:\s*\S", text,
                                                            re.MULTILINE):
        return "topology.yaml"
    if low.lstrip().startswith("nodename="):
        return "scontrol"
    head = body[0].upper().split()
    if "NODELIST" in head and "STATE" in head:
        return "sinfo"
    return ""


def _hosts(expr: str, src: str, line: int) -> list[str]:
    try:
        return expand(expr)
    except ValueError as exc:
        raise IngestError(src, line, str(exc), field=FIELD) from None


def _logical_lines(text: str) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    buf, start = "", 0
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].rstrip()
        if not buf:
            start = n
        if line.endswith("\\"):
            buf += line[:-1] + " "
            continue
        buf += line
        if buf.strip():
            out.append((start, buf.strip()))
        buf = ""
    if buf.strip():
        out.append((start, buf.strip()))
    return out


def _pairs(line: str) -> dict[str, str]:
    """``Key=Value`` pairs of a line (keys lower-cased); a value runs to the next key."""
    out: dict[str, str] = {}
    matches = list(_KV.finditer(line))
    for i, m in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(line)
        out[m.group(1).lower()] = line[m.end():end].strip()
    return out


def _add_groups(obs: Observations, level: str, groups: dict[str, list[tuple[str, int]]],
                src: str) -> None:
    """Memberships; a node under several lowest switches (a rail-optimized fabric seen
    switch by switch) belongs to the set of them."""
    by_node: dict[str, tuple[list[str], int]] = {}
    for group, members in groups.items():
        for node, line in members:
            names, first = by_node.get(node, ([], line))
            names.append(group)
            by_node[node] = (names, min(first, line))
    for node, (names, line) in by_node.items():
        obs.memberships.append(Membership(node, level, "+".join(sorted(set(names))), src, line))
        obs.report("slurm", src, node, line)


def _topology_conf(text: str, src: str, obs: Observations) -> None:
    tree: dict[str, list[tuple[str, int]]] = {}
    blocks: dict[str, list[tuple[str, int]]] = {}
    for n, line in _logical_lines(text):
        kv = _pairs(line)
        if not kv:
            raise IngestError(src, n, f"not a Key=Value line: {line[:80]!r}", field=FIELD)
        if "switchname" in kv:
            if not kv["switchname"]:
                raise IngestError(src, n, "SwitchName= without a name", field=FIELD)
            if "nodes" in kv:
                tree.setdefault(kv["switchname"], []).extend(
                    (h, n) for h in _hosts(kv["nodes"], src, n))
            elif "switches" not in kv:
                raise IngestError(src, n, f"switch {kv['switchname']!r} has neither Nodes= "
                                  "nor Switches=", field=FIELD)
        elif "blockname" in kv:
            if "nodes" not in kv:
                raise IngestError(src, n, f"block {kv['blockname']!r} has no Nodes=",
                                  field=FIELD)
            blocks.setdefault(kv["blockname"], []).extend(
                (h, n) for h in _hosts(kv["nodes"], src, n))
        elif "blocksizes" in kv:
            continue
        else:
            raise IngestError(src, n, f"unknown topology.conf line: {line[:80]!r}",
                              field=FIELD)
    _add_groups(obs, "tree", tree, src)
    _add_groups(obs, "block", blocks, src)


def _topology_yaml(text: str, src: str, obs: Observations) -> None:
    try:
        doc = loads(text, src)
    except YamlError as exc:
        msg = str(exc)
        m = re.match(rf"{re.escape(src)}:(\d+): (.*)$", msg)
        if m:
            raise IngestError(src, int(m.group(1)), m.group(2), field=FIELD) from None
        raise IngestError(src, None, msg.split(": ", 1)[-1], field=FIELD) from None
    data: Any = doc.data
    if not isinstance(data, list):
        raise IngestError(src, 1, "topology.yaml must be a list of topologies", field=FIELD)
    for i, topo in enumerate(data):
        line = doc.lines.get((i,), 1)
        if not isinstance(topo, dict) or "topology" not in topo:
            raise IngestError(src, line, "each entry needs a `topology:` name", field=FIELD)
        if "tree" in topo:
            groups: dict[str, list[tuple[str, int]]] = {}
            switches = (topo["tree"] or {}).get("switches", []) if isinstance(
                topo["tree"], dict) else None
            if not isinstance(switches, list):
                raise IngestError(src, line, "tree: needs a `switches:` list", field=FIELD)
            for j, sw in enumerate(switches):
                at = doc.lines.get((i, "tree", "switches", j), line)
                if not isinstance(sw, dict) or not isinstance(sw.get("switch"), str):
                    raise IngestError(src, at, "each switch needs a `switch:` name",
                                      field=FIELD)
                if isinstance(sw.get("nodes"), str):
                    groups.setdefault(sw["switch"], []).extend(
                        (h, at) for h in _hosts(sw["nodes"], src, at))
            _add_groups(obs, "tree", groups, src)
        if "block" in topo:
            groups = {}
            blocks = (topo["block"] or {}).get("blocks", []) if isinstance(
                topo["block"], dict) else None
            if not isinstance(blocks, list):
                raise IngestError(src, line, "block: needs a `blocks:` list", field=FIELD)
            for j, b in enumerate(blocks):
                at = doc.lines.get((i, "block", "blocks", j), line)
                if not isinstance(b, dict) or not isinstance(b.get("block"), str) or \
                        not isinstance(b.get("nodes"), str):
                    raise IngestError(src, at, "each block needs `block:` and `nodes:`",
                                      field=FIELD)
                groups.setdefault(b["block"], []).extend(
                    (h, at) for h in _hosts(b["nodes"], src, at))
            _add_groups(obs, "block", groups, src)


def _gpus(gres: str) -> int | None:
    total = [int(m.group(1)) for m in _GRES_GPU.finditer(gres.split("(", 1)[0])]
    return sum(total) if total else None


def _available(state: str) -> bool:
    words = re.split(r"[+,]", state.lower().rstrip("*~#!%$@^-"))
    return not any(w.strip("*~#!%$@^-") in UNAVAILABLE for w in words) and \
        not state.endswith("*")


def _scontrol(text: str, src: str, obs: Observations) -> None:
    block: dict[str, str] = {}
    start = 0

    def flush() -> None:
        if not block:
            return
        name = block.get("nodename", "")
        if not name:
            raise IngestError(src, start, "node block without NodeName=", field=FIELD)
        state = block.get("state", "")
        if not state:
            raise IngestError(src, start, f"node {name}: no State= (truncated?)", field=FIELD)
        obs.node_states.append(NodeState(
            node=name, available=_available(state), state=state,
            reason=block.get("reason", ""), gpus=_gpus(block.get("gres", "")),
            source=src, line=start))
        obs.report("slurm", src, name, start)

    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            flush()
            block = {}
            continue
        kv = _pairs(line)
        if not kv:
            raise IngestError(src, n, f"not `scontrol show node` output: {line[:80]!r}",
                              field=FIELD)
        if "nodename" in kv and block:
            flush()
            block = {}
        if not block:
            start = n
        block.update(kv)
    flush()


def _sinfo(text: str, src: str, obs: Observations) -> None:
    lines = [(n, t) for n, t in enumerate(text.splitlines(), 1) if t.strip()]
    head = lines[0][1].upper().split()
    i_nodes, i_state = head.index("NODELIST"), head.index("STATE")
    for n, line in lines[1:]:
        cols = line.split()
        if len(cols) != len(head):
            raise IngestError(src, n, f"{len(cols)} columns, the header has {len(head)} "
                              "(truncated, or a field with spaces: use -o with fixed fields)",
                              field=FIELD)
        state = cols[i_state]
        for node in _hosts(cols[i_nodes], src, n):
            obs.node_states.append(NodeState(node=node, available=_available(state),
                                             state=state, reason="", gpus=None, source=src,
                                             line=n))
            obs.report("slurm", src, node, n)
