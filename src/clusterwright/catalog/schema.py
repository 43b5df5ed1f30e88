"""Pydantic models of the catalog's hardware, model and failure entries (GPUs, servers, NICs,
switches, optics, cloud offers, model architectures, failure modes) and the base every entry
shares; the software entries (stacks, collective libraries, inference engines) and their
calibrations are in ``catalog/stacks.py``.

Units are in field names where they are not SI: ``memory_gb`` is decimal GB (10^9 bytes),
``memory_bandwidth_gbps`` is GB/s (bytes), ``speed_gbps`` on links and ports is Gb/s (bits),
``peak_tflops`` is dense TFLOP/s without sparsity. Every entry cites its ``source``.
"""

from __future__ import annotations

import math
from enum import StrEnum
from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
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


class CatalogEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: EntryId
    name: StrictStr
    source: Source
    # Set by the loader when a user catalog replaces a shipped entry (``override: true``):
    # the file and line of the entry replaced. Published runs measured that one, so the
    # validation of its id does not carry over.
    _overrides: str | None = PrivateAttr(default=None)

    @property
    def overrides(self) -> str | None:
        """Where the entry this one replaced was defined, or None."""
        return self._overrides


class Assumption(BaseModel):
    """A modelling constant (reserve, efficiency) with the place it comes from."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    value: FiniteFloat
    unit: StrictStr
    source: Source


class ScaleUpLink(BaseModel):
    """The GPU-to-GPU link inside a server or rack (NVLink, Infinity Fabric, TPU ICI,
    NeuronLink, ...)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["nvlink", "infinity-fabric", "ethernet", "pcie", "ici", "neuronlink"]
    generation: StrictStr | None = None
    links: PositiveInt | None = None
    bandwidth_gbps_per_direction: PositiveFloat  # GB/s (bytes) per direction, per GPU


class HostMemory(BaseModel):
    """Memory of the CPU a superchip couples to its GPU (Grace's LPDDR5X over NVLink-C2C): an
    offload tier for optimizer state, weights and KV cache. Per GPU, decimal GB and GB/s."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    memory_gb: PositiveFloat  # CPU memory one GPU can use (the CPU's memory / GPUs per CPU)
    link: StrictStr  # "NVLink-C2C", "PCIe Gen5 x16", ...
    link_gbps_per_direction: PositiveFloat  # GB/s per direction, per GPU
    memory_bandwidth_gbps: PositiveFloat  # the CPU memory's GB/s, per GPU share


class Torus(BaseModel):
    """A torus (or mesh) scale-up network: TPU ICI, Trainium NeuronLink. ``dims`` is the
    largest shape one ICI domain forms (a TPU slice, an UltraServer); ``wraparound`` says
    whether every dimension closes into a ring (a mesh without it halves the bandwidth of a
    bidirectional ring); ``link_gbps_per_direction`` is one link's GB/s each way, and each
    chip has two links per dimension (one per neighbour). JAX scaling book, "How to Think
    About TPUs" (bidirectional rings per axis)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    dims: list[PositiveInt] = Field(min_length=1, max_length=3)
    wraparound: StrictBool = True
    twisted: StrictBool = False  # twisted tori (v4/v5p 4x4x8 and similar) exist for slices
    link_gbps_per_direction: PositiveFloat  # GB/s per link per direction
    hop_latency_us: PositiveFloat = 1.0  # per hop on the ring (us)
    # Slice shapes the pod can form (each a list of dims); empty: any sub-shape of dims whose
    # sides divide the pod's.
    slices: list[list[PositiveInt]] = Field(default_factory=list)
    # Links between slices (data-centre network, DCN): Gb/s per chip.
    dcn_gbps_per_chip: PositiveFloat | None = None

    @property
    def chips(self) -> int:
        return math.prod(self.dims)

    @model_validator(mode="after")
    def _slices_fit(self) -> Torus:
        # A listed slice is a sub-torus: as many axes as the pod, each side within one of
        # the pod's (in some orientation: sorted sides against sorted dims)
        for shape in self.slices:
            name = "x".join(map(str, shape))
            if len(shape) != len(self.dims):
                raise ValueError(f"slice {name} has {len(shape)} axes, the torus "
                                 f"{'x'.join(map(str, self.dims))} {len(self.dims)}")
            if any(a > b for a, b in zip(sorted(shape), sorted(self.dims), strict=True)):
                raise ValueError(f"slice {name} does not fit the torus "
                                 f"{'x'.join(map(str, self.dims))}")
        return self


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


