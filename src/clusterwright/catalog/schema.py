"""Pydantic models of catalog entries.

Units are in field names where they are not SI: ``memory_gb`` is decimal GB (10^9 bytes),
``memory_bandwidth_gbps`` is GB/s (bytes), ``speed_gbps`` on links and ports is Gb/s (bits),
``peak_tflops`` is dense TFLOP/s without sparsity. Every entry cites its ``source``.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictStr,
    model_validator,
)

# Strict, finite numbers (no booleans or quoted strings; no .inf or .nan; integers at most
# 2**53) for every catalog field, as for scenarios.
from clusterwright.spec.numbers import (
    FiniteFloat,
    NonNegativeFloat,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
)

# Ids are strict strings: YAML 1.1 turns `1.10` into a float and `no` into False, and an id
# silently coerced from those would never match what the user meant.
EntryId = Annotated[StrictStr, Field(min_length=1, pattern=r"^[a-z0-9][a-z0-9._-]*$")]
Source = Annotated[StrictStr, Field(min_length=8)]
Share = Annotated[FiniteFloat, Field(gt=0, le=1)]  # a fraction in (0, 1]: efficiencies, ratios


class Dtype(StrEnum):
    """Numeric formats a tensor core computes in (peak_tflops keys)."""

    fp64 = "fp64"
    tf32 = "tf32"
    fp16 = "fp16"
    bf16 = "bf16"
    fp8 = "fp8"
    int8 = "int8"
    fp4 = "fp4"


class _Entry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: EntryId
    name: StrictStr
    source: Source


class Assumption(BaseModel):
    """A modelling constant (reserve, efficiency) with the place it comes from."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    value: FiniteFloat
    unit: StrictStr
    source: Source


class ScaleUpLink(BaseModel):
    """The GPU-to-GPU link inside a server or rack (NVLink, Infinity Fabric, ...)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["nvlink", "infinity-fabric", "ethernet", "pcie"]
    generation: StrictStr | None = None
    links: PositiveInt | None = None
    bandwidth_gbps_per_direction: PositiveFloat  # GB/s (bytes) per direction, per GPU


class MigProfile(BaseModel):
    """One MIG GPU-instance profile (NVIDIA MIG user guide; mig-parted defaults)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: StrictStr  # e.g. "1g.10gb"
    profile_id: NonNegativeInt
    memory_gb: PositiveFloat  # decimal GB as in the profile name
    compute_slices: PositiveInt  # of 7
    memory_slices: PositiveInt  # of 8
    max_instances: PositiveInt
    sm_count: PositiveInt | None = None
    start_slots: list[NonNegativeInt] = Field(default_factory=list)


class Gpu(_Entry):
    vendor: Literal["nvidia", "amd", "intel"]
    form_factor: Literal["sxm", "pcie", "oam", "superchip"]
    memory_gb: PositiveFloat
    # What CUDA reports (nvidia-smi's total), GiB: HBM is sized in binary units, so "80GB" is
    # about 80 GiB less a driver reserve. Serving KV capacity uses it where known.
    memory_visible_gib: PositiveFloat | None = None
    memory_type: StrictStr
    memory_bandwidth_gbps: PositiveFloat  # GB/s
    peak_tflops: dict[Dtype, PositiveFloat]  # dense
    tdp_w: PositiveFloat
    scale_up: ScaleUpLink
    pcie_gen: PositiveInt
    mig_profiles: list[MigProfile] = Field(default_factory=list)
    # Names other tools give this GPU's systems (NVIDIA AIConfigurator: h100_sxm, b200_sxm,
    # gb200, ...), so measurements that name a system resolve.
    system_names: list[StrictStr] = Field(default_factory=list)
    price_usd: PositiveFloat | None = None
    price_source: StrictStr | None = None

    @model_validator(mode="after")
    def _price_cited(self) -> Gpu:
        if self.price_usd is not None and not self.price_source:
            raise ValueError("price_usd needs a price_source (price list or report, with date)")
        return self

    @property
    def visible_memory_bytes(self) -> float:
        """Bytes the runtime can allocate: nvidia-smi's total where known, else the
        marketed decimal GB (the lower of the two)."""
        if self.memory_visible_gib is not None:
            return self.memory_visible_gib * 2.0**30
        return self.memory_gb * 1e9


