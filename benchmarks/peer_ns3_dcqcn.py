"""DCQCN incast: Clusterwright's fluid model against a packet-level simulator, side by side.

Scenario (both tools): N senders (8 to 128) and one receiver on one switch, every link
100 Gb/s with 1 us propagation; each sender sends 1 MB (1,000-byte payloads) at t = 0, all
to the receiver. DCQCN as NVIDIA ConnectX implements it, with the HPCC simulator's settings
(its run.py, scaled from 25 Gb/s): alpha every 1 us, rate decrease at most every 4 us,
rate timer 300 us, g = 1/256, one fast-recovery stage, R_AI 20 Mb/s, R_HAI 200 Mb/s, minimum
rate 100 Mb/s, CLAMP_TARGET_RATE off; ECN RED at the switch egress, Kmin 400 KB, Kmax
1,600 KB, Pmax 0.2; PFC with a 32 MB shared buffer (dynamic thresholds, alpha 1/8, headroom
3 x BDP per port).

- Packet level: the HPCC ns-3 simulator (github.com/alibaba-edu/High-Precision-Congestion-
  Control, ns-3.17 base, CC_MODE 1 = DCQCN, commit in the results), its ``scratch/third``
  program with a generated topology, flow file and configuration. Build it yourself outside
  this repository and point ``HPCC_NS3`` (or ``--ns3``) at its ``simulation`` directory;
  without it this script says so and exits 0 (nothing of it is in the repository).
- Fluid: ``clusterwright.sim.incast.star_incast_seeds`` (the model of ``sim/fluid.py``:
  per-flow DCQCN reaction points, fluid queue, RED marking, PFC; all ``--seeds`` seeds (the
  CNP draws are seeded) in one call of the compiled single-bottleneck kernel
  ``sim/fluid_seeds.py``, which gives ``simulate_fluid``'s results draw for draw; its time
  split evenly over the seeds; its first call in the process, which compiles it or loads it
  from numba's cache, timed apart), with ns-3's 48 bytes of headers per 1,000-byte packet
  added to the bytes on the wire; the mean of the seeds. Shown too: the packet model (an experiment:
  ``order="arrival", packets=True`` at 1-us steps, first-in-first-out service, whole-packet
  marks and ns-3's packet pacing of rate changes; docs/netsim.md), arrival order alone, and
  the mean-field ``dcqcn-fluid`` model.

Compared: incast completion (last flow's completion), mean queue at the receiver's switch
port over the incast, Jain's index of the per-flow throughputs, wall time and CPU time
(ns-3: the child process, one run; fluid: this process, one run). Targets (issue 18): within 10 % on
completion and mean queue, >= 100x the packet-level simulator's speed.

    python benchmarks/peer_ns3_dcqcn.py [--senders 8,16,32,64,128] [--seeds 5] [--dt-us 4]
        [--repeat 3]
    python benchmarks/peer_ns3_dcqcn.py --trajectory 128 [--times-ms 0.5,1,2,4,6,8,10,12]
    python benchmarks/peer_ns3_dcqcn.py --runs 8 --senders 16,32

``--trajectory N``: the mean queue over [0, T] for several T, ns-3 against the default
fluid and the packet model. ``--runs K``: K runs of each tool per sender count, listed.
ns-3 writes its queue histogram only every 100 ms of simulated time, so for
each T its flows start T before such a dump (one ns-3 run per T, RngRun 1).
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _bench import machine_lines, table, write

from clusterwright.sim.incast import star_incast, star_incast_seeds

NS3 = Path(os.environ.get("HPCC_NS3", "/work/peers/hpcc/simulation"))
GBPS = 100
DELAY_S = 1e-6
PAYLOAD = 1000
HEADER = 48  # ns-3 HPCC: bytes of headers per data packet (its fct.txt standalone times)
SIZE = 1_000_000
BUFFER_MB = 32
START_NS = 2_000_000_000
DT_PACKETS = 1e-6  # the packet model's step: a packet gap and the loop delay in whole us


def ns3_config(n: int) -> dict[str, str]:
    """The topology, flows and configuration files for ``n`` senders."""
    topo = [f"{n + 2} 1 {n + 1}", "0"] + [f"0 {h} {GBPS}Gbps {DELAY_S * 1e3:g}ms 0"
                                          for h in range(1, n + 2)]
    flows = [str(n)] + [f"{h} {n + 1} 3 100 {SIZE} {START_NS / 1e9:g}" for h in range(1, n + 1)]
    k = GBPS // 25
    cfg = {
        "ENABLE_QCN": 1, "USE_DYNAMIC_PFC_THRESHOLD": 1, "PACKET_PAYLOAD_SIZE": PAYLOAD,
        "TOPOLOGY_FILE": "topo.txt", "FLOW_FILE": "flow.txt", "TRACE_FILE": "trace.txt",
        "TRACE_OUTPUT_FILE": "mix.tr", "FCT_OUTPUT_FILE": "fct.txt",
        "PFC_OUTPUT_FILE": "pfc.txt", "SIMULATOR_STOP_TIME": 2.2, "CC_MODE": 1,
        "ALPHA_RESUME_INTERVAL": 1, "RATE_DECREASE_INTERVAL": 4, "CLAMP_TARGET_RATE": 0,
        "RP_TIMER": 300, "EWMA_GAIN": 0.00390625, "FAST_RECOVERY_TIMES": 1,
        "RATE_AI": f"{5 * k}Mb/s", "RATE_HAI": f"{50 * k}Mb/s", "MIN_RATE": "100Mb/s",
        "DCTCP_RATE_AI": "1000Mb/s", "ERROR_RATE_PER_LINK": "0.0000", "L2_CHUNK_SIZE": 4000,
        "L2_ACK_INTERVAL": 1, "L2_BACK_TO_ZERO": 0, "HAS_WIN": 0, "GLOBAL_T": 1,
        "VAR_WIN": 0, "FAST_REACT": 1, "U_TARGET": 0.95, "MI_THRESH": 0, "INT_MULTI": 1,
        "MULTI_RATE": 0, "SAMPLE_FEEDBACK": 0, "PINT_LOG_BASE": 1.05, "PINT_PROB": 1.0,
        "RATE_BOUND": 1, "ACK_HIGH_PRIO": 1, "LINK_DOWN": "0 0 0", "ENABLE_TRACE": 0,
        "KMAX_MAP": f"1 {GBPS * 10**9} {400 * k}", "KMIN_MAP": f"1 {GBPS * 10**9} {100 * k}",
        "PMAX_MAP": f"1 {GBPS * 10**9} 0.2", "BUFFER_SIZE": BUFFER_MB,
        "QLEN_MON_FILE": "qlen.txt", "QLEN_MON_START": START_NS,
        "QLEN_MON_END": START_NS + 100_000_000,
    }
    return {"topo.txt": "\n".join(topo) + "\n", "flow.txt": "\n".join(flows) + "\n",
            "trace.txt": "0\n\n",
            "config.txt": "".join(f"{key} {v}\n" for key, v in cfg.items())}


def run_ns3(n: int, seeds: int) -> dict[str, float]:
    """Mean over ``seeds`` ns-3 runs (RngRun 1, 2, ...: its ECN marking draws) for ``n``
    senders: completion, mean queue, Jain, wall and CPU seconds, PFC pauses."""
    runs = [_run_ns3(n, seed) for seed in range(1, seeds + 1)]
    out = {k: float(np.mean([r[k] for r in runs])) for k in runs[0]}
    out["end_sd"] = float(np.std([r["end"] for r in runs]))
    out["q_sd"] = float(np.std([r["qmean"] for r in runs]))
    return out


def _run_ns3(n: int, seed: int) -> dict[str, float]:
    binary = NS3 / "build" / "scratch" / "third"
    with tempfile.TemporaryDirectory(prefix="ns3-incast-") as tmp:
        for name, text in ns3_config(n).items():
            Path(tmp, name).write_text(text, encoding="utf-8")
        env = dict(os.environ, LD_LIBRARY_PATH=str(NS3 / "build"),
                   NS_GLOBAL_VALUE=f"RngRun={seed}")
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        subprocess.run([str(binary), "config.txt"], cwd=tmp, env=env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        fct = np.asarray([float(line.split()[6]) * 1e-9 for line in
                          Path(tmp, "fct.txt").read_text(encoding="utf-8").splitlines()
                          if line.strip()])
        end = float(fct.max())
        qmean = _ns3_queue_mean(Path(tmp, "qlen.txt"), n + 1, end)
        pauses = sum(1 for line in Path(tmp, "pfc.txt").read_text(encoding="utf-8")
                     .splitlines() if line.strip().endswith(" 1"))
    thr = SIZE / fct
    return {"end": end, "qmean": qmean, "jain": float(thr.sum() ** 2 / (len(thr) * (thr * thr)
                                                                          .sum())),
            "wall": wall, "cpu": cpu, "pauses": pauses}


def _ns3_queue_mean(path: Path, port: int, end: float) -> float:
    """Mean bytes queued at the switch's port ``port`` over [0, end]: HPCC samples every
    port's queue every 100 ns into 1-KB bins and dumps the cumulative histogram."""
    last = None
    for line in path.read_text(encoding="utf-8").splitlines():
        parts = line.split()
        if len(parts) > 2 and parts[0] == "0" and parts[1] == str(port):
            last = [int(v) for v in parts[2:]]
    if not last:
        return 0.0
    cnt = np.asarray(last, dtype=float)
    kb = np.arange(len(cnt)) + 0.5
    kb[0] = 0.0  # the idle time after the incast lands in bin 0
    samples = end / 100e-9
    return float((cnt * kb * 1000).sum() / samples)


