"""What a training-step estimate holds fixed across layouts: the ``Job`` (model, data shape,
GPU, stack, interconnect, precision, and for LoRA fine-tuning its adapters) and the framework
``Options`` it runs with, plus the per-job constants every layout reuses (parameters per
layer, trainable parameters, FLOPs per token)."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, replace
from typing import Any

from clusterwright.catalog.schema import Dtype, Gpu, ModelArch
from clusterwright.catalog.stacks import Stack
from clusterwright.model.collectives import Interconnect
from clusterwright.model.flops import training_flops_per_token
from clusterwright.model.lora import Lora, adapter_params
from clusterwright.model.params import param_counts
from clusterwright.model.precision import Precision, training_dtype
from clusterwright.model.train_compute import ComputeJob, compute_job

SCHEDULES = ("1f1b", "zb", "dualpipe")
EP_OVERLAPS = ("none", "1f1b", "dualpipe")
CP_COMMS = ("p2p", "allgather", "a2a")
EP_DISPATCHERS = ("alltoall", "deepep")
# How ZeRO-1/2 reduce gradients: a reduce-scatter to each rank's shard (DeepSpeed's default,
# Megatron's distributed optimizer), or an all-reduce of which each rank keeps its shard
# (DeepSpeed "reduce_scatter": false: twice the bytes on the wire).
GRAD_REDUCES = ("reduce_scatter", "allreduce")


@dataclass(frozen=True)
class Options:
    """How the framework runs the step; ``for_stack`` gives the stack's defaults."""

    tp_overlap: bool = False  # TP collectives pipelined with their GEMMs
    grad_overlap: bool = False  # gradient buckets reduced during the last backward
    param_overlap: bool = False  # distributed-optimizer all-gather under the next forward
    p2p_overlap: bool = False  # pipeline sends hidden in the steady state
    cp_comm: str = "p2p"  # p2p (ring attention), allgather (Llama 3), a2a (Ulysses)
    schedule: str = "1f1b"  # 1f1b (interleaved when v > 1), zb (zero bubble), dualpipe
    ep_overlap: str = "none"  # none, 1f1b (paired micro-batches), dualpipe
    ep_dispatcher: str = "alltoall"  # alltoall (a copy per expert), deepep (one per domain)
    prefetch: int = 1  # ZeRO-3/FSDP layers gathered ahead (0: none)
    zeropp: bool = False  # ZeRO++: int8 weight gathers, node-local backward gather, int4 grads
    fp8_recipe: str = "delayed"  # delayed, current, blockwise, mx
    dispatch_fp8: bool = False  # MoE dispatch in FP8 (DeepEP / DeepSeek-V3)
    expert_imbalance: float = 1.1  # busiest GPU's expert load over the mean (MoE)
    bucket_params: float = 4.0e7  # DP gradient bucket (Megatron-Core: max(40M, 1M x dp))
    grad_reduce: str = "reduce_scatter"  # ZeRO-1/2 gradient collective (GRAD_REDUCES)
    # Fused attention (FlashAttention, cuDNN/TE, the vendors' fused SDPA): off, the scores and
    # probabilities (s x s per head) go through HBM and are kept for backward, as in the
    # eager attention of Hugging Face models run without a fused kernel
    flash_attention: bool = True
    # Optimizer state (fp32 master weights, Adam moments) kept in the superchip's CPU memory
    # (Grace LPDDR5X over NVLink-C2C) and streamed through the link at each update: "none" or
    # "optimizer" (DeepSpeed ZeRO-Offload's split: Ren et al., arXiv 2101.06840).
    offload: str = "none"

    @staticmethod
    def for_stack(stack: Stack, **overrides: Any) -> Options:
        f = stack.features
        base = Options(
            tp_overlap=f.tp_comm_overlap,
            grad_overlap=f.overlap_grad_reduce,
            param_overlap=f.overlap_param_gather,
            p2p_overlap=f.overlap_p2p,
            cp_comm=f.context_parallel[0] if f.context_parallel else "p2p",
            schedule=f.schedules[0],
            ep_overlap=f.ep_overlap[0],
            ep_dispatcher=f.ep_dispatchers[0],
            fp8_recipe=f.fp8_recipes[0] if f.fp8_recipes else "delayed",
            bucket_params=f.dp_bucket_params,
            flash_attention=stack.flash_attention,
        )
        return replace(base, **overrides)