class NicPorts(BaseModel):
    """A group of identical NICs in a server: count x speed (Gb/s per NIC)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    nic: EntryId | None = None  # catalog NIC id, when the part is known
    count: NonNegativeInt
    speed_gbps: PositiveFloat  # Gb/s per NIC


class Cpu(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    model: StrictStr
    count: PositiveInt
    cores_per_cpu: PositiveInt


class Server(_Entry):
    """A server (or a rack-scale system such as GB200 NVL72) as bought."""

    kind: Literal["server", "rack"] = "server"
    gpu: EntryId
    gpus: PositiveInt
    nvlink_domain_gpus: PositiveInt  # GPUs sharing one scale-up domain
    backend_nics: NicPorts  # compute fabric (east-west), usually one per GPU
    frontend_nics: NicPorts  # in-band / storage / north-south
    oob_ports: NonNegativeInt = 1  # BMC management ports
    # Compute trays that attach to the network separately (18 in a GB200 NVL72 rack). The
    # backend NICs are split evenly over them: each host carries backend_nics.count / hosts rails.
    hosts: PositiveInt = 1
    # Backend NIC links brought out per cage (DGX H100: 4 twin-port OSFP cages carry 8 NICs).
    backend_links_per_cage: PositiveInt = 1
    # Backend port name per rail, in rail (GPU) order, where the vendor documents the cage-to-GPU
    # map (DGX H100 user guide Table 6); empty means ports are named nic0..nicN-1 in rail order.
    backend_port_names: list[StrictStr] = Field(default_factory=list)
    cpus: Cpu
    dram_gb: PositiveFloat
    nvme_tb: NonNegativeFloat
    max_power_kw: PositiveFloat
    rack_units: PositiveInt
    weight_kg: PositiveFloat | None = None
    weight_class: Literal["standard", "heavy", "rack"]
    cooling: Literal["air", "liquid", "air-or-liquid"]
    price_usd: PositiveFloat | None = None
    price_source: StrictStr | None = None

    @model_validator(mode="after")
    def _domain_fits(self) -> Server:
        if self.nvlink_domain_gpus > self.gpus and self.kind == "server":
            raise ValueError(
                f"nvlink_domain_gpus={self.nvlink_domain_gpus} exceeds gpus={self.gpus}"
            )
        if self.price_usd is not None and not self.price_source:
            raise ValueError("price_usd needs a price_source (price list or report, with date)")
        if self.backend_nics.count % self.hosts:
            raise ValueError(
                f"backend_nics.count={self.backend_nics.count} is not a multiple of "
                f"hosts={self.hosts}"
            )
        names = self.backend_port_names
        if names and len(names) != self.backend_nics.count // self.hosts:
            raise ValueError(
                f"backend_port_names has {len(names)} names for "
                f"{self.backend_nics.count // self.hosts} rails per host"
            )
        if len(set(names)) != len(names):
            raise ValueError("backend_port_names repeats a name")
        return self

    @property
    def rails(self) -> int:
        """Backend NIC links per host: one rail each in a rail-optimized fabric."""
        return self.backend_nics.count // self.hosts


class Nic(_Entry):
    vendor: StrictStr
    protocols: list[Literal["infiniband", "ethernet"]]
    ports: PositiveInt
    port_speed_gbps: PositiveFloat  # Gb/s per port
    pcie_gen: PositiveInt
    pcie_lanes: PositiveInt
    cage: StrictStr  # OSFP, QSFP112, ...
    power_w: PositiveFloat
    price_usd: PositiveFloat | None = None
    price_source: StrictStr | None = None


class PortConfig(BaseModel):
    """One way to run a switch's cages: `ports` logical ports of `speed_gbps` Gb/s."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    ports: PositiveInt
    speed_gbps: PositiveFloat


