"""``clusterwright serve estimate`` and ``serve plan``."""

from __future__ import annotations

import math
from typing import Any

import typer
from rich.table import Table

from clusterwright.catalog.registry import Catalog, resolve_model
from clusterwright.catalog.schema import ModelArch
from clusterwright.cli import limits as lim
from clusterwright.cli.common import (
    console,
    emit_json,
    fail,
    progress_bar,
    state,
    user_errors,
)
from clusterwright.cli.serve_engine_cmd import (
    FIELD_FLAGS,
    check_prefix_flags,
    estimate_engine_cli,
    plan_engine_cli,
)
from clusterwright.errors import ClusterwrightError
from clusterwright.model.precision import Precision
from clusterwright.report.fmt import usd

app = typer.Typer(
    help="Inference serving: latency and throughput of a deployment, and the cheapest one "
    "that meets latency SLOs.",
    no_args_is_help=True,
)


def _arch(cat: Catalog, model: str) -> ModelArch:
    try:
        return resolve_model(cat, model)
    except ClusterwrightError as exc:
        fail(f"--model: {exc}")


def _check_ids(cat: Catalog, gpu: str | None, server: str | None) -> None:
    for flag, kind, value in (("--gpu", "gpus", gpu), ("--server", "servers", server)):
        if value is None:
            continue
        try:
            cat.get(kind, value)
        except ClusterwrightError as exc:
            fail(f"{flag}: {exc}")


def _positive(**values: float | None) -> None:
    for name, v in values.items():
        if v is not None and not (v > 0 and math.isfinite(v)):
            fail(f"--{name.replace('_', '-')}: must be positive, got {v:g}")


def _ms(s: float | None) -> str:
    return "-" if s is None or s != s else f"{1e3 * s:.1f} ms"


