"""What the fluid kernels' tests share: the check that two runs made the same decisions."""

from __future__ import annotations

import numpy as np
import pytest

from clusterwright.sim.fluid import FluidResult

GBPS = 100
WIRE = 1_048_000  # 1 MB of payload with 48 bytes of headers per 1,000-byte packet


def assert_same_run(a: FluidResult, b: FluidResult) -> None:
    """Two fluid results agree: same steps and CNPs (the same random decisions), the rest
    to rounding."""
    assert a.steps == b.steps
    assert a.cnps == b.cnps
    for key in ("end_s", "marked_fraction"):
        assert getattr(a, key) == pytest.approx(getattr(b, key), rel=1e-9, abs=1e-15)
    for key in ("fct_s", "queue_mean_bytes", "queue_max_bytes", "pause_s", "rate_spread",
                "sample_times"):
        np.testing.assert_allclose(getattr(a, key), getattr(b, key), rtol=1e-9, atol=1e-9)
