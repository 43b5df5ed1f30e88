"""``clusterwright fabric verify``: the generated fabric on real FRR daemons."""

from __future__ import annotations

import json
import os

import pytest
from typer.testing import CliRunner

from clusterwright.cli.main import app
from clusterwright.lab import LabError, preflight
from clusterwright.lab.names import parse_namespace
from clusterwright.lab.netns import list_namespaces
from tests.cli.helpers import user_error

runner = CliRunner()


def _skip_without_lab() -> None:
    try:
        preflight()
    except LabError as e:
        pytest.skip(str(e))


@pytest.mark.netlab
def test_verify_json_contract_and_cleanup() -> None:
    _skip_without_lab()
    r = runner.invoke(app, ["fabric", "verify", "--leaves", "4", "--spines", "2", "--json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    for key in ("sessions_established", "sessions_expected", "multipath_ok", "ping_ok"):
        assert key in data
    assert data["sessions_established"] == data["sessions_expected"] == 8
    assert data["multipath_ok"] is True and data["ping_ok"] is True
    assert data["leaves"] == 4 and data["spines"] == 2 and data["hosts"] == 4
    # torn down: no namespace of this process's runs is left (another test process may have
    # a lab of its own up at the same time)
    assert [ns for ns in list_namespaces()
            if (p := parse_namespace(ns)) is not None and p.pid == os.getpid()] == []


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (["--leaves", "1"], "--leaves"),
        (["--leaves", "100"], "--leaves"),
        (["--spines", "0"], "--spines"),
        (["--timeout", "0"], "--timeout"),
        (["--leaves", "4", "--pods", "3"], "--pods"),
    ],
)
def test_verify_bad_input(args: list[str], flag: str) -> None:
    r = runner.invoke(app, ["fabric", "verify", *args])
    assert flag in user_error(r)


def test_verify_refuses_infiniband_switch() -> None:
    try:
        preflight()
    except LabError:
        pytest.skip("the preflight error comes first without root/FRR")
    r = runner.invoke(app, ["fabric", "verify", "--switch", "qm9700"])
    assert "--switch: qm9700 speaks infiniband, but --protocol is ethernet" in user_error(r)
