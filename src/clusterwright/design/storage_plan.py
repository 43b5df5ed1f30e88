"""The storage tier of a cluster: how many units of which catalog storage system it needs for
its workloads, what they cost, draw and take on the network, and how fast checkpoints move.

Sizing (``model/storage.py`` has the formulas):

- read: the training data the GPUs consume (tokens, or an MLPerf-Storage-style sample rate);
- write: the checkpoint, written fast enough that checkpointing costs at most
  ``checkpoint_sync_overhead`` of the run at the job's MTBF. Synchronous: the write stalls
  training (cost sqrt(2 delta / M) at Young's interval). Asynchronous (default): only a
  shard's device-to-host copy stalls; the interval is as short as the persist allows, and a
  failure during a persist loses one more interval (cost about 1.5 persist / M);
- capacity: the dataset, ``checkpoint_copies_retained`` checkpoints and the served weights.

Reads of small files are sized at what a unit delivers to them, not its bandwidth: the least
of bandwidth, read IOPS x request bytes and file opens/s x file bytes (``model/storage.
read_ceiling``); a rate the catalog entry does not give is not checked, and the plan says the
small-file regime is then an upper bound. Local NVMe in the GPU servers (kind ``local-nvme``)
is never the shared tier; given as ``local_nvme`` it is reported as checkpoint staging (the
stall of writing each server's shard locally, drained to the tier in the background) and as a
read cache (whether the dataset fits the servers' drives).

Units = the largest of the three, at least one. Each GPU's client is capped at its server's
frontend NICs. The system is the request's, else the cheapest catalog system with a price
that meets every need (ties: catalog order). A tier fixed by the request (``system`` and
``units``) that cannot persist a checkpoint within its interval, read the data or hold the
capacity is not an error: the plan says which constraint binds and by how much.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictStr

from clusterwright.catalog.registry import Catalog
from clusterwright.catalog.schema import StorageSystem
from clusterwright.errors import ClusterwrightError, InputError
from clusterwright.model import reliability as rel
from clusterwright.model import storage as st

MAX_UNITS = 100_000  # far past any deployment: a planner bound, not a product limit
Bytes = Annotated[float, Field(ge=0, le=1e21, allow_inf_nan=False)]


class StorageRequest(BaseModel):
    """What a cluster's storage must carry. Sizes in bytes, rates in GB/s, seconds."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    gpus: Annotated[int, Field(gt=0, le=10_000_000)]
    client_gbps_per_gpu: Annotated[float, Field(gt=0, le=1e6, allow_inf_nan=False)] | None = None
    checkpoint_bytes: Bytes = 0.0  # one full checkpoint of the training job (0: none)
    checkpoint_gpus: Annotated[int, Field(gt=0, le=10_000_000)] | None = None  # writers
    mtbf_s: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None = None  # the job's
    checkpoint_mode: Literal["async", "sync"] = "async"
    data_read_gbps: Annotated[float, Field(ge=0, le=1e7, allow_inf_nan=False)] = 0.0
    dataset_bytes: Bytes = 0.0
    model_bytes: Bytes = 0.0  # served weights (stored once; loaded by each new replica)
    checkpoint_copies: Annotated[int, Field(ge=1, le=1000)] | None = None
    system: StrictStr | None = None  # catalog storage system; None: the cheapest that fits
    units: Annotated[int, Field(gt=0, le=MAX_UNITS)] | None = None  # fixed size; None: sized
    # The shape of the training data reads: one file's bytes and one read request's bytes
    # (None: large sequential files, sized by bandwidth alone).
    data_file_bytes: Annotated[float, Field(gt=0, le=1e15, allow_inf_nan=False)] | None = None
    data_request_bytes: Annotated[float, Field(gt=0, le=1e15, allow_inf_nan=False)] | None = None
    local_nvme: StrictStr | None = None  # catalog local-nvme entry in each GPU server
    servers: Annotated[int, Field(gt=0, le=10_000_000)] | None = None  # GPU servers (staging)


@dataclass(frozen=True)
class Binding:
    """A need the tier does not meet: ``needed`` against ``available`` in ``unit``."""

    constraint: str  # checkpoint_interval, checkpoint_stall, data_read, capacity
    needed: float
    available: float
    unit: str
    message: str

    def as_dict(self) -> dict[str, Any]:
        return {"constraint": self.constraint, "needed": self.needed,
                "available": self.available, "unit": self.unit, "message": self.message}


