"""``clusterwright check SCENARIO.yaml``: validate a scenario and summarize it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from clusterwright.catalog.references import resolve
from clusterwright.cli.common import console, emit_json, gb, state, user_errors
from clusterwright.model.flops import finetune_flops_per_token, training_flops
from clusterwright.model.lora import Lora
from clusterwright.model.memory import kv_cache_bytes_per_token
from clusterwright.model.params import active_params, total_params
from clusterwright.model.precision import bytes_per, default_kv_precision
from clusterwright.spec.scenario import (
    FinetuneWorkload,
    InferenceWorkload,
    TrainingWorkload,
    load_scenario,
)


def check(
    ctx: typer.Context,
    scenario: Path = typer.Argument(..., metavar="SCENARIO.yaml", help="Scenario file."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Validate a scenario file (fields, YAML lines, catalog ids) and summarize its workloads."""
    with user_errors():
        sc, doc = load_scenario(scenario)
        cat = state(ctx).catalog()
        models = resolve(sc, cat, doc)
    rows: list[dict[str, Any]] = []
    for w in sc.workloads:
        arch = models[w.name]
        row: dict[str, Any] = {
            "name": w.name,
            "kind": w.kind,
            "model": arch.id,
            "params": total_params(arch),
            "active_params": active_params(arch),
        }
        if isinstance(w, TrainingWorkload | FinetuneWorkload):
            epochs = w.epochs if isinstance(w, FinetuneWorkload) else 1.0
            row["tokens"] = w.tokens * epochs
            if isinstance(w, FinetuneWorkload):
                lora = Lora.of(w.lora_rank, w.lora_targets) if w.method == "lora" else None
                per_token = finetune_flops_per_token(arch, w.seq_len, w.method, lora)
                row["training_flops"] = float(per_token) * w.tokens * epochs
                row["method"] = w.method
            else:
                row["training_flops"] = float(training_flops(arch, w.tokens, w.seq_len))
            row["seq_len"] = w.seq_len
            if isinstance(w, TrainingWorkload):
                row["deadline_days"] = w.deadline_days
                row["gpus"] = w.gpus
        if isinstance(w, InferenceWorkload):
            kv = w.kv_precision or default_kv_precision(w.precision)
            row["qps"] = w.qps
            row["weights_gb"] = gb(total_params(arch) * bytes_per(w.precision))
            row["kv_cache_bytes_per_token"] = kv_cache_bytes_per_token(arch, kv)
            row["mean_input_len"] = w.input_len.mean
            row["mean_output_len"] = w.output_len.mean
            row["slo"] = w.slo.model_dump()
        rows.append(row)
    c = sc.constraints
    payload = {
        "valid": True,
        "name": sc.name,
        "seed": sc.seed,
        "workloads": rows,
        "constraints": c.model_dump(mode="json"),
    }
    if as_json:
        emit_json(payload)
        return
    console.print(f"[green]valid[/] scenario [bold]{sc.name}[/]: {len(rows)} workload(s)")
    t = Table(title_justify="left")
    for col in ("workload", "kind", "model", "params", "size"):
        t.add_column(col)
    for r in rows:
        if r["kind"] == "inference":
            what = (
                f"{r['qps']:g} req/s, {r['weights_gb']:.0f} GB weights, "
                f"{r['kv_cache_bytes_per_token'] / 1e6:.3f} MB KV/token"
            )
        else:
            what = f"{r['tokens']:.3g} tokens, {r['training_flops']:.3g} FLOPs"
        t.add_row(r["name"], r["kind"], r["model"], f"{r['params'] / 1e9:.1f}B", what)
    console.print(t)
    gpus = c.gpus if isinstance(c.gpus, str) else ", ".join(c.gpus)
    console.print(
        f"GPUs: {gpus}; {c.power_per_rack_kw:g} kW/rack {c.cooling}-cooled; "
        f"{c.deployment}; PUE {c.pue:g}; ${c.electricity_usd_per_kwh:g}/kWh"
    )
