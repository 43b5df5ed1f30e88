"""Helpers the CLI tests share."""

from __future__ import annotations

from typer.testing import Result


def user_error(r: Result) -> str:
    """Bad input: exit 2, nothing on stdout, no traceback; returns stderr."""
    assert r.exit_code == 2, r.output
    assert isinstance(r.exception, SystemExit)
    assert r.stdout == ""
    assert "Traceback" not in r.output
    assert r.stderr.strip()
    return r.stderr