class Switch(_Entry):
    vendor: StrictStr
    asic: StrictStr
    protocol: Literal["infiniband", "ethernet"]
    roles: list[Literal["backend", "frontend", "inband", "oob"]]
    cages: PositiveInt
    cage: StrictStr
    port_configs: list[PortConfig] = Field(min_length=1)
    capacity_tbps: PositiveFloat  # aggregate one direction, Tb/s
    rack_units: PositiveInt
    max_power_w: PositiveFloat  # without optics unless the source says otherwise
    typical_power_w: PositiveFloat | None = None
    latency_ns: PositiveFloat | None = None  # port to port, as the datasheet states
    cooling: Literal["air", "liquid"] = "air"
    price_usd: PositiveFloat | None = None
    price_source: StrictStr | None = None

    @model_validator(mode="after")
    def _capacity_consistent(self) -> Switch:
        for pc in self.port_configs:
            tbps = pc.ports * pc.speed_gbps / 1000
            if tbps > self.capacity_tbps * 1.001:
                raise ValueError(
                    f"port config {pc.ports}x{pc.speed_gbps}G = {tbps:g} Tb/s exceeds "
                    f"capacity_tbps={self.capacity_tbps}"
                )
        return self


class Transceiver(_Entry):
    """An optical module. A twin-port OSFP serves two links (``links`` = 2)."""

    vendor: StrictStr
    form_factor: StrictStr  # OSFP, QSFP112, QSFP-DD
    links: PositiveInt  # logical links one module terminates
    speed_gbps: PositiveFloat  # Gb/s per link
    media: Literal["smf", "mmf"]
    reach_m: PositiveFloat
    connector: StrictStr  # MPO-12/APC, duplex LC, ...
    # Which cages it fits: switch cages take finned-top (IHS) modules, host cages flat-top (RHS).
    side: Literal["switch", "host", "any"] = "any"
    status: Literal["active", "discontinued"] = "active"  # discontinued parts are not chosen
    power_w: PositiveFloat
    price_usd: PositiveFloat | None = None
    price_source: StrictStr | None = None


class Cable(_Entry):
    """A cable. DAC/AEC/AOC carry their own ends; fiber needs a transceiver at each end."""

    vendor: StrictStr
    # acc: linear active copper; utp: twisted pair (RJ45, management)
    kind: Literal["dac", "aec", "acc", "aoc", "fiber", "utp"]
    links: PositiveInt = 1  # logical links one cable carries (twin-port 2x400G = 2)
    speed_gbps: PositiveFloat  # Gb/s per link it carries
    reach_m: PositiveFloat  # longest length offered
    lengths_m: list[PositiveFloat] = Field(default_factory=list)
    fiber: Literal["smf", "mmf"] | None = None
    # Cage type of its built-in ends (DAC/ACC/AEC/AOC/UTP): OSFP, QSFP28, QSFP112, RJ45 ...
    form_factor: StrictStr | None = None
    connector: StrictStr | None = None  # fibre: MPO-12/APC, MPO-12/UPC, duplex LC ...
    status: Literal["active", "discontinued"] = "active"  # discontinued parts are not chosen
    power_w: NonNegativeFloat = 0.0  # per cable, both ends (AEC/AOC are powered)
    price_usd: PositiveFloat | None = None
    price_source: StrictStr | None = None


    @model_validator(mode="after")
    def _ends(self) -> Cable:
        if self.kind != "fiber" and self.form_factor is None:
            raise ValueError(f"a {self.kind} cable needs form_factor (the cage type of its ends)")
        if self.kind == "fiber" and (self.fiber is None or self.connector is None):
            raise ValueError("a fiber cable needs fiber (smf or mmf) and connector")
        return self


