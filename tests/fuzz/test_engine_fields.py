"""Hostile values in a user catalog's serving-engine scheduling fields (``seq_overhead_s``,
``async_scheduling``, ``sync_versions``), platforms (``runs_on``), MoE kernel floors
(``moe_layer_floor_us``), the formats' measured MoE speed-ups (``moe_format_speedup``) and
MLA decode kernels (``mla_decode_kernel``): ``serve estimate
--catalog FILE`` must refuse what the schema does not take, naming the field, and run what it
takes (the largest host cost included) without a traceback or an impossible number; the
scheduling flags take no value."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from clusterwright.catalog.registry import load_catalog
from tests.fuzz.harness import invoke, problems

ESTIMATE = ["serve", "estimate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--engine",
            "vllm@0.11.1", "--concurrency", "64", "--input-len", "256", "--output-len", "64",
            "--steady-only", "--json"]
REFUSED: dict[str, list[object]] = {
    "seq_overhead_s": [-1e-6, ".inf", ".nan", "1e400", 0.5, "fast", [1e-5], {"a": 1}],
    "async_scheduling": ["maybe", 2, [True], {"a": 1}],
    "sync_versions": ["0.11", [0.11], [["0.11"]], {"a": 1}],
    "stream_interval": [0, -1, 10**9, "fast", ".inf", 2.5],
    "disagg_first_token": ["decode", 1, ["prefill"], {"a": 1}],
    "mixed_chunk": ["maybe", 2, [True], {"a": 1}],
    "runs_on": ["nvidia", ["nvidea"], [1], [["nvidia"]], {"a": 1}, [None]],
    "moe_layer_floor_us": [{"h100-sxm": -1.0}, {"h100-sxm": 1e4}, {"h100-sxm": "fast"},
                           [25.0], 25.0, {"h100-sxm": None}, {"no-such-gpu": 25.0}],
    "mla_decode_kernel": [{"h100-sxm": {"fp8": [0, 3.0]}}, {"h100-sxm": {"fp8": [-1, 3.0]}},
                          {"h100-sxm": {"fp8": [1e400, 3.0]}}, {"h100-sxm": {"fp8": [600, 1e9]}},
                          {"h100-sxm": {"fp8": [600]}}, {"h100-sxm": {"fp8": [600, 3, 1]}},
                          {"h100-sxm": {"fp4": [600, 3.0]}}, {"h100-sxm": {"fp8": "fast"}},
                          {"h100-sxm": [600, 3.0]}, {"no-such-gpu": {"fp8": [600, 3.0]}},
                          [600, 3.0], {"h100-sxm": {"fp8": [None, 3.0]}}],
    "moe_format_speedup": [{"h100-sxm": {"fp8": 0}}, {"h100-sxm": {"fp8": -1.0}},
                           {"h100-sxm": {"fp8": 9.0}}, {"h100-sxm": {"fp8": "fast"}},
                           {"h100-sxm": {"fp8": None}}, {"h100-sxm": {"bf16": 1.0}},
                           {"h100-sxm": {"fp3": 1.0}}, {"h100-sxm": [1.2]}, [1.2], 1.2,
                           {"no-such-gpu": {"fp8": 1.2}}, {"h100-sxm": {"fp8": ".nan"}}],
    # release ranges (">=A,<B") beside prefixes, and the releases the constants were fitted on
    "versions": [[], [">=0.10"], [">=0.10,<0.5"], [">=x,<1"], [">=1e400,<2"],
                 [">=0.10,<" + "9" * 5000 + "x"], "0.1", [0.1], {"a": 1}],
    "measured_releases": ["0.11", ["0.11"], [">=0.11,<0.10"], [">=-1,<1"], [1], {"a": 1}],
    "release": [1, [0.24], {"a": 1}],
}


def _catalog(tmp: Path, field: str, value: object) -> Path:
    entry = load_catalog().serving_engine("vllm").model_dump(mode="json")
    raw = isinstance(value, str) and value in (".inf", ".nan", "1e400")
    entry |= {"override": True, field: "RAW" if raw else value}
    text = yaml.safe_dump({"serving_engines": [entry]}, sort_keys=False)
    if raw:  # YAML scalars as a user writes them, not as a quoted string
        text = text.replace(f"{field}: RAW", f"{field}: {value}")
    f = tmp / "engine.yaml"
    f.write_text(text, encoding="utf-8")
    return f


def test_hostile_scheduling_fields_are_refused_by_name(tmp_path: Path) -> None:
    found = []
    for field, values in REFUSED.items():
        for bad in values:
            o = invoke(["--catalog", str(_catalog(tmp_path, field, bad)), *ESTIMATE])
            found += [f"{field}={bad!r}: {p}" for p in problems(o, must_refuse=True)]
            if o.exit_code == 2 and field not in o.stderr + o.stdout:
                found.append(f"{field}={bad!r}: the message does not name the field")
    assert not found, "\n".join(found)


def test_the_largest_host_cost_runs_cleanly(tmp_path: Path) -> None:
    o = invoke(["--catalog", str(_catalog(tmp_path, "seq_overhead_s", 0.01)), *ESTIMATE])
    assert o.exit_code == 0 and not problems(o), o.stderr[:500]


def test_the_scheduling_flags_take_no_value() -> None:
    for flag in ("--async-scheduling=yes", "--sync-scheduling=1", "--mixed-chunk=yes"):
        o = invoke([*ESTIMATE, flag])
        assert not problems(o, must_refuse=True), o.stderr[:300]


def _regime_catalog(tmp: Path, value: object) -> Path:
    """The vLLM entry with its H100 regime's ``ttft_median_error`` set to ``value``."""
    entry = load_catalog().serving_engine("vllm").model_dump(mode="json")
    for v in entry["validated"]:
        v["ttft_median_error"] = "RAW"
    text = yaml.safe_dump({"serving_engines": [entry | {"override": True}]}, sort_keys=False)
    f = tmp / "engine.yaml"
    f.write_text(text.replace("ttft_median_error: RAW", f"ttft_median_error: {value}"),
                 encoding="utf-8")
    return f


