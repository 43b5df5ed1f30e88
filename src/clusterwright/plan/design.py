"""The cluster one candidate needs: fabric, racks, power and its price."""

from __future__ import annotations

from dataclasses import dataclass, replace

from clusterwright.catalog.schema import Server
from clusterwright.design.blueprint import (
    Candidate,
    Violation,
    violation,
)
from clusterwright.design.bom import plan_fabric
from clusterwright.design.decision import Alternative, Decision
from clusterwright.design.fabric import Fabric
from clusterwright.design.power_plan import PowerPlan, PowerRequest, power_plan
from clusterwright.design.storage_plan import StoragePlan
from clusterwright.design.tco_plan import TcoPlan, tco_plan
from clusterwright.errors import InputError
from clusterwright.plan.context import PlanRun
from clusterwright.plan.fabric_choice import SCENARIO_FIELDS, backend_decision, fabric_request
from clusterwright.plan.pricing import (
    CloudChoice,
    cloud_price,
    price_candidate,
    price_cloud_only,
    tco_request,
)
from clusterwright.plan.rag import RagPlan, plan_rag
from clusterwright.plan.storage import design_storage
from clusterwright.spec.fabric import MAX_NODES as FABRIC_MAX_NODES


@dataclass
class DesignedCluster:
    fab: Fabric
    power: PowerPlan
    tco: TcoPlan | None  # None: cloud deployment of a server without a catalog price
    cooling: str
    cloud: CloudChoice | None = None  # the pricing policy's offer for the GPU
    cloud_basis: str = ""  # how the cloud rental was counted (term, offer, hours)
    storage: StoragePlan | None = None  # the storage tier (design/storage_plan)
    rag: RagPlan | None = None  # the vector index tier of the scenario's rag: (plan/rag)


def rack_violations(run: PlanRun, server: Server) -> tuple[list[Violation], float, str]:
    """What the rack limit and cooling say about one server, and the rack kW and cooling to
    plan with anyway (so an infeasible design still gets racks, power and a price). An unset
    ``power_per_rack_kw`` under liquid cooling is the liquid-cooled rack limit (its 40 kW
    default is an air-cooled hall's)."""
    c = run.scenario.constraints
    cap = run.cat.assumption(f"{c.cooling}_cooled_rack_max_kw")
    unset = "power_per_rack_kw" not in c.model_fields_set
    asked = cap if unset and c.cooling == "liquid" else c.power_per_rack_kw
    kw = server.max_power_kw
    if server.cooling == "liquid" and c.cooling == "air":
        return [violation("cooling", cap, kw, "kW",
                          f"{server.id} is liquid-cooled; one draws")], max(asked, kw), "liquid"
    limit = min(asked, cap)
    if kw <= limit + 1e-9:
        return [], asked, c.cooling
    if asked <= cap:
        v = violation("power_per_rack_kw", asked, kw, "kW", f"one {server.id} draws (nameplate)")
        if unset:
            v = replace(v, message=f"{v.message} (power_per_rack_kw is unset: its default; "
                                   f"{c.cooling} cooling carries up to {cap:g} kW a rack)")
    else:
        v = violation("cooling", cap, kw, "kW",
                      f"{c.cooling} cooling carries per rack; one {server.id} draws")
    other = "liquid" if kw > cap else c.cooling
    return [v], max(asked, kw), other


def scenario_words(exc: InputError) -> str:
    """A designer error led by the scenario field it blames (``switch: ...`` ->
    ``fabric.switch: ...``)."""
    msg = str(exc)
    name = exc.field or ""
    if name in SCENARIO_FIELDS and msg.startswith(f"{name}: "):
        return f"{SCENARIO_FIELDS[name]}: {msg.removeprefix(f'{name}: ')}"
    return msg


