"""Load test of the web workbench (``clusterwright web``) on loopback.

Starts ``clusterwright web`` as a subprocess on a free loopback port with a temporary
database, seeds it through its own HTTP interface (two saved scenarios, two finished plan
runs of training-1k-h100: a baseline and one with a higher rack power limit), then drives a
bounded number of requests from this (second) process with a pool of threads, each with its
own keep-alive ``http.client`` connection, over the main pages: home, editor, run page, the
run's progress fragment, report, catalog search, compare and /healthz.

Reported per page: requests, failures (non-2xx and exceptions, counted apart), p50 / p99 /
max latency (request sent to body read, time.perf_counter), bytes; overall requests/s. Then
the server's responsiveness while a plan of frontier-16k (the largest shipped example) runs in
its worker: /healthz and home latency during the plan. Nothing is asserted; a failed request
is reported, and the script exits 1 if any request failed.

    .venv/bin/python benchmarks/web_load.py [--requests 2000] [--concurrency 8]
"""

from __future__ import annotations

import argparse
import http.client
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from collections import defaultdict
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from _bench import machine_lines, si, table, write

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "training-1k-h100" / "scenario.yaml"
BIG = ROOT / "examples" / "frontier-16k" / "scenario.yaml"
HOST = "127.0.0.1"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes


def request(conn: http.client.HTTPConnection, method: str, path: str,
            form: dict[str, str] | None = None) -> Reply:
    body = urllib.parse.urlencode(form).encode() if form is not None else None
    headers = {"Content-Type": "application/x-www-form-urlencoded"} if form is not None else {}
    # The server refuses a write without a same-site Origin (or Referer), as a browser sends.
    headers["Origin"] = f"http://{conn.host}:{conn.port}"
    conn.request(method, path, body=body, headers=headers)
    r = conn.getresponse()
    data = r.read()
    return Reply(r.status, {k.lower(): v for k, v in r.getheaders()}, data)


@contextmanager
def server(db: Path, log: Path) -> Iterator[tuple[int, subprocess.Popen[bytes]]]:
    """``clusterwright web`` on a free loopback port until the block ends."""
    port = free_port()
    exe = Path(sys.executable).with_name("clusterwright")
    with log.open("wb") as out:
        proc = subprocess.Popen([str(exe), "web", "--host", HOST, "--port", str(port),
                                 "--db", str(db)], stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while True:
            if proc.poll() is not None:
                raise SystemExit(f"server exited: {log.read_text()[-2000:]}")
            try:
                c = http.client.HTTPConnection(HOST, port, timeout=2)
                if request(c, "GET", "/healthz").status == 200:
                    c.close()
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise SystemExit(f"/healthz did not answer in 30 s: {log.read_text()[-2000:]}")
            time.sleep(0.1)
        yield port, proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def located_id(reply: Reply, kind: str) -> int:
    loc = reply.headers.get("location", "")
    m = re.search(rf"/{kind}/(\d+)", loc)
    if reply.status not in (302, 303) or not m:
        raise SystemExit(f"expected a redirect to /{kind}/<id>, got {reply.status} {loc!r}: "
                         f"{reply.body[:300]!r}")
    return int(m.group(1))


def save(conn: http.client.HTTPConnection, name: str, yaml_text: str) -> int:
    return located_id(request(conn, "POST", "/scenarios", {"name": name, "yaml": yaml_text}),
                      "scenarios")


def start_run(conn: http.client.HTTPConnection, scenario: int) -> int:
    return located_id(request(conn, "POST", f"/scenarios/{scenario}/runs", {}), "runs")


def wait_done(conn: http.client.HTTPConnection, run: int, timeout_s: float = 300) -> float:
    """Seconds until the run page shows its report link (the plan finished)."""
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < timeout_s:
        page = request(conn, "GET", f"/runs/{run}").body.decode(errors="replace")
        if 'id="report-link"' in page:
            return time.perf_counter() - t0
        if "failed" in request(conn, "GET", f"/runs/{run}/progress").body.decode().lower():
            raise SystemExit(f"run {run} failed: {page[:2000]}")
        time.sleep(0.2)
    raise SystemExit(f"run {run} not done after {timeout_s} s")


@dataclass
class Stats:
    lat: list[float] = field(default_factory=list)
    non2xx: int = 0
    exceptions: int = 0
    nbytes: int = 0
    samples: list[str] = field(default_factory=list)


def pct(xs: list[float], q: float) -> float:
    """The q-quantile (nearest rank) of xs."""
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, round(q * len(s) + 0.5) - 1))] if s else float("nan")


