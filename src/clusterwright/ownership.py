"""Which process owns a run or a temporary directory, and whether that process still runs.

Shared by the store (run owners) and the atomic directory writer (``export/fabric.py``); stdlib
only, so any layer may import it.

A pid alone is not an identity: pids are reused. On Linux the process start time
(``/proc/<pid>/stat`` field 22, clock ticks since boot) pins a process down, so a reused pid
reads as gone. Where ``/proc`` is missing the pid is all there is and a reused pid reads as
alive: the safe mistake, since it keeps a leftover instead of removing a live owner's work.
Liveness can only be checked on this host; owners elsewhere are judged by the caller (the store
uses heartbeats).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import socket
from dataclasses import dataclass
from pathlib import Path

# A temporary sibling is ``.<name>.<kind>-<host tag>-<pid>-<start>-<random>``; the name part is
# cut so that, with mkdtemp's 8 random characters, it stays far below NAME_MAX (255).
_NAME_CHARS = 100
_TEMP_RE = re.compile(
    r"^\.(?P<name>.*)\.(?:tmp|old)-(?P<host>[0-9a-f]{8})-(?P<pid>\d+)-(?P<started>\d+)-"
    r"[a-z0-9_]+$"
)


@dataclass(frozen=True)
class Owner:
    """A process: pid, host name and start-time token (None where it cannot be read)."""

    pid: int
    host: str
    started: str | None

    @classmethod
    def current(cls) -> Owner:
        """This process."""
        pid = os.getpid()
        return cls(pid, this_host(), process_started(pid))

    def alive(self) -> bool | None:
        """Whether the owner still runs; None if it is on another host (cannot be checked)."""
        if self.host != this_host():
            return None
        return process_alive(self.pid, self.started)


def this_host() -> str:
    """This machine's host name."""
    return socket.gethostname()


def _stat_fields(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    # Field 2 (the command name) is in parentheses and may hold spaces or ')'.
    return text[text.rfind(")") + 2:].split()


def process_started(pid: int) -> str | None:
    """The start time of process ``pid`` in clock ticks since boot (Linux), else None."""
    fields = _stat_fields(pid)
    # After the command name: field 3 (state) is index 0, field 22 (starttime) index 19.
    return fields[19] if fields is not None and len(fields) > 19 else None


def process_alive(pid: int, started: str | None) -> bool:
    """Whether process ``pid`` on this host runs and, if ``started`` is given, is the same
    process (not a later one that got its pid)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # it exists, owned by another user
    except OSError:
        return False
    fields = _stat_fields(pid)
    if fields is None:
        return True  # no /proc: the pid exists, nothing more to check
    if fields and fields[0] in ("Z", "X"):
        return False  # killed, not yet reaped by its parent: it will never write again
    return started is None or len(fields) <= 19 or fields[19] == started


def _host_tag() -> str:
    # A digest, not the name: host names may hold dots, which the name pattern splits on.
    return hashlib.sha256(this_host().encode()).hexdigest()[:8]


def temp_prefix(name: str, kind: str = "tmp") -> str:
    """The ``mkdtemp`` prefix for a temporary sibling of directory ``name`` made by this
    process; ``kind`` is ``tmp`` (being filled) or ``old`` (a replaced directory being removed).
    The owner in the name lets ``remove_stale_temp_dirs`` tell a dead writer's leftovers from a
    live one's."""
    if kind not in ("tmp", "old"):
        raise ValueError(f"kind {kind!r} must be 'tmp' or 'old'")
    pid = os.getpid()
    started = process_started(pid) or "0"
    return f".{name[:_NAME_CHARS]}.{kind}-{_host_tag()}-{pid}-{started}-"


def remove_stale_temp_dirs(parent: Path, name: str | None = None) -> list[Path]:
    """Remove the temporary siblings in ``parent`` (of directory ``name``, or of any name) whose
    writer on this host is gone; returns those removed. A live writer's directory, one made on
    another host, and anything not named by ``temp_prefix`` are never touched."""
    removed: list[Path] = []
    try:
        entries = list(os.scandir(parent))
    except OSError:
        return removed
    tag = _host_tag()
    for entry in entries:
        m = _TEMP_RE.match(entry.name)
        if m is None or m["host"] != tag:
            continue
        if name is not None and m["name"] != name[:_NAME_CHARS]:
            continue
        started = None if m["started"] == "0" else m["started"]
        if process_alive(int(m["pid"]), started):
            continue
        try:
            if not entry.is_dir(follow_symlinks=False):
                continue
        except OSError:
            continue
        # Best effort: a leftover that cannot be removed now is tried again next time.
        shutil.rmtree(entry.path, ignore_errors=True)
        if not os.path.lexists(entry.path):
            removed.append(Path(entry.path))
    return removed
