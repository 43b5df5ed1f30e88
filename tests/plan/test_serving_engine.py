"""Deployments on catalog engines: estimate, disaggregation check, plan
(plan/serving_engine.py, plan/serving_deployment.py)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from clusterwright.catalog.registry import Catalog, load_catalog
from clusterwright.catalog.stacks import ServingEngine
from clusterwright.errors import InputError
from clusterwright.model.serving_step import ServingParallel, kv_bytes_per_token
from clusterwright.plan.serving_deployment import (
    GIB,
    PREFILL_TARGET_UTIL,
    DeploymentError,
    Role,
    host_read_bps,
    kv_capacity,
    offload_bytes,
    pool,
    size_workers,
    steady,
    step_model,
    weight_bytes,
)
from clusterwright.plan.serving_engine import (
    deployment,
    engine_of,
    estimate_engine,
    layout,
    validation_regime,
)
from clusterwright.sim.serving import Lengths, Workload


@pytest.fixture(scope="module")
def cat() -> Catalog:
    return load_catalog()


def closed(c: int, isl: int, osl: int, n: int = 300) -> Workload:
    return Workload(num_requests=n, arrival="closed", concurrency=c,
                    input_len=Lengths("fixed", isl), output_len=Lengths("fixed", osl))


def test_engines_resolve_by_name_and_version(cat: Catalog) -> None:
    assert engine_of(cat, "trtllm").backend == "trtllm"
    assert engine_of(cat, "vllm@0.19.0").backend == "vllm"
    with pytest.raises(InputError, match="engine: 'tgi' is not one of"):
        engine_of(cat, "tgi")
    with pytest.raises(InputError, match=r"covers version .9\.9."):
        engine_of(cat, "sglang@9.9")


def test_layouts_default_the_moe_group(cat: Catalog) -> None:
    ds = cat.model("deepseek-v3")
    assert layout(ds, tp=8).moe_tp == 8  # TP-style experts without attention DP
    p = layout(ds, tp=1, adp=8)
    assert (p.moe_tp, p.moe_ep) == (1, 8)  # expert parallel over the attention-DP group
    with pytest.raises(InputError, match="moe_ep: 3 does not divide"):
        layout(ds, tp=8, moe_ep=3)
    with pytest.raises(InputError, match="dense model"):
        layout(cat.model("llama-3.1-8b"), tp=2, moe_ep=2)


def test_b200_is_served_through_an_engine(cat: Catalog) -> None:
    arch = cat.model("llama-3.1-70b")
    dep = deployment(cat, arch, cat.gpu("b200"), engine_of(cat, "vllm"), "fp8",
                     agg=Role(layout(arch, 2), 1))
    est = estimate_engine(cat, dep, closed(32, 1024, 512), 1024, 512)
    d = est.as_dict()
    assert d["gpus"] == 2 and d["kv_cache"] == "fp8"
    assert d["steady_state"]["tpot_mean_s"] == pytest.approx(d["tpot_mean_s"], rel=0.25)
    assert d["validation"]["validated"] is True
    # TP 2's own rows: 30 of the 120 dense vLLM rows on B200
    assert (d["validation"]["tp"], d["validation"]["attention_dp"]) == (2, 1)
    assert d["validation"]["rows"] >= 10
    assert "disaggregation" in d


def _dense_vllm_b200(cat: Catalog, tp: int) -> dict[str, object]:
    arch = cat.model("llama-3.1-70b")
    return validation_regime(deployment(cat, arch, cat.gpu("b200"), engine_of(cat, "vllm"),
                                        "fp8", agg=Role(layout(arch, tp), 1)))


def test_a_layout_with_rows_of_its_own_reports_their_error(cat: Catalog) -> None:
    """The error moves with the layout: pooled over TP 1-8, vLLM's dense TPOT on B200 is
    near its median, at TP 8 the model runs over the measurements, at TP 1 under them."""
    tp8, tp1 = _dense_vllm_b200(cat, 8), _dense_vllm_b200(cat, 1)
    assert tp8["validated"] is True and (tp8["tp"], tp8["attention_dp"]) == (8, 1)
    pooled = next(v for v in engine_of(cat, "vllm").validated
                  if (v.gpu, v.mode, v.family, v.tp) == ("b200", "agg", "dense", None))
    assert 10 <= tp8["rows"] < pooled.rows  # type: ignore[operator]
    assert tp8["tpot_median_error"] > 0.1 > abs(pooled.tpot_median_error or 0.0)  # type: ignore[operator]
    assert tp1["tpot_median_error"] < 0 < tp8["tpot_median_error"]  # type: ignore[operator]


def test_a_layout_without_enough_rows_gets_every_layouts(cat: Catalog) -> None:
    # vLLM's H100 rows ran dense models at TP 2, 4 and 8, never at 1
    arch = cat.model("llama-3.1-8b")
    v = validation_regime(deployment(cat, arch, cat.gpu("h100-sxm"), engine_of(cat, "vllm"),
                                     "bf16", agg=Role(layout(arch, 1), 1)))
    assert v["validated"] is True and v["tp"] is None and v["attention_dp"] is None
    pooled = [r for r in engine_of(cat, "vllm").validated
              if (r.gpu, r.mode, r.family) == ("h100-sxm", "agg", "dense")]
    assert v["rows"] == max(r.rows for r in pooled)
    assert all(r.tp != 1 for r in pooled)


def test_an_unmeasured_gpu_is_reported_as_not_validated(cat: Catalog) -> None:
    arch = cat.model("llama-3.1-8b")
    dep = deployment(cat, arch, cat.gpu("h100-pcie"), engine_of(cat, "sglang"), "bf16",
                     agg=Role(layout(arch, 1), 1))
    v = validation_regime(dep)
    assert v["validated"] is False and "no measured sglang rows on h100-pcie" in v["note"]
    assert "architecture_note" not in v
    # The GPUs it was checked on, those of the held-out file alone said so
    assert "b200 agg" in v["note"] and "h200-sxm agg (held out)" in v["note"]
    assert "b200 agg (held out)" not in v["note"]


def test_a_gpu_only_the_held_out_file_measured_reports_those_rows(cat: Catalog) -> None:
    """H200 is in no row the SGLang constants were fitted on; the held-out file measured it:
    the estimate reports that file's error, flagged, rather than none."""
    arch = cat.model("deepseek-v3")
    e = engine_of(cat, "sglang")
    h200 = validation_regime(deployment(cat, arch, cat.gpu("h200-sxm"), e, "fp8",
                                        agg=Role(layout(arch, 8), 1)))
    assert h200["validated"] is True and h200["held_out"] is True
    assert h200["rows"] >= 10 and (h200["tp"], h200["attention_dp"]) == (8, 1)
    # B200 is in both files: the fitted file's rows, never the two mixed
    b200 = validation_regime(deployment(cat, arch, cat.gpu("b200"), e, "fp8",
                                        agg=Role(layout(arch, 8), 1)))
    assert b200["validated"] is True and b200["held_out"] is False
    assert any(v.held_out and (v.gpu, v.mode) == ("b200", "agg") for v in e.validated)


