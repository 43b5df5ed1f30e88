from __future__ import annotations

import csv
from pathlib import Path

import pytest
import yaml

from clusterwright.catalog.registry import Catalog, load_catalog
from clusterwright.errors import CatalogError, UnknownIdError

REQUIRED = {
    "gpus": [
        "a100-40gb-sxm",
        "a100-80gb-sxm",
        "a100-80gb-pcie",
        "h100-sxm",
        "h100-pcie",
        "h800-sxm",
        "h200-sxm",
        "b200",
        "b300-sxm",
        "gb200",
        "gb300",
        "l40s",
        "mi300x",
        "mi325x",
        "gaudi3",
    ],
    "servers": [
        "dgx-a100",
        "dgx-h100",
        "dgx-h200",
        "dgx-b200",
        "dgx-b300",
        "hgx-h100",
        "gb200-nvl72",
        "gb300-nvl72",
        "mi300x-8",
    ],
    "nics": ["connectx-7-400g", "connectx-8-800g", "bluefield-3-400g"],
    "switches": ["qm9700", "q3400", "sn5600", "tomahawk5-64x800", "sn4600c", "sn2201"],
    "models": [
        "gpt3-175b",
        "mt-nlg-530b",
        "bloom-176b",
        "opt-175b",
        "gpt-neox-20b",
        "llama-2-7b",
        "llama-2-13b",
        "llama-2-70b",
        "llama-3-8b",
        "llama-3-70b",
        "llama-3.1-8b",
        "llama-3.1-70b",
        "llama-3.1-405b",
        "mixtral-8x7b",
        "mixtral-8x22b",
        "deepseek-v3",
        "deepseek-r1",
        "qwen3-32b",
        "minimax-m2.5",
        "glm-5",
        "qwen3.5-397b-a17b",
    ],
}


@pytest.mark.parametrize("kind", sorted(REQUIRED))
def test_required_entries_exist(catalog: Catalog, kind: str) -> None:
    missing = [i for i in REQUIRED[kind] if i not in catalog.entries[kind]]
    assert not missing


def test_every_entry_cites_a_source(catalog: Catalog) -> None:
    for kind, table in catalog.entries.items():
        assert table, f"{kind} is empty"
        for e in table.values():
            assert len(e.source) >= 8, (kind, e.id)
            if getattr(e, "price_usd", None) is not None:
                assert e.price_source, (kind, e.id)


def test_every_assumption_cites_a_source(catalog: Catalog) -> None:
    assert catalog.assumptions
    for name, a in catalog.assumptions.items():
        assert a.source and a.unit, name


def test_cloud_offers_cover_the_required_providers(catalog: Catalog) -> None:
    providers = {c.provider for c in catalog.all("clouds")}
    hyperscalers = {"AWS", "Google Cloud", "Microsoft Azure"}
    assert hyperscalers <= providers
    assert len(providers - hyperscalers) >= 2
    instances = " ".join(c.instance for c in catalog.all("clouds"))
    for inst in ("p4d", "p5.", "p5e", "p6", "a3", "ND96isr_H100_v5"):
        assert inst in instances
    for c in catalog.all("clouds"):
        assert c.gpu in catalog.entries["gpus"]
        assert (
            c.committed_usd_per_hour is None or c.committed_usd_per_hour < c.on_demand_usd_per_hour
        )


def test_optics_have_twin_port_and_single_port_transceivers(catalog: Catalog) -> None:
    links = {t.links for t in catalog.all("transceivers")}
    assert {1, 2} <= links
    kinds = {c.kind for c in catalog.all("cables")}
    assert {"dac", "acc", "fiber"} <= kinds
    assert any(c.links == 2 for c in catalog.all("cables"))


FABRIC_ASSUMPTIONS = [
    "rack_usable_units",
    "rack_width_m",
    "rack_depth_m",
    "aisle_width_m",
    "cable_slack_m",
    "air_cooled_rack_max_kw",
    "liquid_cooled_rack_max_kw",
    "storage_read_gbps_per_gpu",
    "storage_write_gbps_per_gpu",
    "switch_mgmt_ports",
]


@pytest.mark.parametrize("name", FABRIC_ASSUMPTIONS)
def test_fabric_assumptions_exist_and_are_positive(catalog: Catalog, name: str) -> None:
    assert catalog.assumption(name) > 0


