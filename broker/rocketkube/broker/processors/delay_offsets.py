"""GET_ALL_DELAY_OFFSET (45): the schedule service's per-level offsets, as
``delayOffset.json`` holds them (``{"offsetTable":{1:0,2:5}}``), fresh from memory as
Java's ``ScheduleMessageService.encode()`` is. ``mqadmin`` reads it for delay statistics.
"""

from __future__ import annotations

from rocketkube.broker.schedule import ScheduleService
from rocketkube.common.remoting.codes import RequestCode
from rocketkube.common.remoting.command import RemotingCommand
from rocketkube.common.remoting.connection import Connection
from rocketkube.common.remoting.dispatch import Processor

__all__ = ["table"]


def table(schedule: ScheduleService) -> dict[int, Processor]:
    def get_all_delay_offset(conn: Connection, req: RemotingCommand) -> RemotingCommand:
        return RemotingCommand.response(body=schedule.encode())

    return {RequestCode.GET_ALL_DELAY_OFFSET: get_all_delay_offset}
