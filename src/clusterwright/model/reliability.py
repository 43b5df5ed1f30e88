"""Reliability and checkpoints: interruption rates at any scale, checkpoint size and I/O time,
optimal checkpoint intervals, restart cost, hot spares, ETTR and goodput.

Failures are a Poisson process whose rate is the sum of the catalog's failure modes, each
``rate x units`` for the unit it scales with (GPU, host, fabric switch, fabric link, job).
Times are seconds unless a name says hours; sizes are bytes; bandwidths in GB/s (10^9 B/s)
where the name says ``gbps``. All functions are pure.

Beyond the i.i.d. Poisson model, the failure model of a real fleet (the Monte Carlo in
``sim/reliability`` draws from these): restart time that grows with the job (``restart_s``),
lemon nodes (a heavy tail of per-node rates, ``lemon_rate_scale``), failures that take out a
rack, a power domain or a leaf switch's hosts at once (``node_losses``) and fail-slow stragglers
that stretch the step (``fail_slow_stretch``).

Sources: Young, "A first order approximation to the optimum checkpoint interval", CACM 17(9),
1974; Daly, "A higher order estimate of the optimum checkpoint interval for restart dumps",
FGCS 22(3), 2006; Rajbhandari et al., "ZeRO", SC20 (bytes of optimizer state); Kokolis et al.,
HPCA 2025 (ETTR); Google "ML Productivity Goodput" (arXiv 2502.06982); the constants of the
fleet model cite theirs in ``catalog/data/reliability.yaml``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from clusterwright.catalog.schema import FailureMode, FailureUnit
from clusterwright.errors import InputError
from clusterwright.model.checks import non_negative as _non_negative
from clusterwright.model.checks import positive as _positive
from clusterwright.model.memory import optimizer_bytes_per_param
from clusterwright.model.precision import Precision, bytes_per
from clusterwright.spec.parallel import Optimizer

HOUR = 3600.0
DAY = 86400.0
GB = 1e9




# --------------------------------------------------------------------------- fleet size


@dataclass(frozen=True)
class FleetUnits:
    """How many of each failure unit a job runs on."""

    gpus: float
    hosts: float
    switches: float = 0.0
    links: float = 0.0
    jobs: float = 1.0

    def count(self, unit: FailureUnit) -> float:
        return {
            "gpu": self.gpus,
            "host": self.hosts,
            "switch": self.switches,
            "link": self.links,
            "job": self.jobs,
        }[unit]


@dataclass(frozen=True)
class FabricEstimate:
    tiers: int
    switches: int
    links: int


def fat_tree_estimate(endpoints: int, radix: int = 64) -> FabricEstimate:
    """Switches and links of a non-blocking (1:1) fat tree of ``endpoints`` NIC ports.

    One tier up to ``radix`` endpoints, two up to radix^2/2 (2N/k leaves + N/k spines), three
    beyond (5N/k switches, Al-Fares et al., SIGCOMM 2008: k^3/4 hosts on 5k^2/4 switches). Each
    tier carries one link per endpoint at 1:1, so links = tiers x N. Rail-optimized fabrics
    (one rail per NIC index) have the same counts; larger fabrics than k^3/4 are counted as
    three tiers.
    """
    if endpoints < 0 or radix < 2:
        raise InputError(f"fat_tree_estimate: endpoints={endpoints}, radix={radix}")
    n, k = endpoints, radix
    if n == 0:
        return FabricEstimate(0, 0, 0)
    if n <= k:
        return FabricEstimate(1, 1, n)
    if 2 * n <= k * k:
        return FabricEstimate(2, math.ceil(2 * n / k) + math.ceil(n / k), 2 * n)
    return FabricEstimate(3, math.ceil(5 * n / k), 3 * n)


def fleet_units(
    gpus: int,
    gpus_per_host: int,
    radix: int = 64,
    switches: float | None = None,
    links: float | None = None,
) -> FleetUnits:
    """Units of a job on ``gpus`` GPUs: hosts = ceil(gpus / gpus_per_host); the backend
    fabric from ``fat_tree_estimate`` (one NIC per GPU) unless ``switches``/``links`` are given.
    A job inside one host uses no fabric."""
    _positive("gpus", gpus)
    _positive("gpus_per_host", gpus_per_host)
    hosts = math.ceil(gpus / gpus_per_host)
    fab = fat_tree_estimate(gpus if hosts > 1 else 0, radix)
    return FleetUnits(
        gpus=float(gpus),
        hosts=float(hosts),
        switches=float(fab.switches if switches is None else switches),
        links=float(fab.links if links is None else links),
    )


# --------------------------------------------------------------------------- rates


def modes_for_gpu(modes: Iterable[FailureMode], gpu_id: str | None) -> list[FailureMode]:
    """The entries that apply to ``gpu_id``: the set that names it in ``gpus`` if there is
    one, else the generic entries (empty ``gpus``)."""
    modes = list(modes)
    specific = [m for m in modes if gpu_id is not None and gpu_id in m.gpus]
    return specific if specific else [m for m in modes if not m.gpus]


def rates_per_hour(
    modes: Iterable[FailureMode], units: FleetUnits, include_planned: bool = False
) -> dict[str, float]:
    """Interruptions per hour of the job, by failure-mode id: rate x units."""
    return {
        m.id: m.rate_per_hour * units.count(m.unit)
        for m in modes
        if include_planned or not m.planned
    }


def expected_interruptions(
    modes: Iterable[FailureMode], units: FleetUnits, hours: float, include_planned: bool = False
) -> dict[str, float]:
    """Expected interruptions by failure-mode id over ``hours`` of wall time."""
    _non_negative("hours", hours)
    return {k: r * hours for k, r in rates_per_hour(modes, units, include_planned).items()}


def by_category(modes: Iterable[FailureMode], values: Mapping[str, float]) -> dict[str, float]:
    """Sum per-mode ``values`` (keyed by id) into the modes' categories."""
    out: dict[str, float] = {}
    for m in modes:
        if m.id in values:
            out[m.category] = out.get(m.category, 0.0) + values[m.id]
    return out


