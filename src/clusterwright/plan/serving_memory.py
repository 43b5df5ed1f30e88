"""What one serving replica's GPU holds: weights, activations, CUDA graphs and the KV cache
that is left, split the way vLLM does at start-up (``memory_plan``). A layout that leaves no
KV block raises ``InfeasibleError`` with reason ``memory``."""

from __future__ import annotations

import math
from dataclasses import dataclass

from clusterwright.catalog.registry import Catalog
from clusterwright.catalog.schema import Gpu, ModelArch
from clusterwright.errors import InfeasibleError
from clusterwright.model.memory import inference_memory, kv_cache_bytes
from clusterwright.model.precision import Precision

GB = 1e9


@dataclass(frozen=True)
class MemoryPlan:
    """Per-GPU memory of one replica, in bytes, as vLLM sizes its KV cache at start-up
    (``gpu_worker.determine_available_memory``): the engine may use
    ``gpu_memory_utilization`` of the GPU; weights, the activation peak of a profiling
    forward pass over ``max_num_batched_tokens`` and the CUDA-graph pool come off the top;
    the rest is paged KV cache in blocks of ``block_size`` tokens."""

    gpu_memory: float
    utilization: float
    weights: float
    activations: float
    cuda_graphs: float
    kv_bytes_per_token: float  # per GPU: this GPU's share of heads and layers
    block_size: int
    tp: int
    pp: int
    # "total": the fraction caps all memory the engine uses (vLLM gpu_memory_utilization);
    # "free": the fraction applies to what weights and activations leave free (TensorRT-LLM
    # KvCacheConfig.free_gpu_memory_fraction).
    rule: str = "total"

    @property
    def usable(self) -> float:
        return self.gpu_memory * self.utilization

    @property
    def kv_cache(self) -> float:
        """Bytes left for the KV cache (negative when the model does not fit)."""
        if self.rule == "free":
            free = self.gpu_memory - self.weights - self.activations - self.cuda_graphs
            return free * self.utilization if free > 0 else free
        return self.usable - self.weights - self.activations - self.cuda_graphs

    @property
    def kv_blocks(self) -> int:
        """vLLM: num_gpu_blocks = available KV bytes // (block_size x bytes per token)."""
        return max(0, math.floor(self.kv_cache / (self.block_size * self.kv_bytes_per_token)))

    @property
    def kv_tokens(self) -> int:
        """Tokens the KV cache of one replica holds (all sequences together)."""
        return self.kv_blocks * self.block_size

    def max_batch(self, context_tokens: int) -> int:
        """Most sequences of ``context_tokens`` tokens whose KV fits at once (whole blocks)."""
        per_seq = -(-max(context_tokens, 1) // self.block_size)
        return self.kv_blocks // per_seq

    def as_dict(self) -> dict[str, float | int]:
        return {
            "gpu_memory_gb": self.gpu_memory / GB,
            "usable_gb": self.usable / GB,
            "weights_gb": self.weights / GB,
            "activations_gb": self.activations / GB,
            "cuda_graphs_gb": self.cuda_graphs / GB,
            "kv_cache_gb": self.kv_cache / GB,
            "kv_bytes_per_token_per_gpu": self.kv_bytes_per_token,
            "block_size": self.block_size,
            "kv_blocks": self.kv_blocks,
            "kv_tokens": self.kv_tokens,
        }


def _memory(arch: ModelArch, gpu: Gpu, tp: int, pp: int, weights: Precision,
            kv_precision: Precision, cat: Catalog, rule: str = "total") -> MemoryPlan:
    # Expert parallelism inside the TP group needs no term here: E/ep whole experts, each
    # sliced over tp/ep GPUs, are E/tp experts' bytes per GPU, as TP's 1/tp of every expert
    # (and the MoE activation peak is the same, see model/inference.StepModel).
    tokens = cat.assumption("inference_max_batched_tokens")
    graphs = cat.assumption("inference_cuda_graph_reserve_gb") * GB
    m = inference_memory(arch, 0, 0, weights, kv_precision, tp, pp, tokens, graphs)
    return MemoryPlan(
        gpu_memory=gpu.memory_gb * GB,
        utilization=cat.assumption("inference_gpu_memory_utilization"),
        weights=m.weights,
        activations=m.activations,
        cuda_graphs=m.reserve,
        kv_bytes_per_token=kv_cache_bytes(arch, 1, 1, kv_precision, tp) / pp,
        block_size=int(cat.assumption("inference_kv_block_tokens")),
        tp=tp,
        pp=pp,
        rule=rule,
    )


def memory_plan(arch: ModelArch, gpu: Gpu, tp: int, pp: int, weights: Precision | str,
                kv_precision: Precision | str, cat: Catalog, rule: str = "total") -> MemoryPlan:
    """Memory of ``arch`` on ``tp`` x ``pp`` ``gpu``s. Raises InfeasibleError (reason
    ``memory``) naming tp, with the numbers and the smallest TP that fits, when not even one
    KV block is left. ``rule``: how the engine's memory fraction applies (``MemoryPlan.rule``)."""
    w, kv = Precision(weights), Precision(kv_precision)
    plan = _memory(arch, gpu, tp, pp, w, kv, cat, rule)
    if plan.kv_blocks >= 1:
        return plan
    fits = [t for t in (2, 4, 8, 16, 32, 64) if t > tp and arch.heads % t == 0
            and _memory(arch, gpu, t, pp, w, kv, cat, rule).kv_blocks >= 1]
    hint = f"; try tp {fits[0]}" if fits else "; add pp stages or use a larger GPU"
    parts = (f"{plan.weights / GB:.1f} GB weights - {plan.activations / GB:.1f} GB activations"
             f" - {plan.cuda_graphs / GB:.1f} GB CUDA graphs")
    if plan.rule == "free":
        budget = (f"({gpu.memory_gb:g} GB - {parts}) x {plan.utilization:g} (the engine's "
                  "fraction of free memory)")
    else:
        budget = (f"{plan.usable / GB:.1f} GB usable ({gpu.memory_gb:g} GB x "
                  f"{plan.utilization:g}) - {parts}")
    raise InfeasibleError(
        f"tp: {arch.id} ({w.value}) does not fit on {gpu.id} at tp {tp} pp {pp}: "
        f"{budget} = {plan.kv_cache / GB:.1f} GB for the KV cache, less than one block{hint}",
        "memory", field="tp")
