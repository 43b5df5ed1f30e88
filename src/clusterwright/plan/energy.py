"""Energy and carbon of a plan, and the request behind ``ops carbon``: energy per training run
and per million served tokens, per year, location- and market-based carbon on the scenario's
grid, embodied carbon, and the power trace of the largest synchronous training job with what
softening it costs (``model/energy.py`` has the formulas, ``catalog/data/energy.yaml`` the grid
intensities and hardware carbon).

Power per component comes from the designed cluster: the servers' sustained training draw
(power plan: maximum x ``server_typical_power_fraction``, measured on H100 training nodes), the
network's typical draw and the storage tier, each shared by GPU count; the facility adds PUE.
The model-card convention (GPU-hours x TDP x PUE) is reported beside it, because that is how
published footprints are counted. Serving: the servers' sustained draw with the GPUs at the
serving power model's board power (``model/serving_power``: idle + (TDP - idle) x
min(1, a + b x tensor busy), fitted on ML.ENERGY's measured vLLM power) at the replica's
steady state at peak load, prefill and decode iterations alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from clusterwright.catalog.registry import Catalog
from clusterwright.catalog.schema import GridRegion, Server
from clusterwright.design.blueprint import Candidate, Risk
from clusterwright.errors import ClusterwrightError, InputError
from clusterwright.model import energy as en
from clusterwright.model import serving_power as sp
from clusterwright.model.serving_power import PowerParams, ServingPower, serving_power
from clusterwright.plan.context import PlanRun
from clusterwright.plan.design import DesignedCluster

DEFAULT_REGION = "world"


@dataclass(frozen=True)
class Grid:
    region: GridRegion
    year: int
    gco2_per_kwh: float
    renewable_share: float

    def as_dict(self) -> dict[str, Any]:
        return {"region": self.region.id, "name": self.region.name, "year": self.year,
                "gco2_per_kwh": self.gco2_per_kwh, "renewable_share": self.renewable_share,
                "source": self.region.source}


def grid(cat: Catalog, region: str | None, year: int | None, renewable_share: float = 0.0
         ) -> Grid:
    """The grid of ``region`` (default the world average) in ``year`` (default its latest).
    InputError naming ``region`` or ``year``."""
    rid = region or DEFAULT_REGION
    try:
        g: GridRegion = cat.get("grid_regions", rid)
    except ClusterwrightError as exc:
        raise InputError(f"region: {exc}", field="region") from None
    try:
        y, v = g.intensity(year)
    except KeyError:
        years = ", ".join(sorted(g.gco2_per_kwh))
        raise InputError(f"year: the catalog has {rid} in {years}, not {year}",
                         field="year") from None
    if not 0.0 <= renewable_share <= 1.0:
        raise InputError(f"renewable_share: must be in [0, 1], got {renewable_share}",
                         field="renewable_share")
    return Grid(g, y, v, renewable_share)


def power_params(cat: Catalog, gpu_id: str) -> PowerParams:
    """The serving power model's constants for ``gpu_id``: its measured idle power (else
    ``gpu_idle_power_fraction`` x TDP), TDP and the fitted floor and weight
    (``model/serving_power``)."""
    g = cat.gpu(gpu_id)
    idle = (g.idle_power_w if g.idle_power_w is not None
            else cat.assumption("gpu_idle_power_fraction") * g.tdp_w)
    return PowerParams(idle, g.tdp_w, cat.assumption("serving_power_active_floor"),
                       cat.assumption("serving_power_tensor_weight"))


def per_gpu_kw(cat: Catalog, server: Server) -> float:
    """One GPU's share of its server's sustained training draw, kW."""
    return server.max_power_kw * cat.assumption("server_typical_power_fraction") / server.gpus


def serving_per_gpu_kw(cat: Catalog, server: Server, gpu_w: float) -> float:
    """One GPU's share of its server's draw while serving, kW: the sustained training draw
    with the GPUs at ``gpu_w`` (the serving power model) instead of TDP
    (``model/energy.serving_server_kw``)."""
    sustained = server.max_power_kw * cat.assumption("server_typical_power_fraction")
    kw = en.serving_server_kw(sustained, server.gpus, cat.gpu(server.gpu).tdp_w, gpu_w)
    return kw / server.gpus


STEADY_ITERATIONS = 40  # fixed-point steps for the batch a replica runs at its peak QPS


def serving_point(run: PlanRun, row: dict[str, Any]) -> ServingPower | None:
    """The steady state of one replica of a planned inference workload at its peak QPS:
    the batch B that Little's law gives (B = QPS per replica x output tokens x mean
    iteration time, at most the engine's max_num_seqs), with the serving power model's
    board power per GPU. None when the replica cannot be rebuilt."""
    from clusterwright.plan import serving_replica

    if row.get("engine"):
        return _engine_point(run, row)
    try:
        rep = serving_replica.replica(
            run.cat, run.models[row["name"]], row["gpu"], tp=int(row["tp"]),
            precision=row["precision"], kv_precision=row["kv_precision"],
            ep=int(row.get("ep") or 1))
        return _at_little_batch(rep.model, power_params(run.cat, row["gpu"]),
                                float(row.get("qps_per_replica") or 0.0),
                                float(max(rep.engine.max_num_seqs, 1)),
                                float(row["input_len"]), float(row["output_len"]))
    except (ClusterwrightError, KeyError, ValueError):
        return None


def _at_little_batch(step: sp.StepWork, p: PowerParams, qps: float, cap: float,
                     i: float, o: float) -> ServingPower:
    """The power point at the batch B that Little's law gives a replica (or rank) serving
    ``qps`` requests/s: B = qps x output tokens x mean iteration time, at most ``cap``."""
    b = 1.0
    pt = serving_power(step, p, b, i, o)
    for _ in range(STEADY_ITERATIONS):
        nb = min(cap, max(1.0, qps * o * pt.mean_itl_s))
        if abs(nb - b) < 1e-3 * b:
            break
        b = 0.5 * (b + nb)  # damped: the step time grows with the batch
        pt = serving_power(step, p, b, i, o)
    return pt


def _engine_point(run: PlanRun, row: dict[str, Any]) -> ServingPower | None:
    """``serving_point`` for an engine-sized workload: its aggregated deployment's step model
    (the one validate --table serving-energy checks) at the batch Little's law gives one
    data-parallel rank, at most the rank's batch limit. None for a disaggregated deployment
    (its prefill and decode GPUs draw differently; not modelled here)."""
    from clusterwright.plan.serving_deployment import step_model

    dep = run.deployments.get((row["name"], row["gpu"]))
    if dep is None or dep.agg is None:
        return None
    try:
        role = dep.agg
        i, o = float(row["input_len"]), float(row["output_len"])
        ranks = max((role.workers or 1) * role.par.adp, 1)
        return _at_little_batch(step_model(run.cat, dep, role.par, max_len=int(i + o)),
                                power_params(run.cat, row["gpu"]),
                                float(row.get("qps_per_replica") or 0.0) / ranks,
                                float(max(role.max_batch or dep.engine.max_batch, 1)), i, o)
    except (ClusterwrightError, KeyError, ValueError):
        return None


def serving_power_basis(cat: Catalog, server: Server, gpu_kw: float, gpu_w: float,
                        how: str) -> dict[str, Any]:
    """What a per-token energy figure assumed about the serving draw, for the output."""
    p = power_params(cat, server.gpu)
    return {
        "kw_per_gpu": gpu_kw, "gpu_power_w": gpu_w, "gpu_idle_w": p.idle_w,
        # Kept for the JSON contract: the GPUs' serving board power over TDP (no longer a
        # catalog constant; prefill and decode share the power model).
        "decode_gpu_power_fraction": gpu_w / p.tdp_w,
        "gpu_tdp_w": p.tdp_w, "serving_power_active_floor": p.active_floor,
        "serving_power_tensor_weight": p.tensor_weight,
        "training_kw_per_gpu": per_gpu_kw(cat, server), "estimate": True,
        "basis": (f"GPU board power {gpu_w:.0f} W = idle {p.idle_w:g} W + (TDP {p.tdp_w:g} W - "
                  f"idle) x min(1, {p.active_floor:g} + {p.tensor_weight:g} x tensor busy) "
                  f"({how}); fitted on ML.ENERGY H100 vLLM measurements (validate --table "
                  "serving-energy: power within about 10-16 % held out, energy per token "
                  "within about 30-40 % because of the latency model); the host's share at "
                  "its training draw")}


def embodied(cat: Catalog, gpu_hours: float, server: Server) -> float:
    """Embodied tonnes CO2e charged to ``gpu_hours`` on ``server`` hardware."""
    return en.embodied_t(gpu_hours, server.gpus / max(server.hosts, 1),
                         cat.assumption("embodied_server_kgco2e"),
                         cat.assumption("embodied_gpu_kgco2e"),
                         cat.assumption("embodied_lifetime_years"),
                         cat.assumption("cluster_utilization"))


def footprint(cat: Catalog, g: Grid, gpu_hours: float, server: Server, pue: float,
              network_kw_per_gpu: float = 0.0, storage_kw_per_gpu: float = 0.0
              ) -> dict[str, Any]:
    """Energy and carbon of ``gpu_hours`` of work on ``server``: the full-system energy (servers,
    network, storage, PUE), the model-card convention and the carbon of each."""
    hours_per_gpu = gpu_hours  # GPU-hours: each component's per-GPU draw x GPU-hours
    e = en.energy(hours_per_gpu, per_gpu_kw(cat, server), network_kw_per_gpu,
                  storage_kw_per_gpu, pue)
    gpu = cat.gpu(server.gpu)
    card = en.model_card_kwh(gpu_hours, gpu.tdp_w, pue)
    emb = embodied(cat, gpu_hours, server)
    c = en.carbon(e.facility_kwh, g.gco2_per_kwh, g.renewable_share, emb)
    cc = en.carbon(card, g.gco2_per_kwh, g.renewable_share)
    return {"gpu_hours": gpu_hours, "energy": e.as_dict(), "carbon": c.as_dict(),
            "model_card_convention": {
                "kwh": card, "location_based_t": cc.location_t, "market_based_t": cc.market_t,
                "basis": f"GPU-hours x {gpu.tdp_w:g} W TDP x PUE {pue:g}"}}


def energy_view(run: PlanRun, cand: Candidate, d: DesignedCluster) -> dict[str, Any] | None:
    """The blueprint's ``energy`` section: per training run, per million served tokens, per
    year, and the power trace of the largest training job."""
    cat, sc = run.cat, run.scenario
    e = sc.energy
    g = grid(cat, e.region, e.year, e.renewable_share)
    server = d.fab.server
    pp = d.power
    gpus = max(cand.gpus or 1, 1)
    pue = pp.pue
    net_kw_gpu = pp.power.network_typical_kw / gpus
    sto_kw_gpu = pp.power.storage_kw / gpus
    out: dict[str, Any] = {"grid": g.as_dict(), "pue": pue, "runs": [], "serving": []}
    for r in cand.detail.get("workloads", []):
        if r["kind"] == "training" and r.get("gpu_hours"):
            f = footprint(cat, g, float(r["gpu_hours"]), server, pue, net_kw_gpu, sto_kw_gpu)
            f.update(workload=r["name"], days=r.get("time_to_train_days"))
            out["runs"].append(f)
        elif r["kind"] == "inference" and r.get("tokens_per_s_per_gpu"):
            pt = serving_point(run, r)
            p = power_params(cat, r["gpu"])
            gpu_w = pt.power_w if pt is not None else p.idle_w + (
                p.tdp_w - p.idle_w) * p.active_floor
            gpu_kw = serving_per_gpu_kw(cat, server, gpu_w)
            kw = float(r["gpus"]) * (gpu_kw + net_kw_gpu + sto_kw_gpu)
            tps = float(r["tokens_per_s_per_gpu"]) * float(r["gpus"])
            kwh_m = en.kwh_per_million_tokens(kw, tps, pue)
            per = "data-parallel rank" if r.get("engine") else "replica"
            how = (f"at peak load: batch {pt.tokens_per_s * pt.mean_itl_s:.0f} per {per}, "
                   f"tensor cores {100 * pt.tensor_busy:.0f} % busy, prompt-carrying "
                   f"iterations {100 * pt.prefill_time_share:.0f} % of the time"
                   if pt is not None else
                   "a disaggregated deployment's prefill and decode GPUs are not modelled "
                   "apart: the active floor only, so this errs low"
                   if r.get("engine") and r.get("mode") == "disagg" else
                   "the replica could not be rebuilt: the active floor only, so this errs low")
            out["serving"].append({
                "workload": r["name"], "kwh_per_million_tokens": kwh_m,
                "gco2_per_million_tokens": kwh_m * g.gco2_per_kwh,
                "prefill_time_share": pt.prefill_time_share if pt is not None else None,
                "batch_per_replica": pt.tokens_per_s * pt.mean_itl_s if pt is not None
                else None,
                **serving_power_basis(cat, server, gpu_kw, gpu_w, how)})
    # A year of the whole cluster at the TCO's utilisation-weighted draw.
    annual_kwh = (d.tco.annual_energy_kwh if d.tco is not None
                  else pp.power.typical_kw * 8760.0 * pp.pue)
    life = cat.assumption("embodied_lifetime_years")
    emb_year = (cat.assumption("embodied_server_kgco2e") * (cand.nodes or 0) * server.hosts
                + cat.assumption("embodied_gpu_kgco2e") * gpus) / life / 1e3
    cy = en.carbon(annual_kwh, g.gco2_per_kwh, g.renewable_share, emb_year)
    out["per_year"] = {"facility_kwh": annual_kwh, **cy.as_dict()}
    trace = training_trace(run, cand, d)
    if trace is not None:
        out["power_trace"] = trace
    return out


def training_trace(run: PlanRun, cand: Candidate, d: DesignedCluster
                   ) -> dict[str, Any] | None:
    """The power trace of the largest training job and three ways to soften it."""
    cat = run.cat
    rows = [r for r in cand.detail.get("workloads", []) if r["kind"] == "training"
            and r.get("step_time_s")]
    if not rows:
        return None
    r = max(rows, key=lambda x: x["gpus"])
    pp = d.power
    share = r["gpus"] / max(cand.gpus or 1, 1)
    high = pp.power.typical_kw * share / 1e3
    low = pp.power.idle_kw * share / 1e3
    b = r.get("breakdown") or {}
    waiting = sum(float(b.get(k) or 0.0) for k in (
        "tp_comm_s", "pp_comm_s", "pp_bubble_s", "dp_comm_exposed_s", "cp_comm_s",
        "ep_comm_s"))
    ck = r.get("checkpoint") or {}
    restart = float(ck.get("restart_s") or 0.0)
    tr = en.power_trace(high, low, float(r["step_time_s"]), waiting,
                        cat.assumption("training_power_ramp_s"), restart,
                        run.scenario.energy.ramp_limit_mw_per_s)
    usd_kwh = run.scenario.constraints.electricity_usd_per_kwh
    job_usd_h = (cand.cost_per_gpu_hour_usd or 0.0) * r["gpus"]
    mits = en.mitigations(tr, 8760.0 * cat.assumption("cluster_utilization"), usd_kwh,
                          cat.assumption("battery_usd_per_kwh"),
                          cat.assumption("power_cap_fraction"), job_usd_h)
    out: dict[str, Any] = {"workload": r["name"], **tr.as_dict(),
                           "basis": "computing at the sustained training draw, waiting "
                           "(exposed communication, pipeline bubble) at idle; one failure's "
                           "restart dip after the steps; IT side (PUE not applied)"}
    out["mitigations"] = [{"name": m.name, "swing_mw": m.swing_mw, "capex_usd": m.capex_usd,
                           "annual_usd": m.annual_usd, "note": m.note} for m in mits]
    return out


# --------------------------------------------------------------------------- ops carbon


@dataclass(frozen=True)
class CarbonRequest:
    """``ops carbon``: ``gpu_hours`` of work on ``server`` in ``region``."""

    gpu_hours: float
    server: str = "dgx-h100"
    region: str | None = None
    year: int | None = None
    renewable_share: float = 0.0
    pue: float | None = None
    tokens_per_s_per_gpu: float | None = None
    # Tensor-core busy share of the serving GPUs (model/serving_power); 0: the active floor,
    # memory-bound decode at small batches.
    tensor_busy: float = 0.0
    prefill_time_share: float = 0.0  # deprecated, ignored: echoed in the output only


def carbon_report(cat: Catalog, req: CarbonRequest) -> dict[str, Any]:
    """Energy and carbon of the work (``ops carbon``'s JSON)."""
    try:
        server = cat.server(req.server)
    except ClusterwrightError as exc:
        raise InputError(f"server: {exc}", field="server") from None
    g = grid(cat, req.region, req.year, req.renewable_share)
    pue = req.pue if req.pue is not None else cat.assumption(
        "pue_liquid" if server.cooling == "liquid" else "pue_air")
    out = footprint(cat, g, req.gpu_hours, server, pue)
    out.update(server=server.id, gpu=server.gpu, grid=g.as_dict(), pue=pue,
               per_gpu_kw=per_gpu_kw(cat, server))
    if req.tokens_per_s_per_gpu is not None:
        if not 0.0 <= req.tensor_busy <= 1.0:
            raise InputError(f"tensor_busy: must be in [0, 1], got {req.tensor_busy}",
                             field="tensor_busy")
        p = power_params(cat, server.gpu)
        gpu_w = p.idle_w + (p.tdp_w - p.idle_w) * sp.activity(
            req.tensor_busy, p.active_floor, p.tensor_weight)
        gpu_kw = serving_per_gpu_kw(cat, server, gpu_w)
        kwh_m = en.kwh_per_million_tokens(gpu_kw, req.tokens_per_s_per_gpu, pue)
        out["serving"] = {"kwh_per_million_tokens": kwh_m,
                          "gco2_per_million_tokens": kwh_m * g.gco2_per_kwh,
                          "tensor_busy": req.tensor_busy,
                          "prefill_time_share": req.prefill_time_share,
                          **serving_power_basis(cat, server, gpu_kw, gpu_w,
                                                f"tensor cores {100 * req.tensor_busy:.0f} % "
                                                "busy, --tensor-busy")}
    return out


def energy_risks(energy: dict[str, Any] | None) -> list[Risk]:
    """A high risk when the training power trace ramps faster than the grid allows."""
    tr = (energy or {}).get("power_trace") or {}
    if not tr.get("exceeds_ramp_limit"):
        return []
    return [Risk(
        "high", "power", "Power ramps faster than the grid allows",
        f"{tr['workload']} swings {tr['swing_mw']:.3g} MW within {tr['ramp_s']:g} s "
        f"({tr['ramp_mw_per_s']:.3g} MW/s) against the utility's {tr['ramp_limit_mw_per_s']:g} "
        "MW/s (energy.ramp_limit_mw_per_s); the power trace's mitigations say what a battery, a "
        "dummy load or a power cap cost")]
