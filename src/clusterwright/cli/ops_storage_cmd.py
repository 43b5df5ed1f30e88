"""``clusterwright ops storage``: the storage tier for a training job and/or a served model."""

from __future__ import annotations

from typing import Any

import typer
from rich.table import Table

from clusterwright.catalog.registry import resolve_model
from clusterwright.catalog.schema import ModelArch
from clusterwright.cli import limits as lim
from clusterwright.cli.common import console, fail, run_command, state, user_errors
from clusterwright.errors import ClusterwrightError

FLAGS = {"gpus": "--gpus", "server": "--server", "system": "--system", "units": "--units",
         "mlperf_workload": "--mlperf-workload", "local_nvme": "--local-nvme"}


def _model(cat: Any, ref: str | None, flag: str) -> ModelArch | None:
    if ref is None:
        return None
    try:
        return resolve_model(cat, ref)
    except ClusterwrightError as exc:
        fail(f"{flag}: {exc}")


def _render(d: dict[str, Any]) -> None:
    console.print(
        f"[bold]{d['units']} x {d['system']}[/] for {d['gpus']:,} GPUs on {d['server']}: "
        f"{d['read_gbps']:,.1f} GB/s read, {d['write_gbps']:,.1f} GB/s write, "
        f"{d['capacity_tb']:,.0f} TB, {d['ports']} x {d['port_gbps']:g}G ports, "
        f"{d['power_kw']:,.1f} kW" + (f", ${d['price_usd']:,.0f}" if d["price_usd"] else ""))
    console.print(f"  why: {d['why']}")
    n = d["need"]
    console.print(f"  needs: read {n['read_gbps']:,.2f} GB/s, write {n['write_gbps']:,.2f} GB/s, "
                  f"capacity {n['capacity_tb']:,.1f} TB")
    ck = d.get("checkpoint")
    if ck:
        t = Table(title=f"checkpoint ({ck['mode']})", title_justify="left", show_header=False)
        t.add_column("quantity")
        t.add_column("value", justify="right")
        for label, key, unit in (("size", "bytes", "TB"), ("training stall", "stall_s", "s"),
                                 ("persist", "persist_s", "s"), ("restore", "restore_s", "s"),
                                 ("interval", "interval_s", "s")):
            v = ck.get(key)
            if v is None:
                continue
            t.add_row(label, f"{v / 1e12:,.2f} TB" if unit == "TB" else f"{v:,.1f} s")
        console.print(t)
    if d.get("model_load_s") is not None:
        console.print(f"  one replica's weights load in {d['model_load_s']:,.1f} s")
    r = d.get("data_read_per_unit")
    if r:
        unchecked = (f" (no {' or '.join(r['not_checked'])} rate in the catalog: an upper bound)"
                     if r["not_checked"] else "")
        console.print(f"  data files of {r['file_bytes'] / 1e6:,.3g} MB in "
                      f"{r['request_bytes'] / 1e3:,.4g} kB requests: {r['gbps']:,.1f} GB/s per "
                      f"unit, {r['bound']}-bound{unchecked}")
    ls = d.get("local_staging")
    if ls:
        shared = ("" if ls["shared_stall_s"] is None
                  else f" (the stall without it: {ls['shared_stall_s']:,.1f} s)")
        console.print(f"  local NVMe {ls['system']} in {ls['servers']:,} servers: a checkpoint "
                      f"shard of {ls['shard_bytes'] / 1e9:,.1f} GB stages in "
                      f"{ls['stage_s']:,.1f} s{shared}; "
                      + ("fits" if ls["fits"] else "[red]does not fit[/]")
                      + " with the kept copies; dataset "
                      + ("cached locally" if ls["dataset_cached"] else "not cached locally"))
    m = d.get("mlperf_workload")
    if m:
        console.print(f"  MLPerf Storage {m['name']} ({m['accelerator']}): "
                      f"{m['gbps_per_accelerator_at_threshold']:.3f} GB/s per accelerator at AU "
                      f"{m['au_threshold']:g}; the tier feeds {m['accelerators_supported']:,}")
    for b in d["binding"]:
        console.print(f"  [red]binding:[/] {b['message']}")
    for a in d["alternatives"]:
        console.print(f"  alternative {a['option']}: {a['why_not']}")
    for note in d["notes"]:
        console.print(f"  [yellow]note:[/] {note}")


