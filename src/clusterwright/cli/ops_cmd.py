"""``clusterwright ops``: the operations twin (reliability, checkpoints, scheduling, power, TCO).

Each subcommand lives in its own ``ops_*_cmd.py`` module and is registered here.
"""

from __future__ import annotations

import typer

from clusterwright.cli.ops_carbon_cmd import carbon
from clusterwright.cli.ops_power_cmd import power
from clusterwright.cli.ops_reliability_cmd import checkpoint, reliability
from clusterwright.cli.ops_schedule_cmd import schedule
from clusterwright.cli.ops_storage_cmd import storage
from clusterwright.cli.ops_tco_cmd import tco
from clusterwright.cli.ops_vector_cmd import vector

app = typer.Typer(
    help="Operations twin: failures and checkpoints, storage and vector indexes, scheduling, "
    "power and cooling, energy and carbon, TCO.",
    no_args_is_help=True,
)

# Subcommand registrations (one line per module, alphabetical):
app.command("carbon")(carbon)
app.command("checkpoint")(checkpoint)
app.command("power")(power)
app.command("reliability")(reliability)
app.command("schedule")(schedule)
app.command("storage")(storage)
app.command("tco")(tco)
app.command("vector")(vector)
