"""``rocketkube broker``: run a broker from a RocketMQ ``broker.conf``.

With ``--identity-from-pod`` a broker run as a StatefulSet's pod takes its identity from
the pod, never from a hand-edited file: pod ``<statefulset>-<ordinal>`` (``POD_NAME``)
is ``brokerId`` ``ordinal``, the master at 0 (its role as configured: ASYNC_MASTER or
SYNC_MASTER), a ``SLAVE`` above; ``POD_IP`` is the ``brokerIP1`` it advertises. Both come
from the downward API, so every pod of a group shares one ``broker.conf``.
"""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from rocketkube.common import runtime
from rocketkube.common import settings as settings_mod
from rocketkube.common.cli import Command
from rocketkube.common.properties_file import load_properties

if TYPE_CHECKING:
    from rocketkube.broker.settings import BrokerSettings

#: Flags for the properties people set most; ``--set key=value`` reaches every other one.
FLAGS = {
    "namesrv_addr": ("-n", "--namesrv-addr", "namesrvAddr", "name servers, a:9876;b:9876"),
    "listen_port": ("-p", "--port", "listenPort", "remoting port (default 10911)"),
    "broker_name": (None, "--broker-name", "brokerName", "broker name (default broker-a)"),
    "broker_id": (None, "--broker-id", "brokerId", "0 = master, 1.. = slaves"),
    "broker_cluster_name": (None, "--cluster", "brokerClusterName", "cluster name"),
    "broker_role": (None, "--role", "brokerRole", "ASYNC_MASTER, SYNC_MASTER or SLAVE"),
    "broker_ip1": (None, "--broker-ip", "brokerIP1", "address advertised to clients"),
    "store_path_root_dir": (None, "--store", "storePathRootDir", "store directory"),
    "flush_disk_type": (None, "--flush-disk-type", "flushDiskType", "ASYNC_FLUSH or SYNC_FLUSH"),
    "http_port": (None, "--http-port", "httpPort", "metrics/health port (listenPort+3)"),
}


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-c", "--config", help="broker.conf with RocketMQ property names")
    for dest, (short, long, prop, text) in FLAGS.items():
        names = [n for n in (short, long) if n]
        parser.add_argument(*names, dest=dest, help=f"{text} ({prop})")
    parser.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE",
        help="any other property, e.g. --set autoCreateTopicEnable=false",
    )  # fmt: skip
    parser.add_argument(
        "--identity-from-pod", action="store_true",
        help="brokerId from POD_NAME's ordinal (SLAVE above 0), brokerIP1 from POD_IP",
    )  # fmt: skip
    parser.add_argument("--log-level", default=os.environ.get("ROCKETKUBE_LOG_LEVEL", "INFO"))


def _overrides(args: argparse.Namespace) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in args.set:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise settings_mod.SettingsError(f"--set expects KEY=VALUE, got {item!r}")
        out[key.strip()] = value.strip()
    for dest, (_, _, prop, _) in FLAGS.items():
        value = getattr(args, dest)
        if value is not None:
            out[prop] = value
    return out


#: A StatefulSet pod's name: ``<statefulset>-<ordinal>``.
_POD_ORDINAL = re.compile(r"-(0|[1-9][0-9]*)$")


def pod_identity(environ: Mapping[str, str]) -> dict[str, str]:
    """``brokerId``, ``brokerIP1`` and, for a slave, ``brokerRole`` of the pod that
    ``POD_NAME`` and ``POD_IP`` (the downward API) describe."""
    pod = environ.get("POD_NAME", "")
    match = _POD_ORDINAL.search(pod)
    if match is None:
        raise settings_mod.SettingsError(
            f"--identity-from-pod: POD_NAME {pod!r} does not end in a pod ordinal "
            "(<statefulset>-<n>)"
        )
    pod_ip = environ.get("POD_IP", "")
    if not pod_ip:
        raise settings_mod.SettingsError("--identity-from-pod: POD_IP is not set")
    ordinal = int(match.group(1))
    identity = {"brokerId": str(ordinal), "brokerIP1": pod_ip}
    if ordinal > 0:
        identity["brokerRole"] = "SLAVE"
    return identity


#: The property naming the ACL file (RocketMQ's system property of the same name).
ACL_FILE = "rocketmq.acl.plain.file"


def default_acl_file(config: str | None) -> str | None:
    """``plain_acl.yml`` beside the config file, as RocketMQ keeps both in ``conf/``."""
    return None if config is None else str(Path(config).absolute().parent / "plain_acl.yml")


def broker_settings(args: argparse.Namespace, environ: Mapping[str, str]) -> BrokerSettings:
    """The settings ``args`` describe: the environment (and the ACL file beside the config
    file), then the config file, then flags, then (``--identity-from-pod``) the pod's
    identity, each later layer winning."""
    from rocketkube.broker.settings import BrokerSettings

    layers: list[Mapping[str, str | None]] = [
        {"namesrvAddr": environ.get("NAMESRV_ADDR"), ACL_FILE: default_acl_file(args.config)},
        load_properties(args.config) if args.config else {},
        _overrides(args),
    ]
    if args.identity_from_pod:
        layers.append(pod_identity(environ))
    settings = settings_mod.build(BrokerSettings, *layers)
    if args.identity_from_pod and not settings.is_master and settings.broker_id == 0:
        raise settings_mod.SettingsError(
            "--identity-from-pod: pod ordinal 0 is the master, but brokerRole is SLAVE"
        )
    return settings


def run(args: argparse.Namespace) -> int:
    from rocketkube.broker.app import BrokerApp

    runtime.configure_logging(args.log_level)

    def build() -> BrokerApp:
        return BrokerApp(broker_settings(args, os.environ))

    return runtime.run_server("rocketkube broker", build)


COMMAND = Command(help="run a broker", configure=configure, run=run)
