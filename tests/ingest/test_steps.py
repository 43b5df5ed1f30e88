"""Per-rank step times: tables, straggler reports, Megatron-LM iteration lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterwright.ingest.common import IngestError
from clusterwright.ingest.steps import parse_steps


def test_table_in_ms(data: Path) -> None:
    obs = parse_steps(data / "steps.csv")
    assert len(obs.steps) == 8
    s = next(s for s in obs.steps if s.rank == 3 and s.iteration == 1)
    assert s.node == "gpu00002" and s.seconds == pytest.approx(1.13) and s.line == 6


def test_straggler_report_and_megatron_lines(data: Path) -> None:
    obs = parse_steps(data / "nemo_straggler.log")
    rel = {(s.rank, s.node): s.seconds for s in obs.steps}
    assert rel[(5, "gpu00002")] == pytest.approx(1 / 0.88)
    assert (5, "gpu00002") in rel and len(obs.steps) == 4  # individual block ignored
    assert all(s.relative for s in obs.steps)
    assert obs.job_steps == [(100, pytest.approx(12.8014), str(data / "nemo_straggler.log"),
                              12)]


def test_bad_logs(tmp_path: Path) -> None:
    p = tmp_path / "log.txt"
    p.write_text("just some log\n")
    with pytest.raises(IngestError, match="no step times"):
        parse_steps(p)
    p.write_text("node,rank,iteration,step_time_s\ngpu1,0,1,-3\n")
    with pytest.raises(IngestError, match=r"log\.txt:2: step time"):
        parse_steps(p)
    p.write_text("node,rank,iteration,step_time_s\ngpu1,0\n")
    with pytest.raises(IngestError, match=r"log\.txt:2: 2 fields"):
        parse_steps(p)
    p.write_text("Rank=1 Node=a Score=1.5\nGPU relative performance:\n Rank=1 Node=a Score=1.5\n")
    with pytest.raises(IngestError, match=r"log\.txt:3: straggler score 1.5"):
        parse_steps(p)
