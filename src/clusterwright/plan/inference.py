"""A scenario's inference workloads sized on one GPU with the serving planner (``plan/serving.py``),
and their latency-vs-load curves on the recommendation."""

from __future__ import annotations

import math
from typing import Any

from clusterwright.catalog.schema import Gpu, ModelArch
from clusterwright.design.blueprint import (
    Candidate,
    ConstraintName,
    Violation,
    violation,
)
from clusterwright.errors import InputError, rejection_reason
from clusterwright.model.params import total_params
from clusterwright.model.precision import bytes_per, default_kv_precision
from clusterwright.plan import serving as serving_plan
from clusterwright.plan import serving_replica
from clusterwright.plan.context import CURVE_LOADS, PlanRun
from clusterwright.plan.serving_engine import engine_of, simulate_deployment
from clusterwright.plan.serving_engine_plan import plan_engine_choice
from clusterwright.spec.scenario import (
    Diurnal,
    InferenceWorkload,
)


def diurnal_multipliers(d: Diurnal) -> list[float]:
    """24 hourly multipliers of the peak rate: the given list, or a cosine from
    ``trough_fraction`` (12 h from the peak) to 1 at ``peak_hour``."""
    if d.hourly is not None:
        return list(d.hourly)
    lo = d.trough_fraction
    return [lo + (1 - lo) * 0.5 * (1 + math.cos(2 * math.pi * (h - d.peak_hour) / 24))
            for h in range(24)]


def size_inference(run: PlanRun, w: InferenceWorkload,
                    gpu: Gpu) -> tuple[dict[str, Any] | None, list[Violation]]:
    if w.engine is not None:
        return _size_with_engine(run, w, gpu)
    if serving_replica.serving_stack(run.cat, gpu.id) is None:
        return None, [violation("gpus", None, None, "",
                                f"{gpu.id} has no serving calibration in the catalog (the "
                                "workload's engine: trtllm, vllm or sglang would size it with "
                                "a catalog serving engine)", w.name)]
    arch = run.models[w.name]
    kv = w.kv_precision or default_kv_precision(w.precision).value
    inp, out = max(1, round(w.input_len.mean)), max(1, round(w.output_len.mean))
    try:
        sp = serving_plan.plan(
            run.cat, arch, w.qps, inp, out, w.slo.ttft_p99_s, w.slo.tpot_p99_s, gpu=gpu.id,
            precision=w.precision, kv_precision=kv,
            num_requests=400 if run.quick else 1500, seed=run.scenario.seed,
            workers=1 if run.quick else None, rel_tol=0.1 if run.quick else 0.05,
            e2e_p99_s=w.slo.e2e_p99_s,
            prefix_len=min(w.shared_prefix.tokens, inp) if w.shared_prefix else 0,
            prefix_groups=w.shared_prefix.groups if w.shared_prefix else 1)
    except InputError as exc:
        what: ConstraintName = "memory" if rejection_reason(exc) == "memory" else "gpus"
        need = arch_weights_gb(arch, w.precision) if what == "memory" else None
        return None, [violation(what, gpu.memory_gb if what == "memory" else None, need, "GB",
                                f"weights ({exc})" if what == "memory" else str(exc), w.name)]
    if sp.best is None:
        ach = (sp.best_achievable or {}).get("closest") or {}
        # The SLO missed by the widest margin is the binding one.
        slos = [("ttft_p99_s", "TTFT", w.slo.ttft_p99_s), ("tpot_p99_s", "TPOT", w.slo.tpot_p99_s)]
        if w.slo.e2e_p99_s is not None:
            slos.append(("e2e_p99_s", "end-to-end latency", w.slo.e2e_p99_s))
        key, label, target = max(slos, key=lambda t: ach.get(t[0], math.inf) / t[2])
        v = violation("slo", target, ach.get(key), "s",
                      f"best p99 {label} on {gpu.id} (tp {ach.get('tp')}, light load)", w.name)
        return None, [v]
    b = sp.best
    mult = diurnal_multipliers(w.diurnal) if w.diurnal else None
    hourly = ([math.ceil(w.qps * m / b["qps_per_replica"] - 1e-9) * b["tp"] for m in mult]
              if mult else None)
    row: dict[str, Any] = {
        "name": w.name, "kind": "inference", "model": arch.id, "gpu": gpu.id,
        "tp": b["tp"], "ep": b["ep"], "replicas": b["replicas"], "gpus": b["gpus"],
        "peak_qps": w.qps, "qps_per_replica": b["qps_per_replica"],
        "input_len": inp, "output_len": out, "precision": w.precision, "kv_precision": kv,
        "slo": {"ttft_p99_s": w.slo.ttft_p99_s, "tpot_p99_s": w.slo.tpot_p99_s,
                "e2e_p99_s": w.slo.e2e_p99_s},
        "ttft_p99_s": b["ttft_p99_s"], "tpot_p99_s": b["tpot_p99_s"],
        "e2e_p99_s": b["e2e_p99_s"],
        "tokens_per_s_per_gpu": b["tokens_per_s_per_gpu"],
        "cost_per_million_tokens_usd": None,
        "cloud_cost_per_million_tokens_usd": b["cost_per_million_tokens_usd"],
        "curve": [], "pareto": sp.pareto, "diurnal_gpus": hourly,
        "simulations": sp.simulations,
        # Prompts that share prefixes: what each replica's prefix cache reused at capacity
        # (every replica sees every group)
        "shared_prefix": ({"tokens": min(w.shared_prefix.tokens, inp),
                           "groups": w.shared_prefix.groups,
                           "hit_rate": b.get("prefix_hit_rate")}
                          if w.shared_prefix else None),
        # What the capacity's accuracy rests on: the serving calibration of this GPU's stack
        # (its engine and how it was fitted, with its error on validation/serving.csv).
        "confidence": _serving_confidence(run, gpu),
        # Every layout the serving planner sized on this GPU, for the replicas decision.
        "considered": [{k: c[k] for k in ("tp", "ep", "replicas", "gpus", "usd_per_hour")}
                       for c in sp.candidates],
    }
    return row, []


