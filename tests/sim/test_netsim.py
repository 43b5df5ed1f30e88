"""``run_netsim``: the contract, routing policies on a larger fabric, multi-job interference
and placements, failures, and refused inputs."""

from __future__ import annotations

import math
from typing import Any

import pytest

from clusterwright.catalog.registry import Catalog
from clusterwright.design.fabric import design_fabric
from clusterwright.errors import InputError
from clusterwright.sim.engine import SimError
from clusterwright.sim.netsim import NetsimRequest, placements, run_netsim
from clusterwright.spec.fabric import FabricRequest

GB = 1e9
CONTRACT_KEYS = ("completion_time_s", "algbw_gbps", "busbw_gbps", "max_link_utilization",
                 "closed_form_time_s")
TWO_SUS = FabricRequest(server="dgx-h100", nodes=16, su_hosts=8, switch="sn5600")


def netsim(catalog: Catalog, fabric: FabricRequest | None = None, **kw: Any) -> dict[str, Any]:
    kw.setdefault("collective", "allreduce")
    kw.setdefault("size_bytes", GB)
    return run_netsim(NetsimRequest(fabric=fabric or FabricRequest(server="dgx-h100", nodes=2),
                                    **kw), catalog)


# ---------------------------------------------------------------------------- contract


def test_the_contract_keys_come_first_and_are_consistent(catalog: Catalog) -> None:
    d = netsim(catalog, algorithm="ring")
    assert tuple(d)[:len(CONTRACT_KEYS)] == CONTRACT_KEYS
    t = d["completion_time_s"]
    assert 0 < t < math.inf
    assert d["algbw_gbps"] == pytest.approx(GB / t / 1e9)
    assert d["busbw_gbps"] == pytest.approx(d["algbw_gbps"] * 2 * 15 / 16)
    assert 0 < d["max_link_utilization"] <= 1
    assert d["error_vs_closed_form"] == pytest.approx(t / d["closed_form_time_s"] - 1)
    assert d["closed_form_best_time_s"] <= d["closed_form_time_s"] * (1 + 1e-12)
    assert (d["ranks"], d["gpus"], d["nodes"], d["algorithm"]) == (16, 16, 2, "ring")
    assert d["flows"] == 8 * 16
    assert d["top_links"] and all(0 <= x["utilization"] <= 1 for x in d["top_links"])
    assert "jobs" not in d


def test_a_run_is_reproducible(catalog: Catalog) -> None:
    a = netsim(catalog, TWO_SUS, algorithm="tree", seed=4)
    b = netsim(catalog, TWO_SUS, algorithm="tree", seed=4)
    for key in CONTRACT_KEYS:
        assert a[key] == b[key]


def test_ranks_restrict_the_job(catalog: Catalog) -> None:
    d = netsim(catalog, FabricRequest(server="dgx-h100", nodes=4), ranks=8, algorithm="ring")
    assert d["ranks"] == 8
    assert d["max_link_utilization"] == 0  # one server: NVLink only
    assert d["max_nvlink_utilization"] > 0.5


# ---------------------------------------------------------------------------- routing

BIG = FabricRequest(server="dgx-h100", nodes=64, switch="qm9700")


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_spray_and_adaptive_are_never_slower_than_ecmp(catalog: Catalog, seed: int) -> None:
    """Tree all-reduce on 64 DGX H100s: cross-leaf traffic that ECMP hashes unevenly."""
    t = {r: netsim(catalog, BIG, algorithm="tree", routing=r, seed=seed)["completion_time_s"]
         for r in ("ecmp", "adaptive", "spray")}
    assert t["spray"] <= t["ecmp"] * (1 + 1e-9)
    assert t["adaptive"] <= t["ecmp"] * (1 + 1e-9)
    if seed == 0:
        assert t["ecmp"] > 1.2 * t["spray"]  # collisions matter here


def test_ecmp_seeds_change_the_outcome(catalog: Catalog) -> None:
    times = {netsim(catalog, BIG, algorithm="tree", seed=s)["completion_time_s"]
             for s in range(4)}
    assert len(times) > 1


def test_polarized_ecmp_is_no_better_on_three_tiers(catalog: Catalog) -> None:
    fab = FabricRequest(server="dgx-h100", nodes=64, switch="qm9700", tiers=3, su_hosts=8)
    mean = {}
    for pol in (False, True):
        mean[pol] = sum(netsim(catalog, fab, algorithm="tree", seed=s, polarized=pol)
                        ["completion_time_s"] for s in range(3)) / 3
    assert mean[True] > 1.5 * mean[False]


