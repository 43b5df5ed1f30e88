"""Collective curves: the closed-form collective model against measured nccl-tests curves,
8 bytes to 16 GiB (``validation/collective_curves.csv``).

Each row is one message size of one published curve (the source and the system in the row).
The model predicts its time with ``model/collectives.py`` on the row's GPU and server from the
catalog, with the stack's collective library: the group is ``nodes x gpus_per_node`` ranks,
consecutive on each server; with fewer GPUs per server than it has, ranks are that many GPUs
apart (one GPU per node uses one NIC). Sizes follow nccl-tests: all-reduce and send/recv per
rank, all-gather and reduce-scatter the whole buffer, all-to-all what each rank sends.
Rows that publish only bus bandwidth are turned into time with nccl-tests' definitions.

Development rows (H100, NCCL 2.29.2, one node and ten nodes) fit the three constants NCCL's
tuner does not have (``scripts/calibrate_collectives.py``); held-out rows (A100, H200, GB200
NVL72, AWS EFA, send/recv, and NVIDIA AIConfigurator's single-node curves on nine systems,
``scripts/import_aic_nccl_curves.py``) were never used to fit anything.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from pathlib import Path

from clusterwright.catalog.registry import Catalog
from clusterwright.catalog.stacks import CollectiveLib
from clusterwright.design.train import net_for
from clusterwright.model import collectives as coll
from clusterwright.model.xp import ScalarOps
from clusterwright.validation.rows import (
    CsvRow,
    NotCoveredError,
    Row,
    TableResult,
    bad,
    choice,
    integer,
    number,
    optional_number,
    predict_each,
    read_csv,
    text,
)

FILE = "collective_curves.csv"
HOST_GPUS = {"gb200": 4, "gb300": 4}  # GPUs per host (tray) where it is not the server's count
TOLERANCE = 0.25  # MAPE the development rows are held to (tests/validation)
COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "alltoall", "sendrecv")
# nccl-tests operations the collective model does not have: such a row is not covered.
NOT_MODELLED = ("broadcast", "reduce", "gather", "scatter", "hypercube")


def read_rows(path: str | Path = FILE) -> list[CsvRow]:
    return read_csv(path)


def measured_time_s(r: Mapping[str, str]) -> float:
    """The row's time (s); from bus bandwidth where only that is published."""
    t = optional_number(r, "time_us", positive=True)
    if t is not None:
        return t * 1e-6
    if optional_number(r, "busbw_gbps") is None:
        raise bad(r, "time_us", "is empty and so is busbw_gbps (give one of them)")
    n = integer(r, "nodes", low=1) * integer(r, "gpus_per_node", low=1)
    factor = 2.0 * (n - 1) / n if r["collective"] == "all_reduce" else (n - 1) / n
    return number(r, "size_bytes", positive=True) * factor / (
        number(r, "busbw_gbps", positive=True) * 1e9)


def forced_algorithm(r: Mapping[str, str]) -> str:
    """The all-reduce algorithm the run forced with ``NCCL_ALGO`` in its ``env`` column (ring,
    tree or nvls; "" when NCCL chose). NCCL_ALGO=NVLSTree is NVLS here (the model's NVLS path
    runs NVLS-tree across domains)."""
    m = _ALGO.search(r.get("env") or "")
    if not m:
        return ""
    return {"ring": "ring", "tree": "tree", "nvls": "nvls", "nvlstree": "nvls"}.get(
        m.group(1).lower(), "")


_ALGO = re.compile(r"NCCL_ALGO=([A-Za-z]+)")


def predicted_time_s(cat: Catalog, r: Mapping[str, str],
                     libs: Mapping[str, CollectiveLib] | None = None) -> float:
    """The model's time (s) for one row."""
    kind = choice(r, "collective", (*COLLECTIVES, *NOT_MODELLED))
    nodes, ppn = integer(r, "nodes", low=1), integer(r, "gpus_per_node", low=1)
    size = number(r, "size_bytes", positive=True)
    if kind in NOT_MODELLED:
        raise NotCoveredError(f"the collective model has no {kind} (it has "
                              f"{', '.join(COLLECTIVES)})")
    gpu = cat.gpu(text(r, "gpu"))
    stack = cat.stack_for_gpu(gpu.id)
    server = cat.server(text(r, "server"))
    if ppn > server.gpus:
        raise NotCoveredError(f"{ppn} GPUs per node, but {server.id} has {server.gpus}")
    net = net_for(cat, gpu, stack, server)
    if libs and stack.collectives in libs:
        net = coll.Interconnect(net.domain_gpus, net.scale_up_busbw, net.nvls_busbw, net.net_busbw,
                             libs[stack.collectives])
    n = nodes * ppn
    host = HOST_GPUS.get(gpu.id, server.gpus)
    stride = max(1, host // ppn)
    if kind == "all_reduce":
        forced = forced_algorithm(r)
        if forced:
            nodes = int(coll.nodes_spanned(ScalarOps, float(n), float(stride), net))
            t = coll.allreduce_algorithm_s(forced, size, n, nodes, net)
            if math.isfinite(t):
                return t
            # An algorithm the system cannot run (NVLS without NVLink SHARP, Azure's A100
            # runs): NCCL falls back to the ones it can, as without the variable.
        return float(coll.allreduce_s(size, n, stride, net))
    if kind in ("all_gather", "reduce_scatter"):
        return float(coll.allgather_s(size, n, stride, net))
    if kind == "alltoall":
        return float(coll.alltoall_s(size, n, stride, net))
    return float(coll.p2p_s(size, nodes > 1, net))  # sendrecv


def predict_rows(cat: Catalog, rows: list[CsvRow],
                 libs: Mapping[str, CollectiveLib] | None = None
                 ) -> list[tuple[CsvRow, float]]:
    """(row, signed relative error of the predicted time) for every row."""
    out = []
    for r in rows:
        meas = measured_time_s(r)
        out.append((r, (predicted_time_s(cat, r, libs) - meas) / meas))
    return out


def collective_curves_table(path: str | Path = FILE) -> TableResult:
    """Every curve row: predicted vs measured time of one collective call. ``path``: another
    file in collective_curves.csv's format. A row the model cannot predict (a GPU or server
    the catalog lacks, an operation the collective model does not have) is not covered, with
    the reason."""
    from clusterwright.catalog.registry import load_catalog

    cat = load_catalog(env={})

    def one(r: CsvRow, set_: str) -> list[Row]:
        pred = predicted_time_s(cat, r)
        meas = measured_time_s(r)
        n = integer(r, "nodes", low=1) * integer(r, "gpus_per_node", low=1)
        return [Row(
            r["id"], r["collective"], meas * 1e6, pred * 1e6, "us", r["source"], set_,
            f"{r['nodes']}x{r['gpus_per_node']} {r['gpu']}, {n} ranks, "
            f"NCCL {r['nccl_version'][:6]}",
            group=r["curve"],
        )]

    rows, not_covered = predict_each(read_rows(path), one, default_set=None)
    return TableResult("collective_curves", str(path), rows, tolerance=TOLERANCE,
                       not_covered=not_covered)
