"""The scheduling twin on tiny hand-made traces whose right answer is worked out by hand."""

from __future__ import annotations

import json
import math

import pytest

from clusterwright.catalog.registry import Catalog
from clusterwright.catalog.schema import MigProfile
from clusterwright.errors import InputError
from clusterwright.sim.cluster import ClusterConfig, ClusterResult, Upgrade, simulate
from clusterwright.sim.cluster_config import LLAMA3_FAILURES_PER_GPU_HOUR
from clusterwright.sim.cluster_jobs import HOUR, MAX_JOBS, Job, JobMix, generate
from clusterwright.sim.cluster_report import summarize
from clusterwright.sim.cluster_shape import ClusterShape, cluster_shape, simple_shape

H = HOUR


def gang(jid: str, nodes: int, submit_h: float, hours: float, priority: int = 0,
         kind: str = "train", checkpoint_h: float = 1.0, comm: float = 0.0) -> Job:
    return Job(id=jid, kind=kind, submit_s=submit_h * H, duration_s=hours * H, nodes=nodes,
               priority=priority, checkpoint_s=checkpoint_h * H, comm_fraction=comm)


def cfg(hours: float, **kw: object) -> ClusterConfig:
    kw.setdefault("failure_rate_per_node_hour", 0.0)
    kw.setdefault("restart_s", 0.0)
    return ClusterConfig(horizon_s=hours * H, **kw)  # type: ignore[arg-type]


def by_id(r: ClusterResult) -> dict[str, Job]:
    return {j.id: j for j in r.jobs}


def start_h(r: ClusterResult, jid: str) -> float:
    return by_id(r)[jid].first_start_s / H


# ---------------------------------------------------------------- policies
# 4 nodes. A holds 3 nodes for 10 h from t=0; B (2 nodes, 5 h) arrives at 1 h and cannot fit
# until A ends at 10 h; C (1 node, 2 h) arrives at 2 h; D (1 node, 20 h) at 3 h; E (2 nodes,
# 20 h) at 3 h.
HOLE = [gang("A", 3, 0, 10), gang("B", 2, 1, 5), gang("C", 1, 2, 2), gang("D", 1, 3, 20),
        gang("E", 2, 3, 20)]
FOUR = simple_shape(4, nodes_per_su=4, sus_per_pod=1)


def test_fifo_head_blocks_the_queue() -> None:
    r = simulate(FOUR, HOLE, cfg(60, policy="fifo"))
    # C fits in the free node at 2 h but waits behind B, which starts when A ends at 10 h;
    # then B (2 nodes), C and D (1 node each) fill the 4 nodes; E (2 nodes) waits for two free
    # nodes: C ends at 12 h (one free), B at 15 h.
    assert start_h(r, "B") == pytest.approx(10)
    assert start_h(r, "C") == pytest.approx(10)
    assert start_h(r, "D") == pytest.approx(10)
    assert start_h(r, "E") == pytest.approx(15)


def test_backfill_fills_the_hole_without_delaying_the_head() -> None:
    r = simulate(FOUR, HOLE, cfg(60, policy="backfill"))
    # B's reservation: 10 h (A's end), with 1 + 3 - 2 = 2 nodes to spare. C ends at 4 h < 10 h:
    # backfilled at 2 h. D (ends 24 h > 10 h) fits in the spare nodes: starts when C frees its
    # node at 4 h. E (2 nodes) would exceed the one spare node left: it waits.
    assert start_h(r, "C") == pytest.approx(2)
    assert start_h(r, "D") == pytest.approx(4)
    assert start_h(r, "B") == pytest.approx(10)  # as under fifo: the reservation held
    assert start_h(r, "E") >= 10


