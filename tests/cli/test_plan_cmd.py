"""`clusterwright plan SCENARIO.yaml --out DIR`: JSON metrics and paths, a terminal summary,
exit 2 naming the field and line for a bad scenario, refusal of a non-empty --out."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from clusterwright.cli.main import app
from clusterwright.ownership import temp_prefix
from tests.cli.helpers import json_ok, user_error

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "training-1k-h100" / "scenario.yaml"

GOOD = """\
name: "small"
workloads:
  - kind: "training"
    name: "tr"
    model: "llama-3.1-8b"
    tokens: 1.0e11
    gpus: 32
constraints:
  gpus: ["h100-sxm"]
  budget_usd: 1.0e6
"""


def cw(*args: str) -> Result:
    return runner.invoke(app, list(args), env={"CLUSTERWRIGHT_CATALOG": None})


def scenario(tmp_path: Path, text: str = GOOD) -> str:
    p = tmp_path / "s.yaml"
    p.write_text(text)
    return str(p)


def test_json_prints_metrics_paths_and_binding_constraints(tmp_path: Path) -> None:
    out = tmp_path / "out"
    d = json_ok(cw("plan", scenario(tmp_path), "--out", str(out), "--json"))
    # The $1M budget is below the capex of 4 DGX H100: not feasible, and it says why.
    assert d["feasible"] is False and d["binding_constraint"] == "budget_usd"
    assert d["binding_constraints"][0]["excess_fraction"] > 0
    assert (d["gpu"], d["nodes"], d["gpus"]) == ("h100-sxm", 4, 32)
    assert d["out"] == str(out) and d["files"] > 3
    assert d["artifacts"]["blueprint"] == str(out / "blueprint.json")
    bp = json.loads((out / "blueprint.json").read_text())
    assert bp["schema_version"] == "1.3" and bp["scenario"]["source"].endswith("s.yaml")


def test_terminal_summary_names_the_recommendation_and_binding(tmp_path: Path) -> None:
    r = cw("plan", scenario(tmp_path), "--out", str(tmp_path / "out"))
    assert r.exit_code == 0, r.output
    assert "not feasible" in r.stdout and "4 x dgx-h100" in r.stdout
    assert "binding constraints" in r.stdout and "budget_usd $1.0M" in r.stdout
    assert "Wrote" in r.stdout
    # Each decision says why: the size came from the scenario, the layout from the search.
    text = " ".join(r.stdout.split())
    assert "cluster_size (tr): 32 h100-sxm: given by workloads[0].gpus" in text
    assert "parallelism (tr):" in text and "the fastest step" in text


def test_refuses_a_non_empty_out_before_any_work(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "x").write_text("keep")
    err = user_error(cw("plan", scenario(tmp_path), "--out", str(out), "--json"))
    assert "--out" in err and "--force" in err
    assert (out / "x").read_text() == "keep"
    json_ok(cw("plan", scenario(tmp_path), "--out", str(out), "--force", "--json"))
    assert not (out / "x").exists()


def test_bad_field_exits_2_naming_field_and_line(tmp_path: Path) -> None:
    bad = GOOD.replace("tokens: 1.0e11", 'tokens: "lots"')  # line 6
    err = user_error(cw("plan", scenario(tmp_path, bad), "--out", str(tmp_path / "o")))
    assert "tokens" in err and re.search(r"\bline 6\b", err), err
    assert not (tmp_path / "o").exists()


def test_yaml_syntax_error_exits_2_with_the_line(tmp_path: Path) -> None:
    bad = GOOD.replace('  gpus: ["h100-sxm"]', '  gpus: ["h100-sxm"')  # line 9
    err = user_error(cw("plan", scenario(tmp_path, bad), "--out", str(tmp_path / "o")))
    assert re.search(r"(\bline (9|10)\b|\.yaml:(9|10)\b)", err), err


def test_unknown_gpu_exits_2_naming_it(tmp_path: Path) -> None:
    bad = GOOD.replace('"h100-sxm"', '"h100-sx"')
    err = user_error(cw("plan", scenario(tmp_path, bad), "--out", str(tmp_path / "o")))
    assert "constraints.gpus[0]" in err and "line 9" in err and "h100-sx" in err


def test_missing_file_exits_2(tmp_path: Path) -> None:
    err = user_error(cw("plan", str(tmp_path / "nope.yaml"), "--out", str(tmp_path / "o")))
    assert "nope.yaml" in err


def _with(extra: str) -> str:
    # Appended to the workload (after line 7, "gpus: 32").
    return GOOD.replace("    gpus: 32\n", "    gpus: 32\n" + extra)


def test_option_the_stack_lacks_exits_2_naming_the_field_and_line(tmp_path: Path) -> None:
    bad = _with('    options: {schedule: "dualpipe"}\n')  # line 8
    err = user_error(cw("plan", scenario(tmp_path, bad), "--out", str(tmp_path / "o")))
    assert "workloads[0].options.schedule" in err and "line 8" in err, err
    assert "not supported by stack" in err
    assert not (tmp_path / "o").exists()


def test_unknown_stack_exits_2_naming_the_line(tmp_path: Path) -> None:
    bad = _with('    stack: "megatron-core-h100-2026"\n')  # line 8
    err = user_error(cw("plan", scenario(tmp_path, bad), "--out", str(tmp_path / "o")))
    assert "workloads[0].stack" in err and "line 8" in err and "did you mean" in err, err


def test_fixed_layout_that_does_not_divide_the_gpus_exits_2(tmp_path: Path) -> None:
    bad = _with("    layout: {tp: 8, pp: 3}\n")  # line 8
    err = user_error(cw("plan", scenario(tmp_path, bad), "--out", str(tmp_path / "o")))
    assert "workloads[0].layout" in err and "line 8" in err and "tp*pp*cp = 24" in err, err


def test_fixed_layout_is_planned_as_given(tmp_path: Path) -> None:
    ok = _with("    layout: {tp: 4, pp: 2, zero: 1}\n")
    out = tmp_path / "o"
    json_ok(cw("plan", scenario(tmp_path, ok), "--out", str(out), "--json"))
    w = json.loads((out / "blueprint.json").read_text())["workloads"][0]
    assert w["layout_source"] == "fixed"
    assert (w["layout"]["tp"], w["layout"]["pp"], w["layout"]["dp"], w["layout"]["zero"]) == (
        4, 2, 4, 1)
    assert w["confidence"]["band"] > 0 and w["production"]["ettr"] < 1


def _temps(parent: Path, name: str) -> list[str]:
    return sorted(p.name for p in parent.iterdir() if p.name.startswith(f".{name}."))


def test_out_removes_temp_dirs_of_dead_writers_and_keeps_live_ones(tmp_path: Path) -> None:
    # A writer that has ended (as if killed inside the atomic write) left a temp sibling.
    code = ("import sys, tempfile; from clusterwright.ownership import temp_prefix; "
            "tempfile.mkdtemp(prefix=temp_prefix('out'), dir=sys.argv[1])")
    subprocess.run([sys.executable, "-c", code, str(tmp_path)], check=True)
    dead = _temps(tmp_path, "out")
    assert len(dead) == 1 and f"-{os.getpid()}-" not in dead[0]
    # One of a writer still running (this process), one of another host, and the user's own.
    live = Path(tempfile.mkdtemp(prefix=temp_prefix("out"), dir=tmp_path)).name
    tag = live[len(".out.tmp-"):][:8]  # this host's
    other = "0" * 8 if tag != "0" * 8 else "1" * 8
    other_host = dead[0].replace(f".tmp-{tag}-", f".tmp-{other}-")  # its pid is not ours to judge
    assert other_host != dead[0]
    (tmp_path / other_host).mkdir()
    (tmp_path / ".out.notes").mkdir()
    json_ok(cw("plan", scenario(tmp_path), "--out", str(tmp_path / "out"), "--json"))
    assert (tmp_path / "out" / "blueprint.json").is_file()
    assert _temps(tmp_path, "out") == sorted([live, other_host, ".out.notes"])


# Runs `clusterwright plan` with a report writer that stalls after its first bytes, so the
# kill lands while the temporary directory is half written, every time.
STALLED_PLAN = """\
import sys, time
import clusterwright.export.blueprint as blueprint

