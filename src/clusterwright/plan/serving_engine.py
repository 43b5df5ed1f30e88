"""``serve estimate`` on a catalog serving engine (vLLM, SGLang, TensorRT-LLM): aggregated or
disaggregated deployments with TP/PP, attention data parallelism and MoE TP/EP per role.

An estimate solves the closed loop's steady state (``sim/serving_steady``: milliseconds, the
model ``validate --table serving-silicon`` checks) and runs the request-level simulator on the
same step model for percentiles, and says whether splitting an aggregated deployment into
prefill and decode workers would pay. ``plan/serving_engine_plan`` searches deployments on
the same pieces (``serve plan``).

Every result carries the regime it was validated in: the engine's measured rows on this GPU
and serving mode (``serving_engines.yaml`` ``validated``), or that there are none.

Units: seconds, tokens, requests per second.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from clusterwright.catalog.registry import Catalog
from clusterwright.catalog.schema import Dtype, Gpu, ModelArch
from clusterwright.catalog.stacks import ServingEngine
from clusterwright.design.train import in_server, server_for
from clusterwright.errors import InputError
from clusterwright.model.serving_step import (
    ServingParallel,
    WeightFormat,
    format_peak_tflops,
    kv_bytes_per_token,
    weight_format,
)
from clusterwright.plan.serving_deployment import (
    GIB,
    Deployment,
    DeploymentError,
    PoolCache,
    Role,
    first_chunk_tokens,
    host_kv_link,
    host_kv_tier,
    host_memory_gib,
    host_read_bps,
    iteration_breakdown,
    kv_format_for,
    kv_link_bytes_per_s,
    moe_speedup,
    offload_bytes,
    pool,
    silicon_gemm,
    steady,
    token_budget,
)
from clusterwright.sim.serving import (
    ClusterConfig,
    Disaggregation,
    EngineConfig,
    ServingResult,
    Workload,
    simulate,
)
from clusterwright.sim.serving_steady import Pool, SteadyState
from clusterwright.sim.serving_trace import Requests

BLOCK = 16  # KV block of the event simulator, tokens
# Quantization modes a --precision stands for on the engine path (NVFP4 for 4-bit floats,
# as NVIDIA's checkpoints of these models ship).
PRECISION_FORMATS = {"bf16": "bf16", "fp16": "fp16", "fp8": "fp8", "fp4": "nvfp4",
                     "int4": "int4", "int8": "int8_wo"}


# ---------------------------------------------------------------------------- building


def engine_of(cat: Catalog, spec: str) -> ServingEngine:
    """``name`` or ``name@version`` (``trtllm@1.2.0``): the catalog engine covering it."""
    return cat.serving_engine_spec(spec)


def layout(arch: ModelArch, tp: int = 1, pp: int = 1, adp: int = 1, moe_tp: int | None = None,
           moe_ep: int | None = None, prefix: str = "", pads_heads: bool = False
           ) -> ServingParallel:
    """A role's layout. For a MoE model the MoE group spans the tp x adp GPUs of a stage:
    expert parallelism ``moe_ep`` (default all of them with attention DP, none without) and
    tensor parallelism over the rest."""
    for name, v in (("tp", tp), ("pp", pp), ("adp", adp)):
        if v < 1:
            raise InputError(f"{prefix}{name}: must be a positive integer, got {v}",
                             field=prefix + name)
    group = tp * adp
    if not arch.is_moe:
        if moe_ep not in (None, 1) or moe_tp not in (None, 1, group):
            raise InputError(f"{prefix}moe_ep: {arch.id} is a dense model",
                             field=prefix + "moe_ep")
        return ServingParallel(tp=tp, pp=pp, adp=adp)
    if moe_tp is not None and (moe_tp < 1 or group % moe_tp):
        raise InputError(f"{prefix}moe_tp: {moe_tp} does not divide the tp x adp = {group} "
                         "GPUs of the MoE group", field=prefix + "moe_tp")
    if moe_ep is None:
        moe_ep = group // moe_tp if moe_tp else (group if adp > 1 else 1)
    if moe_ep < 1 or group % moe_ep:
        raise InputError(f"{prefix}moe_ep: {moe_ep} does not divide the tp x adp = {group} "
                         "GPUs of the MoE group", field=prefix + "moe_ep")
    if moe_ep > arch.experts:
        raise InputError(f"{prefix}moe_ep: {moe_ep} exceeds the {arch.experts} experts of "
                         f"{arch.id}", field=prefix + "moe_ep")
    if moe_tp is None:
        moe_tp = group // moe_ep
    if moe_tp * moe_ep != group:
        raise InputError(f"{prefix}moe_tp: moe_tp x moe_ep = {moe_tp} x {moe_ep} must equal "
                         f"tp x adp = {group}", field=prefix + "moe_tp")
    par = ServingParallel(tp=tp, pp=pp, adp=adp, moe_tp=moe_tp, moe_ep=moe_ep)
    par.check(arch, prefix, pads_heads)
    return par


# Draft tokens per iteration at most: a bound on the input, not an engine's. Beyond it the
# geometric yield is flat for any acceptance below 0.95 (0.95^64 < 0.04).
SPEC_DRAFT_MAX = 64
# A speculative iteration's cost over a plain one at most: a bound on the input (64 drafts of
# a draft model as large as the target, each a plain iteration, stay below it).
SPEC_COST_MAX = 100.0


def deployment(cat: Catalog, arch: ModelArch, gpu: Gpu, engine: ServingEngine,
               precision: str = "bf16", gemm_quant: str | None = None,
               moe_quant: str | None = None, agg: Role | None = None,
               prefill: Role | None = None, decode: Role | None = None,
               speculative: tuple[int, float, float | None] | None = None,
               cpu_offload_gb: float = 0.0, kv_offload_gb: float = 0.0) -> Deployment:
    """A deployment of ``arch`` on ``gpu`` under ``engine``: aggregated (``agg``) or
    disaggregated (``prefill`` and ``decode``); ``cpu_offload_gb``: GiB of weights each GPU
    keeps in its CPU's memory (vLLM's and SGLang's --cpu-offload-gb); ``kv_offload_gb``: GiB
    of CPU memory each GPU gives the KV cache's host tier."""
    if precision not in PRECISION_FORMATS:
        raise InputError(f"precision: {precision!r} is not one of "
                         f"{', '.join(PRECISION_FORMATS)}", field="precision")
    for allowed in (engine.vendors, engine.runs_on):
        if allowed and gpu.vendor not in allowed:
            raise InputError(f"engine: {engine.id} runs on {', '.join(allowed)} "
                             f"accelerators, not on {gpu.id} ({gpu.vendor})", field="engine")
    gq = gemm_quant or PRECISION_FORMATS[precision]
    dense = weight_format(gq, gpu, "gemm_quant")
    moe = weight_format(moe_quant or gq, gpu, "moe_quant")
    if (agg is None) == (prefill is None or decode is None):
        raise InputError("prefill/decode: give both roles for a disaggregated deployment, or "
                         "neither", field="prefill" if prefill is None else "decode")
    if speculative is not None:
        k, a, c = speculative
        if (not 1 <= k <= SPEC_DRAFT_MAX or not 0.0 <= a <= 1.0
                or (c is not None and not 1.0 <= c <= SPEC_COST_MAX)):
            raise InputError(f"speculative: {k}:{a}:{c} needs draft tokens in 1-"
                             f"{SPEC_DRAFT_MAX}, an acceptance rate in [0, 1] and a cost factor "
                             f"in [1, {SPEC_COST_MAX:g}] (an iteration with drafts costs at "
                             "least a plain one)", field="speculative")
    factor, stacks = silicon_gemm(cat, in_server(gpu, server_for(cat, gpu)), dense.compute, engine)
    notes: tuple[str, ...] = ()
    if stacks:
        notes = (f"{engine.id}'s constants were fitted on NVIDIA GPUs at H100's GEMM rate: "
                 f"GEMMs on {gpu.id} run at {factor:.2f} of its fitted rate "
                 f"({dense.compute.value}: {stacks}, the training model's GEMM efficiencies)",)
    if unmeasured := engine.unmeasured_release():
        notes += (unmeasured,)
    if engine.expert_imbalance > 1.0 and arch.is_moe:
        notes += (f"expert load imbalance {engine.expert_imbalance:g}: the busiest "
                  "expert-parallel GPU's routed tokens (its expert GEMMs and its share of each "
                  "all-to-all) are that many times the mean, and every rank waits for it; not "
                  "validated: the measured rows the engines were fitted and checked on are "
                  "read with balanced routing (benchmark clients send random prompts)",)
    # A per-GPU floor the engine's kernels were not measured for on this GPU: its median
    for applies, table, field, what, layer, floor_s in (
            (arch.is_moe, engine.moe_layer_floor_us, "moe_layer_floor_us", "MoE kernels",
             "MoE layer", engine.moe_layer_floor_s),
            (arch.indexed_layers > 0, engine.sparse_layer_floor_us, "sparse_layer_floor_us",
             "sparse-attention modules", "indexed layer", engine.sparse_layer_floor_s)):
        if applies and table and gpu.id not in table:
            notes += (f"{engine.id}'s {what} were not measured on {gpu.id}: each {layer} takes "
                      f"the median floor of the GPUs they were measured on, "
                      f"{floor_s(gpu.id) * 1e6:.1f} us ({', '.join(sorted(table))}; {field})",)
    if arch.is_moe and engine.moe_format_speedup and moe.compute in (Dtype.fp8, Dtype.fp4):
        notes += (_moe_format_note(engine, gpu, moe),)
    if engine.mixed_chunk and agg is not None:
        notes += (MIXED_CHUNK_NOTE,)
    if not engine.async_scheduling and engine.seq_overhead_s > 0:
        notes += (f"{engine.id} at this version schedules synchronously: the host's work, "
                  f"{engine.seq_overhead_s * 1e6:.0f} us a running sequence, adds to every "
                  "iteration (async scheduling would overlap it with the GPU's)",)
    if cpu_offload_gb != 0:
        notes += (_offload_note(cat, engine, gpu, cpu_offload_gb),)
    if kv_offload_gb != 0:
        notes += (_kv_offload_note(cat, engine, gpu, kv_offload_gb, max(cpu_offload_gb, 0.0)),)
    return Deployment(arch, gpu, engine, dense, moe, kv_format_for(engine, dense), agg=agg,
                      prefill=prefill, decode=decode, speculative=speculative, notes=notes,
                      cpu_offload_gb=cpu_offload_gb, kv_offload_gb=kv_offload_gb)


