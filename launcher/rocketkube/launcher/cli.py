"""The ``rocketkube`` command: a thin dispatcher over subcommands.

Subcommands are found through the ``rocketkube.commands`` entry-point group, so
this module imports no component: each component publishes a
:class:`~rocketkube.common.cli.Command` and is loaded only when its subcommand runs.
"""

from __future__ import annotations

import argparse
import importlib.metadata
from collections.abc import Callable, Sequence

from rocketkube.common.cli import Command

ENTRY_POINT_GROUP = "rocketkube.commands"


def _version() -> str:
    try:
        return importlib.metadata.version("rocketkube")
    except importlib.metadata.PackageNotFoundError:  # running from a source tree
        return "0+unknown"


def build_parser(commands: dict[str, Command]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rocketkube",
        description="A RocketMQ-compatible messaging system: name server, broker, client tools.",
    )
    parser.add_argument("--version", action="version", version=f"rocketkube {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in sorted(commands):
        command = commands[name]
        child = sub.add_parser(name, help=command.help, description=command.help)
        command.configure(child)
        child.set_defaults(_run=command.run)
    return parser


def discover() -> dict[str, Command]:
    found: dict[str, Command] = {}
    for entry in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        command = entry.load()
        if not isinstance(command, Command):
            raise TypeError(f"entry point {entry.value} is not a rocketkube Command")
        found[entry.name] = command
    return found


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser(discover())
    args = parser.parse_args(argv)
    run: Callable[[argparse.Namespace], int] | None = getattr(args, "_run", None)
    if run is None:
        parser.print_help()
        return 2
    return run(args)
