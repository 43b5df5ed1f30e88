"""Physical plan: racks, rows, rack units, lengths, media and module counts
(``design.physical``, ``design.media``)."""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from clusterwright.catalog.registry import Catalog, load_catalog
from clusterwright.design.fabric import SWITCH_ROLES, Fabric, FabricError, design_fabric
from clusterwright.design.media import End, MediaPicker, orderable, stock_length
from clusterwright.design.physical import (
    cable_counts,
    choose_media,
    place,
    servers_per_rack,
    site_for,
    transceiver_counts,
)
from clusterwright.spec.fabric import FabricRequest

COPPER = ("dac", "acc", "aec")


def _placed(cat: Catalog, **kw: object) -> Fabric:
    fab = design_fabric(FabricRequest(**kw), cat)  # type: ignore[arg-type]
    place(fab, cat)
    choose_media(fab, cat)
    return fab


@pytest.fixture(scope="module")
def h100_64(catalog: Catalog) -> Fabric:
    return _placed(catalog, server="dgx-h100", nodes=64, switch="qm9700")


@pytest.fixture(scope="module")
def h100_512(catalog: Catalog) -> Fabric:
    return _placed(catalog, server="dgx-h100", nodes=512, switch="qm9700")


@pytest.fixture(scope="module")
def h100_eth(catalog: Catalog) -> Fabric:
    return _placed(catalog, server="dgx-h100", nodes=40, switch="sn5600")


@pytest.fixture(scope="module")
def gb200(catalog: Catalog) -> Fabric:
    return _placed(catalog, server="gb200-nvl72", nodes=8, cooling="liquid", rack_kw=130)


@pytest.fixture(scope="module")
def rows_of_4(catalog: Catalog) -> Fabric:
    return _placed(catalog, server="dgx-h100", nodes=48, switch="qm9700", racks_per_row=4)


@pytest.fixture(scope="module")
def tpu_pods(catalog: Catalog) -> Fabric:
    return _placed(catalog, server="tpu-v5e-256", nodes=2)


@pytest.fixture(params=["h100_64", "h100_512", "h100_eth", "gb200", "rows_of_4", "tpu_pods"])
def fab(request: pytest.FixtureRequest) -> Fabric:
    f: Fabric = request.getfixturevalue(request.param)
    return f


# ------------------------------------------------------------------ racks and power


@pytest.mark.parametrize(("rack_kw", "cooling", "per_rack"), [
    (20.0, "air", 1),  # 20 / 10.2 = 1.96
    (40.0, "air", 3),  # 40 / 10.2 = 3.92
    (42.9, "air", 4),  # the air-cooled cap itself
    (60.0, "air", 4),  # capped at 42.9 kW
    (60.0, "liquid", 5),  # 60 / 10.2 = 5.88
    (130.0, "liquid", 6),  # rack units: 48 U / 8 U
])
def test_servers_per_rack_respect_power_and_units(
    catalog: Catalog, rack_kw: float, cooling: str, per_rack: int
) -> None:
    fab = design_fabric(
        FabricRequest(server="dgx-h100", nodes=32, switch="qm9700", rack_kw=rack_kw,
                      cooling=cooling),  # type: ignore[arg-type]
        catalog,
    )
    assert servers_per_rack(fab, site_for(fab, catalog)) == per_rack
    place(fab, catalog)
    per = Counter(h.rack for h in fab.hosts)
    assert max(per.values()) == per_rack
    assert len(per) == math.ceil(32 / per_rack)
    cap = catalog.assumption(f"{cooling}_cooled_rack_max_kw")
    limit = min(rack_kw, cap) * 1e3
    for rk in fab.racks:
        assert rk.power_w <= limit + 1e-6, rk.name
        assert rk.used_units <= rk.units, rk.name


def test_rack_kw_above_the_air_limit_is_capped_with_a_note(catalog: Catalog) -> None:
    fab = design_fabric(
        FabricRequest(server="dgx-h100", nodes=8, switch="qm9700", rack_kw=60), catalog
    )
    assert site_for(fab, catalog).rack_kw == pytest.approx(42.9)
    assert any("rack_kw 60" in n and "42.9 kW" in n for n in fab.notes)


def test_rack_kw_within_the_limit_leaves_no_note(catalog: Catalog) -> None:
    fab = design_fabric(FabricRequest(server="dgx-h100", nodes=8, switch="qm9700"), catalog)
    assert site_for(fab, catalog).rack_kw == 40.0
    assert not any("rack_kw" in n for n in fab.notes)


