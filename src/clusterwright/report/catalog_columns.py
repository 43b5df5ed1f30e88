"""What a catalog table shows per kind: ``clusterwright catalog list KIND`` and the web catalog
page read the same columns, so both show the same numbers."""

from __future__ import annotations

from typing import Any

from clusterwright.model.params import active_params, total_params

KINDS: dict[str, tuple[str, ...]] = {
    "gpus": ("gpus",),
    "servers": ("servers",),
    "nics": ("nics",),
    "switches": ("switches",),
    "optics": ("transceivers", "cables"),
    "models": ("models",),
    "clouds": ("clouds",),
    "stacks": ("stacks",),
    "engines": ("serving_engines",),
    "failures": ("failure_modes",),
    "storage": ("storage_systems",),
    "grids": ("grid_regions",),
}

# Columns of the human table per kind: (header, function of entry).
COLUMNS: dict[str, list[tuple[str, Any]]] = {
    "grid_regions": [
        ("id", lambda e: e.id),
        ("name", lambda e: e.name),
        ("gCO2e/kWh by year", lambda e: ", ".join(f"{y}: {v:g}"
                                                 for y, v in sorted(e.gco2_per_kwh.items()))),
    ],
    "storage_systems": [
        ("id", lambda e: e.id),
        ("kind", lambda e: e.kind),
        ("read GB/s", lambda e: f"{e.read_gbps:g}"),
        ("write GB/s", lambda e: f"{e.write_gbps:g}"),
        ("TB", lambda e: f"{e.capacity_tb:g}"),
        ("ports", lambda e: f"{e.ports} x {e.port_gbps:g}G" if e.ports else "-"),
        ("read IOPS", lambda e: f"{e.read_iops:,.0f}" if e.read_iops else "-"),
        ("opens/s", lambda e: f"{e.file_opens_per_s:,.0f}" if e.file_opens_per_s else "-"),
        ("W", lambda e: f"{e.power_w:g}"),
        ("price $", lambda e: f"{e.price_usd:,.0f}" if e.price_usd else
         (f"{e.usd_per_month:,.0f}/mo" if e.usd_per_month else "-")),
    ],
    "failure_modes": [
        ("id", lambda e: e.id),
        ("category", lambda e: e.category),
        ("per", lambda e: str(e.unit)),
        ("rate /1e6 unit-h", lambda e: f"{e.rate_per_million_unit_hours:.4g}"),
        ("repair", lambda e: "yes" if e.needs_repair else "no"),
        ("fleet", lambda e: e.fleet or "-"),
    ],
    "gpus": [
        ("id", lambda e: e.id),
        ("memory GB", lambda e: f"{e.memory_gb:g}"),
        ("HBM GB/s", lambda e: f"{e.memory_bandwidth_gbps:g}"),
        ("bf16 TFLOP/s", lambda e: f"{e.peak_tflops.get('bf16', 0):g}"),
        ("fp8 TFLOP/s", lambda e: f"{e.peak_tflops['fp8']:g}" if "fp8" in e.peak_tflops else "-"),
        ("TDP W", lambda e: f"{e.tdp_w:g}"),
        ("scale-up GB/s", lambda e: f"{e.scale_up.bandwidth_gbps_per_direction:g}"),
        ("MIG", lambda e: str(len(e.mig_profiles)) if e.mig_profiles else "-"),
    ],
    "servers": [
        ("id", lambda e: e.id),
        ("GPUs", lambda e: f"{e.gpus} x {e.gpu}"),
        ("NVLink domain", lambda e: str(e.nvlink_domain_gpus)),
        ("backend", lambda e: f"{e.backend_nics.count} x {e.backend_nics.speed_gbps:g}G"),
        ("power kW", lambda e: f"{e.max_power_kw:g}"),
        ("RU", lambda e: str(e.rack_units)),
        ("price $", lambda e: f"{e.price_usd:,.0f}" if e.price_usd else "-"),
    ],
    "nics": [
        ("id", lambda e: e.id),
        ("ports", lambda e: f"{e.ports} x {e.port_speed_gbps:g}G"),
        ("protocols", lambda e: ", ".join(e.protocols)),
        ("PCIe", lambda e: f"Gen{e.pcie_gen} x{e.pcie_lanes}"),
        ("power W", lambda e: f"{e.power_w:g}"),
    ],
    "switches": [
        ("id", lambda e: e.id),
        ("protocol", lambda e: e.protocol),
        ("ports", lambda e: " / ".join(f"{p.ports}x{p.speed_gbps:g}G" for p in e.port_configs)),
        ("Tb/s", lambda e: f"{e.capacity_tbps:g}"),
        ("roles", lambda e: ", ".join(e.roles)),
        ("max W", lambda e: f"{e.max_power_w:g}"),
    ],
    "transceivers": [
        ("id", lambda e: e.id),
        ("form", lambda e: e.form_factor),
        ("links", lambda e: f"{e.links} x {e.speed_gbps:g}G"),
        ("reach m", lambda e: f"{e.reach_m:g}"),
        ("power W", lambda e: f"{e.power_w:g}"),
    ],
    "cables": [
        ("id", lambda e: e.id),
        ("kind", lambda e: e.kind),
        ("speed", lambda e: f"{e.speed_gbps:g}G"),
        ("reach m", lambda e: f"{e.reach_m:g}"),
        ("power W", lambda e: f"{e.power_w:g}"),
    ],
    "models": [
        ("id", lambda e: e.id),
        ("params", lambda e: f"{total_params(e) / 1e9:.2f}B"),
        ("active", lambda e: f"{active_params(e) / 1e9:.2f}B"),
        ("layers", lambda e: str(e.layers)),
        ("hidden", lambda e: str(e.hidden)),
        ("heads/kv", lambda e: f"{e.heads}/{e.n_kv_heads}" if not e.is_mla else f"{e.heads}/MLA"),
        ("experts", lambda e: f"{e.experts} top{e.top_k}" if e.is_moe else "-"),
    ],
    "stacks": [
        ("id", lambda e: e.id),
        ("GPUs", lambda e: ", ".join(e.gpus)),
        ("GEMM plateau", lambda e: f"{e.gemm_efficiency[-1][1]:.0%}"),
        ("flash", lambda e: "yes" if e.flash_attention else "no"),
        ("overlap tp/dp/pp", lambda e: f"{e.tp_overlap:g}/{e.dp_overlap:g}/{e.pp_overlap:g}"),
    ],
    "serving_engines": [
        ("id", lambda e: e.id),
        ("versions", lambda e: ", ".join(v or "any" for v in e.versions)),
        ("budget", lambda e: f"{e.max_num_batched_tokens:,}"),
        ("chunked", lambda e: "yes" if e.chunked_prefill else "no"),
        ("KV", lambda e: f"{e.admission}, {e.kv_memory_fraction:g} of {e.kv_memory_rule}"),
        ("validated (GPU mode: TTFT/TPOT MAPE)",
         # every layout pooled: a layout's own regime is what `serve estimate` reports
         lambda e: "; ".join(f"{v.gpu} {v.mode}{' held out' if v.held_out else ''}: "
                             f"{v.ttft_mape:.0%}/{v.tpot_mape:.0%}"
                             for v in e.validated if v.tp is None) or "-"),
    ],
    "clouds": [
        ("id", lambda e: e.id),
        ("provider", lambda e: e.provider),
        ("GPUs", lambda e: f"{e.gpus} x {e.gpu}"),
        ("on-demand $/h", lambda e: f"{e.on_demand_usd_per_hour:,.2f}"),
        (
            "committed $/h",
            lambda e: f"{e.committed_usd_per_hour:,.2f}" if e.committed_usd_per_hour else "-",
        ),
        ("date", lambda e: e.price_date),
    ],
}
