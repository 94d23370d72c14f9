"""What reconciling topics and consumer groups does on a broker group's master (create or
update), and drift: a difference from what the operator last confirmed there, made behind
its back (a topic deleted with mqadmin, a queue count or a retry setting changed).

Drift is reported (an Event, the Degraded condition's message) and repaired by the same
create or update any difference gets; telling it apart from a spec change or a new group
needs the last confirmed state, which the handlers read back from the resource's status.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = ["ActionKind", "Drift", "DriftKind"]


class ActionKind(enum.StrEnum):
    CREATE = "create"
    UPDATE = "update"


class DriftKind(enum.StrEnum):
    DELETED = "deleted"
    CHANGED = "changed"


@dataclass(frozen=True, slots=True)
class Drift:
    """``subject`` (``topic Orders``, ``consumer group billing``) was ``kind`` on
    ``broker`` (broker group ``group``); ``details`` says what changed."""

    kind: DriftKind
    group: int
    broker: str
    subject: str
    details: tuple[str, ...] = ()

    @property
    def message(self) -> str:
        what = f" ({', '.join(self.details)})" if self.details else ""
        return f"{self.subject} {self.kind} on {self.broker} behind the operator's back{what}"
