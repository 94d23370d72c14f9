"""The answers of the send path (:mod:`.send`): at once, or once the group commit and a
slave have a send; with the stored-message stats counted once per event loop turn.

Every response, errors included, carries ``MSG_REGION`` and ``TRACE_ON`` in its extFields.
A stored send's answer names its message ids, queue and queue offset (several ids, comma
separated, for a batch); one that waits for the flush is a member of a
:class:`~rocketkube.common.remoting.deferred.DeferredGroup` resolved by one callback on the
flush (and one on the slave's acknowledgement on a SYNC_MASTER), not a task per send.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Final

from rocketkube.broker.context import BrokerContext
from rocketkube.broker.processors.send.state import Waiting
from rocketkube.broker.settings import BrokerRole
from rocketkube.broker.store import AppendResult, PutResult, PutStatus
from rocketkube.broker.store.records import PreparedSend
from rocketkube.common.protocol.send_headers import MSG_REGION, TRACE_ON
from rocketkube.common.remoting.codes import ResponseCode
from rocketkube.common.remoting.command import FLAG_RESPONSE, RemotingCommand
from rocketkube.common.remoting.deferred import DeferredGroup, DeferredReply
from rocketkube.common.remoting.frame import ResponseTemplate, TemplatedResponse

__all__ = ["Reply", "SendAnswers"]

Reply = RemotingCommand | DeferredReply

_PUT_FAILURES: Final = {
    PutStatus.SERVICE_NOT_AVAILABLE: (
        ResponseCode.SERVICE_NOT_AVAILABLE,
        "service not available now. It may be caused by one of the following reasons: "
        "the broker's disk is full, messages are put to the slave, message store has been "
        "shut down, etc.",
    ),
    PutStatus.CREATE_MAPPED_FILE_FAILED: (
        ResponseCode.SYSTEM_ERROR,
        "create mapped file failed, server is busy or broken.",
    ),
    PutStatus.MESSAGE_ILLEGAL: (ResponseCode.MESSAGE_ILLEGAL, "the message is illegal"),
    PutStatus.PROPERTIES_SIZE_EXCEEDED: (
        ResponseCode.MESSAGE_ILLEGAL,
        "the message is illegal, properties length limit 32k",
    ),
    PutStatus.UNKNOWN_ERROR: (ResponseCode.SYSTEM_ERROR, "UNKNOWN_ERROR"),
}


def stored_answers(
    appended: Sequence[AppendResult],
    ready: list[tuple[int, PreparedSend]],
    replies: list[Reply | None],
    template: ResponseTemplate,
    now: float,
    latencies: list[float],
    tally: dict[str, list[int]],
) -> None:
    """The answers of a stored run's sends (``ready``: their places in ``replies`` and
    what they were; their messages are ``appended`` in order) from ``template``: each
    one's latency until ``now`` appended to ``latencies``, messages and body bytes added
    up per topic in ``tally``."""
    at = 0
    for i, (messages, topic, queue_id, body_bytes, _, started) in ready:
        count = len(messages)
        _, _, queue_offset, msg_id, _ = appended[at]
        if count != 1:
            msg_id = ",".join([a.msg_id for a in appended[at : at + count]])
        replies[i] = TemplatedResponse(template, (msg_id, queue_id, queue_offset))
        latencies.append(now - started)
        counts = tally.get(topic)
        if counts is None:
            tally[topic] = [count, body_bytes]
        else:
            counts[0] += count
            counts[1] += body_bytes
        at += count


def waited_answers(
    appended: Sequence[AppendResult],
    firsts: list[int],
    ends: list[int],
    queue_ids: list[int],
    started: list[float],
    template: ResponseTemplate,
    now: float,
    latencies: list[float],
) -> list[RemotingCommand | None]:
    """The answers, from ``template``, of the sends that waited for a flush (in the
    parallel lists of :class:`~.state.Waiting`: each one's messages are
    ``appended[first:end]``), each one's latency until ``now`` appended to ``latencies``."""
    answers: list[RemotingCommand | None] = []
    add = answers.append
    for first, end, queue_id in zip(firsts, ends, queue_ids, strict=True):
        _, _, queue_offset, msg_id, _ = appended[first]
        if end - first != 1:
            msg_id = ",".join([a.msg_id for a in appended[first:end]])
        add(TemplatedResponse(template, (msg_id, queue_id, queue_offset)))
    latencies += [now - began for began in started]
    return answers


