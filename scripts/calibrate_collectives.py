"""Fit the collective model's constants that NCCL's tuner leaves out, on measured curves.

NCCL's own latency and bandwidth tables are used as released (catalog/data/
collective_libs.yaml); three numbers are not in them and are fitted here, once, on the
development curves of validation/collective_curves.csv (H100, NCCL 2.29.2):

- launch_us: the per-call floor beyond the tuner's latency (host launch, kernel start);
- alltoall_peer_us: the per-peer cost of all-to-all inside a domain and across.

net_hop_us (extra latency per network hop, NCCL's graph->latencyInter) stays 0: the tuner's
own network latency fits the one-GPU-per-node ten-node curves. The ten-node curves with eight
GPUs per node run 2-3x slower at 32-512 MiB than NCCL's model and than the same nodes with
fewer GPUs each; their fabric is not stated, so they are held out rather than fitted.

A grid search minimises the mean absolute percentage error of the predicted time over all
development rows. It prints the best point and the neighbouring ones; the catalog entry
nccl-2.28-hopper carries the result and cites this script. Run:

    python scripts/calibrate_collectives.py

With ``--lib nccl-2.28-blackwell`` it fits that library's launch_us alone, on the development
curves of the GPUs whose stack uses it (Azure's 4 x GB200 all-reduce, 1 KB to 8 GB, forced
to Ring): the only Blackwell curve with small messages; its all-to-all and network constants
stay as they are (no Blackwell curve measures them).
"""

from __future__ import annotations

import itertools
import sys

from clusterwright.catalog.registry import Catalog, load_catalog
from clusterwright.catalog.stacks import CollectiveLib
from clusterwright.validation.collective_curves_table import predict_rows, read_rows
from clusterwright.validation.rows import CsvRow


def main() -> None:
    cat = load_catalog(env={})
    lib_id = sys.argv[sys.argv.index("--lib") + 1] if "--lib" in sys.argv else "nccl-2.28-hopper"
    lib = cat.collective_lib(lib_id)
    rows = [r for r in read_rows() if r["set"] == "dev"
            and cat.stack_for_gpu(r["gpu"]).collectives == lib.id]
    if lib_id != "nccl-2.28-hopper":
        fit_launch(cat, lib, rows)
        return
    results = []
    for launch, hop, peer_in, peer_out in itertools.product(
        (2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 14.0, 16.0),
        (0.0,),  # net_hop_us: NCCL's table as released
        (1.0, 2.0, 4.0, 6.0, 8.0),
        (2.0, 4.0, 6.0, 8.0),
    ):
        trial = replace_lib(lib, launch, hop, (peer_in, peer_out))
        errs = [abs(e) for _, e in predict_rows(cat, rows, {lib.id: trial})]
        results.append((sum(errs) / len(errs), launch, hop, peer_in, peer_out))
    results.sort()
    print("MAPE   launch_us  net_hop_us  a2a peer in/out us")
    for mape, launch, hop, pi, po in results[:10]:
        print(f"{100 * mape:5.2f}%  {launch:8.1f}  {hop:10.1f}  {pi:.1f} / {po:.1f}")
    print(f"({len(rows)} development rows)", file=sys.stderr)


def fit_launch(cat: Catalog, lib: CollectiveLib, rows: list[CsvRow]) -> None:
    """launch_us alone, on a 0.5 us grid, the library's other constants as they are."""
    results = []
    for launch in [0.5 * k for k in range(1, 41)]:
        trial = lib.model_copy(update={"launch_us": launch})
        errs = [abs(e) for _, e in predict_rows(cat, rows, {lib.id: trial})]
        results.append((sum(errs) / len(errs), launch))
    results.sort()
    print("MAPE   launch_us")
    for mape, launch in results[:8]:
        print(f"{100 * mape:5.2f}%  {launch:8.1f}")
    print(f"({len(rows)} development rows of {lib.id})", file=sys.stderr)


def replace_lib(lib: CollectiveLib, launch: float, hop: float, peer: tuple[float, float]
                ) -> CollectiveLib:
    return lib.model_copy(update={"launch_us": launch, "net_hop_us": hop,
                                  "alltoall_peer_us": peer})


if __name__ == "__main__":
    main()
