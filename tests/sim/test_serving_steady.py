"""The closed loop's steady state, solved directly (sim/serving_steady.py)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from clusterwright.catalog.registry import Catalog, load_catalog
from clusterwright.model.serving_step import ServingParallel
from clusterwright.plan.serving_deployment import Deployment, Role, pool
from clusterwright.plan.serving_engine import deployment, layout
from clusterwright.sim.serving import ClusterConfig, EngineConfig, Lengths, Workload, simulate
from clusterwright.sim.serving_steady import (
    Pool,
    aggregated,
    disaggregated,
    opening_wave_s,
    prefill_batch_s,
    prefill_rate_max,
    prompts_per_batch,
    with_opening_wave,
)


@pytest.fixture(scope="module")
def cat() -> Catalog:
    return load_catalog()


def agg_pool(cat: Catalog, model: str, gpu: str, engine: str, tp: int, fmt: str, isl: int,
             osl: int, plain: bool = True) -> Pool:
    """A pool without the engine's TTFT extras (frontend, clusters, late first token) when
    ``plain``: what the event simulator models."""
    e = cat.serving_engine(engine)
    if plain:
        e = e.model_copy(update={"frontend_s": 0.0, "arrival_burst": 0.0,
                                 "first_token_iterations": 0.0})
    arch = cat.model(model)
    dep = deployment(cat, arch, cat.gpu(gpu), e, fmt, agg=Role(layout(arch, tp), 1))
    assert dep.agg is not None
    return pool(cat, dep, dep.agg.par, 1, isl, osl)


def test_littles_law_holds_when_every_client_is_admitted(cat: Catalog) -> None:
    p = agg_pool(cat, "llama-3.1-8b", "h100-sxm", "vllm", 1, "bf16", 1024, 256)
    st = aggregated(p, 32, 1024, 256)
    assert st.slot_wait_s == 0.0
    in_flight = st.requests_per_s * (st.ttft_s + 255 * st.tpot_s)
    assert in_flight == pytest.approx(32, rel=0.05)


def test_more_clients_mean_slower_tokens_and_more_throughput(cat: Catalog) -> None:
    p = agg_pool(cat, "llama-3.1-70b", "b200", "trtllm", 2, "fp8", 1024, 1024)
    a, b = aggregated(p, 8, 1024, 1024), aggregated(p, 64, 1024, 1024)
    assert b.tpot_s > a.tpot_s
    assert b.requests_per_s > 3 * a.requests_per_s
    assert b.decode_batch == pytest.approx(64, rel=0.05)


def test_clients_beyond_the_kv_cache_wait_for_a_slot(cat: Catalog) -> None:
    p = agg_pool(cat, "llama-3.1-70b", "h100-sxm", "trtllm", 2, "fp8", 8192, 1024)
    fits = p.kv_tokens / (8192 + 1024)
    st = aggregated(p, int(fits * 2), 8192, 1024)
    assert st.admitted == pytest.approx(int(fits), abs=1)
    assert st.slot_wait_s > 10 * st.prefill_s


def test_a_request_larger_than_the_cache_is_an_error(cat: Catalog) -> None:
    p = agg_pool(cat, "llama-3.1-8b", "h100-sxm", "vllm", 1, "bf16", 1024, 256)
    with pytest.raises(ValueError, match="does not fit"):
        aggregated(replace(p, kv_tokens=1000.0), 4, 1024, 256)


def test_clusters_lengthen_ttft_only(cat: Catalog) -> None:
    p = replace(agg_pool(cat, "qwen3-32b", "h100-sxm", "sglang", 2, "bf16", 1024, 1024),
                lockstep=False)
    calm = aggregated(p, 64, 1024, 1024)
    bursty = aggregated(replace(p, burst=0.3), 64, 1024, 1024)
    assert bursty.ttft_s > 2 * calm.ttft_s
    assert bursty.tpot_s == pytest.approx(calm.tpot_s)


@pytest.mark.parametrize(("model", "gpu", "engine", "tp", "fmt", "clients", "isl", "osl"), [
    ("llama-3.1-8b", "h100-sxm", "vllm", 1, "bf16", 32, 1024, 256),
    ("llama-3.1-70b", "b200", "trtllm", 2, "fp8", 64, 2048, 512),
    ("qwen3-32b", "h100-sxm", "sglang", 2, "bf16", 128, 1024, 1024),
])
def test_agrees_with_the_event_simulator(cat: Catalog, model: str, gpu: str, engine: str,
                                         tp: int, fmt: str, clients: int, isl: int,
                                         osl: int) -> None:
    """The request-level simulator on the same step model and scheduler: TPOT within 20 %,
    requests/s within 15 %. Its clients all start at once, so prompts come in clusters and
    its TTFT is longer than the steady state's without the cluster term (``burst`` 0)."""
    p = agg_pool(cat, model, gpu, engine, tp, fmt, isl, osl)
    st = aggregated(p, clients, isl, osl)
    ec = EngineConfig(kv_blocks=int(p.kv_tokens // 16), block_size=16,
                      max_num_seqs=min(p.max_seqs, p.budget), max_num_batched_tokens=p.budget,
                      chunked_prefill=p.chunked, admission=p.admission,
                      prefill_first=p.lockstep)
    w = Workload(num_requests=25 * clients, arrival="closed", concurrency=clients,
                 input_len=Lengths("fixed", isl), output_len=Lengths("fixed", osl))
    r = simulate(ClusterConfig(engine=ec), w, p.step)
    warm = 5 * clients
    tpot = float(np.mean(r.per_request["tpot_s"][warm:]))
    ttft = float(np.mean(r.per_request["ttft_s"][warm:]))
    assert st.tpot_s == pytest.approx(tpot, rel=0.2)
    assert st.requests_per_s == pytest.approx(r.requests_per_s, rel=0.15)
    if p.lockstep:
        # Prefill priority: the simulated clients, started together, stay in one cluster,
        # as the lockstep solution has them.
        assert st.ttft_s == pytest.approx(ttft, rel=0.2)
    else:
        assert st.ttft_s <= 1.2 * ttft


def test_a_budget_below_one_prompt_dissolves_the_clusters(cat: Catalog) -> None:
    """At a token budget below one prompt (TPU v6e's vLLM recipe: 512 tokens, 1,000-token
    prompts) every prefill takes iterations of its own, so prompts that arrive together
    finish apart: the cluster term has nothing to act on. The event simulator, whose clients
    all start at once, agrees: its TTFT is no longer than the steady state's without
    clusters, while at 8,192 tokens the same start keeps them clustered."""
    p = replace(agg_pool(cat, "llama-3.1-70b", "h100-sxm", "vllm", 4, "fp8", 1000, 200),
                budget=512)
    calm = aggregated(p, 64, 1000, 200)
    bursty = aggregated(replace(p, burst=0.3), 64, 1000, 200)
    assert bursty.ttft_s == pytest.approx(calm.ttft_s)
    wide = replace(p, budget=8192)
    assert aggregated(replace(wide, burst=0.3), 64, 1000, 200).ttft_s > 1.5 * aggregated(
        wide, 64, 1000, 200).ttft_s

    def simulated(q: Pool) -> float:
        ec = EngineConfig(kv_blocks=int(q.kv_tokens // 16), block_size=16,
                          max_num_seqs=min(q.max_seqs, q.budget),
                          max_num_batched_tokens=q.budget, chunked_prefill=q.chunked,
                          admission=q.admission)
        w = Workload(num_requests=25 * 64, arrival="closed", concurrency=64,
                     input_len=Lengths("fixed", 1000), output_len=Lengths("fixed", 200))
        r = simulate(ClusterConfig(engine=ec), w, q.step)
        return float(np.mean(r.per_request["ttft_s"][5 * 64:]))
    assert simulated(p) <= 1.2 * calm.ttft_s
    assert simulated(wide) > 2.0 * aggregated(wide, 64, 1000, 200).ttft_s


def deepseek_b200(cat: Catalog, decode_workers: int) -> tuple[Deployment, ServingParallel]:
    """DeepSeek-V3 in FP4 on B200s under TensorRT-LLM, TP 8 x EP 8 workers: one prefill
    worker and ``decode_workers`` decode workers."""
    arch = cat.model("deepseek-v3")
    par = layout(arch, tp=8, moe_ep=8)
    return deployment(cat, arch, cat.gpu("b200"), cat.serving_engine("trtllm"), "fp4",
                      prefill=Role(par, 1), decode=Role(par, decode_workers)), par


def test_disaggregated_decode_workers_lower_tpot(cat: Catalog) -> None:
    one, par = deepseek_b200(cat, 1)
    pre = pool(cat, one, par, 1, 1024, 1024, "prefill.")
    dec1 = pool(cat, one, par, 1, 1024, 1024, "decode.")
    dec3 = pool(cat, one, par, 3, 1024, 1024, "decode.")
    a = disaggregated(pre, dec1, 512, 1024, 1024, 70_000, 50e9)
    b = disaggregated(pre, dec3, 512, 1024, 1024, 70_000, 50e9)
    assert b.tpot_s < a.tpot_s
    assert b.requests_per_s > a.requests_per_s
    # Little's law over the whole loop.
    in_flight = b.requests_per_s * (b.ttft_s + 1023 * b.tpot_s)
    assert in_flight == pytest.approx(512, rel=0.05)


def one_prefill_eight_decode(cat: Catalog, isl: int, osl: int) -> tuple[Pool, Pool]:
    """Llama 3.1 8B on H100 under TensorRT-LLM: one prefill rank, eight decode ranks."""
    arch = cat.model("llama-3.1-8b")
    par = layout(arch, tp=1)
    dep = deployment(cat, arch, cat.gpu("h100-sxm"), cat.serving_engine("trtllm"), "bf16",
                     prefill=Role(par, 1), decode=Role(par, 8))
    return (pool(cat, dep, par, 1, isl, osl, "prefill."),
            pool(cat, dep, par, 8, isl, osl, "decode."))


def test_disaggregated_prefill_saturates(cat: Catalog) -> None:
    """One prefill rank facing many fast decode ranks: its queue sets TTFT."""
    pre, dec = one_prefill_eight_decode(cat, 8192, 64)
    light = disaggregated(pre, dec, 2, 8192, 64, 131_072, 50e9)
    heavy = disaggregated(pre, dec, 256, 8192, 64, 131_072, 50e9)
    assert heavy.ttft_s > 10 * light.ttft_s


@pytest.mark.parametrize("isl, osl", [(8192, 64), (8192, 256), (1024, 1024)])
def test_no_disaggregated_rate_passes_the_prefill_ranks_full_batches(cat: Catalog, isl: int,
                                                                     osl: int) -> None:
    """The planner's bound (``prefill_rate_max``): however many clients, light or saturated,
    with a fast or a slow KV link, the rate stays under the prefill ranks' full batches back
    to back, and a saturated prefill comes within 0.1 % of it."""
    pre, dec = one_prefill_eight_decode(cat, isl, osl)
    top = prefill_rate_max(pre, isl)
    full = prompts_per_batch(pre, isl)
    assert top == pytest.approx(pre.ranks * full / prefill_batch_s(pre, float(full), isl))
    rates = [disaggregated(pre, dec, c, isl, osl, 131_072, link).requests_per_s
             for c in (1, 8, 64, 512, 4096) for link in (400e9, 1e9)]
    assert all(0 < r < top for r in rates)
    assert max(rates) > 0.99 * top


def test_clients_beyond_a_saturated_prefill_queue_for_it_not_the_decode_batch(
        cat: Catalog) -> None:
    """Once the prefill ranks set the rate, the decode batch holds what that rate keeps
    decoding (Little's law); more clients only lengthen the prefill queue: TTFT grows by
    the extra clients over the rate, TPOT stays."""
    pre, dec = one_prefill_eight_decode(cat, 8192, 256)
    a = disaggregated(pre, dec, 512, 8192, 256, 131_072, 50e9)
    b = disaggregated(pre, dec, 1024, 8192, 256, 131_072, 50e9)
    assert a.requests_per_s == pytest.approx(b.requests_per_s, rel=1e-6)
    assert a.tpot_s == pytest.approx(b.tpot_s, rel=1e-6)
    assert b.ttft_s - a.ttft_s == pytest.approx(512 / a.requests_per_s, rel=1e-3)
    assert a.decode_batch * dec.ranks == pytest.approx(
        a.requests_per_s * 255 * a.tpot_s, rel=1e-3)


def test_a_saturated_loop_says_what_binds_and_how_far_a_rate_error_moves_ttft(
        cat: Catalog) -> None:
    """Saturated, the rate is fixed and TTFT = clients / rate - the decode time: 1 % of rate
    error moves TTFT by (clients / rate) / TTFT per cent. A loop whose rate follows its
    clients is not saturated."""
    pre, dec = one_prefill_eight_decode(cat, 8192, 256)
    light = disaggregated(pre, dec, 2, 8192, 256, 131_072, 50e9)
    heavy = disaggregated(pre, dec, 1024, 8192, 256, 131_072, 50e9)
    assert light.bound == "" and light.ttft_sensitivity(2) is None
    assert heavy.bound == "prefill"
    k = heavy.ttft_sensitivity(1024)
    assert k is not None and k == pytest.approx(
        1024 / heavy.requests_per_s / heavy.ttft_s, rel=1e-9)
    # As the identity says: a rate 1 % lower leaves the decode time and lengthens TTFT k %.
    decode_s = 1024 / heavy.requests_per_s - heavy.ttft_s
    slower = 1024 / (0.99 * heavy.requests_per_s) - decode_s
    assert slower / heavy.ttft_s - 1 == pytest.approx(k / 99, rel=1e-6)
    assert k > 1
    # Aggregated: clients the KV cache leaves out wait for a slot, which fixes the rate.
    p = agg_pool(cat, "llama-3.1-70b", "h100-sxm", "trtllm", 2, "fp8", 8192, 1024)
    fits = int(p.kv_tokens / (8192 + 1024))
    assert aggregated(p, 2 * fits, 8192, 1024).bound == "slots"
    assert aggregated(p, max(1, fits // 2), 8192, 1024).bound == ""


class _Affine:
    """An iteration of ``fixed_s`` plus ``per_token_s`` a prompt token; decode at ``decode_s``."""

    def __init__(self, fixed_s: float, per_token_s: float, decode_s: float) -> None:
        self.fixed_s, self.per_token_s, self.decode_s = fixed_s, per_token_s, decode_s

    def step_s(self, prefill_tokens: float, decode_seqs: float, kv_tokens: float,
               prefill_pairs: float | None = None) -> float:
        if prefill_tokens > 0:
            return self.fixed_s + self.per_token_s * prefill_tokens
        return self.decode_s if decode_seqs > 0 else 0.0


def test_a_busy_prefill_rank_batches_the_prompts_that_gather() -> None:
    """A 1,000-token prompt alone takes 50 ms (30 ms fixed + 20 us a token), so one at a
    time a rank holds at most 20 prompts/s; batched eight at a time (8,192-token budget) it
    holds 8 / 190 ms = 42. At ~30 prompts/s the rank runs back-to-back batches of the prompts
    that gathered and a prompt waits about one and a half batches, not an unbounded queue."""
    pre = Pool(step=_Affine(0.030, 20e-6, 0.0), ranks=1, budget=8192, chunked=False,
               admission="reserve", kv_tokens=1e9)
    dec = Pool(step=_Affine(0.0, 0.0, 0.010), ranks=1, budget=8192, chunked=False,
               admission="reserve", kv_tokens=1e9)
    # 300 clients each decoding 1,000 tokens at 10 ms: 30 requests/s if none waits.
    st = disaggregated(pre, dec, 300, 1000, 1001, 0.0, 1e12)
    assert st.requests_per_s == pytest.approx(30.0, rel=0.05)
    j = 30.0 * 0.030 / (1.0 - 30.0 * 0.020)  # j = rate x t(j): 2.25 prompts a batch
    t_j = 0.030 + 0.020 * j
    assert st.ttft_s == pytest.approx(1.5 * t_j, rel=0.1)
    # Beyond full batches (42 prompts/s) the rank is the bottleneck: clients queue there.
    many = disaggregated(pre, dec, 1000, 1000, 1001, 0.0, 1e12)
    assert many.requests_per_s <= 8 / (0.030 + 0.020 * 8) * 1.001
    assert many.ttft_s > 10 * st.ttft_s


def test_a_prompt_longer_than_a_chunked_budget_is_prefilled_in_chunks() -> None:
    """With chunked prefill, an 8,000-token prompt on a 2,048-token budget (SGLang's 16,384
    split over 8 attention-DP ranks) takes four iterations, each with its fixed cost; a
    prompt that fits, or an engine that does not chunk, takes one."""
    step = _Affine(0.010, 1e-6, 0.0)
    chunked = Pool(step=step, ranks=1, budget=2048, chunked=True, admission="reserve",
                   kv_tokens=1e9)
    assert prefill_batch_s(chunked, 1, 8000) == pytest.approx(4 * 0.010 + 8000e-6)
    assert prefill_batch_s(chunked, 2, 1000) == pytest.approx(0.010 + 2000e-6)
    whole = replace(chunked, chunked=False)
    assert prefill_batch_s(whole, 1, 8000) == pytest.approx(0.010 + 8000e-6)


def _one_to_one(cat: Catalog) -> tuple[Pool, Pool]:
    arch = cat.model("llama-3.1-8b")
    e = cat.serving_engine("trtllm")
    par = layout(arch, tp=1)
    dep = deployment(cat, arch, cat.gpu("h100-sxm"), e, "bf16", prefill=Role(par, 1),
                     decode=Role(par, 1))
    return pool(cat, dep, par, 1, 1024, 256, "prefill."), pool(cat, dep, par, 1, 1024, 256,
                                                                "decode.")


def test_the_disaggregated_hand_off_adds_to_ttft_alone(cat: Catalog) -> None:
    pre, dec = _one_to_one(cat)
    a = disaggregated(pre, dec, 1, 1024, 256, 131_072, 50e9)
    b = disaggregated(pre, dec, 1, 1024, 256, 131_072, 50e9, overhead_s=0.05)
    assert b.ttft_s == pytest.approx(a.ttft_s + 0.05, rel=0.02)
    assert b.tpot_s == pytest.approx(a.tpot_s, rel=0.02)


def test_kv_transfers_queue_on_a_slow_link(cat: Catalog) -> None:
    """A prefill rank's transfers share its link: at 1 GB/s a 1,024-token prompt's 134 MB
    take 0.13 s, so at tens of prompts a second they wait behind each other, and the link
    caps the rate."""
    pre, dec = _one_to_one(cat)
    fast = disaggregated(pre, dec, 64, 1024, 256, 131_072, 400e9)
    slow = disaggregated(pre, dec, 64, 1024, 256, 131_072, 1e9)
    xfer = 131_072 * 1024 / 1e9
    assert slow.ttft_s > fast.ttft_s + xfer  # the transfer and a wait behind others
    assert slow.requests_per_s <= 1.0 / xfer * 1.001  # one link, one transfer at a time


def _sglang_pool(cat: Catalog, lockstep: bool, isl: int = 1024, osl: int = 128) -> Pool:
    e = cat.serving_engine("sglang")
    arch = cat.model("qwen3-32b")
    dep = deployment(cat, arch, cat.gpu("h100-sxm"), e, "fp8", agg=Role(layout(arch, 8), 1))
    assert dep.agg is not None
    return pool(cat, dep, dep.agg.par, 1, isl, osl, equal_lengths=lockstep)


def test_prefill_priority_keeps_equal_length_clients_in_lockstep(cat: Catalog) -> None:
    """SGLang prefills every waiting prompt before decoding: 128 equal-length clients form
    one cluster whose prefill phase (16 chunks of 8,192 tokens) every request waits through,
    half of it before its first token and the rest before its second."""
    lock = _sglang_pool(cat, True)
    assert lock.lockstep and not _sglang_pool(cat, False).lockstep
    st = aggregated(lock, 128, 1024, 128)
    chunk = lock.step.step_s(8192, 0, 0, 8192 * 1024 / 2.0)
    phase = 16 * chunk
    assert st.admitted == 128
    # First token: the mean chunk a prompt completes in, (16 + 1) / 2, plus the engine's
    # fixed first-token delays.
    extra = lock.frontend_s + lock.first_token_iterations * lock.step.step_s(
        0, 128, 128 * (1024 + 64))
    assert st.ttft_s == pytest.approx(8.5 * chunk + extra, rel=1e-6)
    # Little's law: the whole cycle is the phase plus 127 decode iterations.
    cycle = 128 / st.requests_per_s
    assert cycle == pytest.approx(phase + 127 * lock.step.step_s(0, 128, 128 * (1024 + 64)),
                                  rel=1e-6)
    # More clients, longer phase: TTFT grows in proportion to the cluster.
    assert aggregated(lock, 64, 1024, 128).ttft_s < st.ttft_s


def test_lockstep_waits_longer_than_desynchronised_clients(cat: Catalog) -> None:
    lock = aggregated(_sglang_pool(cat, True), 128, 1024, 128)
    loose = aggregated(_sglang_pool(cat, False), 128, 1024, 128)
    # Every request waits through the cluster's whole prefill phase, first for its own token
    # and then for the rest of the cluster, where mixed batches would spread it thin.
    assert lock.ttft_s > loose.ttft_s


def test_only_equal_length_clients_arrive_in_clusters(cat: Catalog) -> None:
    """The engine's cluster term (``arrival_burst``) is for clients of equal lengths, whose
    requests finish together and come back together; clients drawing lengths from a range
    drift apart, so their pool carries none of it and their TTFT does not depend on it."""
    e = cat.serving_engine("trtllm")
    arch = cat.model("llama-3.1-70b")

    def solved(burst: float, equal: bool) -> tuple[Pool, float]:
        eng = e.model_copy(update={"arrival_burst": burst})
        dep = deployment(cat, arch, cat.gpu("b200"), eng, "fp8", agg=Role(layout(arch, 2), 1))
        assert dep.agg is not None
        p = pool(cat, dep, dep.agg.par, 1, 1024, 1024, equal_lengths=equal)
        return p, aggregated(p, 64, 1024, 1024).ttft_s

    p, t_equal = solved(0.3, True)
    assert p.burst == 0.3
    assert t_equal > solved(0.0, True)[1]  # equal lengths: the cluster lengthens TTFT
    q, t_range = solved(0.3, False)
    assert q.burst == 0.0
    assert t_range == solved(0.0, False)[1]


def test_an_opening_wave_is_prefilled_first_come_first_served() -> None:
    """Eight 1,000-token prompts at an idle rank with a 2,048-token budget, no chunking: two
    whole prompts an iteration (30 ms + 20 us a token = 70 ms), four iterations, the mean
    prompt done with the 2.5th; its first token two decode iterations later. Chunked, the
    8,000 tokens go in 2,048-token chunks (the decodes of the first prompts take part of each
    chunk's budget), prompt i done with chunk ceil((i + 1) 1,000 / chunk)."""
    whole = Pool(step=_Affine(0.030, 20e-6, 0.010), ranks=1, budget=2048, chunked=False,
                 admission="reserve", kv_tokens=1e9, frontend_s=0.005,
                 first_token_iterations=2.0, prefill_first=True)
    assert opening_wave_s(whole, 8, 1000, 100) == pytest.approx(
        0.005 + 2.5 * 0.070 + 2 * 0.010)
    chunked = replace(whole, chunked=True, prefill_first=False)
    p = 2048 - 4  # four of the eight prompts decode, on average over the phase
    iters = (8 * 1000 + 1000) / (2 * p) + 0.5
    assert opening_wave_s(chunked, 8, 1000, 100) == pytest.approx(
        0.005 + iters * (0.030 + 20e-6 * p) + 2 * 0.010)
    # A wave the budget takes at once is one iteration.
    assert opening_wave_s(chunked, 1, 1000, 100) == pytest.approx(
        0.005 + 0.030 + 20e-6 * 1000 + 2 * 0.010)


def test_a_benchmark_ttft_averages_its_opening_wave_into_the_rounds() -> None:
    pool_ = Pool(step=_Affine(0.030, 20e-6, 0.010), ranks=1, budget=8192, chunked=True,
                 admission="reserve", kv_tokens=1e9)
    steady = aggregated(pool_, 64, 1000, 200)
    wave = opening_wave_s(pool_, steady.admitted, 1000, 200)
    bench = aggregated(pool_, 64, 1000, 200, rounds=10)
    assert wave > 5 * steady.ttft_s
    assert bench.ttft_s == pytest.approx((9 * steady.ttft_s + wave) / 10)
    assert bench.tpot_s == steady.tpot_s and bench.requests_per_s == steady.requests_per_s
    assert with_opening_wave(steady, wave, 0.0) is steady
    assert with_opening_wave(steady, wave, 1.0).ttft_s == wave


def test_a_disaggregated_opening_wave_fills_the_prefill_batches() -> None:
    """64 prompts on two prefill ranks: 32 each, four full batches of eight (30 ms + 20 us a
    token: 190 ms), the mean prompt done with the 2.5th; then its KV cache, queued behind
    half its batch's on the rank's link (10 ms each)."""
    pre = Pool(step=_Affine(0.030, 20e-6, 0.0), ranks=2, budget=8192, chunked=False,
               admission="reserve", kv_tokens=1e9)
    dec = Pool(step=_Affine(0.0, 0.0, 0.010), ranks=1, budget=8192, chunked=False,
               admission="reserve", kv_tokens=1e9)
    kv_per_token, link = 1e6, 1e11  # 1,000 tokens: 10 ms a transfer
    steady = disaggregated(pre, dec, 64, 1000, 1001, kv_per_token, link)
    bench = disaggregated(pre, dec, 64, 1000, 1001, kv_per_token, link, rounds=10)
    wave = 2.5 * 0.190 + 4.5 * 0.010 + 0.5 * steady.tpot_s
    assert bench.ttft_s == pytest.approx((9 * steady.ttft_s + wave) / 10, rel=1e-6)
    assert bench.tpot_s == steady.tpot_s


@pytest.mark.parametrize(("engine", "chunked"), [("vllm", True), ("trtllm", False)])
def test_the_opening_wave_agrees_with_the_event_simulator(cat: Catalog, engine: str,
                                                         chunked: bool) -> None:
    """The request-level simulator starts every client at once: the mean TTFT of its first
    round is the opening wave's, within 10 %."""
    p = replace(agg_pool(cat, "llama-3.1-70b", "b200", engine, 4, "fp8", 2048, 256),
                chunked=chunked)
    clients = 64
    ec = EngineConfig(kv_blocks=int(p.kv_tokens // 16), block_size=16,
                      max_num_seqs=min(p.max_seqs, p.budget), max_num_batched_tokens=p.budget,
                      chunked_prefill=p.chunked, admission=p.admission,
                      prefill_first=p.prefill_first)
    w = Workload(num_requests=clients, arrival="closed", concurrency=clients,
                 input_len=Lengths("fixed", 2048), output_len=Lengths("fixed", 256))
    r = simulate(ClusterConfig(engine=ec), w, p.step)
    first = float(np.mean(r.per_request["ttft_s"][:clients]))
    assert opening_wave_s(p, clients, 2048, 256) == pytest.approx(first, rel=0.1)


@pytest.mark.parametrize("clients", [4, 64])
def test_batch_waiting_holds_prompts_as_the_event_simulator_does(cat: Catalog,
                                                                 clients: int) -> None:
    """TensorRT-LLM's batch waiting (InferenceMAX's Llama 70B runs: 20 iterations or 90 % of
    a 16,384-token budget): a prompt that finds sequences decoding waits up to 20 decode
    iterations, fewer when others arrive during the hold and fill the budget. The steady
    state and the event simulator agree within 15 %; both add about 20 iterations at 4
    clients."""
    e = cat.serving_engine("trtllm").model_copy(update={
        "frontend_s": 0.0, "arrival_burst": 0.0, "first_token_iterations": 0.0,
        "max_num_batched_tokens": 16384})
    arch = cat.model("llama-3.1-70b")
    ttft = {}
    for wait in (0, 20):
        eng = e.model_copy(update={"batch_wait_iterations": wait,
                                   "batch_wait_tokens_ratio": 0.9 if wait else 0.0})
        dep = deployment(cat, arch, cat.gpu("b200"), eng, "fp8", agg=Role(layout(arch, 2), 1))
        assert dep.agg is not None
        p = pool(cat, dep, dep.agg.par, 1, 922, 922)
        st = aggregated(p, clients, 922, 922)
        ec = EngineConfig(kv_blocks=int(p.kv_tokens // 16), block_size=16,
                          max_num_seqs=min(p.max_seqs, p.budget),
                          max_num_batched_tokens=p.budget, chunked_prefill=p.chunked,
                          admission=p.admission,
                          batch_wait_iterations=int(p.batch_wait_iterations),
                          batch_wait_tokens=int(p.batch_wait_tokens))
        lengths = Lengths("uniform", 922, low=819, high=1024)
        w = Workload(num_requests=20 * clients, arrival="closed", concurrency=clients,
                     input_len=lengths, output_len=lengths)
        r = simulate(ClusterConfig(engine=ec), w, p.step)
        sim_ttft = float(np.mean(r.per_request["ttft_s"][5 * clients:]))
        # Without the hold, TTFT is a single prefill, which the steady state rounds up
        # (``test_agrees_with_the_event_simulator``)
        assert st.ttft_s == pytest.approx(sim_ttft, rel=0.15 if wait else 0.2)
        ttft[wait] = (st.ttft_s, sim_ttft, st.tpot_s)
    added = ttft[20][0] - ttft[0][0]
    if clients == 4:
        assert added == pytest.approx(20 * ttft[20][2], rel=0.15)
    else:
        assert 0 < added < 20 * ttft[20][2]


def test_batch_waiting_needs_both_limits() -> None:
    """TensorRT-LLM stops waiting once the count reaches the timeout or the tokens the
    ratio's share: either at 0 holds nothing."""
    from clusterwright.sim.serving_steady import batch_wait
    base = Pool(step=None, ranks=1, budget=16384, chunked=False,  # type: ignore[arg-type]
                admission="reserve", kv_tokens=1e6)
    assert batch_wait(replace(base, batch_wait_iterations=20), 0.01, 8, 1024) == (0.0, 1.0)
    assert batch_wait(replace(base, batch_wait_tokens=14746), 0.01, 8, 1024) == (0.0, 1.0)
    held, n = batch_wait(replace(base, batch_wait_iterations=20, batch_wait_tokens=14746),
                         0.01, 8, 1024)
    assert 10 < held < 20 and n == pytest.approx(1.2)
    # Enough prompts to fill the share end the hold early
    held_busy, _ = batch_wait(replace(base, batch_wait_iterations=20,
                                      batch_wait_tokens=14746), 2.0, 8, 1024)
    assert held_busy < 5


def test_attention_dp_balancing_holds_prompts_until_every_rank_has_one() -> None:
    """TensorRT-LLM's attention_dp_config (enable_balance, timeout_iters 60, as InferenceMAX's
    DeepSeek scripts set it): at few prompts a rank the hold reaches the timeout; at many, the
    other ranks fill sooner (the slowest of 7 arrivals on 8 ranks: H_7 / rate)."""
    from clusterwright.sim.serving_steady import balance_wait
    base = Pool(step=None, ranks=8, budget=8192, chunked=True,  # type: ignore[arg-type]
                admission="reserve", kv_tokens=1e6, balance_timeout=60, balance_ranks=8)
    rare = balance_wait(base, 1e-4)
    assert rare == pytest.approx(60, rel=0.06)
    busy = balance_wait(base, 0.5)
    harmonic = sum(1 / k for k in range(1, 8))
    assert busy < harmonic / 0.5 < 60
    assert balance_wait(base, 0.01) > balance_wait(base, 0.1) > busy
    assert balance_wait(replace(base, balance_ranks=1), 1e-4) == 0.0
    assert balance_wait(replace(base, balance_timeout=0), 1e-4) == 0.0


def test_speculative_cost_applies_even_when_no_draft_is_accepted() -> None:
    """Drafts rejected every time still cost their passes: at acceptance 0 the iteration is
    the plain one plus the step model's draft cost (or times the factor)."""
    from clusterwright.sim.serving_steady import Pool, _iteration

    class Step:
        def step_s(self, p: float, d: float, kv: float, pairs: float | None = None) -> float:
            return 0.01 + 0.001 * d

        def speculative_extra_s(self, d: float, kv: float, k: int) -> float:
            return 0.002 * k

    base = Pool(step=Step(), ranks=1, budget=8192, chunked=True, admission="evict",
                kv_tokens=1e6)
    plain = _iteration(base, 0, 8, 8000)
    own = replace(base, spec_yield=1.0, spec_cost=None, spec_draft=3)
    assert _iteration(own, 0, 8, 8000) == pytest.approx(plain + 0.006)
    factor = replace(base, spec_yield=1.0, spec_cost=1.5, spec_draft=3)
    assert _iteration(factor, 0, 8, 8000) == pytest.approx(plain * 1.5)
    assert _iteration(own, 512, 0, 0) == base.step.step_s(512, 0, 0)  # no decodes: no drafts


def test_one_client_finds_its_rank_idle(cat: Catalog) -> None:
    """A lone closed-loop client's prompt comes after its last request has left: it waits
    for no iteration and its prefill carries no decode, so TTFT is the prompt's iteration
    alone (with the engine's TTFT extras off); two clients share iterations and wait."""
    p = agg_pool(cat, "llama-3.1-8b", "h100-sxm", "trtllm", 1, "bf16", 2048, 256)
    one = aggregated(p, 1, 2048, 256)
    assert one.queue_wait_s == 0.0
    assert one.ttft_s == pytest.approx(p.step.step_s(2048, 0, 0, 2048 * 2048 / 2.0))
    two = aggregated(p, 2, 2048, 256)
    assert two.queue_wait_s > 0.0 and two.ttft_s > one.ttft_s


@pytest.mark.parametrize("clients", [8, 64])
def test_request_polling_agrees_with_the_event_simulator(cat: Catalog, clients: int) -> None:
    """SGLang's ``--scheduler-recv-interval 30`` (InferenceMAX's DeepSeek scripts at 16 clients
    or more): while the engine decodes, a new prompt waits for the poll every 30 decode
    iterations, about 15 of them, and is prefilled with the others that gathered. The steady
    state and the event simulator, which polls as SGLang's SchedulerRecvSkipper does, agree
    within 10 %; TPOT does not change."""
    base = cat.serving_engine("sglang").model_copy(update={
        "frontend_s": 0.0, "arrival_burst": 0.0, "first_token_iterations": 0.0})
    arch = cat.model("llama-3.1-8b")
    out = {}
    for interval in (1, 30):
        eng = base.model_copy(update={"scheduler_recv_interval": interval})
        dep = deployment(cat, arch, cat.gpu("h100-sxm"), eng, "bf16",
                         agg=Role(layout(arch, 1), 1))
        assert dep.agg is not None
        p = pool(cat, dep, dep.agg.par, 1, 922, 922, equal_lengths=False)
        assert p.recv_interval == interval
        st = aggregated(p, clients, 922, 922)
        ec = EngineConfig(kv_blocks=int(p.kv_tokens // 16), block_size=16,
                          max_num_seqs=min(p.max_seqs, p.budget),
                          max_num_batched_tokens=p.budget, chunked_prefill=p.chunked,
                          admission=p.admission, prefill_first=p.prefill_first,
                          recv_interval=interval)
        lengths = Lengths("uniform", 922, low=819, high=1024)
        w = Workload(num_requests=20 * clients, arrival="closed", concurrency=clients,
                     input_len=lengths, output_len=lengths)
        r = simulate(ClusterConfig(engine=ec), w, p.step)
        sim_ttft = float(np.mean(r.per_request["ttft_s"][5 * clients:]))
        out[interval] = (st.ttft_s, sim_ttft, st.tpot_s)
    steady, sim, tpot = out[30]
    assert steady == pytest.approx(sim, rel=0.1)
    assert tpot == out[1][2]
    if clients == 8:
        # Few prompts: nearly every one waits out half an interval
        assert steady - out[1][0] == pytest.approx(15 * tpot, rel=0.2)


def test_request_polling_waits_half_an_interval_when_prompts_are_rare() -> None:
    """A prompt lands in a gap of ``interval`` decode iterations and waits half of it; as
    prompts crowd, the polls after each prefill take more of them at once."""
    from clusterwright.sim.serving_steady import recv_wait
    wait, taken = recv_wait(30, 1e-6, 0.01, 0.05)
    assert wait == pytest.approx(0.15, rel=1e-3) and taken == pytest.approx(1.0, abs=1e-3)
    busy_wait, busy_taken = recv_wait(30, 0.5, 0.01, 0.05)
    assert busy_wait < wait and busy_taken > 5
    # One-iteration polling: half an iteration, as without it
    assert recv_wait(1, 1e-6, 0.01, 0.05)[0] == pytest.approx(0.005, rel=1e-3)


def test_a_prefill_rank_batches_no_more_prompts_than_its_max_batch(cat: Catalog) -> None:
    """A context worker's max batch (TensorRT-LLM's disaggregated recipes give 1-16 requests)
    caps the prompts a prefill batch holds whatever the token budget: fewer prompts a batch,
    a lower prefill capacity and, at a load near it, a longer TTFT."""
    dep, par = deepseek_b200(cat, 8)
    dec = pool(cat, dep, par, 8, 1024, 1024, "decode.")
    wide = pool(cat, dep, par, 1, 1024, 1024, "prefill.", max_tokens=16384)
    narrow = pool(cat, dep, par, 1, 1024, 1024, "prefill.", max_batch=2, max_tokens=16384)
    assert prompts_per_batch(wide, 1024) == 16 and prompts_per_batch(narrow, 1024) == 2
    a = disaggregated(wide, dec, 4096, 1024, 1024, 70_000, 50e9)
    b = disaggregated(narrow, dec, 4096, 1024, 1024, 70_000, 50e9)
    assert b.ttft_s > 1.5 * a.ttft_s


def test_a_first_chunk_of_k_tokens_moves_the_client_s_first_token() -> None:
    """SGLang's disaggregated client gets its first token with the decode worker's first
    chunk of ``stream_interval`` tokens: k - 1 tokens of TPOT later than the one-token path,
    never past the last output token; the measured TPOT spreads the same request over the
    remaining tokens, so TTFT + (osl - 1) TPOT and the rate stay as they are."""
    pre = Pool(step=_Affine(0.030, 20e-6, 0.0), ranks=1, budget=8192, chunked=False,
               admission="reserve", kv_tokens=1e9)
    dec = Pool(step=_Affine(0.0, 0.0, 0.010), ranks=1, budget=8192, chunked=False,
               admission="reserve", kv_tokens=1e9)
    base = disaggregated(pre, dec, 50, 1000, 1001, 0.0, 1e12)
    for k in (0, 1):
        assert disaggregated(pre, dec, 50, 1000, 1001, 0.0, 1e12,
                             first_chunk_tokens=k) == base
    st = disaggregated(pre, dec, 50, 1000, 1001, 0.0, 1e12, first_chunk_tokens=30)
    assert st.ttft_s == pytest.approx(base.ttft_s + 29 * base.tpot_s)
    assert st.tpot_s == pytest.approx(base.tpot_s * (1000 - 29) / 1000)
    assert st.ttft_s + 1000 * st.tpot_s == pytest.approx(base.ttft_s + 1000 * base.tpot_s)
    assert st.requests_per_s == base.requests_per_s
    # An interval past the output: the first chunk is the last one
    short = disaggregated(pre, dec, 50, 1000, 11, 0.0, 1e12)
    st = disaggregated(pre, dec, 50, 1000, 11, 0.0, 1e12, first_chunk_tokens=500)
    assert st.ttft_s == pytest.approx(short.ttft_s + 10 * short.tpot_s)
    assert st.tpot_s == 0.0
    # With an opening wave the shift is the same: the first round waits for its chunk too
    waved = disaggregated(pre, dec, 50, 1000, 1001, 0.0, 1e12, rounds=10.0)
    waved_k = disaggregated(pre, dec, 50, 1000, 1001, 0.0, 1e12, rounds=10.0,
                            first_chunk_tokens=30)
    assert waved_k.ttft_s == pytest.approx(waved.ttft_s + 29 * base.tpot_s)


def test_the_disaggregated_solution_keeps_its_clients_busy_to_the_tolerance() -> None:
    """The decode batch is solved until the clients it keeps busy (Little's law over a
    whole request, rate x (TTFT + (osl - 1) TPOT)) are the clients asked for, to 1e-9. Pools
    whose times do not step with the batch (at a step the solution sits on the jump) and a
    prefill rank below half its load (one prompt at a time)."""
    pre = Pool(step=_Affine(0.030, 20e-6, 0.0), ranks=1, budget=8192, chunked=False,
               admission="reserve", kv_tokens=1e9)
    dec = Pool(step=_Affine(0.0, 0.0, 0.010), ranks=1, budget=8192, chunked=False,
               admission="reserve", kv_tokens=1e9)
    for clients in (3.0, 17.0, 60.0):
        st = disaggregated(pre, dec, clients, 1000, 1001, 0.0, 1e12)
        assert st.slot_wait_s == 0.0
        busy = st.requests_per_s * (st.ttft_s + 1000 * st.tpot_s)
        assert busy == pytest.approx(clients, rel=1e-9)


def _parts_sum(p: Pool, st: object) -> float:
    return (p.frontend_s + st.slot_wait_s + st.queue_wait_s  # type: ignore[attr-defined]
            + st.prefill_s + st.first_chunk_s + st.handoff_s)  # type: ignore[attr-defined]


@pytest.mark.parametrize("clients", [1, 4, 64, 512])
def test_ttft_parts_sum_to_ttft_aggregated(cat: Catalog, clients: int) -> None:
    """TTFT's parts (``serve estimate --engine`` prints them) add up to it in every regime:
    an idle rank, a light and a heavy loop, clients waiting for a slot."""
    p = agg_pool(cat, "llama-3.1-70b", "h100-sxm", "trtllm", 2, "fp8", 8192, 1024,
                 plain=False)
    st = aggregated(p, clients, 8192, 1024)
    assert min(st.slot_wait_s, st.queue_wait_s, st.prefill_s) >= 0.0
    assert _parts_sum(p, st) == pytest.approx(st.ttft_s, rel=1e-9)
    if clients == 512:
        assert st.slot_wait_s > 0.0


@pytest.mark.parametrize("clients", [8, 128, 512])
def test_ttft_parts_sum_to_ttft_in_lockstep(cat: Catalog, clients: int) -> None:
    """In lockstep the chunks ahead of a prompt's own and its late first token are waits,
    never a negative one (a phase shorter than a chunk included)."""
    p = _sglang_pool(cat, True)
    st = aggregated(p, clients, 1024, 128)
    assert st.queue_wait_s >= 0.0 and st.prefill_s > 0.0
    assert _parts_sum(p, st) == pytest.approx(st.ttft_s, rel=1e-9)


@pytest.mark.parametrize("chunk", [0, 30])
def test_ttft_parts_sum_to_ttft_disaggregated(cat: Catalog, chunk: int) -> None:
    one, par = deepseek_b200(cat, 2)
    pre = pool(cat, one, par, 1, 1024, 1024, "prefill.")
    dec = pool(cat, one, par, 2, 1024, 1024, "decode.")
    for clients in (4, 512, 4096):
        st = disaggregated(pre, dec, clients, 1024, 1024, 70_000, 50e9, overhead_s=0.1,
                           first_chunk_tokens=chunk)
        assert min(st.slot_wait_s, st.queue_wait_s, st.prefill_s) >= 0.0
        assert (st.first_chunk_s > 0.0) == (chunk > 1)
        # The hand-off and at least one transfer of the prompt's KV cache over the link
        assert st.handoff_s >= 0.1 + 70_000 * 1024 / 50e9
        assert _parts_sum(pre, st) == pytest.approx(st.ttft_s, rel=1e-9)
