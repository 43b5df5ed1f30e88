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

A real fleet adds four things, each optional (``model/reliability`` has their formulas and the
catalog their sources):

- **node losses** (``losses``): a failure may take one node (repaired in ``repair_s``, or reset
  in ``reset_s`` for a share), a whole rack, a power domain or a leaf switch's hosts; the job
  takes as many spares as nodes were lost, waiting for the first to come back from repair
  when the pool is short (an M/G/inf repair queue: every failed node is repaired at once);
- **lemon nodes**: each trial draws its job's lemons L ~ Binomial(nodes, p); the node-attached
  share of the rate is scaled by (n - L + kL) / (n (1 - p + kp)), so the mean over trials is
  the fleet's published rate and the tail is heavier;
- **fail-slow stragglers**: episodes arrive at ``fail_slow_per_hour`` during compute, last an
  exponential ``fail_slow_mean_s`` and slow the step ``fail_slow_slowdown`` times while one is
  active; a trial's compute is stretched by (s - 1) x the busy time (the compound-Poisson sum
  of durations times the M/G/inf overlap factor (1 - e^-x) / x, x = rate x mean duration), so
  its mean is ``model.reliability.fail_slow_stretch``. The checkpoints follow the stretched
  compute;
- **GPU-hours lost**, per trial: restarts, waits for nodes, fail-slow time, and checkpoint
  writes plus recomputed work (the remainder of the wall time over the work). ETTR counts
  fail-slow time as productive (slow steps still train), as its definition does.

Vectorised over trials: every loop step advances each unfinished trial by one phase (a run
until the next failure or the end, or one restart attempt), so the loop runs about twice the
number of failures of the unluckiest trial, not once per checkpoint.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from clusterwright.errors import InputError
from clusterwright.model.reliability import (
    DAY,
    NodeLoss,
    expected_wall_time_s,
    lemon_rate_scale,
    percentiles,
)
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
    # What a failure takes out; empty: one node for repair_s with probability repair_fraction.
    losses: tuple[NodeLoss, ...] = ()
    nodes: int = 0  # nodes of the job (lemons are drawn among them); 0: no lemon model
    lemon_fraction: float = 0.0
    lemon_multiplier: float = 1.0
    lemon_share: float = 0.0  # share of the rate on node-attached causes
    fail_slow_per_hour: float = 0.0  # fail-slow episodes per hour of compute, whole job
    fail_slow_mean_s: float = 0.0
    fail_slow_slowdown: float = 1.0

    def node_losses(self) -> tuple[NodeLoss, ...]:
        if self.losses:
            return self.losses
        if self.repair_fraction > 0:
            return (NodeLoss("node", self.repair_fraction, 1, self.repair_s),)
        return ()

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
        total = sum(x.probability for x in self.losses)
        if self.losses and not total <= 1.0 + 1e-9:
            raise InputError(f"losses: probabilities add up to {total:g}, more than 1")
        for x in self.losses:
            if x.nodes < 1 or not x.repair_s >= 0 or not x.reset_s >= 0:
                raise InputError(f"losses: {x.kind}: needs at least one node and repair times "
                                 "of zero or more")
        for name in ("lemon_fraction", "lemon_share"):
            v = getattr(self, name)
            if not 0.0 <= v < 1.0 + (name == "lemon_share"):
                raise InputError(f"{name}: must be a fraction, got {v}")
        if self.lemon_multiplier < 1.0 or self.fail_slow_slowdown < 1.0:
            raise InputError("lemon_multiplier and fail_slow_slowdown: must be at least 1")
        for name in ("nodes", "fail_slow_per_hour", "fail_slow_mean_s"):
            v = getattr(self, name)
            if not v >= 0 or not np.isfinite(v):
                raise InputError(f"{name}: must be zero or positive, got {v}")


