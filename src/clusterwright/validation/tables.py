"""Validation tables: each reads a CSV of published measurements from ``validation/`` and
predicts every row with the models. The catalog is never tuned to a row."""

from __future__ import annotations

import csv
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from clusterwright.catalog.schema import ModelArch
from clusterwright.errors import InputError
from clusterwright.model.memory import training_memory
from clusterwright.spec.parallel import ParallelConfig

GIB = 2**30


@dataclass(frozen=True)
class Row:
    """One measured value, our prediction and the relative error."""

    id: str
    quantity: str
    measured: float
    predicted: float
    unit: str
    source: str

    @property
    def error(self) -> float:
        """Signed relative error, (predicted - measured) / measured."""
        return (self.predicted - self.measured) / self.measured


@dataclass(frozen=True)
class TableResult:
    name: str
    file: str
    rows: list[Row]
    tolerance: float  # the MAPE this table is held to by the tests

    @property
    def mape(self) -> float:
        return sum(abs(r.error) for r in self.rows) / len(self.rows)

    @property
    def max_abs_error(self) -> float:
        return max(abs(r.error) for r in self.rows)


def data_dir() -> Path:
    """``validation/`` of a source checkout, or the copy shipped inside the wheel."""
    shipped = resources.files("clusterwright") / "_validation"
    if shipped.is_dir():
        return Path(str(shipped))
    repo = Path(__file__).resolve().parents[3] / "validation"
    if repo.is_dir():
        return repo
    raise InputError("validation data not found (expected validation/ next to src/)")


def _read(name: str) -> list[dict[str, str]]:
    with open(data_dir() / name, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _gpt(r: dict[str, str]) -> ModelArch:
    # GPT shapes of Korthikanti et al. 2022: ffn = 4h, MHA, learned positions, biases, the
    # GPT-2 vocabulary padded to 51,200 as Megatron does.
    h = int(r["hidden"])
    return ModelArch(
        id="validation-gpt",
        name=r["model"],
        source="validation row",
        layers=int(r["layers"]),
        hidden=h,
        heads=int(r["heads"]),
        ffn_hidden=int(r["ffn_hidden"]),
        vocab=51200,
        max_seq_len=int(r["seq_len"]),
        position="learned",
        bias=True,
        activation="gelu",
        tied_embeddings=True,
    )


def memory_table() -> TableResult:
    """Korthikanti et al. 2022 Figures 1 and 7: per-GPU model states and activations.

    Their setup: Megatron-LM, fp16 weights with fp32 main gradients and Adam (18 bytes per
    parameter), dropout on, no FlashAttention (2022). Figure 1 counts the transformer layers'
    states, so the embedding share is left out of that comparison.
    """
    rows = []
    for r in _read("memory.csv"):
        arch = _gpt(r)
        seq = int(r["seq_len"])

        def mem(
            recompute: str,
            sp: bool,
            r: dict[str, str] = r,
            arch: ModelArch = arch,
            seq: int = seq,
        ) -> tuple[float, float]:
            par = ParallelConfig(
                tp=int(r["tp"]),
                pp=int(r["pp"]),
                dp=int(r["dp"]),
                virtual_stages=int(r["interleave"]),
                micro_batch=int(r["micro_batch"]),
                global_batch=int(r["global_batch"]),
                recompute=recompute,
                sequence_parallel=sp,
            )
            m = training_memory(
                arch, par, seq, "fp16", "fp32", "adam", flash_attention=False, dropout=True
            )
            return m.states - m.embedding_states, m.activations

        q = r["quantity"]
        rc = r["recompute"] or "none"
        sp = r["sequence_parallel"] == "yes"
        if q == "params_plus_optimizer_memory":
            pred = mem("none", False)[0] / GIB
        elif q == "activation_memory":
            pred = mem(rc, sp)[1] / GIB
        elif q == "activation_memory_relative":
            pred = 100.0 * mem(rc, sp)[1] / mem("none", False)[1]
        else:
            raise InputError(f"memory.csv row {r['id']}: unknown quantity {q!r}")
        rows.append(Row(r["id"], q, float(r["value"]), pred, r["unit"], r["source"]))
    return TableResult("memory", "memory.csv", rows, tolerance=0.05)


TABLES: dict[str, Callable[[], TableResult]] = {"memory": memory_table}
