"""The SDK benchmarks' bookkeeping, and ``bench producer`` against a real broker."""

from __future__ import annotations

import asyncio
import json

import pytest

from rocketkube.bench import cli, runners, sdk
from rocketkube.bench.stats import CpuWindows, Report, Stats
from rocketkube.broker.app import BrokerApp
from rocketkube.client import ConsumerSettings, ProducerSettings
from rocketkube.common.acl import Credentials
from rocketkube.namesrv.app import NamesrvApp


def test_stats_windows_and_total() -> None:
    stats = Stats(started=100.0)
    stats.ok(0.001, 10)
    stats.ok(0.003, 10)
    stats.fail()
    assert stats.completed == 3
    first = stats.window(now=102.0)
    assert (first.messages, first.failed, first.bytes) == (2, 1, 20)
    assert first.tps == 1.0
    assert first.p50_ms == pytest.approx(1.0)
    assert first.max_ms == pytest.approx(3.0)
    stats.ok(0.002, 10)
    total = stats.total(now=104.0)
    assert (total.messages, total.failed, total.bytes) == (3, 1, 30)
    assert total.seconds == 4.0
    assert total.mean_ms == pytest.approx(2.0)
    assert stats.completed == 4
    empty = Stats(0.0).total(0.0)
    assert (empty.tps, empty.p99_ms, empty.mb_per_s) == (0.0, 0.0, 0.0)


def test_report_line_and_dict() -> None:
    report = Report(2.0, 10, 1, 2_000_000, 1.0, 2.0, 3.0, 1.5)
    assert report.line("Send").startswith("Send TPS: 5  MB/s: 1.00  RT(ms) p50: 1.000")
    assert report.as_dict()["latency_ms"] == {"p50": 1.0, "p99": 2.0, "max": 3.0, "mean": 1.5}


async def test_drive_stops_at_the_message_count_and_counts_failures() -> None:
    seen: list[int] = []

    async def operation(seq: int) -> int:
        seen.append(seq)
        await asyncio.sleep(0)
        if seq % 5 == 0:
            raise TimeoutError("slow")
        return 7

    reports: list[str] = []
    settings = sdk.ClientBenchSettings(workers=4, messages=20, interval=60.0)
    total, cpu = await sdk.drive(operation, settings, "Op", lambda label, _: reports.append(label))
    assert sorted(seen) == list(range(20))
    assert (total.messages, total.failed, total.bytes) == (16, 4, 16 * 7)
    assert cpu >= 0.0


async def test_drive_stops_at_the_duration() -> None:
    async def operation(seq: int) -> int:
        await asyncio.sleep(0.01)
        return 1

    settings = sdk.ClientBenchSettings(workers=2, messages=None, duration=0.2, interval=0.05)
    windows: list[Report] = []
    total, _ = await sdk.drive(operation, settings, "Op", lambda _, w: windows.append(w))
    assert 0 < total.messages < 1000
    assert windows, "no report during the run"


