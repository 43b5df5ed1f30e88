"""The diff on synthetic as-built data (every kind of fault) and on hand-made cases."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clusterwright.catalog.registry import Catalog
from clusterwright.ingest.common import IngestError
from clusterwright.ingest.model import Adjacency, Observations
from clusterwright.twin.blueprint import Plan
from clusterwright.twin.diff import compare
from clusterwright.twin.run import TwinRequest, twin_diff
from clusterwright.twin.synth import synthesize


def _run(bp: Path, plan: Plan, tmp: Path, faults: int, seed: int, catalog: Catalog
         ) -> tuple[set[tuple[str, ...]], set[tuple[str, ...]]]:
    syn = synthesize(plan, tmp, faults=faults, seed=seed)
    rep = twin_diff(TwinRequest(blueprint=bp, inputs={k: tuple(v) for k, v in
                                                      syn.inputs.items()}, impact=False),
                    catalog)
    return syn.truth, {f.key for f in rep.findings}


@pytest.mark.parametrize("seed", [1, 2])
def test_every_injected_fault_and_nothing_else_ethernet(eth_bp: Path, eth_plan: Plan,
                                                        tmp_path: Path, catalog: Catalog,
                                                        seed: int) -> None:
    truth, found = _run(eth_bp, eth_plan, tmp_path, 60, seed, catalog)
    assert len(truth) >= 50  # one SU: no node can be cabled into another
    assert found == truth


def test_every_injected_fault_and_nothing_else_infiniband(ib_bp: Path, ib_plan: Plan,
                                                          tmp_path: Path,
                                                          catalog: Catalog) -> None:
    truth, found = _run(ib_bp, ib_plan, tmp_path, 150, 3, catalog)
    kinds = {k[0] for k in truth}
    assert {"missing_link", "miswired_link", "rail_swap", "wrong_su", "wrong_speed",
            "wrong_label", "slow_gpu", "slow_link", "gpu_missing", "nvlink_degraded",
            "node_unavailable", "extra_link", "unexpected_asn", "bgp_down"} <= kinds
    assert found == truth


def test_as_built_equal_to_the_blueprint_has_no_findings(ib_bp: Path, ib_plan: Plan,
                                                         tmp_path: Path,
                                                         catalog: Catalog) -> None:
    truth, found = _run(ib_bp, ib_plan, tmp_path, 0, 0, catalog)
    assert truth == set() and found == set()


def _adj(a: str, ap: str, b: str, bp: str, line: int = 1) -> Adjacency:
    return Adjacency(local=a, local_port=ap, remote=b, remote_port=bp, source="lldp.json",
                     line=line, via="lldp")


def _mirror(plan: Plan, swap: dict[tuple[str, str], tuple[str, str]] | None = None,
            skip: set[str] | None = None, networks: tuple[str, ...] = ("backend",)
            ) -> Observations:
    """LLDP from both ends of every backend cable, with some far ends swapped."""
    obs = Observations()
    for lk in plan.links:
        if lk.network not in networks or lk.cable in (skip or set()):
            continue
        far = (swap or {}).get((lk.a, lk.a_port), (lk.b, lk.b_port))
        obs.adjacencies += [_adj(lk.a, lk.a_port, *far, line=lk.line),
                            _adj(far[0], far[1], lk.a, lk.a_port, line=lk.line)]
        for d in (lk.a, far[0]):
            obs.report("lldp", "lldp.json", d, lk.line)
    return obs


def test_swapped_uplinks_say_which_cable_goes_where(eth_plan: Plan) -> None:
    eth_plan.only(("backend",))
    up = [lk for lk in eth_plan.links if lk.tier == "leaf-spine"]
    a = up[0]
    b = next(lk for lk in up if lk.a != a.a and lk.b != a.b)
    cmp = compare(eth_plan, _mirror(eth_plan, {(a.a, a.a_port): (b.b, b.b_port),
                                               (b.a, b.a_port): (a.b, a.b_port)}))
    mis = sorted((f for f in cmp.findings if f.kind == "miswired_link"), key=lambda f: f.subject)
    assert [f.kind for f in cmp.findings] == ["miswired_link"] * 2
    f = next(f for f in mis if f.subject == f"{a.a} {a.a_port}")
    assert f.moves[0].src == (b.b, b.b_port) and f.moves[0].dst == (a.b, a.b_port)
    assert f.repair == (f"cable {a.cable}: move the end at {b.b} {b.b_port} to {a.b} "
                        f"{a.b_port} (keep the end at {a.a} {a.a_port})")
    assert f"planned for {b.a} {b.a_port}" in f.observed


def test_rail_swap_is_one_finding_with_a_swap_at_the_host(eth_plan: Plan) -> None:
    eth_plan.only(("backend",))
    h = [lk for lk in eth_plan.links if lk.a == "gpu00003" and lk.tier == "node-leaf"]
    x, y = h[1], h[2]
    cmp = compare(eth_plan, _mirror(eth_plan, {(x.a, x.a_port): (y.b, y.b_port),
                                               (y.a, y.a_port): (x.b, x.b_port)}))
    [f] = cmp.findings
    assert f.kind == "rail_swap" and f.key == ("rail_swap", "gpu00003",
                                               *sorted((x.a_port, y.a_port)))
    assert "swap the cables in" in f.repair and "rails 1, 2" in f.summary


def test_partial_dump_says_what_it_could_not_see(eth_plan: Plan) -> None:
    eth_plan.only(("backend",))
    obs = Observations()
    for lk in eth_plan.links:  # only the hosts' own LLDP tables
        if lk.tier == "node-leaf":
            obs.adjacencies.append(_adj(lk.a, lk.a_port, lk.b, lk.b_port))
            obs.report("lldp", "lldp.json", lk.a, 1)
    cmp = compare(eth_plan, obs)
    assert cmp.findings == []
    assert any("leaf-spine cable(s): neither end" in u for u in cmp.unseen)
    assert any(u.startswith("devices in no LLDP") and "spine" in u for u in cmp.unseen)


def test_a_dump_from_another_cluster_is_refused(eth_bp: Path, tmp_path: Path,
                                                catalog: Catalog) -> None:
    p = tmp_path / "lldp.json"
    p.write_text(json.dumps({"other-leaf-1": {"lldp": {"interface": {"eth1": {
        "chassis": {"other-host": {"id": {"type": "mac", "value": "x"}}},
        "port": {"id": {"type": "ifname", "value": "eth0"}}}}}}}, indent=1))
    with pytest.raises(IngestError, match=r"lldp\.json:2: none of the 1 device\(s\) named in "
                                          r"this lldp dump is in the blueprint") as info:
        twin_diff(TwinRequest(blueprint=eth_bp, inputs={"lldp": (p,)}, impact=False), catalog)
    assert info.value.field == "lldp"


def test_missing_cable_names_both_ports_and_racks(eth_plan: Plan) -> None:
    eth_plan.only(("backend",))
    lk = next(lk for lk in eth_plan.links if lk.tier == "leaf-spine")
    [f] = compare(eth_plan, _mirror(eth_plan, skip={lk.cable})).findings
    assert f.kind == "missing_link" and f.key == ("missing_link", lk.cable)
    assert f"{lk.a} {lk.a_port} (rack {lk.a_rack})" in f.repair


def _renamed(plan: Plan, rename: dict[str, object]) -> Observations:
    """LLDP from both ends of every backend cable, each device's ports under the names
    ``rename[device](port)`` gives (a NOS or a host naming them its own way)."""
    obs = Observations()

    def name(dev: str, port: str) -> str:
        f = rename.get(dev)
        return f(port) if callable(f) else port

    for lk in plan.links:
        if lk.network != "backend":
            continue
        a, b = name(lk.a, lk.a_port), name(lk.b, lk.b_port)
        obs.adjacencies += [_adj(lk.a, a, lk.b, b, line=lk.line),
                            _adj(lk.b, b, lk.a, a, line=lk.line)]
        for d in (lk.a, lk.b):
            obs.report("lldp", "lldp.json", d, lk.line)
    return obs


def test_a_host_naming_its_ports_its_own_way_matches_by_device(eth_plan: Plan) -> None:
    """lldpd on a host sends the netdev name (ens11f0np0), never the plan's osfp4p2: every
    cable of that host read as miswired. It matches at the device level, and says so."""
    eth_plan.only(("backend",))
    host = eth_plan.links[0].a if eth_plan.devices[eth_plan.links[0].a].role == "host" else \
        next(lk.a for lk in eth_plan.links if eth_plan.devices[lk.a].role == "host")
    cmp = compare(eth_plan, _renamed(eth_plan, {host: lambda p: f"ens{len(p)}{p[-3:]}np0"}))
    assert cmp.findings == []
    assert any(host in n and "matched at the device level" in n for n in cmp.notes)


def test_switch_ports_in_another_case_or_naming_are_not_miswirings(eth_plan: Plan) -> None:
    eth_plan.only(("backend",))
    leaf = next(lk.b for lk in eth_plan.links if lk.tier == "node-leaf")
    upper = compare(eth_plan, _renamed(eth_plan, {leaf: str.upper}))
    assert upper.findings == [] and not upper.notes
    # A NOS numbering ports its own way (SONiC's Ethernet0): device level, with a note.
    sonic = compare(eth_plan, _renamed(eth_plan, {leaf: lambda p: f"Ethernet_{p}"}))
    assert sonic.findings == []
    assert any(leaf in n for n in sonic.notes)


def test_one_cable_on_an_unplanned_switch_port_is_still_a_miswiring(eth_plan: Plan) -> None:
    eth_plan.only(("backend",))
    lk = next(x for x in eth_plan.links if x.tier == "node-leaf")
    cmp = compare(eth_plan, _renamed(eth_plan, {
        lk.b: lambda p: "swp99" if p == lk.b_port else p}))
    assert [f.kind for f in cmp.findings] == ["miswired_link"]


def test_hcas_without_host_names_are_not_miswirings(ib_bp: Path, ib_plan: Plan,
                                                    tmp_path: Path, catalog: Catalog) -> None:
    """A fault-free fabric whose HCAs report their firmware's description: the host ends
    cannot be compared, which the report says; it used to report 1,000+ miswired cables."""
    import re

    syn = synthesize(ib_plan, tmp_path, faults=0, seed=0)
    (ib,) = syn.inputs["ibnet"]
    text = Path(ib).read_text()
    Path(ib).write_text(re.sub(r'# "gpu\d{5} mlx5_\d+"',
                               '# "MT4129 ConnectX7   Mellanox Technologies"', text))
    rep = twin_diff(TwinRequest(blueprint=ib_bp, inputs={"ibnet": (ib,)}, impact=False),
                    catalog)
    assert rep.findings == []
    assert any("firmware's default description" in u for u in rep.unseen)