class CloudOffer(_Entry):
    provider: StrictStr
    instance: StrictStr
    gpu: EntryId
    gpus: PositiveInt
    on_demand_usd_per_hour: PositiveFloat  # whole instance
    committed_usd_per_hour: PositiveFloat | None = None  # whole instance
    commitment: StrictStr | None = None  # e.g. "1-year reserved", "3-year CUD"
    # The term of committed_usd_per_hour when it is a 1- or 3-year reservation (a scenario's
    # cloud.term 1y / 3y matches it); None for block or contract commitments.
    committed_term: Literal["1y", "3y"] | None = None
    region: StrictStr
    price_date: StrictStr  # YYYY-MM
    interconnect: StrictStr | None = None  # backend networking as offered

    @model_validator(mode="after")
    def _commit_named(self) -> CloudOffer:
        if self.committed_usd_per_hour is not None and not self.commitment:
            raise ValueError("committed_usd_per_hour needs `commitment` (term and kind)")
        if self.committed_term is not None and self.committed_usd_per_hour is None:
            raise ValueError("committed_term needs committed_usd_per_hour")
        return self


class Activation(StrEnum):
    gelu = "gelu"
    relu = "relu"
    swiglu = "swiglu"
    geglu = "geglu"


class ModelArch(_Entry):
    """A decoder-only transformer. Parameter count is derived and checked against
    ``published_params`` (a test holds every catalog model within 1 %)."""

    family: StrictStr = "gpt"
    layers: PositiveInt
    hidden: PositiveInt
    heads: PositiveInt
    kv_heads: PositiveInt | None = None  # None means multi-head attention (= heads)
    head_dim: PositiveInt | None = None  # None means hidden / heads
    ffn_hidden: PositiveInt  # dense FFN width (dense layers of a MoE model too)
    vocab: PositiveInt
    activation: Activation = Activation.gelu
    tied_embeddings: StrictBool = False
    position: Literal["learned", "rope", "alibi"] = "rope"
    max_seq_len: PositiveInt
    norm: Literal["layernorm", "rmsnorm"] = "layernorm"
    bias: StrictBool = False  # biases in linear layers (GPT-2/3 style)
    # Mixture of experts
    experts: NonNegativeInt = 0  # routed experts per MoE layer; 0 = dense model
    top_k: NonNegativeInt = 0
    shared_experts: NonNegativeInt = 0
    expert_ffn_hidden: PositiveInt | None = None
    dense_layers: NonNegativeInt = 0  # leading layers with a dense FFN in a MoE model
    # Group-limited routing (DeepSeek-V3's node-limited routing): the experts form
    # ``route_groups`` contiguous groups and each token picks experts inside
    # ``route_groups_per_token`` of them.
    route_groups: PositiveInt | None = None
    route_groups_per_token: PositiveInt | None = None
    # Multi-head latent attention (DeepSeek-V2/V3)
    q_lora_rank: PositiveInt | None = None
    kv_lora_rank: PositiveInt | None = None
    qk_nope_head_dim: PositiveInt | None = None
    qk_rope_head_dim: PositiveInt | None = None
    v_head_dim: PositiveInt | None = None
    # Banded (sliding-window) attention on some layers: each token sees the last
    # ``sliding_window`` tokens there (gpt-oss: every other layer, 128 tokens).
    sliding_window: PositiveInt | None = None
    sliding_window_layers: NonNegativeInt = 0
    # Hugging Face repository ids that publish this architecture (quantized checkpoints of the
    # same shape included), so measurements that name a model by its repository resolve.
    hf_ids: list[StrictStr] = Field(default_factory=list)
    # What the authors publish, to check the derived count against
    published_params: PositiveFloat | None = None  # required for catalog entries (tested)
    # How far the derived count may sit from published_params (fraction). 1 % unless the
    # publisher's own figure does not follow from its config; the entry's source says why.
    published_params_tolerance: Annotated[FiniteFloat, Field(gt=0, le=0.05)] = 0.01
    published_active_params: PositiveFloat | None = None

    @model_validator(mode="after")
    def _consistent(self) -> ModelArch:
        kv = self.kv_heads or self.heads
        if self.heads % kv:
            raise ValueError(f"heads={self.heads} is not a multiple of kv_heads={kv}")
        if self.head_dim is None and self.hidden % self.heads and not self.is_mla:
            raise ValueError(
                f"hidden={self.hidden} is not a multiple of heads={self.heads}; set head_dim"
            )
        if self.experts:
            if not (0 < self.top_k <= self.experts):
                raise ValueError(f"top_k={self.top_k} must be in 1..experts={self.experts}")
            if self.dense_layers >= self.layers:
                raise ValueError("dense_layers must leave at least one MoE layer")
        elif self.top_k or self.shared_experts or self.dense_layers:
            raise ValueError("top_k/shared_experts/dense_layers need experts > 0")
        groups = (self.route_groups, self.route_groups_per_token)
        if any(g is not None for g in groups):
            g, per = groups
            if g is None or per is None or not self.experts:
                raise ValueError("route_groups and route_groups_per_token go together, with "
                                 "experts")
            if self.experts % g or per > g:
                raise ValueError(f"route_groups={g} must divide experts={self.experts} and be "
                                 f">= route_groups_per_token={per}")
        mla = [self.kv_lora_rank, self.qk_nope_head_dim, self.qk_rope_head_dim, self.v_head_dim]
        if any(v is not None for v in mla) and not all(v is not None for v in mla):
            raise ValueError(
                "MLA needs kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim and v_head_dim"
            )
        return self

    @property
    def is_moe(self) -> bool:
        return self.experts > 0

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank is not None

    @property
    def n_kv_heads(self) -> int:
        return self.kv_heads or self.heads

    @property
    def d_head(self) -> int:
        return self.head_dim or self.hidden // self.heads


