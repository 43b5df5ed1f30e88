"""The blueprint as the twin compares against it: read back from the files a design wrote.

A blueprint directory is what ``plan --out`` writes (``blueprint.json``, ``cabling.csv`` and
every fabric export under ``configs/``) or what ``fabric design --out`` writes (the exports
at the top). The cabling plan is the master: it is what was installed against. The other
files add what the twin checks beyond cables:

| file | what the twin takes from it |
|---|---|
| ``cabling.csv`` (required) | every planned cable: devices, ports, tier, network, speed |
| ``ip-plan.csv`` | device roles, ASNs, loopbacks |
| ``netbox/ip-addresses.csv`` | the /31 of every routed interface (expected BGP neighbours) |
| ``slurm/topology.conf``, ``slurm/topology.yaml`` | each node's scalable unit and block |
| ``kubernetes/node-labels.yaml`` | each node's planned labels (SU, NVLink domain, pod, rack) |
| ``fabric.json`` or ``blueprint.json`` | the design's summary (server, switch, tiers, ...) |
| ``blueprint.json`` | the training workload (layout, step time) for the impact estimate |

Nothing is re-derived from the catalog except the server's port naming (which rail a host
port is, its RDMA device name), so a blueprint written by an older version still reads.
"""

from __future__ import annotations

import csv
import io
import json
from collections import defaultdict
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from clusterwright.catalog.registry import Catalog
from clusterwright.catalog.schema import Server
from clusterwright.errors import ClusterwrightError, InputError
from clusterwright.ingest.common import IngestError, read_dump
from clusterwright.ingest.slurm import parse_slurm
from clusterwright.spec.yamlio import YamlError, load

FIELD = "blueprint"
NETWORKS = ("backend", "frontend", "oob")
CABLING_COLUMNS = ("cable_id", "network", "tier", "plane", "a_device", "a_port", "b_device",
                   "b_port", "speed_gbps")
SWITCH_ROLES = ("leaf", "spine", "core", "fe-leaf", "fe-spine", "fe-core", "oob-leaf",
                "oob-spine")


@dataclass(slots=True)
class PlannedLink:
    """One planned cable (a row of cabling.csv; ``line`` its line in the file)."""

    index: int
    cable: str
    network: str
    tier: str
    plane: int
    a: str
    a_port: str
    b: str
    b_port: str
    speed_gbps: float
    a_rack: str
    b_rack: str
    line: int

    def ends(self) -> tuple[tuple[str, str], tuple[str, str]]:
        return (self.a, self.a_port), (self.b, self.b_port)

    def other(self, dev: str, port: str) -> tuple[str, str]:
        return (self.b, self.b_port) if (dev, port) == (self.a, self.a_port) else (
            self.a, self.a_port)


@dataclass
class PlannedDevice:
    name: str
    role: str
    asn: int | None = None
    loopback: str = ""
    rack: str = ""


