"""The requests behind ``ops reliability`` and ``ops checkpoint``: a fleet of a GPU count on a
catalog server, its expected interruptions, its checkpoint size and I/O, the checkpoint plan
(Young, Daly, ETTR, hot spares) and a Monte Carlo of a run, each answered by one call that
returns the command's JSON payload.

The arithmetic lives below (``model/reliability``, ``design/train_goodput``, the pipeline in
``plan/reliability``); this module resolves the catalog, fills the documented defaults from
``assumptions.yaml`` and checks what needs what. Errors carry the request's field names
(``gpus``, ``server``, ``checkpoint_write_s``, ``trials``), which the CLI words as flags.
Units: seconds, hours where named, bytes, GB/s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

from clusterwright.catalog.registry import Catalog
from clusterwright.catalog.schema import FailureMode, ModelArch, Server
from clusterwright.design.train_goodput import checkpoint_cost
from clusterwright.design.train_goodput import restart_s as scaled_restart_s
from clusterwright.errors import ClusterwrightError, InfeasibleError, InputError
from clusterwright.model import reliability as rel
from clusterwright.plan.reliability import (
    RunInputs,
    failure_model,
    fleet_assumptions,
    forecast_run,
    interruptions,
    layout_estimate,
    spare_coverage,
)

DEFAULT_SERVER = "dgx-h100"
DEFAULT_RADIX = 64


@dataclass(frozen=True)
class Fleet:
    """The job's hardware as the failure model counts it."""

    gpu: str
    server: str | None
    gpus_per_host: int
    units: rel.FleetUnits  # GPUs, hosts, switches, links
    modes: list[FailureMode]  # the catalog's failure modes for this GPU
    rate_basis: str  # where the rates come from, in words
    server_entry: Server | None = None


def fleet_for(cat: Catalog, gpus: int, gpu: str | None = None, server: str | None = None,
              radix: int = DEFAULT_RADIX, switches: float | None = None,
              links: float | None = None) -> Fleet:
    """``gpus`` GPUs on ``server`` (or the first catalog server carrying ``gpu``, or
    DEFAULT_SERVER), with a fat tree of ``radix``-port switches unless ``switches`` and
    ``links`` are given. InputError naming ``server`` or ``gpu`` for unknown ids or a
    mismatch."""
    srv: Server | None = None
    if server is not None:
        try:
            srv = cat.server(server)
        except ClusterwrightError as exc:
            raise InputError(f"server: {exc}", field="server") from None
        if gpu is not None and gpu != srv.gpu:
            raise InputError(f"gpu: {gpu!r} does not match `server` {server!r}, which carries "
                             f"{srv.gpu!r}", field="gpu")
    elif gpu is not None:
        try:
            cat.gpu(gpu)
        except ClusterwrightError as exc:
            raise InputError(f"gpu: {exc}", field="gpu") from None
        srv = next((s for s in cat.all("servers") if s.gpu == gpu), None)
    else:
        srv = cat.server(DEFAULT_SERVER)
    gpu_id = gpu or (srv.gpu if srv else "")
    per_host = srv.gpus // srv.hosts if srv else 8
    all_modes: list[FailureMode] = cat.all("failure_modes")
    modes = rel.modes_for_gpu(all_modes, gpu_id)
    units = rel.fleet_units(gpus, per_host, radix, switches, links)
    return Fleet(gpu_id, srv.id if srv else None, per_host, units, modes,
                 rate_basis(all_modes, modes, gpu_id), srv)


def rate_basis(all_modes: list[FailureMode], modes: list[FailureMode], gpu_id: str) -> str:
    """Where a GPU's failure rates come from, in words: its generation's fleet study, or the
    generic (H100) fleet applied to another GPU."""
    names = "; ".join(rel.fleets(modes)) or "the catalog's failure modes"
    if any(gpu_id in m.gpus for m in all_modes):
        return f"failure modes for {gpu_id}: {names}"
    return f"generic failure modes ({names}; rates measured on H100)"


