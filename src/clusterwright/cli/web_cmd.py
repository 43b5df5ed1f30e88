"""``clusterwright web``: serve the local web workbench (FastAPI app, uvicorn server)."""

from __future__ import annotations

import ipaddress
import socket
from pathlib import Path

import typer

from clusterwright.cli.common import err_console, fail, state, user_errors


def is_loopback(host: str) -> bool:
    """True when ``host`` only listens on this machine (127.0.0.0/8, ::1 or localhost)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _check_port(host: str, port: int) -> None:
    # uvicorn would log the bind error and exit 1; say which flag is wrong instead.
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host.strip("[]"), port))
        except OSError as exc:
            fail(f"--host/--port: cannot listen on {host}:{port}: {exc.strerror or exc}")


def web(
    ctx: typer.Context,
    host: str = typer.Option("127.0.0.1", "--host",
                             help="Address to listen on; anything but loopback is warned about."),
    port: int = typer.Option(8000, "--port", min=1, max=65535, help="TCP port."),
    db: Path | None = typer.Option(
        None, "--db", help="SQLite file of saved scenarios and runs "
        "(default: $CLUSTERWRIGHT_DB, else the user data directory)."),
) -> None:
    """Serve the web workbench: edit and validate scenarios, run plans with live progress,
    read reports, download artifacts, compare runs and browse the catalog."""
    if state(ctx).catalog_files:
        fail("--catalog: the web workbench reads the packaged catalog and "
             "$CLUSTERWRIGHT_CATALOG only; put extra catalog files in that directory")
    if not is_loopback(host):
        err_console.print(
            f"[bold yellow]warning:[/] --host {host} is not a loopback address: anyone who can "
            "reach this machine can read, save and run scenarios (there is no login)",
            highlight=False)
    _check_port(host, port)
    import uvicorn

    from clusterwright.store import StoreError
    from clusterwright.web.app import create_app

    with user_errors():
        try:
            app = create_app(db)
        except StoreError as exc:
            fail(f"--db: {exc}")
    err_console.print(f"Clusterwright workbench on http://{host}:{port}/ "
                      f"(database {app.state.web.store.path}); Ctrl-C stops it", highlight=False)
    uvicorn.run(app, host=host.strip("[]"), port=port, log_level="warning")