def run_fluid(n: int, cc: str, seeds: int, dt: float, order: str = "share",
              packets: bool = False, repeat: int = 1) -> dict[str, float]:
    """Mean over ``seeds`` fluid runs: the default (all seeds in one call, its time split
    evenly; the median time of ``repeat`` calls), the packet model (``order="arrival"``,
    ``packets=True``) or, for contrast, the plain arrival-order fluid (one call a seed)."""
    wire = SIZE * (PAYLOAD + HEADER) / PAYLOAD
    ends, qs, jains, walls, cpus = [], [], [], [], []
    if order == "share" and not packets:
        # The default: every seed in one call (``star_incast_seeds``); time per seed.
        calls = []
        for _ in range(repeat):
            t0, c0 = time.perf_counter(), time.process_time()
            results = star_incast_seeds(n, wire, range(seeds), cc=cc, link_gbps=GBPS,
                                        delay_s=DELAY_S, buffer_bytes=BUFFER_MB * 2**20,
                                        dt=dt)
            calls.append((time.perf_counter() - t0, time.process_time() - c0))
        wall, cpu = (float(np.median(v)) for v in zip(*calls, strict=True))
        walls = [wall / seeds] * seeds
        cpus = [cpu / seeds] * seeds
    else:
        results = []
        for seed in range(seeds):
            t0, c0 = time.perf_counter(), time.process_time()
            results.append(star_incast(
                n, wire, cc=cc, link_gbps=GBPS, delay_s=DELAY_S,
                buffer_bytes=BUFFER_MB * 2**20, dt=dt, seed=seed, order=order,
                **({"packets": True, "packet_bytes": PAYLOAD + HEADER} if packets else {})))
            walls.append(time.perf_counter() - t0)
            cpus.append(time.process_time() - c0)
    for r in results:
        ends.append(r.end_s)
        qs.append(float(r.queue_mean_bytes[n]))
        jains.append(r.jain_fairness(np.full(n, float(SIZE))))
    return {"end": float(np.mean(ends)), "end_sd": float(np.std(ends)),
            "qmean": float(np.mean(qs)), "q_sd": float(np.std(qs)),
            "jain": float(np.mean(jains)), "wall": float(np.mean(walls)),
            "cpu": float(np.mean(cpus))}


