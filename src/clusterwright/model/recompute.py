"""The one encoding of activation recomputation inside the models: an integer code.

0 keeps every activation, 2 (``FULL``) recomputes whole layers, any other value is a sum of
Megatron-Core's ``--recompute-modules`` bits (``core_attn`` = 1 is Megatron's selective
recompute, Korthikanti et al. 2022 section 5). Integers because the step and memory models
evaluate thousands of layouts as numpy arrays. Strings (``none``, ``selective``, ``full`` or a
comma list of modules) live only at the edges: YAML, CLI flags and JSON, converted here with
``parse_recompute`` and ``recompute_name``.
"""

from __future__ import annotations

NONE = 0
SELECTIVE = 1  # the core_attn bit
FULL = 2
RECOMPUTE_CODES: dict[str, int] = {"none": NONE, "selective": SELECTIVE, "full": FULL}
# Megatron-Core's --recompute-modules, as bits of the code (bit 2 is taken by FULL).
RECOMPUTE_MODULE_BITS: dict[str, int] = {
    "core_attn": 1, "mlp": 4, "moe": 8, "moe_act": 16, "layernorm": 32, "mla_up_proj": 64,
}


def parse_recompute(text: str) -> int:
    """A recompute code from ``none``, ``selective``, ``full`` or a comma list of modules
    (``core_attn,moe_act``). Raises ValueError naming what is unknown."""
    text = text.strip()
    if text in RECOMPUTE_CODES:
        return RECOMPUTE_CODES[text]
    code = 0
    for part in (x.strip() for x in text.split(",")):
        if part not in RECOMPUTE_MODULE_BITS:
            known = ", ".join([*RECOMPUTE_CODES, *RECOMPUTE_MODULE_BITS])
            raise ValueError(f"{part!r} is not a recompute mode or module (use {known})")
        code |= RECOMPUTE_MODULE_BITS[part]
    return code


def recompute_name(code: int) -> str:
    """The name of a recompute code: none, selective, full, or its modules joined by ','."""
    for name, c in RECOMPUTE_CODES.items():
        if c == code:
            return name
    return ",".join(m for m, b in RECOMPUTE_MODULE_BITS.items() if code & b)
