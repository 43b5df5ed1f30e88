"""The fabric's decisions in words an architect checks: protocol, switches, tiers, scalable unit
size and oversubscription, each with the constraint or comparison that decided it and the
alternatives it beat (``Decision`` of the blueprint)."""

from __future__ import annotations

from clusterwright.design.decision import Alternative, Decision
from clusterwright.design.fabric_model import Fabric
from clusterwright.design.fabric_shape import FabricError, fabric_shape


def _usd(x: float) -> str:
    return f"${x:,.0f}"


def _switch_alternatives(fab: Fabric) -> tuple[Alternative, ...]:
    """Each other catalog switch that fits the backend: how many boxes the same hosts need at
    its radix (same tier policy) and what they cost against the chosen ones."""
    s, req = fab.shape, fab.request
    chosen = fab.backend.switch
    mine = s.leaf_switches + s.spine_switches + s.core_switches
    mine_usd = mine * (chosen.price_usd or 0.0)
    out: list[Alternative] = []
    for sw, radix in fab.backend.others[:3]:
        try:
            alt = fabric_shape(hosts=s.hosts, rails=s.rails, radix=radix, planes=s.planes,
                               oversubscription=req.oversubscription,
                               tiers=1 if s.tiers == 1 and s.hosts * s.rails <= radix else None,
                               min_spines=2)
        except FabricError as exc:
            out.append(Alternative(sw.id, f"cannot build these {s.hosts} hosts ({exc})"))
            continue
        n = alt.leaf_switches + alt.spine_switches + alt.core_switches
        if sw.price_usd is None:
            out.append(Alternative(sw.id, f"{n} switches at {radix} ports; no catalog price"))
            continue
        delta = n * sw.price_usd - mine_usd
        out.append(Alternative(
            sw.id, f"{radix} ports at {fab.backend.speed_gbps:g}G: {n} switch(es), "
            f"{_usd(n * sw.price_usd)}, " + (f"{_usd(delta)} more" if delta >= 0
                                            else f"{_usd(-delta)} less but more boxes or tiers")))
    return tuple(out)


def _protocol(fab: Fabric) -> Decision:
    req, b = fab.request, fab.backend
    if not fab.has_backend:
        return Decision("protocol", "none", "no backend fabric is built (every job fits one "
                        f"NVLink domain); the growth backend would speak {b.protocol}")
    if req.protocol is not None:
        why = f"{b.protocol} as asked (protocol); {b.switch.id} speaks it"
    else:
        why = (f"the backend switch decides it: {b.switch.id} speaks {b.protocol}; set protocol "
               "to choose among that protocol's switches only")
    alts: list[Alternative] = []
    seen = {b.protocol}
    for sw, radix in b.others:
        if sw.protocol not in seen:
            seen.add(sw.protocol)
            alts.append(Alternative(sw.protocol, f"its best catalog switch, {sw.id}, has {radix} "
                                    f"ports at {b.speed_gbps:g}G against {b.radix} (see the "
                                    "backend switch decision for its cost)"))
    return Decision("protocol", b.protocol, why, subject="backend", alternatives=tuple(alts))