@dataclass
class Plan:
    """Everything the twin compares against, read from one blueprint directory."""

    root: Path
    links: list[PlannedLink]
    devices: dict[str, PlannedDevice]
    summary: dict[str, Any]
    server: Server | None
    port: dict[tuple[str, str], int] = field(default_factory=dict)  # (dev, port) -> link
    by_device: dict[str, list[int]] = field(default_factory=dict)
    addresses: dict[tuple[str, str], str] = field(default_factory=dict)  # (dev, if) -> a/31
    groups: dict[str, dict[str, str]] = field(default_factory=dict)  # level -> host -> group
    labels: dict[str, dict[str, str]] = field(default_factory=dict)  # host -> key -> value
    workload: dict[str, Any] | None = None
    files: list[str] = field(default_factory=list)  # files read, relative
    missing: list[str] = field(default_factory=list)  # optional files not there
    host_alias: dict[tuple[str, str], str] = field(default_factory=dict)  # (host, alias)->port
    rail_of: dict[tuple[str, str], int] = field(default_factory=dict)  # (host, port) -> rail
    # Planned ports of networks left out of the comparison: what is seen on them is ignored.
    ignored_ports: set[tuple[str, str]] = field(default_factory=set)
    networks: tuple[str, ...] = NETWORKS
    # Every planned port, of every network (names are resolved against all of them, so a
    # port of a network left out is recognised, and ignored, rather than taken as unplanned).
    known_ports: set[tuple[str, str]] = field(default_factory=set)
    _ports_of: dict[str, list[str]] = field(default_factory=dict, repr=False)
    _ppc: dict[str, int] = field(default_factory=dict, repr=False)

    def only(self, networks: tuple[str, ...]) -> None:
        """Compare only the cables of ``networks`` (the lab builds the backend alone)."""
        if set(networks) >= {lk.network for lk in self.links}:
            return
        keep = [lk for lk in self.links if lk.network in networks]
        self.ignored_ports = {e for lk in self.links if lk.network not in networks
                              for e in lk.ends()}
        self.links = [replace(lk, index=i) for i, lk in enumerate(keep)]
        self.port, self.by_device = {}, {}
        for lk in self.links:
            for end in lk.ends():
                self.port[end] = lk.index
            self.by_device.setdefault(lk.a, []).append(lk.index)
            self.by_device.setdefault(lk.b, []).append(lk.index)
        self.networks = networks

    @property
    def hosts(self) -> list[str]:
        return [d.name for d in self.devices.values() if d.role == "host"]

    @property
    def gpus_per_host(self) -> int:
        srv = self.server
        return srv.gpus // srv.hosts if srv is not None else 8

    @property
    def protocol(self) -> str:
        return str(self.summary.get("protocol", "ethernet"))

    def switch_ports_per_cage(self, dev: str) -> int:
        """Sub-ports per cage in this switch's planned port names (``17/2`` -> 2)."""
        hit = self._ppc.get(dev)
        if hit is not None:
            return hit
        best = 1
        for name in self._ports_of.get(dev, []):
            _, sep, sub = name.partition("/")
            if sep and sub.isdigit():
                best = max(best, int(sub))
        self._ppc[dev] = best
        return best


def _csv_rows(path: Path, what: str) -> tuple[list[str], list[tuple[int, list[str]]]]:
    text = read_dump(path, what, FIELD)
    reader = csv.reader(io.StringIO(text))
    rows: list[tuple[int, list[str]]] = []
    header: list[str] = []
    try:
        for row in reader:
            if not header:
                header = row
                continue
            if row:
                rows.append((reader.line_num, row))
    except csv.Error as exc:
        raise IngestError(path, reader.line_num, f"malformed CSV: {exc}", field=FIELD) from None
    return header, rows


def fabric_root(root: Path) -> Path:
    """Where the fabric exports are: ``configs/`` of a plan, else the directory itself."""
    return root / "configs" if (root / "configs" / "cabling.csv").is_file() else root


def load_plan(root: str | Path, cat: Catalog) -> Plan:
    """Read a blueprint directory; InputError naming the file and line if it is not one."""
    root = Path(root)
    if not root.is_dir():
        raise InputError(f"blueprint: {root} is not a directory (give what `plan --out` or "
                         "`fabric design --out` wrote)", field=FIELD)
    fr = fabric_root(root)
    cab = fr / "cabling.csv"
    if not cab.is_file():
        raise InputError(f"blueprint: {root} has no cabling.csv (nor configs/cabling.csv): "
                         "not a blueprint directory", field=FIELD)
    summary, workload = _summary(root, fr)
    server: Server | None = None
    if summary.get("server"):
        try:
            server = cat.server(str(summary["server"]))
        except ClusterwrightError:
            server = None
    plan = Plan(root=root, links=[], devices={}, summary=summary, server=server,
                workload=workload)
    _cabling(plan, cab)
    plan.files.append(str(cab.relative_to(root)))
    _ip_plan(plan, fr / "ip-plan.csv")
    _addresses(plan, fr / "netbox" / "ip-addresses.csv")
    _slurm(plan, fr / "slurm")
    _labels(plan, fr / "kubernetes" / "node-labels.yaml")
    _host_ports(plan)
    return plan


def _summary(root: Path, fr: Path) -> tuple[dict[str, Any], dict[str, Any] | None]:
    summary: dict[str, Any] = {}
    workload: dict[str, Any] | None = None
    for p in (fr / "fabric.json", root / "blueprint.json"):
        if not p.is_file():
            continue
        text = read_dump(p, "blueprint file", FIELD)
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise IngestError(p, exc.lineno, f"malformed JSON ({exc.msg})", field=FIELD) \
                from None
        if not isinstance(doc, dict):
            raise IngestError(p, 1, "not a JSON object", field=FIELD)
        if p.name == "blueprint.json":
            fab = doc.get("fabric")
            if isinstance(fab, dict) and not summary:
                summary = fab
            for w in doc.get("workloads") or []:
                if isinstance(w, dict) and w.get("kind") == "training" and \
                        isinstance(w.get("layout"), dict) and workload is None:
                    workload = w
        elif not summary:
            summary = doc
    return summary, workload


