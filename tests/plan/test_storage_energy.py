"""The blueprint's storage tier and energy section from a scenario's storage: and energy:
choices (examples/train-storage-carbon.yaml): a fixed tier sized as given, a fixed tier too
slow binds with its numbers, the grid and renewables set the carbon, a ramp limit is a risk."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from clusterwright.catalog.registry import Catalog, load_catalog
from clusterwright.design.blueprint import Blueprint
from clusterwright.plan.scenario import plan_scenario
from clusterwright.spec.scenario import loads_scenario

ROOT = Path(__file__).resolve().parents[2]
TEXT = (ROOT / "examples" / "train-storage-carbon.yaml").read_text()


@functools.cache
def _catalog() -> Catalog:
    return load_catalog()


def _plan(text: str) -> Blueprint:
    sc, _ = loads_scenario(text)
    return plan_scenario(sc, _catalog(), quick=True)


@functools.cache
def _example() -> Blueprint:
    return _plan(TEXT)


def test_a_fixed_tier_is_used_as_given() -> None:
    st = _example().storage
    assert st is not None
    assert (st["system"], st["units"], st["binding"]) == ("ddn-ai400x2t", 1, [])
    ck = st["checkpoint"]
    # Synchronous: the whole write stalls training; 0.99 TB at 55 GB/s is 18 s.
    assert ck["mode"] == "sync" and ck["stall_s"] == ck["persist_s"]
    assert ck["persist_s"] == pytest.approx(ck["bytes"] / 55e9, rel=1e-9)
    # Capacity: the 60 TB dataset and five checkpoints are on the tier.
    assert st["need"]["capacity_tb"] >= 60 + 5 * ck["bytes"] / 1e12 - 1e-9


def test_the_grid_and_renewables_set_the_carbon() -> None:
    en = _example().energy
    assert en is not None
    g = en["grid"]
    assert (g["region"], g["year"], g["gco2_per_kwh"]) == ("us-srvc", 2023, 270.5)
    (run,) = en["runs"]
    c = run["carbon"]
    assert c["location_based_t"] == pytest.approx(
        run["energy"]["facility_kwh"] * 270.5 / 1e6, rel=1e-9)
    assert c["market_based_t"] == pytest.approx(0.5 * c["location_based_t"], rel=1e-9)


def test_a_ramp_limit_below_the_swing_is_a_high_risk() -> None:
    bp = _example()
    tr = bp.energy["power_trace"]  # type: ignore[index]
    assert tr["ramp_limit_mw_per_s"] == 0.5 and tr["exceeds_ramp_limit"] is True
    risk = next(r for r in bp.risks if r["title"] == "Power ramps faster than the grid allows")
    assert risk["severity"] == "high" and "energy.ramp_limit_mw_per_s" in risk["detail"]
    calm = _plan(TEXT.replace("ramp_limit_mw_per_s: 0.5", "ramp_limit_mw_per_s: 50"))
    assert not any(r["title"].startswith("Power ramps") for r in calm.risks)


def test_a_fixed_tier_too_slow_for_the_interval_binds_with_its_numbers() -> None:
    # Four MinIO nodes write 22 GB/s; a 405B checkpoint (5.7 TB) on 16,384 GPUs at the job's
    # MTBF needs more to stay within the checkpoint budget.
    text = (TEXT.replace('system: "ddn-ai400x2t"', 'system: "minio-nvme-node"')
            .replace("units: 1", "units: 4").replace("llama-3.1-70b", "llama-3.1-405b")
            .replace("gpus: 1024", "gpus: 16384").replace("spares: 3", "spares: 22"))
    bp = _plan(text)
    st = bp.storage
    assert st is not None and st["units"] == 4 and st["binding"]
    b = st["binding"][0]
    assert b["needed"] > b["available"] and b["unit"] and b["message"]
    assert bp.feasible is False
    assert any(v["constraint"] == "storage" for v in bp.binding_constraints)


def test_local_nvme_and_small_files_from_the_scenario() -> None:
    text = TEXT.replace('system: "ddn-ai400x2t"',
                        'system: "ddn-ai400x2t"\n  local_nvme: "dgx-8x3.84tb-u2-gen4"\n'
                        '  data_file_mb: 2.83')
    st = _plan(text).storage
    assert st is not None
    # The training job's 1,024 GPUs write the checkpoint: 128 DGX H100 servers (spares idle).
    assert st["local_staging"]["system"] == "dgx-8x3.84tb-u2-gen4"
    assert st["local_staging"]["servers"] == 128
    assert st["local_staging"]["stage_s"] < st["checkpoint"]["stall_s"]
    assert st["data_read_per_unit"]["not_checked"] == ["requests", "metadata"]


@pytest.mark.parametrize(("insert", "field"), [
    ('  local_nvme: "minio-nvme-node"', "storage.local_nvme"),
    ('  local_nvme: "no-such-drive"', "storage.local_nvme"),
    ("  data_request_kb: 262.144", "storage.data_request_kb"),
    ("  data_file_mb: -1", "storage.data_file_mb"),
])
def test_bad_storage_choices_exit_2_naming_the_field_and_line(
        insert: str, field: str, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from clusterwright.cli.main import app

    path = tmp_path / "s.yaml"
    path.write_text(TEXT.replace('system: "ddn-ai400x2t"', 'system: "ddn-ai400x2t"\n' + insert))
    r = CliRunner().invoke(app, ["check", str(path)])
    assert r.exit_code == 2, r.output
    assert field in r.output and "line 31" in r.output
