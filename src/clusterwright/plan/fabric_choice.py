"""What the planner asks of the fabric designer for one candidate: a backend only when some job
spans servers, and the scenario's ``fabric:`` choices."""

from __future__ import annotations

from typing import Any

from clusterwright.catalog.schema import Server
from clusterwright.design.blueprint import Candidate
from clusterwright.design.decision import Alternative, Decision
from clusterwright.plan.context import PlanRun
from clusterwright.plan.finetune import window_hours
from clusterwright.spec.fabric import FabricRequest
from clusterwright.spec.scenario import FinetuneWorkload


def _finetune_fits(run: PlanRun, row: dict[str, Any], rows: list[dict[str, Any]],
                   domain: int) -> tuple[bool, str]:
    """Whether a fine-tune finishes in its window on one NVLink domain: the pool's free GPUs
    per window hour, capped at one domain, add up to its GPU-hours (as ``plan.finetune``
    counts them)."""
    gpus, hours = int(row["gpus"]), float(row["gpu_hours"])
    if gpus <= domain:
        return True, f"{row['name']} runs on {gpus} GPUs"
    w = next((x for x in run.scenario.workloads
              if x.name == row["name"] and isinstance(x, FinetuneWorkload)), None)
    pool = [r for r in rows if r["kind"] == "inference" and r["gpu"] == row["gpu"]]
    if w is None or w.window is None or not pool or row.get("extra_gpus"):
        return False, f"{row['name']} needs {gpus} GPUs"
    total = sum(r["gpus"] for r in pool)
    free = [total - sum((r.get("diurnal_gpus") or [r["gpus"]] * 24)[h] for r in pool)
            for h in window_hours(w.window)]
    capped = sum(min(f, domain) for f in free)
    if capped + 1e-9 < hours:
        return False, (f"{row['name']} needs more than one NVLink domain: {hours:,.0f} "
                       f"GPU-hours, {capped:,.0f} on {domain} GPUs in its window")
    return True, (f"{row['name']} fits one server: its {hours:,.0f} GPU-hours run on at most "
                  f"{domain} GPUs inside its {len(free)} h window ({capped:,.0f} GPU-hours free "
                  "there), data-parallel inside the NVLink domain")


def backend_decision(run: PlanRun, cand: Candidate, server: Server
                     ) -> tuple[bool, Decision | None]:
    """(needs a backend, the decision when it does not). A job needs the backend when one of
    its instances (a training job, an inference replica, a fine-tune) spans servers."""
    domain = server.nvlink_domain_gpus
    rows: list[dict[str, Any]] = cand.detail.get("workloads", [])
    if not rows:
        return True, None
    reasons: list[str] = []
    for r in rows:
        if r["kind"] == "inference":
            per = int(r["gpus"]) // max(1, int(r["replicas"]))
            if per > domain:
                return True, None
            reasons.append(f"{r['name']} replicas use {per} GPU(s) each")
        elif r["kind"] == "training":
            if int(r["gpus"] or 0) > domain:
                return True, None
            reasons.append(f"{r['name']} trains on {r['gpus']} GPUs")
        else:
            ok, why = _finetune_fits(run, r, rows, domain)
            if not ok:
                return True, None
            reasons.append(why)
    return False, Decision(
        "tiers", "no backend fabric",
        f"every job fits one NVLink domain of {domain} GPUs ({'; '.join(reasons)}), so no GPU "
        "traffic leaves a server: model and request traffic use the frontend. A job that spans "
        "servers (training across nodes, a replica larger than one domain) needs the "
        "rail-optimized backend: see the growth plan in the fabric notes",
        subject="backend", alternatives=(Alternative(
            "a one-tier rail backend", "switches and optics that carry no traffic for these "
            "jobs (its cost is in the fabric notes' growth plan)"),))


def fabric_request(run: PlanRun, server: Server, nodes: int, rack_kw: float, cooling: str,
                   backend: bool, storage_gbps: float | None = None,
                   storage: tuple[str, int] | None = None) -> FabricRequest:
    """The fabric request of one candidate: the scenario's ``fabric:`` choices, the rack limit,
    whether a backend is built, the designed storage tier's bandwidth (GB/s), which sizes the
    frontend uplinks, and its units ((catalog system, count): wired, racked and on the BOM)."""
    f = run.scenario.fabric
    return FabricRequest(
        server=server.id, nodes=nodes, rack_kw=rack_kw, cooling=cooling,
        backend="rail" if backend else "none", switch=f.switch, protocol=f.protocol,
        su_hosts=f.su_hosts, oversubscription=f.oversubscription or 1.0,
        storage_tier_gbps=storage_gbps,
        storage_system=storage[0] if storage else None,
        storage_units=storage[1] if storage else None,
    )


# FabricRequest field -> scenario field path, for designer errors shown to a scenario's author.
SCENARIO_FIELDS = {"switch": "fabric.switch", "protocol": "fabric.protocol",
                   "su_hosts": "fabric.su_hosts", "oversubscription": "fabric.oversubscription",
                   "nodes": "constraints.gpus", "rack_kw": "constraints.power_per_rack_kw",
                   "cooling": "constraints.cooling", "storage_system": "storage.system",
                   "storage_units": "storage.units"}
