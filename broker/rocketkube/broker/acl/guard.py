"""The ACL in front of the broker's processors (RocketMQ's ``aclEnable`` RPC hook).

:class:`AccessGuard` holds the rules of the ``plain_acl.yml`` file, reloads them when the
file changes (RocketMQ's ``FileWatchService``: the content looked at every half second, a
broken edit logged and the rules in force kept), and wraps a processor table so that every
request is checked before its processor sees it. A refused request is answered
NO_PERMISSION (16) with the reason as remark; the connection stays open. A run of pipelined
sends (:class:`~rocketkube.common.remoting.dispatch.BatchingProcessor`) is checked request
by request: the allowed ones go on to the processor as one run, the refused ones are
answered in their places.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Final

from rocketkube.broker.acl import config as acl_config
from rocketkube.broker.acl.validator import Rules
from rocketkube.common.atomic_file import save_bytes
from rocketkube.common.remoting.codes import ResponseCode
from rocketkube.common.remoting.command import RemotingCommand
from rocketkube.common.remoting.connection import Connection, Reply
from rocketkube.common.remoting.dispatch import BatchingProcessor, ManyProcessor, Processor

__all__ = ["WATCH_SECONDS", "AccessGuard"]

log = logging.getLogger(__name__)

#: How often the file is looked at (RocketMQ's FileWatchService: 500 ms).
WATCH_SECONDS: Final = 0.5


class AccessGuard:
    """The rules of one ACL file; :meth:`guard` puts them in front of a processor table."""

    def __init__(self, path: Path) -> None:
        """Read ``path``: AclConfigError or OSError when it cannot be used (the broker
        does not start, as RocketMQ's does not)."""
        self.path = path
        self._content = path.read_bytes()
        self.rules = Rules(acl_config.load(path))
        self.version = 1
        """Counts the rules taken into force (served by GET_BROKER_CLUSTER_ACL_INFO)."""
        self._updating = asyncio.Lock()

    # -- the file -----------------------------------------------------------------------

    def reload_if_changed(self) -> bool:
        """Take the file's rules if its content changed; False when it did not, or when
        the new content is unusable (logged; the rules in force stay)."""
        try:
            content = self.path.read_bytes()
        except OSError as exc:
            log.error("ACL file %s unreadable, keeping the rules in force: %s", self.path, exc)
            return False
        if content == self._content:
            return False
        self._content = content
        try:
            config = acl_config.load(self.path)
        except (acl_config.AclConfigError, OSError) as exc:
            log.error("ACL file %s refused, keeping the rules in force: %s", self.path, exc)
            return False
        self._take(config)
        log.info("ACL file %s reloaded: %d accounts", self.path, len(config.accounts))
        return True

    async def watch(self, seconds: float = WATCH_SECONDS) -> None:
        """Reload the file whenever it changes, until cancelled."""
        while True:
            await asyncio.sleep(seconds)
            self.reload_if_changed()

    async def update(self, change: Callable[[acl_config.AclConfig], acl_config.AclConfig]) -> None:
        """Apply ``change`` to the config in force, write it to the file (from a worker
        thread: an fsync can take seconds), then put it in force (the ACL admin requests,
        one at a time). AclConfigError when the change is refused, OSError when the file
        is not written; either way the rules in force stay."""
        async with self._updating:
            config = change(self.rules.config)
            content = acl_config.dump(config)
            await asyncio.to_thread(save_bytes, self.path, content)
            self._content = content
            self._take(config)

    def _take(self, config: acl_config.AclConfig) -> None:
        self.rules = Rules(config)
        self.version += 1

    # -- the check ----------------------------------------------------------------------

    def refusal(self, conn: Connection, request: RemotingCommand) -> RemotingCommand | None:
        """The NO_PERMISSION answer to ``request``, or None when it is allowed."""
        host = conn.remote_address.rpartition(":")[0].strip("[]")
        reason = self.rules.refusal(host, request)
        if reason is None:
            return None
        log.debug("refused request code %d from %s: %s", request.code, host, reason)
        return RemotingCommand.response(ResponseCode.NO_PERMISSION, reason)

    def guard(self, table: Mapping[int, Processor]) -> dict[int, Processor]:
        """``table`` with every processor behind the check. Processors that shared a batch
        entry point share the guarded one, so the dispatcher still runs them together."""
        guarded_many: dict[ManyProcessor, ManyProcessor] = {}
        out: dict[int, Processor] = {}
        for code, processor in table.items():
            if isinstance(processor, BatchingProcessor):
                many = guarded_many.get(processor.many)
                if many is None:
                    many = guarded_many[processor.many] = self._many(processor.many)
                out[code] = BatchingProcessor(self._one(processor.one), many)
            else:
                out[code] = self._one(processor)
        return out

    def _one(self, processor: Processor) -> Processor:
        def checked(conn: Connection, request: RemotingCommand) -> Reply:
            refused = self.refusal(conn, request)
            return processor(conn, request) if refused is None else refused

        return checked

    def _many(self, many: ManyProcessor) -> ManyProcessor:
        def checked(conn: Connection, requests: Sequence[RemotingCommand]) -> Sequence[Reply]:
            refusals = [self.refusal(conn, request) for request in requests]
            if all(refused is None for refused in refusals):
                return many(conn, requests)
            allowed = [r for r, refused in zip(requests, refusals, strict=True) if refused is None]
            served = iter(many(conn, allowed) if allowed else ())
            return [next(served) if refused is None else refused for refused in refusals]

        return checked
