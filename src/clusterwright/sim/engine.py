"""The shared discrete-event engine: a time-ordered queue of callbacks.

Every simulator (network flows, serving, cluster operations) schedules work here. Events at the
same time run in the order they were scheduled, so a run is reproducible; randomness comes from
the engine's seeded generator only.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from clusterwright.errors import InputError
from clusterwright.spec.scenario import MAX_SEED


class SimError(InputError):
    """A simulation that cannot run as asked (unknown rank, disconnected fabric, ...)."""


def check_seed(seed: int, field: str = "seed") -> None:
    """Raise ``InputError`` blaming ``field`` unless ``seed`` is an integer in
    ``0..MAX_SEED`` (numpy refuses negative seeds with a bare ValueError; scenario files take
    the same 32-bit range)."""
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) \
            or not 0 <= seed <= MAX_SEED:
        raise InputError(f"{field}: must be an integer between 0 and {MAX_SEED:,}, got {seed!r}",
                         field=field)


@dataclass(order=True)
class Event:
    """A scheduled callback. ``cancel()`` drops it without touching the queue."""

    time: float
    seq: int
    fn: Callable[..., Any] = field(compare=False)
    args: tuple[Any, ...] = field(compare=False, default=())
    cancelled: bool = field(compare=False, default=False)

    def cancel(self) -> None:
        self.cancelled = True


class Engine:
    """Discrete-event loop. Times are seconds of simulated time."""

    def __init__(self, seed: int = 0) -> None:
        check_seed(seed)
        self.now = 0.0
        self.rng = np.random.default_rng(seed)
        self.events = 0  # callbacks run
        # (time, seq, event): ordered by time, then by the order scheduled (seq is unique, so
        # the event itself is never compared), as tuples compare in C.
        self._queue: list[tuple[float, int, Event]] = []
        self._seq = itertools.count()
        self._stopped = False

    def at(self, time: float, fn: Callable[..., Any], *args: Any) -> Event:
        """Schedule ``fn(*args)`` at absolute time ``time`` (s); never in the past."""
        if not time == time:  # NaN would break the heap's ordering
            raise ValueError("cannot schedule at NaN")
        if time < self.now - 1e-12:
            raise ValueError(f"cannot schedule at {time} s, before now ({self.now} s)")
        ev = Event(max(time, self.now), next(self._seq), fn, args)
        heapq.heappush(self._queue, (ev.time, ev.seq, ev))
        return ev

    def after(self, delay: float, fn: Callable[..., Any], *args: Any) -> Event:
        """Schedule ``fn(*args)`` ``delay`` seconds from now."""
        return self.at(self.now + max(0.0, delay), fn, *args)

    def stop(self) -> None:
        """End ``run`` after the event running now (the queue is kept)."""
        self._stopped = True

    @property
    def stopped(self) -> bool:
        return self._stopped

    def pending(self) -> int:
        return sum(1 for _, _, e in self._queue if not e.cancelled)

    def run(self, until: float | None = None, max_events: int | None = None) -> None:
        """Run events in time order until the queue is empty, ``until`` (s), ``max_events``
        callbacks or a callback calls ``stop()``."""
        ran = 0
        self._stopped = False
        while self._queue:
            ev = self._queue[0][2]
            if until is not None and ev.time > until:
                self.now = until
                return
            heapq.heappop(self._queue)
            if ev.cancelled:
                continue
            self.now = ev.time
            ev.fn(*ev.args)
            self.events += 1
            ran += 1
            if self._stopped:
                return
            if max_events is not None and ran >= max_events:
                return