def test_liquid_cooled_server_in_air_cooled_rows_is_an_error(catalog: Catalog) -> None:
    fab = design_fabric(FabricRequest(server="gb200-nvl72", nodes=2), catalog)
    with pytest.raises(FabricError, match=r"^cooling: gb200-nvl72 is liquid-cooled; air cooling"):
        place(fab, catalog)


def test_rack_scale_system_above_rack_kw_is_an_error(catalog: Catalog) -> None:
    fab = design_fabric(
        FabricRequest(server="gb200-nvl72", nodes=2, cooling="liquid", rack_kw=100), catalog
    )
    with pytest.raises(FabricError, match=r"^rack_kw: one gb200-nvl72 rack draws 120 kW, more "
                       r"than a rack may carry here \(100 kW"):
        place(fab, catalog)


def test_gb300_nvl72_fits_the_liquid_limit(catalog: Catalog) -> None:
    """NVIDIA's Enterprise RA: a GB300 NVL72 rack draws up to 142 kW; a liquid plan hosts it."""
    fab = _placed(catalog, server="gb300-nvl72", nodes=2, cooling="liquid",
                  rack_kw=catalog.assumption("liquid_cooled_rack_max_kw"))
    compute = [rk for rk in fab.racks if rk.kind == "compute"]
    assert len(compute) == 2 and {rk.power_w for rk in compute} == {142e3}


def test_a_pod_over_several_racks_shares_its_power_and_hosts(catalog: Catalog) -> None:
    """A 256-chip TPU v5e pod is 192U (four 48U racks) and 80 kW: 20 kW and 8 hosts a rack,
    which air cooling carries (before, the whole pod was checked against one rack)."""
    fab = _placed(catalog, server="tpu-v5e-256", nodes=2)
    assert fab.request.cooling == "air"
    compute = [rk for rk in fab.racks if rk.kind == "compute"]
    assert len(compute) == 8
    assert {rk.power_w for rk in compute} == {20e3}
    assert {rk.used_units for rk in compute} == {48}
    per = Counter(h.rack for h in fab.hosts)
    assert set(per.values()) == {8} and len(per) == 8


def test_a_pod_too_dense_per_rack_names_the_racks(catalog: Catalog) -> None:
    fab = design_fabric(FabricRequest(server="tpu-v5e-256", nodes=1, rack_kw=15), catalog)
    with pytest.raises(FabricError, match=r"each of the 4 racks of one tpu-v5e-256 draws 20 kW"):
        place(fab, catalog)


def test_nvl72_fills_one_rack_per_system(gb200: Fabric) -> None:
    per = Counter(h.rack for h in gb200.hosts)
    assert len(per) == 8 and set(per.values()) == {18}
    racks = {rk.name: rk for rk in gb200.racks}
    assert all(racks[r].kind == "compute" and racks[r].cooling == "liquid" for r in per)


def test_nvl72_rack_trays_belong_to_one_su(gb200: Fabric) -> None:
    """A rack is one NVLink domain: its trays share an SU (SuperPOD GB200: SU = 8 racks)."""
    sus: dict[str, set[int]] = defaultdict(set)
    for h in gb200.hosts:
        sus[h.rack].add(h.su)
    assert all(len(s) == 1 for s in sus.values()), dict(sus)


def test_every_device_has_a_rack_and_units(fab: Fabric) -> None:
    racks = {rk.name: rk for rk in fab.racks}
    assert len(racks) == len(fab.racks)
    for d in fab.devices:
        assert d.rack in racks, d.name
        assert d.name in racks[d.rack].devices
        assert d.rack_u >= 1 and d.units >= 1
        assert d.rack_u + d.units - 1 <= racks[d.rack].units
    assert sum(len(rk.devices) for rk in fab.racks) == len(fab.devices)


def test_rack_units_do_not_overlap(fab: Fabric) -> None:
    """Rack-scale systems included: an NVL72's 18 trays all sat at U1, 48U high each."""
    used: dict[str, set[int]] = defaultdict(set)
    for d in fab.devices:
        units = set(range(d.rack_u, d.rack_u + d.units))
        assert not used[d.rack] & units, (d.name, d.rack)
        used[d.rack] |= units


def test_racks_stay_within_power(fab: Fabric, catalog: Catalog) -> None:
    site = site_for(fab, catalog)
    for rk in fab.racks:
        assert rk.power_w <= site.rack_kw * 1e3 + 1e-6, rk.name


