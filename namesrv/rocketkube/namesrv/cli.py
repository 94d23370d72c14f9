"""``rocketkube namesrv``: run a name server."""

from __future__ import annotations

import argparse
import os

from rocketkube.common import runtime
from rocketkube.common import settings as settings_mod
from rocketkube.common.cli import Command
from rocketkube.common.properties_file import load_properties


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-c", "--config", help="properties file with RocketMQ names (listenPort=)")
    parser.add_argument("-p", "--port", type=int, help="remoting port (listenPort, default 9876)")
    parser.add_argument("--http-port", type=int, help="metrics/health port (default 9877)")
    parser.add_argument("--bind", help="address to listen on (bindAddress, default 0.0.0.0)")
    parser.add_argument("--kv-config-path", help="KV config file (kvConfigPath)")
    parser.add_argument("--log-level", default=os.environ.get("ROCKETKUBE_LOG_LEVEL", "INFO"))


def run(args: argparse.Namespace) -> int:
    from rocketkube.namesrv.app import NamesrvApp
    from rocketkube.namesrv.settings import NamesrvSettings

    runtime.configure_logging(args.log_level)

    def build() -> NamesrvApp:
        file_props = load_properties(args.config) if args.config else {}
        settings = settings_mod.build(
            NamesrvSettings,
            file_props,
            {
                "listenPort": args.port,
                "httpPort": args.http_port,
                "bindAddress": args.bind,
                "kvConfigPath": args.kv_config_path,
            },
        )
        return NamesrvApp(settings)

    return runtime.run_server("rocketkube namesrv", build)


COMMAND = Command(help="run a name server", configure=configure, run=run)
