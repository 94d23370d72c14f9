"""A condition as a status summary states it (type, status, reason, message), and setting a
summary's conditions on a resource's list: the handler supplies the time and generation."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rocketkube.operator.api import conditions, models

__all__ = ["ConditionValue", "apply", "count", "join"]


@dataclass(frozen=True, slots=True)
class ConditionValue:
    type: conditions.ConditionType
    status: bool | None
    """None: Unknown."""
    reason: conditions.Reason
    message: str = ""


def apply(
    existing: Sequence[models.Condition],
    values: Iterable[ConditionValue],
    *,
    now: str,
    generation: int | None,
) -> list[models.Condition]:
    """``existing`` with every condition of ``values`` set (transition times kept where a
    status did not change)."""
    out = list(existing)
    for value in values:
        out = conditions.set_condition(
            out, value.type, value.status, value.reason, value.message,
            now=now, generation=generation,
        )  # fmt: skip
    return out


def join(parts: Iterable[str]) -> str:
    """Messages of several findings in one condition message."""
    return "; ".join(part for part in parts if part)


def count(n: int, noun: str) -> str:
    """``1 topic``, ``2 topics``."""
    return f"{n} {noun}{'' if n == 1 else 's'}"
