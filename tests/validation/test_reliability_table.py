"""The reliability validation table: the Llama 3 counts reproduced from the catalog's rates
(a consistency check), Meta's >90 % effective training time, and held-out clusters reported."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from clusterwright.catalog.registry import Catalog
from clusterwright.cli.main import app
from clusterwright.errors import InputError
from clusterwright.validation.reliability_table import LLAMA3_FABRIC_LINKS, reliability_table
from clusterwright.validation.rows import TableResult, data_dir
from clusterwright.validation.tables import TABLES
from tests.conftest import SHARED_DATA
from tests.validation import csvrows


@pytest.fixture(scope="module")
def table() -> TableResult:
    return reliability_table()


def _rows() -> list[dict[str, str]]:
    with open(data_dir() / "reliability.csv", newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def test_llama3_counts_are_reproduced(table: TableResult) -> None:
    counts = [r for r in table.dev_rows if r.quantity.startswith("interruptions")]
    assert len(counts) == 18 + 6 + 2  # components, categories, two totals
    assert max(abs(r.error) for r in counts) < 1e-5
    total = next(r for r in table.rows if r.id == "llama3_unexpected_total")
    assert total.predicted == pytest.approx(419, rel=1e-5)


def test_effective_training_time_is_above_90_percent(table: TableResult) -> None:
    row = next(r for r in table.rows if r.quantity == "ettr_lower_bound")
    # Daly's model, M = 3.09 h, 2.84 s writes, 628 s restarts (600 s with its NCCL-init part
    # at 16,384 ranks, plus the restore), planned stops: 0.918.
    assert row.predicted > row.measured == 0.90
    assert row.predicted == pytest.approx(0.918, abs=0.002)


def test_table_is_registered_and_within_tolerance(table: TableResult) -> None:
    assert "reliability" in TABLES
    assert table.mape <= table.tolerance
    assert table.max_abs_error < 0.05


def test_held_out_rows_are_reported_not_tuned(table: TableResult) -> None:
    held = {r.id: r for r in table.held_out_rows}
    assert len(held) == 6
    # The A100 rows are predicted with the A100 fleet (Aegis), B200 with Llama 3's H100 fleet;
    # the rule that chose each fleet excludes these rows' sources (reliability.yaml).
    assert "Aegis" in held["kokolis_rsc_mttf_1024gpus"].detail
    assert "H100-derived" in held["skt_upstage_b200_gpu_failures"].detail
    # Measured on 2026-11-28 (docs/operations.md): B200 -2.3 %, RSC 8 GPUs +6 %, 1,024 GPUs
    # +17 %, 16,384 GPUs -67 % (a projection from the paper's node rate), OPT -6 %, BLOOM
    # +104 % (one new cluster's GPU failures, 4.7x fewer than the fleet's): 34 % MAPE, down
    # from 136 % with H100 rates for every GPU. Reported, not tuned: the bounds are loose.
    assert abs(held["skt_upstage_b200_gpu_failures"].error) < 0.15
    assert abs(held["kokolis_rsc_mttf_1024gpus"].error) < 0.5
    assert held["kokolis_rsc_mttf_16384gpus"].error < -0.5
    assert held["bloom176b_gpu_failures_per_week"].error > 0.5
    assert table.held_out_mape is not None and table.held_out_mape < 0.5


def test_csv_copies_the_shared_interruption_counts() -> None:
    path = SHARED_DATA / "interruptions.csv"
    if not path.is_file():
        pytest.skip("shared/data is not next to this checkout (a clean clone)")
    ours = {r["id"]: r for r in _rows()}
    with open(path, newline="", encoding="utf-8") as fh:
        shared = list(csv.DictReader(fh))
    assert len(shared) == 18
    for s in shared:
        assert ours[s["id"]]["value"] == s["count"]
        assert ours[s["id"]]["source"] == s["source"]


def test_every_row_cites_its_source() -> None:
    rows = _rows()
    assert all(len(r["source"]) > 20 and r["verify"] in ("V", "S", "D") for r in rows)
    assert {r["set"] for r in rows} == {"dev", "held-out"}


def test_catalog_rates_come_from_the_csv_counts(catalog: Catalog) -> None:
    # Every Table 5 row's count is the observed_count of the failure mode it maps to, and the
    # network rate was derived on the same fabric link count the table uses.
    modes = {m.id: m for m in catalog.all("failure_modes")}
    for r in _rows():
        if r["failure_mode"]:
            assert modes[r["failure_mode"]].observed_count == int(r["value"])
    net = modes["network-switch-cable"]
    assert net.observed_unit_hours == pytest.approx(LLAMA3_FABRIC_LINKS * 54 * 24, rel=1e-9)


def test_validate_cli_runs_the_table() -> None:
    r = CliRunner().invoke(app, ["validate", "--table", "reliability", "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)["tables"]["reliability"]
    assert d["held_out_rows"] >= 3 and d["mape"] < 0.05


MTTF = "kokolis_rsc_mttf_8gpus"


@pytest.mark.parametrize("base, changes, reason", [
    (MTTF, {"gpu": "h20"}, "unknown GPU id 'h20'"),
    ("llama3_t5_faulty_gpu", {"failure_mode": "psu"}, "no failure mode 'psu'"),
])
def test_a_reliability_row_the_catalog_lacks_is_not_covered(
        tmp_path: Path, base: str, changes: dict[str, str], reason: str) -> None:
    _, rows = csvrows.shipped("reliability.csv")
    t = reliability_table(path=csvrows.write(tmp_path / "r.csv", "reliability.csv", base,
                                             csvrows.like(rows[base], **changes)))
    assert [r.id for r in t.rows] == [base]
    (nc,) = t.not_covered
    assert nc.line == 3 and reason in nc.reason, nc.reason


def test_a_malformed_reliability_row_names_the_line_and_column(tmp_path: Path) -> None:
    _, rows = csvrows.shipped("reliability.csv")
    for changes, message in (({"quantity": "mtbf_days"}, "quantity 'mtbf_days' is not one of"),
                             ({"value": "~148"}, "value '~148' is not a number")):
        with pytest.raises(InputError) as exc:
            reliability_table(path=csvrows.write(tmp_path / "r.csv", "reliability.csv", MTTF,
                                                 csvrows.like(rows[MTTF], **changes)))
        assert f"r.csv line 3, row {MTTF}_new: {message}" in str(exc.value)
