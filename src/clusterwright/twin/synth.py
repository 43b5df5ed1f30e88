"""As-built data with known faults, written in each tool's real format (tests, benchmarks).

``synthesize`` takes a blueprint, injects faults of every kind at random (seeded) on
disjoint cables and nodes, and writes what the running cluster would show: an
``ibnetdiscover`` dump (InfiniBand backend) or ``lldpctl -f json`` tables (Ethernet
networks: switches with ifname port ids, hosts with lldpd's default MAC port ids), FRR
``show bgp summary json`` of every routed switch, Slurm ``topology.conf``, ``kubectl get
nodes -o json``, ``nvidia-smi topo -m`` (pdsh-prefixed), DCGM and port metrics in
Prometheus text, and a per-rank step-time table. It returns the findings the twin must
report: one per injected fault, plus the consequences a fault really has (a node cabled into
another scalable unit is also mislabelled by a scheduler that still has it in the old one).
"""

from __future__ import annotations

import json
import random
import zlib
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from clusterwright.export.hostlist import compress
from clusterwright.twin.blueprint import Plan, PlannedLink

# Relative weights of the injected kinds (of ``n`` faults in all).
WEIGHTS = {
    "missing_link": 25, "miswired_link": 20, "wrong_speed": 25, "slow_link": 12,
    "extra_link": 5, "bgp_down": 3, "unexpected_asn": 0.5, "unexpected_address": 0.5,
    "rail_swap": 2, "wrong_su": 1, "wrong_label": 2, "nvlink_degraded": 1, "gpu_missing": 1,
    "node_unavailable": 1, "slow_gpu": 1,
}
NODE_KINDS = ("rail_swap", "wrong_su", "wrong_label", "nvlink_degraded", "gpu_missing",
              "node_unavailable", "slow_gpu")
SM_CLOCK = 1980.0
STEP_S = 10.0
ITERATIONS = 20


@dataclass
class Synthetic:
    inputs: dict[str, list[Path]]
    truth: set[tuple[str, ...]]
    injected: list[dict[str, object]] = field(default_factory=list)


def _speed_name(gbps: float) -> tuple[int, str]:
    lanes = 4
    per = gbps / lanes
    for name, lane in (("XDR", 200.0), ("NDR", 100.0), ("HDR", 50.0), ("EDR", 25.0),
                       ("FDR", 14.0), ("QDR", 10.0)):
        if abs(per - lane) < 1e-6:
            return lanes, name
    return lanes, "NDR"


