"""Pydantic models of the catalog's software entries, each with its calibration: training
stacks (a GPU plus framework: achieved efficiencies and features), collective libraries
(NCCL's tuner constants), inference engines (scheduler and kernel constants), and the
validation's record of how far the training model was off per regime and the best MFU seen.

Units are in field names where they are not SI (``_us`` microseconds, ``_gbps`` GB/s as the
library writes them); efficiencies are fractions of the datasheet's peak. Every entry cites
its ``source`` and names its ``calibration``.
"""

from __future__ import annotations

import functools
import re
import statistics
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictStr, model_validator

from clusterwright.catalog.schema import CatalogEntry, EntryId, Share
from clusterwright.spec.numbers import (
    FiniteFloat,
    NonNegativeFloat,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
)

Protocols = tuple[NonNegativeFloat, NonNegativeFloat, NonNegativeFloat]  # LL, LL128, Simple
Tiered = tuple[NonNegativeFloat, NonNegativeFloat, NonNegativeFloat]  # 1 node, 2 nodes, more


class CollectiveLib(CatalogEntry):
    """A collective library's cost model for one GPU architecture: NCCL's (or RCCL's) own
    tuner constants (NVIDIA/nccl ``src/graph/tuning.cc``), read from a stated release, plus the
    few numbers its tuner leaves out (launch floor, all-to-all per-peer cost), each fitted on
    measured nccl-tests curves named in ``calibration``. Latencies in microseconds and
    bandwidths in GB/s as the library writes them; ``model/collectives.py`` converts.
    """

    library: Literal["nccl", "rccl", "xla", "neuron", "hccl"]
    version: StrictStr
    arch: Literal["ampere", "hopper", "blackwell", "cdna3", "cdna4", "tpu", "trainium", "gaudi"]
    # Per algorithm: (LL, LL128, Simple). base = per call; nvlink/net = per hop on that tier.
    base_lat_us: dict[Literal["ring", "tree", "pat"], Protocols]
    nvlink_lat_us: dict[Literal["ring", "tree", "nvls", "pat"], Protocols]
    net_lat_us: dict[Literal["ring", "tree", "nvls", "nvlstree", "pat"], Protocols]
    net_overhead_us: NonNegativeFloat  # per intra-node step of a multi-node ring (x3 Simple)
    ring_simple_multinode_lat_factor: Annotated[FiniteFloat, Field(ge=1)]  # the "plateau" factor
    ll_bw_factor: Share  # LL moves 8 B lines with 4 B of data
    ll_max_busbw_gbps: Tiered  # llMaxBws by node count (x86 Intel hosts beyond one node)
    ll128_bw_factor: Share  # 120 of 128 B per line
    ll128_max_channel_gbps: PositiveFloat
    tree_bw_factor: Share
    tree_max_channel_gbps: Tiered
    tree_ll_divisor: PositiveFloat
    tree_ll128_factor: tuple[PositiveFloat, PositiveFloat]  # one node, several nodes
    # treeCorrectionFactor[proto][log2(bytes / 64)], 64 B .. 512 MB (24 points each)
    tree_correction: dict[Literal["ll", "ll128", "simple"], list[PositiveFloat]]
    pat_bw_factor: Share
    pat_per_rank_us: NonNegativeFloat
    pat_net_divisor: PositiveFloat
    channels: PositiveInt  # ring/tree channels of a full scale-up domain
    # A call uses fewer channels while bytes < channels x threads x threshold (enqueue.cc).
    thread_threshold: Protocols
    max_threads: Protocols
    # Not in the tuner: the per-call floor beyond its latencies (host launch and kernel start),
    # and the per-peer cost of all-to-all (NCCL runs it as grouped send/recv, not a ring).
    launch_us: NonNegativeFloat
    # Per network hop beyond the tuner's table (NCCL's graph->latencyInter: NIC, switches,
    # proxy thread), added like NCCL adds latencyInter (twice for Simple).
    net_hop_us: NonNegativeFloat = 0.0
    alltoall_peer_us: tuple[NonNegativeFloat, NonNegativeFloat]  # inside a domain, across
    calibration: StrictStr

    @model_validator(mode="after")
    def _tables(self) -> CollectiveLib:
        for proto, row in self.tree_correction.items():
            if len(row) != 24:
                raise ValueError(
                    f"tree_correction.{proto}: 24 points (64 B .. 512 MB), got {len(row)}")
        return self


