"""`clusterwright catalog list KIND` and `catalog show ID`."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner, Result

from clusterwright.catalog.registry import load_catalog
from clusterwright.cli import common
from clusterwright.cli.main import app
from tests.cli.helpers import user_error

# CLI kind -> catalog kinds it lists (`optics` is transceivers and cables).
KINDS = {
    "gpus": ("gpus",),
    "servers": ("servers",),
    "nics": ("nics",),
    "switches": ("switches",),
    "optics": ("transceivers", "cables"),
    "models": ("models",),
    "clouds": ("clouds",),
}

# One id of each kind, as shipped in catalog/data.
SAMPLE_IDS = {
    "gpus": "h100-sxm",
    "servers": "dgx-h100",
    "nics": "connectx-7-400g",
    "switches": "qm9700",
    "transceivers": "mma4z00-ns",
    "cables": "mcp4y10-n00x",
    "models": "llama-2-70b",
    "clouds": "aws-p5.48xlarge",
}

runner = CliRunner()


def cw(*args: str) -> Result:
    return runner.invoke(app, list(args), env={"CLUSTERWRIGHT_CATALOG": None})


@pytest.fixture
def wide(monkeypatch: pytest.MonkeyPatch) -> None:
    """Render tables wide so ids are not cut to fit 80 columns."""
    monkeypatch.setattr(common.console, "_width", 250)


@pytest.fixture(scope="module")
def packaged_ids() -> dict[str, set[str]]:
    cat = load_catalog(env={})
    return {kind: set(cat.entries[kind]) for kind in cat.entries}


@pytest.mark.parametrize("kind", list(KINDS))
def test_list_json_is_one_object_with_every_entry_and_its_source(
    kind: str, packaged_ids: dict[str, set[str]]
) -> None:
    r = cw("catalog", "list", kind, "--json")
    assert r.exit_code == 0, r.output
    assert r.stderr == ""
    data = json.loads(r.stdout)  # fails on anything but one JSON document
    assert isinstance(data, dict)
    assert data["kind"] == kind
    entries = data["entries"]
    assert entries
    for e in entries:
        assert isinstance(e["source"], str) and len(e["source"]) >= 8, e["id"]
        assert e["defined_in"].startswith("catalog/data/"), e["id"]
    expected = set().union(*(packaged_ids[k] for k in KINDS[kind]))
    ids = [e["id"] for e in entries]
    assert len(ids) == len(set(ids))
    assert set(ids) == expected


def test_list_optics_holds_transceivers_and_cables(packaged_ids: dict[str, set[str]]) -> None:
    ids = {e["id"] for e in json.loads(cw("catalog", "list", "optics", "--json").stdout)["entries"]}
    assert packaged_ids["transceivers"] and packaged_ids["transceivers"] <= ids
    assert packaged_ids["cables"] and packaged_ids["cables"] <= ids


@pytest.mark.parametrize("kind", list(KINDS))
def test_list_json_kind_of_each_entry_is_its_catalog_kind(kind: str) -> None:
    entries = json.loads(cw("catalog", "list", kind, "--json").stdout)["entries"]
    assert {e["catalog_kind"] for e in entries} <= set(KINDS[kind])
    if kind == "servers":  # the entry's own kind field survives
        assert {e["kind"] for e in entries} <= {"server", "rack"}


@pytest.mark.parametrize("kind", list(KINDS))
def test_list_human_renders_a_table_with_every_id(
    kind: str, packaged_ids: dict[str, set[str]], wide: None
) -> None:
    r = cw("catalog", "list", kind)
    assert r.exit_code == 0, r.output
    assert r.stderr == ""
    for k in KINDS[kind]:
        assert k in r.stdout  # table title
        for entry_id in packaged_ids[k]:
            assert entry_id in r.stdout
    assert "{" not in r.stdout  # a table, not JSON


def test_list_unknown_kind_suggests_the_plural() -> None:
    err = user_error(cw("catalog", "list", "gpu"))
    assert "did you mean 'gpus'" in err
    assert "KIND" in err


def test_list_unknown_kind_lists_the_valid_kinds() -> None:
    err = user_error(cw("catalog", "list", "toasters", "--json"))
    assert "toasters" in err
    for kind in KINDS:
        assert kind in err


@pytest.mark.parametrize("kind", list(SAMPLE_IDS))
def test_show_json_gives_every_field_and_where_it_came_from(kind: str) -> None:
    entry_id = SAMPLE_IDS[kind]
    r = cw("catalog", "show", entry_id, "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["id"] == entry_id
    assert len(d["source"]) >= 8
    assert d["name"]
    assert d["defined_in"].startswith(f"catalog/data/{kind}.yaml:")


@pytest.mark.parametrize("kind", list(SAMPLE_IDS))
def test_show_human_lists_fields_and_source(kind: str, wide: None) -> None:
    entry_id = SAMPLE_IDS[kind]
    r = cw("catalog", "show", entry_id)
    assert r.exit_code == 0, r.output
    assert entry_id in r.stdout
    assert "source" in r.stdout
    assert "name" in r.stdout


def test_show_gpu_has_datasheet_numbers() -> None:
    d = json.loads(cw("catalog", "show", "h100-sxm", "--json").stdout)
    # NVIDIA H100 SXM5 datasheet: 80 GB HBM3, 3.35 TB/s, 989.5 dense BF16 TFLOP/s.
    assert d["memory_gb"] == 80
    assert d["memory_bandwidth_gbps"] == pytest.approx(3350)
    assert d["peak_tflops"]["bf16"] == pytest.approx(989.5, rel=0.01)


def test_show_model_reports_derived_parameter_count() -> None:
    d = json.loads(cw("catalog", "show", "llama-2-70b", "--json").stdout)
    assert d["params"] == pytest.approx(69e9, rel=0.01)
    assert d["active_params"] == d["params"]
    moe = json.loads(cw("catalog", "show", "mixtral-8x7b", "--json").stdout)
    # Mixtral 8x7B: 46.7B total, 12.9B active (two of eight experts).
    assert moe["params"] == pytest.approx(46.7e9, rel=0.015)
    assert moe["active_params"] == pytest.approx(12.9e9, rel=0.015)


def test_unknown_id_suggests_close_ids() -> None:
    err = user_error(cw("catalog", "show", "h100"))
    assert "unknown catalog id 'h100'" in err
    assert "did you mean" in err
    assert "'h100-sxm'" in err


def test_unknown_id_with_json_still_errors_on_stderr() -> None:
    err = user_error(cw("catalog", "show", "llama-2-70", "--json"))
    assert "'llama-2-70b'" in err


def test_unknown_id_far_from_everything_has_no_suggestion() -> None:
    err = user_error(cw("catalog", "show", "zzzzqqqq"))
    assert "zzzzqqqq" in err
    assert "did you mean" not in err


def test_list_serving_engines_with_their_validated_regimes() -> None:
    r = runner.invoke(app, ["catalog", "list", "engines", "--json"],
                      env={"CLUSTERWRIGHT_CATALOG": None})
    assert r.exit_code == 0, r.output
    entries = json.loads(r.stdout)["entries"]
    assert {e["id"] for e in entries} >= {"trtllm", "vllm", "sglang"}
    assert all(e["validated"] and e["calibration"] and e["source"] for e in entries)


@pytest.mark.parametrize("kind", ["gpus", "servers", "switches", "optics", "models", "clouds",
                                  "nics"])
def test_list_shows_every_id_whole_at_80_columns(kind: str) -> None:
    from clusterwright.catalog.registry import load_catalog
    from clusterwright.cli.common import console
    from clusterwright.report.catalog_columns import KINDS

    old = console.width
    console.width = 80
    try:
        r = runner.invoke(app, ["catalog", "list", kind], env={"CLUSTERWRIGHT_CATALOG": None})
    finally:
        console.width = old
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    cells = {c.strip() for line in lines for c in line.split("│")}
    cat = load_catalog([])
    ids = [e.id for k in KINDS[kind] for e in cat.all(k)]
    assert [i for i in ids if i not in cells] == []  # each id whole in its own cell
