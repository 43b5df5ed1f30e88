"""Jobs for the cluster scheduling twin: the trace CSV reader and the seeded generator.

Trace CSV columns (header row required; times in hours at this edge, seconds inside; the table
with defaults is in docs/operations.md, "Scheduling"):

- ``id`` (required, unique), ``kind`` (required): ``train`` (gang of whole nodes), ``finetune``
  (smaller gang), ``inference`` (a service whose replica count follows a day curve), ``mig``
  (a small job on one MIG instance);
- ``submit_h``, ``duration_h`` (required): submission time and work at full speed (for a
  service: its lifetime);
- ``gpus``: the gang's GPUs, or GPUs per inference replica, a multiple of the GPUs per node;
- ``priority`` (default inference 100, mig 50, train 10, finetune 0), ``checkpoint_h``
  (default 1), ``comm_fraction`` (exposed data-parallel share of a step; train 0.15,
  finetune 0.10);
- ``mig_profile`` (mig jobs), ``replicas`` (peak replicas) and ``night_fraction`` (demand at
  the daily minimum over the peak, default 0.25) for services.

Empty cells take the default. Unknown columns, a bad value or a job larger than the cluster are
errors naming the line.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from clusterwright.errors import InputError
from clusterwright.sim.engine import check_seed
from clusterwright.spec.yamlio import YamlError, read_text

HOUR = 3600.0
KINDS = ("train", "finetune", "inference", "mig")
DEFAULT_PRIORITY = {"inference": 100, "train": 10, "finetune": 0, "mig": 50}
DEFAULT_COMM_FRACTION = {"train": 0.15, "finetune": 0.10, "inference": 0.0, "mig": 0.0}
COLUMNS = (
    "id", "kind", "submit_h", "duration_h", "gpus", "priority", "checkpoint_h", "comm_fraction",
    "mig_profile", "replicas", "night_fraction",
)
REQUIRED = ("id", "kind", "submit_h", "duration_h")


# Jobs of one simulation, from a trace or the generator: a deep backlog is rescanned on every
# scheduling pass (20,000 jobs in a day on 16 nodes: about 6 s on two cores).
MAX_JOBS = 20_000
# A job trace file: 20,000 rows are about 2 MB.
MAX_TRACE_BYTES = 16 * 2**20


class TraceError(InputError):
    """A trace or job-mix error; the message names the line or parameter."""


@dataclass(slots=True)
class Job:
    """One job. Times and durations in seconds; ``nodes`` whole nodes per gang or replica."""

    id: str
    kind: str
    submit_s: float
    duration_s: float  # work at full speed, or a service's lifetime
    nodes: int = 0  # gang size (train/finetune) or nodes per replica (inference)
    priority: int = 0
    checkpoint_s: float = HOUR
    comm_fraction: float = 0.0
    mig_profile: str = ""
    replicas: int = 0  # inference: peak replicas
    night_fraction: float = 0.25
    line: int = 0  # trace line, for messages
    # Mutable state the simulator keeps on the job.
    done_s: float = 0.0  # work completed and checkpointed (s at full speed)
    first_start_s: float = -1.0
    end_s: float = -1.0
    preemptions: int = 0
    failures: int = 0
    extra: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class JobMix:
    """Parameters of the seeded generator. Rates are per day; sizes in nodes.

    Defaults sketch a shared research cluster: a few large training gangs, many fine-tuning
    gangs, inference services and many small MIG jobs ([estimate]; shape of the Helios and
    Acme traces in operations.md 2.3: most jobs small, most GPU-time in few large jobs).
    """

    jobs: int = 1000
    days: float = 7.0
    share: tuple[float, float, float, float] = (0.05, 0.35, 0.02, 0.58)  # train, ft, inf, mig
    train_nodes: tuple[int, int] = (16, 256)  # log-uniform range
    train_hours: tuple[float, float] = (12.0, 240.0)
    finetune_nodes: tuple[int, int] = (1, 16)
    finetune_hours: tuple[float, float] = (1.0, 24.0)
    inference_replicas: tuple[int, int] = (2, 32)
    inference_nodes_per_replica: int = 1
    mig_hours: tuple[float, float] = (0.25, 8.0)
    mig_profiles: tuple[str, ...] = ("1g.10gb", "1g.10gb", "2g.20gb", "3g.40gb")


def _loguniform(rng: np.random.Generator, lo: float, hi: float) -> float:
    return float(math.exp(rng.uniform(math.log(lo), math.log(hi))))


def generate(mix: JobMix, nodes: int, gpus_per_node: int, seed: int) -> list[Job]:
    """Seeded synthetic jobs: Poisson arrivals over ``mix.days``, kinds by ``mix.share``.

    Gang sizes are capped at the cluster's ``nodes``; inference services live for the whole
    horizon from their arrival.
    """
    if mix.jobs < 0:
        raise TraceError(f"jobs must be >= 0, got {mix.jobs}")
    if mix.jobs > MAX_JOBS:
        raise TraceError(f"jobs: {mix.jobs:,} jobs; at most {MAX_JOBS:,} in one simulation",
                         field="jobs")
    check_seed(seed)
    if not mix.days > 0:
        raise TraceError(f"days must be positive, got {mix.days:g}")
    if any(s < 0 for s in mix.share) or sum(mix.share) <= 0:
        raise TraceError(f"share must be non-negative with a positive sum, got {mix.share}")
    rng = np.random.default_rng(seed)
    p = np.asarray(mix.share, dtype=float) / sum(mix.share)
    horizon = mix.days * 24 * HOUR
    arrivals = np.sort(rng.uniform(0.0, horizon, mix.jobs))
    kinds = rng.choice(len(KINDS), size=mix.jobs, p=p)
    out: list[Job] = []
    for i, (t, k) in enumerate(zip(arrivals, kinds, strict=True)):
        kind = KINDS[int(k)]
        job = Job(id=f"j{i}", kind=kind, submit_s=float(t), duration_s=0.0,
                  priority=DEFAULT_PRIORITY[kind], comm_fraction=DEFAULT_COMM_FRACTION[kind])
        if kind == "train":
            job.nodes = min(nodes, round(_loguniform(rng, *mix.train_nodes)))
            job.duration_s = _loguniform(rng, *mix.train_hours) * HOUR
        elif kind == "finetune":
            job.nodes = min(nodes, round(_loguniform(rng, *mix.finetune_nodes)))
            job.duration_s = _loguniform(rng, *mix.finetune_hours) * HOUR
        elif kind == "inference":
            job.nodes = min(nodes, mix.inference_nodes_per_replica)
            job.replicas = max(1, min(nodes // job.nodes,
                                      round(_loguniform(rng, *mix.inference_replicas)) ))
            job.duration_s = horizon - float(t)
        else:
            job.mig_profile = str(mix.mig_profiles[int(rng.integers(len(mix.mig_profiles)))])
            job.duration_s = _loguniform(rng, *mix.mig_hours) * HOUR
        out.append(job)
    return out


def _number(row: dict[str, str], col: str, line: int, default: float | None = None,
            integer: bool = False, low: float = 0.0, strict_low: bool = False) -> float:
    raw = (row.get(col) or "").strip()
    if raw == "":
        if default is None:
            raise TraceError(f"line {line}: column {col!r} is empty but required")
        return default
    try:
        v = float(raw)
    except ValueError:
        raise TraceError(f"line {line}: {col} {raw!r} is not a number") from None
    if not math.isfinite(v) or v < low or (strict_low and v == low):
        bound = f"> {low:g}" if strict_low else f">= {low:g}"
        raise TraceError(f"line {line}: {col} must be {bound}, got {raw}")
    if integer and v != int(v):
        raise TraceError(f"line {line}: {col} must be a whole number, got {raw}")
    return v


def parse_trace(text: str, nodes: int, gpus_per_node: int, mig_profiles: Iterable[str],
                name: str = "trace") -> list[Job]:
    """Jobs from trace CSV text (columns in the module docstring). ``nodes`` and
    ``gpus_per_node`` describe the cluster, so a job larger than it is an error naming its
    line; ``mig_profiles`` are the profile names the cluster's GPU offers."""
    reader = csv.DictReader(io.StringIO(text))
    header = [h.strip() for h in (reader.fieldnames or [])]
    if not header:
        raise TraceError(f"{name}: empty file; the first line must name the columns")
    unknown = [h for h in header if h not in COLUMNS]
    if unknown:
        raise TraceError(
            f"{name} line 1: unknown column(s) {', '.join(repr(u) for u in unknown)} "
            f"(known: {', '.join(COLUMNS)})"
        )
    twice = sorted({h for h in header if header.count(h) > 1})
    if twice:
        raise TraceError(f"{name} line 1: column(s) {', '.join(repr(t) for t in twice)} given "
                         "twice", field="trace")
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise TraceError(f"{name} line 1: missing column(s) {', '.join(missing)}")
    reader.fieldnames = header
    profiles = set(mig_profiles)
    jobs: list[Job] = []
    seen: set[str] = set()
    for row in reader:
        line = reader.line_num
        if len(jobs) == MAX_JOBS:
            raise TraceError(f"{name} line {line}: more than {MAX_JOBS:,} jobs; at most "
                             f"{MAX_JOBS:,} in one simulation", field="trace")
        if None in row:
            raise TraceError(f"{name} line {line}: more cells than columns")
        where = f"{name} line {line}"
        jid = (row.get("id") or "").strip()
        if not jid:
            raise TraceError(f"{where}: empty id")
        if jid in seen:
            raise TraceError(f"{where}: duplicate id {jid!r}")
        seen.add(jid)
        kind = (row.get("kind") or "").strip()
        if kind not in KINDS:
            raise TraceError(f"{where}: kind {kind!r} is not one of {', '.join(KINDS)}")
        try:
            job = _row_job(row, jid, kind, line, nodes, gpus_per_node, profiles)
        except TraceError as exc:
            raise TraceError(f"{name} {exc}") from None
        jobs.append(job)
    jobs.sort(key=lambda j: (j.submit_s, j.line))
    return jobs