def test_more_queue_pairs_help_ecmp(catalog: Catalog) -> None:
    one = sum(netsim(catalog, BIG, algorithm="tree", seed=s)["completion_time_s"]
              for s in range(3))
    many = sum(netsim(catalog, BIG, algorithm="tree", seed=s, qps=8)["completion_time_s"]
               for s in range(3))
    assert many < one


# ---------------------------------------------------------------------------- jobs


def test_spread_jobs_interfere(catalog: Catalog) -> None:
    d = netsim(catalog, TWO_SUS, algorithm="ring", ranks=64, jobs=2, placement="spread")
    assert len(d["jobs"]) == 2
    assert all(s >= 1 - 1e-9 for s in d["slowdown_vs_solo"])
    assert max(d["slowdown_vs_solo"]) > 1.2
    assert d["completion_time_s"] == max(j["time_s"] for j in d["jobs"])
    assert d["jobs"][0]["hosts"] == [0, 2, 4, 6]  # interleaved (first four shown)


def test_contiguous_jobs_on_separate_units_do_not_interfere(catalog: Catalog) -> None:
    d = netsim(catalog, TWO_SUS, algorithm="ring", ranks=64, jobs=2, placement="contiguous")
    assert d["slowdown_vs_solo"] == pytest.approx([1.0, 1.0], rel=1e-9)
    assert [j["hosts"] for j in d["jobs"]] == [[0, 1, 2, 3], [8, 9, 10, 11]]


def test_jobs_on_disjoint_links_have_no_slowdown_under_ecmp(catalog: Catalog) -> None:
    """32 servers, 4 SUs: each job owns two SUs' leaves and leaf-spine links outright."""
    fab = FabricRequest(server="dgx-h100", nodes=32, su_hosts=8, switch="sn5600")
    for seed in range(5):
        d = netsim(catalog, fab, algorithm="tree", ranks=128, jobs=2, seed=seed)
        assert d["slowdown_vs_solo"] == pytest.approx([1.0, 1.0], rel=1e-9), seed