def test_hostile_median_errors_are_refused_and_a_missing_one_is_silent(tmp_path: Path) -> None:
    """A median error below -100 %, infinite, NaN or text is refused by name; ``null`` (a
    catalog written before the field) runs, and the output states no direction."""
    found = []
    for bad in ("-1.5", ".inf", ".nan", "1e400", "lean"):
        o = invoke(["--catalog", str(_regime_catalog(tmp_path, bad)), *ESTIMATE])
        found += [f"ttft_median_error={bad}: {p}" for p in problems(o, must_refuse=True)]
        if o.exit_code == 2 and "ttft_median_error" not in o.stderr + o.stdout:
            found.append(f"ttft_median_error={bad}: the message does not name the field")
    assert not found, "\n".join(found)
    text = [a for a in ESTIMATE if a != "--json"]
    o = invoke(["--catalog", str(_regime_catalog(tmp_path, "null")), *text])
    assert o.exit_code == 0 and not problems(o), o.stderr[:500]
    flat = " ".join(o.stdout.split())
    assert "TTFT MAPE" in flat and "the median row measured" not in flat.split("TPOT MAPE")[0]


def _layout_catalog(tmp: Path, tp: str, adp: str, modes: tuple[str, ...] = ("agg",)) -> Path:
    """The vLLM entry with ``tp`` and ``attention_dp`` written into its regimes of ``modes``."""
    entry = load_catalog().serving_engine("vllm").model_dump(mode="json")
    for v in entry["validated"]:
        if v["mode"] in modes:
            v["tp"], v["attention_dp"] = "TP", "ADP"
    text = yaml.safe_dump({"serving_engines": [entry | {"override": True}]}, sort_keys=False)
    f = tmp / "engine.yaml"
    f.write_text(text.replace("tp: TP", f"tp: {tp}").replace("attention_dp: ADP",
                                                             f"attention_dp: {adp}"),
                 encoding="utf-8")
    return f


def _refusals(catalog: Callable[[str, str], Path], cases: list[tuple[str, str, str]],
              label: str) -> list[str]:
    """What goes wrong when each case's catalog (``catalog(a, b)``) is run: it must be
    refused with exit 2 and a message that says the case's text."""
    found = []
    for a, b, says in cases:
        o = invoke(["--catalog", str(catalog(a, b)), *ESTIMATE])
        found += [f"{label.format(a, b)}: {p}" for p in problems(o, must_refuse=True)]
        if o.exit_code == 2 and says not in o.stderr + o.stdout:
            found.append(f"{label.format(a, b)}: the message does not say {says!r}")
    return found