@app.command("estimate")
def estimate_cmd(
    ctx: typer.Context,
    model: str = typer.Option(..., "--model", help="Catalog id or path to a model YAML."),
    gpu: str = typer.Option(..., "--gpu", help="GPU catalog id."),
    tp: int = typer.Option(1, "--tp", help="Tensor-parallel GPUs per replica."),
    pp: int = typer.Option(1, "--pp", help="Pipeline stages per replica."),
    ep: int = typer.Option(
        1, "--ep", help="MoE only: GPUs of the TP group the experts are split over (divides "
        "--tp and the experts; vLLM --enable-expert-parallel is --ep = --tp)."
    ),
    ep_comm: str = typer.Option(
        "allreduce", "--ep-comm", help="How EP moves tokens: allreduce (one vLLM/TRT-LLM "
        "replica) or alltoall (DeepEP-style dispatch/combine, needs --ep = --tp)."
    ),
    precision: Precision = typer.Option(Precision.bf16, "--precision", help="Weights."),
    kv_precision: Precision = typer.Option(Precision.bf16, "--kv-precision", help="KV cache."),
    server: str | None = typer.Option(
        None, "--server", help="Server catalog id (default: the GPU's)."
    ),
    qps: float | None = typer.Option(None, "--qps", help="Open loop: Poisson requests/s."),
    concurrency: int | None = typer.Option(
        None, "--concurrency", help="Closed loop: clients, each waits for its last answer."
    ),
    input_len: int = typer.Option(..., "--input-len", help="Prompt tokens (mean)."),
    output_len: int = typer.Option(..., "--output-len", help="Output tokens (mean)."),
    length_dist: str = typer.Option("fixed", "--length-dist", help="fixed or lognormal."),
    length_cv: float = typer.Option(
        1.0, "--length-cv", help="Lognormal lengths: std / mean."
    ),
    num_requests: int = typer.Option(1000, "--num-requests"),
    seed: int = typer.Option(0, "--seed"),
    replicas: int = typer.Option(1, "--replicas", help="Model replicas behind the router."),
    router: str = typer.Option(
        "round_robin", "--router", help="round_robin or least_outstanding. With --engine: "
        "least_outstanding (the default there) or cache_aware (SGLang's router: a prompt "
        "goes to the rank holding its shared prefix while the load stays balanced)."
    ),
    max_num_seqs: int | None = typer.Option(
        None, "--max-num-seqs", help="Sequences per iteration (default 256). With --engine: "
        "requests a data-parallel rank batches at most (the engine's max batch size; default "
        "the engine's); disaggregated roles take max_batch= instead."),
    max_tokens: int | None = typer.Option(
        None, "--max-tokens", help="--engine, aggregated: tokens one iteration of a rank "
        "carries at most (vLLM --max-num-batched-tokens, TensorRT-LLM max_num_tokens, SGLang "
        "--chunked-prefill-size; default the engine's); disaggregated roles take max_tokens= "
        "instead."),
    ttft_slo: float | None = typer.Option(
        None, "--ttft-slo", help="Seconds; requests within both SLOs count as goodput."
    ),
    tpot_slo: float | None = typer.Option(None, "--tpot-slo", help="Seconds per token."),
    engine: str | None = typer.Option(
        None, "--engine", help="Serving engine from the catalog: trtllm, vllm or sglang "
        "(optionally @VERSION). Models that engine's scheduler and kernels, on any catalog GPU, "
        "with attention DP, MoE TP/EP and disaggregated prefill/decode; see serving_engines."),
    adp: int = typer.Option(1, "--adp", help="--engine: attention data-parallel ranks per "
                            "replica (each runs tp GPUs; the MoE layers span tp x adp)."),
    moe_tp: int | None = typer.Option(None, "--moe-tp", help="--engine: MoE tensor parallelism "
                                      "(moe-tp x moe-ep = tp x adp)."),
    moe_ep: int | None = typer.Option(None, "--moe-ep", help="--engine: MoE expert "
                                      "parallelism (default: tp x adp with --adp, else 1)."),
    gemm_quant: str | None = typer.Option(
        None, "--gemm-quant", help="--engine: weight format of the dense layers (bf16, fp8, "
        "fp8_block, nvfp4, mxfp4, int4; default from --precision)."),
    moe_quant: str | None = typer.Option(
        None, "--moe-quant", help="--engine: weight format of the routed experts."),
    prefill: str | None = typer.Option(
        None, "--prefill", help="--engine, disaggregated: prefill workers as "
        "'workers=2,tp=4,adp=1,moe_ep=4' (workers=auto sizes them; max_batch= and "
        "max_tokens= bound a rank's requests and tokens an iteration, e.g. a TensorRT-LLM "
        "recipe's context workers at max_batch=2,max_tokens=16896)."),
    decode: str | None = typer.Option(
        None, "--decode", help="--engine, disaggregated: decode workers, same form."),
    speculative: str | None = typer.Option(
        None, "--speculative", help="--engine: speculative decoding as DRAFT_TOKENS:ACCEPTANCE"
        "[:COST], e.g. 3:0.7:1.3 (MTP with 3 drafts, 70 % accepted, iterations 1.3x a plain "
        "one); without COST the model costs the drafts as MTP (one decoder layer and the LM "
        "head per draft, and the verification's extra tokens)."),
    batch_wait: str | None = typer.Option(
        None, "--batch-wait", help="--engine trtllm: batch waiting as ITERATIONS:RATIO, e.g. "
        "20:0.9 (batch_wait_timeout_iters, batch_wait_max_tokens_ratio): new prompts wait up "
        "to ITERATIONS decode iterations or until the iteration's tokens reach RATIO of the "
        "token budget."),
    recv_interval: int | None = typer.Option(
        None, "--recv-interval", help="--engine sglang: --scheduler-recv-interval N: while "
        "sequences decode, new prompts are taken every N decode iterations (and right after "
        "a prefill); InferenceMAX's DeepSeek scripts run 30 at 16 clients or more, 10 below."),
    expert_imbalance: float | None = typer.Option(
        None, "--expert-imbalance", help="--engine, MoE models: the busiest expert-parallel "
        "GPU's routed tokens over the mean (1-64; default 1.0, balanced routing): its expert "
        "GEMMs and its share of each all-to-all grow by that factor, and every rank waits for "
        "it."),
    mixed_chunk: bool = typer.Option(
        False, "--mixed-chunk", help="--engine sglang, aggregated: --enable-mixed-chunk: a "
        "prompt's chunk joins the running decode batch (the decodes' tokens come off the "
        "chunk budget) instead of every waiting prompt running first; AIConfigurator's "
        "generator sets it since 2026-01-19."),
    async_scheduling: bool | None = typer.Option(
        None, "--async-scheduling/--sync-scheduling", help="--engine vllm: whether the "
        "engine overlaps its host work (scheduling, inputs, outputs: the engine entry's "
        "seq_overhead_s a running sequence, 29 us for vLLM) with the GPU's iteration (vLLM's "
        "--async-scheduling) or adds it; default: "
        "the version's (off before 0.12, on from it)."),
    cpu_offload_gb: float | None = typer.Option(
        None, "--cpu-offload-gb", help="--engine vllm or sglang on a Grace superchip (gh200, "
        "gb200, gb300): GiB of weights each GPU keeps in its CPU's memory (the engines' "
        "--cpu-offload-gb), read over NVLink-C2C in every forward pass; the HBM they free "
        "holds KV cache. Not validated."),
    prefix_len: int | None = typer.Option(
        None, "--prefix-len", help="The first tokens of every prompt (of --input-len) it "
        "shares with the other prompts of its group (a system prompt, a document many "
        "questions ask about); the replicas' prefix caches reuse them."),
    prefix_groups: int | None = typer.Option(
        None, "--prefix-groups", help="With --prefix-len: how many distinct shared "
        "prefixes the prompts draw from, uniformly (default 1)."),
    kv_offload_gb: float | None = typer.Option(
        None, "--kv-offload-gb", help="--engine, with --prefix-len: GiB of CPU memory each "
        "GPU gives the KV cache's host tier (vLLM's --kv-offloading-size is the total over a "
        "replica's GPUs; SGLang's HiCache, TensorRT-LLM's host_cache_size): prefixes HBM no "
        "longer holds load back over the CPU link instead of being computed again."),
    no_sim: bool = typer.Option(
        False, "--steady-only", help="--engine, closed loop: only the steady-state solution "
        "(means, milliseconds), no request-level simulation."),
    benchmark_rounds: int | None = typer.Option(
        None, "--benchmark-rounds", help="--engine, closed loop: also the mean TTFT a "
        "benchmark of N requests per client reports when it starts every client at once on an "
        "idle deployment (InferenceMAX: 10), its first round an opening wave."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Simulate a workload on replicas of one model: TTFT, TPOT, end-to-end latency,
    throughput and KV-cache use (request-level, vLLM-like scheduler). With --engine: a
    catalog engine's deployment, its closed-loop steady state and whether splitting it into
    prefill and decode workers pays."""
    from clusterwright.plan.serving_replica import estimate

    lim.within(("--tp", tp, lim.PARALLEL), ("--pp", pp, lim.PARALLEL), ("--ep", ep, lim.PARALLEL),
               ("--adp", adp, lim.PARALLEL), ("--moe-tp", moe_tp, lim.PARALLEL),
               ("--moe-ep", moe_ep, lim.PARALLEL), ("--qps", qps, lim.QPS),
               ("--concurrency", concurrency, lim.CONCURRENCY),
               ("--benchmark-rounds", benchmark_rounds, lim.BENCHMARK_ROUNDS),
               ("--input-len", input_len, lim.SEQ_TOKENS),
               ("--output-len", output_len, lim.SEQ_TOKENS),
               ("--length-cv", length_cv, lim.LENGTH_CV),
               ("--num-requests", num_requests, lim.REQUESTS), ("--seed", seed, lim.SEED),
               ("--replicas", replicas, lim.REPLICAS),
               ("--max-num-seqs", max_num_seqs, lim.SEQUENCES),
               ("--max-tokens", max_tokens, lim.ITERATION_TOKENS),
               ("--ttft-slo", ttft_slo, lim.SLO_S), ("--tpot-slo", tpot_slo, lim.SLO_S),
               ("--recv-interval", recv_interval, lim.RECV_INTERVAL),
               ("--cpu-offload-gb", cpu_offload_gb, lim.CPU_OFFLOAD_GIB),
               ("--prefix-len", prefix_len, lim.SEQ_TOKENS),
               ("--prefix-groups", prefix_groups, lim.PREFIX_GROUPS),
               ("--kv-offload-gb", kv_offload_gb, lim.KV_OFFLOAD_GIB))
    lim.nonempty(("--server", server), ("--engine", engine), ("--gemm-quant", gemm_quant),
                 ("--moe-quant", moe_quant), ("--prefill", prefill), ("--decode", decode),
                 ("--speculative", speculative), ("--batch-wait", batch_wait))
    if engine is None:
        for flag, v in (("--adp", adp != 1), ("--moe-tp", moe_tp), ("--moe-ep", moe_ep),
                        ("--gemm-quant", gemm_quant), ("--moe-quant", moe_quant),
                        ("--prefill", prefill), ("--decode", decode),
                        ("--steady-only", no_sim), ("--speculative", speculative),
                        ("--benchmark-rounds", benchmark_rounds), ("--batch-wait", batch_wait),
                        ("--recv-interval", recv_interval),
                        ("--expert-imbalance", expert_imbalance),
                        ("--mixed-chunk", mixed_chunk),
                        ("--max-tokens", max_tokens is not None),
                        ("--cpu-offload-gb", cpu_offload_gb is not None),
                        ("--kv-offload-gb", kv_offload_gb is not None),
                        ("--async-scheduling/--sync-scheduling",
                         async_scheduling is not None)):
            if v:
                fail(f"{flag}: only with --engine (a catalog serving engine)")
    else:
        if ep != 1:
            fail("--ep: with --engine, give --moe-ep (and --adp) instead")
        # Options of the engine-less path that the engine path would otherwise drop: its
        # deployment takes the GPU's catalog server, routes to the least outstanding rank,
        # picks the MoE collective per layout and the KV format by the engine's rule
        if server is not None:
            fail("--server: only without --engine (the engine path uses the GPU's catalog "
                 "server)")
        if router == "round_robin":
            # The option's default: the engine path sends each request to the rank with
            # the fewest outstanding
            router = "least_outstanding"
        if ep_comm != "allreduce":
            fail("--ep-comm: only without --engine (the engine path takes each layout's MoE "
                 "collective: all-to-all with expert parallelism, else all-reduce)")
        if kv_precision != Precision.bf16:
            fail("--kv-precision: only without --engine (the engine keeps its KV cache in its "
                 "own format: its quantized one with 8- or 4-bit weights, else 16-bit)")
        if prefill is not None or decode is not None:
            for flag, v in (("--tp", tp != 1), ("--pp", pp != 1), ("--adp", adp != 1),
                            ("--moe-tp", moe_tp is not None), ("--moe-ep", moe_ep is not None),
                            ("--replicas", replicas != 1)):
                if v:
                    fail(f"{flag}: with --prefill/--decode, give each role's layout (and "
                         "workers=) in them instead")
        if max_num_seqs is not None and (prefill is not None or decode is not None):
            fail("--max-num-seqs: with --prefill/--decode, give each role's max_batch= instead")
        if max_tokens is not None and (prefill is not None or decode is not None):
            fail("--max-tokens: with --prefill/--decode, give each role's max_tokens= instead")
        check_prefix_flags(prefix_len, prefix_groups, kv_offload_gb, input_len)
        if prefix_len is not None and no_sim:
            fail("--steady-only: the steady state knows no prefix cache; drop --prefix-len or "
                 "simulate")
        if prefix_len is not None and benchmark_rounds is not None:
            fail("--benchmark-rounds: a benchmark's rounds are read from the steady state, "
                 "which knows no prefix cache; drop --prefix-len")
        estimate_engine_cli(ctx, model=model, gpu=gpu, engine=engine, tp=tp, pp=pp, adp=adp,
                         moe_tp=moe_tp, moe_ep=moe_ep, precision=precision.value,
                         gemm_quant=gemm_quant, moe_quant=moe_quant, prefill=prefill,
                         decode=decode, qps=qps, concurrency=concurrency,
                         input_len=input_len, output_len=output_len, length_dist=length_dist,
                         length_cv=length_cv, num_requests=num_requests, seed=seed,
                         replicas=replicas, ttft_slo=ttft_slo, tpot_slo=tpot_slo,
                         simulate_requests=not no_sim, as_json=as_json,
                         speculative=speculative, benchmark_rounds=benchmark_rounds,
                         max_batch=max_num_seqs, batch_wait=batch_wait,
                         recv_interval=recv_interval, async_scheduling=async_scheduling,
                         expert_imbalance=expert_imbalance, mixed_chunk=mixed_chunk,
                         max_tokens=max_tokens, cpu_offload_gb=cpu_offload_gb or 0.0,
                         prefix_len=prefix_len or 0, prefix_groups=prefix_groups or 1,
                         kv_offload_gb=kv_offload_gb or 0.0, router=router)
        return
    max_num_seqs = 256 if max_num_seqs is None else max_num_seqs
    check_prefix_flags(prefix_len, prefix_groups, kv_offload_gb, input_len)

    if (qps is None) == (concurrency is None):
        fail("--qps/--concurrency: give exactly one (open loop at a request rate, or a closed "
             "loop of clients)")
    _positive(qps=qps, concurrency=concurrency, input_len=input_len, output_len=output_len,
              num_requests=num_requests, replicas=replicas, tp=tp, pp=pp, ep=ep,
              ttft_slo=ttft_slo, tpot_slo=tpot_slo, max_num_seqs=max_num_seqs)
    with user_errors():
        cat = state(ctx).catalog()
    arch = _arch(cat, model)
    _check_ids(cat, gpu, server)
    with user_errors(FIELD_FLAGS, name_flags=True):
        est = estimate(
            cat, arch, gpu, tp=tp, pp=pp, precision=precision, kv_precision=kv_precision,
            server=server, qps=qps, concurrency=concurrency, input_len=input_len,
            output_len=output_len, num_requests=num_requests, seed=seed,
            length_dist=length_dist, length_cv=length_cv, replicas=replicas, router=router,
            slo_ttft_s=ttft_slo if ttft_slo is not None else math.inf,
            slo_tpot_s=tpot_slo if tpot_slo is not None else math.inf,
            max_num_seqs=max_num_seqs, ep=ep, ep_comm=ep_comm,
            prefix_len=prefix_len or 0, prefix_groups=prefix_groups or 1,
        )
    payload = est.as_dict()
    if as_json:
        emit_json(payload)
    else:
        _render_estimate(payload)


def _render_estimate(d: dict[str, Any]) -> None:
    load = f"{d['qps']:g} req/s" if d["qps"] is not None else f"{d['concurrency']} clients"
    ep = f" ep {d['ep']} ({d['ep_comm']})" if d["ep"] > 1 else ""
    console.print(
        f"[bold]{d['model']}[/] on {d['replicas']} x {d['tp'] * d['pp']} {d['gpu']} "
        f"(tp {d['tp']} pp {d['pp']}{ep}, {d['precision']} weights, {d['kv_precision']} KV), "
        f"{load}, {d['requests']} requests"
    )
    m = d["memory"]
    console.print(
        f"memory per GPU: {m['weights_gb']:.1f} GB weights, {m['activations_gb']:.1f} GB "
        f"activations, {m['cuda_graphs_gb']:.1f} GB CUDA graphs, {m['kv_cache_gb']:.1f} GB KV "
        f"= {m['kv_blocks']:,} blocks, {m['kv_tokens']:,} tokens per replica"
    )
    t = Table(title="latency", title_justify="left")
    for col in ("", "p50", "p99", "mean"):
        t.add_column(col, justify="right")
    t.add_row("TTFT", _ms(d["ttft_p50_s"]), _ms(d["ttft_p99_s"]), _ms(d["ttft_mean_s"]))
    t.add_row("TPOT", _ms(d["tpot_p50_s"]), _ms(d["tpot_p99_s"]), _ms(d["tpot_mean_s"]))
    t.add_row("end to end", _ms(d["e2e_p50_s"]), _ms(d["e2e_p99_s"]), _ms(d["e2e_mean_s"]))
    console.print(t)
    pc = d.get("prefix_cache")
    if pc is not None:
        console.print(f"prefix cache: {100 * pc['hit_rate']:.0f}% of prompt tokens reused "
                      f"({pc['groups']} shared prefixes; simulated, not validated)")
    console.print(
        f"{d['throughput_tokens_per_s']:,.0f} output tokens/s "
        f"({d['tokens_per_s_per_gpu']:,.0f} per GPU), {d['requests_per_s']:.2f} requests/s, "
        f"KV cache {100 * d['kv_cache_utilization']:.0f}% used on average "
        f"(peak {100 * d['kv_cache_utilization_max']:.0f}%), {d['preemptions']} preemptions"
    )


@app.command("plan")
def plan_cmd(
    ctx: typer.Context,
    model: str = typer.Option(..., "--model", help="Catalog id or path to a model YAML."),
    qps: float = typer.Option(..., "--qps", help="Target requests/s for the whole fleet."),
    input_len: int = typer.Option(..., "--input-len", help="Prompt tokens (mean)."),
    output_len: int = typer.Option(..., "--output-len", help="Output tokens (mean)."),
    ttft_p99: float = typer.Option(..., "--ttft-p99", help="SLO: p99 time to first token, s."),
    tpot_p99: float = typer.Option(..., "--tpot-p99", help="SLO: p99 time per output token, s."),
    gpu: str = typer.Option(
        "choose", "--gpu", help="GPU catalog id, or 'choose' for every calibrated GPU."
    ),
    precision: Precision = typer.Option(Precision.bf16, "--precision", help="Weights."),
    kv_precision: Precision = typer.Option(Precision.bf16, "--kv-precision", help="KV cache."),
    length_dist: str = typer.Option("fixed", "--length-dist", help="fixed or lognormal."),
    length_cv: float = typer.Option(1.0, "--length-cv", help="Lognormal lengths: std / mean."),
    num_requests: int | None = typer.Option(
        None, "--num-requests", help="Requests per capacity simulation (default 2,000; with "
        "--engine, per p99 check, 800)."
    ),
    seed: int = typer.Option(0, "--seed"),
    engine: str | None = typer.Option(
        None, "--engine", help="Serving engine from the catalog (trtllm, vllm, sglang, "
        "optionally @VERSION): search aggregated layouts with attention DP and MoE EP and "
        "disaggregated prefill/decode splits on one --gpu, and say whether disaggregation "
        "pays."),
    gemm_quant: str | None = typer.Option(None, "--gemm-quant", help="--engine: dense "
                                          "weight format (default from --precision)."),
    moe_quant: str | None = typer.Option(None, "--moe-quant", help="--engine: expert "
                                         "weight format."),
    expert_imbalance: float | None = typer.Option(
        None, "--expert-imbalance", help="--engine, MoE models: the busiest expert-parallel "
        "GPU's routed tokens over the mean (1-64; default 1.0, balanced routing), charged to "
        "every layout with expert parallelism."),
    mixed_chunk: bool = typer.Option(
        False, "--mixed-chunk", help="--engine sglang: --enable-mixed-chunk on the aggregated "
        "layouts (a prompt's chunk joins the running decode batch)."),
    max_tokens: int | None = typer.Option(
        None, "--max-tokens", help="--engine: the aggregated layouts' tokens an iteration of a "
        "rank carries at most (vLLM --max-num-batched-tokens, TensorRT-LLM max_num_tokens, "
        "SGLang --chunked-prefill-size; default the engine's)."),
    cpu_offload_gb: float | None = typer.Option(
        None, "--cpu-offload-gb", help="--engine vllm or sglang on a Grace superchip: GiB of "
        "weights each GPU keeps in its CPU's memory (the engines' --cpu-offload-gb), for "
        "every layout searched. Not validated."),
    prefix_len: int | None = typer.Option(
        None, "--prefix-len", help="The first tokens of every prompt (of --input-len) it "
        "shares with the other prompts of its group (a system prompt, a document many "
        "questions ask about); the plan sizes the fleet with the replicas' prefix caches "
        "reusing them (with --engine, and says what that saves)."),
    prefix_groups: int | None = typer.Option(
        None, "--prefix-groups", help="With --prefix-len: how many distinct shared "
        "prefixes the prompts draw from, uniformly (default 1)."),
    kv_offload_gb: float | None = typer.Option(
        None, "--kv-offload-gb", help="--engine, with --prefix-len: GiB of CPU memory each "
        "GPU gives the KV cache's host tier, for every layout searched; the plan says what "
        "the tier saves."),
    router: str | None = typer.Option(
        None, "--router", help="--engine: how requests are shared among a deployment's "
        "ranks and copies: least_outstanding (default) or cache_aware (SGLang's router: each "
        "shared prefix kept where it is held while the load stays balanced; with "
        "--prefix-len, each copy then sees its share of the prefixes)."),
    margin: str | None = typer.Option(
        None, "--margin", help="--engine: hold each deployment's p99s to the SLOs "
        "multiplied by how its measured rows (validate --table serving-silicon) lean against "
        "the model: none (default: the model's figures), median, or p90 (the ratio one "
        "measured row in ten exceeds). A margin never loosens an SLO."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Cheapest fleet (GPU type, TP, replicas) serving --qps within the p99 SLOs, found by
    simulating one replica at increasing load; with the throughput-vs-interactivity front.
    With --engine: the cheapest aggregated and disaggregated deployments on a catalog engine,
    and whether disaggregation pays."""
    from clusterwright.plan.serving import plan

    lim.within(("--qps", qps, lim.QPS), ("--input-len", input_len, lim.SEQ_TOKENS),
               ("--output-len", output_len, lim.SEQ_TOKENS), ("--ttft-p99", ttft_p99, lim.SLO_S),
               ("--tpot-p99", tpot_p99, lim.SLO_S), ("--length-cv", length_cv, lim.LENGTH_CV),
               ("--num-requests", num_requests, lim.PLAN_REQUESTS), ("--seed", seed, lim.SEED),
               ("--max-tokens", max_tokens, lim.ITERATION_TOKENS),
               ("--cpu-offload-gb", cpu_offload_gb, lim.CPU_OFFLOAD_GIB),
               ("--prefix-len", prefix_len, lim.SEQ_TOKENS),
               ("--prefix-groups", prefix_groups, lim.PREFIX_GROUPS),
               ("--kv-offload-gb", kv_offload_gb, lim.KV_OFFLOAD_GIB))
    lim.nonempty(("--engine", engine), ("--gemm-quant", gemm_quant), ("--moe-quant", moe_quant))
    if engine is None and (gemm_quant or moe_quant):
        fail("--gemm-quant/--moe-quant: only with --engine")
    if engine is None and expert_imbalance is not None:
        fail("--expert-imbalance: only with --engine (a catalog serving engine)")
    if engine is None and mixed_chunk:
        fail("--mixed-chunk: only with --engine sglang")
    if engine is None and max_tokens is not None:
        fail("--max-tokens: only with --engine (a catalog serving engine)")
    if engine is None and cpu_offload_gb is not None:
        fail("--cpu-offload-gb: only with --engine vllm or sglang")
    lim.nonempty(("--router", router), ("--margin", margin))
    # Without --engine the replicas' own prefix caches serve --prefix-len; the host tier,
    # the router and the measured rows' margin are the engines'
    for flag, given in (("--kv-offload-gb", kv_offload_gb), ("--router", router),
                        ("--margin", margin)):
        if engine is None and given is not None:
            fail(f"{flag}: only with --engine (a catalog serving engine)")
    check_prefix_flags(prefix_len, prefix_groups, kv_offload_gb, input_len)
    if engine is not None:
        if kv_precision != Precision.bf16:
            fail("--kv-precision: only without --engine (the engine keeps its KV cache in its "
                 "own format: its quantized one with 8- or 4-bit weights, else 16-bit)")
        if length_dist != "fixed" or length_cv != 1.0:
            fail("--length-dist/--length-cv: only without --engine (the engine path plans "
                 "for prompts and outputs of the given lengths)")
        _positive(qps=qps, input_len=input_len, output_len=output_len, ttft_p99=ttft_p99,
                  tpot_p99=tpot_p99)
        plan_engine_cli(ctx, model=model, gpu=gpu, engine=engine, qps=qps,
                        input_len=input_len, output_len=output_len, ttft=ttft_p99,
                        tpot=tpot_p99, precision=precision.value, gemm_quant=gemm_quant,
                        moe_quant=moe_quant, as_json=as_json,
                        expert_imbalance=expert_imbalance, mixed_chunk=mixed_chunk,
                        max_tokens=max_tokens, cpu_offload_gb=cpu_offload_gb or 0.0,
                        prefix_len=prefix_len or 0, prefix_groups=prefix_groups or 1,
                        kv_offload_gb=kv_offload_gb or 0.0,
                        requests=800 if num_requests is None else num_requests, seed=seed,
                        router=router or "least_outstanding", margin=margin or "none")
        return
    num_requests = 2000 if num_requests is None else num_requests

    _positive(qps=qps, input_len=input_len, output_len=output_len, ttft_p99=ttft_p99,
              tpot_p99=tpot_p99, num_requests=num_requests)
    with user_errors():
        cat = state(ctx).catalog()
    arch = _arch(cat, model)
    _check_ids(cat, None if gpu == "choose" else gpu, None)
    with user_errors(FIELD_FLAGS, name_flags=True), \
            progress_bar("simulating layouts (GPU x TP)") as tick:
        res = plan(
            cat, arch, qps, input_len, output_len, ttft_p99, tpot_p99, gpu=gpu,
            precision=precision, kv_precision=kv_precision, num_requests=num_requests,
            seed=seed, length_dist=length_dist, length_cv=length_cv, progress=tick,
            prefix_len=prefix_len or 0, prefix_groups=prefix_groups or 1,
        )
    payload = res.as_dict()
    best = payload.get("best")
    if best is not None and best.get("price_offer"):
        from clusterwright.plan.pricing import cloud_price

        choice = cloud_price(cat, best["gpu"])
        payload["pricing"] = choice.as_dict() if choice is not None else None
    if as_json:
        emit_json(payload)
    else:
        _render_plan(payload)


def _render_plan(d: dict[str, Any]) -> None:
    slo = d["slo"]
    console.print(
        f"[bold]{d['model']}[/] at {d['qps']:g} req/s ({d['input_len']} in, "
        f"{d['output_len']} out), SLO p99 TTFT {_ms(slo['ttft_p99_s'])}, "
        f"p99 TPOT {_ms(slo['tpot_p99_s'])}"
    )
    b = d["best"]
    if b is None:
        a = d["best_achievable"]
        c = a["closest"]
        console.print(
            f"[bold red]infeasible:[/] no configuration meets both SLOs. Best p99s at light "
            f"load: TTFT {_ms(a['ttft_p99_s'])}, TPOT {_ms(a['tpot_p99_s'])}; closest: "
            f"{c['gpu']} tp {c['tp']} (TTFT {_ms(c['ttft_p99_s'])}, TPOT "
            f"{_ms(c['tpot_p99_s'])})"
        )
    else:
        est = " [yellow]estimate[/]" if (d.get("pricing") or {}).get("estimate") else ""
        cost = (
            f", {usd(b['usd_per_hour'])}/h at {usd(b['usd_per_gpu_hour'])}/GPU-h "
            f"({b['price_offer']}{est}), {usd(b['cost_per_million_tokens_usd'])} per million "
            "output tokens"
            if b["usd_per_hour"] is not None
            else " (no cloud price in the catalog)"
        )
        ep = f" ep {b['ep']}" if b["ep"] > 1 else ""
        console.print(
            f"best: {b['replicas']} x {b['gpu']} tp {b['tp']}{ep} = {b['gpus']} GPUs, "
            f"{b['qps_per_replica']:.2f} req/s per replica (p99 TTFT {_ms(b['ttft_p99_s'])}, "
            f"TPOT {_ms(b['tpot_p99_s'])}){cost}"
        )
        if b.get("prefix_hit_rate") is not None:
            console.print(f"prefix cache: {100 * b['prefix_hit_rate']:.0f}% of prompt tokens "
                          "reused at capacity, each replica seeing every shared prefix "
                          "(simulated, not validated)")
    t = Table(title="candidates", title_justify="left")
    for col in ("GPU", "tp", "ep", "req/s/replica", "replicas", "GPUs", "$/h", "$/M tok"):
        t.add_column(col, justify="right")
    for c in d["candidates"]:
        t.add_row(
            c["gpu"], str(c["tp"]), str(c["ep"]), f"{c['qps_per_replica']:.2f}",
            str(c["replicas"] or "-"), str(c["gpus"] or "-"),
            f"{c['usd_per_hour']:,.2f}" if c["usd_per_hour"] is not None else "-",
            f"{c['cost_per_million_tokens_usd']:.2f}"
            if c["cost_per_million_tokens_usd"] is not None else "-",
        )
    console.print(t)
    if d["rejected"]:
        console.print("rejected: " + ", ".join(f"{k} {v}" for k, v in d["rejected"].items()))
    if not d["pareto"]:
        return
    p = Table(title="Pareto front (points within the TTFT SLO)", title_justify="left")
    for col in ("GPU", "tp", "req/s/replica", "tok/s/GPU", "tok/s/user", "meets SLO"):
        p.add_column(col, justify="right")
    for x in d["pareto"]:
        p.add_row(x["gpu"], str(x["tp"]), f"{x['qps_per_replica']:.2f}",
                  f"{x['tokens_per_s_per_gpu']:,.0f}", f"{x['tokens_per_s_per_user']:.1f}",
                  "yes" if x["meets_slo"] else "no")
    console.print(p)