def test_priority_preempts_and_counts_lost_work() -> None:
    jobs = [gang("low", 4, 0, 10, priority=0, checkpoint_h=1),
            gang("high", 2, 2.5, 2, priority=10)]
    r = simulate(FOUR, jobs, cfg(30, policy="priority"))
    j = by_id(r)
    # high preempts low at 2.5 h; low checkpointed at 2 h, so 0.5 h x 4 nodes x 8 GPUs = 16
    # GPU-hours are lost; high runs 2.5-4.5 h; low resumes at 4.5 h with 8 h left: ends 12.5 h.
    assert start_h(r, "high") == pytest.approx(2.5)
    assert r.preemptions == 1 and j["low"].preemptions == 1
    assert r.lost_preemption_gpu_s / H == pytest.approx(16)
    assert j["low"].end_s / H == pytest.approx(12.5)
    fifo = simulate(FOUR, jobs, cfg(30, policy="fifo"))
    assert start_h(fifo, "high") == pytest.approx(10) and fifo.preemptions == 0


def test_priority_picks_the_smallest_victim_that_covers_the_need() -> None:
    jobs = [gang("big", 3, 0, 10), gang("small", 1, 0, 10),
            gang("urgent", 1, 1, 1, priority=5)]
    r = simulate(FOUR, jobs, cfg(30, policy="priority"))
    stops = [(what, jid) for _, what, jid in r.log if what == "preempt"]
    assert stops == [("preempt", "small")]


def test_topology_aware_keeps_a_job_in_one_su() -> None:
    # 8 nodes, SUs of 4. X takes 2 nodes; Y (4 nodes) then fits whole only in the other SU.
    shape = simple_shape(8, nodes_per_su=4, sus_per_pod=2, ratio=(1.0, 1.0, 2.0, 2.0))
    jobs = [gang("X", 2, 0, 100), gang("Y", 4, 1, 10, comm=0.5)]
    plain = simulate(shape, jobs, cfg(50))
    aware = simulate(shape, jobs, cfg(50, topology_aware=True))
    # First fit by index: nodes 2,3 + 4,5 -> across SUs, all-reduce 2x slower, half the step
    # in communication: 1 + 0.5 x (2 - 1) = 1.5x -> 15 h. Topology-aware: nodes 4-7, 10 h.
    assert plain.span_counts[2] == 1 and aware.span_counts[2] == 0
    assert by_id(plain)["Y"].end_s / H == pytest.approx(1 + 15)
    assert by_id(aware)["Y"].end_s / H == pytest.approx(1 + 10)


def test_topology_aware_best_fit_leaves_the_big_hole_whole() -> None:
    shape = simple_shape(8, nodes_per_su=4, sus_per_pod=2)
    # SU0 keeps 1 free node after W; a 1-node job goes there (the fullest SU that fits), so a
    # later 4-node job still finds SU1 whole.
    jobs = [gang("W", 3, 0, 100), gang("one", 1, 1, 100), gang("four", 4, 2, 10)]
    r = simulate(shape, jobs, cfg(50, topology_aware=True))
    assert r.span_counts == [3, 0, 0, 0]


# ---------------------------------------------------------------- shared pool
def _running(r: ClusterResult, kind_ids: set[str], t: float) -> int:
    n = 0
    for when, what, jid in r.log:
        if when <= t and jid in kind_ids:
            n += 1 if what == "start" else -1
    return n


def test_diurnal_pool_hands_nodes_to_finetuning_at_night() -> None:
    # 4 nodes; a service with 4 one-node replicas at 14:00 and 0.25 x 4 = 1 at 02:00
    # (demand = 0.25 + 0.75 x (1 + cos(2 pi (h - 14) / 24)) / 2, rounded up).
    svc = Job(id="svc", kind="inference", submit_s=0.0, duration_s=48 * H, nodes=1,
              replicas=4, night_fraction=0.25, priority=100)
    fts = [gang(f"ft{i}", 1, 0, 4, kind="finetune", checkpoint_h=0.5) for i in range(40)]
    r = simulate(FOUR, [svc, *fts], cfg(48, policy="priority"))
    ids = {j.id for j in fts}
    assert _running(r, ids, 2.5 * H) == 3  # night: the service needs 1 node, fine-tuning 3
    assert _running(r, ids, 14.5 * H) == 0  # peak: all 4 nodes serve
    # Preempted only while demand rises: from the 02:00 trough to the 14:00 peak (at 03:00 the
    # demand is ceil(4 x 0.263) = 2 again).
    stops = [t / H for t, what, _ in r.log if what == "preempt"]
    assert stops and all(2 < t % 24 <= 14 for t in stops)
    sv = r.services[0]
    assert sv.ok_s / sv.total_s == pytest.approx(1.0)
    # Without preemption the morning ramp waits for fine-tuning jobs to end.
    fifo = simulate(FOUR, [svc, *fts], cfg(48, policy="fifo"))
    assert fifo.services[0].ok_s / fifo.services[0].total_s < 1.0


