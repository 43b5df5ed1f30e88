"""Bring a LabSpec up on real FRR daemons, wait for convergence, check it, tear it down.

Order of a run: preflight and spec validation (nothing touched yet), namespaces, veth pairs,
host addresses, zebra then bgpd per switch, poll vtysh until every session is Established and
every route check passes (or the timeout), pings, teardown. Teardown runs on every exit path:
normal return, check failure, exception, Ctrl-C and SIGTERM.
"""

from __future__ import annotations

import contextlib
import grp
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

from clusterwright.lab import frr, netns, probe
from clusterwright.lab.names import namespace_names, new_run_id, parse_namespace, run_id_pid
from clusterwright.lab.spec import (
    LabError,
    LabResult,
    LabSpec,
    LabSwitch,
    RouteCheck,
    validate_spec,
)

_POLL_INTERVAL_S = 0.25
_ZEBRA_START_TIMEOUT_S = 10.0
_MAX_WORKERS = 16  # vtysh and probe subprocesses in flight at once
_PING_COUNT = 2
_PING_WAIT_S = 1.0  # per echo request, like `ping -W 1`
_WORKDIR_PREFIX = "clusterwright-lab-"


def preflight() -> None:
    """Raise LabError naming everything the lab needs that this machine lacks.

    Needs root (namespaces and veth need CAP_SYS_ADMIN and CAP_NET_ADMIN), iproute2's `ip`,
    FRR's zebra, bgpd and vtysh, and the `frr` group the daemons drop privileges to.
    """
    missing: list[str] = []
    if os.geteuid() != 0:
        missing.append("root privileges (network namespaces need them): run as root or sudo")
    if shutil.which(netns.IP) is None:
        missing.append("`ip` (apt-get install iproute2)")
    for binary in (frr.ZEBRA, frr.BGPD):
        if not os.access(binary, os.X_OK):
            missing.append(f"{binary} (apt-get install frr)")
    if shutil.which(frr.VTYSH) is None:
        missing.append("vtysh (apt-get install frr)")
    try:
        grp.getgrnam(frr.FRR_USER)
    except KeyError:
        missing.append(f"group {frr.FRR_USER!r} (created by the frr package)")
    if missing:
        raise LabError("cannot run the FRR lab; missing: " + "; ".join(missing))


def run_lab(spec: LabSpec, timeout_s: float = 90.0, keep: bool = False) -> LabResult:
    """Build `spec` in network namespaces with FRR, check it, and tear it down.

    `timeout_s` bounds the wait for convergence (seconds, counted from bgpd start). With
    `keep`, a lab that ran to the end is left up and how to enter it is printed to stderr;
    remove it later with `cleanup_stale(run_id)`. Check failures come back in the result;
    LabError is raised only when the lab cannot be built.
    """
    preflight()
    validate_spec(spec)
    lab = _Lab(spec, new_run_id())
    result: LabResult | None = None
    with _sigterm_raises():
        try:
            lab.build()
            lab.start_frr()
            result = lab.check(timeout_s)
        finally:
            if not (keep and result is not None):
                problems = _teardown_shielded(lab)
                if problems and result is not None:
                    result.failures += [f"teardown: {p}" for p in problems]
                elif problems:
                    warnings.warn(f"lab {lab.run_id} teardown: {'; '.join(problems)}", stacklevel=2)
    # Reached only without an exception, so check() has returned.
    assert result is not None
    if keep:
        print(lab.how_to_enter(), file=sys.stderr)
    return result


@contextlib.contextmanager
def lab_session(spec: LabSpec) -> Iterator[_Lab]:
    """The lab of `spec` built, with zebra and bgpd running, for a caller that checks it its
    own way (the live twin starts lldpd too and collects state); torn down on leaving the
    block, also on an exception, Ctrl-C or SIGTERM. Daemons the caller starts and appends to
    the lab's `daemons` are stopped with FRR's."""
    preflight()
    validate_spec(spec)
    lab = _Lab(spec, new_run_id())
    with _sigterm_raises():
        try:
            lab.build()
            lab.start_frr()
            yield lab
        finally:
            problems = _teardown_shielded(lab)
            if problems:
                warnings.warn(f"lab {lab.run_id} teardown: {'; '.join(problems)}", stacklevel=3)