def _row_job(row: dict[str, str], jid: str, kind: str, line: int, nodes: int,
             gpus_per_node: int, profiles: set[str]) -> Job:
    job = Job(
        id=jid, kind=kind, line=line,
        submit_s=_number(row, "submit_h", line) * HOUR,
        duration_s=_number(row, "duration_h", line, low=0.0, strict_low=True) * HOUR,
        priority=int(_number(row, "priority", line, DEFAULT_PRIORITY[kind], integer=True,
                             low=-1e9)),
        checkpoint_s=_number(row, "checkpoint_h", line, 1.0, strict_low=True) * HOUR,
        comm_fraction=_number(row, "comm_fraction", line, DEFAULT_COMM_FRACTION[kind]),
        night_fraction=_number(row, "night_fraction", line, 0.25),
    )
    if job.comm_fraction > 1:
        raise TraceError(f"line {line}: comm_fraction must be in [0, 1], got {job.comm_fraction}")
    if job.night_fraction > 1:
        raise TraceError(f"line {line}: night_fraction must be in [0, 1], "
                         f"got {job.night_fraction}")
    if kind == "mig":
        prof = (row.get("mig_profile") or "").strip()
        if prof not in profiles:
            offered = ", ".join(sorted(profiles)) or "none: this GPU has no MIG"
            raise TraceError(f"line {line}: mig_profile {prof!r} is not offered ({offered})")
        job.mig_profile = prof
        return job
    gpus = int(_number(row, "gpus", line, integer=True, low=1))
    if gpus % gpus_per_node:
        raise TraceError(
            f"line {line}: gpus {gpus} is not a multiple of the {gpus_per_node} GPUs per node "
            f"(gang and inference jobs take whole nodes)"
        )
    job.nodes = gpus // gpus_per_node
    if kind == "inference":
        job.replicas = int(_number(row, "replicas", line, 1, integer=True, low=1))
    need = job.nodes * max(1, job.replicas)
    if need > nodes:
        what = f"{job.replicas} replicas x {gpus} GPUs" if kind == "inference" else f"{gpus} GPUs"
        raise TraceError(
            f"line {line}: job {jid!r} needs {what} = {need} nodes, "
            f"but the cluster has {nodes} nodes ({nodes * gpus_per_node} GPUs)"
        )
    return job


def read_trace(path: Path, nodes: int, gpus_per_node: int,
               mig_profiles: Iterable[str]) -> list[Job]:
    """``parse_trace`` on a file; a missing or unreadable file is a ``TraceError``."""
    try:
        # Bounded and regular files only: a device such as /dev/zero must not fill memory.
        text = read_text(path, MAX_TRACE_BYTES).removeprefix("\ufeff")  # Excel's BOM
    except YamlError as exc:
        raise TraceError(str(exc), field="trace") from None
    return parse_trace(text, nodes, gpus_per_node, mig_profiles, name=str(path))
