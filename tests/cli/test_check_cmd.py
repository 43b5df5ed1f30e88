"""`clusterwright check SCENARIO.yaml`: shipped examples pass, bad scenarios name field and line."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner, Result

from clusterwright.cli.main import app
from tests.cli.helpers import user_error

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))

runner = CliRunner()


def cw(*args: str) -> Result:
    return runner.invoke(app, list(args), env={"CLUSTERWRIGHT_CATALOG": None})


def names_line(err: str, line: int) -> bool:
    """`(line 7)` in a validation message or `file.yaml:7:` in a YAML one."""
    return re.search(rf"(\bline {line}\b|\.yaml:{line}\b)", err) is not None


# Line numbers below are 1-based lines of this text.
BASE = """\
name: "t"
workloads:
  - kind: "inference"
    name: "chat"
    model: "llama-3.1-8b"
    qps: 10
    input_len: 512
    output_len: 128
    slo: {ttft_p99_s: 1.0, tpot_p99_s: 0.05}
constraints:
  gpus: ["h100-sxm"]
"""


def scenario(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "s.yaml"
    p.write_text(text)
    return p


def check_error(tmp_path: Path, text: str) -> str:
    return user_error(cw("check", str(scenario(tmp_path, text)), "--json"))


# -------------------------------------------------------------------------- examples


def test_examples_exist() -> None:
    assert len(EXAMPLES) >= 3


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_every_example_passes_check(path: Path) -> None:
    r = cw("check", str(path))
    assert r.exit_code == 0, r.output
    assert r.stderr == ""
    assert "valid" in r.stdout
    name = yaml.safe_load(path.read_text())["name"]
    assert name in r.stdout


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_every_example_check_json_lists_its_workloads(path: Path) -> None:
    r = cw("check", str(path), "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    raw = yaml.safe_load(path.read_text())
    assert d["valid"] is True
    assert d["name"] == raw["name"]
    assert [w["name"] for w in d["workloads"]] == [w["name"] for w in raw["workloads"]]
    for w in d["workloads"]:
        assert w["kind"] in ("training", "inference", "finetune")
        assert w["params"] > 0
        assert w["active_params"] <= w["params"]
    assert "constraints" in d


def test_training_example_flops_are_about_6_n_d() -> None:
    d = json.loads(cw("check", str(ROOT / "examples/train-llama3-70b.yaml"), "--json").stdout)
    (w,) = d["workloads"]
    six_nd = 6 * w["params"] * w["tokens"]
    assert w["tokens"] == 15e12
    # Dense training is 6ND plus attention, which adds a few tens of % at 8K context.
    assert six_nd <= w["training_flops"] < 1.3 * six_nd


def test_serving_example_reports_fp8_weights_and_kv_bytes() -> None:
    d = json.loads(cw("check", str(ROOT / "examples/serve-llama3-70b.yaml"), "--json").stdout)
    (w,) = d["workloads"]
    assert w["weights_gb"] == pytest.approx(w["params"] / 1e9)  # 1 byte per weight
    # Llama 3.1 70B: 80 layers, 8 KV heads of 128, K and V, 1 byte each in fp8.
    assert w["kv_cache_bytes_per_token"] == 2 * 80 * 8 * 128 * 1
    assert w["qps"] == 20


def test_base_scenario_is_valid(tmp_path: Path) -> None:
    r = cw("check", str(scenario(tmp_path, BASE)), "--json")
    assert r.exit_code == 0, r.output
    (w,) = json.loads(r.stdout)["workloads"]
    assert w["mean_input_len"] == 512
    assert w["mean_output_len"] == 128


# ---------------------------------------------------------------------- bad scenarios


def test_unknown_field_names_path_and_line(tmp_path: Path) -> None:
    err = check_error(tmp_path, BASE.replace("    qps: 10\n", "    qps: 10\n    qpz: 3\n"))
    assert "workloads[0].qpz" in err
    assert "unknown field" in err
    assert names_line(err, 7)


def test_negative_qps_names_path_and_line(tmp_path: Path) -> None:
    err = check_error(tmp_path, BASE.replace("qps: 10", "qps: -1"))
    assert "workloads[0].qps" in err
    assert names_line(err, 6)
    assert "greater than 0" in err


def test_missing_required_field_names_it_and_the_workload_line(tmp_path: Path) -> None:
    err = check_error(tmp_path, BASE.replace("    qps: 10\n", ""))
    assert "qps" in err
    assert "required field is missing" in err
    assert names_line(err, 3)  # the workload that lacks it


def test_missing_top_level_field_is_named(tmp_path: Path) -> None:
    err = check_error(tmp_path, 'name: "t"\n')
    assert "workloads" in err
    assert "required field is missing" in err


TRAINING_WITHOUT_SIZE = """\
name: "t"
workloads:
  - kind: "training"
    name: "pt"
    model: "llama-3.1-8b"
    tokens: 1.0e9
