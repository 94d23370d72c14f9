"""The transaction checker's pure arithmetic: how far the op queue's progress may move,
how old a half must be before it is checked, and one scan's view of the op queue."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from rocketkube.common.message.properties import PropertyName

__all__ = ["CheckProgress", "check_deadline_ms", "op_progress"]

_P = PropertyName


def op_progress(old_offset: int, done: Iterable[int]) -> int:
    """The op queue offset the checker may commit: past every done op entry contiguous
    with ``old_offset`` (Java ``calculateOpOffset``)."""
    offset = old_offset
    for entry in sorted(set(done)):
        if entry < offset:
            continue
        if entry != offset:
            break
        offset += 1
    return offset


def check_deadline_ms(properties: Mapping[str, str], timeout_ms: int) -> tuple[int, bool]:
    """How old a half must be before it is checked, and whether the message chose it.

    ``CHECK_IMMUNITY_TIME_IN_SECONDS`` (when a number) overrides ``transactionTimeOut``.
    """
    text = properties.get(_P.CHECK_IMMUNITY_TIME_IN_SECONDS)
    if text is None:
        return timeout_ms, False
    try:
        return int(text) * 1000, True
    except ValueError:
        return timeout_ms, False


@dataclass(slots=True)
class CheckProgress:
    """One scan's view of the op queue: which half offsets are resolved, which op entries
    are done."""

    half_offset: int
    removed: dict[int, int] = field(default_factory=dict)
    """half queue offset -> op queue offset, for ops of halves not yet passed."""
    done_ops: list[int] = field(default_factory=list)
    resolved_halves: set[int] = field(default_factory=set)
    """Every half queue offset an op entry read in this scan names."""

    def add_op(self, op_offset: int, half_offset: int | None) -> None:
        """Account one op entry (``None``: an unreadable body, done at once)."""
        if half_offset is not None:
            self.resolved_halves.add(half_offset)
        if half_offset is None or half_offset < self.half_offset:
            self.done_ops.append(op_offset)
        else:
            self.removed[half_offset] = op_offset

    def resolve(self, half_offset: int) -> bool:
        """Whether the half at ``half_offset`` has an op entry (which becomes done)."""
        op = self.removed.pop(half_offset, None)
        if op is None:
            return False
        self.done_ops.append(op)
        return True