def _size_with_engine(run: PlanRun, w: InferenceWorkload,
                      gpu: Gpu) -> tuple[dict[str, Any] | None, list[Violation]]:
    """The workload sized with its catalog engine (``serve plan --engine``'s search: the
    cheapest aggregated or disaggregated deployment whose simulated p99s meet the SLOs at
    the peak rate), as an inference row. A replica is one copy of that deployment."""
    assert w.engine is not None
    arch = run.models[w.name]
    inp, out = max(1, round(w.input_len.mean)), max(1, round(w.output_len.mean))
    engine = engine_of(run.cat, w.engine)  # resolved with the scenario: a known engine
    try:
        d, choice = plan_engine_choice(
            run.cat, arch, gpu, engine, w.qps, inp, out, w.slo.ttft_p99_s, w.slo.tpot_p99_s,
            precision=w.precision, requests=300 if run.quick else 800, seed=run.scenario.seed,
            prefix_len=min(w.shared_prefix.tokens, inp) if w.shared_prefix else 0,
            prefix_groups=w.shared_prefix.groups if w.shared_prefix else 1,
            margin=w.slo.margin)
    except InputError as exc:
        if exc.field == "ttft_slo":
            return None, [violation("slo", w.slo.ttft_p99_s, None, "s",
                                    f"best {engine.id} deployment on {gpu.id} ({exc})",
                                    w.name)]
        what: ConstraintName = "memory" if exc.field in ("model", "tp") else "gpus"
        need = arch_weights_gb(arch, w.precision) if what == "memory" else None
        return None, [violation(what, gpu.memory_gb if what == "memory" else None, need,
                                "GB" if what == "memory" else "", str(exc), w.name)]
    c = d["choice"]
    copies, per_copy = int(c["copies"]), int(c["gpus_per_copy"])
    per_replica_qps = w.qps / copies  # the rate each copy was simulated at
    mult = diurnal_multipliers(w.diurnal) if w.diurnal else None
    hourly = ([math.ceil(w.qps * m / per_replica_qps - 1e-9) * per_copy for m in mult]
              if mult else None)
    kv = choice.dep.kv_format
    notes = list(c["notes"])
    if w.kv_precision is not None and w.kv_precision != kv:
        notes.append(f"KV cache in {kv}, {engine.id}'s format for {choice.dep.dense.name} "
                     f"weights, not the workload's kv_precision {w.kv_precision}")
    price = serving_plan.gpu_hour_price(run.cat, gpu.id)
    usd_h = c["gpus"] * price[0] if price is not None else None
    main = c.get("agg") or c["decode"]
    run.deployments[(w.name, gpu.id)] = choice.dep
    row: dict[str, Any] = {
        "name": w.name, "kind": "inference", "model": arch.id, "gpu": gpu.id,
        "engine": engine.id, "deployment": describe_choice(c),
        "mode": c["mode"], "roles": {k: c[k] for k in ("agg", "prefill", "decode") if c.get(k)},
        "tp": main["tp"], "ep": main["moe_ep"], "gpus_per_replica": per_copy,
        "replicas": copies, "gpus": c["gpus"],
        "peak_qps": w.qps, "qps_per_replica": per_replica_qps,
        "input_len": inp, "output_len": out, "precision": w.precision, "kv_precision": kv,
        "slo": {"ttft_p99_s": w.slo.ttft_p99_s, "tpot_p99_s": w.slo.tpot_p99_s,
                "e2e_p99_s": None, "margin": w.slo.margin},
        "ttft_p99_s": c["ttft_p99_s"], "tpot_p99_s": c["tpot_p99_s"], "e2e_p99_s": None,
        "tokens_per_s_per_gpu": w.qps * out / c["gpus"],
        "cost_per_million_tokens_usd": None,
        "cloud_cost_per_million_tokens_usd": (usd_h / (w.qps * out * 3600) * 1e6
                                              if usd_h is not None else None),
        "curve": [], "pareto": [], "diurnal_gpus": hourly,
        "simulations": d["deployments_evaluated"],
        "shared_prefix": ({"tokens": min(w.shared_prefix.tokens, inp),
                           "groups": w.shared_prefix.groups,
                           "hit_rate": c.get("prefix_hit_rate")}
                          if w.shared_prefix else None),
        # What the deployment's accuracy rests on: the engine's measured rows of this GPU and
        # mode (validate --table serving-silicon), or that there are none.
        "confidence": {"engine": engine.id, "gpu": gpu.id, "calibration": engine.calibration,
                       "validation_table": "serving-silicon", **c["validation"]},
        "measured_lean": d["measured_lean"],
        "margin": d["margin"],
        "disaggregation": d["verdict"],
        "notes": notes,
        "considered": [],
    }
    return row, []