"""


@pytest.mark.parametrize(
    ("text", "path"),
    [
        (BASE.replace("    qps: 10\n", ""), "workloads[0].qps"),
        (TRAINING_WITHOUT_SIZE, "workloads[0]"),
    ],
    ids=["missing-field", "model-validator"],
)
def test_error_path_has_no_union_tag(tmp_path: Path, text: str, path: str) -> None:
    err = check_error(tmp_path, text)
    assert f"{path} (line 3)" in err
    assert ".inference" not in err
    assert ".training" not in err


def test_training_without_deadline_or_gpus_is_rejected(tmp_path: Path) -> None:
    err = check_error(tmp_path, TRAINING_WITHOUT_SIZE)
    assert "deadline_days or gpus" in err
    assert "workloads[0]" in err
    assert names_line(err, 3)


def test_unknown_model_id_suggests_close_ids(tmp_path: Path) -> None:
    err = check_error(tmp_path, BASE.replace('"llama-3.1-8b"', '"llama-3.1-8"'))
    assert "workloads[0].model" in err
    assert names_line(err, 5)
    assert "did you mean" in err
    assert "'llama-3.1-8b'" in err


def test_unknown_gpu_in_constraints_suggests_close_ids(tmp_path: Path) -> None:
    err = check_error(tmp_path, BASE.replace('["h100-sxm"]', '["h100-sxm", "h100"]'))
    assert "constraints.gpus[1]" in err
    assert names_line(err, 11)
    assert "unknown GPU id 'h100'" in err
    assert "'h100-sxm'" in err


def test_unknown_server_in_constraints_suggests_close_ids(tmp_path: Path) -> None:
    err = check_error(tmp_path, BASE + '  servers: ["dgx-h10"]\n')
    assert "constraints.servers[0]" in err
    assert names_line(err, 12)
    assert "'dgx-h100'" in err


def test_malformed_yaml_names_the_line(tmp_path: Path) -> None:
    err = check_error(tmp_path, BASE.replace("qps: 10", "qps: [10"))
    assert "invalid YAML" in err
    assert "s.yaml" in err
    assert names_line(err, 7)


def test_duplicate_key_names_key_and_line(tmp_path: Path) -> None:
    err = check_error(tmp_path, BASE.replace("    qps: 10\n", "    qps: 10\n    qps: 11\n"))
    assert "duplicate key 'qps'" in err
    assert "workloads[0]" in err
    assert names_line(err, 7)


def test_float_looking_model_id_must_be_quoted(tmp_path: Path) -> None:
    # YAML 1.1 reads `1.10` as the float 1.1: the id must not be coerced silently.
    err = check_error(tmp_path, BASE.replace('"llama-3.1-8b"', "1.10"))
    assert "workloads[0].model" in err
    assert names_line(err, 5)
    assert "quote it" in err


def test_float_looking_model_id_error_path_is_clean(tmp_path: Path) -> None:
    err = check_error(tmp_path, BASE.replace('"llama-3.1-8b"', "1.10"))
    assert "constrained-str" not in err


@pytest.mark.parametrize("value", ["no", "1.10", "2024"])
def test_scalar_that_is_not_a_string_as_name_must_be_quoted(tmp_path: Path, value: str) -> None:
    err = check_error(tmp_path, BASE.replace('name: "t"', f"name: {value}"))
    assert "name" in err
    assert names_line(err, 1)
    assert "quote it" in err


REPEATED = BASE.replace(
    "constraints:",
    """\
  - kind: "training"
    name: "chat"
    model: "llama-3.1-8b"
    tokens: 1.0e9
    gpus: 8
constraints:""",
)


def test_repeated_workload_names_are_rejected(tmp_path: Path) -> None:
    err = check_error(tmp_path, REPEATED)
    assert "'chat'" in err
    assert "used twice" in err


def test_repeated_workload_name_error_names_path_and_line(tmp_path: Path) -> None:
    err = check_error(tmp_path, REPEATED)
    assert "workloads[1].name" in err
    assert names_line(err, 11)


def test_unknown_workload_kind_is_rejected(tmp_path: Path) -> None:
    err = check_error(tmp_path, BASE.replace('kind: "inference"', 'kind: "inferense"'))
    assert "workloads[0]" in err
    assert "inferense" in err
    assert names_line(err, 3)


def test_empty_gpu_list_is_rejected(tmp_path: Path) -> None:
    err = check_error(tmp_path, BASE.replace('["h100-sxm"]', "[]"))
    assert "constraints" in err
    assert "at least one GPU" in err


def test_scenario_that_is_not_a_mapping_is_rejected(tmp_path: Path) -> None:
    err = check_error(tmp_path, "- just\n- a list\n")
    assert "mapping" in err


def test_empty_file_is_rejected(tmp_path: Path) -> None:
    assert "mapping" in check_error(tmp_path, "")


def test_missing_file_is_a_user_error(tmp_path: Path) -> None:
    missing = tmp_path / "absent.yaml"
    err = user_error(cw("check", str(missing)))
    assert str(missing) in err
    assert "no such file" in err


def test_directory_instead_of_file_is_a_user_error(tmp_path: Path) -> None:
    err = user_error(cw("check", str(tmp_path)))
    assert "cannot read" in err


def test_inline_model_with_bad_field_names_path_and_line(tmp_path: Path) -> None:
    text = """\
