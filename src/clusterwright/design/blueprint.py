"""The Blueprint: everything decided and estimated for one scenario, and the decisions behind it.

``Blueprint`` is a JSON-serializable record (schema ``SCHEMA_VERSION``; see
docs/blueprint.md for the keys). The pure helpers here take the evaluated candidates and the
facts of the chosen design and decide: which candidate to recommend and why the others lost
(``choose``), which constraint binds and by how much (``violation``), and what the design's
risks are (``assess_risks``). No simulation happens here: ``plan/scenario.py`` runs the
planners and hands their numbers in.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from clusterwright.design.decision import Decision
from clusterwright.errors import InputError
from clusterwright.report.fmt import signed_pct, usd

if TYPE_CHECKING:
    from clusterwright.design.fabric import Fabric

SCHEMA_VERSION = "1.3"  # 1.1: ``decisions`` (why each choice was made); 1.2: ``bom``,
# ``sources``, fabric ``shape`` and ``cabling``, tco ``capex_by_category_usd``; 1.3:
# ``storage`` (the storage tier) and ``energy`` (energy and carbon per run and per year,
# power trace)

ConstraintName = Literal[
    "budget_usd", "power_per_rack_kw", "cooling", "deadline_days", "slo", "gpus", "memory",
    "storage", "site_power",
]
Severity = Literal["high", "medium", "low"]


# --------------------------------------------------------------------------- constraints


@dataclass(frozen=True)
class Violation:
    """One constraint a candidate design breaks: ``needed`` against ``limit`` in ``unit``."""

    constraint: ConstraintName
    limit: float | None
    needed: float | None
    unit: str
    message: str
    workload: str | None = None

    @property
    def excess_fraction(self) -> float | None:
        """How far past the limit the design is: needed / limit - 1 (0.37 = 37 % over)."""
        if self.limit is None or self.needed is None or self.limit <= 0:
            return None
        return self.needed / self.limit - 1.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "constraint": self.constraint,
            "workload": self.workload,
            "limit": self.limit,
            "needed": self.needed,
            "unit": self.unit,
            "excess_fraction": self.excess_fraction,
            "message": self.message,
        }


def violation(
    constraint: ConstraintName, limit: float | None, needed: float | None, unit: str,
    what: str, workload: str | None = None,
) -> Violation:
    """A violation whose message states limit, need and excess: ``what`` names the need
    ("cheapest design on h100-sxm"). Units ``usd`` and ``days``/``kW``/``s`` are formatted."""

    def fmt(v: float | None) -> str:
        if v is None:
            return "n/a"
        if unit == "usd":
            return usd(v)
        if unit == "s":
            return f"{v * 1e3:.0f} ms" if v < 10 else f"{v:.0f} s"
        return f"{v:,.4g} {unit}"

    v = Violation(constraint, limit, needed, unit, "", workload)
    excess = v.excess_fraction
    tail = f": {signed_pct(excess)}" if excess is not None else ""
    if limit is None and needed is None:
        msg = what if workload is None else f"{workload}: {what}"
    else:
        label = constraint if workload is None else f"{workload}: {constraint}"
        msg = f"{label} {fmt(limit)}, {what} {fmt(needed)}{tail}"
    return Violation(constraint, limit, needed, unit, msg, workload)


# --------------------------------------------------------------------------- candidates


@dataclass
class Candidate:
    """One GPU type sized for every workload: cluster, cost and what it breaks.

    ``total_cost_usd`` is in the deployment's basis (``cost_basis``); None when the candidate
    could not be sized at all (no server, no calibration, the model fits on no layout).
    """

    gpu: str
    server: str | None
    nodes: int | None
    gpus: int | None
    total_cost_usd: float | None
    violations: list[Violation] = field(default_factory=list)
    capex_usd: float | None = None
    annual_opex_usd: float | None = None
    cloud_annual_cost_usd: float | None = None
    cloud_total_cost_usd: float | None = None
    on_prem_total_cost_usd: float | None = None
    breakeven_months: float | None = None
    cost_per_gpu_hour_usd: float | None = None
    cost_basis: str = ""
    detail: dict[str, Any] = field(default_factory=dict)  # planner outputs the caller keeps
    decisions: list[Decision] = field(default_factory=list)  # why, for the blueprint

    @property
    def feasible(self) -> bool:
        return not self.violations and self.total_cost_usd is not None


def _infeasible_rank(c: Candidate) -> tuple[float, float, float, float]:
    # The nearest miss: sized at all, then fewest broken constraints, then the smallest
    # worst excess, then cost. A candidate that could not be sized ranks last.
    excesses = [v.excess_fraction for v in c.violations if v.excess_fraction is not None]
    return (
        0.0 if c.total_cost_usd is not None else 1.0,
        float(len(c.violations)),
        max(excesses) if excesses else math.inf,
        c.total_cost_usd if c.total_cost_usd is not None else math.inf,
    )


def why_not(c: Candidate, chosen: Candidate) -> str:
    """Why ``c`` lost to ``chosen``, in one line a person reads."""
    if c.violations:
        return "; ".join(v.message for v in c.violations)
    if c.total_cost_usd is None:
        return "could not be sized"
    if chosen.total_cost_usd is None or chosen.total_cost_usd <= 0:
        return "not chosen"
    d = c.total_cost_usd / chosen.total_cost_usd - 1.0
    if abs(d) < 0.005:
        return (
            f"same cost as {chosen.gpu} ({usd(c.total_cost_usd)}) within 0.5 %; "
            f"{chosen.gpu} comes first in the catalog order"
        )
    return f"cost {signed_pct(d)} ({usd(c.total_cost_usd)} vs {usd(chosen.total_cost_usd)})"


@dataclass(frozen=True)
class Choice:
    """The recommended candidate, whether it meets every constraint, and the runners-up."""

    chosen: Candidate
    feasible: bool
    alternatives: list[dict[str, Any]]
    binding: list[Violation]


def choose(candidates: list[Candidate]) -> Choice:
    """The cheapest feasible candidate (ties: catalog order); with none feasible, the nearest
    miss (fewest broken constraints, smallest excess, cheapest), whose violations are then the
    binding constraints. Raises InputError on an empty list."""
    if not candidates:
        raise InputError("constraints.gpus: no candidate GPU to evaluate")
    ok = [c for c in candidates if c.feasible]
    if ok:
        chosen = min(ok, key=lambda c: c.total_cost_usd or 0.0)
        feasible = True
        binding: list[Violation] = []
    else:
        chosen = min(candidates, key=_infeasible_rank)
        feasible = False
        binding = list(chosen.violations)
        if not binding:
            binding = [violation("gpus", None, None, "",
                                 f"no design could be sized on {chosen.gpu}")]
    alts = [
        {
            "gpu": c.gpu,
            "server": c.server,
            "nodes": c.nodes,
            "gpus": c.gpus,
            "total_cost_usd": c.total_cost_usd,
            "feasible": c.feasible,
            "why_not": why_not(c, chosen),
        }
        for c in candidates
        if c is not chosen
    ]
    return Choice(chosen, feasible, alts, binding)


def budget_violation(total_usd: float, budget_usd: float | None, what: str) -> Violation | None:
    """A budget violation when ``total_usd`` exceeds the budget, else None."""
    if budget_usd is None or total_usd <= budget_usd:
        return None
    return violation("budget_usd", budget_usd, total_usd, "usd", what)


# --------------------------------------------------------------------------- risks


@dataclass(frozen=True)
class Risk:
    severity: Severity
    area: Literal["power", "reliability", "network", "cost", "capacity",
                  "single-point-of-failure"]
    title: str
    detail: str

    def as_dict(self) -> dict[str, str]:
        return {"severity": self.severity, "area": self.area, "title": self.title,
                "detail": self.detail}


@dataclass(frozen=True)
class InferenceFacts:
    name: str
    replicas: int
    peak_qps: float
    qps_capacity: float  # the fleet's SLO-meeting capacity, requests/s


@dataclass(frozen=True)
class DesignFacts:
    """The numbers of a design that its risks are judged on. None means not applicable."""

    gpus: int
    densest_rack_kw: float | None = None  # nameplate
    rack_limit_kw: float | None = None
    cooling: str = "air"
    cooling_cap_kw: float | None = None  # what the cooling mode carries per rack
    interruptions_per_day: float | None = None
    job_gpus: int | None = None  # the GPUs of the job the interruptions are counted on
    job_mtbf_hours: float | None = None
    leaf_oversubscription: float | None = None
    spine_oversubscription: float | None = None
    tiers: int | None = None
    spine_switches: int | None = None
    core_switches: int | None = None
    storage_ports: int | None = None
    storage_links_unresolved: int = 0  # storage links no catalog part joins to the leaves
    storage_system: str | None = None
    frontend_switch: str | None = None
    frontend_spines: int | None = None
    inference: tuple[InferenceFacts, ...] = ()
    total_cost_usd: float | None = None  # what the budget is checked against
    budget_usd: float | None = None
    on_prem_total_cost_usd: float | None = None
    cloud_total_cost_usd: float | None = None  # the same GPUs rented over the same horizon
    deadline_days: float | None = None
    time_to_train_p90_days: float | None = None
    swing_mw: float | None = None
    finetune_misses_window: tuple[str, ...] = ()
    estimated_prices: int = 0  # prices/assumptions tagged [estimate] in the TCO
    rate_basis: str = ""  # the fleet study the failure rates come from
    hot_spares: int | None = None  # spare and idle nodes the training job can take
    spare_wait_hours: float | None = None  # mean hours the job waits for nodes (Monte Carlo)
    recommended_spares: int | None = None
    ettr: float | None = None
    ettr_with_recommended_spares: float | None = None
    # Lossless Ethernet: priorities asked for, those the tightest switch buffer holds, the
    # share of that buffer the asked ones take, and how many switches fall short.
    lossless_priorities: int | None = None
    lossless_priorities_fit: int | None = None
    pfc_buffer_share: float | None = None
    pfc_switches_short: int = 0
    pfc_worst_switch: str = ""


def assess_risks(f: DesignFacts) -> list[Risk]:
    """The design's challenges, most severe first. Thresholds are stated in each detail."""
    out: list[Risk] = []
    if f.densest_rack_kw is not None and f.rack_limit_kw:
        share = f.densest_rack_kw / f.rack_limit_kw
        if f.densest_rack_kw > 40 and f.cooling == "air":
            out.append(Risk(
                "high", "power", f"{f.densest_rack_kw:.0f} kW air-cooled racks",
                f"the densest rack draws {f.densest_rack_kw:.1f} kW nameplate; air cooling much "
                "above 40 kW per rack needs rear-door heat exchangers or containment",
            ))
        elif share > 0.9:
            out.append(Risk(
                "medium", "power", "racks at the power limit",
                f"the densest rack draws {f.densest_rack_kw:.1f} kW nameplate, "
                f"{100 * share:.0f} % of the {f.rack_limit_kw:g} kW limit: no headroom for a "
                "denser server generation",
            ))
        if f.cooling_cap_kw is not None and f.rack_limit_kw > f.cooling_cap_kw:
            out.append(Risk(
                "medium", "power", "rack limit above what the cooling carries",
                f"power_per_rack_kw {f.rack_limit_kw:g} exceeds the {f.cooling} cooling limit "
                f"of {f.cooling_cap_kw:g} kW per rack; racks were planned at "
                f"{f.cooling_cap_kw:g} kW",
            ))
    if f.interruptions_per_day is not None:
        n = f.interruptions_per_day
        mtbf = f"job MTBF {f.job_mtbf_hours:.1f} h" if f.job_mtbf_hours else ""
        sev: Severity = "high" if n >= 1 else "medium" if n >= 0.2 else "low"
        out.append(Risk(
            sev, "reliability", f"{n:.2f} job interruptions per day",
            f"a job on {f.job_gpus or f.gpus:,} GPUs is interrupted about {n:.2f} times a day "
            f"({mtbf}; "
            f"{f.rate_basis or 'catalog failure rates'}): checkpoint at the Daly interval, "
            "automate restarts, keep hot spares (>= 1/day: high, >= 0.2/day: medium)",
        ))
    if (f.spare_wait_hours is not None and f.recommended_spares is not None
            and f.hot_spares is not None and f.hot_spares < f.recommended_spares
            and f.spare_wait_hours >= 1.0):
        gain = (f" (ETTR {100 * f.ettr:.0f} % -> {100 * f.ettr_with_recommended_spares:.0f} %)"
                if f.ettr is not None and f.ettr_with_recommended_spares is not None else "")
        out.append(Risk(
            "high" if f.spare_wait_hours >= 24 else "medium", "reliability",
            f"{f.spare_wait_hours:,.0f} h waiting for repaired nodes",
            f"with {f.hot_spares} hot spare node(s) the training job waits "
            f"{f.spare_wait_hours:,.0f} h on average for failed nodes to come back from "
            "repair (Monte Carlo, repair queue); "
            f"{f.recommended_spares} spares would cover the nodes in repair 99 % of the time"
            f"{gain}: add them with cluster.spares (>= 24 h: high, >= 1 h: medium)",
        ))
    if f.swing_mw is not None and f.swing_mw >= 1.0:
        out.append(Risk(
            "medium", "power", f"{f.swing_mw:.1f} MW power swings",
            f"synchronous training steps swing IT power by up to {f.swing_mw:.1f} MW within "
            "seconds (all GPUs between TDP and idle); agree ramp limits with the utility and "
            "size UPS/generators for it (>= 1 MW flagged)",
        ))
    for tier, ratio in (("leaf", f.leaf_oversubscription), ("spine", f.spine_oversubscription)):
        if ratio is not None and ratio > 1.0 + 1e-9:
            out.append(Risk(
                "medium", "network", f"{ratio:g}:1 oversubscribed {tier} tier",
                f"the {tier} tier carries {ratio:g}x more bandwidth down than up: data-parallel "
                "all-reduce and MoE all-to-all across it slow down under load",
            ))
    if f.lossless_priorities and f.lossless_priorities_fit is not None:
        if f.lossless_priorities_fit < f.lossless_priorities:
            out.append(Risk(
                "high", "network", "lossless priorities do not fit the switch buffers",
                f"{f.pfc_switches_short} switch(es) (e.g. {f.pfc_worst_switch}) hold the PFC "
                f"headroom of only {f.lossless_priorities_fit} of the {f.lossless_priorities} "
                "lossless priorities asked for (headroom from each port's cable length, speed "
                "and MTU; docs/fabric.md): fewer lossless priorities, a smaller MTU, shorter "
                "cables or a deeper-buffered switch",
            ))
        elif f.pfc_buffer_share is not None and f.pfc_buffer_share > 0.5:
            out.append(Risk(
                "medium", "network", "PFC headroom takes most of a switch buffer",
                f"the {f.lossless_priorities} lossless priorities reserve "
                f"{100 * f.pfc_buffer_share:.0f} % of {f.pfc_worst_switch}'s buffer as "
                "headroom, leaving little shared buffer to absorb bursts before PAUSE "
                "(> 50 % flagged)",
            ))
    if f.tiers is not None and f.spine_switches == 1:
        out.append(Risk(
            "high", "single-point-of-failure", "one spine switch",
            "all traffic between leaves crosses a single spine: its failure partitions the "
            "fabric",
        ))
    if f.tiers == 3 and f.core_switches == 1:
        out.append(Risk(
            "high", "single-point-of-failure", "one core switch",
            "all traffic between pods crosses a single core switch",
        ))
    if f.storage_ports is not None and f.storage_ports <= 1:
        out.append(Risk(
            "medium", "single-point-of-failure", "single storage path",
            f"storage attaches through {f.storage_ports} frontend port(s): a link or switch "
            "failure stops checkpoints and data loading",
        ))
    if f.storage_links_unresolved:
        out.append(Risk(
            "medium", "network", "storage cabling unresolved",
            f"{f.storage_links_unresolved} port(s) of the {f.storage_system} units have no "
            f"catalog cable or optic to the frontend's {f.frontend_switch} leaves (a port rate "
            "or cage the leaf does not take): give the storage units NICs at the leaves' rate, "
            "or choose another frontend switch or storage system; the fabric notes say which"
        ))
    if f.frontend_spines is not None and f.frontend_spines == 1:
        out.append(Risk(
            "medium", "single-point-of-failure", "one frontend spine",
            "the frontend (storage, ingress) network has a single spine switch",
        ))
    for w in f.inference:
        if w.replicas == 1:
            out.append(Risk(
                "high", "single-point-of-failure", f"{w.name}: one replica",
                f"{w.name} runs on a single replica: one GPU or host failure stops the service; "
                "add a replica for N+1",
            ))
        if w.qps_capacity > 0:
            head = w.qps_capacity / w.peak_qps - 1.0
            if head < 0.1:
                out.append(Risk(
                    "medium", "capacity", f"{w.name}: {100 * head:.0f} % SLO headroom at peak",
                    f"{w.replicas} replicas sustain {w.qps_capacity:.1f} req/s within the SLOs "
                    f"against a peak of {w.peak_qps:g} req/s: a surge above "
                    f"{100 * head:.0f} % or a lost replica breaks the SLO (< 10 % flagged)",
                ))
    if f.budget_usd is not None and f.total_cost_usd is not None:
        share = f.total_cost_usd / f.budget_usd
        if 0.9 < share <= 1.0:
            out.append(Risk(
                "medium", "cost", f"{100 * share:.0f} % of the budget",
                f"the design costs {usd(f.total_cost_usd)} of a {usd(f.budget_usd)} budget: "
                "a price rise of more than "
                f"{100 * (1 / share - 1):.0f} % breaks it",
            ))
    if (f.on_prem_total_cost_usd is not None and f.cloud_total_cost_usd is not None
            and f.cloud_total_cost_usd < f.on_prem_total_cost_usd):
        out.append(Risk(
            "medium", "cost", "renting is cheaper over the horizon",
            f"the same GPUs on demand cost {usd(f.cloud_total_cost_usd)} against "
            f"{usd(f.on_prem_total_cost_usd)} to own over the same years: at this size and "
            "utilization the purchase does not pay back",
        ))
    if (f.deadline_days is not None and f.time_to_train_p90_days is not None
            and f.time_to_train_p90_days > f.deadline_days):
        out.append(Risk(
            "high", "reliability", "deadline at risk with failures",
            f"with failures and restarts the run takes {f.time_to_train_p90_days:.1f} days "
            f"at p90 (Monte Carlo), past the {f.deadline_days:g}-day deadline; the sizing "
            "used failure-free time",
        ))
    for name in f.finetune_misses_window:
        out.append(Risk(
            "medium", "capacity", f"{name}: does not fit its windows",
            f"{name} does not finish within its deadline's nightly windows on the GPUs the "
            "inference pool frees; extra GPUs were sized for it",
        ))
    if f.estimated_prices:
        out.append(Risk(
            "low", "cost", f"{f.estimated_prices} estimated prices",
            f"{f.estimated_prices} prices or cost assumptions in the TCO are estimates (tagged "
            "[estimate] or without a primary source in the catalog, listed in tco.estimates): "
            "get quotes before committing",
        ))
    order = {"high": 0, "medium": 1, "low": 2}
    return sorted(out, key=lambda r: order[r.severity])