# ---------------------------------------------------------------- failures, upgrades
def test_failure_restarts_from_the_last_checkpoint() -> None:
    two = simple_shape(2, nodes_per_su=2, sus_per_pod=1)
    job = gang("run", 2, 0, 10, checkpoint_h=1)
    r = simulate(two, [job], cfg(30, failures_at=((2.5 * H, 0),), repair_s=1 * H,
                                  restart_s=0.5 * H))
    # Checkpoint at 2 h: 0.5 h x 16 GPUs = 8 GPU-h lost. Node 0 back at 3.5 h; restart costs
    # 0.5 h, then 8 h of work: ends at 12 h.
    assert r.failures == 1
    assert r.lost_failure_gpu_s / H == pytest.approx(8)
    assert by_id(r)["run"].end_s / H == pytest.approx(12)
    assert r.down_gpu_s / H == pytest.approx(8)  # one node of 8 GPUs down for 1 h


def test_default_failure_rate_is_llama3() -> None:
    # 419 / (16,384 GPUs x 54 days x 24 h) per GPU-hour: 3.79 per 1,000 8-GPU node-days.
    per_1000_node_days = LLAMA3_FAILURES_PER_GPU_HOUR * 8 * 24 * 1000
    assert per_1000_node_days == pytest.approx(3.79, abs=0.005)


def test_failure_count_follows_the_rate() -> None:
    shape = simple_shape(256, nodes_per_su=32)
    r = simulate(shape, [], ClusterConfig(horizon_s=30 * 24 * H, seed=3,
                                          failure_rate_per_node_hour=1e-3, repair_s=60.0))
    # 256 nodes x 720 h x 1e-3 = 184 expected; Poisson sd 13.6.
    assert abs(r.failures - 184) < 4 * 13.6


def test_rollout_never_drains_more_than_n_nodes() -> None:
    shape = simple_shape(16, nodes_per_su=4, sus_per_pod=2)
    jobs = [gang(f"g{i}", 2, 0.1 * i, 3) for i in range(30)]
    up = Upgrade(start_s=1 * H, batch_nodes=3, batch_s=1 * H, drain_timeout_s=2 * H)
    r = simulate(shape, jobs, cfg(200, upgrade=up))
    assert r.upgrade_max_out == 3
    assert r.upgrade_done_s is not None
    # Every node out exactly once for 1 h: 16 x 8 GPU-hours.
    assert r.upgrade_gpu_s / H == pytest.approx(16 * 8)
    d = summarize(r)["upgrade"]
    assert d["max_nodes_out"] <= 3 and d["gpu_hours_out_of_service"] == pytest.approx(128)


def test_drain_timeout_checkpoints_long_jobs() -> None:
    two = simple_shape(2, nodes_per_su=2, sus_per_pod=1)
    up = Upgrade(start_s=1 * H, batch_nodes=1, batch_s=1 * H, drain_timeout_s=2 * H)
    r = simulate(two, [gang("long", 2, 0, 20)], cfg(60, upgrade=up))
    # Node 0 drains at 1 h; the gang holds it until the timeout at 3 h, is stopped with a
    # checkpoint (no work lost, restart_s = 0); node 0 is out 3-4 h, then node 1 (idle, since
    # the gang needs both) 4-5 h. The gang resumes at 5 h with 17 h left: ends at 22 h.
    assert r.upgrade_stops == 1
    assert r.lost_upgrade_gpu_s == pytest.approx(0.0)
    assert r.upgrade_done_s == pytest.approx(5 * H)
    assert by_id(r)["long"].end_s / H == pytest.approx(22)


