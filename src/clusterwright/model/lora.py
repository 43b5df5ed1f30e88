"""LoRA fine-tuning: what freezing the base weights and training rank-r adapters changes in a
training step (Hu et al., "LoRA: Low-Rank Adaptation of Large Language Models", ICLR 2022).

A targeted linear layer ``y = x W`` becomes ``y = x W + (x A) B`` with ``A`` (k_in x r) and
``B`` (r x n_out) trained and ``W`` frozen. Per token and targeted layer that adds
2 r (k_in + n_out) FLOPs forward. Backward, a frozen ``W`` needs its data gradient (so the
gradient flows on to the layers below) but no weight gradient: the base GEMMs cost 1x forward
instead of 2x, and the input a frozen layer saves only for its weight gradient is not kept.
Only the adapters have gradients, optimizer state, master weights and a data-parallel
reduction. Frozen weights may be stored in FP8 when the run computes in FP8 (Transformer
Engine's FP8 parameters, as the MLPerf Training Llama 2 70B LoRA implementations do).

Targets name the linear layers of a transformer layer as Megatron-Core does: ``qkv``
(linear_qkv: hidden -> Q, K, V; with MLA the projections out of the hidden state), ``proj``
(linear_proj: attention output -> hidden), ``fc1`` and ``fc2`` (the MLP, routed and shared
experts included); groups ``attention`` (qkv, proj; NeMo's ``target_modules: [attention]``),
``mlp`` (fc1, fc2) and ``all``. Embedding and LM head stay frozen and adapter-free.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from clusterwright.catalog.schema import Activation, ModelArch
from clusterwright.errors import InputError
from clusterwright.model.attention_bands import softmax_mean

LORA_MODULES = ("qkv", "proj", "fc1", "fc2")
LORA_GROUPS: dict[str, tuple[str, ...]] = {
    "attention": ("qkv", "proj"),
    "mlp": ("fc1", "fc2"),
    "all": LORA_MODULES,
}
# Adapters larger than this are not low-rank any more (and the bound keeps inputs sane).
MAX_LORA_RANK = 65536


@dataclass(frozen=True)
class Lora:
    """LoRA adapters of rank ``rank`` on the linear layers ``targets`` (``LORA_MODULES``,
    in that order)."""

    rank: int
    targets: tuple[str, ...] = ("qkv", "proj")

    @staticmethod
    def of(rank: int, targets: Iterable[str] = ("attention",)) -> Lora:
        """Validated adapters: groups expanded, duplicates dropped. InputError names
        ``lora_rank`` or ``lora_targets``."""
        if isinstance(rank, bool) or not isinstance(rank, int) or not 0 < rank <= MAX_LORA_RANK:
            raise InputError(f"lora_rank: must be an integer in 1..{MAX_LORA_RANK}, got {rank}",
                             field="lora_rank")
        names = [str(t).strip().lower() for t in targets]
        if not names or not all(names):
            raise InputError("lora_targets: name at least one of "
                             f"{', '.join((*LORA_MODULES, *LORA_GROUPS))}", field="lora_targets")
        chosen: set[str] = set()
        for n in names:
            if n in LORA_GROUPS:
                chosen.update(LORA_GROUPS[n])
            elif n in LORA_MODULES:
                chosen.add(n)
            else:
                raise InputError(
                    f"lora_targets: {n!r} is not one of "
                    f"{', '.join((*LORA_MODULES, *LORA_GROUPS))}", field="lora_targets")
        return Lora(rank, tuple(m for m in LORA_MODULES if m in chosen))

    def has(self, module: str) -> bool:
        return module in self.targets

    def as_dict(self) -> dict[str, object]:
        return {"method": "lora", "rank": self.rank, "targets": list(self.targets)}


@dataclass(frozen=True)
class AdapterShape:
    """One adapted linear layer: input and output widths (whole, before tensor parallelism),
    whether tensor parallelism splits its output (column-parallel: qkv, fc1) or its input
    (row-parallel: proj, fc2), and how many copies a layer has (experts)."""

    module: str
    k_in: float
    n_out: float
    column: bool
    copies: float = 1.0
    routed: bool = False  # a routed expert's: a token passes top_k of the copies

    @property
    def params(self) -> float:
        return self.copies * (self.k_in + self.n_out)  # times the rank


def adapter_shapes(arch: ModelArch, lora: Lora, moe_layer: bool = False) -> list[AdapterShape]:
    """The adapted linear layers of one dense (``moe_layer`` False) or MoE layer."""
    h = float(arch.hidden)
    out: list[AdapterShape] = []
    if lora.has("qkv"):
        if arch.is_mla:
            assert arch.qk_nope_head_dim and arch.qk_rope_head_dim and arch.kv_lora_rank
            dqk = float(arch.heads * (arch.qk_nope_head_dim + arch.qk_rope_head_dim))
            q_out = float(arch.q_lora_rank) if arch.q_lora_rank else dqk
            out.append(AdapterShape("qkv", h, q_out + arch.kv_lora_rank + arch.qk_rope_head_dim,
                                    True))
        else:
            q = arch.heads * softmax_mean(arch, arch.layer_head_dim)
            kv = softmax_mean(arch, lambda g: 2.0 * arch.layer_kv_heads(g) * arch.layer_head_dim(g))
            out.append(AdapterShape("qkv", h, q + kv, True))
    if lora.has("proj"):
        dv = float(arch.heads * arch.v_head_dim) if arch.is_mla and arch.v_head_dim else (
            arch.heads * softmax_mean(arch, arch.layer_head_dim))
        out.append(AdapterShape("proj", dv, h, False))
    g = 2.0 if arch.activation in (Activation.swiglu, Activation.geglu) else 1.0
    if moe_layer:
        f_e = float(arch.expert_ffn_hidden or arch.ffn_hidden)
        widths = [(float(arch.experts), True)]
        if arch.shared_experts:
            widths.append((float(arch.shared_experts), False))
        for copies, routed in widths:
            # A LatentMoE expert sits between latent-wide tokens; shared experts do not.
            w = float(arch.expert_width) if routed else h
            if lora.has("fc1"):
                out.append(AdapterShape("fc1", w, f_e * g, True, copies, routed))
            if lora.has("fc2"):
                out.append(AdapterShape("fc2", f_e, w, False, copies, routed))
    else:
        f = float(arch.ffn_hidden)
        if lora.has("fc1"):
            out.append(AdapterShape("fc1", h, f * g, True))
        if lora.has("fc2"):
            out.append(AdapterShape("fc2", f, h, False))
    return out


def adapter_params(arch: ModelArch, lora: Lora) -> tuple[float, float]:
    """(non-expert, routed-expert) adapter parameters of the whole model: r (k_in + n_out)
    per adapted layer and copy."""
    moe_layers = float(arch.moe_layers)
    dense_layers = float(arch.n_ffn_layers) - moe_layers
    r = float(lora.rank)
    dense = dense_layers * sum(s.params for s in adapter_shapes(arch, lora, False)) * r
    expert = 0.0
    if moe_layers:
        for s in adapter_shapes(arch, lora, True):
            if s.routed:
                expert += moe_layers * s.params * r
            else:
                dense += moe_layers * s.params * r
    return dense, expert


def adapter_flops_per_token(arch: ModelArch, lora: Lora) -> float:
    """Forward FLOPs of the adapters per token, whole model: 2 r (k_in + n_out) per adapted
    layer a token passes (top_k of the routed experts)."""
    moe_layers = float(arch.moe_layers)
    dense_layers = float(arch.n_ffn_layers) - moe_layers
    r = float(lora.rank)

    def per_layer(moe: bool) -> float:
        total = 0.0
        for s in adapter_shapes(arch, lora, moe):
            passes = float(arch.top_k) if s.routed else s.copies
            total += 2.0 * r * (s.k_in + s.n_out) * passes
        return total

    return dense_layers * per_layer(False) + (moe_layers * per_layer(True) if moe_layers else 0.0)
