"""Network lab: a scaled-down copy of a generated fabric on real FRR daemons.

The proof behind `clusterwright fabric verify`: build the fabric's switches and hosts as
network namespaces joined by veth pairs, run zebra and bgpd with the generated frr.conf
files, and check BGP sessions, ECMP routes and host-to-host pings. Linux, root and FRR only.
"""

from clusterwright.lab.runner import cleanup_stale, preflight, run_lab
from clusterwright.lab.spec import (
    LabError,
    LabHost,
    LabLink,
    LabResult,
    LabSpec,
    LabSwitch,
    RouteCheck,
)

__all__ = [
    "LabError",
    "LabHost",
    "LabLink",
    "LabResult",
    "LabSpec",
    "LabSwitch",
    "RouteCheck",
    "cleanup_stale",
    "preflight",
    "run_lab",
]