def checkpoint_io(cat: Catalog, arch: ModelArch, gpus: int, precision: str = "bf16",
                  optimizer: Literal["adam", "sgd"] = "adam", writers: int | None = None,
                  storage_gbps: float | None = None, mtbf_s: float | None = None,
                  server: Server | None = None) -> dict[str, Any]:
    """Checkpoint size (bytes), shards, the storage write rate (GB/s) and the stall, persist
    and restore times (s) of ``arch`` trained on ``gpus`` GPUs, every GPU writing its shard
    unless ``writers`` says how many do: synchronously at ``storage_gbps`` when given, else on
    the storage planner's tier for this job (asynchronous, sized to the MTBF)."""
    ck = checkpoint_cost(cat, arch, gpus, precision, optimizer, writers, storage_gbps,
                         mtbf_s=mtbf_s, server=server)
    streams = writers or gpus
    if ck.storage is None:
        rate = min(streams * cat.assumption("storage_write_gbps_per_gpu"), storage_gbps or 0.0)
    else:
        rate = ck.bytes / ck.persist_s / 1e9 if ck.persist_s > 0 else 0.0
    out: dict[str, Any] = {
        "checkpoint_bytes": ck.bytes,
        "checkpoint_bytes_per_param": rel.checkpoint_bytes_per_param(precision, optimizer),
        "checkpoint_shard_bytes": rel.shard_bytes(ck.bytes, streams),
        "checkpoint_writers": float(streams),
        "storage_write_gbps": rate,
        "checkpoint_write_s": ck.write_s,
        "checkpoint_persist_s": ck.persist_s,
        "checkpoint_mode": ck.mode,
        "restore_s": ck.read_s,
        "min_interval_s": ck.min_interval_s,
        "restart_s": ck.restart_s,
    }
    if ck.storage is not None:
        out["storage"] = ck.storage.as_dict()
    return out


def _restart_s(cat: Catalog, given: float | None, io: dict[str, Any], gpus: int) -> float:
    """A restart: the given seconds, else the checkpoint's (the catalog's restart at this scale,
    reading the checkpoint back, an async persist's rework), else the catalog's restart."""
    if given is not None:
        return given
    if "restart_s" in io:
        return float(io["restart_s"])
    return scaled_restart_s(cat, gpus, 0.0)


def _repair_hours(cat: Catalog, given: float | None) -> float:
    return given if given is not None else cat.assumption("reliability_node_repair_hours")


# --------------------------------------------------------------------------- ops reliability


@dataclass(frozen=True)
class ReliabilityRequest:
    """Interruptions of a ``gpus``-GPU job over ``days`` days; with ``monte_carlo``, a run of
    ``train_days`` failure-free days (default ``days``) checkpointed and simulated."""

    gpus: int
    days: float
    gpu: str | None = None
    server: str | None = None
    radix: int = DEFAULT_RADIX
    switches: float | None = None
    links: float | None = None
    monte_carlo: bool = False
    train_days: float | None = None
    checkpoint_write_s: float | None = None
    model: ModelArch | None = None  # sizes the checkpoint when its write time is not given
    restart_s: float | None = None
    interval_s: float | None = None
    hot_spares: int | None = None
    repair_hours: float | None = None
    trials: int = 1000
    seed: int = 0
    fleet_model: bool = True  # lemons, node losses by domain, fail-slows; False: i.i.d.