class ServingEfficiency(BaseModel):
    """What an inference engine achieves on a GPU (model/inference.py), with its calibration."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    engine: StrictStr  # the engine the numbers were measured with
    decode_bandwidth_efficiency: Share  # of HBM, streaming
    step_overhead_s: NonNegativeFloat  # per iteration: scheduling, sampling, launches
    # Per transformer layer per iteration: kernel gaps and TP synchronisation that do not shrink
    # with the shard, so efficiency falls as TP grows and shards get small.
    layer_overhead_s: NonNegativeFloat = 0.0
    # Decode attention reads each KV head once for its whole query group (GQA-aware kernels:
    # TensorRT-LLM XQA, FlashAttention/FlashInfer decode). False models engines whose masked
    # MHA kernel re-reads a KV head for every query head (TensorRT-LLM before XQA, v0.7/0.8).
    gqa_kv_reuse: StrictBool = True
    # The engine's GEMMs against its GEMM curve, at the serving precision
    gemm_scale: Annotated[FiniteFloat, Field(gt=0, le=1.5)] = 1.0
    # The engine's own kernel curve and attention efficiency (the calibration's inputs): the
    # training constants of the same stack are refitted against training runs and must not
    # move serving predictions silently. None: the stack's training values.
    gemm_efficiency: list[tuple[FiniteFloat, FiniteFloat]] | None = None
    attention_efficiency: Share | None = None
    # The calibrated engine's scheduler: estimates run with it unless the user overrides.
    admission: Literal["evict", "reserve"] = "evict"  # vLLM preempts; TRT-LLM reserves
    max_num_seqs: PositiveInt = 256  # vLLM's default; TRT-LLM builds default to 2,048
    # How the engine's memory fraction (assumption inference_gpu_memory_utilization) applies:
    # "total" caps all memory (vLLM), "free" takes that fraction of what weights and
    # activations leave (TensorRT-LLM kv_cache_free_gpu_mem_fraction).
    kv_memory_rule: Literal["total", "free"] = "total"
    # TP all-reduce and EP all-to-all inside the NVLink domain, as the engines run them inside
    # CUDA graphs (no per-call launch): a base latency and one per NVLink step, microseconds.
    # NCCL 2.18's Simple-protocol ring constants (tuning.cc baseLat 6.8 + 1.6 us, hwLat NVLink
    # 3.4 us), which every serving calibration here was fitted with.
    collective_base_us: NonNegativeFloat = 8.4
    collective_step_us: NonNegativeFloat = 3.4
    calibration: StrictStr


CpComm = Literal["p2p", "allgather", "a2a"]
Schedule = Literal["1f1b", "zb", "dualpipe"]
EpOverlap = Literal["none", "1f1b", "dualpipe"]
# MoE token dispatchers: NCCL all-to-all (one transfer per routed copy), or DeepEP/HybridEP
# (one network transfer per distinct destination domain, forwarded over NVLink inside it).
EpDispatcher = Literal["alltoall", "deepep"]
Fp8Recipe = Literal["delayed", "current", "blockwise", "mx"]


class StackFeatures(BaseModel):
    """What a training framework can do. An option outside these is an input error naming the
    option; where a list is given, its first entry is what the framework does by default."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tp_comm_overlap: StrictBool = False  # TP collectives pipelined with GEMMs (TE userbuffers)
    overlap_grad_reduce: StrictBool = False  # DP gradient buckets reduced during backward
    overlap_param_gather: StrictBool = False  # distributed-optimizer all-gather under next forward
    overlap_p2p: StrictBool = False  # pipeline sends overlapped with compute
    context_parallel: list[CpComm] = Field(default_factory=list)  # empty: no CP
    schedules: list[Schedule] = Field(default_factory=lambda: list[Schedule](["1f1b"]))
    interleaved: StrictBool = True  # virtual pipeline stages
    ep_overlap: list[EpOverlap] = Field(default_factory=lambda: list[EpOverlap](["none"]))
    ep_dispatchers: list[EpDispatcher] = Field(
        default_factory=lambda: list[EpDispatcher](["alltoall"]))
    distributed_optimizer: StrictBool = True  # ZeRO-1/2
    zero3: StrictBool = False  # ZeRO-3 / FSDP
    zero3_with_pp: StrictBool = False
    hsdp: StrictBool = False  # hybrid sharding: shard in a group, replicate across groups
    zeropp: StrictBool = False  # ZeRO++ (hpZ, qwZ, qgZ)
    # A fused attention kernel the framework has but does not run unless asked (Optimum
    # Habana's --use_flash_attention): the stack's flash_attention is its default, this the
    # choice a run may make (train estimate --flash-attention)
    fused_attention_optional: StrictBool = False
    fp8_recipes: list[Fp8Recipe] = Field(default_factory=list)  # empty: no FP8 training
    dp_bucket_params: PositiveFloat = 4.0e7  # gradient bucket (Megatron-Core default)
    # ZeRO-3 collectives per layer and pass: 1 when a layer's parameters are gathered as one
    # flat buffer (FSDP units, Megatron-FSDP); one per parameter tensor when the framework
    # gathers tensor by tensor (DeepSpeed ZeRO-3 of 2021), each paying the ring latency.
    zero3_collectives_per_layer: PositiveInt = 1
    # Share of the ring's bus bandwidth the framework's ZeRO-3 collectives reach (1: NCCL's,
    # as FSDP's flat per-layer buffers do; DeepSpeed's 2021 partition gathers reached less).
    zero3_busbw_fraction: Share = 1.0
    # Host seconds each ZeRO-3 parameter fetch adds, serialized with the layer's compute: one
    # fetch per layer and pass (forward, the full recompute's forward, backward). DeepSpeed's
    # fetch_sub_module gathers a submodule's parameters synchronously before its hook returns
    # (DeepSpeed PR #1188: "the async version is not async at all"; issues #1174, #5047:
    # ZeRO-3's forward 8x ZeRO-2's on 8 x A100, its gathers fragmented and not overlapped),
    # and on a lazy-mode device each fetch also cuts the graph being built. 0 where the
    # gathers are prefetched on a side stream (FSDP units, Megatron-FSDP, XLA).
    zero3_fetch_s: Annotated[FiniteFloat, Field(ge=0, le=1)] = 0.0

    @model_validator(mode="after")
    def _defaults_first(self) -> StackFeatures:
        if not self.schedules or not self.ep_overlap or not self.ep_dispatchers:
            raise ValueError("schedules, ep_overlap and ep_dispatchers list at least one entry")
        return self