def storage(
    ctx: typer.Context,
    gpus: int = typer.Option(..., "--gpus", help="GPUs of the cluster (and the training job)."),
    server: str = typer.Option("dgx-h100", "--server", help="Server catalog id (client NICs)."),
    model: str | None = typer.Option(
        None, "--model", help="Model id or YAML trained on --gpus: its checkpoint."),
    data_gbps_per_gpu: float = typer.Option(
        0.0, "--data-gbps-per-gpu", help="Training data each GPU reads, GB/s."),
    dataset_tb: float = typer.Option(0.0, "--dataset-tb", help="Dataset on the tier, TB."),
    mlperf_workload: str | None = typer.Option(
        None, "--mlperf-workload",
        help="unet3d, resnet50 or cosmoflow: data reads as MLPerf Storage defines them."),
    serve_model: str | None = typer.Option(
        None, "--serve-model", help="Model id or YAML served: weights stored and loaded."),
    serve_precision: str = typer.Option("bf16", "--serve-precision", help="Served weights."),
    checkpoint: str = typer.Option("async", "--checkpoint", help="async or sync."),
    copies: int | None = typer.Option(None, "--copies", help="Checkpoints kept (default 3)."),
    system: str | None = typer.Option(
        None, "--system", help="Storage system catalog id (default: the cheapest that fits)."),
    units: int | None = typer.Option(None, "--units", help="Fixed units of --system."),
    local_nvme: str | None = typer.Option(
        None, "--local-nvme",
        help="Local NVMe in each server (catalog id, kind local-nvme): checkpoint staging."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """The storage tier a cluster needs: units, bandwidth, capacity, ports, power, price, and
    how long checkpoints stall, persist and restore on it."""
    from clusterwright.plan.storage import OpsStorageRequest, storage_report

    lim.nonempty(("--server", server), ("--system", system), ("--model", model),
                 ("--serve-model", serve_model), ("--mlperf-workload", mlperf_workload),
                 ("--local-nvme", local_nvme))
    lim.within(("--gpus", gpus, lim.GPUS), ("--data-gbps-per-gpu", data_gbps_per_gpu,
                                            lim.DATA_GBPS_PER_GPU),
               ("--dataset-tb", dataset_tb, lim.DATASET_TB),
               ("--copies", copies, lim.CHECKPOINT_COPIES), ("--units", units, lim.STORAGE_UNITS))
    if checkpoint not in ("async", "sync"):
        fail(f"--checkpoint: {checkpoint!r} is not one of async, sync")
    if serve_precision not in ("fp32", "bf16", "fp16", "fp8", "int8", "int4", "fp4"):
        fail(f"--serve-precision: {serve_precision!r} is not one of fp32, bf16, fp16, fp8, "
             "int8, int4, fp4")
    if units is not None and system is None:
        fail("--units: needs --system (units of which storage system)")
    with user_errors():
        cat = state(ctx).catalog()
    req = OpsStorageRequest(
        gpus=gpus, server=server, model=_model(cat, model, "--model"),
        data_read_gbps_per_gpu=data_gbps_per_gpu, dataset_tb=dataset_tb,
        serve_model=_model(cat, serve_model, "--serve-model"), serve_precision=serve_precision,
        checkpoint="sync" if checkpoint == "sync" else "async", checkpoint_copies=copies,
        system=system, units=units, mlperf_workload=mlperf_workload, local_nvme=local_nvme)

    def payload() -> dict[str, Any]:
        with user_errors(FLAGS, name_flags=True):
            return storage_report(cat, req)

    run_command(as_json, payload, _render)