def test_network_parts_are_priced_with_a_cited_source(catalog: Catalog) -> None:
    for kind in ("switches", "transceivers", "cables"):
        for e in catalog.all(kind):
            assert e.price_usd is not None, (kind, e.id)
            assert e.price_source and len(e.price_source) >= 8, (kind, e.id)


def test_management_and_100g_parts_exist(catalog: Catalog) -> None:
    cables = catalog.entries["cables"]
    assert cables["cat6a-patch"].kind == "utp"
    assert cables["mcp1600-c00x"].speed_gbps == 100
    optic = catalog.entries["transceivers"]["mma1b00-c100d"]
    assert (optic.speed_gbps, optic.side) == (100, "any")
    # every optic speed has a fibre that carries it, and media match
    fibres = [c for c in catalog.all("cables") if c.kind == "fiber"]
    for t in catalog.all("transceivers"):
        assert any(f.fiber == t.media and f.speed_gbps >= t.speed_gbps for f in fibres), t.id


def test_gpu_specs_are_physically_sane(catalog: Catalog) -> None:
    for g in catalog.all("gpus"):
        # dense 16-bit peak and bandwidth within the range of every shipping accelerator (the
        # low end: Arc Pro B60, 98 TFLOP/s BF16; L4, 300 GB/s GDDR6)
        assert 90 <= g.peak_tflops.get("bf16", g.peak_tflops.get("fp16", 0)) <= 5000, g.id
        assert 250 <= g.memory_bandwidth_gbps <= 10000, g.id
        assert 16 <= g.memory_gb <= 300, g.id  # TPU v5e carries 16 GB
        # fp8 (where present) is twice bf16 dense on NVIDIA Hopper/Blackwell and AMD CDNA3/4
        # (TPU v5p runs FP8 at its BF16 rate; Trainium3's MXFP8 is 3.75x its BF16)
        if "fp8" in g.peak_tflops and g.vendor in ("nvidia", "amd"):
            assert g.peak_tflops["fp8"] == pytest.approx(2 * g.peak_tflops["bf16"], rel=0.02)


def test_h100_matches_datasheet(catalog: Catalog) -> None:
    g = catalog.gpu("h100-sxm")
    assert g.memory_gb == 80
    assert g.memory_bandwidth_gbps == pytest.approx(3350)
    assert g.peak_tflops["bf16"] == pytest.approx(989, rel=0.01)
    assert g.peak_tflops["fp8"] == pytest.approx(1979, rel=0.01)
    assert g.tdp_w == 700
    assert g.scale_up.bandwidth_gbps_per_direction == 450


def test_servers_reference_known_gpus_and_fit_their_domain(catalog: Catalog) -> None:
    for s in catalog.all("servers"):
        assert s.gpu in catalog.entries["gpus"]
        # a torus pod's domain (its largest slice) spans many physical units
        assert s.nvlink_domain_gpus <= s.gpus or s.torus is not None
        assert s.backend_nics.count >= 1
    assert catalog.server("gb200-nvl72").nvlink_domain_gpus == 72
    assert catalog.server("dgx-h100").backend_nics.count == 8


def _mig_rows(shared: Path) -> list[dict[str, str]]:
    with open(shared / "mig_profiles.csv", newline="") as fh:
        return list(csv.DictReader(fh))


def test_mig_profiles_match_the_published_table(catalog: Catalog) -> None:
    from tests.conftest import ROOT

    rows = _mig_rows(ROOT / "validation")
    gpu_ids = {"A100-80GB": "a100-80gb-sxm", "H100-80GB": "h100-sxm"}
    checked = 0
    for r in rows:
        gid = next((v for k, v in gpu_ids.items() if k in r["gpu"]), None)
        if gid is None:
            continue
        profiles = {p.name: p for p in catalog.gpu(gid).mig_profiles}
        p = profiles[r["profile"]]
        assert p.max_instances == int(r["max_instances"]), (gid, p.name)
        assert p.compute_slices == int(r["compute_slices"]), (gid, p.name)
        assert p.memory_slices == int(r["memory_slices"]), (gid, p.name)
        checked += 1
    assert checked >= 10