def test_network_switches_sit_in_network_racks(fab: Fabric) -> None:
    kind = {rk.name: rk.kind for rk in fab.racks}
    for d in fab.devices:
        assert kind[d.rack] == ("compute" if d.role == "host" else "network"), d.name


def test_leaves_sit_in_the_row_of_their_su(h100_512: Fabric) -> None:
    row = {rk.name: rk.row for rk in h100_512.racks}
    su_rows: dict[int, set[int]] = defaultdict(set)
    for h in h100_512.hosts:
        su_rows[h.su].add(row[h.rack])
    assert all(len(r) == 1 for r in su_rows.values())
    for leaf in h100_512.switches("leaf", "fe-leaf"):
        if leaf.su in su_rows:
            assert row[leaf.rack] in su_rows[leaf.su], leaf.name


def test_racks_per_row_limits_compute_racks(rows_of_4: Fabric) -> None:
    per_row = Counter(rk.row for rk in rows_of_4.racks if rk.kind == "compute")
    assert max(per_row.values()) == 4
    assert sum(per_row.values()) == 16  # 48 DGX at 3 per rack


# ------------------------------------------------------------------ lengths and media


def test_in_rack_links_are_short(fab: Fabric) -> None:
    in_rack = [lk for lk in fab.links if fab.by_name[lk.a].rack == fab.by_name[lk.b].rack]
    assert in_rack
    assert all(0 < lk.length_m < 3 for lk in in_rack)


def test_links_between_racks_include_the_slack(fab: Fabric, catalog: Catalog) -> None:
    slack = catalog.assumption("cable_slack_m")
    for lk in fab.links:
        if fab.by_name[lk.a].rack != fab.by_name[lk.b].rack:
            assert lk.length_m >= slack


def test_copper_wherever_a_dac_reaches(fab: Fabric, catalog: Catalog) -> None:
    """Switch-to-switch links short enough for an active catalog DAC between those cages are
    copper, not optics."""
    dacs = [c for c in catalog.all("cables") if c.kind == "dac" and c.status == "active"]
    # A cage whose ports go to different peer cages takes no straight multi-link DAC.
    peers: dict[tuple[str, str], set[tuple[str, str]]] = defaultdict(set)
    for lk in fab.links:
        if lk.a_cage and lk.b_cage:
            peers[(lk.a, lk.a_cage)].add((lk.b, lk.b_cage))
            peers[(lk.b, lk.b_cage)].add((lk.a, lk.a_cage))
    checked = 0
    for lk in fab.links:
        a, b = fab.by_name[lk.a], fab.by_name[lk.b]
        if a.role not in SWITCH_ROLES or lk.network == "oob":
            continue
        split = len(peers[(lk.a, lk.a_cage)]) > 1 or len(peers[(lk.b, lk.b_cage)]) > 1
        dacs_here = [c for c in dacs if c.links == 1] if split else dacs
        cages = (catalog.switch(a.part).cage.upper(), catalog.switch(b.part).cage.upper())
        reach = [
            c for c in dacs_here
            if c.speed_gbps == lk.speed_gbps and c.reach_m >= orderable(lk.length_m)
            and all((c.form_factor or "").upper() in cage for cage in cages)
        ]
        if reach:
            checked += 1
            assert lk.media in COPPER, (lk.a, lk.b, lk.length_m, lk.media)
        else:
            assert lk.media not in ("", "utp")


def test_oob_cables_stay_in_their_row(fab: Fabric) -> None:
    row = {rk.name: rk.row for rk in fab.racks}
    oob = [lk for lk in fab.links if lk.tier == "oob-node-leaf"]
    assert oob
    for lk in oob:
        assert row[fab.by_name[lk.a].rack] == row[fab.by_name[lk.b].rack], lk.a
        assert lk.length_m < 20
        assert lk.media == "utp"


