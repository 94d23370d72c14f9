"""Running the operator: kopf's settings, the context its handlers share, the metrics
endpoint, and kopf itself, until stopped.

kopf keeps its progress in annotations under ``rocketkube.io/`` (so do its last-handled
configuration) and guards Topics and ConsumerGroups with the finalizer
``rocketkube.io/finalizer``. Only warnings and errors of kopf's own log become Events:
the handlers post their Normal Events themselves, one per action, not one per timer tick.

Tests call :func:`operate` in a thread with a ``stop_flag``, and point clusters at name
servers on 127.0.0.1 through ``address_of``.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from typing import Final

import kopf

from rocketkube.common.http_endpoint import HttpEndpoint
from rocketkube.operator import connection, metrics
from rocketkube.operator.handlers import registry
from rocketkube.operator.handlers.context import (
    MEMO_KEY,
    AddressOf,
    Context,
    Timing,
    in_cluster_address,
)
from rocketkube.operator.kube.client import Kube

__all__ = ["FINALIZER", "PREFIX", "Options", "operate", "settings"]

PREFIX: Final = "rocketkube.io"
FINALIZER: Final = f"{PREFIX}/finalizer"
LISTEN_HOST: Final = "0.0.0.0"  # probes and scrapes come from outside the pod
TIMER_EXIT_POLLING: Final = 1.0
"""Seconds between kopf's looks at a timer still in its pass when its object is deleted
(kopf's ``cancellation_polling``). kopf lets the pass end and, by default, looks again a
minute later: a Topic or cluster deleted during a pass (an admin call can take seconds)
would stay that long."""

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Options:
    """What ``rocketkube operator`` was told (see its ``--help``)."""

    namespaces: tuple[str, ...] = ()
    """Namespaces to watch (kopf's patterns: globs, ``!excluded``); none: all."""
    all_namespaces: bool = False
    peering: str | None = None
    """kopf peering object; None: standalone (one replica, no peering objects)."""
    priority: int = 0
    liveness_port: int | None = None
    metrics_port: int | None = None
    kubeconfig: str | None = None
    timing: Timing = field(default_factory=Timing)

    @property
    def clusterwide(self) -> bool:
        return self.all_namespaces or not self.namespaces


def settings() -> kopf.OperatorSettings:
    """kopf's settings for this operator."""
    out = kopf.OperatorSettings()
    out.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=PREFIX)
    out.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(
        prefix=PREFIX, key="last-handled-configuration"
    )
    out.persistence.finalizer = FINALIZER
    out.posting.level = logging.WARNING
    out.background.cancellation_polling = TIMER_EXIT_POLLING
    return out


async def operate(
    options: Options,
    *,
    address_of: AddressOf = in_cluster_address,
    operator_metrics: metrics.Metrics | None = None,
    stop_flag: threading.Event | None = None,
    ready_flag: threading.Event | None = None,
) -> None:
    """Run the operator until ``stop_flag`` is set (or a signal, in the main thread)."""
    link = await connection.connect(options.kubeconfig)
    ctx = Context(
        kube=Kube(link.api),
        login=link.login,
        metrics=operator_metrics or metrics.Metrics(),
        address_of=address_of,
        timing=options.timing,
    )
    endpoint = None
    if options.metrics_port is not None:
        endpoint = HttpEndpoint(ctx.metrics.registry, LISTEN_HOST, options.metrics_port, _ready)
    liveness = (
        None
        if options.liveness_port is None
        else f"http://{LISTEN_HOST}:{options.liveness_port}/healthz"
    )
    try:
        if endpoint is not None:
            await endpoint.start()
        await kopf.operator(
            registry=registry.build(options.timing.timer_interval),
            settings=settings(),
            standalone=options.peering is None,
            peering_name=options.peering,
            priority=options.priority,
            liveness_endpoint=liveness,
            clusterwide=options.clusterwide,
            namespaces=() if options.clusterwide else options.namespaces,
            memo=kopf.Memo({MEMO_KEY: ctx}),
            stop_flag=stop_flag,
            ready_flag=ready_flag,
        )
    finally:
        if endpoint is not None:
            await endpoint.stop()
        await link.close()


def _ready() -> bool:
    return True
