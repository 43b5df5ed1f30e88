"""Kubernetes nodes: ``kubectl get nodes -o json``.

Format (Kubernetes API reference, Node v1, and ``kubectl get -o json``, which prints a
``List``): ``{"apiVersion": "v1", "kind": "List", "items": [NODE, ...]}`` with each node's
``metadata.name``, ``metadata.labels``, ``status.capacity`` and ``status.allocatable``
(``"nvidia.com/gpu": "8"``, the NVIDIA device plugin's resource) and ``status.conditions``
(``{"type": "Ready", "status": "True"}``); ``spec.unschedulable`` when cordoned. A single
``kind: Node`` object is read too.

Every label becomes a membership at level ``label:<key>``: the twin compares the ones that
describe placement with the blueprint (its own ``clusterwright.io/su``, ``/pod``,
``/nvlink-domain`` and ``/rack``; Topograph's ``network.topology.nvidia.com/accelerator``,
``/block``, ``/spine``; GPU feature discovery's ``nvidia.com/gpu.clique``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from clusterwright.ingest.common import IngestError, dump_files, read_dump
from clusterwright.ingest.model import Membership, NodeState, Observations

FIELD = "k8s"
GPU_RESOURCE = "nvidia.com/gpu"


def parse_kube(path: str | Path) -> Observations:
    obs = Observations()
    for f in dump_files(path, FIELD):
        text = read_dump(f, "kubectl output", FIELD)
        src = str(f)
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            what = "truncated" if exc.pos >= len(text.rstrip()) else "malformed"
            raise IngestError(src, exc.lineno, f"{what} JSON ({exc.msg}); expected "
                              "`kubectl get nodes -o json`", field=FIELD) from None
        except RecursionError:
            raise IngestError(src, 1, "JSON nested too deeply", field=FIELD) from None
        if isinstance(doc, dict) and doc.get("kind") == "Node":
            items = [doc]
        elif isinstance(doc, dict) and isinstance(doc.get("items"), list):
            items = doc["items"]
        else:
            raise IngestError(src, 1, "not `kubectl get nodes -o json` output (no \"items\" "
                              "list and not a Node)", field=FIELD)
        _items(items, text, src, obs)
    return obs


def _items(items: list[Any], text: str, src: str, obs: Observations) -> None:
    pos, line = 0, 1
    for i, node in enumerate(items):
        meta = node.get("metadata") if isinstance(node, dict) else None
        name = meta.get("name") if isinstance(meta, dict) else None
        if not isinstance(meta, dict) or not isinstance(name, str) or not name:
            raise IngestError(src, line, f"items[{i}] has no metadata.name", field=FIELD)
        at = text.find(json.dumps(name), pos)
        if at >= 0:
            line += text.count("\n", pos, at)
            pos = at
        if node.get("kind", "Node") != "Node":
            raise IngestError(src, line, f"items[{i}] is a {node.get('kind')}, not a Node",
                              field=FIELD)
        labels = meta.get("labels") or {}
        if not isinstance(labels, dict):
            raise IngestError(src, line, f"node {name}: labels is not an object", field=FIELD)
        for key, value in labels.items():
            obs.memberships.append(Membership(name, f"label:{key}", str(value), src, line))
        status = node.get("status") or {}
        cap = (status.get("allocatable") or status.get("capacity") or {}) if isinstance(
            status, dict) else {}
        gpus: int | None = None
        raw = cap.get(GPU_RESOURCE) if isinstance(cap, dict) else None
        if raw is not None:
            try:
                gpus = int(str(raw))
            except ValueError:
                raise IngestError(src, line, f"node {name}: {GPU_RESOURCE} = {raw!r} is not a "
                                  "count", field=FIELD) from None
        ready = "Unknown"
        for c in status.get("conditions") or [] if isinstance(status, dict) else []:
            if isinstance(c, dict) and c.get("type") == "Ready":
                ready = str(c.get("status"))
        cordoned = bool((node.get("spec") or {}).get("unschedulable"))
        state = ("Ready" if ready == "True" else f"NotReady ({ready})") + (
            ",SchedulingDisabled" if cordoned else "")
        obs.node_states.append(NodeState(
            node=name, available=ready == "True" and not cordoned, state=state, reason="",
            gpus=gpus, source=src, line=line))
        obs.report("k8s", src, name, line)
