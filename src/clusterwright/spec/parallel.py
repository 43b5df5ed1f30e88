"""How a training job is split across GPUs (Megatron-LM terms)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, StrictBool, model_validator

from clusterwright.spec.numbers import INTEGER, PositiveInt

Recompute = Literal["none", "selective", "full"]
Optimizer = Literal["adam", "sgd"]


class ParallelConfig(BaseModel):
    """Parallel layout of one training job.

    GPUs = dp * tp * pp * cp. Expert parallelism (ep) splits whole experts (expert TP 1) over
    consecutive GPUs of the tensor-, context- and data-parallel ranks (Megatron-Core's MoE
    parallel folding), so it must divide tp * dp * cp. Numbers are strict (no booleans or
    strings) and at most ``spec.numbers.MAX_INT``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    dp: PositiveInt = 1
    tp: PositiveInt = 1
    pp: PositiveInt = 1
    cp: PositiveInt = 1
    ep: PositiveInt = 1
    zero_stage: Annotated[Literal[0, 1, 2, 3], INTEGER] = 0
    micro_batch: PositiveInt = 1
    global_batch: PositiveInt | None = None  # sequences; None means dp * micro_batch
    recompute: Recompute = "none"
    virtual_stages: PositiveInt = 1  # interleaved 1F1B chunks per pipeline rank
    sequence_parallel: StrictBool = False

    @model_validator(mode="after")
    def _consistent(self) -> ParallelConfig:
        if (self.tp * self.dp * self.cp) % self.ep:
            raise ValueError(
                f"ep={self.ep} must divide tp*dp*cp={self.tp * self.dp * self.cp} "
                "(expert parallelism folds over the tensor-, context- and data-parallel GPUs)"
            )
        if self.sequence_parallel and self.tp == 1:
            raise ValueError("sequence_parallel needs tp > 1")
        if self.virtual_stages > 1 and self.pp == 1:
            raise ValueError(
                "virtual_stages needs pp > 1 (an interleaved schedule splits pipeline stages)"
            )
        gb = self.global_batch
        if gb is not None and gb % (self.dp * self.micro_batch):
            raise ValueError(
                f"global_batch={gb} is not a multiple of dp*micro_batch="
                f"{self.dp * self.micro_batch}"
            )
        return self

    @property
    def gpus(self) -> int:
        return self.dp * self.tp * self.pp * self.cp

    @property
    def batch(self) -> int:
        """Global batch in sequences."""
        return self.global_batch or self.dp * self.micro_batch

    @property
    def micro_batches(self) -> int:
        """Micro-batches per pipeline per step (gradient accumulation steps)."""
        return self.batch // (self.dp * self.micro_batch)
