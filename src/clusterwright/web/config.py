"""Settings of one web app and the size caps that keep one request from hanging the server."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from clusterwright.web.hosts import LOOPBACK_NAMES

# Caps on what a run may ask for; the plan's own cost grows with each of them. The largest
# shipped example has 2 workloads and 16,384 GPUs and plans in about 1 s on this machine.
MAX_WORKLOADS = 8
MAX_GPUS = 131_072  # a training/fine-tuning workload's `gpus`
MAX_QPS = 100_000.0  # an inference workload's peak requests per second
MAX_NAME_CHARS = 200
MAX_QUEUED_RUNS = 16  # runs waiting for a worker; more are refused with a message
# What the editor shows of a check's errors: a message may quote the input (a long value, or
# one repeated by aliases), and a long list may fail item by item.
MAX_PROBLEMS = 50
MAX_PROBLEM_CHARS = 500


@dataclass(frozen=True)
class WebConfig:
    """What ``create_app`` was given: the database, the request body limit (bytes), how many
    plans run at once, how long one may run (seconds) before it is failed, and the Host names
    the app answers to (as ``hosts.host_name`` writes them)."""

    db_path: Path | None
    max_body_bytes: int = 1_000_000
    max_concurrent_runs: int = 2
    run_timeout_s: float = 300.0
    allowed_hosts: frozenset[str] = field(default_factory=lambda: frozenset(LOOPBACK_NAMES))