def test_hostile_regime_layouts_are_refused_by_name(tmp_path: Path) -> None:
    """A regime's layout (TP x attention-DP) that is not a positive whole count, half of one,
    or one of disaggregated rows is refused naming the field; the largest legal one runs."""
    cases = [("0", "1", "tp"), ("-8", "1", "tp"), ("1.5", "1", "tp"), ("eight", "1", "tp"),
             ("1e400", "1", "tp"), ("8", "0", "attention_dp"), ("8", "null", "go together"),
             ("null", "4", "go together")]
    found = _refusals(lambda tp, adp: _layout_catalog(tmp_path, tp, adp), cases,
                      "tp={} attention_dp={}")
    o = invoke(["--catalog", str(_layout_catalog(tmp_path, "8", "1", ("disagg",))), *ESTIMATE])
    found += [f"a disaggregated layout: {p}" for p in problems(o, must_refuse=True)]
    assert not found, "\n".join(found)
    # Every aggregated regime moved to a layout no estimate runs: the pooled ones are gone,
    # so a TP 1 estimate is said to be unvalidated, and runs.
    text = [a for a in ESTIMATE if a != "--json"]
    o = invoke(["--catalog", str(_layout_catalog(tmp_path, "72", "64")), *text])
    assert o.exit_code == 0 and not problems(o), o.stderr[:500]
    # ... naming the layouts that were measured, not as a GPU without measured rows
    flat = " ".join(o.stdout.split())
    assert ("not validated: the measured vllm rows on h100-sxm (agg) are of other layouts "
            "only (tp 72 x attention-DP 64), none at tp 1 x attention-DP 1") in flat
    assert "no measured vllm rows on h100-sxm" not in flat


def _spread_catalog(tmp: Path, p10: str, p90: str) -> Path:
    """The vLLM entry with every regime's TTFT error percentiles written as given."""
    entry = load_catalog().serving_engine("vllm").model_dump(mode="json")
    for v in entry["validated"]:
        v["ttft_median_error"], v["ttft_error_p10"], v["ttft_error_p90"] = 0.0, "LO", "HI"
    text = yaml.safe_dump({"serving_engines": [entry | {"override": True}]}, sort_keys=False)
    f = tmp / "engine.yaml"
    f.write_text(text.replace("ttft_error_p10: LO", f"ttft_error_p10: {p10}").replace(
        "ttft_error_p90: HI", f"ttft_error_p90: {p90}"), encoding="utf-8")
    return f


def test_hostile_error_percentiles_are_refused_by_name(tmp_path: Path) -> None:
    """A regime's error percentiles at or below -100 %, infinite, text, one without the
    other, or out of order around the median are refused naming the field; null for both
    (a catalog written before them) runs and states no range."""
    cases = [("-1", "0.2", "ttft_error_p10"), ("-1.5", "0.2", "ttft_error_p10"),
             (".inf", "0.2", "ttft_error_p10"), ("-0.2", ".nan", "ttft_error_p90"),
             ("-0.2", "1e400", "ttft_error_p90"), ("low", "0.2", "ttft_error_p10"),
             ("-0.2", "null", "go together"), ("null", "0.2", "go together"),
             ("0.1", "0.2", "ttft_error_p10 <= ttft_median_error"),
             ("-0.2", "-0.1", "ttft_error_p10 <= ttft_median_error")]
    found = _refusals(lambda lo, hi: _spread_catalog(tmp_path, lo, hi), cases,
                      "p10={} p90={}")
    assert not found, "\n".join(found)
    text = [a for a in ESTIMATE if a != "--json"]
    o = invoke(["--catalog", str(_spread_catalog(tmp_path, "null", "null")), *text])
    assert o.exit_code == 0 and not problems(o), o.stderr[:500]
    flat = " ".join(o.stdout.split())
    assert "TTFT MAPE" in flat and "rows in 10" not in flat.split("TPOT MAPE")[0]
    o = invoke(["--catalog", str(_spread_catalog(tmp_path, "-0.5", "0.25")), *text])
    assert o.exit_code == 0 and not problems(o), o.stderr[:500]
    assert "8 rows in 10 measured 0.80-2.00x" in " ".join(o.stdout.split())


def test_hostile_engine_releases_are_refused_or_read() -> None:
    """``--engine name@version``: a release in the entry's range runs (a note says when no
    measured row has it); anything else exits 2 naming ``engine``, never a traceback."""
    base = ESTIMATE[:ESTIMATE.index("--engine")] + ESTIMATE[ESTIMATE.index("--engine") + 2:]
    found = []
    for spec, runs in [("vllm@0.24.0", True), ("vllm@v0.20.1", True),
                       ("vllm@0." + "9" * 4000, False), ("vllm@9" + "9" * 4000, False),
                       ("vllm@-1", False), ("vllm@>=0.10,<1", False), ("vllm@0.9.2", False),
                       ("vllm@\x00", False), ("vllm@1e400", False), ("sglang@0.4.6", False)]:
        o = invoke([*base, "--engine", spec])
        found += [f"{spec[:40]}: {p}" for p in problems(o, must_refuse=not runs)]
        if runs and o.exit_code != 0:
            found.append(f"{spec[:40]}: refused ({o.stderr[:200]})")
        if not runs and o.exit_code == 2 and "engine" not in o.stderr:
            found.append(f"{spec[:40]}: the message does not name engine")
    assert not found, "\n".join(found)