def job_mtbf_hours(
    modes: Iterable[FailureMode], units: FleetUnits, include_planned: bool = False
) -> float:
    """Mean time between interruptions of the whole job, hours (inf if nothing can fail)."""
    total = sum(rates_per_hour(modes, units, include_planned).values())
    return math.inf if total == 0 else 1.0 / total


def node_attached_share(modes: Iterable[FailureMode], units: FleetUnits) -> float:
    """Share of the unplanned interruption rate that lives on nodes (GPU- and host-scaled
    causes): the part a lemon node multiplies. Links, switches and the job are not nodes."""
    modes = [m for m in modes if not m.planned]
    rates = rates_per_hour(modes, units)
    total = sum(rates.values())
    if total == 0:
        return 0.0
    return sum(rates[m.id] for m in modes if m.unit in ("gpu", "host")) / total


def category_share(modes: Iterable[FailureMode], units: FleetUnits, category: str) -> float:
    """Share of the unplanned interruption rate in one category (``network``, ``gpu``, ...)."""
    modes = [m for m in modes if not m.planned]
    rates = rates_per_hour(modes, units)
    total = sum(rates.values())
    if total == 0:
        return 0.0
    return sum(rates[m.id] for m in modes if m.category == category) / total


def fleets(modes: Iterable[FailureMode]) -> list[str]:
    """The fleet studies a set of failure modes comes from, in catalog order."""
    out: list[str] = []
    for m in modes:
        if m.fleet and m.fleet not in out:
            out.append(m.fleet)
    return out


