"""Types of the compiled frame module (``_frames.pyx``): the API of its Python siblings."""

from collections.abc import Callable, Sequence

from rocketkube.common.remoting import codes
from rocketkube.common.remoting.command import RemotingCommand as RemotingCommand
from rocketkube.common.remoting.deferred import DeferredReply
from rocketkube.common.remoting.frame import TemplatedResponse as TemplatedResponse

class Scanner:
    def __call__(
        self,
        view: memoryview,
        max_frame_length: int,
        decode_frame: Callable[[memoryview], RemotingCommand],
    ) -> tuple[list[RemotingCommand], int]: ...

def templated_frames(
    requests: Sequence[RemotingCommand],
    replies: Sequence[object],
    outbox: list[bytes | bytearray | memoryview],
) -> list[int]: ...
def held_frames(
    replies: Sequence[DeferredReply],
    opaques: Sequence[int],
    serializations: Sequence[codes.SerializeType],
    outbox: list[bytes | bytearray | memoryview],
) -> list[int]: ...
