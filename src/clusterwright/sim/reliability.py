"""Monte Carlo of a training run with failures, checkpoints, restarts and hot spares.

Each trial runs ``work_s`` of failure-free compute, writing a checkpoint after every
``interval_s`` of work (``checkpoint_s`` each, the last shorter segment too). Failures are a
Poisson process of mean ``mtbf_s`` in wall time while the job computes, checkpoints or
restarts; a failure loses the work since the last completed checkpoint and costs a restart
of ``restart_s`` (which a failure can interrupt too). A share ``repair_fraction`` of the
failures takes a node out for ``repair_s``: with ``spares`` hot spares the job takes a spare
(or waits for the first one to come back from repair); with ``spares=None`` a replacement is
always at hand. These are the semantics of ``model.reliability.expected_wall_time_s``, so the
mean agrees with the analytical model (exactly in expectation without spares or with none).

Vectorised over trials: every loop step advances each unfinished trial by one phase (a run
until the next failure or the end, or one restart attempt), so the loop runs about twice the
number of failures of the unluckiest trial, not once per checkpoint.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from clusterwright.errors import InputError
from clusterwright.model.reliability import DAY, expected_wall_time_s, percentiles
from clusterwright.sim.engine import check_seed

# Trials of one Monte Carlo: the loop is vectorised over them (100,000 trials of a few
# hundred failures each take about 2 s on two cores).
MAX_TRIALS = 100_000
# Trial-failures of one run (trials x expected failures per trial): each costs a few array
# operations; 10^8 is about 10 s on two cores.
MAX_TRIAL_FAILURES = 100_000_000
# Floats of the spare pool (trials x spares): 10^7 is 80 MB.
MAX_SPARE_SLOTS = 10_000_000


@dataclass(frozen=True)
class RunSpec:
    """One training run's failure and checkpoint parameters (seconds)."""

    work_s: float  # failure-free compute time to train
    interval_s: float  # compute between checkpoints
    checkpoint_s: float  # time to write one checkpoint (training stalls)
    restart_s: float  # detection + rescheduling + restore, per interruption
    mtbf_s: float  # job mean time between failures
    repair_fraction: float = 0.0  # share of failures that take a node out for repair
    repair_s: float = 0.0  # time a failed node is out
    spares: int | None = None  # hot spares; None = a replacement is always at hand

    def check(self) -> None:
        for name in ("work_s", "interval_s", "mtbf_s"):
            v = getattr(self, name)
            if not v > 0 or not np.isfinite(v):
                raise InputError(f"{name}: must be a positive number, got {v}")
        for name in ("checkpoint_s", "restart_s", "repair_s"):
            v = getattr(self, name)
            if not v >= 0 or not np.isfinite(v):
                raise InputError(f"{name}: must be zero or positive, got {v}")
        if not 0.0 <= self.repair_fraction <= 1.0:
            raise InputError(f"repair_fraction: must be in [0, 1], got {self.repair_fraction}")
        if self.spares is not None and self.spares < 0:
            raise InputError(f"spares: must be zero or more, got {self.spares}")


@dataclass(frozen=True)
class RunResult:
    """Per-trial outcomes of ``simulate_run``."""

    wall_s: np.ndarray  # time to train, s
    interruptions: np.ndarray  # failures per trial
    spare_wait_s: np.ndarray  # time spent waiting for a node, s
    work_s: float
    seed: int

    @property
    def trials(self) -> int:
        return int(self.wall_s.size)

    @property
    def ettr(self) -> np.ndarray:
        return self.work_s / self.wall_s

    def summary(self) -> dict[str, object]:
        """Distribution of time to train (days), interruptions and ETTR."""
        return {
            "trials": self.trials,
            "seed": self.seed,
            "time_to_train_days": percentiles(self.wall_s / DAY),
            "interruptions": percentiles(self.interruptions),
            "ettr": percentiles(self.ettr),
            "spare_wait_hours": percentiles(self.spare_wait_s / 3600.0),
        }


