"""The send path: SEND_MESSAGE (10), SEND_MESSAGE_V2 (310), SEND_BATCH_MESSAGE (320).

Per request (docs/protocol.md §4, Java ``SendMessageProcessor``)::

    header (V1 names for 10, short keys for 310/320)
      -> broker role and permission
      -> topic: valid name, not a system topic, known or auto-created   (cached per topic)
      -> queue: below max(read, write) queues; negative -> round-robin over write queues
      -> topic writable
      -> batch flag?  split the body (docs/protocol.md §9.7), header properties
         appended to each message (send_batch.py)
         single:      properties +CLUSTER -WAIT, retry -> DLQ, half message or DELAY rewrite
      -> store.put_messages -> response now, or after the group-commit flush (SYNC_FLUSH)

Pipelined sends read from one received chunk come to :meth:`SendProcessor.send_many` as one
run: each is checked and turned into store messages exactly as alone (``_prepare``), in
arrival order, then all go to the store in one ``put_messages`` (one append, one dispatch,
one arrival notification, one flush ticket). When that combined append is refused, each
send is stored on its own, so a bad message fails alone, as it would have.

Every response, errors included, carries ``MSG_REGION`` and ``TRACE_ON`` in its extFields.

Choices, and where this differs from Java 4.9.8:

- **Batch flag.** The header's ``m``/``batch`` decides, not the request code. ``"1"`` counts
  as true (see :mod:`rocketkube.common.protocol.send_headers`): the C++ 2.x client sends it
  for its batches and means a batch; Java stores such a body as one garbage message.
- **Broker permission.** A broker without W refuses every send with 16 (Java: only order
  topics; the others are refused by clients that see the wiped route). A slave answers 14.
- **Topic permission.** A topic without W is refused with 16 (Java 4.9.8 does not check).
- **Batches** refuse (13) ``%RETRY%`` topics, a transaction type, and a DELAY level > 0 on
  the header or on any sub-message. ``WAIT`` is removed from the header properties appended
  to each sub-message, as from single messages; it still decides whether to wait.
- **DLQ redirect** removes ``DELAY`` (Java writes ``DELAY=0``). A ``maxReconsumeTimes`` of
  -1 means 16.
- **Response queueId** is the queue the message was sent to (chosen or picked), also when
  the store gets it under a system topic (schedule, half, DLQ), as Java answers.
- Stored properties are rebuilt in the order they arrived, CLUSTER after them, REAL_TOPIC
  and REAL_QID last (Java: HashMap order); sub-message properties are kept byte for byte.
- **SYNC_MASTER** answers a send (with ``WAIT`` true or absent) once a slave acknowledged
  it, after the flush when that is SYNC_FLUSH: FLUSH_SLAVE_TIMEOUT (12) after
  ``slaveTimeout``, SLAVE_NOT_AVAILABLE (11) at once when no slave is connected or one lags
  over ``haSlaveFallbehindMax``; the message is stored either way, as in Java.

Hot path: the header is read by ``parse_send_header`` (by hand, cheaper than the generic
typed decode), per-topic checks are cached per TopicConfig object, the body travels as the
request's memoryview into the store, and the Prometheus counters (``stats.stored``) are
fed once per event loop turn instead of once per send.
"""

from __future__ import annotations

import functools
import inspect
import time
from collections.abc import Sequence
from typing import Final

from rocketkube.broker import topics as topic_names
from rocketkube.broker.context import BrokerContext, RoutePublisher
from rocketkube.broker.processors.send import batch as send_batch
from rocketkube.broker.processors.send.answers import Reply, SendAnswers
from rocketkube.broker.processors.send.state import TopicState, Waiting
from rocketkube.broker.settings import BrokerRole
from rocketkube.broker.store import (
    DispatchHints,
    InnerMessage,
    PutStatus,
    records,
)
from rocketkube.broker.store.records import PlainRules, PlainTopic, PreparedSend
from rocketkube.common import errors
from rocketkube.common.message import ids, sysflag
from rocketkube.common.message.properties import (
    PropertyName,
    decode_properties,
    encode_properties,
)
from rocketkube.common.protocol import permission
from rocketkube.common.protocol.send_headers import (
    SendFields,
    parse_send_header,
)
from rocketkube.common.protocol.topic_config import TopicConfig
from rocketkube.common.remoting import faults
from rocketkube.common.remoting.codes import RequestCode, ResponseCode
from rocketkube.common.remoting.command import RemotingCommand
from rocketkube.common.remoting.connection import Connection
from rocketkube.common.remoting.connection import Reply as Answer
from rocketkube.common.remoting.deferred import DeferredGroup
from rocketkube.common.remoting.dispatch import BatchingProcessor, Processor