def cleanup_stale(run_id: str | None = None) -> list[str]:
    """Remove leftovers of lab runs; return the namespaces removed.

    With `run_id`, removes that run (e.g. one left up with `keep=True`). Without, removes every
    run whose owning process is gone (killed with SIGKILL, machine crashed mid-run); runs of
    live processes, including this one, are left alone.
    """

    def wanted(rid: str, pid: int) -> bool:
        return rid == run_id if run_id is not None else not netns.pid_alive(pid)

    removed = [
        ns
        for ns in netns.list_namespaces()
        if (parsed := parse_namespace(ns)) is not None and wanted(parsed.run_id, parsed.pid)
    ]
    netns.kill_namespace_processes(removed)
    for ns in removed:
        netns.ip_cmd("netns", "delete", ns, check=False)
    # Pathspace dirs of daemons killed without cleanup, and work dirs of dead runs.
    if frr.FRR_RUN_DIR.is_dir():
        for path in frr.FRR_RUN_DIR.iterdir():
            parsed = parse_namespace(path.name)
            if parsed is not None and wanted(parsed.run_id, parsed.pid):
                shutil.rmtree(path, ignore_errors=True)
    for path in Path(tempfile.gettempdir()).glob(f"{_WORKDIR_PREFIX}*"):
        rid = path.name.removeprefix(_WORKDIR_PREFIX).split("-", 1)[0]
        pid = run_id_pid(rid)
        if pid is not None and wanted(rid, pid):
            shutil.rmtree(path, ignore_errors=True)
    return removed


@dataclass
class _Snapshot:
    """State of all switches at one poll."""

    established_ends: int = 0  # Established peers summed over switches: each session twice
    down_peers: list[str] = field(default_factory=list)
    route_problems: list[str] = field(default_factory=list)

    @property
    def sessions(self) -> int:
        return self.established_ends // 2