def test_mig_only_on_gpus_that_support_it(catalog: Catalog) -> None:
    for gid in ("a100-40gb-sxm", "a100-80gb-sxm", "h100-sxm", "h200-sxm"):
        assert catalog.gpu(gid).mig_profiles, gid
    for gid in ("l40s", "mi300x", "gaudi3"):
        assert not catalog.gpu(gid).mig_profiles, gid


def test_unknown_id_suggests_close_ids(catalog: Catalog) -> None:
    with pytest.raises(UnknownIdError) as exc:
        catalog.gpu("h100")
    assert "h100-sxm" in exc.value.suggestions
    assert "did you mean" in str(exc.value)


def _write(p: Path, text: str) -> Path:
    p.write_text(text)
    return p


GPU_ENTRY = """
  - id: "{id}"
    name: "Test GPU"
    vendor: "nvidia"
    form_factor: "sxm"
    memory_gb: {mem}
    memory_type: "HBM3"
    memory_bandwidth_gbps: 4000
    peak_tflops: {{bf16: 1000, fp8: 2000}}
    tdp_w: 800
    scale_up: {{kind: "nvlink", bandwidth_gbps_per_direction: 450}}
    pcie_gen: 5
    source: "a test datasheet, 2026"
"""


def test_user_file_adds_entries(tmp_path: Path) -> None:
    f = _write(tmp_path / "mine.yaml", "gpus:" + GPU_ENTRY.format(id="x-gpu", mem=96))
    cat = load_catalog([f], env={})
    assert cat.gpu("x-gpu").memory_gb == 96
    assert "h100-sxm" in cat.entries["gpus"]


def test_user_file_does_not_change_the_packaged_catalog(tmp_path: Path) -> None:
    f = _write(tmp_path / "mine.yaml", "gpus:" + GPU_ENTRY.format(id="y-gpu", mem=96))
    load_catalog([f], env={})
    assert "y-gpu" not in load_catalog(env={}).entries["gpus"]


def test_duplicate_id_without_override_is_an_error(tmp_path: Path) -> None:
    f = _write(tmp_path / "dup.yaml", "gpus:" + GPU_ENTRY.format(id="h100-sxm", mem=96))
    with pytest.raises(CatalogError, match=r"already defined.*override: true"):
        load_catalog([f], env={})


def test_override_replaces_an_entry(tmp_path: Path) -> None:
    text = "gpus:" + GPU_ENTRY.format(id="h100-sxm", mem=96) + "    override: true\n"
    cat = load_catalog([_write(tmp_path / "o.yaml", text)], env={})
    assert cat.gpu("h100-sxm").memory_gb == 96
    # It says what it replaced: the published runs measured that entry, not this one.
    assert (cat.gpu("h100-sxm").overrides or "").startswith("catalog/data/gpus.yaml:")
    assert load_catalog(env={}).gpu("h100-sxm").overrides is None


def test_override_of_unknown_id_is_an_error(tmp_path: Path) -> None:
    text = "gpus:" + GPU_ENTRY.format(id="nope-gpu", mem=96) + "    override: true\n"
    with pytest.raises(CatalogError, match="nothing to override"):
        load_catalog([_write(tmp_path / "o.yaml", text)], env={})


def test_env_directory_is_read(tmp_path: Path) -> None:
    _write(tmp_path / "a.yaml", "gpus:" + GPU_ENTRY.format(id="env-gpu", mem=64))
    cat = load_catalog(env={"CLUSTERWRIGHT_CATALOG": str(tmp_path)})
    assert cat.gpu("env-gpu").memory_gb == 64


def test_bad_field_names_field_and_line(tmp_path: Path) -> None:
    text = "gpus:" + GPU_ENTRY.format(id="bad-gpu", mem=-1)
    with pytest.raises(CatalogError) as exc:
        load_catalog([_write(tmp_path / "b.yaml", text)], env={})
    assert "gpus[0].memory_gb" in str(exc.value)
    assert "(line 6)" in str(exc.value)


def test_non_string_id_is_rejected(tmp_path: Path) -> None:
    text = ("gpus:" + GPU_ENTRY.format(id="x", mem=80)).replace('id: "x"', "id: 1.10")
    with pytest.raises(CatalogError, match="must be a string"):
        load_catalog([_write(tmp_path / "n.yaml", text)], env={})


def test_unknown_kind_suggests(tmp_path: Path) -> None:
    with pytest.raises(CatalogError, match="did you mean 'gpus'"):
        load_catalog([_write(tmp_path / "k.yaml", "gpu: []\n")], env={})