def _tiers(fab: Fabric) -> Decision:
    s, req = fab.shape, fab.request
    if not fab.has_backend:
        return Decision("tiers", "0 (no backend)", "every job fits one NVLink domain, so no GPU "
                        "traffic leaves a server; see the notes for the growth plan",
                        subject="backend", alternatives=(Alternative(
                            f"a one-tier backend ({s.leaf_switches} x {fab.backend.switch.id})",
                            f"{_usd(s.leaf_switches * (fab.backend.switch.price_usd or 0))} of "
                            "switches plus optics that would carry no traffic"),))
    if req.tiers is not None:
        return Decision("tiers", str(s.tiers), f"{s.tiers} tier(s) as asked (tiers)",
                        subject="backend")
    if s.tiers == 1:
        full = fabric_shape(hosts=s.su_hosts, rails=s.rails, radix=s.radix, planes=s.planes,
                            oversubscription=req.oversubscription, su_hosts=s.su_hosts,
                            tiers=2, min_spines=2)
        return Decision(
            "tiers", "1", f"{s.hosts} hosts are below one scalable unit of {s.su_hosts}: every "
            "host is one switch hop from every other, spines would carry nothing",
            subject="backend", alternatives=(Alternative(
                "2 tiers (the full-SU build)",
                f"{full.spines_per_plane * s.planes} spines and their leaf-spine optics "
                "bought before a second SU exists"),))
    if s.tiers == 3:
        try:
            fabric_shape(hosts=s.hosts, rails=s.rails, radix=s.radix, planes=s.planes,
                         oversubscription=req.oversubscription, su_hosts=s.su_hosts, tiers=2,
                         min_spines=2)
        except FabricError as exc:
            return Decision("tiers", "3", f"{s.hosts} hosts exceed what two tiers hold at radix "
                            f"{s.radix} ({exc})", subject="backend")
    return Decision(
        "tiers", str(s.tiers), f"{s.hosts} hosts fill {s.sus} scalable units of {s.su_hosts}: "
        f"spines join the units (two tiers hold up to {s.max_hosts} hosts at radix {s.radix})",
        subject="backend", alternatives=(Alternative(
            "3 tiers", "a core layer and its optics that nothing at this size needs"),))


def _su(fab: Fabric) -> Decision:
    s, req = fab.shape, fab.request
    if req.su_hosts is not None:
        why = f"{s.su_hosts} hosts per scalable unit as asked (su_hosts)"
    else:
        why = (f"a leaf's down ports at {req.oversubscription:g}:1 ({s.radix} ports at "
               f"{fab.backend.speed_gbps:g}G) rounded to whole NVLink domains: one leaf per rail "
               "serves the whole unit, the DGX SuperPOD RA's rule (which gives its 32 DGX "
               "H100 per unit on 64-port QM9700)")
    return Decision("su", f"{s.su_hosts} hosts", why, subject="backend")


def _oversubscription(fab: Fabric) -> Decision:
    req = fab.request
    fsh = fab.frontend_shape
    if fsh is None or fsh.tiers == 1:
        fe = "the frontend is one leaf pair (storage reads switched inside each leaf, no uplinks)"
    else:
        fe = (f"the frontend leaves are {fsh.leaf.down}:{fsh.leaf.up} down:up, their uplinks "
              "sized to the storage reads of the hosts below them, not to line rate")
    if not fab.has_backend:
        return Decision("oversubscription", "no backend", fe)
    given = req.oversubscription != 1.0 or req.leaf_uplinks is not None
    choice = f"{req.oversubscription:g}:1 backend"
    why = (f"backend {req.oversubscription:g}:1 as asked (oversubscription)" if given else
           "backend non-blocking (1:1), as the SuperPOD RA builds the compute fabric: "
           "all-reduce and all-to-all run at full bisection")
    return Decision("oversubscription", choice, f"{why}; {fe}", subject="backend",
                    alternatives=() if given else (Alternative(
                        "2:1 backend", "halves leaf uplinks and spines but slows every "
                        "collective that crosses leaves"),))


def _switches(fab: Fabric) -> list[Decision]:
    b, f = fab.backend, fab.frontend
    out: list[Decision] = []
    if fab.has_backend:
        out.append(Decision("switch", b.switch.id, b.why, subject="backend",
                            alternatives=_switch_alternatives(fab)))
    out.append(Decision("switch", f"{f.switch.id} at {f.speed_gbps:g}G", f.why,
                        subject="frontend",
                        alternatives=tuple(Alternative(o, w) for o, w in f.alternatives)))
    return out


def fabric_decisions(fab: Fabric) -> list[Decision]:
    """The fabric's decisions, in the order an architect reviews them (after the frontend is
    built: the oversubscription decision reads its shape)."""
    return [_protocol(fab), *_switches(fab), _tiers(fab), _su(fab), _oversubscription(fab)]
