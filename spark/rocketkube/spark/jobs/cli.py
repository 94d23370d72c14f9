"""``rocketkube spark archive|replay|stats``: the jobs' arguments, and the SparkSession each
runs in.

::

    rocketkube spark archive -n 127.0.0.1:9876 --topic Orders --output /data/archive \\
        --checkpoint /data/archive-checkpoint            # what is there now, then stops
    rocketkube spark replay --archive /data/archive --topic OrdersReplay \\
        --from 2026-01-01T00:00:00Z --to 2026-01-02T00:00:00Z
    rocketkube spark stats --topic Orders --from 2026-01-01T00:00Z --output /data/stats

``--master`` takes any master URL (``local[*]`` by default, ``spark://...``,
``k8s://...``); under ``spark-submit`` (:mod:`.__main__`) spark-submit's own is used unless
one is given. ``--conf key=value`` sets Spark configuration. Times are ISO 8601 (UTC unless
they say otherwise) or epoch milliseconds. A cluster with ACL or TLS takes the flags (and
environment variables) of ``rocketkube admin``: ``--access-key``, ``--secret-key`` (better
``ROCKETKUBE_SECRET_KEY``: no secret in the process list), ``--tls``, ``--tls-ca``...

This module imports pyspark only inside :func:`run`: the ``rocketkube`` command loads it to
list and parse its subcommands.
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import os
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from rocketkube.client import credential_options, tls_options
from rocketkube.common.cli import Command

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "COMMAND",
    "configure",
    "main",
    "parse_time",
    "run",
    "security_options",
    "source_options",
]

DEFAULT_MASTER = "local[*]"


def parse_time(text: str) -> datetime.datetime:
    """ISO 8601 (naive means UTC) or epoch milliseconds, as an aware UTC datetime."""
    value = text.strip()
    try:
        if value.isdigit():
            moment = datetime.datetime.fromtimestamp(int(value) / 1000, datetime.UTC)
        else:
            moment = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not ISO 8601 or epoch milliseconds: {text!r}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return moment.astimezone(datetime.UTC)


def _key_value(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"not key=value: {text!r}")
    return key.strip(), value


def _source_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-n",
        "--namesrv-addr",
        default=os.environ.get("NAMESRV_ADDR", "127.0.0.1:9876"),
        help="name server(s), ';'-separated (default $NAMESRV_ADDR, else 127.0.0.1:9876)",
    )
    topics = parser.add_mutually_exclusive_group(required=True)
    topics.add_argument("--topic", help="topic(s) to read, comma-separated")
    topics.add_argument("--topic-pattern", help="read every topic whose name matches this regex")
    parser.add_argument(
        "--option",
        type=_key_value,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="another option of the rocketmq data source (e.g. tagExpression=TagA)",
    )
    _security_arguments(parser)


def _security_arguments(parser: argparse.ArgumentParser) -> None:
    credential_options.add_arguments(parser)
    tls_options.add_arguments(parser)


def _configure_archive(parser: argparse.ArgumentParser) -> None:
    _source_arguments(parser)
    parser.add_argument("--output", required=True, help="the archive's directory (Parquet)")
    parser.add_argument("--checkpoint", required=True, help="the query's checkpoint directory")
    parser.add_argument(
        "--starting-offsets",
        default="earliest",
        help="where a new archive starts: earliest (default), latest, committed or JSON",
    )
    parser.add_argument("--max-messages-per-trigger", type=int, help="per micro-batch at most")
    parser.add_argument("--consumer-group", help="commit each batch's offsets to this group")
    parser.add_argument(
        "--interval",
        type=float,
        metavar="SECONDS",
        help="run until stopped, a micro-batch every SECONDS (default: archive what is there "
        "now, then stop)",
    )


def _configure_replay(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--archive", required=True, help="the archive's directory (Parquet)")
    parser.add_argument("--topic", required=True, help="the topic to send the messages to")
    parser.add_argument(
        "-n",
        "--namesrv-addr",
        default=os.environ.get("NAMESRV_ADDR", "127.0.0.1:9876"),
        help="name server(s) of the cluster sent to (default $NAMESRV_ADDR, else 127.0.0.1:9876)",
    )
    parser.add_argument("--from", dest="start", type=parse_time, help="stored at or after")
    parser.add_argument("--to", dest="end", type=parse_time, help="stored before")
    parser.add_argument(
        "--source-topic", action="append", default=[], help="only the archive's messages of it"
    )
    _security_arguments(parser)


def _configure_stats(parser: argparse.ArgumentParser) -> None:
    _source_arguments(parser)
    parser.add_argument("--from", dest="start", type=parse_time, help="stored at or after")
    parser.add_argument("--to", dest="end", type=parse_time, help="stored before")
    parser.add_argument("--output", help="write the table as Parquet here too")


_JOBS = {
    "archive": ("stream topics into Parquet, partitioned by topic and date", _configure_archive),
    "replay": ("send a Parquet archive (or a time range of it) into a topic", _configure_replay),
    "stats": ("per-topic and per-queue counts, bytes, keys and latency", _configure_stats),
}


def configure(parser: argparse.ArgumentParser, default_master: str | None = DEFAULT_MASTER) -> None:
    """The jobs as subcommands, with ``--master`` and ``--conf``."""
    shown = default_master or "spark-submit's"
    parser.add_argument(
        "--master", default=default_master, help=f"Spark master URL (default {shown})"
    )
    parser.add_argument(
        "--conf",
        type=_key_value,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="Spark configuration",
    )
    sub = parser.add_subparsers(dest="job", metavar="JOB", required=True)
    for name, (summary, configure_job) in _JOBS.items():
        configure_job(sub.add_parser(name, help=summary, description=summary))


def security_options(
    args: argparse.Namespace, environ: Mapping[str, str] = os.environ
) -> dict[str, str]:
    """The data source's ACL and TLS options of the ``--access-key``... and ``--tls...``
    flags (else their environment variables); ValueError for a key without the other."""
    options: dict[str, str] = {}
    credentials = credential_options.from_args(args, environ)
    if credentials is not None:
        options.update(accessKey=credentials.access_key, secretKey=credentials.secret_key)
    tls = tls_options.from_args(args, environ)
    if tls is not None:
        files = {"tlsCaFile": tls.ca_file, "tlsCertFile": tls.cert_file, "tlsKeyFile": tls.key_file}
        options.update({name: path for name, path in files.items() if path is not None})
        options.update(tls="true", tlsCheckHostname=str(tls.check_hostname).lower())
    return options


def source_options(
    args: argparse.Namespace, environ: Mapping[str, str] = os.environ
) -> dict[str, str]:
    """The data source options of a reading job's arguments."""
    options = {"namesrvAddr": args.namesrv_addr, **security_options(args, environ)}
    if args.topic is not None:
        options["topic"] = args.topic
    else:
        options["topicPattern"] = args.topic_pattern
    for name, value in (
        ("startingOffsets", getattr(args, "starting_offsets", None)),
        ("maxMessagesPerTrigger", getattr(args, "max_messages_per_trigger", None)),
        ("consumerGroup", getattr(args, "consumer_group", None)),
        ("startingTimestamp", _ms(getattr(args, "start", None))),
        ("endingTimestamp", _ms(getattr(args, "end", None))),
    ):
        if value is not None:
            options[name] = str(value)
    options.update(dict(args.option))
    return options


