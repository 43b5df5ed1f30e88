"""How a hostile case is run and judged.

Every case must end within ``CASE_TIMEOUT_S`` with exit 0 or 2 (HTTP 2xx-4xx on the web), no
traceback, and, on exit 2, a message. A case that is accepted must print finite, physically
possible numbers. Cases that read files or could allocate run in a process of their own under
a 1 GiB address-space limit (``RLIMIT_AS``), forked from a process that has the CLI imported
(``zygote.py``); the rest run in-process (milliseconds each), under an alarm.
"""

from __future__ import annotations

import atexit
import json
import math
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from clusterwright.cli.main import app

CASE_TIMEOUT_S = 20.0
ADDRESS_SPACE_BYTES = 1 << 30
REPO = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "clusterwright"]

_runner = CliRunner()


class CaseTimeoutError(Exception):
    """The case ran past CASE_TIMEOUT_S: a hang."""


@contextmanager
def alarm(seconds: float) -> Iterator[None]:
    """Raise CaseTimeoutError in this (main) thread after ``seconds``."""
    def _fire(signum: int, frame: Any) -> None:
        raise CaseTimeoutError(f"still running after {seconds:.0f} s")

    old = signal.signal(signal.SIGALRM, _fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


@dataclass
class Outcome:
    """What one case did."""

    args: list[str]
    exit_code: int
    stdout: str
    stderr: str
    wall_s: float
    exception: BaseException | None = None

    def describe(self) -> str:
        exc = f" raised {type(self.exception).__name__}: {self.exception}" if (
            self.exception is not None and not isinstance(self.exception, SystemExit)) else ""
        return (f"clusterwright {' '.join(_short(a) for a in self.args)} -> exit "
                f"{self.exit_code} in {self.wall_s:.1f} s{exc}\nstderr: {self.stderr[-800:]}"
                f"\nstdout: {self.stdout[:400]}")


def _short(a: str) -> str:
    return a if len(a) <= 60 else a[:40] + f"...({len(a)} chars)"


def invoke(args: Sequence[str], timeout_s: float = CASE_TIMEOUT_S,
           stdin: str | None = None) -> Outcome:
    """Run the CLI in this process (fast); a hang becomes exit -1 with CaseTimeoutError."""
    t0 = time.perf_counter()
    try:
        with alarm(timeout_s):
            r = _runner.invoke(app, list(args), input=stdin)
    except CaseTimeoutError as exc:
        return Outcome(list(args), -1, "", "", time.perf_counter() - t0, exc)
    wall = time.perf_counter() - t0
    exc = r.exception
    if isinstance(exc, CaseTimeoutError):
        return Outcome(list(args), -1, r.stdout, r.stderr, wall, exc)
    return Outcome(list(args), r.exit_code, r.stdout, r.stderr, wall, exc)


class _Zygote:
    """One ``zygote.py`` process: it has imported the CLI and forks a child for each case."""

    START_TIMEOUT_S = 120.0  # the interpreter and the CLI's imports on a loaded machine

    def __init__(self) -> None:
        # its own stderr: why it died, if it does (closed in close())
        self.log = tempfile.TemporaryFile()  # noqa: SIM115
        env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
        self.proc = subprocess.Popen(
            [sys.executable, "-c", "from tests.fuzz.zygote import serve; serve()"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, cwd=REPO, env=env)
        if self._reply(self.START_TIMEOUT_S) != b"ready":
            raise RuntimeError(f"the fuzz zygote did not start: {self._log()}")

    def _log(self) -> str:
        self.log.seek(0)
        return self.log.read().decode("utf-8", "replace")[-3000:]

    def _reply(self, timeout_s: float) -> bytes:
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout_s)
        if not ready:
            self.close()
            raise RuntimeError(f"the fuzz zygote gave no answer in {timeout_s:.0f} s")
        return self.proc.stdout.readline().strip()

    def case(self, request: dict[str, Any]) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(request).encode() + b"\n")
        self.proc.stdin.flush()
        line = self._reply(float(request["timeout"]) + 60.0)
        if not line:
            raise RuntimeError(f"the fuzz zygote died: {self._log()}")
        reply: dict[str, Any] = json.loads(line)
        return reply

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self.log.close()


_idle: list[_Zygote] = []  # one per case running at once (test_files runs two)
_idle_lock = threading.Lock()


