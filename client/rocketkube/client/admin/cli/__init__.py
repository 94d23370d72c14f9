"""``rocketkube admin``: mqadmin's subcommands and flags, over :class:`AdminClient`.

::

    rocketkube admin updateTopic -n 127.0.0.1:9876 -c DefaultCluster -t Orders -r 4 -w 4
    rocketkube admin topicStatus -t Orders
    rocketkube admin consumerProgress -g OrderGroup --json

Every subcommand takes ``-n namesrvAddr`` (``;``-separated; default ``$NAMESRV_ADDR``,
else ``127.0.0.1:9876``), ``--json`` (one JSON document on stdout instead of a table) and
the TLS flags (``--tls``, ``--tls-ca``...: :mod:`rocketkube.client.tls_options`) and the
ACL ones (``--access-key``, ``--secret-key``: :mod:`rocketkube.client.credential_options`).
Exit codes: 0 done; 1 failed, with one line on stderr such as ``error: TOPIC_NOT_EXIST
(17): No topic route info in name server for the topic: X``; 2 a usage error (unknown or
missing flag, malformed value, flags that do not go together).

:func:`run_async` is the whole command for an already parsed namespace and
:func:`execute` for an argv; both run on the caller's event loop (tests call them next to
in-process servers). :data:`COMMAND` is the ``rocketkube admin`` entry point.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Mapping, Sequence
from typing import TextIO

from rocketkube.client import credential_options, tls_options
from rocketkube.client.admin.cli import brokers, groups, messages, topics
from rocketkube.client.admin.cli.base import Session, Subcommand, UsageError
from rocketkube.client.admin.client import AdminClient
from rocketkube.client.admin.settings import AdminSettings
from rocketkube.client.errors import MQBrokerError
from rocketkube.common import errors, runtime
from rocketkube.common.cli import Command
from rocketkube.common.remoting.codes import code_name

__all__ = ["COMMAND", "SUBCOMMANDS", "configure", "describe", "execute", "main", "run_async"]

DEFAULT_NAMESRV = "127.0.0.1:9876"
EXIT_FAILED = 1
EXIT_USAGE = 2

SUBCOMMANDS: tuple[Subcommand, ...] = (
    *topics.SUBCOMMANDS,
    *brokers.SUBCOMMANDS,
    *groups.SUBCOMMANDS,
    *messages.SUBCOMMANDS,
)


def configure(parser: argparse.ArgumentParser) -> None:
    """Add every subcommand, each with its mqadmin flags plus ``-n`` and ``--json``."""
    sub = parser.add_subparsers(dest="admin_command", metavar="SUBCOMMAND", required=True)
    for spec in SUBCOMMANDS:
        child = sub.add_parser(spec.name, help=spec.help, description=spec.help)
        child.add_argument(
            "-n",
            "--namesrvAddr",
            dest="namesrv_addr",
            metavar="ADDR",
            help=f"name server address(es), ';'-separated (default $NAMESRV_ADDR, "
            f"else {DEFAULT_NAMESRV})",
        )
        child.add_argument(
            "--json", action="store_true", help="print one JSON document instead of a table"
        )
        tls_options.add_arguments(child)
        credential_options.add_arguments(child)
        spec.configure(child)
        child.set_defaults(_admin=spec)


def describe(exc: BaseException) -> str:
    """The one line printed for a failure: ``NAME (code): remark`` for a broker's or name
    server's error code, else the error's type and message; whitespace runs collapsed."""
    if isinstance(exc, MQBrokerError):
        text = f"{code_name(exc.code, response=True)} ({exc.code}): {exc.remark or ''}"
    elif isinstance(exc, UsageError):
        text = str(exc)
    else:
        text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return " ".join(text.split())


def namesrv_addr(args: argparse.Namespace, environ: Mapping[str, str]) -> str:
    """``-n``, else ``NAMESRV_ADDR``, else the local default, as mqadmin resolves it."""
    given: str | None = args.namesrv_addr
    return given or environ.get("NAMESRV_ADDR") or DEFAULT_NAMESRV


async def run_async(
    args: argparse.Namespace, *, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    """Run the parsed subcommand; the exit code. Failures print one line on ``err``."""
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    spec: Subcommand = args._admin
    args.namesrv_addr = namesrv_addr(args, os.environ)
    try:
        tls = tls_options.from_args(args, os.environ)
        credentials = credential_options.from_args(args, os.environ)
        settings = AdminSettings(namesrv_addr=args.namesrv_addr, tls=tls, credentials=credentials)
        async with AdminClient(settings=settings) as admin:
            await spec.handler(Session(args, admin, out, args.json))
    except UsageError as exc:
        print(f"rocketkube admin {spec.name}: error: {describe(exc)}", file=err)
        return EXIT_USAGE
    except (errors.RocketKubeError, OSError, TimeoutError, ValueError) as exc:
        print(f"error: {describe(exc)}", file=err)
        return EXIT_FAILED
    return 0


def parser() -> argparse.ArgumentParser:
    """A standalone ``rocketkube admin`` parser (what :func:`execute` and :func:`main` use)."""
    top = argparse.ArgumentParser(prog="rocketkube admin", description=COMMAND.help)
    configure(top)
    return top


async def execute(
    argv: Sequence[str], *, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    """Parse ``argv`` (``["topicList", "-n", addr]``) and run it on the running loop."""
    try:
        with (
            contextlib.redirect_stdout(out or sys.stdout),
            contextlib.redirect_stderr(err or sys.stderr),
        ):
            args = parser().parse_args(argv)
    except SystemExit as exc:  # --help (0) or a usage error (2), already printed
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    return await run_async(args, out=out, err=err)


def run(args: argparse.Namespace) -> int:
    """The ``rocketkube admin`` entry: its own event loop; Ctrl-C (clusterList -i) ends it."""
    try:
        return runtime.run(run_async(args))
    except KeyboardInterrupt:
        return 130


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m rocketkube.client.admin.cli SUBCOMMAND ...``."""
    return run(parser().parse_args(argv))


COMMAND = Command(
    help="mqadmin-compatible administration (updateTopic, topicStatus, consumerProgress, ...)",
    configure=configure,
    run=run,
)
