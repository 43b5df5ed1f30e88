"""Request streams for the serving simulator: arrival times, prompt and output lengths.

A :class:`Workload` says where requests come from; :func:`make_requests` draws its stream. Three
sources, all returning the same column arrays (:class:`Requests`):

* synthetic lengths (:class:`Lengths`: fixed, uniform, normal, lognormal), seeded;
* synthetic arrivals: Poisson at a rate, or gamma inter-arrival times with a coefficient of
  variation (``cv`` > 1 is burstier than Poisson; vLLM's ``--burstiness`` is 1/cv^2);
* a trace file, CSV (header row) or JSONL (one object a line), with ``timestamp_s``,
  ``input_len``, ``output_len`` and optionally ``prefix_id`` and ``prefix_len``. A malformed
  or empty trace raises :class:`ServingError` naming the file and line.
"""

from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from clusterwright.errors import InputError
from clusterwright.sim.engine import check_seed
from clusterwright.spec.yamlio import YamlError, read_text

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

TRACE_COLUMNS = ("timestamp_s", "input_len", "output_len")
OPTIONAL_COLUMNS = ("prefix_id", "prefix_len")
LENGTH_DISTS = ("fixed", "uniform", "normal", "lognormal")
ARRIVALS = ("poisson", "gamma", "closed", "trace")


class ServingError(InputError):
    """A serving scenario, workload or trace the simulator cannot run, with the fix."""


# Coefficient of variation (std / mean) of a length distribution: measured request lengths
# sit near 1 (ShareGPT, LMSYS-Chat); far above, a lognormal's tail overflows any context.
MAX_LENGTH_CV = 10.0
# Requests of one simulation: 100,000 take 1.5-6 s on two cores (more with many replicas).
MAX_REQUESTS = 100_000
MAX_TRACE_BYTES = 64 * 2**20  # a request trace file; 100,000 rows are about 4 MB
MAX_SAMPLED_TOKENS = 2**31 - 1  # the clip of a length without ``high``; any context is shorter


@dataclass(frozen=True)
class Lengths:
    """A token-length distribution, clipped to ``[low, high]`` (``high`` 0 = no upper bound).

    fixed: ``mean``; uniform: integers in ``[low, high]``; normal: ``mean``, ``std``;
    lognormal: ``mean`` and ``std`` of the lengths themselves (not of their logarithm).
    """

    dist: str = "fixed"
    mean: float = 128.0
    std: float = 0.0
    low: int = 1
    high: int = 0

    def validate(self, name: str) -> None:
        if self.dist not in LENGTH_DISTS:
            raise ServingError(
                f"{name}.dist: {self.dist!r} is not one of {', '.join(LENGTH_DISTS)}")
        if self.low < 1:
            raise ServingError(f"{name}.low: {self.low} must be >= 1 token")
        if self.high and self.high < self.low:
            raise ServingError(f"{name}.high: {self.high} is below low={self.low}")
        if self.dist == "uniform" and not self.high:
            raise ServingError(f"{name}: a uniform length needs high (the largest length)")
        if self.dist != "uniform" and not self.mean >= 1:
            raise ServingError(f"{name}.mean: {self.mean} must be >= 1 token")
        if self.std < 0:
            raise ServingError(f"{name}.std: {self.std} must be >= 0")
        if not (math.isfinite(self.mean) and math.isfinite(self.std)):
            raise ServingError(f"{name}: mean and std must be finite, got {self.mean:g} and "
                               f"{self.std:g}", field=f"{name}.std")
        if self.dist != "uniform" and self.std > MAX_LENGTH_CV * self.mean:
            raise ServingError(
                f"{name}.std: {self.std:g} is {self.std / self.mean:g} times the mean; at most "
                f"{MAX_LENGTH_CV:g} (a coefficient of variation far above measured traces)",
                field=f"{name}.std")

    def sample(self, n: int, rng: np.random.Generator) -> IntArray:
        """``n`` lengths (tokens) drawn from ``rng``."""
        if self.dist == "fixed":
            x = np.full(n, round(self.mean), dtype=np.float64)
        elif self.dist == "uniform":
            x = rng.integers(self.low, self.high + 1, size=n).astype(np.float64)
        elif self.dist == "normal":
            x = np.rint(rng.normal(self.mean, self.std, size=n))
        else:
            # Moments of a lognormal: E = exp(mu + s^2/2), Var = (exp(s^2) - 1) E^2.
            s2 = math.log1p((self.std / self.mean) ** 2)
            mu = math.log(self.mean) - s2 / 2
            x = np.rint(rng.lognormal(mu, math.sqrt(s2), size=n))
        # A finite ceiling even without ``high``: a float beyond int64 would wrap negative.
        return np.clip(x, self.low, self.high or MAX_SAMPLED_TOKENS).astype(np.int64)


