"""``rocketkube local``: a whole cluster on this machine, no Kubernetes.

Runs each server as its own ``rocketkube`` child process (one process is one core),
restarts nothing, and stops them all on SIGINT/SIGTERM or when any one of them dies.
Every port binds 127.0.0.1 unless ``--bind`` says otherwise: a development cluster has no
ACL, so it must not be reachable from the network by default (the server commands keep
RocketMQ's default, every address).
It imports no component: children are started through the command line.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from dataclasses import dataclass
from pathlib import Path

from rocketkube.common import runtime
from rocketkube.common.cli import Command

log = logging.getLogger("rocketkube.local")


@dataclass(frozen=True)
class Child:
    name: str
    args: list[str]


DEFAULT_BROKER_PORT = 10911
DEFAULT_BIND = "127.0.0.1"


def advertised(bind: str) -> str:
    """The address clients are given: ``bind`` itself, or 127.0.0.1 for every address."""
    return "127.0.0.1" if bind in ("0.0.0.0", "::", "") else bind


def broker_ports(first: int, brokers: int, slaves: int = 0) -> list[int]:
    """Broker process ``k`` listens on ``first + 10*k``: room for its HA (+1) and HTTP (+3)
    ports. Each group's master comes first, then its slaves."""
    return [first + 10 * k for k in range(brokers * (1 + slaves))]


def plan(
    data_dir: Path,
    namesrv_port: int,
    brokers: int = 1,
    broker_port: int = DEFAULT_BROKER_PORT,
    slaves: int = 0,
    bind: str = DEFAULT_BIND,
) -> list[Child]:
    """The processes of a local cluster (pure: tested without starting anything).

    Group ``i`` is ``broker-<letter>``: a master (store under ``data_dir/broker-<letter>``)
    and ``slaves`` slaves (brokerId 1.., ``broker-<letter>-s<id>``) replicating it; the
    ports are :func:`broker_ports`. Every server listens on ``bind`` only; brokers advertise
    127.0.0.1 unless ``bind`` is one address, which they then advertise.
    """
    host = advertised(bind)
    children = [
        Child(
            "namesrv",
            [
                "namesrv",
                "--port", str(namesrv_port),
                "--http-port", str(namesrv_port + 1),
                "--bind", bind,
                "--kv-config-path", str(data_dir / "namesrv" / "kvConfig.json"),
            ],
        ),
    ]  # fmt: skip
    ports = iter(broker_ports(broker_port, brokers, slaves))
    for i in range(brokers):
        group = f"broker-{chr(ord('a') + i)}"
        for broker_id in range(1 + slaves):
            name = f"{group}-s{broker_id}" if broker_id else group
            role = ["--broker-id", str(broker_id), "--role", "SLAVE"] if broker_id else []
            children.append(
                Child(
                    name,
                    [
                        "broker",
                        "--namesrv-addr", f"{host}:{namesrv_port}",
                        "--broker-name", group,
                        *role,
                        "--port", str(next(ports)),
                        "--broker-ip", host,
                        "--store", str(data_dir / name),
                        "--set", f"bindAddress={bind}",
                    ],
                )
            )  # fmt: skip
    return children


async def supervise(children: list[Child]) -> int:
    procs: dict[str, asyncio.subprocess.Process] = {}
    for child in children:
        procs[child.name] = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "rocketkube.launcher", *child.args, env=runtime.child_env()
        )
        log.info("started %s (pid %d): rocketkube %s", child.name, procs[child.name].pid,
                 " ".join(child.args))  # fmt: skip
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    waits = {asyncio.ensure_future(p.wait()): name for name, p in procs.items()}
    stopper = asyncio.ensure_future(stop.wait())
    done, _ = await asyncio.wait([*waits, stopper], return_when=asyncio.FIRST_COMPLETED)
    code = 0
    for task in done:
        if task in waits:
            log.error("%s exited with code %s: stopping the cluster", waits[task], task.result())
            code = 1
    for proc in procs.values():
        if proc.returncode is None:
            proc.terminate()
    for proc in procs.values():
        try:
            await asyncio.wait_for(proc.wait(), 15)
        except TimeoutError:
            proc.kill()
            await proc.wait()
    stopper.cancel()
    return code


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-dir", default=".data", help="where stores and configs live")
    parser.add_argument("--namesrv-port", type=int, default=9876)
    parser.add_argument("--brokers", type=int, default=1, help="broker groups (masters)")
    parser.add_argument("--slaves", type=int, default=0, help="slaves replicating each master")
    parser.add_argument(
        "--bind", default=DEFAULT_BIND,
        help=f"address every port listens on (default {DEFAULT_BIND}: this machine only; "
        "0.0.0.0 opens the cluster, which has no ACL, to the network)",
    )  # fmt: skip
    parser.add_argument(
        "--broker-port", type=int, default=DEFAULT_BROKER_PORT,
        help=f"the first broker's port (default {DEFAULT_BROKER_PORT}); the next ones +10 each",
    )  # fmt: skip


def run(args: argparse.Namespace) -> int:
    runtime.configure_logging()
    data_dir = Path(args.data_dir).resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    children = plan(
        data_dir, args.namesrv_port, args.brokers, args.broker_port, args.slaves, args.bind
    )
    host = advertised(args.bind)
    brokers = ", ".join(
        f"{host}:{port}" for port in broker_ports(args.broker_port, args.brokers, args.slaves)
    )
    print(
        f"local cluster: name server {host}:{args.namesrv_port}, brokers {brokers}; "
        f"metrics on http://{host}:{args.namesrv_port + 1}/metrics and each broker's "
        f"port + 3; data in {data_dir}; Ctrl-C stops it",
        file=sys.stderr,
    )
    return runtime.run(supervise(children))


COMMAND = Command(help="run a local cluster (name server and brokers) on this machine",
                  configure=configure, run=run)  # fmt: skip
