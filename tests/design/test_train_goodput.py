"""Production time to train: evaluation and the failures of the operations twin on top of
the failure-free steps."""

from __future__ import annotations

import math

import pytest

from clusterwright.catalog.registry import Catalog
from clusterwright.design.train_goodput import checkpoint_cost, production_time
from clusterwright.model import reliability as rel
from clusterwright.model.params import total_params

DAY = 86400.0


def test_production_time_stretches_the_steps_by_evaluation_and_ettr(catalog: Catalog) -> None:
    arch = catalog.model("llama-3.1-405b")
    srv = catalog.server("dgx-h100")
    p = production_time(catalog, arch, "h100-sxm", srv, 16384, 54 * DAY)
    assert p.compute_days == pytest.approx(54.0)
    assert p.eval_fraction == catalog.assumption("training_eval_fraction") > 0
    # Llama 3: 466 interruptions in 54 days on 16,384 GPUs (the rates come from that table)
    assert p.interruptions_per_day == pytest.approx(466 / 54, rel=0.1)
    assert 0.85 < p.ettr < 0.95  # "higher than 90 % effective training time" (section 3.3.4)
    # Wall time = the work stretched by failures; near work / ETTR for a long run.
    work = 54 * DAY * (1 + p.eval_fraction)
    assert p.days * DAY == pytest.approx(work / p.ettr, rel=0.01)
    assert p.gpu_hours == pytest.approx(p.days * 24 * 16384)
    # Asynchronous checkpoints: Daly's optimum of the (tiny) snapshot stall is shorter than
    # the persist on the planned tier, so the persist sets the interval.
    daly = rel.daly_interval_s(p.checkpoint_write_s, p.job_mtbf_hours * 3600)
    assert p.checkpoint_write_s < 1.0 and p.checkpoint_interval_s > daly


def test_more_gpus_fail_more_often_and_lose_more_time(catalog: Catalog) -> None:
    arch = catalog.model("llama-3.1-70b")
    srv = catalog.server("dgx-h100")
    small = production_time(catalog, arch, "h100-sxm", srv, 512, 10 * DAY)
    big = production_time(catalog, arch, "h100-sxm", srv, 16384, 10 * DAY)
    assert big.interruptions_per_day > 20 * small.interruptions_per_day
    assert big.ettr < small.ettr < 1.0
    assert big.days > small.days > 10 * (1 + small.eval_fraction)


def test_checkpoint_is_weights_and_adam_state_written_by_every_gpu(catalog: Catalog) -> None:
    arch = catalog.model("llama-3.1-70b")
    # At a given system rate: synchronous, every GPU at the per-GPU rate, capped by it.
    ck = checkpoint_cost(catalog, arch, 1024, storage_gbps=80.0)
    assert ck.bytes == pytest.approx(14 * total_params(arch))  # bf16 + fp32 master + 2 moments
    per_gpu = catalog.assumption("storage_write_gbps_per_gpu")
    assert ck.write_s == pytest.approx(ck.bytes / (min(1024 * per_gpu, 80.0) * 1e9))
    assert ck.restart_s > ck.read_s > 0 and ck.mode == "sync"
    assert math.isfinite(ck.write_s)


def test_checkpoint_on_the_planned_tier_is_asynchronous(catalog: Catalog) -> None:
    arch = catalog.model("llama-3.1-70b")
    srv = catalog.server("dgx-h100")
    ck = checkpoint_cost(catalog, arch, 1024, mtbf_s=46 * 3600.0, server=srv)
    host = catalog.assumption("checkpoint_host_copy_gbps_per_gpu")
    assert ck.mode == "async" and ck.storage is not None
    # The stall is one shard's device-to-host copy; the persist runs on the tier.
    assert ck.write_s == pytest.approx(ck.bytes / 1024 / (host * 1e9))
    assert ck.persist_s == pytest.approx(ck.bytes / (ck.storage.write_gbps * 1e9), rel=1e-9)
    assert ck.min_interval_s == ck.persist_s
    # A failure during a persist loses one more interval: the restart carries it.
    plain = ck.restart_s - ck.persist_s
    assert plain > ck.read_s > 0