def repair_fraction(modes: Iterable[FailureMode], units: FleetUnits) -> float:
    """Share of unplanned interruptions that take a node out for repair (needs a spare)."""
    modes = [m for m in modes if not m.planned]
    rates = rates_per_hour(modes, units)
    total = sum(rates.values())
    if total == 0:
        return 0.0
    return sum(rates[m.id] for m in modes if m.needs_repair) / total


# --------------------------------------------------------------------------- fleet model


def restart_s(gpus: float, overhead_s: float, init_s_at_4k: float, restore_s: float = 0.0
              ) -> float:
    """Wall time of one restart of a job on ``gpus`` GPUs, lost work excluded, s:

    (overhead - init at 4,096 GPUs) + init at 4,096 x log2(gpus) / 12 + restore.

    The overhead (detection, teardown, rescheduling, process and NCCL init) is the published
    production restart; its communicator-init part grows with log2 of the ranks (NCCL issue
    #1156: 2.5 min at thousands of GPUs); the checkpoint restore over the storage tier is added
    on top (catalog reliability.yaml ``reliability_nccl_init_s_at_4k_gpus``)."""
    _positive("gpus", gpus)
    _non_negative("restart overhead", overhead_s)
    _non_negative("init time", init_s_at_4k)
    _non_negative("restore time", restore_s)
    if init_s_at_4k > overhead_s:
        raise InputError(f"init time: {init_s_at_4k:g} s is more than the whole restart "
                         f"overhead {overhead_s:g} s")
    return overhead_s - init_s_at_4k + init_s_at_4k * math.log2(max(gpus, 2.0)) / 12.0 + restore_s


def lemon_rate_scale(lemons: ArrayLike, nodes: int, fraction: float, multiplier: float
                     ) -> np.ndarray:
    """A job's node failure rate over the fleet mean when it holds ``lemons`` of its ``nodes``:
    (n - L + k L) / (n (1 - p + k p)). The fleet's published rate is the mean over its lemons
    (a share p, k times the rest) and normal nodes; a job drawing L ~ Binomial(n, p) lemons
    sees this factor (mean 1). Vectorised over ``lemons``."""
    if nodes < 1:
        raise InputError(f"nodes: must be at least 1, got {nodes}")
    if not 0.0 <= fraction < 1.0:
        raise InputError(f"lemon fraction: must be in [0, 1), got {fraction}")
    if not multiplier >= 1.0 or math.isinf(multiplier):
        raise InputError(f"lemon multiplier: must be at least 1, got {multiplier}")
    lem = np.asarray(lemons, dtype=float)
    return (nodes - lem + multiplier * lem) / (nodes * (1.0 - fraction + multiplier * fraction))


def fail_slow_stretch(per_node_hour: float, nodes: float, mean_hours: float,
                      slowdown: float) -> float:
    """Expected stretch of a synchronous job's compute time by fail-slow episodes: episodes
    arrive at ``per_node_hour`` x nodes, last ``mean_hours`` on average, and while at least one
    is active the whole step runs ``slowdown`` times slower (the step waits for the slowest
    rank). Busy fraction of an M/G/inf queue: 1 - exp(-lambda D); stretch 1 + (s - 1) that."""
    _non_negative("fail-slow rate", per_node_hour)
    _non_negative("nodes", nodes)
    _non_negative("fail-slow duration", mean_hours)
    if not slowdown >= 1.0 or math.isinf(slowdown):
        raise InputError(f"fail-slow slowdown: must be at least 1, got {slowdown}")
    busy = -math.expm1(-per_node_hour * nodes * mean_hours)
    return 1.0 + (slowdown - 1.0) * busy


@dataclass(frozen=True)
class NodeLoss:
    """What one failure takes out of the job: ``nodes`` nodes for ``repair_s`` seconds (a
    share ``reset_share`` of them back after ``reset_s``, a reset instead of a repair), with
    ``probability`` per failure. The rest of the failures need no node (a restart clears
    them)."""

    kind: str  # node, rack, power-domain, leaf-switch
    probability: float
    nodes: int
    repair_s: float
    reset_share: float = 0.0
    reset_s: float = 0.0

    @property
    def mean_repair_s(self) -> float:
        return self.reset_share * self.reset_s + (1.0 - self.reset_share) * self.repair_s


