"""The ``clusterwright`` command. Commands are thin: parse, call the library, render."""

from __future__ import annotations

from pathlib import Path

import typer

from clusterwright import __version__
from clusterwright.cli import catalog_cmd, fabric_cmd, ops_cmd, serve_cmd, train_cmd, twin_cmd
from clusterwright.cli.check_cmd import check
from clusterwright.cli.common import AppState
from clusterwright.cli.netsim_cmd import netsim
from clusterwright.cli.plan_cmd import plan
from clusterwright.cli.runs_cmd import app as runs_app
from clusterwright.cli.size_cmd import size
from clusterwright.cli.sweep_cmd import sweep
from clusterwright.cli.validate_cmd import validate
from clusterwright.cli.web_cmd import web

app = typer.Typer(
    name="clusterwright",
    help="Design and simulate AI infrastructure: what to buy, how to wire it, how fast it runs.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"clusterwright {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    ctx: typer.Context,
    catalog: list[Path] = typer.Option(
        [], "--catalog", help="Extra catalog YAML (repeatable); also $CLUSTERWRIGHT_CATALOG."
    ),
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True),
) -> None:
    ctx.obj = AppState(catalog_files=list(catalog))


app.add_typer(catalog_cmd.app, name="catalog")
app.add_typer(train_cmd.app, name="train")
app.add_typer(serve_cmd.app, name="serve")
app.add_typer(fabric_cmd.app, name="fabric")
app.add_typer(ops_cmd.app, name="ops")
app.add_typer(runs_app, name="runs")
app.add_typer(twin_cmd.app, name="twin")
app.command("check")(check)
app.command("size")(size)
app.command("validate")(validate)
app.command("netsim")(netsim)
app.command("plan")(plan)
app.command("sweep")(sweep)
app.command("web")(web)


def run() -> None:
    app()
