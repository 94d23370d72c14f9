"""Types of the compiled plain-send preparation (``_prepare.pyx``)."""

from collections.abc import Callable, Sequence

from rocketkube.broker.processors.send_answers import Reply
from rocketkube.broker.processors.send_state import PlainRules, PlainTopic, Ready
from rocketkube.broker.store import InnerMessage
from rocketkube.common.protocol.topic_config import TopicConfig
from rocketkube.common.remoting.command import RemotingCommand

def prepare_plain(
    request: RemotingCommand,
    v2: bool,
    topics: dict[str, PlainTopic],
    configs: dict[str, TopicConfig],
    rules: PlainRules,
    born_host: bytes,
) -> Ready | None: ...
def prepare_run(
    requests: Sequence[RemotingCommand],
    check: Callable[[RemotingCommand, bool], Ready | RemotingCommand],
    topics: dict[str, PlainTopic],
    configs: dict[str, TopicConfig],
    rules: PlainRules,
    born_host: bytes,
    replies: list[Reply | None],
    ready: list[tuple[int, Ready]],
    messages: list[InnerMessage],
) -> None: ...