def reliability_report(cat: Catalog, req: ReliabilityRequest) -> dict[str, Any]:
    """Expected interruptions by cause and category, job MTBF and, with ``monte_carlo``, the
    run's checkpoint plan and simulated time-to-train percentiles (``ops reliability``'s JSON)."""
    fleet = fleet_for(cat, req.gpus, req.gpu, req.server, req.radix, req.switches, req.links)
    u = fleet.units
    inter = interruptions(fleet.modes, u, req.days * 24)
    out: dict[str, Any] = {
        "gpus": req.gpus,
        "gpu": fleet.gpu,
        "server": fleet.server,
        "gpus_per_host": fleet.gpus_per_host,
        "hosts": int(u.hosts),
        "switches": u.switches,
        "links": u.links,
        "days": req.days,
        "expected_interruptions": inter.total,
        "planned_interruptions": sum(inter.planned.values()),
        "job_mtbf_hours": inter.job_mtbf_hours,
        "job_mtbf_hours_with_planned": inter.job_mtbf_hours_with_planned,
        "by_cause": inter.by_cause,
        "by_category": inter.by_category,
        "categories": inter.categories,
        "repair_fraction": inter.repair_fraction,
        "rate_basis": fleet.rate_basis,
    }
    if not req.monte_carlo:
        return out
    io: dict[str, Any] = {}
    if req.checkpoint_write_s is not None:
        delta = req.checkpoint_write_s
    elif req.model is not None:
        io = checkpoint_io(cat, req.model, req.gpus, mtbf_s=inter.job_mtbf_hours * rel.HOUR,
                           server=fleet.server_entry)
        delta = io["checkpoint_write_s"]
    else:
        raise InputError("checkpoint_write_s: give it, or `model` to size the checkpoint "
                         "(needed by `monte_carlo`)", field="checkpoint_write_s")
    restart = _restart_s(cat, req.restart_s, io, req.gpus)
    repair_h = _repair_hours(cat, req.repair_hours)
    work = (req.train_days or req.days) * rel.DAY
    fm = None
    if req.fleet_model:
        fm = failure_model(cat, fleet.modes, u,
                           layout_estimate(cat, fleet.server_entry, req.gpus, req.radix))
        out["failure_model"] = fm.as_dict()
        out["failure_assumptions"] = fleet_assumptions(cat)
    interval = req.interval_s
    if interval is None and io.get("min_interval_s"):
        # An async checkpoint cannot come faster than its persist.
        interval = max(rel.daly_interval_s(delta, inter.job_mtbf_hours * rel.HOUR),
                       float(io["min_interval_s"]))
    fc = forecast_run(inter, RunInputs(
        work_s=work, checkpoint_write_s=delta, restart_s=restart, repair_hours=repair_h,
        interval_s=interval, hot_spares=req.hot_spares, trials=req.trials,
        seed=req.seed, model=fm))
    summary = dict(fc.summary)
    summary.update({
        "train_days": work / rel.DAY,
        "interval_s": fc.interval_s,
        "checkpoint_write_s": delta,
        "restart_s": restart,
        "hot_spares": req.hot_spares,
        "repair_hours": repair_h,
        "analytical_ettr": fc.analytical_ettr,
        "analytical_time_to_train_days": fc.analytical_wall_s / rel.DAY,
        "gpu_hours_lost": {k: v * req.gpus for k, v in fc.summary["hours_lost"].items()},
        **({"checkpoint_bytes": io["checkpoint_bytes"], "checkpoint_mode": io["checkpoint_mode"],
            "checkpoint_persist_s": io["checkpoint_persist_s"]} if io else {}),
    })
    if io.get("storage"):
        out["storage"] = io["storage"]
    out["monte_carlo"] = summary
    return out


# --------------------------------------------------------------------------- ops checkpoint


@dataclass(frozen=True)
class CheckpointRequest:
    """The checkpoint interval of a job: its write time (given, or from ``model`` on
    ``gpus`` GPUs), its MTBF (given, or from the catalog's rates for ``gpus`` GPUs)."""

    checkpoint_write_s: float | None = None
    mtbf_hours: float | None = None
    restart_s: float | None = None
    model: ModelArch | None = None
    gpus: int | None = None
    gpu: str | None = None
    server: str | None = None
    precision: str = "bf16"
    optimizer: Literal["adam", "sgd"] = "adam"
    writers: int | None = None
    storage_gbps: float | None = None
    interval_s: float | None = None
    hot_spares: int | None = None
    repair_hours: float | None = None

    def check(self, model_given: bool | None = None) -> None:
        """InputError naming the field for inputs that lack what they need or would be
        ignored. ``model_given``: whether a model was asked for, when the caller checks
        before reading it (default: whether ``model`` is set)."""
        has_model = self.model is not None if model_given is None else model_given
        if self.checkpoint_write_s is None and (not has_model or self.gpus is None):
            raise InputError("checkpoint_write_s: give it, or `model` and `gpus` to compute it "
                             "from the checkpoint size and the storage bandwidth",
                             field="checkpoint_write_s")
        if self.mtbf_hours is None and self.gpus is None:
            raise InputError("mtbf_hours: give it, or `gpus` to compute it from the catalog's "
                             "failure rates", field="mtbf_hours")
        if self.hot_spares is not None and self.gpus is None:
            raise InputError("hot_spares: needs `gpus` (the share of failures that take a node "
                             "out)", field="hot_spares")
        if self.writers is not None and self.gpus is not None and self.writers > self.gpus:
            raise InputError(f"writers: {self.writers} exceeds `gpus` {self.gpus}",
                             field="writers")
        if self.gpus is None:
            # Each of these describes the fleet of ``gpus``; without it, it would be ignored.
            for name in ("model", "gpu", "server", "writers", "storage_gbps"):
                given = has_model if name == "model" else getattr(self, name) is not None
                if given:
                    raise InputError(f"{name}: applies with `gpus` (the job whose checkpoint and "
                                     "failures it describes)", field=name)


