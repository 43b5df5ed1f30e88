"""``Layouts``: the one type the models and planners use for training parallel layouts.

A layout is tp, pp, dp, cp, ep, micro-batch, interleave (virtual stages), ZeRO stage,
recompute (the integer code of ``model/recompute``), sequence parallelism, the ZeRO-3
sharding group and the block-recompute share. ``Layouts`` holds any number of them as equal
length float arrays (the planner's search) or one as floats (``scalar``). ``ParallelConfig``
(spec) is the validated input form; ``Layouts.from_config`` converts it, strings become codes
here and nowhere deeper.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from clusterwright.model.recompute import parse_recompute
from clusterwright.model.xp import ArrayOps, Ops
from clusterwright.spec.parallel import ParallelConfig


@dataclass(frozen=True)
class Layouts:
    """Parallel layouts as equal-length arrays (one entry per candidate), or one as floats."""

    tp: Any
    pp: Any
    dp: Any
    cp: Any
    ep: Any
    micro_batch: Any
    interleave: Any
    zero: Any
    recompute: Any  # integer code: 0 none, 2 full, else module bits (model/recompute)
    sp: Any  # bool
    shard: Any = None  # ZeRO-3 sharding group (GPUs); 0 = the whole data-parallel group
    # With full recompute, the share of each model chunk's layers recomputed (Megatron's block
    # method, --recompute-num-layers): the others keep their activations.
    rc_frac: Any = None

    @staticmethod
    def of(**kw: ArrayLike) -> Layouts:
        """Broadcast scalars and arrays to one length."""
        defaults: dict[str, ArrayLike] = {
            "tp": 1, "pp": 1, "dp": 1, "cp": 1, "ep": 1, "micro_batch": 1, "interleave": 1,
            "zero": 0, "recompute": 0, "sp": False, "shard": 0, "rc_frac": 1.0,
        }
        unknown = set(kw) - set(defaults)
        if unknown:
            raise TypeError(f"unknown layout fields: {sorted(unknown)}")
        defaults.update(kw)
        arrs = np.broadcast_arrays(*(np.atleast_1d(np.asarray(defaults[k])) for k in defaults))
        return Layouts(*(np.array(a, dtype=float) for a in arrs))

    @staticmethod
    def from_config(par: ParallelConfig) -> Layouts:
        """The one-element ``Layouts`` of a validated ``ParallelConfig``."""
        return Layouts.of(
            tp=par.tp, pp=par.pp, dp=par.dp, cp=par.cp, ep=par.ep, micro_batch=par.micro_batch,
            interleave=par.virtual_stages, zero=par.zero_stage,
            recompute=parse_recompute(par.recompute), sp=par.sequence_parallel,
        )

    def __len__(self) -> int:
        return int(np.shape(self.tp)[0]) if np.ndim(self.tp) else 1

    def take(self, idx: ArrayLike) -> Layouts:
        i = np.asarray(idx)
        return Layouts(*(getattr(self, f.name)[i] for f in fields(self)))

    def scalar(self, i: int = 0) -> Layouts:
        """Layout ``i`` as Python floats (the scalar path)."""
        return Layouts(*(float(getattr(self, f.name)[i]) for f in fields(self)))


def stage_layers(layers: float, pp: Any, interleave: Any, ops: Ops = ArrayOps) -> Any:
    """Layers on the first (and busiest) pipeline rank: v chunks of ceil(L / (p v)) layers.

    Megatron assigns model chunk j to rank j mod p and every chunk but the last holds
    ceil(L / (p v)) layers, so when L does not divide, the shortfall lands on the last rank
    and the first keeps full chunks. Uneven splits are allowed (Megatron-Core's uneven
    pipeline; Llama 3 section 3.3.2) and cost this imbalance, in time and in memory.
    """
    return ops.ceil(layers / (pp * interleave)) * interleave


def in_flight(pp: Any, interleave: Any, micro_batches: Any, first: bool,
              ops: Ops = ArrayOps) -> Any:
    """Micro-batches whose activations a pipeline rank holds at the 1F1B peak, in units of
    the rank's own layers.

    Megatron's schedules: rank r runs ``w = p - r - 1`` warm-up forwards (1F1B) or
    ``2 (p - r - 1) + (v - 1) p`` warm-up model chunks (interleaved), then holds one more
    before its first backward. The first rank (r = 0) holds p micro-batches, or
    p (1 + (p - 1) / (p v)) with interleaving (Korthikanti et al. 2022, section 4.2.3); the
    last (r = p - 1) holds 1, or ((v - 1) p + 1) / v. Never more than the step's micro-batches.
    """
    p, v, m = pp, interleave, micro_batches
    if first:
        one_f_one_b = ops.minimum(p, m)
        interleaved = ops.where(m >= p, p * (1.0 + (p - 1.0) / (p * v)), m)
    else:
        one_f_one_b = ops.minimum(1.0, m)
        interleaved = ops.minimum(((v - 1.0) * p + 1.0) / v, m)
    return ops.where(p == 1, 1.0, ops.where(v > 1, interleaved, one_f_one_b))
