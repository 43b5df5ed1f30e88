"""Fit the host-link constants of the KV host tier on measured DMA copies.

``validation/host_dma_copy.csv`` holds the vLLM blog's CPU->GPU copy rates on H100 for block
sizes of 4 KiB to 16 MiB (1000 blocks a transfer). A copy of b bytes takes t0 + b / B: a fixed
cost per copy and the link's sustained rate. Weighted least squares on the time per block
(weights 1 / measured time: relative errors) gives t0 and B; B over the PCIe Gen5 x16 raw rate
is the efficiency. Prints the two catalog assumptions (``host_copy_latency_s``,
``pcie_host_read_efficiency``) and each row's error.

Run: python scripts/fit_host_dma.py
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from clusterwright.model.host_link import pcie_bytes_per_s

FILE = Path(__file__).resolve().parent.parent / "validation" / "host_dma_copy.csv"
PCIE_GEN = 5  # H100 SXM's host link (NVIDIA H100 datasheet: PCIe Gen5 x16, 128 GB/s both ways)


def fit(path: Path = FILE) -> tuple[float, float, list[tuple[float, float, float]]]:
    """(seconds a copy, bytes/s, [(block KiB, measured GB/s, fitted GB/s)])."""
    with path.open(newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["method"] == "dma"]
    b = np.array([float(r["block_kib"]) * 1024 for r in rows])
    t = b / (np.array([float(r["measured_gb_per_s"]) for r in rows]) * 1e9)
    a = np.stack([np.ones_like(b), b], axis=1) / t[:, None]
    (t0, inv_rate), *_ = np.linalg.lstsq(a, t / t, rcond=None)
    rate = 1.0 / inv_rate
    fitted = b / (t0 + b / rate)
    return float(t0), float(rate), [(bb / 1024, bb / tt / 1e9, ff / 1e9)
                                    for bb, tt, ff in zip(b, t, fitted, strict=True)]


def main() -> None:
    t0, rate, rows = fit()
    for kib, meas, pred in rows:
        print(f"{kib:8.0f} KiB  measured {meas:6.2f} GB/s  fitted {pred:6.2f} "
              f"({pred / meas - 1:+.1%})")
    mape = sum(abs(p / m - 1) for _, m, p in rows) / len(rows)
    print(f"host_copy_latency_s: {t0:.3g}  rate {rate / 1e9:.1f} GB/s  "
          f"pcie_host_read_efficiency: {rate / pcie_bytes_per_s(PCIE_GEN):.3f}  MAPE {mape:.1%}")


if __name__ == "__main__":
    main()