def _moe_format_note(engine: ServingEngine, gpu: Gpu, moe: WeightFormat) -> str:
    """How fast the engine's routed experts compute in ``moe`` on ``gpu``, and which of its
    measured kernels say so (``moe_speedup``)."""
    lane = format_peak_tflops(gpu, moe.compute) / format_peak_tflops(gpu, Dtype.bf16)
    got = moe_speedup(engine, gpu.id, moe)
    if got is None:
        return (f"{engine.id}'s routed experts compute at the {moe.name} peak, {lane:.3g}x "
                "BF16's")
    speedup, source = got
    said = (f"as its kernels measured in {moe.name} on {gpu.id}" if not source else
            f"not measured in {moe.name} on {gpu.id}: read at {source}")
    return (f"{engine.id}'s routed experts in {moe.name} compute at {speedup:.2f}x BF16's "
            f"rate at prefill sizes, {said}, not at the format's {lane:.3g}x peak "
            "(moe_format_speedup)")


KV_OFFLOAD_NOTE = ("the host tier helps requests that share a prefix (--prefix-len); its loads "
                   "are checked against vLLM's measured loads on H100 (validate --table "
                   "kv-offload), not on other engines, GPUs or links")


def _prompt_note(dep: Deployment, isl: int, longest: int) -> str:
    """Why a prompt longer than the regime's measured ones is outside what they checked."""
    e = dep.engine
    note = (f"prompts of {isl:,} tokens are longer than any measured {e.id} row on "
            f"{dep.gpu.id} ({longest:,}): the TTFT error above does not cover them")
    if e.prefill_checked_tokens:
        note += (f"; {e.id}'s prefill alone is checked on H100 up to "
                 f"{e.prefill_checked_tokens:,} tokens (validate --table kv-offload)")
    return note


