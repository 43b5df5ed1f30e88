"""Per-rank step times of a training job, from its log.

A synchronous job's iteration takes as long as its slowest rank, so the log line every
framework prints (the whole iteration) cannot tell ranks apart; what can is each rank's own
compute time before it waits in a collective. Three forms are read, in any mix:

- A table, comma- or whitespace-separated, with a header naming the node (``node``,
  ``host``, ``hostname``), optionally the ``rank``, the ``iteration`` (``iter``, ``step``) and
  the time (``step_time_s``/``time_s``/``seconds``, or ``step_time_ms``/``time_ms``/``ms``):
  what a per-rank timer (a CUDA event pair around forward-backward, logged by every rank)
  writes. ``#`` lines are comments.
- NVIDIA Resiliency Extension's straggler detector reports (nvidia-resiliency-ext,
  ``straggler.Detector`` and ``StragglerDetectionCallback``; NeMo prints them): a
  ``GPU relative performance:`` block with one ``Rank=R Node=N Score=S`` line per rank, the
  score being "the ratio of current performance to reference performance" with the best
  rank as reference. Each block is one sample; a rank's relative time is 1 / score.
- Megatron-LM's iteration line, ``iteration N/ M | ... | elapsed time per iteration (ms):
  T | ...``: the whole job's step time, compared with the blueprint's estimate.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from clusterwright.ingest.common import IngestError, dump_files, read_dump
from clusterwright.ingest.model import Observations, StepTime

FIELD = "steps"
_NODE_COLS = ("node", "host", "hostname", "nodename")
_RANK_COLS = ("rank", "global_rank")
_ITER_COLS = ("iteration", "iter", "step")
_SEC_COLS = ("step_time_s", "time_s", "seconds", "step_s")
_MS_COLS = ("step_time_ms", "time_ms", "ms", "step_ms")
_NVRX_HEAD = re.compile(r"GPU relative performance:")
_NVRX_OTHER = re.compile(r"GPU individual performance:")
_NVRX_ROW = re.compile(r"Rank=(\d+)\s+Node=(\S+)\s+Score=([0-9.eE+-]+)")
_MEGATRON = re.compile(r"\biteration\s+(\d+)\s*/\s*\d+\s*\|.*?elapsed time per iteration "
                       r"\(ms\):\s*([0-9.eE+-]+)")
# Samples in one log: a 16,384-GPU job logging 1,000 iterations is 1.6e7.
MAX_SAMPLES = 20_000_000


def _split(line: str) -> list[str]:
    return [c.strip() for c in (line.split(",") if "," in line else line.split())]


def parse_steps(path: str | Path) -> Observations:
    obs = Observations()
    for f in dump_files(path, FIELD):
        text = read_dump(f, "training log", FIELD)
        _parse(text, str(f), obs)
    return obs


def _parse(text: str, src: str, obs: Observations) -> None:
    lines = text.splitlines()
    header: list[str] | None = None
    cols: dict[str, int] = {}
    scale = 1.0
    block = -1  # NVRx report counter
    in_rel = False
    found = 0
    for n, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if _NVRX_HEAD.search(line):
            block += 1
            in_rel = True
            continue
        if _NVRX_OTHER.search(line):
            in_rel = False
            continue
        m = _NVRX_ROW.search(line)
        if m:
            if in_rel:
                score = _num(m.group(3), src, n)
                if not 0.0 < score <= 1.0:
                    raise IngestError(src, n, f"straggler score {score:g} outside (0, 1]",
                                      field=FIELD)
                obs.steps.append(StepTime(node=m.group(2), rank=int(m.group(1)),
                                          iteration=block, seconds=1.0 / score, source=src,
                                          line=n, relative=True))
                obs.report("steps", src, m.group(2), n)
                found += 1
            continue
        m = _MEGATRON.search(line)
        if m:
            obs.job_steps.append((int(m.group(1)), _num(m.group(2), src, n) / 1e3, src, n))
            found += 1
            continue
        if header is None:
            cells = [c.lower() for c in _split(line)]
            i_node = next((cells.index(c) for c in _NODE_COLS if c in cells), None)
            sec = next((cells.index(c) for c in _SEC_COLS if c in cells), None)
            ms = next((cells.index(c) for c in _MS_COLS if c in cells), None)
            if i_node is not None and (sec is not None or ms is not None):
                header = cells
                cols["node"] = i_node
                cols["time"] = sec if sec is not None else ms  # type: ignore[assignment]
                scale = 1.0 if sec is not None else 1e-3
                rank = next((cells.index(c) for c in _RANK_COLS if c in cells), None)
                it = next((cells.index(c) for c in _ITER_COLS if c in cells), None)
                if rank is not None:
                    cols["rank"] = rank
                if it is not None:
                    cols["iter"] = it
                continue
            continue  # other log lines
        cells = _split(line)
        if len(cells) != len(header):
            # a table interleaved with other log lines: only whole rows are rows
            if len(cells) < len(header):
                raise IngestError(src, n, f"{len(cells)} fields, the header has "
                                  f"{len(header)} (truncated?)", field=FIELD)
            continue
        node = cells[cols["node"]]
        t = _num(cells[cols["time"]], src, n) * scale
        if not (math.isfinite(t) and t > 0):
            raise IngestError(src, n, f"step time {cells[cols['time']]!r} is not a positive "
                              "number", field=FIELD)
        rank = int(_num(cells[cols["rank"]], src, n)) if "rank" in cols else 0
        it = int(_num(cells[cols["iter"]], src, n)) if "iter" in cols else found
        obs.steps.append(StepTime(node=node, rank=rank, iteration=it, seconds=t, source=src,
                                  line=n))
        obs.report("steps", src, node, n)
        found += 1
        if found > MAX_SAMPLES:
            raise IngestError(src, n, f"more than {MAX_SAMPLES:,} samples", field=FIELD)
    if not found:
        raise IngestError(src, 1, "no step times: expected a table with node and step time "
                          "columns, straggler-detector reports (Rank= Node= Score=) or "
                          "Megatron-LM iteration lines", field=FIELD)


def _num(text: str, src: str, n: int) -> float:
    try:
        v = float(text)
    except ValueError:
        raise IngestError(src, n, f"{text[:40]!r} is not a number", field=FIELD) from None
    if not math.isfinite(v):
        raise IngestError(src, n, f"{text[:40]!r} is not a finite number", field=FIELD)
    return v