def checkpoint_report(cat: Catalog, req: CheckpointRequest) -> dict[str, Any]:
    """Young and Daly intervals, the ETTR they give (with the wait for a hot spare), the
    expected lost work per failure and, given ``interval_s``, the ETTR there (``ops
    checkpoint``'s JSON)."""
    req.check()
    out: dict[str, Any] = {}
    fleet = None
    if req.gpus is not None:
        fleet = fleet_for(cat, req.gpus, req.gpu, req.server)
        out.update(gpus=req.gpus, gpu=fleet.gpu, server=fleet.server)
    if req.mtbf_hours is not None:
        mtbf_h = req.mtbf_hours
    else:
        assert fleet is not None  # check(): gpus is given
        mtbf_h = rel.job_mtbf_hours(fleet.modes, fleet.units)
        if not math.isfinite(mtbf_h):
            raise InfeasibleError("gpus: nothing in the catalog can fail at this scale; give "
                                  "`mtbf_hours`", "no_failures", field="gpus")
    io: dict[str, Any] = {}
    if req.model is not None and req.gpus is not None:
        io = checkpoint_io(cat, req.model, req.gpus, req.precision, req.optimizer, req.writers,
                           req.storage_gbps, mtbf_s=mtbf_h * rel.HOUR,
                           server=fleet.server_entry if fleet is not None else None)
        out.update({k: v for k, v in io.items() if k != "restart_s"})
    delta = (req.checkpoint_write_s if req.checkpoint_write_s is not None
             else io["checkpoint_write_s"])
    restart = _restart_s(cat, req.restart_s, io, req.gpus or 4096)
    wait = 0.0
    if req.hot_spares is not None and fleet is not None:
        sp = spare_coverage(mtbf_h, rel.repair_fraction(fleet.modes, fleet.units),
                            _repair_hours(cat, req.repair_hours), req.hot_spares)
        wait = sp["expected_spare_wait_s"]
        out.update(sp)
    plan = rel.checkpoint_plan(delta, mtbf_h * rel.HOUR, restart, wait)
    allowed = max(plan.daly_interval_s, float(io.get("min_interval_s", 0.0)))
    out.update(
        young_interval_s=plan.young_interval_s,
        daly_interval_s=plan.daly_interval_s,
        checkpoint_interval_s=allowed,
        ettr=(plan.ettr if allowed == plan.daly_interval_s
              else rel.ettr(allowed, delta, mtbf_h * rel.HOUR, restart, wait)),
        ettr_first_order=plan.ettr_first_order,
        ettr_young=plan.ettr_young,
        checkpoint_write_s=delta,
        mtbf_hours=mtbf_h,
        restart_s=restart,
        expected_lost_work_s=rel.expected_lost_work_s(plan.daly_interval_s + delta,
                                                      mtbf_h * rel.HOUR),
    )
    if req.interval_s is not None:
        out["interval_s"] = req.interval_s
        out["ettr_at_interval"] = rel.ettr(req.interval_s, delta, mtbf_h * rel.HOUR, restart,
                                           wait)
    return out


__all__ = ["DEFAULT_SERVER", "CheckpointRequest", "Fleet", "ReliabilityRequest", "checkpoint_io",
           "checkpoint_report", "fleet_for", "reliability_report"]