def _engine_curve(run: PlanRun, r: dict[str, Any]) -> None:
    """The latency curve of an engine-sized workload: its chosen deployment simulated at
    each load fraction of its rate per copy (``serve estimate --engine``'s simulation)."""
    dep = run.deployments.get((r["name"], r["gpu"]))
    if dep is None:
        return
    pts = []
    isl, osl = int(r["input_len"]), int(r["output_len"])
    for f in CURVE_LOADS[1::2] if run.quick else CURVE_LOADS:
        q = r["qps_per_replica"] * f
        wl = serving_replica.workload(isl, osl, qps=q, num_requests=300 if run.quick else 800,
                                      seed=run.scenario.seed)
        try:
            res = simulate_deployment(run.cat, dep, wl, isl, osl)
        except InputError as exc:
            run.notes.append(f"{r['name']}: latency curve stopped at {f:g}x load ({exc})")
            break
        ttft, tpot = res.ttft_s["p99"], res.tpot_s["p99"]
        tpot_mean = res.tpot_s.get("mean")
        pts.append({
            "load_fraction": f, "qps": q * r["replicas"], "qps_per_replica": q,
            "ttft_p99_s": ttft, "tpot_p99_s": tpot,
            "tokens_per_s_per_gpu": q * osl / max(int(r["gpus_per_replica"]), 1),
            "tokens_per_s_per_user": 1.0 / tpot_mean if tpot_mean and tpot_mean > 0 else None,
            "e2e_p99_s": None,
            "meets_slo": bool(ttft <= r["slo"]["ttft_p99_s"]
                              and not tpot > r["slo"]["tpot_p99_s"]),
        })
    r["curve"] = pts


