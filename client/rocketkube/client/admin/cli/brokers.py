"""Broker and cluster subcommands: clusterList, brokerStatus, getBrokerConfig,
updateBrokerConfig.

Flags are mqadmin's (``tools/.../command/{cluster,broker}/``, RocketMQ 4.9.8). The figures
of clusterList come from each broker's runtime table (GET_BROKER_RUNTIME_INFO) as mqadmin
reads them; :func:`cluster_rows` and :func:`traffic_rows` turn those tables into rows
without I/O. A broker that does not answer shows empty figures, as with mqadmin.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Mapping
from typing import Any

from rocketkube.client.admin.cli import render
from rocketkube.client.admin.cli.base import Session, Subcommand, add_target
from rocketkube.common import errors
from rocketkube.common.protocol.route import ClusterInfo

__all__ = ["SUBCOMMANDS", "cluster_rows", "traffic_rows"]

Runtime = Mapping[str, str]


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _first_rate(text: str | None) -> float:
    """The 10-second figure of a ``"<10s> <1min> <10min>"`` rate string."""
    try:
        return float((text or "").split()[0])
    except (IndexError, ValueError):
        return 0.0


def _number(table: Runtime, key: str) -> int:
    try:
        return int(table.get(key, "0"))
    except ValueError:
        return 0


def _brokers(info: ClusterInfo, *, masters_only: bool) -> list[tuple[str, str, int, str]]:
    """(cluster, broker name, broker id, address), sorted as mqadmin prints them."""
    out = []
    for cluster in sorted(info.cluster_addr_table):
        for name in sorted(info.cluster_addr_table[cluster]):
            data = info.broker_addr_table.get(name)
            if data is None:
                continue
            for broker_id, addr in sorted(data.broker_addrs.items()):
                if broker_id == 0 or not masters_only:
                    out.append((cluster, name, broker_id, addr))
    return out


def cluster_rows(
    info: ClusterInfo, runtimes: Mapping[str, Runtime | None], now_ms: int
) -> list[dict[str, Any]]:
    """clusterList's rows: every broker with its version, put/get TPS (10 s), page-cache
    wait, hours of messages kept (since the earliest stored) and disk use ratio."""
    rows = []
    for cluster, name, broker_id, addr in _brokers(info, masters_only=False):
        table = runtimes.get(addr) or {}
        earliest = _number(table, "earliestMessageTimeStamp")
        hours = (now_ms - earliest) / 3_600_000 if earliest > 0 else 0.0
        try:
            space = float(table.get("commitLogDiskRatio", "0"))
        except ValueError:
            space = 0.0
        rows.append(
            {
                "cluster": cluster,
                "brokerName": name,
                "brokerId": broker_id,
                "addr": addr,
                "version": table.get("brokerVersionDesc", ""),
                "inTps": _first_rate(table.get("putTps")),
                "outTps": _first_rate(table.get("getTransferedTps")),
                "sendQueue": table.get("sendThreadPoolQueueSize", ""),
                "sendWaitMs": table.get("sendThreadPoolQueueHeadWaitTimeMills", ""),
                "pullQueue": table.get("pullThreadPoolQueueSize", ""),
                "pullWaitMs": table.get("pullThreadPoolQueueHeadWaitTimeMills", ""),
                "pageCacheWaitMs": table.get("pageCacheLockTimeMills", ""),
                "hours": round(hours, 2),
                "space": space,
                "answered": addr in runtimes and runtimes[addr] is not None,
            }
        )
    return rows


def traffic_rows(info: ClusterInfo, runtimes: Mapping[str, Runtime | None]) -> list[dict[str, Any]]:
    """``clusterList -m``: messages put and got yesterday and today, per master."""
    rows = []
    for cluster, name, _, addr in _brokers(info, masters_only=True):
        t = runtimes.get(addr) or {}
        rows.append(
            {
                "cluster": cluster,
                "brokerName": name,
                "inTotalYest": _number(t, "msgPutTotalTodayMorning")
                - _number(t, "msgPutTotalYesterdayMorning"),
                "outTotalYest": _number(t, "msgGetTotalTodayMorning")
                - _number(t, "msgGetTotalYesterdayMorning"),
                "inTotalToday": _number(t, "msgPutTotalTodayNow")
                - _number(t, "msgPutTotalTodayMorning"),
                "outTotalToday": _number(t, "msgGetTotalTodayNow")
                - _number(t, "msgGetTotalTodayMorning"),
            }
        )
    return rows


def _cluster_text(rows: list[dict[str, Any]]) -> str:
    return render.table(
        [
            "#Cluster Name",
            "#Broker Name",
            "#BID",
            "#Addr",
            "#Version",
            "#InTPS(LOAD)",
            "#OutTPS(LOAD)",
            "#PCWait(ms)",
            "#Hour",
            "#SPACE",
        ],
        [
            [
                r["cluster"],
                r["brokerName"],
                r["brokerId"],
                r["addr"],
                r["version"],
                f"{r['inTps']:.2f}({r['sendQueue']},{r['sendWaitMs']}ms)",
                f"{r['outTps']:.2f}({r['pullQueue']},{r['pullWaitMs']}ms)",
                r["pageCacheWaitMs"],
                f"{r['hours']:.2f}",
                f"{r['space']:.4f}",
            ]
            for r in rows
        ],
    )


def _traffic_text(rows: list[dict[str, Any]]) -> str:
    return render.table(
        [
            "#Cluster Name",
            "#Broker Name",
            "#InTotalYest",
            "#OutTotalYest",
            "#InTotalToday",
            "#OutTotalToday",
        ],
        [
            [
                r["cluster"],
                r["brokerName"],
                r["inTotalYest"],
                r["outTotalYest"],
                r["inTotalToday"],
                r["outTotalToday"],
            ]
            for r in rows
        ],
    )


async def _runtimes(session: Session, addrs: list[str]) -> dict[str, Runtime | None]:
    """Each broker's runtime table; None for one that cannot be reached or refuses."""

    async def one(addr: str) -> Runtime | None:
        try:
            return await session.admin.broker_runtime_info(addr)
        except errors.RocketKubeError:
            return None

    tables = await asyncio.gather(*(one(addr) for addr in addrs))
    return dict(zip(addrs, tables, strict=True))


