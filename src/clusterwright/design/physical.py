"""Physical plan: racks, rows, rack units, cable lengths, cable and optic choice per link.

Layout follows the DGX SuperPOD pattern: one scalable unit (SU) per row of compute racks with
its leaf, frontend-leaf and management switches in a network rack in the middle of the row;
spine racks in a network row in the middle of the rows they serve (per pod in three tiers), core
and shared frontend/storage/management racks in a central network row. Lengths are Manhattan
distances between racks plus vertical runs and service loops (``cable_slack_m``); links inside
one rack get the rack-unit distance plus half a metre. Media follow from length: copper where it
reaches, then optics with fibre (multimode before single-mode), then active optical cables.
Transceivers are chosen per end: a twin-port module at a switch cage serves two links.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

from clusterwright.catalog.registry import Catalog
from clusterwright.catalog.schema import Cable, Transceiver
from clusterwright.design.fabric import (
    STORAGE_SU,
    SWITCH_ROLES,
    Device,
    Fabric,
    FabricError,
    Rack,
    build_oob,
)

CONTROL_ROLES = ("core", "fe-spine", "fe-core", "storage", "oob-spine")


@dataclass(frozen=True)
class Site:
    """Rack and room dimensions the plan uses (catalog assumptions)."""

    rack_units: int
    rack_width_m: float
    row_pitch_m: float  # rack depth + aisle
    slack_m: float
    rack_kw: float


def site_for(fab: Fabric, cat: Catalog) -> Site:
    """Dimensions and the per-rack power limit: the asked kW, capped by the cooling mode."""
    req = fab.request
    cap_name = "air_cooled_rack_max_kw" if req.cooling == "air" else "liquid_cooled_rack_max_kw"
    cap = cat.assumption(cap_name)
    kw = req.rack_kw
    if kw > cap:
        fab.notes.append(
            f"--rack-kw {kw:g} exceeds what {req.cooling} cooling carries per rack ({cap:g} kW, "
            f"catalog assumption {cap_name}); racks are planned at {cap:g} kW"
        )
        kw = cap
    return Site(
        rack_units=round(cat.assumption("rack_usable_units")),
        rack_width_m=cat.assumption("rack_width_m"),
        row_pitch_m=cat.assumption("rack_depth_m") + cat.assumption("aisle_width_m"),
        slack_m=cat.assumption("cable_slack_m"),
        rack_kw=kw,
    )


def servers_per_rack(fab: Fabric, site: Site) -> int:
    """Servers one compute rack holds under the power and rack-unit limits."""
    srv = fab.server
    req = fab.request
    if srv.cooling == "liquid" and req.cooling == "air":
        raise FabricError(f"--server {srv.id} is liquid-cooled; --cooling air cannot host it")
    if srv.kind == "rack":
        if srv.max_power_kw > site.rack_kw:
            raise FabricError(
                f"--rack-kw {req.rack_kw:g}: one {srv.id} rack draws {srv.max_power_kw:g} kW "
                f"(the {req.cooling}-cooling limit used is {site.rack_kw:g} kW)"
            )
        return 1
    by_power = math.floor(site.rack_kw / srv.max_power_kw + 1e-9)
    by_units = site.rack_units // srv.rack_units
    n = min(by_power, by_units)
    if n < 1:
        raise FabricError(
            f"--rack-kw {req.rack_kw:g}: one {srv.id} draws {srv.max_power_kw:g} kW "
            f"(nameplate), more than a rack may carry ({site.rack_kw:g} kW)"
        )
    return n


def switch_power_w(fab: Fabric, cat: Catalog, dev: Device) -> tuple[float, float]:
    """(typical, maximum) W of a switch without optics."""
    sw = cat.switch(dev.part)
    return (sw.typical_power_w or sw.max_power_w, sw.max_power_w)


def place(fab: Fabric, cat: Catalog) -> list[Rack]:
    """Assign every device a rack and rack unit; returns the racks in row order."""
    site = site_for(fab, cat)
    per_rack = servers_per_rack(fab, site)
    srv = fab.server
    racks: list[Rack] = []
    hosts_per_server = srv.hosts
    sh = fab.shape
    # Rows: one SU per row unless racks_per_row is given (then hosts flow row by row).
    su_hosts = sh.su_hosts
    servers_per_su = math.ceil(su_hosts / hosts_per_server)
    racks_per_su = math.ceil(servers_per_su / per_rack)
    rpr = fab.request.racks_per_row or racks_per_su
    by_su: dict[int, list[Device]] = defaultdict(list)
    for d in fab.devices:
        if d.role in ("leaf", "fe-leaf") and d.su < STORAGE_SU:
            by_su[d.su].append(d)

    def new_rack(row: int, pos: int, kind: str) -> Rack:
        r = Rack(name=f"r{row + 1:03d}-{pos + 1:02d}", row=row, position=pos, kind=kind,
                 cooling=fab.request.cooling, units=site.rack_units)
        racks.append(r)
        return r

    def put(rack_list: list[Rack], dev: Device, units: int, power_w: float, row: int,
            kind: str) -> None:
        r = rack_list[-1] if rack_list else None
        if r is None or r.used_units + units > r.units or r.power_w + power_w > site.rack_kw * 1e3:
            r = new_rack(row, len([x for x in racks if x.row == row]), kind)
            rack_list.append(r)
        dev.rack = r.name
        dev.rack_u = r.used_units + 1
        dev.units = units
        r.used_units += units
        r.power_w += power_w
        r.devices.append(dev.name)

    # Row plan: compute rows, with a spine row in the middle of each pod (three tiers) or of
    # all rows (two tiers), and the central network row in the middle of everything.
    hosts = fab.hosts
    n_servers = math.ceil(len(hosts) / hosts_per_server)
    if fab.request.racks_per_row:
        rows_n = math.ceil(math.ceil(n_servers / per_rack) / rpr)
        row_of_server = [s // per_rack // rpr for s in range(n_servers)]
    else:
        rows_n = sh.sus
        row_of_server = [s // servers_per_su for s in range(n_servers)]
    compute_rows: list[int] = []
    spine_row_of_pod: dict[int, int] = {}
    order: list[tuple[str, int]] = []  # ("compute", row) or ("spines", pod) or ("central", 0)
    pods = sh.pods if sh.tiers == 3 else 1
    rows_per_pod = math.ceil(rows_n / pods)
    for pod in range(1, pods + 1):
        pod_rows = list(range((pod - 1) * rows_per_pod, min(rows_n, pod * rows_per_pod)))
        half = len(pod_rows) // 2
        order += [("compute", r) for r in pod_rows[:half]]
        order.append(("spines", pod))
        order += [("compute", r) for r in pod_rows[half:]]
        if pod == pods // 2 or pods == 1:
            order.append(("central", 0))
    y_of: dict[tuple[str, int], int] = {key: i for i, key in enumerate(order)}
    for key in order:
        if key[0] == "compute":
            compute_rows.append(y_of[key])
        elif key[0] == "spines":
            spine_row_of_pod[key[1]] = y_of[key]
    central = y_of[("central", 0)]

    # Compute racks and the row's network rack in the middle of it.
    srv_power = srv.max_power_kw * 1e3
    row_racks: dict[int, list[Rack]] = defaultdict(list)
    for s in range(n_servers):
        row = compute_rows[row_of_server[s]]
        rl = row_racks[row]
        r = rl[-1] if rl else None
        if r is None or len([d for d in r.devices]) >= per_rack * hosts_per_server:
            r = new_rack(row, len(rl), "compute")
            rl.append(r)
        for h in hosts[s * hosts_per_server:(s + 1) * hosts_per_server]:
            h.rack = r.name
            h.rack_u = (len(r.devices) // hosts_per_server) * srv.rack_units + 1
            h.units = srv.rack_units
            r.devices.append(h.name)
        r.used_units += srv.rack_units
        r.power_w += srv_power
    # Network racks go in the middle of their row: shift the second half of compute racks.
    net_by_row: dict[int, list[Rack]] = defaultdict(list)
    for su, devs in sorted(by_su.items()):
        host0 = next(h for h in hosts if h.su == su)
        row = next(rk.row for rk in racks if rk.name == host0.rack)
        for d in devs:
            sw = cat.switch(d.part)
            put(net_by_row[row], d, sw.rack_units, sw.max_power_w, row, "network")
    for d in fab.devices:
        if d.role == "spine":
            row = spine_row_of_pod[d.pod if sh.tiers == 3 else 1]
        elif d.role in CONTROL_ROLES or (d.role == "fe-leaf" and d.su >= STORAGE_SU):
            row = central
        else:
            continue
        units, power = (2, 0.0) if d.role == "storage" else (
            cat.switch(d.part).rack_units, cat.switch(d.part).max_power_w)
        put(net_by_row[row], d, units, power, row, "network")
    # Management network: per row, for everything placed in it, so copper stays in the row.
    row_of_rack = {id(rk): rk.row for rk in racks}
    rack_by_name = {rk.name: rk for rk in racks}
    del row_of_rack
    groups: dict[int, list[Device]] = defaultdict(list)
    for d in fab.devices:
        if d.rack:
            groups[rack_by_name[d.rack].row].append(d)
    rows_sorted = sorted(groups)
    mgmt = round(cat.assumption("switch_mgmt_ports"))
    per_row = build_oob(fab, [groups[r] for r in rows_sorted], mgmt)
    for row, leaves in zip(rows_sorted, per_row, strict=True):
        for d in leaves:
            sw = cat.switch(d.part)
            put(net_by_row[row], d, sw.rack_units, sw.max_power_w, row, "network")
    for d in fab.devices:
        if d.role == "oob-spine":
            sw = cat.switch(d.part)
            put(net_by_row[central], d, sw.rack_units, sw.max_power_w, central, "network")
    # Positions: network racks sit in the middle of their row.
    for row, nets in net_by_row.items():
        comp = row_racks.get(row, [])
        mid = len(comp) // 2
        for i, rk in enumerate(comp):
            rk.position = i if i < mid else i + len(nets)
        for i, rk in enumerate(nets):
            rk.position = mid + i
    for rk in racks:
        rk.name = f"r{rk.row + 1:03d}-{rk.position + 1:02d}"
    names = {id(rk): rk.name for rk in racks}
    del names
    # Device rack names were assigned before renaming: refresh from rack contents.
    for rk in racks:
        for dn in rk.devices:
            fab.by_name[dn].rack = rk.name
    racks.sort(key=lambda r: (r.row, r.position))
    fab.racks = list(racks)
    _lengths(fab, racks, site)
    return racks


def _lengths(fab: Fabric, racks: list[Rack], site: Site) -> None:
    where = {rk.name: rk for rk in racks}
    for lk in fab.links:
        a, b = fab.by_name[lk.a], fab.by_name[lk.b]
        ra, rb = where[a.rack], where[b.rack]
        if ra is rb:
            length = 0.5 + abs(a.rack_u - b.rack_u) * 0.04445
        else:
            length = (
                abs(ra.position - rb.position) * site.rack_width_m
                + abs(ra.row - rb.row) * site.row_pitch_m + site.slack_m
            )
        lk.length_m = round(length, 2)


@dataclass(frozen=True)
class _End:
    cage: str  # cage type, e.g. OSFP, QSFP112
    side: str  # switch or host
    links_per_cage: int


class MediaPicker:
    """Chooses cable and transceivers per link from the catalog, cached per kind of link."""

    def __init__(self, cat: Catalog) -> None:
        self.cables: list[Cable] = [c for c in cat.all("cables") if c.status == "active"]
        self.xcvrs: list[Transceiver] = [
            t for t in cat.all("transceivers") if t.status == "active"
        ]
        self._cache: dict[tuple[float, float, _End, _End], tuple[str, str, str, str]] = {}

    def _xcvr(self, speed: float, media: str, length: float, end: _End) -> Transceiver | None:
        ok = [
            t for t in self.xcvrs
            if t.speed_gbps == speed and t.media == media and t.reach_m >= length
            and t.side in (end.side, "any") and t.form_factor.upper() in end.cage.upper()
            and t.links <= max(1, end.links_per_cage)
        ]
        # A module spanning the whole cage (twin-port at a twin cage), then the lowest power.
        ok.sort(key=lambda t: (-t.links, t.power_w, t.price_usd or math.inf, t.id))
        return ok[0] if ok else None

    def pick(self, speed: float, length: float, a: _End, b: _End) -> tuple[str, str, str, str]:
        """(media, cable id, a-end transceiver id, b-end transceiver id) for one link."""
        key = (speed, length, a, b)
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        result: tuple[str, str, str, str] | None = None
        def fits(c: Cable) -> bool:
            ff = (c.form_factor or "").upper()
            return ff in a.cage.upper() and ff in b.cage.upper()

        if speed <= 10:
            utp = [c for c in self.cables if c.kind == "utp" and c.reach_m >= length and fits(c)]
            if utp:
                result = ("utp", min(utp, key=lambda c: c.reach_m).id, "", "")
        if result is None:
            copper = [
                c for c in self.cables
                if c.kind in ("dac", "acc", "aec") and c.speed_gbps == speed
                and c.reach_m >= length and fits(c)
            ]
            if copper:
                order = {"dac": 0, "acc": 1, "aec": 2}
                c = min(copper, key=lambda c: (order[c.kind], c.power_w, c.id))
                result = (c.kind, c.id, "", "")
        if result is None:
            for media in ("mmf", "smf"):
                xa = self._xcvr(speed, media, length, a)
                xb = self._xcvr(speed, media, length, b)
                if xa is None or xb is None:
                    continue
                plugs = {_plug(xa.connector), _plug(xb.connector)}
                fibres = [
                    c for c in self.cables
                    if c.kind == "fiber" and c.fiber == media and c.speed_gbps >= speed
                    and c.reach_m >= length and {_plug(c.connector or "")} == plugs
                ]
                if fibres:
                    f = min(fibres, key=lambda c: (c.reach_m, c.id))
                    result = ("optics", f.id, xa.id, xb.id)
                    break
        if result is None:
            aoc = [
                c for c in self.cables
                if c.kind == "aoc" and c.speed_gbps == speed and c.reach_m >= length and fits(c)
            ]
            if aoc:
                result = ("aoc", min(aoc, key=lambda c: (c.reach_m, c.id)).id, "", "")
        if result is None:
            raise FabricError(
                f"no cable or optic in the catalog carries a {speed:g} Gb/s link over "
                f"{length:g} m between a {a.cage} {a.side} cage and a {b.cage} {b.side} cage; "
                f"add one with --catalog"
            )
        self._cache[key] = result
        return result


def _plug(connector: str) -> str:
    """Connector type of one link's end: '2x MPO-12/APC' on a twin-port module is MPO-12/APC."""
    return connector.split("x ", 1)[-1].strip().upper()


