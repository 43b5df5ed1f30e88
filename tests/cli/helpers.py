"""Helpers the CLI tests share."""

from __future__ import annotations

import json
from typing import Any

from typer.testing import Result


def user_error(r: Result) -> str:
    """Bad input: exit 2, nothing on stdout, no traceback; returns stderr."""
    assert r.exit_code == 2, r.output
    assert isinstance(r.exception, SystemExit)
    assert r.stdout == ""
    assert "Traceback" not in r.output
    assert r.stderr.strip()
    return r.stderr


def json_ok(r: Result) -> dict[str, Any]:
    """Success: exit 0, nothing on stderr, one JSON object on stdout; returns it."""
    assert r.exit_code == 0, r.output
    assert r.stderr == ""
    data = json.loads(r.stdout)
    assert isinstance(data, dict)
    return data
