"""``rocketkube operator``: run the Kubernetes operator, or print its CRDs.

::

    rocketkube operator --print-crds | kubectl apply -f -
    rocketkube operator -n rocketmq --metrics-port 9090 --liveness-port 8080
    rocketkube operator --kubeconfig dev.yaml --namesrv-override demo=127.0.0.1:9876

This module imports neither kopf nor the Kubernetes client: ``rocketkube`` loads every
subcommand's flags at start, and the operator's dependencies are an extra
(``pip install 'rocketkube[operator]'``).
"""

from __future__ import annotations

import argparse
import os
import secrets
import sys

from rocketkube.common import runtime
from rocketkube.common.cli import Command
from rocketkube.operator.handlers.context import (
    DEFAULT_TIMER_INTERVAL,
    Timing,
    in_cluster_address,
    overridden_address,
)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.epilog = (
        "Without --namespace the operator watches every namespace. One replica runs "
        "--standalone; standbys need kopf's peering CRDs and --peering NAME with a "
        "different --priority each (the highest one works, the others wait)."
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "-n", "--namespace", action="append", default=[], metavar="NS",
        help="watch this namespace (repeatable; globs and !excluded as kopf takes them)",
    )  # fmt: skip
    where.add_argument(
        "-A", "--all-namespaces", action="store_true", help="watch every namespace (default)"
    )
    peering = parser.add_mutually_exclusive_group()
    peering.add_argument(
        "--standalone", action="store_true", default=True,
        help="run alone, without kopf peering (default)",
    )  # fmt: skip
    peering.add_argument(
        "--peering", metavar="NAME", help="coordinate with other replicas through this peering"
    )
    parser.add_argument(
        "--priority", type=priority, default=0, metavar="N|random",
        help="this replica's peering priority (default 0); random: one drawn at start, so "
        "the replicas of one Deployment differ (kopf pauses all that share one)",
    )  # fmt: skip
    parser.add_argument(
        "--liveness-port", type=int, metavar="PORT",
        help="serve kopf's liveness probe at http://0.0.0.0:PORT/healthz",
    )  # fmt: skip
    parser.add_argument(
        "--metrics-port", type=int, metavar="PORT",
        help="serve the operator's Prometheus metrics at http://0.0.0.0:PORT/metrics",
    )  # fmt: skip
    parser.add_argument(
        "--kubeconfig", metavar="FILE",
        help="credentials (default: the pod's service account in a cluster, else "
        "$KUBECONFIG or ~/.kube/config)",
    )  # fmt: skip
    parser.add_argument(
        "--timer-interval", type=float, default=DEFAULT_TIMER_INTERVAL, metavar="SECONDS",
        help="seconds between checks of each resource: rolls, scaling, drift, lag "
        f"(default {DEFAULT_TIMER_INTERVAL:g})",
    )  # fmt: skip
    parser.add_argument(
        "--namesrv-override", action="append", default=[], type=namesrv_override,
        metavar="CLUSTER=ADDR",
        help="for development and benchmarks, with the operator outside the cluster: reach "
        "the name servers of every BrokerCluster named CLUSTER at ADDR (a:9876;b:9876) "
        "instead of their in-cluster DNS names (repeatable)",
    )  # fmt: skip
    parser.add_argument(
        "--log-level", default=os.environ.get("ROCKETKUBE_LOG_LEVEL", "INFO"),
        help="DEBUG, INFO, WARNING or ERROR (default INFO)",
    )  # fmt: skip
    parser.add_argument(
        "--print-crds", action="store_true",
        help="print the CustomResourceDefinitions as YAML and exit "
        "(rocketkube operator --print-crds | kubectl apply -f -)",
    )  # fmt: skip


def namesrv_override(value: str) -> tuple[str, str]:
    """``CLUSTER=ADDR`` as (cluster, address)."""
    cluster, sep, address = value.partition("=")
    if not (sep and cluster.strip() and address.strip()):
        raise argparse.ArgumentTypeError(f"{value!r} is not CLUSTER=ADDR")
    return cluster.strip(), address.strip()


def priority(value: str) -> int:
    """An integer, or ``random``: one in [1, 2**31) drawn now."""
    if value == "random":
        return secrets.randbelow(2**31 - 1) + 1
    try:
        return int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is neither an integer nor random") from None


def run(args: argparse.Namespace) -> int:
    if args.print_crds:
        from rocketkube.operator.api import crds

        sys.stdout.write("---\n".join(crds.render_all().values()))
        return 0
    from rocketkube.operator import main

    runtime.configure_logging(args.log_level)
    options = main.Options(
        namespaces=tuple(args.namespace),
        all_namespaces=args.all_namespaces,
        peering=args.peering,
        priority=args.priority,
        liveness_port=args.liveness_port,
        metrics_port=args.metrics_port,
        kubeconfig=args.kubeconfig,
        timing=Timing(timer_interval=args.timer_interval),
    )

    overrides = dict(args.namesrv_override)
    address_of = overridden_address(overrides) if overrides else in_cluster_address

    async def operate() -> int:
        await main.operate(options, address_of=address_of)
        return 0

    return runtime.run(operate())


COMMAND = Command(help="run the Kubernetes operator", configure=configure, run=run)
