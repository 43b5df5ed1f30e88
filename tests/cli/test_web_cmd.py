"""`clusterwright web`: loopback by default; any other address, every interface above all, only
with --allow-remote (and a warning); the Host names the app answers to; uvicorn given the app;
bad flags exit 2 naming the flag."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from clusterwright.cli.main import app
from clusterwright.cli.web_cmd import is_loopback
from tests.cli.helpers import user_error

runner = CliRunner()


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    seen: dict[str, Any] = {}

    def fake_run(asgi: Any, host: str, port: int, **kw: Any) -> None:
        seen.update(app=asgi, host=host, port=port)

    import uvicorn

    monkeypatch.setattr(uvicorn, "run", fake_run)
    return seen


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize(("host", "loop"), [
    ("127.0.0.1", True), ("127.1.2.3", True), ("::1", True), ("[::1]", True),
    ("localhost", True), ("0.0.0.0", False), ("192.168.1.5", False), ("::", False),
    ("example.org", False),
])
def test_is_loopback(host: str, loop: bool) -> None:
    assert is_loopback(host) is loop


def test_binds_loopback_by_default_without_a_warning(served: dict[str, Any],
                                                     tmp_path: Path) -> None:
    port = _free_port()
    r = runner.invoke(app, ["web", "--port", str(port), "--db", str(tmp_path / "w.db")])
    assert r.exit_code == 0, r.output
    assert served["host"] == "127.0.0.1" and served["port"] == port
    assert "warning" not in r.stderr
    assert (tmp_path / "w.db").exists()  # the store was opened (and migrated)
    assert served["app"].state.web.store.path == tmp_path / "w.db"


@pytest.mark.parametrize("host", ["", "0.0.0.0", "::", "[::]", "192.168.1.5", "example.org"])
def test_a_non_loopback_host_needs_allow_remote(served: dict[str, Any], tmp_path: Path,
                                                host: str) -> None:
    err = user_error(runner.invoke(app, ["web", "--host", host, "--port", str(_free_port()),
                                         "--db", str(tmp_path / "w.db")]))
    assert f"--host {host!r}" in err and "--allow-remote" in err
    assert ("every network interface" in err) == (host in ("", "0.0.0.0", "::", "[::]"))
    assert served == {}
    assert not (tmp_path / "w.db").exists()  # refused before anything was opened


def test_every_interface_with_allow_remote_is_warned_about(served: dict[str, Any],
                                                           tmp_path: Path) -> None:
    r = runner.invoke(app, ["web", "--host", "0.0.0.0", "--allow-remote", "--port",
                            str(_free_port()), "--db", str(tmp_path / "w.db")])
    assert r.exit_code == 0, r.output
    assert "warning:" in r.stderr and "there is no login" in r.stderr
    assert "--allowed-host" in r.stderr  # how other machines get in
    assert r.stdout == ""
    assert served["host"] == "0.0.0.0"
    # A wildcard is no Host a client sends: only the loopback names are answered.
    assert served["app"].state.web.config.allowed_hosts == {"localhost", "127.0.0.1", "[::1]"}


def test_the_bound_address_and_allowed_hosts_are_answered(served: dict[str, Any],
                                                          tmp_path: Path) -> None:
    r = runner.invoke(app, ["web", "--host", "127.0.0.2", "--allowed-host", "wb.example",
                            "--allowed-host", "::1", "--port", str(_free_port()),
                            "--db", str(tmp_path / "w.db")])
    assert r.exit_code == 0, r.output
    assert "warning" not in r.stderr
    assert served["app"].state.web.config.allowed_hosts == {
        "localhost", "127.0.0.1", "[::1]", "127.0.0.2", "wb.example"}
    assert "answers to Host: 127.0.0.1, 127.0.0.2, [::1], localhost, wb.example" in " ".join(
        r.stderr.split())


@pytest.mark.parametrize("value", ["", "wb.example:8000", "*", "http://wb.example", "a b"])
def test_a_bad_allowed_host_exits_2(served: dict[str, Any], value: str) -> None:
    err = user_error(runner.invoke(app, ["web", "--allowed-host", value,
                                         "--port", str(_free_port())]))
    assert "--allowed-host" in err
    assert served == {}


def test_help_explains_the_host_rules() -> None:
    r = runner.invoke(app, ["web", "--help"], env={"COLUMNS": "200"})
    assert r.exit_code == 0
    for words in ("--allow-remote", "--allowed-host", "loopback", "Host header",
                  "Origin or Referer"):
        assert words in r.stdout, words


def test_bad_flags_exit_2(served: dict[str, Any], tmp_path: Path) -> None:
    assert "--port" in user_error(runner.invoke(app, ["web", "--port", "70000"]))
    assert "--db" in user_error(runner.invoke(app, ["web", "--port", str(_free_port()),
                                                    "--db", str(tmp_path)]))
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert "--host/--port" in user_error(runner.invoke(app, ["web", "--port", str(port)]))
    assert served == {}
