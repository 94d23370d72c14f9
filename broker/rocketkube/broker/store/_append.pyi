"""Types of the compiled append loop (``_append.pyx``)."""

from collections.abc import Sequence

from rocketkube.broker.store import model
from rocketkube.common.message.record import WritableBuffer

def encode_run(
    mm: WritableBuffer,
    pos: int,
    base: int,
    messages: Sequence[model.InnerMessage],
    topics: dict[str, bytes],
    queue_offsets: dict[tuple[str, int], int],
    store_host: bytes,
    host_hex: str,
    now: int,
    result_type: type[model.AppendResult],
) -> tuple[int, list[model.AppendResult]]: ...
def records_size(
    messages: Sequence[model.InnerMessage], topics: dict[str, bytes], fixed: int, max_body: int
) -> int: ...