class Gpu(CatalogEntry):
    vendor: Literal["nvidia", "amd", "intel", "google", "aws"]
    form_factor: Literal["sxm", "pcie", "oam", "superchip", "tpu", "trainium"]
    # Bounds far above any part (288 GB, 8 TB/s, 2 kW today) that keep a typo such as 1e300
    # from overflowing the models into NaN: refused at load, naming the field and line.
    memory_gb: Annotated[PositiveFloat, Field(le=100_000)]
    # What CUDA reports (nvidia-smi's total), GiB: HBM is sized in binary units, so "80GB" is
    # about 80 GiB less a driver reserve. Serving KV capacity uses it where known.
    memory_visible_gib: PositiveFloat | None = None
    memory_type: StrictStr
    memory_bandwidth_gbps: Annotated[PositiveFloat, Field(le=1e6)]  # GB/s
    peak_tflops: dict[Dtype, Annotated[PositiveFloat, Field(le=1e6)]]  # dense
    tdp_w: Annotated[PositiveFloat, Field(le=1e5)]
    # Measured board power of an idle GPU (W), with its source: the floor of the serving
    # power model (model/serving_power.py). None: gpu_idle_power_fraction x TDP.
    idle_power_w: PositiveFloat | None = None
    idle_power_source: StrictStr | None = None
    scale_up: ScaleUpLink
    pcie_gen: PositiveInt
    # Tensor-parallel ranks one device holds where its engines shard over cores (a rank per
    # logical NeuronCore on Trainium); each rank keeps at least one KV head, replicated when
    # the ranks outnumber the KV heads
    tp_ranks_per_device: PositiveInt = 1
    mig_profiles: list[MigProfile] = Field(default_factory=list)
    # Names other tools give this GPU's systems (NVIDIA AIConfigurator: h100_sxm, b200_sxm,
    # gb200, ...), so measurements that name a system resolve.
    system_names: list[StrictStr] = Field(default_factory=list)
    # A superchip's CPU memory behind its coherent link (GH200, GB200, GB300): the offload tier.
    host_memory: HostMemory | None = None
    # BF16 attention-kernel throughput over the part its stack's attention efficiency was
    # fitted on, or a sibling of that die (forward, backward): Blackwell Ultra's doubled
    # softmax-exponent (SFU) rate speeds the FlashAttention loop. 1.0 where no such
    # difference is published.
    attention_fwd_speedup: PositiveFloat = 1.0
    attention_bwd_speedup: PositiveFloat = 1.0
    # Sustained FP8 tensor-core GEMM throughput over what the datasheet peak and the stack's
    # curve give, where a published GEMM benchmark shows the part beating a sibling with the
    # same datasheet peak (GB300 over GB200). 1.0 where no such measurement is published.
    fp8_gemm_speedup: PositiveFloat = 1.0
    # Sustained matrix-engine throughput (GEMMs and attention, every precision) over the level
    # its stack stands for, where one benchmark run the same way measures the part against a
    # sibling with the same die and datasheet peaks: the power limit sets the clock that
    # back-to-back matrix work holds (MI300X at 750 W against MI325X at 1,000 W). HBM-bound
    # work is not scaled. 1.0 where no such pair is measured.
    matrix_rate: Annotated[FiniteFloat, Field(gt=0, le=1.5)] = 1.0
    price_usd: PositiveFloat | None = None
    price_source: StrictStr | None = None

    @model_validator(mode="after")
    def _price_cited(self) -> Gpu:
        if self.price_usd is not None and not self.price_source:
            raise ValueError("price_usd needs a price_source (price list or report, with date)")
        if self.idle_power_w is not None:
            if not self.idle_power_source:
                raise ValueError("idle_power_w needs an idle_power_source (measurement, date)")
            if self.idle_power_w >= self.tdp_w:
                raise ValueError(f"idle_power_w {self.idle_power_w} is not below tdp_w "
                                 f"{self.tdp_w}")
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
    # Cage of a port whose part is not in the catalog (TPU hosts' DCN NICs); None: OSFP
    # (backend) or QSFP112 (frontend), as the designer assumes for an unnamed part.
    cage: StrictStr | None = None