def test_a_hybrid_linear_attention_model_is_reported_outside_the_fitted_rows(
        cat: Catalog) -> None:
    arch = cat.model("qwen3.5-27b")
    dep = deployment(cat, arch, cat.gpu("h100-sxm"), engine_of(cat, "sglang"), "bf16",
                     agg=Role(layout(arch, 2), 1))
    v = validation_regime(dep)
    assert v["validated"] is True  # the engine on this GPU...
    assert "Gated DeltaNet" in v["architecture_note"]  # ...but not on this architecture


@pytest.mark.parametrize(("model", "gpu", "engine", "par", "says"), [
    # Nemotron 3 Super: Mamba-2 mixers and LatentMoE experts
    ("nemotron-3-super-120b-a12b", "b200", "trtllm", ServingParallel(tp=1, adp=4, moe_ep=4),
     ("Mamba-2", "LatentMoE")),
    ("llama-3.3-nemotron-super-49b", "h100-sxm", "vllm", ServingParallel(tp=2),
     ("mean width",)),
    ("gemma-4-31b", "h100-sxm", "vllm", ServingParallel(tp=2), ("own shape",)),
    ("deepseek-v4-flash", "b200", "sglang", ServingParallel(tp=1, adp=8, moe_ep=8),
     ("compressed KV cache",)),
    ("glm-5", "b200", "sglang", ServingParallel(tp=8), ("DeepSeek Sparse Attention",
                                                         "sparse_layer_floor_us")),
])
def test_an_architecture_no_row_measured_says_so(cat: Catalog, model: str, gpu: str,
                                                  engine: str, par: ServingParallel,
                                                  says: tuple[str, ...]) -> None:
    dep = deployment(cat, cat.model(model), cat.gpu(gpu), engine_of(cat, engine), "fp8",
                     agg=Role(par, 1))
    note = validation_regime(dep)["architecture_note"]
    assert all(s in note for s in says), note


def test_fp8_kv_cache_doubles_capacity(cat: Catalog) -> None:
    arch = cat.model("llama-3.1-70b")
    par = layout(arch, 2)
    g = cat.gpu("h100-sxm")
    e = engine_of(cat, "vllm")
    bf = deployment(cat, arch, g, e, "bf16", agg=Role(par))
    f8 = deployment(cat, arch, g, e, "fp8", agg=Role(par))
    assert f8.kv_format == "fp8" and bf.kv_format == "bf16"
    assert kv_capacity(cat, f8, par, 1024, 1024) > 2 * kv_capacity(cat, bf, par, 1024, 1024)


def test_weights_that_do_not_fit_name_the_layout(cat: Catalog) -> None:
    arch = cat.model("deepseek-v3")
    dep = deployment(cat, arch, cat.gpu("h100-sxm"), engine_of(cat, "sglang"), "fp8",
                     agg=Role(layout(arch, 8), 1))
    with pytest.raises(DeploymentError, match="no room for one request's KV cache"):
        steady(cat, dep, 8, 1024, 1024)


