"""FRR daemons in a namespace, and reading their state back through vtysh.

Each switch namespace runs zebra and bgpd in the foreground (no `-d`), so the pid we get from
Popen is the daemon itself (`ip netns exec` execs, it does not fork) and we reap it ourselves.
`-N <namespace>` gives every switch its own pathspace, i.e. its own vty and zserv sockets under
/var/run/frr/<namespace>/, so many switches share one host without clashing.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from clusterwright.lab.spec import LabError

FRR_BIN_DIR = Path("/usr/lib/frr")
ZEBRA = FRR_BIN_DIR / "zebra"
BGPD = FRR_BIN_DIR / "bgpd"
VTYSH = "vtysh"
FRR_RUN_DIR = Path("/var/run/frr")  # Debian's --localstatedir
FRR_USER = "frr"  # daemons drop to this user; it must be able to read the config file
_VTYSH_TIMEOUT_S = 5.0
# Each daemon logs every frr.conf line it could not apply, e.g.
# "... BGP: [SHWNK-NWT5S][EC 100663304] No such command on config line 23:  neighbor ..."
_CONFIG_ERROR_RE = re.compile(
    r"\] (?P<message>[A-Z][\w ]*?) on config line (?P<line>\d+): (?P<text>.*)$"
)
# Lines for vtysh itself, which every daemon rejects by design.
VTYSH_ONLY_LINES = frozenset({"service integrated-vtysh-config"})


@dataclass
class Daemon:
    """A running FRR daemon we started."""

    name: str  # "zebra" or "bgpd"
    namespace: str
    proc: subprocess.Popen[bytes]
    log_path: Path


def pathspace_dir(namespace: str) -> Path:
    """Where FRR keeps the sockets and pid files for pathspace `namespace`."""
    return FRR_RUN_DIR / namespace


def start_daemon(binary: Path, namespace: str, config: Path, log: TextIO) -> Daemon:
    """Start `binary` (zebra or bgpd) in `namespace`, reading `config`; logs go to `log`.

    `-P 0` turns off the TCP vty (vtysh uses the unix socket), `--log stdout` sends the log to
    our file so it is there for the failure message. The daemon gets its own session so a
    Ctrl-C in the terminal reaches only us, and we stop the daemons in order.
    """
    cmd = ["ip", "netns", "exec", namespace, str(binary),
           "-N", namespace, "-f", str(config), "-P", "0", "--log", "stdout"]  # fmt: skip
    proc = subprocess.Popen(
        cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    return Daemon(binary.name, namespace, proc, Path(log.name))


def wait_for_zserv(daemon: Daemon, deadline: float) -> None:
    """Wait until zebra's zserv socket exists, so bgpd connects on its first try.

    bgpd retries a failed zebra connection only after 10 s, which would dominate convergence.
    """
    sock = pathspace_dir(daemon.namespace) / "zserv.api"
    while not sock.exists():
        if daemon.proc.poll() is not None:
            raise LabError(
                f"zebra in {daemon.namespace} exited with {daemon.proc.returncode}: "
                f"{tail(daemon.log_path)}"
            )
        if time.monotonic() > deadline:
            raise LabError(f"zebra in {daemon.namespace} did not create {sock}")
        time.sleep(0.02)


def stop_daemons(daemons: list[Daemon], grace_s: float = 2.0) -> list[str]:
    """SIGTERM all daemons, SIGKILL the ones still up after `grace_s`, reap all.

    Returns a line per daemon that could not be reaped (should be empty).
    """
    for d in daemons:
        if d.proc.poll() is None:
            d.proc.terminate()
    deadline = time.monotonic() + grace_s
    problems: list[str] = []
    for d in daemons:
        try:
            d.proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            d.proc.kill()
            try:
                d.proc.wait(timeout=2.0)
            except subprocess.TimeoutExpired:
                problems.append(f"{d.name} pid {d.proc.pid} in {d.namespace} survived SIGKILL")
    return problems


def vtysh(namespace: str, commands: list[str]) -> str:
    """Run `commands` through vtysh against pathspace `namespace`; return stdout.

    vtysh talks to the daemons over their unix sockets, so it runs in the root namespace.
    Its complaint about a missing /etc/frr/<pathspace>/vtysh.conf is harmless and ignored.
    """
    cmd = [VTYSH, "-N", namespace]
    for c in commands:
        cmd += ["-c", c]
    try:
        proc = subprocess.run(
            cmd, capture_output=True, text=True, timeout=_VTYSH_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired as exc:
        raise LabError(f"vtysh -N {namespace} hung for {_VTYSH_TIMEOUT_S:.0f} s") from exc
    return proc.stdout


def parse_json_stream(text: str) -> list[Any]:
    """Parse concatenated JSON documents, as vtysh prints for several `-c ... json` commands.

    Stops at the first text that is not JSON (e.g. "% bgpd is not running").
    """
    decoder = json.JSONDecoder()
    docs: list[Any] = []
    pos = 0
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            return docs
        try:
            doc, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError:
            return docs
        docs.append(doc)


@dataclass(frozen=True)
class PeerState:
    """One BGP neighbor as seen from one switch."""

    neighbor: str  # address or interface name
    state: str  # "Established", "Active", "Connect", ...
    description: str


def bgp_peers(summary: Any) -> list[PeerState]:
    """Neighbors in `show bgp summary json`, once each even if in several address families."""
    peers: dict[str, PeerState] = {}
    if not isinstance(summary, dict):
        return []
    for afi in summary.values():
        if not isinstance(afi, dict) or not isinstance(afi.get("peers"), dict):
            continue
        for neighbor, info in afi["peers"].items():
            if neighbor in peers or not isinstance(info, dict):
                continue
            peers[neighbor] = PeerState(
                neighbor=neighbor,
                state=str(info.get("state", "unknown")),
                description=str(info.get("desc", "")),
            )
    return list(peers.values())


def count_established(peers: list[PeerState]) -> int:
    """Number of peers in state Established."""
    return sum(1 for p in peers if p.state == "Established")


def fib_nexthops(route_json: Any, prefix: str) -> int:
    """Nexthops of `prefix` that are installed in the kernel, from `show ip route P json`.

    Counts nexthops flagged `fib` on the selected route; 0 if the route is absent. Recursive
    routes list the resolving nexthops with `fib` set, so they count correctly too.
    """
    if not isinstance(route_json, dict):
        return 0
    best = 0
    for entry in route_json.get(prefix, []):
        if not isinstance(entry, dict) or not entry.get("selected"):
            continue
        n = sum(1 for nh in entry.get("nexthops", []) if isinstance(nh, dict) and nh.get("fib"))
        best = max(best, n)
    return best


def config_rejections(log_text: str) -> dict[int, str]:
    """frr.conf lines a daemon rejected, from its log: line number -> line text."""
    rejected: dict[int, str] = {}
    for log_line in log_text.splitlines():
        match = _CONFIG_ERROR_RE.search(log_line)
        if match:
            rejected[int(match["line"])] = match["text"].strip()
    return rejected


def rejected_by_all(logs: list[str]) -> list[tuple[int, str]]:
    """Config lines that every daemon rejected, as (line number, text), in file order.

    zebra and bgpd each read the whole integrated frr.conf and reject the other's lines, so a
    single rejection is normal; a line neither accepts is a typo, a reference to something
    undefined (e.g. an unknown peer-group), or a command for a daemon the lab does not run.
    """
    if not logs:
        return []
    per_daemon = [config_rejections(text) for text in logs]
    common = set(per_daemon[0]).intersection(*per_daemon[1:])
    return [
        (n, per_daemon[0][n]) for n in sorted(common) if per_daemon[0][n] not in VTYSH_ONLY_LINES
    ]


def tail(path: Path, lines: int = 5) -> str:
    """Last `lines` lines of a daemon log, joined for an error message."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "(no log)"
    return " | ".join(text.strip().splitlines()[-lines:]) or "(empty log)"
