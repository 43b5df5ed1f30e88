"""When an unfinished run is stale: its owner process is gone and it can never finish.

Every run records the process that owns it (the one that created it while ``queued``, the one
executing it once ``running``): pid, host name and, on Linux, the process start time, so that a
reused pid is not taken for the owner. The owner's store writes a heartbeat every
``HEARTBEAT_INTERVAL_S`` while it holds unfinished runs.

The rule, for a ``queued`` or ``running`` run:

- owner on this host: stale iff the owner process is gone (no such pid, a zombie, or another
  process with that pid). The heartbeat is not consulted: a live owner may be stopped (SIGSTOP,
  a suspended laptop) and will write again when it resumes, so it is never failed.
- owner on another host (a database on a shared file system): its pid cannot be checked, so
  stale iff its last heartbeat is older than ``STALE_AFTER_S``.
- no owner recorded (a run from before schema 2): stale iff it was created (or last beat)
  more than ``STALE_AFTER_S`` ago, since nothing will ever beat for it.
"""

from __future__ import annotations

from datetime import datetime

from clusterwright.ownership import Owner
from clusterwright.store.rows import RunRow

HEARTBEAT_INTERVAL_S = 5.0
# Three missed beats plus a margin for a writer waiting on the lock and clock skew between hosts.
STALE_AFTER_S = 3 * HEARTBEAT_INTERVAL_S + 15.0
UNFINISHED = ("queued", "running")


def _age_s(stamp: str | None, now: datetime) -> float | None:
    if stamp is None:
        return None
    try:
        return (now - datetime.fromisoformat(stamp)).total_seconds()
    except (ValueError, TypeError):
        return None  # not a time we wrote: no evidence either way


def stale_reason(run: RunRow, now: datetime) -> str | None:
    """Why ``run`` can never finish (the message it is failed with), or None if it is finished
    or may still be running. ``now`` is an aware UTC datetime."""
    if run.status not in UNFINISHED:
        return None
    if run.owner_pid is not None:
        owner = Owner(run.owner_pid, run.owner_host or "", run.owner_started)
        alive = owner.alive()
        if alive is not None:
            return None if alive else f"interrupted: owner process {run.owner_pid} is gone"
        age = _age_s(run.heartbeat_at or run.created_at, now)
        if age is None or age <= STALE_AFTER_S:
            return None
        return (f"interrupted: owner process {run.owner_pid} on {run.owner_host} sent no "
                f"heartbeat for {age:.0f} s")
    age = _age_s(run.heartbeat_at or run.created_at, now)
    if age is None or age <= STALE_AFTER_S:
        return None
    return ("interrupted: left unfinished by a Clusterwright that recorded no owner process, "
            f"and unchanged for {age:.0f} s")