# -- clusterList -------------------------------------------------------------------------------


def _configure_cluster_list(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-m",
        "--moreStats",
        dest="more_stats",
        action="store_true",
        help="messages in and out, yesterday and today",
    )
    parser.add_argument(
        "-i", "--interval", type=int, help="print again every this many seconds, until interrupted"
    )


async def _cluster_list(session: Session) -> None:
    args = session.args
    while True:
        info = await session.admin.cluster_info()
        addrs = [b[3] for b in _brokers(info, masters_only=False)]
        runtimes = await _runtimes(session, addrs)
        if args.more_stats:
            rows = traffic_rows(info, runtimes)
            session.emit(rows, _traffic_text(rows))
        else:
            rows = cluster_rows(info, runtimes, _now_ms())
            session.emit(rows, _cluster_text(rows))
        if not args.interval or args.interval <= 0:
            return
        await asyncio.sleep(args.interval)


# -- brokerStatus / getBrokerConfig / updateBrokerConfig ---------------------------------------


async def _addresses(session: Session, *, masters_only: bool) -> list[str]:
    args = session.args
    if args.broker_addr is not None:
        return [args.broker_addr]
    return await session.admin.cluster_brokers(args.cluster, masters_only=masters_only)


async def _broker_status(session: Session) -> None:
    addrs = await _addresses(session, masters_only=False)
    tables = {addr: await session.admin.broker_runtime_info(addr) for addr in addrs}
    if session.args.broker_addr is not None:
        text = render.key_values(sorted(tables[addrs[0]].items()))
    else:
        text = render.key_values(
            (f"{addr}  {key}", value)
            for addr in addrs
            for key, value in sorted(tables[addr].items())
        )
    session.emit(tables, text)


async def _get_broker_config(session: Session) -> None:
    addrs = await _addresses(session, masters_only=False)
    configs = {addr: await session.admin.broker_config(addr) for addr in addrs}
    blocks = [
        f"============{addr}============\n" + render.key_values(sorted(configs[addr].items()))
        for addr in addrs
    ]
    session.emit(configs, "\n\n".join(blocks))


def _configure_update_config(parser: argparse.ArgumentParser) -> None:
    add_target(parser, "update the config")
    parser.add_argument("-k", "--key", required=True, help="config key (RocketMQ's name)")
    parser.add_argument("-v", "--value", required=True, help="config value")


async def _update_broker_config(session: Session) -> None:
    args = session.args
    addrs = await _addresses(session, masters_only=False)
    for addr in addrs:
        await session.admin.update_broker_config(addr, {args.key: args.value})
    text = "\n".join(f"update broker config success, {addr}" for addr in addrs)
    session.emit({"brokers": addrs, "key": args.key, "value": args.value}, text)


def _configure_target(parser: argparse.ArgumentParser) -> None:
    add_target(parser, "ask")


SUBCOMMANDS = (
    Subcommand(
        "clusterList",
        "list the brokers of every cluster with their load",
        _configure_cluster_list,
        _cluster_list,
    ),
    Subcommand("brokerStatus", "a broker's runtime figures", _configure_target, _broker_status),
    Subcommand("getBrokerConfig", "a broker's settings", _configure_target, _get_broker_config),
    Subcommand(
        "updateBrokerConfig",
        "change a broker setting at run time",
        _configure_update_config,
        _update_broker_config,
    ),
)
