"""``rocketkube broker``: run a broker from a RocketMQ ``broker.conf``."""

from __future__ import annotations

import argparse
import os

from rocketkube.common import runtime
from rocketkube.common import settings as settings_mod
from rocketkube.common.cli import Command
from rocketkube.common.properties_file import load_properties

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


def run(args: argparse.Namespace) -> int:
    from rocketkube.broker.app import BrokerApp
    from rocketkube.broker.settings import BrokerSettings

    runtime.configure_logging(args.log_level)

    def build() -> BrokerApp:
        env = {"namesrvAddr": os.environ.get("NAMESRV_ADDR")}
        file_props = load_properties(args.config) if args.config else {}
        return BrokerApp(settings_mod.build(BrokerSettings, env, file_props, _overrides(args)))

    return runtime.run_server("rocketkube broker", build)


COMMAND = Command(help="run a broker", configure=configure, run=run)