def node_losses(repair_fraction: float, network_share: float, *, job_nodes: int,
                rack_nodes: int, row_nodes: int, leaf_nodes: int, rack_share: float,
                pdu_share: float, leaf_rate_per_hour: float, failures_per_hour: float,
                repair_s: float, reset_share: float, reset_s: float, rack_repair_s: float,
                pdu_repair_s: float, leaf_repair_s: float) -> tuple[NodeLoss, ...]:
    """The node losses of a job on a designed layout, as probabilities per failure.

    Of the failures that need a node repaired (``repair_fraction``), a share ``rack_share``
    takes the whole rack and ``pdu_share`` a power domain (a row of racks: Dean, LADIS 2009),
    the rest one node (a share of those cleared by a reset). A leaf switch's failures
    (``leaf_rate_per_hour`` over the job's leaves) are carved out of the network interruptions
    (capped at them) and take the hosts of one rail leaf (a scalable unit). Domains are capped
    at the job's nodes."""
    for name, v in (("repair fraction", repair_fraction), ("network share", network_share),
                    ("rack share", rack_share), ("power-domain share", pdu_share),
                    ("reset share", reset_share)):
        if not 0.0 <= v <= 1.0:
            raise InputError(f"{name}: must be in [0, 1], got {v}")
    if rack_share + pdu_share > 1.0:
        raise InputError("rack and power-domain shares add up to more than 1")
    out = []
    single = repair_fraction * (1.0 - rack_share - pdu_share)
    if single > 0:
        out.append(NodeLoss("node", single, 1, repair_s, reset_share, reset_s))
    for kind, share, nodes, rep in (("rack", rack_share, rack_nodes, rack_repair_s),
                                    ("power-domain", pdu_share, row_nodes, pdu_repair_s)):
        p = repair_fraction * share
        if p > 0 and nodes >= 1:
            out.append(NodeLoss(kind, p, min(nodes, job_nodes), rep))
    if failures_per_hour > 0 and network_share > 0 and leaf_rate_per_hour > 0 and leaf_nodes:
        p = min(network_share, leaf_rate_per_hour / failures_per_hour)
        out.append(NodeLoss("leaf-switch", p, min(leaf_nodes, job_nodes), leaf_repair_s))
    return tuple(out)


# --------------------------------------------------------------------------- checkpoint size


def checkpoint_bytes_per_param(
    weights: Precision | str = "bf16", optimizer: Optimizer = "adam", fp32_master: bool = True
) -> float:
    """Bytes per parameter of a restartable checkpoint: weights + optimizer state.

    Mixed-precision Adam: 2 (bf16 weights) + 4 (fp32 master) + 8 (two fp32 moments) = 14;
    the gradients (2 more in memory, ZeRO's 16 B/param) are not saved (ZeRO, SC20, section
    3.1, K = 12). ``fp32_master=False`` is training that updates the 16-bit weights in place
    and keeps only the moments in fp32 (fairseq/metaseq ``--memory-efficient-fp16``; OPT-175B:
    "Adam state in FP32 ... while the model weights remained in FP16", Zhang et al., arXiv
    2205.01068, section 2.3): 2 + 8 = 10. Observed: BLOOM-176B 2.3 TB = 13.1 B/param;
    OPT-175B 1.6 TB = 9.1 B/param (operations.md 1.4).
    """
    master = 0.0 if fp32_master or Precision(weights) == Precision.fp32 else 4.0
    return bytes_per(weights) + optimizer_bytes_per_param(optimizer, weights) - master