def _check_gib(field: str, gib: float) -> None:
    if not (math.isfinite(gib) and gib > 0):
        raise InputError(f"{field}: must be a positive number of GiB a GPU, got {gib:g}",
                         field=field)


def _kv_offload_note(cat: Catalog, engine: ServingEngine, gpu: Gpu, gib: float,
                     weights_gib: float) -> str:
    """What a KV host tier of ``gib`` GiB a GPU does, once it is checked possible."""
    field = "kv_offload_gb"
    _check_gib(field, gib)
    if not engine.kv_host_tier:
        raise InputError(f"{field}: {engine.id} has no host tier for its KV cache (vLLM's "
                         "OffloadingConnector, SGLang's HiCache, TensorRT-LLM's host cache)",
                         field=field)
    have = host_memory_gib(cat, gpu)
    if have is None:
        raise InputError(f"{field}: the catalog records no CPU memory for {gpu.id} (no "
                         "superchip memory, no catalog server)", field=field)
    if gib + weights_gib > have[0]:
        both = f" with {weights_gib:g} GiB of offloaded weights" if weights_gib else ""
        raise InputError(f"{field}: {gib:g} GiB{both} exceeds the {have[0]:.0f} GiB of CPU "
                         f"memory one {gpu.id} GPU has ({have[1]})", field=field)
    rate, link = host_kv_link(cat, gpu)
    return (f"KV cache host tier: {gib:g} GiB of CPU memory a GPU keeps computed prefix "
            f"blocks; a request whose prefix HBM no longer holds loads it over {link} at "
            f"{rate / 1e9:.0f} GB/s (a DMA copy a block) in the iteration that admits it; "
            f"{KV_OFFLOAD_NOTE}")


def _offload_note(cat: Catalog, engine: ServingEngine, gpu: Gpu, gib: float) -> str:
    """What a weight offload of ``gib`` GiB a GPU does, once it is checked possible."""
    field = "cpu_offload_gb"
    _check_gib(field, gib)
    if not engine.weight_offload:
        raise InputError(f"{field}: {engine.id} has no weight offload (vLLM's and SGLang's "
                         "--cpu-offload-gb)", field=field)
    hm = gpu.host_memory
    if hm is None:
        raise InputError(f"{field}: {gpu.id} has no CPU memory behind a coherent link (a "
                         "Grace superchip's, over NVLink-C2C: gh200, gb200, gb300); an offload "
                         "over PCIe is not modelled", field=field)
    if gib * GIB > hm.memory_gb * 1e9:
        # In GiB, as the flag and the KV host tier's check count it
        raise InputError(f"{field}: {gib:g} GiB exceeds the {hm.memory_gb * 1e9 / GIB:.0f} GiB "
                         f"({hm.memory_gb:g} GB) of CPU memory one {gpu.id} GPU has",
                         field=field)
    rate = host_read_bps(cat, gpu) / 1e9
    return (f"weights offloaded to CPU memory: up to {gib:g} GiB a GPU (at most its layers' "
            f"weights), read over {hm.link} at {rate:.0f} GB/s in every forward pass "
            f"({hm.link_gbps_per_direction:g} GB/s a direction at the efficiency measured on "
            f"GH200) and freed from HBM for the KV cache; {OFFLOAD_NOTE}")


# validate --table serving-silicon on the rows read with --enable-mixed-chunk (2026-12-01,
# after SGLang's refit with the MoE kernels' floor)
MIXED_CHUNK_NOTE = (
    "prompt chunks mixed into the decode batch (SGLang --enable-mixed-chunk): the engine's "
    "constants were fitted on its default scheduling, and the validated figures below are "
    "that scheduler's; the mixed scheduler is checked on AIConfigurator's runs with it: 70 "
    "held-out H200 rows at TTFT 39 % / TPOT 25 % MAPE, 6 H100 rows at 92 % / 50 %")

# Hybrid recurrent models are in no row the engines were fitted on; AIConfigurator 0.12's
# Qwen3.5 MoE rows (validation/serving_silicon_aic012.csv, SGLang on B200, B300 and H200)
# check the Gated DeltaNet ones, held out (docs/serving.md); no measured row has Mamba-2.
HYBRID_NOTE = ("hybrid linear attention (Gated DeltaNet) is not in the rows the engine was "
               "fitted on; held out, Qwen3.5 MoE on SGLang (B200, B300, H200) comes within "
               "32-50 % on TTFT and 15-18 % on TPOT")