def describe_choice(c: dict[str, Any]) -> str:
    """One line for an engine deployment: its workers and their layouts."""
    def one(r: dict[str, Any]) -> str:
        lay = f"TP{r['tp']}" + (f" x ADP{r['adp']}" if r["adp"] > 1 else "") + (
            f" EP{r['moe_ep']}" if r["moe_ep"] > 1 else "")
        return f"{r['workers']} x {lay}"
    if c["mode"] == "agg":
        return f"aggregated {one(c['agg'])} ({c['gpus_per_copy']} GPUs)"
    return (f"prefill {one(c['prefill'])}, decode {one(c['decode'])} "
            f"({c['gpus_per_copy']} GPUs)")


def _serving_confidence(run: PlanRun, gpu: Gpu) -> dict[str, Any] | None:
    st = serving_replica.serving_stack(run.cat, gpu.id)
    if st is None or st.serving is None:
        return None
    return {"stack": st.id, "gpu": gpu.id, "engine": st.serving.engine,
            "calibration": st.serving.calibration, "validation_table": "serving"}


def arch_weights_gb(arch: ModelArch, precision: str) -> float:
    """Weights of ``arch`` stored in ``precision``, GB."""
    return float(total_params(arch)) * bytes_per(precision) / 1e9


def latency_curves(run: PlanRun, cand: Candidate) -> None:
    """Latency and throughput of one replica of each served model across load, for the
    report's latency-vs-QPS plot (fleet QPS = per-replica QPS x replicas)."""
    for r in cand.detail["workloads"]:
        if r["kind"] != "inference":
            continue
        if r.get("engine"):
            _engine_curve(run, r)
            continue
        pts = []
        for f in CURVE_LOADS[1::2] if run.quick else CURVE_LOADS:
            q = r["qps_per_replica"] * f
            try:
                e = serving_replica.estimate(
                    run.cat, run.models[r["name"]], r["gpu"], tp=r["tp"], ep=r["ep"],
                    precision=r["precision"], kv_precision=r["kv_precision"], qps=q,
                    input_len=r["input_len"], output_len=r["output_len"],
                    num_requests=300 if run.quick else 1000, seed=run.scenario.seed,
                    slo_ttft_s=r["slo"]["ttft_p99_s"], slo_tpot_s=r["slo"]["tpot_p99_s"],
                ).as_dict()
            except InputError as exc:
                run.notes.append(f"{r['name']}: latency curve stopped at {f:g}x load ({exc})")
                break
            tpot_mean = e["tpot_mean_s"]
            pts.append({
                "load_fraction": f, "qps": q * r["replicas"], "qps_per_replica": q,
                "ttft_p99_s": e["ttft_p99_s"], "tpot_p99_s": e["tpot_p99_s"],
                "tokens_per_s_per_gpu": e["tokens_per_s_per_gpu"],
                "tokens_per_s_per_user": 1.0 / tpot_mean if tpot_mean and tpot_mean > 0 else None,
                "e2e_p99_s": e["e2e_p99_s"],
                "meets_slo": bool(e["ttft_p99_s"] <= r["slo"]["ttft_p99_s"]
                                  and not e["tpot_p99_s"] > r["slo"]["tpot_p99_s"]
                                  and (r["slo"].get("e2e_p99_s") is None
                                       or e["e2e_p99_s"] <= r["slo"]["e2e_p99_s"])),
            })
        r["curve"] = pts