def drive(port: int, jobs: list[tuple[str, str]], concurrency: int,
          stop: threading.Event | None = None) -> tuple[dict[str, Stats], float]:
    """GET every (label, path) in ``jobs`` with ``concurrency`` threads (each thread one
    keep-alive connection, reopened after an error); with ``stop``, the threads cycle through
    ``jobs`` until it is set. Returns per-label stats and the wall time (s)."""
    lock = threading.Lock()
    stats: dict[str, Stats] = defaultdict(Stats)
    nxt = [0]

    def take() -> tuple[str, str] | None:
        with lock:
            i = nxt[0]
            nxt[0] += 1
        if stop is None:
            return jobs[i] if i < len(jobs) else None
        return None if stop.is_set() else jobs[i % len(jobs)]

    def worker() -> None:
        conn = http.client.HTTPConnection(HOST, port, timeout=30)
        while (job := take()) is not None:
            label, path = job
            t0 = time.perf_counter()
            try:
                r = request(conn, "GET", path)
                dt = time.perf_counter() - t0
                with lock:
                    st = stats[label]
                    st.lat.append(dt)
                    st.nbytes += len(r.body)
                    if not 200 <= r.status < 300:
                        st.non2xx += 1
                        if len(st.samples) < 3:
                            st.samples.append(f"HTTP {r.status} {path}")
            except (OSError, http.client.HTTPException) as exc:
                with lock:
                    st = stats[label]
                    st.exceptions += 1
                    if len(st.samples) < 3:
                        st.samples.append(f"{type(exc).__name__}: {exc} ({path})")
                conn.close()
                conn = http.client.HTTPConnection(HOST, port, timeout=30)
        conn.close()

    t0 = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        for f in [pool.submit(worker) for _ in range(concurrency)]:
            f.result()
    return stats, time.perf_counter() - t0


def rss_mb(pid: int) -> float:
    """Resident set size (MB) of ``pid`` and its children (a worker pool or plan
    subprocesses count too)."""
    total = 0
    pids = [pid]
    try:
        out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True,
                             text=True, check=False).stdout
        pids += [int(p) for p in out.split()]
    except OSError:
        pass
    for p in pids:
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return total / 1024


def rows_of(stats: dict[str, Stats], order: list[str]) -> list[list[str]]:
    rows = []
    for label in order:
        st = stats[label]
        n = len(st.lat) + st.exceptions
        rows.append([label, f"{n:,}", str(st.non2xx), str(st.exceptions),
                     f"{pct(st.lat, 0.5) * 1e3:.1f}", f"**{pct(st.lat, 0.99) * 1e3:.1f}**",
                     f"{max(st.lat, default=float('nan')) * 1e3:.1f}",
                     si(st.nbytes / max(1, len(st.lat)) / 1e3)])
    return rows


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (/proc/pid/stat)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class Phase:
    name: str
    stats: dict[str, Stats]
    wall: float
    server_cpu: float

    @property
    def total(self) -> int:
        return sum(len(st.lat) + st.exceptions for st in self.stats.values())

    @property
    def failed(self) -> int:
        return sum(st.non2xx + st.exceptions for st in self.stats.values())

    def summary(self, concurrency: int) -> str:
        mb = sum(st.nbytes for st in self.stats.values()) / 1e6
        return (f"| {self.name} | {self.total:,} | {concurrency} | {self.wall:.2f} | "
                f"**{self.total / self.wall:,.0f}** | {mb / self.wall:,.0f} | "
                f"{self.server_cpu / max(1, self.total) * 1e3:.2f} | **{self.failed}** |")


