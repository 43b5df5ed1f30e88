"""Bounds of the command-line flags, written once (docs/limits.md lists them).

Every numeric flag is finite and inside a documented range: far past any real deployment,
tight enough that no command overflows, allocates without bound or runs for minutes on a
typo. A flag that mirrors a scenario or fabric field takes that field's bound (``spec``), so
the CLI and a YAML file agree; the simulation sizes (requests, replicas, trials, jobs, days)
keep a command interactive on two cores, and the library checks the same numbers again
(``sim.*`` ``MAX_*``) for the faces that do not go through the CLI.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from clusterwright.cli.common import fail
from clusterwright.design.tco_plan import MIN_TOKENS_PER_S, MIN_UTILIZATION, MIN_YEARS
from clusterwright.sim.cluster_config import MAX_HORIZON_DAYS
from clusterwright.sim.cluster_jobs import MAX_JOBS
from clusterwright.sim.netsim import MAX_JOBS as MAX_NETSIM_JOBS
from clusterwright.sim.netsim_cc import MAX_FLUID_FLOWS
from clusterwright.sim.network import MAX_QPS_PER_CONNECTION
from clusterwright.sim.reliability import MAX_TRIALS
from clusterwright.sim.serving_config import MAX_REPLICAS
from clusterwright.sim.serving_trace import MAX_LENGTH_CV, MAX_REQUESTS
from clusterwright.spec.fabric import MAX_MTU, MAX_NODES, MAX_RACK_KW, MIN_MTU
from clusterwright.spec.scenario import (
    MAX_BATCH,
    MAX_DEADLINE_DAYS,
    MAX_GPUS,
    MAX_QPS,
    MAX_SEED,
    MAX_SEQ_LEN,
    MAX_SLO_S,
    MAX_TOKENS,
    MAX_USD_PER_KWH,
    MAX_YEARS,
)


@dataclass(frozen=True)
class Bound:
    """A closed range ``[low, high]``, or ``(low, high]`` with ``low_open``."""

    low: float
    high: float
    low_open: bool = False
    why: str = ""  # what the maximum stands for, said after the range

    def text(self) -> str:
        lo, hi = _num(self.low), _num(self.high)
        rng = (f"greater than {lo} and at most {hi}" if self.low_open
               else f"between {lo} and {hi}")
        return rng + (f" ({self.why})" if self.why else "")

    def holds(self, value: float) -> bool:
        if isinstance(value, float) and not math.isfinite(value):
            return False
        above = value > self.low if self.low_open else value >= self.low
        return above and value <= self.high


def _num(v: float) -> str:
    """``4,294,967,295``, ``1,000,000``, ``0.5``, ``1e+15``."""
    if isinstance(v, int):
        return f"{v:,}"
    return f"{int(v):,}" if v.is_integer() and abs(v) < 1e15 else f"{v:g}"


def nonempty(*checks: tuple[str, str | None]) -> None:
    """Exit 2 naming the first ``(flag, value)`` given as an empty or blank string: an empty
    id or spec would otherwise read as not given and silently take the default."""
    for flag, value in checks:
        if value is not None and not value.strip():
            fail(f"{flag}: empty; give a value or leave the flag out")


def within(*checks: tuple[str, float | None, Bound]) -> None:
    """Exit 2 naming the first ``(flag, value, bound)`` whose value (None: not given) is not
    finite and inside its bound."""
    for flag, value, bound in checks:
        if value is not None and not bound.holds(value):
            got = f"{value:,}" if isinstance(value, int) else f"{value:g}"
            fail(f"{flag}: must be {bound.text()}, got {got}")


# --- shared with scenario files (spec.scenario, spec.fabric) ------------------------------
SEED = Bound(0, MAX_SEED, why="a 32-bit seed, as in scenario files")
GPUS = Bound(1, MAX_GPUS, why="the planners' limit")
PARALLEL = Bound(1, MAX_GPUS, why="no more than the GPUs")
INTERLEAVE = Bound(1, 1024)
NODES = Bound(1, MAX_NODES, why="servers or racks, as in fabric requests")
SEQ_TOKENS = Bound(1, MAX_SEQ_LEN, why="tokens of one sequence")
SEQUENCES = Bound(1, MAX_BATCH, why="sequences")
TRAIN_TOKENS = Bound(0, MAX_TOKENS, low_open=True)
DEADLINE_DAYS = Bound(0, MAX_DEADLINE_DAYS, low_open=True, why="ten years")
# A request every 17 minutes at least: below, a simulated run spans years and a price per
# token is astronomical (--qps 1e-300 simulated 2e302 s).
QPS = Bound(1e-3, MAX_QPS, why="requests/s")
SLO_S = Bound(0, MAX_SLO_S, low_open=True, why="seconds")
PUE = Bound(1.0, 3.0, why="facility power over IT power, as in scenario files")
USD_PER_KWH = Bound(0, MAX_USD_PER_KWH)
RACK_KW = Bound(0, MAX_RACK_KW, low_open=True)
MTU = Bound(MIN_MTU, MAX_MTU, why="Ethernet frame bytes, standard to jumbo")
LOSSLESS_PRIORITIES = Bound(0, 8, why="802.1p priorities")

# --- the work of a simulation: keeps a command to seconds ---------------------------------
REQUESTS = Bound(1, MAX_REQUESTS, why="requests simulated")
# serve plan simulates each candidate layout a dozen times: 5,000 requests is ~20 s with
# --gpu choose on two cores
PLAN_REQUESTS = Bound(1, 5_000, why="requests per capacity simulation")
CONCURRENCY = Bound(1, MAX_REQUESTS, why="clients")
BENCHMARK_ROUNDS = Bound(1, 10_000, why="requests per client in one benchmark run")
RECV_INTERVAL = Bound(1, 10_000, why="decode iterations between polls, as the engine catalog")
# Far past any engine's budget (TensorRT-LLM's disaggregated recipes give 2,048-16,896)
ITERATION_TOKENS = Bound(1, 10_000_000, why="tokens one iteration carries")
CPU_OFFLOAD_GIB = Bound(0, 10_000, low_open=True,
                        why="GiB of weights a GPU keeps in CPU memory, past any superchip's")
KV_OFFLOAD_GIB = Bound(0, 100_000, low_open=True,
                       why="GiB of CPU memory a GPU gives its KV cache, past any server's")
PREFIX_GROUPS = Bound(1, MAX_REQUESTS, why="shared prefixes, one a request at most")
REPLICAS = Bound(1, MAX_REPLICAS, why="replicas simulated; serve plan sizes larger fleets")
LENGTH_CV = Bound(0, MAX_LENGTH_CV, low_open=True)
NETSIM_QPS = Bound(1, MAX_QPS_PER_CONNECTION, why="NCCL_IB_QPS_PER_CONNECTION's maximum")
NETSIM_JOBS = Bound(1, MAX_NETSIM_JOBS, why="each job is also simulated alone")
INCAST = Bound(1, MAX_FLUID_FLOWS, why="senders, each a fluid flow")
SIZE_BYTES = Bound(0, 1e12, low_open=True, why="bytes per rank, above any GPU's memory")
FAIL_AT_S = Bound(0, 86_400.0, why="seconds into the collective")
SCHEDULE_JOBS = Bound(0, MAX_JOBS, why="jobs simulated")
SCHEDULE_DAYS = Bound(0, MAX_HORIZON_DAYS, low_open=True, why="one year")
FAILURE_RATE = Bound(0, 1.0, why="failures per node-hour")
HOURS = Bound(0, 8_760.0, why="one year")
RESTART_MIN = Bound(0, 1_440.0, why="one day")
RELIABILITY_DAYS = Bound(0, 3_650.0, low_open=True, why="ten years")
TRIALS = Bound(1, MAX_TRIALS, why="Monte Carlo trials")
HOT_SPARES = Bound(0, 10_000, why="spare nodes")
RADIX = Bound(2, 1_024, why="switch ports")
FABRIC_COUNT = Bound(0, 1e8)  # --switches, --links overrides
SECONDS = Bound(0, 2_592_000.0, low_open=True, why="30 days")
SECONDS_OR_ZERO = Bound(0, 2_592_000.0, why="30 days")
MTBF_HOURS = Bound(0, 1e6, low_open=True)
STORAGE_GBPS = Bound(0, 1e6, low_open=True, why="GB/s")
YEARS = Bound(MIN_YEARS, MAX_YEARS, why="a depreciation life, as in scenario files")
UTILIZATION = Bound(MIN_UTILIZATION, 1.0, why="used over installed GPU-hours")
USD_PER_KW_MONTH = Bound(0, 100_000.0)
SERVER_PRICE_USD = Bound(0, 1e9, low_open=True)
STORAGE_USD = Bound(0, 1e11, why="USD of a storage tier")
STORAGE_KW = Bound(0, 1e6, why="kW, as TcoRequest.storage_kw")
GPU_HOURS = Bound(0, 1e12, low_open=True)
TOKENS_PER_S = Bound(MIN_TOKENS_PER_S, 1e9)
RECHECK = Bound(0, 10, why="leading layouts")
LAB_TIMEOUT_S = Bound(0, 3_600.0, low_open=True, why="seconds to wait for convergence")
RECHECK_BUDGET_S = Bound(0, 600.0, why="seconds")
PREFETCH = Bound(0, 1_024, why="layers")

# --- storage and energy (ops storage, ops carbon; as the scenario's storage: and energy:) ---
STORAGE_UNITS = Bound(1, 100_000, why="units of a storage system, as in scenario files")
CHECKPOINT_COPIES = Bound(1, 1_000, why="checkpoints kept")
DATASET_TB = Bound(0, 1e9, why="TB")
DATA_GBPS_PER_GPU = Bound(0, 1_000.0, why="GB/s per GPU")
RENEWABLE_SHARE = Bound(0, 1.0, why="a fraction")
PREFILL_SHARE = Bound(0, 1.0, why="a fraction of the serving time")
TENSOR_BUSY = Bound(0, 1.0, why="a fraction of the step time")
GRID_YEAR = Bound(2000, 2100)

# --- vector indexes (ops vector; bounds of model/vector_index.py, Milvus's documented ranges) ---
VECTORS = Bound(0, 1e13, low_open=True, why="ten trillion vectors")
VECTOR_DIM = Bound(1, 32_768, why="Milvus's largest float vector dimension")
HNSW_M = Bound(2, 2_048, why="Milvus's HNSW M range")
GRAPH_DEGREE = Bound(1, 512, why="Milvus's DiskANN max_degree range")
PQ_NBITS = Bound(1, 16, why="bits per PQ code")
NLIST = Bound(1, 65_536, why="Milvus's IVF nlist range")
INDEX_REPLICAS = Bound(1, 10_000, why="copies of an index")
NODE_MEMORY_GB = Bound(1, 1e6, why="GB of one server")
CORPUS_TOKENS = Bound(0, 1e15, low_open=True, why="tokens, as training")
EMBED_PARAMS = Bound(0, 1e13, low_open=True, why="parameters")

# --- multi-site training (train multisite) -------------------------------------------------
SITES = Bound(1, 64, why="sites joined by WAN links")
SITE_MW = Bound(0, 10_000.0, low_open=True, why="MW of IT power per site")
WAN_GBPS = Bound(1e-3, 1e6, why="Gb/s each way per site, 1 Mb/s to 1 Pb/s")
WAN_LATENCY_MS = Bound(0, 1_000.0, why="one-way milliseconds")
WAN_LOSS = Bound(0, 0.5, why="packet loss fraction")
USD_PER_GBPS_MONTH = Bound(0, 1e6, why="USD per Gb/s per month")
INNER_STEPS = Bound(1, 100_000, why="steps between outer synchronisations")
WAN_BITS = Bound(1, 32, why="bits per parameter on the WAN")
FRAGMENTS = Bound(1, 1_024, why="Streaming DiLoCo fragments")
OVERLAP_STEPS = Bound(0, 100_000, why="inner steps an exchange overlaps")
