"""The shipped validation tables predicted once per test session, not once per test file.

``validate --json`` (tests/validation/test_serving_silicon.py) prints every table, and each
table's own test file reads the same table whole: fabric, collectives, power and serving are
1.5-4 s of CPU each, about 12 s for the lot, and under pytest-xdist those files run in
other worker processes than the command's test. The first process to need a table predicts
it (``TABLES[name]()``, the function the command calls, with the catalog the environment
gives, which is part of the key) and leaves it pickled in the session's temporary
directory, which every worker of the session shares; the others wait on a lock for it and
read it. The pickle is the same ``TableResult`` (a round trip compares equal), so each test
asserts on what the command would print; a table computed from any other file is predicted
as before.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import pickle
from pathlib import Path

import pytest

from clusterwright.validation.rows import TableResult
from clusterwright.validation.tables import TABLES


def _session_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.getbasetemp()
    # Under xdist each worker's basetemp is <session basetemp>/popen-gwN.
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    d = root / "validation-tables"
    d.mkdir(exist_ok=True)
    return d


def shipped_table(name: str, tmp_path_factory: pytest.TempPathFactory) -> TableResult:
    """``TABLES[name]()``, predicted once per session across the xdist workers."""
    d = _session_dir(tmp_path_factory)
    user = os.environ.get("CLUSTERWRIGHT_CATALOG")
    key = name if not user else f"{name}-{hashlib.sha256(user.encode()).hexdigest()[:16]}"
    with open(d / f"{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        cached = d / f"{key}.pickle"
        if cached.exists():
            table: TableResult = pickle.loads(cached.read_bytes())
            return table
        table = TABLES[name]()
        tmp = cached.with_suffix(".tmp")
        tmp.write_bytes(pickle.dumps(table))
        tmp.replace(cached)
        return table
