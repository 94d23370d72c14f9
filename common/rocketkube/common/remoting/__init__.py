"""The RocketMQ remoting protocol: frames, commands, typed headers, connections."""

from rocketkube.common.remoting.addresses import split_address
from rocketkube.common.remoting.client import RemotingClient
from rocketkube.common.remoting.codes import LanguageCode, RequestCode, ResponseCode, SerializeType
from rocketkube.common.remoting.command import RemotingCommand
from rocketkube.common.remoting.connection import Connection, RequestHandler
from rocketkube.common.remoting.dispatch import Dispatcher, Processor
from rocketkube.common.remoting.header import CommandHeader, wire
from rocketkube.common.remoting.server import RemotingServer

__all__ = [
    "CommandHeader",
    "Connection",
    "Dispatcher",
    "LanguageCode",
    "Processor",
    "RemotingClient",
    "RemotingCommand",
    "RemotingServer",
    "RequestCode",
    "RequestHandler",
    "ResponseCode",
    "SerializeType",
    "split_address",
    "wire",
]
