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
NVL72, AWS EFA, send/recv) were never used to fit anything.
"""

from __future__ import annotations

from collections.abc import Mapping

from clusterwright.catalog.registry import Catalog
from clusterwright.catalog.stacks import CollectiveLib
from clusterwright.design.train import net_for
from clusterwright.errors import InputError
from clusterwright.model import collectives as coll
from clusterwright.validation.rows import Row, TableResult, read_csv

FILE = "collective_curves.csv"
HOST_GPUS = {"gb200": 4}  # GPUs per host (tray) where it is not the server's count
TOLERANCE = 0.25  # MAPE the development rows are held to (tests/validation)


def read_rows() -> list[dict[str, str]]:
    return read_csv(FILE)


def measured_time_s(r: Mapping[str, str]) -> float:
    """The row's time (s); from bus bandwidth where only that is published."""
    if r["time_us"]:
        return float(r["time_us"]) * 1e-6
    n = int(r["nodes"]) * int(r["gpus_per_node"])
    factor = 2.0 * (n - 1) / n if r["collective"] == "all_reduce" else (n - 1) / n
    return float(r["size_bytes"]) * factor / (float(r["busbw_gbps"]) * 1e9)


def predicted_time_s(cat: Catalog, r: Mapping[str, str],
                     libs: Mapping[str, CollectiveLib] | None = None) -> float:
    """The model's time (s) for one row."""
    gpu = cat.gpu(r["gpu"])
    stack = cat.stack_for_gpu(gpu.id)
    server = cat.server(r["server"])
    net = net_for(cat, gpu, stack, server)
    if libs and stack.collectives in libs:
        net = coll.Interconnect(net.domain_gpus, net.scale_up_busbw, net.nvls_busbw, net.net_busbw,
                             libs[stack.collectives])
    nodes, ppn = int(r["nodes"]), int(r["gpus_per_node"])
    n = nodes * ppn
    host = HOST_GPUS.get(gpu.id, server.gpus)
    stride = max(1, host // ppn)
    size = float(r["size_bytes"])
    kind = r["collective"]
    if kind == "all_reduce":
        return float(coll.allreduce_s(size, n, stride, net))
    if kind in ("all_gather", "reduce_scatter"):
        return float(coll.allgather_s(size, n, stride, net))
    if kind == "alltoall":
        return float(coll.alltoall_s(size, n, stride, net))
    if kind == "sendrecv":
        return float(coll.p2p_s(size, nodes > 1, net))
    raise InputError(f"{FILE} row {r['id']}: unknown collective {kind!r}")


def predict_rows(cat: Catalog, rows: list[dict[str, str]],
                 libs: Mapping[str, CollectiveLib] | None = None
                 ) -> list[tuple[dict[str, str], float]]:
    """(row, signed relative error of the predicted time) for every row."""
    out = []
    for r in rows:
        meas = measured_time_s(r)
        out.append((r, (predicted_time_s(cat, r, libs) - meas) / meas))
    return out


def collective_curves_table() -> TableResult:
    """Every curve row: predicted vs measured time of one collective call."""
    from clusterwright.catalog.registry import load_catalog

    cat = load_catalog(env={})
    rows = []
    for r in read_rows():
        meas = measured_time_s(r)
        pred = predicted_time_s(cat, r)
        n = int(r["nodes"]) * int(r["gpus_per_node"])
        rows.append(Row(
            r["id"], r["collective"], meas * 1e6, pred * 1e6, "us", r["source"], r["set"],
            f"{r['nodes']}x{r['gpus_per_node']} {r['gpu']}, {n} ranks, "
            f"NCCL {r['nccl_version'][:6]}",
            group=r["curve"],
        ))
    return TableResult("collective_curves", FILE, rows, tolerance=TOLERANCE)