MAMBA_NOTE = ("Mamba-2 layers are in no measured row, fitted or held out: their state and "
              "scan are modelled from the config, not checked")
PRUNED_NOTE = ("blocks without attention and FFNs of varying width (a NAS-pruned model) "
               "are in no measured row: modelled with every FFN at their mean width")
GLOBAL_SHAPE_NOTE = ("whole-context layers with heads of their own shape (wider, fewer KV "
                     "heads, K = V) beside the sliding-window ones are in no measured row: "
                     "their attention and KV cache are modelled from the config, not checked")
COMPRESSED_NOTE = ("attention over a compressed KV cache (DeepSeek-V4's compressed sparse and "
                   "heavily compressed layers, their indexer and sliding windows) is in no "
                   "measured row: modelled from the config and the paper's cache sizes, not "
                   "checked against a run")
SPARSE_NOTE = ("DeepSeek Sparse Attention (a lightning indexer picking each query's top-k of the "
               "latent cache) is in no row the engines were fitted or checked on: the indexer's "
               "FP8 scoring and key cache come from the config, and its floor per layer from "
               "the engine's measured decode modules (sparse_layer_floor_us)")
OFFLOAD_NOTE = ("not validated: no measured row offloads weights, and the engines' own "
                "offload paths may not reach the link's rate")
LATENT_MOE_NOTE = ("LatentMoE experts (a latent-wide expert space behind shared projections) "
                   "are in no measured row: their GEMMs and dispatch are modelled from the "
                   "config, not checked")


MODEL_KIND = {"moe": "MoE", "dense": "dense", "": "other"}


def validation_regime(dep: Deployment, isl: int | None = None) -> dict[str, Any]:
    """How this engine did on measured rows of this GPU and mode, or that none exist; a
    hybrid linear-attention, Mamba-2, LatentMoE, NAS-pruned, Gemma-4-style or compressed-cache
    model adds ``architecture_note``; a prompt of ``isl`` tokens longer than those rows'
    longest adds ``prompt_note``."""
    mode = "disagg" if dep.disaggregated else "agg"
    arch_notes = ([MAMBA_NOTE] if dep.arch.mamba_layers else
                  [HYBRID_NOTE] if dep.arch.linear_attention_layers else [])
    if dep.arch.moe_latent:
        arch_notes.append(LATENT_MOE_NOTE)
    if dep.arch.windowed_compressed_layers:
        arch_notes.append(COMPRESSED_NOTE)
    elif dep.arch.indexed_layers:
        arch_notes.append(SPARSE_NOTE)
    if dep.arch.global_head_dim or dep.arch.global_kv_heads or dep.arch.global_k_eq_v:
        arch_notes.append(GLOBAL_SHAPE_NOTE)
    if dep.arch.n_ffn_layers > dep.arch.layers:
        arch_notes.append(PRUNED_NOTE)
    extra: dict[str, Any] = {"architecture_note": "; ".join(arch_notes)} if arch_notes else {}
    # ``validate --table serving-silicon`` checks the closed loop's steady state (its mean
    # TTFT and TPOT), not the request-level simulation's percentiles
    extra["figures"] = "steady_state"

    if dep.cpu_offload_gb > 0:
        extra["offload_note"] = OFFLOAD_NOTE
    # A user's GPU replacing the shipped one: the rows measured that one. (An engine entry
    # overridden carries its own `validated` list, which its author answers for.)
    replaced = dep.gpu.overrides
    family = "moe" if dep.arch.experts else "dense"
    measured = [v for v in dep.engine.validated if v.gpu == dep.gpu.id and v.mode == mode]
    # The fitted file's rows where it has this GPU and mode, else the held-out file's (no
    # constant fitted on them): never the two mixed, whose errors mean different things.
    here = [v for v in measured if not v.held_out] or measured
    # The rows of this model kind first (or a regime that pools both); else the other kind's,
    # said so: an engine's MoE path can miss by another factor than its dense one.
    mine = [v for v in here if v.family in (None, family)]
    if here and not mine:
        other = here[0].family
        extra["family_note"] = (
            f"the measured {dep.engine.id} rows on {dep.gpu.id} ({mode}) are all of "
            f"{MODEL_KIND[other or '']} models, none of a {MODEL_KIND[family]} one: the "
            f"figures below are theirs")
    # This layout's own rows where there are enough of them (the error moves with TP and
    # attention-DP), else every layout's pooled.
    pooled = [v for v in mine or here if v.tp is None]
    par = dep.agg.par if dep.agg is not None else None
    layout = [v for v in mine if par is not None and v.tp == par.tp
              and v.attention_dp == par.adp]
    for v in layout[:1] + pooled:
        if dep.cpu_offload_gb <= 0 and not replaced:
            if isl is not None and v.max_input_len is not None and isl > v.max_input_len:
                extra["prompt_note"] = _prompt_note(dep, isl, v.max_input_len)
            return {"validated": True, "engine": dep.engine.id, "gpu": v.gpu, "mode": mode,
                    "family": v.family, "tp": v.tp, "attention_dp": v.attention_dp,
                    "held_out": v.held_out, "rows": v.rows, "ttft_mape": v.ttft_mape,
                    "tpot_mape": v.tpot_mape, "ttft_median_error": v.ttft_median_error,
                    "tpot_median_error": v.tpot_median_error,
                    "ttft_error_p10": v.ttft_error_p10, "ttft_error_p90": v.ttft_error_p90,
                    "tpot_error_p10": v.tpot_error_p10, "tpot_error_p90": v.tpot_error_p90,
                    **extra}
    extra.pop("family_note", None)
    fitted = {(v.gpu, v.mode) for v in dep.engine.validated if not v.held_out}
    seen = sorted({f"{g} {m}" for g, m in fitted} |
                  {f"{v.gpu} {v.mode} (held out)" for v in dep.engine.validated
                   if v.held_out and (v.gpu, v.mode) not in fitted})
    if replaced is not None:
        return {"validated": False, "engine": dep.engine.id, "gpu": dep.gpu.id, "mode": mode,
                "note": (f"not validated: {dep.gpu.id} is overridden by a user catalog; the "
                         f"measured rows are of the entry at {replaced}"), **extra}
    if dep.cpu_offload_gb <= 0 and here and par is not None:
        # The GPU and mode were measured, at other layouts only (a user catalog may keep
        # layout regimes without the pooled ones): which, rather than "no measured rows".
        others = sorted({(v.tp, v.attention_dp) for v in here if v.tp is not None})
        at = ", ".join(f"tp {t} x attention-DP {a}" for t, a in others)
        return {"validated": False, "engine": dep.engine.id, "gpu": dep.gpu.id, "mode": mode,
                "note": (f"the measured {dep.engine.id} rows on {dep.gpu.id} ({mode}) are "
                         f"of other layouts only ({at}), none at tp {par.tp} x "
                         f"attention-DP {par.adp}"), **extra}
    what = ("rows offloading weights" if dep.cpu_offload_gb > 0 else
            f"{dep.engine.id} rows on {dep.gpu.id} ({mode})")
    return {"validated": False, "engine": dep.engine.id, "gpu": dep.gpu.id, "mode": mode,
            "note": (f"no measured {what}; the engine's constants were validated on: "
                     f"{', '.join(seen) or 'nothing'}"),
            **extra}