Protocols = tuple[NonNegativeFloat, NonNegativeFloat, NonNegativeFloat]  # LL, LL128, Simple
Tiered = tuple[NonNegativeFloat, NonNegativeFloat, NonNegativeFloat]  # 1 node, 2 nodes, more


class CollectiveLib(_Entry):
    """A collective library's cost model for one GPU architecture: NCCL's (or RCCL's) own
    tuner constants (NVIDIA/nccl ``src/graph/tuning.cc``), read from a stated release, plus the
    few numbers its tuner leaves out (launch floor, all-to-all per-peer cost), each fitted on
    measured nccl-tests curves named in ``calibration``. Latencies in microseconds and
    bandwidths in GB/s as the library writes them; ``model/collectives.py`` converts.
    """

    library: Literal["nccl", "rccl"]
    version: StrictStr
    arch: Literal["ampere", "hopper", "blackwell", "cdna3"]
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
    fp8_recipes: list[Fp8Recipe] = Field(default_factory=list)  # empty: no FP8 training
    dp_bucket_params: PositiveFloat = 4.0e7  # gradient bucket (Megatron-Core default)
    # ZeRO-3 collectives per layer and pass: 1 when a layer's parameters are gathered as one
    # flat buffer (FSDP units, Megatron-FSDP); one per parameter tensor when the framework
    # gathers tensor by tensor (DeepSpeed ZeRO-3 of 2021), each paying the ring latency.
    zero3_collectives_per_layer: PositiveInt = 1
    # Share of the ring's bus bandwidth the framework's ZeRO-3 collectives reach (1: NCCL's,
    # as FSDP's flat per-layer buffers do; DeepSpeed's 2021 partition gathers reached less).
    zero3_busbw_fraction: Share = 1.0

    @model_validator(mode="after")
    def _defaults_first(self) -> StackFeatures:
        if not self.schedules or not self.ep_overlap or not self.ep_dispatchers:
            raise ValueError("schedules, ep_overlap and ep_dispatchers list at least one entry")
        return self