@dataclass(frozen=True)
class RunResult:
    """Per-trial outcomes of ``simulate_run``."""

    wall_s: np.ndarray  # time to train, s
    interruptions: np.ndarray  # failures per trial
    spare_wait_s: np.ndarray  # time spent waiting for a node, s
    work_s: float
    seed: int
    restart_time_s: np.ndarray | None = None  # time in restarts (attempts included), s
    fail_slow_s: np.ndarray | None = None  # compute added by fail-slow episodes, s
    lemons: np.ndarray | None = None  # lemon nodes the job drew
    checkpoint_s: float = 0.0  # one write
    interval_s: float = 0.0

    @property
    def trials(self) -> int:
        return int(self.wall_s.size)

    @property
    def ettr(self) -> np.ndarray:
        """Productive time over wall time, as Kokolis et al. (HPCA 2025) define ETTR: steps
        slowed by a fail-slow still make progress, so they count as productive (they stretch
        the time to train, not the ETTR); restarts, waits, checkpoints and lost work do not."""
        slow = self.fail_slow_s if self.fail_slow_s is not None else 0.0
        return (self.work_s + slow) / self.wall_s

    def summary(self) -> dict[str, object]:
        """Distribution of time to train (days), interruptions and ETTR."""
        return {
            "trials": self.trials,
            "seed": self.seed,
            "time_to_train_days": percentiles(self.wall_s / DAY),
            "interruptions": percentiles(self.interruptions),
            "ettr": percentiles(self.ettr),
            "spare_wait_hours": percentiles(self.spare_wait_s / 3600.0),
            "hours_lost": self.hours_lost(),
            **({"lemon_nodes": percentiles(self.lemons)} if self.lemons is not None else {}),
        }

    def hours_lost(self) -> dict[str, float]:
        """Mean wall hours per run beyond the failure-free work, by cause (multiply by the
        job's GPUs for GPU-hours): restarts, waits for nodes, fail-slow episodes, checkpoint
        writes (those that completed) and recomputed work (the rest)."""
        n = self.wall_s.size
        zero = np.zeros(n)
        restart = self.restart_time_s if self.restart_time_s is not None else zero
        slow = self.fail_slow_s if self.fail_slow_s is not None else zero
        writes = (np.ceil((self.work_s + slow) / self.interval_s - 1e-9) * self.checkpoint_s
                  if self.interval_s > 0 else zero)
        rework = self.wall_s - self.work_s - restart - self.spare_wait_s - slow - writes
        return {k: float(np.mean(v)) / 3600.0 for k, v in (
            ("restarts", restart), ("spare_wait", self.spare_wait_s), ("fail_slow", slow),
            ("checkpoints", writes), ("lost_work", np.maximum(rework, 0.0)))}


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
    # Each trial's MTBF: the node-attached share scaled by the lemons it drew.
    mtbf = np.full(trials, float(spec.mtbf_s))
    lemons = None
    if spec.nodes and spec.lemon_fraction > 0 and spec.lemon_share > 0:
        lemons = rng.binomial(spec.nodes, spec.lemon_fraction, trials).astype(float)
        scale = lemon_rate_scale(lemons, spec.nodes, spec.lemon_fraction, spec.lemon_multiplier)
        mtbf = spec.mtbf_s / (1.0 - spec.lemon_share + spec.lemon_share * scale)
    # Fail-slow episodes stretch each trial's compute (see the module docstring).
    slow = np.zeros(trials)
    if spec.fail_slow_per_hour > 0 and spec.fail_slow_mean_s > 0 and spec.fail_slow_slowdown > 1:
        x = spec.fail_slow_per_hour * spec.fail_slow_mean_s / 3600.0
        episodes = rng.poisson(spec.fail_slow_per_hour * spec.work_s / 3600.0, trials)
        busy = np.where(episodes > 0, rng.gamma(np.maximum(episodes, 1), spec.fail_slow_mean_s),
                        0.0)
        slow = (spec.fail_slow_slowdown - 1.0) * busy * (-np.expm1(-x) / x)
        work += slow
    fails = np.zeros(trials, dtype=np.int64)
    waited = np.zeros(trials)
    restart_time = np.zeros(trials)
    restarting = np.zeros(trials, dtype=bool)
    active = np.ones(trials, dtype=bool)
    # Return times of the spare pool: a spare is free when its time is <= now.
    pool = np.zeros((trials, spec.spares or 0))
    losses = spec.node_losses()
    edges = np.cumsum([x.probability for x in losses])

    def take_nodes(hw: np.ndarray, loss: NodeLoss) -> None:
        now = t[hw]
        back = np.full(hw.size, loss.repair_s)
        if loss.reset_share > 0:
            back = np.where(rng.random(hw.size) < loss.reset_share, loss.reset_s, back)
        # The failed nodes go to repair and join the pool when fixed; the job takes the
        # nodes that are (or become) free first, waiting for the last it needs.
        m = loss.nodes
        cand = np.concatenate([pool[hw], np.repeat((now + back)[:, None], m, axis=1)], axis=1)
        cand.sort(axis=1)
        wait = np.maximum(cand[:, m - 1] - now, 0.0)
        pool[hw] = cand[:, m:]
        t[hw] += wait
        waited[hw] += wait

    def fail(idx: np.ndarray) -> None:
        fails[idx] += 1
        restarting[idx] = True
        if spec.spares is None or not losses or idx.size == 0:
            return
        kind = np.searchsorted(edges, rng.random(idx.size), side="right")
        for k, loss in enumerate(losses):
            hw = idx[kind == k]
            if hw.size:
                take_nodes(hw, loss)

    for _ in range(max_steps):
        idx = np.flatnonzero(active)
        if idx.size == 0:
            break
        gap = rng.exponential(1.0, idx.size) * mtbf[idx]
        rs = restarting[idx]
        # Restart attempts: finish it, or fail during it and start over.
        r_idx, r_gap = idx[rs], gap[rs]
        ok = r_gap >= spec.restart_s
        t[r_idx[ok]] += spec.restart_s
        restart_time[r_idx[ok]] += spec.restart_s
        restarting[r_idx[ok]] = False
        t[r_idx[~ok]] += r_gap[~ok]
        restart_time[r_idx[~ok]] += r_gap[~ok]
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
                     work_s=float(spec.work_s), seed=seed, restart_time_s=restart_time,
                     fail_slow_s=slow, lemons=lemons, checkpoint_s=delta, interval_s=tau)
