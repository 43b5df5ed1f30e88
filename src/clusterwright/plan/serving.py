"""Serving decisions: what fits on a GPU, how one deployment performs, and the cheapest one
that meets latency SLOs.

``memory_plan`` splits a GPU's memory the way vLLM does at start-up; ``replica`` bundles the
step-time model and engine of one model replica; ``estimate`` simulates a workload on a
deployment (``sim/serving.py``); ``plan`` searches GPU type x tensor parallelism (and, for
MoE models, expert parallelism over the TP group) for the largest load one replica sustains
under p99 TTFT and TPOT SLOs, then sizes and prices the fleet.

It lives in the simulation layer because the plan's capacity search is a loop of
simulations (no closed form gives p99 latency under load); the decisions it takes read only
the catalog, the models and the simulator below it.
"""

from __future__ import annotations

import functools
import math
import os
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from clusterwright.catalog.registry import Catalog, resolve_model
from clusterwright.catalog.schema import Gpu, ModelArch, Stack
from clusterwright.design.train import net_for
from clusterwright.errors import InputError
from clusterwright.model.inference import StepModel, check_expert_parallel, compute_dtype
from clusterwright.model.memory import inference_memory, kv_cache_bytes
from clusterwright.model.precision import Precision
from clusterwright.sim.serving import (
    ClusterConfig,
    EngineConfig,
    Lengths,
    ServingResult,
    Workload,
    simulate,
)

GB = 1e9
KV_PRECISIONS = (Precision.bf16, Precision.fp16, Precision.fp8)  # vLLM kv_cache_dtype
LENGTH_DISTS = ("fixed", "lognormal")
ROUTERS = ("round_robin", "least_outstanding")
PLAN_TPS = (1, 2, 4, 8)
MAX_NUM_SEQS = 256  # vLLM default max_num_seqs (engine arguments)


# ---------------------------------------------------------------------------- memory


