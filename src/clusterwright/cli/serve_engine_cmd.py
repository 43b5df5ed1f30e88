"""``serve estimate --engine`` and ``serve plan --engine``: deployments on a catalog serving
engine (parsing, error wording and rendering; the work is in ``plan/serving_engine``)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import typer
from rich.table import Table

from clusterwright.catalog.registry import Catalog, resolve_model
from clusterwright.catalog.schema import ModelArch
from clusterwright.catalog.stacks import (
    BATCH_WAIT_ITERATIONS,
    EXPERT_IMBALANCE_MAX,
    ServingEngine,
)
from clusterwright.cli import limits as lim
from clusterwright.cli.common import console, emit_json, fail, field_flag_message, state
from clusterwright.errors import ClusterwrightError, InputError
from clusterwright.plan.serving_deployment import Role
from clusterwright.sim.serving_steady import SATURATED_SENSITIVITY
from clusterwright.spec.scenario import MAX_BATCH

ROLE_KEYS = ("workers", "tp", "pp", "adp", "moe_tp", "moe_ep", "max_batch", "max_tokens",
             "stream_interval")
# Tokens one iteration of a rank may carry (the --max-tokens bound)
MAX_ROLE_TOKENS = int(lim.ITERATION_TOKENS.high)
# Serving field paths whose flag is not ``--`` + the field with dashes (serve_cmd uses it too).
FIELD_FLAGS = {"qps_or_concurrency": "--qps/--concurrency",
               "request_len": "--input-len/--output-len", "ttft_p99_s": "--ttft-p99",
               "tpot_p99_s": "--tpot-p99"}
# Library fields and the flags users typed for them.
FLAGS = {"tp": "--tp", "pp": "--pp", "adp": "--adp", "moe_tp": "--moe-tp",
         "moe_ep": "--moe-ep", "engine": "--engine", "precision": "--precision",
         "gemm_quant": "--gemm-quant", "moe_quant": "--moe-quant",
         "concurrency": "--concurrency", "qps": "--qps", "ttft_slo": "--ttft-p99",
         "speculative": "--speculative", "cpu_offload_gb": "--cpu-offload-gb",
         "kv_offload_gb": "--kv-offload-gb", "prefix_len": "--prefix-len",
         "prefix_groups": "--prefix-groups", "router": "--router", "margin": "--margin"}


@contextmanager
def engine_errors() -> Iterator[None]:
    """Library errors worded with the flag the user typed (``prefill.tp`` -> ``--prefill:
    tp``), exit code 2."""
    try:
        yield
    except InputError as exc:
        msg, f = str(exc), exc.field or ""
        role, _, key = f.partition(".")
        if role in ("prefill", "decode") and key:
            fail(f"--{role}: {msg.removeprefix(f + ': ')}")
        if f in FLAGS:
            fail(f"{FLAGS[f]}: {msg.removeprefix(f + ': ')}")
        fail(field_flag_message(exc, FIELD_FLAGS))
    except ClusterwrightError as exc:
        fail(str(exc))


def parse_role(flag: str, spec: str) -> dict[str, int | None]:
    """``workers=2,tp=4,adp=1,moe_ep=4`` (``workers=auto``: sized for the load;
    ``max_batch``: requests a data-parallel rank batches at most, the engine's max batch
    size as the deployment sets it; ``max_tokens``: tokens one iteration of a rank carries
    at most, TensorRT-LLM's ``max_num_tokens`` or vLLM's ``max_num_batched_tokens``;
    ``stream_interval``: tokens between two streamed chunks, SGLang's ``--stream-interval``)."""
    out: dict[str, int | None] = {}
    if not spec.replace(",", "").strip():
        fail(f"{flag}: empty: give the role as key=value pairs (e.g. workers=1,tp=4)")
    for part in (p.strip() for p in spec.split(",") if p.strip()):
        key, eq, value = part.partition("=")
        key = key.strip().replace("-", "_")
        if not eq or key not in ROLE_KEYS:
            fail(f"{flag}: {part!r} is not key=value with a key among {', '.join(ROLE_KEYS)}")
        if key in out:
            fail(f"{flag}: {key} is given twice")
        if key == "workers" and value.strip() == "auto":
            out[key] = None
            continue
        try:
            n = int(value)
        except ValueError:
            fail(f"{flag}: {key}={value!r} is not an integer")
        if n < 1:
            fail(f"{flag}: {key}={n} must be >= 1")
        if key == "workers" and n > lim.REPLICAS.high:
            # Each worker's ranks are simulated replicas (--replicas' bound)
            fail(f"{flag}: workers={n} is above {int(lim.REPLICAS.high):,} workers a role")
        if key == "max_batch" and n > MAX_BATCH:
            fail(f"{flag}: max_batch={n} is above {MAX_BATCH:,} requests")
        if key == "max_tokens" and n > MAX_ROLE_TOKENS:
            fail(f"{flag}: max_tokens={n} is above {MAX_ROLE_TOKENS:,} tokens an iteration")
        if key == "stream_interval" and n > BATCH_WAIT_ITERATIONS:
            fail(f"{flag}: stream_interval={n} is above {BATCH_WAIT_ITERATIONS:,} tokens")
        out[key] = n
    out.setdefault("workers", 1)
    return out


def parse_speculative(spec: str) -> tuple[int, float, float | None]:
    """``K:ACCEPT[:COST]``: draft tokens, acceptance rate, and the cost of an iteration over
    a plain one (``3:0.7:1.3``); without COST (``3:0.7``) the model costs the drafts as
    DeepSeek-style MTP: k passes of one decoder layer and the LM head, and the verification
    of k extra tokens per sequence."""
    parts = spec.split(":")
    if len(parts) not in (2, 3):
        fail(f"--speculative: {spec!r} is not K:ACCEPT or K:ACCEPT:COST (e.g. 3:0.7)")
    try:
        return (int(parts[0]), float(parts[1]),
                float(parts[2]) if len(parts) == 3 else None)
    except ValueError:
        fail(f"--speculative: {spec!r} is not K:ACCEPT or K:ACCEPT:COST (e.g. 3:0.7)")


def parse_batch_wait(text: str) -> tuple[int, float]:
    """``ITERATIONS:RATIO``: TensorRT-LLM's ``batch_wait_timeout_iters`` and
    ``batch_wait_max_tokens_ratio`` (``20:0.9``)."""
    parts = text.split(":")
    try:
        if len(parts) != 2:
            raise ValueError
        iters, ratio = int(parts[0]), float(parts[1])
    except ValueError:
        fail(f"--batch-wait: {text!r} is not ITERATIONS:RATIO (e.g. 20:0.9)")
    if not 0 <= iters <= BATCH_WAIT_ITERATIONS:
        fail(f"--batch-wait: {iters} iterations is outside 0 .. {BATCH_WAIT_ITERATIONS:,}")
    if not 0.0 <= ratio <= 1.0:  # also refuses nan
        fail(f"--batch-wait: ratio {parts[1]} is outside 0 .. 1 (a share of the token budget)")
    return iters, ratio


def with_imbalance(eng: ServingEngine, arch: ModelArch, value: float | None) -> ServingEngine:
    """The engine with ``--expert-imbalance`` (the busiest expert-parallel GPU's routed tokens
    over the mean) where given; a dense model or a value outside 1-64 is refused."""
    if value is None:
        return eng
    if not 1.0 <= value <= EXPERT_IMBALANCE_MAX:  # also refuses nan
        fail(f"--expert-imbalance: {value:g} is outside 1 .. {EXPERT_IMBALANCE_MAX:g} (the "
             "busiest GPU's routed tokens over the mean)")
    if not arch.is_moe:
        fail(f"--expert-imbalance: {arch.id} has no routed experts")
    return eng.model_copy(update={"expert_imbalance": value})


def with_mixed_chunk(eng: ServingEngine, on: bool, disaggregated: bool = False,
                     speculative: bool = False) -> ServingEngine:
    """The engine with SGLang's ``--enable-mixed-chunk`` where asked; refused on another
    engine, a disaggregated deployment (its prefill workers run no decodes to mix with) and
    under speculative decoding (SGLang's server_args turn mixed chunks off there)."""
    if not on:
        return eng
    if eng.backend != "sglang":
        fail(f"--mixed-chunk: mixing a prompt's chunk into the decode batch is SGLang's "
             f"option; {eng.id} schedules its own way")
    if disaggregated:
        fail("--mixed-chunk: an aggregated server's option (a disaggregated prefill worker "
             "has no decode batch to mix into)")
    if speculative:
        fail("--mixed-chunk: SGLang turns mixed chunks off under speculative decoding; "
             "give one of --mixed-chunk and --speculative")
    return eng.model_copy(update={"mixed_chunk": True})


def check_prefix_flags(prefix_len: int | None, prefix_groups: int | None,
                       kv_offload_gb: float | None, input_len: int) -> None:
    """--prefix-groups and --kv-offload-gb need --prefix-len, which must fit the prompt
    (``serve estimate`` and ``serve plan`` alike)."""
    if prefix_len is None and prefix_groups is not None:
        fail("--prefix-groups: give --prefix-len, the tokens the prompts of a group share")
    if prefix_len is None and kv_offload_gb is not None:
        fail("--kv-offload-gb: the host tier serves prompts that share a prefix; give "
             "--prefix-len")
    if prefix_len is not None and prefix_len > input_len:
        fail(f"--prefix-len: {prefix_len} tokens exceed the {input_len}-token prompt "
             "(--input-len) they begin")


def check_budget(eng: ServingEngine, max_tokens: int | None, input_len: int) -> None:
    """``--max-tokens`` below the prompt on an engine that takes prompts whole is refused."""
    if max_tokens is not None and not eng.chunked_prefill and max_tokens < input_len:
        fail(f"--max-tokens: {eng.id} takes a prompt whole (no chunked prefill): "
             f"{max_tokens:,} tokens an iteration cannot hold a {input_len:,}-token prompt")


def _ms(s: float | None) -> str:
    return "-" if s is None or s != s else f"{1e3 * s:.1f} ms"


def estimate_engine_cli(ctx: typer.Context, *, model: str, gpu: str, engine: str, tp: int,
                        pp: int, adp: int, moe_tp: int | None, moe_ep: int | None,
                        precision: str, gemm_quant: str | None, moe_quant: str | None,
                        prefill: str | None, decode: str | None, qps: float | None,
                        concurrency: int | None, input_len: int, output_len: int,
                        length_dist: str, length_cv: float, num_requests: int, seed: int,
                        replicas: int, ttft_slo: float | None, tpot_slo: float | None,
                        simulate_requests: bool, as_json: bool,
                        speculative: str | None = None,
                        benchmark_rounds: int | None = None,
                        max_batch: int | None = None,
                        batch_wait: str | None = None,
                        recv_interval: int | None = None,
                        async_scheduling: bool | None = None,
                        expert_imbalance: float | None = None,
                        mixed_chunk: bool = False,
                        max_tokens: int | None = None,
                        cpu_offload_gb: float = 0.0, prefix_len: int = 0,
                        prefix_groups: int = 1, kv_offload_gb: float = 0.0,
                        router: str = "least_outstanding") -> None:
    from clusterwright.plan.serving_engine import (
        deployment,
        engine_of,
        estimate_engine,
        layout,
    )
    from clusterwright.plan.serving_replica import workload

    if (prefill is None) != (decode is None):
        fail("--prefill/--decode: a disaggregated deployment needs both roles")
    if not simulate_requests and concurrency is None:
        fail("--steady-only: the steady state is a closed loop; give --concurrency")
    if benchmark_rounds is not None and (concurrency is None or length_dist != "fixed"):
        fail("--benchmark-rounds: a benchmark's rounds are a closed loop of fixed lengths; "
             "give --concurrency (and --length-dist fixed)")
    if not simulate_requests and length_dist != "fixed":
        fail("--steady-only: the steady state is for prompts and outputs of fixed lengths; "
             "drop --length-dist or simulate")
    spec = parse_speculative(speculative) if speculative else None
    wait = parse_batch_wait(batch_wait) if batch_wait is not None else None
    cat: Catalog = state(ctx).catalog()
    with engine_errors():
        arch = resolve_model(cat, model)
        g = cat.gpu(gpu)
        eng = engine_of(cat, engine)
        if wait is not None:
            if eng.backend != "trtllm":
                fail(f"--batch-wait: batch waiting is TensorRT-LLM's; {eng.id} has none")
            eng = eng.model_copy(update={"batch_wait_iterations": wait[0],
                                         "batch_wait_tokens_ratio": wait[1]})
        if recv_interval is not None:
            if eng.backend != "sglang":
                fail(f"--recv-interval: request polling is SGLang's; {eng.id} has none")
            if adp != 1 or prefill is not None:
                fail("--recv-interval: SGLang polls this way only without attention DP and "
                     "on an aggregated server")
            eng = eng.model_copy(update={"scheduler_recv_interval": recv_interval})
        eng = with_imbalance(eng, arch, expert_imbalance)
        eng = with_mixed_chunk(eng, mixed_chunk, prefill is not None, spec is not None)
        if async_scheduling is not None:
            if eng.backend != "vllm":
                fail("--async-scheduling/--sync-scheduling: the catalog has a host cost per "
                     f"sequence for vLLM only; {eng.id} overlaps its scheduler")
            eng = eng.model_copy(update={"async_scheduling": async_scheduling})
        if prefill is not None and decode is not None:
            roles = []
            for flag, text in (("--prefill", prefill), ("--decode", decode)):
                kv = parse_role(flag, text)
                par = layout(arch, kv.get("tp") or 1, kv.get("pp") or 1, kv.get("adp") or 1,
                             kv.get("moe_tp"), kv.get("moe_ep"), flag[2:] + ".", eng.pads_heads)
                roles.append(Role(par, kv["workers"], kv.get("max_batch"),
                                  kv.get("max_tokens"), kv.get("stream_interval")))
            dep = deployment(cat, arch, g, eng, precision, gemm_quant, moe_quant,
                             prefill=roles[0], decode=roles[1], speculative=spec,
                             cpu_offload_gb=cpu_offload_gb, kv_offload_gb=kv_offload_gb)
        else:
            par = layout(arch, tp, pp, adp, moe_tp, moe_ep, pads_heads=eng.pads_heads)
            check_budget(eng, max_tokens, input_len)
            dep = deployment(cat, arch, g, eng, precision, gemm_quant, moe_quant,
                             agg=Role(par, replicas, max_batch, max_tokens), speculative=spec,
                             cpu_offload_gb=cpu_offload_gb, kv_offload_gb=kv_offload_gb)
        w = workload(input_len, output_len, qps=qps, concurrency=concurrency,
                     num_requests=num_requests, seed=seed, length_dist=length_dist,
                     length_cv=length_cv, max_context=arch.max_seq_len,
                     prefix_len=prefix_len, prefix_groups=prefix_groups)
        if input_len + output_len > arch.max_seq_len:
            raise InputError(f"input_len: {input_len} + {output_len} tokens exceed the "
                             f"{arch.max_seq_len}-token context of {arch.id}",
                             field="input_len")
        est = estimate_engine(cat, dep, w, input_len, output_len, simulate_requests,
                              ttft_slo if ttft_slo is not None else math.inf,
                              tpot_slo if tpot_slo is not None else math.inf,
                              benchmark_rounds, router)
    payload = est.as_dict()
    if as_json:
        emit_json(payload)
    else:
        render_estimate(payload)


def _roles_text(dep: dict[str, Any]) -> str:
    def one(r: dict[str, Any]) -> str:
        moe = f" moe tp {r['moe_tp']} ep {r['moe_ep']}" if r["moe_ep"] > 1 else ""
        if moe:
            moe += f" ({r['expert_slots_per_gpu']} expert slots a GPU)"
        return (f"{r['workers']} x (tp {r['tp']} x adp {r['adp']} x pp {r['pp']}{moe}, "
                f"{r['gpus_per_worker']} GPUs, batch <= {r['max_batch']} a rank)")
    if dep["mode"] == "agg":
        wait, recv = dep.get("batch_wait"), dep.get("recv_interval")
        return "aggregated " + one(dep["agg"]) + (
            f", prompts held up to {wait['iterations']} iterations or "
            f"{wait['tokens_ratio']:.0%} of the token budget" if wait else "") + (
            f", new prompts taken every {recv} decode iterations" if recv else "") + (
            ", prompt chunks mixed into the decode batch" if dep.get("mixed_chunk") else "")
    return f"prefill {one(dep['prefill'])}, decode {one(dep['decode'])}"


SIM_GAP = 0.25  # relative difference of the two mean TTFTs worth pointing out


def _direction(median_error: float | None, p10: float | None = None,
               p90: float | None = None) -> str:
    """Which way the model missed most of the regime's measured rows: a median signed error
    of (model - measured) / measured, read as how the measurement compares with the
    estimate (a median within 5 % is no direction); and, where the regime records the
    errors' 10th and 90th percentiles, the range 8 rows in 10 measured in."""
    parts = []
    if median_error is not None and abs(median_error) >= 0.05:
        ratio = 1.0 / (1.0 + median_error)
        side = "above" if median_error < 0 else "below"
        parts.append(f"the median row measured {ratio:.2f}x the model: {side} it")
    if p10 is not None and p90 is not None:
        parts.append(f"8 rows in 10 measured {1.0 / (1.0 + p90):.2f}-{1.0 / (1.0 + p10):.2f}x")
    return f" ({'; '.join(parts)})" if parts else ""


def _sim_gap(d: dict[str, Any]) -> str:
    """A sentence when the request-level simulation's mean TTFT and the steady state's
    differ by more than SIM_GAP, saying which one was checked against measurements, else
    ""."""
    st = d.get("steady_state")
    if st is None or "ttft_mean_s" not in d or st["ttft_mean_s"] <= 0:
        return ""
    sim, steady = d["ttft_mean_s"], st["ttft_mean_s"]
    if abs(sim / steady - 1.0) <= SIM_GAP:
        return ""
    return (f"the simulated mean TTFT, {_ms(sim)}, is {sim / steady:.2g}x the steady "
            f"state's, {_ms(steady)}; the steady state is what was checked against measured "
            "runs (the simulation forms its own clusters and queues on the same step model)")


# How the breakdown names each part (keys of ``iteration_breakdown``'s parts_s and of the
# steady state's ttft_parts_s), in print order
_PART_NAMES = (("dense", "dense GEMMs"), ("experts", "experts"), ("attention", "attention"),
               ("communication", "communication"), ("fixed", "fixed overheads"),
               ("host", "host scheduling"), ("speculative", "drafts and verification"))
_TTFT_NAMES = (("frontend", "front end"), ("slot_wait", "waiting for a slot"),
               ("queue_wait", "waiting behind other prompts and the iterations to its token"),
               ("handoff", "hand-off and KV transfer"),
               ("prefill", "the prefill iterations it rides in"),
               ("first_chunk", "first streamed chunk"))


def _ms_figure(s: float) -> str:
    """Seconds as milliseconds to three figures, whole milliseconds from 100 up."""
    ms = s * 1e3
    return f"{ms:,.0f}" if ms >= 100 else f"{ms:.3g}"


def _parts_text(parts: dict[str, float], names: tuple[tuple[str, str], ...]) -> str:
    """Non-zero parts (seconds) as "name x", in ``names``' order."""
    return ", ".join(f"{label} {_ms_figure(parts[k])}" for k, label in names
                     if parts.get(k, 0.0) > 5e-7)


def breakdown_lines(st: dict[str, Any]) -> list[str]:
    """Where the steady state's TTFT and its iterations spend their time, in ms."""
    out = [f"TTFT {_ms(st['ttft_mean_s'])}: "
           f"{_parts_text(st['ttft_parts_s'], _TTFT_NAMES)} ms"]
    it = st.get("iterations")
    if it:
        p, dec = it["prefill"], it["decode"]
        out.append(f"one prompt alone ({p['prompt_tokens']:,} tokens): "
                   f"{_ms(p['iteration_s'])} = {_parts_text(p['parts_s'], _PART_NAMES)} ms")
        per = ("" if dec["tokens_per_iteration"] == 1.0
               else f", {dec['tokens_per_iteration']:.2f} tokens a sequence an iteration")
        seqs = "sequence" if dec["batch_per_rank"] == 1 else "sequences"
        out.append(f"a decode iteration ({dec['batch_per_rank']:.0f} {seqs} a rank at "
                   f"{dec['context_tokens']:,.0f} tokens of context{per}): "
                   f"{_ms(dec['iteration_s'])} = {_parts_text(dec['parts_s'], _PART_NAMES)} ms")
    return out


def render_estimate(d: dict[str, Any]) -> None:
    load = f"{d['qps']:g} req/s" if d["qps"] is not None else f"{d['concurrency']} clients"
    console.print(
        f"[bold]{d['model']}[/] on {d['gpus']} {d['gpu']} under {d['engine_name']}: "
        f"{_roles_text(d['deployment'])}; {d['gemm_quant']} GEMMs, {d['moe_quant']} experts, "
        f"{d['kv_cache']} KV cache; {load}, {d['input_len']} in / {d['output_len']} out")
    for n in d["notes"]:
        console.print(f"  note: {n}")
    st = d.get("steady_state")
    if st is not None:
        console.print(
            f"steady state: TTFT {_ms(st['ttft_mean_s'])}, TPOT {_ms(st['tpot_mean_s'])} "
            f"(means), {st['requests_per_s']:.2f} requests/s, "
            f"{st['throughput_tokens_per_s']:,.0f} output tokens/s; {st['detail']}")
        for line in breakdown_lines(st):
            console.print(f"  {line}")
        k = st.get("ttft_sensitivity")
        if k is not None and k >= SATURATED_SENSITIVITY:
            what = ("the prefill workers at their capacity" if st["saturated_by"] == "prefill"
                    else "clients waiting for a batch slot")
            console.print(
                f"saturated ({what}): the rate is fixed, and TTFT is the clients over the rate "
                f"less the decode time; each 1 % of error in the rate moves TTFT by about "
                f"{k:.0f} %: read it as a queue's length, not a latency")
        b = st.get("benchmark")
        if b is not None:
            console.print(
                f"a benchmark of {b['rounds']} requests per client, every client starting at "
                f"once on an idle deployment, measures mean TTFT {_ms(b['ttft_mean_s'])} (its "
                f"first round an opening wave)")
    if "ttft_p50_s" in d:
        t = Table(title="simulated (not validated)", title_justify="left")
        for col in ("", "p50", "p99", "mean"):
            t.add_column(col, justify="right")
        t.add_row("TTFT", _ms(d["ttft_p50_s"]), _ms(d["ttft_p99_s"]), _ms(d["ttft_mean_s"]))
        t.add_row("TPOT", _ms(d["tpot_p50_s"]), _ms(d["tpot_p99_s"]), _ms(d["tpot_mean_s"]))
        console.print(t)
        console.print(f"{d['throughput_tokens_per_s']:,.0f} output tokens/s "
                      f"({d['tokens_per_s_per_gpu']:,.0f} per GPU), "
                      f"{d['requests_per_s']:.2f} requests/s, {d['preemptions']} preemptions")
    pc = d.get("prefix_cache")
    if pc is not None:
        host = (f", {100 * pc['host_hit_rate']:.0f}% loaded from the host tier"
                if pc["kv_offload_gib_per_gpu"] else "")
        routed = (", routed by prefix (cache_aware)"
                  if (d.get("sim") or {}).get("router") == "cache_aware" else "")
        console.print(f"prefix cache: {100 * pc['hit_rate']:.0f}% of prompt tokens reused"
                      f"{host} ({pc['groups']} shared prefixes of {pc['prefix_len']:,} tokens"
                      f"{routed})")
        b = pc.get("without_host_tier")
        if b is not None:
            console.print(f"  without the host tier: {100 * b['hit_rate']:.0f}% reused, TTFT "
                          f"mean {_ms(b['ttft_mean_s'])} (p99 {_ms(b['ttft_p99_s'])}) against "
                          f"{_ms(d['ttft_mean_s'])} ({_ms(d['ttft_p99_s'])}), "
                          f"{b['requests_per_s']:.2f} against {d['requests_per_s']:.2f} "
                          "requests/s")
        console.print("  the steady state knows no prefix cache: these are the simulation's")
    v = d["validation"]
    if v["validated"]:
        what = ("the engine's constants, without prefix reuse" if pc is not None
                else "the steady state's means")
        from clusterwright.plan.serving_engine import MODEL_KIND

        kind = f"{MODEL_KIND[v['family']]} " if v.get("family") else ""
        # The layout's own rows, where the table has enough of them; else every layout's
        layout = (f" at tp {v['tp']} x attention-DP {v['attention_dp']}" if v.get("tp")
                  else ", every layout pooled")
        spread = {m: _direction(v[f"{m}_median_error"], v.get(f"{m}_error_p10"),
                              v.get(f"{m}_error_p90")) for m in ("ttft", "tpot")}
        held = (", held out: no constant was fitted on them" if v.get("held_out") else "")
        console.print(f"validated ({what}): {v['rows']} measured "
                      f"{v['engine']} rows of {kind}models on {v['gpu']} ({v['mode']}{layout}"
                      f"{held}): "
                      "TTFT MAPE "
                      f"{100 * v['ttft_mape']:.0f}%{spread['ttft']}, "
                      f"TPOT MAPE {100 * v['tpot_mape']:.0f}%{spread['tpot']}")
    else:
        console.print(f"[yellow]not validated:[/] {v['note']}")
    gap = _sim_gap(d)
    if gap:
        console.print(f"[yellow]note:[/] {gap}")
    if v.get("prompt_note"):
        console.print(f"[yellow]prompt outside the measured rows:[/] {v['prompt_note']}")
    if v.get("family_note"):
        console.print(f"[yellow]model kind outside the measured rows:[/] {v['family_note']}")
    if v.get("architecture_note"):
        console.print(f"[yellow]model outside the fitted rows:[/] {v['architecture_note']}")
    dis = d.get("disaggregation")
    if dis is not None:
        verdict = "[bold]pays[/]" if dis["pays"] else "does not pay"
        console.print(f"disaggregation {verdict}: {dis['reason']}")
        if dis.get("best_split"):
            b = dis["best_split"]
            console.print(f"  best split: {_roles_text(b)}: {b['requests_per_s']:.2f} "
                          f"requests/s, TTFT {_ms(b['ttft_mean_s'])}, TPOT "
                          f"{_ms(b['tpot_mean_s'])}")


def plan_engine_cli(ctx: typer.Context, *, model: str, gpu: str, engine: str, qps: float,
                    input_len: int, output_len: int, ttft: float, tpot: float,
                    precision: str, gemm_quant: str | None, moe_quant: str | None,
                    as_json: bool, expert_imbalance: float | None = None,
                    mixed_chunk: bool = False, max_tokens: int | None = None,
                    cpu_offload_gb: float = 0.0, prefix_len: int = 0,
                    prefix_groups: int = 1, kv_offload_gb: float = 0.0,
                    requests: int = 800, seed: int = 0,
                    router: str = "least_outstanding", margin: str = "none") -> None:
    from clusterwright.plan.serving_engine import engine_of
    from clusterwright.plan.serving_engine_plan import plan_engine

    if gpu == "choose":
        fail("--gpu: with --engine, name one GPU (the engine's constants are shared across "
             "GPUs; to compare GPUs on cost, plan a scenario whose inference workload names "
             "its engine: and lists constraints.gpus, as examples/serve-deepseek-r1-engine.yaml "
             "does)")
    cat: Catalog = state(ctx).catalog()
    with engine_errors():
        arch = resolve_model(cat, model)
        g = cat.gpu(gpu)
        eng = with_mixed_chunk(with_imbalance(engine_of(cat, engine), arch,
                                              expert_imbalance), mixed_chunk)
        check_budget(eng, max_tokens, input_len)
        d = plan_engine(cat, arch, g, eng, qps, input_len, output_len, ttft, tpot,
                        precision, gemm_quant, moe_quant, max_tokens=max_tokens,
                        cpu_offload_gb=cpu_offload_gb, prefix_len=prefix_len,
                        prefix_groups=prefix_groups, kv_offload_gb=kv_offload_gb,
                        requests=requests, seed=seed, router=router, margin=margin)
    if as_json:
        emit_json(d)
        return
    console.print(f"[bold]{d['model']}[/] at {d['qps']:g} req/s on {d['gpu']} under "
                  f"{d['engine']} ({d['input_len']} in, {d['output_len']} out), SLO p99 TTFT "
                  f"{_ms(d['slo']['ttft_p99_s'])}, p99 TPOT {_ms(d['slo']['tpot_p99_s'])}")
    t = Table(title="cheapest deployments", title_justify="left")
    for col in ("mode", "deployment", "copies", "GPUs", "req/s per copy", "TTFT p99",
                "TPOT p99", "validated"):
        t.add_column(col, justify="right" if col in ("copies", "GPUs") else "left")
    for key in ("aggregated", "disaggregated"):
        c = d[key]
        if c is None:
            t.add_row(key, "none meets the SLOs", "-", "-", "-", "-", "-", "-")
            continue
        v = c["validation"]
        val = (f"TTFT {100 * v['ttft_mape']:.0f}% / TPOT {100 * v['tpot_mape']:.0f}% MAPE"
               + (" (held out)" if v.get("held_out") else "") if v["validated"] else "no")
        t.add_row(key, _roles_text(c), str(c["copies"]), str(c["gpus"]),
                  f"{c['requests_per_s_per_copy']:.2f}", _ms(c["ttft_p99_s"]),
                  _ms(c["tpot_p99_s"]), val)
    console.print(t)
    for n in d["choice"]["notes"]:
        console.print(f"note: {n}")
    prompt = d["choice"]["validation"].get("prompt_note")
    if prompt:
        console.print(f"[yellow]prompt outside the measured rows:[/] {prompt}")
    m = d["margin"]
    if m["kind"] != "none":
        held = (f"its model p99s x TTFT {m['ttft_ratio']:.2f} and TPOT {m['tpot_ratio']:.2f} "
                "within the SLOs" if (m["ttft_ratio"], m["tpot_ratio"]) != (1.0, 1.0) else
                "the model's p99s within the SLOs: its regime's measured rows "
                + ("lean no higher" if d["choice"]["validation"]["validated"]
                   else "do not exist"))
        what = "median" if m["kind"] == "median" else "ratio one row in ten exceeds"
        console.print(f"sized with a margin (the measured rows' {what}): {held}")
    lean = d.get("measured_lean")
    if lean and (abs(lean["ttft_ratio"] - 1.0) >= 0.05 or abs(lean["tpot_ratio"] - 1.0) >= 0.05
                 or lean.get("p90")):
        held = "still meets" if lean["meets_slo"] else "[yellow]misses[/]"
        rows = ("rows (held out: no constant was fitted on them)"
                if d["choice"]["validation"].get("held_out") else "rows")
        console.print(f"measured lean: this regime's {rows} measured TTFT "
                      f"{lean['ttft_ratio']:.2f}x "
                      f"and TPOT {lean['tpot_ratio']:.2f}x the model (medians); at those "
                      f"ratios the choice's p99s are TTFT {_ms(lean['ttft_p99_s'])}, TPOT "
                      f"{_ms(lean['tpot_p99_s'])}: it {held} the SLOs")
    tail = (lean or {}).get("p90")
    if tail:
        held = "still meets" if tail["meets_slo"] else "[yellow]misses[/]"
        console.print(f"  at the ratios 1 row in 10 exceeds (TTFT {tail['ttft_ratio']:.2f}x, TPOT "
                      f"{tail['tpot_ratio']:.2f}x): TTFT {_ms(tail['ttft_p99_s'])}, TPOT "
                      f"{_ms(tail['tpot_p99_s'])}: it {held} the SLOs")
    console.print(f"[bold]{d['verdict']}[/] ({d['deployments_evaluated']} deployments "
                  f"evaluated). {d['note']}.")
    if d.get("offload"):
        console.print(f"[bold]{d['offload']['verdict']}[/] (the same search with every "
                      f"layout keeping its weights in HBM).")
    pc = d.get("prefix_cache")
    if pc:
        routed = ", each kept on one copy by a cache-aware router" if (
            d.get("router") == "cache_aware") else ""
        console.print(f"[bold]prefix cache:[/] {pc['verdict']} ({pc['groups']} shared prefixes "
                      f"of {pc['prefix_len']:,} tokens{routed}; the reuse is the simulation's, "
                      "not validated against a measured plan).")