def phase(name: str, proc: subprocess.Popen[bytes], port: int, jobs: list[tuple[str, str]],
          concurrency: int) -> Phase:
    c0 = cpu_s(proc.pid)
    stats, wall = drive(port, jobs, concurrency)
    return Phase(name, stats, wall, cpu_s(proc.pid) - c0)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--requests", type=int, default=2000,
                    help="GET requests over the pages other than the report")
    ap.add_argument("--report-requests", type=int, default=200,
                    help="GET requests of the report alone (about 5 MB each)")
    ap.add_argument("--concurrency", type=int, default=8)
    args = ap.parse_args()

    base_yaml = EXAMPLE.read_text()
    dense_yaml = base_yaml.replace("power_per_rack_kw: 40", "power_per_rack_kw: 60")
    assert dense_yaml != base_yaml
    with tempfile.TemporaryDirectory() as tmp, \
            server(Path(tmp) / "cw.db", Path(tmp) / "server.log") as (port, proc):
        conn = http.client.HTTPConnection(HOST, port, timeout=60)
        s1 = save(conn, "baseline 40 kW", base_yaml)
        s2 = save(conn, "denser 60 kW", dense_yaml)
        r1 = start_run(conn, s1)
        seed_plan_s = wait_done(conn, r1)
        r2 = start_run(conn, s2)
        wait_done(conn, r2)
        pages = {
            "home `/`": "/",
            "editor `/scenarios/{id}`": f"/scenarios/{s1}",
            "run page `/runs/{id}`": f"/runs/{r1}",
            "progress fragment `/runs/{id}/progress`": f"/runs/{r1}/progress",
            "catalog search `/catalog?kind=gpus&q=h100`": "/catalog?kind=gpus&q=h100",
            "compare `/compare?run=..&run=..`": f"/compare?run={r1}&run={r2}",
            "`/healthz`": "/healthz",
        }
        report = {"report `/runs/{id}/report`": f"/runs/{r1}/report"}
        # One untimed request per page: templates compile, caches fill, and a page that
        # does not exist fails here, loudly, rather than hundreds of times below.
        for label, path in {**pages, **report}.items():
            r = request(conn, "GET", path)
            if r.status != 200:
                raise SystemExit(f"{label}: HTTP {r.status}: {r.body[:500]!r}")
        conn.close()
        rss_before = rss_mb(proc.pid)
        per_page = max(1, args.requests // len(pages))
        # Interleaved, so every page sees the same mix of concurrent neighbours. The report
        # (a self-contained ~5 MB page) gets a phase of its own: mixed in, its bytes would
        # set everyone's latency.
        light = phase("pages (all but the report), interleaved", proc, port,
                      [(lb, p) for _ in range(per_page) for lb, p in pages.items()],
                      args.concurrency)
        heavy = phase("report alone", proc, port, list(report.items()) * args.report_requests,
                      args.concurrency)
        rss_after = rss_mb(proc.pid)

        # A large plan runs in the server's worker; meanwhile two threads keep asking for
        # /healthz and home: a plan must not block other requests.
        conn = http.client.HTTPConnection(HOST, port, timeout=60)
        s3 = save(conn, "frontier-16k", BIG.read_text())
        stop = threading.Event()
        result: dict[str, tuple[dict[str, Stats], float]] = {}

        def background() -> None:
            result["drive"] = drive(port, [("`/healthz` during the plan", "/healthz"),
                                           ("home `/` during the plan", "/")], 2, stop)

        t = threading.Thread(target=background)
        t.start()
        r3 = start_run(conn, s3)
        plan_s = wait_done(conn, r3)
        stop.set()
        t.join()
        during = result["drive"][0]
        conn.close()

    failed_during = sum(st.non2xx + st.exceptions for st in during.values())
    head = ["page", "requests", "non-2xx", "exceptions", "p50 ms", "p99 ms", "max ms",
            "kB/response"]
    lines = [
        "# Web workbench: load on loopback",
        "",
        *machine_lines(),
        "",
        f"`clusterwright web` (uvicorn, one server process) on 127.0.0.1 with a fresh "
        f"database seeded through its own forms: two saved scenarios (training-1k-h100 at 40 "
        f"and 60 kW per rack) and their two finished plan runs (the first took "
        f"{seed_plan_s:.1f} s from POST to the report link). The load comes from a second "
        f"process (this script): {args.concurrency} threads, each with one keep-alive "
        f"`http.client` connection; latency is request sent to body read "
        f"(time.perf_counter). First {light.total:,} GET requests interleaved over "
        f"{len(pages)} pages ({per_page} each), then the report alone.",
        "",
        "| phase | requests | concurrency | wall s | requests/s | MB/s | server CPU ms/request "
        "| failed (non-2xx + exceptions) |",
        "|---|---|---|---|---|---|---|---|",
        light.summary(args.concurrency),
        heavy.summary(args.concurrency),
        "",
        f"- server resident memory (with its children): {rss_before:.0f} MB before the load, "
        f"{rss_after:.0f} MB after",
        "",
        *table(head, rows_of({**light.stats, **heavy.stats}, [*pages, *report])),
        "",
        f"While a plan of frontier-16k (16,384 GPUs, the largest shipped example) ran in the "
        f"server's worker ({plan_s:.1f} s from POST to the report link), 2 threads kept "
        f"requesting /healthz and home (failed: **{failed_during}**):",
        "",
        *table(head, rows_of(during, sorted(during))),
        "",
        "- The client shares the 2 cores with the server and its threads share one GIL, so "
        "requests/s is a floor for the server alone; 'server CPU ms/request' is the server "
        "process's own CPU time (/proc/PID/stat) over the phase divided by its requests.",
        f"- At concurrency {args.concurrency} a request mostly waits its turn: "
        f"{args.concurrency} / {light.total / light.wall:,.0f} requests/s = "
        f"{args.concurrency / (light.total / light.wall) * 1e3:.0f} ms in the system on "
        f"average (Little's law), about the p50s above; the server's own CPU per light page is "
        f"{light.server_cpu / max(1, light.total) * 1e3:.1f} ms, so one uvicorn process "
        f"tops out near {light.total / max(1e-9, light.server_cpu):,.0f} requests/s on one core.",
        "- Nothing here is asserted; the script exits 1 when a request failed.",
    ]
    for label, st in [*light.stats.items(), *heavy.stats.items(), *during.items()]:
        for sample in st.samples:
            lines.append(f"- failure sample, {label}: {sample}")
    write("web_load.md", lines)
    return 1 if light.failed or heavy.failed or failed_during else 0


if __name__ == "__main__":
    os.chdir(ROOT)
    sys.exit(main())
