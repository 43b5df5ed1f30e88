"""Which addresses the workbench may listen on and which Host names it answers to.

The workbench has no login; what keeps other people out is that it listens on loopback only.
Two things would undo that:

- listening on a network interface (``--host 0.0.0.0``), so the CLI refuses any address that
  is not loopback unless the user says ``--allow-remote``;
- DNS rebinding: a page on ``evil.example`` makes its own name resolve to 127.0.0.1, and the
  browser then treats this server as that page's own origin, free to read and post. The one
  trace left is the Host header, which still says ``evil.example``; so the server answers only
  to the Host names it was given (``LOOPBACK_NAMES``, the bound address, ``--allowed-host``).

Stdlib only: ``clusterwright web --help`` imports this without FastAPI.
"""

from __future__ import annotations

import ipaddress
import re

# What a browser on this machine puts in Host for a loopback server (IPv6 in brackets, RFC 3986).
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")
# A DNS name: labels of letters, digits, '-' and '_' (seen in some internal names) joined by dots.
_NAME = re.compile(r"^[a-z0-9_](?:[a-z0-9_-]{0,62})(?:\.[a-z0-9_](?:[a-z0-9_-]{0,62}))*$")
_PORT = re.compile(r"^[0-9]{1,5}$")


def is_loopback(host: str) -> bool:
    """True when ``host`` only listens on this machine (127.0.0.0/8, ::1 or localhost)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def is_wildcard(host: str) -> bool:
    """True when listening on ``host`` means every interface ('', 0.0.0.0, ::)."""
    if not host.strip():
        return True
    try:
        return ipaddress.ip_address(host.strip().strip("[]")).is_unspecified
    except ValueError:
        return False


def split_host(value: str, *, setting: bool = False) -> tuple[str, int | None]:
    """A Host header as (name, port or None), the name as compared against the allowed set:
    lower case, no trailing dot, an IPv6 address compressed and in brackets. ``setting``: a
    value given by the user, where a bare IPv6 address (no brackets, so no port) is allowed.
    ValueError, with the reason, when it is not a host name."""
    v = value.strip().lower()
    if not v:
        raise ValueError("empty host name")
    port = ""
    if v.startswith("["):
        addr, sep, rest = v[1:].partition("]")
        if not sep or (rest and not rest.startswith(":")):
            raise ValueError(f"{value!r} is not a host name or address")
        port, ipv6 = rest[1:], True
        if rest == ":":
            raise ValueError(f"{value!r}: empty port")
    elif v.count(":") >= 2:
        # In a Host header the colons of a bare IPv6 address would be ambiguous with a port.
        if not setting:
            raise ValueError(f"{value!r}: an IPv6 address in a Host header needs brackets")
        addr, ipv6 = v, True
    else:
        addr, colon, port = v.partition(":")
        ipv6 = False
        if colon and not port:
            raise ValueError(f"{value!r}: empty port")
    port_n: int | None = None
    if port:
        if not _PORT.match(port) or int(port) > 65535:
            raise ValueError(f"{value!r}: the port is not a number from 0 to 65535")
        port_n = int(port)
    if ipv6:
        try:
            return f"[{ipaddress.IPv6Address(addr).compressed}]", port_n
        except ValueError:
            raise ValueError(f"{value!r} is not an IPv6 address") from None
    name = addr.removesuffix(".")
    if not _NAME.match(name):
        raise ValueError(f"{value!r} is not a host name or address (letters, digits, '-', '.'; "
                         "write an international name in its xn-- form)")
    return name, port_n


def host_name(value: str) -> str:
    """A host name or address given as a setting (``--host``, ``--allowed-host``), as
    ``split_host`` compares it; ValueError when it is not one or carries a port."""
    name, port = split_host(value, setting=True)
    if port is not None:
        raise ValueError(f"{value!r}: give the name without a port")
    return name


def allowed_names(bound: str | None = None, extra: tuple[str, ...] = ()) -> frozenset[str]:
    """The Host names a server bound to ``bound`` answers to: the loopback names, ``bound``
    unless it is every interface (a wildcard is no name a client uses) and ``extra``.
    ValueError names the bad value."""
    names = set(LOOPBACK_NAMES)
    if bound is not None and not is_wildcard(bound):
        names.add(host_name(bound))
    names.update(host_name(e) for e in extra)
    return frozenset(names)