class Stack(CatalogEntry):
    """A GPU plus software stack (framework, libraries) with its achieved efficiencies.

    Calibrated once per GPU and stack against published runs and microbenchmarks, never per
    validation row; ``calibration`` says against what.
    """

    gpus: list[EntryId] = Field(min_length=1)  # GPU ids this stack applies to
    # (log10 of one GEMM's FLOPs, achieved fraction of dense peak), ascending: 16-bit GEMMs
    gemm_efficiency: list[tuple[FiniteFloat, Share]] = Field(
        min_length=2)
    # FP8 GEMMs reach this share of the fraction of peak that 16-bit GEMMs of the same size
    # reach (FP8's peak is twice 16-bit's, so 0.75 makes FP8 GEMMs 1.5x faster). A property
    # of the tensor cores and the FP8 GEMM kernels, fitted on measured FP8-vs-BF16 pairs.
    # Above 1 where a part's two datasheet peaks are equal but 16-bit GEMMs sustain less of
    # theirs (Gaudi 3: 1,835 TFLOP/s for both; its BF16 matrix work throttles on power).
    # None: no FP8 calibration (the 16-bit curve stands in, and estimates say so).
    fp8_gemm_ratio: Annotated[FiniteFloat, Field(gt=0, le=2)] | None = None
    attention_efficiency: Share  # attention core forward
    attention_bwd_efficiency: Share | None = None  # None: = fwd
    flash_attention: StrictBool  # fused attention kernels (no s^2 activations, causal half FLOPs)
    memory_efficiency: Share  # of HBM bandwidth, elementwise ops
    scale_up_busbw_fraction: Share  # NCCL busbw / link rate
    nic_busbw_fraction: Share  # NCCL busbw / NIC line rate
    # NVLink SHARP all-reduce busbw / link rate inside one domain; 0 when the switch has none.
    # It can exceed 1: the switch reduces, so busbw's 2(n-1)/n factor overstates the traffic.
    nvls_busbw_fraction: Annotated[FiniteFloat, Field(ge=0, le=1.5)] = 0.0
    collectives: EntryId  # the collective library (and version) this stack runs
    features: StackFeatures = Field(default_factory=StackFeatures)
    # Compute slowed while a collective runs beside it (its kernels take SMs and memory
    # bandwidth): seconds of compute lost per second of hidden communication.
    overlap_slowdown: Annotated[FiniteFloat, Field(ge=0, le=1)] = 0.0
    # Host-side floor of one layer's forward or backward on one micro-batch: its kernels are
    # launched one by one from Python, so a layer never takes less than its launches however
    # small its work (MoE layers launch several times more kernels: router, permutation,
    # grouped GEMMs, dispatch). Seconds per layer per pass; 0 where CUDA graphs remove it.
    layer_launch_s: NonNegativeFloat = 0.0
    moe_layer_launch_s: NonNegativeFloat = 0.0
    # What an MoE layer's floor adds per expert on the GPU: Transformer Engine's GroupedLinear
    # runs one cuBLAS GEMM per local expert on several streams and allocates and casts each
    # expert's slice from Python (TE PR #853; TE issue #1499: torch.split and 2 x num_gemms
    # torch.empty under fused_multi_cast_transpose), so the host's share of the layer grows
    # with the experts each GPU holds (E / ep). Seconds per local expert per pass.
    moe_expert_launch_s: NonNegativeFloat = 0.0
    step_overhead_s: NonNegativeFloat = 0.0  # per step: data loading, logging, launch
    calibration: StrictStr
    serving: ServingEfficiency | None = None  # inference engine efficiencies, when calibrated

    @model_validator(mode="after")
    def _curve(self) -> Stack:
        xs = [x for x, _ in self.gemm_efficiency]
        if xs != sorted(xs) or len(set(xs)) != len(xs):
            raise ValueError("gemm_efficiency points must have strictly ascending log10 FLOPs")
        return self