class SendAnswers:
    """Answers stored (or refused) sends; one per send processor."""

    def __init__(self, ctx: BrokerContext) -> None:
        settings = ctx.settings
        self._stats = ctx.stats
        self._observe_latency = ctx.stats.send_latency.observe
        self._region = settings.region_id
        self._trace = "true" if settings.trace_on else "false"
        fixed = {MSG_REGION: self._region, TRACE_ON: self._trace}
        variable = ("msgId", "queueId", "queueOffset")
        self._stored_answers: dict[int, ResponseTemplate] = {
            code: ResponseTemplate(code, fixed, variable)
            for code in (
                ResponseCode.SUCCESS,
                ResponseCode.FLUSH_DISK_TIMEOUT,
                ResponseCode.FLUSH_SLAVE_TIMEOUT,
                ResponseCode.SLAVE_NOT_AVAILABLE,
            )
        }
        sync_master = settings.broker_role is BrokerRole.SYNC_MASTER
        self._replicas = ctx.replicas if sync_master else None
        self._uncounted: dict[str, list[int]] = {}

    @property
    def waits_for_slaves(self) -> bool:
        """A SYNC_MASTER answers a send once a slave has it."""
        return self._replicas is not None

    def alone(self, result: PutResult, ready: PreparedSend) -> Reply:
        """:meth:`one` for a send stored on its own."""
        group = DeferredGroup()
        waiting = Waiting(result)
        reply = self.one(result, 0, len(result.appended), ready, group, waiting)
        if waiting.replies:
            self.when_stored(group, waiting)
        return reply

    def one(
        self,
        result: PutResult,
        first: int,
        end: int,
        ready: PreparedSend,
        group: DeferredGroup,
        waiting: Waiting,
    ) -> Reply:
        """The response to a stored send, whose messages are ``result.appended[first:end]``;
        one that waits for the flush is a member of ``group``, added to ``waiting`` (the
        caller registers them all on the flush at once)."""
        if result.status is not PutStatus.PUT_OK:
            code, remark = _PUT_FAILURES.get(
                result.status, (ResponseCode.SYSTEM_ERROR, str(result.status))
            )
            if result.error:
                remark = f"{remark}: {result.error}"
            return self.fail(code, remark)
        uncounted = self._uncounted
        topic = ready.topic
        count = len(ready.messages)
        counts = uncounted.get(topic)
        if counts is not None:
            counts[0] += count
            counts[1] += ready.body_bytes
        else:
            none_yet = not uncounted
            uncounted[topic] = [count, ready.body_bytes]
            if none_yet:
                self._schedule_count()
        if ready.wait_flush and (result.flush is not None or self._replicas is not None):
            reply = group.member()
            waiting.replies.append(reply)
            waiting.firsts.append(first)
            waiting.ends.append(end)
            waiting.queue_ids.append(ready.queue_id)
            waiting.started.append(ready.started)
            return reply
        return self._stored(
            ResponseCode.SUCCESS, result.appended, first, end, ready.queue_id, ready.started
        )

    def now(
        self,
        appended: Sequence[AppendResult],
        ready: list[tuple[int, PreparedSend]],
        replies: list[Reply | None],
    ) -> None:
        """:meth:`one` for a stored run that waits for nothing (no flush to wait for,
        no slave to wait for): every send answered SUCCESS, in one loop, its stats tallied
        once per topic and its latency observed once per run."""
        template = self._stored_answers[ResponseCode.SUCCESS]
        latencies: list[float] = []
        tally: dict[str, list[int]] = {}
        stored_answers(appended, ready, replies, template, time.perf_counter(), latencies, tally)
        self._stats.send_latency.observe_many(latencies)
        uncounted = self._uncounted
        none_yet = not uncounted
        for topic, (count, body_bytes) in tally.items():
            counts = uncounted.get(topic)
            if counts is None:
                uncounted[topic] = [count, body_bytes]
            else:
                counts[0] += count
                counts[1] += body_bytes
        if none_yet:
            self._schedule_count()

    def when_stored(self, group: DeferredGroup, waiting: Waiting) -> None:
        """Answer the waiting sends once the group commit covering them is on disk (or
        timed out: FLUSH_DISK_TIMEOUT), then, on a SYNC_MASTER, once a slave has them
        (or not: FLUSH_SLAVE_TIMEOUT, SLAVE_NOT_AVAILABLE).

        The group of deferred replies is resolved by one callback on the flush and one on
        the slave's acknowledgement, not a task or a future per send: thousands of sends
        wait on one fsync, and the connection answers them in the call that resolves it."""

        appended = waiting.result.appended
        ticket = waiting.result.flush

        def answer(code: int) -> None:
            w = waiting
            latencies: list[float] = []
            replies = waited_answers(
                appended, w.firsts, w.ends, w.queue_ids, w.started, self._stored_answers[code],
                time.perf_counter(), latencies,
            )  # fmt: skip
            self._stats.send_latency.observe_many(latencies)
            group.resolve(w.replies, replies)

        def flushed(status: PutStatus) -> None:
            if status is not PutStatus.PUT_OK:
                answer(ResponseCode.FLUSH_DISK_TIMEOUT)
            elif self._replicas is None:
                answer(ResponseCode.SUCCESS)
            else:
                last = appended[max(waiting.ends) - 1]
                end = last.physical_offset + last.size
                self._replicas.when_acked(end, answer)

        if ticket is None:
            flushed(PutStatus.PUT_OK)
        else:
            ticket.add_done_callback(flushed)

    def _schedule_count(self) -> None:
        """Count stored messages once per event loop turn, not per send: the Prometheus
        counters cost microseconds each (a lock and a label lookup), and a turn serves
        every request of the chunks just read. Without a running loop, count now."""
        try:
            asyncio.get_running_loop().call_soon(self._count)
        except RuntimeError:
            self._count()

    def _count(self) -> None:
        uncounted, self._uncounted = self._uncounted, {}
        stored = self._stats.stored
        for topic, (count, body_bytes) in uncounted.items():
            stored(topic, count, body_bytes)

    def _stored(
        self,
        code: int,
        appended: Sequence[AppendResult],
        first: int,
        end: int,
        queue_id: int,
        started: float,
    ) -> RemotingCommand:
        """The response naming the send's messages, ``appended[first:end]``."""
        head = appended[first]
        if end - first == 1:
            msg_id = head.msg_id
        else:
            msg_id = ",".join([a.msg_id for a in appended[first:end]])
        self._observe_latency(time.perf_counter() - started)
        return self._stored_answers[code].response(msg_id, queue_id, head.queue_offset)

    def fail(self, code: int, remark: str) -> RemotingCommand:
        return RemotingCommand(
            code,
            flag=FLAG_RESPONSE,
            remark=remark,
            ext_fields={MSG_REGION: self._region, TRACE_ON: self._trace},
        )