def test_disaggregated_estimate_sizes_open_workers(cat: Catalog) -> None:
    arch = cat.model("deepseek-v3")
    par = layout(arch, tp=1, adp=4)
    dep = deployment(cat, arch, cat.gpu("gb200"), engine_of(cat, "trtllm"), "fp4",
                     prefill=Role(par, 1), decode=Role(par, None))
    est = estimate_engine(cat, dep, closed(2048, 1024, 1024, 400), 1024, 1024)
    d = est.as_dict()
    assert d["deployment"]["mode"] == "disagg"
    assert d["deployment"]["decode"]["workers"] >= 1
    assert any("decode worker" in n for n in d["notes"])
    assert d["ttft_p99_s"] >= d["ttft_p50_s"] > 0


def test_open_prefill_workers_are_sized_for_batched_prompts(cat: Catalog) -> None:
    """Prefill workers left open are as few as keep each rank's batches (the prompts that
    gather while the previous batch runs) at PREFILL_TARGET_UTIL of its token budget: fewer
    than one prompt at a time would need, and one fewer would overfill the batches."""
    arch = cat.model("deepseek-v3")
    par = layout(arch, tp=1, adp=4)
    dep = deployment(cat, arch, cat.gpu("b200"), engine_of(cat, "trtllm"), "fp4",
                     prefill=Role(par, None), decode=Role(layout(arch, tp=1, adp=8), 2))
    isl, osl, clients = 1024, 1024, 4096
    pw, dw, note = size_workers(cat, dep, clients, isl, osl)
    assert dw == 2 and "prefill worker" in note
    pre = pool(cat, dep, par, 1, isl, osl, "prefill.")
    dec = pool(cat, dep, dep.decode.par, dw, isl, osl, "decode.")
    b = clients / dec.ranks
    tpot = dec.step.step_s(0, round(b), b * (isl + osl / 2.0))
    t1 = pre.step.step_s(isl, 0, 0, isl * isl / 2.0)
    rate = clients / ((osl - 1) * tpot + t1)
    one_at_a_time = -(-rate * t1 // (pre.ranks * PREFILL_TARGET_UTIL))
    assert 2 <= pw < one_at_a_time
    j = PREFILL_TARGET_UTIL * (pre.budget // isl)
    per_rank = j / pre.step.step_s(round(j * isl), 0, 0, j * isl * isl / 2.0)
    assert rate / (pw * pre.ranks) <= per_rank < rate / ((pw - 1) * pre.ranks)


def test_the_disaggregation_check_compares_the_same_gpus(cat: Catalog) -> None:
    arch = cat.model("llama-3.1-70b")
    dep = deployment(cat, arch, cat.gpu("h100-sxm"), engine_of(cat, "trtllm"), "fp8",
                     agg=Role(layout(arch, 2), 4))
    d = estimate_engine(cat, dep, closed(128, 4096, 256), 4096, 256,
                        simulate_requests=False).as_dict()
    dis = d["disaggregation"]
    assert dis["aggregated"]["gpus"] == 8
    assert dis["splits_tried"] >= 3
    if dis.get("best_split"):
        b = dis["best_split"]
        gpus = sum(b[k]["workers"] * b[k]["gpus_per_worker"] for k in ("prefill", "decode"))
        assert gpus == 8
    assert isinstance(dis["pays"], bool) and dis["reason"]


def test_a_gpu_holds_its_expert_slots_redundant_copies_included(cat: Catalog) -> None:
    """EP 48 over 256 experts holds 6 experts a GPU (288 slots, EPLB's redundant copies),
    EP 32 holds 8: weights per GPU differ by the 2 experts' bytes, no more."""
    from clusterwright.model.params import param_counts
    from clusterwright.plan.serving_deployment import weight_bytes
    from clusterwright.plan.serving_engine import deployment, layout

    ds = cat.model("deepseek-v3")
    dep = deployment(cat, ds, cat.gpu("gb200"), engine_of(cat, "sglang"), "fp8",
                     agg=Role(layout(ds, 1, 1, 48, 1, 48), 1))
    p32, p48 = layout(ds, 1, 1, 32, 1, 32), layout(ds, 1, 1, 48, 1, 48)
    per_expert = param_counts(ds).experts / ds.experts * dep.moe.bytes_per_weight
    assert weight_bytes(dep, p32) - weight_bytes(dep, p48) == pytest.approx(2 * per_expert)


def test_a_roles_max_batch_caps_its_ranks(cat: Catalog) -> None:
    from clusterwright.plan.serving_deployment import pool, steady
    from clusterwright.plan.serving_engine import deployment, layout

    ds = cat.model("deepseek-v3")
    eng = engine_of(cat, "trtllm")
    par = layout(ds, 8, 1, 1, 1, 8)
    dep = deployment(cat, ds, cat.gpu("b200"), eng, "fp4",
                     prefill=Role(par, 1), decode=Role(par, 2, max_batch=8))
    assert pool(cat, dep, par, 2, 1024, 1024, max_batch=8).max_seqs == 8
    assert pool(cat, dep, par, 2, 1024, 1024).max_seqs == eng.max_batch
    capped, solved = steady(cat, dep, 48, 1024, 1024)
    assert solved.decode is not None and solved.decode.max_batch == 8
    assert capped.slot_wait_s > 0  # 2 workers x 8 hold 16 of 48 clients
    free, _ = steady(cat, replace(dep, decode=Role(par, 2)), 48, 1024, 1024)
    assert free.slot_wait_s == 0 and capped.ttft_s > free.ttft_s


def test_other_silicon_runs_gemms_at_its_training_stacks_efficiency(cat: Catalog) -> None:
    from clusterwright.catalog.schema import Dtype
    from clusterwright.plan.serving_deployment import silicon_gemm, step_model

    # The engines' constants stand for H100's GEMMs: no factor on Hopper, whatever the format.
    for gid in ("h100-sxm", "h200-sxm"):
        for d in (Dtype.fp8, Dtype.bf16):
            assert silicon_gemm(cat, cat.gpu(gid), d) == (1.0, "")
    # Blackwell at its stack's top against Hopper's, 0.648 / 0.779 (Azure's cuBLASLt FP8
    # tables: 0.556 of GB200's peak against 0.652 of H100's, 0.85); GB300 and B300 with their
    # measured FP8 speedup over it, FP4 without.
    b200, src = silicon_gemm(cat, cat.gpu("b200"), Dtype.fp8)
    assert b200 == pytest.approx(0.648 / 0.779, rel=1e-3)
    assert src == "megatron-core-blackwell-2025 against megatron-core-h100-2025"
    for gid in ("gb300", "b300-sxm"):
        assert silicon_gemm(cat, cat.gpu(gid), Dtype.fp8)[0] == pytest.approx(b200 * 1.18)
        assert silicon_gemm(cat, cat.gpu(gid), Dtype.fp4)[0] == pytest.approx(b200)
    # MI300X FP8: its stack's hipBLASLt-derived FP8 ratio against Hopper's, below 1 and
    # below its BF16 factor (the narrow format is where CDNA 3 falls furthest behind).
    f8, src = silicon_gemm(cat, cat.gpu("mi300x"), Dtype.fp8)
    f16, _ = silicon_gemm(cat, cat.gpu("mi300x"), Dtype.bf16)
    assert 0.5 < f8 < f16 < 1.0
    assert src == ("megatron-rocm7-cdna3-2026 against megatron-core-h100-2025, x 0.852 for "
                   "mi300x's power-limited matrix rate")
    # Its power-limited matrix rate (0.852 of MI325X's, same die and stack) in both formats.
    for d, f in ((Dtype.fp8, f8), (Dtype.bf16, f16)):
        assert f == pytest.approx(silicon_gemm(cat, cat.gpu("mi325x"), d)[0] * 0.852)
    # A stack that states no FP8 ratio (the generic prior) keeps Hopper's: FP8 as BF16.
    arc = cat.gpu("arc-pro-b60")
    assert silicon_gemm(cat, arc, Dtype.fp8)[0] == pytest.approx(
        silicon_gemm(cat, arc, Dtype.bf16)[0])
    # A prefill on one MI300X, its GEMMs compute-bound, slows by nearly that factor; a decode
    # step of one sequence, bound by streaming weights, does not slow at all.
    arch, gpu, eng = cat.model("llama-3.1-70b"), cat.gpu("mi300x"), engine_of(cat, "vllm")
    if eng.attention_from_hopper:  # prefill attention is matrix work too
        from clusterwright.plan.serving_deployment import silicon_attention
        assert silicon_attention(cat, gpu, eng)[0] == pytest.approx(
            silicon_attention(cat, cat.gpu("mi325x"), eng)[0] * 0.852)
    dep = deployment(cat, arch, gpu, eng, precision="fp8", agg=Role(layout(arch, tp=1), 1))
    assert dep.notes and f"{f8:.2f} of its fitted rate" in dep.notes[0]
    assert dep.agg is not None
    step = step_model(cat, dep, dep.agg.par)
    plain = replace(step, gemm_factor=1.0, moe_gemm_factor=1.0)
    slower = step.step_s(16384.0, 0, 0, 0.0) / plain.step_s(16384.0, 0, 0, 0.0)
    assert 0.9 / f8 < slower <= 1.0 / f8
    assert step.step_s(0.0, 1, 1000) == pytest.approx(plain.step_s(0.0, 1, 1000), rel=1e-9)
    # On H100 the same deployment carries no such note.
    h = deployment(cat, arch, cat.gpu("h100-sxm"), eng, precision="fp8",
                   agg=Role(layout(arch, tp=1), 1))
    assert h.notes == ()


def test_measured_expert_kernels_set_the_narrow_formats_rate_over_bf16(cat: Catalog) -> None:
    """An engine whose MoE kernels were measured in the narrow formats (SGLang) computes its
    routed experts at the BF16 lane's rate times the measured speed-up, not at the format's
    peak: on B200 its FP8-block experts are slower than its BF16 ones at prefill sizes (0.81x)
    and its NVFP4 ones 1.62x as fast, where the datasheet says 2x and 4x. An engine without
    measurements (TensorRT-LLM) keeps the peaks."""
    from clusterwright.catalog.schema import Dtype
    from clusterwright.model.serving_step import weight_format
    from clusterwright.plan.serving_deployment import moe_speedup, silicon_gemm, step_model

    arch, b200 = cat.model("qwen3.5-397b-a17b"), cat.gpu("b200")
    sgl, trt = engine_of(cat, "sglang"), engine_of(cat, "trtllm")

    def experts_s(eng: ServingEngine, fmt: str, tokens: float = 8192.0) -> float:
        dep = deployment(cat, arch, b200, eng, precision="bf16", moe_quant=fmt,
                         agg=Role(layout(arch, tp=8), 1))
        assert dep.agg is not None
        return step_model(cat, dep, dep.agg.par).gpu_parts(tokens, 0, 0, 0.0).experts_s

    bf16, fp8, fp4 = (experts_s(sgl, f) for f in ("bf16", "fp8_block", "nvfp4"))
    assert fp8 > bf16 > fp4  # 0.81x and 1.62x BF16's speed
    assert bf16 / fp4 == pytest.approx(1.62, rel=0.15)  # the kernels' floor adds a little
    t16, t8 = experts_s(trt, "bf16"), experts_s(trt, "fp8_block")
    assert t16 / t8 == pytest.approx(2.0, rel=0.15)  # the peaks' ratio
    # The factor itself: the BF16 lane's rate x the speed-up, over the lane's peak ratio
    fmt = weight_format("fp8_block", b200)
    dep = deployment(cat, arch, b200, sgl, precision="bf16", moe_quant="fp8_block",
                     agg=Role(layout(arch, tp=8), 1))
    assert dep.agg is not None
    step = step_model(cat, dep, dep.agg.par)
    assert step.moe_gemm_factor == pytest.approx(
        silicon_gemm(cat, b200, Dtype.bf16, sgl)[0] * 0.81 / 2.0, rel=1e-3)
    assert moe_speedup(sgl, "b200", fmt) == (0.81, "")
    assert moe_speedup(trt, "b200", fmt) is None
    assert moe_speedup(sgl, "b200", weight_format("bf16", b200)) is None
    # Not measured in that format on that GPU: the same lane's kernels there, else the
    # median over the GPUs measured in the format, then in the lane
    per_tensor = weight_format("fp8", b200)
    assert moe_speedup(sgl, "b200", per_tensor) == (0.81, "its fp8_block kernels' on b200")
    speed, src = moe_speedup(sgl, "mi300x", weight_format("fp8_block", cat.gpu("mi300x"))) or (
        0.0, "")
    listed = sorted(m["fp8_block"] for m in sgl.moe_format_speedup.values() if "fp8_block" in m)
    assert speed == pytest.approx(listed[len(listed) // 2]) and "median" in src
    assert any("0.81x BF16's rate" in n and "as its kernels measured" in n for n in dep.notes)


def test_a_gpu_whose_catalog_server_caps_it_serves_at_the_servers_matrix_rate(
        cat: Catalog) -> None:
    """The engine path reads a GPU's network from its catalog server; where that server caps
    the GPU's module (gh200-96gb: HPE's EX254n, 660 W for Grace, GPU and memory), the GEMMs
    and the prefill attention run at the server's matrix rate too, and the estimate says so.
    The 144 GB GH200's catalog server caps nothing."""
    capped, free = cat.gpu("gh200-96gb"), cat.gpu("gh200")
    node = cat.server("hpe-ex254n-gh200")
    assert node.gpu == capped.id and node.matrix_rate is not None and node.matrix_rate < 1.0
    arch, eng = cat.model("llama-3.1-70b"), engine_of(cat, "vllm")
    steps = []
    for gpu in (capped, free):
        dep = deployment(cat, arch, gpu, eng, precision="fp8", agg=Role(layout(arch, tp=1), 1))
        assert dep.agg is not None
        steps.append((dep, step_model(cat, dep, dep.agg.par)))
    (dc, sc), (df, sf) = steps
    assert sc.gemm_factor == pytest.approx(sf.gemm_factor * node.matrix_rate)
    assert sc.attention_factor == pytest.approx(sf.attention_factor * node.matrix_rate)
    assert dc.notes and f"x {node.matrix_rate:.3g} for gh200-96gb's power-limited" in dc.notes[0]
    assert not any("power-limited" in n for n in df.notes)


def test_the_neuron_engine_runs_on_trainium_only_and_at_its_own_rate(cat: Catalog) -> None:
    """AWS's engines were fitted on Trainium: no GEMM factor there, no deployment of them on
    a GPU (exit 2 naming --engine), and a Trn2 estimate carries its measured regime."""
    from clusterwright.catalog.schema import Dtype
    from clusterwright.plan.serving_deployment import silicon_gemm

    neuron = engine_of(cat, "neuron@nxdi-2.21")
    assert neuron.id == "neuron" and neuron.static_buckets
    assert silicon_gemm(cat, cat.gpu("trn2"), Dtype.bf16, neuron) == (1.0, "")
    assert silicon_gemm(cat, cat.gpu("trn2"), Dtype.bf16)[0] != 1.0  # against NVIDIA's
    arch = cat.model("llama-3.1-70b")
    with pytest.raises(InputError, match="engine: neuron runs on aws accelerators") as exc:
        deployment(cat, arch, cat.gpu("h100-sxm"), neuron, agg=Role(layout(arch, 8), 1))
    assert exc.value.field == "engine"
    dep = deployment(cat, arch, cat.gpu("trn2"), neuron, agg=Role(layout(arch, 16), 1))
    assert dep.notes == ()
    v = validation_regime(dep)
    assert v["validated"] is True and v["gpu"] == "trn2"


def test_int8_weights_are_weight_only(cat: Catalog) -> None:
    arch = cat.model("llama-3-8b")
    dep = deployment(cat, arch, cat.gpu("trn1"), engine_of(cat, "neuron"), "int8",
                     agg=Role(layout(arch, 16), 1))
    assert (dep.dense.name, dep.dense.compute.value, dep.dense.bytes_per_weight) == (
        "int8_wo", "bf16", 1.0)
    assert dep.kv_format == "bf16"


def test_the_simulator_takes_a_roles_token_budget_as_the_steady_state_does(
        cat: Catalog) -> None:
    """A role's max_tokens bounds the simulated iterations too (it did only the steady
    state's): 8 equal clients with 2k prompts on a budget of one prompt an iteration no longer
    wait for one batch of all eight, in the simulation as in the steady state."""
    from clusterwright.plan.serving_engine import simulate_deployment

    arch = cat.model("llama-3.1-8b")
    eng = engine_of(cat, "trtllm")
    par = layout(arch, 1, 1, 1, None, None)
    wide = deployment(cat, arch, cat.gpu("h100-sxm"), eng, "fp8",
                      agg=Role(par, 1, max_tokens=16384))
    narrow = replace(wide, agg=Role(par, 1, max_tokens=2048 + 64))
    w = closed(8, 2048, 64, n=80)
    sim_wide = simulate_deployment(cat, wide, w, 2048, 64).ttft_s["mean"]
    sim_narrow = simulate_deployment(cat, narrow, w, 2048, 64).ttft_s["mean"]
    assert sim_narrow < 0.8 * sim_wide
    # The steady state's clusters are smaller than the simulation's opening batch (1 +
    # arrival_burst x the other clients: under two prompts at 8 clients, where the two budgets
    # nearly tie); at 32 clients, about four prompts split one an iteration come out sooner
    st_wide = steady(cat, wide, 32, 2048, 64)[0].ttft_s
    st_narrow = steady(cat, narrow, 32, 2048, 64)[0].ttft_s
    assert st_narrow < 0.98 * st_wide


def test_weights_offloaded_to_grace_memory_free_hbm_for_the_kv_cache(cat: Catalog) -> None:
    """--cpu-offload-gb on a Grace superchip: the offloaded GiB leave HBM for the KV cache,
    no more than a GPU's layer weights are offloaded, the step model streams that share over
    NVLink-C2C at the measured 0.83 of its rate, and the estimate says it is not
    validated."""
    arch, g, e = cat.model("llama-3.1-70b"), cat.gpu("gh200"), engine_of(cat, "vllm")
    par = layout(arch, tp=1)
    plain = deployment(cat, arch, g, e, "fp8", agg=Role(par))
    off = deployment(cat, arch, g, e, "fp8", agg=Role(par), cpu_offload_gb=20)
    assert offload_bytes(plain, par) == 0.0 and offload_bytes(off, par) == 20 * GIB
    more = kv_capacity(cat, off, par, 1024, 256) - kv_capacity(cat, plain, par, 1024, 256)
    # vLLM's rule gives the engine a fraction of all memory: every freed byte is KV cache
    assert more * kv_bytes_per_token(arch, off.kv_format) == pytest.approx(20 * GIB)
    assert host_read_bps(cat, g) == pytest.approx(0.83 * 450e9)
    assert host_read_bps(cat, cat.gpu("gb200")) == pytest.approx(0.83 * 225e9)
    assert host_read_bps(cat, cat.gpu("h100-sxm")) == 0.0
    st = step_model(cat, off, par)
    assert st.offload_share == pytest.approx(20 * GIB / (weight_bytes(off, par)
                                                         - 2 * arch.vocab * arch.hidden * 2))
    # More than the layers hold: all of them, the embedding and LM head stay in HBM
    big = deployment(cat, arch, g, e, "fp8", agg=Role(par), cpu_offload_gb=400)
    assert step_model(cat, big, par).offload_share == pytest.approx(1.0)
    regime = validation_regime(off)
    assert regime["validated"] is False and "offload" in regime["offload_note"]
    assert any("NVLink-C2C at 374 GB/s" in n for n in off.notes)


def test_a_validated_regime_is_not_validated_with_an_offload(cat: Catalog) -> None:
    arch, g, e = cat.model("deepseek-r1"), cat.gpu("gb200"), engine_of(cat, "sglang")
    par = layout(arch, tp=1, adp=8, moe_ep=8)
    roles = {"prefill": Role(par, 1), "decode": Role(par, 1)}
    assert validation_regime(deployment(cat, arch, g, e, "fp4", **roles))["validated"]
    off = deployment(cat, arch, g, e, "fp4", cpu_offload_gb=10, **roles)
    assert not validation_regime(off)["validated"]


def test_the_regime_is_the_model_kinds_own(cat: Catalog) -> None:
    # Trn2 under optimum-neuron: the MoE rows miss by another factor than the dense ones.
    g, e = cat.gpu("trn2"), engine_of(cat, "neuron")
    moe, dense = cat.model("qwen3-235b-a22b"), cat.model("llama-3.1-8b")
    rm = validation_regime(deployment(cat, moe, g, e, "bf16", agg=Role(layout(moe, tp=16))))
    rd = validation_regime(deployment(cat, dense, g, e, "bf16", agg=Role(layout(dense, tp=1))))
    assert (rm["family"], rd["family"]) == ("moe", "dense")
    assert rm["ttft_mape"] > rd["ttft_mape"] and rm["ttft_median_error"] < 0
    assert "family_note" not in rm and "family_note" not in rd
    # A GPU whose rows are all of the other kind: their figures, said so.
    only = e.model_copy(update={"validated": [v for v in e.validated if v.family != "dense"]})
    r = validation_regime(deployment(cat, dense, g, only, "bf16",
                                     agg=Role(layout(dense, tp=1))))
    assert r["validated"] and r["family"] == "moe"
    assert "all of MoE models, none of a dense one" in r["family_note"]
    # A pooled regime (family None, a user catalog written before the split) serves both.
    pooled = e.model_copy(update={"validated": [
        v.model_copy(update={"family": None}) for v in e.validated if v.family == "moe"]})
    r = validation_regime(deployment(cat, dense, g, pooled, "bf16",
                                     agg=Role(layout(dense, tp=1))))
    assert r["validated"] and r["family"] is None and "family_note" not in r


@pytest.mark.parametrize(("engine", "gpu", "gib", "match"), [
    ("trtllm", "gh200", 10.0, "trtllm has no weight offload"),
    ("vllm", "h100-sxm", 10.0, "no CPU memory behind a coherent link"),
    ("vllm", "gb200", 300.0, r"exceeds the 224 GiB \(240 GB\) of CPU memory"),
    ("vllm", "gh200", -1.0, "positive number of GiB"),
    ("vllm", "gh200", float("nan"), "positive number of GiB"),
])
def test_an_offload_the_part_or_engine_cannot_do_names_the_field(
        cat: Catalog, engine: str, gpu: str, gib: float, match: str) -> None:
    arch = cat.model("llama-3.1-8b")
    with pytest.raises(InputError, match=match) as err:
        deployment(cat, arch, cat.gpu(gpu), engine_of(cat, engine), agg=Role(layout(arch)),
                   cpu_offload_gb=gib)
    assert err.value.field == "cpu_offload_gb"


def test_a_hopper_kernel_s_attention_rate_moves_to_other_silicon_by_the_stacks(
        cat: Catalog) -> None:
    """vLLM's attention is FlashAttention-3's measured rate on H100; on Blackwell it runs at
    the training stacks' attention ratio (0.30 / 0.50), on an engine fitted on every GPU at
    once not at all."""
    from clusterwright.plan.serving_deployment import silicon_attention

    vllm, trt = engine_of(cat, "vllm"), engine_of(cat, "trtllm")
    assert vllm.attention_from_hopper and not trt.attention_from_hopper
    assert silicon_attention(cat, cat.gpu("h100-sxm"), vllm) == (1.0, "")
    factor, why = silicon_attention(cat, cat.gpu("b200"), vllm)
    assert factor == pytest.approx(0.30 / 0.50) and "blackwell" in why
    assert silicon_attention(cat, cat.gpu("b200"), trt)[0] == 1.0
    # The prefill's attention slows by the factor; a decode step is untouched
    arch = cat.model("llama-3.1-8b")
    dep = deployment(cat, arch, cat.gpu("b200"), vllm, "bf16", agg=Role(layout(arch, tp=1)))
    step = step_model(cat, dep, dep.agg.par)
    fast = replace(step, attention_factor=1.0)
    assert step.step_s(32768, 0, 0) > fast.step_s(32768, 0, 0)
    assert step.step_s(0, 8, 8 * 4096) == pytest.approx(fast.step_s(0, 8, 8 * 4096))


@pytest.mark.parametrize(("engine", "gpu"), [("trtllm", "mi300x"), ("trtllm", "tpu-v6e"),
                                             ("sglang", "trn2")])
def test_an_engine_refuses_a_platform_it_does_not_run_on(engine: str, gpu: str) -> None:
    """TensorRT-LLM runs on NVIDIA GPUs only, SGLang not on Trainium (their platform lists):
    a deployment there is refused by name, where it would once have been priced."""
    cat = load_catalog()
    arch = cat.model("llama-3.1-8b")
    with pytest.raises(InputError, match=f"engine: {engine} runs on .* not on {gpu}") as exc:
        deployment(cat, arch, cat.gpu(gpu), engine_of(cat, engine), agg=Role(layout(arch)))
    assert exc.value.field == "engine"
    # vLLM lists every catalog vendor
    deployment(cat, arch, cat.gpu(gpu), engine_of(cat, "vllm"), agg=Role(layout(arch)))


def test_a_gpu_whose_kernels_were_not_measured_says_which_floor_it_takes(
        cat: Catalog) -> None:
    """A MoE deployment on a GPU outside the engine's ``moe_layer_floor_us`` (a sparse-
    attention one outside its ``sparse_layer_floor_us``) says it takes the measured GPUs'
    median; one on a measured GPU, a model without that layer, or an engine without floors
    says nothing."""
    vllm = engine_of(cat, "vllm")
    moe, dense = cat.model("deepseek-v3"), cat.model("llama-3.1-8b")

    def notes(arch: object, gpu: str, engine: object = vllm) -> str:
        dep = deployment(cat, arch, cat.gpu(gpu), engine, "fp8",  # type: ignore[arg-type]
                         agg=Role(layout(arch), 1))  # type: ignore[arg-type]
        return " ".join(dep.notes)

    text = notes(moe, "mi300x")
    assert "vllm's MoE kernels were not measured on mi300x" in text
    assert f"{vllm.moe_layer_floor_s('mi300x') * 1e6:.1f} us" in text
    assert "not measured" not in notes(moe, "h200-sxm")
    assert "not measured" not in notes(dense, "mi300x")
    assert "not measured" not in notes(moe, "a100-80gb-sxm", engine_of(cat, "trtllm"))
    # The sparse-attention floor the same way: TensorRT-LLM's tables lack Hopper's pairs
    trt, glm = engine_of(cat, "trtllm"), cat.model("glm-5")
    text = notes(glm, "h200-sxm", trt)
    assert "trtllm's sparse-attention modules were not measured on h200-sxm" in text
    assert f"{trt.sparse_layer_floor_s('h200-sxm') * 1e6:.1f} us" in text
    assert "sparse-attention" not in notes(glm, "b200", trt)
    assert "sparse-attention" not in notes(moe, "h200-sxm", trt)


@pytest.mark.parametrize(("spec", "said"), [
    ("vllm@0.24.0", True), ("vllm@0.19.0", False), ("vllm", False), ("vllm@nightly-5b8c", False),
    ("sglang@0.5.14", True), ("sglang@0.5.9", False),
    ("trtllm@1.3.0rc20", False), ("trtllm@0.9.0", True)])
def test_a_release_without_measured_rows_is_said(cat: Catalog, spec: str, said: bool) -> None:
    """A deployment at a release the engine's constants were not fitted on (vLLM 0.24, where
    the rows ran 0.11-0.19) reads the same constants, and a note says so."""
    arch = cat.model("llama-3.1-8b")
    dep = deployment(cat, arch, cat.gpu("h100-sxm"), engine_of(cat, spec), "fp8",
                     agg=Role(layout(arch, 1), 1))
    notes = [n for n in dep.notes if "no measured row at this release" in n]
    assert bool(notes) is said
    if said:
        assert spec.split("@")[1] in notes[0] and "<= release <" in notes[0]


@pytest.mark.parametrize("spec", [None, (3, 0.6, None)])
def test_the_breakdown_of_a_disaggregated_decode_iteration_is_its_tpot(
        cat: Catalog, spec: tuple[int, float, None] | None) -> None:
    """``serve estimate --engine`` shows where the iterations spend their time: on a
    disaggregated deployment the decode iteration at the steady state's batch, over the
    tokens it yields a sequence, is TPOT; the prompt alone is the prefill ranks' iteration;
    MTP's drafts and verification are their own part."""
    arch = cat.model("deepseek-v3")
    pre, dec = layout(arch, tp=4, moe_ep=4), layout(arch, tp=1, adp=8, moe_ep=8)
    dep = deployment(cat, arch, cat.gpu("gb200"), engine_of(cat, "trtllm"), "fp4",
                     prefill=Role(pre, 2), decode=Role(dec, 1))
    if spec is not None:
        dep = replace(dep, speculative=spec)
    est = estimate_engine(cat, dep, closed(256, 8192, 1024, 50), 8192, 1024,
                          simulate_requests=False)
    st = est.as_dict()["steady_state"]
    it = st["iterations"]
    d = it["decode"]
    assert d["batch_per_rank"] == round(st["decode_batch_per_rank"])
    assert d["iteration_s"] / d["tokens_per_iteration"] == pytest.approx(st["tpot_mean_s"],
                                                                         rel=1e-9)
    assert sum(d["parts_s"].values()) == pytest.approx(d["iteration_s"], rel=1e-9)
    assert (d["parts_s"]["speculative"] > 0.0) == (spec is not None)
    p = it["prefill"]
    step = step_model(cat, dep, pre, max_len=8192 + 1024)
    assert p["iteration_s"] == pytest.approx(step.step_s(8192, 0, 0), rel=1e-12)
    assert sum(p["parts_s"].values()) == pytest.approx(p["iteration_s"], rel=1e-9)
    assert sum(st["ttft_parts_s"].values()) == pytest.approx(st["ttft_mean_s"], rel=1e-9)
