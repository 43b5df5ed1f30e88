"""The headline page's lines (report/sections.py): an estimate beyond what was measured says
so beside its number."""

from __future__ import annotations

from clusterwright.report.sections import _serving_line, _training_line

BASE = {"name": "pretrain", "time_to_train_days": 30.0, "deadline_days": 45, "mfu": 0.45,
        "mfu_highest_published": 0.49, "mfu_above_published": False,
        "confidence": {"validated": True, "band": 0.05, "rows": 12}}


def test_a_measured_regime_within_the_record_carries_no_warning() -> None:
    line = _training_line(BASE)
    assert line["warn"] == "" and line["range"] == "28.5–31.5 days"
    assert "in this regime" in line["why"]


def test_an_estimate_above_every_published_mfu_is_flagged_on_the_headline() -> None:
    line = _training_line({**BASE, "mfu": 0.626, "mfu_above_published": True})
    assert "MFU 62.6 % is above every published run" in line["warn"]
    assert "highest 49.0 %" in line["warn"]


def test_a_layout_family_never_validated_on_the_stack_is_flagged() -> None:
    line = _training_line({**BASE, "confidence": {"validated": False, "band": 0.06, "rows": 4}})
    assert line["warn"] == "layout family not validated on this stack"
    assert "of the nearest regime" in line["why"]


def test_multisite_section_lists_sites_split_and_wan_needed_per_target() -> None:
    from clusterwright.report.sections import multisite
    from tests.report.blueprints import full
    from tests.report.blueprints import multisite as two_sites

    assert multisite(full()) is None  # one site: no section
    ms = multisite(two_sites())
    assert ms is not None and ms["chosen"] == "DiLoCo"
    assert [s[0] for s in ms["sites"]] == ["east", "west"]
    assert ms["sites"][0][1:3] == ["15 MW", "400 Gb/s"]
    (w,) = ms["workloads"]
    facts = dict(w["facts"])
    assert facts["split"] == "2 sites x 8,192 h100-sxm = 16,384 GPUs"
    assert facts["method chosen"] == "DiLoCo: 97.7 % compute utilization"
    rows = {r[0]: r for r in w["methods"]}
    assert set(rows) == {"synchronous DP", "DiLoCo (chosen)", "Streaming DiLoCo"}
    assert rows["DiLoCo (chosen)"][3:7] == ["97.7 %", "81.7 Gb/s", "174 Gb/s", "954 Gb/s"]
    # a target latency alone rules out reads as such, not as a number
    assert rows["Streaming DiLoCo"][6] == "unreachable"


def test_a_gpu_its_stack_never_ran_on_is_flagged_as_such() -> None:
    conf = {"validated": False, "band": 0.14, "rows": 4,
            "notes": ["unvalidated on mi300x: no published run on it; the band is stack "
                      "x's on mi325x"]}
    line = _training_line({**BASE, "confidence": conf})
    assert line["warn"] == "no published run on this GPU"


def test_a_serving_line_on_shared_prefixes_says_its_reuse_is_simulated() -> None:
    row = {"name": "chat", "replicas": 2, "qps_per_replica": 14.2, "peak_qps": 20.0, "tp": 1,
           "slo": {"ttft_p99_s": 2.0, "tpot_p99_s": 0.05},
           "shared_prefix": {"tokens": 7000, "groups": 20, "hit_rate": 0.8}}
    why = _serving_line(row)["why"]
    assert "7,000-token prefixes (20 groups)" in why and "80" in why
    assert "not validated" in why
    assert "prefix" not in _serving_line({**row, "shared_prefix": None})["why"]


def test_an_engine_sized_serving_line_states_its_measured_rows_and_their_spread() -> None:
    """An engine-sized workload's line says how the engine's model did on the rows of its
    GPU, mode and layout: MAPE, the range 8 rows in 10 measured in, and whether the p99s
    hold at the ratios one row in ten exceeds; or that nothing was measured there."""
    conf = {"engine": "vllm", "stack": None, "validation_table": "serving-silicon",
            "validated": True, "gpu": "h100-sxm", "mode": "agg", "rows": 138,
            "ttft_mape": 0.238, "ttft_error_p10": -0.5, "ttft_error_p90": 0.25}
    row = {"name": "chat", "replicas": 2, "qps_per_replica": 14.2, "peak_qps": 20.0,
           "engine": "vllm", "deployment": "agg tp 1", "confidence": conf,
           "measured_lean": {"p90": {"meets_slo": False}}}
    why = _serving_line(row)["why"]
    assert "its 138 measured rows on h100-sxm (agg): TTFT MAPE 24 %" in why
    assert "8 in 10 measured 0.80–2.00× the model" in why
    assert "the p99s miss the SLOs at the ratios one row in ten exceeds" in why
    assert "margin" not in why
    held = {**row, "margin": {"kind": "p90", "ttft_ratio": 2.0, "tpot_ratio": 1.27}}
    assert ("sized with the measured rows' p90 margin (p99s x TTFT 2, TPOT 1.27)"
            in _serving_line(held)["why"])
    none = {**row, "margin": {"kind": "none", "ttft_ratio": 1.0, "tpot_ratio": 1.0}}
    assert "margin" not in _serving_line(none)["why"]
    bare = {k: v for k, v in conf.items() if not k.startswith("ttft_error")}
    why = _serving_line({**row, "confidence": bare, "measured_lean": None})["why"]
    assert "TTFT MAPE 24 %" in why and "8 in 10" not in why and "p99s" not in why
    none = {"engine": "vllm", "stack": None, "validated": False,
            "note": "no measured vllm rows on mi300x (agg)"}
    why = _serving_line({**row, "confidence": none, "measured_lean": None})["why"]
    assert "not validated: no measured vllm rows on mi300x (agg)" in why
    # A regime of the held-out file says its rows were not fitted on
    out = {**conf, "gpu": "h200-sxm", "held_out": True}
    why = _serving_line({**row, "confidence": out})["why"]
    assert "its 138 measured rows on h200-sxm (agg, held out: no constant fitted on them)" in why
