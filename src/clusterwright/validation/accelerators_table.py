"""The accelerators table: published training throughput on TPU, Trainium, AMD Instinct,
Gaudi and Grace superchips (``validation/accelerators.csv``), predicted like the training
table's rows (``training_table._train_row``: each row's model, layout, stack and metric) on
the catalog system of the row's accelerator (TPU pods: the ICI torus of ``model/torus``,
slices joined over the DCN). Its README section says where each row comes from and which
rows are held out (by a rule per source, never by the error)."""

from __future__ import annotations

from pathlib import Path

from clusterwright.validation.rows import TableResult, predict_each, read_csv
from clusterwright.validation.training_table import train_rows

# Accelerators the issue asks to validate (catalog ids); the table reports which have rows.
ACCELERATORS = ("tpu-v5e", "tpu-v5p", "tpu-v6e", "tpu-v7", "trn1", "trn2", "trn3", "mi300x",
                "mi325x", "mi355x", "gaudi3", "gh200", "gb300")
# Catalog variants of one of those parts (another memory build of the same chip): their rows
# count for the part.
VARIANT_OF = {"gh200-96gb": "gh200"}


def accelerators_table(data: str | Path = "accelerators.csv") -> TableResult:
    """Throughput of published runs on non-NVIDIA-GPU accelerators and superchips (``data``:
    a file name in ``validation/`` or a path, in accelerators.csv's format). A row the model
    cannot predict (an accelerator, model or stack the catalog lacks) is not covered, with
    the reason."""
    from clusterwright.catalog.registry import load_catalog

    cat = load_catalog(env={})
    rows, not_covered = predict_each(read_csv(data), lambda r, s: train_rows(cat, r, s),
                                     default_set=None)
    return TableResult("accelerators", str(data), rows, tolerance=0.15,
                       not_covered=not_covered)


def coverage(table: TableResult) -> dict[str, int]:
    """Rows (development and held out) per accelerator of ``ACCELERATORS``."""
    out = {g: 0 for g in ACCELERATORS}
    for r in table.rows:
        g = VARIANT_OF.get(r.tag("gpu"), r.tag("gpu"))
        if g in out:
            out[g] += 1
    return out