class Stack(_Entry):
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
    # None: no FP8 calibration (the 16-bit curve stands in, and estimates say so).
    fp8_gemm_ratio: Share | None = None
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
    step_overhead_s: NonNegativeFloat = 0.0  # per step: data loading, logging, launch
    calibration: StrictStr
    serving: ServingEfficiency | None = None  # inference engine efficiencies, when calibrated

    @model_validator(mode="after")
    def _curve(self) -> Stack:
        xs = [x for x, _ in self.gemm_efficiency]
        if xs != sorted(xs) or len(set(xs)) != len(xs):
            raise ValueError("gemm_efficiency points must have strictly ascending log10 FLOPs")
        return self


FailureUnit = Literal["gpu", "host", "switch", "link", "job"]


class FailureMode(_Entry):
    """One cause of job interruption and its rate per unit it scales with (model/reliability.py).

    ``rate_per_million_unit_hours`` is failures per 10^6 unit-hours of the ``unit`` (GPU, host,
    fabric switch, fabric link, or the job itself). When the observation it was derived from is
    given (``observed_count`` in ``observed_unit_hours``), the rate must equal their ratio.
    ``gpus`` lists the GPU ids a GPU-specific set of entries applies to; empty means any GPU.
    """

    category: Literal[
        "gpu", "host", "network", "dependency", "unplanned-maintenance", "unknown", "planned"
    ]
    unit: FailureUnit
    rate_per_million_unit_hours: NonNegativeFloat
    needs_repair: StrictBool  # a node leaves the pool for repair (a hot spare can stand in)
    observed_count: NonNegativeInt | None = None
    observed_unit_hours: PositiveFloat | None = None
    gpus: list[EntryId] = Field(default_factory=list)

    @model_validator(mode="after")
    def _rate_matches_observation(self) -> FailureMode:
        if (self.observed_count is None) != (self.observed_unit_hours is None):
            raise ValueError("give observed_count and observed_unit_hours together")
        if self.observed_count is not None and self.observed_unit_hours is not None:
            derived = self.observed_count / self.observed_unit_hours * 1e6
            if abs(derived - self.rate_per_million_unit_hours) > 1e-3 * max(derived, 1e-12):
                raise ValueError(
                    f"rate_per_million_unit_hours={self.rate_per_million_unit_hours:g} does not "
                    f"match observed_count / observed_unit_hours * 1e6 = {derived:.6g}"
                )
        return self

    @property
    def planned(self) -> bool:
        return self.category == "planned"

    @property
    def rate_per_hour(self) -> float:
        """Failures per unit-hour."""
        return self.rate_per_million_unit_hours / 1e6