# ---------------------------------------------------------------- MIG in the cluster
@pytest.fixture(scope="module")
def h100_mig(catalog: Catalog) -> list[MigProfile]:
    return list(catalog.gpu("h100-sxm").mig_profiles)


def mig_job(jid: str, profile: str, hours: float, submit_h: float = 0.0) -> Job:
    return Job(id=jid, kind="mig", submit_s=submit_h * H, duration_s=hours * H,
               mig_profile=profile, priority=50)


def test_mig_jobs_pack_one_node_before_taking_another(h100_mig: list[MigProfile]) -> None:
    two = simple_shape(2, nodes_per_su=2, sus_per_pod=1)
    # 56 x 1g.10gb fill 8 GPUs x 7 slots of one node; the 2-node gang must wait for them.
    jobs = [mig_job(f"m{i}", "1g.10gb", 1) for i in range(56)] + [gang("g", 1, 0.1, 1)]
    r = simulate(two, jobs, cfg(10), h100_mig)
    assert start_h(r, "g") == pytest.approx(0.1)  # one node stays free
    jobs57 = [*jobs[:56], mig_job("m56", "1g.10gb", 1), gang("g2", 2, 0.1, 1)]
    r = simulate(two, jobs57, cfg(10), h100_mig)
    assert start_h(r, "g2") == pytest.approx(1.0)  # both nodes in MIG mode until 1 h


@pytest.mark.parametrize(("policy", "small_h"), [("priority", 0.1), ("backfill", 0.1),
                                                  ("fifo", 2.0)])
def test_a_full_mig_profile_does_not_hold_back_one_that_fits(
        h100_mig: list[MigProfile], policy: str, small_h: float) -> None:
    # Seven whole GPUs and a 4g slice leave 3 slices of one GPU free: the queued 7g jobs
    # cannot start (the pass stops trying their profile), the 1g behind them can, except
    # under FIFO, where the head blocks the queue.
    one = simple_shape(1, nodes_per_su=1, sus_per_pod=1)
    jobs = [mig_job(f"w{i}", "7g.80gb", 2) for i in range(7)] + [mig_job("q", "4g.40gb", 2)]
    jobs += [mig_job(f"big{i}", "7g.80gb", 1, submit_h=0.1) for i in range(3)]
    jobs += [mig_job("small", "1g.10gb", 1, submit_h=0.1)]
    r = simulate(one, jobs, cfg(10, policy=policy), h100_mig)
    assert start_h(r, "small") == pytest.approx(small_h)
    assert all(by_id(r)[f"big{i}"].end_s > 0 for i in range(3))  # all run once GPUs free


def test_the_horizon_jobs_and_expected_failures_are_bounded() -> None:
    with pytest.raises(InputError, match=r"horizon_s.*at most 365") as info:
        simulate(FOUR, [], cfg(366 * 24))
    assert info.value.field == "horizon_s"
    with pytest.raises(InputError, match="seed"):
        simulate(FOUR, [], cfg(1, seed=-1))
    with pytest.raises(InputError, match="20,001 jobs") as info:
        simulate(FOUR, [gang(f"j{i}", 1, 0, 1) for i in range(MAX_JOBS + 1)], cfg(1))
    assert info.value.field == "jobs"
    # One failure per node-hour x 64 nodes x 2,000 h would be 128,000 failures.
    many = simple_shape(64, nodes_per_su=8, sus_per_pod=8)
    with pytest.raises(InputError, match="128,000 expected node failures") as info:
        simulate(many, [], cfg(2_000, failure_rate_per_node_hour=1.0))
    assert info.value.field == "failure_rate_per_node_hour"


def test_mig_utilization_counts_compute_slices(h100_mig: list[MigProfile]) -> None:
    one = simple_shape(1, nodes_per_su=1, sus_per_pod=1)
    r = simulate(one, [mig_job("a", "3g.40gb", 2), mig_job("b", "4g.40gb", 2)], cfg(4),
                 h100_mig)
    # One GPU of 8 fully sliced (3 + 4 of 7 compute slices) for 2 of 4 h: 1/8 x 1/2.
    assert summarize(r)["gpu_utilization_mean"] == pytest.approx(1 / 16)


