"""Types of the compiled plain-send preparation (``_prepare.pyx``)."""

from collections.abc import Callable, Sequence

from rocketkube.broker.processors.send_answers import Reply
from rocketkube.broker.processors.send_state import Ready, TopicState
from rocketkube.broker.store import DispatchHints, InnerMessage
from rocketkube.common.protocol.topic_config import TopicConfig
from rocketkube.common.remoting.command import RemotingCommand

def prepare_plain(
    request: RemotingCommand,
    v2: bool,
    states: dict[str, TopicState],
    configs: dict[str, TopicConfig],
    cluster_entry: bytes,
    born_host: bytes,
    ready_type: type[Ready],
    message_type: type[InnerMessage],
    hints_type: type[DispatchHints],
) -> Ready | None: ...
def prepare_run(
    requests: Sequence[RemotingCommand],
    check: Callable[[RemotingCommand, bool], Ready | RemotingCommand],
    states: dict[str, TopicState],
    configs: dict[str, TopicConfig],
    cluster_entry: bytes,
    born_host: bytes,
    ready_type: type[Ready],
    message_type: type[InnerMessage],
    hints_type: type[DispatchHints],
    replies: list[Reply | None],
    ready: list[tuple[int, Ready]],
    messages: list[InnerMessage],
) -> None: ...
