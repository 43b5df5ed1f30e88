"""Every command and option of the CLI, read from the typer app itself, and one valid, fast
invocation of each command that the fuzzer mutates one option at a time.

Reading the options from the app (not from a list written here) means a new flag is fuzzed
the day it is added; a new command fails ``test_every_command_has_a_base`` until it gets a
base invocation below.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import typer

from clusterwright.cli.main import app

# One valid invocation per command, small enough to run in well under a second.
BASES: dict[str, list[str]] = {
    "check": ["check", "examples/serve-llama3-70b.yaml", "--json"],
    "size": ["size", "--model", "llama-3.1-8b", "--json"],
    "validate": ["validate", "--table", "memory", "--json"],
    "netsim": ["netsim", "--server", "dgx-h100", "--nodes", "4", "--collective", "allreduce",
               "--size-bytes", "1e8", "--json"],
    "plan": ["plan", "examples/training-1k-h100/scenario.yaml", "--out", "{tmp}/bp", "--json"],
    "sweep": ["sweep", "examples/sweeps/train-gpu-power-price.yaml", "--out", "{tmp}/sw",
              "--json"],
    "web": ["web", "--port", "0"],
    "catalog list": ["catalog", "list", "gpus", "--json"],
    "catalog show": ["catalog", "show", "h100-sxm", "--json"],
    "train estimate": ["train", "estimate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm",
                       "--gpus", "16", "--tp", "2", "--json"],
    "train plan": ["train", "plan", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--gpus",
                   "16", "--tokens", "1e11", "--json"],
    "train multisite": ["train", "multisite", "--model", "llama-3.1-8b", "--gpu", "h100-sxm",
                        "--sites", "2", "--site-mw", "1", "--gpus", "64", "--wan-gbps", "100",
                        "--tokens", "1e11", "--json"],
    "serve estimate": ["serve", "estimate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm",
                       "--qps", "2", "--input-len", "512", "--output-len", "128",
                       "--num-requests", "200", "--json"],
    "serve plan": ["serve", "plan", "--model", "llama-3.1-8b", "--qps", "2", "--input-len",
                   "512", "--output-len", "128", "--ttft-p99", "2", "--tpot-p99", "0.1",
                   "--gpu", "h100-sxm", "--num-requests", "200", "--json"],
    "fabric design": ["fabric", "design", "--server", "dgx-h100", "--nodes", "8", "--json"],
    "fabric verify": ["fabric", "verify", "--leaves", "2", "--spines", "1", "--json"],
    "ops checkpoint": ["ops", "checkpoint", "--checkpoint-write-s", "30", "--mtbf-hours", "3",
                       "--restart-s", "600", "--json"],
    "ops power": ["ops", "power", "--server", "dgx-h100", "--nodes", "8", "--json"],
    "ops reliability": ["ops", "reliability", "--gpus", "1024", "--days", "10", "--json"],
    "ops schedule": ["ops", "schedule", "examples/ops/jobs.csv", "--json"],
    "ops tco": ["ops", "tco", "--server", "dgx-h100", "--nodes", "8", "--json"],
    "ops carbon": ["ops", "carbon", "--gpu-hours", "1e6", "--region", "us", "--json"],
    "ops storage": ["ops", "storage", "--gpus", "64", "--model", "llama-3.1-8b", "--json"],
    "ops vector": ["ops", "vector", "--vectors", "1e6", "--dim", "768", "--json"],
    "runs list": ["runs", "list", "--db", "{tmp}/cw.db", "--json"],
    "runs show": ["runs", "show", "1", "--db", "{tmp}/cw.db", "--json"],
    "runs delete": ["runs", "delete", "1", "--db", "{tmp}/cw.db", "--yes", "--json"],
    "runs scenarios": ["runs", "scenarios", "--db", "{tmp}/cw.db", "--json"],
    "runs save-scenario": ["runs", "save-scenario", "examples/serve-llama3-70b.yaml", "--db",
                           "{tmp}/cw.db", "--json"],
    "runs plan": ["runs", "plan", "1", "--db", "{tmp}/cw.db", "--quick", "--json"],
    "twin diff": ["twin", "diff", "--blueprint", "examples/twin/blueprint", "--lldp",
                  "examples/twin/as-built/lldp.json", "--no-impact", "--json"],
    "twin lab": ["twin", "lab", "--json"],
}

# Commands whose successful run is slow or needs more than a process (a server, routing
# daemons, a full blueprint): the fuzzer gives them only values they must refuse, so an
# accepted value is a finding rather than a minute of work.
REFUSE_ONLY = {"web", "fabric verify", "plan", "sweep", "runs plan", "twin lab"}


@dataclass(frozen=True)
class Option:
    """One option or argument of one command."""

    command: str
    name: str  # the flag (``--seed``) or, for an argument, its name
    kind: str  # int, float, str, path, bool, list
    is_argument: bool

    @property
    def id(self) -> str:
        return f"{self.command} {self.name}"


def _kind(p: Any) -> str:
    if getattr(p, "is_flag", False):
        return "bool"
    ann = p.type_descriptor.annotation
    text = str(ann)
    if "Path" in text:
        return "path"
    if ann is int:
        return "int"
    if ann is float:
        return "float"
    if "list" in text.lower():
        return "list"
    return "str"


def commands() -> dict[str, Any]:
    """``{"serve estimate": click command}`` for every leaf command."""
    out: dict[str, Any] = {}

    def walk(c: Any, path: list[str]) -> None:
        if hasattr(c, "commands"):
            for name, sub in c.commands.items():
                walk(sub, [*path, name])
        else:
            out[" ".join(path)] = c

    walk(typer.main.get_command(app), [])
    return out


def options() -> list[Option]:
    """Every option and argument of every command (help and bool flags left out: a flag has
    no value to mutate)."""
    out = []
    for name, cmd in commands().items():
        for p in cmd.params:
            if p.name == "help":
                continue
            kind = _kind(p)
            if kind == "bool":
                continue
            is_arg = not p.opts[0].startswith("-")
            out.append(Option(name, p.opts[0] if not is_arg else p.name, kind, is_arg))
    return out


def base(command: str, tmp: str) -> list[str]:
    return [a.replace("{tmp}", tmp) for a in BASES[command]]


def with_value(opt: Option, value: str, tmp: str) -> list[str]:
    """The command's base invocation with ``opt`` set to ``value`` (replaced if the base
    gives it, added otherwise)."""
    args = base(opt.command, tmp)
    if opt.is_argument:
        cmd = commands()[opt.command]
        positional = [p for p in cmd.params if not p.opts[0].startswith("-")]
        index = [p.name for p in positional].index(opt.name)
        words = opt.command.split()
        # Arguments follow the command words in the order declared.
        start = len(words)
        args[start + index] = value
        return args
    if opt.name in args:
        i = args.index(opt.name)
        args[i + 1] = value
        return args
    return [*args, opt.name, value]
