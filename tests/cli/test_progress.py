"""Progress bars of the long commands (plan, serve plan, validate, sweep): on stderr when it
is a terminal, nothing otherwise, so `--json` stdout stays one clean JSON object."""

from __future__ import annotations

import io
import json

import pytest
from rich.console import Console
from typer.testing import CliRunner

from clusterwright.cli import common
from clusterwright.cli.main import app

runner = CliRunner()


def test_the_bar_draws_on_a_terminal_and_is_silent_otherwise(
        monkeypatch: pytest.MonkeyPatch) -> None:
    tty = io.StringIO()
    monkeypatch.setattr(common, "err_console", Console(file=tty, force_terminal=True,
                                                       width=80))
    with common.progress_bar("simulating layouts") as tick:
        for i in range(4):
            tick(i + 1, 4)
    assert "simulating layouts" in tty.getvalue()
    pipe = io.StringIO()
    monkeypatch.setattr(common, "err_console", Console(file=pipe, force_terminal=False))
    with common.progress_bar("simulating layouts") as tick:
        tick(1, 4)
    assert pipe.getvalue() == ""


def test_validate_json_is_one_object_with_nothing_on_stderr() -> None:
    r = runner.invoke(app, ["validate", "--table", "memory", "--json"])
    assert r.exit_code == 0, r.output
    assert r.stderr == ""
    assert "memory" in json.loads(r.stdout)["tables"]


def test_serve_plan_reports_progress_per_layout(monkeypatch: pytest.MonkeyPatch) -> None:
    from clusterwright.plan import serving

    seen: list[tuple[int, int]] = []
    real = serving.plan

    def spy(*args: object, **kw: object) -> object:
        inner = kw["progress"]
        assert callable(inner)

        def both(done: int, total: int) -> None:
            seen.append((done, total))
            inner(done, total)

        kw["progress"] = both
        return real(*args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(serving, "plan", spy)
    r = runner.invoke(app, ["serve", "plan", "--model", "llama-3.1-8b", "--gpu", "h100-sxm",
                            "--qps", "5", "--input-len", "256", "--output-len", "64",
                            "--ttft-p99", "2", "--tpot-p99", "0.1", "--num-requests", "100",
                            "--json"])
    assert r.exit_code == 0, r.output
    json.loads(r.stdout)
    assert r.stderr == ""
    assert seen[0][0] == 0 and seen[-1][0] == seen[-1][1] > 0
