"""Validation tables: each reads a CSV of published measurements from ``validation/`` and
predicts every row with the models. The catalog is never tuned to a row."""

from __future__ import annotations

import csv
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from clusterwright.catalog.registry import Catalog
from clusterwright.catalog.schema import Dtype, ModelArch
from clusterwright.design.train import estimate_layout, job_for, plan
from clusterwright.errors import InputError
from clusterwright.model.flops import megatron_iteration_flops
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
    set: str = "dev"  # "dev": used to calibrate the catalog; "held-out": never looked at then
    detail: str = ""

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
        """Mean absolute percentage error over the development rows."""
        return _mape(self.dev_rows)

    @property
    def max_abs_error(self) -> float:
        return max(abs(r.error) for r in self.dev_rows)

    @property
    def dev_rows(self) -> list[Row]:
        return [r for r in self.rows if r.set == "dev"]

    @property
    def held_out_rows(self) -> list[Row]:
        return [r for r in self.rows if r.set == "held-out"]

    @property
    def held_out_mape(self) -> float | None:
        rows = self.held_out_rows
        return _mape(rows) if rows else None


def _mape(rows: list[Row]) -> float:
    return sum(abs(r.error) for r in rows) / len(rows)


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
        ffn_hidden=int(r.get("ffn_hidden") or 4 * h),
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


RECOMPUTE_CODE = {"none": 0, "selective": 1, "full": 2}


def _train_row(cat: Catalog, r: dict[str, str]) -> tuple[float, str]:
    """Predict one training row with its published configuration. Fields left empty are
    searched (fastest layout that fits), as ``train estimate`` does."""
    arch = _gpt(r) if r["model"] == "gpt" else cat.model(r["model"])
    seq = int(r["seq_len"])
    gb = int(r["global_batch"])
    job = job_for(
        cat,
        arch,
        r["gpu"],
        seq,
        gb,
        r["precision"],
        r["grad_precision"] or None,
        dropout=r["dropout"] == "yes",
    )
    if not r["tp"]:
        # Layout not published (MLPerf): predict with the planner's best layout.
        res_plan = plan(job, int(r["n_gpus"]), top_n=1)
        if res_plan.best is None:
            raise InputError(f"training.csv row {r['id']}: no layout fits")
        best = res_plan.best
        tps = best.tokens_per_step / best.step_time_s
        lay = best.layout
        detail = (
            f"plan: tp{lay['tp']} pp{lay['pp']} dp{lay['dp']} cp{lay['cp']} "
            f"v{lay['interleave']} {lay['recompute']}"
        )
        return float(r["tokens"]) / tps / 60.0, detail
    fixed = {k: int(r[k]) for k in ("tp", "pp", "dp", "cp", "ep")}
    search: list[str] = []
    for key, col in (
        ("interleave", "interleave"),
        ("zero", "zero"),
        ("micro_batch", "micro_batch"),
    ):
        if r[col]:
            fixed[key] = int(r[col])
        else:
            search.append(key)
    if r["recompute"]:
        fixed["recompute"] = RECOMPUTE_CODE[r["recompute"]]
    else:
        search.append("recompute")
    if r["sequence_parallel"]:
        fixed["sp"] = int(r["sequence_parallel"] == "yes")
    else:
        search.append("sp")
    res = estimate_layout(job, fixed, tuple(search))
    n = int(r["n_gpus"])
    step = res.step_time_s
    metric = r["metric"]
    if metric == "iteration_time":
        pred = step
    elif metric == "tflops_per_gpu_megatron":
        flops = megatron_iteration_flops(gb, seq, arch.layers, arch.hidden, arch.vocab, True)
        pred = float(flops) / step / n / 1e12
    elif metric == "tflops_per_gpu":
        pred = res.model_flops / step / n / 1e12
    elif metric == "mfu":
        flops = megatron_iteration_flops(gb, seq, arch.layers, arch.hidden, arch.vocab, False)
        pred = 100.0 * float(flops) / step / n / (job.gpu.peak_tflops[Dtype.fp16] * 1e12)
    elif metric == "training_time":
        pred = float(r["tokens"]) / (gb * seq) * step / 3600.0
    elif metric == "gpu_hours_per_1t_tokens":
        pred = 1e12 / (gb * seq) * step * n / 3600.0
    else:
        raise InputError(f"training.csv row {r['id']}: unknown metric {metric!r}")
    lay = res.layout
    detail = (
        f"mb{lay['micro_batch']} v{lay['interleave']} {lay['recompute']} "
        f"sp{int(bool(lay['sequence_parallel']))} zero{lay['zero']} "
        f"mem {res.memory['total'] / 1e9:.0f} GB" + ("" if res.fits else " (does not fit)")
    )
    return pred, detail


def training_table() -> TableResult:
    """Step time / throughput of published training runs (SC21 Table 1, Korthikanti 2022
    Table 5, Llama 3 Table 4; held out: GPT-NeoX-20B, MT-NLG 530B MFU, DeepSeek-V3)."""
    from clusterwright.catalog.registry import load_catalog

    cat = load_catalog(env={})
    rows = []
    for r in _read("training.csv"):
        pred, detail = _train_row(cat, r)
        rows.append(
            Row(
                r["id"],
                r["metric"],
                float(r["value"]),
                pred,
                r["unit"],
                r["source"],
                r["set"],
                detail,
            )
        )
    return TableResult("training", "training.csv", rows, tolerance=0.10)


TABLES: dict[str, Callable[[], TableResult]] = {"memory": memory_table, "training": training_table}


def _fabric_table() -> TableResult:  # imported lazily: fabric_table.py imports Row from here
    from clusterwright.validation.fabric_table import fabric_table

    return fabric_table()


TABLES["fabric"] = _fabric_table


def _collectives_table() -> TableResult:  # lazy too: it imports Row from here, and the simulator
    from clusterwright.validation.collectives_table import collectives_table

    return collectives_table()


TABLES["collectives"] = _collectives_table


def _serving_table() -> TableResult:  # lazy: it imports Row from here, and the simulator
    from clusterwright.validation.serving_table import serving_table

    return serving_table()


TABLES["serving"] = _serving_table


def _power_table() -> TableResult:  # lazy: it imports Row from here, and the fabric planner
    from clusterwright.validation.power_table import power_table

    return power_table()


TABLES["power"] = _power_table


def _reliability_table() -> TableResult:  # lazy: it imports Row from here
    from clusterwright.validation.reliability_table import reliability_table

    return reliability_table()


TABLES["reliability"] = _reliability_table
