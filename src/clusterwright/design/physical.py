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
import re
from collections import defaultdict
from dataclasses import dataclass
from typing import Literal

from clusterwright.catalog.registry import Catalog
from clusterwright.catalog.schema import Server, Transceiver
from clusterwright.design.fabric import (
    STORAGE_SU,
    SWITCH_ROLES,
    Device,
    Fabric,
    FabricError,
    Link,
    OobGroup,
    Rack,
    build_oob,
    frontend_cage,
)
from clusterwright.design.media import End, MediaError, MediaPicker, orderable, stock_length
from clusterwright.errors import ClusterwrightError
from clusterwright.model.power import system_racks
from clusterwright.spec.fabric import FabricRequest

CONTROL_ROLES = ("core", "fe-spine", "fe-core", "storage", "oob-spine")


@dataclass(frozen=True)
class Site:
    """Rack and room dimensions the plan uses (catalog assumptions)."""

    rack_units: int
    rack_width_m: float
    row_pitch_m: float  # rack depth + aisle
    slack_m: float
    rack_kw: float


def default_cooling(server: Server) -> Literal["air", "liquid"]:
    """The server's own cooling; air for servers sold both ways."""
    return "liquid" if server.cooling == "liquid" else "air"


def with_rack_defaults(req: FabricRequest, cat: Catalog, cooling: str | None,
                       rack_kw: float | None) -> FabricRequest:
    """``req`` with what the user left unset: the server's own cooling, and a rack limit of
    the request's default kW under air, the catalog's liquid-cooled rack limit under liquid
    (a liquid hall is built for NVL72-class racks; 40 kW would refuse them)."""
    try:
        server = cat.server(req.server)
    except ClusterwrightError as e:
        raise FabricError(f"server: {e}", field="server") from e
    mode = cooling or default_cooling(server)
    if rack_kw is not None:
        kw = rack_kw
    elif mode == "air":
        kw = FabricRequest.model_fields["rack_kw"].default
    else:
        kw = cat.assumption("liquid_cooled_rack_max_kw")
    return req.model_copy(update={"cooling": mode, "rack_kw": kw})