def test_dangling_reference_is_an_error(tmp_path: Path) -> None:
    server = """servers:
  - id: "odd-box"
    name: "Odd"
    gpu: "no-such-gpu"
    gpus: 8
    nvlink_domain_gpus: 8
    backend_nics: {count: 8, speed_gbps: 400}
    frontend_nics: {count: 2, speed_gbps: 200}
    cpus: {model: "x", count: 2, cores_per_cpu: 32}
    dram_gb: 1024
    nvme_tb: 8
    max_power_kw: 10
    rack_units: 8
    weight_class: "heavy"
    cooling: "air"
    source: "a test datasheet, 2026"
"""
    with pytest.raises(CatalogError, match="unknown GPU id 'no-such-gpu'"):
        load_catalog([_write(tmp_path / "s.yaml", server)], env={})


def test_hdr_parts_cable_a_dgx_a100_end_to_end(catalog: Catalog) -> None:
    # DGX A100 ConnectX-6 cards are QSFP56 (HDR 4 x 50G-PAM4); QM8700/SN4600 cages match them.
    a100 = catalog.server("dgx-a100")
    for group in (a100.backend_nics, a100.frontend_nics):
        assert group.nic is not None
        assert catalog.get("nics", group.nic).cage == "QSFP56"
    qm = catalog.switch("qm8700")
    assert (qm.cage, qm.cages, qm.protocol) == ("QSFP56", 40, "infiniband")
    assert any(pc.ports == 40 and pc.speed_gbps == 200 for pc in qm.port_configs)
    assert "backend" in qm.roles
    sn = catalog.switch("sn4600")
    assert sn.cage == "QSFP56" and sn.protocol == "ethernet" and "frontend" in sn.roles
    # 200G QSFP56 copper in-rack and an AOC between racks
    qsfp56 = [c for c in catalog.all("cables") if c.form_factor == "QSFP56" and c.speed_gbps == 200]
    assert {c.kind for c in qsfp56} >= {"dac", "aoc"}
    assert max(c.reach_m for c in qsfp56 if c.kind == "dac") <= 3  # HDR passive copper is short
    assert max(c.reach_m for c in qsfp56 if c.kind == "aoc") >= 30


def test_dgx_h100_frontend_cards_are_dual_port_qsfp112(catalog: Catalog) -> None:
    for sid in ("dgx-h100", "dgx-h200"):
        nic_id = catalog.server(sid).frontend_nics.nic
        assert nic_id is not None
        nic = catalog.get("nics", nic_id)
        assert (nic.cage, nic.ports, nic.pcie_gen) == ("QSFP112", 2, 5), sid


def test_b300_is_blackwell_ultra_more_memory_and_fp4_less_fp64_than_b200(catalog: Catalog) -> None:
    b300, b200 = catalog.gpu("b300-sxm"), catalog.gpu("b200")
    assert b300.memory_gb == 288  # 8 x 288 GB = the "2.3 TB" of HGX/DGX B300
    assert b300.memory_type == "HBM3e" and b300.form_factor == "sxm"
    # NVLink 5: 1.8 TB/s bidirectional = 900 GB/s per direction, as B200.
    assert b300.scale_up.bandwidth_gbps_per_direction == 900
    assert b300.scale_up.generation == "NVLink5"
    # Same 16/8-bit tensor rates as B200 (its TF32 is the datasheet's rounded 2.2 PF sparse);
    # FP4 up, FP64 cut (HGX B300 vs HGX B200 tables).
    for dtype in ("tf32", "bf16", "fp16", "fp8"):
        assert b300.peak_tflops[dtype] == pytest.approx(b200.peak_tflops[dtype], rel=0.03), dtype
    assert b300.peak_tflops["fp4"] > b200.peak_tflops["fp4"]
    assert b300.peak_tflops["fp64"] < b200.peak_tflops["fp64"] / 10
    assert b300.tdp_w == 1400 and b300.pcie_gen == 6
    assert "[secondary]" in b300.source


