"""scripts/fit_moe_format_speedup.py: the narrow formats' speed-ups over BF16 it reads from
measured MoE kernels, point by point."""

from __future__ import annotations

import pytest

from tests import scripts


def test_each_narrow_format_is_timed_against_bf16_at_the_same_point() -> None:
    mod = scripts.load("fit_moe_format_speedup")
    a, b = (4096, 1024, 10, 512, 1, 8, 4096), (4096, 1024, 10, 512, 8, 1, 8192)
    rows = [(a, "bfloat16", 1.0), (a, "fp8_block", 1.25), (a, "nvfp4", 0.5),
            (b, "bfloat16", 2.0), (b, "fp8_block", 2.0),
            # no BF16 at this point: not a ratio; weight-only formats run in the BF16 lane
            ((1, 1, 1, 1, 1, 1, 2048), "fp8_block", 1.0), (a, "int4_wo", 0.9),
            (a, "w4a16_mxfp4", 0.9), (a, "exotic", 0.1)]
    got = mod.speedups(rows)
    assert set(got) == {"fp8_block", "nvfp4"}
    assert sorted(got["fp8_block"]) == pytest.approx([0.8, 1.0])
    assert got["nvfp4"] == pytest.approx([2.0])
    assert mod.narrow("w4a8_mxfp4_mxfp8") == "w4a8_mxfp4_mxfp8"
    assert mod.narrow("bfloat16") is None and mod.narrow("int4_wo") is None
