"""A serving deployment on a catalog engine: aggregated, or disaggregated into prefill and
decode workers, each role with its own TP/PP, attention data parallelism and MoE TP/EP.

This is where the catalog meets the step model and the steady-state solver: the engine's
scheduler (token budget, chunking, batch limit, KV admission), its KV memory rule on the GPU's
memory, the weights' formats, the fabric the collectives and the KV transfer cross. Both
``serve estimate --engine`` and ``validate --table serving-silicon`` build deployments here, so
what is validated is what users run.

It plans, it does not simulate: a role whose worker count is left open is sized for the load
(``size_workers``) and the deployment is solved in closed form (``sim/serving_steady.py``);
the event-level simulator is ``sim/serving.py``.

Units: seconds, bytes, tokens.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field, replace
from typing import Any

from clusterwright.catalog.registry import Catalog
from clusterwright.catalog.schema import Dtype, Gpu, ModelArch
from clusterwright.catalog.stacks import ServingEngine, Stack
from clusterwright.design.train import in_server, net_for, server_for
from clusterwright.errors import InputError
from clusterwright.model.host_link import block_copy_s, pcie_bytes_per_s
from clusterwright.model.memory import (
    inference_memory,
    kv_cache_bytes_per_token_split,
    recurrent_state_bytes_per_sequence,
)
from clusterwright.model.params import param_counts
from clusterwright.model.serving_step import (
    ACT_BYTES,
    FORMATS,
    Buckets,
    DeploymentStep,
    ServingParallel,
    StepParts,
    WeightFormat,
    format_peak_tflops,
    kv_bytes_per_token,
    padded_heads,
    padding_params,
)
from clusterwright.sim.serving_steady import (
    Pool,
    SteadyState,
    aggregated,
    disaggregated,
    prefill_batch_s,
    prompts_per_batch,
    speculative_iteration_s,
)

GB = 1e9
# Used only to size worker counts a caller leaves open: a planner keeps prefill workers below
# this utilisation (queueing grows fast beyond it: M/D/1 wait at 0.7 is 1.2 services).
PREFILL_TARGET_UTIL = 0.7


class DeploymentError(InputError):
    """A deployment the hardware cannot hold or the model cannot represent."""


@dataclass(frozen=True)
class Role:
    """Identical workers of one layout; ``workers`` None: to be sized for the load."""

    par: ServingParallel
    workers: int | None = 1
    # Requests one data-parallel rank batches at most (the engine's max batch size as the
    # deployment sets it); None: the engine's default
    max_batch: int | None = None
    # Tokens one iteration of a rank carries at most (TensorRT-LLM's max_num_tokens, vLLM's
    # max_num_batched_tokens as the role sets it); None: the engine's default
    max_tokens: int | None = None
    # Tokens between two streamed chunks (``ServingEngine.stream_interval``) as the role sets
    # it; None: the engine's default
    stream_interval: int | None = None


@dataclass(frozen=True)
class Deployment:
    arch: ModelArch
    gpu: Gpu
    engine: ServingEngine
    dense: WeightFormat  # attention, dense MLP, shared experts
    moe: WeightFormat  # routed experts
    kv_format: str  # "bf16" or "fp8"
    agg: Role | None = None
    prefill: Role | None = None
    decode: Role | None = None
    notes: tuple[str, ...] = field(default=())
    # Speculative decoding (draft tokens k, acceptance rate a, cost of an iteration over a
    # plain one): k draft tokens (MTP heads or a draft model) verified in one iteration.
    # Cost None: the step model's (k passes of one decoder layer and the LM head, and the
    # verification's k extra tokens per sequence: DeploymentStep.speculative_extra_s)
    speculative: tuple[int, float, float | None] | None = None
    # A static-shape engine's compiled buckets; None: its automatic ones for the lengths
    # served (``Buckets.powers_of_two``), or no padding on an engine without static shapes
    buckets: Buckets | None = None
    # Weights each GPU keeps in CPU memory, GiB (vLLM's and SGLang's --cpu-offload-gb, which
    # count GiB): at most its layer weights (the engines offload layer by layer until the
    # budget is met or no layer is left)
    cpu_offload_gb: float = 0.0
    # CPU memory each GPU gives the KV cache's host tier, GiB (0: none): prefix blocks are
    # written there once computed and loaded back over the host link when a later request
    # shares them and HBM no longer holds them
    kv_offload_gb: float = 0.0

    def spec_yield(self) -> float:
        """Expected tokens per sequence and decode iteration: 1 + a (1 - a^k) / (1 - a)
        (Leviathan et al., ICML 2023, eq. 1); 1 without speculation."""
        if self.speculative is None:
            return 1.0
        k, a, _ = self.speculative
        return 1.0 + (float(k) if a >= 1.0 else a * (1.0 - a**k) / (1.0 - a))

    @property
    def disaggregated(self) -> bool:
        return self.agg is None

    def gpus(self) -> int | None:
        """GPUs of the deployment (None while a role's workers are open)."""
        if self.agg is not None:
            return self.agg.par.gpus * (self.agg.workers or 1)
        assert self.prefill is not None and self.decode is not None
        if self.prefill.workers is None or self.decode.workers is None:
            return None
        return (self.prefill.par.gpus * self.prefill.workers
                + self.decode.par.gpus * self.decode.workers)


def kv_format_for(engine: ServingEngine, dense: WeightFormat) -> str:
    """The engine's KV-cache format for these weights: its quantized format with 8- or 4-bit
    weights, else 16-bit."""
    return engine.kv_format_quantized if dense.name not in ("bf16", "fp16") else "bf16"


def token_budget(engine: ServingEngine, gpu: Gpu) -> int:
    """Tokens one iteration may carry (SGLang's chunk grows on GPUs with 160 GB or more)."""
    if engine.max_num_batched_tokens_160gb and gpu.memory_gb >= 160:
        return engine.max_num_batched_tokens_160gb
    return engine.max_num_batched_tokens


def weight_bytes(dep: Deployment, par: ServingParallel) -> float:
    """Weights one GPU of ``par`` holds, bytes: its shard of the dense layers (16-bit
    embedding and head), its experts, its pipeline stage."""
    c = param_counts(dep.arch)
    heads = padded_heads(dep.arch, dep.gpu, dep.engine, par.tp)
    dense = (c.attention + padding_params(dep.arch, heads) + c.dense_mlp + c.shared_experts
             + c.router + c.norms)
    w = (dense * dep.dense.bytes_per_weight + (c.embedding + c.output) * ACT_BYTES) / par.tp
    if dep.arch.is_moe:
        # Its expert slots (redundant copies where moe_ep does not divide the experts)
        w += (c.experts / dep.arch.experts * par.expert_slots(dep.arch)
              * dep.moe.bytes_per_weight / par.moe_tp)
    return w / par.pp


GIB = float(1 << 30)


def offload_bytes(dep: Deployment, par: ServingParallel) -> float:
    """Weights one GPU of ``par`` keeps in CPU memory, bytes: the deployment's
    ``cpu_offload_gb``, at most its layer weights (embedding and LM head stay in HBM)."""
    if dep.cpu_offload_gb <= 0:
        return 0.0
    return min(dep.cpu_offload_gb * GIB, _layer_weight_bytes(dep, par))


def _layer_weight_bytes(dep: Deployment, par: ServingParallel) -> float:
    """``weight_bytes`` without the embedding and LM head, bytes."""
    c = param_counts(dep.arch)
    return max(weight_bytes(dep, par) - (c.embedding + c.output) * ACT_BYTES / par.tp / par.pp,
               0.0)


def kv_capacity(cat: Catalog, dep: Deployment, par: ServingParallel, isl: int,
                osl: int) -> float:
    """KV-cache tokens one data-parallel rank of ``par`` holds, for requests of ``isl`` +
    ``osl`` tokens (every GPU of the rank holds its shard of the same tokens)."""
    a, g, e = dep.arch, dep.gpu, dep.engine
    w = weight_bytes(dep, par) - offload_bytes(dep, par)
    act = inference_memory(a, 0, 0, "bf16", "bf16", par.tp, par.pp,
                           token_budget(e, g)).activations
    graphs = cat.assumption("inference_cuda_graph_reserve_gb") * GB
    mem = g.visible_memory_bytes
    if e.kv_memory_rule == "free":
        free = (mem - w - act - graphs) * e.kv_memory_fraction
    else:
        free = mem * e.kv_memory_fraction - w - act - graphs
    per_token = kv_token_bytes(dep, par, isl, osl)
    # Each request also holds its recurrent layers' fixed state (SGLang's mamba pool, vLLM's
    # hybrid allocator; 0 without them), here spread over its mean context.
    per_token += recurrent_state_bytes_per_sequence(a) / par.tp / par.pp / (isl + osl / 2.0)
    return max(free, 0.0) / per_token


def kv_token_bytes(dep: Deployment, par: ServingParallel, isl: int, osl: int) -> float:
    """KV-cache bytes one GPU of a rank of ``par`` holds per cached token, for requests of
    ``isl`` + ``osl`` tokens."""
    a = dep.arch
    # Banded layers keep only their window of each request (engines size those layers'
    # pools apart: vLLM's hybrid allocator, TRT-LLM's per-layer attention windows); each
    # layer type's KV heads split over TP until a GPU holds one.
    whole, banded = kv_cache_bytes_per_token_split(a, "fp8" if dep.kv_format == "fp8"
                                                   else "bf16")
    if not a.is_mla:
        whole /= min(par.tp, a.layer_kv_heads(True))
        banded /= min(par.tp, a.layer_kv_heads(False))
    if banded:
        assert a.sliding_window is not None
        banded *= min(1.0, a.sliding_window / (isl + osl / 2.0))
    return (whole + banded) / par.pp


# The serving engines' constants were fitted on NVIDIA GPUs (serving_engines.yaml, the
# serving-silicon rows: H100, B200, GB200) as if every one ran its GEMMs as H100 does. A GEMM
# runs at the efficiency the training model's stack for that silicon gives (stacks.yaml: the
# top of its GEMM curve, and its FP8 ratio for 8- and 4-bit formats), times the GPU's own
# measured FP8 speedup over its stack (gpus.yaml fp8_gemm_speedup: GB300) and its
# power-limited matrix rate (gpus.yaml matrix_rate: MI300X), relative to the Hopper stack's.
# The two independent sources agree where both exist:
# - Blackwell against Hopper, 0.648 / 0.779 = 0.83 (the stacks, fitted on training runs);
#   Azure's cuBLASLt FP8 tables, 8192^3, 2,782 of 5,000 TFLOP/s on ND GB200 v6 (0.556) and
#   1,290 of 1,979 on ND H100 v5 (0.652): 0.85. GB300 at 3,286 of 5,000 (0.657): 1.0, the
#   stack's 0.83 x its 1.18.
# - MI300X in FP8, 0.455 against 0.682, times its matrix rate 0.852: 0.57; Azure measures
#   1,159 of 2,615 TFLOP/s (0.44) at 8192^3 with hipBLASLt on ND MI300X v5, 1,015-1,029
#   (0.39) at 16384^3 and 32768^3, and 1,382 of 1,979 (0.70) on ND H100 v5: 0.63 and 0.56.
# An engine fitted on another vendor's parts (``ServingEngine.vendors``: AWS Neuron) runs at
# its fitted rate there.
HOPPER_REFERENCE_GPU = "h100-sxm"


def _rate_said(gpu: Gpu) -> str:
    """The part's power-limited matrix rate, where it has one, for a factor's source."""
    return "" if gpu.matrix_rate == 1.0 else (
        f", x {gpu.matrix_rate:.3g} for {gpu.id}'s power-limited matrix rate")


def silicon_gemm(cat: Catalog, gpu: Gpu, compute: Dtype,
                 engine: ServingEngine | None = None) -> tuple[float, str]:
    """GEMM rate of ``gpu`` in ``compute`` relative to the serving engine's fitted one (its
    rate on H100), and the training stacks it comes from ('' where the factor is 1 by
    construction: the reference's stack, or the accelerators an engine naming its vendors was
    fitted on)."""
    if engine is not None and engine.vendors and gpu.vendor in engine.vendors:
        return 1.0, ""
    own, ref = cat.stack_for_gpu(gpu.id), cat.stack_for_gpu(HOPPER_REFERENCE_GPU)
    narrow = compute in (Dtype.fp8, Dtype.fp4)
    # A stack that states no FP8 ratio gives no evidence of one apart from Hopper's.
    ref_ratio = ref.fp8_gemm_ratio or 1.0

    def top(st: Stack) -> float:
        return max(y for _, y in st.gemm_efficiency) * (
            (st.fp8_gemm_ratio or ref_ratio) if narrow else 1.0)

    # The measured speedup is FP8's only: the same tables' FP4 ratios give no clean factor.
    speedup = (gpu.fp8_gemm_speedup if compute == Dtype.fp8 else 1.0) * gpu.matrix_rate
    if own.id == ref.id and speedup == 1.0:
        return 1.0, ""
    return top(own) / top(ref) * speedup, f"{own.id} against {ref.id}" + _rate_said(gpu)


def moe_speedup(engine: ServingEngine, gpu: str, fmt: WeightFormat
                ) -> tuple[float, str] | None:
    """The engine's routed-expert GEMMs in ``fmt`` on ``gpu`` as fast as BF16's times the
    first of its measured speed-ups (``ServingEngine.moe_format_speedup``) that exists: the
    format's on this GPU; another format's of the same compute lane on this GPU; the median
    over the GPUs measured in the format, then in the lane. With where it comes from ('' for
    the format's own on this GPU); None for a 16-bit lane or an engine without measurements
    (its experts compute at the format's peak)."""
    table = engine.moe_format_speedup
    if not table or fmt.compute not in (Dtype.fp8, Dtype.fp4):
        return None
    lane = sorted(f for f, (d, _) in FORMATS.items() if d == fmt.compute and f != fmt.name)
    if (own := engine.moe_speedup_over_bf16(gpu, fmt.name)) is not None:
        return own, ""
    for f in lane:
        if (v := engine.moe_speedup_over_bf16(gpu, f)) is not None:
            return v, f"its {f} kernels' on {gpu}"
    for names, what in (([fmt.name], fmt.name), (lane, f"{fmt.compute.value.upper()}-lane")):
        vals = {g: v for g in sorted(table) for f in names
                if (v := engine.moe_speedup_over_bf16(g, f)) is not None}
        if vals:
            return (statistics.median(vals.values()),
                    f"the median of its {what} kernels' on {', '.join(sorted(vals))}")
    return None


def silicon_moe_gemm(cat: Catalog, gpu: Gpu, fmt: WeightFormat,
                     engine: ServingEngine | None = None) -> float:
    """Routed-expert GEMM rate of ``gpu`` in ``fmt`` relative to the engine's fitted one, as
    a factor on the format's own peak: ``silicon_gemm``'s, or, for an engine whose kernels
    were measured in the narrow formats (``moe_speedup``), the BF16 lane's rate times the
    measured speed-up over BF16, over the format's peak ratio to BF16's (SGLang's FP8-block
    experts on B200: 0.81 / 2)."""
    got = moe_speedup(engine, gpu.id, fmt) if engine is not None else None
    if got is None:
        return silicon_gemm(cat, gpu, fmt.compute, engine)[0]
    lane = format_peak_tflops(gpu, fmt.compute) / format_peak_tflops(gpu, Dtype.bf16)
    return silicon_gemm(cat, gpu, Dtype.bf16, engine)[0] * got[0] / lane


def silicon_attention(cat: Catalog, gpu: Gpu, engine: ServingEngine | None = None
                      ) -> tuple[float, str]:
    """Prefill-attention rate of ``gpu`` relative to the serving engine's, as a fraction of
    each part's 16-bit peak, for an engine whose attention is a kernel's measured rate on
    Hopper (``attention_from_hopper``; 1 for the others, fitted on every GPU's rows). From
    the training stacks, as ``silicon_gemm`` takes GEMMs: the stack's forward attention
    efficiency on this silicon (times the part's measured attention speedup over its die's
    sibling) over Hopper's. Blackwell's 2025 stack runs attention at 0.30 of its peak
    against Hopper's 0.50: FlashAttention-3's kernels are Hopper's own, and Blackwell's
    before FlashAttention-4 (cuDNN 9.13, Triton) ran 1.3-2.7x below its 71 % of the peak
    ("FlashAttention-4", arXiv 2603.05451; Together AI's blog, 2026-03)."""
    if engine is None or not engine.attention_from_hopper or (
            engine.vendors and gpu.vendor in engine.vendors):
        return 1.0, ""
    own, ref = cat.stack_for_gpu(gpu.id), cat.stack_for_gpu(HOPPER_REFERENCE_GPU)
    speedup = gpu.attention_fwd_speedup * gpu.matrix_rate
    if own.id == ref.id and speedup == 1.0:
        return 1.0, ""
    return (own.attention_efficiency * speedup / ref.attention_efficiency,
            f"{own.id} against {ref.id}" + _rate_said(gpu))


def step_model(cat: Catalog, dep: Deployment, par: ServingParallel,
               field_prefix: str = "", max_len: int | None = None,
               batch: int | None = None) -> DeploymentStep:
    """The iteration-time model of one data-parallel rank of ``par``. For a static-shape
    engine: ``max_len``, the longest sequence served (tokens), bounds its automatic buckets,
    and ``batch`` is the compiled batch every decode step runs (default: the engine's)."""
    stack = cat.stack_for_gpu(dep.gpu.id)
    srv = server_for(cat, dep.gpu)
    net = net_for(cat, dep.gpu, stack, srv)
    try:
        par.check(dep.arch, field_prefix, dep.engine.pads_heads)
    except InputError as exc:
        raise DeploymentError(str(exc), field=exc.field) from None
    static = dep.engine.static_buckets
    buckets = (dep.buckets or Buckets.powers_of_two(max_len or dep.arch.max_seq_len)
               if static else None)
    share, host = 0.0, 0.0
    off = offload_bytes(dep, par)
    if off > 0:
        # serving_engine.deployment refuses an offload on a GPU without CPU memory behind it
        share, host = off / _layer_weight_bytes(dep, par), host_read_bps(cat, dep.gpu)
    # The GPU at the clock its catalog server leaves it (the server the network is read from).
    gpu = in_server(dep.gpu, srv)
    return DeploymentStep(dep.arch, dep.gpu, dep.engine, net, par, dep.dense, dep.moe,
                          kv_bytes_per_token(dep.arch, dep.kv_format),
                          silicon_gemm(cat, gpu, dep.dense.compute, dep.engine)[0],
                          silicon_moe_gemm(cat, gpu, dep.moe, dep.engine),
                          buckets, (batch or dep.engine.max_batch) if static else None,
                          offload_share=share, host_read_bps=host,
                          attention_factor=silicon_attention(cat, gpu, dep.engine)[0],
                          mla_kernel=(dep.engine.mla_decode_rates(dep.gpu.id, dep.kv_format)
                                      if dep.arch.is_mla else None))


def host_read_bps(cat: Catalog, gpu: Gpu) -> float:
    """Bytes/s at which ``gpu`` reads its CPU's memory: the coherent link's per-direction
    rate at its measured efficiency (assumption ``host_link_read_efficiency``), at most the
    CPU memory's bandwidth share; 0 without CPU memory behind a coherent link."""
    hm = gpu.host_memory
    if hm is None:
        return 0.0
    link = hm.link_gbps_per_direction * cat.assumption("host_link_read_efficiency")
    return min(link, hm.memory_bandwidth_gbps) * GB


def host_kv_link(cat: Catalog, gpu: Gpu) -> tuple[float, str]:
    """Bytes/s at which ``gpu`` copies KV blocks from its CPU's memory, and the link's name:
    a Grace superchip's NVLink-C2C (``host_read_bps``), else its PCIe x16 port at the
    measured copy-engine efficiency (assumption ``pcie_host_read_efficiency``)."""
    if gpu.host_memory is not None:
        return host_read_bps(cat, gpu), gpu.host_memory.link
    return (pcie_bytes_per_s(gpu.pcie_gen) * cat.assumption("pcie_host_read_efficiency"),
            f"PCIe Gen{gpu.pcie_gen} x16")


def host_memory_gib(cat: Catalog, gpu: Gpu) -> tuple[float, str] | None:
    """CPU memory one GPU can use, GiB, and where the figure comes from: a superchip's own
    (``host_memory``, decimal GB), else its catalog server's DRAM over its GPUs (the catalog
    records DIMM capacity, GiB); None when neither is known."""
    if gpu.host_memory is not None:
        return gpu.host_memory.memory_gb * GB / GIB, f"{gpu.id}'s CPU memory"
    srv = server_for(cat, gpu)
    if srv is None:
        return None
    return srv.dram_gb / srv.gpus, f"{srv.id}: {srv.dram_gb:g} GiB over {srv.gpus} GPUs"


def host_kv_tier(cat: Catalog, dep: Deployment, par: ServingParallel, isl: int,
                 osl: int, block_tokens: int) -> tuple[int, float]:
    """The host tier of one data-parallel rank: blocks of ``block_tokens`` tokens it holds
    (``dep.kv_offload_gb`` on every GPU of the rank, each holding its shard), and the seconds
    one block takes to load back to HBM (the rank's GPUs load their shards in parallel, one
    DMA copy each: ``model/host_link``). (0, 0.0) without a host tier."""
    if dep.kv_offload_gb <= 0:
        return 0, 0.0
    block = block_tokens * kv_token_bytes(dep, par, isl, osl)
    rate, _ = host_kv_link(cat, dep.gpu)
    blocks = int(dep.kv_offload_gb * GIB // block)
    return blocks, block_copy_s(block, rate, cat.assumption("host_copy_latency_s"))


# A planner evaluating many deployments of one model, GPU, engine and formats passes a dict
# here: step models and KV capacities per (layout, lengths) are built once.
PoolCache = dict[tuple[ServingParallel, int, int, int | None], tuple[DeploymentStep, float]]


def pool(cat: Catalog, dep: Deployment, par: ServingParallel, workers: int, isl: int,
         osl: int, field_prefix: str = "", cache: PoolCache | None = None,
         equal_lengths: bool = True, max_batch: int | None = None,
         max_tokens: int | None = None) -> Pool:
    """The ``workers`` x ``par.adp`` data-parallel ranks of one role, ready to solve.
    ``equal_lengths``: the clients send prompts of one length for outputs of one length (a
    closed-loop benchmark such as AIPerf with fixed lengths), which a prefill-priority engine
    keeps in lockstep and other engines in clusters (``arrival_burst``); a client drawing
    lengths from a range does neither."""
    key = (par, isl, osl, max_batch)
    if cache is not None and key in cache:
        step, kv = cache[key]
    else:
        step = step_model(cat, dep, par, field_prefix, isl + osl, max_batch)
        kv = kv_capacity(cat, dep, par, isl, osl)
        if cache is not None:
            cache[key] = (step, kv)
    if kv < isl + 1:
        off = offload_bytes(dep, par)
        raise DeploymentError(
            f"{field_prefix}tp: the weights leave no room for one request's KV cache on "
            f"tp {par.tp} x attention-DP {par.adp} x pp {par.pp} {dep.gpu.id} "
            f"({weight_bytes(dep, par) / GB:.0f} GB of weights per GPU"
            + (f", {off / GB:.0f} GB of them offloaded to CPU memory" if off else "") + ")",
            field=field_prefix + "tp")
    e = dep.engine
    budget = max_tokens or token_budget(e, dep.gpu)
    if e.adp_divides_budget and par.adp > 1:
        # SGLang splits its chunked-prefill size over the attention-DP ranks.
        budget = max(1, budget // par.adp)
    return Pool(step=step, ranks=par.adp * workers, budget=budget,
                chunked=e.chunked_prefill, admission=e.admission, kv_tokens=kv,
                max_seqs=max_batch or e.max_batch, frontend_s=e.frontend_s,
                # Requests admitted together come back together only when every request has
                # the same lengths: clients drawing lengths from a range drift apart
                burst=e.arrival_burst if equal_lengths else 0.0,
                first_token_iterations=e.first_token_iterations,
                context_wait_iterations=e.adp_context_wait_iterations if par.adp > 1 else 0.0,
                # TensorRT-LLM waits only without attention DP (attention_dp_config instead)
                balance_timeout=e.adp_balance_timeout_iterations if par.adp > 1 else 0,
                balance_ranks=par.adp,
                batch_wait_iterations=e.batch_wait_iterations if par.adp == 1 else 0,
                batch_wait_tokens=e.batch_wait_tokens_ratio * budget,
                # SGLang's request polling does not run with attention DP
                recv_interval=e.scheduler_recv_interval if par.adp == 1 else 1,
                spec_yield=dep.spec_yield(),
                spec_cost=dep.speculative[2] if dep.speculative else 1.0,
                spec_draft=dep.speculative[0] if dep.speculative else 0,
                lockstep=equal_lengths and e.prompts_first,
                prefill_first=e.prompts_first)


def size_workers(cat: Catalog, dep: Deployment, clients: float, isl: int, osl: int,
                 cache: PoolCache | None = None) -> tuple[int, int, str]:
    """Prefill and decode worker counts: the deployment's, or where it leaves them open, the
    smallest that serve ``clients``: decode workers that hold every client within the
    engine's batch and KV limits, prefill workers that keep up with their completions below
    PREFILL_TARGET_UTIL. The note says what was sized ("" when nothing was)."""
    assert dep.prefill is not None and dep.decode is not None
    pw, dw = dep.prefill.workers, dep.decode.workers
    if pw is not None and dw is not None:
        return pw, dw, ""
    note = []
    if dw is None:
        one = pool(cat, dep, dep.decode.par, 1, isl, osl, "decode.", cache,
                   max_batch=dep.decode.max_batch)
        per_req = isl + (osl if one.admission == "reserve" else osl / 2.0)
        cap = min(one.max_seqs, math.floor(one.kv_tokens / per_req)) * one.ranks
        dw = max(1, math.ceil(clients / max(cap, 1)))
        note.append(f"{dw} decode worker(s)")
    if pw is None:
        dec = pool(cat, dep, dep.decode.par, dw, isl, osl, "decode.", cache,
                   max_batch=dep.decode.max_batch)
        pre = pool(cat, dep, dep.prefill.par, 1, isl, osl, "prefill.", cache,
                   max_batch=dep.prefill.max_batch, max_tokens=dep.prefill.max_tokens)
        b = clients / dec.ranks
        tpot = dec.step.step_s(0, max(1, round(b)), b * (isl + osl / 2.0))
        t1 = prefill_batch_s(pre, 1.0, isl)
        rate = clients / (max(osl - 1, 1) * tpot + t1)
        # A rank batches the prompts that gather (``disaggregated``): at batches filling
        # PREFILL_TARGET_UTIL of the budget it takes j / t(j) prompts a second.
        j = max(1.0, PREFILL_TARGET_UTIL * prompts_per_batch(pre, isl))
        tj = prefill_batch_s(pre, j, isl)
        per_rank = max(j / tj, PREFILL_TARGET_UTIL / t1)
        pw = max(1, math.ceil(rate / (pre.ranks * per_rank)))
        note.append(f"{pw} prefill worker(s)")
    return pw, dw, "sized " + " and ".join(note)


def kv_link_bytes_per_s(dep: Deployment, prefill: Pool, gpus: int) -> float:
    """Bandwidth a request's KV cache crosses from its prefill rank to a decode rank: the
    prefill rank's tp GPUs over NVLink when the whole deployment sits in one NVLink domain
    (a GB200 NVL72 rack), else over their NICs; at the engine's transfer efficiency."""
    assert dep.prefill is not None
    net = prefill.step.net  # type: ignore[attr-defined]
    per_gpu = net.scale_up_busbw if gpus <= net.domain_gpus else net.net_busbw
    return float(per_gpu * dep.prefill.par.tp * dep.engine.kv_transfer_efficiency)


def first_chunk_tokens(dep: Deployment) -> int:
    """Tokens after the prefill worker's token that a disaggregated deployment's client
    waits for its first one (``ServingEngine.disagg_first_token``): the decode workers'
    stream interval where the first token comes with their first streamed chunk, else 0."""
    if dep.decode is None or dep.engine.disagg_first_token != "decode_chunk":
        return 0
    return dep.decode.stream_interval or dep.engine.stream_interval


def steady(cat: Catalog, dep: Deployment, clients: float, isl: int, osl: int,
           cache: PoolCache | None = None, equal_lengths: bool = True, rounds: float = 0.0
           ) -> tuple[SteadyState, Deployment]:
    """Mean TTFT and TPOT of ``clients`` closed-loop clients sending ``isl``-token prompts
    for ``osl`` tokens each (every request those lengths, or with ``equal_lengths`` False,
    lengths drawn around those means), and the deployment as solved (worker counts sized
    where open). ``rounds`` > 0: TTFT is the mean over a benchmark of that many requests per
    client that starts every client at once on an idle deployment (its first round is a
    wave of prompts); 0: the steady state alone."""
    if clients <= 0 or isl < 1 or osl < 1:
        raise InputError("clients, input and output lengths must be positive",
                         field="concurrency")
    try:
        if dep.agg is not None:
            p = pool(cat, dep, dep.agg.par, dep.agg.workers or 1, isl, osl, "", cache,
                     equal_lengths, dep.agg.max_batch, dep.agg.max_tokens)
            return aggregated(p, clients, isl, osl, rounds), dep
        assert dep.prefill is not None and dep.decode is not None
        pw, dw, note = size_workers(cat, dep, clients, isl, osl, cache)
        solved = replace(dep, prefill=replace(dep.prefill, workers=pw),
                         decode=replace(dep.decode, workers=dw),
                         notes=dep.notes + ((note,) if note else ()))
        pre = pool(cat, solved, dep.prefill.par, pw, isl, osl, "prefill.", cache,
                   equal_lengths, dep.prefill.max_batch, dep.prefill.max_tokens)
        dec = pool(cat, solved, dep.decode.par, dw, isl, osl, "decode.", cache, equal_lengths,
                   dep.decode.max_batch, dep.decode.max_tokens)
        gpus = solved.gpus() or 0
        link = kv_link_bytes_per_s(solved, pre, gpus)
        kv_bytes = kv_bytes_per_token(dep.arch, dep.kv_format)
        return disaggregated(pre, dec, clients, isl, osl, kv_bytes, link,
                             overhead_s=dep.engine.disagg_overhead_s, rounds=rounds,
                             first_chunk_tokens=first_chunk_tokens(dep)), solved
    except ValueError as exc:
        raise DeploymentError(str(exc), field="concurrency") from None


def _parts(g: StepParts) -> dict[str, float]:
    return {"dense": g.dense_s, "experts": g.experts_s, "attention": g.attention_s,
            "communication": g.comm_s, "fixed": g.fixed_s}


def iteration_breakdown(cat: Catalog, dep: Deployment, isl: int, osl: int,
                        decode_batch: float) -> dict[str, Any]:
    """Where a rank's iterations spend their time, in seconds: one prompt of ``isl`` tokens
    alone on a prefill (or the aggregated) rank, and a decode iteration of ``decode_batch``
    sequences a rank at their mean context, ``isl`` + ``osl`` / 2 tokens (as the steady
    state has them), on a decode (or the aggregated) rank. Each iteration's GPU time by
    ``StepParts``, the host's work for the running sequences where it is not hidden
    behind the GPU's, and a speculative iteration's verification and drafts."""
    pre_role = dep.agg or dep.prefill
    dec_role = dep.agg or dep.decode
    assert pre_role is not None and dec_role is not None
    pre_step = step_model(cat, dep, pre_role.par, max_len=isl + osl, batch=pre_role.max_batch)
    dec_step = step_model(cat, dep, dec_role.par, max_len=isl + osl, batch=dec_role.max_batch)
    # The batch as the steady state's decode iteration has it: whole sequences, the
    # context of the (mean) batch
    d = float(max(1, round(decode_batch)))
    kv = max(decode_batch, 1e-9) * (isl + osl / 2.0)
    gpu = dec_step.gpu_parts(0, d, kv)
    plain = dec_step.step_s(0, d, kv)
    spec = 0.0
    if dep.speculative is not None:
        draft, _, cost = dep.speculative
        spec = speculative_iteration_s(dec_step, plain, d, kv, cost, draft) - plain
    prompt = pre_step.gpu_parts(isl, 0, 0)
    return {
        "prefill": {"prompt_tokens": isl, "iteration_s": pre_step.step_s(isl, 0, 0),
                    "parts_s": _parts(prompt)},
        "decode": {"batch_per_rank": d, "context_tokens": isl + osl / 2.0,
                   "iteration_s": plain + spec, "tokens_per_iteration": dep.spec_yield(),
                   "parts_s": {**_parts(gpu), "host": plain - gpu.total_s,
                               "speculative": spec}},
    }


__all__ = ["Deployment", "DeploymentError", "Role", "host_read_bps", "iteration_breakdown",
           "kv_capacity", "kv_format_for", "offload_bytes", "pool", "size_workers", "steady",
           "step_model", "token_budget", "weight_bytes"]