def test_dgx_b300_has_8_connectx8_at_800g_that_split_into_two_400g_planes(
    catalog: Catalog,
) -> None:
    s = catalog.server("dgx-b300")
    assert (s.gpu, s.gpus, s.nvlink_domain_gpus) == ("b300-sxm", 8, 8)
    assert (s.backend_nics.nic, s.backend_nics.count, s.backend_nics.speed_gbps) == (
        "connectx-8-800g", 8, 800
    )
    assert s.rails == 8 and s.backend_links_per_cage == 1  # one ConnectX-8 per OSFP cage
    # --dual-plane halves each NIC: 2 x 400G per GPU, the Spectrum-X SuperPOD B300 layout.
    nic = catalog.get("nics", "connectx-8-800g")
    assert nic.cage == "OSFP" and nic.port_speed_gbps == 800
    assert s.backend_nics.speed_gbps / 2 in {
        pc.speed_gbps for pc in catalog.switch("sn5600").port_configs
    }
    assert (s.frontend_nics.nic, s.frontend_nics.count) == ("bluefield-3-400g", 2)
    assert s.max_power_kw == 14.5 and s.rack_units == 10
    assert s.price_usd is None  # no DGX B300 price found in a citable source


def test_a_connectx8_cage_can_take_a_flat_top_twin_port_400g_module(catalog: Catalog) -> None:
    # The part a twin-plane host cage needs: one OSFP flat-top (host side) module carrying two
    # 400G links, joinable to the SN5600's finned twin-port module over the same fibre.
    host = [
        t for t in catalog.all("transceivers")
        if t.form_factor == "OSFP" and t.side == "host" and t.links == 2 and t.speed_gbps == 400
    ]
    assert host, "no flat-top twin-port 2x400G OSFP module"
    sw = catalog.get("transceivers", "mma4z00-ns")
    assert any(t.media == sw.media and t.connector == sw.connector for t in host)


# ------------------------------------------------------------------ names other tools use


def _serving_silicon_csv() -> Path | None:
    """NVIDIA AIConfigurator's measured serving rows: the copy in validation/ if the lead has
    made one, else shared/data/ beside the repository."""
    from tests.conftest import ROOT, SHARED_DATA

    for path in (ROOT / "validation" / "serving_silicon.csv", SHARED_DATA / "serving_silicon.csv"):
        if path.exists():
            return path
    return None


def _claims(catalog: Catalog, kind: str, field: str) -> dict[str, list[str]]:
    """Each name in ``field`` (hf_ids / system_names) -> the ids of the entries that list it."""
    claims: dict[str, list[str]] = {}
    for e in catalog.all(kind):
        for name in getattr(e, field):
            claims.setdefault(name, []).append(e.id)
    return claims


def test_no_hf_id_or_system_name_is_claimed_twice(catalog: Catalog) -> None:
    for kind, field in (("models", "hf_ids"), ("gpus", "system_names")):
        claims = _claims(catalog, kind, field)
        assert claims, f"no {kind} entry lists {field}"
        twice = {name: ids for name, ids in claims.items() if len(ids) > 1}
        assert not twice, f"{kind}.{field} claimed by more than one entry: {twice}"
        # Names are matched exactly; an entry listing the same name twice is a typo.
        for e in catalog.all(kind):
            assert len(set(getattr(e, field))) == len(getattr(e, field)), (kind, e.id)


def test_every_serving_silicon_model_and_system_resolves_to_one_entry(catalog: Catalog) -> None:
    path = _serving_silicon_csv()
    if path is None:
        pytest.skip("serving_silicon.csv not found in validation/ or ../shared/data/")
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert rows, f"{path} has no rows"
    models = _claims(catalog, "models", "hf_ids")
    systems = _claims(catalog, "gpus", "system_names")
    unresolved: set[str] = set()
    for r in rows:
        for column, claims in (("model_path", models), ("system", systems)):
            ids = claims.get(r[column], [])
            if len(ids) != 1:
                unresolved.add(f"{column}={r[column]!r} -> {ids}")
    assert not unresolved, sorted(unresolved)