class EngineRegime(BaseModel):
    """How an engine's model did on the measured rows of one GPU and serving mode of
    validation/serving_silicon.csv, or of the held-out serving_silicon_aic012.csv
    (generated by scripts/calibrate_serving_engines.py --regimes; a test keeps it in step
    with the model)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    gpu: EntryId
    mode: Literal["agg", "disagg"]
    # The rows are of the held-out file, which no constant was fitted on: its error is the
    # model's on configurations it has not seen. An estimate takes the fitted file's regime
    # where one exists, else this one (H200, B300, GB300 and the engines' other modes).
    held_out: bool = False
    # The models' kind the rows measured: dense, or MoE (routed experts, whose kernels and
    # dispatch the engines run differently); None: both, as in a user catalog written before
    # the split
    family: Literal["dense", "moe"] | None = None
    rows: PositiveInt
    ttft_mape: Annotated[FiniteFloat, Field(ge=0)]
    tpot_mape: Annotated[FiniteFloat, Field(ge=0)]
    # The median signed error, (model - measured) / measured, which way the model misses most
    # rows (None: not recorded, as in a user catalog written before it existed)
    ttft_median_error: Annotated[FiniteFloat, Field(ge=-1)] | None = None
    tpot_median_error: Annotated[FiniteFloat, Field(ge=-1)] | None = None
    # The longest prompt among those rows, tokens (None: not recorded): a longer one is
    # outside what they checked
    max_input_len: PositiveInt | None = None
    # One aggregated layout's rows, tensor parallel x attention data parallel per replica
    # (both None: every layout pooled). The error moves with the layout: dense models on B200
    # under vLLM, TPOT median -11 % at TP 1 and +21 % at TP 8.
    tp: PositiveInt | None = None
    attention_dp: PositiveInt | None = None
    # The 10th and 90th percentiles of the signed error over the rows, where there are at
    # least 10 of them (None: fewer, or not recorded): 8 rows in 10 measured between
    # 1 / (1 + p90) and 1 / (1 + p10) times the model. The model's error is not one factor;
    # this says how far it spreads.
    ttft_error_p10: Annotated[FiniteFloat, Field(gt=-1)] | None = None
    ttft_error_p90: Annotated[FiniteFloat, Field(gt=-1)] | None = None
    tpot_error_p10: Annotated[FiniteFloat, Field(gt=-1)] | None = None
    tpot_error_p90: Annotated[FiniteFloat, Field(gt=-1)] | None = None

    @model_validator(mode="after")
    def _layout_whole(self) -> EngineRegime:
        if (self.tp is None) != (self.attention_dp is None):
            raise ValueError("tp and attention_dp go together (a layout), or neither (pooled)")
        if self.tp is not None and self.mode != "agg":
            raise ValueError("a layout's regime is of aggregated rows (mode agg)")
        for m in ("ttft", "tpot"):
            lo, hi = getattr(self, f"{m}_error_p10"), getattr(self, f"{m}_error_p90")
            if (lo is None) != (hi is None):
                raise ValueError(f"{m}_error_p10 and {m}_error_p90 go together, or neither")
            med = getattr(self, f"{m}_median_error")
            if lo is not None and not lo <= (hi if med is None else med) <= hi:
                raise ValueError(f"{m}_error_p10 <= {m}_median_error <= {m}_error_p90 "
                                 "(percentiles of the same rows' errors)")
        return self


# The longest hold accepted, iterations: far past the 20-60 InferenceMAX's TensorRT-LLM scripts
# set (batch_wait_timeout_iters 20 and 40, attention_dp_config timeout_iters 60)
BATCH_WAIT_ITERATIONS = 10_000
# The busiest expert-parallel GPU's routed tokens over the mean, at most: every token on one
# GPU of a 64-way group
EXPERT_IMBALANCE_MAX = 64.0


# At most 9 digits a component: a release number is small, and Python refuses to convert
# strings of more than 4,300 digits (a hostile catalog or flag)
_RELEASE = re.compile(r"v?(\d{1,9}(?:\.\d{1,9})*)")


def release_number(version: str) -> tuple[int, ...] | None:
    """The release a version string names, as numbers ("0.24.0rc1" -> (0, 24, 0), "v0.5.9"
    -> (0, 5, 9)); None for a string that does not start with one ("nightly-5b8c")."""
    v = version.strip()
    m = _RELEASE.match(v)
    if m is None:
        return None
    rest = v[m.end():]
    if rest[:1].isdigit() or (rest[:1] == "." and rest[1:2].isdigit()):
        return None  # a component longer than nine digits: no release is numbered so
    return tuple(int(x) for x in m.group(1).split("."))


@functools.cache  # a catalog holds a few ranges; a table of rows asks about them per row
def _release_range(spec: str) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """(first, past the last) of a ``>=A,<B`` range of releases; None if malformed."""
    if not spec.startswith(">="):
        return None
    low, sep, high = spec[2:].partition(",<")
    if not sep or not all(_RELEASE.fullmatch(x.strip()) for x in (low, high)):
        return None
    lo, hi = release_number(low), release_number(high)
    return (lo, hi) if lo is not None and hi is not None and lo < hi else None


def _per_gpu_s(table: dict[str, float], gpu: str) -> float:
    """A per-GPU table of microseconds read for ``gpu`` in seconds: its value, else the
    median of the listed GPUs' (0 for an empty table)."""
    if not table:
        return 0.0
    us = table.get(gpu)
    return (us if us is not None else statistics.median(table.values())) * 1e-6


