"""``clusterwright web``: serve the local web workbench (FastAPI app, uvicorn server)."""

from __future__ import annotations

import socket
from pathlib import Path

import typer

from clusterwright.cli.common import err_console, fail, state, user_errors
from clusterwright.web.hosts import LOOPBACK_NAMES, host_name, is_loopback, is_wildcard

__all__ = ["is_loopback", "web"]


def _check_port(host: str, port: int) -> None:
    # uvicorn would log the bind error and exit 1; say which flag is wrong instead.
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host.strip("[]"), port))
        except OSError as exc:
            fail(f"--host/--port: cannot listen on {host}:{port}: {exc.strerror or exc}")


def _host_names(host: str, allowed: list[str]) -> list[str]:
    """The Host names to answer to besides the loopback ones: --host itself (a wildcard is no
    name a client uses) and every --allowed-host, each checked."""
    names: list[str] = []
    if not is_wildcard(host):
        try:
            names.append(host_name(host))
        except ValueError as exc:
            fail(f"--host: {exc}")
    for value in allowed:
        try:
            names.append(host_name(value))
        except ValueError as exc:
            fail(f"--allowed-host: {exc}")
    return names


def _check_remote(host: str, allow_remote: bool) -> None:
    if is_loopback(host):
        return
    where = ("every network interface" if is_wildcard(host)
             else f"{host!r}, which is not a loopback address")
    risk = "anyone who can reach this machine can read, save and run scenarios (there is no login)"
    if not allow_remote:
        fail(f"--host {host!r}: listening on {where}: {risk}; add --allow-remote if that is "
             "what you want")
    err_console.print(f"[bold yellow]warning:[/] --host {host!r} with --allow-remote: {risk}",
                      highlight=False)


def web(
    ctx: typer.Context,
    host: str = typer.Option(
        "127.0.0.1", "--host",
        help="Address to listen on. Only a loopback address (127.0.0.0/8, ::1, localhost) is "
        "accepted unless --allow-remote is given."),
    port: int = typer.Option(8000, "--port", min=1, max=65535, help="TCP port."),
    db: Path | None = typer.Option(
        None, "--db", help="SQLite file of saved scenarios and runs "
        "(default: $CLUSTERWRIGHT_DB, else the user data directory)."),
    allow_remote: bool = typer.Option(
        False, "--allow-remote",
        help="Allow --host to be a non-loopback address or every interface ('', 0.0.0.0, ::): "
        "there is no login, so anyone who can reach the port can read, save and run."),
    allowed_host: list[str] | None = typer.Option(
        None, "--allowed-host", metavar="NAME",
        help="Another name or address clients may use in the Host header (repeatable), e.g. "
        "this machine's DNS name with --allow-remote. Besides it the server answers only to "
        "localhost, 127.0.0.1, [::1] and --host; any other Host gets 400, which stops DNS "
        "rebinding."),
) -> None:
    """Serve the web workbench: edit and validate scenarios, run plans with live progress,
    read reports, download artifacts, compare runs and browse the catalog.

    A write (POST) needs an Origin or Referer header naming this server; its pages send one."""
    if state(ctx).catalog_files:
        fail("--catalog: the web workbench reads the packaged catalog and "
             "$CLUSTERWRIGHT_CATALOG only; put extra catalog files in that directory")
    extra = _host_names(host, allowed_host or [])
    _check_remote(host, allow_remote)
    _check_port(host, port)
    import uvicorn

    from clusterwright.store import StoreError
    from clusterwright.web.app import create_app

    with user_errors():
        try:
            app = create_app(db, allowed_hosts=extra)
        except StoreError as exc:
            fail(f"--db: {exc}")
    names = ", ".join(sorted(app.state.web.config.allowed_hosts))
    shown = host.strip() or "0.0.0.0"
    if ":" in shown and not shown.startswith("["):
        shown = f"[{shown}]"  # an IPv6 address in a URL
    err_console.print(f"Clusterwright workbench on http://{shown}:{port}/ "
                      f"(database {app.state.web.store.path}); Ctrl-C stops it", highlight=False)
    err_console.print(f"answers to Host: {names}", highlight=False)
    if is_wildcard(host) and not allowed_host:
        err_console.print(
            "note: other machines must reach it by a name given with --allowed-host; any "
            f"other Host than {', '.join(LOOPBACK_NAMES)} gets 400", highlight=False)
    uvicorn.run(app, host=host.strip("[]"), port=port, log_level="warning")
