"""scripts/fit_sparse_attention_floor.py: the differences it pairs from the measured plain and
sparse attention modules, and the tables it pairs."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import scripts


def test_the_floor_pairs_same_shapes_at_small_batches_and_contexts() -> None:
    mod = scripts.load("fit_sparse_attention_floor")
    plain = [(16, 4, 1024, 0.050), (16, 4, 1024, 0.047), (16, 64, 1024, 0.060),
             (16, 4, 8192, 0.070), (8, 4, 1024, 0.040)]
    sparse = [(16, 4, 1024, 0.080), (16, 64, 1024, 0.100), (16, 4, 8192, 0.150),
              (16, 4, 2048, 0.090), (16, 4, 256, 0.070)]
    # Only (16, 4, 1024) has both, within the batch and context bounds; the fastest plain
    got = mod.differences(plain, sparse, max_batch=16, max_context=2048)
    assert got == [pytest.approx(33e-6)]
    assert len(mod.differences(plain, sparse, max_batch=64, max_context=8192)) == 3


def test_the_tables_come_from_one_version_where_both_exist(tmp_path: Path) -> None:
    mod = scripts.load("fit_sparse_attention_floor")
    plain, sparse = "mla_generation_module_perf", mod.SPARSE
    for rel in (f"mla/trtllm/1.3.0rc20/{plain}", f"mla/trtllm/1.3.0rc23/{plain}",
                f"sparse_attention/trtllm/1.3.0rc20/{sparse}",
                f"sparse_attention/sglang/0.5.14/{sparse}",
                f"mla/sglang/0.5.10/{plain}"):
        f = tmp_path / f"{rel}.parquet"
        f.parent.mkdir(parents=True, exist_ok=True)
        f.touch()
    p, s = mod._tables(tmp_path, "trtllm", plain)
    assert (p.parent.name, s.parent.name) == ("1.3.0rc20", "1.3.0rc20")
    p, s = mod._tables(tmp_path, "sglang", plain)  # no common version: each one's newest
    assert (p.parent.name, s.parent.name) == ("0.5.10", "0.5.14")
    assert mod._tables(tmp_path, "vllm", plain) == (None, None)
