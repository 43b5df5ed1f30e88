"""Findings of the live twin and the report that ranks them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# Every kind of finding, in the order the report lists kinds with equal impact.
KINDS = (
    "node_unavailable",   # the scheduler or orchestrator has the node out of service
    "gpu_missing",        # fewer GPUs than planned on a node
    "nvlink_degraded",    # a GPU pair with fewer NVLinks than its peers
    "nvlink_domain",      # a node in another NVLink domain (clique) than planned
    "missing_link",       # a planned cable with no neighbour on either end: absent or down
    "miswired_link",      # a cable whose ends are planned ports of different cables
    "rail_swap",          # a host's rail cables crossed between its own leaves
    "wrong_su",           # a node cabled to another scalable unit's leaves
    "wrong_speed",        # a link running at another rate than planned
    "wrong_label",        # a scheduler or label placing a node in the wrong group
    "unexpected_asn",     # a routed switch or BGP peer with another ASN than planned
    "unexpected_address", # a router id or BGP neighbour address not in the plan
    "bgp_down",           # a planned BGP session down with no cabling fault to explain it
    "extra_link",         # a cable the plan does not have
    "slow_gpu",           # a GPU (or node) persistently slower than its peers
    "slow_link",          # a link with errors or flaps far above its peers
)
SEVERITIES = ("critical", "major", "minor")


@dataclass
class Move:
    """One repair step on one cable: unplug the end at ``src`` and plug it into ``dst``
    (``dst`` None: remove the cable; ``src`` None: run a new cable to ``dst``)."""

    cable: str  # planned cable id, or "" for a cable the plan does not have
    src: tuple[str, str] | None
    dst: tuple[str, str] | None
    note: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "cable": self.cable,
            "from": None if self.src is None else {"device": self.src[0], "port": self.src[1]},
            "to": None if self.dst is None else {"device": self.dst[0], "port": self.dst[1]},
            "note": self.note,
        }

    def text(self) -> str:
        c = f"cable {self.cable}" if self.cable else "the cable"
        if self.src and self.dst:
            return f"{c}: move the end at {self.src[0]} {self.src[1]} to {self.dst[0]} " \
                   f"{self.dst[1]}" + (f" ({self.note})" if self.note else "")
        if self.src:
            return f"{c}: remove it from {self.src[0]} {self.src[1]}" + (
                f" ({self.note})" if self.note else "")
        assert self.dst is not None
        return f"{c}: connect {self.dst[0]} {self.dst[1]}" + (
            f" ({self.note})" if self.note else "")


@dataclass
class Finding:
    """One difference between the blueprint and the cluster as built."""

    kind: str
    subject: str  # the device, port or node it is about
    summary: str
    expected: str
    observed: str
    repair: str
    key: tuple[str, ...]  # (kind, canonical subject...): what a test matches on
    evidence: list[str] = field(default_factory=list)  # "file:line: what it says"
    moves: list[Move] = field(default_factory=list)
    devices: list[str] = field(default_factory=list)  # every device involved (drawing)
    links: list[int] = field(default_factory=list)  # planned cable indices involved
    severity: str = "minor"
    gpu_hours_lost_per_day: float = 0.0
    impact: dict[str, Any] = field(default_factory=dict)
    id: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "severity": self.severity,
            "gpu_hours_lost_per_day": round(self.gpu_hours_lost_per_day, 3),
            "subject": self.subject,
            "summary": self.summary,
            "expected": self.expected,
            "observed": self.observed,
            "repair": self.repair,
            "moves": [m.as_dict() for m in self.moves],
            "impact": self.impact,
            "devices": self.devices,
            "evidence": self.evidence[:8] + ([f"... {len(self.evidence) - 8} more"]
                                             if len(self.evidence) > 8 else []),
        }


@dataclass
class TwinReport:
    """The comparison: ranked findings, what each input covered and what could not be
    seen, and the impact of the as-built state."""

    blueprint: str
    findings: list[Finding]
    coverage: list[dict[str, Any]]
    unseen: list[str]
    impact: dict[str, Any]
    inputs: dict[str, list[str]]
    notes: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for f in self.findings:
            out[f.kind] = out.get(f.kind, 0) + 1
        return out

    def as_dict(self) -> dict[str, Any]:
        by_sev = {s: sum(1 for f in self.findings if f.severity == s) for s in SEVERITIES}
        return {
            "blueprint": self.blueprint,
            "findings_total": len(self.findings),
            "by_kind": self.counts(),
            "by_severity": by_sev,
            "gpu_hours_lost_per_day": round(self.impact.get("gpu_hours_lost_per_day", 0.0), 3),
            "findings": [f.as_dict() for f in self.findings],
            "could_not_see": self.unseen,
            "coverage": self.coverage,
            "impact": self.impact,
            "inputs": self.inputs,
            "notes": self.notes,
            "timings": self.timings,
        }