def stalled(data, path):
    path.write_text("<html>half")
    print("stalled", flush=True)
    time.sleep(3600)

blueprint._report_renderer = lambda: stalled
from clusterwright.cli.main import app
app(sys.argv[1:], prog_name="clusterwright")
"""


@pytest.mark.slow
def test_a_killed_plan_leaves_no_hidden_temp_dir_after_the_next_plan(tmp_path: Path) -> None:
    out = tmp_path / "D"
    env = {k: v for k, v in os.environ.items() if k != "CLUSTERWRIGHT_CATALOG"}
    child = subprocess.Popen(
        [sys.executable, "-c", STALLED_PLAN, "plan", str(EXAMPLE), "--out", str(out), "--json"],
        stdout=subprocess.PIPE, env=env, cwd=ROOT)
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == b"stalled", "the plan ended before writing"
        [half] = _temps(tmp_path, "D")
        assert (tmp_path / half / "blueprint.json").is_file()
        # A second plan while the first still runs must leave the first one's directory.
        json_ok(cw("plan", str(EXAMPLE), "--out", str(out), "--json"))
        assert _temps(tmp_path, "D") == [half]
        child.send_signal(signal.SIGKILL)
        child.wait()
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        if child.stdout is not None:
            child.stdout.close()
    assert _temps(tmp_path, "D") == [half]  # kill -9: nothing could clean up
    json_ok(cw("plan", str(EXAMPLE), "--out", str(out), "--force", "--json"))
    assert _temps(tmp_path, "D") == []
    assert (out / "blueprint.json").is_file() and (out / "report.html").is_file()


@pytest.mark.parametrize("formats", ["html,docx", "", "html,,pdf"])
def test_an_unknown_format_exits_2_naming_formats_before_any_work(tmp_path: Path,
                                                                   formats: str) -> None:
    out = tmp_path / "out"
    msg = user_error(cw("plan", scenario(tmp_path), "--out", str(out), "--formats", formats))
    assert "error: --formats: unknown report format" in msg and "html, xlsx, pdf" in msg
    assert not out.exists()


def test_pdf_without_a_browser_exits_2_naming_formats(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from clusterwright.report import pdf

    monkeypatch.setattr(pdf, "chromium", lambda: None)
    out = tmp_path / "out"
    msg = user_error(cw("plan", scenario(tmp_path), "--out", str(out), "--formats", "html,pdf"))
    assert "error: --formats: pdf needs a Chromium" in msg and not out.exists()


def test_xlsx_format_writes_the_workbook_beside_the_report(tmp_path: Path) -> None:
    out = tmp_path / "out"
    d = json_ok(cw("plan", scenario(tmp_path), "--out", str(out), "--json", "--formats",
                   "xlsx"))
    assert d["artifacts"]["report_xlsx"] == str(out / "report.xlsx")
    assert (out / "report.xlsx").is_file() and not (out / "report.html").exists()


TRN1 = """\
name: "trn1"
workloads:
  - kind: "training"
    name: "tr"
    model: "llama-2-7b"
    tokens: 2.0e10
    seq_len: 4096
    gpus: 64
