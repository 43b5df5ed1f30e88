"""The scenario file users write: workloads and constraints (pydantic v2, from YAML).

Only shape is checked here; references to catalog ids are resolved by
``clusterwright.catalog.references`` (this layer does not know the catalog).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    NonNegativeFloat,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    StrictStr,
    ValidationError,
    model_validator,
)

from clusterwright.errors import ScenarioError
from clusterwright.spec.parallel import Recompute
from clusterwright.spec.yamlio import LoadedYaml, YamlError, describe_validation_error, load, loads

Precision = Literal["fp32", "bf16", "fp16", "fp8", "int8", "int4", "fp4"]
TrainPrecision = Literal["fp32", "bf16", "fp16", "fp8", "fp4"]
Id = Annotated[StrictStr, Field(min_length=1)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class LengthDist(_Strict):
    """A token-length distribution. ``mean`` is in tokens; ``stddev`` for normal/lognormal."""

    distribution: Literal["fixed", "uniform", "normal", "lognormal"] = "fixed"
    mean: PositiveFloat
    stddev: NonNegativeFloat = 0.0
    min: PositiveInt = 1
    max: PositiveInt | None = None

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

    hourly: list[Annotated[float, Field(ge=0, le=1)]] | None = None
    peak_hour: Annotated[float, Field(ge=0, lt=24)] = 14.0
    trough_fraction: Annotated[float, Field(ge=0, le=1)] = 0.3

    @model_validator(mode="after")
    def _hours(self) -> Diurnal:
        if self.hourly is not None and len(self.hourly) != 24:
            raise ValueError(f"hourly needs 24 values, got {len(self.hourly)}")
        return self


class Slo(_Strict):
    ttft_p99_s: PositiveFloat  # time to first token, seconds
    tpot_p99_s: PositiveFloat  # time per output token after the first, seconds
    e2e_p99_s: PositiveFloat | None = None


class Window(_Strict):
    """Hours of the day [start_hour, end_hour) local time; may wrap past midnight."""

    start_hour: Annotated[int, Field(ge=0, le=23)]
    end_hour: Annotated[int, Field(ge=0, le=24)]


ModelRef = Id | dict[str, Any]  # catalog id, or an inline ModelArch mapping


class TrainingLayout(_Strict):
    """A parallel layout fixed by the user (the one a paper published, say); the fields left
    out are searched, as ``train estimate`` does. dp follows from the GPU count."""

    tp: PositiveInt = 1
    pp: PositiveInt = 1
    cp: PositiveInt = 1
    ep: PositiveInt = 1
    interleave: PositiveInt | None = None  # virtual pipeline stages
    zero: Literal[0, 1, 2, 3] | None = None
    micro_batch: PositiveInt | None = None
    recompute: Recompute | None = None
    sequence_parallel: bool | None = None

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
    cp_comm: Literal["p2p", "allgather", "a2a"] | None = None
    ep_overlap: Literal["none", "1f1b", "dualpipe"] | None = None
    ep_dispatcher: Literal["alltoall", "deepep"] | None = None
    fp8_recipe: Literal["delayed", "current", "blockwise", "mx"] | None = None
    tp_overlap: bool | None = None


class TrainingWorkload(_Strict):
    kind: Literal["training"]
    name: Id
    model: ModelRef
    tokens: PositiveFloat  # training tokens
    seq_len: PositiveInt = 4096
    global_batch: PositiveInt | None = None  # sequences per step
    global_batch_tokens: PositiveInt | None = None
    precision: TrainPrecision = "bf16"
    deadline_days: PositiveFloat | None = None
    gpus: PositiveInt | None = None
    stack: Id | None = None  # software stack (catalog id); default: the GPU's first
    layout: TrainingLayout | None = None  # fixed layout; default: the planner's best
    options: TrainingOptions | None = None

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


class InferenceWorkload(_Strict):
    kind: Literal["inference"]
    name: Id
    model: ModelRef
    qps: PositiveFloat  # peak requests per second
    input_len: Annotated[LengthDist, Field()]
    output_len: Annotated[LengthDist, Field()]
    slo: Slo
    precision: Precision = "bf16"
    kv_precision: Precision | None = None  # None means the weight precision (16-bit for ints)
    diurnal: Diurnal | None = None

    @model_validator(mode="before")
    @classmethod
    def _lengths(cls, data: Any) -> Any:
        if isinstance(data, dict):
            data = dict(data)
            for k in ("input_len", "output_len"):
                if k in data:
                    data[k] = _length(data[k])
        return data


class FinetuneWorkload(_Strict):
    kind: Literal["finetune"]
    name: Id
    model: ModelRef
    tokens: PositiveFloat  # dataset tokens per epoch
    epochs: PositiveFloat = 1.0
    method: Literal["full", "lora"] = "lora"
    lora_rank: PositiveInt = 16
    seq_len: PositiveInt = 4096
    precision: TrainPrecision = "bf16"
    gpus: PositiveInt | None = None
    window: Window | None = None  # e.g. nights on a shared inference pool


Workload = Annotated[
    TrainingWorkload | InferenceWorkload | FinetuneWorkload, Field(discriminator="kind")
]


class Constraints(_Strict):
    gpus: Literal["choose"] | list[Id] = "choose"  # allowed GPU catalog ids
    servers: list[Id] | None = None
    power_per_rack_kw: PositiveFloat = 40.0
    cooling: Literal["air", "liquid"] = "air"
    budget_usd: PositiveFloat | None = None
    deployment: Literal["cloud", "on-prem", "compare"] = "compare"
    electricity_usd_per_kwh: PositiveFloat = 0.10
    pue: Annotated[float, Field(ge=1.0, le=3.0)] = 1.3
    years: PositiveFloat = 4.0  # depreciation horizon

    @model_validator(mode="after")
    def _gpus(self) -> Constraints:
        if isinstance(self.gpus, list) and not self.gpus:
            raise ValueError("gpus: give at least one GPU id, or 'choose'")
        return self


class Scenario(_Strict):
    """One scenario: what runs on the cluster and what limits the design."""

    name: Id
    description: StrictStr = ""
    seed: NonNegativeInt = 0
    workloads: list[Workload] = Field(min_length=1)
    constraints: Constraints = Field(default_factory=Constraints)

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
        if name is None:
            continue
        if name in seen:
            raise ScenarioError(
                f"{doc.path}: workloads[{i}].name (line {doc.line_of(('workloads', i, 'name'))}): "
                f"workload name {name!r} is used twice"
            )
        seen.add(name)


def parse_scenario(doc: LoadedYaml) -> Scenario:
    """Validate parsed YAML as a Scenario; ScenarioError names field paths and lines."""
    if not isinstance(doc.data, dict):
        raise ScenarioError(f"{doc.path}: a scenario is a mapping with name, workloads, ...")
    _repeated_name(doc)
    try:
        return Scenario.model_validate(doc.data)
    except ValidationError as exc:
        raise ScenarioError(
            f"{doc.path}: invalid scenario:\n" + describe_validation_error(exc, doc)
        ) from None


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
