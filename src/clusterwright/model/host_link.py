"""The link between a GPU and its CPU's memory: PCIe rates and the time to copy KV blocks.

A KV-cache host tier (vLLM's OffloadingConnector, SGLang's HiCache, TensorRT-LLM's host
cache) loads a cached prefix back to HBM block by block; each block is one DMA copy (vLLM
from 0.12 keeps a block's layers contiguous, vLLM blog 2026-01-08), so a copy costs a fixed
launch latency plus its bytes at the link's rate.
"""

from __future__ import annotations


def pcie_bytes_per_s(gen: int, lanes: int = 16) -> float:
    """Raw PCIe bandwidth one direction, bytes/s: 8 GT/s a lane at Gen3, doubling each
    generation (PCI-SIG: Gen4 16, Gen5 32, Gen6 64 GT/s), 8 bits a byte; 128b/130b (Gen3-5)
    and FLIT (Gen6) framing are left to the measured efficiency that scales it. Gen1-2
    (2.5 and 5 GT/s, 8b/10b) are below any catalog part."""
    if gen < 3:
        raise ValueError(f"pcie_gen: Gen{gen} is older than any part this models (Gen3+)")
    return 8e9 * 2.0 ** (gen - 3) * lanes / 8.0


def block_copy_s(block_bytes: float, link_bytes_per_s: float, copy_latency_s: float) -> float:
    """Seconds to copy one block of ``block_bytes`` between CPU memory and HBM: the DMA's
    fixed cost per copy plus the bytes at ``link_bytes_per_s``."""
    if not (link_bytes_per_s > 0 and block_bytes >= 0 and copy_latency_s >= 0):
        raise ValueError("block_copy_s: needs a positive link rate and non-negative sizes")
    return copy_latency_s + block_bytes / link_bytes_per_s
