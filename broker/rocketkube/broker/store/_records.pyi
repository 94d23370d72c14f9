"""Types of the compiled store records (``_records.pyx``): the API of ``records``."""

from collections.abc import Sequence
from typing import Any

from rocketkube.broker.store import model
from rocketkube.broker.store.records import (
    Check,
    IndexKeys,
    Keyed,
    PlainRules,
    PlainTopic,
    PreparedSend,
    QueueRun,
    TagsCode,
)
from rocketkube.common.message.record import WritableBuffer
from rocketkube.common.protocol.topic_config import TopicConfig
from rocketkube.common.remoting.command import RemotingCommand

def records_size(
    messages: Sequence[model.InnerMessage], topics: dict[str, bytes], fixed: int, max_body: int
) -> int: ...
def encode_records(
    messages: Sequence[model.InnerMessage],
    buffer: WritableBuffer,
    pos: int,
    base: int,
    *,
    topics: dict[str, bytes],
    queue_offsets: dict[tuple[str, int], int],
    store_host: bytes,
    now: int,
) -> tuple[int, list[model.AppendResult]]: ...
def queue_keys(messages: Sequence[model.InnerMessage]) -> list[tuple[str, int]]: ...
def queue_entries(
    messages: Sequence[model.InnerMessage],
    appended: Sequence[model.AppendResult],
    keyed: Keyed | None,
    *,
    tag_codes: dict[str, int],
    seeds: dict[str, int],
    timed_topic: str,
    tags_code: TagsCode,
    index_keys: IndexKeys,
) -> dict[tuple[str, int], QueueRun]: ...
def put_index_entries(
    entries: Keyed,
    start: int,
    *,
    slots: WritableBuffer,
    slot_base: int,
    slot_num: int,
    file: WritableBuffer,
    entries_at: int,
    count: int,
    limit: int,
    begin_ts: int,
    dirty: set[int] | None,
) -> tuple[int, int, int]: ...
def prepare_plain(
    request: RemotingCommand,
    v2: bool,
    topics: dict[str, PlainTopic],
    configs: dict[str, TopicConfig],
    rules: PlainRules,
    born_host: bytes,
) -> PreparedSend | None: ...
def prepare_run(
    requests: Sequence[RemotingCommand],
    check: Check,
    topics: dict[str, PlainTopic],
    configs: dict[str, TopicConfig],
    rules: PlainRules,
    born_host: bytes,
    replies: list[Any],
    ready: list[tuple[int, PreparedSend]],
    messages: list[model.InnerMessage],
) -> None: ...