class ServingEngine(CatalogEntry):
    """An inference engine (a backend at a range of versions): how it schedules and what its
    kernels reach, constants shared across GPUs (the GPU enters through its datasheet), each
    fitted once by the script ``calibration`` names. Rates are fractions of the datasheet's."""

    # "neuron": AWS's own engines on Trainium (Transformers NeuronX, NxD Inference; vLLM on
    # Neuron hands its model to NxD Inference), compiled for static shapes
    backend: Literal["trtllm", "vllm", "sglang", "neuron"]
    # Version prefixes ("" matches any), or a range of releases ">=0.10,<1": every release
    # number from the first up to (not including) the second (0.10, 0.24.0rc1; a leading "v"
    # is read as the number after it)
    versions: list[StrictStr] = Field(min_length=1)
    # Vendors whose accelerators the engine runs on and was fitted on (GEMMs there run at the
    # engine's own rate); empty: any, with NVIDIA's as the fitted rate
    vendors: list[Literal["nvidia", "amd", "intel", "google", "aws"]] = Field(
        default_factory=list)
    # Vendors whose accelerators the engine runs on at all (its documented platforms); empty:
    # any. A deployment on another vendor's part is refused by name.
    runs_on: list[Literal["nvidia", "amd", "intel", "google", "aws"]] = Field(
        default_factory=list)
    # Weights offload (vLLM's and SGLang's --cpu-offload-gb): part of each GPU's weights lives
    # in CPU memory and crosses the CPU-GPU link in every forward pass
    weight_offload: StrictBool = False
    # A host tier for the KV cache (vLLM's OffloadingConnector, SGLang's HiCache,
    # TensorRT-LLM's host cache): computed prefix blocks are written to CPU memory and loaded
    # back when a later request shares them and HBM no longer holds them
    kv_host_tier: StrictBool = False
    # Prompt tokens up to which the engine's isolated prefills were checked on Hopper apart
    # from the serving rows (validation/kv_offload.csv), None: none were
    prefill_checked_tokens: PositiveInt | None = None
    # Whether attention_efficiency is a kernel's measured rate on Hopper (FlashAttention-3),
    # which other silicon scales by the training stacks' attention ratio
    # (``plan.serving_deployment.silicon_attention``); False: fitted on every GPU's rows at
    # once, as if each ran attention at Hopper's share of its peak
    attention_from_hopper: StrictBool = False
    # Static shapes: a prompt runs as the smallest context-encoding bucket that holds it,
    # and a decode step attends the smallest token-generation bucket that holds its context
    # (``model/serving_step.Buckets``); powers of two from 128 up to the longest sequence
    # unless the deployment names its buckets
    static_buckets: StrictBool = False
    # Attention heads padded up to a multiple of the TP ranks where the ranks do not divide
    # them (NxD Inference pads query heads interleaved; the padded heads' projections and
    # attention are computed), so any TP runs
    pads_heads: StrictBool = False
    # Scheduler
    max_num_batched_tokens: PositiveInt  # tokens one iteration may carry
    # The budget on GPUs with at least 160 GB (SGLang picks a larger chunk there); None: same
    max_num_batched_tokens_160gb: PositiveInt | None = None
    chunked_prefill: StrictBool  # prompts split over iterations within the token budget
    # Every waiting prompt is prefilled before the running sequences decode again, in
    # iterations of its own (no prefill chunk mixed into a decode batch)
    prefill_priority: StrictBool = False
    # SGLang's --enable-mixed-chunk: a prompt's chunk joins the running decode batch, whose
    # tokens come off the chunk budget (schedule_policy.PrefillAdder's mixed decode tokens),
    # so prompts no longer run first; off by default (server_args enable_mixed_chunk=False)
    mixed_chunk: StrictBool = False
    # The budget is the whole attention-DP group's, split over its ranks (SGLang)
    adp_divides_budget: StrictBool = False
    max_batch: PositiveInt  # requests one data-parallel rank runs at once
    admission: Literal["evict", "reserve"]  # vLLM/SGLang admit and preempt; TRT-LLM reserves
    kv_memory_rule: Literal["total", "free"]  # fraction of all memory, or of what is left
    kv_memory_fraction: Share
    kv_format_quantized: Literal["bf16", "fp8"]  # KV cache format with FP8/FP4 weights
    cuda_graph_max_batch: NonNegativeInt  # decode batches up to this replay a CUDA graph
    # Kernels
    decode_bandwidth_efficiency: Share
    # The KV cache read by decode attention, of the HBM datasheet; None: as the weights
    # (decode_bandwidth_efficiency)
    kv_bandwidth_efficiency: Share | None = None
    # Routed experts' weights streamed by grouped GEMMs at small batches
    moe_bandwidth_efficiency: Share = 0.8
    gemm_efficiency: list[tuple[FiniteFloat, Share]] = Field(
        min_length=2)  # (log10 FLOPs of one GEMM, fraction of the format's dense peak)
    gemm_scale: Annotated[FiniteFloat, Field(gt=0, le=1.5)] = 1.0
    moe_gemm_scale: Annotated[FiniteFloat, Field(gt=0, le=1.5)] = 1.0  # grouped expert GEMMs
    attention_efficiency: Share
    # busiest expert-parallel GPU's routed tokens over the mean
    expert_imbalance: Annotated[FiniteFloat, Field(ge=1, le=EXPERT_IMBALANCE_MAX)] = 1.0
    # Fixed costs, seconds
    step_overhead_s: NonNegativeFloat  # an eager iteration: scheduling, sampling, launches
    graph_step_overhead_s: NonNegativeFloat  # a decode-only iteration replayed as a graph
    layer_overhead_s: NonNegativeFloat = 0.0
    collective_launch_us: NonNegativeFloat = 0.0  # a collective inside a CUDA graph
    a2a_peer_us: NonNegativeFloat = 0.0  # MoE dispatch/combine: cost per peer
    # GPU time per MoE layer of an iteration that the routed experts' kernels take whatever
    # their work (routing, the tokens' permutation and its inverse, the grouped GEMMs'
    # launches and tails), microseconds, per GPU id: the intercept of the engine's measured
    # MoE kernels against their weight bytes (scripts/fit_moe_kernel_floor.py on
    # AIConfigurator's per-operator tables). A GPU not listed takes the median of the
    # listed ones; an empty map: no floor
    moe_layer_floor_us: dict[EntryId, Annotated[FiniteFloat, Field(ge=0, le=1000)]] = Field(
        default_factory=dict)
    # The engine's routed-expert GEMMs in a narrow weight format at prefill sizes, as fast as
    # BF16's times this on the same GPU: per GPU id and format, the median over the shapes and
    # MoE TP x EP of AIConfigurator's measured MoE kernels at 2,048-16,384 tokens of BF16's
    # latency over the format's (scripts/fit_moe_format_speedup.py; SGLang 0.5.14 on B200:
    # fp8_block 0.81, nvfp4 1.62, where the datasheet's peaks say 2 and 4). Where listed, the
    # expert GEMMs compute at the BF16 lane's rate x this instead of the format's own peak;
    # not listed: the format's peak
    moe_format_speedup: dict[EntryId, dict[Literal[
        "fp8", "fp8_block", "nvfp4", "mxfp4", "w4a8_mxfp4_mxfp8", "w4afp8"],
        Annotated[FiniteFloat, Field(gt=0, le=8)]]] = Field(default_factory=dict)
    # GPU time per layer of an iteration that a lightning indexer's attention (DeepSeek
    # Sparse Attention: DeepSeek-V3.2, GLM-5; DeepSeek-V4's sparse layers) takes beyond the
    # plain MLA layer's, whatever its work (the indexer's small projections, its FP8 scoring
    # kernel's and its top-k's launches and tails), microseconds, per GPU id: the median
    # difference of the engine's measured sparse and plain MLA decode modules at small
    # batches and contexts (scripts/fit_sparse_attention_floor.py on AIConfigurator's
    # per-operator tables). A GPU not listed takes the median of the listed ones; an empty
    # map: no floor
    sparse_layer_floor_us: dict[EntryId, Annotated[FiniteFloat, Field(ge=0, le=1000)]] = (
        Field(default_factory=dict))
    # The engine's MLA decode kernel as measured, per GPU id and KV-cache format: [compute
    # TFLOP/s, KV read TB/s] of a roofline fitted to AIConfigurator's per-operator tables
    # (scripts/fit_mla_decode_kernels.py). The kernel reads a sequence's latent cache once
    # for all its query rows, so the query rows a speculative verification adds (1 + k a
    # sequence) cost what this roofline adds for them; the first row keeps the fitted
    # ``attention_efficiency``, which stands for more than the kernel. Not listed: every row
    # at that rate
    mla_decode_kernel: dict[EntryId, dict[Literal["bf16", "fp8"], tuple[
        Annotated[FiniteFloat, Field(gt=0, le=100000)],
        Annotated[FiniteFloat, Field(gt=0, le=1000)]]]] = Field(default_factory=dict)
    # Disaggregated serving: the share of the link's bandwidth a KV transfer reaches (NIXL,
    # UCX or NCCL moving paged blocks), and the fixed time a request spends on the
    # disaggregated path outside the iterations (the router's hand-off to the prefill worker
    # and back, the transfer's bootstrap handshake, the decode worker's admission), seconds
    kv_transfer_efficiency: Share = 0.8
    disagg_overhead_s: NonNegativeFloat = 0.0
    # Time to first token outside the iterations: HTTP, tokenization, scheduling hand-off and
    # the first token's way back (seconds)
    frontend_s: NonNegativeFloat = 0.0
    # Share of the other running clients' prompts a new prompt waits behind: closed-loop
    # clients with equal lengths arrive in clusters (not applied to clients that draw their
    # lengths from a range)
    arrival_burst: Annotated[FiniteFloat, Field(ge=0, le=1)] = 0.0
    # Iterations between a prompt's prefill and its first token reaching the client
    # (overlapped scheduling returns tokens a step late; detokenization, streaming)
    first_token_iterations: Annotated[FiniteFloat, Field(ge=0, le=50)] = 0.0
    # Iterations a new prompt is held under attention data parallelism so that every rank
    # runs its prefill in the same iteration (TRT-LLM attention_dp_config balance timeout)
    adp_context_wait_iterations: Annotated[FiniteFloat, Field(ge=0, le=200)] = 0.0
    # Batch waiting without attention DP (TensorRT-LLM ``batch_wait_timeout_iters`` and
    # ``batch_wait_max_tokens_ratio``; both 0, off, by default): while sequences decode, new
    # prompts are held until this many iterations have passed or the iteration's tokens
    # reach the ratio x max_num_batched_tokens, whichever comes first (either at 0: no hold)
    # Attention-DP balancing (TensorRT-LLM attention_dp_config enable_balance with
    # timeout_iters; 0: not set, and ``adp_context_wait_iterations`` stands for the hold):
    # new prompts are held until every attention-DP rank has one, or this many iterations
    adp_balance_timeout_iterations: Annotated[NonNegativeInt,
                                              Field(le=BATCH_WAIT_ITERATIONS)] = 0
    batch_wait_iterations: Annotated[NonNegativeInt, Field(le=BATCH_WAIT_ITERATIONS)] = 0
    batch_wait_tokens_ratio: Annotated[FiniteFloat, Field(ge=0, le=1)] = 0.0
    # SGLang ``--scheduler-recv-interval`` (1, every iteration, by default): while the engine
    # decodes, its scheduler takes new requests only every this many decode iterations, and
    # right after an iteration that ran a prefill; not with attention DP
    scheduler_recv_interval: Annotated[PositiveInt, Field(le=BATCH_WAIT_ITERATIONS)] = 1
    # Tokens between two streamed chunks of a request (SGLang ``--stream-interval``,
    # TensorRT-LLM ``stream_interval``; 1 by default). ``disagg_first_token`` says where a
    # disaggregated deployment's client gets its first token: "prefill", with the prefill
    # worker's token (the interval then only groups the later tokens), or "decode_chunk",
    # with the decode worker's first streamed chunk, one interval of tokens after the prefill
    # worker's token (SGLang; docs/serving.md, "The first chunk")
    stream_interval: Annotated[PositiveInt, Field(le=BATCH_WAIT_ITERATIONS)] = 1
    disagg_first_token: Literal["prefill", "decode_chunk"] = "prefill"
    # Host work per running sequence per iteration (seconds): the scheduler's bookkeeping,
    # the next iteration's inputs and the last one's outputs, in Python, so it grows with
    # the batch. An engine that schedules asynchronously does it while the GPU runs the
    # previous iteration (vLLM's --async-scheduling, vllm#19970, on by default from
    # vllm#27614; SGLang's and TensorRT-LLM's overlap schedulers): the iteration takes the
    # longer of the two. One that does not leaves the GPU idle meanwhile: the two add.
    seq_overhead_s: Annotated[FiniteFloat, Field(ge=0, le=0.01)] = 0.0
    async_scheduling: StrictBool = True
    # Versions (prefixes of ``versions``) that schedule synchronously by default, whatever
    # ``async_scheduling`` says (vLLM before 0.14: vllm#27614 turned it on after v0.13.0)
    sync_versions: list[StrictStr] = Field(default_factory=list)
    # The releases of the measured rows the constants were fitted on, as ranges (">=0.11,<0.20");
    # a deployment at another release says it is read with them (empty: not stated)
    measured_releases: list[StrictStr] = Field(default_factory=list)
    # The release a deployment named (set by ``at_version``; "" for the catalog entry itself)
    release: StrictStr = ""
    validated: list[EngineRegime] = Field(default_factory=list)
    calibration: StrictStr

    def moe_speedup_over_bf16(self, gpu: str, fmt: str) -> float | None:
        """The measured speed of the engine's expert GEMMs in weight format ``fmt`` on
        ``gpu`` over BF16's at prefill sizes (``moe_format_speedup``), None where not
        measured."""
        got: float | None = self.moe_format_speedup.get(gpu, {}).get(fmt)  # type: ignore[call-overload]
        return got

    def moe_layer_floor_s(self, gpu: str) -> float:
        """The MoE kernels' floor per layer on ``gpu`` (seconds): its measured value, else
        the median of the measured GPUs' (0 where none was measured)."""
        return _per_gpu_s(self.moe_layer_floor_us, gpu)

    def sparse_layer_floor_s(self, gpu: str) -> float:
        """The sparse attention's floor per indexed layer on ``gpu`` (seconds): its measured
        value, else the median of the measured GPUs' (0 where none was measured)."""
        return _per_gpu_s(self.sparse_layer_floor_us, gpu)

    def mla_decode_rates(self, gpu: str, kv_format: str) -> tuple[float, float] | None:
        """The measured MLA decode kernel on ``gpu`` with a ``kv_format`` cache: (FLOP/s,
        bytes/s), or None where it was not measured."""
        got = self.mla_decode_kernel.get(gpu, {}).get(kv_format)  # type: ignore[call-overload]
        return None if got is None else (got[0] * 1e12, got[1] * 1e12)

    @property
    def gemm_xs(self) -> tuple[float, ...]:
        return tuple(x for x, _ in self.gemm_efficiency)

    @property
    def gemm_ys(self) -> tuple[float, ...]:
        return tuple(y for _, y in self.gemm_efficiency)

    @model_validator(mode="after")
    def _version_ranges_are_releases(self) -> ServingEngine:
        for v in self.measured_releases:
            if _release_range(v) is None:
                raise ValueError(f"measured_releases: {v!r} is not a range of two release "
                                 "numbers ('>=0.11,<0.20')")
        for v in self.versions:
            if v.startswith(">=") and _release_range(v) is None:
                raise ValueError(f"versions: {v!r} is not a range of two release numbers "
                                 "('>=0.10,<1')")
        return self

    @model_validator(mode="after")
    def _mixed_chunks_are_chunks(self) -> ServingEngine:
        # SGLang mixes only chunked prefill (scheduler: is_mixed_chunk needs a chunk size)
        if self.mixed_chunk and not self.chunked_prefill:
            raise ValueError("mixed_chunk: mixing a prompt's chunk into the decode batch "
                             "needs chunked_prefill")
        return self

    @property
    def prompts_first(self) -> bool:
        """Waiting prompts run in iterations of their own before the sequences decode again
        (SGLang's scheduler unless ``mixed_chunk``)."""
        return self.prefill_priority and not self.mixed_chunk

    def covers(self, version: str) -> bool:
        """Whether one of ``versions`` takes ``version``: its prefix, or its release floor."""
        for v in self.versions:
            if v.startswith(">="):
                got, bounds = release_number(version), _release_range(v)
                if got is not None and bounds is not None and bounds[0] <= got < bounds[1]:
                    return True
            elif version.startswith(v):
                return True
        return False

    def release_ceiling(self) -> tuple[int, ...] | None:
        """The first release past every release ``versions`` covers (a range's upper bound;
        a numeric prefix "1." covers up to 2); None where no version names a release."""
        tops = []
        for v in self.versions:
            bounds = _release_range(v) if v.startswith(">=") else None
            if bounds is not None:
                tops.append(bounds[1])
            elif (m := re.fullmatch(r"(\d+)\.", v)) is not None:
                tops.append((int(m.group(1)) + 1,))
        return max(tops) if tops else None

    def at_version(self, version: str) -> ServingEngine:
        """This engine as ``version`` runs it: synchronous scheduling for the versions
        that had no other default (``sync_versions``); the release kept (``release``)."""
        if not version:
            return self
        update: dict[str, object] = {"release": version}
        if self.async_scheduling and any(version.startswith(v) for v in self.sync_versions):
            update["async_scheduling"] = False
        return self.model_copy(update=update)

    def unmeasured_release(self) -> str:
        """A note when the deployment's release lies outside the releases the constants were
        fitted on ("" when it does not, or either is not stated, or it is a development
        build, which says so elsewhere)."""
        got = release_number(self.release)
        if got is None or not self.measured_releases:
            return ""
        spans = [r for r in (_release_range(v) for v in self.measured_releases) if r]
        if any(lo <= got < hi for lo, hi in spans):
            return ""
        said = " or ".join(f"{'.'.join(map(str, lo))} <= release < {'.'.join(map(str, hi))}"
                           for lo, hi in spans)
        return (f"{self.backend} {self.release}: no measured row at this release; the "
                f"constants were fitted on rows measured at {said}, and are read as they are")