def _validate_rows(tmp: Path, rows: list[dict[str, str]], case: str, column: str,
                   refuse: bool) -> tuple[list[str], dict[str, Any] | None]:
    """Write ``rows`` as a measured set and run ``validate --table serving-silicon --json`` on
    it: the problems found (a case to refuse must exit 2 naming ``column`` and line 2; one to
    take must exit 0 or 1), and the first row's result where the command predicted."""
    import csv

    f = tmp / "rows.csv"
    with open(f, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    o = invoke(["validate", "--table", "serving-silicon", "--data", str(f), "--json"])
    found = [f"{case}: {p}" for p in problems(o, must_refuse=refuse)]
    if refuse:
        if o.exit_code == 2 and not (column in o.stderr and "line 2" in o.stderr):
            found.append(f"{case}: the message names no column and line")
        return found, None
    if o.exit_code not in (0, 1):
        return [*found, f"{case}: exit {o.exit_code} ({o.stderr[:200]})"], None
    first: dict[str, Any] = json.loads(o.stdout)["rows"][0]
    return found, first


def test_hostile_row_releases_are_refused_skipped_or_read(tmp_path: Path) -> None:
    """A measured set's ``backend_version``: a release newer than every family is read with
    the newest (a note says so), an older one is not covered (the rest of the file still
    predicts), a development build is read and said, and anything else exits 2 naming
    ``backend_version`` and the line; never a traceback."""
    import csv

    from clusterwright.validation import serving_silicon as ss

    src = ss.data_dir() / ss.FILE
    with open(src, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    row = next(r for r in rows if r["backend"] == "vllm" and r["backend_version"])
    found = []
    for version, outcome in [("1.2.0", "read"), ("0." + "9" * 4000, "refused"),
                             ("9" * 4000, "refused"), ("99.0", "read"), ("0.9.2", "skipped"),
                             ("nightly-\u202e", "read"), ("-1", "refused"),
                             ("1e400", "read"), (">=0.10,<1", "refused"), ("x", "refused"),
                             (" 0.24.0 ", "read")]:
        bad, first = _validate_rows(tmp_path, [{**row, "backend_version": version}, row],
                                    version[:30], "backend_version", outcome == "refused")
        found += bad
        if first is None:
            continue
        if (first["skipped"] is None) != (outcome == "read"):
            found.append(f"{version[:30]}: {outcome} expected, got {first['skipped']}")
    assert not found, "\n".join(found)


def test_hostile_client_counts_of_a_measured_row_are_refused_or_finite(
        tmp_path: Path) -> None:
    """A measured set's client counts: the source's ``silicon_concurrency`` and the batch
    columns. Past ``serve estimate --concurrency``'s bound (10^11 clients were simulated into
    a TTFT MAPE of 10^11 %), non-integers, negatives and non-finite values exit 2 naming the
    column and the line; anything accepted predicts a finite, bounded TTFT."""
    import csv
    import math
    import re

    from clusterwright.validation import serving_silicon as ss

    with open(ss.data_dir() / ss.FILE, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    agg = next(r for r in rows if r["mode"] == "agg" and r["batch_size"]
               and "silicon_concurrency=" in r["silicon_data_source"])
    found = []
    for col in ("silicon_data_source", "batch_size", "prefill_batch_size",
                "decode_batch_size"):
        for value, refuse in [("99999999999", True), ("100001", True), ("1e30", True),
                              ("18446744073709551617", True), ("-1", True), ("nan", True),
                              ("inf", True), ("1e400", True), ("ten", True), ("2.5", True),
                              ("100000", False), ("1", False)]:
            if col == "silicon_data_source":
                if not value.isdigit() or value == "1":
                    continue  # the source's pattern reads digits only; the rest is text
                cell = re.sub(r"silicon_concurrency=\d+", f"silicon_concurrency={value}",
                              agg[col])
            else:
                cell = value
            case = f"{col}={value[:24]}"
            bad, first = _validate_rows(tmp_path, [{**agg, col: cell}], case, col, refuse)
            found += bad
            if first is None:
                continue
            if first["skipped"] is None and not (
                    math.isfinite(first["pred_ttft_ms"]) and first["pred_ttft_ms"] < 1e9):
                found.append(f"{case}: TTFT {first['pred_ttft_ms']}")
    assert not found, "\n".join(found)