@dataclass
class Requests:
    """Column arrays, one entry per request, in arrival order. ``prefix_id`` -1 = none;
    ``prefix_len`` is how many leading prompt tokens requests with the same id share (0 = the
    whole prompt: prompts with one id are prefixes of each other, as in a multi-turn chat)."""

    arrival_s: FloatArray
    input_len: IntArray
    output_len: IntArray
    prefix_id: IntArray
    prefix_len: IntArray
    source: str = "synthetic"

    def __len__(self) -> int:
        return len(self.input_len)


def poisson_arrivals(n: int, qps: float, rng: np.random.Generator) -> FloatArray:
    """Arrival times (s) of a Poisson process at ``qps`` requests/s, first one at 0."""
    gaps = rng.exponential(1.0 / qps, size=n)
    gaps[0] = 0.0
    return np.cumsum(gaps)


def gamma_arrivals(n: int, qps: float, cv: float, rng: np.random.Generator) -> FloatArray:
    """Arrival times (s) with gamma gaps of mean 1/qps and coefficient of variation ``cv``
    (shape 1/cv^2; cv = 1 is Poisson, cv > 1 bursty). vLLM bench's burstiness = 1/cv^2."""
    shape = 1.0 / cv**2
    gaps = rng.gamma(shape, 1.0 / (qps * shape), size=n)
    gaps[0] = 0.0
    return np.cumsum(gaps)


def _field(row: dict[str, Any], key: str, where: str, kind: type, minimum: float) -> Any:
    if key not in row or row[key] is None or row[key] == "":
        raise ServingError(f"{where}: missing {key!r} (columns: {', '.join(TRACE_COLUMNS)})")
    raw = row[key]
    try:
        if kind is int:
            if isinstance(raw, float) and not raw.is_integer():
                raise ValueError
            val: Any = int(raw) if not isinstance(raw, str) else int(raw.strip())
        else:
            val = float(raw)
    except (TypeError, ValueError):
        what = "an integer" if kind is int else "a number"
        raise ServingError(f"{where}: {key}={raw!r} is not {what}") from None
    if isinstance(raw, bool) or not (val >= minimum and math.isfinite(val)):
        raise ServingError(f"{where}: {key}={raw!r} must be a finite number >= {minimum}")
    return val


def load_trace(path: str | Path) -> Requests:
    """Read a CSV or JSONL request trace (chosen by suffix: .jsonl/.json lines, else CSV).

    Rows are sorted by timestamp (stable), and times shifted so the first arrival is at 0.
    """
    p = Path(path)
    try:
        # Bounded and regular files only: a device such as /dev/zero must not fill memory.
        text = read_text(p, MAX_TRACE_BYTES)
    except YamlError as exc:
        raise ServingError(f"trace {exc}", field="trace") from None
    rows: list[tuple[int, dict[str, Any]]] = []
    if p.suffix.lower() in (".jsonl", ".json", ".ndjson"):
        for lineno, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ServingError(f"trace {p} line {lineno}: not valid JSON ({exc.msg})") from None
            if not isinstance(obj, dict):
                raise ServingError(f"trace {p} line {lineno}: expected a JSON object, got {obj!r}")
            rows.append((lineno, obj))
    else:
        reader = csv.DictReader(text.splitlines())
        header = reader.fieldnames or []
        missing = [c for c in TRACE_COLUMNS if c not in header]
        if header and missing:
            raise ServingError(
                f"trace {p} line 1: header lacks {', '.join(missing)} (got {', '.join(header)})")
        for rec in reader:
            if not any((v or "").strip() for v in rec.values() if isinstance(v, str)):
                continue
            if None in rec:
                raise ServingError(f"trace {p} line {reader.line_num}: more fields than the header")
            rows.append((reader.line_num, rec))
    if not rows:
        raise ServingError(f"trace {p}: no requests (need columns {', '.join(TRACE_COLUMNS)})")
    n = len(rows)
    if n > MAX_REQUESTS:
        raise ServingError(f"trace {p}: {n:,} requests; at most {MAX_REQUESTS:,} in one "
                           "simulation", field="trace")
    ts = np.empty(n)
    inp = np.empty(n, dtype=np.int64)
    out = np.empty(n, dtype=np.int64)
    pid = np.full(n, -1, dtype=np.int64)
    plen = np.zeros(n, dtype=np.int64)
    names: dict[str, int] = {}  # string prefix ids (hashes) -> ints, in order of appearance
    for i, (lineno, row) in enumerate(rows):
        where = f"trace {p} line {lineno}"
        ts[i] = _field(row, "timestamp_s", where, float, 0.0)
        inp[i] = _field(row, "input_len", where, int, 1)
        out[i] = _field(row, "output_len", where, int, 1)
        if row.get("prefix_id") not in (None, ""):
            raw = row["prefix_id"]
            # Ids may be strings (hashes); map them to ints stably.
            if _is_int(raw):
                pid[i] = _field(row, "prefix_id", where, int, 0)
            else:
                pid[i] = names.setdefault(str(raw), (1 << 48) + len(names))
        if row.get("prefix_len") not in (None, ""):
            plen[i] = _field(row, "prefix_len", where, int, 0)
    order = np.argsort(ts, kind="stable")
    ts = ts[order] - ts[order][0]
    return Requests(ts, inp[order], out[order], pid[order], plen[order], source=str(p))