def test_serving_silicon_names_map_to_the_expected_entries(catalog: Catalog) -> None:
    models = _claims(catalog, "models", "hf_ids")
    systems = _claims(catalog, "gpus", "system_names")
    expected_models = {
        "meta-llama/Llama-3.1-8B-Instruct": "llama-3.1-8b",
        "meta-llama/Llama-3.1-70B": "llama-3.1-70b",
        "Qwen/Qwen3-235B-A22B-FP8": "qwen3-235b-a22b",
        "Qwen/Qwen3-32B": "qwen3-32b",
        "nvidia/Qwen3-32B-NVFP4": "qwen3-32b",
        "openai/gpt-oss-120b": "gpt-oss-120b",
        "deepseek-ai/DeepSeek-V3": "deepseek-v3",
        "nvidia/DeepSeek-V3.1-NVFP4": "deepseek-v3",
        "deepseek-ai/DeepSeek-R1": "deepseek-r1",
        "nvidia/DeepSeek-R1-NVFP4": "deepseek-r1",
        "MiniMaxAI/MiniMax-M2.5": "minimax-m2.5",
    }
    for name, mid in expected_models.items():
        assert models.get(name) == [mid], name
    expected_systems = {
        "h100_sxm": "h100-sxm", "h200_sxm": "h200-sxm", "b200_sxm": "b200",
        "b300_sxm": "b300-sxm", "gb200": "gb200", "gb300": "gb300",
    }
    for name, gid in expected_systems.items():
        assert systems.get(name) == [gid], name


# Every system NVIDIA AIConfigurator ships a systems/<name>.yaml for, and the catalog GPU its
# measurements belong to.
AICONFIGURATOR_SYSTEMS = {
    "a100_sxm": "a100-80gb-sxm", "a100_pcie": "a100-80gb-pcie", "a30": "a30", "l4": "l4",
    "l40s": "l40s", "h100_pcie": "h100-pcie", "h100_sxm": "h100-sxm", "h200_sxm": "h200-sxm",
    "b200_sxm": "b200", "b300_sxm": "b300-sxm", "gb200": "gb200", "gb300": "gb300",
    "rtx_pro_6000_server": "rtx-pro-6000-server", "b60": "arc-pro-b60",
}


@pytest.mark.parametrize("system", sorted(AICONFIGURATOR_SYSTEMS))
def test_each_aiconfigurator_system_resolves_to_one_gpu(catalog: Catalog, system: str) -> None:
    """A serving row naming any AIConfigurator system finds exactly one catalog GPU, and a
    stack covers it (the serving model needs one for the GPU's interconnect)."""
    claims = _claims(catalog, "gpus", "system_names")
    assert claims.get(system) == [AICONFIGURATOR_SYSTEMS[system]], (system, claims.get(system))
    assert catalog.stack_for_gpu(AICONFIGURATOR_SYSTEMS[system]).gpus


def test_pcie_inference_cards_have_no_nvlink_and_their_datasheet_rates(catalog: Catalog) -> None:
    """A30, L4, RTX PRO 6000 Server Edition and Arc Pro B60: dense datasheet rates (half the
    printed sparse figure on NVIDIA sheets), FP8 only where the tensor cores have it, and a
    PCIe scale-up link in an 8-GPU PCIe server."""
    dense = {  # bf16, fp8 (None: no FP8 tensor path), memory GB/s, TDP W
        "a30": (165, None, 933, 165), "l4": (121, 242.5, 300, 72),
        "rtx-pro-6000-server": (503.8, 1007.6, 1792, 600), "arc-pro-b60": (98.3, None, 456, 200),
    }
    for gid, (bf16, fp8, bw, tdp) in dense.items():
        g = catalog.gpu(gid)
        assert (g.form_factor, g.scale_up.kind) == ("pcie", "pcie"), gid
        assert g.peak_tflops["bf16"] == pytest.approx(bf16), gid
        assert g.peak_tflops.get("fp8") == (None if fp8 is None else pytest.approx(fp8)), gid
        assert (g.memory_bandwidth_gbps, g.tdp_w) == (bw, tdp), gid
        (srv,) = [s for s in catalog.all("servers") if s.gpu == gid]
        assert (srv.gpus, srv.nvlink_domain_gpus) == (8, 8), gid


def test_r1_has_the_deepseek_v3_shape(catalog: Catalog) -> None:
    v3, r1 = catalog.model("deepseek-v3"), catalog.model("deepseek-r1")
    skip = {"id", "name", "source", "hf_ids"}
    assert v3.model_dump(exclude=skip) == r1.model_dump(exclude=skip)