constraints:
  gpus: ["trn1"]
  deployment: "cloud"
fabric:
  protocol: "ethernet"
"""


def test_a_trn1_cluster_is_wired_and_rented(tmp_path: Path) -> None:
    """trn1.32xlarge's 100 Gb/s EFA ports get a 100G RoCE leaf (SN4600C), the chips a cloud
    rate (no purchase price exists), and the step carries the Trn1 runs' band."""
    out = tmp_path / "o"
    d = json_ok(cw("plan", scenario(tmp_path, TRN1), "--out", str(out), "--json"))
    assert d["feasible"] is True and (d["gpu"], d["nodes"]) == ("trn1", 4), d
    bp = json.loads((out / "blueprint.json").read_text())
    assert "sn4600c" in json.dumps(bp["fabric"])
    assert "aws-trn1.32xlarge" in json.dumps(bp["recommendation"])
    assert bp["workloads"][0]["confidence"]["band"] > 0


def test_a_workload_the_sites_cannot_split_is_said_not_only_written(tmp_path: Path) -> None:
    """The multi-site split of a training workload that no layout fits (here on Trainium2)
    is printed with the plan, not only kept in blueprint.json's multisite section."""
    src = (Path(__file__).parents[2] / "examples" / "multisite-two-sites.yaml").read_text()
    assert 'gpus: ["h100-sxm"]' in src
    scenario = tmp_path / "trn2.yaml"
    scenario.write_text(src.replace('gpus: ["h100-sxm"]', 'gpus: ["trn2"]'))
    r = cw("plan", str(scenario), "--out", str(tmp_path / "bp"))
    assert r.exit_code == 0, r.output
    text = " ".join(r.output.split())
    assert "multi-site: pretrain-70b not split over the sites: gpus: no layout" in text
    bp = json.loads((tmp_path / "bp" / "blueprint.json").read_text())
    assert "no layout" in bp["multisite"]["workloads"][0]["error"]