def _cabling(plan: Plan, path: Path) -> None:
    header, rows = _csv_rows(path, "cabling plan")
    missing = [c for c in CABLING_COLUMNS if c not in header]
    if missing:
        raise IngestError(path, 1, f"not a cabling plan: no column(s) {', '.join(missing)}",
                          field=FIELD)
    col = {c: header.index(c) for c in header}
    roles: dict[str, str] = {}
    for line, row in rows:
        if len(row) != len(header):
            raise IngestError(path, line, f"{len(row)} fields, the header has {len(header)} "
                              "(truncated?)", field=FIELD)
        try:
            speed = float(row[col["speed_gbps"]])
            plane = int(row[col["plane"]] or 1)
        except ValueError:
            raise IngestError(path, line, "speed_gbps and plane must be numbers",
                              field=FIELD) from None
        i = len(plan.links)
        lk = PlannedLink(
            index=i, cable=row[col["cable_id"]], network=row[col["network"]],
            tier=row[col["tier"]], plane=plane, a=row[col["a_device"]],
            a_port=row[col["a_port"]], b=row[col["b_device"]], b_port=row[col["b_port"]],
            speed_gbps=speed, a_rack=row[col["a_rack"]] if "a_rack" in col else "",
            b_rack=row[col["b_rack"]] if "b_rack" in col else "", line=line)
        for end in lk.ends():
            if end in plan.port:
                raise IngestError(path, line, f"{end[0]} port {end[1]} is planned twice "
                                  f"(also line {plan.links[plan.port[end]].line})",
                                  field=FIELD)
            plan.port[end] = i
            plan.known_ports.add(end)
            plan._ports_of.setdefault(end[0], []).append(end[1])
        plan.links.append(lk)
        plan.by_device.setdefault(lk.a, []).append(i)
        plan.by_device.setdefault(lk.b, []).append(i)
        if lk.a not in roles:
            roles[lk.a] = _role_from_tier(lk.tier, "a")
        if lk.b not in roles:
            roles[lk.b] = _role_from_tier(lk.tier, "b")
    if not plan.links:
        raise IngestError(path, 1, "a cabling plan without cables", field=FIELD)
    for name, role in roles.items():
        plan.devices[name] = PlannedDevice(name=name, role=role)


def _role_from_tier(tier: str, end: str) -> str:
    """A device's role when ip-plan.csv is missing: from the tier of its first cable."""
    table = {"node-leaf": ("host", "leaf"), "leaf-spine": ("leaf", "spine"),
             "spine-core": ("spine", "core"), "fe-node-leaf": ("host", "fe-leaf"),
             "fe-leaf-spine": ("fe-leaf", "fe-spine"), "fe-spine-core": ("fe-spine", "fe-core"),
             "oob-node-leaf": ("host", "oob-leaf"), "oob-leaf-spine": ("oob-leaf", "oob-spine"),
             "fe-storage-leaf": ("storage", "fe-leaf")}
    pair = table.get(tier, ("device", "device"))
    return pair[0] if end == "a" else pair[1]


def _ip_plan(plan: Plan, path: Path) -> None:
    if not path.is_file():
        plan.missing.append("ip-plan.csv")
        return
    header, rows = _csv_rows(path, "IP plan")
    if "device" not in header or "role" not in header:
        raise IngestError(path, 1, "not an IP plan: needs device and role columns",
                          field=FIELD)
    col = {c: header.index(c) for c in header}
    for line, row in rows:
        if len(row) != len(header):
            raise IngestError(path, line, f"{len(row)} fields, the header has {len(header)}",
                              field=FIELD)
        name = row[col["device"]]
        d = plan.devices.get(name) or PlannedDevice(name=name, role=row[col["role"]])
        d.role = row[col["role"]] or d.role
        asn = row[col["asn"]] if "asn" in col else ""
        if asn:
            try:
                d.asn = int(asn)
            except ValueError:
                raise IngestError(path, line, f"asn {asn!r} is not a number",
                                  field=FIELD) from None
        d.loopback = row[col["loopback"]] if "loopback" in col else ""
        d.rack = row[col["rack"]] if "rack" in col else ""
        plan.devices[name] = d
    plan.files.append(str(path.relative_to(plan.root)))