# --------------------------------------------------------------------------- the record


def _major(version: str) -> int:
    try:
        return int(str(version).split(".", 1)[0])
    except ValueError:
        raise InputError(f"schema_version: {version!r} is not a version like '1.0'") from None


@dataclass
class Blueprint:
    """Everything decided and estimated for one scenario (the blueprint.json contract).

    Sections are plain JSON-ready dicts and lists (SI units unless a key names one), so the
    report and the sweep read them without importing a planner.
    """

    scenario: dict[str, Any]
    feasible: bool
    binding_constraints: list[dict[str, Any]]
    recommendation: dict[str, Any]
    alternatives: list[dict[str, Any]]
    workloads: list[dict[str, Any]]
    cluster: dict[str, Any] | None
    fabric: dict[str, Any] | None
    racks: list[dict[str, Any]]
    power: dict[str, Any] | None
    reliability: dict[str, Any] | None
    tco: dict[str, Any] | None
    risks: list[dict[str, Any]]
    decisions: list[dict[str, Any]] = field(default_factory=list)  # Decision.as_dict()
    storage: dict[str, Any] | None = None  # design/storage_plan.StoragePlan.as_dict()
    energy: dict[str, Any] | None = None  # plan/energy: per run and per year, carbon, trace
    bom: list[dict[str, Any]] = field(default_factory=list)  # fabric_tables.bom_rows
    sources: list[dict[str, Any]] = field(default_factory=list)  # catalog entries cited
    artifacts: dict[str, Any] = field(default_factory=dict)
    timings_s: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    clusterwright_version: str = ""
    schema_version: str = SCHEMA_VERSION
    # A training job split across the scenario's sites (plan/multisite), when it has two or
    # more; absent from blueprint.json otherwise.
    multisite: dict[str, Any] | None = None
    # The vector index tier of a retrieval workload (plan/rag), when the scenario has rag:.
    rag: dict[str, Any] | None = None
    # The designed fabric of the recommendation, for the exporters (BOM, cabling, configs);
    # not part of blueprint.json.
    fabric_design: Fabric | None = field(default=None, repr=False, compare=False)
    # Each site's designed fabric when a job is split across sites (plan/site_fabrics), whose
    # IaC is written under sites/<name>/
    site_fabrics: dict[str, Fabric] = field(default_factory=dict, repr=False, compare=False)

    KEYS: ClassVar[tuple[str, ...]] = (
        "schema_version", "clusterwright_version", "scenario", "feasible",
        "binding_constraints", "recommendation", "alternatives", "workloads", "cluster",
        "fabric", "racks", "power", "reliability", "tco", "risks", "decisions", "bom", "sources",
        "artifacts", "timings_s", "notes", "storage", "energy",
    )
    # Keys a blueprint of an earlier minor version may lack, with the value they stand for.
    ADDED: ClassVar[dict[str, Any]] = {"decisions": [], "bom": [], "sources": [],
                                       "storage": None, "energy": None}
    # Keys present only when the scenario asks for them (after the contract keys).
    OPTIONAL: ClassVar[tuple[str, ...]] = ("multisite", "rag")

    def to_dict(self) -> dict[str, Any]:
        """The blueprint.json object, keys in contract order, then ``multisite`` when the
        scenario spans sites and ``rag`` when it has a retrieval workload."""
        out = {k: getattr(self, k) for k in self.KEYS}
        out.update({k: getattr(self, k) for k in self.OPTIONAL if getattr(self, k) is not None})
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Blueprint:
        """Read a blueprint.json object. Refuses another major schema version (keys may have
        changed meaning) and a missing section, naming it."""
        if not isinstance(data, dict):
            raise InputError("blueprint: expected a JSON object")
        version = data.get("schema_version")
        if version is None:
            raise InputError("blueprint: schema_version is missing")
        if _major(str(version)) != _major(SCHEMA_VERSION):
            raise InputError(
                f"schema_version: blueprint has version {version}, this clusterwright reads "
                f"{SCHEMA_VERSION.split('.')[0]}.x; regenerate it with `clusterwright plan`"
            )
        missing = [k for k in cls.KEYS if k not in data and k not in cls.ADDED]
        if missing:
            raise InputError(f"blueprint: missing key(s) {', '.join(missing)}")
        values: dict[str, Any] = {k: data.get(k, cls.ADDED.get(k)) for k in cls.KEYS}
        values.update({k: data.get(k) for k in cls.OPTIONAL})
        return cls(**values)

    def metrics(self) -> dict[str, float | str | bool | None]:
        """One flat row for a sweep table (contract keys)."""
        r = self.recommendation
        fab = self.fabric or {}
        power = self.power or {}
        training = [w for w in self.workloads if w.get("kind") == "training"]
        inference = [w for w in self.workloads if w.get("kind") == "inference"]

        def worst(key: str) -> float | None:
            vals = [w[key] for w in inference if w.get(key) is not None]
            return max(vals) if vals else None

        it = power.get("it_power_kw") or {}
        fac = power.get("facility_power_kw") or {}
        return {
            "feasible": self.feasible,
            "gpu": r.get("gpu"),
            "server": r.get("server"),
            "nodes": r.get("nodes"),
            "gpus": r.get("gpus"),
            "deployment": r.get("deployment"),
            "total_cost_usd": r.get("total_cost_usd"),
            "capex_usd": r.get("capex_usd"),
            "annual_opex_usd": r.get("annual_opex_usd"),
            "cloud_annual_cost_usd": r.get("cloud_annual_cost_usd"),
            "breakeven_months": r.get("breakeven_months"),
            "time_to_train_days": training[0].get("time_to_train_days") if training else None,
            "ttft_p99_s": worst("ttft_p99_s"),
            "tpot_p99_s": worst("tpot_p99_s"),
            "it_power_kw": it.get("typical") if isinstance(it, dict) else None,
            "facility_power_kw": fac.get("typical") if isinstance(fac, dict) else None,
            "leaf_switches": fab.get("leaf_switches"),
            "spine_switches": fab.get("spine_switches"),
            "core_switches": fab.get("core_switches"),
            "ettr": (self.reliability or {}).get("ettr"),
            "binding_constraint": (
                self.binding_constraints[0]["constraint"] if self.binding_constraints else None
            ),
        }
