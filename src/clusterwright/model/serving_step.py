"""Step time of one serving engine iteration on a deployment: tensor, pipeline and attention
data parallelism, MoE tensor and expert parallelism, per-component weight formats.

A deployment's data-parallel rank (``adp`` of them, each ``tp`` x ``pp`` GPUs) runs its own
batch: ``prefill_tokens`` new prompt tokens and one token for each of ``decode_seqs`` running
sequences, attending ``kv_tokens`` cached tokens. Every rank runs the same iteration in
lock-step, because the MoE layers gather all ranks' tokens (attention data parallelism as
SGLang and TensorRT-LLM run DeepSeek: ``--enable-dp-attention``, ``enable_attention_dp``),
so the step is one rank's step with the experts' work summed over ranks. Per GPU:

- dense GEMMs (attention projections, dense and shared-expert MLPs, router, LM head), sharded
  over the rank's ``tp`` GPUs: the longer of their FLOPs at the engine's size-dependent GEMM
  efficiency and their weights streamed from HBM at the engine's bandwidth efficiency
  (decode is bandwidth-bound: shared/reference/inference.md 5);
- routed experts: the ``moe_tp`` x ``moe_ep`` GPUs of the MoE group split the experts whole
  over ``moe_ep`` and slice each over ``moe_tp``; a GPU's tokens are all ranks' routed
  copies over ``moe_ep``, its weights read are its touched experts (the busiest GPU's, for
  uniform routing), at the engine's grouped-GEMM efficiency;
- attention: prefill FLOPs at the engine's attention efficiency, the KV cache read at its
  bandwidth efficiency; MLA attends in the latent space with absorbed projections, and its
  latent is replicated on every TP rank (FlashMLA, DeepSeek-V2 report section 2.1);
- collectives from the training model's NCCL tuner (``model/collectives``): the attention and
  MLP all-reduces over ``tp``, and with attention data parallelism the MoE dispatch and
  combine over the MoE group; launched from CUDA graphs, so without the eager launch floor;
- fixed costs: per iteration (scheduling, sampling, launches: lower for a decode-only
  iteration replayed as a CUDA graph) and per layer (kernel gaps and barriers that do not
  shrink with the shard);
- static shapes (AWS Neuron's engines): an iteration computes its compiled shapes, not the
  tokens it carries: prompts padded to their bucket, decode contexts to theirs, the decode
  batch to the compiled one (``Buckets``, ``DeploymentStep.static_batch``), and attention
  heads padded to a multiple of the TP ranks (``padded_heads``).

Times in seconds, sizes in bytes, rates in FLOP/s and bytes/s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import NamedTuple

from clusterwright.catalog.schema import Dtype, Gpu, ModelArch
from clusterwright.catalog.stacks import ServingEngine
from clusterwright.errors import InputError
from clusterwright.model.attention_bands import attention_bands
from clusterwright.model.collectives import Interconnect, allreduce_s, moe_dispatch_s
from clusterwright.model.flops import attention_dims, recurrent_flops_per_token
from clusterwright.model.inference import _busiest_touched, _interp
from clusterwright.model.memory import (
    kv_cache_bytes_per_token,
    recurrent_state_bytes_per_sequence,
)
from clusterwright.model.params import param_counts
from clusterwright.model.xp import ScalarOps

ACT_BYTES = 2.0  # activations and all-reduces in 16-bit


# --------------------------------------------------------------------------- formats


@dataclass(frozen=True)
class WeightFormat:
    """How a group of weights is stored and multiplied: tensor-core format and bytes per
    weight, block scales included."""

    name: str
    compute: Dtype
    bytes_per_weight: float


# Bytes per weight with their scales: FP8 per-tensor (or 128 x 128 blocks: 1/16,384 of a
# byte, negligible); NVFP4: 4 bits + one FP8 scale per 16 values; MXFP4: + one E8M0 scale
# per 32 (OCP Microscaling v1.0; NVIDIA Blackwell NVFP4 blog, 2025); INT4 AWQ/GPTQ: + an FP16
# scale per 128. The second group are NVIDIA AIConfigurator's quant-mode names, which measured
# serving tables in its format carry (aiconfigurator-core 0.12.0 sdk/common.py GEMMQuantMode
# and MoEQuantMode: bytes per weight and the compute lane of each): weight-only modes
# (`*_wo`, `w4a16_*`) dequantize into the 16-bit lane, `sq` is SmoothQuant W8A8 on the INT8
# tensor cores, `w4afp8` and `w4a8_mxfp4_mxfp8*` multiply 4-bit weights in the FP8 lane.
FORMATS = {
    "bf16": (Dtype.bf16, 2.0), "fp16": (Dtype.bf16, 2.0), "fp8": (Dtype.fp8, 1.0),
    "fp8_block": (Dtype.fp8, 1.0), "nvfp4": (Dtype.fp4, 0.5625), "mxfp4": (Dtype.fp4, 0.53125),
    "int4": (Dtype.bf16, 0.515625), "fp4": (Dtype.fp4, 0.5625),
    "int8_wo": (Dtype.bf16, 1.0), "int4_wo": (Dtype.bf16, 0.515625),
    "fp8_static": (Dtype.fp8, 1.0), "fp8_ootb": (Dtype.fp8, 1.0), "sq": (Dtype.int8, 1.0),
    "nvfp4_wo": (Dtype.bf16, 0.5625), "w4a16_nvfp4": (Dtype.bf16, 0.5625),
    "w4afp8": (Dtype.fp8, 0.515625), "w4a16_mxfp4": (Dtype.bf16, 0.53125),
    "w4a16_mxfp4_cutlass": (Dtype.bf16, 0.53125), "w4a8_mxfp4_mxfp8": (Dtype.fp8, 0.53125),
    "w4a8_mxfp4_mxfp8_trtllm": (Dtype.fp8, 0.53125),
}
# AIConfigurator's spellings of the 16-bit formats.
FORMAT_ALIASES = {"bfloat16": "bf16", "float16": "fp16"}


def weight_format(mode: str, gpu: Gpu, field: str = "quant_mode") -> WeightFormat:
    """The format of ``mode`` on ``gpu``. A 4- or 8-bit float format on a GPU without such
    tensor cores runs weight-only (dequantized to 16-bit in the GEMM: Marlin kernels), INT4
    is weight-only everywhere; SmoothQuant needs INT8 tensor cores."""
    key = (mode or "bf16").lower()
    key = FORMAT_ALIASES.get(key, key)
    if key not in FORMATS:
        raise InputError(f"{field}: {mode!r} is not one of {', '.join(FORMATS)}", field=field)
    dtype, nbytes = FORMATS[key]
    if dtype in (Dtype.fp4, Dtype.fp8) and dtype not in gpu.peak_tflops:
        # vLLM docs, FP8 W8A8: "Ampere GPUs are supported for W8A16 (weight-only FP8)
        # utilizing Marlin kernels"; 4-bit formats likewise (Marlin NVFP4/MXFP4)
        dtype = Dtype.bf16
    if dtype == Dtype.int8 and dtype not in gpu.peak_tflops:
        raise InputError(f"{field}: {gpu.id} has no {dtype.value.upper()} tensor cores for "
                         f"{mode}", field=field)
    return WeightFormat(key, dtype, nbytes)


def format_peak_tflops(gpu: Gpu, dtype: Dtype) -> float:
    """The dense peak of ``gpu`` (TFLOP/s) in the compute lane ``dtype`` (``_peak_of``)."""
    return _peak_of(gpu, dtype)


def _peak_of(gpu: Gpu, dtype: Dtype) -> float:
    """The dense peak (TFLOP/s) a format computes at; BF16 and FP16 stand in for each other
    (one 16-bit tensor rate on every part that lists both), a part listing neither is refused
    by name (a user catalog may give only one)."""
    if dtype in gpu.peak_tflops:
        return float(gpu.peak_tflops[dtype])
    if dtype in (Dtype.bf16, Dtype.fp16):
        return _peak16(gpu)
    raise InputError(f"gpu: {gpu.id} lists no {dtype.value} peak (peak_tflops)", field="gpu")


def _peak16(gpu: Gpu) -> float:
    """The 16-bit dense peak (TFLOP/s) attention runs at: BF16's, else FP16's (a part with
    neither has no 16-bit tensor path the engines run attention on)."""
    for d in (Dtype.bf16, Dtype.fp16):
        if d in gpu.peak_tflops:
            return float(gpu.peak_tflops[d])
    raise InputError(f"gpu: {gpu.id} lists no BF16 or FP16 peak for attention", field="gpu")


# --------------------------------------------------------------------------- layout


@dataclass(frozen=True)
class ServingParallel:
    """A deployment's parallel layout. GPUs = tp x adp x pp; the MoE group (moe_tp x
    moe_ep) spans the tp x adp GPUs of a pipeline stage."""

    tp: int = 1
    pp: int = 1
    adp: int = 1
    moe_tp: int = 1
    moe_ep: int = 1

    @property
    def gpus(self) -> int:
        return self.tp * self.adp * self.pp

    def check(self, arch: ModelArch, prefix: str = "", pads_heads: bool = False) -> None:
        """InputError naming the field unless the layout runs ``arch``. Tensor parallelism may
        span NVLink domains (SGLang and TensorRT-LLM run TP 16-64 over several nodes); the
        collectives then cross the network. ``pads_heads``: the engine pads the attention
        heads to a multiple of the TP ranks (``padded_heads``), so TP need not divide them."""
        for name in ("tp", "pp", "adp", "moe_tp", "moe_ep"):
            if getattr(self, name) < 1:
                raise InputError(f"{prefix}{name}: must be a positive integer, got "
                                 f"{getattr(self, name)}", field=prefix + name)
        if arch.heads % self.tp and not pads_heads:
            raise InputError(f"{prefix}tp: {self.tp} does not divide the {arch.heads} "
                             f"attention heads of {arch.id}", field=prefix + "tp")
        if self.pp > arch.layers:
            raise InputError(f"{prefix}pp: {self.pp} stages exceed the {arch.layers} layers "
                             f"of {arch.id}", field=prefix + "pp")
        if not arch.is_moe:
            if self.moe_ep > 1:
                raise InputError(f"{prefix}moe_ep: {arch.id} is a dense model",
                                 field=prefix + "moe_ep")
            return
        if self.moe_tp * self.moe_ep != self.tp * self.adp:
            raise InputError(
                f"{prefix}moe_ep: moe_tp x moe_ep = {self.moe_tp} x {self.moe_ep} must equal "
                f"tp x attention-DP = {self.tp} x {self.adp} (the MoE layers use every GPU of "
                "the stage)", field=prefix + "moe_ep")
        if self.moe_ep > arch.experts:
            raise InputError(f"{prefix}moe_ep: {self.moe_ep} exceeds the {arch.experts} "
                             f"experts of {arch.id}", field=prefix + "moe_ep")

    def expert_slots(self, arch: ModelArch) -> int:
        """Experts one GPU of the MoE group holds: the experts over ``moe_ep``, rounded up.
        Where ``moe_ep`` does not divide them, the engines fill every GPU's slots alike with
        redundant copies of experts (SGLang's ``--ep-num-redundant-experts``, TensorRT-LLM's
        EPLB slots: DeepSeek's 256 experts on EP 48 run in 288 slots, 6 a GPU), so a GPU
        holds and streams that many."""
        return -(-arch.experts // self.moe_ep) if arch.is_moe else 0


def padded_heads(arch: ModelArch, gpu: Gpu, engine: ServingEngine, tp: int) -> int:
    """Attention (query) heads the engine computes on ``tp`` devices: the model's, or, on an
    engine that pads them, the next multiple of its TP ranks (``tp_ranks_per_device`` a
    device): Llama 2 13B's 40 heads on TP 32 NeuronCores run as 64."""
    if not engine.pads_heads:
        return arch.heads
    ranks = tp * gpu.tp_ranks_per_device
    return -(-arch.heads // ranks) * ranks


def padding_params(arch: ModelArch, heads: int) -> float:
    """Parameters the padded heads add to the query and output projections (all layers):
    zeros an engine stores, streams and multiplies all the same."""
    if heads <= arch.heads:
        return 0.0
    dqk, dv = attention_dims(arch)
    return (heads / arch.heads - 1.0) * arch.hidden * (dqk + dv) * arch.layers


# --------------------------------------------------------------------------- step


def _attended(bands: tuple[tuple[float, float, float, float, float], ...], p: float,
              d: float, kv_tokens: float, prefill_pairs: float | None
              ) -> tuple[float, float, float]:
    """(prefill attention FLOPs, decode attention FLOPs per query, KV bytes read) of one
    iteration on one GPU: each band's layers attend scale x min(context, window) keys of
    the prefill's query-key pairs and of the decode sequences' KV tokens (``bands``: the
    step's (scale, window, prefill FLOPs per key, decode FLOPs per key, bytes per key))."""
    pairs = p * p / 2.0 if prefill_pairs is None else float(prefill_pairs)
    kv = float(kv_tokens)
    pf = dec = read = 0.0
    for scale, window, f_pf, f_dec, nbytes in bands:
        if window == math.inf:  # (0 x inf would be NaN)
            seen_pairs, seen_kv = scale * pairs, scale * kv
        else:
            seen_pairs, seen_kv = scale * min(pairs, p * window), scale * min(kv, d * window)
        pf += f_pf * seen_pairs
        dec += f_dec * seen_kv
        read += nbytes * seen_kv
    return pf, dec, read


@dataclass(frozen=True)
class Buckets:
    """The shapes a static-shape engine compiled (AWS Neuron: Transformers NeuronX, NxD
    Inference): a prompt runs padded to the smallest ``prefill`` (context-encoding) bucket
    that holds it, and a decode step attends the smallest ``decode`` (token-generation)
    bucket that holds the sequence's context, masked beyond it. Tokens."""

    prefill: tuple[int, ...]
    decode: tuple[int, ...]

    @staticmethod
    def powers_of_two(max_len: int, start: int = 128) -> Buckets:
        """The engines' automatic buckets: powers of two from ``start`` up to ``max_len``,
        which is the last bucket even when not a power of two (NxD Inference feature guide,
        "Automatic Bucketing"; Transformers NeuronX developer guide, "Token generation
        buckets", whose default context buckets, half of these, give the same bucket to
        every prompt of a power of two up to half the length)."""
        sizes: list[int] = []
        b = start
        while b < max_len:
            sizes.append(b)
            b *= 2
        sizes.append(max(int(max_len), 1))
        return Buckets(tuple(sizes), tuple(sizes))

    @staticmethod
    def _pad(tokens: float, sizes: tuple[int, ...]) -> float:
        for b in sizes:
            if tokens <= b:
                return float(b)
        return float(tokens)  # longer than the largest bucket: as long as it is

    def prompt(self, tokens: float) -> float:
        """Tokens a prefill of ``tokens`` computes."""
        return self._pad(tokens, self.prefill)

    def context(self, tokens: float) -> float:
        """Positions a decode step with ``tokens`` of context attends."""
        return self._pad(tokens, self.decode)


# All-reduce times tabulated per (network, TP): see ``DeploymentStep._allreduce``.
_AR_TABLES: dict[tuple[str, int], dict[int, float]] = {}
_AR_TABLES_MAX = 256


class StepParts(NamedTuple):
    """One iteration's GPU seconds on one data-parallel rank by where they go
    (``DeploymentStep.gpu_parts``); pipeline stages included."""

    dense_s: float  # dense GEMMs and the LM head: their FLOPs or their weights read
    experts_s: float  # routed experts: grouped GEMMs or weights read, and the kernels' floor
    attention_s: float  # attention FLOPs, the KV cache read, and a sparse indexer's floor
    comm_s: float  # TP all-reduces, MoE dispatch and combine, pipeline sends
    fixed_s: float  # per iteration and per layer: launches, scheduling, sampling

    @property
    def total_s(self) -> float:
        return self.dense_s + self.experts_s + self.attention_s + self.comm_s + self.fixed_s


_NO_WORK = StepParts(0.0, 0.0, 0.0, 0.0, 0.0)


@dataclass(frozen=True)
class DeploymentStep:
    """Iteration time of one data-parallel rank of a deployment (the simulator's
    ``StepModel`` protocol: ``step_s(prefill_tokens, decode_seqs, kv_tokens)``)."""

    arch: ModelArch
    gpu: Gpu
    engine: ServingEngine
    net: Interconnect
    par: ServingParallel
    dense_format: WeightFormat
    moe_format: WeightFormat
    kv_bytes_per_token: float  # whole model, one token
    # GEMM rate on this silicon relative to the engine's fitted one (dense, grouped experts);
    # 1 on the silicon the engine's constants stand for (``plan.serving_deployment.silicon_gemm``)
    gemm_factor: float = 1.0
    moe_gemm_factor: float = 1.0
    # Compiled shapes of a static-shape engine (None: iterations run the shapes they carry):
    # its buckets, and the batch its token-generation graph runs every step, padded slots
    # included
    buckets: Buckets | None = None
    static_batch: int | None = None
    # Weight offload (vLLM's and SGLang's --cpu-offload-gb): the share of this GPU's layer
    # weights held in CPU memory, and the bytes/s at which the GPU reads them there; every
    # forward pass streams them over the link instead of reading them from HBM
    offload_share: float = 0.0
    host_read_bps: float = 0.0
    # Attention-kernel rate on this silicon relative to the engine's fitted one, as a share
    # of the 16-bit peak (``plan.serving_deployment.silicon_attention``)
    attention_factor: float = 1.0
    # The engine's MLA decode kernel as measured on this GPU and KV format (FLOP/s, bytes/s;
    # ``ServingEngine.mla_decode_kernel``): the query rows a speculative verification adds
    # cost what its roofline adds for them. None: they cost as the first
    mla_kernel: tuple[float, float] | None = None

    @property
    def kv_bytes_read_per_token(self) -> float:
        """Bytes a GPU reads per token of a decoding sequence's context below every window,
        all its layers (bands of a compressed cache count their share)."""
        return sum(scale * nbytes
                   for scale, _, _, _, nbytes in self._bands)  # type: ignore[attr-defined]

    def __post_init__(self) -> None:
        if not (0.0 <= self.offload_share <= 1.0) or (
                self.offload_share > 0 and not self.host_read_bps > 0):
            raise ValueError(f"offload_share {self.offload_share} needs a share in [0, 1] and "
                             f"a positive host_read_bps, got {self.host_read_bps}")
        a, g, e, par = self.arch, self.gpu, self.engine, self.par
        c = param_counts(a)
        L = float(a.layers)
        moe_layers = float(a.moe_layers)
        ffn_layers = float(a.n_ffn_layers)
        stage = 1.0 / par.pp
        heads = padded_heads(a, g, e, par.tp)
        dense_params = (c.attention + padding_params(a, heads) + c.dense_mlp + c.shared_experts
                        + c.router) * stage
        head = float(a.vocab * a.hidden)
        consts = {
            "stage_layers": L * stage,
            "moe_layers": moe_layers * stage,
            # Layers whose sparse attention's indexer takes a floor of time (``gpu_parts``)
            "indexed_layers": a.indexed_layers * stage,
            "sparse_floor_s": e.sparse_layer_floor_s(g.id) if a.indexed_layers else 0.0,
            "ffn_layers": ffn_layers * stage,
            "dense_flops_per_token": 2.0 * dense_params / par.tp,
            "dense_bytes": dense_params * self.dense_format.bytes_per_weight / par.tp,
            # The LM head runs on the last stage, for the tokens that produce a token.
            "head_flops_per_token": 2.0 * head / par.tp,
            "head_bytes": head * ACT_BYTES / par.tp,
            "peak_dense": _peak_of(g, self.dense_format.compute) * 1e12 * self.gemm_factor,
            "peak_moe": _peak_of(g, self.moe_format.compute) * 1e12 * self.moe_gemm_factor,
            "peak16": _peak16(g) * 1e12,
            "peak_attn": _peak16(g) * 1e12 * self.attention_factor,
            "hbm": g.memory_bandwidth_gbps * 1e9 * e.decode_bandwidth_efficiency,
            "hbm_kv": g.memory_bandwidth_gbps * 1e9 * (
                e.kv_bandwidth_efficiency or e.decode_bandwidth_efficiency),
            "hbm_moe": g.memory_bandwidth_gbps * 1e9 * e.moe_bandwidth_efficiency,
        }
        if a.is_moe:
            per_expert = c.experts / max(moe_layers, 1.0) / a.experts  # one expert, one layer
            consts["expert_flops_per_copy"] = 2.0 * per_expert / par.moe_tp
            consts["expert_bytes"] = per_expert * self.moe_format.bytes_per_weight / par.moe_tp
            consts["local_experts"] = par.expert_slots(a)
            consts["moe_floor_s"] = e.moe_layer_floor_s(g.id)
        ranks = g.tp_ranks_per_device

        def kv_shard_of(kvh: int) -> float:
            # Each TP rank keeps at least one KV head (replicated when the ranks outnumber
            # the heads: NxD Inference's REPLICATE_TO_TP_DEGREE), and a device holds its
            # ranks'. Multi-head attention pads its KV heads with the query heads;
            # grouped-query attention replicates its KV heads instead. An MLA latent is not
            # split by heads: every TP rank holds it.
            if not kvh:
                return 1.0
            padded = heads if kvh == a.heads else kvh
            return float(min(par.tp * ranks, padded)) / ranks * kvh / padded

        # Softmax attention, band by band (``attention_bands``): the whole context, a sliding
        # window (gpt-oss, Gemma 4), or a compressed cache and its indexer (DeepSeek-V4), each
        # with its FLOPs per attended key and the bytes a GPU reads of it. Padded query heads
        # compute all the same; MLA decodes in the latent, with the model's own heads.
        pad = heads / a.heads
        bands = attention_bands(a)
        elems = sum(b.layers * b.scale * b.kv_elems_per_key for b in bands)
        per_elem = self.kv_bytes_per_token / elems if elems else 0.0
        fp8 = g.peak_tflops.get(Dtype.fp8)
        rows = []
        for b in bands:
            # The indexer scores in FP8: at the FP8 peak where the part has one.
            lane = _peak16(g) / fp8 if b.fp8 and fp8 else 1.0
            rows.append((b.scale, math.inf if b.window is None else b.window,
                         b.layers * stage * b.prefill_flops_per_key * pad * lane / par.tp,
                         b.layers * stage * b.decode_flops_per_key * lane / par.tp
                         * (1.0 if a.is_mla else pad),
                         b.layers * stage * b.kv_elems_per_key * per_elem
                         / kv_shard_of(b.kv_heads)))
        object.__setattr__(self, "_bands", tuple(rows))
        # A recurrent layer (Gated DeltaNet, Mamba-2) costs the same per token whatever the
        # context, and each decoding sequence reads and writes its fixed state there (heads
        # split over TP).
        consts["recurrent_flops_per_token"] = recurrent_flops_per_token(a) * stage / par.tp
        consts["state_bytes_per_seq"] = recurrent_state_bytes_per_sequence(a) * stage / par.tp
        consts["act_bytes_per_token"] = a.hidden * ACT_BYTES
        object.__setattr__(self, "_k", consts)
        # Collectives run inside CUDA graphs: the engine's launch cost, not NCCL's eager one;
        # MoE dispatch kernels (DeepEP, TRT-LLM's all-to-all) write to every peer from one
        # kernel rather than NCCL's send/recv per peer.
        lib = self.net.lib
        if lib is not None:
            net = replace(self.net, lib=lib.model_copy(
                update={"launch_us": e.collective_launch_us,
                        "alltoall_peer_us": (e.a2a_peer_us, e.a2a_peer_us)}))
            object.__setattr__(self, "_net", net)
        else:
            object.__setattr__(self, "_net", self.net)

    # ---- parts ----------------------------------------------------------------------
    def _gemm_eff(self, flops_per_gemm: float) -> float:
        curve = self.__dict__.get("_curve")
        if curve is None:
            e = self.engine
            curve = self.__dict__.setdefault("_curve", (e.gemm_scale, e.gemm_xs, e.gemm_ys))
        x = math.log10(max(flops_per_gemm, 1.0))
        return float(curve[0] * _interp(x, curve[1], curve[2]))

    def _shapes(self, prefill_tokens: float, decode_seqs: float, kv_tokens: float,
                prefill_pairs: float | None) -> tuple[float, float, float, float | None]:
        """(prefill tokens, decode sequences, KV tokens read, prefill pairs) an iteration
        computes: as given, or padded to the compiled buckets (each prompt to its context
        bucket, attending it whole; each decode sequence's context to its bucket, and the
        decode batch to the compiled one, its empty slots attending as the others). Prompts of
        one length L are told apart by their pairs, L^2 / 2 each (one prompt without them)."""
        p, d, kv = float(prefill_tokens), float(decode_seqs), float(kv_tokens)
        b = self.buckets
        if b is None:
            return p, d, kv, prefill_pairs
        if d > 0 and self.static_batch and self.static_batch > d:
            kv, d = kv * self.static_batch / d, float(self.static_batch)
        if p > 0:
            length = 2.0 * prefill_pairs / p if prefill_pairs else p
            prompts = p / length
            padded = b.prompt(length)
            p, prefill_pairs = prompts * padded, prompts * padded * padded / 2.0
        if d > 0:
            kv = d * b.context(kv / d)
        return p, d, kv, prefill_pairs

    def step_s(self, prefill_tokens: float, decode_seqs: float, kv_tokens: float,
               prefill_pairs: float | None = None, queries: float = 1.0) -> float:
        """Seconds for one iteration of one data-parallel rank (0 with no work): the GPU's
        time (``gpu_s``) and the host's work for the running sequences
        (``ServingEngine.seq_overhead_s``), added for an engine that schedules synchronously
        and overlapped (the longer of the two) for one that schedules asynchronously.
        ``queries``: tokens each decode sequence carries (1 + draft tokens when a
        speculative iteration verifies drafts; each reads the sequence's KV once more in
        the attention FLOPs, the KV bytes are read once)."""
        # The steady state's solvers ask the same iterations of a step model many times
        # over (a sixth of a plan's calls are new): remembered per step model, which is
        # frozen.
        memo = self.__dict__.setdefault("_step_memo", {})
        key = (prefill_tokens, decode_seqs, kv_tokens, prefill_pairs, queries)
        got = memo.get(key)
        if got is not None:
            return float(got)
        if len(memo) > 65536:
            memo.clear()
        gpu = self.gpu_s(prefill_tokens, decode_seqs, kv_tokens, prefill_pairs, queries)
        e = self.engine
        if gpu <= 0 or e.seq_overhead_s <= 0:
            memo[key] = gpu
            return gpu
        host = e.seq_overhead_s * float(decode_seqs)
        out = gpu + host if not e.async_scheduling else max(gpu, host)
        memo[key] = out
        return out

    def gpu_s(self, prefill_tokens: float, decode_seqs: float, kv_tokens: float,
              prefill_pairs: float | None = None, queries: float = 1.0) -> float:
        """Seconds the GPUs of one data-parallel rank take for one iteration, host work for
        the running sequences aside (``step_s``)."""
        return self.gpu_parts(prefill_tokens, decode_seqs, kv_tokens, prefill_pairs,
                              queries).total_s

    def gpu_parts(self, prefill_tokens: float, decode_seqs: float, kv_tokens: float,
                  prefill_pairs: float | None = None, queries: float = 1.0) -> StepParts:
        """``gpu_s`` by where its seconds go (``StepParts``; all zero with no work)."""
        p, d, kv_tokens, prefill_pairs = self._shapes(prefill_tokens, decode_seqs, kv_tokens,
                                                      prefill_pairs)
        n = p + d * queries
        if n <= 0:
            return _NO_WORK
        k = self._k  # type: ignore[attr-defined]
        a, e, par = self.arch, self.engine, self.par
        layers = k["stage_layers"]
        # Dense GEMMs (six groups per layer) and the LM head for the tokens that emit one.
        out_tokens = d * queries + (1.0 if p > 0 else 0.0)
        flops_d = k["dense_flops_per_token"] * n
        flops_h = k["head_flops_per_token"] * out_tokens
        per_gemm = (flops_d + flops_h) / max(6.0 * layers, 1.0)
        compute = (flops_d + flops_h) / (k["peak_dense"] * self._gemm_eff(per_gemm))
        stream = (k["dense_bytes"] + k["head_bytes"]) / k["hbm"]
        if self.offload_share > 0:
            stream += self._offloaded_s(k["dense_bytes"], k["hbm"])
        dense = max(compute, stream)
        # Routed experts: every rank's tokens, top_k copies, over the MoE group.
        experts = 0.0
        if a.is_moe and k["moe_layers"] > 0:
            tokens_all = n * (par.adp if par.adp > 1 else 1)
            copies = tokens_all * a.top_k / par.moe_ep * e.expert_imbalance
            flops_e = copies * k["expert_flops_per_copy"] * k["moe_layers"]
            touched = _busiest_touched(k["local_experts"], par.moe_ep, a.top_k, a.experts,
                                       tokens_all)
            bytes_e = touched * k["expert_bytes"] * k["moe_layers"]
            per_expert_gemm = copies / max(k["local_experts"], 1) * k["expert_flops_per_copy"]
            eff = e.moe_gemm_scale * self._gemm_eff(per_expert_gemm / 3.0)
            stream_e = bytes_e / k["hbm_moe"]
            if self.offload_share > 0:
                stream_e += self._offloaded_s(bytes_e, k["hbm_moe"])
            # The experts' kernels take a floor of time per MoE layer whatever their work
            experts = (max(flops_e / (k["peak_moe"] * eff), stream_e)
                       + k["moe_floor_s"] * k["moe_layers"])
        # Attention: prefill pairs at the attention kernels' rate, decode KV read.
        pf, dec, kv_read = _attended(self._bands, p, d, kv_tokens,  # type: ignore[attr-defined]
                                        prefill_pairs)
        rows, extra = queries, 0.0
        if queries > 1.0 and self.mla_kernel is not None and a.is_mla:
            # One kernel pass reads each sequence's latent cache for all its query rows: the
            # rows beyond the first add their FLOPs where the kernel is compute-bound
            rc, rm = self.mla_kernel
            rows, extra = 1.0, (max(dec * queries / rc, kv_read / rm)
                                - max(dec / rc, kv_read / rm))
        attn = (pf / (k["peak_attn"] * e.attention_efficiency)
                + (dec * rows + k["recurrent_flops_per_token"] * n)
                / (k["peak16"] * e.attention_efficiency)
                + (kv_read + 2.0 * k["state_bytes_per_seq"] * d)
                / k["hbm_kv"]) + extra
        # A sparse layer's indexer (its projections, FP8 scoring and top-k) takes a floor
        # of time per layer beyond its work where the iteration decodes, as the engine's
        # decode modules measure it (their prefill is not measured against a plain one)
        if d > 0:
            attn += k["sparse_floor_s"] * k["indexed_layers"]
        comm = self._comm(n, layers, k)
        graph = p == 0 and d <= e.cuda_graph_max_batch
        fixed = (e.graph_step_overhead_s if graph else e.step_overhead_s) + (
            e.layer_overhead_s * layers)
        # Pipeline stages run one after another for one iteration's tokens
        stages = float(par.pp)
        return StepParts(dense * stages, experts * stages, attn * stages, comm * stages,
                         fixed * stages)

    def _offloaded_s(self, nbytes: float, hbm: float) -> float:
        """Seconds the offloaded share of ``nbytes`` of weights adds to reading them all
        from HBM at ``hbm`` bytes/s: that share crosses the CPU-GPU link instead."""
        return nbytes * self.offload_share * (1.0 / self.host_read_bps - 1.0 / hbm)

    def speculative_extra_s(self, decode_seqs: float, kv_tokens: float,
                            draft_tokens: int) -> float:
        """Seconds a speculative decode iteration adds to a plain one for ``decode_seqs``
        sequences: the verification carries 1 + ``draft_tokens`` tokens per sequence, and
        the drafts come from ``draft_tokens`` sequential passes of one extra decoder layer
        and the shared LM head (DeepSeek-V3's MTP module, run k times as TensorRT-LLM's
        MTP-Eagle path and SGLang's EAGLE worker do), captured in the same CUDA graph."""
        d = float(decode_seqs)
        if d <= 0 or draft_tokens <= 0:
            return 0.0
        k = self._k  # type: ignore[attr-defined]
        e, par = self.engine, self.par
        plain = self.gpu_s(0, d, kv_tokens)
        verify = self.gpu_s(0, d, kv_tokens, queries=1.0 + draft_tokens) - plain
        fixed = e.graph_step_overhead_s + e.layer_overhead_s * k["stage_layers"]
        layer = max(plain / par.pp - fixed, 0.0) / max(k["stage_layers"], 1.0)
        head = max(k["head_flops_per_token"] * d / (k["peak_dense"] * self._gemm_eff(
            k["head_flops_per_token"] * d)), k["head_bytes"] / k["hbm"])
        draft = draft_tokens * (layer + head + e.layer_overhead_s)
        return float(verify + draft)

    def work_s(self, prefill_tokens: float, decode_seqs: float, kv_tokens: float,
               prefill_pairs: float | None = None) -> tuple[float, float]:
        """(tensor-core seconds, HBM seconds) of one iteration on one GPU: its FLOPs at the
        datasheet peaks and its bytes at the datasheet bandwidth, the same FLOPs and bytes
        ``step_s`` times at the engine's efficiencies. The busy fractions of the GPU's
        power model (``model/serving_power``) are these over the step time."""
        p, d, kv_tokens, prefill_pairs = self._shapes(prefill_tokens, decode_seqs, kv_tokens,
                                                      prefill_pairs)
        n = p + d
        if n <= 0:
            return 0.0, 0.0
        k = self._k  # type: ignore[attr-defined]
        a, par = self.arch, self.par
        out_tokens = d + (1.0 if p > 0 else 0.0)
        tensor = (k["dense_flops_per_token"] * n + k["head_flops_per_token"] * out_tokens) \
            / k["peak_dense"]
        nbytes = k["dense_bytes"] + k["head_bytes"]
        if a.is_moe and k["moe_layers"] > 0:
            tokens_all = n * (par.adp if par.adp > 1 else 1)
            copies = tokens_all * a.top_k / par.moe_ep
            tensor += copies * k["expert_flops_per_copy"] * k["moe_layers"] / k["peak_moe"]
            touched = _busiest_touched(k["local_experts"], par.moe_ep, a.top_k, a.experts,
                                       tokens_all)
            nbytes += touched * k["expert_bytes"] * k["moe_layers"]
        pf, dec, kv_read = _attended(self._bands, p, d, kv_tokens,  # type: ignore[attr-defined]
                                        prefill_pairs)
        tensor += (pf + dec + k["recurrent_flops_per_token"] * n) / k["peak16"]
        nbytes += kv_read + 2.0 * k["state_bytes_per_seq"] * d
        hbm = self.gpu.memory_bandwidth_gbps * 1e9
        return tensor * par.pp, nbytes / hbm * par.pp

    AR_GRID = 0.02  # decades of message size between tabulated all-reduce times

    def _allreduce(self, nbytes: float) -> float:
        """The TP all-reduce of ``nbytes`` (seconds), interpolated between NCCL-model times
        tabulated every 0.02 decade of size (within 0.1 %; the tuner model is costly and a
        solver asks for thousands of sizes)."""
        memo = self.__dict__.get("_ar_memo")
        if memo is None:
            # Shared by every step model on the same network and TP (a table of thousands of
            # rows builds a step model per row, mostly on a few networks): the values depend
            # on nothing else.
            key = (repr(self._net), self.par.tp)  # type: ignore[attr-defined]
            memo = _AR_TABLES.get(key)
            if memo is None:
                if len(_AR_TABLES) >= _AR_TABLES_MAX:
                    _AR_TABLES.clear()
                memo = _AR_TABLES[key] = {}
            object.__setattr__(self, "_ar_memo", memo)
        x = math.log10(max(nbytes, 1.0)) / self.AR_GRID
        i = math.floor(x)
        for j in (i, i + 1):
            if j not in memo:
                memo[j] = float(allreduce_s(10.0 ** (j * self.AR_GRID), self.par.tp, 1.0,
                                            self._net))  # type: ignore[attr-defined]
        return memo[i] + (memo[i + 1] - memo[i]) * (x - i)

    def _comm(self, n: float, layers: float, k: dict[str, float]) -> float:
        a, par, net = self.arch, self.par, self._net  # type: ignore[attr-defined]
        act = n * k["act_bytes_per_token"]
        total = 0.0
        ar = self._allreduce(act) if par.tp > 1 else 0.0
        moe_layers = k["moe_layers"] if a.is_moe else 0.0
        dense_layers = k["ffn_layers"] - moe_layers
        # The token mixer's output all-reduce on every layer; the dense MLP's on dense FFNs.
        total += ar * (layers + dense_layers)
        if moe_layers:
            group = par.moe_tp * par.moe_ep
            if par.adp > 1 and group > 1:
                # Dispatch (FP8 where the experts run FP8 or FP4) and combine (16-bit) of each
                # GPU's tokens (a rank's tp GPUs split its tokens) over the MoE group.
                tokens = n / par.tp
                # (on floats, and once per token count: the steady state's solvers ask for
                # the same few counts millions of times)
                memo = self.__dict__.setdefault("_a2a_memo", {})
                if len(memo) > 65536:  # a long simulation's many counts: start over
                    memo.clear()
                a2a = memo.get(tokens)
                if a2a is None:
                    # LatentMoE: tokens travel at the latent width.
                    disp_b = a.expert_width * (1.0 if self.moe_format.compute != Dtype.bf16
                                               else 2.0)
                    disp = float(moe_dispatch_s(disp_b, tokens, a.top_k, group, 1.0, net,
                                                ScalarOps))
                    comb = float(moe_dispatch_s(a.expert_width * ACT_BYTES, tokens, a.top_k,
                                                group, 1.0, net, ScalarOps))
                    a2a = memo[tokens] = disp + comb
                # The busiest GPU receives (and returns) imbalance x the mean copies, and the
                # all-to-all ends with it, as the training model charges it.
                total += a2a * self.engine.expert_imbalance * moe_layers
            else:
                total += ar * moe_layers  # the MoE output all-reduce, as TP uses it
        return total


def kv_bytes_per_token(arch: ModelArch, kv_format: str) -> float:
    """KV-cache bytes per token, whole model, for an engine's KV format (bf16 or fp8)."""
    return kv_cache_bytes_per_token(arch, "fp8" if kv_format == "fp8" else "bf16")


__all__ = [
    "Buckets",
    "DeploymentStep",
    "ServingParallel",
    "WeightFormat",
    "kv_bytes_per_token",
    "padded_heads",
    "padding_params",
    "weight_format",
]
