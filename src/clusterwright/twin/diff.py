"""Compare the cluster as built with its blueprint: cables port by port, speeds, where each
node sits (scalable unit, block, NVLink domain, labels), GPUs and NVLinks, ASNs and
addresses. Each difference is a ``Finding`` with the evidence (file and line) and a repair
that names the cable, the port it is on and the port it belongs in.

Cables. Every adjacency a tool reports (LLDP from either end, ibnetdiscover from both) is
resolved to planned ports: the same name, a host port's other names (its RDMA device, from
the server's catalog entry), or an InfiniBand port number in the switch's cage/port
naming. Both ends' views of one cable merge. Then:

- a cable joining the two ends of one planned cable matches it (its rate is checked);
- a cable touching planned ports of different planned cables (or one planned and one
  unplanned port) is miswired: its repair keeps the end at the lower tier (host, then leaf,
  then spine) and moves the other end to the port planned for it; the cables of one host
  crossed among that host's own leaves are one ``rail_swap``; all cables of a host landing
  on another scalable unit's leaves are one ``wrong_su``;
- a cable between two unplanned ports (or to a device the plan does not have) is extra;
- a planned cable with nothing on either end, while at least one end was seen, is missing
  (cable absent or link down: LLDP and ibnetdiscover show neither); one whose ends were not
  in any dump is counted under "could not see".

Placement (scheduler topology and labels) is compared as partitions, so a scheduler may
name its groups anything: a node is misplaced when its group differs from the group most of
its planned peers share (peers by the as-built cabling when the node was moved). The rest
(GPUs, NVLinks, ASNs, addresses, sessions) compares values.
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from clusterwright.ingest.common import IngestError, Names
from clusterwright.ingest.model import Adjacency, Observations
from clusterwright.twin.blueprint import Plan, PlannedLink
from clusterwright.twin.model import Finding, Move

# Labels and scheduler groupings the twin knows how to compare, by what they group.
LEVELS = {
    "tree": "su", "block": "block",
    "label:clusterwright.io/su": "su", "label:clusterwright.io/pod": "pod",
    "label:clusterwright.io/nvlink-domain": "nvlink", "label:clusterwright.io/rack": "rack",
    "label:network.topology.nvidia.com/block": "su",
    "label:network.topology.nvidia.com/accelerator": "nvlink",
    "label:nvidia.com/gpu.clique": "nvlink",
}
TIER_RANK = {"host": 0, "storage": 0, "leaf": 1, "fe-leaf": 1, "oob-leaf": 1, "spine": 2,
             "fe-spine": 2, "oob-spine": 2, "core": 3, "fe-core": 3}
SPEED_TOLERANCE = 0.02  # a rate within 2 % of the plan is the plan (FDR's 14.0625 vs 14)
# A port's error counter is an outlier at this many times its tier's median and this many
# robust standard deviations (1.4826 MAD) above it (Leys et al. 2013; see twin/slow.py).
ERROR_RATIO = 10.0
ERROR_MIN = 100.0
_UNKNOWN_PORT = "?"

End = tuple[str, str]


@dataclass
class _Cable:
    """One observed cable: two ends (device, port; port "?" when not known) and where it
    was seen."""

    a: End
    b: End
    evidence: list[str] = field(default_factory=list)
    speed_gbps: float | None = None
    via: set[str] = field(default_factory=set)


@dataclass
class Comparison:
    """The findings, what the inputs covered and could not see."""

    findings: list[Finding]
    coverage: list[dict[str, object]]
    unseen: list[str]
    notes: list[str]
    physical_su: dict[str, str]  # host -> scalable unit it is cabled into
    drained: set[str]  # hosts out of service (from the findings)


def _ev(adj: Adjacency) -> str:
    rp = f" {adj.remote_port}" if adj.remote_port else ""
    return f"{adj.source}:{adj.line}: {adj.local} {adj.local_port} sees {adj.remote}{rp}"


class _Differ:
    def __init__(self, plan: Plan, obs: Observations) -> None:
        self.plan = plan
        self.obs = obs
        known = set(plan.devices)
        for groups in plan.groups.values():
            known |= set(groups)
        self.names = Names(known)
        self.findings: list[Finding] = []
        self.unseen: list[str] = []
        self.notes: list[str] = list(obs.notes)
        self.coverage: list[dict[str, object]] = []
        # (device, medium) whose cabling a dump showed: ibnetdiscover shows InfiniBand ports,
        # LLDP Ethernet ones, so a host in an ibnetdiscover dump says nothing about its
        # frontend cables.
        self.covered: set[tuple[str, str]] = set()
        self.link_finding: dict[int, Finding] = {}  # planned cable -> its cabling finding
        self.physical_su: dict[str, str] = {}
        self._resolved: dict[str, str | None] = {}
        self._leaf_su_cache: dict[str, str] | None = None
        self._folded: dict[tuple[str, str], str] = {
            (d, p.casefold()): p for d, p in plan.known_ports}
        self._renamed: dict[str, str] = {}  # host -> a port name it reports that is not planned
        self._unnamed: set[str] = set()  # switches reporting no planned port name

    def medium(self, lk: PlannedLink) -> str:
        """What shows a cable: ibnetdiscover an InfiniBand backend's, LLDP the others."""
        return "ib" if lk.network == "backend" and self.plan.protocol == "infiniband" else "eth"

    # ------------------------------------------------------------------ names
    def dev(self, name: str) -> str | None:
        hit = self._resolved.get(name, "")
        if hit == "":
            hit = self.names.resolve(name)
            self._resolved[name] = hit
        return hit

    def port(self, dev: str, port: str, alt: str = "") -> str | None:
        """The planned name of a port a tool reports, or None if it is not a planned port."""
        plan = self.plan
        known = plan.known_ports
        for p in (port, alt):
            if p and (dev, p) in known:
                return p
        for p in (port, alt.split("/", 1)[0] if alt else ""):
            if p:
                hit = plan.host_alias.get((dev, p))
                if hit is not None and (dev, hit) in known:
                    return hit
        for p in (port, alt):
            hit = self._folded.get((dev, p.casefold())) if p else None
            if hit is not None:
                return hit  # switch OSes differ in case (SWP1S0 for swp1s0)
        if port.isdigit():
            ppc = plan.switch_ports_per_cage(dev)
            n = int(port)
            if n >= 1:
                name = f"{(n - 1) // ppc + 1}/{(n - 1) % ppc + 1}"
                if (dev, name) in known:
                    return name
        return None

    def check_sources(self) -> None:
        """A dump whose devices are none of the blueprint's came from another cluster."""
        for (kind, src), names in self.obs.reported.items():
            if not names:
                continue
            known = [n for n in names if self.dev(n) is not None]
            unknown = [n for n in names if self.dev(n) is None]
            if not known:
                first = min(names.values())
                ex = ", ".join(repr(n) for n in sorted(unknown)[:3])
                raise IngestError(src, first, f"none of the {len(names):,} device(s) named in "
                                  f"this {kind} dump is in the blueprint (e.g. {ex}): a dump "
                                  "from another cluster, or the wrong blueprint", field=kind)
            self.coverage.append({
                "input": kind, "file": src, "devices": len(known),
                "unknown_devices": len(unknown),
                "unknown_examples": sorted(unknown)[:5],
            })
            if unknown:
                self.notes.append(f"{src}: {len(unknown):,} device name(s) not in the "
                                  f"blueprint, ignored (e.g. {sorted(unknown)[0]!r})")

    # ------------------------------------------------------------------ cables
    def _host_port(self, dev: str, name: str) -> str:
        """A host port the plan does not name (``ens1f0np0``): matched at the device level
        (docs/twin.md), not taken for an unplanned port; a switch port keeps its name."""
        d = self.plan.devices.get(dev)
        renamed = d is not None and (d.role == "host" or dev in self._unnamed)
        if not renamed or not name or _looks_mac(name):
            return name if name and not _looks_mac(name) else _UNKNOWN_PORT
        self._renamed.setdefault(dev, name)
        return _UNKNOWN_PORT

    def _unnamed_switches(self) -> set[str]:
        """Switches most of whose reported ports have no planned name (a NOS naming them its
        own way, SONiC's Ethernet0 for swp1s0; the management port may still match): their
        cables match at the device level, rather than each reading as moved to an unplanned
        port. A few unplanned names among planned ones stay what they look like: cables moved."""
        named: dict[str, int] = {}
        unnamed: dict[str, int] = {}
        for adj in self.obs.adjacencies:
            d = self.dev(adj.local)
            if d is None or d not in self.plan.devices or self.plan.devices[d].role == "host":
                continue
            if self.port(d, adj.local_port, adj.local_port_alt) is None:
                unnamed[d] = unnamed.get(d, 0) + 1
            else:
                named[d] = named.get(d, 0) + 1
        return {d for d, n in unnamed.items() if n >= 4 and n > 2 * named.get(d, 0)}

    def cables(self) -> list[_Cable]:
        self._unnamed = self._unnamed_switches()
        views: dict[End, tuple[End, Adjacency]] = {}
        local_end: dict[End, End] = {}  # a host port under another name: its device-level end
        for adj in self.obs.adjacencies:
            ld = self.dev(adj.local)
            if ld is None:
                continue
            self.covered.add((ld, "ib" if adj.via == "ibnet" else "eth"))
            lp = self.port(ld, adj.local_port, adj.local_port_alt) or adj.local_port
            if (ld, lp) in self.plan.ignored_ports:
                continue
            if (ld, lp) not in self.plan.known_ports and \
                    self._host_port(ld, lp) == _UNKNOWN_PORT and lp:
                local_end[(ld, lp)] = (ld, _UNKNOWN_PORT)
            rd = self.dev(adj.remote)
            if rd is None:
                rend: End = (f"?{adj.remote}", adj.remote_port or _UNKNOWN_PORT)
            else:
                rp = self.port(rd, adj.remote_port, adj.remote_port_alt)
                rend = (rd, rp if rp is not None else self._host_port(rd, adj.remote_port))
                if rend in self.plan.ignored_ports:
                    continue
            prev = views.get((ld, lp))
            if prev is not None and prev[0] != rend:
                self.notes.append(f"{adj.source}:{adj.line}: {ld} {lp} is reported with two "
                                  f"neighbours ({prev[0][0]} {prev[0][1]} and {rend[0]} "
                                  f"{rend[1]}); the first is used")
                continue
            views[(ld, lp)] = (rend, adj)
        # A remote port unknown in one view may be known from the other end's view.
        by_dev_remote: dict[tuple[str, End], End] = {}
        for lend, (rend, _) in views.items():
            if rend[1] != _UNKNOWN_PORT:
                by_dev_remote[(lend[0], rend)] = lend
        cables: dict[frozenset[End], _Cable] = {}
        for lend, (rend, adj) in views.items():
            if rend[1] == _UNKNOWN_PORT and not rend[0].startswith("?"):
                back = by_dev_remote.get((rend[0], lend))
                if back is not None:
                    rend = local_end.get(back, back)
            key = frozenset((local_end.get(lend, lend), rend))
            c = cables.get(key)
            if c is None:
                c = cables[key] = _Cable(local_end.get(lend, lend), rend)
            c.evidence.append(_ev(adj))
            c.via.add(adj.via)
            if adj.speed_gbps is not None:
                c.speed_gbps = adj.speed_gbps if c.speed_gbps is None else min(
                    c.speed_gbps, adj.speed_gbps)
        if self._renamed:
            ex = ", ".join(f"{h} {p}" for h, p in sorted(self._renamed.items())[:3])
            self.notes.append(
                f"{len(self._renamed):,} device(s) report ports under names the plan does not "
                f"use ({ex}): their cables are matched at the device level, so which port is "
                "on a cable (for a host, a rail swap) is not checked")
        return list(cables.values())

    def compare_cables(self) -> None:
        plan = self.plan
        cables = self.cables()
        if not self.obs.adjacencies:
            return
        matched: dict[int, _Cable] = {}
        wrong: list[_Cable] = []
        extra: list[_Cable] = []
        occupied: set[End] = set()
        anonymous = 0
        for c in cables:
            la, lb = plan.port.get(c.a), plan.port.get(c.b)
            if la is not None and la == lb:
                matched[la] = c
                continue
            # An HCA with no host name (its firmware's default description): the switch end
            # is seen in use, the host end cannot be compared.
            if any(e[0][1:] in self.obs.unidentified for e in (c.a, c.b) if e[0][:1] == "?"):
                seen = la if la is not None else lb
                if seen is not None:
                    matched[seen] = c
                    anonymous += 1
                continue
            # A far end known only by device: the same device as planned is a match.
            if la is not None and c.b[1] == _UNKNOWN_PORT and plan.links[la].other(*c.a)[0] \
                    == c.b[0]:
                matched[la] = c
                continue
            if lb is not None and c.a[1] == _UNKNOWN_PORT and plan.links[lb].other(*c.b)[0] \
                    == c.a[0]:
                matched[lb] = c
                continue
            if la is None and lb is None:
                extra.append(c)
            else:
                wrong.append(c)
                occupied.update((c.a, c.b))
        self._speeds(matched)
        self._miswires(wrong)
        for c in extra:
            self._extra(c)
        unseen: Counter[str] = Counter()
        for lk in plan.links:
            if lk.index in matched:
                continue
            ea, eb = lk.ends()
            if ea in occupied or eb in occupied:
                continue
            m = self.medium(lk)
            if (lk.a, m) in self.covered or (lk.b, m) in self.covered:
                self._missing(lk)
            else:
                unseen[lk.tier] += 1
        for tier, n in sorted(unseen.items()):
            self.unseen.append(f"{n:,} planned {tier} cable(s): neither end is in any LLDP or "
                               "ibnetdiscover dump")
        if anonymous:
            self.unseen.append(
                f"{anonymous:,} cable(s) reach HCAs that report their firmware's default "
                f"description instead of '<host> <hca>' ({len(self.obs.unidentified):,} "
                "HCAs): their host ends are not compared; set the node descriptions (rdma-ndd) "
                "and dump again")
        shown = {d for d, _ in self.covered}
        never = [d for d in plan.devices.values() if d.name not in shown
                 and d.role != "storage" and plan.by_device.get(d.name)]
        if never:
            roles = Counter(d.role for d in never)
            self.unseen.append("devices in no LLDP/ibnetdiscover dump: " + ", ".join(
                f"{n:,} {r}" for r, n in sorted(roles.items())))

    def _finding(self, f: Finding, links: list[int]) -> Finding:
        f.links = sorted(set(links))
        for i in f.links:
            self.link_finding.setdefault(i, f)
        self.findings.append(f)
        return f

    def _missing(self, lk: PlannedLink) -> None:
        seen = [d for d in (lk.a, lk.b) if (d, self.medium(lk)) in self.covered]
        self._finding(Finding(
            kind="missing_link", subject=f"{lk.a} {lk.a_port} - {lk.b} {lk.b_port}",
            summary=f"cable {lk.cable} ({lk.tier}) {lk.a} {lk.a_port} - {lk.b} {lk.b_port} "
                    "shows no neighbour: absent, unplugged or down",
            expected=f"{lk.a} {lk.a_port} <-> {lk.b} {lk.b_port} at {lk.speed_gbps:g} Gb/s",
            observed=f"no neighbour on {' or '.join(seen)} for this port",
            repair=f"check cable {lk.cable}: seat or replace it between {lk.a} {lk.a_port} "
                   f"(rack {lk.a_rack}) and {lk.b} {lk.b_port} (rack {lk.b_rack}), check "
                   "both transceivers and that neither port is administratively down",
            key=("missing_link", lk.cable),
            evidence=[f"{self.plan.root}/cabling.csv:{lk.line}: planned {lk.cable}"],
            moves=[Move(lk.cable, None, (lk.b, lk.b_port), note=f"from {lk.a} {lk.a_port}")],
            devices=[lk.a, lk.b]), [lk.index])

    def _extra(self, c: _Cable) -> None:
        ends = sorted((c.a, c.b))
        names = [f"{d.lstrip('?')} {p}" for d, p in ends]
        foreign = [d.lstrip("?") for d, _ in ends if d.startswith("?")]
        self._finding(Finding(
            kind="extra_link", subject=" - ".join(names),
            summary=f"a cable the plan does not have: {names[0]} - {names[1]}"
                    + (f" ({', '.join(foreign)} is not in the blueprint)" if foreign else ""),
            expected="no cable on these ports", observed=f"{names[0]} <-> {names[1]}",
            repair=f"remove the cable between {names[0]} and {names[1]}, or add it to the "
                   "blueprint if it is intended",
            key=("extra_link", *(f"{d.lstrip('?')}:{p}" for d, p in ends)),
            evidence=c.evidence,
            moves=[Move("", ends[0], None, note=f"and from {names[1]}")],
            devices=[d.lstrip("?") for d, _ in ends]), [])

    def _speeds(self, matched: dict[int, _Cable]) -> None:
        plan = self.plan
        port_speed: dict[End, tuple[float, str]] = {}
        for s in self.obs.samples:
            if s.metric != "port_speed_gbps":
                continue
            d = self.dev(s.device)
            if d is None:
                continue
            p = self.port(d, s.item, "")
            if p is not None:
                port_speed[(d, p)] = (s.value, f"{s.source}:{s.line}: {s.raw_name} "
                                      f"{s.device} {s.item} = {s.value:g} Gb/s")
        for i, lk in enumerate(plan.links):
            seen: list[tuple[float, str]] = []
            c = matched.get(i)
            if c is not None and c.speed_gbps is not None:
                seen.append((c.speed_gbps, c.evidence[0]))
            for end in lk.ends():
                if end in port_speed and port_speed[end][0] > 0:
                    seen.append(port_speed[end])
            if not seen:
                continue
            rate = min(r for r, _ in seen)
            if abs(rate - lk.speed_gbps) <= SPEED_TOLERANCE * lk.speed_gbps:
                continue
            if i in self.link_finding:
                continue
            self._finding(Finding(
                kind="wrong_speed", subject=f"{lk.a} {lk.a_port} - {lk.b} {lk.b_port}",
                summary=f"cable {lk.cable} {lk.a} {lk.a_port} - {lk.b} {lk.b_port} runs at "
                        f"{rate:g} Gb/s, planned {lk.speed_gbps:g}",
                expected=f"{lk.speed_gbps:g} Gb/s", observed=f"{rate:g} Gb/s",
                repair=f"cable {lk.cable}: check the transceivers and cable part at {lk.a} "
                       f"{lk.a_port} and {lk.b} {lk.b_port} (a lower-rate or damaged part, a "
                       "lane down, a breakout or speed setting on the port), replace the "
                       "faulty part and re-check the link rate",
                key=("wrong_speed", lk.cable), evidence=[ev for _, ev in seen],
                devices=[lk.a, lk.b], impact={"rate_gbps": rate}), [i])

    def _miswires(self, wrong: list[_Cable]) -> None:
        plan = self.plan
        role = {n: d.role for n, d in plan.devices.items()}
        by_host: dict[str, list[_Cable]] = defaultdict(list)
        rest: list[_Cable] = []
        for c in wrong:
            host = next((d for d, _ in (c.a, c.b) if role.get(d) == "host"), None)
            lk = plan.port.get((host, c.a[1] if c.a[0] == host else c.b[1])) if host else None
            if host is not None and lk is not None and plan.links[lk].tier == "node-leaf":
                by_host[host].append(c)
            else:
                rest.append(c)
        for host, cs in sorted(by_host.items()):
            if self._rail_swap(host, cs) or self._wrong_su(host, cs):
                continue
            rest += cs
        for c in rest:
            self._miswire(c)

    def _host_end(self, host: str, c: _Cable) -> tuple[End, End]:
        return (c.a, c.b) if c.a[0] == host else (c.b, c.a)

    def _rail_swap(self, host: str, cs: list[_Cable]) -> bool:
        """The host's cables are crossed among its own planned leaf ports."""
        plan = self.plan
        if len(cs) < 2:
            return False
        moves: list[Move] = []
        ports: list[str] = []
        for c in cs:
            h, far = self._host_end(host, c)
            lf = plan.port.get(far)
            if lf is None or plan.links[lf].a != host or plan.links[lf].tier != "node-leaf":
                return False
            want = plan.links[lf].a_port  # the host port this leaf port belongs to
            ports.append(h[1])
            moves.append(Move(plan.links[lf].cable, h, (host, want),
                              note=f"the cable from {far[0]} {far[1]}"))
        if sorted(ports) != sorted(m.dst[1] for m in moves if m.dst):
            return False
        links = [plan.port[(host, p)] for p in ports]
        rails = sorted(plan.rail_of.get((host, p), -1) for p in ports)
        self._finding(Finding(
            kind="rail_swap", subject=f"{host} {', '.join(sorted(ports))}",
            summary=f"{host}: the cables of rails {', '.join(map(str, rails))} are crossed "
                    f"({', '.join(sorted(ports))} go to each other's leaves)",
            expected="; ".join(f"{host} {plan.links[i].a_port} -> {plan.links[i].b} "
                               f"{plan.links[i].b_port}" for i in sorted(links)),
            observed="; ".join(f"{self._host_end(host, c)[0][1]} -> "
                               f"{self._host_end(host, c)[1][0]} {self._host_end(host, c)[1][1]}"
                               for c in cs),
            repair=f"at {host}, swap the cables in " + " and ".join(sorted(ports))
                   + ": " + "; ".join(m.text() for m in moves),
            key=("rail_swap", host, *sorted(ports)),
            evidence=[e for c in cs for e in c.evidence], moves=moves,
            devices=[host, *sorted({self._host_end(host, c)[1][0] for c in cs})]), links)
        return True

    def _leaf_su(self) -> dict[str, str]:
        """Each backend leaf's scalable unit: the one most of its planned hosts are in."""
        if self._leaf_su_cache is not None:
            return self._leaf_su_cache
        su = self.plan.groups.get("su", {})
        votes: dict[str, Counter[str]] = defaultdict(Counter)
        for lk in self.plan.links:
            if lk.tier == "node-leaf" and lk.a in su:
                votes[lk.b][su[lk.a]] += 1
        self._leaf_su_cache = {leaf: c.most_common(1)[0][0] for leaf, c in votes.items()}
        return self._leaf_su_cache

    def _wrong_su(self, host: str, cs: list[_Cable]) -> bool:
        plan = self.plan
        planned_su = plan.groups.get("su", {}).get(host)
        leaf_su = self._leaf_su()
        if planned_su is None:
            return False
        fars = [self._host_end(host, c)[1] for c in cs]
        sus = {leaf_su.get(f[0]) for f in fars}
        if len(sus) != 1 or None in sus or planned_su in sus:
            return False
        mine = [i for i in plan.by_device.get(host, []) if plan.links[i].tier == "node-leaf"]
        if len(cs) < max(1, len(mine) // 2):
            return False
        other = next(iter(sus))
        assert other is not None
        self.physical_su[host] = other
        moves = []
        for c in cs:
            h, far = self._host_end(host, c)
            li = plan.port.get(h)
            if li is None:
                continue
            lk = plan.links[li]
            moves.append(Move(lk.cable, far, (lk.b, lk.b_port),
                              note=f"the cable from {host} {h[1]}"))
        self._finding(Finding(
            kind="wrong_su", subject=host,
            summary=f"{host} is cabled into {other} ({len(cs)} rail cables on {other}'s "
                    f"leaves); the blueprint puts it in {planned_su}",
            expected=f"{host} in {planned_su}", observed=f"{host} cabled into {other}",
            repair=f"move {host}'s {len(cs)} backend cables back to {planned_su}'s leaves ("
                   + "; ".join(m.text() for m in moves[:3])
                   + ("; ..." if len(moves) > 3 else "")
                   + f"), or, if the move was intended, re-plan it into {other} and update "
                   "the Slurm topology and node labels to match",
            key=("wrong_su", host), evidence=[e for c in cs for e in c.evidence], moves=moves,
            devices=[host, *sorted({f[0] for f in fars})]), mine)
        return True

    def _miswire(self, c: _Cable) -> None:
        plan = self.plan
        role = {n: d.role for n, d in plan.devices.items()}

        def rank(e: End) -> tuple[int, int]:
            planned = 0 if e in plan.port else 1
            return planned, TIER_RANK.get(role.get(e[0], ""), 9)

        keep, move = sorted((c.a, c.b), key=rank)
        li = plan.port.get(keep)
        links = [x for x in (plan.port.get(c.a), plan.port.get(c.b)) if x is not None]
        names = f"{c.a[0].lstrip('?')} {c.a[1]} - {c.b[0].lstrip('?')} {c.b[1]}"
        if li is not None:
            lk = plan.links[li]
            dst = lk.other(*keep)
            expected = f"{keep[0]} {keep[1]} <-> {dst[0]} {dst[1]} (cable {lk.cable})"
            mv = Move(lk.cable, (move[0].lstrip("?"), move[1]), dst,
                      note=f"keep the end at {keep[0]} {keep[1]}")
        else:
            lk2 = plan.links[plan.port[move]]
            dst = lk2.other(*move)
            expected = f"{move[0]} {move[1]} <-> {dst[0]} {dst[1]} (cable {lk2.cable})"
            mv = Move(lk2.cable, keep, dst, note=f"keep the end at {move[0]} {move[1]}")
            keep, move = move, keep
        occupant = next((f"{lk3.a} {lk3.a_port} - {lk3.b} {lk3.b_port}"
                         for lk3 in [plan.links[i] for i in links]
                         if mv.src and mv.src in lk3.ends()), "")
        self._finding(Finding(
            kind="miswired_link", subject=f"{keep[0]} {keep[1]}",
            summary=f"the cable at {keep[0]} {keep[1]} lands on {mv.src[0] if mv.src else '?'} "
                    f"{mv.src[1] if mv.src else '?'}; planned {mv.dst[0] if mv.dst else '?'} "
                    f"{mv.dst[1] if mv.dst else '?'}",
            expected=expected, observed=names
            + (f" (that port is planned for {occupant})" if occupant else ""),
            repair=mv.text(), key=("miswired_link", *sorted(f"{d.lstrip('?')}:{p}"
                                                         for d, p in (c.a, c.b))),
            evidence=c.evidence, moves=[mv],
            devices=sorted({c.a[0].lstrip("?"), c.b[0].lstrip("?"),
                            *(d for d, _ in ([mv.dst] if mv.dst else []))})), links)

    # ------------------------------------------------------------------ links by metrics
    def compare_port_health(self) -> None:
        """Ports down in the metrics (when no dump showed the cabling) and error counters
        far above their tier's peers (fail-slow links)."""
        plan = self.plan
        down: dict[End, str] = {}
        counters: dict[str, dict[End, tuple[float, str]]] = defaultdict(dict)
        for s in self.obs.samples:
            if not s.metric.startswith("port_"):
                continue
            d = self.dev(s.device)
            if d is None:
                continue
            p = self.port(d, s.item, "")
            if p is None or (d, p) not in plan.port:
                continue
            ev = f"{s.source}:{s.line}: {s.raw_name} {s.device} {s.item} = {s.value:g}"
            if (s.metric == "port_up" and s.value == 0) or (
                    s.metric == "port_ib_state" and s.value != 4) or (
                    s.metric == "port_oper_status" and s.value != 1) or (
                    s.metric == "port_speed_gbps" and s.value == 0):
                down[(d, p)] = ev
            elif s.metric in ("port_errors", "port_link_downed", "port_pfc_pause",
                              "port_ecn_marked"):
                prev = counters[s.metric].get((d, p), (0.0, ev))
                counters[s.metric][(d, p)] = (prev[0] + s.value, ev)
        for end, ev in sorted(down.items()):
            li = plan.port[end]
            if li in self.link_finding:
                self.link_finding[li].evidence.append(ev)
                continue
            lk = plan.links[li]
            if (end[0], self.medium(lk)) in self.covered:
                continue  # a dump showed this device's neighbours: its view decides
            self.covered.add((end[0], self.medium(lk)))
            self._missing(lk)
            self.link_finding[li].evidence.append(ev)
        flagged: dict[int, list[str]] = defaultdict(list)
        for vals in counters.values():
            by_tier: dict[str, list[float]] = defaultdict(list)
            for end, (v, _) in vals.items():
                by_tier[plan.links[plan.port[end]].tier].append(v)
            robust: dict[str, tuple[float, float]] = {}
            for tier, peers in by_tier.items():
                med = statistics.median(peers)
                robust[tier] = (med, statistics.median(abs(x - med) for x in peers))
            for end, (v, ev) in vals.items():
                med, mad = robust[plan.links[plan.port[end]].tier]
                if v >= ERROR_MIN and v >= ERROR_RATIO * max(med, 1.0) and (
                        mad == 0 or (v - med) / (1.4826 * mad) > 3.5):
                    flagged[plan.port[end]].append(f"{ev} (tier median {med:g})")
        for li, evs in sorted(flagged.items()):
            if li in self.link_finding:
                self.link_finding[li].evidence += evs
                continue
            lk = plan.links[li]
            what = "errors" if any("err" in e or "symbol" in e or "Errors" in e for e in evs) \
                else "pause frames or ECN marks"
            self._finding(Finding(
                kind="slow_link", subject=f"{lk.a} {lk.a_port} - {lk.b} {lk.b_port}",
                summary=f"cable {lk.cable} {lk.a} {lk.a_port} - {lk.b} {lk.b_port}: {what} "
                        f"far above its {lk.tier} peers (fail-slow link)",
                expected=f"{what} near the {lk.tier} median", observed="; ".join(
                    e.split(": ", 1)[-1] for e in evs),
                repair=f"cable {lk.cable}: clean or replace the transceivers at {lk.a} "
                       f"{lk.a_port} and {lk.b} {lk.b_port}, then the cable; clear the "
                       "counters and watch them",
                key=("slow_link", lk.cable), evidence=evs, devices=[lk.a, lk.b]), [li])

    # ------------------------------------------------------------------ nodes
    def compare_nodes(self) -> set[str]:
        plan = self.plan
        gph = plan.gpus_per_host
        out: set[str] = set()
        states: dict[str, list[str]] = defaultdict(list)
        gpus: dict[str, list[tuple[int, str]]] = defaultdict(list)
        for ns in self.obs.node_states:
            d = self.dev(ns.node)
            if d is None:
                continue
            ev = f"{ns.source}:{ns.line}: {ns.node} {ns.state}" + (
                f" ({ns.reason})" if ns.reason else "")
            if not ns.available:
                states[d].append(ev)
            if ns.gpus is not None and ns.gpus < gph:
                gpus[d].append((ns.gpus, f"{ns.source}:{ns.line}: {ns.node} offers {ns.gpus} "
                                         "GPUs"))
        for gl in self.obs.gpu_links:
            d = self.dev(gl.host)
            if d is not None and gl.gpus < gph:
                gpus[d].append((gl.gpus, f"{gl.source}:{gl.line}: nvidia-smi topo -m on "
                                         f"{gl.host} lists {gl.gpus} GPUs"))
        for node, evs in sorted(states.items()):
            out.add(node)
            self.findings.append(Finding(
                kind="node_unavailable", subject=node,
                summary=f"{node} is out of service ({evs[0].split(': ', 1)[-1]})",
                expected=f"{node} in service", observed="; ".join(
                    e.split(": ", 1)[-1] for e in evs),
                repair=f"find why {node} is down or drained (the scheduler's reason), repair "
                       "it, then resume it (scontrol update NodeName=... State=RESUME, or "
                       "kubectl uncordon)",
                key=("node_unavailable", node), evidence=evs, devices=[node]))
        for node, seen in sorted(gpus.items()):
            out.add(node)
            n = min(g for g, _ in seen)
            self.findings.append(Finding(
                kind="gpu_missing", subject=node,
                summary=f"{node} shows {n} of its {gph} GPUs",
                expected=f"{gph} GPUs", observed=f"{n} GPUs",
                repair=f"{node}: check the missing GPU (nvidia-smi -q, dmesg for XID and "
                       "PCIe errors, reseat or replace the GPU/baseboard), then return it to "
                       "service",
                key=("gpu_missing", node), evidence=[e for _, e in seen], devices=[node]))
        out |= self._nvlinks()
        return out

    def _nvlinks(self) -> set[str]:
        out: set[str] = set()
        values = [v for gl in self.obs.gpu_links for v in gl.nvlinks.values()]
        if not values:
            return out
        mode = Counter(values).most_common(1)[0][0]
        if mode == 0:
            return out
        for gl in self.obs.gpu_links:
            d = self.dev(gl.host)
            if d is None:
                continue
            low = sorted((pair, v) for pair, v in gl.nvlinks.items() if v < mode)
            if not low:
                continue
            out.add(d)
            pairs = ", ".join(f"GPU{a}-GPU{b} {('NV' + str(v)) if v else 'PCIe'}"
                              for (a, b), v in low[:6])
            gpus_low = Counter(g for (a, b), _ in low for g in (a, b))
            worst = gpus_low.most_common(1)[0][0]
            self.findings.append(Finding(
                kind="nvlink_degraded", subject=d,
                summary=f"{d}: {len(low)} GPU pair(s) below NV{mode} ({pairs})",
                expected=f"NV{mode} between every GPU pair (the cluster's common value)",
                observed=pairs,
                repair=f"{d}: GPU{worst} is in most of the degraded pairs; check its NVLinks "
                       "(nvidia-smi nvlink -s, -e), reseat or replace the GPU or baseboard",
                key=("nvlink_degraded", d),
                evidence=[f"{gl.source}:{gl.line}: nvidia-smi topo -m on {gl.host}"],
                devices=[d]))
        return out

    # ------------------------------------------------------------------ placement
    def compare_placement(self) -> None:
        plan = self.plan
        ref: dict[str, dict[str, str]] = {}
        for level, groups in plan.groups.items():
            ref[level] = dict(groups)
        if "su" in ref:
            ref["su"].update(self.physical_su)
        hosts = set(plan.hosts)
        # NVLink domains: the plan's, else one per host when the server's domain is the host.
        srv = plan.server
        if "nvlink" not in ref and srv is not None and srv.nvlink_domain_gpus <= srv.gpus // \
                srv.hosts:
            ref["nvlink"] = {h: h for h in hosts}
        claims: dict[tuple[str, str, str], dict[str, tuple[str, str]]] = defaultdict(dict)
        for m in self.obs.memberships:
            if m.level not in LEVELS:
                continue
            d = self.dev(m.node)
            if d is None or d not in hosts:
                continue
            kind = "k8s" if m.level.startswith("label:") else "slurm"
            claims[(kind, m.level, m.source)][d] = (m.group, f"{m.source}:{m.line}: {m.node} "
                                                     f"{m.level.removeprefix('label:')}="
                                                     f"{m.group}")
        # GPU cliques (physical NVLink domains): a host's GPUs should share one.
        cliques: dict[str, set[str]] = defaultdict(set)
        clique_ev: dict[str, str] = {}
        for g in self.obs.gpu_fabric:
            d = self.dev(g.host)
            if d is None:
                continue
            cliques[d].add(f"{g.cluster_uuid}.{g.clique_id}")
            clique_ev.setdefault(d, f"{g.source}:{g.line}: {g.host} GPU{g.gpu} clique "
                                    f"{g.cluster_uuid}.{g.clique_id} ({g.state})")
            if g.state and g.state.lower() != "completed":
                clique_ev[d] = f"{g.source}:{g.line}: {g.host} GPU{g.gpu} fabric state {g.state}"
        if cliques:
            for d, cs in cliques.items():
                claims[("gpu_topo", "nvidia-smi", "clique")][d] = (
                    "+".join(sorted(cs)), clique_ev[d])
        for (kind, raw_level, src), claim in sorted(claims.items()):
            level = "nvlink" if kind == "gpu_topo" else LEVELS[raw_level]
            if level == "block" and "block" not in ref:
                level = "su"
            r = ref.get(level)
            if not r:
                self.unseen.append(f"{src}: {raw_level} not compared (the blueprint has no "
                                   f"{level} grouping)")
                continue
            self._partition(kind, raw_level, level, claim, r, src)

    def _partition(self, kind: str, raw_level: str, level: str,
                   claim: dict[str, tuple[str, str]], ref: dict[str, str], src: str) -> None:
        # The group most of each planned group's nodes carry.
        votes: dict[str, Counter[str]] = defaultdict(Counter)
        for h, (g, _) in claim.items():
            if h in ref:
                votes[ref[h]][g] += 1
        usual = {r: c.most_common(1)[0][0] for r, c in votes.items()}
        said_of = {g: r for r, g in usual.items()}
        what = raw_level.removeprefix("label:")
        for h, (g, ev) in sorted(claim.items()):
            r = ref.get(h)
            if r is None or usual.get(r) == g:
                continue
            if votes[r][g] == votes[r][usual[r]] and len(votes[r]) > 1:
                continue  # a tie: no majority to judge by
            with_whom = said_of.get(g)
            observed = (f"{what}={g}, the group of {with_whom}" if with_whom else
                        f"{what}={g}, a group of its own")
            if kind == "gpu_topo":
                self.findings.append(Finding(
                    kind="nvlink_domain", subject=h,
                    summary=f"{h}'s GPUs are in NVLink clique {g}, not with the rest of "
                            f"{r}" + (f" (they are in {with_whom}'s)" if with_whom else ""),
                    expected=f"{h} in NVLink domain {r} (clique {usual.get(r)})",
                    observed=observed,
                    repair=f"{h}: check its NVLink cabling to {r}'s NVLink switch trays and "
                           "the fabric manager's partition (nvidia-smi -q Fabric, nmx), then "
                           "re-register its GPUs",
                    key=("nvlink_domain", h), evidence=[ev], devices=[h]))
                continue
            tool = "the Slurm topology" if kind == "slurm" else "the node labels"
            fix = (f"set {h}'s {what} to {usual[r]} (in {tool}; {src})" if kind == "k8s" else
                   f"list {h} under {usual[r]} in {src} and reconfigure slurmctld")
            self.findings.append(Finding(
                kind="wrong_label", subject=f"{h} {what}",
                summary=f"{tool} puts {h} in {g}" + (f" with {with_whom}'s nodes"
                                                      if with_whom else "")
                        + f"; it is in {r} ({usual[r]} in this file)",
                expected=f"{h}: {what}={usual[r]} (with the other nodes of {r})",
                observed=observed, repair=fix, key=("wrong_label", h, f"{kind}:{level}"),
                evidence=[ev], devices=[h]))
        # Planned hosts missing from a source that lists most of them.
        listed = set(claim)
        planned = set(ref) & set(self.plan.hosts)
        if kind != "gpu_topo" and len(listed & planned) >= len(planned) / 2:
            for h in sorted(planned - listed):
                tool = "the Slurm topology" if kind == "slurm" else "the node labels"
                self.findings.append(Finding(
                    kind="wrong_label", subject=f"{h} {what}",
                    summary=f"{h} is missing from {tool} ({src})",
                    expected=f"{h}: {what}={usual.get(ref[h], ref[h])}",
                    observed=f"{h} absent", repair=f"add {h} to {src} under "
                    f"{usual.get(ref[h], ref[h])}",
                    key=("wrong_label", h, f"{kind}:{level}"),
                    evidence=[f"{src}: no {what} for {h}"], devices=[h]))

    # ------------------------------------------------------------------ BGP
    def compare_bgp(self) -> None:
        plan = self.plan
        if not self.obs.bgp:
            return
        expect: dict[str, dict[str, tuple[str, int]]] = defaultdict(dict)  # dev -> addr -> peer
        for lk in plan.links:
            aa = plan.addresses.get((lk.a, lk.a_port))
            ba = plan.addresses.get((lk.b, lk.b_port))
            da, db = plan.devices.get(lk.a), plan.devices.get(lk.b)
            if aa is None or ba is None or da is None or db is None or da.asn is None or \
                    db.asn is None:
                continue  # not a BGP session (a host's /31 towards its leaf)
            expect[lk.a][ba.split("/")[0]] = (lk.b, lk.index)  # a's neighbour is b's address
            expect[lk.b][aa.split("/")[0]] = (lk.a, lk.index)
        remote_seen: dict[str, list[tuple[int, str]]] = defaultdict(list)
        flagged_asn: set[str] = set()
        down: dict[int, list[str]] = defaultdict(list)
        for st in self.obs.bgp:
            d = self.dev(st.device)
            if d is None:
                continue
            pd = plan.devices.get(d)
            where = f"{st.source}:{st.line}: {st.device}"
            if pd is not None and pd.asn is not None and st.asn is not None and st.asn != pd.asn:
                flagged_asn.add(d)
                self.findings.append(Finding(
                    kind="unexpected_asn", subject=d,
                    summary=f"{d} runs BGP as AS {st.asn}; the blueprint gives it {pd.asn}",
                    expected=f"AS {pd.asn}", observed=f"AS {st.asn}",
                    repair=f"{d}: `router bgp {pd.asn}` as in the generated frr.conf "
                           f"(frr/{d}.conf), then restart bgpd",
                    key=("unexpected_asn", d), evidence=[f"{where} as {st.asn}"],
                    devices=[d]))
            loop = (pd.loopback if pd is not None else "").split("/")[0]
            if loop and st.router_id and st.router_id != loop:
                self.findings.append(Finding(
                    kind="unexpected_address", subject=f"{d} router-id",
                    summary=f"{d} has router id {st.router_id}; the blueprint's loopback is "
                            f"{loop}",
                    expected=loop, observed=st.router_id,
                    repair=f"{d}: `bgp router-id {loop}` and loopback {loop}/32 as in "
                           f"frr/{d}.conf",
                    key=("unexpected_address", d, "router-id"),
                    evidence=[f"{where} routerId {st.router_id}"], devices=[d]))
            mine = expect.get(d, {})
            for p in st.peers:
                hit = mine.get(p.address)
                if hit is None:
                    self.findings.append(Finding(
                        kind="unexpected_address", subject=f"{d} {p.address}",
                        summary=f"{d} has a BGP neighbour {p.address} that the blueprint "
                                "does not plan",
                        expected=f"neighbours {', '.join(sorted(mine)) or 'none'}",
                        observed=f"neighbour {p.address} ({p.state})",
                        repair=f"{d}: remove neighbour {p.address} or fix its address to the "
                               f"planned /31 (frr/{d}.conf)",
                        key=("unexpected_address", d, p.address),
                        evidence=[f"{where} neighbour {p.address} {p.state}"], devices=[d]))
                    continue
                peer, li = hit
                if p.state == "Established":
                    if p.remote_as is not None:
                        remote_seen[peer].append((p.remote_as, f"{where} neighbour "
                                                  f"{p.address} ({peer}) remoteAs "
                                                  f"{p.remote_as}"))
                else:
                    down[li].append(f"{where} neighbour {p.address} ({peer}) {p.state}")
            for addr, (peer, li) in mine.items():
                if not any(p.address == addr for p in st.peers):
                    down[li].append(f"{where} no neighbour {addr} ({peer}) configured")
        for peer, seen in sorted(remote_seen.items()):
            pd = plan.devices.get(peer)
            if pd is None or pd.asn is None or peer in flagged_asn:
                continue
            bad = [(a, e) for a, e in seen if a != pd.asn]
            if bad:
                self.findings.append(Finding(
                    kind="unexpected_asn", subject=peer,
                    summary=f"{peer}'s neighbours see it as AS {bad[0][0]}; the blueprint "
                            f"gives it {pd.asn}",
                    expected=f"AS {pd.asn}", observed=f"AS {bad[0][0]}",
                    repair=f"{peer}: `router bgp {pd.asn}` as in frr/{peer}.conf",
                    key=("unexpected_asn", peer), evidence=[e for _, e in bad],
                    devices=[peer]))
        for li, evs in sorted(down.items()):
            if li in self.link_finding:
                self.link_finding[li].evidence += evs
                continue
            lk = plan.links[li]
            self._finding(Finding(
                kind="bgp_down", subject=f"{lk.a} - {lk.b}",
                summary=f"BGP session over cable {lk.cable} ({lk.a} {lk.a_port} - {lk.b} "
                        f"{lk.b_port}) is not established",
                expected="Established", observed="; ".join(e.split(": ", 1)[-1]
                                                           for e in evs[:2]),
                repair=f"{lk.a} and {lk.b}: compare the interface addresses and neighbour "
                       f"statements with frr/{lk.a}.conf and frr/{lk.b}.conf, check the link "
                       "is up, then `clear bgp` the session",
                key=("bgp_down", lk.cable), evidence=evs, devices=[lk.a, lk.b]), [li])


def _looks_mac(s: str) -> bool:
    return len(s) == 17 and s.count(":") == 5


def compare(plan: Plan, obs: Observations) -> Comparison:
    """Every difference between ``plan`` and ``obs`` (see the module docstring)."""
    d = _Differ(plan, obs)
    d.check_sources()
    d.compare_cables()
    d.compare_port_health()
    drained = d.compare_nodes()
    d.compare_placement()
    d.compare_bgp()
    checks = {
        "cabling": bool(obs.adjacencies),
        "link rates": bool(obs.adjacencies) or any(
            s.metric == "port_speed_gbps" for s in obs.samples),
        "placement": bool(obs.memberships) or bool(obs.gpu_fabric),
        "GPUs and NVLinks": bool(obs.gpu_links) or any(n.gpus is not None
                                                      for n in obs.node_states),
        "BGP": bool(obs.bgp),
        "slow nodes": bool(obs.steps) or any(s.metric.startswith("gpu_")
                                              for s in obs.samples),
    }
    for name, ran in checks.items():
        if not ran:
            d.unseen.append(f"{name}: not compared (no input for it)")
    return Comparison(findings=d.findings, coverage=d.coverage, unseen=d.unseen,
                      notes=d.notes, physical_su=d.physical_su, drained=drained)

