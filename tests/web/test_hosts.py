"""Host names as the server compares them, and which addresses count as loopback or wildcard."""

from __future__ import annotations

import pytest

from clusterwright.web.hosts import allowed_names, host_name, is_wildcard, split_host


@pytest.mark.parametrize(("header", "expected"), [
    ("localhost", ("localhost", None)),
    ("LocalHost:8000", ("localhost", 8000)),
    ("localhost.:80", ("localhost", 80)),
    ("127.0.0.1:8000", ("127.0.0.1", 8000)),
    ("[::1]", ("[::1]", None)),
    ("[0:0:0:0:0:0:0:1]:8000", ("[::1]", 8000)),
    ("[FE80::1]:1", ("[fe80::1]", 1)),
    ("my_host.lan", ("my_host.lan", None)),
])
def test_split_host(header: str, expected: tuple[str, int | None]) -> None:
    assert split_host(header) == expected


@pytest.mark.parametrize("header", [
    "", " ", "::1", "[::1", "[::1]x", "[::1]:", "[nonsense]", "localhost:", "localhost:port",
    "localhost:70000", "a b", "evil.com/x", "user@localhost", "*", "ex*ample.com", "é.example",
    "-leading.example",
])
def test_split_host_refuses_what_is_no_host(header: str) -> None:
    with pytest.raises(ValueError):
        split_host(header)


def test_a_setting_takes_a_bare_ipv6_address_but_no_port() -> None:
    assert host_name("::1") == "[::1]"
    assert host_name("Example.ORG") == "example.org"
    with pytest.raises(ValueError, match="without a port"):
        host_name("example.org:8000")


@pytest.mark.parametrize(("host", "wild"), [
    ("", True), ("  ", True), ("0.0.0.0", True), ("::", True), ("[::]", True),
    ("127.0.0.1", False), ("192.168.1.5", False), ("example.org", False),
])
def test_is_wildcard(host: str, wild: bool) -> None:
    assert is_wildcard(host) is wild


def test_allowed_names_add_the_bound_address_unless_it_is_every_interface() -> None:
    loop = {"localhost", "127.0.0.1", "[::1]"}
    assert allowed_names() == loop
    assert allowed_names("127.0.0.2") == loop | {"127.0.0.2"}
    assert allowed_names("0.0.0.0", ("wb.example",)) == loop | {"wb.example"}
    assert allowed_names("::", ()) == loop
