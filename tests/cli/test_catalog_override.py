"""User catalogs: `--catalog FILE` and `$CLUSTERWRIGHT_CATALOG` add and override entries."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from clusterwright.cli.main import app
from tests.cli.helpers import user_error

runner = CliRunner()


def cw(*args: str, env: dict[str, str | None] | None = None) -> Result:
    return runner.invoke(app, list(args), env={"CLUSTERWRIGHT_CATALOG": None, **(env or {})})


OVERRIDE = "    override: true\n"


def gpu_entry(gpu_id: str, memory_gb: float = 500, extra: str = "") -> str:
    """One GPU entry; `memory_gb` is on line 7 of a file that starts with `gpus:`."""
    return f"""\
  - id: "{gpu_id}"
    name: "Test accelerator"
    source: "invented for a unit test"
    vendor: "nvidia"
    form_factor: "sxm"
    memory_gb: {memory_gb}
    memory_type: "HBM9"
    memory_bandwidth_gbps: 20000
    peak_tflops: {{bf16: 5000, fp16: 5000, fp8: 10000}}
    tdp_w: 1500
    scale_up: {{kind: "nvlink", bandwidth_gbps_per_direction: 1800}}
    pcie_gen: 6
{extra}"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def show(*args: str, env: dict[str, str | None] | None = None) -> dict[str, Any]:
    r = cw(*args, env=env)
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert isinstance(data, dict)
    return data


# ---------------------------------------------------------------------- --catalog FILE


def test_new_gpu_from_catalog_file_is_shown(tmp_path: Path) -> None:
    f = write(tmp_path / "mine.yaml", "gpus:\n" + gpu_entry("x9000"))
    d = show("--catalog", str(f), "catalog", "show", "x9000", "--json")
    assert d["id"] == "x9000"
    assert d["memory_gb"] == 500
    assert d["defined_in"] == f"{f}:2"


def test_new_gpu_is_listed_with_the_packaged_ones(tmp_path: Path) -> None:
    f = write(tmp_path / "mine.yaml", "gpus:\n" + gpu_entry("x9000"))
    listed = show("--catalog", str(f), "catalog", "list", "gpus", "--json")
    ids = {e["id"] for e in listed["entries"]}
    assert {"x9000", "h100-sxm", "a100-80gb-sxm"} <= ids


def test_size_uses_a_gpu_from_the_catalog_file(tmp_path: Path) -> None:
    f = write(tmp_path / "mine.yaml", "gpus:\n" + gpu_entry("x9000"))
    d = show("--catalog", str(f), "size", "--model", "llama-2-70b", "--gpu", "x9000", "--json")
    # 138 GB of bf16 weights fit in one 500 GB part.
    assert d["min_gpus"] == {"x9000": 1}
    assert d["min_gpus_layout"] == {"x9000": 1}
    assert "x9000" in d["roofline"]


def test_catalog_file_does_not_leak_into_the_next_command(tmp_path: Path) -> None:
    f = write(tmp_path / "mine.yaml", "gpus:\n" + gpu_entry("x9000"))
    assert cw("--catalog", str(f), "catalog", "show", "x9000").exit_code == 0
    user_error(cw("catalog", "show", "x9000"))
    over = write(tmp_path / "over.yaml", "gpus:\n" + gpu_entry("h100-sxm", 160, OVERRIDE))
    assert show("--catalog", str(over), "catalog", "show", "h100-sxm", "--json")["memory_gb"] == 160
    assert show("catalog", "show", "h100-sxm", "--json")["memory_gb"] == 80


def test_scenario_may_name_a_gpu_from_the_catalog_file(tmp_path: Path) -> None:
    f = write(tmp_path / "mine.yaml", "gpus:\n" + gpu_entry("x9000"))
    sc = write(
        tmp_path / "s.yaml",
        """\
name: "t"
workloads:
  - kind: "training"
    name: "pt"
    model: "llama-2-7b"
    tokens: 1.0e9
    gpus: 8
constraints:
  gpus: ["x9000"]
""",
    )
    assert cw("--catalog", str(f), "check", str(sc)).exit_code == 0
    assert "x9000" in user_error(cw("check", str(sc)))


