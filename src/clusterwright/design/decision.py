"""A decision of the blueprint: what was chosen, why, and the alternatives it beat.

Its own module because the fabric designer records its decisions as it builds (switch, tiers,
scalable unit, oversubscription) and the Blueprint carries them all: both import it, neither
imports the other for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

DecisionArea = Literal["gpu", "server", "cluster_size", "spares", "protocol", "switch", "tiers",
                       "su", "oversubscription", "parallelism", "replicas", "pricing",
                       "storage", "rag"]


@dataclass(frozen=True)
class Alternative:
    """An option a decision beat, and by how much (words a reader checks: "$1.2M more over 4
    years", "misses the 30-day deadline by 6.1 days")."""

    option: str
    outcome: str

    def as_dict(self) -> dict[str, str]:
        return {"option": self.option, "outcome": self.outcome}


@dataclass(frozen=True)
class Decision:
    """One choice of the blueprint: what was chosen, the constraint or comparison that decided
    it (``why``), and the alternatives it beat. ``subject`` is the workload it concerns, or
    None for the cluster as a whole."""

    area: DecisionArea
    choice: str
    why: str
    subject: str | None = None
    alternatives: tuple[Alternative, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {"area": self.area, "subject": self.subject, "choice": self.choice,
                "why": self.why, "alternatives": [a.as_dict() for a in self.alternatives]}


__all__ = ["Alternative", "Decision", "DecisionArea"]
