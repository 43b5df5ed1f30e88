"""PCIe rates and the time to copy a KV block between CPU memory and HBM."""

from __future__ import annotations

import pytest

from clusterwright.model.host_link import block_copy_s, pcie_bytes_per_s


@pytest.mark.parametrize("gen, gbps", [(3, 16), (4, 32), (5, 64), (6, 128)])
def test_x16_rates_double_each_generation(gen: int, gbps: float) -> None:
    assert pcie_bytes_per_s(gen) == pytest.approx(gbps * 1e9)
    assert pcie_bytes_per_s(gen, lanes=8) == pytest.approx(gbps * 1e9 / 2)


def test_a_generation_older_than_gen3_is_refused() -> None:
    with pytest.raises(ValueError, match="Gen2"):
        pcie_bytes_per_s(2)


def test_a_copy_is_its_latency_plus_its_bytes_at_the_rate() -> None:
    assert block_copy_s(2 * 2**20, 52.7e9, 3.52e-6) == pytest.approx(3.52e-6 + 2**21 / 52.7e9)
    # Small blocks are latency-bound: 4 KiB moves at about 1 GB/s, as vLLM measured on H100
    assert 4096 / block_copy_s(4096, 52.7e9, 3.52e-6) == pytest.approx(1.14e9, rel=0.01)
    with pytest.raises(ValueError):
        block_copy_s(1.0, 0.0, 0.0)