def test_existing_id_without_override_names_both_files(tmp_path: Path) -> None:
    f = write(tmp_path / "dup.yaml", "gpus:\n" + gpu_entry("h100-sxm"))
    err = user_error(cw("--catalog", str(f), "catalog", "show", "h100-sxm"))
    assert f"{f}:2" in err
    assert "catalog/data/gpus.yaml" in err
    assert "'h100-sxm'" in err
    assert "override: true" in err


def test_override_replaces_the_packaged_entry(tmp_path: Path) -> None:
    f = write(tmp_path / "over.yaml", "gpus:\n" + gpu_entry("h100-sxm", 160, OVERRIDE))
    d = show("--catalog", str(f), "catalog", "show", "h100-sxm", "--json")
    assert d["memory_gb"] == 160
    assert d["defined_in"] == f"{f}:2"
    assert "override" not in d


def test_override_changes_what_size_computes(tmp_path: Path) -> None:
    f = write(tmp_path / "over.yaml", "gpus:\n" + gpu_entry("h100-sxm", 160, OVERRIDE))
    args = ("size", "--model", "llama-2-70b", "--gpu", "h100-sxm", "--json")
    assert show(*args)["min_gpus"] == {"h100-sxm": 2}  # 80 GB parts
    assert show("--catalog", str(f), *args)["min_gpus"] == {"h100-sxm": 1}  # 160 GB


def test_override_of_an_id_that_does_not_exist_is_an_error(tmp_path: Path) -> None:
    f = write(tmp_path / "typo.yaml", "gpus:\n" + gpu_entry("h100-sxn", extra=OVERRIDE))
    err = user_error(cw("--catalog", str(f), "catalog", "list", "gpus"))
    assert "'h100-sxn'" in err
    assert "nothing to override" in err
    assert f"{f}:2" in err


def test_bad_field_in_catalog_file_names_field_and_line(tmp_path: Path) -> None:
    f = write(tmp_path / "bad.yaml", "gpus:\n" + gpu_entry("x9000", extra="    memory_gbs: 3\n"))
    err = user_error(cw("--catalog", str(f), "catalog", "list", "gpus", "--json"))
    assert "gpus[0].memory_gbs" in err
    assert "line 14" in err
    assert "unknown field" in err
    assert str(f) in err


def test_bad_value_in_catalog_file_names_field_and_line(tmp_path: Path) -> None:
    f = write(tmp_path / "bad.yaml", "gpus:\n" + gpu_entry("x9000", memory_gb=-5))
    err = user_error(cw("--catalog", str(f), "size", "--model", "llama-2-7b"))
    assert "gpus[0].memory_gb" in err
    assert "line 7" in err


def test_bad_id_in_catalog_file_is_rejected(tmp_path: Path) -> None:
    f = write(tmp_path / "bad.yaml", "gpus:\n" + gpu_entry("X 9000"))
    err = user_error(cw("--catalog", str(f), "catalog", "list", "gpus"))
    assert "gpus[0].id" in err
    assert "line 2" in err


def test_unknown_kind_in_catalog_file_suggests_the_right_one(tmp_path: Path) -> None:
    f = write(tmp_path / "bad.yaml", "gpuz:\n" + gpu_entry("x9000"))
    err = user_error(cw("--catalog", str(f), "catalog", "list", "gpus"))
    assert "'gpuz'" in err
    assert "did you mean 'gpus'" in err
    assert f"{f}:1" in err


def test_missing_catalog_file_is_a_user_error(tmp_path: Path) -> None:
    missing = tmp_path / "absent.yaml"
    err = user_error(cw("--catalog", str(missing), "catalog", "list", "gpus"))
    assert str(missing) in err


