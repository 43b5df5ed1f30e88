"""Hostile values in a user model file's hybrid-layer fields (linear attention, Mamba-2, FFN
blocks): every command that takes ``--model FILE`` must refuse what is not a count, naming the
field, and take any count it accepts (a huge one included) without a traceback or an
impossible number."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from clusterwright.catalog.registry import load_catalog
from tests.fuzz.harness import invoke, problems

FIELDS = ["linear_attention_layers", "linear_value_heads", "linear_conv_kernel",
          "mamba_layers", "mamba_heads", "mamba_state", "mamba_groups", "ffn_layers",
          "attention_output_gate"]
REFUSED = [-1, 0.5, ".inf", ".nan", "many", [4], {"a": 1}, "1e400"]
# Counts that pass the schema but are absurd in size: the run must still end cleanly.
HUGE = 10**12


def _hybrid(model: str) -> dict[str, object]:
    data = load_catalog().model(model).model_dump(mode="json", exclude_none=True)
    return {k: v for k, v in data.items() if k != "source"} | {
        "source": "fuzz: a catalog entry with one field changed"}


def _write(tmp: Path, data: dict[str, object], raw: dict[str, str]) -> Path:
    text = yaml.safe_dump(data, sort_keys=False)
    for k, v in raw.items():  # YAML scalars as written (.inf, .nan, 1e400)
        text += f"{k}: {v}\n"
    f = tmp / "model.yaml"
    f.write_text(text, encoding="utf-8")
    return f


def _refusals(base: dict[str, object], field: str, tmp: Path) -> list[str]:
    """What goes wrong when ``size`` reads ``base`` with each REFUSED value in ``field``:
    anything but a clean refusal that names the field."""
    found = []
    for bad in REFUSED:
        data = {k: v for k, v in base.items() if k != field}
        raw = {field: str(bad)} if isinstance(bad, str) else {}
        if not raw:
            data[field] = bad
        o = invoke(["size", "--model", str(_write(tmp, data, raw)), "--gpu", "h100-sxm",
                    "--json"])
        found += [f"{bad!r}: {p}" for p in problems(o, must_refuse=True)]
        if o.exit_code == 2 and field not in o.stderr:
            found.append(f"{bad!r}: the message does not name {field}: {o.stderr[:300]}")
    return found


def test_the_unchanged_models_are_accepted(tmp_path: Path) -> None:
    # (so that each refusal below is the changed field's)
    for model in ("nemotron-3-nano-30b-a3b", "qwen3.5-27b"):
        o = invoke(["size", "--model", str(_write(tmp_path, _hybrid(model), {})), "--gpu",
                    "h100-sxm", "--json"])
        assert o.exit_code == 0 and not problems(o), o.stderr[:500]


@pytest.mark.parametrize("field", FIELDS)
def test_hostile_hybrid_fields_are_refused_by_name(field: str, tmp_path: Path) -> None:
    base = _hybrid("nemotron-3-nano-30b-a3b" if field.startswith(("mamba", "ffn"))
                   else "qwen3.5-27b")
    found = _refusals(base, field, tmp_path)
    assert not found, "\n".join(found)


@pytest.mark.parametrize("field", ["mamba_heads", "mamba_state", "linear_value_heads",
                                   "linear_key_head_dim"])
def test_huge_hybrid_widths_end_cleanly(field: str, tmp_path: Path) -> None:
    base = _hybrid("nemotron-3-nano-30b-a3b" if field.startswith("mamba") else "qwen3.5-27b")
    data = base | {field: HUGE}
    if field == "mamba_heads":
        data["mamba_groups"] = 1
    f = _write(tmp_path, data, {})
    for args in (["size", "--model", str(f), "--gpu", "h100-sxm", "--json"],
                 ["serve", "estimate", "--model", str(f), "--gpu", "h100-sxm",
                  "--input-len", "1024", "--output-len", "128", "--concurrency", "4",
                  "--engine", "vllm", "--json"]):
        o = invoke(args)
        assert not problems(o), (args[:2], problems(o), o.stderr[:500])


# The fields of LatentMoE (Nemotron 3 Super), Gemma 4's global layers and DeepSeek-V4's
# attention, each on the catalog model that has it.
NEW_FIELDS = {"moe_latent": "nemotron-3-super-120b-a12b",
              "global_head_dim": "gemma-4-31b", "global_kv_heads": "gemma-4-31b",
              "global_k_eq_v": "gemma-4-31b", "mla_shared_kv": "deepseek-v4-flash",
              "o_lora_rank": "deepseek-v4-flash", "o_groups": "deepseek-v4-flash",
              "compressed_attention": "deepseek-v4-flash", "index_heads": "deepseek-v4-flash",
              "index_head_dim": "deepseek-v4-flash", "hc_mult": "deepseek-v4-flash"}


def test_the_unchanged_new_models_are_accepted(tmp_path: Path) -> None:
    for model in sorted(set(NEW_FIELDS.values())):
        o = invoke(["size", "--model", str(_write(tmp_path, _hybrid(model), {})), "--gpu",
                    "h100-sxm", "--json"])
        assert o.exit_code == 0 and not problems(o), (model, o.stderr[:500])


@pytest.mark.parametrize("field", sorted(NEW_FIELDS))
def test_hostile_new_architecture_fields_are_refused_by_name(field: str,
                                                             tmp_path: Path) -> None:
    found = _refusals(_hybrid(NEW_FIELDS[field]), field, tmp_path)
    assert not found, "\n".join(found)


@pytest.mark.parametrize(("field", "value", "model"), [
    ("moe_latent", HUGE, None), ("global_head_dim", HUGE, None),
    ("index_head_dim", HUGE, None), ("hc_mult", HUGE, None),
    ("compressed_attention", [{"layers": 21, "ratio": HUGE, "topk": HUGE},
                              {"layers": 20, "ratio": 128}], None),
    # DeepSeek Sparse Attention (GLM-5): a ratio-1 group with a huge top-k
    ("compressed_attention", [{"layers": 78, "ratio": 1, "topk": HUGE}], "glm-5")])
def test_huge_new_architecture_values_end_cleanly(field: str, value: object, model: str | None,
                                                  tmp_path: Path) -> None:
    f = _write(tmp_path, _hybrid(model or NEW_FIELDS[field]) | {field: value}, {})
    for args in (["size", "--model", str(f), "--gpu", "h100-sxm", "--json"],
                 ["serve", "estimate", "--model", str(f), "--gpu", "b200",
                  "--input-len", "1024", "--output-len", "128", "--concurrency", "4",
                  "--engine", "sglang", "--tp", "8", "--json"]):
        o = invoke(args)
        assert not problems(o), (args[:2], problems(o), o.stderr[:500])


# DeepSeek Sparse Attention (GLM-5): its indexer as a ratio-1 compressed group
@pytest.mark.parametrize("field", ["compressed_attention", "index_heads", "index_head_dim"])
def test_hostile_sparse_attention_fields_are_refused_by_name(field: str,
                                                             tmp_path: Path) -> None:
    found = _refusals(_hybrid("glm-5"), field, tmp_path)
    assert not found, "\n".join(found)


@pytest.mark.parametrize(("groups", "says"), [
    ([{"layers": 78, "ratio": 1}], "without topk"),
    ([{"layers": 78, "ratio": 0, "topk": 2048}], "ratio"),
    ([{"layers": 79, "ratio": 1, "topk": 2048}], "covers 79 layers"),
    ([{"layers": 78, "ratio": 4, "topk": 2048}], "sliding_window")])
def test_a_malformed_sparse_group_is_refused_naming_what(groups: list[dict[str, int]],
                                                         says: str, tmp_path: Path) -> None:
    f = _write(tmp_path, _hybrid("glm-5") | {"compressed_attention": groups}, {})
    o = invoke(["size", "--model", str(f), "--gpu", "h100-sxm", "--json"])
    assert o.exit_code == 2 and not problems(o, must_refuse=True), o.stderr[:500]
    assert "compressed_attention" in o.stderr and says in o.stderr, o.stderr[:500]