@dataclass(frozen=True)
class MemoryPlan:
    """Per-GPU memory of one replica, in bytes, as vLLM sizes its KV cache at start-up
    (``gpu_worker.determine_available_memory``): the engine may use
    ``gpu_memory_utilization`` of the GPU; weights, the activation peak of a profiling
    forward pass over ``max_num_batched_tokens`` and the CUDA-graph pool come off the top;
    the rest is paged KV cache in blocks of ``block_size`` tokens."""

    gpu_memory: float
    utilization: float
    weights: float
    activations: float
    cuda_graphs: float
    kv_bytes_per_token: float  # per GPU: this GPU's share of heads and layers
    block_size: int
    tp: int
    pp: int
    # "total": the fraction caps all memory the engine uses (vLLM gpu_memory_utilization);
    # "free": the fraction applies to what weights and activations leave free (TensorRT-LLM
    # KvCacheConfig.free_gpu_memory_fraction).
    rule: str = "total"

    @property
    def usable(self) -> float:
        return self.gpu_memory * self.utilization

    @property
    def kv_cache(self) -> float:
        """Bytes left for the KV cache (negative when the model does not fit)."""
        if self.rule == "free":
            free = self.gpu_memory - self.weights - self.activations - self.cuda_graphs
            return free * self.utilization if free > 0 else free
        return self.usable - self.weights - self.activations - self.cuda_graphs

    @property
    def kv_blocks(self) -> int:
        """vLLM: num_gpu_blocks = available KV bytes // (block_size x bytes per token)."""
        return max(0, math.floor(self.kv_cache / (self.block_size * self.kv_bytes_per_token)))

    @property
    def kv_tokens(self) -> int:
        """Tokens the KV cache of one replica holds (all sequences together)."""
        return self.kv_blocks * self.block_size

    def max_batch(self, context_tokens: int) -> int:
        """Most sequences of ``context_tokens`` tokens whose KV fits at once (whole blocks)."""
        per_seq = -(-max(context_tokens, 1) // self.block_size)
        return self.kv_blocks // per_seq

    def as_dict(self) -> dict[str, float | int]:
        return {
            "gpu_memory_gb": self.gpu_memory / GB,
            "usable_gb": self.usable / GB,
            "weights_gb": self.weights / GB,
            "activations_gb": self.activations / GB,
            "cuda_graphs_gb": self.cuda_graphs / GB,
            "kv_cache_gb": self.kv_cache / GB,
            "kv_bytes_per_token_per_gpu": self.kv_bytes_per_token,
            "block_size": self.block_size,
            "kv_blocks": self.kv_blocks,
            "kv_tokens": self.kv_tokens,
        }


def _memory(arch: ModelArch, gpu: Gpu, tp: int, pp: int, weights: Precision,
            kv_precision: Precision, cat: Catalog, rule: str = "total") -> MemoryPlan:
    # Expert parallelism inside the TP group needs no term here: E/ep whole experts, each
    # sliced over tp/ep GPUs, are E/tp experts' bytes per GPU, as TP's 1/tp of every expert
    # (and the MoE activation peak is the same, see model/inference.StepModel).
    tokens = cat.assumption("inference_max_batched_tokens")
    graphs = cat.assumption("inference_cuda_graph_reserve_gb") * GB
    m = inference_memory(arch, 0, 0, weights, kv_precision, tp, pp, tokens, graphs)
    return MemoryPlan(
        gpu_memory=gpu.memory_gb * GB,
        utilization=cat.assumption("inference_gpu_memory_utilization"),
        weights=m.weights,
        activations=m.activations,
        cuda_graphs=m.reserve,
        kv_bytes_per_token=kv_cache_bytes(arch, 1, 1, kv_precision, tp) / pp,
        block_size=int(cat.assumption("inference_kv_block_tokens")),
        tp=tp,
        pp=pp,
        rule=rule,
    )


def memory_plan(arch: ModelArch, gpu: Gpu, tp: int, pp: int, weights: Precision | str,
                kv_precision: Precision | str, cat: Catalog, rule: str = "total") -> MemoryPlan:
    """Memory of ``arch`` on ``tp`` x ``pp`` ``gpu``s. Raises InputError naming --tp, with the
    numbers and the smallest TP that fits, when not even one KV block is left. ``rule``: how
    the engine's memory fraction applies (``MemoryPlan.rule``)."""
    w, kv = Precision(weights), Precision(kv_precision)
    plan = _memory(arch, gpu, tp, pp, w, kv, cat, rule)
    if plan.kv_blocks >= 1:
        return plan
    fits = [t for t in (2, 4, 8, 16, 32, 64) if t > tp and arch.heads % t == 0
            and _memory(arch, gpu, t, pp, w, kv, cat, rule).kv_blocks >= 1]
    hint = f"; try --tp {fits[0]}" if fits else "; add --pp stages or use a larger GPU"
    parts = (f"{plan.weights / GB:.1f} GB weights - {plan.activations / GB:.1f} GB activations"
             f" - {plan.cuda_graphs / GB:.1f} GB CUDA graphs")
    if plan.rule == "free":
        budget = (f"({gpu.memory_gb:g} GB - {parts}) x {plan.utilization:g} (the engine's "
                  "fraction of free memory)")
    else:
        budget = (f"{plan.usable / GB:.1f} GB usable ({gpu.memory_gb:g} GB x "
                  f"{plan.utilization:g}) - {parts}")
    raise InputError(
        f"--tp {tp}: {arch.id} ({w.value}) does not fit on {gpu.id} at tp {tp} pp {pp}: "
        f"{budget} = {plan.kv_cache / GB:.1f} GB for the KV cache, less than one block{hint}"
    )


# ---------------------------------------------------------------------------- replica


def serving_stack(cat: Catalog, gpu_id: str) -> Stack | None:
    """The first catalog stack covering ``gpu_id`` that has a ``serving`` calibration."""
    for st in cat.all("stacks"):
        if gpu_id in st.gpus and st.serving is not None:
            return st  # type: ignore[no-any-return]
    return None


def serving_gpus(cat: Catalog) -> list[Gpu]:
    """Catalog GPUs that a stack with a serving calibration covers, in catalog order."""
    return [g for g in cat.all("gpus") if serving_stack(cat, g.id) is not None]


@dataclass(frozen=True)
class Replica:
    """One model replica: ``tp`` x ``pp`` GPUs, its step-time model, engine and memory.
    Expert parallelism (``model.ep``) splits the MoE experts inside the TP group, so it adds
    no GPUs."""

    model: StepModel
    engine: EngineConfig
    memory: MemoryPlan

    @property
    def gpus(self) -> int:
        return self.model.tp * self.model.pp


def _check_layout(arch: ModelArch, gpu: Gpu, tp: int, pp: int, weights: Precision,
                  kv_precision: Precision, ep: int = 1, ep_comm: str = "allreduce") -> None:
    if tp < 1:
        raise InputError(f"--tp: must be a positive integer, got {tp}")
    if pp < 1:
        raise InputError(f"--pp: must be a positive integer, got {pp}")
    if arch.heads % tp:
        raise InputError(f"--tp: {tp} does not divide the {arch.heads} attention heads of "
                         f"{arch.id}")
    if pp > arch.layers:
        raise InputError(f"--pp: {pp} stages exceed the {arch.layers} layers of {arch.id}")
    check_expert_parallel(arch, tp, ep, ep_comm)
    if compute_dtype(weights) not in gpu.peak_tflops:
        raise InputError(f"--precision: {gpu.id} has no {compute_dtype(weights).value} tensor "
                         f"cores for {weights.value} weights")
    if kv_precision not in KV_PRECISIONS:
        raise InputError(f"--kv-precision: {kv_precision.value} is not a KV-cache type "
                         f"(use {', '.join(p.value for p in KV_PRECISIONS)})")


def replica(cat: Catalog, model_id: str | ModelArch, gpu_id: str, tp: int = 1, pp: int = 1,
            precision: Precision | str = Precision.bf16,
            kv_precision: Precision | str = Precision.bf16, server: str | None = None,
            max_num_seqs: int | None = None, ep: int = 1,
            ep_comm: str = "allreduce") -> Replica:
    """A replica of ``model_id`` (catalog id, YAML path or architecture) on ``gpu_id``.
    Engine: KV blocks from the memory plan, ``max_num_seqs`` (vLLM default 256) and the
    token budget of the ``inference_max_batched_tokens`` assumption. ``ep``/``ep_comm``:
    expert parallelism of a MoE model inside the TP group (``model.inference.StepModel``)."""
    arch = model_id if isinstance(model_id, ModelArch) else resolve_model(cat, model_id)
    gpu = cat.gpu(gpu_id)
    w, kv = Precision(precision), Precision(kv_precision)
    _check_layout(arch, gpu, tp, pp, w, kv, ep, ep_comm)
    stack = serving_stack(cat, gpu.id)
    if stack is None:
        raise InputError(
            f"--gpu: {gpu.id} has no serving calibration in the catalog (a stack covering it "
            "needs a `serving:` block in stacks.yaml); --engine trtllm|vllm|sglang models it "
            "with a catalog serving engine")
    srv = cat.server(server) if server else None
    if srv is not None and srv.gpu != gpu.id:
        raise InputError(f"--server: {srv.id} holds {srv.gpu}, not {gpu.id}")
    net = net_for(cat, gpu, stack, srv)
    if tp > net.domain_gpus:
        raise InputError(f"--tp: {tp} exceeds the NVLink domain of {net.domain_gpus} "
                         f"{gpu.id} GPUs")
    # The engine the stack's serving efficiencies were calibrated with, unless overridden.
    sv = stack.serving
    assert sv is not None
    mem = memory_plan(arch, gpu, tp, pp, w, kv, cat, sv.kv_memory_rule)
    budget = int(cat.assumption("inference_max_batched_tokens"))
    seqs = max_num_seqs if max_num_seqs is not None else sv.max_num_seqs
    if seqs < 1 or seqs > budget:
        raise InputError(f"--max-num-seqs: {seqs} must be in 1..{budget} (the token "
                         "budget of one iteration)")
    engine = EngineConfig(kv_blocks=mem.kv_blocks, block_size=mem.block_size,
                          max_num_seqs=seqs, max_num_batched_tokens=budget,
                          admission=sv.admission)
    model = StepModel(arch, gpu, stack, net, tp=tp, pp=pp, weights=w, kv_precision=kv,
                      ep=ep, ep_comm=ep_comm)
    return Replica(model=model, engine=engine, memory=mem)


# ---------------------------------------------------------------------------- estimate


def lengths(dist: str, mean: int, cv: float, flag: str, cap: int) -> Lengths:
    """A token-length distribution: ``fixed`` at ``mean`` or ``lognormal`` with that mean
    and coefficient of variation ``cv``, clipped at ``cap`` tokens."""
    if mean < 1:
        raise InputError(f"{flag}: must be a positive number of tokens, got {mean}")
    if dist not in LENGTH_DISTS:
        raise InputError(f"--length-dist: {dist!r} is not one of {', '.join(LENGTH_DISTS)}")
    if dist == "fixed":
        return Lengths("fixed", float(mean))
    if not cv > 0:
        raise InputError(f"--length-cv: must be > 0 for lognormal lengths, got {cv:g}")
    return Lengths("lognormal", float(mean), cv * mean, low=1, high=max(cap, 0))


def workload(input_len: int, output_len: int, *, qps: float | None = None,
             concurrency: int | None = None, num_requests: int = 1000, seed: int = 0,
             length_dist: str = "fixed", length_cv: float = 1.0,
             max_context: int | None = None) -> Workload:
    """Open loop (Poisson arrivals at ``qps``) or closed loop (``concurrency`` clients).
    Lognormal lengths are clipped so prompt plus output stays within ``max_context``."""
    if (qps is None) == (concurrency is None):
        raise InputError("--qps/--concurrency: give exactly one (open loop at a request rate, "
                         "or a closed loop of clients)")
    if qps is not None and not (qps > 0 and math.isfinite(qps)):
        raise InputError(f"--qps: must be a positive request rate, got {qps:g}")
    if concurrency is not None and concurrency < 1:
        raise InputError(f"--concurrency: must be a positive number of clients, got "
                         f"{concurrency}")
    if num_requests < 1:
        raise InputError(f"--num-requests: must be a positive integer, got {num_requests}")
    cap_in = cap_out = 0
    if max_context is not None:
        # Split the context between prompt and output in proportion to their means.
        cap_in = max(1, max_context * input_len // max(input_len + output_len, 1))
        cap_out = max(1, max_context - cap_in)
    return Workload(
        num_requests=num_requests,
        arrival="poisson" if qps is not None else "closed",
        qps=qps if qps is not None else 1.0,
        concurrency=concurrency if concurrency is not None else 1,
        input_len=lengths(length_dist, input_len, length_cv, "--input-len", cap_in),
        output_len=lengths(length_dist, output_len, length_cv, "--output-len", cap_out),
        seed=seed,
    )


def _check_request_fits(rep: Replica, input_len: int, output_len: int) -> None:
    arch = rep.model.arch
    total = input_len + output_len
    if total > arch.max_seq_len:
        raise InputError(
            f"--input-len/--output-len: {input_len} + {output_len} = {total} tokens exceed "
            f"the {arch.max_seq_len}-token context of {arch.id}")
    if total > rep.memory.kv_tokens:
        raise InputError(
            f"--input-len/--output-len: one request of {total} tokens exceeds the KV cache of "
            f"a replica ({rep.memory.kv_tokens} tokens at tp {rep.model.tp} pp {rep.model.pp}"
            f"); raise --tp or shorten the request")


@dataclass(frozen=True)
class ServeEstimate:
    """A simulated deployment: ``replicas`` copies of ``replica`` behind a router."""

    replica: Replica
    replicas: int
    router: str
    workload: Workload
    result: ServingResult

    @property
    def gpus(self) -> int:
        return self.replicas * self.replica.gpus

    def as_dict(self) -> dict[str, Any]:
        """Contract keys of ``serve estimate`` first, then extras."""
        r, m = self.result, self.replica.model
        return {
            "ttft_p50_s": r.ttft_s["p50"],
            "ttft_p99_s": r.ttft_s["p99"],
            "tpot_p50_s": r.tpot_s["p50"],
            "tpot_p99_s": r.tpot_s["p99"],
            "e2e_mean_s": r.e2e_s["mean"],
            "e2e_p99_s": r.e2e_s["p99"],
            "throughput_tokens_per_s": r.output_tokens_per_s,
            "requests_per_s": r.requests_per_s,
            "kv_cache_utilization": r.kv_util_mean,
            "kv_cache_utilization_max": float(r.kv_util.max()) if r.kv_util.size else 0.0,
            "ttft_mean_s": r.ttft_s["mean"],
            "e2e_p50_s": r.e2e_s["p50"],
            "tpot_mean_s": r.tpot_s["mean"],
            "itl_p99_s": r.itl_s["p99"],
            "goodput_requests_per_s": r.goodput_rps,
            "slo_ttft_s": r.slo_ttft_s,
            "slo_tpot_s": r.slo_tpot_s,
            "preemptions": r.preemptions,
            "requests": r.requests,
            "duration_s": r.duration_s,
            "tokens_per_s_per_gpu": r.output_tokens_per_s / self.gpus,
            "model": m.arch.id,
            "gpu": m.gpu.id,
            "stack": m.stack.id,
            "tp": m.tp,
            "pp": m.pp,
            "ep": m.ep,
            "ep_comm": m.ep_comm,
            "precision": m.weights.value,
            "kv_precision": m.kv_precision.value,
            "replicas": self.replicas,
            "router": self.router,
            "gpus": self.gpus,
            "arrival": self.workload.arrival,
            "qps": self.workload.qps if self.workload.arrival == "poisson" else None,
            "concurrency": (self.workload.concurrency
                            if self.workload.arrival == "closed" else None),
            "seed": self.workload.seed,
            "memory": self.replica.memory.as_dict(),
            "engine": {
                "kv_blocks": self.replica.engine.kv_blocks,
                "block_size": self.replica.engine.block_size,
                "max_num_seqs": self.replica.engine.max_num_seqs,
                "max_num_batched_tokens": self.replica.engine.max_num_batched_tokens,
            },
            "sim": {"events": r.events, "steps": r.steps},
            # Wall-clock values only here: the rest is identical for the same seed.
            "timings": {"sim_wall_s": r.wall_s},
        }


def estimate(cat: Catalog, model: str | ModelArch, gpu: str, *, tp: int = 1, pp: int = 1,
             precision: Precision | str = Precision.bf16,
             kv_precision: Precision | str = Precision.bf16, server: str | None = None,
             qps: float | None = None, concurrency: int | None = None, input_len: int,
             output_len: int, num_requests: int = 1000, seed: int = 0,
             length_dist: str = "fixed", length_cv: float = 1.0, replicas: int = 1,
             router: str = "round_robin", slo_ttft_s: float = math.inf,
             slo_tpot_s: float = math.inf, max_num_seqs: int | None = None, ep: int = 1,
             ep_comm: str = "allreduce") -> ServeEstimate:
    """Simulate ``num_requests`` requests on ``replicas`` replicas of ``model`` on ``gpu``.
    Goodput counts requests whose TTFT and TPOT meet ``slo_ttft_s`` / ``slo_tpot_s``.
    ``ep``: expert-parallel GPUs of a MoE model inside the TP group (``ep_comm`` how its
    tokens move: ``allreduce`` or ``alltoall``)."""
    for flag, v in (("--input-len", input_len), ("--output-len", output_len),
                    ("--replicas", replicas)):
        if v < 1:
            raise InputError(f"{flag}: must be a positive integer, got {v}")
    if router not in ROUTERS:
        raise InputError(f"--router: {router!r} is not one of {', '.join(ROUTERS)}")
    rep = replica(cat, model, gpu, tp, pp, precision, kv_precision, server, max_num_seqs,
                  ep=ep, ep_comm=ep_comm)
    _check_request_fits(rep, input_len, output_len)
    cap = min(rep.model.arch.max_seq_len, rep.memory.kv_tokens)
    w = workload(input_len, output_len, qps=qps, concurrency=concurrency,
                 num_requests=num_requests, seed=seed, length_dist=length_dist,
                 length_cv=length_cv, max_context=cap)
    cluster = ClusterConfig(engine=rep.engine, replicas=replicas, router=router)
    res = simulate(cluster, w, rep.model, slo_ttft_s=slo_ttft_s, slo_tpot_s=slo_tpot_s)
    return ServeEstimate(replica=rep, replicas=replicas, router=router, workload=w, result=res)


# ---------------------------------------------------------------------------- plan


def gpu_hour_price(cat: Catalog, gpu_id: str) -> tuple[float, str] | None:
    """$/GPU-hour and offer id for ``gpu_id`` by the one pricing policy (plan/pricing.py)."""
    from clusterwright.plan.pricing import cloud_price

    c = cloud_price(cat, gpu_id)
    return (c.usd_per_gpu_hour, c.offer_id) if c is not None else None


@dataclass(frozen=True)
class LoadPoint:
    """One simulation of one replica at one offered load."""

    gpu: str
    tp: int
    qps: float  # offered to one replica
    ttft_p99_s: float
    tpot_p99_s: float
    tokens_per_s_per_gpu: float  # output tokens
    tokens_per_s_per_user: float  # 1 / mean TPOT: the speed one client sees while decoding
    meets_slo: bool
    usd_per_gpu_hour: float | None
    ep: int = 1  # expert-parallel GPUs inside the TP group
    e2e_p99_s: float = math.nan  # arrival to last token

    def as_dict(self) -> dict[str, Any]:
        usd = None
        if self.usd_per_gpu_hour is not None and self.tokens_per_s_per_gpu > 0:
            usd = self.usd_per_gpu_hour / (self.tokens_per_s_per_gpu * 3600) * 1e6
        return {
            "gpu": self.gpu,
            "tp": self.tp,
            "ep": self.ep,
            "qps_per_replica": self.qps,
            "tokens_per_s_per_gpu": self.tokens_per_s_per_gpu,
            "tokens_per_s_per_user": self.tokens_per_s_per_user,
            "ttft_p99_s": self.ttft_p99_s,
            "tpot_p99_s": self.tpot_p99_s,
            "e2e_p99_s": self.e2e_p99_s,
            "meets_slo": self.meets_slo,
            "cost_per_million_tokens_usd": usd,
        }


@dataclass(frozen=True)
class Capacity:
    """The largest per-replica load of one (GPU, TP) that meets the SLOs (0 if none)."""

    gpu: str
    tp: int
    qps: float
    low_load: LoadPoint  # the lightest load tried: the best p99s this layout achieves
    at_capacity: LoadPoint | None
    points: list[LoadPoint]
    usd_per_gpu_hour: float | None
    price_offer: str | None
    ep: int = 1


@dataclass
class ServePlan:
    """Result of ``plan``: the cheapest deployment meeting the SLOs, or why none does."""

    model: str
    qps: float
    input_len: int
    output_len: int
    slo_ttft_p99_s: float
    slo_tpot_p99_s: float
    best: dict[str, Any] | None
    candidates: list[dict[str, Any]]
    pareto: list[dict[str, Any]]
    rejected: dict[str, int]
    best_achievable: dict[str, Any] | None
    simulations: int
    notes: list[str] = field(default_factory=list)
    slo_e2e_p99_s: float | None = None

    @property
    def feasible(self) -> bool:
        return self.best is not None

    def as_dict(self) -> dict[str, Any]:
        return {
            "feasible": self.feasible,
            "best": self.best,
            "pareto": self.pareto,
            "cost_per_million_tokens_usd": (self.best or {}).get("cost_per_million_tokens_usd"),
            "model": self.model,
            "qps": self.qps,
            "input_len": self.input_len,
            "output_len": self.output_len,
            "slo": {"ttft_p99_s": self.slo_ttft_p99_s, "tpot_p99_s": self.slo_tpot_p99_s,
                    "e2e_p99_s": self.slo_e2e_p99_s},
            "candidates": self.candidates,
            "rejected": self.rejected,
            "best_achievable": self.best_achievable,
            "simulations": self.simulations,
            "notes": self.notes,
        }


def _point(rep: Replica, w: Workload, ttft_slo: float, tpot_slo: float,
           price: float | None, e2e_slo: float | None = None) -> LoadPoint:
    r = simulate(ClusterConfig(engine=rep.engine), w, rep.model)
    tpot_mean = r.tpot_s["mean"]
    return LoadPoint(
        gpu=rep.model.gpu.id,
        tp=rep.model.tp,
        qps=w.qps,
        ttft_p99_s=r.ttft_s["p99"],
        tpot_p99_s=r.tpot_s["p99"],
        tokens_per_s_per_gpu=r.output_tokens_per_s / rep.gpus,
        tokens_per_s_per_user=1.0 / tpot_mean if tpot_mean > 0 else math.inf,
        # One-token outputs have no TPOT (NaN), which then meets any TPOT SLO.
        meets_slo=(r.ttft_s["p99"] <= ttft_slo and not r.tpot_s["p99"] > tpot_slo
                   and (e2e_slo is None or r.e2e_s["p99"] <= e2e_slo)),
        usd_per_gpu_hour=price,
        ep=rep.model.ep,
        e2e_p99_s=r.e2e_s["p99"],
    )


def saturation_qps(rep: Replica, input_len: int, output_len: int) -> float:
    """Rough requests/s one replica serves flat out: a full decode batch (``max_num_seqs``
    or what the KV cache holds at the mean context) plus each request's prefill, both from
    the step model. Only brackets the capacity search."""
    ctx = input_len + output_len
    batch = max(1, min(rep.engine.max_num_seqs, rep.memory.max_batch(ctx)))
    decode = rep.model.step_s(0, batch, batch * (input_len + output_len // 2))
    prefill = rep.model.step_s(input_len, 0, 0)
    return 1.0 / (output_len * decode / batch + prefill)


def capacity(rep: Replica, input_len: int, output_len: int, ttft_slo: float,
             tpot_slo: float, *, num_requests: int = 2000, seed: int = 0,
             length_dist: str = "fixed", length_cv: float = 1.0, rel_tol: float = 0.05,
             max_sims: int = 16, price: tuple[float, str] | None = None,
             e2e_slo: float | None = None) -> Capacity:
    """Largest Poisson load one replica sustains with p99 TTFT <= ``ttft_slo``, p99 TPOT
    <= ``tpot_slo`` and, when given, p99 end-to-end latency <= ``e2e_slo`` (seconds): a
    light-load run first (if it misses, nothing will), then a bracket
    doubled from the saturation estimate, then geometric bisection to ``rel_tol``. The same
    seed at every load scales one set of arrival gaps, so feasibility is monotone in load."""
    cap = min(rep.model.arch.max_seq_len, rep.memory.kv_tokens)
    usd = price[0] if price else None

    def run(q: float, n: int) -> LoadPoint:
        w = workload(input_len, output_len, qps=q, num_requests=n, seed=seed,
                     length_dist=length_dist, length_cv=length_cv, max_context=cap)
        return _point(rep, w, ttft_slo, tpot_slo, usd, e2e_slo)

    sat = saturation_qps(rep, input_len, output_len)
    low = run(sat / 100, min(num_requests, 500))
    points = [low]
    gpu, tp, ep = rep.model.gpu.id, rep.model.tp, rep.model.ep
    offer = price[1] if price else None
    if not low.meets_slo:
        return Capacity(gpu, tp, 0.0, low, None, points, usd, offer, ep)
    lo_pt = low
    hi = sat
    for _ in range(max_sims):  # bracket: double until the SLOs break
        p = run(hi, num_requests)
        points.append(p)
        if not p.meets_slo:
            break
        lo_pt, hi = p, hi * 2
    else:
        return Capacity(gpu, tp, lo_pt.qps, low, lo_pt, points, usd, offer, ep)
    while hi / lo_pt.qps > 1 + rel_tol and len(points) < max_sims:
        mid = math.sqrt(lo_pt.qps * hi)
        p = run(mid, num_requests)
        points.append(p)
        if p.meets_slo:
            lo_pt = p
        else:
            hi = mid
    # The light-load run used fewer requests; if the bracket never passed, capacity is its load.
    return Capacity(gpu, tp, lo_pt.qps, low, lo_pt, points, usd, offer, ep)


def pareto(points: list[LoadPoint]) -> list[LoadPoint]:
    """Points no other point beats on both tokens/s/GPU and tokens/s/user, by tokens/s/GPU."""
    front: list[LoadPoint] = []
    best_user = -math.inf
    for p in sorted(points, key=lambda p: (-p.tokens_per_s_per_gpu, -p.tokens_per_s_per_user)):
        if p.tokens_per_s_per_user > best_user:
            front.append(p)
            best_user = p.tokens_per_s_per_user
    return front


def plan(cat: Catalog, model: str | ModelArch, qps: float, input_len: int, output_len: int,
         ttft_p99_s: float, tpot_p99_s: float, *, gpu: str = "choose",
         tps: tuple[int, ...] = PLAN_TPS, precision: Precision | str = Precision.bf16,
         kv_precision: Precision | str = Precision.bf16, num_requests: int = 2000,
         seed: int = 0, length_dist: str = "fixed", length_cv: float = 1.0,
         rel_tol: float = 0.05, workers: int | None = None,
         expert_parallel: bool = True, e2e_p99_s: float | None = None) -> ServePlan:
    """Cheapest fleet of identical replicas serving ``qps`` requests/s within p99 SLOs
    (TTFT and TPOT, and end-to-end latency when ``e2e_p99_s`` is given; seconds).
    ``workers``: processes for the per-layout searches (default: one per CPU).
    ``expert_parallel``: for a MoE model, also try ep = tp at every TP > 1 whose degree
    divides the experts (``_ep_layouts`` keeps only what a cheap step-model screen cannot
    rule out).

    For every candidate GPU (``gpu``, or with "choose" every catalog GPU with a serving
    calibration) and TP in ``tps`` that fits the NVLink domain and memory: the per-replica
    capacity (``capacity``), replicas = ceil(qps / capacity), cost from the cheapest cloud
    offer per GPU-hour. Priced configurations compete on $/hour, unpriced ones only when
    none is priced (then on GPU count). The Pareto front of tokens/s/GPU against
    tokens/s/user is taken over every simulated (GPU, TP, load) point that meets the TTFT
    SLO (beyond it the queue grows without bound and throughput is only the drain rate).
    With no feasible configuration, ``best`` is None and ``best_achievable`` holds the
    lowest light-load p99s found.
    """
    for flag, v in (("--input-len", input_len), ("--output-len", output_len),
                    ("--num-requests", num_requests)):
        if v < 1:
            raise InputError(f"{flag}: must be a positive integer, got {v}")
    if not (qps > 0 and math.isfinite(qps)):
        raise InputError(f"--qps: must be a positive request rate, got {qps:g}")
    for flag, s in (("--ttft-p99", ttft_p99_s), ("--tpot-p99", tpot_p99_s)):
        if not s > 0:
            raise InputError(f"{flag}: must be a positive number of seconds, got {s:g}")
    if e2e_p99_s is not None and not (e2e_p99_s > 0 and math.isfinite(e2e_p99_s)):
        raise InputError(f"e2e_p99_s: must be a positive number of seconds, got {e2e_p99_s:g}",
                         field="e2e_p99_s")
    arch = model if isinstance(model, ModelArch) else resolve_model(cat, model)
    if gpu == "choose":
        gpus = serving_gpus(cat)
        if not gpus:
            raise InputError("--gpu choose: no catalog GPU has a serving calibration (stacks."
                             "yaml `serving:`); name one with --gpu")
    else:
        gpus = [cat.gpu(gpu)]
        if serving_stack(cat, gpu) is None:
            raise InputError(f"--gpu: {gpu} has no serving calibration in the catalog (a stack "
                             "covering it needs a `serving:` block in stacks.yaml); --engine "
                             "trtllm|vllm|sglang plans it with a catalog serving engine")
    rejected: Counter[str] = Counter()
    errors: list[str] = []
    raw: list[str] = []
    layouts: list[tuple[Replica, tuple[float, str] | None]] = []
    for g in gpus:
        price = gpu_hour_price(cat, g.id)
        for tp in tps:
            try:
                rep = replica(cat, arch, g.id, tp, 1, precision, kv_precision)
                _check_request_fits(rep, input_len, output_len)
            except InputError as exc:
                rejected[_reason(str(exc))] += 1
                raw.append(str(exc))
                errors.append(f"{g.id} tp {tp}: {exc}")
                continue
            if expert_parallel and arch.is_moe and tp > 1 and arch.experts % tp == 0:
                alt = replica(cat, arch, g.id, tp, 1, precision, kv_precision, ep=tp)
                layouts.extend((r, price) for r in _ep_layouts(rep, alt, input_len, output_len))
            else:
                layouts.append((rep, price))
    search = functools.partial(_capacity_of, input_len=input_len, output_len=output_len,
                               ttft_slo=ttft_p99_s, tpot_slo=tpot_p99_s,
                               num_requests=num_requests, seed=seed, length_dist=length_dist,
                               length_cv=length_cv, rel_tol=rel_tol, e2e_slo=e2e_p99_s)
    n_workers = min(workers if workers is not None else (os.cpu_count() or 1), len(layouts))
    if n_workers > 1:
        # Layouts are independent searches: one process per core (results are the same as
        # in one process, each search being seeded; a test checks).
        with ProcessPoolExecutor(max_workers=n_workers) as pool:
            caps = list(pool.map(search, layouts))
    else:
        caps = [search(layout) for layout in layouts]
    if not caps:
        flags = {m.split(":", 1)[0] for m in raw}
        if len(flags) == 1 and flags <= {"--precision", "--kv-precision"}:
            raise InputError(raw[0])
        where = gpu if gpu != "choose" else "any calibrated GPU"
        raise InputError(f"--model: {arch.id} fits no TP in {', '.join(map(str, tps))} on "
                         f"{where}: " + "; ".join(errors[-3:]))
    candidates = [_candidate(c, qps, output_len) for c in caps]
    feasible = [c for c in candidates if c["replicas"] is not None]
    priced = [c for c in feasible if c["usd_per_hour"] is not None]
    best: dict[str, Any] | None = None
    notes: list[str] = []
    if priced:
        best = min(priced, key=lambda c: (c["usd_per_hour"], c["gpus"], c["tp"], c["ep"]))
    elif feasible:
        best = min(feasible, key=lambda c: (c["gpus"], c["tp"], c["ep"]))
        notes.append("no catalog cloud offer prices these GPUs: chose the fewest GPUs")
    achievable = None
    if best is None:
        lows = [c.low_load for c in caps]
        # The configuration closest to the SLOs: smallest worst ratio of p99 to SLO.
        near = min(lows, key=lambda p: _slo_ratio(p, ttft_p99_s, tpot_p99_s, e2e_p99_s))
        achievable = {
            "ttft_p99_s": min(p.ttft_p99_s for p in lows),
            "tpot_p99_s": min(p.tpot_p99_s for p in lows),
            "e2e_p99_s": min(p.e2e_p99_s for p in lows),
            "closest": {"gpu": near.gpu, "tp": near.tp, "ep": near.ep,
                        "ttft_p99_s": near.ttft_p99_s,
                        "tpot_p99_s": near.tpot_p99_s, "e2e_p99_s": near.e2e_p99_s,
                        "qps_per_replica": near.qps},
        }
        which = "all three SLOs" if e2e_p99_s is not None else "both SLOs"
        notes.append(f"no configuration meets {which} even at light load; best_achievable "
                     "holds the lowest p99s seen (each at light load)")
    stable = [p for c in caps for p in c.points if p.ttft_p99_s <= ttft_p99_s]
    return ServePlan(
        model=arch.id, qps=qps, input_len=input_len, output_len=output_len,
        slo_ttft_p99_s=ttft_p99_s, slo_tpot_p99_s=tpot_p99_s, best=best,
        candidates=candidates, pareto=[p.as_dict() for p in pareto(stable)],
        rejected=dict(rejected), best_achievable=achievable,
        simulations=sum(len(c.points) for c in caps), notes=notes, slo_e2e_p99_s=e2e_p99_s,
    )


def _slo_ratio(p: LoadPoint, ttft: float, tpot: float, e2e: float | None) -> float:
    """The worst ratio of a point's p99 to its SLO (1 = exactly at the SLO)."""
    ratios = [p.ttft_p99_s / ttft, p.tpot_p99_s / tpot]
    if e2e is not None:
        ratios.append(p.e2e_p99_s / e2e)
    return max(ratios)


def _ep_layouts(tp_rep: Replica, ep_rep: Replica, input_len: int,
                output_len: int) -> list[Replica]:
    """The TP-only and the ep = tp replica of one MoE (GPU, TP), less either one the other
    beats on all of the step model's flat-out rate (``saturation_qps``), its batch-1 decode
    step (light-load TPOT) and its prefill of one prompt (light-load TTFT). A screen of six
    step evaluations, so the simulated capacity search runs twice only when the SLOs could
    pick either (EP streams more weights at small batches, runs wider GEMMs at large ones)."""
    ctx = input_len + output_len // 2

    def score(r: Replica) -> tuple[float, float, float]:
        return (saturation_qps(r, input_len, output_len), -r.model.step_s(0, 1, ctx),
                -r.model.step_s(input_len, 0, 0))

    a, b = score(tp_rep), score(ep_rep)
    if all(x >= y for x, y in zip(a, b, strict=True)):
        return [tp_rep]
    if all(y >= x for x, y in zip(a, b, strict=True)):
        return [ep_rep]
    return [tp_rep, ep_rep]


def _capacity_of(layout: tuple[Replica, tuple[float, str] | None], *, input_len: int,
                 output_len: int, ttft_slo: float, tpot_slo: float, num_requests: int,
                 seed: int, length_dist: str, length_cv: float, rel_tol: float,
                 e2e_slo: float | None = None) -> Capacity:
    rep, price = layout
    return capacity(rep, input_len, output_len, ttft_slo, tpot_slo, num_requests=num_requests,
                    seed=seed, length_dist=length_dist, length_cv=length_cv, rel_tol=rel_tol,
                    price=price, e2e_slo=e2e_slo)


def _reason(msg: str) -> str:
    """A short rejection category from an InputError message."""
    if "does not fit" in msg:
        return "memory"
    if "NVLink domain" in msg:
        return "nvlink_domain"
    if "attention heads" in msg:
        return "heads_not_divisible"
    if "KV cache" in msg or "context" in msg:
        return "request_too_long"
    if "serving calibration" in msg:
        return "no_serving_calibration"
    if "--precision" in msg:
        return "precision"
    return "other"


def _candidate(c: Capacity, qps: float, output_len: int) -> dict[str, Any]:
    """One (GPU, TP) sized for ``qps``: replicas, GPUs, $/hour and $/million output tokens."""
    replicas = math.ceil(qps / c.qps * (1 - 1e-9)) if c.qps > 0 else None
    gpus = replicas * c.tp if replicas is not None else None
    usd_h = gpus * c.usd_per_gpu_hour if gpus is not None and c.usd_per_gpu_hour else None
    at = c.at_capacity
    return {
        "gpu": c.gpu,
        "tp": c.tp,
        "pp": 1,
        "ep": c.ep,
        "replicas": replicas,
        "gpus": gpus,
        "qps_per_replica": c.qps,
        "ttft_p99_s": at.ttft_p99_s if at else c.low_load.ttft_p99_s,
        "tpot_p99_s": at.tpot_p99_s if at else c.low_load.tpot_p99_s,
        "e2e_p99_s": at.e2e_p99_s if at else c.low_load.e2e_p99_s,
        "tokens_per_s_per_gpu": at.tokens_per_s_per_gpu if at else None,
        "tokens_per_s_per_user": at.tokens_per_s_per_user if at else None,
        "light_load_ttft_p99_s": c.low_load.ttft_p99_s,
        "light_load_tpot_p99_s": c.low_load.tpot_p99_s,
        "usd_per_gpu_hour": c.usd_per_gpu_hour,
        "price_offer": c.price_offer,
        "usd_per_hour": usd_h,
        # The fleet serves the target rate, so its output is qps x output_len tokens/s.
        "cost_per_million_tokens_usd": (usd_h / (qps * output_len * 3600) * 1e6
                                        if usd_h is not None else None),
        "simulations": len(c.points),
    }


__all__ = [
    "Capacity",
    "LoadPoint",
    "MemoryPlan",
    "Replica",
    "ServeEstimate",
    "ServePlan",
    "capacity",
    "estimate",
    "gpu_hour_price",
    "memory_plan",
    "pareto",
    "plan",
    "replica",
    "saturation_qps",
    "serving_gpus",
    "serving_stack",
    "workload",
]