@dataclass(frozen=True)
class LocalStaging:
    """The GPU servers' own NVMe as checkpoint staging and read cache (seconds, bytes)."""

    system: StorageSystem  # the local-nvme entry (one unit per server)
    servers: int
    shard_bytes: float  # one server's share of the checkpoint
    stage_s: float  # writing that share to the local drives
    shared_stall_s: float | None  # the checkpoint's stall without staging
    fits: bool  # a shard fits the drives with the retained copies
    dataset_cached: bool  # the dataset fits one server's drives (epochs after the first local)

    def as_dict(self) -> dict[str, Any]:
        s = self.system
        return {"system": s.id, "servers": self.servers, "write_gbps_per_server": s.write_gbps,
                "read_gbps_per_server": s.read_gbps, "capacity_tb_per_server": s.capacity_tb,
                "shard_bytes": self.shard_bytes, "stage_s": self.stage_s,
                "shared_stall_s": self.shared_stall_s, "fits": self.fits,
                "dataset_cached": self.dataset_cached, "source": s.source}


@dataclass(frozen=True)
class StoragePlan:
    """The designed tier and how checkpoints, data and weights move through it."""

    system: StorageSystem
    units: int
    units_by_need: dict[str, int]
    need: st.TierNeed
    checkpoint: st.CheckpointIo | None
    interval_s: float | None  # the checkpoint interval the write was sized for
    binding: tuple[Binding, ...]
    alternatives: tuple[tuple[str, str], ...] = ()
    why: str = ""
    model_load_s: float | None = None  # one replica's weights at the tier's read rate
    notes: tuple[str, ...] = field(default=())
    data_read: st.ReadCeiling | None = None  # per unit, for the request's data files
    staging: LocalStaging | None = None

    @property
    def read_gbps(self) -> float:
        return self.units * self.system.read_gbps

    @property
    def write_gbps(self) -> float:
        return self.units * self.system.write_gbps

    @property
    def capacity_tb(self) -> float:
        return self.units * self.system.capacity_tb

    @property
    def ports(self) -> int:
        return self.units * self.system.ports

    @property
    def power_kw(self) -> float:
        return self.units * self.system.power_w / 1e3

    @property
    def price_usd(self) -> float | None:
        p = self.system.price_usd
        return None if p is None else self.units * p

    @property
    def feasible(self) -> bool:
        return not self.binding

    def as_dict(self) -> dict[str, Any]:
        s = self.system
        ck = self.checkpoint
        return {
            "system": s.id, "name": s.name, "kind": s.kind, "units": self.units,
            "units_by_need": dict(self.units_by_need),
            "read_gbps": self.read_gbps, "write_gbps": self.write_gbps,
            "capacity_tb": self.capacity_tb, "ports": self.ports, "port_gbps": s.port_gbps,
            "rack_units": self.units * s.rack_units, "power_kw": self.power_kw,
            "price_usd": self.price_usd, "price_source": s.price_source, "source": s.source,
            "need": {"read_gbps": self.need.read_gbps, "write_gbps": self.need.write_gbps,
                     "capacity_tb": self.need.capacity_bytes / 1e12},
            "checkpoint": None if ck is None else {
                "mode": ck.mode, "bytes": ck.bytes, "stall_s": ck.stall_s,
                "persist_s": ck.persist_s, "restore_s": ck.restore_s,
                "interval_s": self.interval_s, "write_gbps": ck.write_gbps,
                "read_gbps": ck.read_gbps, "extra_lost_work_s": ck.extra_lost_work_s},
            "model_load_s": self.model_load_s,
            "data_read_per_unit": None if self.data_read is None else self.data_read.as_dict(),
            "local_staging": None if self.staging is None else self.staging.as_dict(),
            "binding": [b.as_dict() for b in self.binding],
            "feasible": self.feasible, "why": self.why,
            "alternatives": [{"option": a, "why_not": w} for a, w in self.alternatives],
            "notes": list(self.notes),
        }


def client_gbps_per_gpu(cat: Catalog, server_id: str) -> float:
    """What one GPU's share of its server's frontend NICs carries, GB/s."""
    srv = cat.server(server_id)
    per_host = srv.gpus // max(srv.hosts, 1)
    return srv.frontend_nics.count * srv.frontend_nics.speed_gbps / 8.0 / srv.hosts / per_host


def checkpoint_interval_s(ck: st.CheckpointIo, mtbf_s: float) -> float:
    """The checkpoint interval a tier allows: Daly's optimum of the stall, and for an
    asynchronous checkpoint never shorter than its persist (the next cannot start sooner)."""
    daly = rel.daly_interval_s(max(ck.stall_s, 1e-6), mtbf_s)
    return max(daly, ck.persist_s) if ck.mode == "async" else daly