PrecisionClass = Literal["bf16", "fp8"]
Family = Literal["ptd-p", "zero3", "moe-ep", "cp", "lora"]


class TrainingRegime(CatalogEntry):
    """How far the training step model was off in one regime of the validation table: a
    stack, a precision class (or all) and a parallelism family (or all). Generated from
    ``validation/training.csv`` by ``scripts/training_confidence.py`` (a test keeps it in step
    with the model); every estimate reports the nearest regime's numbers as its band."""

    stack: EntryId
    precision: PrecisionClass | Literal["any"]
    family: Family | Literal["any"]
    rows: PositiveInt  # development and held-out rows in the regime
    dev_rows: NonNegativeInt
    mape: Annotated[FiniteFloat, Field(ge=0)]  # mean |error| over the regime's rows (fraction)
    band: Annotated[FiniteFloat, Field(ge=0)]  # 90th percentile of |error| (fraction)
    bias: FiniteFloat  # mean signed error (predicted - measured) / measured, throughput sense
    min_gpus: PositiveInt
    max_gpus: PositiveInt
    models: list[StrictStr]
    # GPUs with a published run in the regime: an estimate on a GPU of the stack that is not
    # among them is reported unvalidated (the stack's band measured other silicon).
    accelerators: list[EntryId] = Field(default_factory=list)


class MfuRecord(CatalogEntry):
    """The highest model-FLOPs utilisation a published run reached on one GPU and precision
    class, counted as this tool counts model FLOPs (``model/flops.py``), from the validation
    table. Generated by ``scripts/training_confidence.py``."""

    gpu: EntryId
    precision: PrecisionClass
    mfu: Share  # of the precision's dense peak
    model: StrictStr
    gpus: PositiveInt
    row: StrictStr  # validation/training.csv row id
