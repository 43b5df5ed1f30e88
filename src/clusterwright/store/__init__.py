"""Saved scenarios and run results in SQLite (stdlib ``sqlite3``); used by the CLI and web layer.

``Store`` is the whole API; see ``docs/web.md`` ("Store") for the file format and guarantees.
"""

from __future__ import annotations

from pathlib import Path

from clusterwright.store.db import Store, utc_now
from clusterwright.store.errors import StoreError
from clusterwright.store.migrations import SCHEMA_VERSION
from clusterwright.store.paths import default_db_path
from clusterwright.store.rows import RUN_STATUSES, RunRow, ScenarioRow

# Resolved at import; Store(None) resolves again so a later $CLUSTERWRIGHT_DB still counts.
DEFAULT_DB: Path = default_db_path()

__all__ = [
    "DEFAULT_DB",
    "RUN_STATUSES",
    "SCHEMA_VERSION",
    "RunRow",
    "ScenarioRow",
    "Store",
    "StoreError",
    "default_db_path",
    "utc_now",
]