def test_blackwell_gpus_have_fp4_and_older_parts_do_not(catalog: Catalog) -> None:
    for gid in ("b200", "gb200", "b300-sxm", "gb300", "rtx-pro-6000-server"):
        g = catalog.gpu(gid)
        # FP4 (NVFP4 / MXFP4) runs at least twice FP8 (2x on Blackwell, ~3x on Blackwell Ultra)
        assert g.peak_tflops["fp4"] >= 2 * g.peak_tflops["fp8"], gid
    for gid in ("a100-80gb-sxm", "a30", "h100-sxm", "h200-sxm", "l40s", "l4", "mi300x", "mi325x",
                "gaudi3", "arc-pro-b60"):
        assert "fp4" not in catalog.gpu(gid).peak_tflops, gid


def test_gb300_nvl72_matches_the_nvidia_rack_figures(catalog: Catalog) -> None:
    s, g = catalog.server("gb300-nvl72"), catalog.gpu("gb300")
    assert (s.gpu, s.gpus, s.nvlink_domain_gpus, s.hosts) == ("gb300", 72, 72, 18)
    assert (s.backend_nics.nic, s.backend_nics.count, s.backend_nics.speed_gbps) == (
        "connectx-8-800g", 72, 800
    )
    assert s.rails == 4 and s.cpus.count == 36
    assert s.max_power_kw == 142
    # rack table: 1,080 PF dense FP4, 576 TB/s, 130 TB/s NVLink over 72 GPUs
    assert g.peak_tflops["fp4"] * 72 == pytest.approx(1_080_000, rel=0.01)
    assert g.memory_bandwidth_gbps * 72 == pytest.approx(576_000, rel=0.01)
    assert g.scale_up.bandwidth_gbps_per_direction * 2 * 72 == pytest.approx(130_000, rel=0.01)
    assert g.peak_tflops["fp4"] > catalog.gpu("gb200").peak_tflops["fp4"]



# ------------------------------------------------------------- the input boundary (#19)


@pytest.mark.parametrize(("mem", "message"), [
    ("true", "not the boolean true"),
    ('"96"', "not the string '96'"),
    (".inf", "finite number"),
    (".nan", ""),
])
def test_catalog_numbers_are_strict_and_finite(tmp_path: Path, mem: str, message: str) -> None:
    text = "gpus:" + GPU_ENTRY.format(id="bad-gpu", mem=mem)
    with pytest.raises(CatalogError) as exc:
        load_catalog([_write(tmp_path / "b.yaml", text)], env={})
    assert "gpus[0].memory_gb (line 6)" in str(exc.value)
    assert message in str(exc.value)


def test_catalog_exponent_floats_are_numbers(tmp_path: Path) -> None:
    text = "gpus:" + GPU_ENTRY.format(id="e-gpu", mem="9.6e1")
    assert load_catalog([_write(tmp_path / "e.yaml", text)], env={}).gpu("e-gpu").memory_gb == 96


def test_catalog_flags_are_strict_booleans(tmp_path: Path) -> None:
    text = "gpus:" + GPU_ENTRY.format(id="h100-sxm", mem=96) + '    override: "yes"\n'
    with pytest.raises(CatalogError, match=r"gpus\[0\]\.override: must be true or false"):
        load_catalog([_write(tmp_path / "o.yaml", text)], env={})


def test_a_device_as_catalog_file_is_a_catalog_error() -> None:
    if not Path("/dev/zero").exists():
        pytest.skip("no /dev/zero")
    with pytest.raises(CatalogError, match="/dev/zero: cannot read: not a regular file"):
        load_catalog(["/dev/zero"], env={})


def test_an_alias_bomb_in_a_catalog_file_is_a_catalog_error(tmp_path: Path) -> None:
    from tests.spec.test_yamlio import BOMB

    with pytest.raises(CatalogError, match="aliases expand"):
        load_catalog([_write(tmp_path / "bomb.yaml", BOMB)], env={})


def test_a_model_file_goes_through_the_bounded_loader(tmp_path: Path) -> None:
    from clusterwright.catalog.registry import load_model_file

    with pytest.raises(CatalogError, match="cannot read: a directory"):
        load_model_file(tmp_path)


