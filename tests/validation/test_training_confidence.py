"""The generated error bands (catalog/data/training_confidence.yaml) match the current model
and table: regenerate with `python scripts/training_confidence.py` after a change."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

from clusterwright.catalog.registry import Catalog
from tests import scripts


def _script() -> ModuleType:
    return scripts.load("training_confidence")


def test_the_packaged_bands_are_those_of_the_current_model() -> None:
    mod = _script()
    fresh = mod.render(mod.collect())
    shipped = Path(mod.OUT).read_text(encoding="utf-8")
    assert fresh == shipped, "stale: run python scripts/training_confidence.py"


def test_bands_cover_every_calibrated_stack_and_are_consistent(catalog: Catalog) -> None:
    regimes = catalog.all("training_regimes")
    stacks = {r.stack for r in regimes}
    for st in catalog.all("stacks"):
        if "No constant fitted" in st.calibration or "Not calibrated" in st.calibration:
            continue
        assert st.id in stacks, st.id
    for r in regimes:
        assert r.rows >= 3 and r.min_gpus <= r.max_gpus
        assert 0 <= r.mape <= r.band * 1.5 + 1e-9 or r.rows < 5  # p90 is near the tail
        assert abs(r.bias) <= r.mape + 1e-9
    # Each stack's whole-stack regime holds at least as many rows as any of its parts; LoRA
    # fine-tuning rows form their own regime and never band a pre-training estimate.
    whole = {r.stack: r for r in regimes if r.precision == "any" and r.family == "any"}
    for r in regimes:
        if r.family != "lora":
            assert r.rows <= whole[r.stack].rows
    records = catalog.all("mfu_records")
    assert {(m.gpu, m.precision) for m in records} >= {("a100-80gb-sxm", "bf16"),
                                                       ("h100-sxm", "bf16"), ("h100-sxm", "fp8")}