# ---------------------------------------------------------------------------- estimate


def _engine_config(p: Pool, dep: Deployment, max_seqs: int | None = None,
                   caching: bool = False, host: tuple[int, float] = (0, 0.0)) -> EngineConfig:
    """The simulator's engine for one rank of pool ``p``; ``caching``: prefix caching (the
    workload shares prefixes), ``host``: the host tier's (blocks, seconds to load one)."""
    spec = dep.speculative
    per_seq = 1 + (spec[0] if spec else 0)
    seqs = min(p.max_seqs, max_seqs or p.max_seqs, p.budget // per_seq)
    return EngineConfig(kv_blocks=max(1, int(p.kv_tokens // BLOCK)), block_size=BLOCK,
                        enable_prefix_caching=caching, host_kv_blocks=host[0],
                        host_block_load_s=host[1],
                        speculative=spec,
                        max_num_seqs=seqs, max_num_batched_tokens=p.budget,
                        chunked_prefill=p.chunked, admission=p.admission,
                        prefill_first=dep.engine.prompts_first,
                        token_delay_s=p.frontend_s,
                        token_delay_steps=p.first_token_iterations + p.context_wait_iterations,
                        batch_wait_iterations=int(p.batch_wait_iterations),
                        batch_wait_tokens=int(p.batch_wait_tokens),
                        recv_interval=p.recv_interval)


ENGINE_ROUTERS = ("least_outstanding", "cache_aware")


def router_config(cat: Catalog, router: str) -> dict[str, Any]:
    """ClusterConfig's router fields: the policy, and for cache_aware its thresholds from the
    catalog's assumptions (SGLang's router defaults)."""
    if router not in ENGINE_ROUTERS:
        raise InputError(f"router: {router!r} is not one of {', '.join(ENGINE_ROUTERS)}",
                         field="router")
    if router != "cache_aware":
        return {"router": router}
    return {"router": router,
            "cache_threshold": float(cat.assumption("router_cache_threshold")),
            "balance_abs": int(cat.assumption("router_balance_abs_threshold")),
            "balance_rel": float(cat.assumption("router_balance_rel_threshold"))}


def _whole_prompts_fit(dep: Deployment, p: Pool, role: Role, field_prefix: str, w: Workload,
                       isl: int) -> None:
    """An engine that takes prompts whole (no chunked prefill) needs a token budget that
    holds one: refused naming the budget that was set, or the prompt length where the
    engine's default is the budget. Prompts of fixed length (``isl`` tokens) only: the
    simulator checks each drawn one."""
    if p.chunked or p.budget >= isl or w.input_len.dist != "fixed":
        return
    whole = f"{dep.engine.id} takes a prompt whole (no chunked prefill)"
    if role.max_tokens:
        field = field_prefix + "max_tokens"
        raise InputError(f"{field}: max_tokens={p.budget:,} cannot hold a {isl:,}-token "
                         f"prompt: {whole}", field=field)
    raise InputError(f"input_len: a {isl:,}-token prompt exceeds {dep.engine.id}'s budget of "
                     f"{p.budget:,} tokens an iteration, and {whole}: raise the budget "
                     "(--max-tokens, or max_tokens= in a role)", field="input_len")


def simulate_deployment(cat: Catalog, dep: Deployment, w: Workload, isl: int, osl: int,
                        slo_ttft_s: float = math.inf, slo_tpot_s: float = math.inf,
                        requests: Requests | None = None, gpu_prefix_cache: bool = True,
                        router: str = "least_outstanding",
                        stop_ttft_p99_over: float | None = None) -> ServingResult:
    """The request-level simulator on the deployment's step models: every data-parallel rank
    is a replica behind the router (attention-DP ranks take their own requests).
    ``requests``: a stream to simulate instead of the workload's (which still says open or
    closed loop); prefix caching is on when requests share prefixes, in HBM unless
    ``gpu_prefix_cache`` is False (the host tier alone, as vLLM's offloading benchmark
    measures it). ``router``: how the data-parallel ranks share the requests,
    least_outstanding or cache_aware (``router_config``). ``stop_ttft_p99_over`` (s): stop
    once the TTFT p99 is sure to exceed it (``simulate``)."""
    caching = (w.prefix_groups > 0 and w.shared_prefix_len > 0) or (
        requests is not None and bool((requests.prefix_id >= 0).any()))
    if dep.agg is not None:
        p = pool(cat, dep, dep.agg.par, dep.agg.workers or 1, isl, osl,
                 max_batch=dep.agg.max_batch, max_tokens=dep.agg.max_tokens)
        _whole_prompts_fit(dep, p, dep.agg, "", w, isl)
        host = host_kv_tier(cat, dep, dep.agg.par, isl, osl, BLOCK)
        eng = replace(_engine_config(p, dep, caching=caching, host=host),
                      gpu_prefix_cache=gpu_prefix_cache)
        cluster = ClusterConfig(engine=eng, replicas=p.ranks, **router_config(cat, router))
        return simulate(cluster, w, p.step, slo_ttft_s=slo_ttft_s, slo_tpot_s=slo_tpot_s,
                        requests=requests, stop_ttft_p99_over=stop_ttft_p99_over)
    assert dep.prefill is not None and dep.decode is not None
    assert dep.prefill.workers is not None and dep.decode.workers is not None
    pre = pool(cat, dep, dep.prefill.par, dep.prefill.workers, isl, osl, "prefill.",
               max_batch=dep.prefill.max_batch, max_tokens=dep.prefill.max_tokens)
    dec = pool(cat, dep, dep.decode.par, dep.decode.workers, isl, osl, "decode.",
               max_batch=dep.decode.max_batch, max_tokens=dep.decode.max_tokens)
    _whole_prompts_fit(dep, pre, dep.prefill, "prefill.", w, isl)
    link = kv_link_bytes_per_s(dep, pre, dep.gpus() or 0)
    dis = Disaggregation(prefill_replicas=pre.ranks, decode_replicas=dec.ranks,
                         kv_bytes_per_token=kv_bytes_per_token(dep.arch, dep.kv_format),
                         link_bytes_per_s=link,
                         prefill_engine=replace(_engine_config(
                             pre, replace(dep, speculative=None), caching=caching,
                             host=host_kv_tier(cat, dep, dep.prefill.par, isl, osl, BLOCK)),
                             gpu_prefix_cache=gpu_prefix_cache),
                         prefill_model=pre.step, first_chunk_tokens=first_chunk_tokens(dep))
    cluster = ClusterConfig(engine=_engine_config(dec, dep), disaggregation=dis,
                            **router_config(cat, router))
    return simulate(cluster, w, dec.step, slo_ttft_s=slo_ttft_s, slo_tpot_s=slo_tpot_s,
                    requests=requests, stop_ttft_p99_over=stop_ttft_p99_over)


def roles_view(dep: Deployment) -> dict[str, Any]:
    def one(r: Role) -> dict[str, Any]:
        p = r.par
        role: dict[str, Any] = {
            "workers": r.workers, "tp": p.tp, "pp": p.pp, "adp": p.adp, "moe_tp": p.moe_tp,
            "moe_ep": p.moe_ep, "expert_slots_per_gpu": p.expert_slots(dep.arch),
            "max_batch": r.max_batch or dep.engine.max_batch,
            "max_tokens": r.max_tokens or token_budget(dep.engine, dep.gpu),
            "gpus_per_worker": p.gpus}
        if dep.cpu_offload_gb > 0:
            # What a GPU of this layout offloads (the GiB asked, at most its layers' weights)
            role["offloaded_gib_per_gpu"] = offload_bytes(dep, p) / GIB
        return role
    if dep.agg is not None:
        out: dict[str, Any] = {"mode": "agg", "agg": one(dep.agg)}
        if dep.arch.is_moe:
            out["expert_imbalance"] = dep.engine.expert_imbalance
        if dep.engine.batch_wait_iterations and dep.engine.batch_wait_tokens_ratio:
            out["batch_wait"] = {"iterations": dep.engine.batch_wait_iterations,
                                 "tokens_ratio": dep.engine.batch_wait_tokens_ratio}
        if dep.engine.scheduler_recv_interval > 1 and dep.agg.par.adp == 1:
            out["recv_interval"] = dep.engine.scheduler_recv_interval
        if dep.engine.mixed_chunk:
            out["mixed_chunk"] = True
        return out
    assert dep.prefill is not None and dep.decode is not None
    out = {"mode": "disagg", "prefill": one(dep.prefill), "decode": one(dep.decode)}
    if dep.arch.is_moe:
        out["expert_imbalance"] = dep.engine.expert_imbalance
    chunk = first_chunk_tokens(dep)
    if chunk > 1:
        # The client's first token waits for the decode workers' first streamed chunk
        out["first_chunk_tokens"] = chunk
    return out


@dataclass(frozen=True)
class EngineEstimate:
    dep: Deployment
    workload: Workload
    isl: int
    osl: int
    steady: SteadyState | None  # closed loop with fixed lengths
    result: ServingResult | None
    disaggregation: dict[str, Any] | None
    # The same closed loop measured by a benchmark of ``rounds`` requests per client that
    # starts every client at once on an idle deployment: (rounds, its mean TTFT in seconds)
    benchmark: tuple[int, float] | None = None
    # The same simulation without the KV host tier (a deployment that has one)
    without_host: ServingResult | None = None
    router: str = "least_outstanding"  # how the data-parallel ranks share the requests
    # Where one prompt's prefill and a decode iteration at the steady state's batch spend
    # their time (``iteration_breakdown``); None without a steady state
    iterations: dict[str, Any] | None = None

    def _prefix_cache(self, r: ServingResult) -> dict[str, Any]:
        """Prefix reuse: the share of prompt tokens served from a cache (HBM or the host
        tier), and what the host tier changes."""
        w, d = self.workload, self.dep
        # A whole-prompt prefix lends its last token to the prompt's own part (workload())
        whole = w.input_len.dist == "fixed" and w.input_len.mean == 1.0
        out: dict[str, Any] = {
            "groups": w.prefix_groups,
            "prefix_len": w.shared_prefix_len + (1 if whole else 0),
            "hit_rate": r.prefix_hit_rate, "host_hit_rate": r.host_hit_rate,
            "kv_offload_gib_per_gpu": d.kv_offload_gb}
        b = self.without_host
        if b is not None:
            out["without_host_tier"] = {
                "hit_rate": b.prefix_hit_rate, "ttft_mean_s": b.ttft_s["mean"],
                "ttft_p99_s": b.ttft_s["p99"], "requests_per_s": b.requests_per_s,
                "throughput_tokens_per_s": b.output_tokens_per_s}
        return out

    def as_dict(self) -> dict[str, Any]:
        """The contract keys of ``serve estimate`` first (from the simulation), then the
        steady state, the deployment, the engine and the validated regime."""
        out: dict[str, Any] = {}
        r, st = self.result, self.steady
        if r is not None:
            gpus = self.dep.gpus() or 1
            out.update({
                "ttft_p50_s": r.ttft_s["p50"], "ttft_p99_s": r.ttft_s["p99"],
                "tpot_p50_s": r.tpot_s["p50"], "tpot_p99_s": r.tpot_s["p99"],
                "e2e_mean_s": r.e2e_s["mean"], "e2e_p99_s": r.e2e_s["p99"],
                "throughput_tokens_per_s": r.output_tokens_per_s,
                "requests_per_s": r.requests_per_s,
                "kv_cache_utilization": r.kv_util_mean,
                "ttft_mean_s": r.ttft_s["mean"], "tpot_mean_s": r.tpot_s["mean"],
                "goodput_requests_per_s": r.goodput_rps, "preemptions": r.preemptions,
                "tokens_per_s_per_gpu": r.output_tokens_per_s / gpus,
                "sim": {"events": r.events, "steps": r.steps, "router": self.router},
            })
            w = self.workload
            if w.prefix_groups > 0 and w.shared_prefix_len > 0:
                out["prefix_cache"] = self._prefix_cache(r)
        if st is not None:
            out["steady_state"] = {
                "ttft_mean_s": st.ttft_s, "tpot_mean_s": st.tpot_s,
                "requests_per_s": st.requests_per_s,
                "throughput_tokens_per_s": st.requests_per_s * self.osl,
                "decode_batch_per_rank": st.decode_batch, "detail": st.detail,
                "ttft_parts_s": st.ttft_parts(self.dep.engine.frontend_s),
                "iterations": self.iterations,
                # Saturated: the rate is fixed by what binds, and TTFT is clients / rate less
                # the decode time; its sensitivity says how far a rate error moves it.
                "saturated_by": st.bound or None,
                "ttft_sensitivity": (st.ttft_sensitivity(self.workload.concurrency)
                                     if self.workload.concurrency else None),
            }
            if self.benchmark is not None:
                out["steady_state"]["benchmark"] = {"rounds": self.benchmark[0],
                                                    "ttft_mean_s": self.benchmark[1]}
        d = self.dep
        out.update({
            "model": d.arch.id, "gpu": d.gpu.id, "engine": d.engine.id,
            "engine_name": d.engine.name, "gpus": d.gpus(),
            # The host's work per running sequence, and whether it overlaps the GPU's
            "scheduling": {"async": d.engine.async_scheduling,
                           "host_s_per_sequence": d.engine.seq_overhead_s},
            "gemm_quant": d.dense.name, "moe_quant": d.moe.name, "kv_cache": d.kv_format,
            "deployment": roles_view(d), "notes": list(d.notes),
            "speculative": ({"draft_tokens": d.speculative[0], "acceptance": d.speculative[1],
                             "cost": d.speculative[2], "tokens_per_step": d.spec_yield()}
                            if d.speculative else None),
            "arrival": self.workload.arrival,
            "concurrency": (self.workload.concurrency
                            if self.workload.arrival == "closed" else None),
            "qps": self.workload.qps if self.workload.arrival == "poisson" else None,
            "input_len": self.isl, "output_len": self.osl,
            "validation": validation_regime(d, self.isl),
        })
        if self.disaggregation is not None:
            out["disaggregation"] = self.disaggregation
        if r is not None:
            # Wall-clock only, under one key: the rest is a function of the inputs and seed.
            out["timings"] = {"sim_wall_s": r.wall_s}
        return out


def estimate_engine(cat: Catalog, dep: Deployment, w: Workload, isl: int, osl: int,
                    simulate_requests: bool = True, slo_ttft_s: float = math.inf,
                    slo_tpot_s: float = math.inf, benchmark_rounds: int | None = None,
                    router: str = "least_outstanding") -> EngineEstimate:
    """Steady state (closed loop, fixed lengths) and simulation of ``w`` on ``dep``.
    Worker counts left open are sized for the closed loop's clients (or, open loop, for the
    clients Little's law gives at the steady state's latency). ``benchmark_rounds``: also the
    mean TTFT (seconds) a benchmark of that many requests per client measures when it starts
    every client at once on an idle deployment (its first round an opening wave)."""
    st: SteadyState | None = None
    bench: tuple[int, float] | None = None
    fixed = w.input_len.dist == "fixed" and w.output_len.dist == "fixed"
    shares = w.prefix_groups > 0 and w.shared_prefix_len > 0
    if w.arrival == "closed" and fixed:
        cache: PoolCache = {}  # the benchmark's solve reuses the steady state's step models
        st, dep = steady(cat, dep, w.concurrency, isl, osl, cache)
        if benchmark_rounds is not None and not shares:
            b, _ = steady(cat, dep, w.concurrency, isl, osl, cache,
                          rounds=float(benchmark_rounds))
            bench = (benchmark_rounds, b.ttft_s)
    elif dep.gpus() is None:
        # Open loop with open worker counts: size them for the clients the rate keeps busy.
        clients = max(1.0, w.qps * 10.0)
        for _ in range(3):
            s0, _ = steady(cat, dep, clients, isl, osl)
            clients = max(1.0, w.qps * (s0.ttft_s + max(osl - 1, 0) * s0.tpot_s))
        _, dep = steady(cat, dep, clients, isl, osl)
    res = (simulate_deployment(cat, dep, w, isl, osl, slo_ttft_s, slo_tpot_s, router=router)
           if simulate_requests else None)
    without = None
    if res is not None and shares and dep.kv_offload_gb > 0:
        without = simulate_deployment(cat, replace(dep, kv_offload_gb=0.0), w, isl, osl,
                                      slo_ttft_s, slo_tpot_s, router=router)
    if shares:
        # The steady state knows no cache: it sized the workers; the simulation reports
        st = None
    dis = None
    if dep.agg is not None and w.arrival == "closed" and fixed and st is not None:
        dis = disaggregation_check(cat, dep, w.concurrency, isl, osl, st)
    parts = (iteration_breakdown(cat, dep, isl, osl, st.decode_batch)
             if st is not None else None)
    return EngineEstimate(dep, w, isl, osl, st, res, dis, bench, without, router, parts)


# ---------------------------------------------------------------------------- disaggregation


def _split_layouts(dep: Deployment) -> list[ServingParallel]:
    """Worker layouts a disaggregated alternative of ``dep`` may use: the aggregated
    worker's, and the same with half the tensor parallelism (or attention DP)."""
    assert dep.agg is not None
    p = dep.agg.par
    out = [p]
    for tp, adp in ((p.tp // 2, p.adp), (p.tp, p.adp // 2)):
        if tp >= 1 and adp >= 1 and tp * adp < p.tp * p.adp and dep.arch.heads % tp == 0:
            group = tp * adp
            mep = min(p.moe_ep, group) if dep.arch.is_moe else 1
            if dep.arch.is_moe and group % mep:
                continue
            out.append(ServingParallel(tp=tp, pp=p.pp, adp=adp,
                                       moe_tp=group // mep if dep.arch.is_moe else 1,
                                       moe_ep=mep))
    return out


def disaggregation_check(cat: Catalog, dep: Deployment, clients: float, isl: int, osl: int,
                         agg_state: SteadyState) -> dict[str, Any]:
    """Whether splitting ``dep``'s GPUs into prefill and decode workers serves its clients
    better: the best split of the same GPU count by requests/s with TTFT and TPOT no worse
    than 10 % above the aggregated deployment's, and the verdict."""
    assert dep.agg is not None
    total = dep.gpus() or 0
    best: tuple[float, Deployment, SteadyState] | None = None
    tried = 0
    for par in _split_layouts(dep):
        per = par.gpus
        workers = total // per
        for pw in range(1, workers):
            dw = workers - pw
            cand = replace(dep, agg=None, prefill=Role(par, pw), decode=Role(par, dw),
                           notes=())
            try:
                st, _ = steady(cat, cand, clients, isl, osl)
            except DeploymentError:
                continue
            tried += 1
            if st.ttft_s > 1.1 * agg_state.ttft_s or st.tpot_s > 1.1 * agg_state.tpot_s:
                continue
            if best is None or st.requests_per_s > best[0]:
                best = (st.requests_per_s, cand, st)
    base = {"aggregated": {"gpus": total, "requests_per_s": agg_state.requests_per_s,
                           "ttft_mean_s": agg_state.ttft_s, "tpot_mean_s": agg_state.tpot_s}}
    if best is None:
        why = ("one worker of this layout cannot be split" if tried == 0 else
               "no split of the same GPUs keeps TTFT and TPOT within 10 % of aggregated")
        return {**base, "pays": False, "reason": why, "splits_tried": tried}
    rate, cand, st = best
    gain = rate / agg_state.requests_per_s - 1.0 if agg_state.requests_per_s > 0 else 0.0
    pays = gain > 0.05
    return {**base, "pays": pays, "splits_tried": tried,
            "best_split": {**roles_view(cand), "requests_per_s": rate, "ttft_mean_s": st.ttft_s,
                           "tpot_mean_s": st.tpot_s, "gain": gain},
            "reason": (f"{100 * gain:+.0f} % requests/s on the same {total} GPUs at no worse "
                       "latency" if pays else
                       f"the best split gains {100 * gain:+.0f} % requests/s (pays above 5 %)")}



__all__ = ["ENGINE_ROUTERS", "MODEL_KIND", "EngineEstimate", "deployment", "disaggregation_check",
           "engine_of", "estimate_engine", "layout", "roles_view", "router_config",
           "simulate_deployment", "validation_regime"]