def _addresses(plan: Plan, path: Path) -> None:
    if not path.is_file():
        plan.missing.append("netbox/ip-addresses.csv")
        return
    header, rows = _csv_rows(path, "IP addresses")
    if not {"address", "device", "interface"} <= set(header):
        raise IngestError(path, 1, "needs address, device and interface columns", field=FIELD)
    col = {c: header.index(c) for c in header}
    for line, row in rows:
        if len(row) != len(header):
            raise IngestError(path, line, f"{len(row)} fields, the header has {len(header)}",
                              field=FIELD)
        plan.addresses[(row[col["device"]], row[col["interface"]])] = row[col["address"]]
    plan.files.append(str(path.relative_to(plan.root)))


def _slurm(plan: Plan, d: Path) -> None:
    for name, level in (("topology.conf", "su"), ("topology.yaml", "block")):
        p = d / name
        if not p.is_file():
            plan.missing.append(f"slurm/{name}")
            continue
        try:
            obs = parse_slurm(p)
        except IngestError as exc:
            raise InputError(f"blueprint: {exc}", field=FIELD) from None
        want = "tree" if name == "topology.conf" else "block"
        for m in obs.memberships:
            if m.level == want:
                plan.groups.setdefault(level, {})[m.node] = m.group
        plan.files.append(str(p.relative_to(plan.root)))


def _labels(plan: Plan, path: Path) -> None:
    if not path.is_file():
        plan.missing.append("kubernetes/node-labels.yaml")
        return
    try:
        doc = load(path)
    except YamlError as exc:
        raise InputError(f"blueprint: {exc}", field=FIELD) from None
    if not isinstance(doc.data, dict):
        raise IngestError(path, 1, "node labels must map node names to labels", field=FIELD)
    for node, labels in doc.data.items():
        if not isinstance(labels, dict):
            raise IngestError(path, doc.lines.get((node,), 1), f"{node}: labels must be a "
                              "mapping", field=FIELD)
        plan.labels[str(node)] = {str(k): str(v) for k, v in labels.items()}
        for key, level in (("clusterwright.io/nvlink-domain", "nvlink"),
                           ("clusterwright.io/pod", "pod"), ("clusterwright.io/rack", "rack")):
            if key in labels:
                plan.groups.setdefault(level, {})[str(node)] = str(labels[key])
        if "clusterwright.io/su" in labels and str(node) not in plan.groups.get("su", {}):
            plan.groups.setdefault("su", {})[str(node)] = str(labels["clusterwright.io/su"])
    plan.files.append(str(path.relative_to(plan.root)))


def _host_ports(plan: Plan) -> None:
    """Which rail each backend host port is, and the other names a host port goes by (its
    RDMA device, ``mlx5_<rail>``, ``nic<rail>``), from the server's catalog entry."""
    srv = plan.server
    names = list(srv.backend_port_names) if srv is not None else []
    rdma = list(srv.backend_rdma_devices) if srv is not None else []
    by_host: dict[str, list[PlannedLink]] = defaultdict(list)
    for lk in plan.links:
        if lk.network == "backend" and lk.tier == "node-leaf":
            by_host[lk.a].append(lk)
    for host, links in by_host.items():
        for order, lk in enumerate(links):
            base = lk.a_port
            stem = base[:-2] if base.endswith(("p1", "p2")) and base[:-2] in names else base
            rail = names.index(stem) if stem in names else (
                int(stem[3:]) if stem.startswith("nic") and stem[3:].isdigit() else order)
            plan.rail_of[(host, lk.a_port)] = rail
            aliases = {f"nic{rail}", f"mlx5_{rail}"}
            if rail < len(rdma):
                aliases = {rdma[rail], f"nic{rail}"}
            for a in aliases:
                plan.host_alias.setdefault((host, a), lk.a_port)
    if plan.groups.get("nvlink") is None and srv is not None and srv.nvlink_domain_gpus > (
            srv.gpus // srv.hosts):
        plan.missing.append("NVLink domains (node-labels.yaml clusterwright.io/nvlink-domain)")