def _evaluate(cat: Catalog, req: StorageRequest, sys: StorageSystem) -> StoragePlan:
    a = cat.assumption
    copies = req.checkpoint_copies or round(a("checkpoint_copies_retained"))
    size = req.checkpoint_bytes
    writers = req.checkpoint_gpus or req.gpus
    host_copy = a("checkpoint_host_copy_gbps_per_gpu")
    budget = a("checkpoint_sync_overhead")
    write_need = 0.0
    interval = None
    if size > 0 and req.mtbf_s is not None:
        if req.checkpoint_mode == "async":
            write_need = st.async_write_need_gbps(size, req.mtbf_s, budget)
        else:
            write_need = st.sync_write_need_gbps(size, req.mtbf_s, budget)
    need = st.TierNeed(read_gbps=req.data_read_gbps, write_gbps=write_need,
                       capacity_bytes=req.dataset_bytes + copies * size + req.model_bytes)
    ceiling = None
    data_gbps = sys.read_gbps  # what one unit delivers to the training data
    if req.data_file_bytes is not None:
        ceiling = st.read_ceiling(sys.read_gbps, req.data_file_bytes, req.data_request_bytes,
                                  sys.read_iops, sys.file_opens_per_s)
        data_gbps = ceiling.gbps
    by_need = st.units_needed(need, data_gbps, sys.write_gbps, sys.capacity_tb)
    units = req.units if req.units is not None else max(sys.min_units, *by_need.values())
    notes: list[str] = []
    if req.units is None and sys.max_units is not None and units > sys.max_units:
        notes.append(f"{sys.id} scales to {sys.max_units} units; {units} needed")
        units = sys.max_units
    ck = None
    if size > 0:
        ck = st.checkpoint_io(size, writers, units * sys.write_gbps, units * sys.read_gbps,
                              req.checkpoint_mode, host_copy, req.client_gbps_per_gpu,
                              req.client_gbps_per_gpu)
    binding: list[Binding] = []
    overhead = None
    if ck is not None and req.mtbf_s is not None:
        interval = checkpoint_interval_s(ck, req.mtbf_s)
        overhead = (st.async_overhead(ck.persist_s, ck.stall_s, interval, req.mtbf_s)
                    if ck.mode == "async" else st.sync_overhead(ck.stall_s, req.mtbf_s))
        if ck.write_gbps < write_need * (1 - 1e-9):
            need_units = math.ceil(write_need / sys.write_gbps - 1e-9)
            binding.append(Binding(
                "checkpoint_interval", ck.persist_s, size / (write_need * st.GB), "s",
                f"a {size / 1e12:.2f} TB {ck.mode} checkpoint takes {ck.persist_s:,.0f} s to "
                f"write at {ck.write_gbps:,.1f} GB/s, so checkpoints come every "
                f"{interval:,.0f} s and cost {100 * overhead:.1f} % of the run against the "
                f"{100 * budget:g} % budget; {size / (write_need * st.GB):,.0f} s "
                f"({write_need:,.1f} GB/s, {need_units} x {sys.id}) would meet it"))
    if units * data_gbps < need.read_gbps * (1 - 1e-9):
        bound = "" if ceiling is None or ceiling.bound == "bandwidth" else (
            f" of these files ({ceiling.bound}-bound)")
        binding.append(Binding(
            "data_read", need.read_gbps, units * data_gbps, "GB/s",
            f"training reads {need.read_gbps:,.1f} GB/s; {units} x {sys.id} read "
            f"{units * data_gbps:,.1f} GB/s{bound}"))
    if units * sys.capacity_tb * 1e12 < need.capacity_bytes * (1 - 1e-9):
        binding.append(Binding(
            "capacity", need.capacity_bytes / 1e12, units * sys.capacity_tb, "TB",
            f"the dataset, {copies} checkpoints and the served weights need "
            f"{need.capacity_bytes / 1e12:,.1f} TB; {units} x {sys.id} hold "
            f"{units * sys.capacity_tb:,.1f} TB"))
    load = (st.model_load_s(req.model_bytes, 1, units * sys.read_gbps)
            if req.model_bytes > 0 else None)
    if overhead is not None:
        notes.append(f"checkpointing costs {100 * overhead:.2f} % of the run "
                     f"(budget {100 * budget:g} %, checkpoint_sync_overhead)")
    if ceiling is not None and ceiling.bound != "bandwidth":
        notes.append(f"the training data's {ceiling.file_bytes / 1e6:,.3g} MB files are "
                     f"{ceiling.bound}-bound on {sys.id}: {ceiling.gbps:,.1f} of "
                     f"{sys.read_gbps:,.1f} GB/s per unit")
    if ceiling is not None and ceiling.unknown:
        notes.append(f"{sys.id} gives no {' or '.join(_RATE_NAMES[u] for u in ceiling.unknown)}"
                     f" rate: small-file reads are sized by the rates it gives (an upper "
                     f"bound, not validated for this system)")
    return StoragePlan(sys, units, by_need, need, ck, interval, tuple(binding),
                       model_load_s=load, notes=tuple(notes), data_read=ceiling)