@atexit.register
def _close_zygotes() -> None:
    with _idle_lock:
        while _idle:
            _idle.pop().close()


def run(args: Sequence[str], timeout_s: float = CASE_TIMEOUT_S, stdin: bytes | None = None,
        cwd: Path | None = None, env: dict[str, str] | None = None) -> Outcome:
    """Run the CLI in a process of its own under a 1 GiB address-space limit and a wall-clock
    limit: ``python -m clusterwright`` as a child forked after the imports (``zygote.py``)."""
    with _idle_lock:
        zygote = _idle.pop() if _idle else None
    if zygote is None:
        zygote = _Zygote()
    with tempfile.TemporaryDirectory(prefix="cw-fuzz-") as d:
        out, err, inp = Path(d, "stdout"), Path(d, "stderr"), Path(d, "stdin")
        out.touch()
        err.touch()
        if stdin is not None:
            inp.write_bytes(stdin)
        request = {"args": list(args), "cwd": str(cwd or REPO), "env": env or {},
                   "stdin": str(inp) if stdin is not None else None, "stdout": str(out),
                   "stderr": str(err), "limit": ADDRESS_SPACE_BYTES, "timeout": timeout_s}
        t0 = time.perf_counter()
        try:
            reply = zygote.case(request)
        except BaseException:
            zygote.close()
            raise
        wall = time.perf_counter() - t0
        with _idle_lock:
            _idle.append(zygote)
        stdout = out.read_bytes().decode("utf-8", "replace")
        stderr = err.read_bytes().decode("utf-8", "replace")
    if reply["timed_out"]:
        return Outcome(list(args), -1, stdout, stderr, wall,
                       CaseTimeoutError(f"still running after {timeout_s:.0f} s"))
    return Outcome(list(args), int(reply["returncode"]), stdout, stderr, wall)


def problems(o: Outcome, must_refuse: bool = False) -> list[str]:
    """Everything wrong with an outcome under the house rules (empty list: it held)."""
    out: list[str] = []
    if o.exit_code == -1:
        return [f"hang: {o.exception}"]
    if o.exception is not None and not isinstance(o.exception, SystemExit):
        out.append(f"uncaught {type(o.exception).__name__}: {o.exception}")
    text = o.stdout + o.stderr
    if "Traceback (most recent call last)" in text:
        out.append("traceback in the output")
    if o.exit_code not in (0, 2):
        out.append(f"exit code {o.exit_code} (want 0 or 2)")
    if o.exit_code == 2 and not o.stderr.strip():
        out.append("exit 2 with no message on stderr")
    if must_refuse and o.exit_code == 0:
        out.append("nonsense accepted with exit 0")
    if o.exit_code == 0 and o.stdout.lstrip().startswith("{"):
        try:
            data = json.loads(o.stdout)
        except ValueError as exc:
            out.append(f"--json output is not JSON: {exc}")
        else:
            out += [f"impossible number {p} = {v!r}" for p, v in impossible_numbers(data)]
    return out


# Keys whose values may be negative: differences, margins, savings, offsets and errors.
_SIGNED_KEY_PARTS = (
    "delta", "diff", "error", "margin", "saving", "headroom", "slack", "gain", "change",
    "offset", "vs_", "_vs", "relative", "bias", "residual", "npv", "net_", "advantage",
    "difference", "balance", "skew", "excess", "deficit", "shortfall", "over_", "under_",
    "asn", "surplus", "signed", "increase",
)
# Physical quantities bigger than this are overflow or nonsense (1e30 B, s, FLOP/s, $, W).
_ABSURD = 1e30


def impossible_numbers(data: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """Numbers in a JSON result that no physical answer can hold: non-finite, absurdly large,
    or negative under a key that is not a difference."""
    if isinstance(data, dict):
        for k, v in data.items():
            if str(k) == "timings":
                continue
            yield from impossible_numbers(v, f"{path}.{k}" if path else str(k))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            yield from impossible_numbers(v, f"{path}[{i}]")
    elif isinstance(data, bool) or data is None:
        return
    elif isinstance(data, int | float):
        key = path.rsplit(".", 1)[-1].lower()
        signed = any(s in key for s in _SIGNED_KEY_PARTS)
        if not math.isfinite(data) or abs(data) > _ABSURD or (data < 0 and not signed):
            yield path, data
