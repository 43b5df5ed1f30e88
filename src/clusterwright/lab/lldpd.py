"""lldpd in lab namespaces: one daemon per namespace, each with its own control socket.

lldpd(8) defaults that matter here, and what the lab sets instead:

- it daemonizes and writes /run/lldpd.pid: ``-d`` keeps it in the foreground (logging to
  stderr, our log file), so the pid Popen returns is the daemon (``ip netns exec`` execs);
  in the foreground it writes no pid file;
- its control socket is /run/lldpd.socket: ``-u`` gives each instance its own, in the lab's
  work directory, and ``lldpctl -u`` reads that one;
- it uses "all available physical interfaces" and skips some virtual ones: ``-I`` names the
  veth ends exactly ("when an exact match is found, it will circumvent some tests");
- it runs lldpcli on /etc/lldpd.conf and /etc/lldpd.d at start: ``-O`` points it at the
  lab's own file instead, which sets the system name (every namespace shares the machine's
  hostname, which is lldpd's default system name), a 1 s transmit interval (default 30 s)
  and, on switches, the interface name as port id (the default is the MAC address), as
  switch operating systems do; hosts keep the default, so both forms are exercised;
- it drops privileges to user ``_lldpd`` in a chroot (/run/lldpd), shared by the
  instances, which is harmless.

Stopping: SIGTERM to the monitor process stops its privilege-separated child and removes
the socket (the lab's teardown also kills anything left in the namespaces).
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
from pathlib import Path

from clusterwright.lab.frr import Daemon
from clusterwright.lab.spec import LabError

LLDPD = Path("/usr/sbin/lldpd")
LLDPCTL = "lldpctl"
LLDPD_USER = "_lldpd"
TX_INTERVAL_S = 1
_CTL_TIMEOUT_S = 5.0


def preflight() -> None:
    """Raise LabError naming what lldpd needs that this machine lacks."""
    missing = []
    if not os.access(LLDPD, os.X_OK):
        missing.append(f"{LLDPD} (apt-get install lldpd)")
    if shutil.which(LLDPCTL) is None:
        missing.append("lldpctl (apt-get install lldpd)")
    try:
        pwd.getpwnam(LLDPD_USER)
    except KeyError:
        missing.append(f"user {LLDPD_USER!r} (created by the lldpd package)")
    if missing:
        raise LabError("cannot run lldpd in the lab; missing: " + "; ".join(missing))


def config(system_name: str, switch: bool) -> str:
    """lldpcli commands for one instance (see the module docstring)."""
    lines = [f"configure system hostname {system_name}",
             f"configure lldp tx-interval {TX_INTERVAL_S}"]
    if switch:
        lines.append("configure lldp portidsubtype ifname")
    return "\n".join(lines) + "\n"


def socket_path(workdir: Path, namespace: str) -> Path:
    return workdir / f"{namespace}.lldpd.sock"


def start(namespace: str, system_name: str, interfaces: list[str], workdir: Path,
          switch: bool) -> Daemon:
    """Start lldpd in ``namespace`` on ``interfaces``; its log goes to the work directory."""
    # lldpd's unprivileged half (user _lldpd) must reach its socket in the work directory,
    # which is 0750 root:frr: let others traverse it (not list it; the FRR configs stay
    # 0640 root:frr).
    workdir.chmod(workdir.stat().st_mode | 0o001)
    conf = workdir / f"{namespace}.lldpd.conf"
    conf.write_text(config(system_name, switch))
    log_path = workdir / f"{namespace}.lldpd.log"
    cmd = ["ip", "netns", "exec", namespace, str(LLDPD), "-d",
           "-u", str(socket_path(workdir, namespace)), "-I", ",".join(interfaces),
           "-O", str(conf)]  # fmt: skip
    with open(log_path, "w") as log:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
    return Daemon("lldpd", namespace, proc, log_path)


def neighbors_json(workdir: Path, namespace: str) -> str:
    """``lldpctl -f json`` of the instance in ``namespace`` ("" if it does not answer)."""
    cmd = [LLDPCTL, "-u", str(socket_path(workdir, namespace)), "-f", "json"]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=_CTL_TIMEOUT_S,
                              check=False)
    except subprocess.TimeoutExpired as exc:
        raise LabError(f"lldpctl for {namespace} hung for {_CTL_TIMEOUT_S:.0f} s") from exc
    return proc.stdout if proc.returncode == 0 else ""
