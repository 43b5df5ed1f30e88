"""Hostile input on the AWS Neuron engine's paths: the flags of ``serve estimate --engine
neuron`` on Trainium (static buckets, compiled batch, padded heads), and the ``buckets``
column of ``validation/serving_accelerators.csv``. Each case ends in exit 0 or 2 (a clear
InputError for the table) with no traceback; an accepted one prints finite numbers."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from clusterwright.errors import InputError
from clusterwright.validation.serving_accelerators_table import serving_accelerators_table
from tests.fuzz.harness import invoke, problems
from tests.fuzz.values import NUMBER_VALUES
from tests.validation import csvrows

BASE = ["serve", "estimate", "--model", "llama-3.1-70b", "--gpu", "trn2", "--engine",
        "neuron@nxdi-2.21", "--tp", "16", "--max-num-seqs", "1", "--concurrency", "1",
        "--input-len", "10000", "--output-len", "1500", "--steady-only", "--json"]
# Counts: a fraction of an integer is refused as well as the listed nonsense.
INT_ONLY = {"1e30", "1e-300"}


def test_the_base_runs() -> None:
    o = invoke(BASE)
    assert o.exit_code == 0 and not problems(o), o.describe()


@pytest.mark.parametrize("flag", ["--tp", "--max-num-seqs", "--concurrency", "--input-len",
                                  "--output-len"])
def test_hostile_counts(flag: str) -> None:
    found = []
    for value, refuse in NUMBER_VALUES:
        args = list(BASE)
        args[args.index(flag) + 1] = value
        o = invoke(args)
        found += [f"{flag} {value!r}: {p}\n  {o.describe()}"
                  for p in problems(o, must_refuse=refuse or value in INT_ONLY)]
    assert not found, "\n\n".join(found)


T2 = "neuron_nxdi221_llama33_70b_trn2_tp16_10000_1501_bs1_ttft"


@pytest.mark.parametrize("value", [
    "prefill 1e400; decode 128", "prefill 99999999999999999999; decode 128",
    "prefill 0; decode 128", "prefill -5; decode 128", "prefill inf; decode nan",
    "prefill ٣; decode ٣", "prefill ²; decode 128", "prefill 128/64; decode 128",
    "prefill " + "128/" * 20_000 + "128; decode 1", "prefill 128; decode " + "9" * 5000,
    "prefill 128", "decode 128; prefill 128", "\x00", "x" * 100_000,
])
def test_hostile_buckets_name_the_column(tmp_path: Path, value: str) -> None:
    _, rows = csvrows.shipped("serving_accelerators.csv")
    path = csvrows.write(tmp_path / "s.csv", "serving_accelerators.csv",
                         csvrows.like(rows[T2], buckets=value))
    with pytest.raises(InputError) as exc:
        serving_accelerators_table(path=path)
    msg = str(exc.value)
    assert "line 2" in msg and "buckets:" in msg and len(msg) < 400, msg


def test_a_huge_but_valid_bucket_is_predicted_finite(tmp_path: Path) -> None:
    _, rows = csvrows.shipped("serving_accelerators.csv")
    path = csvrows.write(tmp_path / "s.csv", "serving_accelerators.csv",
                         csvrows.like(rows[T2], buckets="prefill 10000000; decode 10000000"))
    (r,) = serving_accelerators_table(path=path).rows
    assert math.isfinite(r.predicted) and r.predicted > 0
