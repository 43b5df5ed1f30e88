"""Short, collision-free names for lab namespaces.

Device names like "leaf-su1-r1" can be long, and a namespace name also becomes the FRR
pathspace (a directory in a socket path), so each device gets a short positional name
instead: `cw<pid><tag>-s<i>` for switch i and `cw<pid><tag>-h<i>` for host i. The owner's
pid lets `cleanup_stale` tell a dead run's leftovers from a live run; the random tag keeps
two runs in one process (or a reused pid) apart.
"""

from __future__ import annotations

import os
import re
import secrets
import string
from dataclasses import dataclass

from clusterwright.lab.spec import LabSpec

PREFIX = "cw"
_TAG_LEN = 2
_RUN_ID_RE = re.compile(rf"^{PREFIX}(?P<pid>\d+)(?P<tag>[a-z]{{{_TAG_LEN}}})$")
_NAMESPACE_RE = re.compile(
    rf"^(?P<run_id>{PREFIX}(?P<pid>\d+)[a-z]{{{_TAG_LEN}}})-(?P<kind>[sh])(?P<index>\d+)$"
)


@dataclass(frozen=True)
class NamespaceName:
    """A parsed lab namespace name."""

    run_id: str
    pid: int
    kind: str  # "s" switch, "h" host
    index: int


def new_run_id(pid: int | None = None, tag: str | None = None) -> str:
    """A run id such as "cw4711qz": prefix, owning pid, two random lowercase letters."""
    if pid is None:
        pid = os.getpid()
    if tag is None:
        # Not reproducibility-relevant: only has to differ between runs.
        tag = "".join(secrets.choice(string.ascii_lowercase) for _ in range(_TAG_LEN))
    run_id = f"{PREFIX}{pid}{tag}"
    if not _RUN_ID_RE.match(run_id):
        raise ValueError(f"tag {tag!r} must be {_TAG_LEN} lowercase letters")
    return run_id


def namespace_name(run_id: str, kind: str, index: int) -> str:
    """Namespace for device `index` of `kind` ("s" switch, "h" host) in run `run_id`."""
    if kind not in ("s", "h"):
        raise ValueError(f"kind {kind!r} must be 's' or 'h'")
    return f"{run_id}-{kind}{index}"


def namespace_names(run_id: str, spec: LabSpec) -> dict[str, str]:
    """Map every device name in `spec` to its namespace, in spec order."""
    names = {sw.name: namespace_name(run_id, "s", i) for i, sw in enumerate(spec.switches)}
    names.update({h.name: namespace_name(run_id, "h", i) for i, h in enumerate(spec.hosts)})
    return names


def parse_namespace(name: str) -> NamespaceName | None:
    """Parse a lab namespace name; None for any namespace that is not ours."""
    match = _NAMESPACE_RE.match(name)
    if match is None:
        return None
    return NamespaceName(
        run_id=match["run_id"],
        pid=int(match["pid"]),
        kind=match["kind"],
        index=int(match["index"]),
    )


def run_id_pid(run_id: str) -> int | None:
    """The owning pid encoded in a run id, or None if `run_id` is not one of ours."""
    match = _RUN_ID_RE.match(run_id)
    return int(match["pid"]) if match else None