def site_for(fab: Fabric, cat: Catalog) -> Site:
    """Dimensions and the per-rack power limit: the asked kW, capped by the cooling mode."""
    req = fab.request
    cap_name = "air_cooled_rack_max_kw" if req.cooling == "air" else "liquid_cooled_rack_max_kw"
    cap = cat.assumption(cap_name)
    kw = req.rack_kw
    if kw > cap:
        fab.notes.append(
            f"rack_kw {kw:g} exceeds what {req.cooling} cooling carries per rack ({cap:g} kW, "
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
    """Servers one compute rack holds under the power and rack-unit limits (1 for a
    rack-scale system, which may fill several racks: see ``system_racks``)."""
    srv = fab.server
    req = fab.request
    if srv.cooling == "liquid" and req.cooling == "air":
        raise FabricError(f"cooling: {srv.id} is liquid-cooled; air cooling cannot host it "
                          "(set cooling to liquid)", field="cooling")
    if srv.kind == "rack":
        span = system_racks(srv.rack_units, site.rack_units)
        per_rack_kw = srv.max_power_kw / span
        if per_rack_kw > site.rack_kw + 1e-9:
            where = f"one {srv.id} rack" if span == 1 else \
                f"each of the {span} racks of one {srv.id}"
            raise FabricError(
                f"rack_kw: {where} draws {per_rack_kw:g} kW, more than a rack may carry here "
                f"({site.rack_kw:g} kW: {_limit_reason(req, site)})", field="rack_kw")
        return 1
    by_power = math.floor(site.rack_kw / srv.max_power_kw + 1e-9)
    by_units = site.rack_units // srv.rack_units
    n = min(by_power, by_units)
    if n < 1:
        raise FabricError(
            f"rack_kw: one {srv.id} draws {srv.max_power_kw:g} kW (nameplate), more than a "
            f"rack may carry here ({site.rack_kw:g} kW: {_limit_reason(req, site)})",
            field="rack_kw")
    return n


def _limit_reason(req: FabricRequest, site: Site) -> str:
    """Where a rack's kW limit came from, and what would raise it."""
    if site.rack_kw < req.rack_kw:
        head = f"{req.rack_kw:g} kW asked, capped by {req.cooling} cooling"
    else:
        head = f"rack_kw {req.rack_kw:g}"
    if req.cooling == "air":
        return f"{head}; liquid cooling carries more"
    return f"{head}; the liquid-cooled limit is catalog assumption liquid_cooled_rack_max_kw"


def host_cage(port_names: list[str], rail: int, links_per_cage: int) -> str:
    """Physical cage of a backend rail: from the vendor's port name where it encodes the cage
    (DGX "osfp4p2" is cage osfp4, port 2), else by rail order."""
    if port_names:
        m = re.match(r"^(.*?)p\d+$", port_names[rail])
        if m:
            return m.group(1)
    return str(rail // links_per_cage + 1)


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
    span = system_racks(srv.rack_units, site.rack_units) if srv.kind == "rack" else 1
    if fab.request.racks_per_row:
        rows_n = math.ceil(math.ceil(n_servers * span / per_rack) / rpr)
        row_of_server = [s * span // per_rack // rpr for s in range(n_servers)]
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
        if srv.kind == "rack":
            # A rack-scale system, over one rack or several: its hosts (compute trays) in
            # equal shares, each rack carrying its share of the units and of the nameplate,
            # and each host its own slot of the rack's units (one system's trays do not all
            # sit at U1: an elevation, or a NetBox import, would overlap them).
            own = hosts[s * hosts_per_server:(s + 1) * hosts_per_server]
            share = math.ceil(len(own) / span)
            units = math.ceil(srv.rack_units / span)
            for k in range(span):
                part = new_rack(row, len(rl), "compute")
                rl.append(part)
                trays = own[k * share:(k + 1) * share]
                slot = max(1, units // max(1, len(trays)))
                for i, h in enumerate(trays):
                    h.rack = part.name
                    h.rack_u = 1 + i * slot
                    h.units = slot
                    part.devices.append(h.name)
                part.used_units += units
                part.power_w += srv_power / span
            continue
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
    # A leaf goes to the row of the first host cabled to it (frontend units need not match
    # the backend's scalable units).
    first_host: dict[str, str] = {}
    for lk in fab.links:
        if lk.tier in ("node-leaf", "fe-node-leaf") and lk.b not in first_host:
            first_host[lk.b] = lk.a
    row_of_rack = {rk.name: rk.row for rk in racks}
    for _, devs in sorted(by_su.items()):
        for d in devs:
            host = fab.by_name.get(first_host.get(d.name, ""))
            row = central if host is None or not host.rack else row_of_rack[host.rack]
            sw = cat.switch(d.part)
            put(net_by_row[row], d, sw.rack_units, sw.max_power_w, row, "network")
    for d in fab.devices:
        if d.role == "spine":
            row = spine_row_of_pod[d.pod if sh.tiers == 3 else 1]
        elif d.role in CONTROL_ROLES or (d.role == "fe-leaf" and d.su >= STORAGE_SU):
            row = central
        else:
            continue
        if d.role == "storage":
            # The storage system's own units and draw; a target sized from bandwidth alone
            # (no system) holds 2 U and is not in the power plan.
            st = fab.storage
            units, power = (st.rack_units, st.power_w) if st is not None else (2, 0.0)
        else:
            units, power = cat.switch(d.part).rack_units, cat.switch(d.part).max_power_w
        put(net_by_row[row], d, units, power, row, "network")
    # Management network: per row, for everything placed in it, so copper stays in the row.
    rack_by_name = {rk.name: rk for rk in racks}
    groups: dict[int, list[Device]] = defaultdict(list)
    for d in fab.devices:
        if d.rack:
            groups[rack_by_name[d.rack].row].append(d)
    oob_groups: list[OobGroup] = []
    rows_sorted = sorted(groups)
    spine_rows = {y: pod for pod, y in spine_row_of_pod.items()}
    for row in rows_sorted:
        devs = groups[row]
        sus = {d.su for d in devs if d.role == "host"}
        if row == central:
            oob_groups.append(OobGroup("central", 30_000, devs))
        elif row in spine_rows:
            pod = spine_rows[row]
            oob_groups.append(OobGroup(f"pod{pod:02d}", 9_000 + 8 * pod, devs))
        elif len(sus) == 1 and not fab.request.racks_per_row:
            su = next(iter(sus))
            oob_groups.append(OobGroup(f"su{su:03d}", 8 * su, devs, su_slots=sh.su_hosts))
        else:
            oob_groups.append(OobGroup(f"row{row + 1:03d}", 11_000 + 8 * row, devs))
    mgmt = round(cat.assumption("switch_mgmt_ports"))
    if (sh.tiers == 1 or not fab.has_backend) and len(oob_groups) > 1:
        # Below one scalable unit: one management switch for every row when its ports hold
        # them all (1 GbE copper reaches 100 m, across the few racks of such a cluster), so no
        # aggregation layer is needed; per-row switches return with the second SU.
        every = [d for g in oob_groups for d in g.devices]
        per_host = max(1, srv.oob_ports // srv.hosts)
        ports = sum(per_host if d.role == "host" else mgmt for d in every
                    if d.role == "host" or d.role in SWITCH_ROLES)
        if ports <= fab.oob.radix:
            host_rows = [rack_by_name[d.rack].row for d in every if d.role == "host"]
            row0 = host_rows[0] if host_rows else rows_sorted[0]
            oob_groups = [OobGroup("su001", 8, every)]
            rows_sorted = [row0]
    per_row = build_oob(fab, oob_groups, mgmt)
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


def choose_media(fab: Fabric, cat: Catalog) -> None:
    """Fill each link's media, cable, transceivers and host-side cage."""
    picker = MediaPicker(cat)
    srv = fab.server

    be_host = End(
        str(cat.get("nics", srv.backend_nics.nic).cage) if srv.backend_nics.nic
        else (srv.backend_nics.cage or "OSFP"),
        "host", srv.backend_links_per_cage * fab.shape.planes,
    )
    fe_host = End(frontend_cage(cat, srv), "host", 1)
    # A storage system's ports are the cage of their rate; targets sized from bandwidth alone
    # are cabled as the hosts' frontend ports.
    storage_end = (End(storage_cage(fab.storage.port_gbps), "host", 1)
                   if fab.storage is not None else fe_host)
    unjoined: list[Link] = []
    sw_end: dict[str, End] = {}
    for d in fab.devices:
        if d.role in SWITCH_ROLES and d.part not in sw_end:
            sw = cat.switch(d.part)
            per_cage = max(1, max(pc.ports for pc in sw.port_configs) // sw.cages)
            sw_end[d.part] = End(sw.cage, "switch", per_cage)
    bmc_end = End("RJ45", "host", 1)
    # Cages whose links go to more than one peer cage (a leaf cage's two 400G ports to two
    # spines): no straight multi-link cable joins them.
    peers: dict[tuple[str, str], set[tuple[str, str]]] = defaultdict(set)
    for lk in fab.links:
        if lk.a_cage and lk.b_cage:
            peers[(lk.a, lk.a_cage)].add((lk.b, lk.b_cage))
            peers[(lk.b, lk.b_cage)].add((lk.a, lk.a_cage))
    split_cages = {k for k, v in peers.items() if len(v) > 1}
    for lk in fab.links:
        a = fab.by_name[lk.a]
        b = fab.by_name[lk.b]
        if a.role == "host":
            if lk.network == "backend":
                a_end = be_host
                lk.a_cage = host_cage(srv.backend_port_names, lk.rail, srv.backend_links_per_cage)
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
                    a_end = End(a_end.cage.split("+")[-1].strip(), "switch", 1)
        b_end = sw_end[b.part]
        if lk.network == "oob" and lk.tier == "oob-node-leaf":
            b_end = bmc_end
        length = orderable(lk.length_m)
        split = (lk.a, lk.a_cage) in split_cages or (lk.b, lk.b_cage) in split_cages
        try:
            media, cable, xa, xb = picker.pick(lk.speed_gbps, length, a_end, b_end, split)
        except MediaError:
            if a.role != "storage" or fab.storage is None:
                raise
            # A bought storage system whose ports no catalog part joins to the leaf: the link
            # stays in the plan with no part (not priced), and a note says what to order.
            unjoined.append(lk)
            lk.media, lk.cable, lk.a_xcvr, lk.b_xcvr = "none", "", "", ""
            continue
        lk.media, lk.cable, lk.a_xcvr, lk.b_xcvr = media, cable, xa, xb
    if unjoined:
        st = fab.storage
        assert st is not None
        leaf = fab.by_name[unjoined[0].b]
        sw = cat.switch(leaf.part)
        rates = sorted({pc.speed_gbps for pc in sw.port_configs})
        why = ("has no ports at that rate in the catalog (it offers "
               f"{', '.join(f'{r:g}' for r in rates)} Gb/s)"
               if unjoined[0].speed_gbps not in rates else
               f"takes no catalog cable or optic from a {storage_end.cage} port at that rate")
        fab.notes.append(
            f"storage cabling not resolved: {len(unjoined)} link(s) of the {st.id} units' "
            f"{unjoined[0].speed_gbps:g} Gb/s {storage_end.cage} ports to the frontend leaves' "
            f"{sw.id}, which {why}; they are in the cabling plan with no part and not on the "
            f"BOM: give the units NICs at the leaves' rate (the usual fix), an active (gearbox) "
            f"cable or adapter where one exists, or another frontend switch or storage "
            f"system")


def storage_cage(port_gbps: float) -> str:
    """The pluggable cage of a storage port of ``port_gbps`` (Gb/s): the QSFP generation of
    that lane rate (QSFP28 4 x 25G, QSFP56 4 x 50G, QSFP112 4 x 100G; SFF-8665 family and the
    QSFP112 MSA), OSFP above 400G."""
    if port_gbps <= 100:
        return "QSFP28"
    if port_gbps <= 200:
        return "QSFP56"
    return "QSFP112" if port_gbps <= 400 else "OSFP"


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


def links_per_connector(t: Transceiver) -> int:
    """Links one of a module's optical connectors carries: a twin-port 2 x 400G module has
    two MPO-12 ports of one link each, the same module split 4 x 200G two links a port."""
    m = re.match(r"\s*(\d+)\s*x\s", t.connector or "")
    return max(1, t.links // (int(m.group(1)) if m else 1))


def cable_counts(fab: Fabric, cat: Catalog) -> dict[tuple[str, float], int]:
    """Cables per (part, stock length m). A twin-port DAC carries two links; a fibre trunk
    carries the links one connector of its modules does (two 200GBASE-SR2 on an MPO-12)."""
    cables = {c.id: c for c in cat.all("cables")}
    per_conn = {t.id: links_per_connector(t) for t in cat.all("transceivers")}
    # A multi-link cable (twin-port DAC, or a trunk between split cages) joins one cage to one
    # cage: only links between the same two cages can share it.
    per_pair: dict[tuple[str, float, str, str, str, str], int] = defaultdict(int)
    share: dict[tuple[str, float, str, str, str, str], int] = {}
    for lk in fab.links:
        if not lk.cable:
            continue  # a storage link no catalog part joins (choose_media's note)
        c = cables[lk.cable]
        length = stock_length(c.lengths_m, lk.length_m)
        n_links = c.links
        if c.kind == "fiber" and lk.a_xcvr and lk.b_xcvr:
            n_links = min(per_conn[lk.a_xcvr], per_conn[lk.b_xcvr])
        if n_links > 1:
            key = (lk.cable, length, lk.a, lk.a_cage or lk.a_port, lk.b, lk.b_cage or lk.b_port)
        else:
            key = (lk.cable, length, "", "", "", "")
        per_pair[key] += 1
        share[key] = n_links
    out: dict[tuple[str, float], int] = defaultdict(int)
    for key, n in per_pair.items():
        out[(key[0], key[1])] += math.ceil(n / share[key])
    return dict(out)