def design_candidate(run: PlanRun, cand: Candidate) -> DesignedCluster | None:
    sc, cat = run.scenario, run.cat
    c = sc.constraints
    server: Server = cand.detail["server"]
    assert cand.nodes is not None
    on_prem = c.deployment != "cloud"
    racks_bad, rack_kw, cooling = rack_violations(run, server)
    if on_prem:
        cand.violations += racks_bad
    if cand.nodes > FABRIC_MAX_NODES:
        # The fabric request refuses it; the planner sized it, so it is a finding, not a typo.
        cand.violations.append(violation(
            "gpus", None, None, "", f"{cand.gpu}: {cand.nodes:,} x {server.id} is more than "
            f"the {FABRIC_MAX_NODES:,} servers the fabric designer builds"))
        return None
    backend, no_backend = backend_decision(run, cand, server)
    with run.timed("storage"):
        storage = design_storage(run, cand, server)
    cand.detail["storage"] = storage
    for b in storage.binding:
        # A fixed tier that cannot keep up is a finding with its numbers, not an error.
        cand.violations.append(violation("storage", b.available, b.needed, b.unit,
                                         f"storage ({b.constraint}) needs; {b.message};"))
    cand.decisions.append(Decision(
        "storage", f"{storage.units} x {storage.system.id}", storage.why,
        alternatives=tuple(Alternative(o, w) for o, w in storage.alternatives)))
    storage_kw = storage.power_kw if on_prem else 0.0
    storage_usd = storage.price_usd
    rag = None
    if sc.rag is not None:
        with run.timed("rag"):
            rag = plan_rag(cat, sc.rag, cand.gpu, cand.gpus or 1)
        cand.decisions.append(Decision("rag", f"{rag.servers} x vector-index server", rag.why))
        if not on_prem:
            run.notes.append("rag: the vector-index servers are priced as bought (the "
                             "blueprint's rag); the cloud rental does not include them")
        else:
            # The index servers draw and cost with the storage tier: the power plan and the
            # TCO carry them as storage (their own figures are in the blueprint's rag).
            storage_kw += rag.power_kw
            if storage_usd is not None:
                storage_usd += rag.price_usd
            else:
                run.notes.append("the vector-index servers are not in the TCO: the storage "
                                 "tier has no catalog price, so the TCO estimates storage "
                                 "per GB/s")
    try:
        with run.timed("fabric"):
            fab = plan_fabric(fabric_request(
                run, server, cand.nodes, rack_kw, cooling, backend,
                max(storage.read_gbps, storage.write_gbps) if on_prem else None,
                # The units the storage plan bought, where they have ports of their own.
                (storage.system.id, storage.units)
                if on_prem and storage.system.ports > 0 else None), cat)
        with run.timed("power"):
            pp = power_plan(PowerRequest(server=server.id, nodes=cand.nodes, cooling=cooling,
                                         rack_kw=rack_kw, pue=c.pue, storage_kw=storage_kw),
                            cat, fab=fab)
    except InputError as exc:
        # A design the fabric designer refuses is a candidate that cannot be built, not a
        # crash of the whole plan; the message names the scenario field, not a flag.
        cand.violations.append(violation(
            "gpus", None, None, "",
            f"{cand.gpu}: the fabric of {cand.nodes} x {server.id} cannot be designed "
            f"({scenario_words(exc)})"))
        return None
    # The designer's decisions, with the planner's reason when no backend is built.
    cand.decisions += [x for x in fab.decisions if no_backend is None or x.area != "tiers"]
    if no_backend is not None:
        cand.decisions.append(no_backend)
    train_hours = sum(r["gpu_hours"] or 0.0 for r in cand.detail["workloads"]
                      if r["kind"] == "training") or None
    choice = cloud_price(cat, cand.gpu, sc.cloud)
    try:
        with run.timed("tco"):
            tp = tco_plan(tco_request(
                run, cand, choice, years=c.years,
                electricity_usd_per_kwh=c.electricity_usd_per_kwh, pue=c.pue,
                cooling=cooling, rack_kw=rack_kw, training_gpu_hours=train_hours,
                storage_usd=storage_usd, storage_kw=storage_kw), cat, fab=fab)
    except InputError as exc:
        if c.deployment == "cloud" and price_cloud_only(run, cand, choice):
            run.notes.append(f"{server.id} has no catalog price: {cand.gpu} is priced as "
                             "cloud rental only")
            return DesignedCluster(fab, pp, None, cooling, choice, storage=storage, rag=rag)
        cand.violations.append(violation("gpus", None, None, "",
                                         f"{cand.gpu}: cannot be priced ({exc})"))
        return None
    price_candidate(run, cand, tp, choice)
    return DesignedCluster(fab, pp, tp, cooling, choice,
                           cand.detail.get("cloud_cost_basis", ""), storage, rag)