class _Gen:
    def __init__(self, plan: Plan, n: int, seed: int) -> None:
        self.plan = plan
        self.rng = random.Random(seed)
        self.n = n
        self.truth: set[tuple[str, ...]] = set()
        self.injected: list[dict[str, object]] = []
        # observed cables: list of (a end, b end, speed, planned link index or -1)
        self.cables: dict[int, tuple[tuple[str, str], tuple[str, str], float]] = {
            lk.index: (lk.ends()[0], lk.ends()[1], lk.speed_gbps) for lk in plan.links}
        self.extra: list[tuple[tuple[str, str], tuple[str, str], float]] = []
        self.used_links: set[int] = set()
        self.used_hosts: set[str] = set()
        self.labels: dict[str, dict[str, str]] = {}  # host -> slurm/k8s group override
        self.down: set[str] = set()
        self.gpus: dict[str, int] = {}
        self.nvdeg: set[str] = set()
        self.slow: dict[str, str] = {}  # host -> "steps" | "dcgm"
        self.errors: set[int] = set()
        self.bgp_down: set[int] = set()
        self.asn: dict[str, int] = {}
        self.rid: dict[str, str] = {}
        self.faulty: set[int] = set()  # planned cables not as planned

    # ------------------------------------------------------------------ choosing
    def counts(self) -> dict[str, int]:
        total = sum(WEIGHTS.values())
        out = {k: int(self.n * w / total) for k, w in WEIGHTS.items()}
        if self.n == 0:
            return out
        out = {k: max(1, v) for k, v in out.items()}
        for k in ("miswired_link", "wrong_su"):  # injected in pairs
            out[k] += out[k] % 2
        # whole-number rounding: the rest goes to (or comes from) the largest kinds, each
        # kind keeping at least one fault (pairs keep two)
        rest = self.n - sum(out.values())
        for k in sorted(out, key=lambda k: -out[k]):
            if rest == 0:
                break
            floor = 2 if k in ("miswired_link", "wrong_su") else 1
            step = 2 if floor == 2 else 1
            while rest > 0 and step == 1:
                out[k] += 1
                rest -= 1
            while rest < 0 and out[k] - step >= floor and (step == 1 or rest <= -2):
                out[k] -= step
                rest += step
        return out

    def free_links(self, pred: object) -> list[PlannedLink]:
        return [lk for lk in self.plan.links if lk.index not in self.used_links
                and lk.a not in self.used_hosts and pred(lk)]  # type: ignore[operator]

    def take(self, lk: PlannedLink) -> None:
        self.used_links.add(lk.index)

    def hosts(self) -> list[str]:
        return [h for h in sorted(self.plan.hosts) if h not in self.used_hosts]

    def routed(self) -> list[PlannedLink]:
        p = self.plan
        def bgp(d: str) -> bool:
            dev = p.devices.get(d)
            return dev is not None and dev.asn is not None

        return [lk for lk in p.links if (lk.a, lk.a_port) in p.addresses
                and (lk.b, lk.b_port) in p.addresses and bgp(lk.a) and bgp(lk.b)]

    def inject(self) -> None:
        c = self.counts()
        plan = self.plan
        rng = self.rng
        hosts = self.hosts()
        rng.shuffle(hosts)
        su = plan.groups.get("su", {})
        # Node faults first (they claim hosts and their backend cables).
        for kind in NODE_KINDS:
            for _ in range(c[kind] // 2 if kind == "wrong_su" else c[kind]):
                if kind == "wrong_su":
                    self._wrong_su(hosts, su)
                    continue
                if not hosts:
                    break
                h = hosts.pop()
                getattr(self, f"_{kind}")(h)
        for kind in ("bgp_down", "unexpected_asn", "unexpected_address", "miswired_link",
                     "missing_link", "wrong_speed", "slow_link", "extra_link"):
            k = c[kind] // 2 if kind == "miswired_link" else c[kind]
            for _ in range(k):
                getattr(self, f"_{kind}")()
        # A kind with too few targets (a small fabric has few routed frontend cables) gives
        # its share to missing cables, so ``n`` faults are injected whenever cables remain.
        for _ in range(self.n - len(self.injected)):
            self._missing_link()

    def _note(self, kind: str, key: tuple[str, ...], **what: object) -> None:
        self.truth.add(key)
        self.injected.append({"kind": kind, "key": list(key), **what})

    # ------------------------------------------------------------------ node faults
    def _backend_links(self, h: str) -> list[PlannedLink]:
        return [self.plan.links[i] for i in self.plan.by_device.get(h, [])
                if self.plan.links[i].tier == "node-leaf" and self.plan.links[i].network
                == "backend"]

    def _rail_swap(self, h: str) -> None:
        ls = self._backend_links(h)
        if len(ls) < 2:
            return
        a, b = self.rng.sample(ls, 2)
        self.used_hosts.add(h)
        for lk in ls:
            self.take(lk)
        self.cables[a.index] = ((h, a.a_port), (b.b, b.b_port), a.speed_gbps)
        self.cables[b.index] = ((h, b.a_port), (a.b, a.b_port), b.speed_gbps)
        self.faulty |= {a.index, b.index}
        self._note("rail_swap", ("rail_swap", h, *sorted((a.a_port, b.a_port))))

    def _wrong_su(self, hosts: list[str], su: dict[str, str]) -> None:
        if not su:
            return
        for i, h1 in enumerate(hosts):
            for j in range(i + 1, len(hosts)):
                h2 = hosts[j]
                if su.get(h1) and su.get(h2) and su[h1] != su[h2]:
                    l1, l2 = self._backend_links(h1), self._backend_links(h2)
                    if len(l1) != len(l2) or not l1:
                        continue
                    hosts.remove(h2)
                    hosts.remove(h1)
                    for x, y in zip(sorted(l1, key=lambda lk: lk.a_port),
                                    sorted(l2, key=lambda lk: lk.a_port), strict=True):
                        self.cables[x.index] = ((h1, x.a_port), (y.b, y.b_port), x.speed_gbps)
                        self.cables[y.index] = ((h2, y.a_port), (x.b, x.b_port), y.speed_gbps)
                        self.take(x)
                        self.take(y)
                        self.faulty |= {x.index, y.index}
                    self.used_hosts |= {h1, h2}
                    for h in (h1, h2):
                        self._note("wrong_su", ("wrong_su", h))
                        # the scheduler still has it where the plan put it
                        self.truth.add(("wrong_label", h, "slurm:su"))
                        self.truth.add(("wrong_label", h, "k8s:su"))
                    return

    def _wrong_label(self, h: str) -> None:
        su = self.plan.groups.get("su", {})
        others = sorted({g for g in su.values() if g != su.get(h)})
        if not others:
            return
        self.used_hosts.add(h)
        which = self.rng.choice(("slurm", "k8s"))
        self.labels[h] = {which: self.rng.choice(others)}
        self._note("wrong_label", ("wrong_label", h, f"{which}:su"))

    def _nvlink_degraded(self, h: str) -> None:
        self.used_hosts.add(h)
        self.nvdeg.add(h)
        self._note("nvlink_degraded", ("nvlink_degraded", h))

    def _gpu_missing(self, h: str) -> None:
        self.used_hosts.add(h)
        self.gpus[h] = self.plan.gpus_per_host - 1
        self._note("gpu_missing", ("gpu_missing", h))

    def _node_unavailable(self, h: str) -> None:
        self.used_hosts.add(h)
        self.down.add(h)
        self._note("node_unavailable", ("node_unavailable", h))

    def _slow_gpu(self, h: str) -> None:
        self.used_hosts.add(h)
        self.slow[h] = "steps" if len(self.slow) % 2 == 0 else "dcgm"
        self._note("slow_gpu", ("slow_gpu", h), via=self.slow[h])

    # ------------------------------------------------------------------ link faults
    def _miswired_link(self) -> None:
        pool = self.free_links(lambda lk: lk.network != "oob" or lk.tier != "oob-node-leaf")
        by_tier: dict[str, list[PlannedLink]] = defaultdict(list)
        for lk in pool:
            by_tier[lk.tier].append(lk)
        tiers = sorted(t for t, ls in by_tier.items() if len(ls) >= 2)
        if not tiers:
            return
        ls = by_tier[self.rng.choice(tiers)]
        for _ in range(50):
            a, b = self.rng.sample(ls, 2)
            # two cables of one host crossed are a rail swap, not two miswires
            if (a.b, a.b_port) != (b.b, b.b_port) and not (
                    a.tier == "node-leaf" and a.a == b.a):
                break
        self.take(a)
        self.take(b)
        self.cables[a.index] = ((a.a, a.a_port), (b.b, b.b_port), a.speed_gbps)
        self.cables[b.index] = ((b.a, b.a_port), (a.b, a.b_port), b.speed_gbps)
        self.faulty |= {a.index, b.index}
        for (x, xp), (y, yp) in (self.cables[a.index][:2], self.cables[b.index][:2]):
            self._note("miswired_link", ("miswired_link", *sorted((f"{x}:{xp}", f"{y}:{yp}"))))

    def _missing_link(self) -> None:
        pool = self.free_links(lambda lk: True)
        if not pool:
            return
        lk = self.rng.choice(pool)
        self.take(lk)
        del self.cables[lk.index]
        self.faulty.add(lk.index)
        self._note("missing_link", ("missing_link", lk.cable))

    def _wrong_speed(self) -> None:
        pool = self.free_links(lambda lk: lk.network in ("backend", "frontend"))
        if not pool:
            return
        lk = self.rng.choice(pool)
        self.take(lk)
        a, b, s = self.cables[lk.index]
        self.cables[lk.index] = (a, b, s / 2)
        self._note("wrong_speed", ("wrong_speed", lk.cable))

    def _slow_link(self) -> None:
        pool = self.free_links(lambda lk: lk.network == "backend")
        if not pool:
            return
        lk = self.rng.choice(pool)
        self.take(lk)
        self.errors.add(lk.index)
        self._note("slow_link", ("slow_link", lk.cable))

    def _extra_link(self) -> None:
        sw = sorted(d.name for d in self.plan.devices.values()
                    if d.role in ("fe-leaf", "oob-leaf", "fe-spine", "oob-spine")
                    or (d.role in ("leaf", "spine") and self.plan.protocol == "ethernet"))
        if len(sw) < 2:
            return
        a, b = self.rng.sample(sw, 2)
        k = 1000 + len(self.extra)
        self.extra.append(((a, f"swp{k}"), (b, f"swp{k}"), 100.0))
        self._note("extra_link", ("extra_link", *sorted((f"{a}:swp{k}", f"{b}:swp{k}"))))

    def _bgp_down(self) -> None:
        pool = [lk for lk in self.routed() if lk.index not in self.used_links
                and lk.index not in self.faulty]
        if not pool:
            return
        lk = self.rng.choice(pool)
        self.take(lk)
        self.bgp_down.add(lk.index)
        self._note("bgp_down", ("bgp_down", lk.cable))

    def _unexpected_asn(self) -> None:
        sw = [d for d in sorted(self.plan.devices.values(), key=lambda d: d.name)
              if d.asn is not None and d.name not in self.asn and d.name not in self.rid]
        if not sw:
            return
        d = self.rng.choice(sw)
        self.asn[d.name] = (d.asn or 0) + 77
        self._note("unexpected_asn", ("unexpected_asn", d.name))

    def _unexpected_address(self) -> None:
        sw = [d for d in sorted(self.plan.devices.values(), key=lambda d: d.name)
              if d.loopback and d.name not in self.rid and d.name not in self.asn]
        if not sw:
            return
        d = self.rng.choice(sw)
        self.rid[d.name] = "192.0.2.77"
        self._note("unexpected_address", ("unexpected_address", d.name, "router-id"))

    # ------------------------------------------------------------------ writing
    def observed(self) -> list[tuple[tuple[str, str], tuple[str, str], float]]:
        return list(self.cables.values()) + self.extra

    def write(self, out: Path) -> dict[str, list[Path]]:
        out.mkdir(parents=True, exist_ok=True)
        plan = self.plan
        inputs: dict[str, list[Path]] = defaultdict(list)
        net_of = {(lk.a, lk.a_port): lk.network for lk in plan.links}
        net_of.update({(lk.b, lk.b_port): lk.network for lk in plan.links})
        cables = self.observed()
        ib = [c for c in cables if net_of.get(c[0]) == "backend" and plan.protocol
              == "infiniband"]
        eth = [c for c in cables if c not in ib]
        files: list[tuple[str, str, Callable[[], str]]] = []
        if ib:
            files.append(("ibnet", "ibnetdiscover.txt", lambda: self._ibnet(ib)))
        if eth:
            files.append(("lldp", "lldp.json", lambda: self._lldp(eth)))
        if self.routed():
            files.append(("bgp", "bgp.json", self._bgp))
        if plan.groups.get("su"):
            files.append(("slurm", "topology.conf", self._slurm))
        files += [("k8s", "nodes.json", self._kube), ("gpu_topo", "topo.txt", self._topo),
                  ("metrics", "metrics.prom", self._metrics), ("steps", "steps.csv", self._steps)]
        for key, name, render in files:
            p = out / name
            p.write_text(render())
            inputs[key].append(p)
        return dict(inputs)

    def _ibnet(self, cables: list[tuple[tuple[str, str], tuple[str, str], float]]) -> str:
        plan = self.plan
        role = {n: d.role for n, d in plan.devices.items()}
        rdma = list(plan.server.backend_rdma_devices) if plan.server else []
        guid: dict[str, int] = {}
        lid: dict[str, int] = {}

        def node(dev: str, port: str) -> str:
            """The IB node of an end: the switch, or the host's HCA."""
            if role.get(dev) == "host":
                rail = plan.rail_of.get((dev, port), 0)
                hca = rdma[rail] if rail < len(rdma) else f"mlx5_{rail}"
                return f"{dev} {hca}"
            return dev

        def pnum(dev: str, port: str) -> int:
            if role.get(dev) == "host":
                return 1
            cage, _, sub = port.partition("/")
            ppc = plan.switch_ports_per_cage(dev)
            return (int(cage) - 1) * ppc + int(sub or 1)

        ports: dict[str, list[tuple[int, str, int, float]]] = defaultdict(list)
        for (a, ap), (b, bp), s in cables:
            na, nb = node(a, ap), node(b, bp)
            for n in (na, nb):
                if n not in guid:
                    guid[n] = 0x0002C90300000000 + len(guid) + 1
                    lid[n] = len(lid) + 1
            ports[na].append((pnum(a, ap), nb, pnum(b, bp), s))
            ports[nb].append((pnum(b, bp), na, pnum(a, ap), s))
        lines = ["#", "# Topology file: generated on Mon Jan  1 00:00:00 2024", "#",
                 "# Initiated from node 0002c90300000001 port 0002c90300000001"]
        for n in sorted(ports, key=lambda x: (" " in x, x)):
            is_sw = " " not in n
            g = guid[n]
            lines += ["", "vendid=0x2c9", f"devid=0x{0xd2f2 if is_sw else 0x1021:x}"]
            if is_sw:
                lines += [f"switchguid=0x{g:x}(0x{g:x})",
                          f'Switch\t64 "S-{g:016x}"\t\t# "MF0;{n}:MQM9700/U1" enhanced port 0 '
                          f"lid {lid[n]} lmc 0"]
            else:
                lines += [f"caguid=0x{g:x}", f'Ca\t1 "H-{g:016x}"\t\t# "{n}"']
            for p, rn, rp, s in sorted(ports[n]):
                rg = guid[rn]
                lanes, sp = _speed_name(s)
                r_is_sw = " " not in rn
                rdesc = f"MF0;{rn}:MQM9700/U1" if r_is_sw else rn
                rtag = f'"S-{rg:016x}"[{rp}]' if r_is_sw else f'"H-{rg:016x}"[{rp}]({rg + 1:x}) '
                if is_sw:
                    lines.append(f'[{p}]\t{rtag}\t\t# "{rdesc}" lid {lid[rn]} {lanes}x{sp}')
                else:
                    lines.append(f'[{p}]({g + 1:x}) \t{rtag}\t\t# lid {lid[n]} lmc 0 "{rdesc}" '
                                 f"lid {lid[rn]} {lanes}x{sp}")
        return "\n".join(lines) + "\n"

    def _lldp(self, cables: list[tuple[tuple[str, str], tuple[str, str], float]]) -> str:
        plan = self.plan
        role = {n: d.role for n, d in plan.devices.items()}
        tables: dict[str, list[tuple[str, str, str]]] = defaultdict(list)
        for (a, ap), (b, bp), _ in cables:
            tables[a].append((ap, b, bp))
            tables[b].append((bp, a, ap))
        doc: dict[str, object] = {}
        for dev in sorted(tables):
            if role.get(dev) in ("host", "storage") and dev not in plan.hosts:
                continue
            items = []
            for ifname, rdev, rport in sorted(tables[dev]):
                host = role.get(rdev) == "host"
                mac = (f"52:54:00:{zlib.crc32(rdev.encode()) & 0xff:02x}:"
                       f"{zlib.crc32(rport.encode()) & 0xff:02x}:01")
                pid = ({"type": "mac", "value": mac} if host else
                       {"type": "ifname", "value": rport})
                items.append({ifname: {
                    "via": "LLDP", "rid": "1", "age": "0 day, 01:00:00",
                    "chassis": {rdev: {"id": {"type": "mac", "value": mac},
                                       "descr": "Linux", "capability": []}},
                    "port": {"id": pid, "descr": rport, "ttl": "120"}}})
            itf: object = items[0] if len(items) == 1 else items
            doc[dev] = {"lldp": {"interface": itf}}
        return json.dumps(doc, indent=2) + "\n"

    def _bgp(self) -> str:
        plan = self.plan
        peers: dict[str, dict[str, object]] = defaultdict(dict)
        for lk in self.routed():
            ok = lk.index not in self.faulty and lk.index not in self.bgp_down
            a_end, b_end = lk.ends()
            for (d, _), (o, op) in ((a_end, b_end), (b_end, a_end)):
                addr = plan.addresses[(o, op)].split("/")[0]
                od = plan.devices.get(o)
                ras = self.asn.get(o, od.asn if od else None)
                peers[d][addr] = {"remoteAs": ras if ok else 0,
                                  "state": "Established" if ok else "Active",
                                  "desc": f"{o} {op}"}
        doc = {}
        for d in sorted(peers):
            pd = plan.devices[d]
            doc[d] = {"ipv4Unicast": {
                "routerId": self.rid.get(d, pd.loopback), "as": self.asn.get(d, pd.asn),
                "peers": peers[d]}}
        return json.dumps(doc, indent=1) + "\n"

    def _slurm(self) -> str:
        su = self.plan.groups["su"]
        groups: dict[str, list[str]] = defaultdict(list)
        for h, g in su.items():
            groups[self.labels.get(h, {}).get("slurm", g)].append(h)
        lines = [f"SwitchName={g} Nodes={compress(hs)}" for g, hs in sorted(groups.items())]
        lines.append(f"SwitchName=spine Switches={compress(sorted(groups))}")
        return "\n".join(lines) + "\n"

    def _kube(self) -> str:
        plan = self.plan
        su = plan.groups.get("su", {})
        items = []
        for h in sorted(plan.hosts):
            labels = {"kubernetes.io/hostname": h}
            if h in su:
                labels["clusterwright.io/su"] = self.labels.get(h, {}).get("k8s", su[h])
            items.append({
                "apiVersion": "v1", "kind": "Node", "metadata": {"name": h, "labels": labels},
                "status": {"allocatable": {"nvidia.com/gpu": str(self.gpus.get(
                    h, plan.gpus_per_host))},
                    "conditions": [{"type": "Ready",
                                    "status": "False" if h in self.down else "True"}]}})
        return json.dumps({"apiVersion": "v1", "kind": "List", "items": items}, indent=1) + "\n"

    def _topo(self) -> str:
        out = []
        for h in sorted(self.plan.hosts):
            n = self.gpus.get(h, self.plan.gpus_per_host)
            rows = ["\t" + "\t".join(f"GPU{i}" for i in range(n)) + "\tCPU Affinity"]
            for i in range(n):
                cells = []
                for j in range(n):
                    v = "X" if i == j else "NV18"
                    if h in self.nvdeg and {i, j} == {0, 1}:
                        v = "NV12"
                    cells.append(v)
                rows.append(f"GPU{i}\t" + "\t".join(cells) + "\t0-55")
            rows += ["", "Legend:", "", "  X    = Self",
                     "  NV#  = Connection traversing a bonded set of # NVLinks"]
            out += [f"{h}: {r}" for r in rows]
        return "\n".join(out) + "\n"

    def _metrics(self) -> str:
        plan = self.plan
        rng = random.Random(7)
        lines = ["# HELP DCGM_FI_DEV_SM_CLOCK SM clock frequency (in MHz).",
                 "# TYPE DCGM_FI_DEV_SM_CLOCK gauge"]
        for h in sorted(plan.hosts):
            for g in range(self.gpus.get(h, plan.gpus_per_host)):
                v = SM_CLOCK - rng.uniform(0, 15)
                if self.slow.get(h) == "dcgm" and g == 3:
                    v = 1410.0
                lines.append(f'DCGM_FI_DEV_SM_CLOCK{{gpu="{g}",UUID="GPU-{h}-{g}",'
                             f'device="nvidia{g}",modelName="NVIDIA H100 80GB HBM3",'
                             f'Hostname="{h}"}} {v:.0f}')
        lines += ["# TYPE node_infiniband_symbol_error_total counter",
                  "# TYPE node_network_receive_errs_total counter",
                  "# TYPE node_network_speed_bytes gauge"]
        ib = plan.protocol == "infiniband"
        rdma = list(plan.server.backend_rdma_devices) if plan.server else []
        for i, (a, _, _) in sorted(self.cables.items()):
            lk = plan.links[i]
            if lk.network != "backend":
                continue
            dev, port = a
            if ib and lk.a in plan.hosts:
                rail = plan.rail_of.get((lk.a, lk.a_port), 0)
                port = rdma[rail] if rail < len(rdma) else f"mlx5_{rail}"
            elif ib:
                cage, _, sub = port.partition("/")
                port = str((int(cage) - 1) * plan.switch_ports_per_cage(dev) + int(sub or 1))
            err = 50000 if i in self.errors else rng.randint(0, 5)
            name = "node_infiniband_symbol_error_total" if ib else \
                "node_network_receive_errs_total"
            item = f'device="{port}"' + (',port="1"' if ib else "")
            lines.append(f'{name}{{{item},instance="{dev}:9100"}} {err}')
        for i, (a, _, s) in sorted(self.cables.items()):
            lk = plan.links[i]
            if (ib and lk.network == "backend") or lk.network == "oob":
                continue
            dev, port = a
            lines.append(f'node_network_speed_bytes{{device="{port}",instance="{dev}:9100"}}'
                         f" {s * 1e9 / 8:.0f}")
        return "\n".join(lines) + "\n"

    def _steps(self) -> str:
        plan = self.plan
        rng = random.Random(11)
        lines = ["node,rank,iteration,step_time_s"]
        gph = plan.gpus_per_host
        for hi, h in enumerate(sorted(plan.hosts)):
            slow = 1.12 if self.slow.get(h) == "steps" else 1.0
            for g in range(gph):
                for it in range(ITERATIONS):
                    t = STEP_S * slow * (1 + rng.uniform(-0.003, 0.003))
                    lines.append(f"{h},{hi * gph + g},{it},{t:.5f}")
        return "\n".join(lines) + "\n"


def synthesize(plan: Plan, out: Path, faults: int = 100, seed: int = 0) -> Synthetic:
    """Inject ``faults`` faults (every kind, weighted by ``WEIGHTS``) and write the as-built
    data under ``out``."""
    g = _Gen(plan, faults, seed)
    g.inject()
    inputs = g.write(Path(out))
    return Synthetic(inputs=inputs, truth=g.truth, injected=g.injected)