async def test_bench_producer_against_a_broker(
    namesrv: NamesrvApp, broker: BrokerApp, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = "producer -t BenchSdkTopic -w 8 -s 64 -k --messages 200 --interval 60 --json"
    argv += " --send-timeout-ms 30000"  # the machines stall for seconds at times
    args = cli.main_parser().parse_args([*argv.split(), "-n", namesrv.address])
    assert await runners.run_client_bench(args) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["benchmark"] == "producer"
    assert (summary["messages"], summary["failed"]) == (200, 0)
    assert summary["settings"]["body_size"] == 64
    assert summary["settings"]["send_timeout"] == 30.0
    assert summary["client_us_per_msg"] > 0
    assert "client_us_per_msg_best_window" in summary
    assert broker.ctx is not None
    stored = sum(broker.ctx.store.max_offset("BenchSdkTopic", q) for q in range(8))
    assert stored == 200


async def test_bench_producer_auto_batch(
    namesrv: NamesrvApp, broker: BrokerApp, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = "producer -t BenchSdkBatch -w 32 --messages 300 --interval 60 --json --auto-batch"
    argv += " --send-timeout-ms 30000"
    args = cli.main_parser().parse_args([*argv.split(), "--batch-max-delay-ms", "5"])
    args.namesrv_addr = namesrv.address
    assert await runners.run_client_bench(args) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert (summary["messages"], summary["failed"]) == (300, 0)
    assert summary["settings"]["auto_batch"] is True
    assert summary["settings"]["batch_max_delay_ms"] == 5
    assert broker.ctx is not None
    stored = sum(broker.ctx.store.max_offset("BenchSdkBatch", q) for q in range(8))
    assert stored == 300


def test_transaction_shares_are_spread_evenly() -> None:
    decider = sdk._BenchTransactions(sdk.ClientBenchSettings(rollback_rate=0.2, unknown_rate=0.1))
    states = [decider.decide(seq).value for seq in range(1000)]
    assert abs(states.count("ROLLBACK_MESSAGE") - 200) <= 5
    assert abs(states.count("UNKNOW") - 100) <= 5
    assert states[:10].count("COMMIT_MESSAGE") >= 5, "the shares are not spread over the run"


async def test_bench_tproducer_commits_and_rolls_back(
    namesrv: NamesrvApp, broker: BrokerApp, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = "tproducer -t BenchTxTopic -w 4 --messages 100 --rollback-rate 0.3 --json"
    argv += " --send-timeout-ms 30000"
    args = cli.main_parser().parse_args([*argv.split(), "-n", namesrv.address])
    assert await runners.run_client_bench(args) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert (summary["benchmark"], summary["messages"], summary["failed"]) == ("tproducer", 100, 0)
    states = summary["local_transaction_states"]
    assert states["COMMIT_MESSAGE"] + states["ROLLBACK_MESSAGE"] == 100
    assert 20 <= states["ROLLBACK_MESSAGE"] <= 40
    ctx = broker.ctx
    assert ctx is not None

    def stored() -> int:
        return sum(ctx.store.max_offset("BenchTxTopic", q) for q in range(8))

    deadline = asyncio.get_running_loop().time() + 30
    while stored() < states["COMMIT_MESSAGE"]:
        assert asyncio.get_running_loop().time() < deadline, "committed messages not delivered"
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.5)
    assert stored() == states["COMMIT_MESSAGE"], "a rolled-back half became visible"


async def test_bench_consumer_prefills_and_consumes(
    namesrv: NamesrvApp, broker: BrokerApp, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = "consumer -t BenchConsumeTopic -w 8 --messages 300 --duration 120 --prefill --json"
    argv += " --send-timeout-ms 30000"
    args = cli.main_parser().parse_args([*argv.split(), "-n", namesrv.address])
    assert await runners.run_client_bench(args) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert (summary["benchmark"], summary["prefilled"]) == ("consumer", True)
    assert summary["messages"] >= 300, "not every prefilled message was consumed"
    assert summary["latency_ms"]["max"] > 0


def test_cpu_windows_best_and_median() -> None:
    windows = CpuWindows(min_operations=100)
    assert windows.as_dict() == {
        "client_us_per_msg_best_window": None,
        "client_us_per_msg_median_window": None,
        "cpu_windows": 0,
    }
    windows.start(cpu=10.0, completed=0)
    windows.sample(cpu=10.002, completed=100)  # 20 us per operation
    windows.sample(cpu=10.003, completed=150)  # too few: merged into the next window
    windows.sample(cpu=10.008, completed=200)  # 60 us
    windows.sample(cpu=10.009, completed=300)  # 10 us
    assert windows.per_operation == pytest.approx([20e-6, 60e-6, 10e-6])
    assert windows.as_dict() == {
        "client_us_per_msg_best_window": 10.0,
        "client_us_per_msg_median_window": 20.0,
        "cpu_windows": 3,
    }


def test_the_sdk_benchmarks_build_client_settings_from_their_flags() -> None:
    argv = "producer -g BenchGroup --send-timeout-ms 1500 --auto-batch --batch-max-delay-ms 5"
    argv += " --access-key ak --secret-key sk -n 10.0.0.1:9876"
    settings = runners.client_settings_from(cli.main_parser().parse_args(argv.split()))
    assert settings.producer_settings("10.0.0.1:9876") == ProducerSettings(
        group="BenchGroup",
        namesrv_addr="10.0.0.1:9876",
        send_timeout=1.5,
        auto_batch=True,
        batch_max_delay_ms=5,
        credentials=Credentials("ak", "sk"),
    )
    argv = "consumer --prefill -n 10.0.0.1:9876"
    settings = runners.client_settings_from(cli.main_parser().parse_args(argv.split()))
    assert settings.consumer_settings("10.0.0.1:9876") == ConsumerSettings(
        group="benchmark_consumer", namesrv_addr="10.0.0.1:9876", consume_from="first"
    )
