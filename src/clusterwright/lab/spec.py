"""What a lab run is asked to build and check, and what it found.

The lab is a scaled-down copy of a generated Ethernet fabric: one network namespace per switch
and per host, veth pairs for cables, real FRR daemons on the switches. These types are plain
data so the fabric model (or a test) can build a spec without touching the kernel.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field

from clusterwright.errors import ClusterwrightError

# Linux IFNAMSIZ is 16 including the trailing NUL.
IFNAME_MAX = 15
_IFNAME_RE = re.compile(r"^[A-Za-z0-9_.-]+$")


class LabError(ClusterwrightError):
    """The lab could not be built or queried: not root, FRR missing, `ip` failed, bad spec."""


@dataclass(frozen=True)
class LabLink:
    """One cable, built as a veth pair: `a_node:a_if` <-> `b_node:b_if`. `up` False builds it
    with its `a` end down (a link that is cabled but down: the peer loses carrier too)."""

    a_node: str
    a_if: str
    b_node: str
    b_if: str
    up: bool = True


@dataclass(frozen=True)
class LabSwitch:
    """A switch: device name (any length) and the full frr.conf text, used unmodified."""

    name: str
    frr_config: str


@dataclass(frozen=True)
class LabHost:
    """A host: one interface with a CIDR address and a default route via `gateway`."""

    name: str
    interface: str
    address: str
    gateway: str


@dataclass(frozen=True)
class RouteCheck:
    """`node` must have `prefix` installed with at least `min_nexthops` nexthops in its FIB."""

    node: str
    prefix: str
    min_nexthops: int


@dataclass(frozen=True)
class LabSpec:
    """Everything to build and check; `sessions_expected` counts each BGP session once."""

    switches: list[LabSwitch]
    hosts: list[LabHost]
    links: list[LabLink]
    sessions_expected: int
    route_checks: list[RouteCheck]
    pings: list[tuple[str, str]]  # (host name, destination address)


@dataclass
class LabResult:
    """Outcome of one run. `failures` holds one human-readable line per failed check."""

    sessions_established: int
    sessions_expected: int
    multipath_ok: bool
    ping_ok: bool
    converge_s: float  # seconds from daemon start until all checks passed (or until timeout)
    failures: list[str]
    run_id: str = ""
    # device name -> network namespace, so a kept lab can be entered by hand
    namespaces: dict[str, str] = field(default_factory=dict)

    def ok(self) -> bool:
        """True only if every session came up, every route check and every ping passed."""
        return (
            self.sessions_established == self.sessions_expected
            and self.multipath_ok
            and self.ping_ok
            and not self.failures
        )


def validate_spec(spec: LabSpec) -> None:
    """Reject a spec the kernel or the runner would choke on, naming the bad field.

    Checked before any namespace exists, so a bad spec never leaves anything behind.
    """
    names: set[str] = set()
    for where, name in [(f"switches[{i}]", s.name) for i, s in enumerate(spec.switches)] + [
        (f"hosts[{i}]", h.name) for i, h in enumerate(spec.hosts)
    ]:
        if not name:
            raise LabError(f"{where}.name: empty device name")
        if name in names:
            raise LabError(f"{where}.name: duplicate device name {name!r}")
        names.add(name)

    endpoints: set[tuple[str, str]] = set()
    for i, link in enumerate(spec.links):
        for side, node, ifname in (("a", link.a_node, link.a_if), ("b", link.b_node, link.b_if)):
            where = f"links[{i}].{side}"
            if node not in names:
                raise LabError(f"{where}_node: unknown device {node!r}")
            _check_ifname(f"{where}_if", ifname)
            if (node, ifname) in endpoints:
                raise LabError(f"{where}_if: {node}:{ifname} is used by two links")
            endpoints.add((node, ifname))

    for i, host in enumerate(spec.hosts):
        where = f"hosts[{i}]"
        if (host.name, host.interface) not in endpoints:
            raise LabError(
                f"{where}.interface: {host.name}:{host.interface} is not an end of any link"
            )
        try:
            iface = ipaddress.IPv4Interface(host.address)
            gateway = ipaddress.IPv4Address(host.gateway)
        except ValueError as exc:
            raise LabError(f"{where}: {exc}") from exc
        if gateway not in iface.network:
            raise LabError(f"{where}.gateway: {gateway} is outside {iface.network}")

    switch_names = {s.name for s in spec.switches}
    for i, check in enumerate(spec.route_checks):
        if check.node not in switch_names:
            raise LabError(f"route_checks[{i}].node: {check.node!r} is not a switch")
        try:
            ipaddress.IPv4Network(check.prefix)
        except ValueError as exc:
            raise LabError(f"route_checks[{i}].prefix: {exc}") from exc
    host_names = {h.name for h in spec.hosts}
    for i, (host_name, dest) in enumerate(spec.pings):
        if host_name not in host_names:
            raise LabError(f"pings[{i}]: {host_name!r} is not a host")
        try:
            ipaddress.IPv4Address(dest)
        except ValueError as exc:
            raise LabError(f"pings[{i}]: {exc}") from exc
    if spec.sessions_expected < 0:
        raise LabError(f"sessions_expected: {spec.sessions_expected} is negative")


def _check_ifname(where: str, ifname: str) -> None:
    if not ifname or len(ifname) > IFNAME_MAX or not _IFNAME_RE.match(ifname):
        raise LabError(
            f"{where}: {ifname!r} is not a valid Linux interface name "
            f"(1-{IFNAME_MAX} characters from A-Z a-z 0-9 _ . -)"
        )
