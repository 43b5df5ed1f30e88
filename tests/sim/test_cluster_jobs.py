"""Trace CSV parsing (errors name the line) and the seeded job generator."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterwright.errors import InputError
from clusterwright.sim.cluster_jobs import (
    HOUR,
    MAX_JOBS,
    Job,
    JobMix,
    TraceError,
    generate,
    parse_trace,
    read_trace,
)

HEAD = "id,kind,submit_h,duration_h,gpus,priority,mig_profile,replicas\n"
PROFILES = ["1g.10gb", "3g.40gb"]
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "ops" / "jobs.csv"


def parse(body: str, nodes: int = 4) -> list[Job]:
    return parse_trace(HEAD + body, nodes, 8, PROFILES, name="t.csv")


def test_rows_become_jobs_in_seconds_and_nodes() -> None:
    jobs = parse("a,train,1.5,2,16,,,\nm,mig,0,0.5,,,1g.10gb,\ns,inference,0,10,8,,,3\n")
    by = {j.id: j for j in jobs}
    assert by["a"].submit_s == 1.5 * HOUR and by["a"].duration_s == 2 * HOUR
    assert by["a"].nodes == 2 and by["a"].priority == 10  # train default priority
    assert by["m"].mig_profile == "1g.10gb" and by["m"].nodes == 0
    assert by["s"].replicas == 3 and by["s"].nodes == 1 and by["s"].priority == 100
    assert [j.id for j in jobs] == ["m", "s", "a"]  # ordered by submit time


def test_unknown_column_is_named_on_line_1() -> None:
    with pytest.raises(TraceError, match=r"t.csv line 1: unknown column\(s\) 'user'"):
        parse_trace("id,kind,submit_h,duration_h,user\n", 4, 8, PROFILES, name="t.csv")


def test_missing_required_column() -> None:
    with pytest.raises(TraceError, match=r"missing column.*duration_h"):
        parse_trace("id,kind,submit_h\n", 4, 8, PROFILES, name="t.csv")


def test_job_larger_than_the_cluster_names_its_line() -> None:
    with pytest.raises(TraceError, match=r"t.csv line 3: job 'huge' needs 40 GPUs = 5 nodes, "
                                         r"but the cluster has 4 nodes \(32 GPUs\)"):
        parse("ok,train,0,1,8,,,\nhuge,train,0,1,40,,,\n")
    with pytest.raises(TraceError, match=r"line 2: .*3 replicas x 16 GPUs = 6 nodes"):
        parse("s,inference,0,1,16,,,3\n")


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ("a,training,0,1,8,,,", "line 2: kind 'training' is not one of"),
        ("a,train,x,1,8,,,", "line 2: submit_h 'x' is not a number"),
        ("a,train,0,0,8,,,", "line 2: duration_h must be > 0"),
        ("a,train,-1,1,8,,,", "line 2: submit_h must be >= 0"),
        ("a,train,0,1,12,,,", "line 2: gpus 12 is not a multiple of the 8 GPUs per node"),
        ("a,train,0,1,,,,", "line 2: column 'gpus' is empty"),
        ("a,mig,0,1,,,7g.80gb,", "line 2: mig_profile '7g.80gb' is not offered"),
        ("a,train,0,1,8,1.5,,", "line 2: priority must be a whole number"),
        ("a,train,0,1,8,,,,extra", "line 2: more cells than columns"),
        (",train,0,1,8,,,", "line 2: empty id"),
    ],
)
def test_bad_rows_name_the_line(row: str, message: str) -> None:
    with pytest.raises(TraceError, match=message):
        parse(row + "\n")


def test_duplicate_id() -> None:
    with pytest.raises(TraceError, match="line 3: duplicate id 'a'"):
        parse("a,train,0,1,8,,,\na,train,0,1,8,,,\n")


def test_missing_file_is_a_trace_error(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match=r"nope\.csv: no such file"):
        read_trace(tmp_path / "nope.csv", 4, 8, PROFILES)


@pytest.mark.parametrize("path", ["/dev/zero", "/tmp"])
def test_a_device_or_directory_is_refused_before_reading(path: str) -> None:
    # /dev/zero never ends: reading it whole ended in MemoryError.
    with pytest.raises(TraceError, match=r"cannot read: (not a regular file|a directory)"):
        read_trace(Path(path), 4, 8, PROFILES)


def test_a_trace_above_the_job_limit_is_refused() -> None:
    rows = "".join(f"j{i},mig,0,1,,,1g.10gb,\n" for i in range(MAX_JOBS + 1))
    with pytest.raises(TraceError, match=f"more than {MAX_JOBS:,} jobs"):
        parse(rows)


def test_the_generator_refuses_more_jobs_than_the_limit() -> None:
    with pytest.raises(TraceError, match="jobs: 20,001 jobs"):
        generate(JobMix(jobs=MAX_JOBS + 1), 4, 8, seed=0)
    with pytest.raises(InputError, match="seed"):
        generate(JobMix(jobs=1), 4, 8, seed=-1)


def test_example_trace_parses() -> None:
    jobs = read_trace(EXAMPLE, 64, 8, ["1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb",
                                       "7g.80gb"])
    kinds = {j.kind for j in jobs}
    assert kinds == {"train", "finetune", "inference", "mig"}


def test_generator_is_seeded_and_respects_the_mix() -> None:
    mix = JobMix(jobs=2000, days=10, share=(0.1, 0.2, 0.0, 0.7))
    a = generate(mix, nodes=32, gpus_per_node=8, seed=4)
    b = generate(mix, nodes=32, gpus_per_node=8, seed=4)
    assert [(j.kind, j.submit_s, j.nodes, j.duration_s) for j in a] == \
           [(j.kind, j.submit_s, j.nodes, j.duration_s) for j in b]
    n = {k: sum(1 for j in a if j.kind == k) for k in ("train", "finetune", "inference", "mig")}
    assert n["inference"] == 0
    assert abs(n["mig"] / 2000 - 0.7) < 0.04  # binomial sd 0.01
    assert all(1 <= j.nodes <= 32 for j in a if j.kind in ("train", "finetune"))
    assert all(0 <= j.submit_s < 10 * 24 * HOUR for j in a)
    with pytest.raises(TraceError, match="share"):
        generate(JobMix(share=(0, 0, 0, 0)), 4, 8, 0)
