"""One serving replica and a simulated deployment of replicas.

``replica`` bundles the step-time model, engine and memory plan of one model replica (after
checking the layout against the model, the GPU and its NVLink domain); ``workload`` builds
the request stream; ``estimate`` simulates it on a deployment (``sim/serving.py``). Errors
carry field paths (``tp``, ``request_len``); the faces word them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from clusterwright.catalog.registry import Catalog, resolve_model
from clusterwright.catalog.schema import Gpu, ModelArch
from clusterwright.catalog.stacks import Stack
from clusterwright.design.train import net_for
from clusterwright.errors import InfeasibleError, InputError
from clusterwright.model.inference import StepModel, check_expert_parallel, compute_dtype
from clusterwright.model.precision import Precision
from clusterwright.plan.serving_memory import MemoryPlan, memory_plan
from clusterwright.sim.serving import (
    ClusterConfig,
    EngineConfig,
    Lengths,
    ServingResult,
    Workload,
    simulate,
)

KV_PRECISIONS = (Precision.bf16, Precision.fp16, Precision.fp8)  # vLLM kv_cache_dtype
LENGTH_DISTS = ("fixed", "lognormal")
ROUTERS = ("round_robin", "least_outstanding")
MAX_NUM_SEQS = 256  # vLLM default max_num_seqs (engine arguments)


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
        raise InputError(f"tp: must be a positive integer, got {tp}", field="tp")
    if pp < 1:
        raise InputError(f"pp: must be a positive integer, got {pp}", field="pp")
    if arch.heads % tp:
        raise InfeasibleError(f"tp: {tp} does not divide the {arch.heads} attention heads "
                              f"of {arch.id}", "heads_not_divisible", field="tp")
    if pp > arch.layers:
        raise InputError(f"pp: {pp} stages exceed the {arch.layers} layers of {arch.id}",
                         field="pp")
    check_expert_parallel(arch, tp, ep, ep_comm)
    if compute_dtype(weights) not in gpu.peak_tflops:
        raise InfeasibleError(f"precision: {gpu.id} has no {compute_dtype(weights).value} "
                              f"tensor cores for {weights.value} weights", "precision",
                              field="precision")
    if kv_precision not in KV_PRECISIONS:
        raise InfeasibleError(f"kv_precision: {kv_precision.value} is not a KV-cache type "
                              f"(use {', '.join(p.value for p in KV_PRECISIONS)})", "precision",
                              field="kv_precision")


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
        raise InfeasibleError(
            f"gpu: {gpu.id} has no serving calibration in the catalog (a stack covering it "
            "needs a `serving:` block in stacks.yaml); engine trtllm|vllm|sglang models it "
            "with a catalog serving engine", "no_serving_calibration", field="gpu")
    srv = cat.server(server) if server else None
    if srv is not None and srv.gpu != gpu.id:
        raise InputError(f"server: {srv.id} holds {srv.gpu}, not {gpu.id}", field="server")
    net = net_for(cat, gpu, stack, srv)
    if tp > net.domain_gpus:
        raise InfeasibleError(f"tp: {tp} exceeds the NVLink domain of {net.domain_gpus} "
                              f"{gpu.id} GPUs", "nvlink_domain", field="tp")
    # The engine the stack's serving efficiencies were calibrated with, unless overridden.
    sv = stack.serving
    assert sv is not None
    mem = memory_plan(arch, gpu, tp, pp, w, kv, cat, sv.kv_memory_rule)
    budget = int(cat.assumption("inference_max_batched_tokens"))
    seqs = max_num_seqs if max_num_seqs is not None else sv.max_num_seqs
    if seqs < 1 or seqs > budget:
        raise InputError(f"max_num_seqs: {seqs} must be in 1..{budget} (the token "
                         "budget of one iteration)", field="max_num_seqs")
    engine = EngineConfig(kv_blocks=mem.kv_blocks, block_size=mem.block_size,
                          max_num_seqs=seqs, max_num_batched_tokens=budget,
                          admission=sv.admission)
    model = StepModel(arch, gpu, stack, net, tp=tp, pp=pp, weights=w, kv_precision=kv,
                      ep=ep, ep_comm=ep_comm)
    return Replica(model=model, engine=engine, memory=mem)


# ---------------------------------------------------------------------------- estimate


def lengths(dist: str, mean: int, cv: float, name: str, cap: int) -> Lengths:
    """A token-length distribution: ``fixed`` at ``mean`` or ``lognormal`` with that mean
    and coefficient of variation ``cv``, clipped at ``cap`` tokens."""
    if mean < 1:
        raise InputError(f"{name}: must be a positive number of tokens, got {mean}", field=name)
    if dist not in LENGTH_DISTS:
        raise InputError(f"length_dist: {dist!r} is not one of {', '.join(LENGTH_DISTS)}",
                         field="length_dist")
    if dist == "fixed":
        return Lengths("fixed", float(mean))
    if not cv > 0:
        raise InputError(f"length_cv: must be > 0 for lognormal lengths, got {cv:g}",
                         field="length_cv")
    return Lengths("lognormal", float(mean), cv * mean, low=1, high=max(cap, 0))


def workload(input_len: int, output_len: int, *, qps: float | None = None,
             concurrency: int | None = None, num_requests: int = 1000, seed: int = 0,
             length_dist: str = "fixed", length_cv: float = 1.0,
             max_context: int | None = None, prefix_len: int = 0,
             prefix_groups: int = 1) -> Workload:
    """Open loop (Poisson arrivals at ``qps``) or closed loop (``concurrency`` clients).
    Lognormal lengths are clipped so prompt plus output stays within ``max_context``.
    ``prefix_len``: the first tokens of every prompt (of ``input_len`` in all) are shared
    with the other prompts of its group, one of ``prefix_groups`` drawn uniformly (a system
    prompt, a document many questions ask about); the rest of the prompt is its own."""
    if prefix_len < 0 or prefix_len > input_len:
        raise InputError(f"prefix_len: {prefix_len} tokens must be within 0-{input_len} (the "
                         "prompt they begin)", field="prefix_len")
    if prefix_len and prefix_len == input_len and length_dist != "fixed":
        raise InputError("prefix_len: with lognormal lengths the shared prefix must leave a "
                         "part of the prompt to vary", field="prefix_len")
    if prefix_groups < 1:
        raise InputError(f"prefix_groups: must be a positive integer, got {prefix_groups}",
                         field="prefix_groups")
    if (qps is None) == (concurrency is None):
        raise InputError("qps_or_concurrency: give exactly one (open loop at a request rate, "
                         "or a closed loop of clients)", field="qps_or_concurrency")
    if qps is not None and not (qps > 0 and math.isfinite(qps)):
        raise InputError(f"qps: must be a positive request rate, got {qps:g}", field="qps")
    if concurrency is not None and concurrency < 1:
        raise InputError(f"concurrency: must be a positive number of clients, got "
                         f"{concurrency}", field="concurrency")
    if num_requests < 1:
        raise InputError(f"num_requests: must be a positive integer, got {num_requests}",
                         field="num_requests")
    cap_in = cap_out = 0
    if max_context is not None:
        # Split the context between prompt and output in proportion to their means.
        cap_in = max(1, max_context * input_len // max(input_len + output_len, 1))
        cap_out = max(1, max_context - cap_in)
    own = input_len - prefix_len
    return Workload(
        num_requests=num_requests,
        arrival="poisson" if qps is not None else "closed",
        qps=qps if qps is not None else 1.0,
        concurrency=concurrency if concurrency is not None else 1,
        # A whole-prompt prefix leaves a fixed 0 tokens of its own (sampling needs >= 1:
        # the prefix then lends its last token)
        input_len=(lengths(length_dist, own, length_cv, "input_len",
                           max(cap_in - prefix_len, 1) if cap_in else 0)
                   if own > 0 else Lengths("fixed", 1.0)),
        output_len=lengths(length_dist, output_len, length_cv, "output_len", cap_out),
        seed=seed,
        prefix_groups=prefix_groups if prefix_len > 0 else 0,
        shared_prefix_len=prefix_len - (1 if own == 0 else 0),
    )


def check_request_fits(rep: Replica, input_len: int, output_len: int) -> None:
    """Refuse (``request_len``, reason ``request_too_long``) a request longer than the
    model's context or than the KV cache of one replica holds."""
    arch = rep.model.arch
    total = input_len + output_len
    if total > arch.max_seq_len:
        raise InfeasibleError(
            f"request_len: {input_len} + {output_len} = {total} tokens exceed "
            f"the {arch.max_seq_len}-token context of {arch.id}", "request_too_long",
            field="request_len")
    if total > rep.memory.kv_tokens:
        raise InfeasibleError(
            f"request_len: one request of {total} tokens exceeds the KV cache of "
            f"a replica ({rep.memory.kv_tokens} tokens at tp {rep.model.tp} pp {rep.model.pp}"
            f"); raise tp or shorten the request", "request_too_long", field="request_len")


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
            **({"prefix_cache": {"groups": self.workload.prefix_groups,
                                 "hit_rate": r.prefix_hit_rate}}
               if self.workload.prefix_groups > 0 and self.workload.shared_prefix_len > 0
               else {}),
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
             ep_comm: str = "allreduce", prefix_len: int = 0,
             prefix_groups: int = 1) -> ServeEstimate:
    """Simulate ``num_requests`` requests on ``replicas`` replicas of ``model`` on ``gpu``.
    Goodput counts requests whose TTFT and TPOT meet ``slo_ttft_s`` / ``slo_tpot_s``.
    ``ep``: expert-parallel GPUs of a MoE model inside the TP group (``ep_comm`` how its
    tokens move: ``allreduce`` or ``alltoall``). ``prefix_len`` > 0: prompts share prefixes
    (``workload``), which the replicas' prefix caches reuse."""
    for name, v in (("input_len", input_len), ("output_len", output_len),
                    ("replicas", replicas)):
        if v < 1:
            raise InputError(f"{name}: must be a positive integer, got {v}", field=name)
    if router not in ROUTERS:
        raise InputError(f"router: {router!r} is not one of {', '.join(ROUTERS)}",
                         field="router")
    rep = replica(cat, model, gpu, tp, pp, precision, kv_precision, server, max_num_seqs,
                  ep=ep, ep_comm=ep_comm)
    check_request_fits(rep, input_len, output_len)
    cap = min(rep.model.arch.max_seq_len, rep.memory.kv_tokens)
    w = workload(input_len, output_len, qps=qps, concurrency=concurrency,
                 num_requests=num_requests, seed=seed, length_dist=length_dist,
                 length_cv=length_cv, max_context=cap, prefix_len=prefix_len,
                 prefix_groups=prefix_groups)
    engine = replace(rep.engine, enable_prefix_caching=True) if prefix_len > 0 else rep.engine
    cluster = ClusterConfig(engine=engine, replicas=replicas, router=router)
    res = simulate(cluster, w, rep.model, slo_ttft_s=slo_ttft_s, slo_tpot_s=slo_tpot_s)
    return ServeEstimate(replica=rep, replicas=replicas, router=router, workload=w, result=res)
