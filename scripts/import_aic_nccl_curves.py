"""Import the nccl-tests curves NVIDIA AIConfigurator measured on each system into
``validation/collective_curves.csv`` as held-out rows of the collective model.

AIConfigurator (Apache-2.0) ships, beside its per-operator kernel tables, the NCCL
collectives it measured on each system:
``aiconfigurator_core/systems/data/<system>/comm/nccl/<version>/nccl_perf.parquet``
(columns nccl_dtype, num_gpus, message_size in elements, op_name, latency in ms). Its
collector (``collector/collect_nccl.py`` in ai-dynamo/aiconfigurator) runs nccl-tests'
``<op>_perf -b S -e S -t N -d half -w 40 -a 1 -n 1000|500|100 -c 0`` for each size (one
process, N threads of one GPU each; 1000 iterations up to 1 MB, 500 up to 16 MB, 100 above)
and keeps the out-of-place time. These are the only single-node curves on 8 x B200, 8 x
B300, 8 x H200 (NCCL 2.29), 2-4 x GB300 and the PCIe parts (L40S, RTX PRO 6000) the table
has; nothing is fitted on them.

For each system this keeps the newest NCCL version, every operation (all-reduce,
all-gather, reduce-scatter, all-to-all) and group size, at the sizes 1 KiB x 4^k up to
256 MiB (the median where a size was measured more than once), 16-bit elements. Sizes
follow nccl-tests (all-reduce per rank, all-gather and reduce-scatter the whole buffer,
all-to-all what each rank sends), as the table reads them.

Needs pandas and pyarrow (the peers' venv: benchmarks/run.sh installs aiconfigurator==0.12.0
with them). Run:

    benchmarks/.venv-peers/bin/python scripts/import_aic_nccl_curves.py [--data DIR] [--write]

Without ``--write`` it prints the rows; with it, it replaces the file's ``aic012_`` rows.
"""

from __future__ import annotations

import argparse
import csv
import io
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TABLE = ROOT / "validation" / "collective_curves.csv"
PREFIX = "aic012_"
PACKAGE = "aiconfigurator-core 0.12.0 (PyPI, Apache-2.0)"

# AIConfigurator's system name -> (catalog GPU, catalog server, what the system is)
SYSTEMS = {
    "h100_sxm": ("h100-sxm", "dgx-h100", "8 x H100 SXM over NVLink 4 and NVSwitch"),
    "h200_sxm": ("h200-sxm", "dgx-h200", "8 x H200 SXM over NVLink 4 and NVSwitch"),
    "b200_sxm": ("b200", "dgx-b200", "8 x B200 over NVLink 5 and NVSwitch"),
    "b300_sxm": ("b300-sxm", "dgx-b300", "8 x B300 over NVLink 5 and NVSwitch"),
    "gb200": ("gb200", "gb200-nvl72", "one 4-GPU tray of a GB200 NVL72 rack, NVLink 5"),
    "gb300": ("gb300", "gb300-nvl72", "one 4-GPU tray of a GB300 NVL72 rack, NVLink 5"),
    "a100_sxm": ("a100-80gb-sxm", "dgx-a100", "8 x A100 SXM 80 GB over NVLink 3 and NVSwitch"),
    "l40s": ("l40s", "sys-521ge-tnrt-l40s-8", "8 x L40S on PCIe 4.0 (no NVLink)"),
    "rtx_pro_6000_server": ("rtx-pro-6000-server", "esc8000a-e13p-rtx-pro-6000-8",
                            "8 x RTX PRO 6000 Blackwell Server on PCIe 5.0 (no NVLink)"),
}
OPS = ("all_reduce", "all_gather", "reduce_scatter", "alltoall")
SIZES = [1024 * 4 ** k for k in range(10)]  # 1 KiB .. 256 MiB
COLUMNS = ["id", "set", "curve", "gpu", "server", "nodes", "gpus_per_node", "collective",
           "size_bytes", "time_us", "busbw_gbps", "nccl_version", "env", "source", "verify",
           "note"]


def _version_key(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in v.split(".") if x.isdigit())


def rows(data: Path) -> list[dict[str, str]]:
    import pandas as pd  # the peers' venv

    out: list[dict[str, str]] = []
    for system, (gpu, server, what) in SYSTEMS.items():
        versions = sorted((p.name for p in (data / system / "comm" / "nccl").iterdir()
                           if (p / "nccl_perf.parquet").exists()), key=_version_key)
        if not versions:
            continue
        ver = versions[-1]
        rel = f"aiconfigurator_core/systems/data/{system}/comm/nccl/{ver}/nccl_perf.parquet"
        df = pd.read_parquet(data / system / "comm" / "nccl" / ver / "nccl_perf.parquet")
        df = df[df.nccl_dtype == "half"]
        for op in OPS:
            for n in sorted(df[df.op_name == op].num_gpus.unique()):
                part = df[(df.op_name == op) & (df.num_gpus == n)]
                curve = f"{PREFIX}{system}_g{n}_{op}"
                for size in SIZES:
                    lat = part[part.message_size * 2 == size].latency.tolist()
                    if not lat:
                        continue
                    out.append({
                        "id": f"{curve}@{size}", "set": "held-out", "curve": curve,
                        "gpu": gpu, "server": server, "nodes": "1", "gpus_per_node": str(n),
                        "collective": op, "size_bytes": str(size),
                        "time_us": f"{statistics.median(lat) * 1e3:.2f}", "busbw_gbps": "",
                        "nccl_version": f"{ver} (collection_meta.yaml)",
                        "env": (f"{op}_perf -b {size} -e {size} -t {n} -d half -w 40 -a 1 "
                                "-c 0 (one process, one thread per GPU), NCCL defaults; "
                                "out-of-place time (collector/collect_nccl.py)"),
                        "source": f"{PACKAGE} {rel}",
                        "verify": "V",
                        "note": f"NVIDIA AIConfigurator's {system}: {what}",
                    })
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=None,
                    help="aiconfigurator_core/systems/data (default: the installed package's)")
    ap.add_argument("--write", action="store_true",
                    help=f"replace the {PREFIX} rows of {TABLE.relative_to(ROOT)}")
    args = ap.parse_args(argv)
    data = args.data
    if data is None:
        import aiconfigurator_core

        data = Path(aiconfigurator_core.__file__).parent / "systems" / "data"
    new = rows(data)
    if not args.write:
        w = csv.DictWriter(sys.stdout, COLUMNS)
        w.writeheader()
        w.writerows(new)
        return 0
    with TABLE.open(newline="") as f:
        old = [r for r in csv.DictReader(f) if not r["id"].startswith(PREFIX)]
    buf = io.StringIO()
    w = csv.DictWriter(buf, COLUMNS)  # the file keeps csv's CRLF rows
    w.writeheader()
    w.writerows(old + new)
    TABLE.write_text(buf.getvalue())
    print(f"{len(new)} rows written ({len(old)} others kept) to {TABLE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