@pytest.mark.parametrize(("update", "message"), [
    ({"linear_attention_layers": 48, "linear_key_heads": 16, "linear_value_heads": 32,
      "linear_key_head_dim": 128, "linear_value_head_dim": 128, "linear_conv_kernel": 4},
     "linear_attention_layers \\+ mamba_layers = 48 must leave at least one"),
    ({"linear_attention_layers": 36}, "linear_attention_layers needs linear_key_heads"),
    ({"linear_key_heads": 16}, "need linear_attention_layers > 0"),
    ({"mamba_layers": 20}, "mamba_layers needs mamba_heads"),
    ({"mamba_layers": 20, "mamba_heads": 64, "mamba_head_dim": 64, "mamba_state": 128,
      "mamba_groups": 3, "mamba_conv_kernel": 4}, "mamba_groups=3 must divide mamba_heads=64"),
    ({"mamba_state": 128}, "need mamba_layers > 0"),
])
def test_linear_attention_fields_are_checked(update: dict[str, object], message: str) -> None:
    from pydantic import ValidationError

    from clusterwright.catalog.schema import ModelArch
    from tests.conftest import gpt

    with pytest.raises(ValidationError, match=message):
        ModelArch.model_validate({**gpt().model_dump(), **update})


@pytest.mark.parametrize("slices, needle", [
    ([[32, 32, 32]], "slice 32x32x32 does not fit the torus 16x16x24"),
    ([[4, 4]], "slice 4x4 has 2 axes, the torus 16x16x24 3"),
])
def test_a_torus_slice_the_pod_cannot_form_is_refused(slices: list[list[int]],
                                                     needle: str) -> None:
    from pydantic import ValidationError

    from clusterwright.catalog.schema import Torus

    Torus(dims=[16, 16, 24], link_gbps_per_direction=45.0, slices=[[4, 4, 8], [16, 8, 4]])
    with pytest.raises(ValidationError, match=needle):
        Torus(dims=[16, 16, 24], link_gbps_per_direction=45.0, slices=slices)


def test_a_server_s_gpus_split_evenly_over_its_hosts(catalog: Catalog) -> None:
    from pydantic import ValidationError

    from clusterwright.catalog.schema import Server

    pod = next(s for s in catalog.all("servers") if s.hosts > 1)
    with pytest.raises(ValidationError, match=r"is not a multiple of hosts"):
        Server.model_validate({**pod.model_dump(), "gpus": pod.hosts + 1})


def test_every_plannable_gpu_has_a_server() -> None:
    """``train plan`` and ``plan`` need a server that holds the GPU (racks, fabric, power):
    the parts without one are those the catalog keeps for validation rows only."""
    from clusterwright.catalog.registry import load_catalog

    cat = load_catalog(env={})
    held = {s.gpu for s in cat.all("servers")}
    missing = {g.id for g in cat.all("gpus")} - held
    assert missing == {"a100-40gb-sxm", "a100-80gb-pcie", "h100-pcie", "h800-sxm"}, missing


def test_an_engines_mla_kernel_names_only_catalog_gpus(tmp_path: Path) -> None:
    """A user catalog's engine whose ``mla_decode_kernel`` names a GPU the catalog lacks is
    refused naming the engine, the field and the id."""
    entry = load_catalog(env={}).serving_engine("trtllm").model_dump(mode="json")
    entry["mla_decode_kernel"] = {"b200": {"fp8": [2370, 6.09]}, "gb20": {"fp8": [2414, 6.2]}}
    text = yaml.safe_dump({"serving_engines": [entry | {"override": True}]}, sort_keys=False)
    with pytest.raises(CatalogError, match=r"'trtllm': mla_decode_kernel: unknown GPU id "
                       r"'gb20'"):
        load_catalog([_write(tmp_path / "e.yaml", text)], env={})


def test_an_engines_moe_floor_names_only_catalog_gpus(tmp_path: Path) -> None:
    """A user catalog's engine whose ``moe_layer_floor_us`` names a GPU the catalog lacks is
    refused naming the engine, the field and the id (a misspelt GPU would otherwise take the
    median silently)."""
    entry = load_catalog(env={}).serving_engine("vllm").model_dump(mode="json")
    entry["moe_layer_floor_us"] = {"h100-sxm": 30.0, "h200-sxn": 31.0}
    text = yaml.safe_dump({"serving_engines": [entry | {"override": True}]}, sort_keys=False)
    with pytest.raises(CatalogError, match=r"'vllm': moe_layer_floor_us: unknown GPU id "
                       r"'h200-sxn'; did you mean 'h200-sxm'"):
        load_catalog([_write(tmp_path / "e.yaml", text)], env={})