def test_random_placement_is_reproducible_by_seed(catalog: Catalog) -> None:
    fab = design_fabric(FabricRequest(server="dgx-h100", nodes=32), catalog)
    a = placements(fab, 8, 64, 3, "random", seed=5)
    assert a == placements(fab, 8, 64, 3, "random", seed=5)
    assert a != placements(fab, 8, 64, 3, "random", seed=6)
    assert [len(j) for j in a] == [64, 64, 64]
    flat = [g for j in a for g in j]
    assert len(set(flat)) == len(flat)  # jobs never share a GPU
    for j in a:
        hosts = {g // 8 for g in j}
        assert len(hosts) == 8 and all(0 <= h < 32 for h in hosts)


@pytest.mark.parametrize("how", ["contiguous", "spread", "random"])
def test_placements_are_disjoint_whole_servers(catalog: Catalog, how: str) -> None:
    fab = design_fabric(FabricRequest(server="dgx-h100", nodes=32), catalog)
    jobs = placements(fab, 8, 24, 4, how, seed=0)
    flat = [g for j in jobs for g in j]
    assert len(set(flat)) == len(flat) == 96
    for j in jobs:
        assert len({g // 8 for g in j}) == 3


# ---------------------------------------------------------------------------- failures


def test_a_spine_failing_mid_run_slows_the_collective_but_it_completes(
        catalog: Catalog) -> None:
    """Two SUs joined by two spines: losing one halves the cross-unit capacity."""
    base = netsim(catalog, TWO_SUS, algorithm="tree")
    T = base["completion_time_s"]
    at_start = netsim(catalog, TWO_SUS, algorithm="tree",
                      failures=["spine-001"])["completion_time_s"]
    mid = netsim(catalog, TWO_SUS, algorithm="tree", failures=["spine-001"],
                 fail_at_s=T / 2)["completion_time_s"]
    assert T < mid < at_start < math.inf


def test_a_degraded_spine_slows_cross_unit_traffic(catalog: Catalog) -> None:
    base = netsim(catalog, TWO_SUS, algorithm="tree", routing="spray")
    slow = netsim(catalog, TWO_SUS, algorithm="tree", routing="spray",
                  degraded=[("spine-001", 0.25), ("spine-002", 0.25)])
    assert slow["completion_time_s"] > 1.5 * base["completion_time_s"]
    assert slow["degraded"] == [{"name": "spine-001", "factor": 0.25},
                                {"name": "spine-002", "factor": 0.25}]


def test_failing_a_leaf_a_rank_hangs_off_names_the_gpu(catalog: Catalog) -> None:
    with pytest.raises(SimError, match=r"gpu00002/gpu\d"):
        netsim(catalog, FabricRequest(server="dgx-h100", nodes=2, tiers=2), algorithm="ring",
               failures=["leaf-su001-r3"])


def test_a_failure_after_the_end_changes_nothing(catalog: Catalog) -> None:
    base = netsim(catalog, TWO_SUS, algorithm="tree")
    late = netsim(catalog, TWO_SUS, algorithm="tree", failures=["spine-001"], fail_at_s=10.0)
    assert late["completion_time_s"] == base["completion_time_s"]


def test_a_partial_rails_fabric_runs_an_all_reduce(catalog: Catalog) -> None:
    fab = FabricRequest(server="dgx-h100", nodes=4, switch="sn5600", rails=1, su_hosts=1,
                        leaf_uplinks=2, tiers=2)
    d = netsim(catalog, fab, algorithm="ring")
    assert d["completion_time_s"] > 0


# ---------------------------------------------------------------------------- refusals


# Errors name the request's field (a face words it: the CLI as its flag), never a flag.
@pytest.mark.parametrize(("kw", "field", "match"), [
    ({"ranks": 100000}, "ranks", "ranks: 100000 is more than"),
    ({"ranks": 1}, "ranks", "at least 2"),
    ({"ranks": 12, "jobs": 2}, "ranks", r"12 ranks x 2 jobs = 24 GPUs"),
    ({"size_bytes": 0.0}, "size_bytes", "positive finite"),
    ({"size_bytes": math.nan}, "size_bytes", "positive finite"),
    ({"routing": "foo"}, "routing", "unknown policy 'foo'"),
    ({"collective": "foo"}, "collective", "unknown 'foo'"),
    ({"algorithm": "foo"}, "algorithm", "unknown 'foo'"),
    ({"algorithm": "nvls"}, "algorithm", "nvls"),
    ({"collective": "allgather", "algorithm": "tree"}, "algorithm", "tree"),
    ({"placement": "foo", "jobs": 2, "ranks": 8}, "placement", "unknown 'foo'"),
    ({"jobs": 0}, "jobs", "at least 1"),
    ({"qps": 0}, "qps", "at least 1"),
    ({"failures": ["nosuchswitch"]}, "failures", "no device or link named .nosuchswitch."),
    ({"degraded": [("nosuch", 0.5)]}, "degraded", "no device or link named .nosuch."),
    ({"degraded": [("spine-001", 2.0)]}, "degraded", "spine-001=2"),
    ({"degraded": [("spine-001", 0.0)]}, "degraded", "spine-001=0"),
])
def test_bad_requests_raise_sim_errors_naming_the_field(
        catalog: Catalog, kw: dict[str, Any], field: str | None, match: str) -> None:
    with pytest.raises(SimError, match=match) as info:
        netsim(catalog, **kw)
    assert info.value.field == field
    assert "--" not in str(info.value)


def test_an_all_to_all_above_max_flows_is_aggregated_and_says_so(catalog: Catalog) -> None:
    d = netsim(catalog, FabricRequest(server="dgx-h100", nodes=513), collective="alltoall",
               size_bytes=1e6)
    n = 513 * 8
    assert d["aggregated"] is True and d["flows"] == n * (n - 1)
    assert netsim(catalog, collective="alltoall")["aggregated"] is False


def test_an_infinite_size_is_refused(catalog: Catalog) -> None:
    with pytest.raises(SimError, match="size_bytes") as info:
        netsim(catalog, size_bytes=math.inf)
    assert info.value.field == "size_bytes"


# ---------------------------------------------------------------------------- bounds, timings


@pytest.mark.parametrize(("kw", "field"), [
    ({"seed": -1}, "seed"),
    ({"seed": 2**32}, "seed"),
    ({"jobs": 33, "ranks": 2}, "jobs"),
    ({"qps": 129}, "qps"),
])
def test_out_of_range_requests_blame_their_field(catalog: Catalog, kw: dict[str, Any],
                                                 field: str) -> None:
    with pytest.raises(InputError) as info:
        netsim(catalog, **kw)
    assert info.value.field == field


def test_a_fabric_above_the_simulators_size_is_refused_before_it_is_designed(
        catalog: Catalog) -> None:
    with pytest.raises(SimError, match="at most 131,072") as info:
        netsim(catalog, FabricRequest(server="dgx-h100", nodes=16385))
    assert info.value.field == "nodes"


def test_queue_pairs_count_against_the_flow_limit(catalog: Catalog) -> None:
    # 512 GPUs all-to-all: 261,632 flows, 33.5 million with 128 queue pairs each.
    fab = FabricRequest(server="dgx-h100", nodes=64)
    with pytest.raises(SimError, match="queue pairs counted") as info:
        netsim(catalog, fab, collective="alltoall", qps=128, size_bytes=1e6)
    assert info.value.field == "qps"
    # Adaptive routing places flows one at a time: its limit is lower (2.1 million here).
    with pytest.raises(SimError, match="adaptive routing") as info:
        netsim(catalog, fab, collective="alltoall", qps=8, routing="adaptive", size_bytes=1e6)
    assert info.value.field == "qps"


def test_wall_clock_fields_are_under_timings_only(catalog: Catalog) -> None:
    one, two = netsim(catalog, seed=5), netsim(catalog, seed=5)
    assert set(one.pop("timings")) == {"build_wall_s", "sim_wall_s", "events_per_s"}
    two.pop("timings")
    assert one == two


# ------------------------------------------------------------------ congestion control


def test_fluid_run_matches_max_min_without_congestion(catalog: Catalog) -> None:
    # One server pair, a ring: no switch port is shared, so no queue forms and the fluid
    # completion equals the max-min one (latencies included).
    d = netsim(catalog, size_bytes=64e6, algorithm="ring", cc="none")
    c = d["congestion_control"]
    assert c["completion_time_s"] == pytest.approx(d["completion_time_s"], rel=0.02)
    assert c["paused_links"] == 0


def test_spraying_beats_ecmp_under_dcqcn_where_hashes_collide(catalog: Catalog) -> None:
    fab = FabricRequest(server="dgx-h100", nodes=16, su_hosts=8, switch="sn5600",
                        oversubscription=2.0)
    runs = {r: netsim(catalog, fab, size_bytes=16e6, algorithm="ring", routing=r, cc="dcqcn")
            for r in ("ecmp", "spray")}
    assert (runs["spray"]["congestion_control"]["completion_time_s"]
            <= runs["ecmp"]["congestion_control"]["completion_time_s"])


def test_a_pfc_storm_holds_the_incast(catalog: Catalog) -> None:
    fab = FabricRequest(server="dgx-h100", nodes=8, switch="sn5600")
    d = netsim(catalog, fab, collective=None, incast=4, size_bytes=1e6, pfc=True,
               storm=["gpu00001/nic0"])
    c = d["congestion_control"]
    assert not c["completed"] and c["completion_time_s"] is None
    assert c["pauses"][0]["link"].endswith("->gpu00001/nic0")


def test_pfc_on_infinband_is_refused(catalog: Catalog) -> None:
    fab = FabricRequest(server="dgx-h100", nodes=4, switch="qm9700")
    with pytest.raises(SimError, match="pfc: the backend fabric is InfiniBand"):
        netsim(catalog, fab, collective=None, incast=2, size_bytes=1e6, pfc=True)


def test_seventeen_servers_ring_on_a_one_tier_rail_fabric(catalog: Catalog) -> None:
    """17 DGX H100 on one tier of rail leaves (no spines): a rail-aligned ring runs."""
    d = netsim(catalog, FabricRequest(server="dgx-h100", nodes=17), collective="allgather",
               size_bytes=1e8, algorithm="ring")
    assert d["completion_time_s"] > 0


@pytest.mark.parametrize("routing", ["ecmp", "spray"])
def test_cross_rail_traffic_without_spines_names_the_fabric_not_failures(
        catalog: Catalog, routing: str) -> None:
    """An all-to-all without PXN on a rail-only fabric has no path between rails. It was
    blamed on failures nobody gave (ECMP) or crashed dividing by zero (spray)."""
    with pytest.raises(SimError, match=r"no path between.*rails"):
        netsim(catalog, FabricRequest(server="dgx-h100", nodes=16), collective="alltoall",
               size_bytes=1e6, pxn=False, routing=routing)


@pytest.mark.parametrize("algorithm", ["ring", "tree"])
def test_an_nvl72_domain_keeps_its_traffic_on_nvlink(catalog: Catalog, algorithm: str) -> None:
    """Two GB200 NVL72 racks: the rings and trees group the rack's 72 GPUs, as the closed
    form does; grouped by 4-GPU tray, the flow model sent ~27x the bytes over the NICs and
    took 2.8x the closed form."""
    d = netsim(catalog, FabricRequest(server="gb200-nvl72", nodes=2, cooling="liquid",
                                      rack_kw=142), size_bytes=1e10, algorithm=algorithm)
    assert abs(d["error_vs_closed_form"]) < 0.1


def test_an_all_to_all_past_2048_ranks_is_aggregated_by_default(catalog: Catalog) -> None:
    """4,096 Trainium2 ranks (16.8M connections) took 29 s routed one by one, just under the
    hard cap; above 2,048 ranks the default is the per-leaf-pair aggregate (0.2 s)."""
    d = netsim(catalog, FabricRequest(server="trn2-ultraserver", nodes=64),
               collective="alltoall", size_bytes=1e8)
    assert d["aggregated"] is True and d["ranks"] == 4096
    assert d["error_vs_closed_form"] == pytest.approx(0.0, abs=0.1)