def test_unpriced_parts_are_named_in_the_terminal(tmp_path: Path) -> None:
    """A user's switch without a price counted as $0 in capex and the comparison, said only
    inside blueprint.json; the terminal names it, and says the costs are lower bounds."""
    import yaml

    shown = json.loads(cw("catalog", "show", "sn2201", "--json").stdout)
    entry = {k: v for k, v in shown.items() if k not in ("catalog_kind", "defined_in")}
    entry.pop("price_usd", None)
    entry.pop("price_source", None)
    entry["override"] = True
    mine = tmp_path / "mine.yaml"
    mine.write_text(yaml.safe_dump({"switches": [entry]}))
    r = cw("--catalog", str(mine), "plan",
           str(ROOT / "examples" / "training-1k-h100" / "scenario.yaml"),
           "--out", str(tmp_path / "out"))
    assert r.exit_code == 0, r.output
    text = " ".join(r.stdout.split())
    assert "unpriced parts (no catalog price, counted at $0" in text and "sn2201" in text


def test_a_job_split_across_sites_writes_each_sites_iac(tmp_path: Path) -> None:
    s = tmp_path / "sites.yaml"
    s.write_text(
        "name: two-small-sites\n"
        "workloads:\n"
        "  - {name: pretrain-8b, kind: training, model: llama-3.1-8b, tokens: 2.0e10,"
        " gpus: 128}\n"
        "constraints: {gpus: [h100-sxm], deployment: on-prem}\n"
        "sites:\n"
        "  - {name: east, power_mw: 0.12, wan_gbps: 100, latency_ms: 10}\n"
        "  - {name: west, power_mw: 0.12, wan_gbps: 100, latency_ms: 10}\n"
        "multisite: {method: diloco}\n")
    out = tmp_path / "out"
    json_ok(cw("plan", str(s), "--out", str(out), "--json"))
    bp = json.loads((out / "blueprint.json").read_text())
    assert bp["artifacts"]["sites"] == {"east": "sites/east/", "west": "sites/west/"}
    for site in ("east", "west"):
        cabling = (out / "sites" / site / "cabling.csv").read_text().splitlines()
        hosts = {line.split(",")[4] for line in cabling[1:] if line.split(",")[4].startswith(
            "gpu")}
        assert len(hosts) == 8  # the site's share of the 16 servers
        assert (out / "sites" / site / "bom.csv").read_text().startswith("category,")
    # The one-cluster IaC is still written beside them.
    assert (out / "cabling.csv").exists() and (out / "configs" / "bom.csv").exists()
    # The terminal summary names each site's build.
    r = cw("plan", str(s), "--out", str(tmp_path / "out2"))
    assert r.exit_code == 0, r.output
    text = " ".join(r.stdout.split())
    assert "site east: 8 x dgx-h100" in text and "IaC in sites/east/" in text
    assert "capex with each site built on its own" in text