def choose_media(fab: Fabric, cat: Catalog) -> None:
    """Fill each link's media, cable, transceivers and host-side cage."""
    picker = MediaPicker(cat)
    srv = fab.server

    def nic_cage(nic_id: str | None, default: str) -> str:
        if nic_id is None:
            return default
        return str(cat.get("nics", nic_id).cage)

    be_host = _End(nic_cage(srv.backend_nics.nic, "OSFP"), "host", srv.backend_links_per_cage)
    fe_host = _End(nic_cage(srv.frontend_nics.nic, "QSFP112"), "host", 1)
    if srv.frontend_nics.nic is not None:
        fe_nic = cat.get("nics", srv.frontend_nics.nic)
        if fe_nic.cage == "OSFP" and fe_nic.ports == 1:
            # Dual-port QSFP112 frontend cards are listed under the single-port family id
            # (servers.yaml); their cages are QSFP112.
            fe_host = _End("QSFP112", "host", 1)
    storage_end = _End("QSFP112", "host", 1)
    sw_end: dict[str, _End] = {}
    for d in fab.devices:
        if d.role in SWITCH_ROLES and d.part not in sw_end:
            sw = cat.switch(d.part)
            per_cage = max(1, max(pc.ports for pc in sw.port_configs) // sw.cages)
            sw_end[d.part] = _End(sw.cage, "switch", per_cage)
    bmc_end = _End("RJ45", "host", 1)
    for lk in fab.links:
        a = fab.by_name[lk.a]
        b = fab.by_name[lk.b]
        if a.role == "host":
            if lk.network == "backend":
                a_end = be_host
                lk.a_cage = str(lk.rail // srv.backend_links_per_cage + 1)
            elif lk.network == "frontend":
                a_end = fe_host
                lk.a_cage = lk.a_port
            else:
                a_end = bmc_end
        elif a.role == "storage":
            a_end = storage_end
            lk.a_cage = lk.a_port
        else:
            a_end = sw_end[a.part]
            if lk.network == "oob":
                if lk.tier == "oob-node-leaf":
                    a_end = bmc_end
                else:
                    # Management-switch uplinks use the switch's fast cages.
                    a_end = _End(a_end.cage.split("+")[-1].strip(), "switch", 1)
        b_end = sw_end[b.part]
        if lk.network == "oob" and lk.tier == "oob-node-leaf":
            b_end = bmc_end
        length = _orderable(lk.length_m)
        media, cable, xa, xb = picker.pick(lk.speed_gbps, length, a_end, b_end)
        lk.media, lk.cable, lk.a_xcvr, lk.b_xcvr = media, cable, xa, xb


def _orderable(length_m: float) -> float:
    """Round up to the next half metre up to 5 m, then the next metre (how cables are sold)."""
    if length_m <= 5:
        return math.ceil(length_m * 2) / 2
    return float(math.ceil(length_m))


def transceiver_counts(fab: Fabric, cat: Catalog) -> dict[str, int]:
    """Modules per part: per device cage, ceil(links using it / links per module)."""
    per_cage: dict[tuple[str, str, str], int] = defaultdict(int)
    for lk in fab.links:
        if lk.a_xcvr:
            per_cage[(lk.a, lk.a_cage or lk.a_port, lk.a_xcvr)] += 1
        if lk.b_xcvr:
            per_cage[(lk.b, lk.b_cage or lk.b_port, lk.b_xcvr)] += 1
    links_of = {t.id: t.links for t in cat.all("transceivers")}
    out: dict[str, int] = defaultdict(int)
    for (_, _, part), n in per_cage.items():
        out[part] += math.ceil(n / links_of[part])
    return dict(out)


def stock_length(lengths_m: list[float], length_m: float) -> float:
    """The shortest length the part is sold in that reaches ``length_m`` (m); parts without a
    length list round up to the next half metre (to 5 m) or metre."""
    fits = [x for x in lengths_m if x >= length_m - 1e-9]
    return min(fits) if fits else _orderable(length_m)


def cable_counts(fab: Fabric, cat: Catalog) -> dict[tuple[str, float], int]:
    """Cables per (part, stock length m). A twin-port DAC carries two links."""
    cables = {c.id: c for c in cat.all("cables")}
    per: dict[tuple[str, float], int] = defaultdict(int)
    for lk in fab.links:
        per[(lk.cable, stock_length(cables[lk.cable].lengths_m, lk.length_m))] += 1
    return {k: math.ceil(n / cables[k[0]].links) for k, n in per.items()}