def checkpoint_bytes(
    params: float, weights: Precision | str = "bf16", optimizer: Optimizer = "adam",
    fp32_master: bool = True,
) -> float:
    """Size of a full checkpoint, bytes."""
    _positive("params", params)
    return params * checkpoint_bytes_per_param(weights, optimizer, fp32_master)


def shard_bytes(total_bytes: float, shards: int) -> float:
    """Bytes each writer holds in a sharded (distributed) checkpoint of ``shards`` pieces."""
    _positive("shards", shards)
    return total_bytes / shards


def transfer_s(
    total_bytes: float,
    streams: int,
    per_gpu_gbps: float,
    aggregate_gbps: float | None = None,
) -> float:
    """Time to move ``total_bytes`` to or from shared storage, s.

    ``streams`` GPUs read or write in parallel (all GPUs for a sharded checkpoint; one
    model-parallel group when only one data-parallel replica writes), each at
    ``per_gpu_gbps``; the storage system caps the sum at ``aggregate_gbps`` (GB/s).
    """
    _non_negative("checkpoint bytes", total_bytes)
    _positive("streams", streams)
    _positive("per-GPU storage bandwidth", per_gpu_gbps)
    bw = streams * per_gpu_gbps
    if aggregate_gbps is not None:
        _positive("aggregate storage bandwidth", aggregate_gbps)
        bw = min(bw, aggregate_gbps)
    return total_bytes / (bw * GB)


# --------------------------------------------------------------------------- intervals


def young_interval_s(checkpoint_s: float, mtbf_s: float) -> float:
    """Young (CACM 1974): tau = sqrt(2 delta M), compute time between checkpoints, s."""
    _positive("checkpoint time", checkpoint_s)
    _positive("MTBF", mtbf_s)
    return math.sqrt(2.0 * checkpoint_s * mtbf_s)


def daly_interval_s(checkpoint_s: float, mtbf_s: float) -> float:
    """Daly (FGCS 2006) higher-order optimum, compute time between checkpoints, s:

    tau = sqrt(2 delta M) [1 + 1/3 sqrt(delta / 2M) + 1/9 (delta / 2M)] - delta  if delta < 2M,
    tau = M                                                                   if delta >= 2M.
    """
    _positive("checkpoint time", checkpoint_s)
    _positive("MTBF", mtbf_s)
    d, m = checkpoint_s, mtbf_s
    if d >= 2.0 * m:
        return m
    x = d / (2.0 * m)
    return math.sqrt(2.0 * d * m) * (1.0 + math.sqrt(x) / 3.0 + x / 9.0) - d


# --------------------------------------------------------------------------- restart, ETTR


def restart_cost_s(
    detect_s: float, reschedule_s: float, restore_s: float, lost_work_s: float = 0.0
) -> float:
    """Wall time one interruption costs: detection + rescheduling (and process init) +
    checkpoint restore + recomputation of the work since the last checkpoint, s."""
    for name, v in (
        ("detect_s", detect_s),
        ("reschedule_s", reschedule_s),
        ("restore_s", restore_s),
        ("lost_work_s", lost_work_s),
    ):
        _non_negative(name, v)
    return detect_s + reschedule_s + restore_s + lost_work_s


def expected_lost_work_s(segment_s: float, mtbf_s: float) -> float:
    """Mean time into a segment of length L at which a failure strikes, given it strikes:
    M - L / (e^(L/M) - 1) (truncated exponential), about L/2 when L << M, s."""
    _positive("segment", segment_s)
    _positive("MTBF", mtbf_s)
    x = segment_s / mtbf_s
    if x >= 700.0:
        return mtbf_s  # the failure comes at M on average, long before the segment ends
    return mtbf_s - segment_s / math.expm1(x)


def ettr_first_order(interval_s: float, checkpoint_s: float, mtbf_s: float, restart_s: float
                     ) -> float:
    """First-order ETTR = 1 - delta/tau - (tau/2 + R)/M, floored at 0 (operations.md 1.4)."""
    _positive("interval", interval_s)
    return max(0.0, 1.0 - checkpoint_s / interval_s - (interval_s / 2.0 + restart_s) / mtbf_s)


