"""scripts/ttft_osl_slope.py: the reading docs/serving.md quotes ("Read from the rows, not
modelled", fifth session) holds on the shipped file."""

from __future__ import annotations

import statistics
from pathlib import Path

from tests import scripts

DATA = Path(__file__).resolve().parents[1] / "validation" / "serving_silicon.csv"
H100_TRT = "h100_sxm/trtllm/1.0.0rc3/"


def test_only_the_llama_file_waits_for_a_completion() -> None:
    ratios = scripts.load("ttft_osl_slope").slope_ratios(DATA)
    llama = ratios[(H100_TRT + "meta-llama_Llama-3.1-8B-Instruct.csv", 8)]
    assert len(llama) == 12
    assert 0.85 <= statistics.median(llama) <= 1.0
    assert min(llama) >= 0.75
    # Fewer prompts wait as the clients grow
    assert statistics.median(ratios[(H100_TRT + "meta-llama_Llama-3.1-8B-Instruct.csv", 32)]) < 0.6
    for other in ("Qwen_Qwen3-32B.csv", "Qwen_Qwen3-235B-A22B-FP8.csv"):
        assert abs(statistics.median(ratios[(H100_TRT + other, 8)])) < 0.06