def _ms(moment: datetime.datetime | None) -> int | None:
    return None if moment is None else int(moment.timestamp() * 1000)


def _session(args: argparse.Namespace) -> SparkSession:
    """The SparkSession the job runs in (UTC session time zone)."""
    sql = importlib.import_module("pyspark.sql")
    builder = sql.SparkSession.builder.appName(f"rocketkube-{args.job}")
    if args.master is not None:
        builder = builder.master(args.master)
        if args.master.startswith("local"):
            # Python workers run this interpreter, which has rocketkube installed.
            builder = builder.config("spark.pyspark.python", sys.executable)
    builder = builder.config("spark.sql.session.timeZone", "UTC")
    for key, value in args.conf:
        builder = builder.config(key, value)
    session: SparkSession = builder.getOrCreate()
    return session


def run(args: argparse.Namespace) -> int:
    """Run the job the arguments name in a new SparkSession, then stop it."""
    spark = _session(args)
    try:
        if args.job == "archive":
            _archive(spark, args)
        elif args.job == "replay":
            replay = importlib.import_module("rocketkube.spark.jobs.replay")
            settings = replay.ReplaySettings(
                archive=args.archive,
                topic=args.topic,
                namesrv_addr=args.namesrv_addr,
                start=args.start,
                end=args.end,
                topics=tuple(args.source_topic),
                options=security_options(args),
            )
            replay.replay(spark, settings)
        else:
            stats = importlib.import_module("rocketkube.spark.jobs.stats")
            table = stats.stats(spark, stats.StatsSettings(source_options(args), args.output))
            table.show(n=10_000, truncate=False)
    finally:
        spark.stop()
    return 0


def _archive(spark: SparkSession, args: argparse.Namespace) -> None:
    archive = importlib.import_module("rocketkube.spark.jobs.archive")
    settings = archive.ArchiveSettings(
        source_options(args), args.output, args.checkpoint, args.interval
    )
    query = archive.archive(spark, settings)
    try:
        query.awaitTermination()
    except KeyboardInterrupt:
        query.stop()
    print(f"archive query {query.id} stopped; its last progress: {query.lastProgress}")


def main(argv: Sequence[str] | None = None, default_master: str | None = DEFAULT_MASTER) -> int:
    """``rocketkube spark ...`` as a program (spark-submit: ``default_master=None``)."""
    parser = argparse.ArgumentParser(prog="rocketkube spark", description=COMMAND.help)
    configure(parser, default_master)
    return run(parser.parse_args(argv))


COMMAND = Command(
    help="Spark jobs on topics: archive to Parquet, replay an archive, stats",
    configure=configure,
    run=run,
)
