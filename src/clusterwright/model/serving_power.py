"""GPU board power while serving an LLM, from the modelled engine iterations. Pure functions;
watts, seconds, tokens.

Power of one GPU during one iteration::

    P = P_idle + (TDP - P_idle) x min(1, a + b x u_tensor)

- ``u_tensor``: the iteration's FLOPs at the datasheet peak over its step time (the share of
  the step the tensor cores would be busy at full rate), from the step model's ``work_s``:
  the same FLOPs its ``step_s`` times.
- ``a``: the active floor, the share of the dynamic range (TDP - idle) a GPU draws while an
  engine iterates at all: clocks up, weights and KV streamed from HBM every iteration,
  kernels back to back. Decode at small batches is this floor (ML.ENERGY: Llama 3.1 8B on
  one H100 at batch 8 draws 486 W, 0.66 of the range, with the tensor cores nearly idle).
- ``b``: the dynamic power of saturated tensor cores on top of it (energy per FLOP in
  disguise: linear in the FLOP rate).
- The cap at TDP is the board's power limit: above it the clocks drop (a slower step that
  this model does not lengthen).
- ``P_idle``: the GPU's measured idle board power (catalog ``idle_power_w``).
- An engine that schedules synchronously adds the host's work for the running sequences to
  every iteration (``ServingEngine.seq_overhead_s``); ``u_tensor`` is over the whole
  iteration, that part included, at the same power law: the GPU keeps its clocks through
  such sub-millisecond waits (drawing ``P_idle`` in them instead fitted the development
  rows at 13.8 % against 8.0 %, measured 2026-11-30).

``a`` and ``b`` are fitted on the development rows of ``validation/serving_energy.csv`` by
``scripts/calibrate_serving_power.py`` (catalog assumptions ``serving_power_active_floor``
and ``serving_power_tensor_weight``). An HBM term (``c x u_hbm``, from ``work_s``'s bytes)
was tried as the second constant instead of the floor and fitted the development rows
about as well but the held-out ones worse (the script prints both): decode streams HBM
at every batch, so the floor carries it.

Steady state of a continuously batched engine (vLLM) running ``batch`` sequences of
``input_len`` prompt and ``output_len`` output tokens (``iteration_mix``): a sequence joins
for every ``output_len`` / ``batch`` decode iterations, so a share r = batch / output_len of
iterations carries a prompt (each its whole prompt when r < 1; all of them r prompts when
r >= 1), and each sequence is on average half-way through its output, so the batch attends
batch x (input_len + output_len / 2) cached tokens. The GPU's mean power is the iterations'
powers weighted by their time; throughput is batch / mean iteration time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from clusterwright.errors import InputError


class StepWork(Protocol):
    """A step model that times an iteration and says what work it does (``model/inference``
    ``StepModel``, ``model/serving_step`` ``DeploymentStep``)."""

    def step_s(self, prefill_tokens: int, decode_seqs: int, kv_tokens: int,
               prefill_pairs: float | None = None) -> float: ...

    def work_s(self, prefill_tokens: float, decode_seqs: float, kv_tokens: float,
               prefill_pairs: float | None = None) -> tuple[float, float]: ...


@dataclass(frozen=True)
class PowerParams:
    """One GPU's serving power model: idle and TDP (W), the fitted floor and weight."""

    idle_w: float
    tdp_w: float
    active_floor: float
    tensor_weight: float

    def __post_init__(self) -> None:
        if not 0.0 <= self.idle_w < self.tdp_w:
            raise InputError(f"idle power: must be in [0, TDP {self.tdp_w} W), got "
                             f"{self.idle_w}")
        if not 0.0 <= self.active_floor <= 1.0 or self.tensor_weight < 0:
            raise InputError("serving power: the active floor must be in [0, 1] and the "
                             f"tensor weight non-negative, got {self.active_floor}, "
                             f"{self.tensor_weight}")