def test_every_device_is_on_the_management_network(fab: Fabric) -> None:
    mgmt = Counter(lk.a for lk in fab.links if lk.tier == "oob-node-leaf")
    for d in fab.devices:
        if d.role == "host":
            assert mgmt[d.name] == max(1, fab.server.oob_ports // fab.server.hosts)
        elif d.role in SWITCH_ROLES and not d.role.startswith("oob-"):
            assert mgmt[d.name] == 1, d.name
    up = Counter(lk.a for lk in fab.links if lk.tier == "oob-leaf-spine")
    assert set(up.values()) == {2}
    assert set(up) == {d.name for d in fab.switches("oob-leaf")}


def test_every_link_has_media_that_reaches(fab: Fabric, catalog: Catalog) -> None:
    for lk in fab.links:
        assert lk.media and lk.cable, (lk.a, lk.b)
        cable = catalog.cable(lk.cable)
        assert cable.reach_m >= lk.length_m
        if lk.media == "optics":
            assert cable.kind == "fiber"
            for x in (lk.a_xcvr, lk.b_xcvr):
                t = catalog.transceiver(x)
                assert t.reach_m >= lk.length_m
                assert t.speed_gbps == lk.speed_gbps
                assert t.media == cable.fiber
            assert cable.speed_gbps >= lk.speed_gbps
        else:
            assert (lk.a_xcvr, lk.b_xcvr) == ("", "")
            assert cable.kind == lk.media
            if lk.media != "utp":
                assert cable.speed_gbps == lk.speed_gbps


def test_no_link_uses_a_discontinued_part(fab: Fabric, catalog: Catalog) -> None:
    for lk in fab.links:
        assert catalog.cable(lk.cable).status == "active"
        for x in (lk.a_xcvr, lk.b_xcvr):
            if x:
                assert catalog.transceiver(x).status == "active"


def _connector(c: str) -> str:
    """One end's connector: a twin-port module's '2x MPO-12/APC' is MPO-12/APC."""
    return re.sub(r"^\d+x\s+", "", c.strip()).upper()


def test_fibre_connectors_match_the_optics(fab: Fabric, catalog: Catalog) -> None:
    seen = set()
    for lk in fab.links:
        if lk.media != "optics":
            continue
        fibre = _connector(catalog.cable(lk.cable).connector or "")
        for x in (lk.a_xcvr, lk.b_xcvr):
            assert _connector(catalog.transceiver(x).connector) == fibre, (lk.cable, x)
        seen.add(fibre.rsplit("/", 1)[-1])
    assert seen  # APC (400G) and, with an OOB uplink on optics, UPC


def test_host_and_switch_sides_take_their_own_modules(fab: Fabric, catalog: Catalog) -> None:
    for lk in fab.links:
        if lk.media != "optics":
            continue
        for dev, x in ((lk.a, lk.a_xcvr), (lk.b, lk.b_xcvr)):
            side = catalog.transceiver(x).side
            if fab.by_name[dev].role in SWITCH_ROLES:
                assert side in ("switch", "any"), (dev, x)
            else:
                assert side in ("host", "any"), (dev, x)


def test_a_link_beyond_every_reach_names_catalog(catalog: Catalog, tmp_path: Path) -> None:
    """600 m of slack per cable is more than any 400G optic or fibre in the catalog reaches."""
    f = tmp_path / "far.yaml"
    f.write_text(
        "assumptions:\n  cable_slack_m:\n    value: 600\n    unit: m\n    source: test fixture\n"
    )
    cat = load_catalog([f], env={})
    fab = design_fabric(FabricRequest(server="dgx-h100", nodes=32, switch="qm9700"), cat)
    place(fab, cat)
    with pytest.raises(FabricError, match=r"over 6\d\d m.*--catalog"):
        choose_media(fab, cat)


def test_picker_refuses_what_nothing_reaches(catalog: Catalog) -> None:
    picker = MediaPicker(catalog)
    osfp_sw, osfp_host = End("OSFP", "switch", 2), End("OSFP", "host", 2)
    assert picker.pick(400, 2, osfp_sw, osfp_sw)[0] == "dac"
    assert picker.pick(400, 40, osfp_host, osfp_sw)[0] == "optics"
    with pytest.raises(FabricError, match="--catalog"):
        picker.pick(400, 10_000, osfp_host, osfp_sw)


@pytest.mark.parametrize(("lengths", "want", "stock"), [
    ([3, 5, 7, 10], 4.2, 5),
    ([3, 5, 7, 10], 3.0, 3),
    ([3, 5, 7, 10], 12.0, 12.0),  # longer than the list: next metre
    ([], 1.2, 1.5),  # half metres to 5 m
    ([], 5.0, 5.0),
    ([], 5.1, 6.0),  # then metres
])
def test_stock_length(lengths: list[float], want: float, stock: float) -> None:
    assert stock_length(lengths, want) == stock


# ------------------------------------------------------------------ modules and cables


def test_twin_port_switch_modules_count_switch_cages(fab: Fabric, catalog: Catalog) -> None:
    """A twin-port module at a switch cage serves its two links: one module per cage used."""
    counts = transceiver_counts(fab, catalog)
    cages: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for lk in fab.links:
        for dev, cage, port, x in (
            (lk.a, lk.a_cage, lk.a_port, lk.a_xcvr), (lk.b, lk.b_cage, lk.b_port, lk.b_xcvr)
        ):
            if x and fab.by_name[dev].role in SWITCH_ROLES:
                cages[x].add((dev, cage or port))
    assert cages
    for x, used in cages.items():
        if catalog.transceiver(x).side == "switch":
            assert counts[x] == len(used), x


def test_dgx_h100_uses_four_twin_flat_top_modules(h100_64: Fabric, catalog: Catalog) -> None:
    counts = transceiver_counts(h100_64, catalog)
    assert counts["mma4z00-ns-flt"] == 4 * 64
    t = catalog.transceiver("mma4z00-ns-flt")
    assert (t.links, t.side, t.form_factor) == (2, "host", "OSFP")
    # Switch side: 512 host links + 2 x 512 leaf-spine ends on twin-port cages.
    backend_switch_ends = 512 + 2 * 512
    assert counts["mma4z00-ns"] >= backend_switch_ends // 2


def test_single_port_host_modules_count_links(gb200: Fabric, catalog: Catalog) -> None:
    counts = transceiver_counts(gb200, catalog)
    host_x = {lk.a_xcvr for lk in gb200.links_in("node-leaf")}
    assert len(host_x) == 1
    (x,) = host_x
    assert catalog.transceiver(x).links == 1
    assert counts[x] == len(gb200.links_in("node-leaf")) == 8 * 18 * 4


def test_partial_rails_count_one_module_per_cage_used(catalog: Catalog) -> None:
    fab = _placed(catalog, server="dgx-h100", nodes=32, switch="qm9700", rails=2)
    by_host: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for lk in fab.links_in("node-leaf"):
        m = re.fullmatch(r"(osfp\d)p\d", lk.a_port)
        assert m is not None
        by_host[lk.a][m.group(1)].add(lk.a_cage)
    for cages in by_host.values():
        # osfp4p2 and osfp3p2: two physical cages, each its own a_cage label.
        assert len(cages) == 2
        assert all(len(c) == 1 for c in cages.values())
        assert len(set().union(*cages.values())) == 2
    assert transceiver_counts(fab, catalog)["mma4z00-ns-flt"] == 2 * 32


def test_cable_counts_cover_every_link(fab: Fabric, catalog: Catalog) -> None:
    counts = cable_counts(fab, catalog)
    links_of: Counter[str] = Counter(lk.cable for lk in fab.links)
    for part, n in links_of.items():
        carried = sum(q for (p, _), q in counts.items() if p == part)
        per = catalog.cable(part).links
        assert carried * per >= n
        assert carried <= n
    for (part, length), _ in counts.items():
        c = catalog.cable(part)
        if c.lengths_m:
            assert length in c.lengths_m or length > max(c.lengths_m), (part, length)


def test_twin_port_dacs_join_one_cage_pair(fab: Fabric, catalog: Catalog) -> None:
    counts = cable_counts(fab, catalog)
    pairs: dict[str, Counter[tuple[str, str, str, str]]] = defaultdict(Counter)
    for lk in fab.links:
        c = catalog.cable(lk.cable)
        if c.kind == "dac" and c.links > 1:
            pairs[lk.cable][(lk.a, lk.a_cage, lk.b, lk.b_cage)] += 1
    for part, by_pair in pairs.items():
        per = catalog.cable(part).links
        need = sum(math.ceil(n / per) for n in by_pair.values())
        assert sum(q for (p, _), q in counts.items() if p == part) == need


@pytest.mark.parametrize(("n", "m"), [(40, 41), (64, 65)])
def test_oob_cabling_is_stable_under_growth(catalog: Catalog, n: int, m: int) -> None:
    small = _placed(catalog, server="dgx-h100", nodes=n, switch="qm9700")
    big = _placed(catalog, server="dgx-h100", nodes=m, switch="qm9700")
    after = {(lk.a, lk.a_port): (lk.b, lk.b_port) for lk in big.links
             if lk.tier == "oob-node-leaf"}
    moved = [
        lk.a for lk in small.links
        if lk.tier == "oob-node-leaf" and after.get((lk.a, lk.a_port)) != (lk.b, lk.b_port)
    ]
    assert moved == []


def test_hosts_keep_their_oob_port_when_a_node_is_added(catalog: Catalog) -> None:
    small = _placed(catalog, server="dgx-h100", nodes=40, switch="qm9700")
    big = _placed(catalog, server="dgx-h100", nodes=41, switch="qm9700")
    after = {lk.a: (lk.b, lk.b_port) for lk in big.links if lk.tier == "oob-node-leaf"}
    for lk in small.links:
        if lk.tier == "oob-node-leaf" and small.by_name[lk.a].role == "host":
            assert after[lk.a] == (lk.b, lk.b_port)


@pytest.mark.parametrize(("server", "nodes", "switch", "over"), [
    ("dgx-h100", 129, "sn5600", 3.0),  # backend SUs of 96 hosts, frontend units of 64
    ("dgx-h100", 600, "tomahawk5-64x800", 3.0),
    ("dgx-b200", 31, "qm9700", 3.0),
])
def test_frontend_units_unlike_backend_sus_still_place(catalog: Catalog, server: str,
                                                       nodes: int, switch: str,
                                                       over: float) -> None:
    # Regression: frontend leaves were placed by their unit number as if it were a backend
    # SU, and a frontend unit with no backend SU of that number crashed the plan.
    from clusterwright.design.bom import plan_fabric

    fab = plan_fabric(FabricRequest(server=server, nodes=nodes, switch=switch,
                                    oversubscription=over), catalog)
    assert all(d.rack for d in fab.devices)
    assert all(lk.length_m > 0 for lk in fab.links)


def test_gaudi3_split_cages_get_4x200g_optics_and_their_fibres(catalog: Catalog) -> None:
    """Gaudi 3's 24 x 200GbE leave the baseboard through 6 OSFP 800G cages, 4 links each: the
    fabric joins them to a switch split 4 x 200G with one 2 x SR4 module per cage at each end
    (never copper: a cage's links go to several leaves), and a fibre trunk carries the two
    links of one MPO-12 port only where both land on the same switch cage."""
    from clusterwright.design.physical import links_per_connector

    xcvrs = {t.id: t for t in catalog.all("transceivers")}
    assert links_per_connector(xcvrs["osfp800-sr8-4x200g"]) == 2
    assert links_per_connector(xcvrs["mma4z00-ns"]) == 1  # twin-port 2 x 400G: one a port
    assert links_per_connector(xcvrs["mma1z00-ns400"]) == 1
    for nodes in (4, 32):
        fab = _placed(catalog, server="gaudi3-8", nodes=nodes)
        host = [lk for lk in fab.links if lk.tier == "node-leaf"]
        assert len(host) == 24 * nodes
        assert {(lk.speed_gbps, lk.media, lk.a_xcvr) for lk in host} == {
            (200, "optics", "osfp800-sr8-4x200g")}
        mods = transceiver_counts(fab, catalog)["osfp800-sr8-4x200g"]
        assert mods == 2 * 6 * nodes  # a module per 4-link cage, both ends
        per_pair = Counter((lk.a, lk.a_cage, lk.b, lk.b_cage) for lk in host)
        fibres = sum(math.ceil(n / 2) for n in per_pair.values())
        counted = sum(n for (part, _), n in cable_counts(fab, catalog).items()
                      if part == host[0].cable)
        other = sum(1 for lk in fab.links if lk.tier != "node-leaf" and lk.cable == host[0].cable)
        assert counted == fibres + other
        assert len(host) / 2 <= fibres <= len(host)


def test_a_multi_link_cable_joins_one_cage_to_one_cage(fab: Fabric, catalog: Catalog) -> None:
    """A straight twin-port DAC has one connector per end: a leaf cage whose two ports go to
    two spines took one (the frontend's storage leaves), which cannot be cabled."""
    links_of = {c.id: c.links for c in catalog.all("cables")}
    peers: dict[tuple[str, str], set[tuple[str, str]]] = defaultdict(set)
    for lk in fab.links:
        if lk.a_cage and lk.b_cage:
            peers[(lk.a, lk.a_cage)].add((lk.b, lk.b_cage))
            peers[(lk.b, lk.b_cage)].add((lk.a, lk.a_cage))
    for lk in fab.links:
        if links_of.get(lk.cable, 1) > 1 and lk.media != "optics":
            assert len(peers[(lk.a, lk.a_cage)]) == 1, (lk.a, lk.a_port, lk.cable)
            assert len(peers[(lk.b, lk.b_cage)]) == 1, (lk.b, lk.b_port, lk.cable)