# ---------------------------------------------------------------- conservation, determinism
@pytest.fixture(scope="module")
def mixed(catalog: Catalog) -> tuple[ClusterShape, list[Job], list[MigProfile]]:
    shape = cluster_shape(catalog, "dgx-h100", 96, oversubscription=2.0)
    jobs = generate(JobMix(jobs=400, days=5, train_nodes=(4, 48)), shape.nodes,
                    shape.gpus_per_node, seed=7)
    return shape, jobs, list(catalog.gpu("h100-sxm").mig_profiles)


@pytest.mark.parametrize("policy", ["fifo", "backfill", "priority"])
def test_gpu_hours_are_conserved(
    mixed: tuple[ClusterShape, list[Job], list[MigProfile]], policy: str
) -> None:
    shape, jobs, profiles = mixed
    up = Upgrade(start_s=24 * H, batch_nodes=8, batch_s=2 * H)
    r = simulate(shape, jobs, ClusterConfig(horizon_s=5 * 24 * H, policy=policy,
                                            topology_aware=True, seed=1,
                                            failure_rate_per_node_hour=5e-3, upgrade=up),
                 profiles)
    cap = shape.gpus * 5 * 24 * H
    assert r.failures > 0 and r.upgrade_done_s is not None
    assert r.busy_gpu_s + r.down_gpu_s + r.upgrade_gpu_s <= cap * (1 + 1e-9)
    assert all(0.0 <= u <= 1.0 + 1e-9 for u in r.util_samples)
    assert r.lost_failure_gpu_s + r.lost_preemption_gpu_s + r.lost_upgrade_gpu_s <= r.busy_gpu_s
    for j in r.jobs:
        assert 0.0 <= j.done_s <= j.duration_s + 1e-6
        if j.end_s >= 0 and j.kind in ("train", "finetune"):
            assert j.end_s - j.submit_s >= j.duration_s - 1e-6  # never faster than its work


def test_same_seed_same_result(mixed: tuple[ClusterShape, list[Job], list[MigProfile]]) -> None:
    shape, jobs, profiles = mixed
    c = ClusterConfig(horizon_s=3 * 24 * H, policy="backfill", seed=5,
                      failure_rate_per_node_hour=2e-3)
    a = json.dumps(summarize(simulate(shape, jobs, c, profiles)), sort_keys=True)
    b = json.dumps(summarize(simulate(shape, jobs, c, profiles)), sort_keys=True)
    assert a == b
    other = summarize(simulate(shape, jobs, ClusterConfig(
        horizon_s=3 * 24 * H, policy="backfill", seed=6, failure_rate_per_node_hour=2e-3),
        profiles))
    assert json.dumps(other, sort_keys=True) != a
    assert generate(JobMix(jobs=50), 96, 8, 1)[10] == generate(JobMix(jobs=50), 96, 8, 1)[10]


def test_simulate_does_not_change_the_callers_jobs() -> None:
    jobs = [gang("A", 2, 0, 1)]
    simulate(FOUR, jobs, cfg(5))
    assert jobs[0].end_s == -1.0 and jobs[0].done_s == 0.0


# ---------------------------------------------------------------- shape and bad input
def test_bad_config_names_the_field() -> None:
    with pytest.raises(InputError, match="policy"):
        simulate(FOUR, [], cfg(1, policy="lottery"))
    with pytest.raises(InputError, match="horizon_s"):
        simulate(FOUR, [], ClusterConfig(horizon_s=-1.0))
    with pytest.raises(InputError, match="failure_rate_per_node_hour"):
        simulate(FOUR, [], ClusterConfig(horizon_s=1.0, failure_rate_per_node_hour=-1.0))
    with pytest.raises(InputError, match="needs 5 nodes"):
        simulate(FOUR, [gang("big", 5, 0, 1)], cfg(1))
    with pytest.raises(InputError, match="not offered"):
        simulate(FOUR, [mig_job("m", "1g.10gb", 1)], cfg(1))
    with pytest.raises(InputError, match="divide"):
        simple_shape(8, nodes_per_su=4, nodes_per_leaf=3)
    assert math.isfinite(FOUR.slowdown(3, 1.0))
