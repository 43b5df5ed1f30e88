"""Flows as arrays: (source, destination, ECMP key, PXN relay, NVLS) per connection.

A collective over 131,072 GPUs is millions of connections; one Python object each cost about
1 us to make and 14 us to route. ``Flows`` keeps them as numpy arrays (GPU indices as int32,
keys as uint64), so building, hashing and routing them are array operations
(``sim/routing.py``). ``FlowSpec`` stays as the one-connection form callers and tests write by
hand; a list of them converts with ``Flows.of``.

``mix64_array`` is the SplitMix64 finalizer of ``sim/fabric_net.mix64`` over uint64 arrays
(arithmetic modulo 2^64, as the scalar version masks), so a hash computed either way is the
same number and an ECMP choice the same link.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

_MASK = (1 << 64) - 1
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


def mix64_array(x: np.ndarray) -> np.ndarray:
    """SplitMix64 finalizer of every element of a uint64 array (``fabric_net.mix64``)."""
    x = np.asarray(x, dtype=np.uint64)
    with np.errstate(over="ignore"):
        x = x + _GOLDEN
        x = (x ^ (x >> np.uint64(30))) * _M1
        x = (x ^ (x >> np.uint64(27))) * _M2
        out: np.ndarray = x ^ (x >> np.uint64(31))
    return out


def u64(value: int) -> np.uint64:
    """A Python int as uint64, modulo 2^64 (negative keys wrap as the scalar hash's mask)."""
    return np.uint64(value & _MASK)


@dataclass(frozen=True)
class FlowSpec:
    """One connection from GPU ``src`` to GPU ``dst`` (global GPU indices). ``via`` relays
    through a GPU of the source's NVLink domain first (PXN: reach the destination's rail).
    ``key`` feeds the ECMP hash (the 5-tuple)."""

    src: int
    dst: int
    key: int
    via: int | None = None
    nvls: bool = False  # NVLink SHARP: the GPU's stream to its domain switch and back


class Flows:
    """Connections as parallel arrays; ``via`` is -1 where there is no relay."""

    __slots__ = ("dst", "key", "nvls", "src", "via")

    def __init__(self, src: np.ndarray, dst: np.ndarray, key: np.ndarray,
                 via: np.ndarray | None = None, nvls: np.ndarray | None = None) -> None:
        n = len(src)
        self.src = np.asarray(src, dtype=np.int64)
        self.dst = np.asarray(dst, dtype=np.int64)
        self.key = np.asarray(key, dtype=np.uint64)
        self.via = (np.full(n, -1, dtype=np.int64) if via is None
                    else np.asarray(via, dtype=np.int64))
        self.nvls = np.zeros(n, dtype=bool) if nvls is None else np.asarray(nvls, dtype=bool)
        if not (len(self.dst) == len(self.key) == len(self.via) == len(self.nvls) == n):
            raise ValueError("flow arrays differ in length")

    @classmethod
    def of(cls, flows: Flows | Sequence[FlowSpec]) -> Flows:
        """``flows`` as arrays (a list of ``FlowSpec`` is converted, ``Flows`` passes)."""
        if isinstance(flows, Flows):
            return flows
        items = list(flows)
        return cls(
            np.fromiter((f.src for f in items), dtype=np.int64, count=len(items)),
            np.fromiter((f.dst for f in items), dtype=np.int64, count=len(items)),
            np.fromiter((f.key & _MASK for f in items), dtype=np.uint64, count=len(items)),
            np.fromiter((-1 if f.via is None else f.via for f in items), dtype=np.int64,
                        count=len(items)),
            np.fromiter((f.nvls for f in items), dtype=bool, count=len(items)),
        )

    @classmethod
    def concat(cls, parts: Sequence[Flows]) -> Flows:
        if not parts:
            return cls(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.uint64))
        return cls(np.concatenate([p.src for p in parts]),
                   np.concatenate([p.dst for p in parts]),
                   np.concatenate([p.key for p in parts]),
                   np.concatenate([p.via for p in parts]),
                   np.concatenate([p.nvls for p in parts]))

    def __len__(self) -> int:
        return len(self.src)

    def __getitem__(self, i: int) -> FlowSpec:
        via = int(self.via[i])
        return FlowSpec(int(self.src[i]), int(self.dst[i]), int(self.key[i]),
                        None if via < 0 else via, bool(self.nvls[i]))

    def __iter__(self) -> Iterator[FlowSpec]:
        for i in range(len(self)):
            yield self[i]


def keys(prefix: int, index: np.ndarray) -> np.ndarray:
    """``mix64(prefix | i)`` for every ``i`` of ``index``: the hash keys the collectives give
    their connections (``prefix`` carries the collective and channel in its high bits)."""
    return mix64_array(u64(prefix) | np.asarray(index, dtype=np.uint64))
