from __future__ import annotations

import pytest

from clusterwright.model.recompute import (
    FULL,
    RECOMPUTE_MODULE_BITS,
    SELECTIVE,
    parse_recompute,
    recompute_name,
)


def test_names_and_codes_round_trip() -> None:
    for name in ("none", "selective", "full", "core_attn,moe_act", "mlp,layernorm"):
        assert recompute_name(parse_recompute(name)) == (
            "selective" if name == "core_attn" else name)


def test_selective_is_the_core_attention_bit_and_full_is_no_module() -> None:
    assert RECOMPUTE_MODULE_BITS["core_attn"] == SELECTIVE
    assert FULL not in RECOMPUTE_MODULE_BITS.values()


def test_unknown_module_is_named() -> None:
    with pytest.raises(ValueError, match="'attn'"):
        parse_recompute("mlp,attn")