def test_server_pointing_at_an_unknown_gpu_is_rejected(tmp_path: Path) -> None:
    d = show("catalog", "show", "dgx-h100", "--json")
    d = {k: v for k, v in d.items() if k not in ("catalog_kind", "defined_in")}
    d.update(id="dgx-x", gpu="h100-sxn", kind="server")
    f = write(tmp_path / "srv.json.yaml", json.dumps({"servers": [d]}))
    err = user_error(cw("--catalog", str(f), "catalog", "list", "servers"))
    assert "'h100-sxn'" in err
    assert "'h100-sxm'" in err  # suggestion


# ----------------------------------------------------------- $CLUSTERWRIGHT_CATALOG


def test_catalog_directory_from_the_environment_is_read(tmp_path: Path) -> None:
    d = tmp_path / "cat"
    write(d / "a.yaml", "gpus:\n" + gpu_entry("x9000"))
    write(d / "b.yml", "gpus:\n" + gpu_entry("x9001"))
    write(d / "notes.txt", "gpus: [this is not read]\n")
    env = {"CLUSTERWRIGHT_CATALOG": str(d)}
    assert show("catalog", "show", "x9000", "--json", env=env)["defined_in"] == f"{d}/a.yaml:2"
    assert show("catalog", "show", "x9001", "--json", env=env)["memory_gb"] == 500
    sized = show("size", "--model", "llama-2-7b", "--gpu", "x9001", "--json", env=env)
    assert set(sized["min_gpus"]) == {"x9001"}


def test_catalog_directory_with_monkeypatched_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    d = tmp_path / "cat"
    write(d / "a.yaml", "gpus:\n" + gpu_entry("x9000"))
    monkeypatch.setenv("CLUSTERWRIGHT_CATALOG", str(d))
    r = runner.invoke(app, ["catalog", "show", "x9000", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["id"] == "x9000"


def test_same_id_in_two_environment_files_names_both(tmp_path: Path) -> None:
    d = tmp_path / "cat"
    write(d / "a.yaml", "gpus:\n" + gpu_entry("x9000"))
    write(d / "b.yaml", "gpus:\n" + gpu_entry("x9000"))
    err = user_error(cw("catalog", "list", "gpus", env={"CLUSTERWRIGHT_CATALOG": str(d)}))
    assert f"{d}/a.yaml" in err
    assert f"{d}/b.yaml" in err


def test_catalog_file_overrides_an_environment_entry(tmp_path: Path) -> None:
    d = tmp_path / "cat"
    write(d / "a.yaml", "gpus:\n" + gpu_entry("x9000"))
    f = write(tmp_path / "later.yaml", "gpus:\n" + gpu_entry("x9000", 600, OVERRIDE))
    env = {"CLUSTERWRIGHT_CATALOG": str(d)}
    d2 = show("--catalog", str(f), "catalog", "show", "x9000", "--json", env=env)
    assert d2["memory_gb"] == 600


def test_environment_variable_that_is_not_a_directory_is_an_error(tmp_path: Path) -> None:
    err = user_error(
        cw("catalog", "list", "gpus", env={"CLUSTERWRIGHT_CATALOG": str(tmp_path / "nowhere")})
    )
    assert "CLUSTERWRIGHT_CATALOG" in err
    assert "not a directory" in err


def test_bad_field_in_environment_catalog_names_file_field_and_line(tmp_path: Path) -> None:
    d = tmp_path / "cat"
    write(d / "a.yaml", "gpus:\n" + gpu_entry("x9000", extra="    tdp: 3\n"))
    err = user_error(cw("catalog", "show", "x9000", env={"CLUSTERWRIGHT_CATALOG": str(d)}))
    assert f"{d}/a.yaml" in err
    assert "gpus[0].tdp" in err
    assert "line 14" in err
