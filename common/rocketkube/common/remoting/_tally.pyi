"""Types of the compiled count of a run's replies (``_tally.pyx``)."""

from collections.abc import Sequence

from rocketkube.common.remoting.command import RemotingCommand
from rocketkube.common.remoting.connection import Reply

def count_replies(
    run: Sequence[RemotingCommand],
    replies: Sequence[Reply],
    tally: dict[tuple[int, int | None], int],
) -> list[int]: ...
