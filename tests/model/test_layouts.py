from __future__ import annotations

import numpy as np
import pytest

from clusterwright.model.layouts import Layouts, in_flight, stage_layers
from clusterwright.model.recompute import FULL, SELECTIVE
from clusterwright.model.xp import ScalarOps
from clusterwright.spec.parallel import ParallelConfig


def test_first_rank_in_flight_follows_korthikanti() -> None:
    # Korthikanti 2022 section 4.2.3: the first stage holds p (1 + (p-1)/(p v)) stages' worth
    assert in_flight(8, 3, 16, True, ScalarOps) == pytest.approx(8 * (1 + 7 / 24))
    assert in_flight(8, 1, 16, True, ScalarOps) == 8
    # fewer micro-batches than stages: only those are in flight
    assert in_flight(8, 1, 4, True, ScalarOps) == 4
    assert in_flight(1, 1, 16, True, ScalarOps) == 1


def test_last_rank_holds_one_micro_batch_or_its_interleaved_warm_up() -> None:
    # Megatron's interleaved warm-up on rank p-1: (v-1) p chunks, plus the one it runs.
    assert in_flight(3, 1, 16, False, ScalarOps) == 1
    assert in_flight(3, 2, 16, False, ScalarOps) == pytest.approx((3 + 1) / 2)
    assert in_flight(4, 4, 16, False, ScalarOps) == pytest.approx((3 * 4 + 1) / 4)


def test_uneven_split_puts_full_chunks_on_the_first_rank() -> None:
    assert stage_layers(80.0, 3, 2, ScalarOps) == 28  # 6 chunks of ceil(80/6) = 14
    assert stage_layers(80.0, 3, 1, ScalarOps) == 27
    assert stage_layers(80.0, 4, 2, ScalarOps) == 20  # even: no imbalance


def test_from_config_encodes_recompute_as_its_code() -> None:
    lay = Layouts.from_config(ParallelConfig(tp=2, pp=2, dp=2, virtual_stages=2,
                                             recompute="full", sequence_parallel=True))
    assert len(lay) == 1
    assert (float(lay.tp[0]), float(lay.interleave[0]), float(lay.recompute[0])) == (2, 2, FULL)
    sel = Layouts.from_config(ParallelConfig(recompute="selective"))
    assert float(sel.recompute[0]) == SELECTIVE


def test_of_broadcasts_and_rejects_unknown_fields() -> None:
    lay = Layouts.of(tp=np.array([1, 2, 4]), pp=2)
    assert len(lay) == 3 and list(lay.pp) == [2.0, 2.0, 2.0]
    with pytest.raises(TypeError, match="virtual"):
        Layouts.of(virtual=2)