DUMP_NS = 2_100_000_000  # an ns-3 queue-histogram dump (every 100 ms from 2.0 s)


def ns3_queue_to(n: int, t_s: float, seed: int = 1) -> float:
    """ns-3's mean queue at the receiver's port over the first ``t_s`` of the incast: its
    flows start ``t_s`` before a histogram dump (the queue is empty before they start)."""
    files = ns3_config(n)
    start = DUMP_NS - round(t_s * 1e9)
    files["flow.txt"] = "\n".join(
        [str(n)] + [f"{h} {n + 1} 3 100 {SIZE} {start / 1e9:.9f}" for h in range(1, n + 1)]
    ) + "\n"
    files["config.txt"] = files["config.txt"].replace(
        f"QLEN_MON_END {START_NS + 100_000_000}", f"QLEN_MON_END {DUMP_NS + 100}")
    with tempfile.TemporaryDirectory(prefix="ns3-incast-") as tmp:
        for name, text in files.items():
            Path(tmp, name).write_text(text, encoding="utf-8")
        env = dict(os.environ, LD_LIBRARY_PATH=str(NS3 / "build"),
                   NS_GLOBAL_VALUE=f"RngRun={seed}")
        subprocess.run([str(NS3 / "build" / "scratch" / "third"), "config.txt"], cwd=tmp,
                       env=env, check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        lines = Path(tmp, "qlen.txt").read_text(encoding="utf-8").splitlines()
    block = lines[lines.index(f"time: {DUMP_NS}") + 1:]
    for line in block:
        parts = line.split()
        if parts[0] == "time:":
            break
        if parts[0] == "0" and parts[1] == str(n + 1):
            cnt = np.asarray([int(v) for v in parts[2:]], dtype=float)
            kb = np.arange(len(cnt)) + 0.5
            kb[0] = 0.0
            return float((cnt * kb * 1000).sum() / (t_s / 100e-9))
    return 0.0


def fluid_queue_to(n: int, times_s: list[float], order: str, seeds: int, dt: float,
                   packets: bool = False) -> list[float]:
    """The fluid's mean queue over [0, T] for each T (mean of ``seeds`` seeds)."""
    wire = SIZE * (PAYLOAD + HEADER) / PAYLOAD
    out = np.zeros(len(times_s))
    for seed in range(seeds):
        trace: list[float] = []
        star_incast(n, wire, link_gbps=GBPS, delay_s=DELAY_S, buffer_bytes=BUFFER_MB * 2**20,
                    dt=dt, seed=seed, order=order, queue_trace=trace,
                    **({"packets": True, "packet_bytes": PAYLOAD + HEADER} if packets else {}))
        cum = np.cumsum(trace)
        for i, t_s in enumerate(times_s):
            k = round(t_s / dt)
            out[i] += (cum[min(k, len(cum)) - 1]) / k / seeds
    return out.tolist()


def trajectory(n: int, times_ms: list[float], seeds: int, dt: float) -> int:
    times = [t * 1e-3 for t in times_ms]
    ns = [ns3_queue_to(n, t) for t in times]
    share = fluid_queue_to(n, times, "share", seeds, dt)
    arrival = fluid_queue_to(n, times, "arrival", seeds, DT_PACKETS, packets=True)
    rows = [[f"{t:g}", f"{a / 1e3:,.0f}", f"{b / 1e3:,.0f}", f"{b / a - 1:+.1%}",
             f"{c / 1e3:,.0f}", f"{c / a - 1:+.1%}"]
            for t, a, b, c in zip(times_ms, ns, share, arrival, strict=True)]
    lines = [f"# DCQCN incast of {n} senders: mean queue over [0, T], ns-3 against the fluid",
             "", *machine_lines(),
             f"- ns-3: one run per T (RngRun 1); fluid: mean of {seeds} seeds; scenario as in "
             "peer_ns3_dcqcn.md", "",
             "Mean bytes queued at the receiver's switch port from the incast's start to T "
             "(KB). `share`: the fluid's egress serves each flow in proportion to its bytes "
             f"queued (simulate_fluid, dt {dt * 1e6:g} us); `packets`: first in, first "
             f"out, senders and marks in whole packets (`order=\"arrival\", packets=True`, dt "
             f"{DT_PACKETS * 1e6:g} us).", "",
             *table(["T ms", "ns-3 KB", "fluid share KB", "error", "fluid packets KB",
                     "error"], rows)]
    write(f"peer_ns3_dcqcn_trajectory_{n}.md", lines)
    return 0


def runs(senders: list[int], count: int) -> int:
    """Per run: ns-3 (RngRun 1..count) and the packet model (seeds 0..count-1)."""
    rows = []
    wire = SIZE * (PAYLOAD + HEADER) / PAYLOAD
    for n in senders:
        for i in range(count):
            ns = _run_ns3(n, i + 1)
            r = star_incast(n, wire, link_gbps=GBPS, delay_s=DELAY_S,
                            buffer_bytes=BUFFER_MB * 2**20, dt=DT_PACKETS, seed=i,
                            order="arrival", packets=True, packet_bytes=PAYLOAD + HEADER)
            rows.append([str(n), str(i + 1), f"{ns['end'] * 1e3:.3f}",
                         f"{ns['qmean'] / 1e3:,.0f}", str(i), f"{r.end_s * 1e3:.3f}",
                         f"{r.queue_mean_bytes[n] / 1e3:,.0f}"])
    lines = ["# DCQCN incast: ns-3 and the fluid packet model, run by run", "",
             *machine_lines(),
             f"- fluid: `star_incast(order=\"arrival\", packets=True, packet_bytes="
             f"{PAYLOAD + HEADER})`, dt {DT_PACKETS * 1e6:g} us; scenario as in "
             "peer_ns3_dcqcn.md", "",
             "Completion (ms) and mean queue (KB) of each run: ns-3 by RngRun (its ECN "
             "draws), the fluid by seed (its CNP draws).", "",
             *table(["N", "ns-3 RngRun", "completion", "mean queue", "fluid seed",
                     "completion", "mean queue"], rows)]
    write("peer_ns3_dcqcn_runs.md", lines)
    return 0


def ns3_commit() -> str:
    try:
        return subprocess.run(["git", "-C", str(NS3.parent), "rev-parse", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"


def main() -> int:
    global NS3
    ap = argparse.ArgumentParser()
    ap.add_argument("--senders", default="8,16,32,64,128")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--ns3-seeds", type=int, default=5)
    ap.add_argument("--dt-us", type=float, default=4.0)
    ap.add_argument("--repeat", type=int, default=3,
                    help="calls of the default fluid timed; the median is reported")
    ap.add_argument("--ns3", default=str(NS3))
    ap.add_argument("--trajectory", type=int, default=0,
                    help="senders: the mean queue over [0, T] for each of --times-ms")
    ap.add_argument("--runs", type=int, default=0,
                    help="this many runs per sender count, each listed (ns-3 and the "
                         "packet model)")
    ap.add_argument("--times-ms", default="0.5,1,2,3,4,5,6,7,8,9,10,11,12")
    args = ap.parse_args()
    NS3 = Path(args.ns3)
    if not (NS3 / "build" / "scratch" / "third").exists():
        print(f"skipped: the HPCC ns-3 simulator is not built at {NS3} (set HPCC_NS3 or "
              "--ns3 to its simulation/ directory)")
        return 0
    dt = args.dt_us * 1e-6
    if args.runs:
        return runs([int(v) for v in args.senders.split(",")], args.runs)
    if args.trajectory:
        return trajectory(args.trajectory, [float(v) for v in args.times_ms.split(",")],
                          args.seeds, dt)
    rows, rows_mf, rows_ar, rows_pk, errs, errs_pk = [], [], [], [], [], []
    # The compiled kernel's first call in a process: its compilation (the first on this
    # machine) or its load from numba's cache; timed apart, not in the table.
    t0 = time.perf_counter()
    star_incast_seeds(8, SIZE, [0], link_gbps=GBPS, delay_s=DELAY_S)
    first_call = time.perf_counter() - t0
    for n in [int(v) for v in args.senders.split(",")]:
        ns = run_ns3(n, args.ns3_seeds)
        fl = run_fluid(n, "dcqcn", args.seeds, dt, repeat=args.repeat)
        mf = run_fluid(n, "dcqcn-fluid", 1, dt)
        ar = run_fluid(n, "dcqcn", args.seeds, dt, order="arrival")
        pk = run_fluid(n, "dcqcn", args.seeds, DT_PACKETS, order="arrival", packets=True)
        e_pk = (pk["end"] / ns["end"] - 1, pk["qmean"] / ns["qmean"] - 1)
        errs_pk.append((abs(e_pk[0]), abs(e_pk[1])))
        rows_pk.append([str(n), f"{pk['end'] * 1e3:.3f} ± {pk['end_sd'] * 1e3:.3f}",
                        f"{e_pk[0]:+.1%}",
                        f"{pk['qmean'] / 1e3:,.0f} ± {pk['q_sd'] / 1e3:,.0f}", f"{e_pk[1]:+.1%}",
                        f"{pk['jain']:.3f}", f"{pk['cpu'] * 1e3:.0f}",
                        f"{ns['cpu'] / pk['cpu']:.0f}x"])
        e_end = fl["end"] / ns["end"] - 1
        e_q = fl["qmean"] / ns["qmean"] - 1
        errs.append((abs(e_end), abs(e_q)))
        rows.append([
            str(n), f"{ns['end'] * 1e3:.3f} ± {ns['end_sd'] * 1e3:.3f}",
            f"{fl['end'] * 1e3:.3f} ± {fl['end_sd'] * 1e3:.3f}",
            f"{e_end:+.1%}", f"{ns['qmean'] / 1e3:,.0f} ± {ns['q_sd'] / 1e3:,.0f}",
            f"{fl['qmean'] / 1e3:,.0f} ± {fl['q_sd'] / 1e3:,.0f}", f"{e_q:+.1%}",
            f"{ns['jain']:.3f} / {fl['jain']:.3f}", f"{ns['pauses']:.0f}",
            f"{ns['wall']:.2f} / {ns['cpu']:.2f}", f"{fl['wall'] * 1e3:.1f} / "
            f"{fl['cpu'] * 1e3:.1f}", f"{ns['wall'] / fl['wall']:.0f}x / "
            f"{ns['cpu'] / fl['cpu']:.0f}x"])
        rows_mf.append([str(n), f"{mf['end'] * 1e3:.3f}", f"{mf['end'] / ns['end'] - 1:+.1%}",
                        f"{mf['qmean'] / 1e3:,.0f}", f"{mf['qmean'] / ns['qmean'] - 1:+.1%}"])
        rows_ar.append([str(n), f"{ar['end'] * 1e3:.3f}", f"{ar['end'] / ns['end'] - 1:+.1%}",
                        f"{ar['qmean'] / 1e3:,.0f}", f"{ar['qmean'] / ns['qmean'] - 1:+.1%}",
                        f"{ar['cpu'] * 1e3:.0f}"])
        print(rows[-1], flush=True)
    worst_end = max(e[0] for e in errs)
    worst_q = max(e[1] for e in errs)
    lines = ["# DCQCN incast: fluid model vs packet-level simulator (HPCC ns-3)", "",
             *machine_lines(),
             f"- packet level: HPCC ns-3 (alibaba-edu/High-Precision-Congestion-Control) "
             f"commit {ns3_commit()}, `scratch/third`, CC_MODE 1 (DCQCN)",
             f"- ns-3: mean of {args.ns3_seeds} runs (RngRun 1..{args.ns3_seeds}, its ECN "
             "marking draws); fluid: `clusterwright.sim.incast.star_incast_seeds` (the "
             "compiled kernel of sim/fluid_seeds.py, each seed in turn; all seeds in one call, "
             f"its time split evenly: the median of {args.repeat} calls), dt "
             f"{args.dt_us:g} us, mean of {args.seeds} seeds (± standard deviation); the "
             f"kernel's first call in this process (compiled, or loaded from numba's cache) "
             f"took {first_call:.1f} s, before the table's", "",
             "N senders x 1 MB to one receiver, 100 Gb/s links, 1 us propagation; NVIDIA "
             "DCQCN settings as the HPCC simulator's run.py scales them (script docstring). "
             "Completion: the last flow's; mean queue: the receiver's switch port over the "
             "incast; time: wall / CPU seconds (ns-3: its process; fluid: the call).", "",
             *table(["N", "ns-3 completion ms", "fluid completion ms", "error",
                     "ns-3 mean queue KB", "fluid mean queue KB", "error",
                     "Jain ns-3 / fluid", "ns-3 PFC pauses", "ns-3 wall / CPU s",
                     "fluid wall / CPU ms", "speedup wall / CPU"], rows), "",
             f"Worst error: completion {worst_end:.1%}, mean queue {worst_q:.1%} "
             "(target: within 10 %).", "",
             "The packet model (an experiment): the egress serves first in, first out, "
             "marks whole packets, and senders pace whole packets, a new rate waiting out "
             "the old rate's gap (`star_incast(order=\"arrival\", packets=True, "
             f"packet_bytes={PAYLOAD + HEADER})`, docs/netsim.md); dt "
             f"{DT_PACKETS * 1e6:g} us, the same {args.seeds} seeds (± standard deviation); "
             "speedup: ns-3's CPU time over the fluid's:", "",
             *table(["N", "completion ms", "error vs ns-3", "mean queue KB", "error vs ns-3",
                     "Jain", "CPU ms", "speedup"], rows_pk), "",
             f"Worst error of the packet model: completion {max(e[0] for e in errs_pk):.1%}, "
             f"mean queue {max(e[1] for e in errs_pk):.1%}. Per run at 16 and 32 senders "
             "(at 16 both tools land in one of two outcomes): peer_ns3_dcqcn_runs.md.", "",
             "Served first in, first out by arrival (`order=\"arrival\"`) without packets, "
             f"dt {args.dt_us:g} us:",
             "", *table(["N", "completion ms", "error vs ns-3", "mean queue KB",
                         "error vs ns-3", "CPU ms"], rows_ar), "",
             "The mean-field DCQCN model (`--cc dcqcn-fluid`, Zhu et al. CoNEXT 2016) on the "
             "same runs, for contrast: it has no synchronised cuts, so the link never idles.",
             "", *table(["N", "completion ms", "error vs ns-3", "mean queue KB",
                         "error vs ns-3"], rows_mf)]
    write("peer_ns3_dcqcn.md", lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
