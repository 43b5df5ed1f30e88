"""Network namespaces, veth pairs and addresses, through iproute2's `ip`.

Every call goes through `ip_cmd`, which turns a failure into a LabError carrying the command
line and ip's own message, since that message usually names the fix.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

from clusterwright.lab.spec import LabError

IP = "ip"
_CMD_TIMEOUT_S = 10.0

# Written through /proc inside the namespace: /proc/sys/net follows the writer's network
# namespace, and this avoids depending on procps' `sysctl` being installed.
SWITCH_SYSCTLS = {
    "net/ipv4/ip_forward": "1",
    # Hash on L4 ports, so ECMP spreads flows between the same two hosts over all spines.
    "net/ipv4/fib_multipath_hash_policy": "1",
}


def ip_cmd(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run `ip ARGS...`; raise LabError with ip's message if it fails and `check` is set."""
    cmd = [IP, *args]
    try:
        proc = subprocess.run(
            cmd, capture_output=True, text=True, timeout=_CMD_TIMEOUT_S, check=False
        )
    except FileNotFoundError as exc:
        raise LabError("`ip` not found: install iproute2 (apt-get install iproute2)") from exc
    except subprocess.TimeoutExpired as exc:
        raise LabError(f"`{' '.join(cmd)}` hung for {_CMD_TIMEOUT_S:.0f} s") from exc
    if check and proc.returncode != 0:
        raise LabError(f"`{' '.join(cmd)}` failed: {proc.stderr.strip() or proc.stdout.strip()}")
    return proc


def add_namespace(ns: str) -> None:
    """Create network namespace `ns` and bring its loopback up."""
    ip_cmd("netns", "add", ns)
    ip_cmd("-n", ns, "link", "set", "lo", "up")


def list_namespaces() -> list[str]:
    """Names of all named network namespaces (`ip netns list`)."""
    out = ip_cmd("netns", "list").stdout
    # Lines look like "cw12ab-s0 (id: 3)" or just "cw12ab-s0".
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def namespace_pids(ns: str) -> list[int]:
    """Pids of all processes inside `ns`; empty if the namespace is gone."""
    proc = ip_cmd("netns", "pids", ns, check=False)
    if proc.returncode != 0:
        return []
    return [int(tok) for tok in proc.stdout.split() if tok.isdigit()]


def add_veth(ns_a: str, if_a: str, ns_b: str, if_b: str) -> None:
    """Create a veth pair with each end already in its namespace under its final name.

    The kernel creates each end directly in the target namespace, so the names only have to
    be unique there, and no end ever exists in the root namespace where an interrupted run
    could strand it.
    """
    ip_cmd("link", "add", "name", if_a, "netns", ns_a, "type", "veth",
           "peer", "name", if_b, "netns", ns_b)  # fmt: skip
    ip_cmd("-n", ns_a, "link", "set", if_a, "up")
    ip_cmd("-n", ns_b, "link", "set", if_b, "up")


def set_switch_sysctls(ns: str) -> None:
    """Enable IPv4 forwarding and L4 ECMP hashing inside `ns`."""
    script = " && ".join(f"echo {v} > /proc/sys/{k}" for k, v in SWITCH_SYSCTLS.items())
    ip_cmd("netns", "exec", ns, "sh", "-c", script)


def configure_host(ns: str, interface: str, address: str, gateway: str) -> None:
    """Put `address` (CIDR) on `interface` and a default route via `gateway`."""
    ip_cmd("-n", ns, "addr", "add", address, "dev", interface)
    ip_cmd("-n", ns, "route", "add", "default", "via", gateway, "dev", interface)


def kill_namespace_processes(namespaces: list[str], grace_s: float = 1.0) -> list[int]:
    """SIGTERM every process in `namespaces`, SIGKILL what is left after `grace_s`.

    Used for processes we hold no handle for (stale runs, stray probes); our own daemons are
    stopped by pid first. All namespaces share one grace period. Returns the pids that are
    still running afterwards (should be empty).
    """
    pids = [pid for ns in namespaces for pid in namespace_pids(ns)]
    for pid in pids:
        _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while pids and time.monotonic() < deadline:
        time.sleep(0.05)
        pids = [pid for pid in pids if _running(pid)]
    for pid in pids:
        _signal(pid, signal.SIGKILL)
    if pids:
        time.sleep(0.05)
    return [pid for pid in pids if _running(pid)]


def delete_namespace(ns: str) -> None:
    """Delete `ns`; its veth ends, and so their peers, go with it."""
    ip_cmd("netns", "delete", ns)


def _signal(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


def _running(pid: int) -> bool:
    """True if `pid` exists and is not a zombie; reaps it if it is a dead child of ours.

    A kept lab's daemons are our children when cleaned up from the same process, and a
    zombie would otherwise look alive until the grace period runs out.
    """
    with contextlib.suppress(ChildProcessError):
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    # The state letter follows the parenthesised command name, which may contain spaces.
    return stat[stat.rindex(")") + 2 :][:1] not in ("Z", "X", "")


def pid_alive(pid: int) -> bool:
    """True if a process with this pid exists (zombies included)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
