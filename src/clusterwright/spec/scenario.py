"""The scenario file users write: workloads and constraints (pydantic v2, from YAML).

Only shape is checked here; references to catalog ids are resolved by
``clusterwright.catalog.references`` (this layer does not know the catalog).

Every number is strict (a YAML boolean or a quoted string is not a number), finite, and
bounded by the ``MAX_*`` constants below: far beyond any real deployment, tight enough that
no planner overflows or runs for hours on a typo.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictStr,
    ValidationError,
    model_validator,
)

from clusterwright.errors import ScenarioError
from clusterwright.spec.cluster import Cluster, check_cluster, where
from clusterwright.spec.numbers import (
    INTEGER,
    FiniteFloat,
    Fraction,
    NonNegativeFloat,
    PositiveFloat,
)
from clusterwright.spec.parallel import Recompute
from clusterwright.spec.pricing import CloudPolicy, Prices
from clusterwright.spec.scenario_fabric import FabricSection
from clusterwright.spec.scenario_rag import RagSection
from clusterwright.spec.scenario_storage import EnergySection, StorageSection
from clusterwright.spec.sites import MAX_SITES, MultisitePolicy, SiteSpec, check_sites
from clusterwright.spec.yamlio import (
    LoadedYaml,
    YamlError,
    describe_validation_error,
    load,
    loads,
    short_repr,
)

Precision = Literal["fp32", "bf16", "fp16", "fp8", "int8", "int4", "fp4"]
TrainPrecision = Literal["fp32", "bf16", "fp16", "fp8", "fp4"]
MAX_ID_CHARS = 128  # catalog ids and workload names are short slugs
Id = Annotated[StrictStr, Field(min_length=1, max_length=MAX_ID_CHARS)]

# Upper bounds of scenario numbers: well past any published deployment (MAX_GPUS excepted:
# it is the planner's own limit), so they catch typos and values no planner can use.
MAX_SEED = 2**32 - 1  # numpy's legacy seed range; JSON-safe in every consumer
MAX_WORKLOADS = 100  # each one is planned with its own simulations
MAX_IDS = 100  # GPU or server ids in constraints
# GPUs of one workload, and any parallel degree: the largest count the training planner's
# deadline search tries (design.train.smallest_for_deadline), 8x Llama 3's 16,384 H100
MAX_GPUS = 131_072
MAX_TOKENS = 1e15  # training tokens (Llama 3: 1.56e13)
MAX_EPOCHS = 1_000.0
MAX_SEQ_LEN = 10_000_000  # tokens of one sequence or request (Llama 4 Scout's context)
MAX_BATCH = 10_000_000  # sequences per global batch or micro-batch
MAX_BATCH_TOKENS = 10**11  # tokens per global batch (Llama 3: 1.6e7)
MAX_QPS = 1e6  # peak requests per second of one inference workload
MAX_PREFIX_GROUPS = 1_000_000  # shared prefixes of one inference workload
MAX_SLO_S = 86_400.0  # a latency target of more than a day is not a latency target
MAX_DEADLINE_DAYS = 3_650.0  # ten years
MAX_LORA_RANK = 65_536
MAX_RACK_KW = 1_000.0  # kW per rack (GB200 NVL72: 132 kW)
MAX_BUDGET_USD = 1e13
MAX_USD_PER_KWH = 10.0
MAX_YEARS = 50.0

SeqTokens = Annotated[int, INTEGER, Field(gt=0, le=MAX_SEQ_LEN)]
Gpus = Annotated[int, INTEGER, Field(gt=0, le=MAX_GPUS)]
Batch = Annotated[int, INTEGER, Field(gt=0, le=MAX_BATCH)]
SloSeconds = Annotated[PositiveFloat, Field(le=MAX_SLO_S)]


class _Strict(BaseModel):
    # A string under a field is its description (the scenario reference and the web editor
    # read it from the JSON schema).
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


class LengthDist(_Strict):
    """A token-length distribution. ``mean`` is in tokens; ``stddev`` for normal/lognormal."""

    distribution: Literal["fixed", "uniform", "normal", "lognormal"] = "fixed"
    """Shape of the token-length distribution: fixed (every request at mean), uniform (min..max),
    normal or lognormal (mean and stddev, clipped to min..max)."""
    mean: Annotated[PositiveFloat, Field(le=MAX_SEQ_LEN)]
    """Mean length, tokens."""
    stddev: Annotated[NonNegativeFloat, Field(le=MAX_SEQ_LEN)] = 0.0
    """Standard deviation, tokens; needed by normal and lognormal."""
    min: SeqTokens = 1
    """Shortest length, tokens."""
    max: SeqTokens | None = None
    """Longest length, tokens; needed by uniform. Unset: no upper clip."""

    @model_validator(mode="after")
    def _bounds(self) -> LengthDist:
        if self.max is not None and self.max < self.min:
            raise ValueError(f"max={self.max} is below min={self.min}")
        if self.mean < self.min:
            raise ValueError(f"mean={self.mean} lies outside [min, max]: below min={self.min}")
        if self.max is not None and self.mean > self.max:
            raise ValueError(f"mean={self.mean} lies outside [min, max]: above max={self.max}")
        if self.distribution in ("normal", "lognormal") and self.stddev == 0:
            raise ValueError(f"{self.distribution} needs stddev > 0")
        if self.distribution == "uniform" and self.max is None:
            raise ValueError("uniform needs max")
        return self


def _length(v: Any) -> Any:
    # A bare number is a fixed length: `input_len: 512`.
    if isinstance(v, int | float) and not isinstance(v, bool):
        return {"distribution": "fixed", "mean": v}
    return v


class Diurnal(_Strict):
    """Load over a day as multipliers of the workload's peak rate.

    Either 24 hourly multipliers in [0, 1], or a cosine between ``trough_fraction`` and 1
    peaking at ``peak_hour`` (local time).
    """

    hourly: list[Fraction] | None = None
    """24 multipliers of the peak rate, one per local hour from 0:00, each in 0..1. Unset: the
    cosine of peak_hour and trough_fraction."""
    peak_hour: Annotated[FiniteFloat, Field(ge=0, lt=24)] = 14.0
    """Local hour of the peak (0..24) of the cosine curve."""
    trough_fraction: Fraction = 0.3
    """Load at the trough, 12 hours from the peak, as a fraction of the peak (0..1)."""

    @model_validator(mode="after")
    def _hours(self) -> Diurnal:
        if self.hourly is not None and len(self.hourly) != 24:
            raise ValueError(f"hourly needs 24 values, got {len(self.hourly)}")
        return self


class Slo(_Strict):
    """p99 latency targets, seconds; the serving planner sizes replicas to meet all given."""

    ttft_p99_s: SloSeconds  # time to first token
    """p99 time to first token, seconds."""
    tpot_p99_s: SloSeconds  # time per output token after the first
    """p99 time per output token after the first, seconds."""
    e2e_p99_s: SloSeconds | None = None  # arrival to last token of a request
    """p99 time from arrival to the last token of a request, seconds. Unset: not a target."""
    margin: Literal["none", "median", "p90"] = "none"
    """With an engine: hold each deployment's p99s to the targets multiplied by how its
    measured rows (validate --table serving-silicon) lean against the model: none (the
    model's figures), median, or p90 (the ratio one measured row in ten exceeds); never
    loosening a target (``serve plan --margin``)."""


class Window(_Strict):
    """Hours of the day [start_hour, end_hour) local time; may wrap past midnight."""

    start_hour: Annotated[int, INTEGER, Field(ge=0, le=23)]
    """First local hour of the window (0..23)."""
    end_hour: Annotated[int, INTEGER, Field(ge=0, le=24)]
    """Local hour the window ends, exclusive (0..24); below start_hour the window wraps past
    midnight."""


ModelRef = Id | dict[str, Any]  # catalog id, or an inline ModelArch mapping


class TrainingLayout(_Strict):
    """A parallel layout fixed by the user (the one a paper published, say); the fields left
    out are searched, as ``train estimate`` does. dp follows from the GPU count."""

    tp: Gpus = 1
    """Tensor-parallel degree (GPUs splitting each layer's matrices)."""
    pp: Gpus = 1
    """Pipeline-parallel degree (stages of consecutive layers)."""
    cp: Gpus = 1
    """Context-parallel degree (GPUs splitting each sequence)."""
    ep: Gpus = 1
    """Expert-parallel degree (GPUs splitting an MoE layer's experts); divides tp x dp x cp."""
    interleave: Annotated[int, INTEGER, Field(gt=0, le=1024)] | None = None  # virtual stages
    """Virtual pipeline stages per rank (interleaved 1F1B); needs pp > 1. Unset: searched."""
    zero: Annotated[Literal[0, 1, 2, 3], INTEGER] | None = None
    """ZeRO stage 0-3 (optimizer state, gradients, weights sharded over data parallel). Unset:
    searched."""
    micro_batch: Batch | None = None
    """Sequences per micro-batch. Unset: searched."""
    recompute: Recompute | None = None
    """Activation recomputation: none, selective (attention) or full. Unset: searched."""
    sequence_parallel: StrictBool | None = None
    """Megatron sequence parallelism (layer norms, dropout); needs tp > 1. Unset: searched."""

    @model_validator(mode="after")
    def _consistent(self) -> TrainingLayout:
        if self.sequence_parallel and self.tp == 1:
            raise ValueError("sequence_parallel needs tp > 1")
        if self.interleave is not None and self.interleave > 1 and self.pp == 1:
            raise ValueError("interleave needs pp > 1")
        return self


class TrainingOptions(_Strict):
    """How the framework runs the step (the stack's defaults where left out); an option the
    stack cannot do is an error naming it."""

    schedule: Literal["1f1b", "zb", "dualpipe"] | None = None
    """Pipeline schedule: 1f1b, zb (zero bubble) or dualpipe. Unset: the stack's default."""
    cp_comm: Literal["p2p", "allgather", "a2a"] | None = None
    """How context parallelism exchanges keys and values: p2p (ring), allgather or a2a (all-to-all).
    Unset: the stack's default."""
    ep_overlap: Literal["none", "1f1b", "dualpipe"] | None = None
    """How MoE all-to-all overlaps compute: none, 1f1b or dualpipe. Unset: the stack's default."""
    ep_dispatcher: Literal["alltoall", "deepep"] | None = None
    """MoE token dispatcher: alltoall or deepep. Unset: the stack's default."""
    fp8_recipe: Literal["delayed", "current", "blockwise", "mx"] | None = None
    """FP8 scaling recipe: delayed, current, blockwise or mx. Unset: the stack's default."""
    tp_overlap: StrictBool | None = None
    """Overlap tensor-parallel communication with GEMMs. Unset: the stack's default."""


class TrainingWorkload(_Strict):
    kind: Literal["training"]
    """training: pre-training (or continued training) of a model."""
    name: Id
    """The workload's name, unique in the scenario."""
    model: ModelRef
    """Catalog model id (`clusterwright catalog list models`), or an inline architecture mapping."""
    tokens: Annotated[PositiveFloat, Field(le=MAX_TOKENS)]  # training tokens
    """Training tokens of the whole run."""
    seq_len: SeqTokens = 4096
    """Sequence length, tokens."""
    global_batch: Batch | None = None  # sequences per step
    """Sequences per optimizer step. Unset: from global_batch_tokens, else the planner's default for
    seq_len."""
    global_batch_tokens: Annotated[int, INTEGER, Field(gt=0, le=MAX_BATCH_TOKENS)] | None = None
    """Tokens per optimizer step (divided by seq_len into sequences); not with global_batch."""
    precision: TrainPrecision = "bf16"
    """Training precision of the GEMMs (fp8 and fp4 keep 16-bit weights)."""
    deadline_days: Annotated[PositiveFloat, Field(le=MAX_DEADLINE_DAYS)] | None = None
    """Days the run must finish in (production time: failures and evaluation included). With no
    gpus, the planner finds the fewest GPUs meeting it."""
    gpus: Gpus | None = None
    """GPUs of the job. Unset: the fewest meeting deadline_days."""
    stack: Id | None = None  # software stack (catalog id); default: the GPU's first
    """Software stack, a catalog id (framework, versions, efficiencies). Unset: the GPU's first
    stack."""
    layout: TrainingLayout | None = None  # fixed layout; default: the planner's best
    """A parallel layout fixed by the user; fields left out are searched. Needs gpus."""
    options: TrainingOptions | None = None
    """How the framework runs the step. Unset: the stack's defaults."""

    @model_validator(mode="after")
    def _sizing(self) -> TrainingWorkload:
        if self.deadline_days is None and self.gpus is None:
            raise ValueError("give deadline_days or gpus (or both)")
        if self.layout is not None and self.gpus is None:
            raise ValueError("a fixed layout needs gpus (the data-parallel degree follows "
                             "from it)")
        if self.global_batch is not None and self.global_batch_tokens is not None:
            raise ValueError("give global_batch or global_batch_tokens, not both")
        return self


class SharedPrefix(_Strict):
    """The first tokens of every prompt shared with the other prompts of its group: a system
    prompt, a document many questions ask about."""

    tokens: SeqTokens
    """Tokens each prompt shares with its group (at most the prompt's mean length)."""
    groups: Annotated[int, INTEGER, Field(gt=0, le=MAX_PREFIX_GROUPS)] = 1
    """Distinct shared prefixes the prompts draw from, uniformly."""


class InferenceWorkload(_Strict):
    kind: Literal["inference"]
    """inference: a model served online under latency SLOs."""
    name: Id
    """The workload's name, unique in the scenario."""
    model: ModelRef
    """Catalog model id (`clusterwright catalog list models`), or an inline architecture mapping."""
    qps: Annotated[PositiveFloat, Field(le=MAX_QPS)]  # peak requests per second
    """Peak arrival rate, requests per second."""
    input_len: Annotated[LengthDist, Field()]
    """Prompt length, tokens: a number (fixed) or a distribution."""
    output_len: Annotated[LengthDist, Field()]
    """Generated length, tokens: a number (fixed) or a distribution."""
    slo: Slo
    """p99 latency targets the replicas must meet at the peak."""
    precision: Precision = "bf16"
    """Weight precision."""
    # The KV-cache types the engines store (vLLM's kv_cache_dtype: auto/bf16/fp16, fp8);
    # None means the weight precision (16-bit for ints)
    kv_precision: Literal["bf16", "fp16", "fp8"] | None = None
    """KV-cache precision: bf16, fp16 or fp8. Unset: the weight precision (16-bit for integer
    weights)."""
    diurnal: Diurnal | None = None
    """Load over a day, as multipliers of qps. Unset: the peak at every hour."""
    shared_prefix: SharedPrefix | None = None
    """Prompts that begin alike: the replicas' prefix caches reuse the shared part. Unset:
    every prompt its own."""
    engine: Annotated[str, Field(min_length=1, max_length=64)] | None = None
    """Serving engine from the catalog (trtllm, vllm or sglang, optionally @VERSION): size the
    workload with that engine's calibrated search (aggregated and disaggregated deployments,
    validate --table serving-silicon) on any GPU, its KV cache in the engine's format. Unset:
    a GPU whose stack carries a serving calibration is sized with it (validate --table
    serving); a GPU without one cannot serve the workload."""

    @model_validator(mode="after")
    def _engine_slos(self) -> InferenceWorkload:
        if self.engine is not None and self.slo.e2e_p99_s is not None:
            raise ValueError("slo.e2e_p99_s: an engine-sized workload is planned on p99 TTFT "
                             "and TPOT only; drop e2e_p99_s or the engine")
        if self.engine is None and self.slo.margin != "none":
            raise ValueError("slo.margin: the measured rows' margin is an engine's (validate "
                             "--table serving-silicon); name the workload's engine or drop it")
        return self

    @model_validator(mode="before")
    @classmethod
    def _lengths(cls, data: Any) -> Any:
        if isinstance(data, dict):
            data = dict(data)
            for k in ("input_len", "output_len"):
                if k in data:
                    data[k] = _length(data[k])
        return data


# Linear layers LoRA may adapt (model/lora: LORA_MODULES and LORA_GROUPS).
LoraTarget = Literal["qkv", "proj", "fc1", "fc2", "attention", "mlp", "all"]


class FinetuneWorkload(_Strict):
    kind: Literal["finetune"]
    """finetune: full or LoRA fine-tuning, in a window on the inference GPUs or on its own."""
    name: Id
    """The workload's name, unique in the scenario."""
    model: ModelRef
    """Catalog model id (`clusterwright catalog list models`), or an inline architecture mapping."""
    tokens: Annotated[PositiveFloat, Field(le=MAX_TOKENS)]  # dataset tokens per epoch
    """Dataset tokens per epoch."""
    epochs: Annotated[PositiveFloat, Field(le=MAX_EPOCHS)] = 1.0
    """Passes over the dataset."""
    method: Literal["full", "lora"] = "lora"
    """full (every weight trained) or lora (low-rank adapters)."""
    lora_rank: Annotated[int, INTEGER, Field(gt=0, le=MAX_LORA_RANK)] = 16
    """Rank of the LoRA adapters."""
    lora_targets: Annotated[tuple[LoraTarget, ...], Field(min_length=1, max_length=7)] = (
        "attention",)
    """Linear layers that get LoRA adapters: qkv, proj, fc1, fc2, or the groups attention (qkv
    and proj), mlp (fc1 and fc2), all. The base weights stay frozen (FP8 with precision fp8)."""
    seq_len: SeqTokens = 4096
    """Sequence length, tokens."""
    precision: TrainPrecision = "bf16"
    """Training precision of the GEMMs."""
    gpus: Gpus | None = None
    """GPUs of the job. Unset: the inference GPUs the window frees."""
    window: Window | None = None  # e.g. nights on a shared inference pool
    """Local hours it may run, e.g. nights on a shared inference pool. Unset: any hour."""
    deadline_days: Annotated[PositiveFloat, Field(le=MAX_DEADLINE_DAYS)] | None = None
    """Days the job must finish in, one window a day; on an inference pool, dedicated GPUs are
    added when the windows it frees cannot hold the job. Unset: it runs over as many windows as
    it takes."""


Workload = Annotated[
    TrainingWorkload | InferenceWorkload | FinetuneWorkload, Field(discriminator="kind")
]


class Constraints(_Strict):
    # allowed GPU catalog ids; with servers, each GPU must be one a listed server carries
    gpus: Literal["choose"] | Annotated[list[Id], Field(max_length=MAX_IDS)] = "choose"
    """Allowed GPU catalog ids, or choose: every GPU a catalog server carries (and, when serving, a
    serving calibration covers)."""
    servers: Annotated[list[Id], Field(max_length=MAX_IDS)] | None = None
    """Allowed server catalog ids; each listed GPU must be carried by a listed server. Unset: the
    first catalog server of each GPU."""
    power_per_rack_kw: Annotated[PositiveFloat, Field(le=MAX_RACK_KW)] = 40.0
    """Power a rack may draw, kW (nameplate). Unset under liquid cooling: the catalog's
    liquid-cooled rack limit."""
    cooling: Literal["air", "liquid"] = "air"
    """Cooling of the racks: air or liquid."""
    budget_usd: Annotated[PositiveFloat, Field(le=MAX_BUDGET_USD)] | None = None
    """Most the design may cost, USD: capex on-prem, the whole horizon in the cloud. Unset: no
    limit."""
    deployment: Literal["cloud", "on-prem", "compare"] = "compare"
    """cloud (rent), on-prem (buy) or compare (buy, and price the cloud beside it)."""
    electricity_usd_per_kwh: Annotated[PositiveFloat, Field(le=MAX_USD_PER_KWH)] = 0.10
    """Electricity price, USD per kWh."""
    pue: Annotated[FiniteFloat, Field(ge=1.0, le=3.0)] = 1.3
    """Power usage effectiveness of the facility (facility power / IT power, 1..3)."""
    years: Annotated[PositiveFloat, Field(le=MAX_YEARS)] = 4.0  # depreciation horizon
    """Horizon over which the cluster is depreciated and costs are compared, years."""

    @model_validator(mode="after")
    def _gpus(self) -> Constraints:
        if isinstance(self.gpus, list) and not self.gpus:
            raise ValueError("gpus: give at least one GPU id, or 'choose'")
        return self


class Scenario(_Strict):
    """One scenario: what runs on the cluster and what limits the design."""

    name: Id
    """The scenario's name (a short slug)."""
    description: Annotated[StrictStr, Field(max_length=10_000)] = ""
    """Free text: what the scenario is about."""
    seed: Annotated[int, INTEGER, Field(ge=0, le=MAX_SEED)] = 0
    """Seed of every simulation of the plan (same seed, same blueprint)."""
    workloads: list[Workload] = Field(min_length=1, max_length=MAX_WORKLOADS)
    """What runs on the cluster: training, inference and fine-tuning workloads."""
    constraints: Constraints = Field(default_factory=Constraints)
    """What limits the design: GPUs, servers, racks, budget, deployment and prices of energy."""
    cluster: Cluster = Field(default_factory=Cluster)
    """The cluster as built beyond what the workloads need: a fixed size, spare servers, serving
    headroom."""
    fabric: FabricSection = Field(default_factory=FabricSection)
    """The network as an architect decides it: protocol, switch, scalable-unit size and
    oversubscription (the planner chooses what is not given)."""
    prices: Prices = Field(default_factory=Prices)
    """Server prices the scenario gives (USD per server id), used instead of the catalog's."""
    cloud: CloudPolicy = Field(default_factory=CloudPolicy)
    """Which cloud offer prices the rental comparison: a provider or offer, and a term (default:
    the cheapest matching offer on demand)."""
    storage: StorageSection = Field(default_factory=StorageSection)
    """The storage tier: system and size, checkpoint mode and copies, training data (default:
    the cheapest catalog system that meets the workloads, asynchronous checkpoints)."""
    energy: EnergySection = Field(default_factory=EnergySection)
    """Where the power comes from: grid region and year, contracted renewable share (default:
    the world average grid, no renewables)."""
    rag: RagSection | None = None
    """A retrieval workload: its vector index is sized next to the cluster (servers, power,
    price) from the corpus, embedding dimension and index type. Unset: none."""
    sites: list[SiteSpec] = Field(default_factory=list, max_length=MAX_SITES)
    """Sites a training job may span (power and WAN link each); two or more split each
    training workload over them (docs/accelerators.md)."""
    multisite: MultisitePolicy = Field(default_factory=MultisitePolicy)
    """How the sites synchronise: sync, diloco or streaming, with its outer period and bits."""

    @model_validator(mode="after")
    def _unique_names(self) -> Scenario:
        seen: set[str] = set()
        for w in self.workloads:
            if w.name in seen:
                raise ValueError(f"workload name {w.name!r} is used twice")
            seen.add(w.name)
        return self


def _repeated_name(doc: LoadedYaml) -> None:
    # Checked on the raw data so the error can point at the second name and its line.
    seen: set[object] = set()
    workloads = doc.data.get("workloads") if isinstance(doc.data, dict) else None
    for i, w in enumerate(workloads if isinstance(workloads, list) else []):
        name = w.get("name") if isinstance(w, dict) else None
        if not isinstance(name, str):
            continue  # missing or not a string: the model's validation names it
        if name in seen:
            raise ScenarioError(
                f"{doc.path}: workloads[{i}].name (line {doc.line_of(('workloads', i, 'name'))}): "
                f"workload name {short_repr(name)} is used twice"
            )
        seen.add(name)


def _too_many_workloads(doc: LoadedYaml) -> None:
    # pydantic checks a list's length after validating every item: 50,000 bad workloads
    # would each be reported before their number is.
    workloads = doc.data.get("workloads")
    if isinstance(workloads, list) and len(workloads) > MAX_WORKLOADS:
        raise ScenarioError(
            f"{doc.path}: workloads (line {doc.line_of(('workloads',))}): {len(workloads):,} "
            f"workloads; a scenario holds at most {MAX_WORKLOADS}"
        )


def parse_scenario(doc: LoadedYaml) -> Scenario:
    """Validate parsed YAML as a Scenario; ScenarioError names field paths and lines."""
    if not isinstance(doc.data, dict):
        raise ScenarioError(f"{doc.path}: a scenario is a mapping with name, workloads, ...")
    _too_many_workloads(doc)
    _repeated_name(doc)
    try:
        sc = Scenario.model_validate(doc.data)
    except ValidationError as exc:
        raise ScenarioError(
            f"{doc.path}: invalid scenario:\n" + describe_validation_error(exc, doc)
        ) from None
    check_cluster(sc, doc)
    check_sites(sc, doc)
    check_prefixes(sc, doc)
    return sc


def check_prefixes(sc: Scenario, doc: LoadedYaml | None) -> None:
    """Refuse an inference workload whose shared prefix is longer than its prompts' mean,
    naming the field and its line."""
    src = doc.path if doc is not None else "<scenario>"
    for i, w in enumerate(sc.workloads):
        if not isinstance(w, InferenceWorkload):
            continue
        sp = w.shared_prefix
        if sp is not None and sp.tokens > w.input_len.mean:
            at = where(doc, ("workloads", i, "shared_prefix", "tokens"))
            raise ScenarioError(f"{src}: {at}: {sp.tokens} tokens exceed the prompts' mean of "
                                f"{w.input_len.mean:g} (input_len) they begin")


def load_scenario(path: str | Path) -> tuple[Scenario, LoadedYaml]:
    """Read, parse and validate a scenario file."""
    try:
        doc = load(path)
    except YamlError as exc:
        raise ScenarioError(str(exc)) from None
    return parse_scenario(doc), doc


def loads_scenario(text: str, src: str = "<scenario>") -> tuple[Scenario, LoadedYaml]:
    """As ``load_scenario``, from text (the web editor uses this)."""
    try:
        doc = loads(text, src)
    except YamlError as exc:
        raise ScenarioError(str(exc)) from None
    return parse_scenario(doc), doc
