"""From a scenario to a Blueprint: size every workload on every candidate GPU, design the
cluster each needs, price it, recommend the cheapest that meets every constraint, and
estimate how the recommended design behaves (failures, checkpoints, latency under load).

Stages (each timed in ``timings_s``):

1. sizing, per candidate GPU: training with the training planner (``design/train.py``: the
   fewest GPUs on the ladder meeting ``deadline_days``, else the best layout at ``gpus``);
   inference with the serving planner (``plan/serving.py``) at the peak rate with the
   mean lengths; fine-tuning from its FLOPs (6ND full, 4ND LoRA: ``model.flops``) at the
   training planner's achieved MFU on that GPU, on the inference GPUs its window frees;
2. design: GPUs summed and rounded to whole servers, fabric (``design/bom.py``), racks,
   power (``design/power_plan.py``), TCO (``design/tco_plan.py``);
3. choice (``design/blueprint.choose``): cheapest feasible candidate in the deployment's cost
   basis, the others with why they lost; no feasible one gives ``feasible: false`` with
   the binding constraints;
4. detail on the recommendation: reliability (job MTBF, checkpoint, Daly interval, ETTR, a
   Monte Carlo of time to train and one seeded sample timeline), latency-vs-load curves,
   cost over time, risks.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from typing import Any

from clusterwright import __version__
from clusterwright.catalog.references import resolve
from clusterwright.catalog.registry import Catalog
from clusterwright.catalog.schema import Gpu
from clusterwright.design.blueprint import (
    Blueprint,
    Candidate,
    Violation,
    assess_risks,
    budget_violation,
    choose,
    violation,
)
from clusterwright.design.fabric import Fabric
from clusterwright.errors import ClusterwrightError, rejection_reason
from clusterwright.model.precision import Precision
from clusterwright.plan.candidates import candidate_gpus, server_among
from clusterwright.plan.cluster import (
    add_headroom,
    check_memory_floor,
    cluster_keys,
    size_cluster,
    spares_for_hosts,
    spares_plan,
)
from clusterwright.plan.context import PlanRun, Progress, no_progress
from clusterwright.plan.decisions import decisions_for
from clusterwright.plan.design import DesignedCluster, design_candidate
from clusterwright.plan.energy import energy_risks, energy_view
from clusterwright.plan.finetune import size_finetune
from clusterwright.plan.inference import latency_curves, size_inference
from clusterwright.plan.reliability import designed_repair_mean, reliability_view
from clusterwright.plan.site_fabrics import design_sites
from clusterwright.plan.training import size_training
from clusterwright.plan.views import (
    bom_view,
    design_facts,
    fabric_view,
    power_view,
    racks_view,
    recommendation_view,
    sources_view,
    tco_view,
)
from clusterwright.spec.scenario import (
    FinetuneWorkload,
    InferenceWorkload,
    Scenario,
    TrainingWorkload,
)


def _size_candidate(run: PlanRun, gpu: Gpu, tick: Callable[[], None]) -> Candidate:
    sc = run.scenario
    server = server_among(run.cat, gpu, sc.constraints.servers)
    rows: list[dict[str, Any]] = []
    bad: list[Violation] = []
    if server is None:
        for _ in sc.workloads:
            tick()
        return Candidate(gpu.id, None, None, None, None, [violation(
            "gpus", None, None, "", f"no catalog server carries {gpu.id}"
            + (" among constraints.servers" if sc.constraints.servers else ""))])
    for w in sc.workloads:
        if isinstance(w, TrainingWorkload):
            with run.timed("training"):
                row, v = size_training(run, w, gpu, server)
        elif isinstance(w, InferenceWorkload):
            with run.timed("serving"):
                row, v = size_inference(run, w, gpu)
                if row is not None:
                    add_headroom(run, row)
        else:
            continue
        tick()
        bad += v
        if row is not None:
            rows.append(row)
    for w in sc.workloads:
        if isinstance(w, FinetuneWorkload):
            with run.timed("finetune"):
                row, v = size_finetune(run, w, gpu, server,
                                        [r for r in rows if r["kind"] == "inference"])
            tick()
            bad += v
            if row is not None:
                rows.append(row)
    order = {w.name: i for i, w in enumerate(sc.workloads)}
    rows.sort(key=lambda r: order[r["name"]])
    gpus = sum(r["gpus"] for r in rows if r["kind"] != "finetune") + sum(
        r["extra_gpus"] for r in rows if r["kind"] == "finetune")
    cand = Candidate(gpu.id, server.id, None, None, None, bad)
    cand.detail["workloads"] = rows
    cand.detail["server"] = server
    if not rows or gpus == 0 or len(rows) < len(sc.workloads):
        return cand  # some workload could not be sized: no cluster to price
    size_cluster(run, cand, server, gpus)
    return cand


def _design_with_spares(run: PlanRun, cand: Candidate) -> DesignedCluster | None:
    """Design ``cand``; when the planner chose its spares and the designed layout (racks,
    rows, leaves: the failure domains the reliability Monte Carlo draws from) needs another
    count than the estimate before the design, size and design it again with that count, so
    that the spares bought are the ones the reliability view recommends."""
    info = cand.detail.get("cluster") or {}
    if info.get("spares_basis") != "planner":
        return design_candidate(run, cand)
    before, notes = copy.deepcopy(cand), len(run.notes)
    d = design_candidate(run, cand)
    mean = designed_repair_mean(run, cand, d) if d is not None else None
    want = spares_for_hosts(mean, cand.detail["server"]) if mean is not None else None
    if want is None or want == info["spare_nodes"]:
        return d
    for f in dataclasses.fields(before):
        setattr(cand, f.name, getattr(before, f.name))
    del run.notes[notes:]
    size_cluster(run, cand, cand.detail["server"], info["work_gpus"], spares=want)
    return design_candidate(run, cand)


def plan_scenario(scenario: Scenario, cat: Catalog, *, progress: Progress | None = None,
                  quick: bool = False, source: str | None = None) -> Blueprint:
    """Plan ``scenario`` end to end and return its Blueprint (never raises for a scenario
    that cannot be met: that is ``feasible: false`` with the binding constraints).
    ``progress(stage, done, total)`` is called as stages advance; ``quick`` trims simulation
    sizes (fewer requests per serving simulation, fewer Monte Carlo trials) for sweeps.
    Raises InputError/ScenarioError for unknown catalog ids."""
    models = resolve(scenario, cat)
    run = PlanRun(scenario, cat, models, quick, progress or no_progress)
    gpus = candidate_gpus(scenario, cat)
    check_memory_floor(run, gpus)
    total = len(gpus) * len(scenario.workloads)
    done = 0

    def tick() -> None:
        nonlocal done
        done += 1
        run.progress("sizing", done, total)

    run.progress("sizing", 0, total)
    cands = [_size_candidate(run, g, tick) for g in gpus]
    designs: dict[str, DesignedCluster] = {}
    sized_c = [c for c in cands if c.nodes]
    for i, cand in enumerate(sized_c):
        run.progress("design", i, len(sized_c))
        d = _design_with_spares(run, cand)
        if d is not None:
            designs[cand.gpu] = d
    run.progress("design", len(sized_c), len(sized_c))
    choice = choose(cands)
    chosen = choice.chosen
    d = designs.get(chosen.gpu)
    c = scenario.constraints
    rel_out = None
    if d is not None:
        run.progress("reliability", 0, 1)
        with run.timed("reliability"):
            rel_out = reliability_view(run, chosen, d)
        run.progress("reliability", 1, 1)
        run.progress("curves", 0, 1)
        with run.timed("curves"):
            latency_curves(run, chosen)
        run.progress("curves", 1, 1)
        per_h = chosen.cost_per_gpu_hour_usd
        for r in chosen.detail["workloads"]:
            if r["kind"] == "inference":
                usd_h = (per_h * r["gpus"] if c.deployment != "cloud" and per_h is not None
                         else None)
                r["cost_per_million_tokens_usd"] = (
                    usd_h / (r["peak_qps"] * r["output_len"] * 3600) * 1e6
                    if usd_h is not None else r["cloud_cost_per_million_tokens_usd"])
        tco_racks = chosen.detail.get("tco_racks")
        if tco_racks is not None and tco_racks != len(d.fab.racks):
            run.notes.append(
                f"the TCO prices racks from its own plan at the {d.cooling}-cooling rack "
                f"limit ({tco_racks} racks); this design has {len(d.fab.racks)} racks at "
                f"{d.power.racks.limit_kw:g} kW")
    energy_out = None
    if d is not None:
        with run.timed("energy"):
            energy_out = energy_view(run, chosen, d)
    facts = design_facts(scenario, chosen, d, rel_out)
    risks = [r.as_dict() for r in assess_risks(facts)]
    risks += [r.as_dict() for r in energy_risks(energy_out)]
    risks += [r.as_dict() for r in spares_plan(
        run, chosen, d.tco.capex.servers_usd if d is not None and d.tco is not None else None,
        designed_repair_mean(run, chosen, d) if d is not None else None,
        d.fab if d is not None else None)]
    multisite = None
    site_fabrics: dict[str, Fabric] = {}
    feasible, binding = choice.feasible, list(choice.binding)
    if len(scenario.sites) > 1:
        with run.timed("multisite"):
            multisite = multisite_view(run, chosen.gpu)
        # A job the sites' power cannot hold is not buildable there, whatever one site says.
        short = [violation("site_power", None, None, "MW", x["error"], workload=x["name"])
                 for x in multisite["workloads"] if x.get("error_kind") == "power"]
        if d is not None:
            with run.timed("sites"):
                sites = design_sites(run, d, multisite)
            if sites.physical is not None:
                multisite["physical"] = sites.physical
                site_fabrics = sites.fabrics
                # A site whose own plan (servers, network, storage, with the PUE) draws more
                # than its feed cannot be built there, whatever the GPU count allowed.
                short += [violation(
                    "site_power", e["site_power_mw"],
                    e["facility_power_kw"]["nameplate"] / 1e3, "MW",
                    f"{e['site']}: its plan draws more than the site's power at nameplate with "
                    f"the PUE", workload=sites.physical["workload"])
                    for e in sites.physical["sites"] if e.get("fits_site_power") is False]
                split = sites.physical.get("capex")
                if split is not None and c.budget_usd is not None:
                    # The sites' builds are what is bought: the budget holds their capex,
                    # not the one fabric's the candidates were compared on.
                    one = [v for v in binding if v.constraint == "budget_usd"
                           and v.needed == chosen.capex_usd]
                    binding = [v for v in binding if v not in one]
                    over = budget_violation(split["sites_usd"], c.budget_usd,
                                            f"capex of the {len(scenario.sites)} sites' builds "
                                            f"on {chosen.gpu}")
                    if over is not None:
                        binding.append(over)
                    if one and not binding:
                        feasible = True
                        run.notes.append(
                            f"budget: the one fabric's capex on {chosen.gpu} "
                            f"(${one[0].needed or 0:,.0f}) is over the budget, the sites' "
                            f"builds (${split['sites_usd']:,.0f}) are within it")
                    elif over is not None:
                        feasible = False
        if short:
            feasible, binding = False, [*binding, *short]
    rec = recommendation_view(scenario, chosen, feasible, binding, choice.alternatives,
                              multisite, rel_out)
    with run.timed("decisions"):
        decisions = decisions_for(run, chosen, feasible, choice.alternatives)
    tco_out = tco_view(d, c.years) if d is not None else None
    return Blueprint(
        scenario={
            "name": scenario.name, "description": scenario.description, "seed": scenario.seed,
            "source": source,
            "workloads": [w.model_dump(mode="json") for w in scenario.workloads],
            "constraints": c.model_dump(mode="json"),
            # The architect's decisions as validated (defaults filled), so a blueprint says
            # what it was asked for as well as what it chose.
            **{k: getattr(scenario, k).model_dump(mode="json")
               for k in ("cluster", "fabric", "prices", "cloud", "storage", "energy")},
            **({"rag": scenario.rag.model_dump(mode="json")} if scenario.rag else {}),
        },
        feasible=feasible,
        binding_constraints=[v.as_dict() for v in binding],
        recommendation=rec,
        alternatives=choice.alternatives,
        workloads=chosen.detail.get("workloads", []),
        cluster=({"gpu": chosen.gpu, "server": chosen.server, "nodes": chosen.nodes,
                  "gpus": chosen.gpus,
                  "nvlink_domain_gpus": d.fab.server.nvlink_domain_gpus} | cluster_keys(chosen)
                 if d is not None else None),
        fabric=fabric_view(d, cat) if d is not None else None,
        racks=racks_view(d, cat) if d is not None else [],
        power=power_view(d) if d is not None else None,
        reliability=rel_out,
        tco=tco_out,
        risks=risks,
        decisions=[x.as_dict() for x in decisions + chosen.decisions],
        bom=bom_view(d) if d is not None else [],
        storage=d.storage.as_dict() if d is not None and d.storage is not None else None,
        energy=energy_out,
        sources=sources_view(d, chosen, cat, tco_out, energy_out),
        timings_s=dict(run.timings),
        notes=run.notes,
        clusterwright_version=__version__,
        fabric_design=d.fab if d is not None else None,
        site_fabrics=site_fabrics,
        multisite=multisite,
        rag=d.rag.as_dict() if d is not None and d.rag is not None else None,
    )


def multisite_view(run: PlanRun, gpu: str) -> dict[str, Any]:
    """Each training workload split over the scenario's sites (``plan/multisite``) on the
    recommended GPU: GPUs per site from the smallest site's power, the synchronisation
    methods' utilization, the WAN Gb/s each site needs for 90/95/99 % and time and cost. A
    workload the sites cannot run carries its reason instead."""
    from clusterwright.plan.multisite import MultisiteRequest, Site, plan_multisite

    sc = run.scenario
    pol = sc.multisite
    sites = tuple(Site(s.name, s.power_mw, s.wan_gbps, s.latency_ms, s.loss,
                       s.usd_per_gbps_month) for s in sc.sites)
    out: dict[str, Any] = {"sites": [s.model_dump(mode="json") for s in sc.sites],
                           "policy": pol.model_dump(mode="json"), "workloads": []}
    for w in sc.workloads:
        if not isinstance(w, TrainingWorkload):
            continue
        try:
            res = plan_multisite(run.cat, MultisiteRequest(
                run.models[w.name], gpu, sites, w.gpus, w.seq_len, w.global_batch, w.tokens,
                Precision(w.precision), pol.method, pol.inner_steps, pol.bits, pol.fragments,
                pol.overlap_steps, sc.constraints.pue))
            out["workloads"].append({"name": w.name, **res.as_dict()})
        except ClusterwrightError as exc:
            kind = rejection_reason(exc)
            out["workloads"].append({"name": w.name, "error": str(exc), "error_kind": kind})
    return out
