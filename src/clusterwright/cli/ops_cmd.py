"""``clusterwright ops``: the operations twin (reliability, checkpoints, scheduling, power, TCO).

Each subcommand lives in its own ``ops_*_cmd.py`` module and is registered here.
"""

from __future__ import annotations

import typer

app = typer.Typer(
    help="Operations twin: failures and checkpoints, scheduling, power and cooling, TCO.",
    no_args_is_help=True,
)

# Subcommand registrations (one line per module, alphabetical):
