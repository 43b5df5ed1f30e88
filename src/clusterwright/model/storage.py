"""Storage for AI training and serving: what the GPUs read and write, and how fast a storage
tier moves it. Pure functions; bytes, seconds, GB/s (10^9 B/s) where a name says ``gbps``.

- **Training data** (MLPerf Storage's model of it): an accelerator consumes ``batch`` samples
  of ``sample_bytes`` every ``compute_s`` of emulated compute; it is busy a share AU of the time
  when storage keeps up, so it reads AU x batch x sample_bytes / compute_s. MLPerf Storage
  v1.0 scores a system by how many accelerators it keeps at or above the workload's AU
  threshold (90 % for 3D U-Net and ResNet-50, 70 % for CosmoFlow). LLM pre-training reads
  tokens: tokens/s per GPU x bytes per token id.
- **Checkpoints**: a synchronous checkpoint stalls training for size / write bandwidth; an
  asynchronous one (PyTorch DCP async_save, Megatron async save, CheckFreq, Gemini) stalls
  only for the device-to-host snapshot of each GPU's shard and persists in the background,
  which must finish within the checkpoint interval (else the interval stretches to it: a
  binding constraint). Restore reads the checkpoint back on restart.
- **Serving**: a replica loads its weights from shared storage when the pool scales up.
- **Clients** (``client_network_gbps``): the hosts that run the data loaders pull at most
  their storage NICs' line rate; the smaller of that and the tier's ceiling reaches the GPUs.
- **Small files** (``read_ceiling``): a tier delivers a workload at most its bandwidth, its
  request rate x the bytes a request carries, and its file-open rate x the bytes of a file: the
  first resource to saturate binds (a roofline over the three). Large files (3D U-Net's
  147 MB samples) are bandwidth-bound; one small file per sample (CosmoFlow's 2.8 MB) adds a
  metadata open per 2.8 MB. Requests are the reader's transfer size: TensorFlow's
  TFRecordDataset reads 256 KiB buffers (DLIO passes its ``transfer_size`` default, 262,144 B);
  PyTorch/NumPy ``np.load`` of an npz reads the whole file.

Sources: MLPerf Storage v1.0 rules and DLIO workload configurations (github.com/mlcommons/
storage, configs/dlio/workload/*_{a100,h100}.yaml: batch_size, computation_time,
record_length_bytes, metric.au); MLPerf Storage v2.0 rules (Submission_guidelines.md, Table 2,
checkpoint sizes); Mohan et al., CheckFreq (FAST'21).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from clusterwright.errors import InputError
from clusterwright.model.checks import non_negative as _non_negative
from clusterwright.model.checks import positive as _positive

GB = 1e9




# --------------------------------------------------------------------------- training data


@dataclass(frozen=True)
class DataWorkload:
    """An MLPerf Storage training workload on one emulated accelerator."""

    name: str
    accelerator: str  # a100, h100
    batch: int  # samples per step
    sample_bytes: float  # record_length_bytes
    compute_s: float  # emulated compute per step (computation_time)
    au: float  # accelerator-utilization threshold the benchmark scores against
    samples_per_file: int = 1  # num_samples_per_file
    request_bytes: float | None = None  # bytes one read request carries; None: the whole file

    @property
    def file_bytes(self) -> float:
        """Bytes of one dataset file."""
        return self.samples_per_file * self.sample_bytes

    @property
    def read_request_bytes(self) -> float:
        """Bytes one read request carries (never more than the file)."""
        r = self.request_bytes
        return self.file_bytes if r is None else min(r, self.file_bytes)

    @property
    def full_rate_gbps(self) -> float:
        """GB/s one accelerator reads when it never waits (AU = 1)."""
        return self.batch * self.sample_bytes / self.compute_s / GB

    @property
    def gbps_at_threshold(self) -> float:
        """GB/s one accelerator reads at the AU threshold (the least a passing system gives)."""
        return self.au * self.full_rate_gbps

    @property
    def samples_per_s_at_threshold(self) -> float:
        return self.au * self.batch / self.compute_s


# MLPerf Storage v1.0 workload definitions (mlcommons/storage configs/dlio/workload/, the rules'
# Table 1 for the AU thresholds): 3D U-Net 7 x 146,600,628 B per step (npz, one sample per
# file, read whole), ResNet-50 400 x 114,660.07 B (TFRecord, 1,251 samples per file),
# CosmoFlow 1 x 2,828,486 B (TFRecord, one sample per file); computation_time per step as
# configured. TFRecord requests: TFRECORD_REQUEST_BYTES.
TFRECORD_REQUEST_BYTES = 262_144  # DLIO reader transfer_size default = tf.data 256 KiB buffer
MLPERF_WORKLOADS: dict[tuple[str, str], DataWorkload] = {
    (w.name, w.accelerator): w for w in (
        DataWorkload("unet3d", "h100", 7, 146_600_628, 0.323, 0.90),
        DataWorkload("unet3d", "a100", 7, 146_600_628, 0.636, 0.90),
        DataWorkload("resnet50", "h100", 400, 114_660.07, 0.224, 0.90, 1251,
                     TFRECORD_REQUEST_BYTES),
        DataWorkload("resnet50", "a100", 400, 114_660.07, 0.435, 0.90, 1251,
                     TFRECORD_REQUEST_BYTES),
        DataWorkload("cosmoflow", "h100", 1, 2_828_486, 0.00350, 0.70, 1,
                     TFRECORD_REQUEST_BYTES),
        DataWorkload("cosmoflow", "a100", 1, 2_828_486, 0.00551, 0.70, 1,
                     TFRECORD_REQUEST_BYTES),
    )
}


# Samples per second one benchmark host's data loaders moved in MLPerf Storage v1.0 CosmoFlow
# runs, slowest and fastest host read (mlcommons/storage_results_v1.0 results/*/summary.json
# over each system description's benchmark hosts: DDN 619-785 per host, IEIT 4,830-6,529,
# MangoBoost 4,240-5,092, YanRong up to 11,971; docs/storage.md). A per-file cost on the host
# (open, 256 KiB reads, TFRecord parse, close) binds every such run, and no source gives it
# for a given host, so it is reported as a range, not modelled.
COSMOFLOW_HOST_SAMPLES_PER_S = (619.0, 11_971.0)


def client_file_rate_gbps(hosts: int, workload: DataWorkload,
                          samples_per_s: tuple[float, float] = COSMOFLOW_HOST_SAMPLES_PER_S
                          ) -> tuple[float, float]:
    """(low, high) GB/s that ``hosts`` benchmark hosts' data loaders moved for one-file-per-
    sample ``workload`` reads in published runs: hosts x samples/s x sample bytes."""
    _positive("hosts", hosts)
    per = workload.sample_bytes / 1e9
    return hosts * samples_per_s[0] * per, hosts * samples_per_s[1] * per


def accelerators_supported(read_gbps: float, workload: DataWorkload) -> int:
    """Accelerators a storage system reading ``read_gbps`` keeps at the workload's AU
    threshold: floor(read / per-accelerator demand at the threshold)."""
    _non_negative("read bandwidth", read_gbps)
    return math.floor(read_gbps / workload.gbps_at_threshold + 1e-9)


@dataclass(frozen=True)
class ReadCeiling:
    """What a storage tier delivers to a workload of ``file_bytes`` files read in
    ``request_bytes`` requests (GB/s), and which resource binds."""

    gbps: float  # min of the ceilings
    bound: str  # bandwidth, requests or metadata
    ceilings: dict[str, float]  # GB/s each resource allows (only the ones the system gives)
    unknown: tuple[str, ...]  # resources the system gives no rate for (not checked)
    file_bytes: float
    request_bytes: float

    @property
    def files_per_s(self) -> float:
        return self.gbps * GB / self.file_bytes

    def as_dict(self) -> dict[str, object]:
        return {"gbps": self.gbps, "bound": self.bound, "ceilings_gbps": dict(self.ceilings),
                "not_checked": list(self.unknown), "file_bytes": self.file_bytes,
                "request_bytes": self.request_bytes, "files_per_s": self.files_per_s}


def read_ceiling(read_gbps: float, file_bytes: float, request_bytes: float | None = None,
                 read_iops: float | None = None, file_opens_per_s: float | None = None
                 ) -> ReadCeiling:
    """The read rate (GB/s) a tier of ``read_gbps`` bandwidth, ``read_iops`` read requests/s
    and ``file_opens_per_s`` file opens/s delivers to files of ``file_bytes`` read in
    ``request_bytes`` requests (None: one request per file):
    min(bandwidth, IOPS x request bytes, opens/s x file bytes), a roofline over the
    resources that serve a read (Williams et al., CACM 2009, applied to storage: whichever
    saturates first binds). A rate the system does not give is not checked and is listed in
    ``unknown``, so the result is then an upper bound."""
    _positive("read bandwidth", read_gbps)
    _positive("file bytes", file_bytes)
    req = file_bytes if request_bytes is None else min(request_bytes, file_bytes)
    _positive("request bytes", req)
    ceilings = {"bandwidth": read_gbps}
    unknown: list[str] = []
    if read_iops is None:
        unknown.append("requests")
    else:
        _positive("read IOPS", read_iops)
        ceilings["requests"] = read_iops * req / GB
    if file_opens_per_s is None:
        unknown.append("metadata")
    else:
        _positive("file opens per second", file_opens_per_s)
        ceilings["metadata"] = file_opens_per_s * file_bytes / GB
    bound = min(ceilings, key=lambda k: ceilings[k])
    return ReadCeiling(ceilings[bound], bound, ceilings, tuple(unknown), file_bytes, req)


def client_network_gbps(clients: int, nic_gbit_s_per_client: float) -> float:
    """GB/s the hosts that run the data loaders can pull over their storage NICs: clients x
    line rate / 8 (a ceiling: protocol overhead and the host's own limits come off it). In an
    MLPerf Storage submission the clients are the benchmark hosts of the system description
    (``benchmark_hosts`` and their ``nic_ports``); in a cluster, the GPU servers' storage
    NICs."""
    _positive("clients", clients)
    _positive("client NIC rate", nic_gbit_s_per_client)
    return clients * nic_gbit_s_per_client / 8.0


def supplied_gbps(ceiling: ReadCeiling, client_gbps: float | None = None) -> tuple[float, str]:
    """What reaches the accelerators: the storage tier's ``read_ceiling`` or, when smaller,
    the clients' network (``client_network_gbps``); with the resource that binds
    (bandwidth, requests, metadata or client-network)."""
    if client_gbps is not None and client_gbps < ceiling.gbps:
        return client_gbps, "client-network"
    return ceiling.gbps, ceiling.bound


def token_read_gbps(gpus: int, tokens_per_s: float, bytes_per_token: float) -> float:
    """GB/s the whole job reads for LLM training: tokens/s x bytes per stored token id (each
    token read once; ``tokens_per_s`` is the job's, not per GPU)."""
    _positive("gpus", gpus)
    _non_negative("tokens per second", tokens_per_s)
    _positive("bytes per token", bytes_per_token)
    return tokens_per_s * bytes_per_token / GB


# --------------------------------------------------------------------------- checkpoints


@dataclass(frozen=True)
class CheckpointIo:
    """How one checkpoint moves through a storage tier (seconds)."""

    mode: str  # async or sync
    bytes: float
    stall_s: float  # training stops this long per checkpoint
    persist_s: float  # until the checkpoint is durable on shared storage
    restore_s: float  # reading it back on restart
    write_gbps: float  # the write rate used
    read_gbps: float  # the read rate used

    @property
    def extra_lost_work_s(self) -> float:
        """Mean extra work lost per failure because the newest checkpoint was still persisting
        (async): a failure during the persist rolls back one more interval, which happens with
        probability persist / interval and costs an interval: about ``persist_s`` (while the
        persist fits the interval). Zero for a synchronous checkpoint."""
        return self.persist_s if self.mode == "async" else 0.0


def checkpoint_io(size_bytes: float, gpus: int, write_gbps: float, read_gbps: float,
                  mode: str = "async", host_copy_gbps_per_gpu: float = 25.0,
                  client_write_gbps_per_gpu: float | None = None,
                  client_read_gbps_per_gpu: float | None = None) -> CheckpointIo:
    """Stall, persist and restore of a sharded checkpoint of ``size_bytes`` written by
    ``gpus`` GPUs to a tier of ``write_gbps``/``read_gbps`` (GB/s), each GPU's client capped at
    ``client_*_gbps_per_gpu`` when given. ``async``: the stall is the device-to-host copy of one
    shard at ``host_copy_gbps_per_gpu``; ``sync``: the stall is the whole write."""
    _positive("checkpoint bytes", size_bytes)
    _positive("gpus", gpus)
    _positive("write bandwidth", write_gbps)
    _positive("read bandwidth", read_gbps)
    if mode not in ("async", "sync"):
        raise InputError(f"checkpoint mode: {mode!r} is not one of async, sync")
    w = write_gbps if client_write_gbps_per_gpu is None else min(
        write_gbps, gpus * client_write_gbps_per_gpu)
    r = read_gbps if client_read_gbps_per_gpu is None else min(
        read_gbps, gpus * client_read_gbps_per_gpu)
    persist = size_bytes / (w * GB)
    restore = size_bytes / (r * GB)
    if mode == "async":
        _positive("host copy bandwidth", host_copy_gbps_per_gpu)
        stall = size_bytes / gpus / (host_copy_gbps_per_gpu * GB)
    else:
        stall = persist
    return CheckpointIo(mode, size_bytes, stall, persist, restore, w, r)


# --------------------------------------------------------------------------- sizing


@dataclass(frozen=True)
class TierNeed:
    """What a storage tier must sustain (GB/s, bytes)."""

    read_gbps: float
    write_gbps: float
    capacity_bytes: float


def units_needed(need: TierNeed, read_gbps: float, write_gbps: float, capacity_tb: float
                 ) -> dict[str, int]:
    """Whole units of a building block each need asks for (read, write, capacity)."""
    for name, v in (("read", read_gbps), ("write", write_gbps), ("capacity", capacity_tb)):
        _positive(f"unit {name}", v)
    return {
        "read": math.ceil(need.read_gbps / read_gbps - 1e-9),
        "write": math.ceil(need.write_gbps / write_gbps - 1e-9),
        "capacity": math.ceil(need.capacity_bytes / (capacity_tb * 1e12) - 1e-9),
    }


def async_write_need_gbps(size_bytes: float, mtbf_s: float, overhead: float) -> float:
    """The write rate that keeps asynchronous checkpointing at ``overhead`` of the run. The
    snapshot stall is negligible, so the interval is as short as the persist P allows and each
    failure loses about tau/2 + P of work (the checkpoint being persisted is not yet durable):
    at tau = P the loss is 1.5 P / M, so P = overhead x M / 1.5, GB/s = size / P."""
    _positive("checkpoint bytes", size_bytes)
    _positive("MTBF", mtbf_s)
    if not 0.0 < overhead < 1.0:
        raise InputError(f"checkpoint overhead: must be in (0, 1), got {overhead}")
    return size_bytes / (overhead * mtbf_s / 1.5) / GB


def async_overhead(persist_s: float, stall_s: float, interval_s: float, mtbf_s: float) -> float:
    """Share of the run an asynchronous checkpoint costs: stall / tau + (tau / 2 + P) / M."""
    _positive("interval", interval_s)
    _positive("MTBF", mtbf_s)
    return stall_s / interval_s + (interval_s / 2.0 + persist_s) / mtbf_s


def sync_overhead(write_s: float, mtbf_s: float) -> float:
    """Share of the run a synchronous checkpoint costs at Young's interval: sqrt(2 delta / M)."""
    _non_negative("write time", write_s)
    _positive("MTBF", mtbf_s)
    return math.sqrt(2.0 * write_s / mtbf_s)


def sync_write_need_gbps(size_bytes: float, mtbf_s: float, overhead: float) -> float:
    """The write rate that keeps synchronous checkpointing at ``overhead`` of the run at
    Young's interval: overhead ~ delta/tau + tau/2M = sqrt(2 delta / M) at tau = sqrt(2 delta M),
    so delta = overhead^2 M / 2, GB/s = size / delta."""
    _positive("checkpoint bytes", size_bytes)
    _positive("MTBF", mtbf_s)
    if not 0.0 < overhead < 1.0:
        raise InputError(f"checkpoint overhead: must be in (0, 1), got {overhead}")
    delta = overhead * overhead * mtbf_s / 2.0
    return size_bytes / delta / GB


def model_load_s(weights_bytes: float, replicas: int, read_gbps: float) -> float:
    """Seconds to load ``replicas`` replicas' weights at once from a tier reading ``read_gbps``."""
    _non_negative("weights", weights_bytes)
    _non_negative("replicas", replicas)
    _positive("read bandwidth", read_gbps)
    return weights_bytes * replicas / (read_gbps * GB)