name: "t"
workloads:
  - kind: "training"
    name: "pt"
    gpus: 8
    tokens: 1.0e9
    model:
      id: "tiny"
      name: "Tiny"
      source: "made up for a unit test"
      layers: 2
      hidden: 64
      heads: 4
      ffn_hidden: 256
      vocab: 1000
      max_seq_len: 128
      hiden: 3
"""
    err = check_error(tmp_path, text)
    assert "workloads[0].model.hiden" in err
    assert names_line(err, 17)
    good = cw("check", str(scenario(tmp_path, text.replace("      hiden: 3\n", ""))), "--json")
    assert good.exit_code == 0, good.output
    assert json.loads(good.stdout)["workloads"][0]["model"] == "tiny"


# ------------------------------------------------------------- the input boundary (#19)


@pytest.mark.parametrize("special", ["/dev/zero", "/dev/null"])
def test_a_device_is_refused_without_reading_it(special: str) -> None:
    if not Path(special).exists():
        pytest.skip(f"no {special}")
    err = user_error(cw("check", special))
    assert f"{special}: cannot read: not a regular file" in err


def test_a_device_as_catalog_file_is_refused(tmp_path: Path) -> None:
    if not Path("/dev/zero").exists():
        pytest.skip("no /dev/zero")
    err = user_error(cw("--catalog", "/dev/zero", "check", str(scenario(tmp_path, BASE))))
    assert "/dev/zero: cannot read: not a regular file" in err


def test_a_yaml_alias_bomb_is_a_user_error(tmp_path: Path) -> None:
    from tests.spec.test_yamlio import BOMB

    err = check_error(tmp_path, BOMB)
    assert "aliases expand to more than 100,000 values" in err


def test_deeply_nested_braces_are_a_user_error(tmp_path: Path) -> None:
    err = check_error(tmp_path, "{" * 5000 + "}" * 5000)
    assert "nest" in err and names_line(err, 1)


@pytest.mark.parametrize(("value", "message"), [
    (".inf", "finite number"),
    ("true", "not the boolean true"),
    ('"10"', "not the string '10'"),
])
def test_qps_that_is_not_a_finite_number_names_the_field_and_line(
        tmp_path: Path, value: str, message: str) -> None:
    err = check_error(tmp_path, BASE.replace("qps: 10", f"qps: {value}"))
    assert "workloads[0].qps (line 6)" in err
    assert message in err
    assert "--qps" not in err


@pytest.mark.parametrize("name", ["[a, b]", "{a: 1}"])
def test_a_workload_name_that_is_not_a_string_is_a_user_error(tmp_path: Path,
                                                             name: str) -> None:
    err = check_error(tmp_path, BASE.replace('name: "chat"', f"name: {name}"))
    assert "workloads[0].name (line 4): must be a string" in err


def test_a_server_whose_gpu_is_not_listed_is_refused(tmp_path: Path) -> None:
    err = check_error(tmp_path, BASE + '  servers: ["dgx-b200"]\n')
    assert "constraints.servers[0]" in err and names_line(err, 12)
    assert "'dgx-b200' carries 'b200', which is not in constraints.gpus" in err


def test_a_listed_gpu_no_listed_server_carries_is_refused(tmp_path: Path) -> None:
    text = BASE.replace('["h100-sxm"]', '["h100-sxm", "b200"]') + '  servers: ["dgx-h100"]\n'
    err = check_error(tmp_path, text)
    assert "constraints.gpus[1]" in err and names_line(err, 11)
    assert "no server in constraints.servers ('dgx-h100') carries 'b200'" in err


def test_matching_gpus_and_servers_pass(tmp_path: Path) -> None:
    r = cw("check", str(scenario(tmp_path, BASE + '  servers: ["dgx-h100", "hgx-h100"]\n')),
           "--json")
    assert r.exit_code == 0, r.output


def test_a_request_longer_than_the_model_context_is_refused(tmp_path: Path) -> None:
    err = check_error(tmp_path, BASE.replace("input_len: 512", "input_len: 200000"))
    assert "workloads[0].input_len (line 7)" in err
    assert "131,072-token context of llama-3.1-8b" in err


def test_an_e2e_slo_is_accepted_and_reported(tmp_path: Path) -> None:
    text = BASE.replace("tpot_p99_s: 0.05}", "tpot_p99_s: 0.05, e2e_p99_s: 10}")
    r = cw("check", str(scenario(tmp_path, text)), "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["workloads"][0]["slo"]["e2e_p99_s"] == 10.0


def test_exponent_floats_are_numbers_and_quoted_ones_are_not(tmp_path: Path) -> None:
    text = BASE.replace("qps: 10", "qps: 1e2")
    r = cw("check", str(scenario(tmp_path, text)), "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["workloads"][0]["qps"] == 100.0
    assert "not the string '1e2'" in check_error(tmp_path, BASE.replace("qps: 10", "qps: '1e2'"))
