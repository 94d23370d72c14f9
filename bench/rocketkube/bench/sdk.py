"""SDK benchmarks in the shape of RocketMQ's benchmark tools: ``bench producer`` (and the
consumer and transactional producer ones), driving the public SDK classes exactly as an
application would, so the figures include the SDK's own cost.

``workers`` coroutines send one message at a time each (RocketMQ's ``-w`` threads), so
``workers`` sends are in flight. The run stops after ``messages`` operations or
``duration`` seconds, whichever comes first; a report is printed every ``interval``
seconds and a summary at the end. The process CPU time per message gives the SDK's own
ceiling: what one client core could sustain if the broker were infinitely fast; it is also
given for the best and the median of short windows (:class:`CpuWindows`), which a machine
whose CPU is throttled now and then distorts far less than the whole run's.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import time
from collections.abc import Awaitable, Callable
from typing import Any

from rocketkube.bench.stats import CpuWindows, Report, Stats
from rocketkube.client.consumer.listener import ConsumeContext, ConsumeStatus
from rocketkube.client.consumer.push import PushConsumer
from rocketkube.client.consumer.settings import ConsumerSettings
from rocketkube.client.producer.producer import Producer
from rocketkube.client.producer.settings import ProducerSettings
from rocketkube.client.producer.transaction import LocalTransactionState, TransactionProducer
from rocketkube.common.acl import Credentials
from rocketkube.common.errors import RocketKubeError
from rocketkube.common.message.model import Message, MessageExt
from rocketkube.common.remoting.tls import TlsConfig

#: ``report(label, window)``: called every interval, and once with the total.
OnReport = Callable[[str, Report], None]
#: ``progress(done, elapsed_seconds)``: called often, for a live display.
OnProgress = Callable[[int, float], None]


@dataclasses.dataclass(frozen=True, slots=True)
class ClientBenchSettings:
    topic: str = "BenchmarkSdk"
    """Auto-created (4 queues) when absent. RocketMQ's BenchmarkTest has 1,024 queues, whose
    consume-queue files are first written one at a time: fine for long runs, slow for short."""
    workers: int = 64
    body_size: int = 128
    keys: bool = False
    tags: str | None = None
    messages: int | None = 100_000
    duration: float | None = None
    interval: float = 5.0
    group: str = "benchmark_producer"
    send_timeout: float = 3.0
    rollback_rate: float = 0.0
    """tproducer: the share of local transactions that roll back ..."""
    unknown_rate: float = 0.0
    """... and that answer UNKNOW (committed when the broker checks them back)."""
    prefill: bool = False
    """consumer: first send ``messages`` messages, then consume them from the first offset."""
    auto_batch: bool = False
    """producer: gather the sends into batches (``Producer(auto_batch=True)``)."""
    batch_max_delay_ms: int = 10
    """producer, with ``auto_batch``: how long a batch gathers at most."""
    tls: TlsConfig | None = None
    """Connect to the cluster with TLS."""
    credentials: Credentials | None = None
    """Sign every request as this account (a broker with ``aclEnable=true``)."""
    settle_heap: bool = True
    """Settle the heap before the run as the servers do (``runtime.settle_heap``): frozen,
    young collections every 10,000 objects. Off: CPython's collector as it comes, which
    walks the thousands of sends in flight every 700 allocations."""

    def producer_settings(self, namesrv_addr: str) -> ProducerSettings:
        """The options of the benchmark's producer (and of the consumer benchmark's prefill,
        in its own group): group, send timeout, batching, TLS and account."""
        return ProducerSettings(
            group=self.group,
            namesrv_addr=namesrv_addr,
            send_timeout=self.send_timeout,
            auto_batch=self.auto_batch,
            batch_max_delay_ms=self.batch_max_delay_ms,
            tls=self.tls,
            credentials=self.credentials,
        )

    def consumer_settings(self, namesrv_addr: str) -> ConsumerSettings:
        """The options of the consumer benchmark's push consumer that both consumers share:
        group, where it starts (the first offset after a prefill), TLS and account."""
        return ConsumerSettings(
            group=self.group,
            namesrv_addr=namesrv_addr,
            consume_from="first" if self.prefill else "last",
            tls=self.tls,
            credentials=self.credentials,
        )


@dataclasses.dataclass(frozen=True, slots=True)
class Summary:
    benchmark: str
    total: Report
    cpu_seconds: float
    settings: ClientBenchSettings
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        per_msg = self.cpu_seconds / self.total.messages if self.total.messages else None
        return {
            "benchmark": self.benchmark,
            **self.total.as_dict(),
            "client_cpu_seconds": round(self.cpu_seconds, 3),
            "client_us_per_msg": None if per_msg is None else round(1e6 * per_msg, 2),
            "client_ceiling_msgs_per_s": None if not per_msg else round(1 / per_msg, 1),
            **self.extra,
            "settings": _shown_settings(self.settings),
        }


def _shown_settings(settings: ClientBenchSettings) -> dict[str, Any]:
    """The settings as the summary shows them: the account by its access key only."""
    credentials = settings.credentials
    shown = dataclasses.asdict(dataclasses.replace(settings, credentials=None))
    shown["credentials"] = None if credentials is None else credentials.access_key
    return shown


#: ``await bench(namesrv_addr, settings, on_report, on_progress) -> Summary``
ClientBench = Callable[[str, ClientBenchSettings, OnReport, OnProgress | None], Awaitable[Summary]]

Operation = Callable[[int], Awaitable[int]]
"""``operation(sequence) -> bytes moved``; raises on failure."""

CPU_WINDOW_SECONDS = 0.5


async def _sample_cpu_every(stats: Stats, windows: CpuWindows, interval: float) -> None:
    """Close a CPU window every ``interval`` seconds until cancelled."""
    while True:
        await asyncio.sleep(interval)
        windows.sample(time.process_time(), stats.completed)


async def _report_every(
    stats: Stats,
    interval: float,
    label: str,
    on_report: OnReport,
    on_progress: OnProgress | None,
) -> None:
    """Report a window every ``interval`` seconds (and progress 4 times a second) until
    cancelled."""
    next_report = stats.started + interval
    while True:
        await asyncio.sleep(0.25 if on_progress is not None else interval)
        now = time.perf_counter()
        if on_progress is not None:
            on_progress(stats.completed, now - stats.started)
        if now >= next_report:
            on_report(label, stats.window(now))
            next_report = now + interval


async def drive(
    operation: Operation,
    settings: ClientBenchSettings,
    label: str,
    on_report: OnReport,
    on_progress: OnProgress | None = None,
    cpu_windows: CpuWindows | None = None,
) -> tuple[Report, float]:
    """Run ``operation`` from ``settings.workers`` coroutines until the count or the time
    runs out; (the whole run's report, CPU seconds of this process). ``cpu_windows``, if
    given, gets a window every :data:`CPU_WINDOW_SECONDS`."""
    loop = asyncio.get_running_loop()
    started = time.perf_counter()
    cpu_started = time.process_time()
    stats = Stats(started)
    sequence = itertools.count()
    deadline = None if settings.duration is None else started + settings.duration
    limit = settings.messages

    async def worker() -> None:
        clock = time.perf_counter
        while True:
            seq = next(sequence)
            if limit is not None and seq >= limit:
                return
            begun = clock()
            if deadline is not None and begun >= deadline:
                return
            try:
                size = await operation(seq)
            except (RocketKubeError, OSError, TimeoutError):
                stats.fail()
            else:
                stats.ok(clock() - begun, size)

    tasks = [
        loop.create_task(_report_every(stats, settings.interval, label, on_report, on_progress))
    ]
    if cpu_windows is not None:
        cpu_windows.start(cpu_started, 0)
        tasks.append(loop.create_task(_sample_cpu_every(stats, cpu_windows, CPU_WINDOW_SECONDS)))
    try:
        await asyncio.gather(*(worker() for _ in range(settings.workers)))
    finally:
        for task in tasks:
            task.cancel()
    total = stats.total(time.perf_counter())
    return total, time.process_time() - cpu_started


async def run_producer(
    namesrv_addr: str,
    settings: ClientBenchSettings,
    on_report: OnReport,
    on_progress: OnProgress | None = None,
) -> Summary:
    """RocketMQ's ``Producer`` benchmark: sync sends of ``body_size`` bytes from
    ``workers`` concurrent senders of one :class:`Producer`, auto-batched or not."""
    body = b"x" * settings.body_size
    async with Producer(settings=settings.producer_settings(namesrv_addr)) as producer:
        await producer.fetch_publish_queues(settings.topic)

        async def send(seq: int) -> int:
            message = Message(settings.topic, body)
            if settings.tags:
                message.tags = settings.tags
            if settings.keys:
                message.keys = [f"bench-{seq}"]
            await producer.send(message)
            return len(body)

        windows = CpuWindows()
        total, cpu = await drive(send, settings, "Send", on_report, on_progress, windows)
    return Summary("producer", total, cpu, settings, windows.as_dict())


class _BenchTransactions:
    """Decides each local transaction by its sequence number, so the shares are exact;
    counts the states and the broker's check-backs (those always commit)."""

    def __init__(self, settings: ClientBenchSettings) -> None:
        self._rollback = settings.rollback_rate
        self._unknown = settings.unknown_rate
        self.states: dict[str, int] = {state.value: 0 for state in LocalTransactionState}
        self.checks = 0

    def decide(self, seq: int) -> LocalTransactionState:
        position = (seq * 0.6180339887) % 1.0  # evenly spread over [0, 1)
        if position < self._rollback:
            return LocalTransactionState.ROLLBACK_MESSAGE
        if position < self._rollback + self._unknown:
            return LocalTransactionState.UNKNOW
        return LocalTransactionState.COMMIT_MESSAGE

    async def execute_local_transaction(self, message: Message, arg: Any) -> LocalTransactionState:
        state = self.decide(int(arg))
        self.states[state.value] += 1
        return state

    async def check_local_transaction(self, message: MessageExt) -> LocalTransactionState:
        self.checks += 1
        return LocalTransactionState.COMMIT_MESSAGE


async def run_tproducer(
    namesrv_addr: str,
    settings: ClientBenchSettings,
    on_report: OnReport,
    on_progress: OnProgress | None = None,
) -> Summary:
    """RocketMQ's ``TransactionProducer`` benchmark: half message, local transaction
    (committed, or rolled back / left unknown at the configured rates), END_TRANSACTION."""
    body = b"x" * settings.body_size
    listener = _BenchTransactions(settings)
    async with TransactionProducer(
        None, listener, settings=settings.producer_settings(namesrv_addr)
    ) as producer:
        await producer.fetch_publish_queues(settings.topic)

        async def send(seq: int) -> int:
            message = Message(settings.topic, body)
            if settings.keys:
                message.keys = [f"bench-{seq}"]
            await producer.send_message_in_transaction(message, seq)
            return len(body)

        windows = CpuWindows()
        total, cpu = await drive(send, settings, "Transaction", on_report, on_progress, windows)
    extra = {
        **windows.as_dict(),
        "local_transaction_states": listener.states,
        "check_backs": listener.checks,
    }
    return Summary("tproducer", total, cpu, settings, extra)


async def _prefill(namesrv_addr: str, settings: ClientBenchSettings) -> None:
    """Send ``settings.messages`` messages (the consumer benchmark's input)."""
    body = b"x" * settings.body_size
    own = settings.producer_settings(namesrv_addr)
    prefill = Producer(settings=dataclasses.replace(own, group=f"{settings.group}_prefill"))
    async with prefill as producer:
        window = asyncio.Semaphore(max(settings.workers, 1))

        async def send_one(seq: int) -> None:
            async with window:
                message = Message(settings.topic, body)
                if settings.tags:
                    message.tags = settings.tags
                await producer.send(message)

        await asyncio.gather(*(send_one(seq) for seq in range(settings.messages or 0)))


async def run_consumer(
    namesrv_addr: str,
    settings: ClientBenchSettings,
    on_report: OnReport,
    on_progress: OnProgress | None = None,
) -> Summary:
    """RocketMQ's ``Consumer`` benchmark: a push consumer of ``topic`` counting messages and
    their born-to-consumed (B2C) latency; the report's RT is B2C. With ``prefill`` it sends
    the messages first and consumes them from the first offset."""
    if settings.prefill:
        await _prefill(namesrv_addr, settings)
    loop = asyncio.get_running_loop()
    started = time.perf_counter()
    cpu_started = time.process_time()
    stats = Stats(started)
    finished = asyncio.Event()
    store_latency = 0.0

    def on_messages(messages: list[MessageExt], context: ConsumeContext) -> ConsumeStatus:
        nonlocal store_latency
        now_ms = time.time() * 1000
        for message in messages:
            stats.ok(max(now_ms - message.born_timestamp, 0.0) / 1000, len(message.body))
            store_latency = max(store_latency, now_ms - message.store_timestamp)
        if settings.messages is not None and stats.completed >= settings.messages:
            finished.set()
        return ConsumeStatus.CONSUME_SUCCESS

    consumer = PushConsumer(
        settings=settings.consumer_settings(namesrv_addr),
        consume_concurrency=settings.workers,
        consume_batch_size=32,
        rebalance_interval=5.0,
    )
    await consumer.subscribe(settings.topic, settings.tags or "*")
    consumer.register_listener(on_messages)

    report_task = loop.create_task(
        _report_every(stats, settings.interval, "Consume (B2C)", on_report, on_progress)
    )
    try:
        async with consumer:
            await asyncio.wait_for(finished.wait(), settings.duration)
    except TimeoutError:
        pass  # the duration ran out: report what arrived
    finally:
        report_task.cancel()
    total = stats.total(time.perf_counter())
    extra = {"max_store_to_consume_ms": round(store_latency, 3), "prefilled": settings.prefill}
    return Summary("consumer", total, time.process_time() - cpu_started, settings, extra)
