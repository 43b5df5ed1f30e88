"""The storage tier of a planned cluster, and the request behind ``ops storage``: what the
workloads ask of storage (checkpoints of the largest training job at its MTBF, the training
data, the dataset, checkpoint copies and the served weights), answered by the storage planner
(``design/storage_plan.py``) with the scenario's ``storage:`` choices.

Each need is derived from the sized workloads:

- checkpoint: weights and mixed-precision Adam state of the largest training job (14 B/param,
  ``model/reliability.checkpoint_bytes``), written by all its GPUs, against the job MTBF of
  its GPU generation's fleet (``model/reliability``);
- data: ``storage.data_read_gbps_per_gpu`` x the training GPUs, else the planned token rate x
  the bytes of a stored token id (Megatron: uint16 below a 65,500-entry vocabulary, else
  int32);
- capacity: the dataset (``storage.dataset_tb``, else tokens x bytes per token), the kept
  checkpoints and one copy of every served model's weights.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

from clusterwright.catalog.registry import Catalog
from clusterwright.catalog.schema import Dtype, ModelArch, Server
from clusterwright.design.blueprint import Candidate
from clusterwright.design.storage_plan import (
    StoragePlan,
    StorageRequest,
    client_gbps_per_gpu,
    plan_storage,
)
from clusterwright.errors import ClusterwrightError, InputError
from clusterwright.model import reliability as rel
from clusterwright.model import storage as st
from clusterwright.model.params import total_params
from clusterwright.model.precision import bytes_per
from clusterwright.plan.context import PlanRun

VOCAB_UINT16 = 65_500  # Megatron-LM indexed_dataset DType.optimal_dtype threshold


def bytes_per_token(cat: Catalog, arch: ModelArch) -> float:
    """Bytes one stored training token id takes (Megatron's indexed dataset)."""
    name = "token_bytes_small_vocab" if arch.vocab < VOCAB_UINT16 else "token_bytes_large_vocab"
    return cat.assumption(name)


def job_mtbf_s(cat: Catalog, gpu: str, gpus: int, server: Server) -> float | None:
    """The job MTBF of ``gpus`` GPUs of ``gpu`` in ``server`` hosts (catalog fleet rates)."""
    modes = rel.modes_for_gpu(cat.all("failure_modes"), gpu)
    units = rel.fleet_units(gpus, server.gpus // max(server.hosts, 1))
    m = rel.job_mtbf_hours(modes, units)
    return m * rel.HOUR if math.isfinite(m) else None


def storage_request(run: PlanRun, cand: Candidate, server: Server) -> StorageRequest:
    """What ``cand``'s workloads ask of its storage tier, with the scenario's choices."""
    cat, sc = run.cat, run.scenario
    s = sc.storage
    rows: list[dict[str, Any]] = cand.detail.get("workloads", [])
    train = [r for r in rows if r["kind"] == "training" and r.get("gpus")]
    ck_bytes, ck_gpus, mtbf = 0.0, None, None
    data, dataset = 0.0, 0.0
    if train:
        big = max(train, key=lambda r: r["gpus"])
        arch = run.models[big["name"]]
        ck_bytes = rel.checkpoint_bytes(float(total_params(arch)), "bf16", "adam")
        ck_gpus = int(big["gpus"])
        mtbf = job_mtbf_s(cat, cand.gpu, ck_gpus, server)
    for r in train:
        arch = run.models[r["name"]]
        per_token = bytes_per_token(cat, arch)
        if s.data_read_gbps_per_gpu is not None:
            data += s.data_read_gbps_per_gpu * r["gpus"]
        else:
            data += st.token_read_gbps(r["gpus"], r.get("tokens_per_s") or 0.0, per_token)
        dataset += float(r.get("tokens") or 0.0) * per_token
    if s.dataset_tb is not None:
        dataset = s.dataset_tb * 1e12
    served: dict[str, float] = {}
    for r in rows:
        if r["kind"] == "inference":
            arch = run.models[r["name"]]
            served[arch.id] = max(served.get(arch.id, 0.0),
                                  float(total_params(arch)) * bytes_per(r["precision"]))
    gpus = cand.gpus or 1
    return StorageRequest(
        gpus=gpus, client_gbps_per_gpu=client_gbps_per_gpu(cat, server.id),
        checkpoint_bytes=ck_bytes, checkpoint_gpus=ck_gpus, mtbf_s=mtbf,
        checkpoint_mode=s.checkpoint, data_read_gbps=data, dataset_bytes=dataset,
        model_bytes=sum(served.values()), checkpoint_copies=s.checkpoint_copies,
        system=s.system, units=s.units,
        data_file_bytes=None if s.data_file_mb is None else s.data_file_mb * 1e6,
        data_request_bytes=None if s.data_request_kb is None else s.data_request_kb * 1e3,
        local_nvme=s.local_nvme, servers=servers_of(ck_gpus or gpus, server))


def servers_of(gpus: int, server: Server) -> int:
    """GPU servers (hosts) that ``gpus`` GPUs fill: each holds its own local NVMe."""
    per_host = server.gpus // max(server.hosts, 1)
    return max(1, math.ceil(gpus / per_host))


def design_storage(run: PlanRun, cand: Candidate, server: Server) -> StoragePlan:
    """The storage tier of one candidate (the planner's errors name ``storage.*`` fields)."""
    try:
        return plan_storage(storage_request(run, cand, server), run.cat)
    except InputError as exc:
        name = exc.field or ""
        raise InputError(f"storage.{exc!s}" if name else str(exc),
                         field=f"storage.{name}" if name else None) from None


# --------------------------------------------------------------------------- ops storage


@dataclass(frozen=True)
class OpsStorageRequest:
    """``ops storage``: the tier for a training job of ``model`` on ``gpus`` GPUs of
    ``server``, with its data rate and dataset, and/or serving ``serve_model`` weights."""

    gpus: int
    server: str = "dgx-h100"
    model: ModelArch | None = None
    data_read_gbps_per_gpu: float = 0.0
    dataset_tb: float = 0.0
    serve_model: ModelArch | None = None
    serve_precision: str = "bf16"
    checkpoint: Literal["async", "sync"] = "async"
    checkpoint_copies: int | None = None
    system: str | None = None
    units: int | None = None
    mlperf_workload: str | None = None  # unet3d, resnet50, cosmoflow: the data rate from it
    local_nvme: str | None = None  # catalog local-nvme entry in each server (staging)


def _emulated_accelerator(cat: Catalog, gpu_id: str) -> tuple[str, str | None]:
    """The accelerator MLPerf Storage emulates for ``gpu_id`` (its results emulate A100 and
    H100 only), and a note when the GPU is neither: the one nearer in dense BF16 peak."""
    if gpu_id.startswith("a100"):
        return "a100", None
    if gpu_id.startswith("h100"):
        return "h100", None
    peaks = {g: cat.gpu(g).peak_tflops.get(Dtype.bf16, 0.0) for g in ("a100-80gb-sxm", "h100-sxm")}
    own = cat.gpu(gpu_id).peak_tflops.get(Dtype.bf16, 0.0)
    near = min(peaks, key=lambda g: abs(math.log(max(own, 1e-9) / peaks[g])))
    acc = near.split("-")[0]
    return acc, (f"MLPerf Storage emulates A100 and H100 only: {gpu_id} ({own:,.0f} BF16 "
                 f"TFLOP/s) is read at the {acc.upper()}'s data rate, the nearer in peak; a "
                 "faster accelerator reads proportionally more")


def storage_report(cat: Catalog, req: OpsStorageRequest) -> dict[str, Any]:
    """The storage tier and its checkpoint, data and model-load times (``ops storage``)."""
    try:
        server = cat.server(req.server)
    except ClusterwrightError as exc:
        raise InputError(f"server: {exc}", field="server") from None
    data = req.data_read_gbps_per_gpu * req.gpus
    wl = None
    emulated_note = None
    if req.mlperf_workload is not None:
        acc, emulated_note = _emulated_accelerator(cat, server.gpu)
        wl = st.MLPERF_WORKLOADS.get((req.mlperf_workload, acc))
        if wl is None:
            known = sorted({k[0] for k in st.MLPERF_WORKLOADS})
            raise InputError(f"mlperf_workload: {req.mlperf_workload!r} is not one of "
                             f"{', '.join(known)}", field="mlperf_workload")
        data = max(data, wl.gbps_at_threshold * req.gpus)
    ck_bytes, mtbf = 0.0, None
    if req.model is not None:
        ck_bytes = rel.checkpoint_bytes(float(total_params(req.model)), "bf16", "adam")
        mtbf = job_mtbf_s(cat, server.gpu, req.gpus, server)
    weights = (float(total_params(req.serve_model)) * bytes_per(req.serve_precision)
               if req.serve_model is not None else 0.0)
    plan = plan_storage(StorageRequest(
        gpus=req.gpus, client_gbps_per_gpu=client_gbps_per_gpu(cat, server.id),
        checkpoint_bytes=ck_bytes, mtbf_s=mtbf, checkpoint_mode=req.checkpoint,
        data_read_gbps=data, dataset_bytes=req.dataset_tb * 1e12, model_bytes=weights,
        checkpoint_copies=req.checkpoint_copies, system=req.system, units=req.units,
        data_file_bytes=None if wl is None else wl.file_bytes,
        data_request_bytes=None if wl is None else wl.request_bytes,
        local_nvme=req.local_nvme, servers=servers_of(req.gpus, server)), cat)
    out = plan.as_dict()
    out.update(gpus=req.gpus, server=server.id, job_mtbf_hours=None if mtbf is None
               else mtbf / rel.HOUR)
    if emulated_note is not None:
        out["notes"] = [*out.get("notes", []), emulated_note]
    if wl is not None and wl.name == "cosmoflow":
        hosts = servers_of(req.gpus, server)
        lo, hi = st.client_file_rate_gbps(hosts, wl)
        out["notes"] = [*out.get("notes", []), (
            f"not modelled: the data loaders' per-file cost on the {hosts} client servers. In "
            f"MLPerf Storage v1.0 CosmoFlow runs it bound every host, each moving "
            f"{st.COSMOFLOW_HOST_SAMPLES_PER_S[0]:,.0f}-{st.COSMOFLOW_HOST_SAMPLES_PER_S[1]:,.0f}"
            f" samples/s: {lo:,.0f}-{hi:,.0f} GB/s for {hosts} hosts against the "
            f"{data:,.1f} GB/s needed (the held-out CosmoFlow rows are over-predicted 2-6x)")]
    if wl is not None:
        out["mlperf_workload"] = {
            "name": wl.name, "accelerator": wl.accelerator, "au_threshold": wl.au,
            "gbps_per_accelerator_at_threshold": wl.gbps_at_threshold,
            "accelerators_supported": st.accelerators_supported(
                plan.units * (plan.data_read.gbps if plan.data_read else plan.system.read_gbps),
                wl)}
    return out