class EngineRegime(BaseModel):
    """How an engine's model did on the measured rows of one GPU and serving mode of
    validation/serving_silicon.csv (generated by scripts/calibrate_serving_engines.py
    --regimes; a test keeps it in step with the model)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    gpu: EntryId
    mode: Literal["agg", "disagg"]
    rows: PositiveInt
    ttft_mape: Annotated[FiniteFloat, Field(ge=0)]
    tpot_mape: Annotated[FiniteFloat, Field(ge=0)]


class ServingEngine(_Entry):
    """An inference engine (a backend at a range of versions): how it schedules and what its
    kernels reach, constants shared across GPUs (the GPU enters through its datasheet), each
    fitted once by the script ``calibration`` names. Rates are fractions of the datasheet's."""

    backend: Literal["trtllm", "vllm", "sglang"]
    versions: list[StrictStr] = Field(min_length=1)  # version prefixes; "" matches any
    # Scheduler
    max_num_batched_tokens: PositiveInt  # tokens one iteration may carry
    # The budget on GPUs with at least 160 GB (SGLang picks a larger chunk there); None: same
    max_num_batched_tokens_160gb: PositiveInt | None = None
    chunked_prefill: StrictBool  # prompts split over iterations within the token budget
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
    # Routed experts' weights streamed by grouped GEMMs at small batches
    moe_bandwidth_efficiency: Share = 0.8
    gemm_efficiency: list[tuple[FiniteFloat, Share]] = Field(
        min_length=2)  # (log10 FLOPs of one GEMM, fraction of the format's dense peak)
    gemm_scale: Annotated[FiniteFloat, Field(gt=0, le=1.5)] = 1.0
    moe_gemm_scale: Annotated[FiniteFloat, Field(gt=0, le=1.5)] = 1.0  # grouped expert GEMMs
    attention_efficiency: Share
    expert_imbalance: Annotated[FiniteFloat, Field(ge=1)] = 1.0  # busiest expert GPU over the mean
    # Fixed costs, seconds
    step_overhead_s: NonNegativeFloat  # an eager iteration: scheduling, sampling, launches
    graph_step_overhead_s: NonNegativeFloat  # a decode-only iteration replayed as a graph
    layer_overhead_s: NonNegativeFloat = 0.0
    collective_launch_us: NonNegativeFloat = 0.0  # a collective inside a CUDA graph
    a2a_peer_us: NonNegativeFloat = 0.0  # MoE dispatch/combine: cost per peer
    kv_transfer_efficiency: Share = 0.8  # disaggregated KV
    # Time to first token outside the iterations: HTTP, tokenization, scheduling hand-off and
    # the first token's way back (seconds)
    frontend_s: NonNegativeFloat = 0.0
    # Share of the other running clients' prompts a new prompt waits behind: closed-loop
    # clients with equal lengths arrive in clusters
    arrival_burst: Annotated[FiniteFloat, Field(ge=0, le=1)] = 0.0
    # Iterations between a prompt's prefill and its first token reaching the client
    # (overlapped scheduling returns tokens a step late; detokenization, streaming)
    first_token_iterations: Annotated[FiniteFloat, Field(ge=0, le=50)] = 0.0
    # Iterations a new prompt is held under attention data parallelism so that every rank
    # runs its prefill in the same iteration (TRT-LLM attention_dp_config balance timeout)
    adp_context_wait_iterations: Annotated[FiniteFloat, Field(ge=0, le=200)] = 0.0
    validated: list[EngineRegime] = Field(default_factory=list)
    calibration: StrictStr

    @property
    def gemm_xs(self) -> tuple[float, ...]:
        return tuple(x for x, _ in self.gemm_efficiency)

    @property
    def gemm_ys(self) -> tuple[float, ...]:
        return tuple(y for _, y in self.gemm_efficiency)

    def covers(self, version: str) -> bool:
        return any(version.startswith(v) for v in self.versions)


PrecisionClass = Literal["bf16", "fp8"]
Family = Literal["ptd-p", "zero3", "moe-ep", "cp"]


class TrainingRegime(_Entry):
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


class MfuRecord(_Entry):
    """The highest model-FLOPs utilisation a published run reached on one GPU and precision
    class, counted as this tool counts model FLOPs (``model/flops.py``), from the validation
    table. Generated by ``scripts/training_confidence.py``."""

    gpu: EntryId
    precision: PrecisionClass
    mfu: Share  # of the precision's dense peak
    model: StrictStr
    gpus: PositiveInt
    row: StrictStr  # validation/training.csv row id


# One YAML file per kind, validated by one model. The CLI's `optics` kind lists both
# transceivers and cables.
ENTRY_TYPES: dict[str, type[_Entry]] = {
    "gpus": Gpu,
    "servers": Server,
    "nics": Nic,
    "switches": Switch,
    "transceivers": Transceiver,
    "cables": Cable,
    "models": ModelArch,
    "clouds": CloudOffer,
    "stacks": Stack,
    "collective_libs": CollectiveLib,
    "failure_modes": FailureMode,  # packaged in data/reliability.yaml (registry TOPIC_FILES)
    "serving_engines": ServingEngine,
    # packaged in data/training_confidence.yaml (generated; registry TOPIC_FILES)
    "training_regimes": TrainingRegime,
    "mfu_records": MfuRecord,
}
