"""The blocking facade against a real name server and broker.

The servers serve from the test's event loop, so the blocking code runs in a worker thread
(``asyncio.to_thread``), as a script or a Spark executor would run it in its own process.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable

import pytest
from waiting import WAIT_SECONDS

from rocketkube.broker.app import BrokerApp
from rocketkube.client import (
    AdminSettings,
    ClientStateError,
    ConsumerSettings,
    Credentials,
    Message,
    MessageExt,
    MessageQueue,
    MessageValidationError,
    MQClientError,
    ProducerSettings,
    SendStatus,
    TlsConfig,
)
from rocketkube.client.consumer.listener import ConsumeContext, ConsumeStatus
from rocketkube.client.sync import AdminClient, LitePullConsumer, Producer, PushConsumer
from rocketkube.common.names import TopicName
from rocketkube.namesrv.app import NamesrvApp

SEND_TIMEOUT = 30.0  # the machine running the tests may stall for seconds

CreateTopic = Callable[..., Awaitable[None]]


def _produce(namesrv: str, topic: str) -> list[str]:
    with Producer("SyncProducerGroup", namesrv, send_timeout=SEND_TIMEOUT) as producer:
        assert [q.topic for q in producer.fetch_publish_queues(topic)] == [topic] * 4
        first = producer.send(Message(topic, b"sync-0"))
        assert first.status is SendStatus.SEND_OK
        futures = [producer.send_async(Message(topic, f"sync-{i}".encode())) for i in (1, 2, 3)]
        done = [f.result(WAIT_SECONDS) for f in futures]
        batch = producer.send_batch([Message(topic, b"sync-4"), Message(topic, b"sync-5")])
        producer.send_oneway(Message(topic, b"sync-6"))
        return [first.msg_id, *(r.msg_id for r in done), *batch.msg_id.split(",")]


def _consume(namesrv: str, topic: str, group: str, count: int) -> set[bytes]:
    with LitePullConsumer(group, namesrv, consume_from_where="first", auto_commit=False) as c:
        c.subscribe(topic)
        bodies: set[bytes] = set()
        deadline = time.monotonic() + WAIT_SECONDS
        while len(bodies) < count and time.monotonic() < deadline:
            bodies.update(m.body for m in c.poll(1.0))
        c.commit()
        queues = c.assignment()
        assert sum(c.committed(q) or 0 for q in queues) == count
        return bodies


async def test_produce_consume_and_admin_through_the_blocking_facade(
    namesrv: NamesrvApp, create_topic: CreateTopic, names: tuple[str, str]
) -> None:
    topic, group = names
    await create_topic(topic)

    def admin_list() -> list[TopicName]:
        with AdminClient(namesrv.address) as admin:
            return admin.run(lambda a: a.topic_list(), timeout=WAIT_SECONDS)

    assert topic in await asyncio.to_thread(admin_list)
    ids = await asyncio.to_thread(_produce, namesrv.address, topic)
    assert len(ids) == 6
    assert len(set(ids)) == 6
    bodies = await asyncio.to_thread(_consume, namesrv.address, topic, group, 7)
    assert bodies == {f"sync-{i}".encode() for i in range(7)}


def _consume_blocking(namesrv: str, topic: str, group: str, count: int) -> tuple[set[bytes], bool]:
    """Listeners that block: two must be inside at once (a barrier) to pass."""
    meeting = threading.Barrier(2)
    met = threading.Event()
    bodies: set[bytes] = set()
    lock = threading.Lock()
    done = threading.Event()

    def listener(messages: list[MessageExt], context: ConsumeContext) -> ConsumeStatus:
        assert threading.current_thread().name.startswith("rocketkube-consume-")
        if not met.is_set():
            try:
                meeting.wait(timeout=2.0)  # blocks this thread only, never the pulls
                met.set()
            except threading.BrokenBarrierError:
                meeting.reset()
        time.sleep(0.01)
        with lock:
            bodies.update(m.body for m in messages)
            if len(bodies) >= count:
                done.set()
        return ConsumeStatus.CONSUME_SUCCESS

    consumer = PushConsumer(group, namesrv, consume_from="first", rebalance_interval=1.0)
    consumer.subscribe(topic)
    consumer.register_listener(listener)
    with consumer:
        done.wait(WAIT_SECONDS)
        assert consumer.assignment()
    return bodies, met.is_set()


async def test_push_consumer_runs_blocking_listeners_on_threads(
    namesrv: NamesrvApp, create_topic: CreateTopic, names: tuple[str, str]
) -> None:
    topic, group = names
    await create_topic(topic)

    def produce() -> None:
        with Producer("SyncPushProducer", namesrv.address, send_timeout=SEND_TIMEOUT) as producer:
            for i in range(40):
                producer.send(Message(topic, f"push-{i}".encode()))

    await asyncio.to_thread(produce)
    bodies, met = await asyncio.to_thread(_consume_blocking, namesrv.address, topic, group, 40)
    assert bodies == {f"push-{i}".encode() for i in range(40)}
    assert met, "two blocking listeners never ran at the same time"


async def test_errors_surface_in_the_calling_thread(namesrv: NamesrvApp, broker: BrokerApp) -> None:
    def send_badly() -> None:
        with Producer("SyncErrors", namesrv.address, send_timeout=2.0) as producer:
            with pytest.raises(MQClientError, match="no master address"):
                producer.send(Message("T", b"x"), queue=MessageQueue("T", "no-such-broker", 0))
            future = producer.send_async(Message("Bad Topic!", b"x"))
            with pytest.raises(MessageValidationError, match="invalid topic"):
                future.result(WAIT_SECONDS)

    await asyncio.to_thread(send_badly)


def test_closed_facade_refuses_and_bad_arguments_leave_no_thread() -> None:
    threads = threading.active_count()
    with pytest.raises(ValueError, match="pull_batch_size"):
        LitePullConsumer("g", pull_batch_size=0)
    assert threading.active_count() == threads

    producer = Producer("g")
    producer.close()
    producer.close()
    assert threading.active_count() == threads
    with pytest.raises(ClientStateError):
        producer.send(Message("T", b"x"))


def test_run_timeout_cancels_the_call() -> None:
    with AdminClient("127.0.0.1:1") as admin, pytest.raises(TimeoutError):
        admin.run(lambda a: asyncio.sleep(5), timeout=0.2)


def test_facades_take_settings() -> None:
    threads = threading.active_count()
    tls = TlsConfig(check_hostname=False)
    credentials = Credentials("ak", "sk")
    producer_settings = ProducerSettings(
        group="SettingsProducer", namesrv_addr="10.0.0.1:9876", send_timeout=7.0, tls=tls
    )
    consumer_settings = ConsumerSettings(
        group="SettingsConsumer", namesrv_addr="10.0.0.2:9876", credentials=credentials
    )
    admin_settings = AdminSettings(namesrv_addr="10.0.0.3:9876", timeout=9.0, tls=True)
    producer = Producer(settings=producer_settings)
    lite = LitePullConsumer(settings=consumer_settings)
    push = PushConsumer(settings=consumer_settings, consume_concurrency=2)
    admin = AdminClient(settings=admin_settings)
    try:
        assert producer.aio.settings is producer_settings
        assert (producer.aio.group, producer.aio.send_timeout) == ("SettingsProducer", 7.0)
        assert producer.aio.tls is tls
        assert lite.aio.settings is consumer_settings
        assert push.aio.settings is consumer_settings
        assert (push.aio.group, push.aio.namesrv_addrs) == ("SettingsConsumer", ["10.0.0.2:9876"])
        assert push.aio.credentials == credentials
        assert admin.aio.settings is admin_settings
        assert (admin.aio.namesrv_addrs, admin.aio.timeout) == (["10.0.0.3:9876"], 9.0)
    finally:
        for facade in (producer, lite, push, admin):
            facade.close()
    assert threading.active_count() == threads

    with pytest.raises(TypeError, match="not both"):
        Producer("g", settings=producer_settings)
    with pytest.raises(TypeError, match="not both"):
        AdminClient("127.0.0.1:9876", settings=admin_settings)
    with pytest.raises(TypeError, match="a name server address"):
        AdminClient()
    assert threading.active_count() == threads