def _exp(x: float) -> float:
    # Segments or restarts far longer than the MTBF never finish: infinite time, ETTR 0.
    return math.exp(x) if x < 700.0 else math.inf


def _recovery_s(mtbf_s: float, restart_s: float, wait_s: float) -> float:
    """Mean time from a failure until the job computes again, when the restart R can itself
    be hit by failures (each starting over) and ``wait_s`` (mean, per failure) is spent
    waiting for a node first, failure-free: E = w e^(R/M) + M (e^(R/M) - 1)."""
    e = _exp(restart_s / mtbf_s)
    if math.isinf(e):
        return math.inf  # a restart that never outlives the next failure (0 x inf otherwise)
    return wait_s * e + mtbf_s * (e - 1.0)


def expected_segment_s(
    segment_s: float, mtbf_s: float, restart_s: float, wait_s: float = 0.0
) -> float:
    """Expected wall time to complete ``segment_s`` of failure-free time (work + checkpoint)
    under Poisson failures: (e^(L/M) - 1)(M + recovery). With wait 0 this is Daly's
    M e^(R/M) (e^((tau+delta)/M) - 1) (FGCS 2006, eq. for exponential failures)."""
    x = segment_s / mtbf_s
    grow = math.expm1(x) if x < 700.0 else math.inf
    return grow * (mtbf_s + _recovery_s(mtbf_s, restart_s, wait_s))


def expected_wall_time_s(
    work_s: float,
    interval_s: float,
    checkpoint_s: float,
    mtbf_s: float,
    restart_s: float,
    wait_s: float = 0.0,
) -> float:
    """Expected wall time of ``work_s`` of failure-free compute checkpointed every
    ``interval_s`` (the last, shorter segment checkpoints too), s."""
    _positive("work", work_s)
    _positive("interval", interval_s)
    _non_negative("checkpoint time", checkpoint_s)
    _positive("MTBF", mtbf_s)
    _non_negative("restart time", restart_s)
    _non_negative("wait", wait_s)
    full = math.floor(work_s / interval_s)
    rest = work_s - full * interval_s
    t = full * expected_segment_s(interval_s + checkpoint_s, mtbf_s, restart_s, wait_s)
    if rest > 1e-9 * interval_s:
        t += expected_segment_s(rest + checkpoint_s, mtbf_s, restart_s, wait_s)
    return t


def ettr(
    interval_s: float,
    checkpoint_s: float,
    mtbf_s: float,
    restart_s: float,
    wait_s: float = 0.0,
) -> float:
    """Effective training time ratio of a long run (productive time / wall time) under
    Poisson failures: tau / E[segment], the exact form of Daly's model (Kokolis et al.'s
    ETTR: non-productive = checkpoint writes, restarts, lost work)."""
    _positive("interval", interval_s)
    _positive("MTBF", mtbf_s)
    return interval_s / expected_segment_s(interval_s + checkpoint_s, mtbf_s, restart_s, wait_s)


def planned_ettr_factor(planned_per_hour: float, restart_s: float) -> float:
    """Share of wall time left after planned stops, each costing one restart and no lost work
    (the job checkpoints before a planned stop): 1 - rate x R."""
    _non_negative("planned rate", planned_per_hour)
    return max(0.0, 1.0 - planned_per_hour * restart_s / HOUR)


def goodput(ettr_value: float, scheduling: float = 1.0, program: float = 1.0) -> float:
    """ML Productivity Goodput = scheduling x runtime (ETTR) x program goodput (Google,
    arXiv 2502.06982: multiplicative); pass MFU as ``program`` for useful-FLOP goodput."""
    for name, v in (("ettr", ettr_value), ("scheduling", scheduling), ("program", program)):
        if not 0.0 <= v <= 1.0:
            raise InputError(f"{name}: must be in [0, 1], got {v}")
    return ettr_value * scheduling * program


