"""Validation tables: each reads a CSV of published measurements from ``validation/`` and
predicts every row with the models. The catalog is never tuned to a row."""

from __future__ import annotations

from collections.abc import Callable

from clusterwright.validation.accelerators_table import accelerators_table
from clusterwright.validation.carbon_table import carbon_table
from clusterwright.validation.collective_curves_table import collective_curves_table
from clusterwright.validation.collectives_table import collectives_table
from clusterwright.validation.fabric_table import fabric_table
from clusterwright.validation.kv_offload_table import kv_offload_table
from clusterwright.validation.multisite_table import multisite_table
from clusterwright.validation.power_table import power_table
from clusterwright.validation.reliability_table import reliability_table
from clusterwright.validation.rows import TableResult
from clusterwright.validation.serving_accelerators_table import serving_accelerators_table
from clusterwright.validation.serving_energy_table import serving_energy_table
from clusterwright.validation.serving_table import serving_table
from clusterwright.validation.storage_table import storage_table
from clusterwright.validation.training_table import memory_table, training_table

TABLES: dict[str, Callable[[], TableResult]] = {
    "memory": memory_table,
    "training": training_table,
    "fabric": fabric_table,
    "collectives": collectives_table,
    "collective_curves": collective_curves_table,
    "serving": serving_table,
    "power": power_table,
    "reliability": reliability_table,
    "storage": storage_table,
    "carbon": carbon_table,
    "accelerators": accelerators_table,
    "multisite": multisite_table,
    "serving_accelerators": serving_accelerators_table,
    "serving_energy": serving_energy_table,
    "kv_offload": kv_offload_table,
}
