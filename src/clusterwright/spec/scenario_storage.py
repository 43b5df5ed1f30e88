"""The scenario's ``storage:`` and ``energy:`` sections: what an architect decides about the
storage tier and where the cluster draws its power from.

Every field is optional; left out, the planner decides (the cheapest catalog storage system
that meets the workloads, asynchronous checkpoints) and the carbon is counted on the world
average grid. Catalog ids (storage systems, grid regions) are checked against the catalog in
``catalog/references.py``, with the field's line.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictStr

from clusterwright.spec.numbers import INTEGER, Fraction, NonNegativeFloat, PositiveFloat

MAX_ID_CHARS = 128  # as scenario ids (spec.scenario.MAX_ID_CHARS)
Id = Annotated[StrictStr, Field(min_length=1, max_length=MAX_ID_CHARS)]


class StorageSection(BaseModel):
    """Storage tier choices: the system and its size, how checkpoints are written, how many are
    kept, and what the training data needs when it is not text."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    system: Id | None = None
    """Storage system (catalog id, `clusterwright catalog list storage`). Unset: the cheapest
    catalog system that meets the workloads."""
    units: Annotated[int, INTEGER, Field(gt=0, le=100_000)] | None = None
    """Units of the storage system bought. Unset: sized to the workloads. A fixed tier too slow
    for the checkpoint interval is a binding constraint in the plan, with its numbers."""
    checkpoint: Literal["async", "sync"] = "async"
    """How checkpoints are written: async (a device-to-host snapshot stalls training, the write
    runs in the background) or sync (training waits for the write)."""
    checkpoint_copies: Annotated[int, INTEGER, Field(ge=1, le=1000)] | None = None
    """Full checkpoints kept on the tier. Unset: the catalog assumption
    checkpoint_copies_retained (3)."""
    data_read_gbps_per_gpu: Annotated[NonNegativeFloat, Field(le=1000)] | None = None
    """Training data each GPU reads, GB/s (images, video, MLPerf-Storage-like samples). Unset:
    text tokens at the planned rate (2 or 4 bytes per token id)."""
    dataset_tb: Annotated[NonNegativeFloat, Field(le=1e9)] | None = None
    """The training dataset's size on the tier, TB. Unset: the training tokens at 2 or 4 bytes
    each."""
    data_file_mb: Annotated[PositiveFloat, Field(le=1e9)] | None = None
    """Size of one training data file, MB (small files make reads IOPS- or metadata-bound:
    the tier is sized at what it delivers to them). Unset: large sequential files, sized by
    bandwidth."""
    data_request_kb: Annotated[PositiveFloat, Field(le=1e9)] | None = None
    """Bytes one read request of the data loader carries, kB (TensorFlow TFRecord: 262.144).
    Unset: one request per file. Needs data_file_mb."""
    local_nvme: Id | None = None
    """The GPU servers' own NVMe (catalog id of kind local-nvme, e.g. dgx-8x3.84tb-u2-gen4):
    the plan reports it as checkpoint staging (the stall of writing each server's shard
    locally) and as a read cache. Unset: not considered."""


class EnergySection(BaseModel):
    """Where the power comes from: the grid region (location-based carbon) and the share bought
    as contracted renewable energy (market-based carbon)."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    region: Id | None = None
    """Grid region (catalog id, `clusterwright catalog list grids`). Unset: the world average."""
    year: Annotated[int, INTEGER, Field(ge=2000, le=2100)] | None = None
    """Year of the grid's carbon intensity. Unset: the latest year the catalog has for the
    region."""
    renewable_share: Fraction = 0.0
    """Share of the energy covered by contracted renewables (PPAs, certificates), 0..1; counted
    at zero emissions in the market-based figure."""
    ramp_limit_mw_per_s: Annotated[PositiveFloat, Field(le=1e6)] | None = None
    """The utility's limit on how fast the site's load may change, MW per second. The plan
    compares a training job's power swing with it (a high risk when exceeded) and prices the
    mitigations. Unset: the swing is reported without a limit."""