_RATE_NAMES = {"requests": "read IOPS", "metadata": "file-open"}


def _staging(cat: Catalog, req: StorageRequest, plan: StoragePlan) -> LocalStaging | None:
    """The servers' local NVMe as checkpoint staging and read cache (None without one)."""
    if req.local_nvme is None:
        return None
    try:
        loc = cat.get("storage_systems", req.local_nvme)
    except ClusterwrightError as exc:
        raise InputError(f"local_nvme: {exc}", field="local_nvme") from None
    if loc.kind != "local-nvme":
        raise InputError(f"local_nvme: {loc.id} is of kind {loc.kind}, not local-nvme (NVMe "
                         "inside the GPU servers)", field="local_nvme")
    servers = req.servers or 1
    copies = req.checkpoint_copies or round(cat.assumption("checkpoint_copies_retained"))
    shard = req.checkpoint_bytes / servers
    ck = plan.checkpoint
    return LocalStaging(
        loc, servers, shard, shard / (loc.write_gbps * st.GB),
        ck.stall_s if ck is not None else None,
        fits=copies * shard <= loc.capacity_tb * 1e12,
        dataset_cached=0 < req.dataset_bytes <= loc.capacity_tb * 1e12)


def _why(plan: StoragePlan, fixed: bool) -> str:
    s, by = plan.system, plan.units_by_need
    parts = [f"{plan.units} x {s.id} ({plan.read_gbps:,.0f} GB/s read, "
             f"{plan.write_gbps:,.0f} GB/s write, {plan.capacity_tb:,.0f} TB)"]
    counts = f"read {by['read']}, write {by['write']}, capacity {by['capacity']} units"
    if fixed:
        parts.append(f"fixed by storage.units (the needs ask {counts})")
    elif plan.units > max(by.values()):
        parts.append(f"the smallest redundant {s.id} deployment ({s.min_units} units) covers "
                     f"every need ({counts})")
    else:
        sized = max(by, key=lambda k: by[k])
        parts.append(f"sized by {sized} ({counts})")
    ck = plan.checkpoint
    if ck is not None and plan.interval_s is not None:
        parts.append(f"a {ck.bytes / 1e12:.2f} TB {ck.mode} checkpoint stalls "
                     f"{ck.stall_s:.1f} s and is written in {ck.persist_s:,.0f} s, every "
                     f"{plan.interval_s:,.0f} s")
    return "; ".join(parts)


def plan_storage(req: StorageRequest, cat: Catalog) -> StoragePlan:
    """The storage tier for ``req``: the given system, else the cheapest priced catalog system
    that meets every need. InputError naming ``system`` for an unknown id."""
    if req.system is not None:
        try:
            systems = [cat.get("storage_systems", req.system)]
        except ClusterwrightError as exc:
            raise InputError(f"system: {exc}", field="system") from None
        if systems[0].kind == "local-nvme":
            raise InputError(f"system: {req.system} is the NVMe inside each GPU server, not a "
                             "shared tier; give it as `local_nvme` (checkpoint staging)",
                             field="system")
    else:
        systems = [s for s in cat.all("storage_systems")
                   if s.price_usd is not None and s.kind != "local-nvme"]
        if not systems:
            raise InputError("system: no storage system in the catalog has a price; name one",
                             field="system")
    plans = [_evaluate(cat, req, s) for s in systems]

    def rank(p: StoragePlan) -> tuple[float, float]:
        return (len(p.binding), p.price_usd if p.price_usd is not None else math.inf)

    best = min(plans, key=rank)
    staging = _staging(cat, req, best)
    alts = tuple(
        (f"{p.units} x {p.system.id}",
         "; ".join(b.message for b in p.binding) if p.binding else
         f"${(p.price_usd or 0) - (best.price_usd or 0):,.0f} more")
        for p in sorted(plans, key=rank) if p is not best)
    return StoragePlan(best.system, best.units, best.units_by_need, best.need, best.checkpoint,
                       best.interval_s, best.binding, alts, _why(best, req.units is not None),
                       best.model_load_s,
                       best.notes, best.data_read, staging)
