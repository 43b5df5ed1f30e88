"""The request-level serving simulator: hand-checkable schedules with a linear step model,
preemption, caps, routing, disaggregation, speculation, traces, and the fast-forward path
against the one-event-per-iteration reference."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pytest

from clusterwright.errors import InputError
from clusterwright.sim import serving as sv
from clusterwright.sim.serving import (
    ClusterConfig,
    Disaggregation,
    EngineConfig,
    Lengths,
    ServingError,
    Workload,
    make_requests,
    simulate,
)
from clusterwright.sim.serving_config import MAX_REPLICAS
from clusterwright.sim.serving_trace import MAX_LENGTH_CV, MAX_REQUESTS, Requests, load_trace


@dataclass(frozen=True)
class Linear:
    """step = base + per_prefill_token x p + per_decode_seq x d + per_kv_token x kv (s)."""

    base: float = 0.005
    per_prefill_token: float = 2e-5
    per_decode_seq: float = 1e-4
    per_kv_token: float = 0.0

    def step_s(self, prefill_tokens: int, decode_seqs: int, kv_tokens: int,
               prefill_pairs: float | None = None) -> float:
        return (self.base + self.per_prefill_token * prefill_tokens
                + self.per_decode_seq * decode_seqs + self.per_kv_token * kv_tokens)


# A realistic-ish 8B-on-one-GPU shape: 6 ms of weight reads, 30 us per prompt token,
# 40 ns per cached token read.
REAL = Linear(base=0.006, per_prefill_token=3e-5, per_decode_seq=1e-5, per_kv_token=4e-8)
IN = Lengths("lognormal", 200, 300, high=4000)  # ShareGPT-like: mean 200 in, 250 out
OUT = Lengths("lognormal", 250, 250, high=4000)


def reqs(*rows: tuple[float, int, int]) -> Requests:
    """Requests from (arrival s, input tokens, output tokens) rows."""
    a = np.array(rows, dtype=np.float64)
    n = len(rows)
    return Requests(a[:, 0], a[:, 1].astype(np.int64), a[:, 2].astype(np.int64),
                    np.full(n, -1, dtype=np.int64), np.zeros(n, dtype=np.int64))


def run(rows: list[tuple[float, int, int]], model: Linear = Linear(), **engine: object
        ) -> sv.ServingResult:
    cfg = EngineConfig(**{"kv_blocks": 10_000, **engine})  # type: ignore[arg-type]
    return simulate(ClusterConfig(cfg), Workload(arrival="trace"), model, requests=reqs(*rows))


def per(res: sv.ServingResult, key: str) -> list[float]:
    return [float(x) for x in res.per_request[key]]


def test_one_request_alone_ttft_is_the_prefill_step_and_e2e_adds_out_minus_1_decode_steps() -> None:
    m = Linear(per_kv_token=1e-7)
    res = run([(0.0, 100, 10)], m)
    prefill = m.step_s(100, 0, 100)
    decode = sum(m.step_s(0, 1, 100 + j) for j in range(9))  # context 100, 101, ... 108
    assert res.ttft_s["mean"] == pytest.approx(prefill, rel=1e-12)
    assert res.e2e_s["mean"] == pytest.approx(prefill + decode, rel=1e-12)
    assert res.tpot_s["mean"] == pytest.approx(decode / 9, rel=1e-12)
    assert res.steps == 10


def test_two_requests_arriving_together_share_every_step() -> None:
    m = Linear()
    res = run([(0.0, 100, 5), (0.0, 50, 5)], m)
    prefill = m.step_s(150, 0, 150)
    assert per(res, "ttft_s") == pytest.approx([prefill, prefill])
    assert per(res, "e2e_s") == pytest.approx([prefill + 4 * m.step_s(0, 2, 0)] * 2)


def test_token_budget_splits_a_long_prompt_into_chunks() -> None:
    m = Linear()
    res = run([(0.0, 1000, 2)], m, max_num_batched_tokens=256, max_num_seqs=4)
    chunks = [256, 256, 256, 232]
    assert res.steps == 5
    assert res.ttft_s["mean"] == pytest.approx(sum(m.step_s(c, 0, 0) for c in chunks))


def test_without_chunked_prefill_a_prompt_over_the_budget_is_rejected() -> None:
    with pytest.raises(ServingError, match="chunked_prefill off"):
        run([(0.0, 1000, 2)], max_num_batched_tokens=256, max_num_seqs=4, chunked_prefill=False)


def test_only_an_evicting_engine_needs_room_for_a_preempted_requests_recompute() -> None:
    """A preempted request recomputes its prompt and its generated tokens in one prefill,
    so without chunked prefill an evicting engine needs budget for both. A reserving engine
    (TensorRT-LLM's GUARANTEED_NO_EVICT) never preempts: 1,024 in and 8,192 out run on its
    8,192-token budget."""
    with pytest.raises(ServingError, match="after a preemption"):
        run([(0.0, 1024, 8192)], max_num_batched_tokens=8192, chunked_prefill=False,
            admission="evict")
    res = run([(0.0, 1024, 8192)], max_num_batched_tokens=8192, chunked_prefill=False,
              admission="reserve")
    assert res.e2e_s["mean"] > 0
    with pytest.raises(ServingError, match="9000 prompt tokens exceed"):
        run([(0.0, 9000, 10)], max_num_batched_tokens=8192, chunked_prefill=False,
            admission="reserve")


def test_a_request_waiting_for_a_reservation_lets_the_running_decode_fast_forward() -> None:
    """Under ``reserve`` a waiting request that cannot reserve its whole length waits for an
    admitted one to finish, so the running decode runs as blocks, not one event a token:
    the same latencies as the one-event-per-iteration path."""
    rows = [(0.01 * i, 500, 4000) for i in range(6)]  # only one 4,500-token request fits
    cfg = EngineConfig(kv_blocks=300, admission="reserve")
    fast = simulate(ClusterConfig(cfg), Workload(arrival="trace"), REAL, requests=reqs(*rows))
    slow = simulate(ClusterConfig(cfg), Workload(arrival="trace"), REAL, requests=reqs(*rows),
                    fast_forward=False)
    assert fast.steps == slow.steps and fast.events < 100 < slow.events
    for key in ("ttft_s", "e2e_s"):
        assert per(fast, key) == pytest.approx(per(slow, key), rel=0.01)


def test_a_decode_joins_a_prefill_chunk_in_the_same_iteration() -> None:
    m = Linear()
    # Request 0 decodes while request 1's prompt is prefilled beside it (continuous batching).
    res = run([(0.0, 10, 50), (0.02, 100, 2)], m)
    t1 = per(res, "ttft_s")[1]
    assert t1 > m.step_s(100, 1, 0)  # waited for the running step to end
    assert t1 < m.step_s(100, 1, 0) + m.step_s(0, 1, 0) + 1e-12


def test_kv_exhaustion_preempts_and_every_request_still_finishes() -> None:
    cfg = EngineConfig(kv_blocks=300, max_num_seqs=64, max_num_batched_tokens=2048)
    w = Workload(num_requests=400, qps=30, input_len=Lengths("uniform", low=50, high=600),
                 output_len=Lengths("uniform", low=50, high=600), seed=3)
    sim = sv._Sim(ClusterConfig(cfg), make_requests(w), REAL, w, True)
    sim.run()
    assert sim.preemptions > 0
    assert np.isfinite(sim.finish_s).all()
    rep = sim.all[0]
    assert rep.used == 0 and not rep.decode and not rep.waiting and not rep.prefilling
    res = simulate(ClusterConfig(cfg), w, REAL)
    assert res.preemptions == sim.preemptions
    assert res.kv_util.max() <= 1.0


def test_max_num_seqs_caps_the_batch() -> None:
    m = Linear()
    res = run([(0.0, 10, 20)] * 4, m, max_num_seqs=2)
    ttft = per(res, "ttft_s")
    e2e = per(res, "e2e_s")
    assert res.running.max() <= 2
    assert ttft[2] >= e2e[0] and ttft[3] >= e2e[1]


def test_littles_law_holds_at_steady_state() -> None:
    w = Workload(num_requests=4000, qps=30, seed=1, input_len=IN, output_len=OUT)
    res = simulate(ClusterConfig(EngineConfig(kv_blocks=30_000)), w, REAL)
    lam_w = res.requests_per_s * res.e2e_s["mean"]
    assert res.mean_in_system == pytest.approx(lam_w, rel=0.01)
    sampled = float(np.mean(res.queue_len + res.running))  # independent: sampled series
    assert sampled == pytest.approx(lam_w, rel=0.1)


def test_an_overloaded_run_stops_once_its_ttft_p99_must_exceed_the_bound() -> None:
    # 3x what one replica serves: the queue grows for the whole run.
    w = Workload(num_requests=1500, qps=90, seed=3, input_len=IN, output_len=OUT)
    cl = ClusterConfig(EngineConfig(kv_blocks=30_000))
    full = simulate(cl, w, REAL)
    cut = simulate(cl, w, REAL, stop_ttft_p99_over=1.0)
    assert not full.truncated and cut.truncated
    assert full.ttft_s["p99"] > 1.0  # the whole run misses too
    # A lower bound: above the bound, below the whole run's p99.
    assert 1.0 < cut.ttft_s["p99"] <= full.ttft_s["p99"]
    assert cut.steps < full.steps / 5 and cut.events < full.events / 2
    assert len(cut.per_request["e2e_s"]) == len(cut.per_request["arrival_s"]) < 1500


def test_a_run_that_meets_the_bound_is_not_stopped_and_is_unchanged() -> None:
    w = Workload(num_requests=1500, qps=10, seed=3, input_len=IN, output_len=OUT)
    cl = ClusterConfig(EngineConfig(kv_blocks=30_000))
    full = simulate(cl, w, REAL)
    same = simulate(cl, w, REAL, stop_ttft_p99_over=full.ttft_s["p99"] * 1.01)
    assert not same.truncated
    assert same.ttft_s == full.ttft_s and same.tpot_s == full.tpot_s
    assert same.e2e_s == full.e2e_s and same.events == full.events


@pytest.mark.parametrize("bound", [-1.0, math.nan])
def test_a_negative_or_nan_stop_bound_is_refused(bound: float) -> None:
    w = Workload(num_requests=10, qps=1, seed=3, input_len=IN, output_len=OUT)
    with pytest.raises(ServingError, match="stop_ttft_p99_over"):
        simulate(ClusterConfig(EngineConfig(kv_blocks=30_000)), w, REAL,
                 stop_ttft_p99_over=bound)


def test_throughput_saturates_as_qps_grows() -> None:
    cl = ClusterConfig(EngineConfig(kv_blocks=30_000))
    rps = []
    short_in = Lengths("lognormal", 200, 300, high=1000)  # a short tail
    short_out = Lengths("lognormal", 250, 250, high=1000)
    for qps in (10, 30, 80, 160):
        w = Workload(num_requests=3000, qps=qps, seed=2, input_len=short_in, output_len=short_out)
        rps.append(simulate(cl, w, REAL).requests_per_s)
    assert rps[0] == pytest.approx(10, rel=0.1)
    assert rps[1] == pytest.approx(30, rel=0.1)
    assert rps[3] < 80 and rps[3] == pytest.approx(rps[2], rel=0.1)


def test_closed_loop_keeps_concurrency_requests_in_flight() -> None:
    w = Workload(num_requests=2000, arrival="closed", concurrency=16, seed=4, input_len=IN,
                 output_len=OUT)
    res = simulate(ClusterConfig(EngineConfig(kv_blocks=30_000)), w, REAL)
    assert res.running.max() <= 16 and res.queue_len.max() <= 16
    # Little's law with N = 16 in the system all the time (until the tail drains).
    assert res.requests_per_s * res.e2e_s["mean"] == pytest.approx(16, rel=0.05)


def test_closed_loop_with_one_client_is_sequential() -> None:
    w = Workload(num_requests=3, arrival="closed", concurrency=1,
                 input_len=Lengths("fixed", 10), output_len=Lengths("fixed", 4))
    res = simulate(ClusterConfig(EngineConfig(kv_blocks=100)), w, Linear())
    arr, e2e = per(res, "arrival_s"), per(res, "e2e_s")
    assert arr[1] == pytest.approx(arr[0] + e2e[0]) and arr[2] == pytest.approx(arr[1] + e2e[1])


def test_seeded_runs_reproduce_and_other_seeds_differ() -> None:
    cl = ClusterConfig(EngineConfig(kv_blocks=30_000), replicas=2, router="least_outstanding")
    a, b, c = (simulate(cl, Workload(num_requests=500, qps=40, arrival="gamma", cv=2.0, seed=s,
                                     input_len=IN, output_len=OUT), REAL) for s in (7, 7, 8))
    assert np.array_equal(a.per_request["e2e_s"], b.per_request["e2e_s"])
    assert a.summary()["ttft_s"] == b.summary()["ttft_s"]
    assert not np.array_equal(a.per_request["e2e_s"], c.per_request["e2e_s"])


def test_gamma_arrivals_have_the_requested_rate_and_burstiness() -> None:
    r = make_requests(Workload(num_requests=50_000, arrival="gamma", qps=10, cv=3.0, seed=1))
    gaps = np.diff(r.arrival_s)
    assert gaps.mean() == pytest.approx(0.1, rel=0.05)
    assert gaps.std() / gaps.mean() == pytest.approx(3.0, rel=0.1)


def test_lengths_follow_their_distribution() -> None:
    rng = np.random.default_rng(0)
    x = Lengths("lognormal", 250, 250).sample(100_000, rng)
    assert x.mean() == pytest.approx(250, rel=0.03) and x.std() == pytest.approx(250, rel=0.1)
    assert (Lengths("fixed", 7).sample(3, rng) == 7).all()
    u = Lengths("uniform", low=5, high=9).sample(1000, rng)
    assert u.min() == 5 and u.max() == 9
    n = Lengths("normal", 100, 30, high=150).sample(1000, rng)
    assert n.min() >= 1 and n.max() <= 150


def test_least_outstanding_routes_to_the_idle_replica_round_robin_does_not() -> None:
    m = Linear(per_decode_seq=1e-3)
    rows = reqs((0.0, 10, 500), (0.0, 10, 2), (1.0, 10, 2))  # req 1 is done long before 1 s
    ttft = {}
    for router in ("round_robin", "least_outstanding"):
        cl = ClusterConfig(EngineConfig(kv_blocks=1000), replicas=2, router=router)
        res = simulate(cl, Workload(arrival="trace"), m, requests=rows)
        ttft[router] = per(res, "ttft_s")[2]
    alone = m.step_s(10, 0, 0)
    assert ttft["least_outstanding"] == pytest.approx(alone)
    # Round-robin puts it on replica 0 behind request 0's decode step, then batched with it.
    assert ttft["round_robin"] > alone + m.per_decode_seq


def test_disaggregation_adds_the_kv_transfer_to_ttft() -> None:
    m = Linear()
    pd = Disaggregation(prefill_replicas=1, decode_replicas=1, kv_bytes_per_token=131072,
                        link_bytes_per_s=50e9, link_latency_s=1e-4)
    cl = ClusterConfig(EngineConfig(kv_blocks=1000), disaggregation=pd)
    res = simulate(cl, Workload(arrival="trace"), m, requests=reqs((0.0, 1000, 5)))
    xfer = 131072 * 1000 / 50e9 + 1e-4
    assert res.ttft_s["mean"] == pytest.approx(m.step_s(1000, 0, 0) + xfer)
    # Then 4 decode steps on the decode replica (it admits the request at once, idle).
    assert res.e2e_s["mean"] == pytest.approx(res.ttft_s["mean"] + 4 * m.step_s(0, 1, 0))


def test_disaggregated_link_serialises_transfers() -> None:
    m = Linear()
    pd = Disaggregation(1, 2, kv_bytes_per_token=1e6, link_bytes_per_s=1e9)  # 1 ms per token
    cl = ClusterConfig(EngineConfig(kv_blocks=1000), disaggregation=pd)
    res = simulate(cl, Workload(arrival="trace"), m, requests=reqs((0, 100, 3), (0, 100, 3)))
    prefill = m.step_s(200, 0, 0)
    assert sorted(per(res, "ttft_s")) == pytest.approx([prefill + 0.1, prefill + 0.2])


def test_speculative_decoding_cuts_tpot_by_one_over_one_plus_expected_accepted() -> None:
    k, a = 4, 0.7
    expected = a * (1 - a**k) / (1 - a)
    base = run([(0.0, 100, 2000)], kv_blocks=1000)
    spec = run([(0.0, 100, 2000)], kv_blocks=1000, speculative=(k, a, 1.0))
    ratio = spec.tpot_s["mean"] / base.tpot_s["mean"]
    assert ratio == pytest.approx(1 / (1 + expected), rel=0.01)
    slower = run([(0.0, 100, 2000)], kv_blocks=1000, speculative=(k, a, 1.5))
    assert slower.tpot_s["mean"] == pytest.approx(1.5 * spec.tpot_s["mean"], rel=0.01)


def test_prefix_caching_reuses_shared_prefix_blocks() -> None:
    w = Workload(num_requests=500, qps=20, seed=5, prefix_groups=4, shared_prefix_len=1024,
                 input_len=Lengths("fixed", 64), output_len=Lengths("fixed", 32))
    off = simulate(ClusterConfig(EngineConfig(kv_blocks=5000)), w, REAL)
    on = simulate(ClusterConfig(EngineConfig(kv_blocks=5000, enable_prefix_caching=True)), w,
                  REAL)
    assert off.prefix_hit_rate == 0.0
    # 4 cold misses, then 1024 of 1088 prompt tokens hit: 94 %.
    assert on.prefix_hit_rate == pytest.approx(1024 / 1088, rel=0.02)
    assert on.ttft_s["mean"] < 0.5 * off.ttft_s["mean"]


def test_prefix_cache_is_evicted_when_blocks_run_out() -> None:
    w = Workload(num_requests=300, qps=20, seed=6, prefix_groups=200, shared_prefix_len=512,
                 input_len=Lengths("fixed", 16), output_len=Lengths("fixed", 16))
    sim = sv._Sim(ClusterConfig(EngineConfig(kv_blocks=400, enable_prefix_caching=True)),
                 make_requests(w), REAL, w, True)
    sim.run()
    rep = sim.all[0]
    assert rep.used == 0 and rep.cache_blocks <= 400 and rep.evictable == rep.cache_blocks
    assert np.isfinite(sim.finish_s).all()


def test_a_prefill_first_engine_admits_a_prompt_whose_cached_prefix_is_all_it_could_evict(
        ) -> None:
    # A waiting prompt whose prefix entry is the only evictable memory: admitting it
    # references the entry, so those blocks cannot also hold the rest of the prompt. Counting
    # them twice, the admission test said yes and the scheduler no, and a prefill-first
    # engine (decodes paused for a prompt it could admit) stalled with requests running.
    w = Workload(num_requests=300, qps=10, seed=0, prefix_groups=12, shared_prefix_len=600,
                 input_len=Lengths("fixed", 200), output_len=Lengths("fixed", 200))
    cl = ClusterConfig(EngineConfig(kv_blocks=700, enable_prefix_caching=True,
                                    prefill_first=True, max_num_seqs=4096))
    fast = simulate(cl, w, REAL)
    slow = simulate(cl, w, REAL, fast_forward=False)
    assert fast.requests == slow.requests == 300 and not fast.truncated
    assert 0.5 < fast.prefix_hit_rate < 1.0
    assert fast.steps == slow.steps
    assert fast.ttft_s["p99"] == pytest.approx(slow.ttft_s["p99"], rel=0.01)


PD = Disaggregation(prefill_replicas=1, decode_replicas=2, kv_bytes_per_token=131072,
                    link_bytes_per_s=25e9)


@pytest.mark.parametrize(("label", "cl", "qps"), [
    ("plain", ClusterConfig(EngineConfig(kv_blocks=30_000)), 40),
    ("kv-pressure", ClusterConfig(EngineConfig(kv_blocks=1500)), 15),
    ("two-replicas", ClusterConfig(EngineConfig(kv_blocks=30_000), replicas=2,
                                   router="least_outstanding"), 80),
    ("speculative", ClusterConfig(EngineConfig(kv_blocks=30_000, speculative=(3, 0.6, 1.2))), 40),
    ("prefix-cache", ClusterConfig(EngineConfig(kv_blocks=3000, enable_prefix_caching=True)), 30),
    ("disaggregated", ClusterConfig(EngineConfig(kv_blocks=30_000), disaggregation=PD), 80),
    ("closed-loop", ClusterConfig(EngineConfig(kv_blocks=30_000)), 0),
])
def test_fast_forward_matches_one_event_per_iteration(
        label: str, cl: ClusterConfig, qps: float) -> None:
    w = Workload(num_requests=2000, qps=qps or 1.0, seed=9, input_len=IN, output_len=OUT,
                 arrival="closed" if qps == 0 else "poisson", concurrency=64,
                 prefix_groups=8 if label == "prefix-cache" else 0, shared_prefix_len=300)
    fast = simulate(cl, w, REAL, slo_ttft_s=0.5, slo_tpot_s=0.02)
    slow = simulate(cl, w, REAL, slo_ttft_s=0.5, slo_tpot_s=0.02, fast_forward=False)
    assert fast.events < slow.events
    assert fast.steps == slow.steps
    for metric in ("ttft_s", "tpot_s", "itl_s", "e2e_s"):
        for stat in ("p50", "p90", "p99", "mean"):
            f, s = getattr(fast, metric)[stat], getattr(slow, metric)[stat]
            assert f == pytest.approx(s, rel=0.01), (label, metric, stat)
    assert fast.output_tokens_per_s == pytest.approx(slow.output_tokens_per_s, rel=0.01)
    assert fast.goodput_rps == pytest.approx(slow.goodput_rps, rel=0.01)
    assert fast.preemptions == slow.preemptions
    # The KV cache's time average, though the blocks sample it at their ends only
    assert fast.kv_util_mean == pytest.approx(slow.kv_util_mean, rel=0.015), label


def test_goodput_counts_requests_meeting_both_slos() -> None:
    w = Workload(num_requests=1000, qps=50, seed=1, input_len=IN, output_len=OUT)
    cl = ClusterConfig(EngineConfig(kv_blocks=30_000))
    loose = simulate(cl, w, REAL, slo_ttft_s=math.inf, slo_tpot_s=math.inf)
    tight = simulate(cl, w, REAL, slo_ttft_s=0.05, slo_tpot_s=0.015)
    assert loose.goodput_rps == pytest.approx(loose.requests_per_s)
    ok = (tight.per_request["ttft_s"] <= 0.05) & (tight.per_request["tpot_s"] <= 0.015)
    assert tight.goodput_rps == pytest.approx(ok.sum() / tight.duration_s)
    assert 0 < tight.goodput_rps < loose.goodput_rps


def test_time_series_stay_bounded() -> None:
    w = Workload(num_requests=5000, qps=40, seed=1, input_len=IN, output_len=OUT)
    res = simulate(ClusterConfig(EngineConfig(kv_blocks=30_000)), w, REAL)
    assert 100 < res.series_t_s.size <= sv.MAX_SAMPLES
    assert len(res.kv_util) == len(res.queue_len) == len(res.running) == res.series_t_s.size
    assert np.all(np.diff(res.series_t_s) > 0)
    assert 0 < res.kv_util_mean < 1


# ---- traces -------------------------------------------------------------------------------

def test_csv_and_jsonl_traces_load_sorted_and_shifted(tmp_path: Path) -> None:
    csv = tmp_path / "t.csv"
    csv.write_text("timestamp_s,input_len,output_len,prefix_id\n"
                   "10.5,100,20,\n10.0,50,5,7\n\n11,8,1,abc\n")
    r = load_trace(csv)
    assert list(r.arrival_s) == [0.0, 0.5, 1.0]
    assert list(r.input_len) == [50, 100, 8] and list(r.prefix_id)[:2] == [7, -1]
    js = tmp_path / "t.jsonl"
    js.write_text('{"timestamp_s": 0, "input_len": 3, "output_len": 4}\n\n'
                  '{"timestamp_s": 1.5, "input_len": 5, "output_len": 6, "prefix_len": 2}\n')
    r = load_trace(js)
    assert list(r.output_len) == [4, 6] and list(r.prefix_len) == [0, 2]
    res = simulate(ClusterConfig(EngineConfig(kv_blocks=100)),
                   Workload(arrival="trace", trace=js), Linear())
    assert res.requests == 2


@pytest.mark.parametrize(("name", "text", "match"), [
    ("bad.csv", "timestamp_s,input_len,output_len\n0,10,5\n1,ten,5\n", r"line 3: input_len='ten'"),
    ("neg.csv", "timestamp_s,input_len,output_len\n-1,10,5\n", r"line 2: timestamp_s"),
    ("zero.csv", "timestamp_s,input_len,output_len\n0,10,0\n", r"line 2: output_len=.*>= 1"),
    ("hdr.csv", "time,input_len,output_len\n0,1,1\n", r"line 1: header lacks timestamp_s"),
    ("empty.csv", "", r"no requests"),
    ("extra.csv", "timestamp_s,input_len,output_len\n0,1,1,9\n", r"line 2: more fields"),
    ("bad.jsonl", '{"timestamp_s": 0, "input_len": 1, "output_len": 1}\n{oops\n',
     r"line 2: not valid JSON"),
    ("miss.jsonl", '\n{"timestamp_s": 0, "input_len": 1}\n', r"line 2: missing 'output_len'"),
    ("frac.jsonl", '{"timestamp_s": 0, "input_len": 1.5, "output_len": 1}\n',
     r"line 1: input_len=1.5 is not an integer"),
    ("list.jsonl", "[1, 2]\n", r"line 1: expected a JSON object"),
    ("empty.jsonl", "\n\n", r"no requests"),
])
def test_malformed_traces_name_the_line(tmp_path: Path, name: str, text: str, match: str) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(ServingError, match=match) as info:
        load_trace(path)
    assert isinstance(info.value, InputError) and name in str(info.value)


def test_missing_trace_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ServingError, match=r"nope\.csv: no such file"):
        load_trace(tmp_path / "nope.csv")


def test_a_device_is_not_read_as_a_trace() -> None:
    # /dev/zero never ends: reading it whole ended in MemoryError.
    with pytest.raises(ServingError, match="not a regular file"):
        load_trace("/dev/zero")


# ---- configuration errors -----------------------------------------------------------------

@pytest.mark.parametrize(("cluster", "match"), [
    (ClusterConfig(EngineConfig(kv_blocks=0)), "kv_blocks"),
    (ClusterConfig(EngineConfig(kv_blocks=10, max_num_batched_tokens=100)), "max_num_seqs"),
    (ClusterConfig(EngineConfig(kv_blocks=10, speculative=(0, 0.5, 1.0))), "speculative"),
    (ClusterConfig(EngineConfig(kv_blocks=10), router="random"), "router"),
    (ClusterConfig(EngineConfig(kv_blocks=10),
                   disaggregation=Disaggregation(0, 1, 1.0, 1.0)), "disaggregation"),
])
def test_bad_configurations_are_rejected(cluster: ClusterConfig, match: str) -> None:
    with pytest.raises(ServingError, match=match):
        simulate(cluster, Workload(num_requests=1), Linear())


def test_a_request_larger_than_the_kv_cache_is_rejected_up_front() -> None:
    with pytest.raises(ServingError, match=r"request 0 .* exceed one replica's KV cache"):
        run([(0.0, 100, 100)], kv_blocks=5)


def test_bad_workloads_are_rejected() -> None:
    with pytest.raises(ServingError, match="arrival"):
        make_requests(Workload(arrival="uniform"))
    with pytest.raises(ServingError, match=r"input_len\.dist"):
        make_requests(Workload(input_len=Lengths("zipf")))
    with pytest.raises(ServingError, match="trace file"):
        make_requests(Workload(arrival="trace"))


class Concave:
    """A non-linear step model: attention cost grows as sqrt(kv); the fast-forward uses the
    trapezoid between a block's first and last step."""

    def step_s(self, prefill_tokens: int, decode_seqs: int, kv_tokens: int,
               prefill_pairs: float | None = None) -> float:
        return 0.006 + 3e-5 * prefill_tokens + 1e-5 * decode_seqs + 2e-5 * math.sqrt(kv_tokens)


def test_fast_forward_with_a_nonlinear_step_model_stays_within_one_percent() -> None:
    cl = ClusterConfig(EngineConfig(kv_blocks=30_000))
    w = Workload(num_requests=2000, qps=10, seed=1, input_len=IN, output_len=OUT)
    fast = simulate(cl, w, Concave())
    slow = simulate(cl, w, Concave(), fast_forward=False)
    assert fast.events < slow.events / 2
    for metric in ("ttft_s", "tpot_s", "itl_s", "e2e_s"):
        for stat in ("p50", "p90", "p99", "mean"):
            f, s = getattr(fast, metric)[stat], getattr(slow, metric)[stat]
            assert f == pytest.approx(s, rel=0.01), (metric, stat)


def test_sizes_of_a_simulation_are_bounded() -> None:
    with pytest.raises(ServingError, match="num_requests: 100,001 requests") as info:
        make_requests(Workload(num_requests=MAX_REQUESTS + 1))
    assert info.value.field == "workload.num_requests"
    with pytest.raises(InputError, match="seed") as info:
        make_requests(Workload(num_requests=1, seed=-1))  # numpy: a bare ValueError
    assert info.value.field == "workload.seed"
    with pytest.raises(ServingError, match="replicas: 1,025") as info:
        simulate(ClusterConfig(EngineConfig(kv_blocks=10), replicas=MAX_REPLICAS + 1),
                 Workload(num_requests=1), Linear())
    assert info.value.field == "replicas"


def test_a_trace_above_the_request_limit_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "big.csv"
    path.write_text("timestamp_s,input_len,output_len\n"
                    + "0,10,5\n" * (MAX_REQUESTS + 1))
    with pytest.raises(ServingError, match="100,001 requests"):
        load_trace(path)


@pytest.mark.parametrize("std", [math.inf, math.nan, 2000.0])
def test_length_spreads_must_be_finite_and_plausible(std: float) -> None:
    # std 2000 on a mean of 100 is a coefficient of variation of 20, above the limit of 10.
    with pytest.raises(ServingError, match=r"input_len"):
        make_requests(Workload(num_requests=5, input_len=Lengths("lognormal", 100, std)))


def test_lengths_at_the_spread_limit_stay_positive_integers() -> None:
    # An infinite spread drew NaN lengths, cast to -9.2e18 tokens (serve estimate reported
    # -2.5e19 tokens/s); at the largest spread allowed every length is a sane count.
    x = Lengths("lognormal", 100, 100 * MAX_LENGTH_CV).sample(100_000, np.random.default_rng(0))
    assert x.min() >= 1 and x.max() <= 2**31 - 1


def test_a_full_decode_replica_delays_the_first_token() -> None:
    """Two requests, one decode seat: the second's KV arrives but its first token waits for
    the first request to finish and free the seat."""
    m = Linear()
    pd = Disaggregation(prefill_replicas=1, decode_replicas=1, kv_bytes_per_token=1.0,
                        link_bytes_per_s=1e12)
    cl = ClusterConfig(EngineConfig(kv_blocks=1000, max_num_seqs=1), disaggregation=pd)
    res = simulate(cl, Workload(arrival="trace"), m, requests=reqs((0.0, 100, 50),
                                                                  (0.0, 100, 50)))
    first, second = sorted(per(res, "ttft_s"))
    assert second > first + 40 * m.step_s(0, 1, 0)  # behind the other's 49 decode steps


def test_a_first_chunk_delays_ttft_and_not_the_end() -> None:
    """A disaggregated cluster whose client gets its first token with the decode replica's
    first chunk of 3 tokens: TTFT two decode steps later than with the prefill's token, the
    request's end where it was."""
    m = Linear()
    base_pd = Disaggregation(prefill_replicas=1, decode_replicas=1, kv_bytes_per_token=131072,
                             link_bytes_per_s=50e9)
    out = []
    for k in (0, 3):
        cl = ClusterConfig(EngineConfig(kv_blocks=1000),
                           disaggregation=replace(base_pd, first_chunk_tokens=k))
        out.append(simulate(cl, Workload(arrival="trace"), m, requests=reqs((0.0, 1000, 5))))
    step = m.step_s(0, 1, 0)
    assert out[1].ttft_s["mean"] == pytest.approx(out[0].ttft_s["mean"] + 2 * step)
    assert out[1].e2e_s["mean"] == pytest.approx(out[0].e2e_s["mean"])
    bad = ClusterConfig(EngineConfig(kv_blocks=1000),
                        disaggregation=replace(base_pd, first_chunk_tokens=-1))
    with pytest.raises(ServingError, match="first_chunk_tokens"):
        simulate(bad, Workload(arrival="trace"), m, requests=reqs((0.0, 1000, 5)))


def _prefix_reqs(*rows: tuple[float, int, int, int]) -> Requests:
    """Requests from (arrival s, input tokens, output tokens, prefix id) rows, each sharing
    its whole prompt under its prefix id."""
    a = np.array(rows, dtype=np.float64)
    return Requests(a[:, 0], a[:, 1].astype(np.int64), a[:, 2].astype(np.int64),
                    a[:, 3].astype(np.int64), a[:, 1].astype(np.int64))


def test_host_tier_loads_a_prefix_hbm_no_longer_holds_at_its_block_rate() -> None:
    m = Linear()
    load = 44e-6  # seconds a block
    cfg = dict(enable_prefix_caching=True, gpu_prefix_cache=False, host_kv_blocks=1000,
               host_block_load_s=load)
    rows = [(0.0, 1600, 1, 7), (10.0, 1600, 1, 7)]
    res = simulate(ClusterConfig(EngineConfig(kv_blocks=1000, **cfg)),  # type: ignore[arg-type]
                   Workload(arrival="trace"), m, requests=_prefix_reqs(*rows))
    first, second = per(res, "ttft_s")
    assert first == pytest.approx(m.step_s(1600, 0, 0))
    # 99 of the 100 blocks load (the last token is always computed): its 16 tokens' step
    # plus 99 block loads.
    assert second == pytest.approx(m.step_s(16, 0, 0) + 99 * load)
    assert res.host_hit_rate == pytest.approx(99 * 16 / 3200)
    assert res.prefix_hit_rate == pytest.approx(99 * 16 / 3200)
    # Without the host tier, the second request computes its prompt again.
    cold = simulate(ClusterConfig(EngineConfig(kv_blocks=1000, enable_prefix_caching=True,
                                               gpu_prefix_cache=False)),
                    Workload(arrival="trace"), m, requests=_prefix_reqs(*rows))
    assert per(cold, "ttft_s")[1] == pytest.approx(first)
    assert cold.host_hit_rate == 0.0


def test_host_tier_is_least_recently_used_and_hbm_hits_come_first() -> None:
    m = Linear()
    # Room for one 100-block prefix in the host tier: prefix 2 evicts prefix 1.
    cfg = EngineConfig(kv_blocks=1000, enable_prefix_caching=True, gpu_prefix_cache=False,
                       host_kv_blocks=150, host_block_load_s=1e-4)
    rows = [(0.0, 1600, 1, 1), (10.0, 1600, 1, 2), (20.0, 1600, 1, 1), (30.0, 1600, 1, 2)]
    res = simulate(ClusterConfig(cfg), Workload(arrival="trace"), m,
                   requests=_prefix_reqs(*rows))
    assert res.host_hit_rate == 0.0
    # With HBM caching on and room for both, HBM serves the hits and nothing loads.
    hbm = simulate(ClusterConfig(replace(cfg, gpu_prefix_cache=True)),
                   Workload(arrival="trace"), m, requests=_prefix_reqs(*rows))
    assert hbm.host_hit_rate == 0.0
    assert hbm.prefix_hit_rate == pytest.approx(2 * 99 * 16 / 6400)
    # HBM too small to keep a prefix once a second one arrives: the host tier serves it.
    small = simulate(ClusterConfig(replace(cfg, gpu_prefix_cache=True, kv_blocks=120,
                                           host_kv_blocks=1000)),
                     Workload(arrival="trace"), m, requests=_prefix_reqs(*rows))
    assert small.host_hit_rate == pytest.approx(2 * 99 * 16 / 6400)
    assert max(per(small, "ttft_s")[2:]) == pytest.approx(m.step_s(16, 0, 0) + 99 * 1e-4)


def test_host_tier_settings_are_checked() -> None:
    with pytest.raises(sv.ServingError, match="host_kv_blocks"):
        simulate(ClusterConfig(EngineConfig(kv_blocks=10, host_kv_blocks=-1)),
                 Workload(num_requests=1), Linear())
    with pytest.raises(sv.ServingError, match="host_block_load_s"):
        simulate(ClusterConfig(EngineConfig(kv_blocks=10, host_block_load_s=math.nan)),
                 Workload(num_requests=1), Linear())


def _tight_prefill_first() -> tuple[int, int, float]:
    """Two decoding requests hold about 38 of 80 blocks (and will need 50) when a 900-token
    prompt (57 blocks) arrives at a prefill-first engine with 512-token chunks: its first
    chunk fits, the whole of it does not. (preemptions, events, the prompt's TTFT)."""
    cfg = EngineConfig(kv_blocks=80, max_num_batched_tokens=512, prefill_first=True)
    res = simulate(ClusterConfig(cfg), Workload(arrival="trace"), Linear(),
                   requests=reqs((0.0, 200, 200), (0.0, 200, 200), (0.5, 900, 5)))
    return res.preemptions, res.events, float(per(res, "ttft_s")[2])


def test_a_prefill_first_engine_admits_a_prompt_only_when_all_of_it_fits() -> None:
    # It used to admit the prompt a chunk at a time, preempt it for its second chunk (the
    # paused decodes hold the blocks), admit it again, and so on for ever: `serve plan
    # --engine sglang` with 30,000-token prompts never ended. Run apart, with a guard.
    import multiprocessing as mp

    with mp.get_context("spawn").Pool(1) as pool:
        job = pool.apply_async(_tight_prefill_first)
        preemptions, events, ttft = job.get(timeout=60)
    assert preemptions == 0
    assert events < 2_000
    # The prompt waits for the decodes to finish (200 tokens at about 5 ms), then prefills
    assert ttft > 0.5


def test_a_cache_aware_router_keeps_each_prefix_on_one_replica() -> None:
    """Eight shared documents of 1,024 tokens over four replicas whose caches (300 blocks of
    16) hold two of them beside the running prompts: behind a least-outstanding router every
    replica computes every document and evicts the others; the cache-aware router sends a
    document's prompts where it was sent first, so each replica keeps its own two and the
    reuse nears the prefix share of the prompt less the eight cold misses (1,024 / 1,088 x
    (1 - 8 / 1,200) = 93.5 %)."""
    w = Workload(num_requests=1200, qps=40, seed=7, prefix_groups=8, shared_prefix_len=1024,
                 input_len=Lengths("fixed", 64), output_len=Lengths("fixed", 16))
    eng = EngineConfig(kv_blocks=300, enable_prefix_caching=True)
    hits = {}
    for router in ("least_outstanding", "cache_aware"):
        hits[router] = simulate(ClusterConfig(eng, replicas=4, router=router), w,
                                REAL).prefix_hit_rate
    assert hits["cache_aware"] == pytest.approx(1024 / 1088 * (1 - 8 / 1200), abs=0.01)
    assert hits["least_outstanding"] < 0.6


def test_the_cache_aware_router_balances_load_past_its_thresholds() -> None:
    """One shared document and two replicas: within the thresholds every prompt follows the
    document to one replica; with none allowed (balance_abs 0, balance_rel 1) the router
    balances, and a prefix below the cache threshold never pins a prompt."""
    w = Workload(num_requests=400, qps=30, seed=8, prefix_groups=1, shared_prefix_len=512,
                 input_len=Lengths("fixed", 64), output_len=Lengths("fixed", 64))
    eng = EngineConfig(kv_blocks=2000, enable_prefix_caching=True)

    def busiest_share(**kw: float) -> float:
        sim = sv._Sim(ClusterConfig(eng, replicas=2, router="cache_aware", **kw),
                      make_requests(w), REAL, w, True)
        seen: list[int] = []
        real = sim.route_prefix

        def spy(r: object) -> object:
            rep = real(r)  # type: ignore[arg-type]
            seen.append(sim.front.index(rep))
            return rep

        sim.route_prefix = spy  # type: ignore[method-assign]
        sim.run()
        return max(seen.count(0), seen.count(1)) / len(seen)

    assert busiest_share() == 1.0
    assert busiest_share(balance_abs=0, balance_rel=1.0) < 0.75
    assert busiest_share(cache_threshold=0.95) < 0.75
    with pytest.raises(InputError, match="router"):
        ClusterConfig(eng, router="cache_aware", balance_rel=0.5).validate()