def activity(tensor_busy: float, active_floor: float, tensor_weight: float) -> float:
    """Share of the GPU's dynamic range (TDP - idle) drawn while iterating, in [0, 1]."""
    return min(1.0, max(0.0, active_floor + tensor_weight * tensor_busy))


def gpu_power_w(p: PowerParams, step_s: float, tensor_s: float, hbm_s: float) -> float:
    """Board power (W) of one GPU during an iteration of ``step_s`` seconds whose FLOPs
    take ``tensor_s`` at the datasheet peak (``hbm_s``, its bytes at the datasheet
    bandwidth, is reported by ``serving_power`` but does not enter: see the module
    docstring); idle when there is no iteration."""
    del hbm_s
    if step_s <= 0:
        return p.idle_w
    a = activity(min(1.0, tensor_s / step_s), p.active_floor, p.tensor_weight)
    return p.idle_w + (p.tdp_w - p.idle_w) * a


def iteration_mix(batch: float, input_len: float, output_len: float
                  ) -> list[tuple[float, float, float, float]]:
    """The steady state's iterations as (share of iterations, prefill tokens, decode
    sequences, cached tokens attended); shares sum to 1 (see the module docstring)."""
    if not batch > 0 or not output_len > 0 or input_len < 0:
        raise InputError(f"serving steady state: batch and output length must be positive "
                         f"and input length non-negative, got {batch}, {output_len}, "
                         f"{input_len}")
    kv = batch * (input_len + output_len / 2.0)
    r = batch / output_len  # prompts joining per decode iteration
    if input_len == 0:
        return [(1.0, 0.0, batch, kv)]
    if r >= 1.0:
        return [(1.0, r * input_len, batch, kv)]
    return [(1.0 - r, 0.0, batch, kv), (r, float(input_len), batch, kv)]


@dataclass(frozen=True)
class ServingPower:
    """A replica's steady state: iteration times, throughput and power per GPU."""

    median_itl_s: float  # the iteration most tokens wait for (decode-only when r < 1/2)
    mean_itl_s: float  # mean iteration time
    tokens_per_s: float  # output tokens per second of the replica
    power_w: float  # mean board power of one GPU
    tensor_busy: float  # time-weighted
    hbm_busy: float
    prefill_time_share: float  # share of the time in iterations that carry a prompt

    def energy_per_token_j(self, gpus: int) -> float:
        """GPU joules per output token of a replica of ``gpus`` GPUs."""
        return gpus * self.power_w / self.tokens_per_s


def serving_power(step: StepWork, p: PowerParams, batch: float, input_len: float,
                  output_len: float) -> ServingPower:
    """Steady-state power of one GPU of a replica running ``batch`` sequences (see the
    module docstring)."""
    mix = iteration_mix(batch, input_len, output_len)
    t_sum = e_sum = tensor = hbm = prefill_t = 0.0
    times: list[tuple[float, float]] = []
    for share, pre, dec, kv in mix:
        t = step.step_s(round(pre), round(dec), round(kv))
        ts, hs = step.work_s(pre, dec, kv)
        w = gpu_power_w(p, t, ts, hs)
        t_sum += share * t
        e_sum += share * t * w
        tensor += share * min(ts, t)
        hbm += share * min(hs, t)
        if pre > 0:
            prefill_t += share * t
        times.append((share, t))
    if t_sum <= 0:
        raise InputError("serving steady state: the step model gives no iteration time")
    median = max(times, key=lambda x: x[0])[1]
    return ServingPower(median_itl_s=median, mean_itl_s=t_sum, tokens_per_s=batch / t_sum,
                        power_w=e_sum / t_sum, tensor_busy=tensor / t_sum, hbm_busy=hbm / t_sum,
                        prefill_time_share=prefill_t / t_sum)


__all__ = ["PowerParams", "ServingPower", "StepWork", "activity", "gpu_power_w",
           "iteration_mix", "serving_power"]