def simulate_run(
    spec: RunSpec, trials: int = 1000, seed: int = 0, max_steps: int = 1_000_000
) -> RunResult:
    """Run ``trials`` independent trials of ``spec`` from ``SeedSequence(seed)``."""
    spec.check()
    if trials < 1:
        raise InputError(f"trials: must be at least 1, got {trials}")
    if trials > MAX_TRIALS:
        raise InputError(f"trials: {trials:,} trials; at most {MAX_TRIALS:,}", field="trials")
    check_seed(seed)
    if spec.spares is not None and trials * spec.spares > MAX_SPARE_SLOTS:
        raise InputError(
            f"spares: {spec.spares:,} spares x {trials:,} trials is above {MAX_SPARE_SLOTS:,} "
            "tracked spare nodes; fewer trials or spares", field="spares")
    # Refuse runs that would take more loop steps than allowed before starting them: each
    # step handles one failure or restart of every trial.
    failures = expected_wall_time_s(
        spec.work_s, spec.interval_s, spec.checkpoint_s, spec.mtbf_s, spec.restart_s
    ) / spec.mtbf_s
    if not failures < max_steps / 4:
        raise InputError(
            f"the run does not finish: about {failures:.3g} failures expected per trial (limit "
            f"{max_steps // 4}); the checkpoint interval plus write "
            f"({spec.interval_s + spec.checkpoint_s:g} s) or the restart ({spec.restart_s:g} s) "
            f"is too long for an MTBF of {spec.mtbf_s:g} s"
        )
    if failures * trials > MAX_TRIAL_FAILURES:
        raise InputError(
            f"trials: about {failures:,.0f} failures per trial x {trials:,} trials is above "
            f"{MAX_TRIAL_FAILURES:,} simulated failures; fewer trials or a shorter run",
            field="trials")
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed)))
    tau, delta, seg = spec.interval_s, spec.checkpoint_s, spec.interval_s + spec.checkpoint_s
    t = np.zeros(trials)
    work = np.full(trials, float(spec.work_s))
    fails = np.zeros(trials, dtype=np.int64)
    waited = np.zeros(trials)
    restarting = np.zeros(trials, dtype=bool)
    active = np.ones(trials, dtype=bool)
    # Return times of the spare pool: a spare is free when its time is <= now.
    pool = np.zeros((trials, spec.spares or 0))

    def fail(idx: np.ndarray) -> None:
        fails[idx] += 1
        restarting[idx] = True
        if spec.spares is None or spec.repair_fraction == 0.0 or idx.size == 0:
            return
        hw = idx[rng.random(idx.size) < spec.repair_fraction]
        if hw.size == 0:
            return
        now = t[hw]
        # The failed node goes to repair and joins the pool when fixed; the job takes the
        # node that is (or becomes) free first, waiting for it if need be.
        cand = np.concatenate([pool[hw], (now + spec.repair_s)[:, None]], axis=1)
        cand.sort(axis=1)
        wait = np.maximum(cand[:, 0] - now, 0.0)
        pool[hw] = cand[:, 1:]
        t[hw] += wait
        waited[hw] += wait

    for _ in range(max_steps):
        idx = np.flatnonzero(active)
        if idx.size == 0:
            break
        gap = rng.exponential(spec.mtbf_s, idx.size)
        rs = restarting[idx]
        # Restart attempts: finish it, or fail during it and start over.
        r_idx, r_gap = idx[rs], gap[rs]
        ok = r_gap >= spec.restart_s
        t[r_idx[ok]] += spec.restart_s
        restarting[r_idx[ok]] = False
        t[r_idx[~ok]] += r_gap[~ok]
        fail(r_idx[~ok])
        # Runs: finish every remaining segment, or fail after k whole segments.
        c_idx, c_gap = idx[~rs], gap[~rs]
        need = work[c_idx] + np.ceil(work[c_idx] / tau - 1e-9) * delta
        done = c_gap >= need
        t[c_idx[done]] += need[done]
        work[c_idx[done]] = 0.0
        active[c_idx[done]] = False
        f_idx, f_gap = c_idx[~done], c_gap[~done]
        work[f_idx] -= np.floor(f_gap / seg) * tau
        t[f_idx] += f_gap
        fail(f_idx)
    else:
        raise InputError(
            f"the run does not finish within {max_steps} failures per trial: the checkpoint "
            f"interval plus write ({seg:g} s) is too long for an MTBF of {spec.mtbf_s:g} s"
        )
    return RunResult(wall_s=t, interruptions=fails, spare_wait_s=waited,
                     work_s=float(spec.work_s), seed=seed)