def _is_int(raw: object) -> bool:
    if isinstance(raw, bool):
        return False
    if isinstance(raw, int):
        return True
    return isinstance(raw, str) and raw.strip().isdigit()



@dataclass(frozen=True)
class Workload:
    """Where requests come from. ``arrival``: poisson (``qps``), gamma (``qps``, ``cv``),
    closed (``concurrency`` clients, each sends its next request when the last finishes) or
    trace (``trace`` file, lengths from the file). With ``prefix_groups`` > 0, synthetic
    requests get one of that many shared prefixes of ``shared_prefix_len`` tokens, put in
    front of their sampled prompt."""

    num_requests: int = 1000
    arrival: str = "poisson"
    qps: float = 1.0
    cv: float = 1.0
    concurrency: int = 1
    input_len: Lengths = field(default_factory=lambda: Lengths("fixed", 128))
    output_len: Lengths = field(default_factory=lambda: Lengths("fixed", 128))
    trace: str | Path | None = None
    seed: int = 0
    prefix_groups: int = 0
    shared_prefix_len: int = 0


def make_requests(w: Workload) -> Requests:
    """The request stream of ``w`` (arrival times are 0 for a closed loop: clients set them)."""
    if w.arrival not in ARRIVALS:
        raise ServingError(f"workload.arrival: {w.arrival!r} is not one of {', '.join(ARRIVALS)}")
    if w.arrival == "trace":
        if w.trace is None:
            raise ServingError("workload.trace: arrival 'trace' needs a trace file")
        return load_trace(w.trace)
    n = w.num_requests
    if n < 1:
        raise ServingError(f"workload.num_requests: {n} must be >= 1")
    if n > MAX_REQUESTS:
        raise ServingError(f"workload.num_requests: {n:,} requests; at most {MAX_REQUESTS:,} "
                           "(about 5 s of simulation)", field="workload.num_requests")
    check_seed(w.seed, "workload.seed")
    w.input_len.validate("workload.input_len")
    w.output_len.validate("workload.output_len")
    # One generator per component, spawned from the scenario seed (STYLE.md, 5).
    r_arr, r_in, r_out, r_pre = (np.random.default_rng(s)
                                 for s in np.random.SeedSequence(w.seed).spawn(4))
    if w.arrival == "poisson":
        if not w.qps > 0:
            raise ServingError(f"workload.qps: {w.qps} must be > 0")
        arr = poisson_arrivals(n, w.qps, r_arr)
    elif w.arrival == "gamma":
        if not w.qps > 0 or not w.cv > 0:
            raise ServingError(f"workload: gamma arrivals need qps > 0 and cv > 0 "
                               f"(got qps={w.qps}, cv={w.cv})")
        arr = gamma_arrivals(n, w.qps, w.cv, r_arr)
    else:
        if w.concurrency < 1:
            raise ServingError(f"workload.concurrency: {w.concurrency} must be >= 1")
        arr = np.zeros(n)
    inp = w.input_len.sample(n, r_in)
    out = w.output_len.sample(n, r_out)
    pid = np.full(n, -1, dtype=np.int64)
    plen = np.zeros(n, dtype=np.int64)
    if w.prefix_groups > 0 and w.shared_prefix_len > 0:
        pid = r_pre.integers(0, w.prefix_groups, size=n).astype(np.int64)
        plen[:] = w.shared_prefix_len
        inp = inp + w.shared_prefix_len
    return Requests(arr, inp, out, pid, plen)