class Cpu(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    model: StrictStr
    count: PositiveInt
    cores_per_cpu: PositiveInt


class Server(CatalogEntry):
    """A server (or a rack-scale system such as GB200 NVL72, a TPU cube or a Trainium
    UltraServer) as bought. ``torus`` describes a torus scale-up network (TPU ICI, NeuronLink):
    then ``nvlink_domain_gpus`` is the largest ICI domain (a pod's biggest slice)."""

    kind: Literal["server", "rack"] = "server"
    torus: Torus | None = None
    gpu: EntryId
    # A server or rack-scale system: 256 chips for the largest shipped (a TPU v5e pod)
    gpus: Annotated[PositiveInt, Field(le=16_384)]
    nvlink_domain_gpus: Annotated[PositiveInt, Field(le=65_536)]  # GPUs sharing one scale-up domain
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
    # RDMA device name per rail, in rail order, where the vendor documents it (DGX H100 user
    # guide Table 6: OSFP4P2 is mlx5_0, ...): how ibnetdiscover names a host port
    # ("<host> mlx5_0"). Empty: mlx5_<rail>.
    backend_rdma_devices: list[StrictStr] = Field(default_factory=list)
    cpus: Cpu
    dram_gb: PositiveFloat
    nvme_tb: NonNegativeFloat
    max_power_kw: PositiveFloat
    rack_units: PositiveInt
    weight_kg: PositiveFloat | None = None
    weight_class: Literal["standard", "heavy", "rack"]
    cooling: Literal["air", "liquid", "air-or-liquid"]
    # The matrix rate (Gpu.matrix_rate) its GPUs hold where the server caps their modules below
    # the part's own power limit (GH200 superchips sharing 660 W between Grace, the GPU and
    # their memory); None: the GPU's own. Its comment says where the value comes from.
    matrix_rate: Annotated[FiniteFloat, Field(gt=0, le=1.5)] | None = None
    price_usd: PositiveFloat | None = None
    price_source: StrictStr | None = None

    @model_validator(mode="after")
    def _domain_fits(self) -> Server:
        if self.torus is not None and self.torus.chips != self.nvlink_domain_gpus:
            raise ValueError(
                f"torus dims {self.torus.dims} hold {self.torus.chips} chips, not "
                f"nvlink_domain_gpus={self.nvlink_domain_gpus}")
        if self.nvlink_domain_gpus > self.gpus and self.kind == "server":
            raise ValueError(
                f"nvlink_domain_gpus={self.nvlink_domain_gpus} exceeds gpus={self.gpus}"
            )
        if self.price_usd is not None and not self.price_source:
            raise ValueError("price_usd needs a price_source (price list or report, with date)")
        if self.gpus % self.hosts:
            raise ValueError(f"gpus={self.gpus} is not a multiple of hosts={self.hosts} (each "
                             "host carries an equal share)")
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
        rdma = self.backend_rdma_devices
        if rdma and (len(rdma) != self.backend_nics.count // self.hosts
                     or len(set(rdma)) != len(rdma)):
            raise ValueError(
                f"backend_rdma_devices needs {self.backend_nics.count // self.hosts} distinct "
                f"names, one per rail, got {len(rdma)}")
        return self

    @property
    def rails(self) -> int:
        """Backend NIC links per host: one rail each in a rail-optimized fabric."""
        return self.backend_nics.count // self.hosts


class Nic(CatalogEntry):
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


class Switch(CatalogEntry):
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
    # Shared packet buffer, MB (10^6 bytes); lossless (PFC) headroom comes out of it.
    buffer_mb: PositiveFloat | None = None
    buffer_source: StrictStr | None = None

    @model_validator(mode="after")
    def _buffer_cited(self) -> Switch:
        if self.buffer_mb is not None and not self.buffer_source:
            raise ValueError("buffer_mb needs a buffer_source")
        return self

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


class Transceiver(CatalogEntry):
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


class Cable(CatalogEntry):
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


class CloudOffer(CatalogEntry):
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


class CompressedAttention(BaseModel):
    """Layers whose KV cache keeps one entry per ``ratio`` tokens of the context (DeepSeek-V4's
    compressed attention, arXiv 2606.19348): with ``topk`` each query attends only the
    entries a lightning indexer scores highest (Compressed Sparse Attention), without it
    every entry (Heavily Compressed Attention). At ``ratio`` 1 the cache keeps every token
    and the indexer picks ``topk`` of them (DeepSeek Sparse Attention: DeepSeek-V3.2,
    GLM-5), so ``topk`` is required there."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    layers: PositiveInt
    ratio: PositiveInt
    topk: PositiveInt | None = None

    @model_validator(mode="after")
    def _sparse_when_whole(self) -> CompressedAttention:
        if self.ratio == 1 and self.topk is None:
            raise ValueError("ratio 1 keeps every token: without topk the layers are plain "
                             "attention (leave them out of compressed_attention)")
        return self


class Activation(StrEnum):
    gelu = "gelu"
    relu = "relu"
    relu2 = "relu2"  # squared ReLU (Nemotron-H, Primer): two matrices, as relu
    swiglu = "swiglu"
    geglu = "geglu"


class ModelArch(CatalogEntry):
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
    # LatentMoE (Nemotron 3 Super and Ultra; NVIDIA, "LatentMoE", arXiv 2601.18089): the routed
    # experts run in a latent space of this width (config.json moe_latent_size), behind a
    # down projection hidden -> latent and an up projection latent -> hidden that every token
    # of an MoE layer passes. The router and the shared experts stay at the hidden width;
    # expert-parallel dispatch and combine carry latent-wide tokens.
    moe_latent: PositiveInt | None = None
    # Hyper-connections (DeepSeek-V4's mHC, config hc_mult): the residual stream is hc_mult
    # streams wide, mixed before and after each sub-layer by small learned maps. Their weights
    # grow as hc_mult cubed; the released configs use 4, so 64 bounds it far above any.
    hc_mult: Annotated[PositiveInt, Field(le=64)] = 1
    # Multi-head latent attention (DeepSeek-V2/V3)
    q_lora_rank: PositiveInt | None = None
    kv_lora_rank: PositiveInt | None = None
    qk_nope_head_dim: PositiveInt | None = None
    qk_rope_head_dim: PositiveInt | None = None
    v_head_dim: PositiveInt | None = None
    # DeepSeek-V4's attention over the latent (arXiv 2606.19348): one shared head, K and V at
    # once (kv_lora_rank + qk_rope_head_dim wide, no up-projection; queries are as wide,
    # qk_nope_head_dim = kv_lora_rank, v_head_dim = the whole head), a grouped low-rank
    # output projection (o_groups groups, each to o_lora_rank), and compressed KV on the
    # layers of ``compressed_attention``, whose sparse groups score with an indexer of
    # index_heads heads of index_head_dim (config.json index_n_heads, index_head_dim).
    mla_shared_kv: StrictBool = False
    o_lora_rank: PositiveInt | None = None
    o_groups: PositiveInt | None = None
    compressed_attention: list[CompressedAttention] = Field(default_factory=list)
    index_heads: PositiveInt | None = None
    index_head_dim: PositiveInt | None = None
    # Banded (sliding-window) attention on some layers: each token sees the last
    # ``sliding_window`` tokens there (gpt-oss: every other layer, 128 tokens).
    sliding_window: PositiveInt | None = None
    sliding_window_layers: NonNegativeInt = 0
    # Global layers of their own shape (Gemma 4: the banded layers' heads are 256 wide, the
    # whole-context layers' 512, with fewer KV heads and one projection for K and V, config
    # global_head_dim, num_global_key_value_heads, attention_k_eq_v): the softmax layers
    # that are not banded take these where set. Query heads stay ``heads``.
    global_head_dim: PositiveInt | None = None
    global_kv_heads: PositiveInt | None = None
    global_k_eq_v: StrictBool = False  # V is read from K's projection: no v_proj
    # Hybrid linear attention (Qwen3.5's and Qwen3-Next's Gated DeltaNet, Yang et al. 2025):
    # ``linear_attention_layers`` of the layers replace softmax attention with a gated delta
    # rule that keeps a fixed state of key_dim x value_dim per value head and sequence instead
    # of a KV cache. Its heads and widths (config.json linear_num_key_heads, ...,
    # linear_conv_kernel_dim) shape its projections (q, k, v, output gate z, the gates b and
    # a, a short causal convolution over q, k and v, the output projection).
    linear_attention_layers: NonNegativeInt = 0
    linear_key_heads: PositiveInt | None = None
    linear_value_heads: PositiveInt | None = None
    linear_key_head_dim: PositiveInt | None = None
    linear_value_head_dim: PositiveInt | None = None
    linear_conv_kernel: PositiveInt | None = None
    # Gated attention (Qwen3.5's full-attention layers, config attn_output_gate): q_proj
    # also emits a per-channel sigmoid gate on the attention output, doubling its width.
    attention_output_gate: StrictBool = False
    # Mamba-2 token mixers (Nemotron-H, Nemotron 3; Dao and Gu 2024): ``mamba_layers`` of the
    # layers mix tokens with a selective state space (per head a head_dim x state matrix per
    # sequence, no KV cache). config.json: mamba_num_heads, mamba_head_dim, ssm_state_size,
    # n_groups (the B and C projections' groups), conv_kernel.
    mamba_layers: NonNegativeInt = 0
    mamba_heads: PositiveInt | None = None
    mamba_head_dim: PositiveInt | None = None
    mamba_state: PositiveInt | None = None
    mamba_groups: PositiveInt | None = None
    mamba_conv_kernel: PositiveInt | None = None
    # Models whose blocks hold either a token mixer or an FFN (Nemotron-H's
    # hybrid_override_pattern: M, * and -/E blocks) have fewer FFNs than mixers, and models
    # pruned by NAS (Llama 3.3 Nemotron Super's blocks without attention) more: ``layers``
    # counts the mixers, ``ffn_layers`` the FFN blocks (None: one per layer). MoE FFNs are
    # the last ffn_layers - dense_layers of them.
    ffn_layers: PositiveInt | None = None
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
            if self.dense_layers >= self.n_ffn_layers:
                raise ValueError("dense_layers must leave at least one MoE layer")
        elif self.top_k or self.shared_experts or self.dense_layers or self.moe_latent:
            raise ValueError("top_k/shared_experts/dense_layers/moe_latent need experts > 0")
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
        lin = [self.linear_key_heads, self.linear_value_heads, self.linear_key_head_dim,
               self.linear_value_head_dim, self.linear_conv_kernel]
        recurrent = self.linear_attention_layers + self.mamba_layers
        if recurrent and recurrent >= self.layers:
            raise ValueError(f"linear_attention_layers + mamba_layers = {recurrent} must leave "
                             f"at least one of the {self.layers} layers full attention")
        mamba = [self.mamba_heads, self.mamba_head_dim, self.mamba_state, self.mamba_groups,
                 self.mamba_conv_kernel]
        if self.mamba_layers:
            if not all(v is not None for v in mamba):
                raise ValueError("mamba_layers needs mamba_heads, mamba_head_dim, mamba_state, "
                                 "mamba_groups and mamba_conv_kernel")
            assert self.mamba_heads is not None and self.mamba_groups is not None
            if self.mamba_heads % self.mamba_groups:
                raise ValueError(f"mamba_groups={self.mamba_groups} must divide "
                                 f"mamba_heads={self.mamba_heads}")
        elif any(v is not None for v in mamba):
            raise ValueError("mamba_heads ... mamba_conv_kernel need mamba_layers > 0")
        if self.mla_shared_kv:
            if not self.is_mla:
                raise ValueError("mla_shared_kv needs MLA (kv_lora_rank and its head widths)")
            assert self.kv_lora_rank and self.qk_rope_head_dim
            if (self.qk_nope_head_dim != self.kv_lora_rank
                    or self.v_head_dim != self.kv_lora_rank + self.qk_rope_head_dim):
                raise ValueError("mla_shared_kv: K and V are one head, so qk_nope_head_dim must "
                                 "equal kv_lora_rank and v_head_dim kv_lora_rank + "
                                 "qk_rope_head_dim")
        if (self.o_lora_rank is None) != (self.o_groups is None):
            raise ValueError("o_lora_rank and o_groups go together")
        if self.o_groups and self.heads % self.o_groups:
            raise ValueError(f"o_groups={self.o_groups} must divide heads={self.heads}")
        if self.compressed_attention:
            if not self.is_mla:
                raise ValueError("compressed_attention is modelled on MLA models (DeepSeek-V4's "
                                 "shared head) only")
            if not self.sliding_window and any(g.ratio > 1 for g in self.compressed_attention):
                raise ValueError("compressed_attention needs sliding_window: every compressed "
                                 "layer (ratio 2 or more) also attends its window of recent "
                                 "tokens")
            n = sum(g.layers for g in self.compressed_attention)
            if n > self.full_attention_layers - self.banded_layers:
                raise ValueError(f"compressed_attention covers {n} layers, more than the "
                                 f"{self.full_attention_layers - self.banded_layers} softmax "
                                 "layers that are not window-only")
            if any(g.topk for g in self.compressed_attention) and not (
                    self.index_heads and self.index_head_dim):
                raise ValueError("a compressed group with topk needs index_heads and "
                                 "index_head_dim (its indexer)")
        elif self.index_heads or self.index_head_dim:
            raise ValueError("index_heads and index_head_dim need a compressed_attention "
                             "group with topk")
        if (self.global_head_dim or self.global_kv_heads or self.global_k_eq_v):
            if not (self.sliding_window and 0 < self.sliding_window_layers
                    < self.full_attention_layers):
                raise ValueError("global_head_dim, global_kv_heads and global_k_eq_v shape the "
                                 "layers that are not banded: they need sliding_window and "
                                 "sliding_window_layers below the full-attention layers")
            if self.is_mla:
                raise ValueError("global layers of their own shape with MLA are not modelled")
            if self.global_kv_heads and self.heads % self.global_kv_heads:
                raise ValueError(f"heads={self.heads} is not a multiple of "
                                 f"global_kv_heads={self.global_kv_heads}")
        if self.linear_attention_layers:
            if not all(v is not None for v in lin):
                raise ValueError("linear_attention_layers needs linear_key_heads, "
                                 "linear_value_heads, linear_key_head_dim, "
                                 "linear_value_head_dim and linear_conv_kernel")
            if self.is_mla:
                raise ValueError("linear_attention_layers with MLA is not modelled")
        elif any(v is not None for v in lin):
            raise ValueError("linear_key_heads ... linear_conv_kernel need "
                             "linear_attention_layers > 0")
        return self

    @property
    def full_attention_layers(self) -> int:
        """Layers with softmax attention and a KV cache (all but the linear-attention and
        Mamba-2 ones)."""
        return self.layers - self.linear_attention_layers - self.mamba_layers

    @property
    def banded_layers(self) -> int:
        """Softmax layers that attend only their sliding window."""
        return self.sliding_window_layers if self.sliding_window else 0

    @property
    def global_layers(self) -> int:
        """Softmax layers that attend the whole context (compressed or not)."""
        return self.full_attention_layers - self.banded_layers

    @property
    def compressed_layers(self) -> int:
        """Softmax layers in ``compressed_attention`` (compressed along the sequence, or
        sparse over the whole of it at ratio 1)."""
        return sum(g.layers for g in self.compressed_attention)

    @property
    def windowed_compressed_layers(self) -> int:
        """Compressed layers that also attend a window of recent tokens (ratio 2 or more:
        DeepSeek-V4); a ratio-1 sparse layer attends its top-k of the whole cache only."""
        return sum(g.layers for g in self.compressed_attention if g.ratio > 1)

    @property
    def indexed_layers(self) -> int:
        """Layers whose queries a lightning indexer scores against the context (the groups
        with ``topk``)."""
        return sum(g.layers for g in self.compressed_attention if g.topk)

    def layer_kv_heads(self, global_layer: bool = False) -> int:
        """KV heads of a banded (or, with ``global_layer``, a whole-context) layer."""
        return (self.global_kv_heads or self.n_kv_heads) if global_layer else self.n_kv_heads

    def layer_head_dim(self, global_layer: bool = False) -> int:
        """Head width of a banded (or, with ``global_layer``, a whole-context) layer."""
        return (self.global_head_dim or self.d_head) if global_layer else self.d_head

    @property
    def n_ffn_layers(self) -> int:
        """FFN blocks (dense and MoE): one per layer unless ``ffn_layers`` says otherwise."""
        return self.ffn_layers or self.layers

    @property
    def moe_layers(self) -> int:
        """MoE FFN blocks (0 for a dense model)."""
        return self.n_ffn_layers - self.dense_layers if self.experts else 0

    @property
    def is_moe(self) -> bool:
        return self.experts > 0

    @property
    def expert_width(self) -> int:
        """Width of a routed expert's input and output, and of a token as expert
        parallelism moves it: the latent width of a LatentMoE model, else ``hidden``."""
        return self.moe_latent or self.hidden

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank is not None

    @property
    def n_kv_heads(self) -> int:
        return self.kv_heads or self.heads

    @property
    def d_head(self) -> int:
        return self.head_dim or self.hidden // self.heads


FailureUnit = Literal["gpu", "host", "switch", "link", "job"]


class FailureMode(CatalogEntry):
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
    # The published fleet study the rate comes from (shown as the rate basis); one fleet per
    # GPU generation (reliability.yaml says how the fleet of each generation was chosen).
    fleet: StrictStr = ""

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


# --------------------------------------------------------------------------- storage


class StorageSystem(CatalogEntry):
    """A shared storage building block the storage planner buys in whole units
    (``design/storage_plan.py``): a parallel-file-system appliance, an object-store node or a
    cloud file system's unit of capacity. Bandwidths are GB/s (decimal) per unit, as its
    datasheet or a published benchmark gives them; ``read_gbps`` and ``write_gbps`` are what the
    unit sustains for large sequential I/O from many clients. ``read_iops`` (small random reads,
    4 KiB unless the source says otherwise) and ``file_opens_per_s`` (open-read-close of a file,
    the metadata cost of one small file) bound small-file workloads
    (``model/storage.read_ceiling``); None where no source gives them, and the planner says so.
    Kind ``local-nvme`` is the data drives inside one GPU server: not a shared tier (never chosen
    as one), a checkpoint staging area and read cache per server; ``cloud`` kinds have no
    rack units or ports of their own."""

    kind: Literal["parallel-fs", "object", "nas", "cloud-fs", "cloud-object", "local-nvme"]
    vendor: StrictStr
    read_gbps: PositiveFloat
    write_gbps: PositiveFloat
    capacity_tb: PositiveFloat  # usable, decimal TB
    ports: NonNegativeInt  # network ports per unit (0: in the server, or a cloud service)
    port_gbps: NonNegativeFloat  # Gb/s per port (0 with no ports)
    rack_units: NonNegativeInt  # 0 for a cloud service
    power_w: NonNegativeFloat  # per unit, under load
    price_usd: PositiveFloat | None = None  # per unit (on premises); None: not priced
    price_source: StrictStr | None = None
    usd_per_month: PositiveFloat | None = None  # per unit (cloud)
    min_units: PositiveInt = 1  # the fewest a redundant deployment runs on
    max_units: PositiveInt | None = None  # the most one deployment scales to
    embodied_kgco2e: NonNegativeFloat | None = None  # per unit, where a source gives it
    read_iops: PositiveFloat | None = None  # per unit, small random reads
    file_opens_per_s: PositiveFloat | None = None  # per unit, open-read-close of small files

    @model_validator(mode="after")
    def _ports_for_appliances(self) -> StorageSystem:
        if self.ports == 0 and self.kind in ("parallel-fs", "object", "nas"):
            raise ValueError(f"ports: an on-premises {self.kind} unit needs at least one port")
        return self


# --------------------------------------------------------------------------- energy


class GridRegion(CatalogEntry):
    """Average carbon intensity of a grid region's electricity by year, gCO2e per kWh
    (location-based accounting, GHG Protocol Scope 2 Guidance); ``gco2_per_kwh`` maps the
    year (as a string, YAML ids are strings) to its value."""

    gco2_per_kwh: dict[Annotated[StrictStr, Field(pattern=r"^(19|20|21)[0-9]{2}$")],
                       NonNegativeFloat]
    basis: Literal["CO2", "CO2e"] = "CO2e"  # what the source counts

    @model_validator(mode="after")
    def _has_a_year(self) -> GridRegion:
        if not self.gco2_per_kwh:
            raise ValueError("gco2_per_kwh: give at least one year")
        return self

    def intensity(self, year: int | None = None) -> tuple[int, float]:
        """(year, gCO2e/kWh): that year's, else the latest."""
        years = sorted(int(y) for y in self.gco2_per_kwh)
        y = years[-1] if year is None else year
        if str(y) not in self.gco2_per_kwh:
            raise KeyError(y)
        return y, self.gco2_per_kwh[str(y)]
