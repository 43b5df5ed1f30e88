"""A process that has imported the CLI and forks one child per hostile case.

``harness.run`` gives the cases that read files or could allocate a process of their own under
a 1 GiB address-space limit. Starting ``python -m clusterwright`` for each cost an interpreter
start and the CLI's imports (about 2 s of CPU a case, over a hundred cases); a child forked
from this process starts with the imports done, then does what that process did: sets the
limit, takes its own stdin, stdout and stderr (files, not this process's pipes), runs
``clusterwright`` as ``python -m`` runs it (``runpy``, the same ``__main__``), and exits as the
interpreter exits (``SystemExit``'s code, a traceback and 1 on an uncaught exception). This
process never runs a case itself, so every child starts from the same just-imported state.

Protocol, one case at a time: a JSON line on stdin (args, cwd, env, stdin/stdout/stderr file
paths, address-space limit, timeout); a JSON line back (``returncode`` as ``subprocess`` gives
it, ``timed_out``). The child is killed (SIGKILL, as ``subprocess.run``'s timeout does) at the
timeout. EOF on stdin ends the process.
"""

from __future__ import annotations

import atexit
import json
import os
import resource
import runpy
import select
import signal
import sys
import traceback
from typing import Any, NoReturn


def _child(req: dict[str, Any], reply_fd: int) -> NoReturn:
    code = 1
    try:
        os.close(reply_fd)
        limit = int(req["limit"])
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        for fd, path, flags in ((0, req["stdin"] or os.devnull, os.O_RDONLY),
                                (1, req["stdout"], os.O_WRONLY | os.O_TRUNC),
                                (2, req["stderr"], os.O_WRONLY | os.O_TRUNC)):
            f = os.open(path, flags)
            os.dup2(f, fd)
            os.close(f)
        os.chdir(req["cwd"])
        os.environ.update(req["env"])
        sys.argv = ["clusterwright", *req["args"]]  # run_module sets argv[0] as -m does
        try:
            runpy.run_module("clusterwright", run_name="__main__", alter_sys=True)
            code = 0
        except SystemExit as exc:  # the interpreter's handling of an uncaught SystemExit
            if exc.code is None:
                code = 0
            elif isinstance(exc.code, int):
                code = exc.code & 0xFF
            else:
                print(exc.code, file=sys.stderr)
                code = 1
        except BaseException:
            sys.excepthook(*sys.exc_info())
            code = 1
        atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                code = code or 120  # the interpreter's exit code when flushing fails
    except BaseException:
        traceback.print_exc()
    finally:
        os._exit(code)


def _line(fd: int, buf: bytearray) -> bytes | None:
    while b"\n" not in buf:
        chunk = os.read(fd, 65536)
        if not chunk:
            return None
        buf += chunk
    i = buf.index(b"\n")
    line = bytes(buf[:i])
    del buf[: i + 1]
    return line


def serve() -> None:
    import clusterwright.cli.main  # noqa: F401  (what `python -m clusterwright` imports first)

    reply_fd = os.dup(1)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 1)  # nothing of this process's own goes to the reply pipe
    os.close(null)
    buf = bytearray()
    os.write(reply_fd, b"ready\n")
    while (line := _line(0, buf)) is not None:
        req = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _child(req, reply_fd)
        pidfd = os.pidfd_open(pid)
        ready, _, _ = select.select([pidfd], [], [], float(req["timeout"]))
        timed_out = not ready
        if timed_out:
            os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
        os.close(pidfd)
        reply = {"returncode": os.waitstatus_to_exitcode(status), "timed_out": timed_out}
        os.write(reply_fd, json.dumps(reply).encode() + b"\n")


if __name__ == "__main__":
    serve()
