"""The KV cache's host tier on an engine deployment: its size, its load time per block over
PCIe or NVLink-C2C, the checks on it, and what it changes in a simulated estimate."""

from __future__ import annotations

import pytest

from clusterwright.catalog.registry import Catalog, load_catalog
from clusterwright.errors import InputError
from clusterwright.plan.serving_deployment import (
    GIB,
    Role,
    host_kv_link,
    host_kv_tier,
    host_memory_gib,
    host_read_bps,
    kv_token_bytes,
)
from clusterwright.plan.serving_engine import deployment, engine_of, estimate_engine, layout
from clusterwright.plan.serving_replica import workload


@pytest.fixture(scope="module")
def cat() -> Catalog:
    return load_catalog()


def _dep(cat: Catalog, gpu: str = "h100-sxm", engine: str = "vllm", gib: float = 64.0,
         model: str = "llama-3.1-8b", tp: int = 1):  # type: ignore[no-untyped-def]
    arch = cat.model(model)
    return deployment(cat, arch, cat.gpu(gpu), engine_of(cat, engine), "bf16",
                      agg=Role(layout(arch, tp=tp)), kv_offload_gb=gib)


def test_an_h100_loads_a_2_mib_block_over_pcie_in_43_us(cat: Catalog) -> None:
    dep = _dep(cat)
    par = dep.agg.par
    # Llama-3.1-8B: 32 layers x 8 KV heads x 128 x 2 (K, V) x 2 bytes = 128 KiB a token
    assert kv_token_bytes(dep, par, 1000, 100) == 131072
    blocks, load_s = host_kv_tier(cat, dep, par, 1000, 100, 16)
    assert blocks == 64 * GIB // (16 * 131072)
    rate = 64e9 * cat.assumption("pcie_host_read_efficiency")
    assert load_s == pytest.approx(cat.assumption("host_copy_latency_s") + 2**21 / rate)
    assert host_kv_link(cat, dep.gpu)[1] == "PCIe Gen5 x16"


def test_tp_splits_each_block_over_the_gpus_that_load_it_in_parallel(cat: Catalog) -> None:
    one = _dep(cat, model="llama-3.1-70b", tp=4, gib=10)
    two = _dep(cat, model="llama-3.1-70b", tp=8, gib=10)
    b4, s4 = host_kv_tier(cat, one, one.agg.par, 1000, 100, 16)
    b8, s8 = host_kv_tier(cat, two, two.agg.par, 1000, 100, 16)
    assert b8 == pytest.approx(2 * b4, abs=1)
    assert s8 < s4


def test_a_grace_superchip_loads_over_nvlink_c2c(cat: Catalog) -> None:
    dep = _dep(cat, gpu="gh200", gib=100)
    rate, link = host_kv_link(cat, dep.gpu)
    assert rate == host_read_bps(cat, dep.gpu)
    assert link == dep.gpu.host_memory.link
    _, gh = host_kv_tier(cat, dep, dep.agg.par, 1000, 100, 16)
    _, h100 = host_kv_tier(cat, _dep(cat), _dep(cat).agg.par, 1000, 100, 16)
    assert gh < h100 / 4


def test_host_memory_is_the_superchip_s_or_the_server_s_share(cat: Catalog) -> None:
    gh = host_memory_gib(cat, cat.gpu("gh200"))
    assert gh is not None and gh[0] == pytest.approx(
        cat.gpu("gh200").host_memory.memory_gb * 1e9 / GIB)
    h = host_memory_gib(cat, cat.gpu("h100-sxm"))
    assert h is not None and h[0] == pytest.approx(2048 / 8)  # DGX H100: 2 TB over 8 GPUs


@pytest.mark.parametrize("engine, gib, gpu, match", [
    ("vllm", 300.0, "h100-sxm", "exceeds the 256 GiB of CPU memory"),
    ("vllm", -1.0, "h100-sxm", "positive number of GiB"),
    ("vllm", float("nan"), "h100-sxm", "positive number of GiB"),
])
def test_a_host_tier_that_cannot_be_is_refused(cat: Catalog, engine: str, gib: float,
                                               gpu: str, match: str) -> None:
    with pytest.raises(InputError, match=match) as e:
        _dep(cat, gpu=gpu, engine=engine, gib=gib)
    assert e.value.field == "kv_offload_gb"


def test_weights_and_kv_share_the_cpu_memory(cat: Catalog) -> None:
    arch = cat.model("llama-3.1-70b")
    with pytest.raises(InputError, match="with 100 GiB of offloaded weights"):
        deployment(cat, arch, cat.gpu("gh200"), engine_of(cat, "vllm"), "bf16",
                   agg=Role(layout(arch, tp=1)), cpu_offload_gb=100, kv_offload_gb=400)


def test_the_host_tier_raises_reuse_and_cuts_ttft_when_hbm_cannot_hold_the_prefixes(
        cat: Catalog) -> None:
    # 100 prefixes of 8,000 tokens (800k tokens, 98 GiB of KV) against ~60 GiB of HBM for KV
    w = workload(8500, 200, qps=3.0, num_requests=1500, prefix_len=8000, prefix_groups=100)
    est = estimate_engine(cat, _dep(cat, gib=100), w, 8500, 200)
    d = est.as_dict()
    pc = d["prefix_cache"]
    assert pc["host_hit_rate"] > 0.2
    base = pc["without_host_tier"]
    assert pc["hit_rate"] > base["hit_rate"] + 0.2
    assert d["ttft_mean_s"] < 0.7 * base["ttft_mean_s"]
    # The steady state knows no cache, so the estimate shows the simulation only
    assert "steady_state" not in d


def test_a_workload_s_prefix_is_checked(cat: Catalog) -> None:
    with pytest.raises(InputError, match="prefix_len"):
        workload(100, 10, qps=1.0, prefix_len=101)
    with pytest.raises(InputError, match="prefix_groups"):
        workload(100, 10, qps=1.0, prefix_len=50, prefix_groups=0)
    w = workload(100, 10, qps=1.0, prefix_len=100)  # the whole prompt is shared
    assert w.shared_prefix_len + w.input_len.mean == 100
