"""A slave's copy of its master's metadata (RocketMQ's ``SlaveSynchronize``): every
``SYNC_SECONDS`` it asks the master (its remoting address, learnt at registration) for
GET_ALL_TOPIC_CONFIG, GET_ALL_CONSUMER_OFFSET, GET_ALL_DELAY_OFFSET and
GET_ALL_SUBSCRIPTIONGROUP_CONFIG and takes them over, so that consumers moved to the
slave while the master is away resume from the committed offsets, and a slave promoted
by hand has the topics. A failed round is logged and tried again next time.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from rocketkube.broker.consumers.groups import SubscriptionGroupManager
from rocketkube.broker.consumers.offsets import ConsumerOffsetManager
from rocketkube.broker.schedule import ScheduleService, decode_offsets
from rocketkube.broker.topics import TopicConfigManager
from rocketkube.common import errors, fastjson
from rocketkube.common.protocol.topic_config import TopicConfigWrapper
from rocketkube.common.remoting.client import RemotingClient
from rocketkube.common.remoting.codes import RequestCode, ResponseCode
from rocketkube.common.remoting.command import RemotingCommand
from rocketkube.common.tasks import cancel_and_wait

__all__ = ["MASTER_UNKNOWN_SECONDS", "SYNC_SECONDS", "SlaveSynchronizer"]

_log = logging.getLogger(__name__)

SYNC_SECONDS = 10.0
MASTER_UNKNOWN_SECONDS = 1.0


class SlaveSynchronizer:
    """Pulls the master's topics, groups, consumer offsets and delay offsets."""

    def __init__(
        self,
        master_addr: Callable[[], str | None],
        topics: TopicConfigManager,
        groups: SubscriptionGroupManager,
        offsets: ConsumerOffsetManager,
        schedule: ScheduleService,
        client: RemotingClient | None = None,
    ) -> None:
        self._master_addr = master_addr
        self._topics = topics
        self._groups = groups
        self._offsets = offsets
        self._schedule = schedule
        self._client = client or RemotingClient()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._loop(), name="slave-sync")

    async def stop(self) -> None:
        task, self._task = self._task, None
        await cancel_and_wait(task)
        await self._client.close()

    async def _loop(self) -> None:
        while True:
            address = self._master_addr()
            if not address:  # not learnt yet: the next registration may tell
                await asyncio.sleep(MASTER_UNKNOWN_SECONDS)
                continue
            try:
                await self.sync_once(address)
            except (errors.RocketKubeError, ValueError, TypeError) as exc:
                _log.warning("copying metadata from master %s failed: %s", address, exc)
            await asyncio.sleep(SYNC_SECONDS)

    async def sync_once(self, address: str) -> None:
        """One round against the master at ``address``."""
        topics = await self._body(address, RequestCode.GET_ALL_TOPIC_CONFIG)
        self._topics.replace_all(TopicConfigWrapper.from_json(topics))
        self._offsets.merge(await self._body(address, RequestCode.GET_ALL_CONSUMER_OFFSET))
        delay = await self._raw(address, RequestCode.GET_ALL_DELAY_OFFSET)
        self._schedule.replace_offsets(decode_offsets(delay))
        groups = await self._body(address, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
        self._groups.replace_all(groups)

    async def _raw(self, address: str, code: int) -> bytes:
        response = await self._client.invoke(address, RemotingCommand.request(code))
        if response.code != ResponseCode.SUCCESS:
            raise errors.RemotingError(f"request {code}: {response.code} {response.remark}")
        return bytes(response.body)

    async def _body(self, address: str, code: int) -> dict[str, Any]:
        data = fastjson.loads(await self._raw(address, code))
        if not isinstance(data, dict):
            raise ValueError(f"request {code}: the body is not a JSON object")
        return data
