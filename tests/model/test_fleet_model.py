"""The fleet failure model's formulas: restart by scale, lemons, fail-slows, node losses."""

from __future__ import annotations

import math

import numpy as np
import pytest

from clusterwright.errors import InputError
from clusterwright.model import reliability as rel


def test_restart_grows_with_log2_of_the_ranks_through_the_published_anchors() -> None:
    # 600 s overhead with 150 s of NCCL init at 4,096 GPUs (NCCL #1156): the overhead there,
    # 562 s at SKT/Upstage's 504 GPUs (measured median 660 s), 657 s at 100K (FT-HSDP ~600 s).
    assert rel.restart_s(4096, 600, 150) == pytest.approx(600)
    assert rel.restart_s(504, 600, 150) == pytest.approx(450 + 150 * math.log2(504) / 12)
    assert 550 < rel.restart_s(504, 600, 150) < 570
    assert 650 < rel.restart_s(100_000, 600, 150) < 665
    assert rel.restart_s(16384, 600, 150, restore_s=30) == pytest.approx(450 + 175 + 30)
    with pytest.raises(InputError, match="init time"):
        rel.restart_s(8, 100, 150)


def test_lemons_keep_the_fleet_mean_and_widen_small_jobs() -> None:
    # The published rate is the fleet mean: over Binomial(n, p) lemons the scale averages 1.
    n, p, k = 63, 3 / 63, 20.0
    lemons = np.arange(n + 1)
    from math import comb
    w = np.array([comb(n, j) * p**j * (1 - p) ** (n - j) for j in lemons])
    scale = rel.lemon_rate_scale(lemons, n, p, k)
    assert float((w * scale).sum()) == pytest.approx(1.0, rel=1e-9)
    # No lemon: 1 / (1 - p + kp) = 0.52 of the mean; three lemons (SKT's): 1.47x.
    assert scale[0] == pytest.approx(1 / (1 - p + k * p))
    assert scale[3] == pytest.approx((60 + 60) / (63 * (1 - p + k * p)))
    with pytest.raises(InputError, match="lemon fraction"):
        rel.lemon_rate_scale(0, 10, 1.5, 20)


def test_fail_slow_stretch_is_the_busy_fraction_times_the_slowdown() -> None:
    assert rel.fail_slow_stretch(0.0, 2048, 1.2, 1.24) == 1.0
    assert rel.fail_slow_stretch(1e-3, 0, 1.2, 1.24) == 1.0
    x = 5.85e-4 * 2048 * 1.2
    assert rel.fail_slow_stretch(5.85e-4, 2048, 1.2, 1.24) == pytest.approx(
        1 + 0.24 * (1 - math.exp(-x)))
    # Always-on episodes slow the whole run by the slowdown, never more.
    assert rel.fail_slow_stretch(1.0, 1e6, 10.0, 1.24) == pytest.approx(1.24)
    with pytest.raises(InputError, match="slowdown"):
        rel.fail_slow_stretch(1e-3, 8, 1.0, 0.9)


def _losses(**kw: float) -> tuple[rel.NodeLoss, ...]:
    base = dict(job_nodes=128, rack_nodes=4, row_nodes=32, leaf_nodes=32, rack_share=0.0196,
                pdu_share=0.00098, leaf_rate_per_hour=0.05 / 8760 * 128,
                failures_per_hour=0.52 / 24, repair_s=72 * 3600.0, reset_share=0.3,
                reset_s=4 * 3600.0, rack_repair_s=3.5 * 3600, pdu_repair_s=6 * 3600.0,
                leaf_repair_s=4 * 3600.0)
    base.update(kw)
    return rel.node_losses(0.77, 0.08, **base)  # type: ignore[arg-type]


def test_node_losses_split_the_repairs_by_domain() -> None:
    losses = {x.kind: x for x in _losses()}
    assert set(losses) == {"node", "rack", "power-domain", "leaf-switch"}
    repair = sum(x.probability for k, x in losses.items() if k != "leaf-switch")
    assert repair == pytest.approx(0.77)
    assert losses["rack"].nodes == 4 and losses["power-domain"].nodes == 32
    # One node: 30 % reset in 4 h, the rest repaired in 72 h.
    assert losses["node"].mean_repair_s == pytest.approx((0.3 * 4 + 0.7 * 72) * 3600)
    # A leaf's failures are a part of the network interruptions, never more than all of them.
    leaf = losses["leaf-switch"]
    assert leaf.probability == pytest.approx(0.05 / 8760 * 128 / (0.52 / 24))
    capped = {x.kind: x for x in _losses(leaf_rate_per_hour=1.0)}["leaf-switch"]
    assert capped.probability == pytest.approx(0.08)
    # Domains are capped at the job: a 2-node job loses at most 2 nodes to its rack.
    small = {x.kind: x for x in _losses(job_nodes=2)}
    assert small["rack"].nodes == 2 and small["leaf-switch"].nodes == 2