class _Lab:
    """One run's namespaces, daemons and files; everything teardown must undo."""

    def __init__(self, spec: LabSpec, run_id: str) -> None:
        self.spec = spec
        self.run_id = run_id
        self.ns = namespace_names(run_id, spec)
        self.created: list[str] = []  # namespaces, recorded before creation is attempted
        self.daemons: list[frr.Daemon] = []
        self.workdir: Path | None = None
        self.started_at = 0.0

    def build(self) -> None:
        """Namespaces, cables, host addressing, config files. Switch addresses come from
        zebra reading frr.conf, exactly as on the real switch."""
        self.workdir = Path(tempfile.mkdtemp(prefix=f"{_WORKDIR_PREFIX}{self.run_id}-"))
        # The daemons drop to user frr before reading their config.
        os.chmod(self.workdir, 0o750)
        shutil.chown(self.workdir, group=frr.FRR_USER)
        for ns in self.ns.values():
            self.created.append(ns)
            netns.add_namespace(ns)
        for sw in self.spec.switches:
            netns.set_switch_sysctls(self.ns[sw.name])
        for link in self.spec.links:
            netns.add_veth(self.ns[link.a_node], link.a_if, self.ns[link.b_node], link.b_if)
        for host in self.spec.hosts:
            netns.configure_host(self.ns[host.name], host.interface, host.address, host.gateway)
        for sw in self.spec.switches:
            path = self._config_path(sw)
            path.write_text(sw.frr_config)
            os.chmod(path, 0o640)
            shutil.chown(path, group=frr.FRR_USER)

    def start_frr(self) -> None:
        """zebra on every switch, then bgpd once each zebra's socket is up."""
        assert self.workdir is not None  # set by build()
        zebras = [self._start(frr.ZEBRA, sw) for sw in self.spec.switches]
        deadline = time.monotonic() + _ZEBRA_START_TIMEOUT_S
        for z in zebras:
            frr.wait_for_zserv(z, deadline)
        for sw in self.spec.switches:
            self._start(frr.BGPD, sw)
        # Links meant to be down go down only now: zebra brings up every interface its
        # configuration names when it reads it.
        for link in self.spec.links:
            if not link.up:
                netns.ip_cmd("-n", self.ns[link.a_node], "link", "set", link.a_if, "down")
        self.started_at = time.monotonic()

    def check(self, timeout_s: float) -> LabResult:
        """Poll until converged, a daemon dies, or `timeout_s`; then ping."""
        deadline = self.started_at + timeout_s
        while True:
            snap = self.poll()
            converged = self._converged(snap)
            dead = self.dead_daemons()
            if converged or dead or time.monotonic() >= deadline:
                break
            time.sleep(_POLL_INTERVAL_S)
        converge_s = time.monotonic() - self.started_at

        failures = list(dead)
        expected = self.spec.sessions_expected
        if not converged:
            failures.append(f"not converged after {converge_s:.1f} s (timeout {timeout_s:g} s)")
        if snap.sessions < expected:
            failures.append(f"{snap.sessions} of {expected} BGP sessions established")
            failures += snap.down_peers
        elif snap.sessions > expected:
            failures.append(f"{snap.sessions} BGP sessions established, spec expects {expected}")
        failures += snap.route_problems
        failures += self.config_errors()
        ping_failures = self.pings()
        failures += ping_failures
        return LabResult(
            sessions_established=snap.sessions,
            sessions_expected=expected,
            multipath_ok=not snap.route_problems,
            ping_ok=not ping_failures,
            converge_s=converge_s,
            failures=failures,
            run_id=self.run_id,
            namespaces=dict(self.ns),
        )

    def _converged(self, snap: _Snapshot) -> bool:
        return snap.sessions >= self.spec.sessions_expected and not snap.route_problems

    def poll(self) -> _Snapshot:
        """Ask every switch, concurrently, for its BGP peers and the routes it must have."""
        checks: dict[str, list[RouteCheck]] = {sw.name: [] for sw in self.spec.switches}
        for c in self.spec.route_checks:
            checks[c.node].append(c)
        snap = _Snapshot()
        workers = max(1, min(_MAX_WORKERS, len(self.spec.switches)))
        with ThreadPoolExecutor(max_workers=workers) as pool:
            outputs = list(
                pool.map(
                    lambda sw: self._query(sw, checks[sw.name]),
                    self.spec.switches,
                )
            )
        for sw, docs in zip(self.spec.switches, outputs, strict=True):
            my_checks = checks[sw.name]
            peers = frr.bgp_peers(docs[0]) if docs else []
            snap.established_ends += frr.count_established(peers)
            for p in peers:
                if p.state != "Established":
                    desc = f" ({p.description})" if p.description else ""
                    snap.down_peers.append(f"{sw.name}: neighbor {p.neighbor}{desc} is {p.state}")
            for i, c in enumerate(my_checks):
                route = docs[i + 1] if len(docs) > i + 1 else None
                n = frr.fib_nexthops(route, c.prefix)
                if n < c.min_nexthops:
                    what = "missing" if n == 0 else f"has {n} installed nexthop(s)"
                    snap.route_problems.append(
                        f"{sw.name}: route {c.prefix} {what}, expected >= {c.min_nexthops}"
                    )
        return snap

    def _query(self, sw: LabSwitch, checks: list[RouteCheck]) -> list[object]:
        commands = ["show bgp summary json", *(f"show ip route {c.prefix} json" for c in checks)]
        return frr.parse_json_stream(frr.vtysh(self.ns[sw.name], commands))

    def dead_daemons(self) -> list[str]:
        """A line per daemon that exited on its own: waiting longer cannot help."""
        return [
            f"{d.name} on {self._device(d.namespace)} exited with {d.proc.returncode}: "
            f"{frr.tail(d.log_path)}"
            for d in self.daemons
            if d.proc.poll() is not None
        ]

    def config_errors(self) -> list[str]:
        """A line per frr.conf line that neither zebra nor bgpd accepted.

        FRR logs such lines and carries on, so without this a generator bug (a typo, an
        undefined peer-group) would pass as long as the fabric still converged.
        """
        errors: list[str] = []
        for sw in self.spec.switches:
            ns = self.ns[sw.name]
            logs = [_read(d.log_path) for d in self.daemons if d.namespace == ns]
            for line_no, text in frr.rejected_by_all(logs):
                errors.append(
                    f"{sw.name}: frr.conf line {line_no} rejected by zebra and bgpd: {text}"
                )
        return errors

    def pings(self) -> list[str]:
        """Ping every (host, address) pair concurrently; a line per pair with no reply."""
        if not self.spec.pings:
            return []
        workers = min(_MAX_WORKERS, len(self.spec.pings))
        with ThreadPoolExecutor(max_workers=workers) as pool:
            return [
                msg
                for msg in pool.map(lambda p: self._ping(*p), self.spec.pings)
                if msg is not None
            ]

    def _ping(self, host: str, dest: str) -> str | None:
        # -I: the probe is a standalone file, skip site-packages and env for a fast start.
        cmd = ["ip", "netns", "exec", self.ns[host], sys.executable, "-I", probe.__file__,
               dest, "-c", str(_PING_COUNT), "-W", str(_PING_WAIT_S)]  # fmt: skip
        timeout_s = _PING_COUNT * _PING_WAIT_S + 5.0
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return f"ping {host} -> {dest}: probe hung"
        if proc.returncode == 0:
            return None
        if proc.returncode == 1:
            return f"ping {host} -> {dest}: no reply"
        return f"ping {host} -> {dest}: probe failed: {proc.stderr.strip()[-300:]}"

    def teardown(self) -> list[str]:
        """Stop daemons, delete namespaces and files; a line per thing that would not go.

        Every step runs even if an earlier one failed.
        """
        problems = frr.stop_daemons(self.daemons)
        try:
            # Anything else still inside, e.g. a probe orphaned by an interrupt.
            survivors = netns.kill_namespace_processes(self.created)
            if survivors:
                problems.append(f"processes {survivors} survived SIGKILL")
        except LabError as exc:
            problems.append(str(exc))
        for ns in reversed(self.created):
            try:
                proc = netns.ip_cmd("netns", "delete", ns, check=False)
                if proc.returncode != 0 and ns in netns.list_namespaces():
                    problems.append(f"{ns}: `ip netns delete` failed: {proc.stderr.strip()}")
            except LabError as exc:
                problems.append(str(exc))
            # zebra and bgpd leave pid files and sockets in their pathspace dir.
            shutil.rmtree(frr.pathspace_dir(ns), ignore_errors=True)
        if self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
        return problems

    def how_to_enter(self) -> str:
        """Instructions for a lab left up with keep=True."""
        lines = [f"lab {self.run_id} left up; configs and daemon logs in {self.workdir}"]
        width = max((len(n) for n in self.ns), default=0)
        for sw in self.spec.switches:
            ns = self.ns[sw.name]
            lines.append(f"  {sw.name:<{width}}  vtysh -N {ns}   |   ip netns exec {ns} bash")
        for host in self.spec.hosts:
            lines.append(f"  {host.name:<{width}}  ip netns exec {self.ns[host.name]} bash")
        lines.append(
            "remove with: python -c 'from clusterwright.lab import cleanup_stale; "
            f'cleanup_stale("{self.run_id}")\''
        )
        return "\n".join(lines)

    def _start(self, binary: Path, sw: LabSwitch) -> frr.Daemon:
        assert self.workdir is not None  # set by build()
        ns = self.ns[sw.name]
        with open(self.workdir / f"{ns}.{binary.name}.log", "w") as log:
            daemon = frr.start_daemon(binary, ns, self._config_path(sw), log)
        self.daemons.append(daemon)
        return daemon

    def _config_path(self, sw: LabSwitch) -> Path:
        assert self.workdir is not None  # set by build()
        return self.workdir / f"{self.ns[sw.name]}.conf"

    def _device(self, ns: str) -> str:
        return next((name for name, n in self.ns.items() if n == ns), ns)


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def _teardown_shielded(lab: _Lab) -> list[str]:
    """Teardown that a second Ctrl-C or SIGTERM cannot cut short; the signal is re-raised
    once teardown is done, so the caller still stops."""
    if threading.current_thread() is not threading.main_thread():
        return lab.teardown()
    pending: list[int] = []

    def remember(signum: int, _frame: FrameType | None) -> None:
        pending.append(signum)

    previous = {s: signal.signal(s, remember) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        problems = lab.teardown()
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler if handler is not None else signal.SIG_DFL)
    if pending:
        if pending[0] == signal.SIGINT:
            raise KeyboardInterrupt
        raise SystemExit(128 + pending[0])
    return problems


@contextlib.contextmanager
def _sigterm_raises() -> Iterator[None]:
    """Turn SIGTERM into SystemExit while the lab is up, so `finally` tears it down.

    SIGINT already raises KeyboardInterrupt. Signal handlers can only be set from the main
    thread; elsewhere the caller owns signal handling.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def raise_exit(signum: int, _frame: FrameType | None) -> None:
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, raise_exit)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)