__all__ = ["SendProcessor", "table"]

#: Request version from which SEND's ``maxReconsumeTimes`` is honoured (V3_4_9).
V3_4_9: Final = 121
DEFAULT_MAX_RECONSUME_TIMES: Final = 16
DLQ_QUEUE_NUMS: Final = 1
_RW: Final = permission.PERM_READ | permission.PERM_WRITE
_W: Final = permission.PERM_WRITE
_RETRY: Final = topic_names.RETRY_GROUP_TOPIC_PREFIX
_NOT_ALLOWED: Final = topic_names.NOT_ALLOWED_SEND
_TX_MASK: Final = sysflag.TRANSACTION_MASK
_TX_NOT_OR_COMMIT: Final = (sysflag.TRANSACTION_NOT_TYPE, sysflag.TRANSACTION_COMMIT_TYPE)
_MULTI_TAGS: Final = sysflag.MULTI_TAGS_FLAG
_ANY_HOST: Final = bytes(8)
_new: Final = tuple.__new__
"""Builds a named tuple without calling its ``__new__`` (a Python function): as cheaply as a
tuple, on the hot path."""


class SendProcessor:
    """Stores what producers send; one instance per broker."""

    def __init__(self, ctx: BrokerContext) -> None:
        self.ctx = ctx
        settings = ctx.settings
        self._store = ctx.store
        self._topics = ctx.topics
        self._cluster = settings.broker_cluster_name
        # Sends with these properties are rewritten (schedule topic, half message) or
        # carry a CLUSTER of their own: the Python code decides them.
        forced = (PropertyName.DELAY, PropertyName.TRAN_MSG, PropertyName.CLUSTER)
        self._rules = PlainRules(
            tuple(name.encode() for name in forced),
            PropertyName.WAIT.encode(),
            f"{PropertyName.CLUSTER}\x01{self._cluster}".encode("utf-8", "replace"),
            RequestCode.SEND_MESSAGE,
        )
        """What a plain send's preparation is told of this broker (see :class:`PlainRules`)."""
        layout = records.implementation()
        self._plain = layout.prepare_plain
        """Prepares a plain send as :meth:`_check` would (None: not plain, :meth:`_check`)."""
        self._prepare_run = layout.prepare_run
        """A run's preparation with ``_plain`` (the others by :meth:`_check`)."""
        self._answers = SendAnswers(ctx)
        self._fail = self._answers.fail
        self._is_slave = settings.broker_role is BrokerRole.SLAVE
        self._broker_ip = settings.broker_ip1
        self._max_delay_level = len(settings.message_delay_level.split())
        self._states: dict[str, TopicState] = {}
        self._plain_topics: dict[str, PlainTopic] = {}
        """Each topic's :meth:`TopicState.plain`, where it has one."""
        self._hosts: dict[str, bytes] = {}
        self._created = False
        """A send being prepared created its topic: answers wait for the routes."""

    def table(self) -> dict[int, Processor]:
        many = self.send_many
        return {
            RequestCode.SEND_MESSAGE: BatchingProcessor(self.send_message, many),
            RequestCode.SEND_MESSAGE_V2: BatchingProcessor(self.send_message_v2, many),
            RequestCode.SEND_BATCH_MESSAGE: BatchingProcessor(self.send_message_v2, many),
        }

    # -- entry points ------------------------------------------------------------------

    def send_message(self, conn: Connection, req: RemotingCommand) -> Answer:
        """SEND_MESSAGE (10): V1 header names."""
        return self._send(conn, req, False)

    def send_message_v2(self, conn: Connection, req: RemotingCommand) -> Answer:
        """SEND_MESSAGE_V2 (310) and SEND_BATCH_MESSAGE (320): short keys; ``m`` = batch."""
        return self._send(conn, req, True)

    def send_many(self, conn: Connection, requests: Sequence[RemotingCommand]) -> Sequence[Answer]:
        """A run of pipelined sends (any of the three codes): one reply per request, in order.

        Each request is prepared as :meth:`_send` would, in arrival order; the messages of
        all that passed the checks are stored with one ``put_messages``."""
        replies = self._send_many(conn, requests)
        if self._created:
            return [self._routed(reply) for reply in replies]
        return replies

    def _send_many(
        self, conn: Connection, requests: Sequence[RemotingCommand]
    ) -> list[Reply | None]:
        replies: list[Reply | None] = []  # None: ready, answered once stored
        ready: list[tuple[int, PreparedSend]] = []
        messages: list[InnerMessage] = []
        if self._writable_master():
            self._prepare_run(
                requests, functools.partial(self._check, conn), self._plain_topics,
                self._topics.table, self._rules, self._born_host(conn.remote_address),
                replies, ready, messages,
            )  # fmt: skip
        else:
            for req in requests:
                prepared = self._prepare(conn, req, req.code != RequestCode.SEND_MESSAGE)
                if isinstance(prepared, PreparedSend):
                    ready.append((len(replies), prepared))
                    messages += prepared.messages
                    replies.append(None)
                else:
                    replies.append(prepared)
        put = self._store.put_messages
        if len(ready) > 1:
            result = put(messages)
            if (
                result.status is PutStatus.PUT_OK
                and result.flush is None
                and not self._answers.waits_for_slaves
            ):
                self._answers.now(result.appended, ready, replies)
                return replies
            if result.status is PutStatus.PUT_OK or result.appended:
                group = DeferredGroup()
                waiting = Waiting(result)
                at = 0
                for i, one in ready:
                    end = at + len(one.messages)
                    replies[i] = self._answers.one(result, at, end, one, group, waiting)
                    at = end
                if waiting.replies:
                    self._answers.when_stored(group, waiting)
                return replies
            # Refused before anything was written (an illegal message, a full segment):
            # store each on its own, so only the offending send fails.
        for i, one in ready:
            replies[i] = self._answers.alone(put(one.messages), one)
        return replies

    # -- the path ----------------------------------------------------------------------

    def _send(self, conn: Connection, req: RemotingCommand, v2: bool) -> Answer:
        prepared = self._prepare(conn, req, v2)
        if isinstance(prepared, RemotingCommand):
            reply: Answer = prepared
        else:
            reply = self._answers.alone(self._store.put_messages(prepared.messages), prepared)
        return self._routed(reply) if self._created else reply

    def _routed(self, reply: Answer) -> Answer:
        """``reply``, given once the name servers route the topics this run created (as
        Apache's broker registers a topic it auto-created before it answers the send)."""
        self._created = False
        routes = self.ctx.routes
        if routes is None:
            return reply
        return _after(routes, reply)

    def _prepare(
        self, conn: Connection, req: RemotingCommand, v2: bool
    ) -> PreparedSend | RemotingCommand:
        """Check a send and build its store messages; a response when it is refused."""
        if self._writable_master():
            ready = self._plain(
                req, v2, self._plain_topics, self._topics.table, self._rules,
                self._born_host(conn.remote_address),
            )  # fmt: skip
            if ready is not None:
                return ready
        return self._check(conn, req, v2)

    def _writable_master(self) -> bool:
        """Sends can be stored here: a plain send's preparation checks nothing of the broker."""
        return not self._is_slave and bool(self.ctx.permission & _W)

    def _check(
        self, conn: Connection, req: RemotingCommand, v2: bool
    ) -> PreparedSend | RemotingCommand:
        """:meth:`_prepare` in Python: every send, every refusal."""
        started = time.perf_counter()
        try:
            h = parse_send_header(req.ext_fields, v2=v2)
        except errors.HeaderError as exc:
            conn.fault(faults.HEADER, str(exc))  # counted and throttled as any malformed one
            return self._fail(ResponseCode.SYSTEM_ERROR, str(exc))
        if self._is_slave:
            return self._fail(
                ResponseCode.SERVICE_NOT_AVAILABLE,
                f"the broker[{self._broker_ip}] is a slave, sending message is forbidden",
            )
        if not self.ctx.permission & permission.PERM_WRITE:
            return self._fail(
                ResponseCode.NO_PERMISSION,
                f"the broker[{self._broker_ip}] sending message is forbidden",
            )
        topic = h.topic
        if h.batch and topic.startswith(_RETRY):
            return self._fail(
                ResponseCode.MESSAGE_ILLEGAL, f"batch request does not support retry group {topic}"
            )
        config = self._topics.get(topic)
        state = self._states.get(topic)
        if state is None or state.config is not config:
            found = self._resolve(h, config)
            if isinstance(found, RemotingCommand):
                return found
            state = found
            self._remember_plain(topic, state)
        queue_id = h.queue_id
        if queue_id >= state.queue_limit:
            return self._fail(
                ResponseCode.SYSTEM_ERROR,
                f"request queueId[{queue_id}] is illegal, {state.config} "
                f"Producer: {conn.remote_address}",
            )
        if not state.writable:
            return self._fail(
                ResponseCode.NO_PERMISSION, f"the topic[{topic}] sending message is forbidden"
            )
        if queue_id < 0:
            queue_id = state.pick_queue()
            if queue_id < 0:
                return self._fail(ResponseCode.SYSTEM_ERROR, f"topic[{topic}] has no write queue")
        born_host = self._born_host(conn.remote_address)
        if h.batch:
            return self._prepare_batch(h, state, queue_id, born_host, req.body, started)
        return self._prepare_one(h, req, state, queue_id, born_host, started)

    def _prepare_one(
        self,
        h: SendFields,
        req: RemotingCommand,
        state: TopicState,
        queue_id: int,
        born_host: bytes,
        started: float,
    ) -> PreparedSend | RemotingCommand:
        props = decode_properties(h.properties) if h.properties else {}
        wait = props.pop("WAIT", None)
        topic = h.topic
        store_topic = topic
        store_queue = queue_id
        sys_flag = h.sys_flag
        multi_tag = state.multi_tag
        reconsume_times = h.reconsume_times or 0
        if state.retry_group is not None:
            dlq = self._dead_letter(h, req, state.retry_group, reconsume_times)
            if isinstance(dlq, RemotingCommand):
                return dlq
            if dlq is not None:
                store_topic = dlq.topic_name
                store_queue = 0
                multi_tag = dlq.topic_filter_type == "MULTI_TAG"
                props.pop("DELAY", None)
        if multi_tag:
            sys_flag |= _MULTI_TAGS
        props["CLUSTER"] = self._cluster
        tran = props.get("TRAN_MSG")
        delay = send_batch.delay_level(props.get("DELAY")) if "DELAY" in props else 0
        if tran is not None and tran.lower() == "true" and not (reconsume_times and delay > 0):
            if self.ctx.settings.reject_transaction_message:
                return self._fail(
                    ResponseCode.NO_PERMISSION,
                    f"the broker[{self._broker_ip}] sending transaction message is forbidden",
                )
            props["REAL_TOPIC"] = store_topic
            props["REAL_QID"] = str(store_queue)
            sys_flag &= ~_TX_MASK
            store_topic = topic_names.TRANS_HALF_TOPIC
            store_queue = 0
        elif delay > 0 and self._max_delay_level and (sys_flag & _TX_MASK) in _TX_NOT_OR_COMMIT:
            level = min(delay, self._max_delay_level)
            props["DELAY"] = str(level)
            props["REAL_TOPIC"] = store_topic
            props["REAL_QID"] = str(store_queue)
            store_topic = topic_names.SCHEDULE_TOPIC
            store_queue = level - 1
        body = req.body
        get = props.get
        message = InnerMessage(
            store_topic,
            store_queue,
            body,
            encode_properties(props).encode("utf-8", "replace"),
            h.flag,
            sys_flag,
            h.born_timestamp,
            born_host,
            reconsume_times,
            0,
            _new(DispatchHints, (get("TAGS"), get("KEYS"), get("UNIQ_KEY"))),
        )
        wait_flush = wait is None or wait.lower() == "true"
        return _new(
            PreparedSend, ((message,), store_topic, queue_id, len(body), wait_flush, started)
        )

    def _prepare_batch(
        self,
        h: SendFields,
        state: TopicState,
        queue_id: int,
        born_host: bytes,
        body: bytes | bytearray | memoryview,
        started: float,
    ) -> PreparedSend | RemotingCommand:
        sys_flag = h.sys_flag | _MULTI_TAGS if state.multi_tag else h.sys_flag
        try:
            batch = send_batch.batch_messages(h, queue_id, sys_flag, born_host, body, self._cluster)
        except send_batch.BatchRefused as exc:
            return self._fail(ResponseCode.MESSAGE_ILLEGAL, str(exc))
        return PreparedSend(
            batch.messages, h.topic, queue_id, batch.body_bytes, batch.wait_store, started
        )

    # -- topics, groups, hosts -----------------------------------------------------------

    def _resolve(self, h: SendFields, config: TopicConfig | None) -> TopicState | RemotingCommand:
        """Check a topic seen for the first time (or changed), auto-creating it if allowed."""
        topic = h.topic
        problem = topic_names.validate_topic(topic)
        if problem is not None:
            return self._fail(ResponseCode.SYSTEM_ERROR, problem)
        if topic in _NOT_ALLOWED:
            return self._fail(
                ResponseCode.NO_PERMISSION, f"Sending message to topic[{topic}] is forbidden."
            )
        if config is None:
            retry = topic.startswith(_RETRY)
            topic_sys_flag = 0
            if h.unit_mode:
                topic_sys_flag = permission.FLAG_UNIT_SUB if retry else permission.FLAG_UNIT
            config = self._topics.create_in_send(
                topic, h.default_topic, h.default_topic_queue_nums, topic_sys_flag
            )
            if config is None and retry:
                config = self._topics.create_system_like(topic, 1, _RW, topic_sys_flag)
            if config is None:
                return self._fail(
                    ResponseCode.TOPIC_NOT_EXIST, f"topic[{topic}] not exist, apply first please!"
                )
            self._created = True
        state = TopicState(config)
        states = self._states
        if len(states) > 2 * len(self._topics.table) + 1024:
            states.clear()  # deleted topics leave states behind; rebuilt on next use
        states[topic] = state
        return state

    def _remember_plain(self, topic: str, state: TopicState) -> None:
        """Tell a plain send's preparation what a send to ``topic`` may do now."""
        plain = state.plain()
        topics = self._plain_topics
        if plain is None:
            topics.pop(topic, None)
            return
        if len(topics) > 2 * len(self._topics.table) + 1024:
            topics.clear()  # deleted topics leave entries behind: all made again, with
            self._states.clear()  # the states, as each topic is next sent to
        topics[topic] = plain

    def _dead_letter(
        self, h: SendFields, req: RemotingCommand, group: str, reconsume_times: int
    ) -> TopicConfig | RemotingCommand | None:
        """For a %RETRY% send: the DLQ config when retries are exhausted, else None."""
        group_config = self.ctx.groups.get(group)
        if group_config is None:
            return self._fail(
                ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, f"subscription group not exist, {group}"
            )
        max_times = group_config.retry_max_times
        if req.version >= V3_4_9 and h.max_reconsume_times is not None:
            max_times = h.max_reconsume_times
        if max_times == -1:
            max_times = DEFAULT_MAX_RECONSUME_TIMES
        if reconsume_times < max_times:
            return None
        dlq = topic_names.dlq_topic(group)
        config = self._topics.create_system_like(dlq, DLQ_QUEUE_NUMS, _RW)
        if not config.perm & permission.PERM_WRITE:
            return self._fail(
                ResponseCode.NO_PERMISSION, f"the topic[{dlq}] sending message is forbidden"
            )
        return config

    def _born_host(self, address: str) -> bytes:
        """The connection's peer packed as BORNHOST (IPv4-mapped IPv6 as IPv4); cached."""
        packed = self._hosts.get(address)
        if packed is not None:
            return packed
        try:
            packed = ids.pack_host(*ids.split_host_port(address))
        except errors.MessageFormatError:
            packed = _ANY_HOST
        hosts = self._hosts
        if len(hosts) > 4096:
            hosts.clear()
        hosts[address] = packed
        return packed


async def _after(routes: RoutePublisher, reply: Answer) -> RemotingCommand | None:
    answer = await reply if inspect.isawaitable(reply) else reply
    await routes.published()
    return answer


def table(ctx: BrokerContext) -> dict[int, Processor]:
    """The send codes' processors over ``ctx``."""
    return SendProcessor(ctx).table()
