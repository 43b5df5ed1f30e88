"""Blueprint dicts built by hand after docs/blueprint contract (schema 1.0), so the report's
tests do not depend on the planners. Numbers are those of ``fabric design``, ``ops power``,
``ops tco`` and ``ops reliability`` for 128 DGX H100 (rounded), not recomputed here."""

from __future__ import annotations

from typing import Any


def _racks(nodes: int, per_rack: int = 4) -> list[dict[str, Any]]:
    racks: list[dict[str, Any]] = []
    n_compute = -(-nodes // per_rack)
    for r in range(n_compute):
        hosts = min(per_rack, nodes - r * per_rack)
        devices = [{"name": f"gpu{r * per_rack + i + 1:05d}", "role": "host", "u": 2 + 10 * i,
                    "height_u": 8} for i in range(hosts)]
        racks.append({"name": f"r{r // 22 + 1:03d}-{r % 22 + 1:02d}", "row": r // 22 + 1,
                      "role": "compute", "kw_nameplate": 10.2 * hosts,
                      "kw_typical": 7.752 * hosts, "units": 48, "devices": devices})
    n_net = max(nodes // 32, 1)
    for k in range(n_net):
        devices = [{"name": f"leaf-su{k + 1:02d}-r{i + 1}", "role": "leaf", "u": 1 + i,
                    "height_u": 1} for i in range(8)]
        devices += [{"name": f"spine-{k * 2 + i + 1:03d}", "role": "spine", "u": 20 + i,
                     "height_u": 1, "power_w": 1370.0} for i in range(2)]
        devices.append({"name": f"oob-leaf-{k + 1:02d}", "role": "oob-leaf", "u": 40,
                        "height_u": 1})
        racks.append({"name": f"n{k + 1:03d}", "row": "N", "role": "network",
                      "kw_nameplate": 21.1, "kw_typical": 14.0, "units": 48,
                      "devices": devices})
    return racks


def full(nodes: int = 128) -> dict[str, Any]:
    """A feasible on-prem blueprint: one training, one inference and one fine-tune workload."""
    gpus = nodes * 8
    three_tier = nodes > 1024
    sus = max(nodes // 64, 1)
    return {
        "schema_version": "1.0",
        "clusterwright_version": "0.1.0",
        "scenario": {"name": "llama3-70b-pretrain", "description": "Train Llama 3 70B on 15T "
                     "tokens in 90 days and serve it by day.", "seed": 7,
                     "source": "examples/train.yaml", "workloads": [],
                     "constraints": {"power_per_rack_kw": 42.9, "budget_usd": 6e7}},
        "feasible": True,
        "binding_constraints": [],
        "recommendation": {
            "summary": "Buy 128 DGX H100 on a 1:1 rail-optimised RoCE fabric.",
            "gpu": "h100-sxm", "server": "dgx-h100", "nodes": nodes, "gpus": gpus,
            "deployment": "on-prem", "capex_usd": 40866810.0, "annual_opex_usd": 7663453.9,
            "cloud_annual_cost_usd": 49372200.96, "breakeven_months": 11.76,
            "total_cost_usd": 79184079.6, "cost_basis": "5 years on-prem: capex + 5 x opex",
            "cost_per_gpu_hour_usd": 2.2069},
        "alternatives": [
            {"gpu": "h200-sxm", "server": "dgx-h200", "nodes": 112, "gpus": 896,
             "total_cost_usd": 97400000.0, "feasible": True, "why_not": "cost +23 %"},
            {"gpu": "a100-sxm-80gb", "server": "dgx-a100", "nodes": 256, "gpus": 2048,
             "total_cost_usd": 88000000.0, "feasible": False,
             "why_not": "misses deadline by 12 days"}],
        "workloads": [
            {"name": "pretrain", "kind": "training", "gpu": "h100-sxm", "gpus": gpus,
             "layout": {"tp": 8, "pp": 4, "dp": gpus // 32, "cp": 1, "ep": 1, "zero": 1,
                        "micro_batch": 1},
             "step_time_s": 9.87,
             "breakdown": {"compute_s": 7.1, "tp_comm_s": 1.2, "pp_comm_s": 0.1,
                           "pp_bubble_s": 0.9, "dp_comm_exposed_s": 0.3, "cp_comm_s": 0.0,
                           "ep_comm_s": 0.0, "optimizer_s": 0.17, "other_s": 0.1},
             "mfu": 0.412, "tokens_per_s": 1.7e6, "time_to_train_days": 84.2,
             "gpu_hours": 2.07e6, "deadline_days": 90,
             "checkpoint": {"bytes": 1.1e12, "write_s": 42.0, "interval_s": 1900.0,
                            "restart_s": 600.0, "ettr": 0.93},
             "time_to_train_days_p10": 88.0, "time_to_train_days_p50": 89.4,
             "time_to_train_days_p90": 91.7},
            {"name": "chat", "kind": "inference", "gpu": "h100-sxm", "tp": 4, "ep": 1,
             "replicas": 6, "gpus": 24, "peak_qps": 20.0,
             "slo": {"ttft_p99_s": 0.5, "tpot_p99_s": 0.05},
             "ttft_p99_s": 0.31, "tpot_p99_s": 0.038, "cost_per_million_tokens_usd": 0.61,
             "curve": [{"qps": q, "ttft_p99_s": 0.1 + 0.012 * q, "tpot_p99_s": 0.02 + 0.001 * q,
                        "tokens_per_s_per_gpu": 90.0 * q, "tokens_per_s_per_user": 40.0,
                        "meets_slo": q <= 25} for q in (2, 5, 10, 20, 30)],
             "pareto": [],
             "diurnal_gpus": [8] * 7 + [16] * 10 + [24] * 4 + [8] * 3},
            {"name": "nightly-sft", "kind": "finetune", "gpu": "h100-sxm", "gpus": 16,
             "gpu_hours": 96.0, "hours": 6.0, "window": {"start_h": 0, "end_h": 7},
             "fits_window": True, "runs_on": "inference pool at night"}],
        "cluster": {"gpu": "h100-sxm", "server": "dgx-h100", "nodes": nodes, "gpus": gpus,
                    "nvlink_domain_gpus": 8},
        "fabric": {"nodes": nodes, "gpus": gpus, "tiers": 3 if three_tier else 2,
                   "switch": "sn5600", "link_speed_gbps": 400.0, "planes": 1,
                   "pods": 4 if three_tier else 1,
                   "leaf_switches": sus * 8, "spine_switches": sus * 8 if three_tier else 8,
                   "core_switches": sus * 4 if three_tier else 0,
                   "links_by_tier": {"node-leaf": gpus, "leaf-spine": gpus,
                                     "spine-core": gpus if three_tier else 0},
                   "transceivers": 2490, "cables": 2528, "power_w": 71581.8,
                   "cost_usd": 4362410.0, "oversubscription": {"leaf": 1.0, "spine": None},
                   "scalable_units": sus, "nodes_per_su": min(64, nodes),
                   "protocol": "ethernet", "backend": "rail",
                   "shape": {"rails": 8, "planes": 1, "radix": 64,
                             "tiers": 3 if three_tier else 2, "su_hosts": 64,
                             "nodes_per_su": 64, "hosts_per_node": 1, "sus": sus,
                             "pods": 4 if three_tier else 1, "leaves_per_su": 8,
                             "leaves_per_rail_su": 1, "leaf_down_ports": 64,
                             "leaf_up_ports": 64, "spines_per_pod": 8,
                             "leaf_spine_parallel": 8, "spine_core_parallel": 1,
                             "core_group_size": 4, "gpus_per_host": 8,
                             "oob_uplink_switch": "sn4600c"},
                   "cabling": [{"tier": t, "network": "backend", "links": gpus,
                                "speed_gbps": 400.0, "media": {"optics": gpus},
                                "cables": gpus, "cable_parts": {"mfp7e10-n0xx": gpus},
                                "transceivers": 2 * gpus,
                                "transceiver_parts": {"osfp-2x400g-sr8": gpus},
                                "length_bins": {"<= 3 m": 0, "3-10 m": gpus},
                                "length_m_min": 4.0, "length_m_max": 9.5}
                               for t in ("node-leaf", "leaf-spine")],
                   "frontend": {"switch": "sn5600", "leaf_switches": 6, "spine_switches": 2},
                   "oob": {"switch": "sn2201", "leaf_switches": 6,
                           "aggregation_switches": 2}},
        "racks": _racks(nodes),
        "power": {"it_power_kw_typical": 1063.8, "it_power_kw_nameplate": 1414.0,
                  "facility_power_kw": 1659.6, "annual_energy_kwh": 14537981.8,
                  "swing_mw": 0.63, "cooling": "air", "rack_limit_kw": 42.9,
                  "densest_rack_kw": 40.8, "pue": 1.56},
        "reliability": {"expected_interruptions_per_day": 0.517, "job_mtbf_hours": 46.4,
                        "by_cause": {"faulty-gpu": 0.171, "gpu-hbm": 0.083,
                                     "network-switch-cable": 0.038},
                        "ettr": 0.93,
                        "timeline": [{"t_h": i * 0.53, "event": "checkpoint", "cause": None}
                                     for i in range(300)]
                        + [{"t_h": 31.2, "event": "failure", "cause": "gpu-hbm"},
                           {"t_h": 31.4, "event": "restart", "cause": None}],
                        "hot_spares": 0, "recommended_spares": 3,
                        "expected_spare_wait_s_per_failure": 131065.0,
                        "nodes_in_repair_mean": 0.81,
                        "with_recommended_spares": {"hot_spares": 3, "ettr": 0.968,
                                                    "time_to_train_days": {"p50": 37.27,
                                                                           "p90": 38.46}},
                        "monte_carlo": {"hours_lost": {"restarts": 3.44, "spare_wait": 699.1}},
                        "failure_model": {
                            "fleets": ["Meta Llama 3 405B pre-training, 16,384 H100 (2024)"],
                            "layout": {"nodes_per_rack": 4, "nodes_per_row": 32,
                                       "nodes_per_leaf": 32, "basis": "designed fabric"},
                            "node_losses": [
                                {"kind": "node", "probability_per_failure": 0.704, "nodes": 1,
                                 "repair_hours": 72.0, "reset_share": 0.3,
                                 "reset_hours": 4.0},
                                {"kind": "rack", "probability_per_failure": 0.0141,
                                 "nodes": 4, "repair_hours": 3.5, "reset_share": 0.0,
                                 "reset_hours": 0.0}],
                            "lemons": {"fraction": 0.0476, "rate_multiplier": 20.0,
                                       "expected_in_job": 6.09},
                            "fail_slow": {"episodes_per_hour": 0.0749, "mean_hours": 1.2,
                                          "slowdown": 1.24, "expected_stretch": 1.0206}},
                        "failure_assumptions": [
                            {"name": "lemon_node_fraction", "value": 0.0476,
                             "unit": "share of nodes",
                             "source": "SKT/Upstage B200 report: 3 of 63 nodes"}]},
        "storage": {"system": "minio-nvme-node", "name": "MinIO object store node",
                    "kind": "object", "units": 4,
                    "units_by_need": {"read": 1, "write": 1, "capacity": 1},
                    "read_gbps": 43.6, "write_gbps": 22.0, "capacity_tb": 180.0, "ports": 4,
                    "port_gbps": 100.0, "power_kw": 3.2, "price_usd": 180000.0,
                    "source": "MinIO NVMe benchmark blog (2021)",
                    "need": {"read_gbps": 0.0053, "write_gbps": 0.443, "capacity_tb": 19.0},
                    "checkpoint": {"mode": "async", "bytes": 987751890944.0, "stall_s": 0.0386,
                                   "persist_s": 44.9, "restore_s": 22.65, "interval_s": 113.5},
                    "binding": [{"constraint": "checkpoint_interval", "needed": 120.0,
                                 "available": 113.5, "unit": "s",
                                 "message": "the tier writes a checkpoint in 120 s"}],
                    "why": "4 x minio-nvme-node covers every need",
                    "alternatives": [{"option": "1 x ddn-ai400x2t",
                                      "why_not": "$920,000 more"}],
                    "notes": ["checkpointing costs 0.09 % of the run"]},
        "energy": {"grid": {"region": "world", "name": "World average", "year": 2025,
                            "gco2_per_kwh": 458.0, "renewable_share": 0.0,
                            "source": "Ember Global Electricity Review 2026"},
                   "pue": 1.3,
                   "runs": [{"workload": "pretrain-70b", "gpu_hours": 895613.0,
                             "energy": {"it_kwh": 947917.6, "facility_kwh": 1232292.9},
                             "carbon": {"location_based_t": 564.39, "market_based_t": 564.39,
                                        "embodied_t": 9.85, "total_location_based_t": 574.24},
                             "model_card_convention": {"kwh": 815007.8,
                                                       "location_based_t": 373.27}}],
                   "serving": [{"workload": "chat", "kwh_per_million_tokens": 0.52,
                                "gco2_per_million_tokens": 238.2, "basis": "at peak load"}],
                   "per_year": {"facility_kwh": 10905670.4, "location_based_t": 4994.8,
                                "market_based_t": 4994.8, "embodied_t": 78.93,
                                "total_location_based_t": 5073.7},
                   "power_trace": {"workload": "pretrain-70b",
                                   "t_s": [0.0, 12.0, 12.25, 12.49, 12.73],
                                   "mw": [1.084, 1.084, 0.453, 0.453, 1.084],
                                   "high_mw": 1.084, "low_mw": 0.453, "swing_mw": 0.631,
                                   "step_s": 12.73, "low_s_per_step": 0.479,
                                   "average_mw": 1.06, "ramp_mw_per_s": 0.631,
                                   "restart_s": 642.6, "ramp_limit_mw_per_s": None,
                                   "exceeds_ramp_limit": False,
                                   "mitigations": [{"name": "battery", "swing_mw": 0.0,
                                                    "capex_usd": 45034.7, "annual_usd": 0.0,
                                                    "note": "113 kWh covers the dip"}]}},
        "tco": {"capex_usd": 40866810.0, "annual_opex_usd": 7663453.9,
                "cloud_annual_cost_usd": 49372200.96, "breakeven_months": 11.76,
                "breakeven_months_committed": 13.46, "cost_per_gpu_hour_usd": 2.2069,
                "years": 5.0, "utilization": 0.8,
                "capex_by_category_usd": {"servers": 34560000.0, "network": 2200000.0,
                                          "optics_and_cables": 2162410.0,
                                          "storage": 1519400.0, "racks_and_power": 425000.0},
                "opex_breakdown_usd": {"energy": 869802.9, "colocation": 3213168.6,
                                       "support": 3334722.4, "staff": 245760.0},
                "cloud": {"offer": "aws-p5.48xlarge", "price_date": "2025-06"},
                "cloud_model": "on-demand: used GPU-hours only",
                "cost_over_time": [
                    {"month": m, "on_prem_cumulative_usd": 40866810.0 + 638621.2 * m,
                     "cloud_on_demand_cumulative_usd": 4114350.1 * m,
                     "cloud_committed_cumulative_usd": 3674995.2 * m} for m in range(61)]},
        "risks": [
            {"severity": "medium", "area": "reliability", "title": "A failure every 46 hours",
             "detail": "Checkpoint every 32 min; ETTR 93 %."},
            {"severity": "high", "area": "power", "title": "Racks at 95 % of the air limit",
             "detail": "40.8 kW nameplate against 42.9 kW."},
            {"severity": "low", "area": "network", "title": "No oversubscription",
             "detail": "1:1 leaf uplinks."}],
        "bom": [
            {"category": "server", "part": "dgx-h100", "name": "NVIDIA DGX H100",
             "network": "compute", "role": "host", "quantity": nodes, "length_m": None,
             "unit_price_usd": 270000.0, "total_usd": 270000.0 * nodes, "unit_power_w": 10200.0,
             "price_source": "SemiAnalysis estimate (2023)", "price_estimate": True},
            {"category": "switch", "part": "sn5600", "name": "NVIDIA Spectrum-4 SN5600",
             "network": "backend", "role": "leaf", "quantity": sus * 8, "length_m": None,
             "unit_price_usd": 55000.0, "total_usd": 55000.0 * sus * 8, "unit_power_w": 940.0,
             "price_source": "https://example.org/sn5600-price list (2025)",
             "price_estimate": False},
            {"category": "cable", "part": "mfp7e10-n0xx", "name": "MPO fibre", "network": "all",
             "role": "", "quantity": gpus, "length_m": 10.0, "unit_price_usd": 200.0,
             "total_usd": 200.0 * gpus, "unit_power_w": 0.0, "price_source": None,
             "price_estimate": True}],
        "sources": [
            {"key": "servers:dgx-h100", "kind": "servers", "id": "dgx-h100",
             "name": "NVIDIA DGX H100", "source": "NVIDIA DGX H100 datasheet (2023)",
             "price_source": "SemiAnalysis estimate (2023)"},
            {"key": "switches:sn5600", "kind": "switches", "id": "sn5600",
             "name": "NVIDIA Spectrum-4 SN5600", "source": "NVIDIA SN5000 user manual",
             "price_source": "https://example.org/sn5600-price list (2025)"},
            {"key": "assumptions:rack_usd", "kind": "assumptions", "id": "rack_usd",
             "name": "rack usd", "source": "[estimate] no price list read", "value": 2500.0,
             "price_source": None}],
        "artifacts": {"bom": "bom.csv", "cabling": "cabling.csv", "configs": "configs/"},
        "timings_s": {"training": 0.4, "serving": 3.1, "fabric": 1.2},
        "notes": ["backend is RoCE Ethernet: eBGP underlay, one ASN per leaf"],
    }


def infeasible() -> dict[str, Any]:
    """A minimal infeasible blueprint: the rack power limit binds; almost everything null."""
    return {
        "schema_version": "1.0",
        "clusterwright_version": "0.1.0",
        "scenario": {"name": "too-dense", "description": None, "seed": 1, "source": None,
                     "workloads": [], "constraints": {"power_per_rack_kw": 20.0}},
        "feasible": False,
        "binding_constraints": [
            {"constraint": "power_per_rack_kw", "workload": None, "limit": 20.0,
             "needed": 40.8, "unit": "kW", "excess_fraction": 1.04,
             "message": "One DGX H100 rack of 4 servers draws 40.8 kW; the limit is 20 kW."}],
        "recommendation": None,
        "alternatives": [],
        "workloads": [],
        "cluster": None,
        "fabric": None,
        "racks": None,
        "power": None,
        "reliability": None,
        "tco": None,
        "risks": [],
        "artifacts": {},
        "timings_s": {},
        "notes": [],
    }


def inference_only() -> dict[str, Any]:
    """A cloud inference-only blueprint: no training, no racks, no power plan."""
    bp = full()
    bp["scenario"]["name"] = "chat-pool"
    bp["workloads"] = [w for w in bp["workloads"] if w["kind"] == "inference"]
    bp["recommendation"]["deployment"] = "cloud"
    bp["recommendation"]["capex_usd"] = None
    bp["recommendation"]["breakeven_months"] = None
    for key in ("racks", "power", "fabric"):
        bp[key] = None
    bp["reliability"] = {"expected_interruptions_per_day": 0.01, "job_mtbf_hours": None,
                         "by_cause": {}, "ettr": None, "timeline": []}
    return bp


def multisite() -> dict[str, Any]:
    """``full()`` with the optional ``multisite`` section of a two-site plan (plan/multisite:
    2 x 8,192 H100, 400 Gb/s, 20 ms; numbers of ``plan examples/multisite-two-sites.yaml``,
    rounded)."""
    bp = full()
    method = {"inner_steps": 100, "bits": 8.0, "fragments": 1, "overlap_steps": 0.0}
    bp["multisite"] = {
        "sites": [{"name": n, "power_mw": 15.0, "wan_gbps": 400.0, "latency_ms": 20.0,
                   "loss": 0.0, "usd_per_gbps_month": 1000.0} for n in ("east", "west")],
        "policy": {"method": "diloco", **method},
        "workloads": [{
            "name": "pretrain-70b", "model": "llama-3.1-70b", "gpu": "h100-sxm",
            "server": "dgx-h100", "sites": 2, "gpus_per_site": 8192, "gpus": 16384,
            "site_capacity_gpus": [9048, 9048], "mw_per_site": 13.58,
            "layout": {"tp": 8, "pp": 4, "dp": 128, "cp": 2, "ep": 1, "zero": 0,
                       "micro_batch": 1},
            "global_batch_per_site": 512, "step_time_s": 0.626,
            "tokens_per_s_per_site": 6.70e6,
            "wan": {"gbps": 400.0, "latency_ms": 20.0, "loss": 0.0, "slowest_site": "east"},
            "method": "diloco",
            "methods": {
                "sync": {"inner_steps": 1, "bits": 16.0, "fragments": 1, "overlap_steps": 0.0,
                         "utilization": 0.204, "wan_gbps_needed": {"90": 2528.0, "95": 2753.0,
                                                                   "99": 2944.0},
                         "time_to_train_days": 63.6, "wan_cost_usd": 1.67e6},
                "diloco": {**method, "utilization": 0.977,
                           "wan_gbps_needed": {"90": 81.7, "95": 173.5, "99": 953.6},
                           "time_to_train_days": 13.2, "wan_cost_usd": 3.48e5},
                "streaming": {"inner_steps": 100, "bits": 4.0, "fragments": 4,
                              "overlap_steps": 1.0, "utilization": 1.0,
                              "wan_gbps_needed": {"90": 30.4, "95": 50.1, "99": float("inf")},
                              "time_to_train_days": 12.9, "wan_cost_usd": 3.40e5}},
            "utilization": 0.977,
            "validated": "diloco blocking outer step: INTELLECT-1 (validate --table multisite)",
            "notes": []}]}
    return bp