# --------------------------------------------------------------------------- hot spares


def _poisson_cdf(k: int, mean: float) -> float:
    if k < 0:
        return 0.0
    if mean == 0:
        return 1.0
    log_terms = [-mean + i * math.log(mean) - math.lgamma(i + 1) for i in range(k + 1)]
    top = max(log_terms)
    return min(1.0, math.exp(top) * sum(math.exp(t - top) for t in log_terms))


def spare_coverage_probability(failures_per_hour: float, repair_hours: float, spares: int) -> float:
    """Probability that ``spares`` hot spares cover every node failure within one repair
    time: P(Poisson(lambda x T_repair) <= S)."""
    _non_negative("failure rate", failures_per_hour)
    _non_negative("repair hours", repair_hours)
    if spares < 0:
        raise InputError(f"spares: must be zero or more, got {spares}")
    return _poisson_cdf(spares, failures_per_hour * repair_hours)


def spare_shortfall_probability(
    failures_per_hour: float, repair_hours: float, spares: int
) -> float:
    """Probability that a node failure finds no spare: with nodes in repair ~ Poisson(lambda
    T) (M/G/inf, Palm's theorem) and Poisson arrivals seeing time averages, P(N >= S)."""
    if spares == 0:
        return 1.0
    return 1.0 - spare_coverage_probability(failures_per_hour, repair_hours, spares - 1)


def expected_spare_wait_s(failures_per_hour: float, repair_hours: float, spares: int) -> float:
    """Mean wait for a node per repair-needing failure, s: P(no spare) x T/(S+1), the first
    of S repairs in progress to finish (uniform residuals). Exact for S = 0 (wait = T)."""
    p = spare_shortfall_probability(failures_per_hour, repair_hours, spares)
    return p * repair_hours * HOUR / (spares + 1)


# --------------------------------------------------------------------------- summary


@dataclass(frozen=True)
class CheckpointPlan:
    """Intervals and efficiency for one (delta, M, R)."""

    checkpoint_s: float
    mtbf_s: float
    restart_s: float
    wait_s: float
    young_interval_s: float
    daly_interval_s: float
    ettr: float  # at the Daly interval, exact exponential model
    ettr_first_order: float  # at the Young interval, 1 - d/t - (t/2 + R + wait)/M
    ettr_young: float  # at the Young interval, exact exponential model


def checkpoint_plan(
    checkpoint_s: float, mtbf_s: float, restart_s: float, wait_s: float = 0.0
) -> CheckpointPlan:
    """Young and Daly intervals and the ETTR they give."""
    _non_negative("restart time", restart_s)
    young = young_interval_s(checkpoint_s, mtbf_s)
    daly = daly_interval_s(checkpoint_s, mtbf_s)
    return CheckpointPlan(
        checkpoint_s=checkpoint_s,
        mtbf_s=mtbf_s,
        restart_s=restart_s,
        wait_s=wait_s,
        young_interval_s=young,
        daly_interval_s=daly,
        ettr=ettr(daly, checkpoint_s, mtbf_s, restart_s, wait_s),
        # First order: a wait for a spare adds to the restart of every failure.
        ettr_first_order=ettr_first_order(young, checkpoint_s, mtbf_s, restart_s + wait_s),
        ettr_young=ettr(young, checkpoint_s, mtbf_s, restart_s, wait_s),
    )


def percentiles(values: ArrayLike, qs: Sequence[float] = (10, 50, 90)) -> dict[str, float]:
    """``{"p10": ..., "p50": ..., "p90": ..., "mean": ...}`` of a sample (for reports)."""
    arr = np.asarray(values, dtype=float)
    out = {f"p{q:g}": float(np.percentile(arr, q)) for q in qs}
    out["mean"] = float(arr.mean())
    return out