@dataclass(frozen=True)
class Job:
    """What does not vary across layouts: model, data shape, hardware, stack and options."""

    arch: ModelArch
    seq_len: int
    global_batch: int  # sequences per step
    gpu: Gpu
    stack: Stack
    net: Interconnect
    precision: Precision = Precision.bf16
    grad_precision: Precision = Precision.bf16  # dtype gradients are reduced and stored in
    dropout: bool = False
    reserve_bytes: float = 0.0
    opts: Options = field(default_factory=Options)
    # Slowdown of the network collectives over the closed form, from the flow simulator
    # (train estimate --fidelity sim); 1.0 is the closed form's perfect network.
    dp_comm_factor: float = 1.0
    pp_comm_factor: float = 1.0
    ep_comm_factor: float = 1.0
    # Spread of per-GPU speed (catalog assumption gpu_speed_cv): the step waits for the
    # slowest of N GPUs, sigma sqrt(2 ln N) behind the median.
    gpu_speed_cv: float = 0.0
    # LoRA fine-tuning (model/lora): base weights frozen (stored in FP8 when the job computes
    # in FP8), only the adapters trained. None: every weight trained.
    lora: Lora | None = None

    @property
    def host_capacity_bytes(self) -> float:
        """CPU memory this GPU may use as an offload tier (0 without one)."""
        hm = self.gpu.host_memory
        return hm.memory_gb * 1e9 if hm is not None else 0.0

    def fits(self, memory_parts: dict[str, Any], i: Any = None) -> Any:
        """Whether the GPU memory and (with offload) the CPU memory hold the layout(s)."""
        total = memory_parts["total"] if i is None else memory_parts["total"][i]
        host = memory_parts.get("host", 0.0 * total)
        host = host if i is None else host[i]
        return (total <= self.gpu.memory_gb * 1e9) & (host <= self.host_capacity_bytes + 1.0)

    @property
    def expert_imbalance(self) -> float:
        return self.opts.expert_imbalance

    @property
    def peak_flops(self) -> float:
        """The fastest rate any of the job's GEMMs or attention runs at, FLOP/s per GPU."""
        return max(self.compute.peak, self.compute.peak16)

    @functools.cached_property
    def compute(self) -> ComputeJob:
        dtype = training_dtype(self.precision)
        tf = self.gpu.peak_tflops
        raw = tf[dtype]
        raw16 = tf.get(Dtype.bf16, tf.get(Dtype.fp16, raw))
        # The clock a power-limited part holds under back-to-back matrix work (catalog Gpu).
        peak, peak16 = (x * 1e12 * self.gpu.matrix_rate for x in (raw, raw16))
        return compute_job(
            self.arch, self.seq_len, self.stack, peak, peak16,
            self.gpu.memory_bandwidth_gbps * 1e9,
            self.precision in (Precision.fp8, Precision.fp4), self.opts.fp8_recipe,
            self.dropout, self.opts.expert_imbalance,
            attention_speedup=(self.gpu.attention_fwd_speedup, self.gpu.attention_bwd_speedup),
            # Measured for FP8 (not FP4) GEMMs: FP4 runs keep the datasheet ratio.
            fp8_gemm_speedup=(self.gpu.fp8_gemm_speedup if self.precision == Precision.fp8
                              else 1.0),
            lora=self.lora, flash=self.opts.flash_attention,
        )

    @functools.cached_property
    def constants(self) -> _JobConstants:
        return _JobConstants.of(self)


@dataclass(frozen=True)
class _JobConstants:
    """Per-job numbers every layout uses (parameter counts per layer, FLOPs per token)."""

    dense_params: float  # non-expert parameters, whole model
    expert_params: float
    layer_dense: float  # non-expert parameters per layer (attention, norms, router, shared)
    layer_expert: float
    moe_frac: float
    flops_per_token: float
    hw_flops_full: float
    hw_flops_selective: float
    # Trained parameters (all of them, or the LoRA adapters): gradients, optimizer, DP traffic.
    train_dense: float
    train_expert: float
    train_layer_dense: float  # per layer (ZeRO-3 reduce-scatters each layer's gradients)
    train_layer_expert: float

    @staticmethod
    def of(job: Job) -> _JobConstants:
        a = job.arch
        pc = param_counts(a)
        L = float(a.layers)
        moe_frac = a.moe_layers / L
        s = job.seq_len
        lo = job.lora
        layer_dense = float(pc.attention + pc.dense_mlp + pc.shared_experts + pc.router
                            + pc.norms) / L
        dense_params, expert_params = float(pc.total - pc.experts), float(pc.experts)
        train_dense, train_expert = (adapter_params(a, lo) if lo is not None
                                     else (dense_params, expert_params))
        return _JobConstants(
            dense_params=dense_params,
            expert_params=expert_params,
            layer_dense=layer_dense,
            layer_expert=float(pc.experts) / L,
            moe_frac=moe_frac,
            flops_per_token=float(training_flops_per_token(a, s, lora=lo)),
            hw_flops_full=float(training_flops_per_token(a, s, "full", hardware=True, lora=lo)),
            hw_flops_selective=float(training_flops_per_token(a, s, "selective", hardware=True,
                                                              lora=lo)),
            train_dense=train_dense,
            train_expert=train_expert,
            train_layer_dense=(train_dense / L if lo is not None else layer_dense),
            train_layer_expert=train_expert / L,
        )
