"""MIG (Multi-Instance GPU) placement geometry: which GPU instances fit on one GPU.

An A100/H100-class GPU has 8 memory slices and 7 compute slices. A GPU instance of a profile
occupies ``memory_slices`` consecutive memory slices from one of the profile's allowed start
slots, and ``compute_slices`` compute slices; creation fails when its memory range overlaps an
existing instance, when the start slot is not allowed, when the profile's ``max_instances`` is
reached or when the compute slices run out (NVIDIA MIG User Guide, "Supported MIG Profiles" and
"GPU Instance placements", ``nvmlGpuInstancePlacement_t``; profile data from the catalog,
shared/data/mig_profiles.csv). Pure functions on immutable layouts; no randomness.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from clusterwright.catalog.schema import MigProfile
from clusterwright.errors import InputError

MEMORY_SLICES = 8  # memory axis of a MIG-capable A100/H100/H200/B200 (MIG user guide)
COMPUTE_SLICES = 7  # compute axis: the 7g profile takes all of it


class MigPlacementError(InputError):
    """A GPU instance that the driver would refuse to create; the message says why."""


@dataclass(frozen=True, slots=True)
class Instance:
    """One created GPU instance: its profile name and start slot on the memory axis."""

    profile: str
    start: int


@dataclass(frozen=True, slots=True)
class Layout:
    """The GPU instances on one GPU. ``memory_mask`` bit i is memory slice i."""

    instances: tuple[Instance, ...] = ()
    memory_mask: int = 0
    compute_used: int = 0

    def count(self, profile: str) -> int:
        return sum(1 for i in self.instances if i.profile == profile)


def profiles_by_name(profiles: Iterable[MigProfile]) -> dict[str, MigProfile]:
    """The catalog's profile list as a dict by name (``1g.10gb`` ...)."""
    return {p.name: p for p in profiles}


def span_mask(start: int, size: int) -> int:
    """Bit mask of ``size`` memory slices from ``start``."""
    return ((1 << size) - 1) << start


def refusal(layout: Layout, prof: MigProfile, start: int) -> str | None:
    """Why creating ``prof`` at ``start`` on ``layout`` fails, or None when it succeeds."""
    if start not in prof.start_slots:
        slots = ", ".join(str(s) for s in prof.start_slots)
        return f"{prof.name} cannot start at slot {start} (allowed: {slots})"
    if start + prof.memory_slices > MEMORY_SLICES:
        return f"{prof.name} at slot {start} runs past memory slice {MEMORY_SLICES - 1}"
    if layout.count(prof.name) >= prof.max_instances:
        return f"{prof.name}: at most {prof.max_instances} instance(s) per GPU"
    if layout.memory_mask & span_mask(start, prof.memory_slices):
        end = start + prof.memory_slices - 1
        return f"{prof.name} at slot {start} overlaps an existing instance (slices {start}-{end})"
    if layout.compute_used + prof.compute_slices > COMPUTE_SLICES:
        return f"{prof.name} needs {prof.compute_slices} compute slices, " \
               f"{COMPUTE_SLICES - layout.compute_used} free"
    return None


def create(layout: Layout, prof: MigProfile, start: int) -> Layout:
    """The layout after creating ``prof`` at ``start``; raises ``MigPlacementError`` like the
    driver does on an invalid placement."""
    why = refusal(layout, prof, start)
    if why is not None:
        raise MigPlacementError(why)
    return Layout(
        instances=(*layout.instances, Instance(prof.name, start)),
        memory_mask=layout.memory_mask | span_mask(start, prof.memory_slices),
        compute_used=layout.compute_used + prof.compute_slices,
    )


def destroy(layout: Layout, prof: MigProfile, start: int) -> Layout:
    """The layout after destroying the instance of ``prof`` at ``start``."""
    inst = Instance(prof.name, start)
    if inst not in layout.instances:
        raise MigPlacementError(f"no {prof.name} instance at slot {start}")
    rest = list(layout.instances)
    rest.remove(inst)
    return Layout(
        instances=tuple(rest),
        memory_mask=layout.memory_mask & ~span_mask(start, prof.memory_slices),
        compute_used=layout.compute_used - prof.compute_slices,
    )


def best_start(layout: Layout, prof: MigProfile) -> int | None:
    """The start slot a packer should use for ``prof``, or None if it does not fit.

    Highest allowed slot first: large profiles (4g, 7g) can only start at slot 0, so small ones
    packed from the top keep slot 0 usable (one 3g at slot 4 still admits a 4g at 0; at slot 0
    it would not).
    """
    for start in sorted(prof.start_slots, reverse=True):
        if refusal(layout, prof, start) is None:
            return start
    return None


def build(profiles: dict[str, MigProfile], instances: Sequence[tuple[str, int]]) -> Layout:
    """Create ``(profile, start)`` instances in order, as ``nvidia-smi mig -cgi`` would;
    raises ``MigPlacementError`` at the first the driver would refuse."""
    layout = Layout()
    for name, start in instances:
        if name not in profiles:
            raise MigPlacementError(
                f"unknown MIG profile {name!r} (one of {', '.join(sorted(profiles))})"
            )
        layout = create(layout, profiles[name], start)
    return layout


def capacity(layout: Layout, prof: MigProfile) -> int:
    """How many more ``prof`` instances fit on ``layout`` (greedy from the top slot, which is
    exact for one profile: its slots are aligned to its size)."""
    n = 0
    while (s := best_start(layout, prof)) is not None:
        layout = create(layout, prof, s)
        n += 1
    return n
