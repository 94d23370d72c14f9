"""What every ``rocketkube admin`` subcommand is made of, and mqadmin's value syntaxes.

A :class:`Subcommand` adds its flags to its own parser and runs as ``handler(session)``;
the handler talks to the cluster through ``session.admin`` and hands what it found to
``session.emit(data, text)``: ``data`` is the JSON document ``--json`` prints, ``text`` the
table people read. The value parsers are argparse ``type=`` functions, so a malformed value
is a usage error (exit 2) before anything is sent.
"""

from __future__ import annotations

import argparse
import datetime
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TextIO

from rocketkube.client.admin.client import AdminClient
from rocketkube.client.producer.settings import ProducerSettings

__all__ = [
    "Session",
    "Subcommand",
    "UsageError",
    "add_target",
    "parse_bool",
    "parse_timestamp",
    "parse_timestamp_or_now",
]

#: mqadmin's date syntax for timestamps (Java ``UtilAll.YYYY_MM_DD_HH_MM_SS_SSS``).
DATE_FORMAT = "%Y-%m-%d#%H:%M:%S:%f"


class UsageError(Exception):
    """Flags that parse one by one but do not go together (exit 2, as argparse's errors)."""


@dataclass(slots=True)
class Session:
    """One run of a subcommand: its parsed flags, the admin client, and where output goes."""

    args: argparse.Namespace
    admin: AdminClient
    out: TextIO
    as_json: bool

    def emit(self, data: Any, text: str) -> None:
        """Print ``data`` as one JSON document with ``--json``, else ``text``."""
        if self.as_json:
            print(json.dumps(data, ensure_ascii=False), file=self.out, flush=True)
        else:
            print(text, file=self.out, flush=True)

    @property
    def namesrv_addr(self) -> str:
        addr: str = self.args.namesrv_addr
        return addr

    def producer_settings(self, group: str) -> ProducerSettings:
        """A producer of ``group`` on the cluster the flags name, with the admin client's
        TLS and account (``--tls*``, ``--access-key``/``--secret-key``)."""
        return ProducerSettings(
            group=group,
            namesrv_addr=self.namesrv_addr,
            tls=self.admin.tls,
            credentials=self.admin.credentials,
        )


Handler = Callable[[Session], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Subcommand:
    """``name`` as mqadmin spells it; ``configure`` adds the flags; ``handler`` runs it."""

    name: str
    help: str
    configure: Callable[[argparse.ArgumentParser], None]
    handler: Handler


def parse_bool(text: str) -> bool:
    """``true`` or ``false`` (any case), as mqadmin's ``(true|false)`` options."""
    lowered = text.strip().lower()
    if lowered not in ("true", "false"):
        raise argparse.ArgumentTypeError(f"expected true or false, not {text!r}")
    return lowered == "true"


def parse_timestamp(text: str) -> int:
    """Epoch milliseconds, or mqadmin's ``yyyy-MM-dd#HH:mm:ss:SSS`` in local time."""
    value = text.strip()
    if value.lstrip("-").isdigit():
        return int(value)
    try:
        parsed = datetime.datetime.strptime(value, DATE_FORMAT)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected epoch milliseconds or yyyy-MM-dd#HH:mm:ss:SSS, not {text!r}"
        ) from None
    return int(parsed.timestamp() * 1000)


def parse_timestamp_or_now(text: str) -> int:
    """:func:`parse_timestamp`, or ``now`` for -1 (the max offset, to skip everything)."""
    return -1 if text.strip() == "now" else parse_timestamp(text)


def add_target(parser: argparse.ArgumentParser, what: str) -> None:
    """mqadmin's ``-b brokerAddr | -c clusterName`` pair: exactly one of the two."""
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument(
        "-b",
        "--brokerAddr",
        dest="broker_addr",
        metavar="ADDR",
        help=f"{what} on this broker (host:port)",
    )
    group.add_argument(
        "-c",
        "--clusterName",
        dest="cluster",
        metavar="CLUSTER",
        help=f"{what} on every master of this cluster",
    )
