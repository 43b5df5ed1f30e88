"""Real FRR lab runs: BGP sessions, ECMP routes and pings in network namespaces.

Need root and FRR (zebra, bgpd, vtysh); skipped otherwise. Each run's namespaces carry this
process's pid (`cw<pid>..`), which is how the tests find leftovers.
"""

from __future__ import annotations

import dataclasses
import os
import re
import signal
import subprocess
import tempfile
from pathlib import Path

import pytest

from clusterwright.lab import LabError, cleanup_stale, frr, netns, preflight, run_lab
from clusterwright.lab.names import namespace_name, new_run_id, parse_namespace
from tests.lab.fabric import leaf_spine_spec


def _unavailable() -> str | None:
    try:
        preflight()
    except LabError as exc:
        return str(exc)
    return None


_REASON = _unavailable()
pytestmark = [
    pytest.mark.netlab,
    pytest.mark.skipif(_REASON is not None, reason=f"FRR lab unavailable: {_REASON}"),
]


def _our_namespaces() -> list[str]:
    return [
        ns
        for ns in netns.list_namespaces()
        if (p := parse_namespace(ns)) is not None and p.pid == os.getpid()
    ]


def _our_daemons() -> list[str]:
    """Command lines of live processes started with `-N cw<our pid>..`."""
    pattern = re.compile(rf"-N cw{os.getpid()}[a-z]{{2}}-s\d+")
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            args = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue  # exited while we looked
        if pattern.search(args):
            found.append(args)
    return found


def _assert_cleaned_up() -> None:
    assert _our_namespaces() == []
    assert _our_daemons() == []
    prefix = f"cw{os.getpid()}"
    assert not [p for p in frr.FRR_RUN_DIR.glob(f"{prefix}*")]
    assert not list(Path(tempfile.gettempdir()).glob(f"clusterwright-lab-{prefix}*"))


def test_four_leaf_two_spine_fabric_converges_and_hosts_ping_each_other() -> None:
    spec = leaf_spine_spec(leaves=4, spines=2)
    # Each leaf must hold every other leaf's host aggregate over both spines.
    assert len(spec.route_checks) == 12
    assert {c.min_nexthops for c in spec.route_checks} == {2}
    assert len(spec.pings) == 12

    result = run_lab(spec, timeout_s=30)

    assert result.failures == []
    assert result.sessions_established == result.sessions_expected == 8
    assert result.multipath_ok
    assert result.ping_ok
    assert result.ok()
    assert result.converge_s < 15
    print(f"4x2 converged in {result.converge_s:.2f} s")
    _assert_cleaned_up()


def test_wrong_neighbor_address_is_reported_as_failure() -> None:
    spec = leaf_spine_spec(leaves=4, spines=2, broken_session=(1, 2))

    result = run_lab(spec, timeout_s=5)

    assert not result.ok()
    assert result.sessions_established == 7
    assert not result.multipath_ok
    assert "7 of 8 BGP sessions established" in result.failures
    assert "spine-2: neighbor 10.99.0.1 (leaf-su1-r1 swp2) is Active" in result.failures
    # leaf 1 reaches the others through spine-1 only, and they reach it the same way.
    assert (
        "leaf-su1-r2: route 10.128.0.0/26 has 1 installed nexthop(s), expected >= 2"
        in result.failures
    )
    _assert_cleaned_up()


def test_config_line_frr_rejects_is_a_failure_even_if_fabric_converges() -> None:
    spec = leaf_spine_spec(leaves=1, spines=1)
    leaf = spec.switches[0]
    bad = leaf.frr_config.replace(" timers bgp 1 3\n", " timers bgp 1 3\n neighbor SPINES bfd\n")
    spec = dataclasses.replace(
        spec, switches=[dataclasses.replace(leaf, frr_config=bad), *spec.switches[1:]]
    )

    line_no = bad.splitlines().index(" neighbor SPINES bfd") + 1

    result = run_lab(spec, timeout_s=10)

    assert result.sessions_established == 1
    assert not result.ok()
    assert result.failures == [
        f"leaf-su1-r1: frr.conf line {line_no} rejected by zebra and bgpd: neighbor SPINES bfd"
    ]
    _assert_cleaned_up()


@pytest.mark.parametrize("exc_type", [RuntimeError, KeyboardInterrupt])
def test_exception_mid_run_still_tears_down(
    monkeypatch: pytest.MonkeyPatch, exc_type: type[BaseException]
) -> None:
    seen: list[str] = []

    def failing_vtysh(namespace: str, commands: list[str]) -> str:
        # Fires at the first poll: namespaces, links and daemons all exist by now.
        seen.extend(_our_daemons())
        raise exc_type("injected")

    monkeypatch.setattr(frr, "vtysh", failing_vtysh)
    with pytest.raises(exc_type, match="injected"):
        run_lab(leaf_spine_spec(leaves=2, spines=1), timeout_s=10)

    assert len(seen) >= 4  # zebra and bgpd on both leaves and the spine were up
    _assert_cleaned_up()


def test_sigterm_mid_run_tears_down_and_exits(monkeypatch: pytest.MonkeyPatch) -> None:
    real_vtysh = frr.vtysh

    def terminated_vtysh(namespace: str, commands: list[str]) -> str:
        os.kill(os.getpid(), signal.SIGTERM)
        return real_vtysh(namespace, commands)

    monkeypatch.setattr(frr, "vtysh", terminated_vtysh)
    with pytest.raises(SystemExit) as info:
        run_lab(leaf_spine_spec(leaves=2, spines=1), timeout_s=10)

    assert info.value.code == 128 + signal.SIGTERM
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # handler restored
    _assert_cleaned_up()


def test_keep_leaves_lab_up_until_cleanup_stale(capsys: pytest.CaptureFixture[str]) -> None:
    result = run_lab(leaf_spine_spec(leaves=2, spines=1), timeout_s=30, keep=True)
    try:
        assert result.ok(), result.failures
        assert sorted(_our_namespaces()) == sorted(result.namespaces.values())
        assert f"vtysh -N {result.namespaces['spine-1']}" in capsys.readouterr().err
    finally:
        removed = cleanup_stale(result.run_id)
    assert len(removed) == 5
    _assert_cleaned_up()


def test_cleanup_stale_removes_namespaces_of_dead_runs_only() -> None:
    exited = subprocess.Popen(["true"])
    exited.wait()  # reaped, so its pid names a dead run
    stale = namespace_name(new_run_id(pid=exited.pid), "s", 0)
    live = namespace_name(new_run_id(), "s", 0)
    for ns in (stale, live):
        netns.add_namespace(ns)
    try:
        removed = cleanup_stale()
        assert stale in removed
        assert live not in removed
        assert live in netns.list_namespaces()
    finally:
        for ns in (stale, live):
            netns.ip_cmd("netns", "delete", ns, check=False)
    _assert_cleaned_up()
